//! The `steady` policy: the paper's cost model (Eq. 1-4) with the failures its authors describe
//! fixed.
//!
//! - **No oscillation.** A class switches only when the other side is estimated faster by more
//!   than [`SteadyConfig::hysteresis`] of the message's time (by anything while the class, or
//!   the node-wide state a class without windows of its own decides from, never measured the
//!   other side: the constants' guess is then tried once, since no margin corrects
//!   a biased guess and only a measurement does), or when it is estimated within the hysteresis
//!   and stalls less (the model cannot tell such sides apart; stalls are congestion that the
//!   rank's own counters see only in part), and only after a dwell of
//!   decisions in the side it is on; a switch soon after the previous one (a reversal) doubles
//!   the dwell, up to [`SteadyConfig::max_dwell`]. The side not in use is estimated from its own
//!   smoothed measurement while that is recent, not re-derived from the side in use: switching to
//!   Adaptive lowers the stalls, and the paper's estimate of High Bias (stalls × σ of the new,
//!   low value) then calls it back.
//! - **Per destination class.** Observations, side in use and dwell are kept per
//!   [`DestinationClass`]. NIC counters are NIC-wide, so a counter window is attributed to a
//!   class only when that class decided at least [`SteadyConfig::dominance`] of the window's
//!   decided bytes, all on one side; only the other windows feed a node-wide estimate, which
//!   the classes without windows of their own use (a class never borrows another's).
//! - **Self-calibration.** λ and σ are learned per class and size range from pairs of windows
//!   of both sides measured close together (geometric means, bounded); the constants are used
//!   until [`SteadyConfig::calibration_pairs`] pairs exist.
//! - **Shared NICs.** With k ranks on a node, the node's injection is shared (the max-rate
//!   view): a rank's flits go at 1/k of the NIC's rate while the others inject too, so the flit
//!   term of the cost weighs k times more against the latency term. A rank's own messages posted
//!   together share it the same way (their latencies overlap, their flits queue): k is also
//!   multiplied by the class's smoothed count of messages decided within one message time of
//!   each other, from [`Message::posted_ns`].
//! - **Reads where they decide.** A read after every decision ([`SteadyConfig::window_decisions`]
//!   = 1, the paper's schedule) while classes switch, and, while no class switches, a window that
//!   grows up to [`SteadyConfig::max_window_stretch`] times that.

use crate::class::DestinationClass;
use crate::engine::{Message, Side};
use crate::model::{message_time_us, Window, NIC_CYCLE_US};
use crate::settings::EngineConfig;

/// The parameters of the `steady` policy.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SteadyConfig {
    /// A class switches only when the other side's estimated time is below
    /// `(1 - hysteresis)` times the time of the side in use, once the class (a class without
    /// windows of its own: the node-wide state) has measured the other side (before that, when
    /// it is below the time of the side in use), or when it is
    /// below `(1 + hysteresis)` times it and the other side stalls less.
    pub hysteresis: f64,
    /// Decisions of a class on one side before it may switch again.
    pub min_dwell: u32,
    /// What a switch costs, µs: the counter read before the new side's first message and the
    /// windows the class must measure again. A class switches only when the estimated saving
    /// over its dwell (`min_dwell` messages like this one) exceeds it, so latency-bound
    /// messages, whose modes differ by fractions of a microsecond, do not switch on noise.
    pub switch_cost_us: f64,
    /// The dwell doubles at each reversal (a switch less than 4 dwells after the previous one),
    /// up to this; a switch after a longer stay starts again from [`SteadyConfig::min_dwell`].
    pub max_dwell: u32,
    /// Weight of a new window in a side's smoothed latency and stall ratio, and of a new count
    /// in a class's count of messages injecting together (1: no smoothing).
    pub smoothing: f64,
    /// Windows of the class for which a side's own measurement stays in use once the class
    /// left that side; older, the side is estimated from the other with λ and σ.
    pub recent_windows: u32,
    /// Pairs of windows (both sides, same class and size range, at most `recent_windows` windows
    /// of the class apart)
    /// before the learned λ and σ replace the constants.
    pub calibration_pairs: u32,
    /// Bounds of the learned λ.
    pub lambda_bounds: (f64, f64),
    /// Bounds of the learned σ.
    pub sigma_bounds: (f64, f64),
    /// Share of a window's decided bytes one class must have for the window to be its.
    pub dominance: f64,
    /// Decisions per counter window of `steady`, before it stretches: `AAR_WINDOW` when given,
    /// else 1 (measured: better decisions on wavefronts than 8, and cheap, since the window
    /// stretches once nothing switches). [`EngineConfig::window_decisions`] is the other
    /// policies'.
    pub window_decisions: u32,
    /// Most times [`SteadyConfig::window_decisions`] a window may grow while nothing switches.
    pub max_window_stretch: u32,
}

impl Default for SteadyConfig {
    fn default() -> Self {
        Self {
            hysteresis: 0.1,
            min_dwell: 4,
            switch_cost_us: 2.0,
            max_dwell: 64,
            smoothing: 0.3,
            recent_windows: 8,
            calibration_pairs: 3,
            lambda_bounds: (0.5, 4.0),
            sigma_bounds: (0.2, 50.0),
            dominance: 0.75,
            window_decisions: 1,
            max_window_stretch: 8,
        }
    }
}

impl SteadyConfig {
    /// `old` moved towards `new` by the weight [`SteadyConfig::smoothing`] (clamped to 0..=1):
    /// the one smoothing rule of the measured windows and of the count of messages injecting
    /// together.
    fn smooth(&self, old: f64, new: f64) -> f64 {
        old + self.smoothing.clamp(0.0, 1.0) * (new - old)
    }
}

/// Size ranges of calibration, by decided message size: below 16 KiB, 256 KiB, 4 MiB, above.
pub const SIZE_RANGES: usize = 4;

/// The size range of a message of `bytes`.
pub const fn size_range(bytes: u64) -> usize {
    match bytes {
        0..16_384 => 0,
        16_384..262_144 => 1,
        262_144..4_194_304 => 2,
        _ => 3,
    }
}

/// Stall ratios below this (cycles per flit) count as no stall: σ is not learned from them.
const NO_STALL: f64 = 1e-3;

/// Pairs a calibration averages over with equal weight; later ones replace the oldest share
/// (an exponential average), so λ and σ follow a network that changes.
const CALIBRATION_MEMORY: u32 = 16;

/// A side's smoothed measurement and its age in windows of its class.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Seen {
    window: Window,
    age: u32,
}

/// Learned λ and σ of one class and size range: means of the logarithms of bounded samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Calibration {
    log_lambda_sum: f64,
    lambda_pairs: u32,
    log_sigma_sum: f64,
    sigma_pairs: u32,
    /// The factors themselves, `exp` of the means, made when a pair is learned: every decision
    /// of the class uses them, and an `exp` costs a decision some 10 ns.
    lambda: f64,
    sigma: f64,
}

/// The state of one destination class (or the node-wide fallback).
#[derive(Clone, Debug)]
struct ClassState {
    side: Side,
    seen: [Option<Seen>; 2],
    /// The latest raw window of each side per size range, with its age in windows of the state
    /// (of any range), to form calibration pairs.
    raw: [[Option<Seen>; 2]; SIZE_RANGES],
    calibration: [Calibration; SIZE_RANGES],
    dwell: u32,
    since_switch: u32,
    /// The class's messages' smoothed count of this rank's messages injecting with them (1:
    /// alone), from their post times.
    sharing: f64,
}

impl ClassState {
    fn new(cfg: &SteadyConfig) -> Self {
        Self {
            side: Side::LowLatency,
            seen: [None, None],
            raw: [[None, None]; SIZE_RANGES],
            calibration: [Calibration::default(); SIZE_RANGES],
            dwell: cfg.min_dwell,
            since_switch: u32::MAX,
            sharing: 1.0,
        }
    }
}

/// What the `steady` state decided for one message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SteadyChoice {
    pub side: Side,
    /// The window of the side in use the model used, if the model ran.
    pub window: Option<Window>,
    /// The model wanted the other side but the dwell held the class.
    pub held: bool,
    /// λ or σ (or both) came from calibration.
    pub calibrated: bool,
}

/// The `steady` policy's state: per destination class, plus the node-wide fallback.
#[derive(Clone, Debug)]
pub(crate) struct Steady {
    classes: [ClassState; 4],
    node: ClassState,
    /// Valid windows in a row during which no class switched: stretches the read window.
    quiet: u32,
    /// The latest decided messages' post times, in groups (a ring), to count those still
    /// injecting when the next one is posted.
    posts: [PostGroup; POST_GROUPS],
    latest_group: usize,
}

/// Decided messages posted close together: a post joins the latest group when it comes within
/// an eighth of its own time alone after the group's first post. Eight groups thus span at least
/// one message time whatever the number of messages posted at once (an alltoall posts a
/// thousand), where eight single post times could not count more than eight.
#[derive(Clone, Copy, Debug, Default)]
struct PostGroup {
    first_ns: u64,
    last_ns: u64,
    count: u32,
}

/// Groups of post times remembered for the count of messages injecting together.
const POST_GROUPS: usize = 8;

impl Steady {
    pub fn new(cfg: &SteadyConfig) -> Self {
        let c = ClassState::new(cfg);
        Self {
            classes: [c.clone(), c.clone(), c.clone(), c.clone()],
            node: c,
            quiet: 0,
            posts: [PostGroup::default(); POST_GROUPS],
            latest_group: 0,
        }
    }

    /// Decisions after which the counters are read: `steady`'s window, stretched while nothing
    /// switches (×2 after 4 quiet windows, ×4 after 8, ×8 after 12).
    pub fn window_decisions(&self, cfg: &EngineConfig) -> u32 {
        let stretch = 1u32 << (self.quiet / 4).min(3);
        cfg.steady.window_decisions.max(1).saturating_mul(stretch.min(cfg.steady.max_window_stretch.max(1)))
    }

    /// Whether a decision for `class` has a measurement to start from: a window attributed to
    /// the class or to the node-wide state.
    pub fn measured(&self, class: DestinationClass) -> bool {
        [&self.classes[class.index()], &self.node].iter().any(|st| st.seen.iter().any(Option::is_some))
    }

    /// The side a class is on.
    pub fn side(&self, class: DestinationClass) -> Side {
        self.classes[class.index()].side
    }

    /// The messages injecting with one posted at `now` (itself included): those decided less
    /// than `alone_us` (its time alone on the side in use) before it, to within a group (a
    /// group that began before that counts whole). Remembers `now`.
    fn injecting_with(&mut self, now: Option<u64>, alone_us: Option<f64>) -> Option<f64> {
        let now = now?;
        let count = alone_us.map(|us| {
            let since = now.saturating_sub((us * 1e3) as u64);
            let earlier: u64 = self
                .posts
                .iter()
                .filter(|g| g.count > 0 && g.last_ns > since && g.first_ns <= now)
                .map(|g| u64::from(g.count))
                .sum();
            1.0 + earlier as f64
        });
        let width = alone_us.map_or(0, |us| (us * 1e3 / POST_GROUPS as f64) as u64);
        let latest = &mut self.posts[self.latest_group];
        if latest.count > 0 && now >= latest.first_ns && now - latest.first_ns <= width {
            latest.last_ns = latest.last_ns.max(now);
            latest.count = latest.count.saturating_add(1);
        } else {
            self.latest_group = (self.latest_group + 1) % POST_GROUPS;
            self.posts[self.latest_group] = PostGroup { first_ns: now, last_ns: now, count: 1 };
        }
        count
    }

    /// Decide for `msg`, of `flits` in `packets`.
    pub fn choose(&mut self, cfg: &EngineConfig, msg: &Message, flits: u64, packets: u64) -> SteadyChoice {
        let (class, bytes) = (msg.class, msg.bytes);
        let range = size_range(bytes);
        let st = &self.classes[class.index()];
        let source = if st.seen.iter().any(Option::is_some) { st } else { &self.node };
        let (lambda, sigma, calibrated) = calibrated(cfg, &st.calibration[range]);
        let limit = |w: Window| Window {
            latency_us: w.latency_us.min(cfg.max_latency_us).min(f64::MAX),
            stall_ratio: w.stall_ratio.min(cfg.max_stall_ratio).min(f64::MAX),
        };
        let estimate =
            estimates(source, st.side, lambda, sigma, cfg.steady.recent_windows).map(|(a, b)| (limit(a), limit(b)));
        // The other side was never measured: its estimate is the constants' (or a calibration's)
        // guess, whose bias no hysteresis corrects and only a measurement can. The class tries
        // it as soon as the guess favours it; the dwell then holds it there for a measurement.
        let hysteresis = if source.seen[st.side.other().index()].is_none() { 0.0 } else { cfg.steady.hysteresis };
        let injecting = self.injecting_with(msg.posted_ns, estimate.map(|(a, _)| message_time_us(flits, packets, a)));
        let st = &mut self.classes[class.index()];
        st.since_switch = st.since_switch.saturating_add(1);
        let Some((in_use, other)) = estimate else {
            return SteadyChoice { side: st.side, window: None, held: false, calibrated: false };
        };
        if let Some(n) = injecting {
            st.sharing = cfg.steady.smooth(st.sharing, n);
        }
        // The injection is shared by the node's ranks and by this rank's own messages in flight.
        let k = f64::from(cfg.ranks_per_node.max(1)) * st.sharing;
        let t_in_use = shared_message_time_us(flits, packets, in_use, k);
        let t_other = shared_message_time_us(flits, packets, other, k);
        let dwell = f64::from(cfg.steady.min_dwell.max(1));
        let faster =
            t_other < t_in_use * (1.0 - hysteresis) && (t_in_use - t_other) * dwell > cfg.steady.switch_cost_us;
        // Within the hysteresis the model cannot tell the sides apart, and the side that stalls
        // less is preferred: the stalls are the congestion this rank's counters see only in
        // part (the node-mates' and other jobs' packets wait in it too), and Adaptive spreads
        // it. The stalls alone must still pay for the switch. Going back then needs the other
        // side to be faster by the whole hysteresis, so the two rules cannot alternate.
        let stall_saving = k * flits as f64 * (in_use.stall_ratio - other.stall_ratio) * NIC_CYCLE_US * dwell;
        let fewer_stalls = other.stall_ratio < in_use.stall_ratio
            && t_other < t_in_use * (1.0 + hysteresis)
            && stall_saving > cfg.steady.switch_cost_us;
        let wants_switch = faster || fewer_stalls;
        // `since_switch` counts this decision: a switch at decision i allows the next at i + dwell.
        let may_switch = st.since_switch > st.dwell;
        let mut choice = SteadyChoice { side: st.side, window: Some(in_use), held: false, calibrated };
        if wants_switch && may_switch {
            let soon = st.since_switch <= st.dwell.saturating_mul(4);
            st.dwell = if soon {
                st.dwell.saturating_mul(2).min(cfg.steady.max_dwell.max(cfg.steady.min_dwell))
            } else {
                cfg.steady.min_dwell
            };
            st.side = st.side.other();
            st.since_switch = 1;
            self.quiet = 0;
            choice.side = st.side;
        } else if wants_switch {
            choice.held = true;
        }
        choice
    }

    /// A valid window: attributed to `class` when one class dominated it (the class, its side
    /// and its mean decided message size in the window), else to the node-wide state on
    /// `node_side` (when every decision in the window was on one side). The node-wide state is
    /// for the classes whose messages share their windows: a dominated window is one class's
    /// traffic, and the best side differs between classes.
    pub fn observe(
        &mut self,
        cfg: &SteadyConfig,
        w: Window,
        class: Option<(DestinationClass, Side, u64)>,
        node_side: Option<Side>,
    ) {
        self.quiet = self.quiet.saturating_add(1);
        match (class, node_side) {
            (Some((class, side, bytes)), _) => {
                remember(&mut self.classes[class.index()], cfg, w, side, size_range(bytes))
            }
            (None, Some(side)) => remember(&mut self.node, cfg, w, side, 0),
            (None, None) => {}
        }
    }

    /// The learned (λ, σ) of a class and size range, if calibrated (for tests and records).
    pub fn calibration(&self, cfg: &EngineConfig, class: DestinationClass, bytes: u64) -> (f64, f64, bool) {
        calibrated(cfg, &self.classes[class.index()].calibration[size_range(bytes)])
    }
}

/// Eq. 1 with the node's injection shared by `k` ranks: the flit term at 1/k of the NIC's rate.
pub fn shared_message_time_us(flits: u64, packets: u64, w: Window, k: f64) -> f64 {
    let alone = message_time_us(flits, packets, w);
    alone + (k - 1.0) * flits as f64 * (w.stall_ratio + 1.0) * NIC_CYCLE_US
}

/// (λ, σ, learned): the class's learned factors once it has enough pairs, else the constants.
fn calibrated(cfg: &EngineConfig, c: &Calibration) -> (f64, f64, bool) {
    let need = cfg.steady.calibration_pairs.max(1);
    let lambda = if c.lambda_pairs >= need { c.lambda } else { cfg.lambda };
    let sigma = if c.sigma_pairs >= need { c.sigma } else { cfg.sigma };
    (lambda, sigma, c.lambda_pairs >= need || c.sigma_pairs >= need)
}

/// (side in use, other side) estimates of a state: each side's own smoothed measurement while it
/// is recent, else scaled from the other's by λ and σ. `None` before any measurement.
fn estimates(st: &ClassState, in_use: Side, lambda: f64, sigma: f64, recent: u32) -> Option<(Window, Window)> {
    let fresh = |s: Side| st.seen[s.index()].filter(|x| x.age <= recent);
    let any = |s: Side| st.seen[s.index()];
    let (a, b) = (in_use, in_use.other());
    let (wa, wb) = match (fresh(a), fresh(b)) {
        (Some(x), Some(y)) => (x.window, y.window),
        (Some(x), None) => (x.window, scale(x.window, a, lambda, sigma)),
        (None, Some(y)) => (scale(y.window, b, lambda, sigma), y.window),
        (None, None) => match (any(a), any(b)) {
            (Some(x), Some(y)) if y.age < x.age => (scale(y.window, b, lambda, sigma), y.window),
            (Some(x), _) => (x.window, scale(x.window, a, lambda, sigma)),
            (None, Some(y)) => (scale(y.window, b, lambda, sigma), y.window),
            (None, None) => return None,
        },
    };
    Some((wa, wb))
}

/// The other side of `w`, measured on `observed`: latency × λ and stalls ÷ σ from High Bias to
/// Adaptive, and the inverse (the paper's estimate).
#[inline]
pub(crate) fn scale(w: Window, observed: Side, lambda: f64, sigma: f64) -> Window {
    match observed {
        Side::LowLatency => Window { latency_us: w.latency_us * lambda, stall_ratio: w.stall_ratio / sigma },
        Side::LowStall => Window { latency_us: w.latency_us / lambda, stall_ratio: w.stall_ratio * sigma },
    }
}

/// A window of `side` for a state: smoothed into that side's measurement (restarted when it was
/// no longer recent), and paired with the other side's latest window of the size range to learn
/// λ and σ.
fn remember(st: &mut ClassState, cfg: &SteadyConfig, w: Window, side: Side, range: usize) {
    for s in st.seen.iter_mut().flatten() {
        s.age = s.age.saturating_add(1);
    }
    // A raw window's age counts every window of the state, whatever its size range: a pair is
    // two measurements close together, of one network.
    for s in st.raw.iter_mut().flatten().flatten() {
        s.age = s.age.saturating_add(1);
    }
    let smoothed = match st.seen[side.index()] {
        Some(old) if old.age <= cfg.recent_windows.saturating_add(1) => Window {
            latency_us: cfg.smooth(old.window.latency_us, w.latency_us),
            stall_ratio: cfg.smooth(old.window.stall_ratio, w.stall_ratio),
        },
        _ => w,
    };
    st.seen[side.index()] = Some(Seen { window: smoothed, age: 0 });
    st.raw[range][side.index()] = Some(Seen { window: w, age: 0 });
    if let Some(other) = st.raw[range][side.other().index()].filter(|o| o.age <= cfg.recent_windows) {
        let (high_bias, adaptive) = match side {
            Side::LowLatency => (w, other.window),
            Side::LowStall => (other.window, w),
        };
        learn(&mut st.calibration[range], cfg, high_bias, adaptive);
    }
}

/// One calibration pair: λ = L_adaptive / L_high_bias and σ = s_high_bias / s_adaptive, each
/// clamped to its bounds; σ only when there were stalls to divide.
fn learn(c: &mut Calibration, cfg: &SteadyConfig, high_bias: Window, adaptive: Window) {
    let bounded = |x: f64, (lo, hi): (f64, f64)| x.clamp(lo.min(hi), hi.max(lo)).ln();
    // Adds a sample to a mean of logarithms and gives the factor, the mean's exponential. The
    // count goes on past the memory: `calibration_pairs` may ask for more pairs than it holds.
    let add = |sum: &mut f64, pairs: &mut u32, log: f64| {
        if *pairs >= CALIBRATION_MEMORY {
            *sum *= f64::from(CALIBRATION_MEMORY - 1) / f64::from(CALIBRATION_MEMORY);
        }
        *pairs = pairs.saturating_add(1);
        *sum += log;
        (*sum / f64::from((*pairs).min(CALIBRATION_MEMORY))).exp()
    };
    if high_bias.latency_us > 0.0 && adaptive.latency_us > 0.0 {
        let log = bounded(adaptive.latency_us / high_bias.latency_us, cfg.lambda_bounds);
        c.lambda = add(&mut c.log_lambda_sum, &mut c.lambda_pairs, log);
    }
    if high_bias.stall_ratio > NO_STALL || adaptive.stall_ratio > NO_STALL {
        let ratio = high_bias.stall_ratio.max(NO_STALL) / adaptive.stall_ratio.max(NO_STALL);
        c.sigma = add(&mut c.log_sigma_sum, &mut c.sigma_pairs, bounded(ratio, cfg.sigma_bounds));
    }
}
