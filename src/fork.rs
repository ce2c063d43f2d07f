//! `fork()`: the child keeps working and its output never mixes with the parent's.
//!
//! Before a fork every lock of the library is taken (briefly: holders are mid-decision or
//! mid-line), so the child inherits consistent state, and the trace buffer is flushed so the
//! child does not write the parent's lines again. In the child every lock is released (a lock
//! still held by another thread would otherwise stay taken forever: that thread does not exist
//! there) and only flags are set, because little is safe to call in a forked child of a threaded
//! program; the real work waits for the child's next intercepted call or its exit
//! ([`runtime::after_fork_in_child`]): its own counter event set, its own statistics (the
//! record of a child counts the child's messages only, under the child's pid), its own trace.

use crate::trylock::ForkHeld;
use crate::{diag, runtime, trace, ugni};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const HOLD: Duration = Duration::from_millis(100);

fn locks() -> [&'static dyn ForkHeld; 4] {
    [runtime::decider_lock(), &trace::TRACE, &ugni::NICS, &diag::KEPT]
}

static HELD: [AtomicBool; 4] = [const { AtomicBool::new(false) }; 4];

extern "C" fn prepare() {
    trace::flush();
    for (lock, held) in locks().iter().zip(&HELD) {
        held.store(lock.hold_for(HOLD), Ordering::Relaxed);
    }
}

extern "C" fn parent() {
    for (lock, held) in locks().iter().zip(&HELD) {
        if held.swap(false, Ordering::Relaxed) {
            // SAFETY: taken by `prepare` with hold_for in this thread; no guard alive.
            unsafe { lock.release() };
        }
    }
}

extern "C" fn child() {
    for (lock, held) in locks().iter().zip(&HELD) {
        held.store(false, Ordering::Relaxed);
        // SAFETY: in the child only this thread exists, so whoever held the lock (prepare, or a
        // thread that stayed in the parent) has no guard here.
        unsafe { lock.release() };
    }
    runtime::forked();
}

/// Install the handlers (once, at initialisation).
pub fn install() -> bool {
    crate::sys::at_fork(prepare, parent, child)
}
