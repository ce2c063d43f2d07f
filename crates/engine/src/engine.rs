//! The per-rank decision state machine: the paper's Algorithm 1 in both directions.

use crate::calls::{CallArm, CallTicket, CallTuner};
use crate::class::DestinationClass;
use crate::mode::RoutingMode;
use crate::model::{message_time_us, packets, request_flits, Transfer, Window};
use crate::settings::EngineConfig;
use crate::steady::{scale, Steady};

/// What chooses routing modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase", tag = "kind", content = "mode"))]
pub enum Policy {
    /// De Sensi et al.'s algorithm: counters and cost model decide at each threshold crossing.
    Auto,
    /// The paper's cost model with hysteresis, a dwell that grows with reversals, state per
    /// destination class, learned λ and σ and a shared-NIC flit term ([`crate::steady`]).
    Steady,
    /// Every adaptive request gets this mode.
    Fixed(RoutingMode),
    /// Observe only: count and read counters, never rewrite.
    Off,
}

impl Policy {
    /// The routing of an adaptive message below the cumulative-size threshold, and why: the
    /// low-latency mode in automatic routing, the pinned mode, or the caller's own under `Off`.
    /// Constant between policy changes, so a caller with a fast path may precompute it.
    #[inline]
    pub const fn below_threshold(self, low_latency: RoutingMode) -> (Option<RoutingMode>, Reason) {
        match self {
            Policy::Auto | Policy::Steady => (Some(low_latency), Reason::Threshold),
            Policy::Fixed(m) => (Some(m), Reason::Fixed),
            Policy::Off => (None, Reason::Passthrough),
        }
    }

    /// The name records, traces and `aar_policy_name()` use: `auto`, `steady`, `off` or the
    /// mode's name.
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Auto => "auto",
            Policy::Steady => "steady",
            Policy::Off => "off",
            Policy::Fixed(m) => m.name(),
        }
    }
}

impl Policy {
    /// Every policy, each fixed mode once: what a table of names or codes must cover.
    pub const ALL: [Policy; 7] = [
        Policy::Auto,
        Policy::Steady,
        Policy::Off,
        Policy::Fixed(RoutingMode::Adaptive0),
        Policy::Fixed(RoutingMode::Adaptive1),
        Policy::Fixed(RoutingMode::Adaptive2),
        Policy::Fixed(RoutingMode::Adaptive3),
    ];

    /// Whether the policy chooses modes from the counters (`auto`, `steady`): it needs them.
    pub const fn is_automatic(self) -> bool {
        matches!(self, Policy::Auto | Policy::Steady)
    }
}

impl core::str::FromStr for Policy {
    type Err = String;

    /// The names users give a policy, in `AAR_MODE`, `AAR_AB` and `aar sim run --policy`: `auto`
    /// (or `paper`), `steady`, `off` (or `observe`), or an adaptive mode in either spelling.
    fn from_str(text: &str) -> Result<Policy, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" | "paper" => Ok(Policy::Auto),
            "steady" => Ok(Policy::Steady),
            "off" | "observe" => Ok(Policy::Off),
            _ => text
                .parse()
                .map(Policy::Fixed)
                .map_err(|_| format!("\"{}\" is not a policy", text.trim().escape_debug())),
        }
    }
}

/// One message as the engine sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// Payload bytes.
    pub bytes: u64,
    /// PUT-like (data in the requests) or GET-like (data in the responses).
    pub transfer: Transfer,
    /// Opaque destination identity (an endpoint handle), used to match fresh observations.
    pub endpoint: u64,
    /// Where the destination is relative to the sender ([`DestinationClass::Unknown`] without a
    /// topology mapping).
    pub class: DestinationClass,
    /// When it was posted (ns, any clock that only goes forward), for `steady`'s count of the
    /// messages that share the NIC's injection with it; `None`: not known (each message is then
    /// taken as alone).
    pub posted_ns: Option<u64>,
}

/// Cumulative NIC counter values read at one instant, as PAPI returns them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CounterSample {
    /// Request flits sent.
    pub req_flits: i64,
    /// NIC cycles request flits were stalled.
    pub req_stalled: i64,
    /// Cumulative request-to-response latency, in [`EngineConfig::latency_unit`].
    pub rsp_latency: i64,
    /// Responses tracked.
    pub rsp_packets: i64,
    /// Response stalls, subtracted from request stalls when the event is configured.
    pub rsp_stalled: Option<i64>,
}

impl CounterSample {
    /// The counts from `earlier` to this sample (wrapping, as the registers do): a window, when
    /// both samples come from one PAPI event set.
    pub fn since(self, earlier: CounterSample) -> CounterSample {
        CounterSample {
            req_flits: self.req_flits.wrapping_sub(earlier.req_flits),
            req_stalled: self.req_stalled.wrapping_sub(earlier.req_stalled),
            rsp_latency: self.rsp_latency.wrapping_sub(earlier.rsp_latency),
            rsp_packets: self.rsp_packets.wrapping_sub(earlier.rsp_packets),
            rsp_stalled: self.rsp_stalled.zip(earlier.rsp_stalled).map(|(a, b)| a.wrapping_sub(b)),
        }
    }

    /// This sample moved on by the counts of a window.
    pub fn plus(self, window: CounterSample) -> CounterSample {
        CounterSample {
            req_flits: self.req_flits.wrapping_add(window.req_flits),
            req_stalled: self.req_stalled.wrapping_add(window.req_stalled),
            rsp_latency: self.rsp_latency.wrapping_add(window.rsp_latency),
            rsp_packets: self.rsp_packets.wrapping_add(window.rsp_packets),
            rsp_stalled: self.rsp_stalled.zip(window.rsp_stalled).map(|(a, b)| a.wrapping_add(b)),
        }
    }
}

/// Bytes of decided messages on each side, cumulative. A node's ranks add theirs up (libaar.so
/// in its node's shared segment, the simulator over a node's engines) and hand the sum back with
/// each counter sample ([`Engine::observe_node`]): the NIC's counters are the node's, so a window
/// measures the side the node's decided bytes were on, not necessarily this rank's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SideBytes {
    /// On the low-latency side (High Bias).
    pub low_latency: u64,
    /// On the low-stall side (Adaptive, or the alltoall mode).
    pub low_stall: u64,
}

impl SideBytes {
    fn add(&mut self, side: Side, bytes: u64) {
        let b = match side {
            Side::LowLatency => &mut self.low_latency,
            Side::LowStall => &mut self.low_stall,
        };
        *b = b.wrapping_add(bytes);
    }

    /// Both sides' bytes added up (wrapping, as cumulative sums may): a node's sum over its ranks.
    pub fn plus(self, other: SideBytes) -> SideBytes {
        SideBytes {
            low_latency: self.low_latency.wrapping_add(other.low_latency),
            low_stall: self.low_stall.wrapping_add(other.low_stall),
        }
    }

    /// The bytes added since `earlier` (both cumulative; wrapping, as the sums may).
    pub fn since(self, earlier: SideBytes) -> SideBytes {
        SideBytes {
            low_latency: self.low_latency.wrapping_sub(earlier.low_latency),
            low_stall: self.low_stall.wrapping_sub(earlier.low_stall),
        }
    }

    /// The side holding at least `dominance` of the bytes; `Err(())` when there are none.
    fn dominant(self, dominance: f64) -> Result<Option<Side>, ()> {
        let total = self.low_latency.saturating_add(self.low_stall);
        if total == 0 {
            return Err(());
        }
        let share = |b: u64| b as f64 / total as f64;
        Ok(if share(self.low_latency) >= dominance {
            Some(Side::LowLatency)
        } else if share(self.low_stall) >= dominance {
            Some(Side::LowStall)
        } else {
            None
        })
    }
}

/// Why a message got its routing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Reason {
    /// Below the cumulative-size threshold, or no counter window yet: High Bias.
    Threshold,
    /// The cost model chose.
    Model,
    /// A fixed mode is set.
    Fixed,
    /// The model chose the low-stall mode inside MPI_Alltoall, which uses ADAPTIVE1 there (under
    /// `steady`, also for the messages below the threshold after such a decision in it).
    Alltoall,
    /// Short message (SMSG), routed through the NIC's SMSG delivery mode.
    Smsg,
    /// Left as the caller asked: non-adaptive request, library off or disabled.
    Passthrough,
    /// Under `steady`, inside a collective call that routes every message on one side
    /// ([`Engine::begin_call`]).
    Collective,
}

impl Reason {
    /// Every reason, in the order of [`Reason::index`].
    pub const ALL: [Reason; 7] =
        [Self::Threshold, Self::Model, Self::Fixed, Self::Alltoall, Self::Smsg, Self::Passthrough, Self::Collective];
    /// The name records and traces use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Threshold => "threshold",
            Self::Model => "model",
            Self::Fixed => "fixed",
            Self::Alltoall => "alltoall",
            Self::Smsg => "smsg",
            Self::Passthrough => "passthrough",
            Self::Collective => "collective",
        }
    }
    /// Position in [`Reason::ALL`], for per-reason tables.
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// The routing for one message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// `None`: leave the descriptor as the caller wrote it.
    pub mode: Option<RoutingMode>,
    /// Why the message got that routing.
    pub reason: Reason,
    /// Read the NIC counters *before* posting this message and pass them to [`Engine::observe`]:
    /// the side changes here, and the window of the old side must close without this message.
    pub read_before: bool,
    /// Read the NIC counters after this message is posted and pass them to [`Engine::observe`].
    pub read_counters: bool,
    /// Request flits of the message.
    pub flits: u64,
    /// Packets of the message.
    pub packets: u64,
    /// The counter window the model used (of the mode in use), if it ran.
    pub window: Option<Window>,
}

/// What became of a counter sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WindowOutcome {
    /// The engine's first sample: the start of the first window. (After a discarded window the
    /// discarding sample starts the next one; after an empty one the window runs on.)
    Baseline,
    /// A window with its latency and stall ratio.
    Valid(Window),
    /// A counter went backwards: decreased, wrapped or was reset.
    DiscardedDecreasing,
    /// No request flits or no responses in the window: nothing to divide by.
    DiscardedEmpty,
    /// Latency or stall ratio beyond the configured plausibility limits.
    DiscardedAbsurd,
}

/// Counts kept by the engine, for the per-rank record.
///
/// Declared in the order of the engine's layout: the counts every decision and read under `auto`
/// writes share the first cache line (libaar.so's read path misses on every line it writes after
/// the send), the rare ones follow.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(C)]
pub struct EngineStats {
    /// Threshold crossings decided, every policy's (the model's among them: `decisions_model`).
    pub decisions: u64,
    /// Decisions the cost model made (with a counter window).
    pub decisions_model: u64,
    /// Decisions that used a fresh observation of the mode not in use.
    pub fresh_observations_used: u64,
    /// Counter samples taken (every [`Engine::observe`]).
    pub counter_reads: u64,
    /// Windows used.
    pub windows_valid: u64,
    /// Sums over valid windows, for mean latency and stall ratio per record.
    pub window_latency_us_sum: f64,
    /// Sum of the stall ratios of valid windows.
    pub window_stall_ratio_sum: f64,
    /// Windows whose decisions were on more than one side (no read at a switch): not used.
    pub windows_mixed: u64,
    /// Decisions that moved to the low-latency mode: an automatic policy's choice against its
    /// own previous one (`auto`'s last side, `steady`'s side of the message's class), so a fixed
    /// mode another policy used in between is no switch.
    pub switches_to_low_latency: u64,
    /// Decisions that moved to the low-stall mode (counted as the above).
    pub switches_to_low_stall: u64,
    /// Windows discarded because a counter went backwards.
    pub windows_discarded_decreasing: u64,
    /// Windows discarded for having nothing to divide by.
    pub windows_discarded_empty: u64,
    /// Windows discarded as implausible.
    pub windows_discarded_absurd: u64,
    /// `steady`: valid windows attributed to one destination class (counted while `steady`'s
    /// state is kept, [`Engine::keep_steady_state`]).
    pub windows_class_attributed: u64,
    /// `steady`: decisions whose switch the dwell held back.
    pub switches_held: u64,
    /// `steady`: decisions made with a learned λ or σ (or both) for the message's class and size
    /// range.
    pub decisions_calibrated: u64,
    /// `steady` with ranks sharing the NIC: valid windows in which neither side carried
    /// `dominance` of the node's decided bytes, attributed to nothing.
    pub windows_node_mixed: u64,
    /// `steady` with ranks sharing the NIC: valid windows attributed to the side of the node's
    /// decided bytes where this rank's own decisions in them were not all on that side.
    pub windows_node_side: u64,
}

// `auto`'s counts in one line, as the engine's first.
const _: () = assert!(core::mem::offset_of!(EngineStats, windows_mixed) == 56);

/// The cumulative-size rule: `sum` plus the message's `bytes` (saturating), and whether that
/// passes `threshold`. Passing it restarts the sum: the returned sum is then 0. Streams of tiny
/// messages thus still trigger decisions.
#[inline(always)]
pub const fn accumulate(sum: u64, bytes: u64, threshold: u64) -> (u64, bool) {
    let sum = sum.saturating_add(bytes);
    if sum <= threshold {
        (sum, false)
    } else {
        (0, true)
    }
}

/// The two sides of the paper's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// High Bias.
    LowLatency,
    /// Plain Adaptive.
    LowStall,
}

impl Side {
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
    pub(crate) const fn other(self) -> Side {
        match self {
            Side::LowLatency => Side::LowStall,
            Side::LowStall => Side::LowLatency,
        }
    }
}

/// A measured window of one side, kept to replace the scaled estimate for a while.
#[derive(Clone, Copy, Debug)]
struct Fresh {
    window: Window,
    endpoint: u64,
    bytes: u64,
    uses_left: u32,
}

/// The decisions since the last counter read: what the next window will be attributed to.
#[derive(Clone, Copy, Debug, Default)]
struct OpenWindow {
    decisions: u32,
    /// Side of every decision in the window; `None` if none, or mixed, or neither side.
    side: Option<Side>,
    mixed: bool,
    /// The last message decided in the window, to match fresh observations.
    endpoint: u64,
    bytes: u64,
}

/// The open window per destination class, kept while `steady` learns
/// ([`Engine::keep_steady_state`]): decided bytes, decisions, side, and whether the class's side
/// changed without a read (`steady` attributes windows by class). Apart from [`OpenWindow`], so
/// that the other policies' reads neither touch nor reset it.
#[derive(Clone, Copy, Debug, Default)]
struct ClassWindow {
    bytes: [u64; 4],
    decisions: [u32; 4],
    side: [Option<Side>; 4],
    mixed: [bool; 4],
}

impl ClassWindow {
    /// Every class's decisions run together with others no class kept: none can be attributed.
    const UNATTRIBUTABLE: ClassWindow =
        ClassWindow { bytes: [0; 4], decisions: [0; 4], side: [None; 4], mixed: [true; 4] };

    /// The class that decided at least `dominance` of the window's decided bytes, all on one
    /// side, with that side and its mean decided message size.
    fn dominant_class(&self, dominance: f64) -> Option<(DestinationClass, Side, u64)> {
        // Saturating: a window that never closes (no counters) keeps adding.
        let total = self.bytes.iter().fold(0u64, |t, &b| t.saturating_add(b));
        let c = (0..4).max_by_key(|&c| self.bytes[c])?;
        let share = self.bytes[c] as f64 / total.max(1) as f64;
        if total == 0 || share < dominance || self.mixed[c] {
            return None;
        }
        let side = self.side[c]?;
        Some((DestinationClass::ALL[c], side, self.bytes[c] / u64::from(self.decisions[c].max(1))))
    }
}

/// The decision state of one rank: the policy, the open counter window, the latest observations.
///
/// Laid out hot first (`repr(C)`, in declaration order; libaar.so places it at a cache-line
/// boundary): in libaar.so
/// the send between a decision and its counter read evicts every line the engine touches, so each
/// distinct line `observe` and `on_threshold_crossed` reach costs a miss per read. The statistics,
/// the read's state, the open window and the latest observations come first, then the
/// configuration (its hot scalars before `steady`'s parameters): six lines for `auto`'s read.
/// Then the open window per class and `steady`'s tables, which only `steady` (or its learning,
/// [`Engine::keep_steady_state`]) reaches.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Engine {
    stats: EngineStats,
    baseline: Option<CounterSample>,
    /// Decisions since the last counter read (the read schedule; the open window may hold more
    /// when a read found none of its traffic yet).
    since_read: u32,
    /// The side `auto` chose at its own last decision (High Bias before its first). Only `auto`'s
    /// decisions move it: in an A/B experiment the other arms' routing is theirs, so `auto`'s
    /// switches (and its ties) are counted against its own previous choice, not the last arm's.
    auto_side: Side,
    /// Valid windows feed `steady`'s state whatever the policy in force (see
    /// [`Engine::keep_steady_state`]).
    steady_learns: bool,
    /// `closing` holds a window closed at a side change, waiting for its read (see
    /// [`Decision::read_before`]). A flag here rather than an `Option` there: every read asks,
    /// and the window itself is only reached at side changes.
    closing_pending: bool,
    /// The side that was in use while `last` was measured; `None`: no valid window of a side
    /// yet. (An `Option<(Window, Side)>` would take 8 bytes more, and the engine's seventh line.)
    last_side: Option<Side>,
    open: OpenWindow,
    fresh: [Option<Fresh>; 2],
    /// Latest valid window (see `last_side`).
    last: Window,
    cfg: EngineConfig,
    open_classes: ClassWindow,
    closing: OpenWindow,
    closing_classes: ClassWindow,
    cumulative: u64,
    steady: Steady,
    /// `steady`'s mode for the messages below the threshold inside MPI_Alltoall: the alltoall
    /// mode after a decision in it for the low-stall side, else none (High Bias). Kept across
    /// policies, as the rest of `steady`'s state.
    alltoall_follow: Option<RoutingMode>,
    /// `steady`'s routing of collective calls, and the side the call in progress routes every
    /// message with, if it does.
    calls: CallTuner,
    call_side: Option<Side>,
    /// This rank's decided bytes per side, while `steady` learns (see [`SideBytes`]).
    decided: SideBytes,
    /// The node's decided bytes at the sample a window starts from, with that sample
    /// ([`Engine::observe_node`]).
    node_baseline: Option<(CounterSample, SideBytes)>,
}

impl Engine {
    /// An engine in its initial state: High Bias in use, no window yet.
    pub fn new(cfg: EngineConfig) -> Self {
        Self {
            steady: Steady::new(&cfg.steady),
            cfg,
            cumulative: 0,
            auto_side: Side::LowLatency,
            baseline: None,
            open: OpenWindow::default(),
            open_classes: ClassWindow::default(),
            closing_pending: false,
            closing: OpenWindow::default(),
            closing_classes: ClassWindow::default(),
            since_read: 0,
            last_side: None,
            last: Window { latency_us: 0.0, stall_ratio: 0.0 },
            fresh: [None, None],
            steady_learns: true,
            stats: EngineStats::default(),
            alltoall_follow: None,
            calls: CallTuner::default(),
            call_side: None,
            decided: SideBytes::default(),
            node_baseline: None,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Counts so far.
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// Start the statistics over (a forked child reports its own decisions only).
    pub fn reset_stats(&mut self) {
        self.stats = EngineStats::default();
    }

    /// `steady`: the (λ, σ) a decision for `class` and a message of `bytes` uses, and whether
    /// they were learned (else they are [`EngineConfig::lambda`] and [`EngineConfig::sigma`]).
    pub fn calibration(&self, class: DestinationClass, bytes: u64) -> (f64, f64, bool) {
        self.steady.calibration(&self.cfg, class, bytes)
    }

    /// The latest valid counter window.
    pub fn last_window(&self) -> Option<Window> {
        self.last_side.map(|_| self.last)
    }

    /// Change policy at run time (C API, A/B iterations). The engine's state is kept across
    /// policies: a window measured while a fixed mode was in force is attributed to that mode's
    /// side (when it is the low-latency, low-stall or alltoall mode), so `auto` resumes from
    /// what the fixed iterations measured, fresh observations included; a window measured under
    /// `off` (the application's own routing) is counted in the statistics but attributed to
    /// no side.
    pub fn set_policy(&mut self, policy: Policy) {
        self.cfg.policy = policy;
        if policy == Policy::Steady {
            self.learn_steady_state();
        }
    }

    /// Whether valid windows feed `steady`'s per-class state while another policy is in force
    /// (by default they do: in an A/B experiment `steady` learns from the windows of every arm).
    /// A caller that knows `steady` is none of its policies (neither the configured one nor an
    /// A/B arm) turns this off and saves that bookkeeping on every window. It is on whenever
    /// `steady` is in force: a later [`Engine::set_policy`] to `steady` turns it back on, and
    /// `steady` then learns from the windows measured from there on.
    pub fn keep_steady_state(&mut self, keep: bool) {
        if keep || self.cfg.policy == Policy::Steady {
            self.learn_steady_state();
        } else {
            self.steady_learns = false;
        }
    }

    /// Keep `steady`'s state from here on. Decisions already in a window were not kept by class:
    /// such a window is attributed to no class.
    fn learn_steady_state(&mut self) {
        if !self.steady_learns {
            self.steady_learns = true;
            let untracked = |decided| if decided { ClassWindow::UNATTRIBUTABLE } else { ClassWindow::default() };
            self.open_classes = untracked(self.open.decisions > 0);
            self.closing_classes = untracked(self.closing_pending);
        }
    }

    /// The counters were read before: a read now closes a window, of the decisions since the
    /// last read or, when there were none, of the traffic the last ones left in flight (which
    /// then counts for no side). At an iteration boundary libaar.so and the simulator read then,
    /// so that no window spans two policies of an A/B experiment and none of an iteration's
    /// traffic is booked to the next one.
    pub fn window_open(&self) -> bool {
        self.baseline.is_some() || self.closing_pending
    }

    /// Routing of a message below the threshold (see [`Policy::below_threshold`]).
    pub fn below_threshold_mode(&self) -> Option<RoutingMode> {
        self.cfg.policy.below_threshold(self.cfg.low_latency_mode).0
    }

    /// Routing of a message below the threshold inside a collective call when it is not
    /// [`Engine::below_threshold_mode`], only under `steady`: the call's side when the call routes
    /// every message with one ([`Engine::begin_call`], reason [`Reason::Collective`]); else, inside
    /// MPI_Alltoall once a decision in it chose the low-stall side, the alltoall mode (reason
    /// [`Reason::Alltoall`]). An alltoall posts its messages together, so they are not
    /// latency-bound however small, and one that mixes minimal and non-minimal messages is
    /// slower than either alone (docs/policy.md, section 6).
    pub fn below_threshold_in_call(&self, in_alltoall: bool) -> Option<(RoutingMode, Reason)> {
        if self.cfg.policy != Policy::Steady {
            return None;
        }
        if let Some(side) = self.call_side {
            return Some((self.mode_of(side, in_alltoall), Reason::Collective));
        }
        self.alltoall_follow.filter(|_| in_alltoall).map(|m| (m, Reason::Alltoall))
    }

    /// A collective call begins (libaar.so: an MPI collective is entered; the simulator: a
    /// collective motif starts). `key` tells kinds of call apart (the function, its size, its
    /// communicator); every rank that makes the call must give the same key. Under `steady` the
    /// call may route every message on one side (returned; see [`calls`](crate::calls)); under
    /// a fixed mode its time is kept for `steady` when the mode is the one a side has in this
    /// call (ADAPTIVE0 or, in MPI_Alltoall, ADAPTIVE1; ADAPTIVE3).
    pub fn begin_call(&mut self, key: u64, in_alltoall: bool) -> Option<CallArm> {
        let steady = self.cfg.policy == Policy::Steady;
        let fixed = match self.cfg.policy {
            Policy::Fixed(m) if self.steady_learns => match self.side_of(m) {
                Some(Side::LowLatency) => Some(CallArm::LowLatency),
                Some(Side::LowStall) if m == self.mode_of(Side::LowStall, in_alltoall) => Some(CallArm::LowStall),
                _ => None,
            },
            _ => None,
        };
        let arm = self.calls.begin(key, steady, fixed);
        self.resume_call(self.calls.current());
        arm
    }

    /// The collective call in progress ended, `elapsed_ns` after it began.
    pub fn end_call(&mut self, elapsed_ns: u64) {
        self.calls.end(elapsed_ns);
        self.call_side = None;
    }

    /// The collective call in progress (the one that began last, or the one made current
    /// again), for a caller that can have several at once: each thread of a process keeps its
    /// own and gives it back to [`Engine::resume_call`] before its decisions and its end.
    pub fn call_ticket(&self) -> Option<CallTicket> {
        self.calls.current()
    }

    /// Make `ticket` the collective call in progress (`None`: the message being decided is in
    /// none): its routing under `steady`, and the call [`Engine::end_call`] ends.
    pub fn resume_call(&mut self, ticket: Option<CallTicket>) {
        self.calls.resume(ticket);
        self.call_side = self.calls.current().and_then(CallTicket::arm).and_then(|arm| match arm {
            CallArm::LowStall => Some(Side::LowStall),
            CallArm::LowLatency => Some(Side::LowLatency),
            CallArm::PerMessage => None,
        });
    }

    /// `steady`'s arm for calls of kind `key`, once it has timed every arm.
    pub fn call_choice(&self, key: u64) -> Option<CallArm> {
        self.calls.choice(key)
    }

    /// The whole per-message algorithm: accumulate, and decide when the threshold is crossed.
    /// (libaar.so keeps the sum itself, lock-free, with the same [`accumulate`], and calls
    /// [`Engine::on_threshold_crossed`] directly.)
    pub fn decide(&mut self, msg: &Message, in_alltoall: bool) -> Decision {
        let crossed;
        (self.cumulative, crossed) = accumulate(self.cumulative, msg.bytes, self.cfg.threshold_bytes);
        if !crossed {
            let (mode, reason) = match self.below_threshold_in_call(in_alltoall) {
                Some((m, reason)) => (Some(m), reason),
                None => self.cfg.policy.below_threshold(self.cfg.low_latency_mode),
            };
            return Decision {
                mode,
                reason,
                read_before: false,
                read_counters: false,
                flits: request_flits(msg.bytes, msg.transfer),
                packets: packets(msg.bytes),
                window: None,
            };
        }
        self.on_threshold_crossed(msg, in_alltoall)
    }

    /// Decide for a message that crossed the cumulative-size threshold. Counters are read in
    /// every policy but `Off` too, so records carry the network state of every arm.
    ///
    /// `#[inline]` here and on the helpers of `auto`'s decision and read (down to the model's
    /// arithmetic): their code is then made in the caller's crate, so libaar.so calls them
    /// directly, where a call into this crate goes through the GOT, a line its sends evict.
    #[inline]
    pub fn on_threshold_crossed(&mut self, msg: &Message, in_alltoall: bool) -> Decision {
        // Inside MPI_Alltoall `steady` keeps one state for every message: they go to every
        // class at once and share their counter windows.
        let one_class;
        let msg = if in_alltoall && self.steady_learns {
            one_class = Message { class: DestinationClass::Unknown, ..*msg };
            &one_class
        } else {
            msg
        };
        self.stats.decisions += 1;
        let flits = request_flits(msg.bytes, msg.transfer);
        let packets = packets(msg.bytes);
        let mut d = Decision {
            mode: None,
            reason: Reason::Passthrough,
            read_before: false,
            read_counters: false,
            flits,
            packets,
            window: None,
        };
        // One comparison for `auto`, the others out of line: a `match` over every policy here
        // compiles to a jump table, a line in `.rodata` that the send after the previous decision
        // has evicted.
        let side = match self.cfg.policy {
            Policy::Auto => {
                let side = match self.last_side {
                    None => {
                        d.reason = Reason::Threshold;
                        Side::LowLatency
                    }
                    Some(observed) => {
                        let window = self.last;
                        d.window = Some(window);
                        d.reason = Reason::Model;
                        self.stats.decisions_model += 1;
                        self.model_choice(msg, flits, packets, window, observed)
                    }
                };
                if self.auto_side != side {
                    self.count_switch(side);
                }
                self.auto_side = side;
                self.route(side, in_alltoall, &mut d);
                Some(side)
            }
            _ => {
                let side;
                (side, d) = self.side_not_auto(msg, in_alltoall, d);
                side
            }
        };
        d.read_before = self.add_to_window(side, msg);
        d.read_counters = match self.cfg.policy {
            // Until a window is attributed to it (the class's or the node's), a read after every
            // decision, as `auto` reads until it has a window of a side: windows that mix sides
            // (policies alternating across iterations) are no measurement.
            Policy::Steady => {
                !self.steady.measured(msg.class) || self.since_read >= self.steady.window_decisions(&self.cfg)
            }
            _ => self.last_side.is_none() || self.since_read >= self.cfg.window_decisions.max(1),
        };
        d
    }

    /// Whether a window closed at a side change waits for its read; it no longer waits.
    #[inline]
    fn take_closing(&mut self) -> bool {
        std::mem::take(&mut self.closing_pending)
    }

    /// The window closed at a side change never had its read: it runs into the open one, and
    /// the two belong to no side.
    #[inline]
    fn run_closing_into_open(&mut self) {
        self.open.mixed = true;
        if self.steady_learns {
            self.open_classes.mixed = [true; 4];
        }
    }

    /// [`Engine::on_threshold_crossed`] under a policy other than `auto`. The decision goes in
    /// and out by value: a `&mut` to it would keep it in memory on `auto`'s path too, built
    /// there in bytes and copied out in words (a store-forwarding stall per decision).
    #[inline(never)]
    fn side_not_auto(&mut self, msg: &Message, in_alltoall: bool, mut d: Decision) -> (Option<Side>, Decision) {
        let side = match self.cfg.policy {
            Policy::Off | Policy::Auto => None,
            Policy::Fixed(m) => {
                d.mode = Some(m);
                d.reason = Reason::Fixed;
                self.side_of(m)
            }
            Policy::Steady if self.call_side.is_some() => {
                // The call routes every message with one side: timed as a whole, not decided
                // here (its windows are still measured, and kept for that side).
                let side = self.call_side.unwrap_or(Side::LowLatency);
                self.route(side, in_alltoall, &mut d);
                d.reason = Reason::Collective;
                Some(side)
            }
            Policy::Steady => {
                let before = self.steady.side(msg.class);
                let c = self.steady.choose(&self.cfg, msg, d.flits, d.packets);
                d.window = c.window;
                d.reason = if c.window.is_some() { Reason::Model } else { Reason::Threshold };
                self.stats.decisions_model += u64::from(c.window.is_some());
                self.stats.switches_held += u64::from(c.held);
                self.stats.decisions_calibrated += u64::from(c.calibrated);
                if c.side != before {
                    self.count_switch(c.side);
                }
                self.route(c.side, in_alltoall, &mut d);
                self.alltoall_follow = if d.reason == Reason::Alltoall { d.mode } else { None };
                Some(c.side)
            }
        };
        (side, d)
    }

    #[inline]
    fn count_switch(&mut self, to: Side) {
        match to {
            Side::LowLatency => self.stats.switches_to_low_latency += 1,
            Side::LowStall => self.stats.switches_to_low_stall += 1,
        }
    }

    /// The mode of a side.
    #[inline]
    fn mode_of(&self, side: Side, in_alltoall: bool) -> RoutingMode {
        match side {
            Side::LowLatency => self.cfg.low_latency_mode,
            Side::LowStall if in_alltoall => self.cfg.alltoall_mode,
            Side::LowStall => self.cfg.low_stall_mode,
        }
    }

    /// The mode of a side, and the reason when the alltoall mode replaces the low-stall one.
    #[inline]
    fn route(&self, side: Side, in_alltoall: bool, d: &mut Decision) {
        d.mode = Some(self.mode_of(side, in_alltoall));
        if side == Side::LowStall && in_alltoall {
            d.reason = Reason::Alltoall;
        }
    }

    /// Count a decision into the open window. A window holds one side only: when the side
    /// changes, the old window is closed before this message is sent (returns true: read now).
    /// Under `steady` the side is per destination class, and only a change of the side of the
    /// message's class closes the window.
    #[inline]
    fn add_to_window(&mut self, side: Option<Side>, msg: &Message) -> bool {
        if self.take_closing() {
            // The read asked for at the last side change never came: the windows run together.
            self.run_closing_into_open();
        }
        let switching = self.open.decisions > 0 && self.open.side != side;
        let read_before = if self.steady_learns {
            self.add_to_class_window(side, msg, switching)
        } else {
            switching && !self.open.mixed
        };
        if read_before {
            self.closing = self.open;
            self.closing_pending = true;
            self.open = OpenWindow::default();
        } else {
            self.open.mixed |= switching;
        }
        // Saturating: without counters (no PAPI) the window never closes.
        self.open.decisions = self.open.decisions.saturating_add(1);
        self.since_read = self.since_read.saturating_add(1);
        self.open.side = side;
        self.open.endpoint = msg.endpoint;
        self.open.bytes = msg.bytes;
        read_before
    }

    /// [`Engine::add_to_window`] for the open window per class, while `steady` learns: whether
    /// to read before this message (the side of the message's class changes under `steady`, the
    /// node's side under the other policies, as `switching` says). Out of line: the other
    /// policies' decisions skip it.
    #[inline(never)]
    fn add_to_class_window(&mut self, side: Option<Side>, msg: &Message, switching: bool) -> bool {
        let c = msg.class.index();
        let class_switching = self.open_classes.decisions[c] > 0 && self.open_classes.side[c] != side;
        let read_before = match self.cfg.policy {
            Policy::Steady => class_switching && !self.open_classes.mixed[c],
            _ => switching && !self.open.mixed,
        };
        if read_before {
            self.closing_classes = std::mem::take(&mut self.open_classes);
        } else {
            self.open_classes.mixed[c] |= class_switching;
        }
        let open = &mut self.open_classes;
        open.decisions[c] = open.decisions[c].saturating_add(1);
        open.bytes[c] = open.bytes[c].saturating_add(msg.bytes);
        open.side[c] = side;
        if let Some(side) = side {
            self.decided.add(side, msg.bytes);
        }
        read_before
    }

    fn side_of(&self, m: RoutingMode) -> Option<Side> {
        if m == self.cfg.low_latency_mode {
            Some(Side::LowLatency)
        } else if m == self.cfg.low_stall_mode || m == self.cfg.alltoall_mode {
            Some(Side::LowStall)
        } else {
            None
        }
    }

    /// Eq. 3-4: compare the estimated time of the message on both sides, measured side from the
    /// window, the other from a fresh observation of it or scaled by λ and σ. Ties keep `auto`'s
    /// side.
    #[inline]
    fn model_choice(&mut self, msg: &Message, flits: u64, packets: u64, window: Window, observed: Side) -> Side {
        let other = observed.other();
        let estimate = match self.fresh[other.index()] {
            Some(f) if f.uses_left > 0 && f.endpoint == msg.endpoint && f.bytes == msg.bytes => {
                self.stats.fresh_observations_used += 1;
                f.window
            }
            _ => scale(window, observed, self.cfg.lambda, self.cfg.sigma),
        };
        let (low_latency, low_stall) = match observed {
            Side::LowLatency => (window, estimate),
            Side::LowStall => (estimate, window),
        };
        let t_low_latency = message_time_us(flits, packets, low_latency);
        let t_low_stall = message_time_us(flits, packets, low_stall);
        match self.auto_side {
            Side::LowLatency if t_low_stall < t_low_latency => Side::LowStall,
            Side::LowLatency => Side::LowLatency,
            Side::LowStall if t_low_latency < t_low_stall => Side::LowLatency,
            Side::LowStall => Side::LowStall,
        }
    }

    /// Take a counter sample: the deltas since the previous sample form a window, attributed to
    /// the side of the decisions it covers. Bad windows are discarded, never divided.
    #[inline]
    pub fn observe(&mut self, sample: CounterSample) -> WindowOutcome {
        self.observe_window(sample, None)
    }

    /// [`Engine::observe`], with the node's decided bytes over the window when they are known
    /// (`steady` then attributes it by them, [`Engine::observe_node`]).
    #[inline(always)]
    fn observe_window(&mut self, sample: CounterSample, node: Option<SideBytes>) -> WindowOutcome {
        self.stats.counter_reads += 1;
        self.since_read = 0;
        let outcome = match self.baseline {
            None => WindowOutcome::Baseline,
            Some(old) => self.window_between(&old, &sample),
        };
        if matches!(outcome, WindowOutcome::DiscardedEmpty | WindowOutcome::Baseline) {
            // Nothing of the window's messages reached the counters yet (a read right after
            // the posts), or there was no sample before: the decisions wait for their traffic,
            // which comes after this read. Taken as a window, they would be thrown away: a rank
            // that posts all its messages at once would never see one attributed, and a rank
            // whose iteration is one message would have its first window only after two. A
            // window closed at a side change now runs into the next one: together they belong
            // to no side.
            if outcome == WindowOutcome::Baseline {
                self.baseline = Some(sample);
            } else {
                self.stats.windows_discarded_empty += 1;
            }
            if self.take_closing() {
                self.run_closing_into_open();
            }
            return outcome;
        }
        self.baseline = Some(sample);
        let closed = self.take_closing();
        if closed {
            // A read before the new side's first message: that decision, made before the read,
            // is the open window's first, and the read schedule counts it.
            self.since_read = self.open.decisions;
        }
        let covered = if closed { self.closing } else { std::mem::take(&mut self.open) };
        let WindowOutcome::Valid(w) = outcome else {
            if self.steady_learns {
                self.take_classes(closed);
            }
            self.count_discarded(outcome);
            return outcome;
        };
        self.stats.windows_valid += 1;
        self.stats.window_latency_us_sum += w.latency_us;
        self.stats.window_stall_ratio_sum += w.stall_ratio;
        match covered.side {
            Some(side) if !covered.mixed => self.remember(w, side, &covered),
            _ if covered.mixed => self.stats.windows_mixed += 1,
            _ => {}
        }
        if self.steady_learns {
            let class = self.take_classes(closed).dominant_class(self.cfg.steady.dominance);
            let node_side = covered.side.filter(|_| !covered.mixed);
            let (class, node_side) = match node {
                Some(node) => self.node_attribution(node, class, node_side),
                None => (class, node_side),
            };
            self.stats.windows_class_attributed += u64::from(class.is_some());
            self.steady.observe(&self.cfg.steady, w, class, node_side);
        }
        outcome
    }

    /// [`Engine::observe`] with the node's decided bytes per side at the sample (the sum over the
    /// ranks sharing the NIC, this one's included). With more than one rank per node, `steady`
    /// then attributes a window by the node's bytes: to the side that carried at least
    /// `dominance` of them, whichever side this rank's own decisions were on (its class only
    /// when that is its side too), and to nothing when neither side did. The counters are the
    /// NIC's: a rank alone on High Bias among node-mates on Adaptive measures Adaptive.
    pub fn observe_node(&mut self, sample: CounterSample, node: SideBytes) -> WindowOutcome {
        if self.cfg.ranks_per_node <= 1 || !self.steady_learns {
            return self.observe(sample);
        }
        // The node's bytes since the sample the window starts from; none when that sample came
        // without them (through `observe`).
        let window = match self.node_baseline {
            Some((at, bytes)) if self.baseline == Some(at) => Some(node.since(bytes)),
            _ => None,
        };
        let outcome = self.observe_window(sample, window);
        // An empty window runs on from the same baseline, and the node's bytes with it.
        if outcome != WindowOutcome::DiscardedEmpty && self.baseline == Some(sample) {
            self.node_baseline = Some((sample, node));
        }
        outcome
    }

    /// This rank's decided bytes per side so far, for its node's sum (counted while `steady`
    /// learns, [`Engine::keep_steady_state`]).
    pub fn decided_bytes(&self) -> SideBytes {
        self.decided
    }

    /// A window's attribution by the node's decided bytes in it (see [`Engine::observe_node`]).
    /// Out of line: only `steady` with ranks sharing the NIC reaches it.
    #[inline(never)]
    fn node_attribution(
        &mut self,
        node: SideBytes,
        class: Option<(DestinationClass, Side, u64)>,
        own: Option<Side>,
    ) -> (Option<(DestinationClass, Side, u64)>, Option<Side>) {
        match node.dominant(self.cfg.steady.dominance) {
            // No decided bytes on the node (a window of traffic in flight): this rank's view.
            Err(()) => (class, own),
            Ok(None) => {
                self.stats.windows_node_mixed += 1;
                (None, None)
            }
            Ok(Some(side)) => {
                self.stats.windows_node_side += u64::from(own != Some(side));
                (class.filter(|c| c.1 == side), Some(side))
            }
        }
    }

    /// The per-class part of the window a read closes (the one closed at a side change, or the
    /// open one, which starts over).
    #[inline]
    fn take_classes(&mut self, closed: bool) -> ClassWindow {
        if closed {
            self.closing_classes
        } else {
            std::mem::take(&mut self.open_classes)
        }
    }

    /// Count a discarded window. Out of line (discards are rare): one `match` over every outcome
    /// in `observe` compiles to a jump table, a line in `.rodata` that the send before a read has
    /// evicted, where the valid window's path now takes one comparison.
    #[cold]
    fn count_discarded(&mut self, outcome: WindowOutcome) {
        match outcome {
            WindowOutcome::DiscardedDecreasing => self.stats.windows_discarded_decreasing += 1,
            WindowOutcome::DiscardedAbsurd => self.stats.windows_discarded_absurd += 1,
            // counted in `observe`, or not a window
            WindowOutcome::DiscardedEmpty | WindowOutcome::Baseline | WindowOutcome::Valid(_) => {}
        }
    }

    /// A valid window of one side: the latest observation, and a fresh one of that side that
    /// ages with every window of the other side.
    #[inline]
    fn remember(&mut self, w: Window, side: Side, covered: &OpenWindow) {
        (self.last, self.last_side) = (w, Some(side));
        let uses_left = self.cfg.freshness;
        self.fresh[side.index()] =
            Some(Fresh { window: w, endpoint: covered.endpoint, bytes: covered.bytes, uses_left });
        if let Some(f) = &mut self.fresh[side.other().index()] {
            f.uses_left = f.uses_left.saturating_sub(1);
        }
    }

    #[inline]
    fn window_between(&self, old: &CounterSample, new: &CounterSample) -> WindowOutcome {
        // A counter that did not decrease moved by at most u64::MAX, a `u64` ([`to_f64`] converts
        // it without constants; `i128` would go through a software routine).
        let delta = |a: i64, b: i64| (b >= a).then(|| b.wrapping_sub(a) as u64);
        let (Some(flits), Some(stalled), Some(latency), Some(responses), Some(rsp_stalled)) = (
            delta(old.req_flits, new.req_flits),
            delta(old.req_stalled, new.req_stalled),
            delta(old.rsp_latency, new.rsp_latency),
            delta(old.rsp_packets, new.rsp_packets),
            match (old.rsp_stalled, new.rsp_stalled) {
                (Some(a), Some(b)) => delta(a, b),
                _ => Some(0),
            },
        ) else {
            return WindowOutcome::DiscardedDecreasing;
        };
        if flits == 0 || responses == 0 {
            return WindowOutcome::DiscardedEmpty;
        }
        // Response stalls can exceed request stalls by read skew; the reference clamps to zero.
        let stall_ratio = to_f64(stalled.saturating_sub(rsp_stalled)) / to_f64(flits);
        let latency_us = self.cfg.latency_unit.to_us(to_f64(latency) / to_f64(responses));
        let plausible = latency_us.is_finite()
            && stall_ratio.is_finite()
            && latency_us <= self.cfg.max_latency_us
            && stall_ratio <= self.cfg.max_stall_ratio;
        if !plausible {
            return WindowOutcome::DiscardedAbsurd;
        }
        WindowOutcome::Valid(Window { latency_us, stall_ratio })
    }
}

/// `x as f64` without the two constants a `u64` conversion loads (each a cache line that the
/// send before a read has evicted): through `i64`, halving values above `i64::MAX` with their
/// last bit kept as a sticky bit, which rounds the same. The same value as `x as f64`.
#[inline(always)]
fn to_f64(x: u64) -> f64 {
    match i64::try_from(x) {
        Ok(i) => i as f64,
        Err(_) => {
            let half = ((x >> 1) | (x & 1)) as i64 as f64;
            half + half
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_the_difference_of_two_samples_and_moves_a_sample_on() {
        let a = CounterSample { req_flits: 10, req_stalled: 5, rsp_latency: 100, rsp_packets: 2, rsp_stalled: Some(1) };
        let b = CounterSample { req_flits: 25, req_stalled: 9, rsp_latency: 160, rsp_packets: 5, rsp_stalled: Some(3) };
        let w = b.since(a);
        let by_hand =
            CounterSample { req_flits: 15, req_stalled: 4, rsp_latency: 60, rsp_packets: 3, rsp_stalled: Some(2) };
        assert_eq!(w, by_hand);
        assert_eq!(a.plus(w), b);
        // Without response stalls on one side there are none in the window.
        assert_eq!(b.since(CounterSample { rsp_stalled: None, ..a }).rsp_stalled, None);
    }

    /// A window of 2 µs latency and stall ratio 0.5 after `prev`.
    fn next(prev: CounterSample) -> CounterSample {
        let d = 1_000_000;
        CounterSample {
            req_flits: prev.req_flits + d,
            req_stalled: prev.req_stalled + d / 2,
            rsp_latency: prev.rsp_latency + 2 * d,
            rsp_packets: prev.rsp_packets + d,
            rsp_stalled: None,
        }
    }

    /// An engine that kept no per-class window while `auto` was in force attributes to no class
    /// the window during which `steady` is put in force (its first decisions were not kept by
    /// class), and the next one, all `steady`'s, to the class that decided it.
    #[test]
    fn steady_put_in_force_mid_window_learns_from_the_next_window() {
        let msg = Message {
            bytes: 1 << 20,
            transfer: Transfer::Put,
            endpoint: 7,
            class: DestinationClass::OtherGroup,
            posted_ns: None,
        };
        let mut e = Engine::new(EngineConfig { window_decisions: 1, ..EngineConfig::default() });
        e.keep_steady_state(false);
        let mut c = CounterSample::default();
        assert_eq!(e.observe(c), WindowOutcome::Baseline);
        e.on_threshold_crossed(&msg, false);
        e.set_policy(Policy::Steady);
        e.on_threshold_crossed(&msg, false);
        c = next(c);
        assert!(matches!(e.observe(c), WindowOutcome::Valid(_)));
        assert_eq!((e.stats().windows_valid, e.stats().windows_class_attributed), (1, 0));
        e.on_threshold_crossed(&msg, false);
        c = next(c);
        assert!(matches!(e.observe(c), WindowOutcome::Valid(_)));
        assert_eq!((e.stats().windows_valid, e.stats().windows_class_attributed), (2, 1));
    }

    /// With a read after every decision, a read that finds none of its decision's traffic keeps
    /// the window open; a switch at the next decision must then close it before its message goes
    /// out, as with longer windows (a property test found the two sides mixed in one window).
    #[test]
    fn a_switch_after_an_empty_read_closes_the_window_first() {
        let cfg = EngineConfig { window_decisions: 1, threshold_bytes: 0, ..EngineConfig::default() };
        let mut e = Engine::new(cfg);
        e.keep_steady_state(false);
        let msg = |bytes| Message {
            bytes,
            transfer: Transfer::Put,
            endpoint: 7,
            class: DestinationClass::Unknown,
            posted_ns: None,
        };
        let mut c = CounterSample::default();
        assert_eq!(e.observe(c), WindowOutcome::Baseline);
        // High Bias stalls (2 µs, 0.5): a 1 MiB message goes Adaptive.
        assert_eq!(e.on_threshold_crossed(&msg(1 << 20), false).reason, Reason::Threshold);
        c = next(c);
        assert!(matches!(e.observe(c), WindowOutcome::Valid(_)));
        let d = e.on_threshold_crossed(&msg(1 << 20), false);
        assert_eq!((d.mode, d.read_before), (Some(RoutingMode::Adaptive0), false));
        assert_eq!(e.observe(c), WindowOutcome::DiscardedEmpty, "none of its traffic yet");
        // An 8-byte message is latency-bound: back to High Bias, and the Adaptive window closes first.
        let d = e.on_threshold_crossed(&msg(8), false);
        assert_eq!((d.mode, d.read_before), (Some(RoutingMode::Adaptive3), true));
        c = next(c);
        assert!(matches!(e.observe(c), WindowOutcome::Valid(_)));
        c = next(c);
        assert!(matches!(e.observe(c), WindowOutcome::Valid(_)));
        assert_eq!((e.stats().windows_valid, e.stats().windows_mixed), (3, 0));
    }

    #[test]
    fn counter_deltas_convert_as_u64_does() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let edges = [0, 1, (1 << 53) - 1, 1 << 53, (1 << 53) + 1, i64::MAX as u64, 1 << 63, (1 << 63) + 1, u64::MAX];
        // Under Miri (which runs this test 500 times slower) a thousand draws: it looks for
        // undefined behaviour, which the count does not change.
        let draws = if cfg!(miri) { 1_000 } else { 100_000 };
        for v in edges.into_iter().chain((0..draws).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> (x % 64)
        })) {
            assert_eq!(to_f64(v).to_bits(), (v as f64).to_bits(), "{v}");
        }
    }
}
