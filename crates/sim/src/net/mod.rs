//! The event-driven network core: routers, channels, credits, NICs.
//!
//! Unit of events is the packet; flit serialization is modelled by timing (virtual cut-through):
//! a packet leaves an input buffer only when the downstream virtual channel has credits for all of
//! its flits, occupies the output channel for `flits * flit_time`, its head reaches the next router
//! after the channel latency and its tail `flits * flit_time` later. Credits are exact in flits and
//! travel back with the channel latency once the tail has left the buffer, so what a router knows
//! about the far end of a long channel is stale (phantom congestion).
//!
//! Virtual channels are hop-indexed: a packet that has taken k router-to-router hops sits in VC k of
//! its class (requests: VCs [0, nv), responses: [nv, 2nv)). Every route is finite and hop indices
//! strictly increase along a route, so the channel dependency graph is acyclic for every routing
//! algorithm (deadlock freedom), and request/response classes are disjoint (no protocol deadlock).
//!
//! The concerns are split the way BookSim2 splits them: this file holds the packet and message
//! pools, the event queue and the dispatch of events; `nic` the NICs (injection, ejection,
//! responses, counters); `routing` the routing functions (minimal, Valiant, UGAL with the Aries
//! biases); `router` the routers (output allocation, channels, credits); `checks` invariants
//! the tests verify.

mod checks;
mod nic;
mod router;
mod routing;

use crate::calendar::Calendar;
use crate::config::{class_index, Bias, NetConfig};
use crate::rng::Rng;
use crate::topology::{PortClass, Topology, NONE};
use aar_engine::Transfer;
use nic::NicRaw;
pub use nic::{NicCounters, Note, RawStats};
use std::collections::VecDeque;

pub const EV_ROUTE: u32 = 0;
pub const EV_FREE: u32 = 1;
pub const EV_CREDIT: u32 = 2;
pub const EV_NIC_CREDIT: u32 = 3;
pub const EV_NIC_FREE: u32 = 4;
pub const EV_EJECT: u32 = 5;
pub const EV_USER: u32 = 6;
/// a message between two ranks of one node has been copied through shared memory
pub const EV_LOCAL: u32 = 7;
const SHARED_BIT: u32 = 1 << 20;
/// `step` result meaning "notifications are pending in `Net::notes`".
pub const NOTES: u32 = u32::MAX;
const KIND_SHIFT: u32 = 28;
const DATA_MASK: u32 = (1 << KIND_SHIFT) - 1;

const F_DONE: u8 = 1; // no more adaptive decisions
const F_GLOBAL: u8 = 2; // has taken a global hop
const F_INTER_ROUTER: u8 = 4; // `inter` is a router (intra-group non-minimal)
const F_NONMIN: u8 = 8; // took a non-minimal decision

/// One cache line: a packet is touched at every hop, and the ones in flight do not fit in cache.
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
struct Pkt {
    inp: u32,  // input buffer (port id * nvc + vc) the packet occupies
    path: u32, // port classes of router-to-router hops taken, 2 bits per hop
    /// its message; `NONE` for a raw (synthetic) packet, whose message is given back when the
    /// packet is injected (it holds nothing the packet does not), so the packets in flight of
    /// open-loop traffic keep no message
    msg: u32,
    src: u32,
    dst: u32,
    gw: u32,
    inter: u32,
    bits: u32,
    seq: u32,
    tail_at: u64,
    /// a request: when it was injected (its response's latency counts from it); a raw packet:
    /// when its message was posted (its latency counts its time in the source queue too)
    inject_t: u64,
    flits: u8,
    hop: u8,
    class: u8,
    mode: u8,
    out_vc: u8,
    flags: u8,
    /// the packet holds space of the shared pool (1) or of its VC's reserved space (0) in the
    /// input buffer it occupies
    shared: u8,
}
const _: () = assert!(std::mem::size_of::<Pkt>() == 64);

#[derive(Clone, Copy, Debug, Default)]
pub struct Msg {
    pub src: u32,
    pub dst: u32,
    pub src_rank: u32,
    pub dst_rank: u32,
    pub bytes: u64,
    pub npk: u32,
    pub sent: u32,
    pub delivered: u32,
    pub acked: u32,
    /// PUT or GET; `None`: a synthetic packet without response (the Kim / BookSim2 traffic)
    pub transfer: Option<Transfer>,
    pub mode: u8,
    pub tag: u32,
    pub created: u64,
    pub done_t: u64,
    pub nonmin_pk: u32,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    pub events: u64,
    pub packets_injected: u64,
    pub packets_delivered: u64,
    pub hops: u64,
}

/// A packet's place in a wait list and what output arbitration needs of it.
#[derive(Clone, Copy, Default)]
struct Link {
    next: u32,
    flits: u8,
    out_vc: u8,
}

/// State of one output port (one direction of a link), kept together for cache locality.
#[derive(Clone, Copy)]
struct PortState {
    /// the channel is serializing until this time
    busy: u64,
    /// flits sent (channel utilisation)
    flits: u64,
    /// flits held in the downstream buffers as seen by credits (all VCs)
    used: u32,
    /// flits of packets routed to this port and waiting for it
    waiting: u32,
    /// wait list of packets that requested this port (FIFO, linked through `Net::pk_link`)
    wait_head: u32,
    wait_tail: u32,
    /// VCs of the waiting packets and the fewest flits among them (a superset and a lower
    /// bound, exact after a walk of the list that found nothing to send): when neither the
    /// shared space nor any of these VCs has room for that many flits, nothing can go and the
    /// list is not walked
    waiting_vcs: u32,
    waiting_min: u8,
    /// free shared buffer space (flits) of the input buffer at the far end, as known here
    shared: u32,
    /// class index (0 terminal, 1 row, 2 column, 3 global)
    cls: u8,
}

pub struct Net {
    pub topo: Topology,
    pub cfg: NetConfig,
    pub now: u64,
    pub rng: Rng,
    heap: Calendar,
    nv: u32,  // VCs per class
    nvc: u32, // VCs per port (power of two)
    vshift: u32,
    radix: u32,
    p: u32,
    // per port id
    ports: Vec<PortState>,
    // per port id * nvc + vc
    credits: Vec<u16>,
    /// class index of each port index within a router (the same for every router)
    port_cls: Vec<u8>,
    // channel timing by class index
    lat: [u64; 4],
    ft: [u64; 4],
    // packets and messages
    pk: Vec<Pkt>,
    /// per packet: its link in the wait list of the output port it requested (or in its
    /// processor tile's queue), apart from the packets so that walking a list reads this dense
    /// array instead of one packet cache line per waiting packet
    pk_link: Vec<Link>,
    pk_free: Vec<u32>,
    pub msgs: Vec<Msg>,
    msg_free: Vec<u32>,
    // NICs
    nic_busy: Vec<u64>,
    nic_cred: Vec<[u32; 2]>,
    nic_shared: Vec<u32>,
    nic_rspq: Vec<VecDeque<u32>>,
    nic_msgq: Vec<VecDeque<u32>>,
    nic_out: Vec<u32>,
    nic_stall: Vec<[u64; 2]>,
    nic_ctr: Vec<NicRaw>,
    // processor tiles (NIC inputs), per node * 2 + class: the input queue (head, tail; FIFO
    // linked through `pk_link`), the output port chosen for its head (NONE: not routed yet),
    // and per (node * 2 + class) * radix + output port: flits of this input inside the router
    // bound for that output (at most `cfg.tile_buf`)
    tile_q: Vec<[u32; 2]>,
    tile_port: Vec<u32>,
    tile_held: Vec<u16>,
    pub notes: Vec<Note>,
    pub raw: RawStats,
    pub totals: Totals,
    bias: [[Bias; 3]; 8],
}

impl Net {
    pub fn new(cfg: NetConfig, seed: u64) -> Self {
        let topo = Topology::new(cfg.topo.clone());
        let dl = topo.local_diam;
        // max router-to-router hops: source group (minimal part + re-evaluated detour), global,
        // intermediate group, global, destination group
        let src_local = if cfg.reeval_hops > 0 { 2 * dl } else { dl };
        let max_hops = src_local + 1 + dl + 1 + dl;
        let nv = max_hops + 1;
        let nvc = (2 * nv).next_power_of_two();
        let min_ft = *cfg.flit_time.iter().min().unwrap();
        let cal_shift = 63 - min_ft.max(1).leading_zeros();
        let radix = topo.radix;
        let np = topo.peer.len();
        let pcls: Vec<u8> = topo.class.iter().map(|&c| class_index(c) as u8).collect();
        let mut credits = vec![0u16; np * nvc as usize];
        for port in 0..np {
            let c = topo.class[port];
            if c == PortClass::Terminal || c == PortClass::Unused {
                continue;
            }
            let far = topo.peer[port] as usize;
            let cap = cfg.vc_buf[class_index(topo.class[far])];
            for v in 0..nvc as usize {
                credits[port * nvc as usize + v] = cap as u16;
            }
        }
        let nn = topo.n_nodes as usize;
        let term_cap = cfg.vc_buf[0];
        let lat = cfg.latency;
        let ft = cfg.flit_time;
        Net {
            nv,
            nvc,
            vshift: nvc.trailing_zeros(),
            radix,
            p: topo.p,
            ports: pcls
                .iter()
                .enumerate()
                .map(|(i, &cls)| {
                    let far = topo.peer[i];
                    let shared =
                        if cls == 0 || far == NONE { 0 } else { cfg.shared_buf[class_index(topo.class[far as usize])] };
                    PortState {
                        busy: 0,
                        flits: 0,
                        used: 0,
                        waiting: 0,
                        wait_head: NONE,
                        wait_tail: NONE,
                        waiting_vcs: 0,
                        waiting_min: u8::MAX,
                        shared,
                        cls,
                    }
                })
                .collect(),
            credits,
            port_cls: topo.class_of_port.iter().map(|&c| class_index(c) as u8).collect(),
            lat,
            ft,
            pk: Vec::new(),
            pk_link: Vec::new(),
            pk_free: Vec::new(),
            msgs: Vec::new(),
            msg_free: Vec::new(),
            nic_busy: vec![0; nn],
            nic_cred: vec![[term_cap, term_cap]; nn],
            nic_shared: vec![cfg.shared_buf[0]; nn],
            nic_rspq: vec![VecDeque::new(); nn],
            nic_msgq: vec![VecDeque::new(); nn],
            nic_out: vec![0; nn],
            nic_stall: vec![[u64::MAX; 2]; nn],
            nic_ctr: vec![NicRaw::default(); nn],
            tile_q: if cfg.tile_buf > 0 { vec![[NONE; 2]; 2 * nn] } else { Vec::new() },
            tile_port: if cfg.tile_buf > 0 { vec![NONE; 2 * nn] } else { Vec::new() },
            tile_held: if cfg.tile_buf > 0 { vec![0; 2 * nn * radix as usize] } else { Vec::new() },
            notes: Vec::new(),
            raw: RawStats { win_start: 0, win_end: u64::MAX, ..Default::default() },
            totals: Totals::default(),
            bias: cfg.bias,
            heap: Calendar::new(cal_shift, 12),
            now: 0,
            rng: Rng::new(seed ^ 0x005E_ED0F_A4E5),
            topo,
            cfg,
        }
    }

    pub fn vcs_per_class(&self) -> u32 {
        self.nv
    }

    #[inline]
    fn push(&mut self, t: u64, kind: u32, a: u32, data: u32) {
        debug_assert!(t >= self.now);
        debug_assert!(data <= DATA_MASK);
        self.heap.push(t, a, (kind << KIND_SHIFT) | data);
    }

    /// Schedule a workload event; `step` returns it as `(a, data)` at time `t`.
    pub fn schedule_user(&mut self, t: u64, a: u32, data: u32) {
        self.push(t.max(self.now), EV_USER, a, data & DATA_MASK);
    }

    /// The time of the next event, if any is left.
    pub fn next_time(&mut self) -> Option<u64> {
        self.heap.peek_time()
    }

    pub fn pending_events(&self) -> usize {
        self.heap.len()
    }

    /// Process events with time <= `limit` until a user event comes up (returned), a notification
    /// is pending in `notes` (returns `Some((NOTES, 0))`), or no event is left (None).
    pub fn step(&mut self, limit: u64) -> Option<(u32, u32)> {
        if !self.notes.is_empty() {
            return Some((NOTES, 0));
        }
        while let Some(t) = self.heap.peek_time() {
            if t > limit {
                return None;
            }
            let ev = self.heap.pop().unwrap();
            self.touch_ahead();
            self.now = t;
            self.totals.events += 1;
            let data = ev.b & DATA_MASK;
            match ev.b >> KIND_SHIFT {
                EV_ROUTE => self.ev_route(ev.a),
                EV_FREE => self.try_alloc(ev.a),
                EV_CREDIT => self.ev_credit(ev.a, data),
                EV_NIC_CREDIT => {
                    if data & SHARED_BIT != 0 {
                        self.nic_shared[ev.a as usize] += data & 0xFFFF;
                    } else {
                        self.nic_cred[ev.a as usize][((data >> 16) & 1) as usize] += data & 0xFFFF;
                    }
                    self.nic_try_send(ev.a);
                }
                EV_NIC_FREE => self.nic_try_send(ev.a),
                EV_EJECT => {
                    self.ev_eject(ev.a);
                    if !self.notes.is_empty() {
                        return Some((NOTES, 0));
                    }
                }
                EV_LOCAL => {
                    self.notes.extend([Note::Arrived(ev.a), Note::Completed(ev.a)]);
                    return Some((NOTES, 0));
                }
                _ => return Some((ev.a, data)),
            }
        }
        None
    }

    /// Loads the packet or port an event a few places ahead works on, so that its cache miss
    /// overlaps the work of the events before it instead of stalling its own (the packets in
    /// flight and the ports of a large network do not fit in the caches).
    #[inline]
    fn touch_ahead(&self) {
        const AHEAD: usize = 6;
        let Some(e) = self.heap.ahead(AHEAD) else { return };
        match e.b >> KIND_SHIFT {
            EV_ROUTE | EV_EJECT => {
                std::hint::black_box(self.pk[e.a as usize].inp);
            }
            EV_FREE => {
                std::hint::black_box(self.ports[e.a as usize].busy);
            }
            _ => {}
        }
    }

    pub fn free_msg(&mut self, id: u32) {
        self.msg_free.push(id);
    }

    fn alloc_pkt(&mut self) -> u32 {
        if let Some(id) = self.pk_free.pop() {
            id
        } else {
            self.pk.push(Pkt::default());
            self.pk_link.push(Link::default());
            (self.pk.len() - 1) as u32
        }
    }
}
