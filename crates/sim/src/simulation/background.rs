//! Background traffic: the nodes it runs on (first those sharing a router with the measured
//! ranks, then random nodes of the measured job's groups or of the whole machine), open-loop
//! messages at a fraction of the NIC's injection bandwidth (to random nodes, to the next group,
//! or inside the jobs of a production machine), or GPCNeT's closed-loop congestor jobs.

use super::{Simulation, USER_NOISE};
use crate::experiment::{Background, ExperimentSpec, JobPattern, PolicySpec, PRODUCTION_JOB_NODES, PRODUCTION_MIX};
use crate::workload::Workload;
use aar_engine::model::request_flits;
use aar_engine::{AbOrder, Transfer};
use serde::Serialize;

/// Where an open-loop source sends.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Destinations {
    /// uniformly random nodes of the background's scope
    Random,
    /// random nodes of the next group (group i to group i+1, the canonical worst case)
    NextGroup,
    /// the source's job of a production machine (index into its jobs), with the job's pattern
    Job { job: u32, pattern: JobPattern },
}

/// One node sending open-loop background traffic.
#[derive(Clone, Debug, Serialize)]
pub struct NoiseSource {
    pub node: u32,
    /// offered load: fraction of the NIC's injection bandwidth
    pub load: f64,
    pub destinations: Destinations,
    /// mean gap between messages, ticks
    #[serde(skip)]
    gap: f64,
    /// the next member of the job an all-to-all source sends to, a neighbour source's side
    #[serde(skip)]
    cursor: u32,
}

impl Simulation {
    /// Places the experiment's background around the measured job's `nodes` and schedules it.
    pub(super) fn add_background(&mut self, spec: &ExperimentSpec, nodes: &[u32]) {
        // background nodes: same routers as the measured ranks first, then the scope at random
        let topo = &self.net.topo;
        let p = topo.p;
        let scope = spec.background_scope(topo, nodes);
        let in_scope: std::collections::HashSet<u32> = scope.iter().copied().collect();
        let mut near: Vec<u32> =
            nodes.iter().flat_map(|&n| (n / p * p)..(n / p * p + p)).filter(|n| in_scope.contains(n)).collect();
        near.sort();
        near.dedup();
        self.rng.shuffle(&mut near);
        let near_set: std::collections::HashSet<u32> = near.iter().copied().collect();
        let mut rest: Vec<u32> = scope.iter().copied().filter(|n| !near_set.contains(n)).collect();
        self.rng.shuffle(&mut rest);
        let mut free = near;
        free.extend(rest);
        free.truncate(spec.background_nodes as usize);
        if spec.background != Background::None {
            self.background_nodes = free.len() as u32;
        }
        let cfg = &spec.net;
        let gap = |bytes: u64, load: f64| request_flits(bytes, Transfer::Put) as f64 / load * cfg.nic_cycle as f64;
        let source = |node: u32, load: f64, destinations, bytes| NoiseSource {
            node,
            load,
            destinations,
            gap: gap(bytes, load),
            cursor: 0,
        };
        match spec.background {
            Background::None => {}
            Background::Uniform { load, bytes } | Background::WorstCase { load, bytes } => {
                if load > 0.0 {
                    let d = if matches!(spec.background, Background::WorstCase { .. }) {
                        Destinations::NextGroup
                    } else {
                        Destinations::Random
                    };
                    self.noise = free.iter().map(|&n| source(n, load, d, bytes)).collect();
                    self.noise_targets = scope;
                    self.noise_bytes = bytes;
                }
            }
            Background::Production { load, bytes } => {
                // the jobs take the free nodes in a shuffled order: fragmented allocations
                let mut order = free;
                self.rng.shuffle(&mut order);
                for (j, members) in order.chunks(PRODUCTION_JOB_NODES).enumerate() {
                    let (pattern, share) = PRODUCTION_MIX[j % PRODUCTION_MIX.len()];
                    if share > 0.0 && load > 0.0 && members.len() >= 2 {
                        let d = Destinations::Job { job: j as u32, pattern };
                        // an incast's root receives only
                        let senders = if pattern == JobPattern::Incast { &members[1..] } else { members };
                        self.noise.extend(senders.iter().map(|&n| source(n, load * share, d, bytes)));
                    }
                    self.noise_jobs.push(members.to_vec());
                }
                self.noise_bytes = bytes;
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
                            None,
                        );
                    }
                }
            }
        }
        // uniform and worst-case sources all start within the lead time; a production machine's
        // start as a stationary Poisson process (an exponential first gap), so that what it
        // offers over any window is its load, sources of low load included
        let lead = cfg.ns_to_ticks(spec.background_lead_ns);
        let stationary = matches!(spec.background, Background::Production { .. });
        for i in 0..self.noise.len() {
            let u = self.rng.f64();
            let t = if stationary {
                (-(1.0 - u).ln() * self.noise[i].gap) as u64
            } else {
                ((u * self.noise[i].gap) as u64).min(lead)
            };
            self.net.schedule_user(t, i as u32, USER_NOISE);
        }
    }

    /// The destination of source `i`'s next message.
    fn noise_destination(&mut self, i: usize) -> u32 {
        let node = self.noise[i].node;
        let pick = |rng: &mut crate::rng::Rng, v: &[u32]| v[rng.below(v.len() as u32) as usize];
        match self.noise[i].destinations {
            Destinations::Random => pick(&mut self.rng, &self.noise_targets),
            Destinations::NextGroup => {
                let npg = self.net.topo.n_nodes / self.node_groups;
                let g = (node / npg + 1) % self.node_groups;
                let cands: Vec<u32> = self.noise_targets.iter().copied().filter(|&t| t / npg == g).collect();
                if cands.is_empty() {
                    pick(&mut self.rng, &self.noise_targets)
                } else {
                    pick(&mut self.rng, &cands)
                }
            }
            Destinations::Job { job, pattern } => {
                let members = &self.noise_jobs[job as usize];
                let n = members.len() as u32;
                let me = members.iter().position(|&m| m == node).unwrap_or(0) as u32;
                let src = &mut self.noise[i];
                match pattern {
                    JobPattern::Uniform | JobPattern::Idle => pick(&mut self.rng, members),
                    JobPattern::Neighbour => {
                        src.cursor ^= 1;
                        members[((me + if src.cursor == 1 { 1 } else { n - 1 }) % n) as usize]
                    }
                    JobPattern::AllToAll => {
                        src.cursor = src.cursor % (n - 1) + 1;
                        members[((me + src.cursor) % n) as usize]
                    }
                    JobPattern::Incast => members[0],
                }
            }
        }
    }

    /// One open-loop background message from source `i` (unless 16 are already queued at its
    /// NIC), and the next one after an exponential gap.
    pub(super) fn noise(&mut self, i: u32) {
        let i = i as usize;
        let node = self.noise[i].node;
        // throttle: an open-loop source does not queue more than 16 messages
        if self.net.queued_messages(node) < 16 {
            let dst = self.noise_destination(i);
            if dst != node {
                self.net.post(node, dst, self.noise_bytes, Transfer::Put, self.noise_mode, u32::MAX, u32::MAX, 0);
            }
        }
        let gap = (-(1.0 - self.rng.f64()).ln() * self.noise[i].gap) as u64;
        let t = self.net.now + gap.max(1);
        self.net.schedule_user(t, i as u32, USER_NOISE);
    }
}
