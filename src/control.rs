//! The control word: one atomic `u32` that every intercepted post loads once. It holds the
//! policy, the run-time switches and what they imply for the fast path, so the common case
//! (an adaptive post below the threshold) needs no other shared state but the accumulator.

use crate::sys::Real;
use aar_engine::{Policy, Reason, RoutingMode};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::*};

/// The word itself ([`Hot::control`]); 0 until initialisation (not ready: every post forwarded
/// untouched).
static CONTROL: &AtomicU32 = &HOT.control;

/// What every post reads (GNI_PostRdma's address, the control word, where initialisation stands,
/// whether a fork child still has to make its state, the cumulative-size sum and threshold,
/// whether a collective was seen) and what every valid counter read writes (the latest window),
/// in one cache line. On the read path the send between a decision and its read evicts
/// every line the library touched, so the next post would miss on each line of its own; the
/// write after the read brings this one back for it. `repr(C)` and atomics keep the fields
/// together (a plain static struct may be split back into separate globals).
#[repr(C, align(64))]
pub struct Hot {
    pub post_rdma: Real,
    pub control: AtomicU32,
    /// Set by the first collective `steady` routes or the first MPI_Alltoall (`mpi`).
    pub collective_seen: AtomicBool,
    /// Where initialisation stands (the states are `state`'s; 0: not started).
    pub init: AtomicU8,
    /// Set in a fork child until its own state is made.
    pub forked: AtomicBool,
    /// Bytes since the last decision. Updated with a relaxed load and store, not an atomic add:
    /// concurrent posts may lose a few bytes, which only delays a decision slightly.
    pub cumulative: AtomicU64,
    pub threshold: AtomicU64,
    /// The latest valid window, for trace lines written without the decider lock (f64 bits).
    pub last_latency: AtomicU64,
    pub last_stall: AtomicU64,
}

pub static HOT: Hot = Hot {
    post_rdma: Real::new(c"GNI_PostRdma"),
    control: AtomicU32::new(0),
    collective_seen: AtomicBool::new(false),
    init: AtomicU8::new(0),
    forked: AtomicBool::new(false),
    cumulative: AtomicU64::new(0),
    threshold: AtomicU64::new(u64::MAX),
    last_latency: AtomicU64::new(u64::MAX),
    last_stall: AtomicU64::new(u64::MAX),
};

const _: () = assert!(std::mem::size_of::<Hot>() == 64, "Hot must fit one cache line");

/// The word now.
#[inline]
pub fn load() -> u32 {
    CONTROL.load(Acquire)
}

/// Replace the word (at initialisation, when nobody else writes it).
pub fn store(w: u32) {
    CONTROL.store(w, Release);
}

/// Replace the word with `f(old)`, atomically with respect to other updates.
pub fn update(f: impl Fn(u32) -> u32) -> bool {
    CONTROL.fetch_update(AcqRel, Acquire, |w| Some(f(w))).is_ok()
}

/// Take every post off the fast path (a fork child, until its own state exists).
pub fn leave_fast_path() {
    CONTROL.fetch_and(!FAST, AcqRel);
}

/// Set [`DMAPP`] (once initialised: the word initialisation stores does not carry it).
pub fn note_dmapp(w: u32) {
    if w & (READY | DMAPP) == READY {
        CONTROL.fetch_or(DMAPP, AcqRel);
    }
}

/// Routing bits given to adaptive posts below the threshold (when [`REWRITE`]).
pub const ROUTING: u32 = 0xff;
const POLICY_SHIFT: u32 = 8;
const POLICY_MASK: u32 = 0x7 << POLICY_SHIFT;
/// Not switched off by `aar_disable()`.
pub const ENABLED: u32 = 1 << 11;
/// Initialised and not killed by `AAR_DISABLE`.
pub const READY: u32 = 1 << 12;
/// Decision trace on: every post takes the slow path, which writes a line.
pub const TRACE: u32 = 1 << 13;
/// Adaptive posts are rewritten (ready, enabled, policy other than off).
pub const REWRITE: u32 = 1 << 14;
/// The inline fast path may handle posts (ready, enabled, no trace).
pub const FAST: u32 = 1 << 15;
const LOW_LATENCY_SHIFT: u32 = 16;
/// Precomputed for the fast path, which then needs no lookup: the mode index (class) and the
/// reason of adaptive posts below the threshold when [`REWRITE`].
const CLASS_SHIFT: u32 = 24;
const REASON_SHIFT: u32 = 26;
/// The process has made a DMAPP call: a uGNI post may then come from inside one (libdmapp sending
/// through uGNI) and must be checked for it; programs that never use DMAPP skip that check.
pub const DMAPP: u32 = 1 << 29;

const fn policy_code(p: Policy) -> u32 {
    match p {
        Policy::Auto => 0,
        Policy::Fixed(m) => 1 + m.index() as u32,
        Policy::Off => 5,
        Policy::Steady => 6,
    }
}

/// The bits of a word that hold its policy: equal bits, equal policies.
#[inline(always)]
pub fn policy_bits(word: u32) -> u32 {
    word & POLICY_MASK
}

/// Whether a word's policy is `steady`.
#[inline(always)]
pub fn is_steady(word: u32) -> bool {
    policy_bits(word) == policy_code(Policy::Steady) << POLICY_SHIFT
}

/// The policy a word holds.
pub fn policy(word: u32) -> Policy {
    match (word & POLICY_MASK) >> POLICY_SHIFT {
        0 => Policy::Auto,
        c @ 1..=4 => Policy::Fixed(RoutingMode::ALL[c as usize - 1]),
        6 => Policy::Steady,
        _ => Policy::Off,
    }
}

/// Build a consistent word from its inputs; every derived bit is recomputed here and only here,
/// from the engine's rule for messages below the threshold ([`Policy::below_threshold`]).
pub fn word(policy: Policy, low_latency: RoutingMode, ready: bool, enabled: bool, trace: bool) -> u32 {
    let (below, reason) = policy.below_threshold(low_latency);
    let mut w = (policy_code(policy) << POLICY_SHIFT) | (u32::from(low_latency.dlvr_bits()) << LOW_LATENCY_SHIFT);
    w |= below.map_or(0, |m| u32::from(m.dlvr_bits()) | (m.index() as u32) << CLASS_SHIFT);
    w |= (reason.index() as u32) << REASON_SHIFT;
    if ready {
        w |= READY;
    }
    if enabled {
        w |= ENABLED;
    }
    if trace {
        w |= TRACE;
    }
    if ready && enabled && below.is_some() {
        w |= REWRITE;
    }
    if ready && enabled && !trace {
        w |= FAST;
    }
    w
}

/// The same word with a new policy, enabled switch or trace switch (`None`: unchanged). A fork
/// child stays off the fast path until its own state exists ([`leave_fast_path`]): a C API call
/// there (`aar_set_mode` before the child's first post) must not put its posts back on it, where
/// they would be counted in the parent's statistics, which the child's state then replaces.
pub fn with(w: u32, policy: Option<Policy>, enabled: Option<bool>, trace: Option<bool>) -> u32 {
    let low_latency =
        RoutingMode::from_routing_bits((w >> LOW_LATENCY_SHIFT) as u16 & 0xff).unwrap_or(RoutingMode::Adaptive3);
    let new = word(
        policy.unwrap_or(self::policy(w)),
        low_latency,
        w & READY != 0,
        enabled.unwrap_or(w & ENABLED != 0),
        trace.unwrap_or(w & TRACE != 0),
    );
    // Read after the caller's acquire load of the word: a child that has made its state (cleared
    // `forked`, then updated the word) is seen as such, or the update retries.
    let fast = if HOT.forked.load(Relaxed) { !FAST } else { u32::MAX };
    (new | (w & DMAPP)) & fast
}

/// The mode adaptive posts below the threshold get, if any.
pub fn below_threshold_mode(w: u32) -> Option<RoutingMode> {
    if w & REWRITE == 0 {
        return None;
    }
    RoutingMode::from_routing_bits((w & ROUTING) as u16)
}

/// Index of the mode adaptive posts below the threshold get (valid when [`REWRITE`]).
#[inline(always)]
pub fn below_threshold_class(w: u32) -> usize {
    ((w >> CLASS_SHIFT) & 0x3) as usize
}

/// [`below_threshold_reason`] without a lookup (valid when [`REWRITE`]).
#[inline(always)]
pub fn below_threshold_reason_index(w: u32) -> usize {
    ((w >> REASON_SHIFT) & 0x7) as usize
}

/// Why a post below the threshold gets the routing it gets.
pub fn below_threshold_reason(w: u32) -> Reason {
    if w & REWRITE == 0 {
        return Reason::Passthrough;
    }
    Reason::ALL.get(below_threshold_reason_index(w)).copied().unwrap_or(Reason::Passthrough)
}

/// What the policy is called in records and by `aar_policy_name()`.
pub fn policy_name(w: u32) -> &'static str {
    if w & READY == 0 {
        return "disabled";
    }
    if w & ENABLED == 0 {
        return "paused";
    }
    policy(w).name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_every_policy() {
        for p in Policy::ALL {
            for (ready, enabled, trace) in
                [(true, true, false), (true, false, false), (false, true, false), (true, true, true)]
            {
                let w = word(p, RoutingMode::Adaptive3, ready, enabled, trace);
                assert_eq!(policy(w), p);
                assert_eq!(w & FAST != 0, ready && enabled && !trace);
                assert_eq!(w & REWRITE != 0, ready && enabled && p != Policy::Off);
                assert_eq!(with(w, None, None, None), w);
                assert_eq!(with(w | DMAPP, Some(Policy::Off), Some(false), None) & DMAPP, DMAPP, "kept");
            }
        }
    }

    #[test]
    fn below_threshold_routing() {
        let w = word(Policy::Auto, RoutingMode::Adaptive3, true, true, false);
        assert_eq!(below_threshold_mode(w), Some(RoutingMode::Adaptive3));
        assert_eq!(below_threshold_reason(w), Reason::Threshold);
        assert_eq!((below_threshold_class(w), below_threshold_reason_index(w)), (3, Reason::Threshold.index()));
        let w = with(w, Some(Policy::Fixed(RoutingMode::Adaptive0)), None, None);
        assert_eq!(below_threshold_mode(w), Some(RoutingMode::Adaptive0));
        assert_eq!(below_threshold_reason(w), Reason::Fixed);
        assert_eq!((below_threshold_class(w), below_threshold_reason_index(w)), (0, Reason::Fixed.index()));
        let w = with(w, None, Some(false), None);
        assert_eq!(below_threshold_mode(w), None);
        assert_eq!(below_threshold_reason(w), Reason::Passthrough);
        assert_eq!(policy_name(w), "paused");
        let w = with(w, Some(Policy::Auto), Some(true), None);
        assert_eq!(with(w, None, None, Some(true)) & FAST, 0, "tracing takes every post off the fast path");
        assert_eq!(below_threshold_mode(w), Some(RoutingMode::Adaptive3), "low-latency mode survives");
        assert_eq!(policy_name(word(Policy::Off, RoutingMode::Adaptive2, true, true, false)), "off");
        assert_eq!(
            below_threshold_mode(word(Policy::Auto, RoutingMode::Adaptive2, true, true, false)),
            Some(RoutingMode::Adaptive2)
        );
    }
}
