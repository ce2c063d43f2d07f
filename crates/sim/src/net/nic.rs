//! The NICs: messages are packetized and injected (responses first, then requests within the
//! outstanding-packet window), requests turn into responses at the target, and the counters the
//! shim reads are kept per NIC.

use super::{Msg, Net, Pkt, EV_LOCAL, EV_NIC_FREE, EV_ROUTE, F_NONMIN};
use crate::config::Mode;
use crate::topology::NONE;
use aar_engine::model::{packet_request_flits, packet_response_flits, packets};
use aar_engine::Transfer;

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
pub(super) struct NicRaw {
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

impl Net {
    /// Post a PUT or GET message at the source NIC (now), packetized as the engine's model says.
    /// Returns the message id.
    #[allow(clippy::too_many_arguments)]
    pub fn post(
        &mut self,
        src: u32,
        dst: u32,
        bytes: u64,
        transfer: Transfer,
        mode: Mode,
        src_rank: u32,
        dst_rank: u32,
        tag: u32,
    ) -> u32 {
        self.queue(Msg {
            src,
            dst,
            src_rank,
            dst_rank,
            bytes,
            npk: packets(bytes) as u32,
            transfer: Some(transfer),
            mode: mode as u8,
            tag,
            created: self.now,
            ..Default::default()
        })
    }

    /// Post one synthetic packet of `raw_packet_flits` flits without response (open-loop traffic
    /// of the Kim / BookSim2 validation). Its message waits in the source queue and is given back
    /// when the packet is injected, which then carries what the message held.
    pub fn post_raw(&mut self, src: u32, dst: u32, mode: Mode) {
        self.queue(Msg {
            src,
            dst,
            src_rank: src,
            dst_rank: dst,
            npk: 1,
            mode: mode as u8,
            created: self.now,
            ..Default::default()
        });
    }

    /// Post a message between two ranks of one node: it goes through the node's shared memory,
    /// not the NIC, so it touches no queue, outstanding-packet window, counter or link, and
    /// arrives and completes (`Note::Arrived`, then `Note::Completed`) `delay` ticks from now.
    /// Returns the message id.
    pub fn post_local(&mut self, node: u32, bytes: u64, src_rank: u32, dst_rank: u32, tag: u32, delay: u64) -> u32 {
        let id = self.alloc_msg(Msg {
            src: node,
            dst: node,
            src_rank,
            dst_rank,
            bytes,
            transfer: Some(Transfer::Put),
            tag,
            created: self.now,
            done_t: self.now + delay,
            ..Default::default()
        });
        self.push(self.now + delay, EV_LOCAL, id, 0);
        id
    }

    fn alloc_msg(&mut self, m: Msg) -> u32 {
        if let Some(id) = self.msg_free.pop() {
            self.msgs[id as usize] = m;
            id
        } else {
            self.msgs.push(m);
            (self.msgs.len() - 1) as u32
        }
    }

    fn queue(&mut self, m: Msg) -> u32 {
        let src = m.src;
        let id = self.alloc_msg(m);
        self.nic_msgq[src as usize].push_back(id);
        self.nic_try_send(src);
        id
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

    pub fn queued_messages(&self, node: u32) -> usize {
        self.nic_msgq[node as usize].len()
    }

    pub fn outstanding(&self, node: u32) -> u32 {
        self.nic_out[node as usize]
    }

    #[inline]
    fn req_flits_of(&self, m: &Msg, seq: u32) -> u32 {
        match m.transfer {
            Some(t) => packet_request_flits(m.bytes, seq.into(), t) as u32,
            None => self.cfg.raw_packet_flits,
        }
    }

    pub(super) fn nic_try_send(&mut self, node: u32) {
        let n = node as usize;
        if self.nic_busy[n] > self.now {
            return;
        }
        // responses first (own VC class, never blocked by requests)
        if let Some(&pid) = self.nic_rspq[n].front() {
            let l = self.pk[pid as usize].flits as u32;
            if self.nic_cred[n][1] >= l || self.nic_shared[n] >= l {
                self.nic_rspq[n].pop_front();
                self.inject(node, pid);
                return;
            } else if self.nic_stall[n][1] == u64::MAX {
                self.nic_stall[n][1] = self.now;
            }
        }
        let Some(&mid) = self.nic_msgq[n].front() else { return };
        let m = self.msgs[mid as usize];
        if m.transfer.is_some() && self.nic_out[n] >= self.cfg.max_outstanding {
            return;
        }
        let l = self.req_flits_of(&m, m.sent);
        if self.nic_cred[n][0] < l && self.nic_shared[n] < l {
            if self.nic_stall[n][0] == u64::MAX {
                self.nic_stall[n][0] = self.now;
            }
            return;
        }
        let seq = m.sent;
        self.msgs[mid as usize].sent += 1;
        if seq + 1 == m.npk {
            self.nic_msgq[n].pop_front();
        }
        // a raw packet is its whole message: the packet carries what the message held
        let raw = m.transfer.is_none();
        if raw {
            self.msg_free.push(mid);
        }
        let bits = self.path_bits(m.mode, m.src, m.dst);
        let pid = self.alloc_pkt();
        self.pk[pid as usize] = Pkt {
            inp: NONE,
            path: 0,
            msg: if raw { NONE } else { mid },
            src: m.src,
            dst: m.dst,
            gw: NONE,
            inter: NONE,
            bits,
            seq,
            inject_t: if raw { m.created } else { self.now },
            flits: l as u8,
            class: 0,
            mode: m.mode,
            ..Default::default()
        };
        self.nic_ctr[n].req_flits += l as u64;
        self.nic_ctr[n].req_packets += 1;
        if !raw {
            self.nic_out[n] += 1;
        }
        self.inject(node, pid);
    }

    fn inject(&mut self, node: u32, pid: u32) {
        let now = self.now;
        // The link is busy from now: a stall of either class ends here, as one waiting for the
        // link is not back-pressure (a packet still without room when the link is free again
        // starts a new stall then).
        let n = node as usize;
        let ended = |s: u64| if s == u64::MAX { 0 } else { now - s };
        let [req, rsp] = std::mem::replace(&mut self.nic_stall[n], [u64::MAX; 2]);
        self.nic_ctr[n].req_stalled_t += ended(req);
        self.nic_ctr[n].rsp_stalled_t += ended(rsp);
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
            p.tail_at = end + self.lat[0];
            p.path = 0;
            p.inp = port * self.nvc + vc;
        }
        let head_at = now + self.lat[0] + self.ft[0];
        let t = head_at + self.cfg.router_delay;
        self.push(t, EV_ROUTE, pid, 0);
    }

    pub(super) fn ev_eject(&mut self, pid: u32) {
        let p = self.pk[pid as usize];
        let mid = p.msg;
        self.totals.packets_delivered += 1;
        if p.class == 0 {
            if mid == NONE {
                let now = self.now;
                if now >= self.raw.win_start && now < self.raw.win_end {
                    self.raw.flits_in_window += p.flits as u64;
                    let lat = now - p.inject_t;
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
                return;
            }
            let m = &mut self.msgs[mid as usize];
            m.delivered += 1;
            if p.flags & F_NONMIN != 0 {
                m.nonmin_pk += 1;
            }
            let m = *m;
            let Some(transfer) = m.transfer else {
                unreachable!("a raw packet's message is given back when the packet is injected")
            };
            if transfer == Transfer::Put && m.delivered == m.npk {
                self.notes.push(Note::Arrived(mid));
            }
            // turn the request into its response at the target NIC
            let flits = packet_response_flits(m.bytes, p.seq.into(), transfer);
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
}
