//! Topology, routing, credit and determinism tests of the network core.

use aar_engine::Transfer;
use aar_sim::config::{Mode, NetConfig};
use aar_sim::net::Net;
use aar_sim::synthetic::{run_synthetic, Pattern, SynthParams};
use aar_sim::topology::{PortClass, TopoSpec, Topology, NONE};

fn small_kim() -> NetConfig {
    // p=2, a=4, h=2, g=9: a balanced small Kim dragonfly (72 nodes)
    NetConfig::kim(TopoSpec::Kim { p: 2, a: 4, h: 2, g: 9 })
}

#[test]
fn kim_k4_ports_and_links() {
    let t = Topology::new(TopoSpec::booksim_k4());
    assert_eq!(t.n_nodes, 1056);
    assert_eq!(t.n_routers, 264);
    assert_eq!(t.radix, 4 + 7 + 4);
    for r in 0..t.n_routers {
        let mut n = [0; 5];
        for port in 0..t.radix {
            let id = (r * t.radix + port) as usize;
            let c = t.class[id];
            n[match c {
                PortClass::Terminal => 0,
                PortClass::Row => 1,
                PortClass::Column => 2,
                PortClass::Global => 3,
                PortClass::Unused => 4,
            }] += 1;
            if c != PortClass::Terminal && c != PortClass::Unused {
                let peer = t.peer[id];
                assert_ne!(peer, NONE);
                assert_eq!(t.peer[peer as usize], id as u32, "links are symmetric");
                assert_eq!(t.class[peer as usize], c, "both ends of a link have the same class");
                let (g1, g2) = (t.group_of(r), t.group_of(peer / t.radix));
                assert_eq!(c == PortClass::Global, g1 != g2);
            }
        }
        assert_eq!(n, [4, 7, 0, 4, 0]);
    }
    // exactly one global link between every pair of groups
    for g in 0..33 {
        for d in 0..33 {
            if g != d {
                assert_eq!(t.gateways(g, d).len(), 1);
            }
        }
    }
}

#[test]
fn aries_ports_and_links() {
    let t = Topology::new(TopoSpec::Aries { groups: 14, global_per_router: 10 });
    assert_eq!(t.routers_per_group, 96);
    assert_eq!(t.n_nodes, 14 * 384);
    assert_eq!(t.radix, 4 + 15 + 15 + 10);
    let mut per_pair = None;
    for g in 0..14 {
        for d in 0..14 {
            if g != d {
                let n = t.gateways(g, d).len();
                assert_eq!(*per_pair.get_or_insert(n), n);
            }
        }
    }
    assert_eq!(per_pair, Some(960 / 13));
    for r in 0..96 {
        let mut rows = 0;
        let mut cols = 0;
        for port in 0..t.radix {
            let id = (r * t.radix + port) as usize;
            match t.class[id] {
                PortClass::Row => {
                    rows += 1;
                    let far = t.peer[id] / t.radix;
                    assert_eq!(far / 16, r / 16, "row links stay in the chassis");
                }
                PortClass::Column => {
                    cols += 1;
                    let far = t.peer[id] / t.radix;
                    assert_eq!(far % 16, r % 16, "column links join the same slot");
                }
                _ => {}
            }
            let c = t.class[id];
            if c != PortClass::Terminal && c != PortClass::Unused {
                assert_eq!(t.peer[t.peer[id] as usize], id as u32);
            }
        }
        assert_eq!((rows, cols), (15, 15));
    }
    // 3 parallel column links per chassis pair
    let r = 5u32;
    let to_chassis_2: Vec<u32> = (0..t.radix)
        .filter(|&p| t.class[(r * t.radix + p) as usize] == PortClass::Column)
        .filter(|&p| t.peer[(r * t.radix + p) as usize] / t.radix == 2 * 16 + 5)
        .collect();
    assert_eq!(to_chassis_2.len(), 3);
}

#[test]
fn minimal_path_lengths() {
    let t = Topology::new(TopoSpec::Aries { groups: 4, global_per_router: 10 });
    let mut max = 0;
    for r in (0..t.n_routers).step_by(7) {
        for s in (0..t.n_routers).step_by(11) {
            let h = t.min_hops(r, s);
            max = max.max(h);
            if t.group_of(r) == t.group_of(s) {
                assert!(h <= 2);
            } else {
                assert!((1..=5).contains(&h));
            }
        }
    }
    assert!(max <= 3, "with hundreds of parallel global links some gateway is always close");
    // any hashed gateway choice gives a minimal route of at most 2 + 1 + 2 hops, and 5 occurs
    let mut worst = 0;
    for g in 1..4 {
        for &gp in t.gateways(0, g) {
            let far = t.far_router(gp);
            for r in [0u32, 17, 95] {
                worst = worst.max(t.intra_hops(r, gp / t.radix) + 1 + t.intra_hops(far, g * 96 + 40));
            }
        }
    }
    assert_eq!(worst, 5);
    let k = Topology::new(TopoSpec::booksim_k4());
    for r in 0..k.n_routers {
        for s in (0..k.n_routers).step_by(5) {
            let h = k.min_hops(r, s);
            assert!(h <= 3);
            if r != s && k.group_of(r) == k.group_of(s) {
                assert_eq!(h, 1);
            }
        }
    }
}

/// Send every (src, dst) pair of a sample one message and check all arrive, with the hop counts
/// each algorithm allows, and that credits are fully restored afterwards.
fn deliver_all(cfg: NetConfig, mode: Mode, transfer: Transfer) {
    let mut net = Net::new(cfg, 3);
    let n = net.topo.n_nodes;
    let mut posted = 0;
    for s in (0..n).step_by(5) {
        for d in (0..n).step_by(7) {
            if s != d {
                net.post(s, d, 200, transfer, mode, s, d, 0);
                posted += 1;
            }
        }
    }
    let mut arrived = 0;
    let mut completed = 0;
    while net.step(u64::MAX).is_some() {
        for note in net.notes.drain(..) {
            match note {
                aar_sim::Note::Arrived(_) => arrived += 1,
                aar_sim::Note::Completed(_) => completed += 1,
            }
        }
    }
    assert_eq!(completed, posted, "{mode:?}");
    if transfer == Transfer::Put {
        assert_eq!(arrived, posted);
    }
    assert_eq!(net.check_credits_drained(), 0, "credits restored ({mode:?})");
    assert_eq!(net.packets_in_flight(), 0);
}

#[test]
fn every_algorithm_delivers_every_packet() {
    for mode in Mode::ALL {
        deliver_all(small_kim(), mode, Transfer::Put);
        deliver_all(NetConfig::aries(3), mode, Transfer::Put);
    }
    deliver_all(NetConfig::aries(2), Mode::Adaptive1, Transfer::Get);
}

#[test]
fn no_deadlock_under_saturation() {
    // far beyond saturation, adversarial pattern, every algorithm: the network keeps delivering
    // and drains completely once injection stops.
    for mode in [Mode::Min, Mode::Val, Mode::Adaptive0, Mode::Adaptive1, Mode::Ugal, Mode::InOrder] {
        for pattern in [Pattern::Uniform, Pattern::WorstCase] {
            let cfg = small_kim();
            let r = run_synthetic(&cfg, &SynthParams { load: 1.0, pattern, mode, warmup: 500, measure: 1500, seed: 9 });
            assert!(r.accepted > 0.02, "{mode:?} {pattern:?} accepted {}", r.accepted);
        }
    }
    // drain: post a burst that overloads the network, then run until empty (bounded time)
    let mut net = Net::new(NetConfig::aries(3), 5);
    let n = net.topo.n_nodes;
    for s in 0..n {
        let d = (s + n / 3 + 1) % n;
        net.post(s, d, 64 * 40, Transfer::Put, Mode::Adaptive0, s, d, 0);
    }
    while net.step(u64::MAX).is_some() {
        net.notes.clear();
        assert!(net.now < 10_000_000_000, "not drained within 10 ms: deadlock?");
    }
    assert_eq!(net.packets_in_flight(), 0);
    assert_eq!(net.check_credits_drained(), 0);
}

#[test]
fn a_raw_packet_in_flight_keeps_no_message() {
    // Every node posts two synthetic packets: the first leaves at once and gives its message back,
    // the second waits behind it in the source queue and keeps its message until it leaves. The
    // memory of open-loop traffic is that of the packets in flight, not of a message besides each.
    let mut net = Net::new(NetConfig::aries(2), 7);
    let n = net.topo.n_nodes;
    for s in 0..n {
        for k in 1..=2 {
            net.post_raw(s, (s + k * (n / 2) + 1) % n, Mode::Adaptive0);
        }
    }
    assert_eq!(net.msgs.len(), n as usize, "one message per node, the queued packet's");
    while net.step(u64::MAX).is_some() {}
    assert_eq!(net.msgs.len(), n as usize, "no message made while they were in flight");
    assert_eq!((net.totals.packets_delivered, net.raw.lat_n), (2 * u64::from(n), 2 * u64::from(n)));
    assert_eq!(net.packets_in_flight(), 0);
}

#[test]
fn credit_conservation_during_run() {
    let mut net = Net::new(small_kim(), 11);
    let n = net.topo.n_nodes;
    for s in 0..n {
        for k in 1..4 {
            let d = (s + k * 13) % n;
            net.post(s, d, 64 * 8, Transfer::Put, Mode::Adaptive0, s, d, 0);
        }
    }
    let mut steps = 0;
    let mut t = 0;
    loop {
        t += 37;
        while net.step(t).is_some() {
            net.notes.clear();
        }
        assert!(net.check_credit_accounting(), "credits + buffered flits == capacity");
        steps += 1;
        if net.pending_events() == 0 {
            break;
        }
        assert!(steps < 1_000_000);
    }
    assert_eq!(net.check_credits_drained(), 0);
}

#[test]
fn same_seed_same_result() {
    let cfg = small_kim();
    let sp =
        SynthParams { load: 0.5, pattern: Pattern::Uniform, mode: Mode::Ugal, warmup: 200, measure: 800, seed: 42 };
    let a = run_synthetic(&cfg, &sp);
    let b = run_synthetic(&cfg, &sp);
    assert_eq!(a.packets_delivered, b.packets_delivered);
    assert_eq!(a.hops, b.hops);
    assert_eq!(a.events, b.events);
    assert_eq!(a.avg_latency.to_bits(), b.avg_latency.to_bits());
    let c = run_synthetic(&cfg, &SynthParams { seed: 43, ..sp });
    assert_ne!((a.events, a.hops), (c.events, c.hops));
}

#[test]
fn kim_worst_case_min_is_one_over_ap() {
    let cfg = small_kim(); // a*p = 8
    let r = run_synthetic(
        &cfg,
        &SynthParams { load: 0.5, pattern: Pattern::WorstCase, mode: Mode::Min, warmup: 1000, measure: 3000, seed: 1 },
    );
    assert!((r.accepted - 1.0 / 8.0).abs() < 0.01, "{}", r.accepted);
}

#[test]
fn the_work_counted_before_a_synthetic_run_is_the_packets_it_injects() {
    // Bernoulli injection: the count from nodes x load / packet flits x cycles is the mean of the
    // packets made, within a few percent at thousands of packets, all injected below saturation.
    for (cfg, flits) in [(small_kim(), 10.0), (NetConfig::aries(1), 5.0)] {
        let nodes = Topology::new(cfg.topo.clone()).n_nodes;
        for (load, warmup, measure) in [(0.3, 500, 2500), (0.9, 0, 3000), (0.6, 1000, 4000)] {
            let sp = SynthParams { load, pattern: Pattern::Uniform, mode: Mode::Ugal, warmup, measure, seed: 3 };
            let work = sp.work(&cfg, nodes);
            let per_cycle = f64::from(nodes) * (load / flits);
            let expected = per_cycle * (warmup + measure) as f64;
            assert_eq!(work.packets, expected as u64);
            let told = std::cell::RefCell::new(Vec::new());
            let r = aar_sim::synthetic::run_synthetic_told(&cfg, &sp, &|x| told.borrow_mut().push(x));
            let ratio = r.packets_injected as f64 / work.packets as f64;
            assert!((0.97..1.03).contains(&ratio), "{} of {} counted, load {load}", r.packets_injected, work.packets);
            // the memory grows with the packets of the first cycles only
            let early = (warmup + measure).min(aar_sim::synthetic::SynthWork::MEMORY_CYCLES);
            assert_eq!(work.early_packets, (per_cycle * early as f64) as u64);
            // told as it goes, in order, and the same run as untold
            let told = told.into_inner();
            assert!(!told.is_empty() && told.windows(2).all(|w| w[0] <= w[1]) && told.iter().all(|&x| x < 1.0));
            let untold = run_synthetic(&cfg, &sp);
            assert_eq!((untold.events, untold.hops, untold.packets_delivered), (r.events, r.hops, r.packets_delivered));
        }
    }
}
