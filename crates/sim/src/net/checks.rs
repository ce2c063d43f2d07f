//! Invariants of the network core that the tests verify: credit conservation while packets are
//! in flight and after the network has drained.

use super::Net;
use crate::config::class_index;
use crate::topology::PortClass;

impl Net {
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
        bad += self.tile_held.iter().filter(|&&h| h != 0).count();
        bad += self.tile_q.iter().filter(|q| **q != [crate::topology::NONE; 2]).count();
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
