//! Routing functions: where a packet goes next from a router. MIN_HASH and IN_ORDER take a
//! minimal path (hashed per packet or per source and destination), NMIN_HASH a Valiant path
//! through a random intermediate group or router, and the adaptive modes choose per packet
//! between minimal and non-minimal candidates by the load of their first output port, with the
//! bias of the routing mode (UGAL-L).

use super::{Net, F_DONE, F_INTER_ROUTER, F_NONMIN};
use crate::config::{Bias, Mode};
use crate::rng::mix64;
use crate::topology::NONE;

impl Net {
    #[inline]
    pub(super) fn path_bits(&mut self, mode: u8, src: u32, dst: u32) -> u32 {
        if mode == Mode::InOrder as u8 {
            (mix64(((src as u64) << 32) | dst as u64) >> 32) as u32
        } else {
            self.rng.next_u32()
        }
    }

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
    pub(super) fn route(&mut self, r: u32, pid: u32) -> (u32, u32) {
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
}
