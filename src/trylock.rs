//! A lock that is only ever *tried*: nothing ever sleeps on it, and a post that finds the
//! decider taken is routed without deciding. A general mutex spends a second read-modify-write
//! on unlock, which the decision path's overhead budget has no room for.
//!
//! Most locks are taken with one atomic exchange and given back with a plain release store. The
//! decider's is *biased* ([`TryLock::biased`]) to the thread that takes it first, which in an MPI
//! rank is the one thread that posts: that thread takes it with plain loads and stores and no
//! read-modify-write. An x86 exchange is a full barrier, which waits for every earlier store to
//! drain (after a send, its data's) and costs a decision about 3 ns on the development VM
//! (docs/node-reader.md). Mutual exclusion with the other threads is a Dekker handshake whose
//! barrier is all on their side: the owner marks itself busy and then checks that the lock is
//! still biased to it; another thread that wants the lock ends the bias for good, then has the
//! kernel run a barrier on every thread of the process (membarrier(2)), then checks that the
//! owner is not busy. Either the owner sees the bias gone, or the other thread sees it busy. So
//! the cost of a second thread is one barrier, once (with the kernel's registration for it, which
//! waits for an RCU grace period where the process had several threads when the bias was set);
//! from then on every thread, the owner too, takes the lock with the exchange. Without membarrier
//! (a kernel before 4.14) the lock is never biased, nor under a seccomp filter, which might kill
//! the process for the call.

use crate::sys;
use std::cell::{Cell, UnsafeCell};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The bias word: the owner's [`sys::thread_pointer`] (8-aligned) and these flags in its low bits;
/// 0 until a biased lock is first taken.
const UNBIASED: usize = 0;
/// The bias has ended: every thread takes the lock with the exchange.
const SHARED: usize = 1;
/// The bias has ended but no process barrier followed yet: threads other than the owner may not
/// take the lock until one does.
const BARRIER_OWED: usize = 2;
const FLAGS: usize = SHARED | BARRIER_OWED;

/// How a lock biased at its creation ([`TryLock::biased`]) is taken now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bias {
    /// No thread took it yet.
    NeverTaken,
    /// By its first taker with plain loads and stores.
    Biased,
    /// With the exchange, since a second thread took it.
    Ended,
    /// With the exchange from the first take: no process barrier here (Linux before 4.14, or a
    /// seccomp filter). A lock made with [`TryLock::new`] says this too.
    NeverBiased,
}

impl Bias {
    /// As the record names it.
    pub const fn name(self) -> &'static str {
        match self {
            Bias::NeverTaken => "never-taken",
            Bias::Biased => "biased",
            Bias::Ended => "bias-ended",
            Bias::NeverBiased => "never-biased",
        }
    }
}

/// A value behind a lock that is only ever tried (with or without a deadline).
///
/// The flags first, from a cache-line boundary: a value whose hot fields come first shares their
/// line with them (the decider's: on the read path, the release after a send would else miss).
#[repr(C, align(64))]
pub struct TryLock<T> {
    bias: AtomicUsize,
    /// Held through the exchange.
    taken: AtomicBool,
    /// Held by the owner of the bias, without an exchange. Only the owner writes it.
    busy: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a `Guard`, and at most one guard exists at a time:
// the exchange in `try_lock_shared` hands out one among the threads that use it (its drop releases
// with Release ordering, pairing with the next taker's Acquire); the owner of the bias takes its
// guard only while the bias holds after it marked itself busy, and the other threads take theirs
// only after the bias ended, a process barrier passed, and they saw the owner not busy (Acquire,
// pairing with the owner's Release when it stops being busy). See the module's comment.
unsafe impl<T: Send> Sync for TryLock<T> {}

impl<T> TryLock<T> {
    /// A free lock around `value`, taken with the exchange by every thread.
    pub const fn new(value: T) -> Self {
        Self::with_bias(value, SHARED)
    }

    /// A free lock around `value`, biased to the first thread that takes it.
    pub const fn biased(value: T) -> Self {
        Self::with_bias(value, UNBIASED)
    }

    const fn with_bias(value: T, bias: usize) -> Self {
        Self {
            bias: AtomicUsize::new(bias),
            taken: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// The value, if no one else holds it right now.
    #[inline]
    pub fn try_lock(&self) -> Option<Guard<'_, T>> {
        let me = sys::thread_pointer();
        if self.bias.load(Ordering::Relaxed) == me {
            if self.busy.load(Ordering::Relaxed) {
                // This thread holds it already (a post made from inside a decision).
                return None;
            }
            #[cfg(test)]
            tests::after_the_owners_check();
            self.busy.store(true, Ordering::Relaxed);
            // The owner's half of the barrier; the other half is the process barrier of a thread
            // that ends the bias.
            compiler_fence(Ordering::SeqCst);
            if self.bias.load(Ordering::Relaxed) == me {
                return Some(Guard { lock: self, biased: true });
            }
            self.busy.store(false, Ordering::Release);
        }
        self.try_lock_shared(me)
    }

    /// The exchange, by a thread that is not (or no longer) the owner of the bias; it ends the
    /// bias, or sets it on the first take of a biased lock.
    #[inline(never)]
    fn try_lock_shared(&self, me: usize) -> Option<Guard<'_, T>> {
        // `then`, not `then_some`: a guard built eagerly and dropped would release a lock that
        // someone else holds.
        let guard = (!self.taken.swap(true, Ordering::Acquire)).then(|| Guard { lock: self, biased: false })?;
        let bias = self.bias.load(Ordering::Relaxed);
        if bias == UNBIASED {
            // The first take: from now on this thread takes the lock without the exchange. The
            // word changes only under `taken`, so no other thread can be setting it.
            if me & FLAGS != 0 || !sys::process_barrier_ready() {
                self.bias.store(SHARED, Ordering::Relaxed);
                return Some(guard);
            }
            // Held through the bias already (busy first: a signal handler that posts in between
            // must not take it), so that this thread cannot take it twice; the exchange's release
            // then publishes both stores to the next thread that tries it.
            self.busy.store(true, Ordering::Relaxed);
            self.bias.store(me, Ordering::Relaxed);
            drop(guard);
            return Some(Guard { lock: self, biased: true });
        }
        let owner = bias & !FLAGS;
        if owner == 0 {
            return Some(guard);
        }
        if owner == me {
            // Unless it holds the lock through the bias already (its own store, in its order).
            return (!self.busy.load(Ordering::Relaxed)).then_some(guard);
        }
        if bias & SHARED == 0 {
            self.bias.store(owner | SHARED | BARRIER_OWED, Ordering::Relaxed);
        }
        if self.bias.load(Ordering::Relaxed) & BARRIER_OWED != 0 {
            // Until a barrier passes, the owner may not have seen the bias end.
            if !sys::process_barrier() {
                return None;
            }
            self.bias.store(owner | SHARED, Ordering::Relaxed);
        }
        // The owner, inside since before the barrier; it sees the bias gone at its next take.
        (!self.busy.load(Ordering::Acquire)).then_some(guard)
    }

    /// The value, if no one else holds it, taken without biasing a lock that no thread took yet:
    /// for a taker that is not the lock's user (the start-up, which may run on a helper thread
    /// that then ends), so that the bias goes to the first thread that takes it with
    /// [`TryLock::try_lock`].
    pub fn try_lock_unbiased(&self) -> Option<Guard<'_, T>> {
        if self.bias.load(Ordering::Relaxed) != UNBIASED {
            return self.try_lock();
        }
        let guard = (!self.taken.swap(true, Ordering::Acquire)).then(|| Guard { lock: self, biased: false })?;
        // The word changes only under `taken`: still unbiased, no thread can hold it through a bias.
        if self.bias.load(Ordering::Relaxed) == UNBIASED {
            return Some(guard);
        }
        drop(guard);
        self.try_lock()
    }

    /// How the lock is taken now, for the record.
    pub fn bias(&self) -> Bias {
        match self.bias.load(Ordering::Relaxed) {
            UNBIASED => Bias::NeverTaken,
            SHARED => Bias::NeverBiased,
            b if b & SHARED != 0 => Bias::Ended,
            _ => Bias::Biased,
        }
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
        // The owner of the bias is busy only while it holds the lock through the bias.
        let me = sys::thread_pointer();
        if self.bias.load(Ordering::Relaxed) & !FLAGS == me && self.busy.load(Ordering::Relaxed) {
            self.busy.store(false, Ordering::Release);
        } else {
            self.taken.store(false, Ordering::Release);
        }
    }
}

/// Before a fork, the handlers wait at most this long for each lock (holders are mid-decision or
/// mid-line).
pub const FORK_HOLD: Duration = Duration::from_millis(100);

/// What the `fork()` handlers need of every lock, whatever it protects.
pub trait ForkHeld: Sync {
    /// As [`TryLock::hold_for`].
    fn hold_for(&self, timeout: Duration) -> bool;
    /// # Safety
    /// As [`TryLock::release`].
    unsafe fn release(&self);
    /// Free it in a fork child, also when another thread held it.
    ///
    /// # Safety
    /// In a fork child, where only the calling thread exists, so no guard of another thread's can
    /// be alive, holding no guard of it.
    unsafe fn release_in_child(&self) {
        // SAFETY: the caller's contract (a lock taken by the exchange is freed by its flag alone).
        unsafe { self.release() }
    }
}

impl<T: Send> ForkHeld for TryLock<T> {
    fn hold_for(&self, timeout: Duration) -> bool {
        TryLock::hold_for(self, timeout)
    }
    unsafe fn release(&self) {
        // SAFETY: forwarded contract.
        unsafe { TryLock::release(self) }
    }
    unsafe fn release_in_child(&self) {
        // Whoever held it, through the bias or not: only this thread exists here.
        self.busy.store(false, Ordering::Release);
        self.taken.store(false, Ordering::Release);
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
    /// Taken through the bias (released by the owner's `busy`), not the exchange.
    biased: bool,
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
        let flag = if self.biased { &self.lock.busy } else { &self.lock.taken };
        flag.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    thread_local! {
        /// Run once by this thread as the owner, between its check of the bias and its mark: a
        /// test widens the window in which another thread ends the bias.
        static OWNER_PAUSE: Cell<Option<fn()>> = const { Cell::new(None) };
    }

    pub(super) fn after_the_owners_check() {
        if let Some(pause) = OWNER_PAUSE.with(Cell::take) {
            pause();
        }
    }

    #[test]
    fn one_holder_at_a_time_and_no_update_lost() {
        static LOCK: TryLock<u64> = TryLock::new(0);
        let taken = hammer(&LOCK, 4, 100_000, 0);
        assert_eq!(*LOCK.try_lock().unwrap(), taken);
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

    /// `threads` threads try the lock `tries` times each and hold it for `hold` steps, the first
    /// of them after a take of its own before the others start (a biased lock's owner). Returns
    /// the takes, and fails if two threads ever hold it at once.
    fn hammer(lock: &TryLock<u64>, threads: usize, tries: usize, hold: usize) -> u64 {
        let (taken, inside) = (std::sync::atomic::AtomicU64::new(0), AtomicBool::new(false));
        let start = std::sync::Barrier::new(threads);
        std::thread::scope(|s| {
            for i in 0..threads {
                let (taken, inside, start) = (&taken, &inside, &start);
                s.spawn(move || {
                    if i == 0 {
                        *lock.try_lock().unwrap() += 1;
                        taken.fetch_add(1, Ordering::Relaxed);
                    }
                    start.wait();
                    for _ in 0..tries {
                        if let Some(mut g) = lock.try_lock() {
                            assert!(!inside.swap(true, Ordering::Relaxed), "two holders at once");
                            // A holder that stays longer than a process barrier takes (a few
                            // µs), so that others end the bias while it holds the lock.
                            for _ in 0..hold {
                                *g = std::hint::black_box(*g);
                            }
                            *g += 1;
                            inside.store(false, Ordering::Relaxed);
                            taken.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        taken.into_inner()
    }

    #[test]
    fn a_biased_lock_is_taken_without_the_exchange_by_its_first_taker_only() {
        let lock = TryLock::biased(0u64);
        let me = sys::thread_pointer();
        assert_eq!(lock.bias(), Bias::NeverTaken);
        let first = lock.try_lock().unwrap();
        if !sys::process_barrier_ready() {
            // No membarrier here (a kernel before 4.14, or a seccomp filter, as in a container):
            // the lock is never biased, and every take is the exchange.
            assert!(!first.biased && lock.taken.load(Ordering::Relaxed));
            assert_eq!(lock.bias.load(Ordering::Relaxed), SHARED);
            assert_eq!(lock.bias(), Bias::NeverBiased);
            assert!(lock.try_lock().is_none());
            eprintln!("no membarrier on this machine: the bias itself is not tested");
            return;
        }
        assert!(first.biased && !lock.taken.load(Ordering::Relaxed), "the first take sets the bias");
        assert_eq!(lock.bias.load(Ordering::Relaxed), me);
        assert_eq!(lock.bias(), Bias::Biased);
        assert!(lock.try_lock().is_none());
        drop(first);
        let mut g = lock.try_lock().unwrap();
        assert!(g.biased && lock.busy.load(Ordering::Relaxed) && !lock.taken.load(Ordering::Relaxed));
        *g += 1;
        // A post made from inside the decision does not take it again.
        assert!(lock.try_lock().is_none());
        assert!(std::thread::scope(|s| s.spawn(|| lock.try_lock().is_none()).join().unwrap()));
        // The other thread ended the bias; the owner, holding it, still cannot take it twice.
        assert_eq!(lock.bias.load(Ordering::Relaxed), me | SHARED);
        assert_eq!(lock.bias(), Bias::Ended);
        assert!(lock.try_lock().is_none());
        drop(g);
        assert!(!lock.busy.load(Ordering::Relaxed));
        let other = std::thread::scope(|s| s.spawn(|| lock.try_lock().map(|mut g| *g += 1).is_some()).join().unwrap());
        assert!(other);
        let g = lock.try_lock().unwrap();
        assert!(!g.biased && *g == 2, "after the bias ends, the owner takes it with the exchange too");
        drop(g);
        // Held for a fork by the owner, through the bias, and released.
        let lock = TryLock::biased(0u64);
        drop(lock.try_lock());
        assert!(lock.hold_for(Duration::from_millis(5)) && lock.busy.load(Ordering::Relaxed));
        // SAFETY: taken with hold_for just above, no guard alive.
        unsafe { lock.release() };
        assert!(!lock.busy.load(Ordering::Relaxed) && lock.try_lock().is_some());
    }

    #[test]
    fn a_take_that_leaves_the_bias_leaves_it_to_the_next_taker() {
        // The start-up's take, on a helper thread that ends: the lock stays never taken, and the
        // thread that takes it next (the first to decide) gets the bias.
        let lock = TryLock::biased(0u64);
        let taken = std::thread::scope(|s| s.spawn(|| lock.try_lock_unbiased().map(|mut g| *g = 7).is_some()).join());
        assert!(taken.unwrap());
        assert_eq!(lock.bias(), Bias::NeverTaken);
        let g = lock.try_lock().unwrap();
        assert_eq!(*g, 7);
        let expected = if sys::process_barrier_ready() { Bias::Biased } else { Bias::NeverBiased };
        assert_eq!(lock.bias(), expected);
        // Held (through the bias or not), it is not taken again, with or without the bias.
        assert!(lock.try_lock_unbiased().is_none());
        drop(g);
        assert!(lock.try_lock_unbiased().is_some());
    }

    #[test]
    fn a_biased_lock_has_one_holder_at_a_time_while_the_bias_ends() {
        // Each lock is biased to the thread that takes it first, then other threads end the bias
        // while the owner is taking it through the bias as fast as it can.
        for _ in 0..300 {
            let lock = TryLock::biased(0u64);
            let taken = hammer(&lock, 3, 200, 5_000);
            assert_eq!(*lock.try_lock().unwrap(), taken);
            assert_ne!(lock.bias.load(Ordering::Relaxed) & SHARED, 0);
        }
        let lock = TryLock::biased(0u64);
        let taken = hammer(&lock, 4, 100_000, 0);
        assert_eq!(*lock.try_lock().unwrap(), taken);
    }

    #[test]
    fn an_owner_that_checked_the_bias_before_another_thread_ended_it_does_not_take_the_lock_too() {
        static PAUSED: Barrier = Barrier::new(2);
        static TAKEN: Barrier = Barrier::new(2);
        static TRIED: Barrier = Barrier::new(2);
        let lock = TryLock::biased(0u64);
        drop(lock.try_lock());
        if lock.bias.load(Ordering::Relaxed) != sys::thread_pointer() {
            eprintln!("no membarrier on this machine: the bias itself is not tested");
            return;
        }
        // The owner stops after it found the bias its own and before it marks itself busy;
        // meanwhile the other thread ends the bias, finds the owner not busy, and takes the lock.
        OWNER_PAUSE.with(|p| {
            p.set(Some(|| {
                PAUSED.wait();
                TAKEN.wait();
            }))
        });
        let (owner_took, stopped, other_took) = std::thread::scope(|s| {
            let other = s.spawn(|| {
                PAUSED.wait();
                let g = lock.try_lock();
                let took = g.is_some();
                TAKEN.wait();
                TRIED.wait();
                drop(g);
                took
            });
            // Every thread reaches every barrier whatever it gets, so that a failure cannot hang
            // (nor a take that never stopped where the pause is: it is run here instead).
            let owner_took = lock.try_lock().is_some();
            let stopped = OWNER_PAUSE.with(|p| p.get().is_none());
            after_the_owners_check();
            TRIED.wait();
            (owner_took, stopped, other.join().unwrap())
        });
        assert!(stopped, "the owner's take never came to the pause");
        assert!(other_took, "the owner was not busy yet");
        assert!(!owner_took, "the owner took it though the bias ended before its mark: two holders at once");
        assert!(!lock.busy.load(Ordering::Relaxed), "the owner's mark was taken back");
        assert!(lock.try_lock().is_some());
    }

    #[test]
    fn in_a_fork_child_a_lock_held_through_the_bias_is_freed() {
        let lock = TryLock::biased(0u64);
        // A thread that a child would not have holds it through the bias.
        std::thread::scope(|s| {
            s.spawn(|| {
                drop(lock.try_lock());
                std::mem::forget(lock.try_lock().unwrap());
            });
        });
        // Through the bias where this machine has membarrier, else through the exchange.
        assert!(lock.busy.load(Ordering::Relaxed) || lock.taken.load(Ordering::Relaxed));
        assert!(lock.try_lock().is_none());
        // SAFETY: the only guard was the other thread's, which has ended, as in a child.
        unsafe { ForkHeld::release_in_child(&lock) };
        assert!(lock.try_lock().is_some());
    }
}
