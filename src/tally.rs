//! Messages and bytes per routing mode and per reason, counted without contention.
//!
//! Each thread owns a block of counters it alone writes (a relaxed load and store, no atomic
//! read-modify-write, which would cost as much as the rest of the fast path); the record sums
//! the blocks at exit. The blocks are a fixed table, never allocated: a thread claims a free one
//! on its first message and gives it back when it exits (its totals keep counting in the sum);
//! a thread that finds no free block near its home shares one block with atomic adds.

use crate::sys;
use aar_abi::{GNI_DLVMODE_IN_ORDER, GNI_DLVMODE_MIN_HASH, GNI_DLVMODE_NMIN_HASH, GNI_DLVMODE_ROUTING_MASK};
use aar_engine::{Reason, RoutingMode};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, Ordering::Relaxed};

/// Routing a message went out with: ADAPTIVE0..3, the non-adaptive ones, and SMSG left to the
/// caller's NIC setting.
/// The first four are [`RoutingMode::index`]'s.
pub const CLASS_NAMES: [&str; 9] =
    ["ADAPTIVE0", "ADAPTIVE1", "ADAPTIVE2", "ADAPTIVE3", "IN_ORDER", "MIN_HASH", "NMIN_HASH", "OTHER", "CALLER_SMSG"];
const IN_ORDER: usize = 4;
const MIN_HASH: usize = 5;
const NMIN_HASH: usize = 6;
/// Any other routing byte (NO_ADAPT, NO_HASH, a combination uGNI does not name).
const OTHER: usize = 7;
/// An SMSG send left to the caller's setting of its NIC.
pub const CALLER_SMSG: usize = 8;
const CLASSES: usize = CLASS_NAMES.len();
const REASONS: usize = Reason::ALL.len();

/// The class of a raw `dlvr_mode`: its routing byte, flags ignored.
pub fn class_of(dlvr_mode: u16) -> usize {
    if let Some(m) = RoutingMode::from_routing_bits(dlvr_mode) {
        return m.index();
    }
    match dlvr_mode & GNI_DLVMODE_ROUTING_MASK {
        GNI_DLVMODE_IN_ORDER => IN_ORDER,
        GNI_DLVMODE_MIN_HASH => MIN_HASH,
        GNI_DLVMODE_NMIN_HASH => NMIN_HASH,
        _ => OTHER,
    }
}

#[repr(align(64))]
struct Block {
    /// Thread pointer of the thread that writes this block; 0: free.
    owner: AtomicUsize,
    messages: [AtomicU64; CLASSES],
    bytes: [AtomicU64; CLASSES],
    reasons: [AtomicU64; REASONS],
}

impl Block {
    const fn new(owner: usize) -> Self {
        Self {
            owner: AtomicUsize::new(owner),
            messages: [const { AtomicU64::new(0) }; CLASSES],
            bytes: [const { AtomicU64::new(0) }; CLASSES],
            reasons: [const { AtomicU64::new(0) }; REASONS],
        }
    }

    /// Single writer: a relaxed load and store.
    #[inline(always)]
    fn bump(&self, class: usize, reason: usize, bytes: u64) {
        let add = |c: &AtomicU64, by: u64| c.store(c.load(Relaxed).wrapping_add(by), Relaxed);
        add(&self.messages[class % CLASSES], 1);
        add(&self.bytes[class % CLASSES], bytes);
        add(&self.reasons[reason % REASONS], 1);
    }
}

/// More threads than this posting at once is not a real program; they would share `SHARED`.
const MAX_THREADS: usize = 512;
/// Blocks are found by hashing the thread pointer (one instruction to read, where a
/// thread-local in a shared library costs a call to `__tls_get_addr`); a thread whose home slot
/// is taken claims a nearby one.
static BLOCKS: [Block; MAX_THREADS] = [const { Block::new(0) }; MAX_THREADS];
const PROBES: usize = 8;
/// Blocks ever claimed, one bit each: totals (taken at every iteration boundary) sum these only.
static USED: [AtomicU64; MAX_THREADS / 64] = [const { AtomicU64::new(0) }; MAX_THREADS / 64];
/// Where messages go when their thread has no block (the table's neighbourhood is full): shared,
/// so it uses atomic adds.
static SHARED: Block = Block::new(usize::MAX);

#[inline]
fn home(me: usize) -> usize {
    // Thread pointers sit at page-aligned offsets of their stacks: hash the page number.
    ((me >> 12).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 55) % MAX_THREADS
}

/// Frees this thread's block when it exits (registered on first use; a thread-local with a
/// destructor is only touched then, never on the counting path).
struct Release(Cell<usize>);

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(b) = BLOCKS.get(self.0.get()) {
            // Release: the next owner (Acquire in `claim`) must see this thread's last counts.
            b.owner.store(0, Ordering::Release);
        }
    }
}

thread_local! {
    static RELEASE: Release = const { Release(Cell::new(usize::MAX)) };
}

/// Count one message.
#[inline]
pub fn count(class: usize, reason: Reason, bytes: u64) {
    count_indexed(class, reason.index(), bytes);
}

/// [`count`] with the reason as its index (the fast path has it precomputed).
#[inline(always)]
pub fn count_indexed(class: usize, reason: usize, bytes: u64) {
    let me = sys::thread_pointer();
    let b = &BLOCKS[home(me)];
    if b.owner.load(Relaxed) == me {
        b.bump(class, reason, bytes);
    } else {
        count_elsewhere(me, class, reason, bytes);
    }
}

#[cold]
#[inline(never)]
fn count_elsewhere(me: usize, class: usize, reason: usize, bytes: u64) {
    match claim(me) {
        Some(b) => b.bump(class, reason, bytes),
        None => {
            SHARED.messages[class % CLASSES].fetch_add(1, Relaxed);
            SHARED.bytes[class % CLASSES].fetch_add(bytes, Relaxed);
            SHARED.reasons[reason % REASONS].fetch_add(1, Relaxed);
        }
    }
}

/// This thread's block near its home slot, claiming a free one on its first message.
fn claim(me: usize) -> Option<&'static Block> {
    let h = home(me);
    let near = (0..PROBES).map(|k| (h + k) % MAX_THREADS);
    if let Some(i) = near.clone().find(|&i| BLOCKS[i].owner.load(Relaxed) == me) {
        return Some(&BLOCKS[i]);
    }
    // Acquire pairs with the Release of the previous owner's exit: its last counts are seen.
    let i = near.into_iter().find(|&i| BLOCKS[i].owner.compare_exchange(0, me, Ordering::Acquire, Relaxed).is_ok())?;
    // Release: a thread that sees the bit (Acquire in `totals`) sees the block claimed.
    USED[i / 64].fetch_or(1 << (i % 64), Ordering::Release);
    if RELEASE.try_with(|r| r.0.set(i)).is_err() {
        // The thread is already exiting: nothing would free the block, so do not keep it.
        BLOCKS[i].owner.store(0, Ordering::Release);
        return None;
    }
    Some(&BLOCKS[i])
}

/// In a fork child: start from zero (the child's record counts the child's messages only), and
/// free the blocks of the threads that stayed in the parent.
pub fn reset_in_child() {
    let me = sys::thread_pointer();
    let zero = |b: &Block| {
        b.messages.iter().chain(&b.bytes).chain(&b.reasons).for_each(|c| c.store(0, Relaxed));
    };
    zero(&SHARED);
    for b in &BLOCKS {
        zero(b);
        if b.owner.load(Relaxed) != me {
            b.owner.store(0, Relaxed);
        }
    }
}

/// Totals over every thread so far.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Messages per class ([`CLASS_NAMES`]).
    pub messages: [u64; CLASSES],
    /// Bytes per class.
    pub bytes: [u64; CLASSES],
    /// Messages per reason ([`Reason::index`]).
    pub reasons: [u64; REASONS],
}

/// The sum over every thread's block so far.
pub fn totals() -> Totals {
    let mut t = Totals::default();
    let mut add = |b: &Block| {
        for i in 0..CLASSES {
            t.messages[i] += b.messages[i].load(Relaxed);
            t.bytes[i] += b.bytes[i].load(Relaxed);
        }
        for i in 0..REASONS {
            t.reasons[i] += b.reasons[i].load(Relaxed);
        }
    };
    add(&SHARED);
    for (word, used) in USED.iter().enumerate() {
        let mut bits = used.load(Ordering::Acquire);
        while bits != 0 {
            add(&BLOCKS[word * 64 + bits.trailing_zeros() as usize]);
            bits &= bits - 1;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_add_up() {
        let before = totals();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        count(3, Reason::Threshold, 64);
                    }
                });
            }
        });
        // Threads that exited gave their blocks back; new ones reuse them and keep counting.
        std::thread::scope(|s| {
            s.spawn(|| count(0, Reason::Model, 1 << 20));
        });
        let after = totals();
        assert_eq!(after.messages[3] - before.messages[3], 80_000);
        assert_eq!(after.bytes[3] - before.bytes[3], 80_000 * 64);
        assert_eq!(after.messages[0] - before.messages[0], 1);
        assert_eq!(after.reasons[Reason::Model.index()] - before.reasons[Reason::Model.index()], 1);
        let claimed = BLOCKS.iter().filter(|b| b.messages.iter().any(|m| m.load(Relaxed) > 0)).count();
        assert!(claimed <= 9, "blocks are reused by later threads: {claimed} used");
    }

    #[test]
    fn classes() {
        assert_eq!(class_of(0x0000), 0);
        assert_eq!(class_of(0x0180), 3);
        assert_eq!(class_of(0x0003), 4);
        assert_eq!(class_of(0x0010), 5);
        assert_eq!(class_of(0x0008), 6);
        assert_eq!(class_of(0x0060), 7);
        assert_eq!(class_of(0x0001), OTHER, "NO_ADAPT has no class of its own");
        assert_eq!(class_of(0x0110), MIN_HASH, "flags do not change the class");
        for (i, name) in CLASS_NAMES.iter().enumerate().take(OTHER) {
            let raw = (0..=0xffu16).find(|&r| aar_abi::dlvr_mode_name(r) == *name).unwrap();
            assert_eq!(class_of(raw), i, "{name}");
        }
    }
}
