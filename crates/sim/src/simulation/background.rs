//! Background traffic: the nodes it runs on (first those sharing a router with the measured
//! ranks, then random nodes of the measured job's groups or of the whole machine), open-loop
//! messages at a fraction of the NIC's injection bandwidth, or GPCNeT's closed-loop congestor
//! jobs.

use super::{Simulation, USER_NOISE};
use crate::experiment::{Background, ExperimentSpec, PolicySpec};
use crate::workload::Workload;
use aar_engine::model::request_flits;
use aar_engine::{AbOrder, Transfer};

impl Simulation {
    /// Places the experiment's background around the measured job's `nodes` and schedules it.
    pub(super) fn add_background(&mut self, spec: &ExperimentSpec, nodes: &[u32]) {
        // background nodes: same routers as the measured ranks first, then the scope at random
        let topo = &self.net.topo;
        let p = topo.p;
        let npg = p * topo.routers_per_group;
        let used: std::collections::HashSet<u32> = nodes.iter().copied().collect();
        let groups: std::collections::HashSet<u32> = nodes.iter().map(|&n| n / npg).collect();
        let in_scope = |n: u32| !used.contains(&n) && (!spec.background_local || groups.contains(&(n / npg)));
        let mut near: Vec<u32> =
            nodes.iter().flat_map(|&n| (n / p * p)..(n / p * p + p)).filter(|&n| in_scope(n)).collect();
        near.sort();
        near.dedup();
        self.rng.shuffle(&mut near);
        let mut rest: Vec<u32> = (0..topo.n_nodes).filter(|&n| in_scope(n) && !near.contains(&n)).collect();
        let scope: Vec<u32> = (0..topo.n_nodes).filter(|&n| in_scope(n)).collect();
        self.rng.shuffle(&mut rest);
        let mut free = near;
        free.extend(rest);
        free.truncate(spec.background_nodes as usize);
        let cfg = &spec.net;
        match spec.background {
            Background::None => {}
            Background::Uniform { load, bytes } | Background::WorstCase { load, bytes } => {
                if load > 0.0 && !free.is_empty() {
                    let flits = request_flits(bytes, Transfer::Put) as f64;
                    self.noise_gap = flits / load * cfg.nic_cycle as f64;
                    self.noise_bytes = bytes;
                    self.noise_is_target_group = matches!(spec.background, Background::WorstCase { .. });
                    self.noise_nodes = free.clone();
                    self.noise_targets = scope.clone();
                    let lead = cfg.ns_to_ticks(spec.background_lead_ns);
                    for &n in &self.noise_nodes {
                        let t = (self.rng.f64() * self.noise_gap) as u64;
                        self.net.schedule_user(t.min(lead), n, USER_NOISE);
                    }
                }
            }
            Background::Congestors { bytes } => {
                let k = free.len() / 3;
                if k >= 2 {
                    let wl = [Workload::Incast { bytes }, Workload::Alltoall { bytes }, Workload::Bcast { bytes }];
                    for (i, wl) in wl.iter().enumerate() {
                        let ns = &free[i * k..(i + 1) * k];
                        let ring: Vec<u32> = (0..k as u32).collect();
                        self.add_job(
                            wl,
                            ns,
                            &ring,
                            u32::MAX,
                            vec![PolicySpec::Fixed(spec.background_mode)],
                            AbOrder::RoundRobin,
                            false,
                            0,
                        );
                    }
                }
            }
        }
    }

    /// One open-loop background message from `node` (unless 16 are already queued there), and
    /// the next one after an exponential gap.
    pub(super) fn noise(&mut self, node: u32) {
        let net = &mut self.net;
        // throttle: an open-loop source does not queue more than 16 messages
        if net.queued_messages(node) < 16 {
            let dst = if self.noise_is_target_group {
                let npg = net.topo.n_nodes / self.node_groups;
                let g = (node / npg + 1) % self.node_groups;
                let cands: Vec<u32> = self.noise_targets.iter().copied().filter(|&t| t / npg == g).collect();
                if cands.is_empty() {
                    self.noise_targets[self.rng.below(self.noise_targets.len() as u32) as usize]
                } else {
                    cands[self.rng.below(cands.len() as u32) as usize]
                }
            } else {
                self.noise_targets[self.rng.below(self.noise_targets.len() as u32) as usize]
            };
            if dst != node {
                net.post(node, dst, self.noise_bytes, Transfer::Put, self.noise_mode, u32::MAX, u32::MAX, 0);
            }
        }
        let gap = (-(1.0 - self.rng.f64()).ln() * self.noise_gap) as u64;
        let t = self.net.now + gap.max(1);
        self.net.schedule_user(t, node, USER_NOISE);
    }
}
