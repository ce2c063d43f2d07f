//! Small end-to-end experiments: workloads complete, the engine runs in every rank, records are
//! produced, results are deterministic, A/B arms follow the engine's schedule, and the per-rank
//! iteration rows add up.

use aar_sim::config::{Mode, NetConfig};
use aar_sim::experiment::{arm_schedule, AbOrder, Background, ExperimentSpec, PolicySpec};
use aar_sim::simulation::run_experiment;
use aar_sim::topology::TopoSpec;
use aar_sim::workload::{Placement, Workload};

fn small_net() -> NetConfig {
    let mut c = NetConfig::aries(3);
    c.topo = TopoSpec::Aries { groups: 3, global_per_router: 2 };
    c
}

#[test]
fn every_workload_completes_on_every_placement() {
    let wls = [
        Workload::PingPong { bytes: 4096 },
        Workload::Allreduce { bytes: 512 },
        Workload::Alltoall { bytes: 256 },
        Workload::Barrier,
        Workload::Broadcast { bytes: 1024 },
        Workload::Halo3d { bytes: 512, compute_ns: 200.0 },
        Workload::Sweep3d { bytes: 256, compute_ns: 100.0 },
        Workload::RandomRingLatency,
        Workload::RandomRingBandwidth { bytes: 2048, outstanding: 4 },
        Workload::Incast { bytes: 512 },
        Workload::Bcast { bytes: 512 },
    ];
    for wl in wls {
        for (pl, n) in [
            (Placement::SameBlade, 4),
            (Placement::SameGroup, 12),
            (Placement::AcrossGroups, 7),
            (Placement::Scattered, 8),
        ] {
            let n = if matches!(wl, Workload::PingPong { .. }) { 2 } else { n };
            let mut s = ExperimentSpec::new(small_net(), wl.clone(), n, pl);
            s.iterations = 3;
            let r = run_experiment(&s, "t");
            assert_eq!(r.iterations.len(), 3, "{wl:?} {pl:?}");
            assert!(r.iterations.iter().all(|i| i.ns > 0.0), "{wl:?} {pl:?}");
            assert_eq!(r.records.len(), n as usize);
        }
    }
}

#[test]
fn engine_runs_in_every_rank_and_ab_arms_alternate() {
    let mut s = ExperimentSpec::new(small_net(), Workload::Alltoall { bytes: 8192 }, 6, Placement::Scattered);
    s.arms = vec![PolicySpec::Auto, PolicySpec::Fixed(Mode::Adaptive3)];
    s.iterations = 6;
    s.background = Background::Uniform { load: 0.3, bytes: 2048 };
    s.background_nodes = 8;
    let r = run_experiment(&s, "a2a");
    let arms: Vec<&str> = r.iterations.iter().map(|i| i.arm.as_str()).collect();
    assert_eq!(arms, ["auto", "ADAPTIVE3", "auto", "ADAPTIVE3", "auto", "ADAPTIVE3"]);
    for rec in &r.records {
        // 5 messages of 8 KiB per iteration cross the 4 KiB threshold: the engine decides and reads counters
        assert!(rec.engine_decisions > 0, "rank {} made no engine decision", rec.rank);
        assert!(rec.windows_valid > 0);
        let msgs: u64 = rec.messages_per_mode.iter().sum();
        assert_eq!(msgs, 5 * 6);
        assert!(rec.counters.req_flits > 0 && rec.counters.rsp_packets > 0);
        let json = serde_json::to_string(rec).unwrap();
        assert!(json.contains("\"schema\":\"aar-sim-rank/2\""));
    }
    // ADAPTIVE3 arm: the engine maps the fixed policy to the ADAPTIVE3 mode
    assert!(r.records.iter().all(|rec| rec.messages_per_mode[Mode::Adaptive3 as usize] >= 15));
}

#[test]
fn experiments_are_deterministic() {
    let mut s = ExperimentSpec::new(small_net(), Workload::PingPong { bytes: 65536 }, 2, Placement::AcrossGroups);
    s.arms = vec![PolicySpec::Auto, PolicySpec::Fixed(Mode::Adaptive0)];
    s.iterations = 4;
    s.background = Background::Congestors { bytes: 1024 };
    s.background_nodes = 30;
    let a = run_experiment(&s, "x");
    let b = run_experiment(&s, "x");
    assert_eq!(a.packets, b.packets);
    assert_eq!(a.events, b.events);
    let ta: Vec<u64> = a.iterations.iter().map(|i| i.ns.to_bits()).collect();
    let tb: Vec<u64> = b.iterations.iter().map(|i| i.ns.to_bits()).collect();
    assert_eq!(ta, tb);
}

#[test]
fn small_messages_are_faster_with_high_bias_between_groups() {
    // a small end-to-end A/B experiment: latency-bound alltoall, minimal paths are shorter
    let mut s = ExperimentSpec::new(small_net(), Workload::Alltoall { bytes: 64 }, 6, Placement::AcrossGroups);
    s.arms = vec![PolicySpec::Fixed(Mode::Adaptive0), PolicySpec::Fixed(Mode::Adaptive3)];
    s.iterations = 8;
    s.background = Background::Uniform { load: 0.3, bytes: 4096 };
    s.background_nodes = 16;
    let r = run_experiment(&s, "a2a");
    let med = |arm: &str| aar_stats::summarize(&r.times(arm)).median;
    assert!(med("ADAPTIVE3") < med("ADAPTIVE0"), "{} vs {}", med("ADAPTIVE3"), med("ADAPTIVE0"));
}

#[test]
fn arms_follow_the_engine_schedule_and_rows_add_up_to_the_totals() {
    let arms = vec![PolicySpec::Auto, PolicySpec::Fixed(Mode::Adaptive0), PolicySpec::Fixed(Mode::Min)];
    let mut s = ExperimentSpec::new(small_net(), Workload::Alltoall { bytes: 8192 }, 4, Placement::Scattered);
    s.arms = arms.clone();
    s.order = AbOrder::Shuffled(7);
    s.iterations = 9;
    s.warmup_iterations = 2;
    let r = run_experiment(&s, "a2a");
    let schedule = arm_schedule(&arms, s.order);
    let expected: Vec<String> = (2..11).map(|i| arms[schedule.index_at(i)].name()).collect();
    let got: Vec<String> = r.iterations.iter().map(|i| i.arm.clone()).collect();
    assert_eq!(got, expected);
    assert_ne!(expected[..3], expected[3..6], "shuffled, not round-robin (seed 7 draws different blocks)");
    for rec in &r.records {
        assert_eq!(rec.experiment, "sim-alltoall-8192_scattered_4ranks_none_seed1");
        assert_eq!(rec.order, "shuffled:7");
        assert_eq!(rec.label.as_deref(), Some("isolated"));
        let rows: Vec<_> = rec.rows().collect();
        assert_eq!(rows.iter().map(|r| r.i).collect::<Vec<_>>(), (2..11).collect::<Vec<_>>());
        assert_eq!(rows.iter().map(|r| r.policy.clone()).collect::<Vec<_>>(), expected);
        for m in 0..rec.messages_per_mode.len() {
            assert_eq!(rows.iter().map(|r| r.messages[m]).sum::<u64>(), rec.messages_per_mode[m]);
            assert_eq!(rows.iter().map(|r| r.bytes[m]).sum::<u64>(), rec.bytes_per_mode[m]);
        }
        for (row, arm) in rows.iter().zip(&expected) {
            assert!(row.start_ns < row.end_ns);
            assert_eq!(row.messages.iter().sum::<u64>(), 3, "3 sends per alltoall iteration");
            // MIN_HASH is not an engine policy: the rank's messages keep the requested mode
            assert_eq!(row.messages[Mode::Min as usize] == 3, arm == "MIN_HASH", "{row:?}");
            assert!(row.latency_us.unwrap() > 0.1 && row.stall_ratio.is_some(), "{row:?}");
        }
        assert!(rows.windows(2).all(|w| w[0].end_ns <= w[1].start_ns), "iterations follow each other");
    }
}

#[test]
fn engine_decisions_and_switches_are_counted_per_iteration() {
    let mut s = ExperimentSpec::new(small_net(), Workload::Alltoall { bytes: 8192 }, 6, Placement::Scattered);
    s.arms = vec![PolicySpec::Auto, PolicySpec::Fixed(Mode::Adaptive3)];
    s.iterations = 6;
    s.background = Background::Uniform { load: 0.3, bytes: 2048 };
    s.background_nodes = 8;
    let r = run_experiment(&s, "a2a");
    for rec in &r.records {
        assert_eq!(rec.label, None, "open-loop background: neither isolated nor GPCNeT-congested");
        let rows: Vec<_> = rec.rows().collect();
        assert_eq!(rows.iter().map(|r| r.decisions).sum::<u64>(), rec.engine_decisions);
        let switches = rec.switches_to_low_latency + rec.switches_to_low_stall;
        assert_eq!(rows.iter().map(|r| r.switches).sum::<u64>(), switches);
        assert!(rows.iter().filter(|r| r.policy == "auto").all(|r| r.decisions > 0));
    }
}

#[test]
fn gpcnet_congestors_label_the_run_congested_and_seeds_stay_apart() {
    let mut s = ExperimentSpec::new(small_net(), Workload::RandomRingLatency, 4, Placement::AcrossGroups);
    s.iterations = 2;
    s.background = Background::Congestors { bytes: 1024 };
    s.background_nodes = 30;
    let r = run_experiment(&s, "rr");
    assert!(r.records.iter().all(|rec| rec.label.as_deref() == Some("congested")));
    assert_eq!(r.records[0].experiment, "sim-rr-latency_across-groups_4ranks_congestors-1024_seed1");
    // too few nodes for the three congestor jobs: nothing runs, and the label says so
    s.background_nodes = 3;
    let r = run_experiment(&s, "rr");
    assert!(r.records.iter().all(|rec| rec.label.as_deref() == Some("isolated")));
    s.seed = 2;
    assert_ne!(run_experiment(&s, "rr").records[0].experiment, r.records[0].experiment);
}

/// The mechanism behind SC'19 Fig. 7: a NIC streaming a large message to another router of its
/// group under High Bias keeps asking for the few minimal output ports, its packets queue in the
/// processor tile's FIFO and the NIC is back-pressured (stalled cycles per request flit well
/// above zero); plain Adaptive spreads the same packets over non-minimal ports and stalls much
/// less, and is faster for it. Same seed, same counters.
#[test]
fn high_bias_stalls_the_nic_more_than_adaptive_inside_a_group() {
    let mut s = ExperimentSpec::new(small_net(), Workload::PingPong { bytes: 1 << 20 }, 2, Placement::SameGroup);
    s.arms = vec![PolicySpec::Fixed(Mode::Adaptive0), PolicySpec::Fixed(Mode::Adaptive3)];
    s.iterations = 4;
    let r = run_experiment(&s, "stalls");
    let stall = |arm: &str| r.windows(arm).iter().map(|w| w.0).sum::<f64>() / 2.0;
    let time = |arm: &str| r.times(arm).iter().sum::<f64>() / 2.0;
    let (s0, s3) = (stall("ADAPTIVE0"), stall("ADAPTIVE3"));
    assert!(s3 > 0.1, "High Bias stalls {s3} cycles per flit");
    assert!(s3 > 5.0 * s0, "High Bias {s3} vs Adaptive {s0} stalled cycles per flit");
    assert!(time("ADAPTIVE0") < time("ADAPTIVE3"));
    let again = run_experiment(&s, "stalls");
    assert_eq!(r.windows("ADAPTIVE3"), again.windows("ADAPTIVE3"));
    assert_eq!(r.times("ADAPTIVE0"), again.times("ADAPTIVE0"));
}

#[test]
fn synchronized_iterations_start_together_when_the_last_rank_ends() {
    // sweep3d is a wavefront: ranks end an iteration at different times, so without the barrier
    // the ranks start the next one at different times too.
    let mut s = ExperimentSpec::new(small_net(), "sweep3d:4K".parse().unwrap(), 8, Placement::Scattered);
    s.iterations = 4;
    let starts = |s: &ExperimentSpec| -> Vec<Vec<u64>> {
        let r = run_experiment(s, "sweep");
        (0..4).map(|i| r.records.iter().map(|rec| rec.rows().nth(i).unwrap().start_ns).collect()).collect()
    };
    let ends = |s: &ExperimentSpec| -> Vec<u64> {
        let r = run_experiment(s, "sweep");
        (0..4).map(|i| r.records.iter().map(|rec| rec.rows().nth(i).unwrap().end_ns).max().unwrap()).collect()
    };
    let free = starts(&s);
    assert!(free[1..].iter().any(|it| it.iter().min() != it.iter().max()), "skewed starts without it: {free:?}");
    s.synchronized_iterations = true;
    let (together, last_end) = (starts(&s), ends(&s));
    for i in 1..4 {
        assert!(
            together[i].iter().all(|&t| t == last_end[i - 1]),
            "iteration {i}: {:?} vs {}",
            together[i],
            last_end[i - 1]
        );
    }
}

#[test]
fn the_window_sets_how_often_the_ranks_read_their_counters() {
    let mut s = ExperimentSpec::new(small_net(), Workload::Alltoall { bytes: 65536 }, 4, Placement::Scattered);
    s.iterations = 16;
    s.arms = vec![PolicySpec::Fixed(Mode::Adaptive0)];
    let windows = |s: &ExperimentSpec| {
        let r = run_experiment(s, "a2a");
        let sum = |f: fn(&aar_sim::record::RankRecord) -> u64| r.records.iter().map(f).sum::<u64>();
        (sum(|r| r.windows_valid + r.windows_discarded), sum(|r| r.engine_decisions))
    };
    // A read closes a window: one per decision, or one per 8 (the first read opens the first),
    // and one at the start of every iteration after the first (the boundary closes the window).
    s.window_decisions = Some(1);
    let (every, decisions) = windows(&s);
    let boundaries = 4 * 15;
    assert_eq!(every, decisions - 4 + boundaries, "one window per decision after each rank's first, one per boundary");
    s.window_decisions = Some(8);
    let (eighth, same) = windows(&s);
    assert_eq!(same, decisions);
    assert!((eighth - boundaries) * 4 < every - boundaries, "window 8: {eighth} windows of {decisions} decisions");
}

/// Under `steady` each allreduce is one collective call: the first three calls try `steady`'s own
/// decisions, every message Adaptive, every message High Bias, each rank timing its call; the
/// fourth takes the routing of the first try (in that order) within 5 % of the fastest, so that
/// ranks whose calls took about the same time agree.
#[test]
fn steady_routes_each_collective_call_as_a_whole_after_trying_each_routing() {
    let mut s = ExperimentSpec::new(small_net(), Workload::Allreduce { bytes: 16384 }, 16, Placement::Scattered);
    s.arms = vec![PolicySpec::Steady];
    s.iterations = 6;
    s.synchronized_iterations = true;
    s.background = Background::Uniform { load: 0.3, bytes: 4096 };
    s.background_nodes = 32;
    let r = run_experiment(&s, "allreduce");
    let (a0, a3) = (Mode::Adaptive0 as usize, Mode::Adaptive3 as usize);
    let only =
        |bytes: &[u64; aar_sim::config::N_MODES], m: usize| bytes[m] > 0 && bytes.iter().sum::<u64>() == bytes[m];
    let mut chose = [0; 3];
    for rec in &r.records {
        let it = &rec.iterations;
        assert_eq!(it.len(), 6);
        assert!(only(&it[1].bytes, a0), "rank {}: the second call all ADAPTIVE0: {:?}", rec.rank, it[1].bytes);
        assert!(only(&it[2].bytes, a3), "rank {}: the third call all ADAPTIVE3: {:?}", rec.rank, it[2].bytes);
        // the call is the iteration: its time is the rank's iteration time
        let time = |k: usize| (it[k].end_ns - it[k].start_ns) as f64;
        let fastest = (0..3).map(time).fold(f64::INFINITY, f64::min);
        let choice = (0..3).find(|&k| (1.0 - aar_engine::calls::HYSTERESIS) * time(k) <= fastest).unwrap();
        chose[choice] += 1;
        // (each later call's time updates its routing's, so the choice may move after it)
        let fourth = &it[3].bytes;
        match choice {
            1 => assert!(only(fourth, a0), "rank {}: {fourth:?}", rec.rank),
            2 => assert!(only(fourth, a3), "rank {}: {fourth:?}", rec.rank),
            _ => assert!(!only(fourth, a0), "rank {}: its own decisions: {fourth:?}", rec.rank),
        }
    }
    // the ranks' calls take about the same time: most choose alike
    assert!(chose.iter().any(|&c| c >= 12), "{chose:?}");
}

/// A barrier carries no payload, so `steady` does not try routings on it: alone on the same
/// network, it sends every message of every barrier as `auto` does, at the same moments.
#[test]
fn steady_does_not_route_a_barrier_as_a_whole() {
    let run = |arm: PolicySpec| {
        let mut s = ExperimentSpec::new(small_net(), Workload::Barrier, 16, Placement::Scattered);
        s.arms = vec![arm];
        s.iterations = 6;
        s.synchronized_iterations = true;
        s.background = Background::Uniform { load: 0.3, bytes: 4096 };
        s.background_nodes = 32;
        run_experiment(&s, "barrier").records
    };
    let (steady, auto) = (run(PolicySpec::Steady), run(PolicySpec::Auto));
    assert_eq!(steady.len(), 16);
    for (s, a) in steady.iter().zip(&auto) {
        assert_eq!(s.iterations.len(), 6);
        for (k, (si, ai)) in s.iterations.iter().zip(&a.iterations).enumerate() {
            assert_eq!(si.bytes, ai.bytes, "rank {} call {k}: the same routing", s.rank);
            assert_eq!((si.start_ns, si.end_ns), (ai.start_ns, ai.end_ns), "rank {} call {k}", s.rank);
        }
    }
}

#[test]
fn the_work_counted_before_a_run_is_the_packets_it_delivers() {
    // Without a background every packet delivered is the job's: the count from the workload's
    // phases must be the simulated one, shared-memory messages (two ranks per node) excluded.
    let wls = [
        Workload::PingPong { bytes: 4096 },
        Workload::Allreduce { bytes: 512 },
        Workload::Alltoall { bytes: 4096 },
        Workload::Barrier,
        Workload::Halo3d { bytes: 512, compute_ns: 200.0 },
        Workload::Sweep3d { bytes: 256, compute_ns: 100.0 },
        Workload::Incast { bytes: 512 },
    ];
    for wl in wls {
        for per_node in [1, 2] {
            let ranks = if matches!(wl, Workload::PingPong { .. }) { 2 * per_node } else { 8 };
            let mut s = ExperimentSpec::new(small_net(), wl.clone(), ranks, Placement::Scattered);
            (s.iterations, s.warmup_iterations, s.ranks_per_node) = (3, 1, per_node);
            let work = s.work(u64::MAX);
            let r = run_experiment(&s, "t");
            assert_eq!(work.packets, r.packets, "{wl:?} x{per_node}");
            assert_eq!(work.rows, u64::from(ranks) * 3);
            assert!(r.sim_time_ns >= work.min_sim_ns, "{wl:?} x{per_node}: {} < {}", r.sim_time_ns, work.min_sim_ns);
            // a background without traffic adds none: still exact
            s.background = "uniform:0".parse().unwrap();
            assert_eq!(s.work(u64::MAX).packets, run_experiment(&s, "t").packets, "{wl:?} x{per_node} with uniform:0");
        }
    }
    let mut s = ExperimentSpec::new(small_net(), Workload::Alltoall { bytes: 8 }, 8, Placement::Scattered);
    s.ranks_per_node = 2;
    assert_eq!(s.work(u64::MAX).messages, 8 * 7, "every message, shared memory's too");
}

#[test]
fn the_work_is_counted_only_as_far_as_the_memory_given() {
    // 64 ranks of an alltoall: 4,032 messages of 150 bytes and 64 rows of 512 bytes
    let s = ExperimentSpec::new(small_net(), Workload::Alltoall { bytes: 8 }, 64, Placement::Scattered);
    let all = s.work(u64::MAX);
    assert_eq!((all.messages, all.cut), (64 * 63, false));
    assert_eq!(s.work(all.memory()), all, "what fits is counted whole");
    // a tenth of that memory: the counting stops at the first rank past it, its counts lower bounds
    let part = s.work(all.memory() / 10);
    assert!(part.cut, "{part:?}");
    assert!(part.memory() > all.memory() / 10 && part.messages < all.messages / 5, "{part:?}");
    assert!(part.packets < all.packets && part.rows == all.rows, "{part:?}");
}

#[test]
fn work_past_the_largest_count_is_said_as_the_largest_not_wrapped() {
    // 2,400 ranks of an alltoall of 1 GiB messages: 5,757,600 messages of 2^24 packets an
    // iteration, each with its response; over 100,001 iterations more packets than a u64 holds.
    // The count is a lower bound: it stays at the largest, where it wrapped to a smaller one
    // (9.4e17 said for an alltoall of 4,096 ranks, a hundredth of its work).
    let net = NetConfig::aries(8);
    let mut s = ExperimentSpec::new(net, Workload::Alltoall { bytes: 1 << 30 }, 2400, Placement::Scattered);
    (s.iterations, s.warmup_iterations) = (1, 0);
    let one = s.work(u64::MAX).packets;
    assert!(one > u64::MAX / 100_001, "{one}: not past the largest count at 100,001 iterations");
    s.warmup_iterations = 100_000;
    assert_eq!(s.work(u64::MAX).packets, u64::MAX);
}

#[test]
fn the_background_counted_before_a_run_is_what_it_delivers_at_its_load() {
    // The background's packets are counted at its load over the least time the run takes (its
    // lead, then the job's flits at a flit a NIC cycle): the run takes longer, and its background
    // delivers at the same rate all along.
    for background in ["uniform:0.3:4K", "worst-case:0.1:64", "production:0.4:1K"] {
        let mut s = ExperimentSpec::new(small_net(), Workload::PingPong { bytes: 64 << 10 }, 2, Placement::Scattered);
        (s.background, s.background_nodes, s.background_local) = (background.parse().unwrap(), 150, false);
        s.iterations = 2;
        let work = s.work(u64::MAX);
        let job = ExperimentSpec { background: Background::None, ..s.clone() }.work(u64::MAX).packets;
        assert_eq!(work.packets, job + work.background_packets, "{background}");
        let r = run_experiment(&s, "t");
        assert!(r.sim_time_ns >= work.min_sim_ns, "{background}: {} < {}", r.sim_time_ns, work.min_sim_ns);
        let rate = work.background_packets as f64 / work.min_sim_ns;
        let delivered = (r.packets - job) as f64 / r.sim_time_ns;
        assert!((delivered / rate - 1.0).abs() < 0.1, "{background}: {delivered} packets/ns delivered, {rate} counted");
    }
    // the congestors' pace is the network's: not counted
    let mut s = ExperimentSpec::new(small_net(), Workload::Barrier, 2, Placement::Scattered);
    s.background = "congestors".parse().unwrap();
    assert_eq!(s.work(u64::MAX).background_packets, 0);
}

#[test]
fn a_run_stopped_at_its_packets_keeps_the_iterations_every_rank_completed() {
    use aar_sim::simulation::{Simulation, Watch};
    // an incast: the senders end each iteration long before its root does
    let mut s = ExperimentSpec::new(small_net(), Workload::Incast { bytes: 4096 }, 6, Placement::Scattered);
    (s.iterations, s.warmup_iterations) = (8, 1);
    s.arms = vec![PolicySpec::Auto, PolicySpec::Fixed(Mode::Adaptive3)];
    let full = run_experiment(&s, "t");
    assert!(!full.stopped);
    // stops all through the run: some fall where a few ranks have ended an iteration the others
    // are still in, which must not be kept
    let mut kept = Vec::new();
    for k in 1..24 {
        let mut seen = Vec::new();
        let max = full.packets * k / 24;
        let watch = Watch { max_packets: Some(max), progress: &mut |p| seen.push(*p) };
        let part = Simulation::build(&s).run_watched("t".into(), watch);
        assert!(part.stopped && part.packets >= max && part.packets < full.packets);
        let done = part.iterations.len();
        assert!(done < 8, "{done} of 8 measured iterations");
        for (i, (a, b)) in part.iterations.iter().zip(&full.iterations).enumerate() {
            assert_eq!((a.iteration, &a.arm, a.ns), (b.iteration, &b.arm, b.ns), "iteration {i}");
        }
        for (a, b) in part.records.iter().zip(&full.records) {
            // every rank keeps the same complete iterations, as the full run recorded them
            assert_eq!(a.iterations.len(), done, "rank {} stopped at {max}", a.rank);
            let rows = |r: &aar_sim::record::RankRecord| {
                r.rows().take(done).map(|row| serde_json::to_string(&row).unwrap()).collect::<Vec<_>>()
            };
            assert_eq!(rows(a), rows(b), "rank {}", a.rank);
        }
        let last = seen.last().expect("told at the end");
        assert_eq!((last.packets, last.iterations), (part.packets, 9));
        // the warm-up iteration counts in the progress, not in the records
        let told = last.iterations_done as usize;
        assert!(told == done + 1 || (done, told) == (0, 0), "{told} done, {done} measured");
        kept.push(done);
        assert!(seen.windows(2).all(|w| w[0].iterations_done <= w[1].iterations_done && w[0].events <= w[1].events));
    }
    assert!(kept.iter().any(|&d| d > 1), "some stops keep iterations: {kept:?}");
}
