//! Hostile input for the engine, with proptest:
//!
//! - arbitrary counter samples (any `i64`, `i64::MIN`/`MAX`, decreasing, wrapped, reset, absurd)
//!   interleaved with arbitrary messages (any `u64` size, PUT/GET, inside MPI_Alltoall or not)
//!   and policy changes, under arbitrary valid configurations: no panic, every window finite and
//!   non-negative, every mode one the policy allows (adaptive, or none only for `Policy::Off`),
//!   and no memory growth (a counting allocator shows the heap the engine holds does not grow
//!   over 100,000 steps);
//! - a caller that reads the counters exactly when a `Decision` asks (`read_before`,
//!   `read_counters`), as libaar.so does, over a NIC whose counters follow the routing: a counter
//!   window never mixes the two sides of the decision.
//!
//! The runs are reproducible: a fixed seed unless `PROPTEST_RNG_SEED` is set, 2,000 cases unless
//! `PROPTEST_CASES` is set. Explore new inputs with e.g.
//! `PROPTEST_RNG_SEED=$RANDOM PROPTEST_CASES=20000 cargo test --release -p aar-engine --test fuzz`.
//! A failure prints the minimal input; nothing is written to the source tree.
//!
//! The proptest cases are too slow for Miri and are ignored there; the deterministic edge-case
//! test at the end runs under Miri too (`scripts/sanitize`). The `AAR_*` parser, which is
//! libaar.so's, has its own hostile-input tests beside it (`src/settings/fuzz.rs`).

use aar_engine::model::{packets, request_flits};
use aar_engine::*;
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

// ---------------------------------------------------------------------------------------------
// A counting allocator: live heap bytes per thread, so tests running in parallel do not mix.

struct Counting;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn account(delta: i64) {
    // try_with: the allocator may be called while the thread's locals are being torn down.
    let _ = LIVE.try_with(|l| {
        let v = l.get() + delta;
        l.set(v);
        let _ = PEAK.try_with(|p| p.set(p.get().max(v)));
    });
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        account(layout.size() as i64);
        // SAFETY: the caller's arguments, under GlobalAlloc's contract, to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        account(-(layout.size() as i64));
        // SAFETY: the caller's arguments, under GlobalAlloc's contract, to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        account(layout.size() as i64);
        // SAFETY: the caller's arguments, under GlobalAlloc's contract, to the system allocator.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        account(new_size as i64 - layout.size() as i64);
        // SAFETY: the caller's arguments, under GlobalAlloc's contract, to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Live heap bytes of this thread, and the peak since the last call (the peak restarts there).
fn heap_mark() -> (i64, i64) {
    let live = LIVE.with(|l| l.get());
    let peak = PEAK.with(|p| p.replace(live));
    (live, peak)
}

// ---------------------------------------------------------------------------------------------
// Counter samples and messages.

#[derive(Clone, Copy, Debug)]
enum SampleGen {
    /// Any values at all.
    Absolute([i64; 4], Option<i64>),
    /// The previous sample plus these deltas, wrapping: mostly what real counters do, and where
    /// they wrap past `i64::MAX`.
    Step([i64; 4], Option<i64>),
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Decide(Message, bool),
    Crossed(Message, bool),
    Observe(SampleGen),
    /// A sample with the node's decided bytes (`Engine::observe_node`): added to the last ones,
    /// or anything (sums from a segment another process scribbled on).
    ObserveNode(SampleGen, NodeGen),
    SetPolicy(Policy),
    /// What a forked child does (`Engine::reset_stats`).
    ResetStats,
}

fn edge_i64() -> BoxedStrategy<i64> {
    prop_oneof![
        Just(0i64),
        Just(1),
        Just(-1),
        Just(i64::MIN),
        Just(i64::MAX),
        Just(i64::MIN + 1),
        Just(i64::MAX - 1),
        Just(1 << 53),
        Just(u32::MAX as i64),
    ]
    .boxed()
}

fn counter_value() -> BoxedStrategy<i64> {
    prop_oneof![3 => any::<i64>(), 2 => edge_i64(), 2 => 0i64..1_000_000_000].boxed()
}

/// A delta: mostly what a busy NIC adds between two reads, sometimes nothing, sometimes a step
/// back, sometimes absurd.
fn delta() -> BoxedStrategy<i64> {
    prop_oneof![
        6 => 1i64..10_000_000,
        2 => Just(0i64),
        1 => -1_000i64..0,
        1 => any::<i64>(),
        1 => edge_i64(),
    ]
    .boxed()
}

fn sample_gen() -> BoxedStrategy<SampleGen> {
    prop_oneof![
        1 => (prop::array::uniform4(counter_value()), prop::option::of(counter_value())).prop_map(|(v, r)| SampleGen::Absolute(v, r)),
        6 => (prop::array::uniform4(delta()), prop::option::weighted(0.7, delta())).prop_map(|(v, r)| SampleGen::Step(v, r)),
    ]
    .boxed()
}

#[derive(Clone, Copy, Debug)]
enum NodeGen {
    Step(u64, u64),
    Absolute(u64, u64),
}

fn node_gen() -> BoxedStrategy<NodeGen> {
    prop_oneof![
        4 => (0u64..(4 << 20), 0u64..(4 << 20)).prop_map(|(a, b)| NodeGen::Step(a, b)),
        1 => (any::<u64>(), any::<u64>()).prop_map(|(a, b)| NodeGen::Absolute(a, b)),
    ]
    .boxed()
}

fn mode() -> impl Strategy<Value = RoutingMode> {
    prop::sample::select(&RoutingMode::ALL[..])
}

fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![
        4 => Just(Policy::Auto),
        4 => Just(Policy::Steady),
        1 => mode().prop_map(Policy::Fixed),
        1 => Just(Policy::Off)
    ]
}

fn class() -> impl Strategy<Value = DestinationClass> {
    prop::sample::select(&DestinationClass::ALL[..])
}

fn message() -> BoxedStrategy<Message> {
    let bytes = prop_oneof![
        4 => 0u64..256,
        4 => 0u64..(1 << 20),
        2 => prop::sample::select(&[0u64, 1, 63, 64, 65, 4095, 4096, 4097, 65536, 1 << 24, 1 << 50, u64::MAX - 1, u64::MAX][..]),
        1 => any::<u64>(),
    ];
    let transfer = prop_oneof![Just(Transfer::Put), Just(Transfer::Get)];
    // A few endpoints, so that fresh observations of the same endpoint and size are reused.
    let endpoint = prop_oneof![4 => 0u64..3, 1 => any::<u64>()];
    // Post times: none, close together, anywhere (a clock that jumps either way).
    let posted = prop_oneof![1 => Just(None), 2 => (0u64..10_000).prop_map(Some), 1 => any::<u64>().prop_map(Some)];
    (bytes, transfer, endpoint, class(), posted).prop_map(message_of).boxed()
}

/// Boxed, like the strategies it is made of: proptest keeps the alternatives of a union inline,
/// and unboxed an operation's value tree is 80 KB, which made long sequences crawl.
fn op() -> BoxedStrategy<Op> {
    prop_oneof![
        8 => (message(), prop::bool::weighted(0.2)).prop_map(|(m, a)| Op::Decide(m, a)),
        2 => (message(), prop::bool::weighted(0.2)).prop_map(|(m, a)| Op::Crossed(m, a)),
        6 => sample_gen().prop_map(Op::Observe),
        2 => (sample_gen(), node_gen()).prop_map(|(g, n)| Op::ObserveNode(g, n)),
        1 => policy().prop_map(Op::SetPolicy),
        1 => Just(Op::ResetStats),
    ]
    .boxed()
}

/// Any configuration: what libaar.so's and the simulator's settings can produce, and the
/// API's extremes beyond it. Every field is set (no `..Default::default()`), so a field added to
/// `EngineConfig` does not compile here until it is varied too.
fn engine_config() -> impl Strategy<Value = EngineConfig> {
    let factor = prop_oneof![
        4 => 1e-3f64..1000.0,
        1 => prop::sample::select(&[4.9e-324, f64::MIN_POSITIVE, 1e-300, 1e-9, 0.5, 1.0, 1.2, 5.0, 999.999, 1000.0][..]),
    ];
    let threshold = prop_oneof![
        3 => prop::sample::select(&[0u64, 1, 64, 1024, 4096, 65536, 1 << 20, 1 << 50, u64::MAX][..]),
        1 => any::<u64>(),
        3 => 0u64..(1 << 16),
    ];
    let freshness =
        prop_oneof![3 => 0u32..10, 1 => prop::sample::select(&[0u32, 1, 1_000_000, u32::MAX][..]), 1 => any::<u32>()];
    let unit = prop_oneof![Just(LatencyUnit::Microseconds), Just(LatencyUnit::Cycles)];
    let limit = prop_oneof![4 => Just(1e6f64), 1 => prop::sample::select(&[0.0f64, 1.0, 1e3, 1e12, f64::MAX, f64::INFINITY][..]), 1 => 0.0f64..1e9];
    let modes = (mode(), mode(), mode());
    let window = prop_oneof![3 => 1u32..10, 1 => prop::sample::select(&[0u32, 1, 8, 1_000_000, u32::MAX][..])];
    let ranks_per_node = prop_oneof![3 => 1u32..65, 1 => prop::sample::select(&[0u32, 1, 64, u32::MAX][..])];
    (
        policy(),
        threshold,
        (factor.clone(), factor),
        (freshness, window),
        modes,
        unit,
        (limit.clone(), limit),
        (ranks_per_node, steady_config()),
    )
        .prop_map(
            |(
                policy,
                threshold_bytes,
                (lambda, sigma),
                (freshness, window_decisions),
                (low_latency_mode, low_stall_mode, alltoall_mode),
                latency_unit,
                (max_latency_us, max_stall_ratio),
                (ranks_per_node, steady),
            )| {
                EngineConfig {
                    policy,
                    threshold_bytes,
                    lambda,
                    sigma,
                    freshness,
                    window_decisions,
                    low_latency_mode,
                    low_stall_mode,
                    alltoall_mode,
                    latency_unit,
                    max_latency_us,
                    max_stall_ratio,
                    ranks_per_node,
                    steady,
                }
            },
        )
}

/// Any `steady` parameters, the extremes included; every field set, as above.
fn steady_config() -> impl Strategy<Value = SteadyConfig> {
    let share = prop_oneof![3 => 0.0f64..1.0, 1 => prop::sample::select(&[0.0f64, 1.0, -1.0, 2.0, f64::MAX][..])];
    let count = prop_oneof![3 => 0u32..100, 1 => prop::sample::select(&[0u32, 1, u32::MAX][..])];
    let bounds = prop_oneof![3 => (0.01f64..2.0, 1.0f64..100.0), 1 => Just((5.0f64, 0.5f64))];
    (
        (share.clone(), share.clone(), share, prop_oneof![3 => 0.0f64..10.0, 1 => Just(f64::MAX)]),
        (count.clone(), count.clone(), count.clone(), count.clone(), count.clone(), count),
        (bounds.clone(), bounds),
    )
        .prop_map(
            |(
                (hysteresis, smoothing, dominance, switch_cost_us),
                (min_dwell, max_dwell, recent_windows, calibration_pairs, window_decisions, max_window_stretch),
                (lambda_bounds, sigma_bounds),
            )| SteadyConfig {
                hysteresis,
                min_dwell,
                switch_cost_us,
                max_dwell,
                smoothing,
                recent_windows,
                calibration_pairs,
                lambda_bounds,
                sigma_bounds,
                dominance,
                window_decisions,
                max_window_stretch,
            },
        )
}

fn deltas(a: &CounterSample, b: &CounterSample) -> [i128; 4] {
    let d = |x: i64, y: i64| i128::from(y) - i128::from(x);
    [
        d(a.req_flits, b.req_flits),
        d(a.req_stalled, b.req_stalled),
        d(a.rsp_latency, b.rsp_latency),
        d(a.rsp_packets, b.rsp_packets),
    ]
}

fn finite_window(w: &Window, cfg: &EngineConfig) -> bool {
    w.latency_us.is_finite()
        && w.stall_ratio.is_finite()
        && w.latency_us >= 0.0
        && w.stall_ratio >= 0.0
        && w.latency_us <= cfg.max_latency_us
        && w.stall_ratio <= cfg.max_stall_ratio
}

/// Drives one engine through `ops` and checks every answer. Returns the number of valid windows
/// and model decisions, so callers can check the run exercised the model.
struct Driver {
    engine: Engine,
    policy: Policy,
    cumulative: u64,
    prev: Option<CounterSample>,
    last: CounterSample,
    /// The node's decided bytes last handed over.
    node: SideBytes,
    observed: u64,
    decisions: u64,
    model: u64,
}

impl Driver {
    fn new(cfg: EngineConfig) -> Self {
        Driver {
            policy: cfg.policy,
            engine: Engine::new(cfg),
            cumulative: 0,
            prev: None,
            last: CounterSample::default(),
            node: SideBytes::default(),
            observed: 0,
            decisions: 0,
            model: 0,
        }
    }

    fn check_decision(&mut self, d: &Decision, msg: &Message, in_alltoall: bool, crossed: bool) -> Result<(), String> {
        let cfg = self.engine.config();
        let ok_mode = match self.policy {
            Policy::Off => d.mode.is_none(),
            Policy::Fixed(m) => d.mode == Some(m),
            Policy::Auto | Policy::Steady => match d.mode {
                None => false,
                Some(m) => {
                    m == cfg.low_latency_mode || m == cfg.low_stall_mode || (in_alltoall && m == cfg.alltoall_mode)
                }
            },
        };
        if !ok_mode {
            return Err(format!("mode {:?} under {:?} (alltoall {in_alltoall})", d.mode, self.policy));
        }
        if let Some(w) = &d.window {
            if !finite_window(w, cfg) {
                return Err(format!("decision window {w:?} is not finite, non-negative and within the limits"));
            }
        }
        if !crossed && (d.read_counters || d.window.is_some()) {
            return Err(format!("below the threshold, yet read_counters {} window {:?}", d.read_counters, d.window));
        }
        if d.reason == Reason::Alltoall && !in_alltoall {
            return Err("reason alltoall outside MPI_Alltoall".into());
        }
        if d.flits != request_flits(msg.bytes, msg.transfer) || d.packets != packets(msg.bytes) {
            return Err(format!("flits/packets {}/{} for {msg:?}", d.flits, d.packets));
        }
        if crossed {
            self.decisions += 1;
            self.model += u64::from(matches!(d.reason, Reason::Model | Reason::Alltoall));
        }
        Ok(())
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        match *op {
            Op::Decide(msg, a) => {
                self.decide(&msg, a)?;
            }
            Op::Crossed(msg, a) => {
                let before = self.engine.stats().decisions;
                let d = self.engine.on_threshold_crossed(&msg, a);
                if self.engine.stats().decisions != before + 1 {
                    return Err("on_threshold_crossed did not count a decision".into());
                }
                self.check_decision(&d, &msg, a, true)?;
            }
            Op::ResetStats => {
                self.engine.reset_stats();
                if self.engine.stats().decisions != 0 {
                    return Err("reset_stats kept the decision count".into());
                }
            }
            Op::SetPolicy(p) => {
                self.engine.set_policy(p);
                self.policy = p;
                if self.engine.below_threshold_mode().is_none() != (p == Policy::Off) {
                    return Err(format!("below-threshold mode {:?} under {p:?}", self.engine.below_threshold_mode()));
                }
            }
            Op::Observe(g) => {
                let sample = self.sample(g);
                self.observe(sample, None)?;
            }
            Op::ObserveNode(g, n) => {
                let sample = self.sample(g);
                self.node = match n {
                    NodeGen::Step(a, b) => self.node.plus(SideBytes { low_latency: a, low_stall: b }),
                    NodeGen::Absolute(a, b) => SideBytes { low_latency: a, low_stall: b },
                };
                self.observe(sample, Some(self.node))?;
            }
        }
        self.check_state()
    }

    /// The sample `g` makes after the last one.
    fn sample(&self, g: SampleGen) -> CounterSample {
        let l = self.last;
        match g {
            SampleGen::Absolute(v, r) => CounterSample {
                req_flits: v[0],
                req_stalled: v[1],
                rsp_latency: v[2],
                rsp_packets: v[3],
                rsp_stalled: r,
            },
            SampleGen::Step(v, r) => CounterSample {
                req_flits: l.req_flits.wrapping_add(v[0]),
                req_stalled: l.req_stalled.wrapping_add(v[1]),
                rsp_latency: l.rsp_latency.wrapping_add(v[2]),
                rsp_packets: l.rsp_packets.wrapping_add(v[3]),
                rsp_stalled: r.map(|r| l.rsp_stalled.unwrap_or(0).wrapping_add(r)),
            },
        }
    }

    /// `Engine::decide`, checked.
    fn decide(&mut self, msg: &Message, a: bool) -> Result<Decision, String> {
        // The documented contract: sizes add up, and a decision comes once the sum passes the
        // threshold; the sum then restarts.
        let sum = self.cumulative.saturating_add(msg.bytes);
        let crossed = sum > self.engine.config().threshold_bytes;
        self.cumulative = if crossed { 0 } else { sum };
        let before = self.engine.stats().decisions;
        let d = self.engine.decide(msg, a);
        if self.engine.stats().decisions != before + u64::from(crossed) {
            return Err(format!(
                "{} bytes crossed={crossed} but decisions went {before} -> {}",
                msg.bytes,
                self.engine.stats().decisions
            ));
        }
        self.check_decision(&d, msg, a, crossed)?;
        Ok(d)
    }

    /// `Engine::observe` (`Engine::observe_node` with the node's bytes), checked.
    fn observe(&mut self, s: CounterSample, node: Option<SideBytes>) -> Result<WindowOutcome, String> {
        let outcome = match node {
            Some(n) => self.engine.observe_node(s, n),
            None => self.engine.observe(s),
        };
        match (outcome, self.prev) {
            (WindowOutcome::Valid(w), Some(prev)) => {
                if !finite_window(&w, self.engine.config()) {
                    return Err(format!("window {w:?} from {prev:?} to {s:?}"));
                }
                let d = deltas(&prev, &s);
                if d.iter().any(|&x| x < 0) || d[0] == 0 || d[3] == 0 {
                    return Err(format!("a window with zero or negative deltas {d:?} was used: {prev:?} to {s:?}"));
                }
                self.observed += 1;
            }
            (WindowOutcome::Valid(w), None) => return Err(format!("a window {w:?} from the first sample alone")),
            _ => {}
        }
        // a window without traffic keeps the baseline: its decisions wait for their traffic
        if outcome != WindowOutcome::DiscardedEmpty {
            self.prev = Some(s);
        }
        self.last = s;
        Ok(outcome)
    }

    fn check_state(&self) -> Result<(), String> {
        if let Some(w) = self.engine.last_window() {
            if !finite_window(&w, self.engine.config()) {
                return Err(format!("last window {w:?}"));
            }
        }
        let st = self.engine.stats();
        for x in [st.window_latency_us_sum, st.window_stall_ratio_sum] {
            if !(x.is_finite() && x >= 0.0) {
                return Err(format!("stats sums not finite: {st:?}"));
            }
        }
        Ok(())
    }
}

fn run(cfg: EngineConfig, ops: &[Op]) -> Result<Driver, TestCaseError> {
    let mut d = Driver::new(cfg);
    let (before, _) = heap_mark();
    for (i, op) in ops.iter().enumerate() {
        if let Err(e) = d.step(op) {
            return Err(TestCaseError::fail(format!("step {i} {op:?}: {e}\nengine: {:?}", d.engine)));
        }
    }
    let (after, peak) = heap_mark();
    // The engine may allocate nothing that it keeps: same live heap after as before.
    prop_assert_eq!(after, before, "the engine's heap grew by {} bytes over {} steps", after - before, ops.len());
    prop_assert!(peak - before <= 64 << 10, "the engine used {} bytes of heap at peak", peak - before);
    Ok(d)
}

proptest! {
    #![proptest_config(aar_testkit::proptest_config(2000))]

    #[test]
    #[cfg_attr(miri, ignore)]
    fn engine_never_panics_and_decisions_stay_finite_and_adaptive(cfg in engine_config(), ops in prop::collection::vec(op(), 0..600)) {
        run(cfg, &ops)?;
    }

    /// Realistic counters (mostly increasing) under the default configuration and a low
    /// threshold, so that most runs reach the cost model and switch modes.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn model_decisions_under_mostly_monotone_counters(
        threshold in 0u64..8192,
        lambda in 0.5f64..3.0,
        sigma in 0.5f64..20.0,
        freshness in 0u32..8,
        ops in prop::collection::vec(prop_oneof![
            3 => (message(), prop::bool::weighted(0.2)).prop_map(|(m, a)| Op::Decide(m, a)),
            2 => (prop::array::uniform4(1i64..1_000_000), prop::option::of(0i64..1_000_000)).prop_map(|(v, r)| Op::Observe(SampleGen::Step(v, r))),
            1 => sample_gen().prop_map(Op::Observe),
        ], 100..1000),
    ) {
        let cfg = EngineConfig { threshold_bytes: threshold, lambda, sigma, freshness, ..EngineConfig::default() };
        run(cfg, &ops)?;
    }
}

/// A NIC whose counters grow with the traffic routed through it, each side of the decision with
/// its own latency per response and stalls per flit (as the emulator does).
struct Nic {
    latency: [f64; 2],
    stall: [f64; 2],
    c: CounterSample,
}

impl Nic {
    fn post(&mut self, flits: u64, packets: u64, adaptive: bool) {
        let i = usize::from(adaptive);
        let add = |x: &mut i64, v: f64| *x = x.wrapping_add(v as i64);
        add(&mut self.c.req_flits, flits as f64);
        add(&mut self.c.req_stalled, flits as f64 * self.stall[i]);
        add(&mut self.c.rsp_packets, packets as f64);
        add(&mut self.c.rsp_latency, packets as f64 * self.latency[i]);
    }
}

/// A message from its generated fields.
fn message_of(
    (bytes, transfer, endpoint, class, posted_ns): (u64, Transfer, u64, DestinationClass, Option<u64>),
) -> Message {
    Message { bytes, transfer, endpoint, class, posted_ns }
}

fn realistic_message() -> BoxedStrategy<Message> {
    let bytes = prop_oneof![3 => 0u64..512, 2 => 512u64..65536, 1 => 65536u64..(8 << 20)];
    let transfer = prop_oneof![3 => Just(Transfer::Put), 1 => Just(Transfer::Get)];
    (bytes, transfer, 0u64..3, class(), prop::option::of(0u64..1_000_000)).prop_map(message_of).boxed()
}

proptest! {
    #![proptest_config(aar_testkit::proptest_config(1000))]

    /// A caller that does what `Decision` asks, as libaar.so does: read the counters before the
    /// post when `read_before`, after it when `read_counters`. Then a window never mixes the two
    /// sides (`windows_mixed` stays 0), whatever the network, the sizes and the odd bad read.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn a_caller_that_reads_when_asked_never_mixes_the_two_sides_in_one_window(
        window in 1u32..12,
        threshold in prop_oneof![0u64..8192, Just(4096u64)],
        freshness in 0u32..6,
        latency in (0.5f64..5.0, 0.5f64..5.0),
        stall in (0.0f64..100.0, 0.0f64..100.0),
        msgs in prop::collection::vec((realistic_message(), prop::bool::weighted(0.1), prop::bool::weighted(0.01)), 1..1500),
    ) {
        let cfg = EngineConfig { threshold_bytes: threshold, window_decisions: window, freshness, ..EngineConfig::default() };
        let (low_stall, alltoall) = (cfg.low_stall_mode, cfg.alltoall_mode);
        let mut nic = Nic { latency: [latency.0, latency.1], stall: [stall.0, stall.1], c: CounterSample { rsp_stalled: Some(0), ..CounterSample::default() } };
        let mut d = Driver::new(cfg);
        let fail = |e: String| TestCaseError::fail(e);
        d.observe(nic.c, None).map_err(fail)?; // the shim reads once at initialisation
        for (i, (msg, in_alltoall, bad_read)) in msgs.iter().enumerate() {
            let dec = d.decide(msg, *in_alltoall).map_err(|e| fail(format!("message {i}: {e}")))?;
            if dec.read_before {
                d.observe(nic.c, None).map_err(fail)?;
            }
            let adaptive = matches!(dec.mode, Some(m) if m == low_stall || m == alltoall);
            nic.post(dec.flits, dec.packets, adaptive);
            if dec.read_counters {
                // Now and then a read that went wrong (a counter reset under us).
                let s = if *bad_read { CounterSample::default() } else { nic.c };
                d.observe(s, None).map_err(fail)?;
            }
            d.check_state().map_err(fail)?;
        }
        prop_assert_eq!(d.engine.stats().windows_mixed, 0, "windows mixed although every read came when asked: {:?}", d.engine.stats());
    }
}

/// The whole corpus must reach the model, or the properties above say little.
#[test]
#[cfg_attr(miri, ignore)]
fn the_generated_runs_reach_the_cost_model() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngSeed, TestRunner};
    let mut runner = TestRunner::new(Config { rng_seed: RngSeed::Fixed(7), ..Config::default() });
    let (mut windows, mut model, mut switches) = (0, 0, 0);
    for _ in 0..200 {
        let ops = prop::collection::vec(op(), 300..600).new_tree(&mut runner).unwrap().current();
        let cfg = EngineConfig { threshold_bytes: 4096, ..EngineConfig::default() };
        let d = run(cfg, &ops).unwrap_or_else(|e| panic!("{e}"));
        windows += d.observed;
        model += d.model;
        let st = d.engine.stats();
        switches += st.switches_to_low_latency + st.switches_to_low_stall;
    }
    assert!(
        windows > 5_000 && model > 1_000 && switches > 100,
        "windows {windows}, model decisions {model}, switches {switches}"
    );
}

/// 100,000 steps of one engine: the heap it holds does not grow, and neither does its state.
#[test]
#[cfg_attr(miri, ignore)]
fn a_long_run_holds_no_growing_state() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngSeed, TestRunner};
    let mut runner = TestRunner::new(Config { rng_seed: RngSeed::Fixed(11), ..Config::default() });
    let ops = prop::collection::vec(op(), 100_000).new_tree(&mut runner).unwrap().current();
    let cfg = EngineConfig { threshold_bytes: 1024, freshness: 1_000_000, ..EngineConfig::default() };
    let size = std::mem::size_of_val(&Engine::new(cfg.clone()));
    let (before, _) = heap_mark();
    let mut d = Driver::new(cfg);
    let (with_engine, _) = heap_mark();
    // The engine holds fixed-size tables (per destination class and size range) whose empty
    // entries print shorter than filled ones: compare the middle of the run with its end.
    let mut first_debug = 0;
    for (i, op) in ops.iter().enumerate() {
        d.step(op).unwrap_or_else(|e| panic!("step {i} {op:?}: {e}"));
        if i == ops.len() / 2 {
            first_debug = format!("{:?}", d.engine).len();
        }
    }
    let (after, peak) = heap_mark();
    assert_eq!(after, with_engine, "heap held grew by {} bytes in 100,000 steps", after - with_engine);
    assert!(peak - before < 64 << 10, "peak heap {} bytes", peak - before);
    assert_eq!(std::mem::size_of_val(&d.engine), size);
    let debug = format!("{:?}", d.engine).len();
    assert!(
        debug < first_debug + 2048,
        "the engine's state printed {first_debug} bytes after 50,000 steps and {debug} after 100,000"
    );
    assert!(d.observed > 5_000 && d.model > 1_000, "windows {}, model decisions {}", d.observed, d.model);
}

// ---------------------------------------------------------------------------------------------
// Deterministic edge cases: fast enough for Miri.

#[test]
fn edge_counter_values() {
    // Under Miri (thousands of times slower) every other edge.
    let all = [0i64, i64::MIN, 1, i64::MAX, -1, i64::MIN + 1, i64::MAX - 1];
    let edges: Vec<i64> = all.iter().copied().step_by(if cfg!(miri) { 2 } else { 1 }).collect();
    for unit in [LatencyUnit::Microseconds, LatencyUnit::Cycles] {
        let cfg = EngineConfig {
            threshold_bytes: 0,
            latency_unit: unit,
            sigma: 4.9e-324,
            lambda: 1000.0,
            ..EngineConfig::default()
        };
        let mut ops = Vec::new();
        for &a in &edges {
            for &b in &edges {
                ops.push(Op::Observe(SampleGen::Absolute([a, b, a, b], Some(b))));
                ops.push(Op::Decide(
                    Message {
                        bytes: a as u64,
                        transfer: Transfer::Put,
                        endpoint: 0,
                        class: DestinationClass::SameGroup,
                        posted_ns: None,
                    },
                    false,
                ));
                ops.push(Op::Observe(SampleGen::Step([b, a, b, a], None)));
                ops.push(Op::Crossed(
                    Message {
                        bytes: b as u64,
                        transfer: Transfer::Get,
                        endpoint: 0,
                        class: DestinationClass::OtherGroup,
                        posted_ns: None,
                    },
                    true,
                ));
            }
        }
        let mut d = Driver::new(cfg);
        for (i, op) in ops.iter().enumerate() {
            d.step(op).unwrap_or_else(|e| panic!("step {i} {op:?}: {e}"));
        }
    }
}
