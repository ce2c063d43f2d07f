//! `steady`'s routing of collective calls: one routing for every message of a call, chosen by
//! timing whole calls.
//!
//! In a collective every rank sends at once, so what a rank's counters measure of a side is the
//! network that the whole job's mix of sides makes, and a rank's own choice moves little of it.
//! Each rank choosing the side that looks cheaper from its counters can then settle the job
//! where every rank is worse off than if all had chosen the other side (a 16 KiB allreduce at
//! paper scale, docs/policy.md). MPI gives what the counters cannot: every rank of a
//! communicator calls its collectives in the same order. So the ranks can try a routing
//! together, call by call, on a schedule that depends only on how many calls of that kind they
//! have made, and time the call itself, which is the cost that matters.
//!
//! Three arms are tried per kind of call ([`CallArm`]): `steady`'s own per-message decisions,
//! every message on the low-stall side, every message on the low-latency side. Each is timed
//! once (in that order; an arm that a fixed-mode A/B iteration has already timed is skipped),
//! then the fastest runs, and the calls numbered 16, 32, 64, 128, 256 and every 256 after time
//! one arm again, each in turn (the fastest too). Arms that the fastest beats by at most
//! [`HYSTERESIS`] of their own time count as fast: the first of them in the order above runs, so
//! that ranks whose calls took about the same times choose the same routing, and a choice does
//! not move on noise.
//!
//! Only calls that move the caller's data are calls here. A barrier's messages carry no
//! payload: its arms would time the same few header packets three ways, differ by the noise of
//! the moment, and the tries would send it on routings chosen for bandwidth it does not use. Its
//! messages are decided as outside collectives.

/// How a collective call is routed under `steady`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CallArm {
    /// Every message decided on its own, as outside collectives.
    PerMessage,
    /// Every message on the low-stall side (plain Adaptive; the alltoall mode in MPI_Alltoall).
    LowStall,
    /// Every message on the low-latency side (High Bias).
    LowLatency,
}

impl CallArm {
    /// Every arm, in the order a new kind of call tries them.
    pub const ALL: [CallArm; 3] = [CallArm::PerMessage, CallArm::LowStall, CallArm::LowLatency];

    const fn index(self) -> usize {
        self as usize
    }
}

/// An arm counts as fast as the fastest when the fastest takes at least (1 − this) of the arm's
/// time (`0.95 · t ≤ fastest`: a share of the arm's time, as `steady`'s own hysteresis is a share
/// of the time in use): call times move by a few percent with the rest of the machine's traffic,
/// and from one rank to another.
pub const HYSTERESIS: f64 = 0.05;
/// Weight of a new timing in an arm's smoothed time.
const SMOOTHING: f64 = 0.5;
/// Kinds of call remembered at once; the one unused longest makes room for a new one.
const KINDS: usize = 8;
/// The first call, counted from 0, at which the arms are timed again.
const FIRST_RETRY: u32 = 16;
/// From here, they are timed again every this many calls.
const MAX_RETRY_PERIOD: u32 = 256;

/// What the tuner knows of one kind of call (a collective, its size, its communicator: the
/// caller's key).
#[derive(Clone, Copy, Debug, Default)]
struct Kind {
    key: u64,
    /// The tuner's clock at its latest call: the kind unused longest is replaced first.
    used: u64,
    /// Calls made under `steady` (the schedule's clock: the same on every rank).
    calls: u32,
    /// Calls that timed an arm again.
    retries: u32,
    /// Smoothed time of each arm, µs; `None`: never timed.
    time_us: [Option<f64>; 3],
    choice: Option<CallArm>,
}

/// A call in progress, as [`CallTuner::begin`] started it. Where several calls can be in
/// progress at once (threads of one process, each inside its own collective), each caller keeps
/// its own and makes it current again ([`CallTuner::resume`]) before the call's decisions and
/// its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallTicket {
    key: u64,
    slot: usize,
    /// The arm it is timed for, if it is.
    timed: Option<CallArm>,
    /// The arm `steady` routes it with, if `steady` is in force.
    routed: Option<CallArm>,
}

impl CallTicket {
    /// The arm `steady` routes the call with (`None`: another policy is in force).
    pub fn arm(self) -> Option<CallArm> {
        self.routed
    }
}

/// `steady`'s state for collective calls.
#[derive(Clone, Debug, Default)]
pub struct CallTuner {
    kinds: [Kind; KINDS],
    clock: u64,
    current: Option<CallTicket>,
}

impl CallTuner {
    /// A call of kind `key` begins. `steady` says whether `steady` is the policy in force (the
    /// return is then the call's arm); `fixed` is the arm a fixed mode in force routes every
    /// message with, if it is one (its time is kept for `steady`, as an A/B experiment's fixed
    /// iterations time the arms for it).
    pub fn begin(&mut self, key: u64, steady: bool, fixed: Option<CallArm>) -> Option<CallArm> {
        self.clock += 1;
        let slot = match self.kinds.iter().position(|k| k.used > 0 && k.key == key) {
            Some(s) => s,
            None => {
                let s = (0..KINDS).min_by_key(|&s| self.kinds[s].used).unwrap_or(0);
                self.kinds[s] = Kind { key, ..Kind::default() };
                s
            }
        };
        let kind = &mut self.kinds[slot];
        kind.used = self.clock;
        let arm = if steady {
            let c = kind.calls;
            kind.calls = kind.calls.saturating_add(1);
            Some(if let Some(untimed) = CallArm::ALL.into_iter().find(|a| kind.time_us[a.index()].is_none()) {
                untimed
            } else if is_retry(c) {
                let a = CallArm::ALL[kind.retries as usize % CallArm::ALL.len()];
                kind.retries = kind.retries.wrapping_add(1);
                a
            } else {
                kind.choice.unwrap_or(CallArm::PerMessage)
            })
        } else {
            fixed
        };
        let routed = arm.filter(|_| steady);
        self.current = Some(CallTicket { key, slot, timed: arm, routed });
        routed
    }

    /// The call in progress: the one that began last, or the one made current again.
    pub fn current(&self) -> Option<CallTicket> {
        self.current
    }

    /// Make `ticket` the call in progress (`None`: none is). A ticket whose kind the tuner has
    /// since forgotten, to make room for newer kinds, is none.
    pub fn resume(&mut self, ticket: Option<CallTicket>) {
        self.current = ticket.filter(|t| self.kinds[t.slot].used > 0 && self.kinds[t.slot].key == t.key);
    }

    /// The call in progress ended, `elapsed_ns` after it began.
    pub fn end(&mut self, elapsed_ns: u64) {
        let Some(CallTicket { slot, timed: Some(arm), .. }) = self.current.take() else { return };
        let kind = &mut self.kinds[slot];
        let t = elapsed_ns as f64 / 1e3;
        let i = arm.index();
        kind.time_us[i] = Some(kind.time_us[i].map_or(t, |old| old + SMOOTHING * (t - old)));
        if let Some(best) = kind.time_us.iter().flatten().copied().min_by(f64::total_cmp) {
            // The first arm, in the order of `CallArm::ALL`, within the hysteresis of the
            // fastest: a function of the times alone, so that ranks whose calls took about
            // the same times choose alike (a mix of routings in one collective is the slowest).
            kind.choice = CallArm::ALL.into_iter().find(|a| {
                kind.time_us.iter().all(Option::is_some)
                    && kind.time_us[a.index()].is_some_and(|t| (1.0 - HYSTERESIS) * t <= best)
            });
        }
    }

    /// The arm `steady` runs calls of kind `key` with once every arm is timed, if that is known.
    pub fn choice(&self, key: u64) -> Option<CallArm> {
        self.kinds.iter().find(|k| k.used > 0 && k.key == key).and_then(|k| k.choice)
    }
}

/// A key for [`CallTuner::begin`] from what tells kinds of call apart. Each value is mixed in
/// whole, a multiply and a shift per word: libaar.so keys every collective call under `steady`,
/// and hashing byte by byte (FNV-1a) took about 30 ns of a call. Each step is a bijection of the
/// new value, so keys that differ only in their last value never collide.
pub fn call_key(parts: &[u64]) -> u64 {
    parts.iter().fold(0xcbf2_9ce4_8422_2325, |h, &p| {
        let h = (h ^ p).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    })
}

/// Whether the call numbered `c` (from 0) of a kind times an arm again: 16, 32, 64, 128, 256,
/// then every 256.
fn is_retry(c: u32) -> bool {
    c >= FIRST_RETRY && if c < MAX_RETRY_PERIOD { c.is_power_of_two() } else { c.is_multiple_of(MAX_RETRY_PERIOD) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CallArm::*;

    /// One call of `key` under `steady` that takes `us`; its arm.
    fn call(t: &mut CallTuner, key: u64, us: f64) -> CallArm {
        let arm = t.begin(key, true, None).unwrap();
        t.end((us * 1e3) as u64);
        arm
    }

    #[test]
    fn each_arm_is_timed_once_then_the_fastest_runs() {
        let mut t = CallTuner::default();
        let times = |a: CallArm| match a {
            PerMessage => 90.0,
            LowStall => 48.0,
            LowLatency => 101.0,
        };
        let mut arms = vec![];
        for _ in 0..16 {
            let a = t.begin(7, true, None).unwrap();
            t.end((times(a) * 1e3) as u64);
            arms.push(a);
        }
        assert_eq!(&arms[..4], &[PerMessage, LowStall, LowLatency, LowStall]);
        assert!(arms[3..].iter().all(|&a| a == LowStall), "{arms:?}");
        assert_eq!(t.choice(7), Some(LowStall));
        // call 16 times the arms again, in turn: the per-message one first
        assert_eq!(call(&mut t, 7, 90.0), PerMessage);
        assert_eq!(call(&mut t, 7, 48.0), LowStall);
    }

    #[test]
    fn calls_in_progress_at_once_are_each_timed_for_their_own_kind() {
        let mut t = CallTuner::default();
        // two threads: kind 1 begins, kind 2 begins and ends, then kind 1 ends
        assert_eq!(t.begin(1, true, None), Some(PerMessage));
        let one = t.current();
        assert_eq!(t.begin(2, true, None), Some(PerMessage));
        t.end(10_000);
        t.resume(one);
        assert_eq!(t.current().and_then(CallTicket::arm), Some(PerMessage));
        t.end(90_000);
        assert_eq!(t.current(), None);
        for (us1, us2) in [(50.0, 20.0), (120.0, 30.0)] {
            call(&mut t, 1, us1);
            call(&mut t, 2, us2);
        }
        // kind 1 got its 90 µs (its low-stall arm wins), kind 2 its 10 µs (per message wins)
        assert_eq!((t.choice(1), t.choice(2)), (Some(LowStall), Some(PerMessage)));
        // a ticket whose kind made room for others is none
        let two = {
            t.begin(2, true, None);
            t.current()
        };
        for key in 10..20 {
            call(&mut t, key, 1.0);
        }
        t.resume(two);
        assert_eq!(t.current(), None);
    }

    #[test]
    fn the_retries_come_at_16_32_64_128_256_and_every_256() {
        let retries: Vec<u32> = (0..1100).filter(|&c| is_retry(c)).collect();
        assert_eq!(retries, [16, 32, 64, 128, 256, 512, 768, 1024]);
    }

    #[test]
    fn of_the_arms_within_5_percent_of_the_fastest_the_first_runs() {
        let mut t = CallTuner::default();
        // timed 100, 97, 120 µs: the per-message arm is within 5 % of the fastest
        for us in [100.0, 97.0, 120.0] {
            call(&mut t, 1, us);
        }
        assert_eq!(t.choice(1), Some(PerMessage));
        // The share is of the arm's own time: timed 105.2, 100, 120 µs, 0.95 · 105.2 = 99.94 <= 100
        // (5.2 % of the fastest's time, more than 5 %, still counts).
        for us in [105.2, 100.0, 120.0] {
            call(&mut t, 3, us);
        }
        assert_eq!(t.choice(3), Some(PerMessage));
        // timed 100, 90, 120 µs: it is not (95 > 90)
        for us in [100.0, 90.0, 120.0] {
            call(&mut t, 2, us);
        }
        assert_eq!(t.choice(2), Some(LowStall));
        for _ in 3..16 {
            assert_eq!(call(&mut t, 2, 90.0), LowStall);
        }
        // call 16 times the per-message arm at 92: smoothed (100 + 92) / 2 = 96, and 91.2 > 90
        assert_eq!(call(&mut t, 2, 92.0), PerMessage);
        assert_eq!(t.choice(2), Some(LowStall));
        for _ in 17..32 {
            call(&mut t, 2, 90.0);
        }
        // call 32 times the low-stall arm at 100: smoothed 95, and 91.2 <= 95
        assert_eq!(call(&mut t, 2, 100.0), LowStall);
        assert_eq!(t.choice(2), Some(PerMessage));
    }

    #[test]
    fn fixed_iterations_time_their_arm_for_steady() {
        let mut t = CallTuner::default();
        // an A/B experiment: a fixed low-stall iteration, then a fixed low-latency one
        assert_eq!(t.begin(3, false, Some(LowStall)), None);
        t.end(48_000);
        assert_eq!(t.begin(3, false, Some(LowLatency)), None);
        t.end(101_000);
        // a policy that routes every message its own way times nothing
        assert_eq!(t.begin(3, false, None), None);
        t.end(1_000);
        // `steady` times only the arm not timed yet, then takes the fastest
        assert_eq!(call(&mut t, 3, 60.0), PerMessage);
        assert_eq!(call(&mut t, 3, 60.0), LowStall);
        assert_eq!(t.choice(3), Some(LowStall));
    }

    #[test]
    fn kinds_are_apart_and_the_one_unused_longest_makes_room() {
        let mut t = CallTuner::default();
        for us in [100.0, 50.0, 120.0] {
            call(&mut t, 1, us);
        }
        for us in [50.0, 100.0, 120.0] {
            call(&mut t, 2, us);
        }
        assert_eq!((t.choice(1), t.choice(2)), (Some(LowStall), Some(PerMessage)));
        // eight more kinds: kind 1, unused longest, goes first, then kind 2
        for key in 10..17 {
            call(&mut t, key, 10.0);
        }
        assert_eq!((t.choice(1), t.choice(2)), (None, Some(PerMessage)));
        call(&mut t, 17, 10.0);
        assert_eq!(t.choice(2), None);
        // a forgotten kind starts over
        assert_eq!(call(&mut t, 1, 10.0), PerMessage);
    }

    #[test]
    fn an_end_without_a_timed_call_changes_nothing() {
        let mut t = CallTuner::default();
        t.end(5);
        assert_eq!(t.begin(4, true, None), Some(PerMessage));
        t.end(5_000);
        t.end(1);
        assert_eq!(t.begin(4, true, None), Some(LowStall));
    }
}
