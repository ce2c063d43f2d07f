//! Messages and bytes per API, per routing mode and per reason, and the calls past the threshold
//! that found the decider held, counted without contention.
//!
//! Each thread owns a block of counters it alone writes (a relaxed load and store, no atomic
//! read-modify-write, which would cost as much as the rest of the fast path); the record sums
//! the blocks at exit. The blocks are a fixed table, never allocated: a thread claims a free one
//! on its first message and gives it back when it exits (its totals keep counting in the sum);
//! a thread that finds no free block near its home shares one block with atomic adds.

use crate::sys;
use aar_abi::{GNI_DLVMODE_IN_ORDER, GNI_DLVMODE_MIN_HASH, GNI_DLVMODE_NMIN_HASH, GNI_DLVMODE_ROUTING_MASK};
use aar_engine::{Reason, RoutingMode};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, Ordering::Relaxed};
use std::sync::OnceLock;

/// Routing a message went out with: ADAPTIVE0..3, the non-adaptive ones, and SMSG left to the
/// caller's NIC setting.
/// The first four are [`RoutingMode::index`]'s.
pub const CLASS_NAMES: [&str; 9] =
    ["ADAPTIVE0", "ADAPTIVE1", "ADAPTIVE2", "ADAPTIVE3", "IN_ORDER", "MIN_HASH", "NMIN_HASH", "OTHER", "CALLER_SMSG"];
const IN_ORDER: usize = 4;
const MIN_HASH: usize = 5;
const NMIN_HASH: usize = 6;
/// Any other routing byte (NO_ADAPT, NO_HASH, a combination uGNI does not name), or a DMAPP
/// routing value the table in use does not name.
pub const OTHER: usize = 7;
/// An SMSG send left to the caller's setting of its NIC.
pub const CALLER_SMSG: usize = 8;
const CLASSES: usize = CLASS_NAMES.len();
const REASONS: usize = Reason::ALL.len();

/// The interface a message was sent through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Ugni,
    Dmapp,
}

impl Api {
    pub const ALL: [Api; 2] = [Api::Ugni, Api::Dmapp];

    /// As records and summaries name it.
    pub const fn name(self) -> &'static str {
        match self {
            Api::Ugni => "uGNI",
            Api::Dmapp => "DMAPP",
        }
    }
}

const APIS: usize = Api::ALL.len();

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

/// Messages and bytes of one API and routing class, side by side: counting a message writes
/// one cache line of them (aligned, so never two).
#[repr(C, align(16))]
struct Pair {
    messages: AtomicU64,
    bytes: AtomicU64,
}

impl Pair {
    const fn new() -> Self {
        Self { messages: AtomicU64::new(0), bytes: AtomicU64::new(0) }
    }
}

/// A thread's counters, laid out so that counting a message touches two cache lines: the first
/// (owner and reasons) and the one of its pair. On the read path every line the library touches
/// comes back from beyond L1, after the send's own memory traffic.
#[repr(C, align(64))]
struct Block {
    /// Thread pointer of the thread that writes this block; 0: free.
    owner: AtomicUsize,
    reasons: [AtomicU64; REASONS],
    counts: [[Pair; CLASSES]; APIS],
    /// Calls past the threshold that went out undecided: another thread held the decider. In the
    /// block's padding (it is 6 lines either way); only that path touches its line.
    undecided: AtomicU64,
    /// Messages of calls the real function refused, per API (not counted above: they sent
    /// nothing, and the caller sends them again). In the padding too, off the counting path.
    refused: [AtomicU64; APIS],
    /// Messages of DMAPP calls that went out and failed in the network (counted above too: they
    /// were sent, with the routing counted; [`failed`]). The last word of the padding.
    dmapp_failed: AtomicU64,
}

// Owner and reasons fill the first line; the pairs start on the next.
const _: () = assert!(std::mem::offset_of!(Block, counts) == 64);
const _: () =
    assert!(std::mem::size_of::<Block>() == 6 * 64, "the undecided, refused and failed counts fit in the padding");

impl Block {
    const fn new(owner: usize) -> Self {
        Self {
            owner: AtomicUsize::new(owner),
            reasons: [const { AtomicU64::new(0) }; REASONS],
            counts: [const { [const { Pair::new() }; CLASSES] }; APIS],
            undecided: AtomicU64::new(0),
            refused: [const { AtomicU64::new(0) }; APIS],
            dmapp_failed: AtomicU64::new(0),
        }
    }

    fn counters(&self) -> impl Iterator<Item = &AtomicU64> {
        self.counts
            .iter()
            .flatten()
            .flat_map(|p| [&p.messages, &p.bytes])
            .chain(&self.reasons)
            .chain([&self.undecided])
            .chain(&self.refused)
            .chain([&self.dmapp_failed])
    }

    /// Single writer: a relaxed load and store. Bytes stop at `u64::MAX` rather than wrap: each
    /// call's are below it, and a few large ones would pass it. Messages cannot: one call adds at
    /// most a PE count.
    #[inline(always)]
    fn bump(&self, c: Count) {
        let add = |c: &AtomicU64, by: u64| c.store(c.load(Relaxed).wrapping_add(by), Relaxed);
        let pair = &self.counts[c.api as usize][c.class % CLASSES];
        add(&pair.messages, c.messages);
        pair.bytes.store(pair.bytes.load(Relaxed).saturating_add(c.bytes), Relaxed);
        add(&self.reasons[reason_slot(c.reason)], c.messages);
    }

    /// Single writer: take back what [`Block::bump`] added for `c`, and count its messages as
    /// refused.
    fn unbump(&self, c: Count) {
        let sub = |c: &AtomicU64, by: u64| c.store(c.load(Relaxed).wrapping_sub(by), Relaxed);
        let pair = &self.counts[c.api as usize][c.class % CLASSES];
        sub(&pair.messages, c.messages);
        pair.bytes.store(pair.bytes.load(Relaxed).saturating_sub(c.bytes), Relaxed);
        sub(&self.reasons[reason_slot(c.reason)], c.messages);
        let refused = &self.refused[c.api as usize];
        refused.store(refused.load(Relaxed).wrapping_add(c.messages), Relaxed);
    }

    /// Shared: [`Block::unbump`] with atomic updates.
    fn sub(&self, c: Count) {
        let pair = &self.counts[c.api as usize][c.class % CLASSES];
        pair.messages.fetch_sub(c.messages, Relaxed);
        let _ = pair.bytes.fetch_update(Relaxed, Relaxed, |b| Some(b.saturating_sub(c.bytes)));
        self.reasons[reason_slot(c.reason)].fetch_sub(c.messages, Relaxed);
        self.refused[c.api as usize].fetch_add(c.messages, Relaxed);
    }

    /// Shared: atomic adds (bytes stop at `u64::MAX`, as in [`Block::bump`]).
    fn add(&self, c: Count) {
        let pair = &self.counts[c.api as usize][c.class % CLASSES];
        pair.messages.fetch_add(c.messages, Relaxed);
        let _ = pair.bytes.fetch_update(Relaxed, Relaxed, |b| Some(b.saturating_add(c.bytes)));
        self.reasons[reason_slot(c.reason)].fetch_add(c.messages, Relaxed);
    }
}

/// The slot of reason index `reason` in [`Block::reasons`]: a bound, not a remainder, which costs
/// the fast path a comparison where `% REASONS` (by 7) cost it six instructions. Every index the
/// library makes is in range; one that is not counts as the last reason.
#[inline(always)]
fn reason_slot(reason: usize) -> usize {
    reason.min(REASONS - 1)
}

/// Messages of one intercepted call: all of one API, class and reason.
#[derive(Clone, Copy)]
pub struct Count {
    pub api: Api,
    /// Routing class ([`CLASS_NAMES`]).
    pub class: usize,
    /// [`Reason::index`].
    pub reason: usize,
    pub messages: u64,
    /// Bytes of all of them.
    pub bytes: u64,
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

/// The key whose destructor frees a thread's block when it exits: set when a thread claims one,
/// never on the counting path. (Not a `thread_local!` with a destructor: glibc allocates to
/// register one and ends the process when it cannot; see [`sys::ThreadKey`].)
static RELEASE: OnceLock<Option<sys::ThreadKey>> = OnceLock::new();

/// Frees the block of index `value - 1` of an exiting thread.
unsafe extern "C" fn release(value: *mut libc::c_void) {
    if let Some(b) = (value as usize).checked_sub(1).and_then(|i| BLOCKS.get(i)) {
        // Release: the next owner (Acquire in `claim`) must see this thread's last counts.
        b.owner.store(0, Ordering::Release);
    }
}

/// Count one uGNI message (what [`refused`] takes back if uGNI refuses it).
#[inline]
pub fn count(class: usize, reason: Reason, bytes: u64) -> Count {
    let c = Count { api: Api::Ugni, class, reason: reason.index(), messages: 1, bytes };
    count_all(c);
    c
}

/// Count the messages of one call (the fast paths have the reason's index precomputed).
#[inline(always)]
pub fn count_all(c: Count) {
    if !count_own(c) {
        // In registers, not a struct in memory built before the branch on the fast path.
        count_elsewhere(sys::thread_pointer(), c.api, c.class, c.reason, c.messages, c.bytes);
    }
}

/// Count the messages of one call in the block this thread owns at its home slot, the common
/// case; `false`, counting nothing, when it owns none there ([`count_all`] counts them
/// elsewhere). The uGNI post's fast path counts elsewhere out of line, forward included, so
/// that it makes no call between its count and its forward.
#[inline(always)]
pub fn count_own(c: Count) -> bool {
    let me = sys::thread_pointer();
    let b = &BLOCKS[home(me)];
    let own = b.owner.load(Relaxed) == me;
    if own {
        b.bump(c);
    }
    own
}

/// Count a call past the threshold that found the decider held (its messages are counted as
/// any others, by [`count_all`]).
#[cold]
#[inline(never)]
pub fn count_undecided() {
    let me = sys::thread_pointer();
    let add = |c: &AtomicU64| c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
    match claim(me) {
        Some(b) => add(&b.undecided),
        None => _ = SHARED.undecided.fetch_add(1, Relaxed),
    }
}

/// The real function refused the call just counted as `c`, which sent nothing: its count moves
/// to the refused ones, so that a message the caller sends again is counted once. (Counting
/// after the call instead would write the tally after the send, which evicts its lines: a read
/// path slower by about 2 ns.) It goes where [`count_all`] put it: this thread's block, or the
/// shared one when the thread has none.
#[inline(always)]
pub fn refused(c: Count) {
    // In registers: a `Count` in memory would be stored on every call, before its forward.
    refused_parts(c.api, c.class, c.reason, c.messages, c.bytes);
}

#[cold]
#[inline(never)]
fn refused_parts(api: Api, class: usize, reason: usize, messages: u64, bytes: u64) {
    let c = Count { api, class, reason, messages, bytes };
    match owned(sys::thread_pointer()) {
        Some(i) => BLOCKS[i].unbump(c),
        None => SHARED.sub(c),
    }
}

/// [`refused`] unless the real function took the call (`sent`), right after it returned.
#[inline(always)]
pub fn settle(sent: bool, c: Count) {
    if !sent {
        refused(c);
    }
}

/// The DMAPP call of `messages` just counted went out and the network failed it (DMAPP said
/// so: [`Rc::went_out`]): they stay counted with the routing they went out with, and count as
/// failed too, in the block [`count_all`] put them in, as for [`refused`].
///
/// [`Rc::went_out`]: aar_abi::dmapp::Rc::went_out
#[cold]
#[inline(never)]
pub fn failed(messages: u64) {
    match owned(sys::thread_pointer()) {
        Some(i) => {
            let f = &BLOCKS[i].dmapp_failed;
            f.store(f.load(Relaxed).wrapping_add(messages), Relaxed);
        }
        None => _ = SHARED.dmapp_failed.fetch_add(messages, Relaxed),
    }
}

#[cold]
#[inline(never)]
fn count_elsewhere(me: usize, api: Api, class: usize, reason: usize, messages: u64, bytes: u64) {
    let c = Count { api, class, reason, messages, bytes };
    match claim(me) {
        Some(b) => b.bump(c),
        None => SHARED.add(c),
    }
}

/// The indices of the blocks a thread may own: its home slot and the next ones.
fn near(me: usize) -> impl Iterator<Item = usize> {
    let h = home(me);
    (0..PROBES).map(move |k| (h + k) % MAX_THREADS)
}

/// The index of the block thread `me` owns, if it claimed one.
fn owned(me: usize) -> Option<usize> {
    near(me).find(|&i| BLOCKS[i].owner.load(Relaxed) == me)
}

/// This thread's block near its home slot, claiming a free one on its first message.
fn claim(me: usize) -> Option<&'static Block> {
    if let Some(i) = owned(me) {
        return Some(&BLOCKS[i]);
    }
    // Acquire pairs with the Release of the previous owner's exit: its last counts are seen.
    let i = near(me).find(|&i| BLOCKS[i].owner.compare_exchange(0, me, Ordering::Acquire, Relaxed).is_ok())?;
    // Release: a thread that sees the bit (Acquire in `totals`) sees the block claimed.
    USED[i / 64].fetch_or(1 << (i % 64), Ordering::Release);
    if !RELEASE.get_or_init(|| sys::ThreadKey::new(release)).as_ref().is_some_and(|k| k.set(i + 1)) {
        // No key, or no memory for this thread's value: nothing would free the block, so do
        // not keep it.
        BLOCKS[i].owner.store(0, Ordering::Release);
        return None;
    }
    Some(&BLOCKS[i])
}

/// In a fork child: start from zero (the child's record counts the child's messages only), and
/// free the blocks of the threads that stayed in the parent.
pub fn reset_in_child() {
    let me = sys::thread_pointer();
    let zero = |b: &Block| b.counters().for_each(|c| c.store(0, Relaxed));
    zero(&SHARED);
    for b in &BLOCKS {
        zero(b);
        if b.owner.load(Relaxed) != me {
            b.owner.store(0, Relaxed);
        }
    }
}

/// Messages and bytes per class ([`CLASS_NAMES`]).
#[derive(Clone, Debug, Default)]
pub struct PerClass {
    pub messages: [u64; CLASSES],
    pub bytes: [u64; CLASSES],
}

impl PerClass {
    pub fn total_messages(&self) -> u64 {
        self.messages.iter().sum()
    }

    pub fn total_bytes(&self) -> u64 {
        self.bytes.iter().fold(0, |sum, &b| sum.saturating_add(b))
    }
}

/// Totals over every thread so far.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Per API ([`Api::ALL`]'s order).
    pub apis: [PerClass; APIS],
    /// Messages per reason ([`Reason::index`]), of every API.
    pub reasons: [u64; REASONS],
    /// Calls past the threshold that went out undecided ([`count_undecided`]).
    pub undecided: u64,
    /// Messages of refused calls per API ([`refused`]).
    pub refused: [u64; APIS],
    /// Messages of DMAPP calls that went out and failed ([`failed`]), in the counts above too.
    pub dmapp_failed: u64,
}

impl Totals {
    /// Every API together.
    pub fn all(&self) -> PerClass {
        let mut all = PerClass::default();
        for api in &self.apis {
            for i in 0..CLASSES {
                all.messages[i] += api.messages[i];
                all.bytes[i] = all.bytes[i].saturating_add(api.bytes[i]);
            }
        }
        all
    }

    pub fn api(&self, api: Api) -> &PerClass {
        &self.apis[api as usize]
    }
}

/// The sum over every thread's block so far.
pub fn totals() -> Totals {
    let mut t = Totals::default();
    let mut add = |b: &Block| {
        for (sum, api) in t.apis.iter_mut().zip(&b.counts) {
            for (i, pair) in api.iter().enumerate() {
                sum.messages[i] += pair.messages.load(Relaxed);
                sum.bytes[i] = sum.bytes[i].saturating_add(pair.bytes.load(Relaxed));
            }
        }
        for i in 0..REASONS {
            t.reasons[i] += b.reasons[i].load(Relaxed);
        }
        t.undecided += b.undecided.load(Relaxed);
        for (sum, r) in t.refused.iter_mut().zip(&b.refused) {
            *sum += r.load(Relaxed);
        }
        t.dmapp_failed += b.dmapp_failed.load(Relaxed);
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

    /// A refused call's count is taken back from where it went, its own thread's block or the
    /// shared one, and counted as refused: the messages, bytes and reasons are as before it. (The
    /// whole path, `settle` on a real refusal, is tests/forwarding.rs's.)
    #[test]
    fn a_refused_call_is_taken_back_and_counted_as_refused() {
        let c = Count { api: Api::Dmapp, class: 5, reason: Reason::Fixed.index(), messages: 3, bytes: 96 };
        let totals_of = |b: &Block| -> Vec<u64> { b.counters().map(|a| a.load(Relaxed)).collect() };
        let block = Block::new(1);
        let (empty, shared) = (totals_of(&block), Block::new(usize::MAX));
        block.bump(c);
        block.unbump(c);
        shared.add(c);
        shared.sub(c);
        for b in [&block, &shared] {
            assert_eq!(b.refused[Api::Dmapp as usize].load(Relaxed), 3);
            assert_eq!(b.refused[Api::Ugni as usize].load(Relaxed), 0);
            b.refused[Api::Dmapp as usize].store(0, Relaxed);
            assert_eq!(totals_of(b), empty, "everything else as before");
        }
    }

    #[test]
    fn counts_from_many_threads_add_up() {
        let before = totals();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for i in 0..10_000 {
                        count(3, Reason::Threshold, 64);
                        if i % 100 == 0 {
                            count_undecided();
                        }
                    }
                });
            }
        });
        // Threads that exited gave their blocks back; new ones reuse them and keep counting.
        std::thread::scope(|s| {
            s.spawn(|| count(0, Reason::Model, 1 << 20));
        });
        // A DMAPP call of 4 messages counts apart from uGNI, with its reason once per message.
        std::thread::scope(|s| {
            s.spawn(|| {
                let reason = Reason::Fixed.index();
                count_all(Count { api: Api::Dmapp, class: 2, reason, messages: 4, bytes: 4 * 32 })
            });
        });
        let after = totals();
        let (ugni, dmapp) = (after.api(Api::Ugni), after.api(Api::Dmapp));
        assert_eq!(ugni.messages[3] - before.api(Api::Ugni).messages[3], 80_000);
        assert_eq!(ugni.bytes[3] - before.api(Api::Ugni).bytes[3], 80_000 * 64);
        assert_eq!(ugni.messages[0] - before.api(Api::Ugni).messages[0], 1);
        assert_eq!(after.reasons[Reason::Model.index()] - before.reasons[Reason::Model.index()], 1);
        assert_eq!(dmapp.messages[2] - before.api(Api::Dmapp).messages[2], 4);
        assert_eq!(dmapp.bytes[2] - before.api(Api::Dmapp).bytes[2], 128);
        assert_eq!(after.reasons[Reason::Fixed.index()] - before.reasons[Reason::Fixed.index()], 4);
        assert_eq!(after.all().messages[2] - before.all().messages[2], 4);
        assert_eq!(after.undecided - before.undecided, 800);
        let claimed = BLOCKS.iter().filter(|b| b.counts.iter().flatten().any(|p| p.messages.load(Relaxed) > 0)).count();
        assert!(claimed <= 10, "blocks are reused by later threads: {claimed} used");
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
