//! A lock that is only ever *tried*: one atomic exchange to take it, a plain release store to
//! give it back. Nothing ever sleeps on it: a post that finds the decider taken is routed
//! without deciding. A general mutex spends a second read-modify-write on unlock, which the
//! decision path's overhead budget has no room for.

use std::cell::{Cell, UnsafeCell};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A value behind a lock that is only ever tried (with or without a deadline).
///
/// The flag first, from a cache-line boundary: a value whose hot fields come first shares their
/// line with it (the decider's: on the read path, the release after a send would else miss).
#[repr(C, align(64))]
pub struct TryLock<T> {
    taken: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a `Guard`, and at most one guard exists at a time
// (the exchange in `try_lock` hands out one; its drop releases with Release ordering, pairing
// with the next taker's Acquire).
unsafe impl<T: Send> Sync for TryLock<T> {}

impl<T> TryLock<T> {
    /// A free lock around `value`.
    pub const fn new(value: T) -> Self {
        Self { taken: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// The value, if no one else holds it right now.
    #[inline]
    pub fn try_lock(&self) -> Option<Guard<'_, T>> {
        // `then`, not `then_some`: a guard built eagerly and dropped would release a lock that
        // someone else holds.
        (!self.taken.swap(true, Ordering::Acquire)).then(|| Guard { lock: self })
    }

    /// Keep trying for up to `timeout` (exit, fork): a holder is mid-decision and soon done,
    /// or gone for good (a fork child), so this never waits forever.
    pub fn try_lock_for(&self, timeout: Duration) -> Option<Guard<'_, T>> {
        // A free lock costs no clock read (every collective call under `steady` asks twice).
        if let Some(g) = self.try_lock() {
            return Some(g);
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(g) = self.try_lock() {
                return Some(g);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::yield_now();
        }
    }

    /// Take the lock on behalf of a later [`TryLock::release`], across a boundary a guard cannot
    /// cross (the `fork()` handlers).
    pub fn hold_for(&self, timeout: Duration) -> bool {
        self.try_lock_for(timeout).map(std::mem::forget).is_some()
    }

    /// Give back a lock taken with [`TryLock::hold_for`].
    ///
    /// # Safety
    /// The caller took it with `hold_for` and holds no guard of it.
    pub unsafe fn release(&self) {
        self.taken.store(false, Ordering::Release);
    }
}

/// What the `fork()` handlers need of every lock, whatever it protects.
pub trait ForkHeld: Sync {
    /// As [`TryLock::hold_for`].
    fn hold_for(&self, timeout: Duration) -> bool;
    /// # Safety
    /// As [`TryLock::release`]; in a fork child also when another thread held it (that thread
    /// does not exist there, so no guard of it can be alive).
    unsafe fn release(&self);
}

impl<T: Send> ForkHeld for TryLock<T> {
    fn hold_for(&self, timeout: Duration) -> bool {
        TryLock::hold_for(self, timeout)
    }
    unsafe fn release(&self) {
        // SAFETY: forwarded contract.
        unsafe { TryLock::release(self) }
    }
}

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// This thread holds one of the library's waiting locks (the trace, the NIC table). An
/// intercepted call made from there (an allocator or PAPI calling back into uGNI) must not wait
/// on the same lock: it skips what needs it. The decision path needs no guard: it only ever
/// *tries* the decider, so a re-entrant post is routed like one below the threshold.
pub struct Inside;

impl Inside {
    /// `None` when this thread is already inside (or its thread-locals are gone).
    pub fn enter() -> Option<Inside> {
        INSIDE.try_with(|c| (!c.replace(true)).then(|| Inside)).ok().flatten()
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        let _ = INSIDE.try_with(|c| c.set(false));
    }
}

/// Access to a locked value; the lock is given back when it is dropped.
pub struct Guard<'a, T> {
    lock: &'a TryLock<T>,
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (see `Sync`), so no `&mut` to the value exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard is the only one, and `&mut self` makes this borrow unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        self.lock.taken.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_no_update_lost() {
        static LOCK: TryLock<u64> = TryLock::new(0);
        let taken = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100_000 {
                        if let Some(mut g) = LOCK.try_lock() {
                            *g += 1;
                            taken.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(*LOCK.try_lock().unwrap(), taken.load(Ordering::Relaxed));
        let g = LOCK.try_lock().unwrap();
        assert!(LOCK.try_lock().is_none());
        assert!(LOCK.try_lock_for(Duration::from_millis(5)).is_none());
        drop(g);
        assert!(LOCK.hold_for(Duration::from_millis(5)));
        assert!(LOCK.try_lock().is_none());
        // SAFETY: taken with hold_for just above, no guard alive.
        unsafe { LOCK.release() };
        assert!(LOCK.try_lock().is_some());
    }
}
