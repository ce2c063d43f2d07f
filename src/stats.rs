//! Messages and bytes per routing mode and per reason, counted without contention.
//!
//! Each thread owns a block of counters it alone writes (a relaxed load and store, no atomic
//! read-modify-write, which would cost as much as the rest of the fast path); the record sums
//! the blocks at exit. The blocks are a fixed table, never allocated: a thread claims a free one
//! on its first message and gives it back when it exits (its totals keep counting in the sum);
//! threads beyond the table's size share one block with atomic adds.

use aar_engine::{Reason, RoutingMode};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, Ordering::Relaxed};

/// Routing a message went out with: ADAPTIVE0..3, the non-adaptive ones, and SMSG left to the
/// caller's NIC setting.
pub const CLASS_NAMES: [&str; 9] =
    ["ADAPTIVE0", "ADAPTIVE1", "ADAPTIVE2", "ADAPTIVE3", "IN_ORDER", "MIN_HASH", "NMIN_HASH", "OTHER", "CALLER_SMSG"];
pub const CALLER_SMSG: usize = 8;
const CLASSES: usize = CLASS_NAMES.len();
const REASONS: usize = Reason::ALL.len();

/// The class of a raw `dlvr_mode`.
pub fn class_of(dlvr_mode: u16) -> usize {
    if let Some(m) = RoutingMode::from_routing_bits(dlvr_mode) {
        return m.index();
    }
    match aar_engine::dlvr_mode_name(dlvr_mode) {
        "IN_ORDER" => 4,
        "MIN_HASH" => 5,
        "NMIN_HASH" => 6,
        _ => 7,
    }
}

#[repr(align(64))]
struct Block {
    in_use: AtomicBool,
    messages: [AtomicU64; CLASSES],
    bytes: [AtomicU64; CLASSES],
    reasons: [AtomicU64; REASONS],
}

impl Block {
    const fn new(in_use: bool) -> Self {
        Self {
            in_use: AtomicBool::new(in_use),
            messages: [const { AtomicU64::new(0) }; CLASSES],
            bytes: [const { AtomicU64::new(0) }; CLASSES],
            reasons: [const { AtomicU64::new(0) }; REASONS],
        }
    }
}

/// More threads than this posting at once is not a real program; they would share `SHARED`.
const MAX_THREADS: usize = 512;
static BLOCKS: [Block; MAX_THREADS] = [const { Block::new(false) }; MAX_THREADS];
/// Where posts go when their thread has no block (it is exiting, or the table is full): shared,
/// so it uses atomic adds.
static SHARED: Block = Block::new(true);

struct Slot(Cell<Option<&'static Block>>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(b) = self.0.get() {
            // Release: the next owner (Acquire in `register`) must see this thread's last counts.
            b.in_use.store(false, Ordering::Release);
        }
    }
}

thread_local! {
    static MINE: Slot = const { Slot(Cell::new(None)) };
}

fn bump(c: &AtomicU64, by: u64) {
    c.store(c.load(Relaxed).wrapping_add(by), Relaxed);
}

#[cold]
fn register() -> Option<&'static Block> {
    // Acquire pairs with the Release of the previous owner's exit: its last counts are seen.
    BLOCKS.iter().find(|b| b.in_use.compare_exchange(false, true, Ordering::Acquire, Relaxed).is_ok())
}

/// Count one message.
#[inline]
pub fn count(class: usize, reason: Reason, bytes: u64) {
    let owned = MINE.try_with(|slot| {
        let b = match slot.0.get() {
            Some(b) => b,
            None => {
                let b = register()?;
                slot.0.set(Some(b));
                b
            }
        };
        bump(&b.messages[class], 1);
        bump(&b.bytes[class], bytes);
        bump(&b.reasons[reason.index()], 1);
        Some(())
    });
    if !matches!(owned, Ok(Some(()))) {
        SHARED.messages[class].fetch_add(1, Relaxed);
        SHARED.bytes[class].fetch_add(bytes, Relaxed);
        SHARED.reasons[reason.index()].fetch_add(1, Relaxed);
    }
}

/// In a fork child: start from zero (the child's record counts the child's messages only), and
/// free the blocks of the threads that stayed in the parent.
pub fn reset_in_child() {
    let mine = MINE.try_with(|s| s.0.get()).ok().flatten();
    let zero = |b: &Block| {
        b.messages.iter().chain(&b.bytes).chain(&b.reasons).for_each(|c| c.store(0, Relaxed));
    };
    zero(&SHARED);
    for b in &BLOCKS {
        zero(b);
        let is_mine = mine.is_some_and(|m| std::ptr::eq(m, b));
        b.in_use.store(is_mine, Relaxed);
    }
}

/// Totals over every thread so far.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    pub messages: [u64; CLASSES],
    pub bytes: [u64; CLASSES],
    pub reasons: [u64; REASONS],
}

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
    BLOCKS.iter().for_each(add);
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
    }
}
