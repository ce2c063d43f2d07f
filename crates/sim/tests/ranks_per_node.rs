//! Several ranks per node (`ExperimentSpec::ranks_per_node`, `aar sim --ranks-per-node`): the
//! ranks of a node share its NIC (one queue, one outstanding-packet window, one set of counters),
//! and messages between them go through shared memory, not the network.

use aar_engine::model::request_flits;
use aar_engine::Transfer;
use aar_sim::config::{Mode, NetConfig};
use aar_sim::error::SpecError;
use aar_sim::experiment::{ExperimentSpec, PolicySpec, RanksPerNode};
use aar_sim::simulation::{run_experiment, SHM_BYTES_PER_NS, SHM_LATENCY_NS};
use aar_sim::workload::{Placement, Workload};

fn spec(workload: Workload, ranks: u32, ranks_per_node: u32) -> ExperimentSpec {
    let mut s = ExperimentSpec::new(NetConfig::aries(1), workload, ranks, Placement::SameBlade);
    s.arms = vec![PolicySpec::Fixed(Mode::Min)];
    s.iterations = 3;
    s.ranks_per_node = ranks_per_node;
    s
}

/// An incast from the ranks of node 1 to rank 0 on node 0, with an outstanding-packet window of
/// one packet: every packet waits for the previous one's response, so a node's time is its
/// packets times one round trip. With 2 ranks per node, node 1 holds ranks 2 and 3 and sends
/// twice the packets of the 1-rank-per-node job through the one window: it takes about twice as
/// long, and both ranks read the same counters, the sum of their traffic. Rank 1, on node 0 with
/// rank 0, sends through shared memory: node 0 injects no request.
#[test]
fn the_ranks_of_a_node_share_its_nic_window_and_counters() {
    let bytes = 64 * 20;
    let run = |ranks, k| {
        let mut s = spec(Workload::Incast { bytes }, ranks, k);
        s.net.max_outstanding = 1;
        run_experiment(&s, "incast")
    };
    let alone = run(2, 1);
    let shared = run(4, 2);
    let nodes: Vec<u32> = shared.records.iter().map(|r| r.node).collect();
    assert_eq!(nodes, [0, 0, 1, 1], "consecutive ranks on one node");
    let flits = request_flits(bytes, Transfer::Put);
    assert_eq!(alone.records[1].counters.req_flits, 3 * flits);
    let (r2, r3) = (&shared.records[2], &shared.records[3]);
    assert_eq!(r2.counters, r3.counters, "one NIC, one set of counters");
    assert_eq!(r2.counters.req_flits, 2 * 3 * flits, "the sum of both ranks' traffic");
    assert_eq!(r2.counters.rsp_packets, 2 * 3 * 20);
    assert_eq!(shared.records[0].counters.req_flits, 0, "rank 1 to rank 0 is not a NIC transfer");
    assert_eq!((shared.records[1].intra_node_messages, shared.records[1].intra_node_bytes), (3, 3 * bytes));
    assert_eq!(r2.bytes_per_mode.iter().sum::<u64>(), 3 * bytes);
    assert_eq!(shared.records[1].bytes_per_mode.iter().sum::<u64>(), 0, "no routing mode for shared memory");
    for (a, b) in alone.iterations.iter().zip(&shared.iterations) {
        let ratio = b.ns / a.ns;
        assert!((1.9..=2.05).contains(&ratio), "{} ns alone, {} ns shared: {ratio}", a.ns, b.ns);
    }
}

/// A ping-pong between the two ranks of one node never touches the network: no packet, no
/// counter, and each way takes the shared-memory model's time.
#[test]
fn messages_between_ranks_of_one_node_do_not_touch_the_network() {
    let bytes = 4096;
    let mut s = spec(Workload::PingPong { bytes }, 2, 2);
    s.arms = vec![PolicySpec::Steady];
    let r = run_experiment(&s, "pp");
    assert_eq!(r.packets, 0);
    assert_eq!(r.events, 2 + 2 * 3, "the ranks' start and one delivery per message");
    for rec in &r.records {
        assert_eq!(rec.counters, Default::default());
        assert_eq!(rec.engine_decisions, 0, "libaar.so sees no uGNI post");
        assert_eq!(rec.messages_per_mode, [0; 8]);
        assert_eq!(rec.intra_node_messages, 3);
    }
    let one_way = s.net.ns_to_ticks(SHM_LATENCY_NS + bytes as f64 / SHM_BYTES_PER_NS);
    for it in &r.iterations {
        assert_eq!(it.ns, s.net.ticks_to_ns(2 * one_way));
    }
}

/// One rank per node is the default and what a spec without the field (an older JSON) means; it
/// leaves the experiment id and the results as they were.
#[test]
fn one_rank_per_node_is_the_default_and_changes_nothing() {
    let s = ExperimentSpec::new(
        NetConfig::aries(1),
        Workload::Halo3d { bytes: 4096, compute_ns: 0.0 },
        8,
        Placement::SameGroup,
    );
    assert_eq!(s.ranks_per_node, 1);
    let json = serde_json::to_string(&s).unwrap();
    assert!(!json.contains("ranks_per_node"), "{json}");
    let back: ExperimentSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, s);
    assert_eq!(s.experiment_id(), "sim-halo3d-4096_same-group_8ranks_none_seed1");
    let mut four = s.clone();
    four.ranks_per_node = 4;
    assert_eq!(four.experiment_id(), "sim-halo3d-4096_same-group_8ranksx4_none_seed1");
    let a = run_experiment(&s, "x");
    let b = run_experiment(&back, "x");
    assert_eq!((a.packets, a.events), (b.packets, b.events));
    let nodes: std::collections::BTreeSet<u32> = a.records.iter().map(|r| r.node).collect();
    assert_eq!(nodes.len(), 8);
    let shared = run_experiment(&four, "x");
    let nodes: Vec<u32> = shared.records.iter().map(|r| r.node).collect();
    assert_eq!(nodes[..4], [nodes[0]; 4]);
    assert_eq!(nodes[4..], [nodes[4]; 4]);
    assert_ne!(nodes[0], nodes[4]);
}

#[test]
fn ranks_per_node_that_do_not_fill_nodes_or_the_placement_are_refused() {
    assert_eq!("16".parse::<RanksPerNode>(), Ok(RanksPerNode(16)));
    for bad in ["0", "65", "-1", "four", ""] {
        let e = bad.parse::<RanksPerNode>().unwrap_err().to_string();
        assert!(e.contains("ranks per node") && e.contains("1 to 64"), "{bad}: {e}");
    }
    let check = |ranks, k, placement| {
        let mut s = ExperimentSpec::new(NetConfig::aries(1), Workload::Barrier, ranks, placement);
        s.ranks_per_node = k;
        s.check()
    };
    assert_eq!(check(16, 4, Placement::SameBlade), Ok(()), "4 nodes of 4 ranks on one router");
    let e = check(18, 4, Placement::SameBlade).unwrap_err();
    assert_eq!(e, SpecError::RanksPerNode { ranks: 18, ranks_per_node: 4, max: 64 });
    assert!(e.to_string().contains("18 ranks do not fill nodes of 4 ranks"), "{e}");
    assert!(check(16, 0, Placement::SameBlade).is_err());
    let e = check(32, 4, Placement::SameBlade).unwrap_err();
    let larger = Placement::SameBlade.larger();
    assert_eq!(e, SpecError::NodesFull { placement: "same-blade", ranks: 32, ranks_per_node: 4, max: 4, larger });
    assert!(e.to_string().contains("32 ranks at 4 per node need 8"), "{e}");
    assert!(e.to_string().ends_with(&format!("use fewer ranks, more ranks per node, or {larger}")), "{e}");
    // at the most ranks a node holds, only fewer ranks or a larger placement fit the job
    let e = check(512, 64, Placement::SameBlade).unwrap_err().to_string();
    assert!(e.ends_with(&format!("need 8: use fewer ranks, or {larger}")), "{e}");
    // nodes given rank by rank: at most `ranks_per_node` ranks on one node
    let mut s = ExperimentSpec::new(NetConfig::aries(1), Workload::Barrier, 4, Placement::SameBlade);
    s.ranks_per_node = 2;
    s.rank_nodes = Some(vec![0, 0, 3, 3]);
    assert_eq!(s.check(), Ok(()));
    s.rank_nodes = Some(vec![0, 0, 0, 3]);
    assert!(matches!(s.check(), Err(SpecError::RankNodes { .. })));
}
