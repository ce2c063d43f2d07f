//! The paper's algorithm against hand-computed cases of Eq. 1-4.

use aar_engine::model::{latency_rounds, NIC_CYCLE_US};
use aar_engine::*;

const AD0: RoutingMode = RoutingMode::Adaptive0;
const AD1: RoutingMode = RoutingMode::Adaptive1;
const AD2: RoutingMode = RoutingMode::Adaptive2;
const AD3: RoutingMode = RoutingMode::Adaptive3;

fn put(bytes: u64) -> Message {
    Message { bytes, transfer: Transfer::Put, endpoint: 7, class: DestinationClass::Unknown, posted_ns: None }
}

fn get(bytes: u64) -> Message {
    Message { bytes, transfer: Transfer::Get, endpoint: 7, class: DestinationClass::Unknown, posted_ns: None }
}

/// Counter totals after `flits` request flits stalled `stall` cycles each, and `responses`
/// responses of `latency` each (counter units).
fn sample(flits: i64, stall: f64, responses: i64, latency: f64) -> CounterSample {
    CounterSample {
        req_flits: flits,
        req_stalled: (flits as f64 * stall) as i64,
        rsp_latency: (responses as f64 * latency) as i64,
        rsp_packets: responses,
        rsp_stalled: None,
    }
}

/// An engine whose latest window is (latency L µs, stall s) measured on the side of `mode`.
fn engine_observing(mode: RoutingMode, latency: f64, stall: f64) -> Engine {
    let cfg = EngineConfig { policy: Policy::Fixed(mode), ..EngineConfig::default() };
    let mut e = Engine::new(cfg);
    assert_eq!(e.observe(CounterSample::default()), WindowOutcome::Baseline);
    let d = e.on_threshold_crossed(&put(1 << 20), false);
    assert_eq!(d.mode, Some(mode));
    let w = e.observe(sample(1_000_000, stall, 1_000_000, latency));
    assert!(matches!(w, WindowOutcome::Valid(_)), "{w:?}");
    e.set_policy(Policy::Auto);
    e
}

#[test]
fn below_threshold_goes_high_bias_and_crossing_reads_counters() {
    let mut e = Engine::new(EngineConfig::default());
    for _ in 0..4 {
        let d = e.decide(&put(1024), false);
        assert_eq!((d.mode, d.reason, d.read_counters), (Some(AD3), Reason::Threshold, false));
    }
    // 5 KiB > 4 KiB: a decision; no window yet, so High Bias, and counters are read after.
    let d = e.decide(&put(1024), false);
    assert_eq!((d.mode, d.reason, d.read_counters), (Some(AD3), Reason::Threshold, true));
    // The accumulator restarts after a decision.
    assert!(!e.decide(&put(4096), false).read_counters, "4096 <= threshold");
    assert!(e.decide(&put(1), false).read_counters);
    assert_eq!(e.stats().decisions, 2);
}

#[test]
fn stall_bound_large_put_switches_high_bias_to_adaptive() {
    // On High Bias: L = 2 us, s = 40. Estimated Adaptive: L = 2.4, s = 8.
    // 64 KiB PUT: p = 1024, f = 5120, rounds = 2.
    // T_bs = 2*2 + 5120*41*1.25e-3 = 266.4 us; T_ad = 2*2.4 + 5120*9*1.25e-3 = 62.4 us.
    let mut e = engine_observing(AD3, 2.0, 40.0);
    let d = e.on_threshold_crossed(&put(64 << 10), false);
    assert_eq!((d.mode, d.reason), (Some(AD0), Reason::Model));
    assert_eq!((d.flits, d.packets), (5120, 1024));
    let w = d.window.unwrap();
    assert!((w.latency_us - 2.0).abs() < 1e-9 && (w.stall_ratio - 40.0).abs() < 1e-9);
    assert_eq!(e.stats().switches_to_low_stall, 1);
}

#[test]
fn latency_bound_small_put_switches_adaptive_to_high_bias() {
    // On Adaptive: L = 2.4, s = 0.2. Estimated High Bias: L = 2.0, s = 1.0.
    // 64 B PUT: f = 5, p = 1: T_ad = 2.4 + 5*1.2*1.25e-3 = 2.4075; T_bs = 2.0 + 5*2*1.25e-3 = 2.0125.
    let mut e = engine_observing(AD0, 2.4, 0.2);
    let d = e.on_threshold_crossed(&put(64), false);
    assert_eq!((d.mode, d.reason), (Some(AD3), Reason::Model));
}

#[test]
fn large_put_stays_adaptive_when_stalls_dominate() {
    // 4 MiB PUT: p = 65536, f = 327680, rounds = ceil((65535 + 512)/1024) = 65.
    // T_ad = 65*2.4 + 327680*1.2*1.25e-3 = 647.52; T_bs = 65*2.0 + 327680*2.0*1.25e-3 = 949.2.
    let mut e = engine_observing(AD0, 2.4, 0.2);
    assert_eq!(latency_rounds(65536), 65);
    let d = e.on_threshold_crossed(&put(4 << 20), false);
    assert_eq!((d.mode, d.reason), (Some(AD0), Reason::Model));
    assert_eq!(e.stats().switches_to_low_latency, 0);
}

#[test]
fn break_even_flits_match_eq_3() {
    // On High Bias with L = 1, s = 1: Adaptive estimate L = 1.2, s = 0.2.
    // Eq. 3: switch when f > rounds * (L_ad - L_bs) / ((s_bs - s_ad) * cycle) = 0.2 / (0.8 * 1.25e-3) = 200.
    let break_even = 0.2 / (0.8 * NIC_CYCLE_US);
    assert!((break_even - 200.0).abs() < 1e-9);
    // 2496 B PUT: p = 39, f = 39 + 156 = 195 < 200 -> stays High Bias.
    let mut e = engine_observing(AD3, 1.0, 1.0);
    assert_eq!(e.on_threshold_crossed(&put(2496), false).mode, Some(AD3));
    // 2560 B PUT: p = 40, f = 200: a tie keeps the mode in use.
    let mut e = engine_observing(AD3, 1.0, 1.0);
    assert_eq!(e.on_threshold_crossed(&put(2560), false).mode, Some(AD3));
    // 2624 B PUT: p = 41, f = 205 > 200 -> Adaptive.
    let mut e = engine_observing(AD3, 1.0, 1.0);
    assert_eq!(e.on_threshold_crossed(&put(2624), false).mode, Some(AD0));
}

#[test]
fn get_needs_five_times_the_bytes_of_a_put() {
    // Same break-even of 200 flits: a 4 KiB PUT (320 flits) switches, a 4 KiB GET (64 flits) does not.
    let mut e = engine_observing(AD3, 1.0, 1.0);
    assert_eq!(e.on_threshold_crossed(&put(4096), false).mode, Some(AD0));
    let mut e = engine_observing(AD3, 1.0, 1.0);
    assert_eq!(e.on_threshold_crossed(&get(4096), false).mode, Some(AD3));
    // 16 KiB GET: 256 flits > 200.
    let mut e = engine_observing(AD3, 1.0, 1.0);
    assert_eq!(e.on_threshold_crossed(&get(16384), false).mode, Some(AD0));
}

#[test]
fn alltoall_uses_adaptive1_instead_of_adaptive0() {
    let mut e = engine_observing(AD3, 2.0, 40.0);
    let d = e.on_threshold_crossed(&put(64 << 10), true);
    assert_eq!((d.mode, d.reason), (Some(AD1), Reason::Alltoall));
    // High Bias is unaffected inside alltoall.
    let mut e = engine_observing(AD0, 2.4, 0.2);
    let d = e.on_threshold_crossed(&put(64), true);
    assert_eq!((d.mode, d.reason), (Some(AD3), Reason::Model));
}

#[test]
fn fixed_and_off_policies() {
    let mut e = Engine::new(EngineConfig { policy: Policy::Fixed(RoutingMode::Adaptive2), ..Default::default() });
    let d = e.decide(&put(64), false);
    assert_eq!((d.mode, d.reason), (Some(RoutingMode::Adaptive2), Reason::Fixed));
    let d = e.decide(&put(1 << 20), false);
    assert_eq!((d.mode, d.reason, d.read_counters), (Some(RoutingMode::Adaptive2), Reason::Fixed, true));
    e.set_policy(Policy::Off);
    let d = e.decide(&put(1 << 20), false);
    assert_eq!((d.mode, d.reason), (None, Reason::Passthrough));
    assert_eq!(e.below_threshold_mode(), None);
}

/// An engine that measured one window per `(mode, L, s)`, each of one decision on message `msg`
/// (pinned to that mode), then switched to automatic routing.
fn engine_with_windows(cfg: EngineConfig, msg: &Message, windows: &[(RoutingMode, f64, f64)]) -> Engine {
    let mut e = Engine::new(cfg);
    e.observe(CounterSample::default());
    let mut total = CounterSample::default();
    for &(mode, latency, stall) in windows {
        e.set_policy(Policy::Fixed(mode));
        e.on_threshold_crossed(msg, false);
        total.req_flits += 1_000_000;
        total.req_stalled += (1_000_000.0 * stall) as i64;
        total.rsp_packets += 1_000_000;
        total.rsp_latency += (1_000_000.0 * latency) as i64;
        assert!(matches!(e.observe(total), WindowOutcome::Valid(_)));
    }
    e.set_policy(Policy::Auto);
    e
}

#[test]
fn fresh_observation_of_the_other_side_replaces_the_estimate_for_same_endpoint_and_size() {
    // High Bias measured L = 1, s = 1; then Adaptive measured L = 1, s = 3 (64 KiB PUTs).
    // Scaled from Adaptive, High Bias would be L 0.83, s 15: keep Adaptive. The fresh High Bias
    // observation (L 1, s 1) says High Bias is better: T_bs = 2 + 5120*2*1.25e-3 = 14.8 us,
    // T_ad = 2 + 5120*4*1.25e-3 = 27.6 us.
    let msg = put(64 << 10);
    let windows = [(AD3, 1.0, 1.0), (AD0, 1.0, 3.0)];
    let mut e = engine_with_windows(EngineConfig::default(), &msg, &windows);
    assert_eq!(e.on_threshold_crossed(&msg, false).mode, Some(AD3), "fresh High Bias observation used");
    assert_eq!(e.stats().fresh_observations_used, 1);
    // Another endpoint, or another size, gets the scaled estimate.
    for other in [Message { endpoint: 8, ..msg }, put(32 << 10)] {
        let mut e = engine_with_windows(EngineConfig::default(), &msg, &windows);
        assert_eq!(e.on_threshold_crossed(&other, false).mode, Some(AD0), "{other:?}");
        assert_eq!(e.stats().fresh_observations_used, 0);
    }
}

#[test]
fn fresh_observation_expires_after_the_configured_windows() {
    let msg = put(64 << 10);
    let hb_then_ad = |n_ad: usize| {
        let mut w = vec![(AD3, 1.0, 1.0)];
        w.extend(std::iter::repeat_n((AD0, 1.0, 3.0), n_ad));
        w
    };
    // Freshness 2: usable in the window after the one it was measured in, not the second one.
    let cfg = EngineConfig { freshness: 2, ..EngineConfig::default() };
    let mut e = engine_with_windows(cfg.clone(), &msg, &hb_then_ad(1));
    assert_eq!(e.on_threshold_crossed(&msg, false).mode, Some(AD3));
    let mut e = engine_with_windows(cfg, &msg, &hb_then_ad(2));
    assert_eq!(e.on_threshold_crossed(&msg, false).mode, Some(AD0), "expired: scaled estimate keeps Adaptive");
    assert_eq!(e.stats().fresh_observations_used, 0);
    let cfg = EngineConfig { freshness: 3, ..EngineConfig::default() };
    let mut e = engine_with_windows(cfg, &msg, &hb_then_ad(2));
    assert_eq!(e.on_threshold_crossed(&msg, false).mode, Some(AD3));
    // Freshness 0 and 1: never (1 counts only the window it was measured in, README's table).
    for freshness in [0, 1] {
        let cfg = EngineConfig { freshness, ..EngineConfig::default() };
        let mut e = engine_with_windows(cfg, &msg, &hb_then_ad(1));
        assert_eq!(e.on_threshold_crossed(&msg, false).mode, Some(AD0), "freshness {freshness}");
        assert_eq!(e.stats().fresh_observations_used, 0);
    }
}

#[test]
fn counters_are_read_once_per_window_of_decisions_and_at_every_side_change() {
    let cfg = EngineConfig { window_decisions: 4, ..EngineConfig::default() };
    let mut e = Engine::new(cfg);
    e.observe(CounterSample::default());
    let msg = put(64 << 10);
    // No window yet: read after the first decision.
    let d = e.on_threshold_crossed(&msg, false);
    assert!(d.read_counters && !d.read_before);
    // A stall-bound window on High Bias: the model switches to Adaptive. The High Bias window
    // is already closed, so no read before; the first Adaptive window then spans 4 decisions.
    e.observe(sample(1_000_000, 40.0, 1_000_000, 2.0));
    let mut flits = 1_000_000;
    let reads: Vec<(bool, bool)> = (0..8)
        .map(|_| {
            let d = e.on_threshold_crossed(&msg, false);
            if d.read_counters {
                flits += 1_000_000;
                // Adaptive windows with s = 2, L = 2: Adaptive stays the better side.
                let stalled = 40_000_000 + 2 * (flits - 1_000_000);
                e.observe(CounterSample {
                    req_flits: flits,
                    req_stalled: stalled,
                    rsp_latency: 2 * flits,
                    rsp_packets: flits,
                    rsp_stalled: None,
                });
            }
            (d.read_before, d.read_counters)
        })
        .collect();
    assert_eq!(
        reads,
        [
            (false, false),
            (false, false),
            (false, false),
            (false, true),
            (false, false),
            (false, false),
            (false, false),
            (false, true)
        ]
    );
    assert_eq!((e.stats().switches_to_low_stall, e.stats().switches_to_low_latency), (1, 0));
    // Pinning High Bias mid-window: the Adaptive decisions so far close before the first
    // High Bias message is sent, and the window is attributed to Adaptive.
    let mut e = Engine::new(EngineConfig { window_decisions: 4, ..EngineConfig::default() });
    e.observe(CounterSample::default());
    e.set_policy(Policy::Fixed(AD0));
    e.on_threshold_crossed(&msg, false);
    e.on_threshold_crossed(&msg, false);
    e.set_policy(Policy::Fixed(AD3));
    let d = e.on_threshold_crossed(&msg, false);
    assert!(d.read_before, "side change: read before posting");
    e.observe(sample(1_000_000, 2.0, 1_000_000, 1.5)); // the Adaptive window
    e.set_policy(Policy::Auto);
    let d = e.on_threshold_crossed(&msg, false);
    let w = d.window.unwrap();
    assert_eq!((w.latency_us, w.stall_ratio), (1.5, 2.0));
    // The window a side change opens holds `window_decisions` decisions too, counting the one
    // whose read came before its post: High Bias's window of 4 asks for its read at its fourth
    // decision (it asked at the fifth).
    let mut e = Engine::new(EngineConfig { window_decisions: 4, ..EngineConfig::default() });
    e.observe(CounterSample::default());
    e.set_policy(Policy::Fixed(AD0));
    assert!(e.on_threshold_crossed(&msg, false).read_counters, "no window yet");
    e.observe(sample(1_000_000, 2.0, 1_000_000, 1.5));
    e.on_threshold_crossed(&msg, false);
    e.set_policy(Policy::Fixed(AD3));
    let d = e.on_threshold_crossed(&msg, false);
    assert!(d.read_before && !d.read_counters);
    e.observe(sample(2_000_000, 2.0, 2_000_000, 1.5));
    let reads: Vec<bool> = (0..3).map(|_| e.on_threshold_crossed(&msg, false).read_counters).collect();
    assert_eq!(reads, [false, false, true]);
    // The paper's setting: a read after every decision, never before.
    let mut e = Engine::new(EngineConfig { window_decisions: 1, ..EngineConfig::default() });
    e.observe(CounterSample::default());
    for i in 0..6 {
        let d = e.on_threshold_crossed(&msg, false);
        assert!(d.read_counters && !d.read_before);
        e.observe(sample(1_000_000 * (i + 1), if i % 2 == 0 { 40.0 } else { 0.1 }, 1_000_000 * (i + 1), 2.0));
    }
}

#[test]
fn counter_windows_by_hand() {
    let mut e = Engine::new(EngineConfig::default());
    let base =
        CounterSample { req_flits: 100, req_stalled: 1000, rsp_latency: 50, rsp_packets: 10, rsp_stalled: Some(100) };
    assert_eq!(e.observe(base), WindowOutcome::Baseline);
    // Δflits 400, Δstalled 2000, Δrsp_stalled 400 -> s = 1600/400 = 4; Δlat 60 / Δrsp 20 -> L = 3.
    let next =
        CounterSample { req_flits: 500, req_stalled: 3000, rsp_latency: 110, rsp_packets: 30, rsp_stalled: Some(500) };
    assert_eq!(e.observe(next), WindowOutcome::Valid(Window { latency_us: 3.0, stall_ratio: 4.0 }));
    // Response stalls above request stalls clamp to zero, as the reference does.
    let clamp =
        CounterSample { req_flits: 600, req_stalled: 3000, rsp_latency: 120, rsp_packets: 40, rsp_stalled: Some(900) };
    assert_eq!(e.observe(clamp), WindowOutcome::Valid(Window { latency_us: 1.0, stall_ratio: 0.0 }));
    // Latency in cycles: 800 cycles per response = 1 us.
    let mut e = Engine::new(EngineConfig { latency_unit: LatencyUnit::Cycles, ..Default::default() });
    e.observe(CounterSample::default());
    let w = e.observe(CounterSample {
        req_flits: 10,
        req_stalled: 0,
        rsp_latency: 8000,
        rsp_packets: 10,
        rsp_stalled: None,
    });
    assert_eq!(w, WindowOutcome::Valid(Window { latency_us: 1.0, stall_ratio: 0.0 }));
}

/// A read that finds none of the window's traffic yet (right after the posts) leaves the window
/// open: its decisions are attributed by the first read that sees their traffic, and the read
/// schedule still counts from the last read.
#[test]
fn a_window_without_traffic_yet_keeps_its_decisions() {
    let cfg = EngineConfig { policy: Policy::Fixed(AD0), window_decisions: 2, ..EngineConfig::default() };
    let mut e = Engine::new(cfg);
    assert!(!e.window_open(), "nothing to close before the first read");
    let s = sample(1000, 0.5, 1000, 2.0);
    assert_eq!(e.observe(s), WindowOutcome::Baseline);
    assert!(e.window_open());
    // Until a window is attributed, a read after every decision; posted at one instant, each
    // read finds no flit of them yet.
    for _ in 0..2 {
        assert!(e.on_threshold_crossed(&put(65536), false).read_counters);
        assert_eq!(e.observe(s), WindowOutcome::DiscardedEmpty);
    }
    assert_eq!(e.last_window(), None);
    // their traffic arrives: one window of both decisions, measured from the first sample
    let later = CounterSample { req_flits: s.req_flits + 3000, rsp_packets: s.rsp_packets + 1000, ..s };
    let w = e.observe(later);
    assert!(matches!(w, WindowOutcome::Valid(Window { stall_ratio: 0.0, .. })), "{w:?}");
    assert!(e.last_window().is_some());
    // then the schedule: a read every second decision, counted from the last read
    assert!(!e.on_threshold_crossed(&put(65536), false).read_counters);
    assert!(e.on_threshold_crossed(&put(65536), false).read_counters);
    assert_eq!(e.observe(later), WindowOutcome::DiscardedEmpty);
    assert!(!e.on_threshold_crossed(&put(65536), false).read_counters, "the empty read restarted the count");
    e.set_policy(Policy::Auto);
    let d = e.on_threshold_crossed(&put(65536), false);
    assert_eq!(d.reason, Reason::Model, "the window was attributed to ADAPTIVE0's side");
    let st = e.stats();
    assert_eq!((st.counter_reads, st.windows_valid, st.windows_discarded_empty), (5, 1, 3));
}

/// The first read of a run finds no sample to compare with: it becomes the baseline and keeps
/// the decisions made before it, whose traffic comes after it. A rank whose iteration is one
/// 4 MiB message (the paper's Fig. 7 ping-pong) thus has its window at the second read.
#[test]
fn the_first_read_keeps_the_decisions_before_it() {
    let mut e = Engine::new(EngineConfig { policy: Policy::Fixed(AD0), ..EngineConfig::default() });
    assert!(e.on_threshold_crossed(&put(4 << 20), false).read_counters, "no window yet: read");
    let s = sample(1000, 0.5, 1000, 2.0);
    assert_eq!(e.observe(s), WindowOutcome::Baseline);
    assert!(e.window_open());
    // the message's traffic: 65,536 request flits, 32,768 responses at 1.5 us, no stall
    let later = CounterSample {
        req_flits: s.req_flits + 65_536,
        rsp_packets: s.rsp_packets + 32_768,
        rsp_latency: s.rsp_latency + 32_768 * 3 / 2,
        ..s
    };
    let w = e.observe(later);
    assert_eq!(w, WindowOutcome::Valid(Window { latency_us: 1.5, stall_ratio: 0.0 }), "{w:?}");
    e.set_policy(Policy::Auto);
    let d = e.on_threshold_crossed(&put(4 << 20), false);
    assert_eq!(d.reason, Reason::Model, "the window was attributed to ADAPTIVE0's side");
    assert_eq!(e.stats().windows_valid, 1);
}

#[test]
fn zero_equal_decreasing_wrapped_and_absurd_windows_are_discarded() {
    let mut e = Engine::new(EngineConfig::default());
    let s = sample(1000, 1.0, 1000, 1.0);
    e.observe(s);
    assert_eq!(e.observe(s), WindowOutcome::DiscardedEmpty, "equal samples");
    let only_latency = CounterSample { rsp_latency: s.rsp_latency + 10, rsp_packets: s.rsp_packets + 1, ..s };
    assert_eq!(e.observe(only_latency), WindowOutcome::DiscardedEmpty, "no request flits");
    let decreasing = CounterSample { req_flits: 10, ..only_latency };
    assert_eq!(e.observe(decreasing), WindowOutcome::DiscardedDecreasing);
    // Wrapped: a counter jumping from near the top of i64 to near the bottom.
    let mut e = Engine::new(EngineConfig::default());
    e.observe(CounterSample { req_flits: i64::MAX - 5, ..s });
    assert_eq!(e.observe(CounterSample { req_flits: i64::MIN + 5, ..s }), WindowOutcome::DiscardedDecreasing);
    // Absurd: a mean latency of 10^12 us.
    let mut e = Engine::new(EngineConfig::default());
    e.observe(CounterSample::default());
    let absurd =
        CounterSample { req_flits: 1, req_stalled: 0, rsp_latency: i64::MAX, rsp_packets: 1, rsp_stalled: None };
    assert_eq!(e.observe(absurd), WindowOutcome::DiscardedAbsurd);
    assert_eq!(e.last_window(), None);
    // A discarded window leaves the decision on the last valid one (none here: High Bias).
    let d = e.on_threshold_crossed(&put(1 << 20), false);
    assert_eq!((d.mode, d.reason), (Some(AD3), Reason::Threshold));
    let st = e.stats();
    assert_eq!((st.windows_valid, st.windows_discarded_absurd), (0, 1));
}

#[test]
fn extreme_counter_values_never_produce_a_non_finite_decision() {
    let values = [i64::MIN, i64::MIN + 1, -1, 0, 1, 2, 1000, 1 << 40, i64::MAX - 1, i64::MAX];
    let mut e = Engine::new(EngineConfig::default());
    let mut n = 0u64;
    for &a in &values {
        for &b in &values {
            for &c in &values {
                let s = CounterSample {
                    req_flits: a,
                    req_stalled: b,
                    rsp_latency: c,
                    rsp_packets: a ^ c,
                    rsp_stalled: Some(b ^ c),
                };
                if let WindowOutcome::Valid(w) = e.observe(s) {
                    assert!(
                        w.latency_us.is_finite()
                            && w.stall_ratio.is_finite()
                            && w.latency_us >= 0.0
                            && w.stall_ratio >= 0.0
                    );
                }
                n += 1;
                let d = e.on_threshold_crossed(&put(n.wrapping_mul(7919) % (1 << 30)), n.is_multiple_of(3));
                assert!(d.mode.is_some());
                if let Some(w) = d.window {
                    assert!(w.latency_us.is_finite() && w.stall_ratio.is_finite());
                }
            }
        }
    }
}

#[test]
fn zero_stalls_on_both_sides_decide_on_latency_alone() {
    // The common case in the simulator: the NIC never stalls. From High Bias with L = 1, s = 0,
    // Adaptive is estimated at L = 1.2, s = 0: High Bias is faster for every size.
    for bytes in [64, 4096, 64 << 10, 4 << 20] {
        let mut e = engine_observing(AD3, 1.0, 0.0);
        let d = e.on_threshold_crossed(&put(bytes), false);
        assert_eq!((d.mode, d.reason), (Some(AD3), Reason::Model), "{bytes} B");
    }
    // From Adaptive with L = 1.2, s = 0: High Bias estimated at L = 1.0, s = 0: switch.
    let mut e = engine_observing(AD0, 1.2, 0.0);
    assert_eq!(e.on_threshold_crossed(&put(4 << 20), false).mode, Some(AD3));
    // And with λ = 1 both sides estimate the same time: a tie keeps `auto`'s own side, not the
    // routing another policy left in force (here a fixed ADAPTIVE0 measured the window; `auto`
    // has not decided yet, so its side is the initial High Bias).
    let cfg = EngineConfig { lambda: 1.0, ..EngineConfig::default() };
    let msg = put(64 << 10);
    let mut e = engine_with_windows(cfg.clone(), &msg, &[(AD0, 1.0, 0.0)]);
    let d = e.on_threshold_crossed(&msg, false);
    assert_eq!((d.mode, d.reason), (Some(AD3), Reason::Model));
    // Once `auto` itself chose Adaptive (High Bias stalled 40 cycles a flit), a tie keeps
    // Adaptive: a window of L = 1, s = 0 on Adaptive estimates High Bias the same (a 32 KiB
    // message, so that the fresh High Bias window of the 64 KiB ones does not apply).
    let mut e = engine_with_windows(cfg, &msg, &[(AD3, 1.0, 40.0)]);
    assert_eq!(e.on_threshold_crossed(&msg, false).mode, Some(AD0));
    let after = sample(2_000_000, 20.0, 2_000_000, 1.0); // + 1e6 flits, no stall, L = 1
    assert!(matches!(e.observe(after), WindowOutcome::Valid(_)));
    let d = e.on_threshold_crossed(&put(32 << 10), false);
    assert_eq!((d.mode, d.reason), (Some(AD0), Reason::Model));
}

#[test]
fn auto_counts_its_switches_against_its_own_last_choice() {
    // An A/B experiment alternating ADAPTIVE0 and `auto` on a network where High Bias wins
    // (L = 1, s = 0 on either side): `auto` chooses High Bias at every decision. Its first
    // decision after each ADAPTIVE0 iteration changes the routing in force, but not its own
    // choice: no switch is counted, in any iteration. (From the second `auto` iteration on, that
    // decision is a tie, the Adaptive window against a fresh High Bias one of the same message:
    // it keeps `auto`'s High Bias, not the ADAPTIVE0 the other arm left in force.)
    let msg = put(64 << 10);
    let mut e = engine_with_windows(EngineConfig::default(), &msg, &[(AD0, 1.0, 0.0)]);
    let mut total = sample(1_000_000, 0.0, 1_000_000, 1.0);
    for _ in 0..3 {
        e.set_policy(Policy::Auto);
        for _ in 0..4 {
            assert_eq!(e.on_threshold_crossed(&msg, false).mode, Some(AD3));
            total = sample(total.req_flits + 1_000_000, 0.0, total.rsp_packets + 1_000_000, 1.0);
            assert!(matches!(e.observe(total), WindowOutcome::Valid(_)));
        }
        e.set_policy(Policy::Fixed(AD0));
        for _ in 0..4 {
            assert_eq!(e.on_threshold_crossed(&msg, false).mode, Some(AD0));
            total = sample(total.req_flits + 1_000_000, 0.0, total.rsp_packets + 1_000_000, 1.0);
            assert!(matches!(e.observe(total), WindowOutcome::Valid(_)));
        }
    }
    let st = e.stats();
    assert_eq!((st.switches_to_low_latency, st.switches_to_low_stall), (0, 0));
    // Where `auto` itself changes its mind, the switch counts: High Bias stalls 40 cycles a
    // flit, and `auto` moves the next 64 KiB message to Adaptive.
    e.set_policy(Policy::Auto);
    assert_eq!(e.on_threshold_crossed(&msg, false).mode, Some(AD3));
    let stalled = CounterSample {
        req_flits: total.req_flits + 1_000_000,
        req_stalled: 40_000_000,
        rsp_packets: total.rsp_packets + 1_000_000,
        rsp_latency: total.rsp_latency + 1_000_000,
        rsp_stalled: None,
    };
    assert!(matches!(e.observe(stalled), WindowOutcome::Valid(_)));
    assert_eq!(e.on_threshold_crossed(&msg, false).mode, Some(AD0));
    assert_eq!((e.stats().switches_to_low_latency, e.stats().switches_to_low_stall), (0, 1));
}

#[test]
fn policy_names() {
    assert_eq!("auto".parse(), Ok(Policy::Auto));
    assert_eq!(" Paper ".parse(), Ok(Policy::Auto));
    assert_eq!("OFF".parse(), Ok(Policy::Off));
    assert_eq!("observe".parse(), Ok(Policy::Off));
    assert_eq!("ADAPTIVE_2".parse(), Ok(Policy::Fixed(RoutingMode::Adaptive2)));
    for bad in ["", "MIN_HASH", "fast", "autoo"] {
        assert!(bad.parse::<Policy>().is_err(), "{bad}");
        assert_eq!(bad.parse::<Policy>().ok(), None, "{bad}");
    }
    assert_eq!("fast".parse::<Policy>(), Err("\"fast\" is not a policy".to_string()));
    for p in Policy::ALL {
        assert_eq!(p.name().parse(), Ok(p), "names round-trip");
    }
}

/// `Policy::ALL` holds every policy once: a new variant fails to compile here until it is placed.
#[test]
fn policy_all_covers_every_policy_once() {
    let slot = |p: Policy| match p {
        Policy::Auto => 0,
        Policy::Steady => 1,
        Policy::Off => 2,
        Policy::Fixed(m) => 3 + m.index(),
    };
    let mut slots: Vec<usize> = Policy::ALL.map(slot).to_vec();
    slots.sort_unstable();
    assert_eq!(slots, (0..3 + RoutingMode::ALL.len()).collect::<Vec<_>>());
}

/// Below the threshold: the low-latency mode in `auto`, the pinned mode when fixed, nothing under
/// `off`; the same answer from `Policy::below_threshold` and from a whole `Engine::decide`.
#[test]
fn below_the_threshold_each_policy_has_one_routing_and_reason() {
    let cases = [
        (Policy::Auto, Some(AD2), Reason::Threshold),
        (Policy::Fixed(AD1), Some(AD1), Reason::Fixed),
        (Policy::Off, None, Reason::Passthrough),
    ];
    for (policy, mode, reason) in cases {
        assert_eq!(policy.below_threshold(AD2), (mode, reason), "{policy:?}");
        let mut e = Engine::new(EngineConfig { policy, low_latency_mode: AD2, ..EngineConfig::default() });
        let d = e.decide(&put(64), false);
        assert_eq!((d.mode, d.reason), (mode, reason), "{policy:?}");
        assert_eq!(e.below_threshold_mode(), mode);
    }
}

/// The cumulative-size rule both the engine and libaar.so's lock-free sum use.
#[test]
fn the_sum_restarts_when_it_passes_the_threshold_and_never_wraps() {
    assert_eq!(accumulate(0, 4096, 4096), (4096, false), "reaching the threshold is not passing it");
    assert_eq!(accumulate(4096, 1, 4096), (0, true));
    assert_eq!(accumulate(0, 0, 0), (0, false));
    assert_eq!(accumulate(0, 1, 0), (0, true), "threshold 0: every non-empty message decides");
    assert_eq!(accumulate(u64::MAX - 1, u64::MAX, u64::MAX), (u64::MAX, false), "saturates");
    // Tiny messages still trigger decisions: 64 B posts cross 4 KiB on every 65th.
    let (mut sum, mut crossings) = (0, Vec::new());
    for i in 0..200 {
        let crossed;
        (sum, crossed) = accumulate(sum, 64, 4096);
        if crossed {
            crossings.push(i);
        }
    }
    assert_eq!(crossings, [64, 129, 194]);
}

/// A/B iterations switch policies under one engine: what fixed iterations measured feeds `auto`
/// (attributed to the side of the fixed mode); what `off` measured does not.
#[test]
fn policies_share_one_engine_fixed_windows_feed_auto_and_off_windows_do_not() {
    // ADAPTIVE0 (low-stall side) measured: L = 1.4 µs, s = 1. Then auto decides at once with the
    // model, on that window, and keeps the low-stall side for a large PUT.
    let mut e = engine_observing(AD0, 1.4, 1.0);
    assert!(e.window_open(), "read before: a read at an iteration boundary closes a window");
    let d = e.on_threshold_crossed(&put(65536), false);
    assert_eq!((d.reason, d.mode), (Reason::Model, Some(AD0)));
    assert!((d.window.unwrap().latency_us - 1.4).abs() < 1e-9, "{:?}", d.window);
    assert!(e.window_open());

    // Under off, windows are counted but belong to no side: auto afterwards still has none.
    let mut e = Engine::new(EngineConfig { policy: Policy::Off, ..EngineConfig::default() });
    e.observe(CounterSample::default());
    let d = e.on_threshold_crossed(&put(1 << 20), false);
    assert_eq!(d.mode, None);
    assert!(matches!(e.observe(sample(1_000_000, 1.0, 1_000_000, 1.4)), WindowOutcome::Valid(_)));
    assert_eq!(e.stats().windows_valid, 1);
    e.set_policy(Policy::Auto);
    let d = e.on_threshold_crossed(&put(65536), false);
    assert_eq!((d.reason, d.mode), (Reason::Threshold, Some(AD3)), "no window attributed to a side yet");
}
