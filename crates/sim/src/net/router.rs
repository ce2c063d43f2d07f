//! Routers: a routed packet waits for its output port; the port serves the oldest request whose
//! downstream virtual channel has room for the whole packet, the channel serializes it, and the
//! credits go back upstream once its tail has left the input buffer.

use super::{Link, Net, EV_CREDIT, EV_EJECT, EV_FREE, EV_NIC_CREDIT, EV_ROUTE, F_DONE, F_GLOBAL, SHARED_BIT};
use crate::topology::NONE;

impl Net {
    /// Flits sent on output port `port_id` so far.
    pub fn port_flits(&self, port_id: usize) -> u64 {
        self.ports[port_id].flits
    }

    /// A packet's head has been received and processed by the router pipeline: route it and
    /// request its output port. Input buffers are virtual-output-queued (a packet does not wait
    /// behind packets bound to other outputs), which is what tiled high-radix routers like Aries
    /// (YARC heritage) approximate with their internal row/column buffering.
    pub(super) fn ev_route(&mut self, pid: u32) {
        let invc = self.pk[pid as usize].inp;
        let in_port = invc >> self.vshift;
        let r = in_port / self.radix;
        if self.cfg.tile_buf > 0 && in_port % self.radix < self.p {
            // from a NIC: through the processor tile's FIFO input queue
            let k = self.tile_of(in_port, invc);
            self.pk_link[pid as usize].next = NONE;
            let [head, tail] = self.tile_q[k];
            if head == NONE {
                self.tile_q[k][0] = pid;
            } else {
                self.pk_link[tail as usize].next = pid;
            }
            self.tile_q[k][1] = pid;
            if head == NONE {
                self.tile_advance(k);
            }
            return;
        }
        let (port, vc) = self.route(r, pid);
        self.pk[pid as usize].out_vc = vc as u8;
        self.request(r * self.radix + port, pid);
    }

    /// Processor tile (node * 2 + class) of a terminal input port and VC.
    #[inline]
    fn tile_of(&self, in_port: u32, invc: u32) -> usize {
        let node = (in_port / self.radix) * self.p + in_port % self.radix;
        let class = (invc & (self.nvc - 1)) / self.nv;
        (2 * node + class) as usize
    }

    /// Moves packets from the head of processor tile `k`'s input queue to their output ports
    /// while the router has room for them there. The head is routed when it reaches the head
    /// (adaptive decisions see the load of that moment) and keeps its choice while it waits.
    fn tile_advance(&mut self, k: usize) {
        let r = (k as u32 / 2) / self.p;
        loop {
            let pid = self.tile_q[k][0];
            if pid == NONE {
                return;
            }
            let port = if self.tile_port[k] != NONE {
                self.tile_port[k]
            } else {
                let (port, vc) = self.route(r, pid);
                self.pk[pid as usize].out_vc = vc as u8;
                self.tile_port[k] = port;
                port
            };
            let l = self.pk[pid as usize].flits as u16;
            let held = &mut self.tile_held[k * self.radix as usize + port as usize];
            if *held > 0 && u32::from(*held + l) > self.cfg.tile_buf {
                return; // head-of-line blocked until a packet of this tile leaves through `port`
            }
            *held += l;
            let next = self.pk_link[pid as usize].next;
            self.tile_q[k][0] = next;
            if next == NONE {
                self.tile_q[k][1] = NONE;
            }
            self.tile_port[k] = NONE;
            self.request(r * self.radix + port, pid);
        }
    }

    /// Packet `pid`, routed, requests output port `out` (port id).
    fn request(&mut self, out: u32, pid: u32) {
        let o = out as usize;
        let p = &self.pk[pid as usize];
        self.pk_link[pid as usize] = Link { next: NONE, flits: p.flits, out_vc: p.out_vc };
        self.ports[o].waiting += p.flits as u32;
        self.ports[o].waiting_vcs |= 1 << p.out_vc;
        self.ports[o].waiting_min = self.ports[o].waiting_min.min(p.flits);
        if self.ports[o].wait_tail == NONE {
            self.ports[o].wait_head = pid;
        } else {
            self.pk_link[self.ports[o].wait_tail as usize].next = pid;
        }
        self.ports[o].wait_tail = pid;
        self.try_alloc(out);
    }

    pub(super) fn ev_credit(&mut self, outvc: u32, data: u32) {
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

    pub(super) fn try_alloc(&mut self, port: u32) {
        let o = port as usize;
        if self.ports[o].busy > self.now {
            return;
        }
        let term = self.ports[o].cls == 0;
        let shared = self.ports[o].shared;
        let base = port * self.nvc;
        if !term {
            let need = self.ports[o].waiting_min as u32;
            let mut vcs = self.ports[o].waiting_vcs;
            let mut room = shared >= need;
            while vcs != 0 && !room {
                room = self.credits[(base + vcs.trailing_zeros()) as usize] as u32 >= need;
                vcs &= vcs - 1;
            }
            if !room {
                return;
            }
        }
        let (mut vcs, mut min) = (0u32, u8::MAX);
        let mut prev = NONE;
        let mut cur = self.ports[o].wait_head;
        while cur != NONE {
            let k = self.pk_link[cur as usize];
            let ok =
                term || shared >= k.flits as u32 || self.credits[(base + k.out_vc as u32) as usize] >= k.flits as u16;
            if ok {
                if prev == NONE {
                    self.ports[o].wait_head = k.next;
                } else {
                    self.pk_link[prev as usize].next = k.next;
                }
                if self.ports[o].wait_tail == cur {
                    self.ports[o].wait_tail = prev;
                }
                if self.ports[o].wait_head == NONE {
                    self.ports[o].waiting_vcs = 0;
                    self.ports[o].waiting_min = u8::MAX;
                }
                self.grant(port, cur);
                return;
            }
            vcs |= 1 << k.out_vc;
            min = min.min(k.flits);
            prev = cur;
            cur = k.next;
        }
        self.ports[o].waiting_vcs = vcs;
        self.ports[o].waiting_min = min;
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
        let in_cls = self.port_cls[(in_port % self.radix) as usize] as usize;
        let back = end + self.lat[in_cls];
        let mut tile = None;
        if in_cls == 0 {
            let node = (in_port / self.radix) * self.p + in_port % self.radix;
            let class = (invc & (self.nvc - 1)) / self.nv;
            let sh = if p.shared != 0 { SHARED_BIT } else { 0 };
            self.push(back, EV_NIC_CREDIT, node, sh | (class << 16) | l as u32);
            if self.cfg.tile_buf > 0 {
                let k = (2 * node + class) as usize;
                self.tile_held[k * self.radix as usize + (port % self.radix) as usize] -= l as u16;
                tile = Some(k);
            }
        } else {
            let up = self.topo.peer[in_port as usize];
            let sh = if p.shared != 0 { SHARED_BIT } else { 0 };
            self.push(back, EV_CREDIT, up * self.nvc + (invc & (self.nvc - 1)), sh | l as u32);
        }
        // travel downstream
        if cls == 0 {
            self.push(end + self.lat[0], EV_EJECT, pid, 0);
        } else {
            self.forward(port, pid, start, end);
        }
        if let Some(k) = tile {
            if self.tile_q[k][0] != NONE {
                self.tile_advance(k);
            }
        }
    }

    /// Packet `pid` leaves on router-to-router port `port`, serialized from `start` to `end`.
    fn forward(&mut self, port: u32, pid: u32, start: u64, end: u64) {
        let o = port as usize;
        let cls = self.ports[o].cls as usize;
        let p = &self.pk[pid as usize];
        let l = p.flits as u64;
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
        q.tail_at = end + lat;
        q.inp = dport * self.nvc + ovc;
        let t = start + lat + self.ft[cls] + self.cfg.router_delay;
        self.push(t, EV_ROUTE, pid, 0);
    }
}
