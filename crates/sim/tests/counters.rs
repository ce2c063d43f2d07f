//! NIC counters on hand-checkable cases.

use aar_engine::Transfer;
use aar_sim::config::{Mode, NetConfig};
use aar_sim::net::{Net, Note};
use aar_sim::validate::analytic_latency;

fn drain(net: &mut Net) -> Vec<Note> {
    let mut v = Vec::new();
    while net.step(u64::MAX).is_some() {
        v.append(&mut net.notes);
    }
    v
}

#[test]
fn one_put_packet_same_router() {
    let cfg = NetConfig::aries(1);
    let mut net = Net::new(cfg.clone(), 1);
    net.post(0, 1, 64, Transfer::Put, Mode::Adaptive0, 0, 1, 0);
    let notes = drain(&mut net);
    assert_eq!(notes.len(), 2);
    let c = net.counters(0);
    assert_eq!(c.req_flits, 5, "1 header + 4 payload flits per 64 B");
    assert_eq!(c.req_packets, 1);
    assert_eq!(c.req_stalled, 0);
    assert_eq!(c.rsp_packets, 1);
    // request (5 flits) there, 1-flit response back, both through one router
    let rtt = analytic_latency(&cfg, &[], 5) + analytic_latency(&cfg, &[], 1);
    assert_eq!(c.rsp_latency, rtt / cfg.nic_cycle);
    // the target NIC sent only a response: no request counters there
    let t = net.counters(1);
    assert_eq!((t.req_flits, t.rsp_packets), (0, 0));
}

#[test]
fn get_requests_are_one_flit() {
    let mut net = Net::new(NetConfig::aries(1), 1);
    net.post(0, 5, 1000, Transfer::Get, Mode::Adaptive3, 0, 1, 0);
    drain(&mut net);
    let c = net.counters(0);
    assert_eq!(c.req_packets, 16); // ceil(1000 / 64)
    assert_eq!(c.req_flits, 16);
    assert_eq!(c.rsp_packets, 16);
    // PUT of the same size: 15 full packets (5 flits) + one of 40 B (1 + 3 flits)
    let mut net = Net::new(NetConfig::aries(1), 1);
    net.post(0, 5, 1000, Transfer::Put, Mode::Adaptive3, 0, 1, 0);
    drain(&mut net);
    assert_eq!(net.counters(0).req_flits, 15 * 5 + 4);
}

#[test]
fn request_flits_are_the_engine_model_s() {
    for bytes in [0, 8, 64, 1000, 4097] {
        for transfer in [Transfer::Put, Transfer::Get] {
            let mut net = Net::new(NetConfig::aries(1), 1);
            net.post(0, 5, bytes, transfer, Mode::Adaptive3, 0, 1, 0);
            drain(&mut net);
            let c = net.counters(0);
            assert_eq!(c.req_flits, aar_engine::model::request_flits(bytes, transfer), "{bytes} B {transfer:?}");
            assert_eq!(c.rsp_packets, aar_engine::model::packets(bytes));
        }
    }
}

#[test]
fn stall_is_counted_when_credits_block_a_ready_flit() {
    // terminal input buffer of exactly one packet: the second packet of a 128-byte PUT waits for
    // the first one's credit: 2 * terminal latency + flit time + router delay
    let mut cfg = NetConfig::aries(1);
    cfg.vc_buf[0] = 5;
    cfg.shared_buf[0] = 0;
    let mut net = Net::new(cfg.clone(), 1);
    net.post(0, 1, 128, Transfer::Put, Mode::Min, 0, 1, 0);
    drain(&mut net);
    let c = net.counters(0);
    let stall = 2 * cfg.latency[0] + cfg.flit_time[0] + cfg.router_delay;
    assert_eq!(c.req_stalled, stall / cfg.nic_cycle);
    assert_eq!(c.req_stalled, 73);
    assert_eq!(c.req_flits, 10);
}

#[test]
fn counters_are_shared_by_ranks_on_a_node_and_cumulative() {
    let mut net = Net::new(NetConfig::aries(1), 1);
    net.post(0, 4, 64, Transfer::Put, Mode::Min, 0, 9, 0);
    net.post(0, 8, 64, Transfer::Put, Mode::Min, 1, 9, 0); // another rank on node 0
    drain(&mut net);
    let a = net.counters(0);
    assert_eq!((a.req_flits, a.rsp_packets), (10, 2));
    net.post(0, 4, 64, Transfer::Put, Mode::Min, 0, 9, 0);
    drain(&mut net);
    let b = net.counters(0);
    assert_eq!((b.req_flits, b.rsp_packets), (15, 3));
    assert!(b.rsp_latency > a.rsp_latency);
}

#[test]
fn outstanding_packets_are_capped() {
    let mut cfg = NetConfig::aries(1);
    cfg.max_outstanding = 4;
    let mut net = Net::new(cfg, 1);
    net.post(0, 300, 64 * 64, Transfer::Put, Mode::Min, 0, 1, 0);
    let mut max = 0;
    while net.step(u64::MAX).is_some() {
        net.notes.clear();
        max = max.max(net.outstanding(0));
    }
    assert_eq!(max, 4);
    assert_eq!(net.counters(0).rsp_packets, 64);
}

/// A NIC whose only buffer downstream (the router's input, one 64-byte packet) is full counts
/// exactly the cycles its next request packet waits for that buffer's credit: for each packet
/// after the first, the credit comes back 2 terminal latencies + 1 flit time + the router delay
/// after the NIC finished the previous one (73 NIC cycles on the Aries-like network).
#[test]
fn a_nic_blocked_by_a_full_buffer_counts_exactly_the_blocked_cycles() {
    let mut cfg = NetConfig::aries(1);
    cfg.vc_buf[0] = 5;
    cfg.shared_buf[0] = 0;
    let per_packet = 2 * cfg.latency[0] + cfg.flit_time[0] + cfg.router_delay;
    assert_eq!(per_packet % cfg.nic_cycle, 0);
    for packets in [1u64, 2, 10, 40] {
        let mut net = Net::new(cfg.clone(), 1);
        net.post(0, 1, 64 * packets, Transfer::Put, Mode::Min, 0, 1, 0);
        drain(&mut net);
        let c = net.counters(0);
        assert_eq!(c.req_flits, 5 * packets);
        assert_eq!(c.req_stalled, (packets - 1) * per_packet / cfg.nic_cycle, "{packets} packets");
    }
}

/// A NIC limited by its own outstanding-request window waits for responses, not for buffer
/// space: it counts no stall, although it takes much longer than its injection time.
#[test]
fn a_nic_limited_by_its_window_counts_no_stall() {
    let mut cfg = NetConfig::aries(1);
    cfg.max_outstanding = 1;
    let mut net = Net::new(cfg.clone(), 1);
    let packets = 20u64;
    net.post(0, 300, 64 * packets, Transfer::Put, Mode::Min, 0, 1, 0);
    drain(&mut net);
    let c = net.counters(0);
    assert_eq!(c.rsp_packets, packets);
    assert_eq!(c.req_stalled, 0);
    let injection = packets * 5 * cfg.flit_time[0];
    assert!(net.now > 10 * injection, "the window, not injection, set the pace: {} vs {injection}", net.now);
    // the same transfer with a window of one and a one-packet buffer: the window binds first
    cfg.vc_buf[0] = 5;
    cfg.shared_buf[0] = 0;
    let mut net = Net::new(cfg, 1);
    net.post(0, 300, 64 * packets, Transfer::Put, Mode::Min, 0, 1, 0);
    drain(&mut net);
    assert_eq!(net.counters(0).req_stalled, 0);
}

/// A NIC that also answers requests counts as stalled only the cycles in which its link is free
/// and its next request has no room downstream, not the cycles its link spends on responses. Node
/// 0 streams PUTs to node 1 while node 1, starting a little later, streams fewer PUTs back, all
/// through one-packet buffers: node 0's link carries its requests and its responses to node 1 one
/// after the other, and stands idle only while its next request waits for a credit (its queue
/// never runs dry and the outstanding-packet window is far off). So up to the start of its last
/// request the link's time is exactly request flits + response flits + stalled cycles. Node 1
/// starts at every phase of node 0's 78-cycle rhythm (5 cycles of sending, 73 of waiting), so
/// node 0's responses fall before, inside and at the end of its stalls.
#[test]
fn a_nic_sending_responses_does_not_count_them_as_request_stall() {
    let mut cfg = NetConfig::aries(1);
    cfg.vc_buf[0] = 5;
    cfg.shared_buf[0] = 0;
    assert_eq!(cfg.flit_time[0], cfg.nic_cycle);
    let (requests, answered) = (20u64, 6u64);
    for delay in 0..=80 {
        let mut net = Net::new(cfg.clone(), 1);
        net.post(0, 1, 64 * requests, Transfer::Put, Mode::Min, 0, 1, 0);
        while net.step(delay * cfg.nic_cycle).is_some() {
            net.notes.clear();
        }
        net.post(1, 0, 64 * answered, Transfer::Put, Mode::Min, 1, 0, 0);
        // one instant at a time, to see when node 0 starts its last request packet
        let mut last = None;
        while let Some(t) = net.next_time() {
            while net.step(t).is_some() {
                net.notes.clear();
            }
            if last.is_none() && net.counters(0).req_packets == requests {
                last = Some((net.now / cfg.nic_cycle, net.counters(0).req_stalled, net.counters(1).rsp_packets));
            }
        }
        let (t, stalled, responses_back) = last.expect("node 0 sent all its request packets");
        // every response of node 0 was off its link (back at node 1) before its last request
        assert_eq!(responses_back, answered, "node 1 from cycle {delay}");
        let flits = 5 * (requests - 1) + answered; // 5-flit requests, 1-flit PUT responses
        assert_eq!(stalled, t - flits, "stalled cycles up to the last request, node 1 from cycle {delay}");
        // the last request did not stall
        assert_eq!(net.counters(0).req_stalled, stalled, "node 1 from cycle {delay}");
    }
}
