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

use crate::calendar::Calendar;
use crate::config::{class_index, Bias, Mode, NetConfig};
use crate::rng::{mix64, Rng};
use crate::topology::{PortClass, Topology, NONE};
use std::collections::VecDeque;

pub const EV_ROUTE: u32 = 0;
pub const EV_FREE: u32 = 1;
pub const EV_CREDIT: u32 = 2;
pub const EV_NIC_CREDIT: u32 = 3;
pub const EV_NIC_FREE: u32 = 4;
pub const EV_EJECT: u32 = 5;
pub const EV_USER: u32 = 6;
const SHARED_BIT: u32 = 1 << 20;
/// `step` result meaning "notifications are pending in `Net::notes`".
pub const NOTES: u32 = u32::MAX;
const KIND_SHIFT: u32 = 28;
const DATA_MASK: u32 = (1 << KIND_SHIFT) - 1;

/// Transfer type of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum Kind {
    /// Request packets carry data (1 header + payload flits); 1-flit responses.
    Put = 0,
    /// 1-flit requests; responses carry the data.
    Get = 1,
    /// Synthetic: fixed-size packets, no response (the Kim / BookSim validation traffic).
    Raw = 2,
}

const F_DONE: u8 = 1; // no more adaptive decisions
const F_GLOBAL: u8 = 2; // has taken a global hop
const F_INTER_ROUTER: u8 = 4; // `inter` is a router (intra-group non-minimal)
const F_NONMIN: u8 = 8; // took a non-minimal decision

#[derive(Clone, Copy, Default)]
struct Pkt {
    next: u32, // next packet in the wait list of the output port it requested
    inp: u32,  // input buffer (port id * nvc + vc) the packet occupies
    path: u32, // port classes of router-to-router hops taken, 2 bits per hop
    msg: u32,
    src: u32,
    dst: u32,
    gw: u32,
    inter: u32,
    out: u32,
    bits: u32,
    seq: u32,
    head_at: u64,
    tail_at: u64,
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
    pub kind: u8,
    pub mode: u8,
    pub tag: u32,
    pub created: u64,
    pub done_t: u64,
    pub nonmin_pk: u32,
}

/// NIC counters as the shim reads them on Aries (cumulative, per NIC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NicCounters {
    /// AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_FLITS
    pub req_flits: u64,
    /// AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_STALLED, NIC cycles a ready request flit was blocked by back-pressure
    pub req_stalled: u64,
    /// AR_NIC_ORB_PRF_NET_RSP_TRACK_2, cumulative request->response latency, NIC cycles
    pub rsp_latency: u64,
    /// AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_NET_TRACK
    pub rsp_packets: u64,
    /// AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_STALLED
    pub rsp_stalled: u64,
    pub req_packets: u64,
}

#[derive(Clone, Copy, Default)]
struct NicRaw {
    req_flits: u64,
    req_stalled_t: u64,
    rsp_latency_t: u64,
    rsp_packets: u64,
    rsp_stalled_t: u64,
    req_packets: u64,
}

/// Notifications from the network to the workload layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Note {
    /// All request packets of a PUT reached the destination NIC.
    Arrived(u32),
    /// All responses of a message are back at the initiator (local completion; GET data arrived).
    Completed(u32),
}

/// Statistics of raw (synthetic) packets in a measurement window.
#[derive(Clone, Copy, Debug, Default)]
pub struct RawStats {
    pub win_start: u64,
    pub win_end: u64,
    pub flits_in_window: u64,
    pub lat_sum: u64,
    pub lat_n: u64,
    pub lat_max: u64,
    pub hops_sum: u64,
    pub nonmin: u64,
    /// (latency ticks, hops, port classes 2 bits per hop) of the last raw packet delivered
    pub last: (u64, u8, u32),
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    pub events: u64,
    pub packets_injected: u64,
    pub packets_delivered: u64,
    pub hops: u64,
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
    /// wait list of packets that requested this port (FIFO, linked through `Pkt::next`)
    wait_head: u32,
    wait_tail: u32,
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
    // channel timing by class index
    lat: [u64; 4],
    ft: [u64; 4],
    // packets and messages
    pk: Vec<Pkt>,
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
                    PortState { busy: 0, flits: 0, used: 0, waiting: 0, wait_head: NONE, wait_tail: NONE, shared, cls }
                })
                .collect(),
            credits,
            lat,
            ft,
            pk: Vec::new(),
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
                _ => return Some((ev.a, data)),
            }
        }
        None
    }

    // ------------------------------------------------------------------ messages and NICs

    /// Post a message at the source NIC (now). Returns the message id.
    #[allow(clippy::too_many_arguments)]
    pub fn post(
        &mut self,
        src: u32,
        dst: u32,
        bytes: u64,
        kind: Kind,
        mode: Mode,
        src_rank: u32,
        dst_rank: u32,
        tag: u32,
    ) -> u32 {
        let npk = match kind {
            Kind::Raw => 1,
            _ => bytes.div_ceil(64).max(1) as u32,
        };
        let m = Msg {
            src,
            dst,
            src_rank,
            dst_rank,
            bytes,
            npk,
            kind: kind as u8,
            mode: mode as u8,
            tag,
            created: self.now,
            ..Default::default()
        };
        let id = if let Some(id) = self.msg_free.pop() {
            self.msgs[id as usize] = m;
            id
        } else {
            self.msgs.push(m);
            (self.msgs.len() - 1) as u32
        };
        self.nic_msgq[src as usize].push_back(id);
        self.nic_try_send(src);
        id
    }

    pub fn free_msg(&mut self, id: u32) {
        self.msg_free.push(id);
    }

    /// Cumulative counters of a node's NIC at the current time (an ongoing stall counts so far).
    pub fn counters(&self, node: u32) -> NicCounters {
        let c = &self.nic_ctr[node as usize];
        let st = self.nic_stall[node as usize];
        let cyc = self.cfg.nic_cycle;
        let ongoing = |s: u64| if s == u64::MAX { 0 } else { self.now - s };
        NicCounters {
            req_flits: c.req_flits,
            req_stalled: (c.req_stalled_t + ongoing(st[0])) / cyc,
            rsp_latency: c.rsp_latency_t / cyc,
            rsp_packets: c.rsp_packets,
            rsp_stalled: (c.rsp_stalled_t + ongoing(st[1])) / cyc,
            req_packets: c.req_packets,
        }
    }

    /// Flits sent on output port `port_id` so far.
    pub fn port_flits(&self, port_id: usize) -> u64 {
        self.ports[port_id].flits
    }

    pub fn queued_messages(&self, node: u32) -> usize {
        self.nic_msgq[node as usize].len()
    }

    pub fn outstanding(&self, node: u32) -> u32 {
        self.nic_out[node as usize]
    }

    #[inline]
    fn req_flits_of(&self, m: &Msg, seq: u32) -> u32 {
        match m.kind {
            2 => self.cfg.raw_packet_flits,
            1 => 1,
            _ => 1 + self.payload_flits(m, seq),
        }
    }
    #[inline]
    fn payload_flits(&self, m: &Msg, seq: u32) -> u32 {
        let b = (m.bytes - 64 * seq as u64).min(64) as u32;
        b.div_ceil(self.cfg.flit_bytes).max(1)
    }

    fn alloc_pkt(&mut self) -> u32 {
        if let Some(id) = self.pk_free.pop() {
            id
        } else {
            self.pk.push(Pkt::default());
            (self.pk.len() - 1) as u32
        }
    }

    #[inline]
    fn path_bits(&mut self, mode: u8, src: u32, dst: u32) -> u32 {
        if mode == Mode::InOrder as u8 {
            (mix64(((src as u64) << 32) | dst as u64) >> 32) as u32
        } else {
            self.rng.next_u32()
        }
    }

    fn nic_try_send(&mut self, node: u32) {
        let n = node as usize;
        if self.nic_busy[n] > self.now {
            return;
        }
        // responses first (own VC class, never blocked by requests)
        if let Some(&pid) = self.nic_rspq[n].front() {
            let l = self.pk[pid as usize].flits as u32;
            if self.nic_cred[n][1] >= l || self.nic_shared[n] >= l {
                self.nic_rspq[n].pop_front();
                if self.nic_stall[n][1] != u64::MAX {
                    self.nic_ctr[n].rsp_stalled_t += self.now - self.nic_stall[n][1];
                    self.nic_stall[n][1] = u64::MAX;
                }
                self.inject(node, pid);
                return;
            } else if self.nic_stall[n][1] == u64::MAX {
                self.nic_stall[n][1] = self.now;
            }
        }
        let Some(&mid) = self.nic_msgq[n].front() else { return };
        let m = self.msgs[mid as usize];
        if m.kind != Kind::Raw as u8 && self.nic_out[n] >= self.cfg.max_outstanding {
            return;
        }
        let l = self.req_flits_of(&m, m.sent);
        if self.nic_cred[n][0] < l && self.nic_shared[n] < l {
            if self.nic_stall[n][0] == u64::MAX {
                self.nic_stall[n][0] = self.now;
            }
            return;
        }
        if self.nic_stall[n][0] != u64::MAX {
            self.nic_ctr[n].req_stalled_t += self.now - self.nic_stall[n][0];
            self.nic_stall[n][0] = u64::MAX;
        }
        let seq = m.sent;
        self.msgs[mid as usize].sent += 1;
        if seq + 1 == m.npk {
            self.nic_msgq[n].pop_front();
        }
        let bits = self.path_bits(m.mode, m.src, m.dst);
        let pid = self.alloc_pkt();
        self.pk[pid as usize] = Pkt {
            next: NONE,
            inp: NONE,
            path: 0,
            msg: mid,
            src: m.src,
            dst: m.dst,
            gw: NONE,
            inter: NONE,
            out: NONE,
            bits,
            seq,
            flits: l as u8,
            class: 0,
            mode: m.mode,
            ..Default::default()
        };
        self.nic_ctr[n].req_flits += l as u64;
        self.nic_ctr[n].req_packets += 1;
        if m.kind != Kind::Raw as u8 {
            self.nic_out[n] += 1;
        }
        self.inject(node, pid);
    }

    fn inject(&mut self, node: u32, pid: u32) {
        let now = self.now;
        let (l, cls) = {
            let p = &self.pk[pid as usize];
            (p.flits as u64, p.class)
        };
        let end = now + l * self.ft[0];
        self.nic_busy[node as usize] = end;
        self.push(end, EV_NIC_FREE, node, 0);
        // the shared pool first; the VC's reserved space only when the pool is exhausted
        let shared = self.nic_shared[node as usize] >= l as u32;
        if shared {
            self.nic_shared[node as usize] -= l as u32;
        } else {
            self.nic_cred[node as usize][cls as usize] -= l as u32;
        }
        self.totals.packets_injected += 1;
        let port = (node / self.p) * self.radix + node % self.p;
        let vc = cls as u32 * self.nv;
        {
            let p = &mut self.pk[pid as usize];
            p.hop = 0;
            p.flags = 0;
            p.shared = shared as u8;
            p.next = NONE;
            p.head_at = now + self.lat[0] + self.ft[0];
            p.tail_at = end + self.lat[0];
            p.path = 0;
            p.inp = port * self.nvc + vc;
            if cls == 0 {
                p.inject_t = now;
            }
        }
        let t = self.pk[pid as usize].head_at + self.cfg.router_delay;
        self.push(t, EV_ROUTE, pid, 0);
    }

    fn ev_eject(&mut self, pid: u32) {
        let p = self.pk[pid as usize];
        let mid = p.msg;
        self.totals.packets_delivered += 1;
        if p.class == 0 {
            let m = &mut self.msgs[mid as usize];
            m.delivered += 1;
            if p.flags & F_NONMIN != 0 {
                m.nonmin_pk += 1;
            }
            let m = *m;
            if m.kind == Kind::Raw as u8 {
                let now = self.now;
                if now >= self.raw.win_start && now < self.raw.win_end {
                    self.raw.flits_in_window += p.flits as u64;
                    let lat = now - m.created;
                    self.raw.lat_sum += lat;
                    self.raw.lat_n += 1;
                    self.raw.lat_max = self.raw.lat_max.max(lat);
                    self.raw.hops_sum += p.hop as u64;
                    self.raw.last = (lat, p.hop, p.path);
                    if p.flags & F_NONMIN != 0 {
                        self.raw.nonmin += 1;
                    }
                }
                self.pk_free.push(pid);
                self.msg_free.push(mid);
                return;
            }
            if m.kind == Kind::Put as u8 && m.delivered == m.npk {
                self.notes.push(Note::Arrived(mid));
            }
            // turn the request into its response at the target NIC
            let flits = if m.kind == Kind::Get as u8 { 1 + self.payload_flits(&m, p.seq) } else { 1 };
            let bits = self.path_bits(p.mode, p.dst, p.src);
            let q = &mut self.pk[pid as usize];
            q.src = p.dst;
            q.dst = p.src;
            q.class = 1;
            q.flits = flits as u8;
            q.gw = NONE;
            q.inter = NONE;
            q.bits = bits;
            self.nic_rspq[p.dst as usize].push_back(pid);
            self.nic_try_send(p.dst);
        } else {
            let n = p.dst as usize;
            self.nic_ctr[n].rsp_packets += 1;
            self.nic_ctr[n].rsp_latency_t += self.now - p.inject_t;
            self.nic_out[n] -= 1;
            let m = &mut self.msgs[mid as usize];
            m.acked += 1;
            if m.acked == m.npk {
                m.done_t = self.now;
                self.notes.push(Note::Completed(mid));
            }
            self.pk_free.push(pid);
            self.nic_try_send(p.dst);
        }
    }

    // ------------------------------------------------------------------ routers

    #[inline]
    fn load(&self, port_id: u32) -> i64 {
        (self.ports[port_id as usize].used + self.ports[port_id as usize].waiting) as i64
    }

    /// First output port (index in router) from router r towards gateway port `gw` (global port id).
    #[inline]
    fn toward_gw(&self, r: u32, gw: u32, bits: u32) -> u32 {
        let gr = gw / self.radix;
        if gr == r {
            gw % self.radix
        } else {
            self.topo.intra_port(r, gr, bits)
        }
    }

    #[inline]
    fn pick_gw(&mut self, g: u32, d: u32) -> u32 {
        let list = self.topo.gateways(g, d);
        let n = list.len() as u32;
        let i = self.rng.below(n);
        self.topo.gateways(g, d)[i as usize]
    }

    #[inline]
    fn hashed_gw(&self, g: u32, d: u32, bits: u32) -> u32 {
        let list = self.topo.gateways(g, d);
        let h = mix64(bits as u64 ^ ((d as u64) << 40));
        list[(((h >> 32) * list.len() as u64) >> 32) as usize]
    }

    #[inline]
    fn take_min(b: Bias, qmin: i64, qnm: i64) -> bool {
        4 * qmin <= b.mul_x4 as i64 * qnm + 4 * b.add as i64
    }

    fn decide(&mut self, r: u32, pid: u32) {
        let p = self.pk[pid as usize];
        let mode = Mode::from_u8(p.mode);
        let topo_g = self.topo.groups;
        let g = self.topo.group_of(r);
        let dr = p.dst / self.p;
        let dg = self.topo.group_of(dr);
        let rpg = self.topo.routers_per_group;
        let hop = p.hop as usize;
        let mut flags = p.flags;
        let mut inter = p.inter;
        let mut gw = p.gw;
        let mut bits = p.bits;
        if mode == Mode::Val {
            flags |= F_DONE;
            if dg != g {
                if topo_g > 2 {
                    let mut ig = self.rng.below(topo_g - 2);
                    for x in [g.min(dg), g.max(dg)] {
                        if ig >= x {
                            ig += 1;
                        }
                    }
                    inter = ig;
                    flags |= F_NONMIN;
                }
            } else if rpg > 2 {
                let base = g * rpg;
                let mut t = self.rng.below(rpg - 2);
                let (x, y) = ((r - base).min(dr - base), (r - base).max(dr - base));
                if t >= x {
                    t += 1;
                }
                if t >= y {
                    t += 1;
                }
                inter = base + t;
                flags |= F_NONMIN | F_INTER_ROUTER;
            }
        } else if mode.is_adaptive() {
            let b = self.bias[mode as usize][hop.min(2)];
            if dg == g {
                flags |= F_DONE;
                if hop == 0 && rpg > 2 {
                    // two minimal candidates (dimension order / parallel link), two random routers
                    let b2 = self.rng.next_u32();
                    let pa = self.topo.intra_port(r, dr, bits);
                    let pb = self.topo.intra_port(r, dr, b2);
                    let (qa, qb) = (self.load(r * self.radix + pa), self.load(r * self.radix + pb));
                    let qmin = if qb < qa {
                        bits = b2;
                        qb
                    } else {
                        qa
                    };
                    let base = g * rpg;
                    let mut best = (i64::MAX, NONE, 0u32);
                    for _ in 0..2 {
                        let t = base + self.rng.below(rpg);
                        if t == r || t == dr {
                            continue;
                        }
                        let bb = self.rng.next_u32();
                        let q = self.load(r * self.radix + self.topo.intra_port(r, t, bb));
                        if q < best.0 {
                            best = (q, t, bb);
                        }
                    }
                    if best.1 != NONE && !Self::take_min(b, qmin, best.0) {
                        inter = best.1;
                        bits = best.2;
                        flags |= F_NONMIN | F_INTER_ROUTER;
                    }
                }
            } else {
                // minimal candidates
                let qmin;
                if gw == NONE {
                    let g1 = self.pick_gw(g, dg);
                    let g2 = self.pick_gw(g, dg);
                    let b2 = self.rng.next_u32();
                    let q1 = self.load(r * self.radix + self.toward_gw(r, g1, bits));
                    let q2 = self.load(r * self.radix + self.toward_gw(r, g2, b2));
                    if q2 < q1 {
                        gw = g2;
                        bits = b2;
                        qmin = q2;
                    } else {
                        gw = g1;
                        qmin = q1;
                    }
                } else {
                    qmin = self.load(r * self.radix + self.toward_gw(r, gw, bits));
                }
                if topo_g > 2 {
                    let mut best = (i64::MAX, NONE, NONE, 0u32);
                    for _ in 0..2 {
                        let mut ig = self.rng.below(topo_g - 2);
                        for x in [g.min(dg), g.max(dg)] {
                            if ig >= x {
                                ig += 1;
                            }
                        }
                        let ggw = self.pick_gw(g, ig);
                        let bb = self.rng.next_u32();
                        let q = self.load(r * self.radix + self.toward_gw(r, ggw, bb));
                        if q < best.0 {
                            best = (q, ig, ggw, bb);
                        }
                    }
                    if !Self::take_min(b, qmin, best.0) {
                        inter = best.1;
                        gw = best.2;
                        bits = best.3;
                        flags |= F_NONMIN | F_DONE;
                    }
                }
                if hop as u8 >= self.cfg.reeval_hops {
                    flags |= F_DONE;
                }
            }
        } else {
            flags |= F_DONE;
        }
        let q = &mut self.pk[pid as usize];
        q.flags = flags;
        q.inter = inter;
        q.gw = gw;
        q.bits = bits;
    }

    /// Output port (index in router) and VC for the head packet `pid` at router `r`.
    #[inline]
    fn route(&mut self, r: u32, pid: u32) -> (u32, u32) {
        let dst = self.pk[pid as usize].dst;
        let dr = dst / self.p;
        if dr == r {
            return (dst % self.p, 0);
        }
        if self.pk[pid as usize].flags & F_DONE == 0 {
            self.decide(r, pid);
        }
        let g = self.topo.group_of(r);
        let p = &mut self.pk[pid as usize];
        if p.inter != NONE {
            if p.flags & F_INTER_ROUTER != 0 {
                if p.inter == r {
                    p.inter = NONE;
                }
            } else if p.inter == g {
                p.inter = NONE;
            }
        }
        let p = self.pk[pid as usize];
        let (tg, tr) = if p.inter == NONE {
            (self.topo.group_of(dr), dr)
        } else if p.flags & F_INTER_ROUTER != 0 {
            (g, p.inter)
        } else {
            (p.inter, NONE)
        };
        let port = if tg != g {
            let gw = if p.gw == NONE {
                let gw = self.hashed_gw(g, tg, p.bits);
                self.pk[pid as usize].gw = gw;
                gw
            } else {
                p.gw
            };
            self.toward_gw(r, gw, p.bits)
        } else {
            self.topo.intra_port(r, tr, p.bits)
        };
        (port, p.class as u32 * self.nv + p.hop as u32 + 1)
    }

    /// A packet's head has been received and processed by the router pipeline: route it and
    /// request its output port. Input buffers are virtual-output-queued (a packet does not wait
    /// behind packets bound to other outputs), which is what tiled high-radix routers like Aries
    /// (YARC heritage) approximate with their internal row/column buffering.
    fn ev_route(&mut self, pid: u32) {
        let invc = self.pk[pid as usize].inp;
        let r = (invc >> self.vshift) / self.radix;
        let (port, vc) = self.route(r, pid);
        let out = r * self.radix + port;
        let o = out as usize;
        {
            let p = &mut self.pk[pid as usize];
            p.out = out;
            p.out_vc = vc as u8;
            p.next = NONE;
        }
        self.ports[o].waiting += self.pk[pid as usize].flits as u32;
        if self.ports[o].wait_tail == NONE {
            self.ports[o].wait_head = pid;
        } else {
            self.pk[self.ports[o].wait_tail as usize].next = pid;
        }
        self.ports[o].wait_tail = pid;
        self.try_alloc(out);
    }

    fn ev_credit(&mut self, outvc: u32, data: u32) {
        let n = data & 0xFFFF;
        let port = outvc >> self.vshift;
        if data & SHARED_BIT != 0 {
            self.ports[port as usize].shared += n;
        } else {
            self.credits[outvc as usize] += n as u16;
        }
        self.ports[port as usize].used -= n;
        if self.ports[port as usize].wait_head != NONE {
            self.try_alloc(port);
        }
    }

    fn try_alloc(&mut self, port: u32) {
        let o = port as usize;
        if self.ports[o].busy > self.now {
            return;
        }
        let term = self.ports[o].cls == 0;
        let mut prev = NONE;
        let mut cur = self.ports[o].wait_head;
        while cur != NONE {
            let p = &self.pk[cur as usize];
            let nx = p.next;
            let ok = term
                || self.ports[o].shared >= p.flits as u32
                || self.credits[(port * self.nvc + p.out_vc as u32) as usize] >= p.flits as u16;
            if ok {
                if prev == NONE {
                    self.ports[o].wait_head = nx;
                } else {
                    self.pk[prev as usize].next = nx;
                }
                if self.ports[o].wait_tail == cur {
                    self.ports[o].wait_tail = prev;
                }
                self.grant(port, cur);
                return;
            }
            prev = cur;
            cur = nx;
        }
    }

    fn grant(&mut self, port: u32, pid: u32) {
        let o = port as usize;
        let cls = self.ports[o].cls as usize;
        let p = self.pk[pid as usize];
        let l = p.flits as u64;
        let ser = l * self.ft[cls];
        let start = self.now.max(p.tail_at.saturating_sub(ser));
        let end = start + ser;
        self.ports[o].busy = end;
        self.ports[o].flits += l;
        self.push(end, EV_FREE, port, 0);
        self.ports[o].waiting -= l as u32;
        // leave the input buffer; the credit goes back upstream once the tail has left
        let invc = p.inp;
        let in_port = invc >> self.vshift;
        let in_cls = self.ports[in_port as usize].cls as usize;
        let back = end + self.lat[in_cls];
        if in_cls == 0 {
            let node = (in_port / self.radix) * self.p + in_port % self.radix;
            let class = (invc & (self.nvc - 1)) / self.nv;
            let sh = if p.shared != 0 { SHARED_BIT } else { 0 };
            self.push(back, EV_NIC_CREDIT, node, sh | (class << 16) | l as u32);
        } else {
            let up = self.topo.peer[in_port as usize];
            let sh = if p.shared != 0 { SHARED_BIT } else { 0 };
            self.push(back, EV_CREDIT, up * self.nvc + (invc & (self.nvc - 1)), sh | l as u32);
        }
        // travel downstream
        if cls == 0 {
            self.push(end + self.lat[0], EV_EJECT, pid, 0);
            return;
        }
        let ovc = p.out_vc as u32;
        let shared = self.ports[o].shared >= l as u32;
        if shared {
            self.ports[o].shared -= l as u32;
        } else {
            self.credits[(port * self.nvc + ovc) as usize] -= l as u16;
        }
        self.ports[o].used += l as u32;
        self.totals.hops += 1;
        let lat = self.lat[cls];
        let dport = self.topo.peer[o];
        let q = &mut self.pk[pid as usize];
        q.path |= (cls as u32) << (2 * q.hop as u32);
        q.shared = shared as u8;
        q.hop += 1;
        if cls == 3 {
            q.flags |= F_GLOBAL | F_DONE;
            q.gw = NONE;
        }
        q.head_at = start + lat + self.ft[cls];
        q.tail_at = end + lat;
        q.inp = dport * self.nvc + ovc;
        let t = q.head_at + self.cfg.router_delay;
        self.push(t, EV_ROUTE, pid, 0);
    }

    // ------------------------------------------------------------------ invariants (tests)

    /// Credit conservation: for every channel and VC, credits held upstream + flits buffered
    /// downstream + credits in flight == buffer size. Returns the number of violations; only valid
    /// when the network is drained (no packets or credits in flight).
    pub fn check_credits_drained(&self) -> usize {
        let mut bad = 0;
        for port in 0..self.topo.peer.len() {
            let c = self.topo.class[port];
            if c == PortClass::Terminal || c == PortClass::Unused {
                continue;
            }
            let far = self.topo.peer[port] as usize;
            let cap = self.cfg.vc_buf[class_index(self.topo.class[far])] as u16;
            for v in 0..self.nvc as usize {
                if self.credits[port * self.nvc as usize + v] != cap {
                    bad += 1;
                }
            }
            if self.ports[port].used != 0 || self.ports[port].waiting != 0 {
                bad += 1;
            }
            if self.ports[port].shared != self.cfg.shared_buf[class_index(self.topo.class[far])] {
                bad += 1;
            }
        }
        for n in 0..self.nic_cred.len() {
            if self.nic_cred[n] != [self.cfg.vc_buf[0]; 2] || self.nic_shared[n] != self.cfg.shared_buf[0] {
                bad += 1;
            }
        }
        bad
    }

    /// Sum over channels of (credits + used) must equal capacity at all times.
    pub fn check_credit_accounting(&self) -> bool {
        let nvc = self.nvc as usize;
        for port in 0..self.topo.peer.len() {
            let c = self.topo.class[port];
            if c == PortClass::Terminal || c == PortClass::Unused {
                continue;
            }
            let far = self.topo.peer[port] as usize;
            let cap = self.cfg.vc_buf[class_index(self.topo.class[far])];
            let s: u32 = self.credits[port * nvc..(port + 1) * nvc].iter().map(|&c| c as u32).sum();
            let shared_cap = self.cfg.shared_buf[class_index(self.topo.class[far])];
            if s + self.ports[port].shared + self.ports[port].used != cap * nvc as u32 + shared_cap {
                return false;
            }
        }
        true
    }

    pub fn packets_in_flight(&self) -> usize {
        self.pk.len() - self.pk_free.len()
    }
}
