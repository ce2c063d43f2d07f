//! The paper-scale suite's pieces on the real 1,024-rank job: the packed placement holds the
//! paper's allocation, a large run with the busy machine is deterministic, and the production
//! background offers the loads it documents.

use aar_sim::experiment::{Background, JobPattern, PRODUCTION_MIX};
use aar_sim::paper::{measure_background, Suite, ARMS, JOB_GROUPS, RANKS, ROUTERS};
use aar_sim::simulation::run_experiment;
use aar_sim::topology::Topology;
use aar_sim::workload::Workload;
use std::collections::{BTreeMap, BTreeSet};

#[test]
fn the_packed_job_is_1024_nodes_on_257_routers_over_6_groups() {
    let suite = Suite::full();
    let case = suite.cases.iter().find(|c| c.partner.is_none()).unwrap();
    let spec = suite.spec(case, 1, ARMS[0]);
    let topo = Topology::new(spec.net.topo.clone());
    let nodes = spec.placement.nodes(&topo, RANKS, &mut aar_sim::rng::Rng::new(9));
    assert_eq!(nodes.len(), RANKS as usize);
    assert_eq!(nodes.iter().collect::<BTreeSet<_>>().len(), nodes.len(), "one rank per node");
    let mut per_router: BTreeMap<u32, u32> = BTreeMap::new();
    for &n in &nodes {
        *per_router.entry(topo.router_of_node(n)).or_default() += 1;
    }
    assert_eq!(per_router.len(), ROUTERS as usize);
    let three = per_router.values().filter(|&&k| k == 3).count();
    assert_eq!((three, per_router.values().filter(|&&k| k == 4).count()), (4, ROUTERS as usize - 4));
    let mut per_group: BTreeMap<u32, u32> = BTreeMap::new();
    for &r in per_router.keys() {
        *per_group.entry(topo.group_of(r)).or_default() += 1;
    }
    assert_eq!(per_group.values().copied().collect::<Vec<_>>(), [43, 43, 43, 43, 43, 42]);
    assert_eq!(per_group.len() as u32, JOB_GROUPS);
    assert!(topo.groups > JOB_GROUPS, "the machine has groups the job does not use");
    // the job's routers reach every chassis of each group
    let chassis: BTreeSet<(u32, u32)> =
        per_router.keys().map(|&r| (topo.group_of(r), (r % topo.routers_per_group) / 16)).collect();
    assert_eq!(chassis.len(), 6 * JOB_GROUPS as usize);
    // the ping-pong partners: two hops away in rank 0's group, and in another group
    for case in suite.cases.iter().filter(|c| c.partner.is_some()) {
        let s = suite.spec(case, 1, ARMS[0]);
        let n = s.rank_nodes.as_ref().unwrap();
        assert!(s.check().is_ok());
        let (r0, r1) = (topo.router_of_node(n[0]), topo.router_of_node(n[1]));
        let same = topo.group_of(r0) == topo.group_of(r1);
        assert_eq!(same, case.bench.contains("one group"), "{}", case.bench);
        if same {
            assert_eq!(topo.min_hops(r0, r1), 2);
        }
    }
}

#[test]
fn a_paper_scale_run_in_the_busy_machine_is_deterministic() {
    let suite = Suite::full();
    let case = suite.cases.iter().find(|c| matches!(c.workload, Workload::Allreduce { .. })).unwrap();
    let mut spec = suite.spec(case, 7, ARMS[3]);
    spec.iterations = 3;
    let mut other = spec.clone();
    other.seed = 8;
    // The three runs at once, on threads of their own: each is one thread's work, and the test
    // was this binary's last thread running alone. Two runs side by side also meet any state
    // they would share.
    let (a, b, c) = std::thread::scope(|s| {
        let a = s.spawn(|| run_experiment(&spec, "a"));
        let b = s.spawn(|| run_experiment(&spec, "b"));
        let c = s.spawn(|| run_experiment(&other, "c"));
        (a.join().unwrap(), b.join().unwrap(), c.join().unwrap())
    });
    assert_eq!(a.records.len(), RANKS as usize);
    assert_eq!(a.iterations, b.iterations, "same seed, same iteration times and counter windows");
    assert_eq!((a.packets, a.hops, a.events), (b.packets, b.hops, b.events));
    assert_eq!(a.links, b.links);
    assert!(a.links.global > 0.0 && a.packets > 1_000_000, "the busy machine ran: {:?}", a.links);
    for (x, y) in a.records.iter().zip(&b.records) {
        assert_eq!(x.iterations, y.iterations, "rank {}", x.rank);
        assert_eq!((x.node, x.router, x.group), (y.node, y.router, y.group));
    }
    assert_ne!(a.iterations, c.iterations, "another seed is another run");
}

#[test]
fn the_production_background_offers_its_documented_loads() {
    let suite = Suite::full();
    let spec = suite.spec(&suite.cases[0], 3, ARMS[0]);
    let Background::Production { load, bytes } = spec.background else { panic!("the suite's background") };
    let r = measure_background(&spec, 40_000.0);
    assert_eq!(r.patterns.len(), PRODUCTION_MIX.len());
    let free = r.nodes - RANKS;
    let jobs = (free as usize).div_ceil(aar_sim::experiment::PRODUCTION_JOB_NODES);
    assert_eq!(r.patterns.iter().map(|p| p.jobs).sum::<usize>() + jobs / 5, jobs, "every fifth job idle");
    for (p, (pattern, share)) in r.patterns.iter().zip(PRODUCTION_MIX) {
        assert_eq!(p.documented, load * share, "{}", p.pattern);
        if pattern == JobPattern::Idle {
            assert_eq!((p.senders, p.measured), (0, 0.0));
            continue;
        }
        assert!(p.senders > 200, "{}: {} senders", p.pattern, p.senders);
        let err = (p.measured - p.documented).abs() / p.documented;
        assert!(err < 0.1, "{}: measured {} for {}", p.pattern, p.measured, p.documented);
    }
    // what the senders inject reaches the nodes: router-to-node channels carry the requests and
    // one response flit per packet (4 KiB: 320 + 64 flits per 320 requested)
    let packets = bytes.div_ceil(64) as f64;
    let expected = r.mean_load * (5.0 * packets + packets) / (5.0 * packets);
    assert!((r.links.terminal - expected).abs() < 0.1 * expected, "{} vs {expected}", r.links.terminal);
    assert!(r.links.global > 0.0 && r.links.row > 0.0 && r.links.column > 0.0, "{:?}", r.links);
}

#[test]
fn every_policy_runs_alone_and_the_runs_of_a_seed_meet_the_same_machine() {
    let suite = Suite::full();
    let runs = suite.runs();
    let once = suite.cases.iter().filter(|c| c.once).count();
    assert!(once >= 2, "the full suite has long cases");
    let arms = ARMS.len();
    let (first, rest) = runs.split_at(once * arms);
    for (c, s) in first {
        assert!(suite.cases[*c].once, "{} is not a long case but runs before one", suite.cases[*c].label());
        assert_eq!((s.arms.len(), s.iterations, s.seed), (1, 1, 1));
        // only an automatic policy gets the unmeasured iterations there: one, or three for the
        // alltoall, a collective call, whose three routings `steady` times first
        let automatic = s.arms[0].engine_policy().is_some_and(|p| p.is_automatic());
        let warmup = if suite.cases[*c].bench == "alltoall" { 3 } else { 1 };
        assert_eq!(s.warmup_iterations, if automatic { warmup } else { 0 }, "{}", s.arms[0].name());
    }
    for (c, s) in rest {
        let case = &suite.cases[*c];
        assert!(!case.once);
        assert_eq!(s.arms.len(), 1, "{}: one policy per run", case.label());
        // every policy runs the case's unmeasured iterations, so that the measured ones start
        // at the same moment of the background
        assert_eq!(s.warmup_iterations, case.warmup, "{}", case.label());
        assert!(case.warmup >= 1);
        assert_eq!(s.iterations, case.iterations.unwrap_or(suite.iterations_per_policy));
    }
    // every case has one run of each policy per seed, and the runs of a seed differ only in the
    // policy: the same background, placement, iterations and unmeasured iterations
    for (k, case) in suite.cases.iter().enumerate() {
        let of: Vec<_> = runs.iter().filter(|(c, _)| *c == k).map(|(_, s)| s).collect();
        assert_eq!(of.len() as u64, suite.runs_of(case), "{}", case.label());
        let seeds: BTreeSet<u64> = of.iter().map(|s| s.seed).collect();
        for seed in seeds {
            let same: Vec<_> = of.iter().filter(|s| s.seed == seed).collect();
            let mut policies: Vec<String> = same.iter().map(|s| s.arms[0].name()).collect();
            policies.sort();
            policies.dedup();
            assert_eq!(policies.len(), arms, "{} seed {seed}", case.label());
            for s in &same {
                assert_eq!(s.background, same[0].background);
                assert_eq!(s.rank_nodes, same[0].rank_nodes);
                assert_eq!(s.iterations, same[0].iterations);
                if !case.once {
                    assert_eq!(s.warmup_iterations, same[0].warmup_iterations);
                }
            }
        }
    }
    let runs_total: u64 = suite.cases.iter().map(|c| suite.runs_of(c)).sum();
    assert_eq!(runs.len() as u64, runs_total);
}

#[test]
fn parallel_runs_keep_the_input_order() {
    let items: Vec<u64> = (0..200).collect();
    let out = aar_sim::parallel::run_all(&items, "test", |&i, _| (i, (0..i * 1000).fold(0u64, |a, x| a ^ x)));
    assert_eq!(out.iter().map(|r| r.0).collect::<Vec<_>>(), items);
}
