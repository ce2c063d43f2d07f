//! The ranks of a job as state machines: an iteration is the workload's phases in order; a phase
//! posts its sends (each decided by the rank's engine, with the NIC counters read before and/or
//! after the post when the engine asks), waits for its sends to complete and its expected messages to arrive,
//! then computes. Iteration times, counter windows and engine statistics go to the rank's record.

use super::{Simulation, USER_WAKE};
use crate::config::{Mode, N_MODES};
use crate::experiment::{arm_schedule, engine_config, order_name, PolicySpec};
use crate::net::{NicCounters, Note};
use crate::record::{RankIteration, RankRecord, RANK_SCHEMA};
use crate::workload::{Phase, Workload};
use aar_engine::{
    AbOrder, AbSchedule, CounterSample, DestinationClass, Engine, Message, NodeLocation, SideBytes, Transfer,
};
use std::collections::HashMap;

pub(super) struct Rank {
    pub(super) job: usize,
    pub(super) local: u32,
    pub(super) node: u32,
    pub(super) phase: usize,
    pub(super) iter: u32,
    pub(super) pending_sends: u32,
    /// messages (source rank, tagged) the current phase still expects, with their count
    pub(super) remaining: HashMap<(u32, u32), u32>,
    /// messages that arrived before the phase expecting them started, with their count
    pub(super) arrived: HashMap<(u32, u32), u32>,
    pub(super) iter_start: u64,
    /// when the collective call in progress began, if its time goes to the engine
    pub(super) call_start: Option<u64>,
    pub(super) iter_ctr: NicCounters,
    /// messages and bytes posted in the current iteration, by mode
    pub(super) iter_msgs: [u64; N_MODES],
    pub(super) iter_bytes: [u64; N_MODES],
    /// the engine's (decisions, switches) when the current iteration started
    pub(super) iter_engine: (u64, u64),
    pub(super) done: bool,
    pub(super) engine: Option<Engine>,
    pub(super) arm: usize,
    pub(super) rec: RankRecord,
}

/// What only the measured job has.
#[derive(Clone, Copy, Default)]
pub(super) struct Measured {
    /// iterations run before recording
    pub(super) warmup: u32,
    /// decisions per counter window; `None`: the engine's default
    pub(super) window_decisions: Option<u32>,
    /// ranks start each iteration together
    pub(super) synchronized: bool,
    /// ranks sharing each node's NIC (the engines' `ranks_per_node`)
    pub(super) ranks_per_node: u32,
}

/// A message between two ranks of one node goes through shared memory (Cray MPICH's intra-node
/// path), not the NIC: it takes this latency plus its bytes at [`SHM_BYTES_PER_NS`]. Orders of
/// magnitude of a single-copy transfer between two cores, not calibrated: no measurement of
/// this repository depends on the value, only on such messages costing no network.
pub const SHM_LATENCY_NS: f64 = 500.0;
/// Copy bandwidth of a shared-memory message, bytes per ns (GB/s).
pub const SHM_BYTES_PER_NS: f64 = 8.0;

pub(super) struct Job {
    pub(super) first: u32,
    pub(super) n: u32,
    pub(super) phases: Vec<Vec<Phase>>,
    pub(super) iterations: u32,
    pub(super) arms: Vec<PolicySpec>,
    pub(super) schedule: AbSchedule,
    pub(super) measured: bool,
    pub(super) done_ranks: u32,
    /// ranks without phases: done from the start
    pub(super) idle_ranks: u32,
    pub(super) default_mode: Mode,
    pub(super) warmup: u32,
    /// ranks start the next iteration together (see `ExperimentSpec::synchronized_iterations`)
    pub(super) synchronized: bool,
    /// ranks that ended the current iteration and wait for the others to end it
    pub(super) at_barrier: Vec<usize>,
    /// the job's iteration time is this rank's (ping-pong: the initiator) or the slowest rank's
    pub(super) timing_rank: Option<u32>,
    /// ranks sharing each node's NIC (1 outside the measured job)
    pub(super) ranks_per_node: u32,
    /// per recorded iteration: max rank duration
    pub(super) iter_max: Vec<u64>,
    /// per recorded iteration: (stall ratio, latency cycles) of rank 0's NIC window
    pub(super) iter_ctr: Vec<(f64, f64)>,
}

/// Removes one `key` from a multiset; false if it holds none.
fn take(set: &mut HashMap<(u32, u32), u32>, key: (u32, u32)) -> bool {
    let Some(n) = set.get_mut(&key) else { return false };
    *n -= 1;
    if *n == 0 {
        set.remove(&key);
    }
    true
}

fn tag_of(iter: u32, tag: u32) -> u32 {
    ((iter & 0xFFFF) << 12) | (tag & 0xFFF)
}

impl Simulation {
    /// Adds a job of `nodes.len()` ranks on `nodes` running `wl` for `iterations` (warm-up
    /// included) under the A/B `arms`; a measured job's ranks run the engine and are recorded.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add_job(
        &mut self,
        wl: &Workload,
        nodes: &[u32],
        ring: &[u32],
        iterations: u32,
        arms: Vec<PolicySpec>,
        order: AbOrder,
        measured: Option<Measured>,
    ) {
        let Measured { warmup, window_decisions, synchronized, ranks_per_node } = measured.unwrap_or_default();
        let measured = measured.is_some();
        let n = nodes.len() as u32;
        let first = self.ranks.len() as u32;
        let job = self.jobs.len();
        let phases: Vec<Vec<Phase>> = (0..n).map(|r| wl.phases(r, n, ring)).collect();
        let default_mode = Mode::Adaptive0;
        for (i, &node) in nodes.iter().enumerate() {
            let engine =
                if measured { Some(Engine::new(engine_config(window_decisions, ranks_per_node))) } else { None };
            let topo = &self.net.topo;
            let rec = RankRecord {
                schema: RANK_SCHEMA.into(),
                workload: wl.name(),
                rank: i as u32,
                nranks: n,
                node,
                router: topo.router_of_node(node),
                group: topo.group_of_node(node),
                arms: arms.iter().map(|a| a.name()).collect(),
                order: order_name(&arms, order),
                ..Default::default()
            };
            self.ranks.push(Rank {
                job,
                local: i as u32,
                node,
                phase: 0,
                iter: 0,
                pending_sends: 0,
                remaining: HashMap::new(),
                arrived: HashMap::new(),
                iter_start: 0,
                call_start: None,
                iter_ctr: NicCounters::default(),
                iter_msgs: [0; N_MODES],
                iter_bytes: [0; N_MODES],
                iter_engine: (0, 0),
                done: phases[i].is_empty(),
                engine,
                arm: 0,
                rec,
            });
        }
        let done_ranks = phases.iter().filter(|p| p.is_empty()).count() as u32;
        let timing_rank = if matches!(wl, Workload::PingPong { .. }) { Some(0) } else { None };
        let schedule = arm_schedule(&arms, order);
        self.jobs.push(Job {
            first,
            n,
            phases,
            iterations,
            arms,
            schedule,
            measured,
            done_ranks,
            idle_ranks: done_ranks,
            default_mode,
            warmup,
            synchronized,
            at_barrier: Vec::new(),
            timing_rank,
            ranks_per_node: ranks_per_node.max(1),
            iter_max: Vec::new(),
            iter_ctr: Vec::new(),
        });
    }

    pub(super) fn on_note(&mut self, n: Note) {
        match n {
            Note::Arrived(m) => {
                let msg = self.net.msgs[m as usize];
                if msg.dst_rank == u32::MAX {
                    return;
                }
                let r = msg.dst_rank as usize;
                let key = (msg.src_rank, msg.tag);
                let rk = &mut self.ranks[r];
                if take(&mut rk.remaining, key) {
                    self.check_phase(r);
                } else {
                    *rk.arrived.entry(key).or_default() += 1;
                }
            }
            Note::Completed(m) => {
                let msg = self.net.msgs[m as usize];
                self.net.free_msg(m);
                if msg.src_rank == u32::MAX {
                    return;
                }
                let r = msg.src_rank as usize;
                if self.jobs[self.ranks[r].job].measured {
                    self.reqpk += msg.npk as u64;
                    self.nonmin += msg.nonmin_pk as u64;
                    self.reqpk_mode[msg.mode as usize] += msg.npk as u64;
                    self.nonmin_mode[msg.mode as usize] += msg.nonmin_pk as u64;
                }
                self.ranks[r].pending_sends -= 1;
                self.check_phase(r);
            }
        }
    }

    pub(super) fn start_iteration(&mut self, r: usize) {
        let now = self.net.now;
        let job = self.ranks[r].job;
        if self.ranks[r].done {
            return;
        }
        let decided = self.node_decided(job, self.ranks[r].node);
        let rk = &mut self.ranks[r];
        rk.iter_start = now;
        rk.iter_ctr = self.net.counters(rk.node);
        rk.iter_msgs = [0; N_MODES];
        rk.iter_bytes = [0; N_MODES];
        rk.phase = 0;
        let j = &self.jobs[job];
        rk.arm = j.schedule.index_at(rk.iter.into());
        if let Some(e) = &mut rk.engine {
            // The previous iteration is over: its window closes with everything its sends
            // injected, as libaar.so closes it at an iteration boundary.
            if e.window_open() {
                e.observe_node(sample(&self.net.counters(rk.node)), decided);
            }
            if let Some(p) = j.arms[rk.arm].engine_policy() {
                e.set_policy(p);
            }
            rk.iter_engine = engine_counts(e);
        }
        self.start_phase(r);
    }

    fn start_phase(&mut self, r: usize) {
        let job = self.ranks[r].job;
        let (local, pi, iter) = (self.ranks[r].local, self.ranks[r].phase, self.ranks[r].iter);
        let ph = &self.jobs[job].phases[local as usize][pi];
        let sends = ph.sends.clone();
        let alltoall = ph.alltoall;
        let call_begins = ph.call_begins;
        let first = self.jobs[job].first;
        let arm = self.jobs[job].arms[self.ranks[r].arm];
        if let (Some(key), Some(e), true) = (call_begins, &mut self.ranks[r].engine, arm.engine_policy().is_some()) {
            // as libaar.so at an MPI collective's entry
            e.begin_call(key, alltoall);
            self.ranks[r].call_start = Some(self.net.now);
        }
        let default_mode = if alltoall { Mode::Adaptive1 } else { self.jobs[job].default_mode };
        {
            let rk = &mut self.ranks[r];
            rk.remaining.clear();
            for &(s, t) in &ph.recvs {
                let key = (first + s, tag_of(iter, t));
                // a message that arrived before this phase started is not waited for
                if !take(&mut rk.arrived, key) {
                    *rk.remaining.entry(key).or_default() += 1;
                }
            }
            rk.pending_sends = sends.len() as u32;
        }
        for (dst, bytes, tag) in sends {
            let dst_rank = first + dst;
            let dst_node = self.ranks[dst_rank as usize].node;
            let node = self.ranks[r].node;
            if dst_node == node {
                // shared memory: no uGNI post, so neither libaar.so nor the NIC sees it
                let rk = &mut self.ranks[r];
                if self.jobs[job].measured && rk.iter >= self.jobs[job].warmup {
                    rk.rec.intra_node_messages += 1;
                    rk.rec.intra_node_bytes += bytes;
                }
                let delay = self.net.cfg.ns_to_ticks(SHM_LATENCY_NS + bytes as f64 / SHM_BYTES_PER_NS);
                self.net.post_local(node, bytes, r as u32, dst_rank, tag_of(iter, tag), delay);
                continue;
            }
            let engine_arm = arm.engine_policy().is_some();
            let topo = &self.net.topo;
            let at = |n: u32| NodeLocation { group: topo.group_of_node(n), router: topo.router_of_node(n) };
            let class = DestinationClass::between(at(node), at(dst_node));
            let now_ns = self.net.cfg.ticks_to_whole_ns(self.net.now);
            let (mode, read_before, read) = match (&mut self.ranks[r].engine, arm) {
                (Some(e), _) if engine_arm => {
                    let msg = Message {
                        bytes,
                        transfer: Transfer::Put,
                        endpoint: dst_node.into(),
                        class,
                        posted_ns: Some(now_ns),
                    };
                    let d = e.decide(&msg, alltoall);
                    (d.mode.map(Mode::from).unwrap_or(default_mode), d.read_before, d.read_counters)
                }
                (_, PolicySpec::Fixed(m)) => (m, false, false),
                _ => (default_mode, false, false),
            };
            if read_before {
                // the engine's window of the old side closes without this message
                self.observe(r);
            }
            let rk = &mut self.ranks[r];
            if self.jobs[job].measured && rk.iter >= self.jobs[job].warmup {
                let k = mode as usize;
                rk.rec.messages_per_mode[k] += 1;
                rk.rec.bytes_per_mode[k] += bytes;
                rk.iter_msgs[k] += 1;
                rk.iter_bytes[k] += bytes;
            }
            self.net.post(node, dst_node, bytes, Transfer::Put, mode, r as u32, dst_rank, tag_of(iter, tag));
            if read {
                self.observe(r);
            }
        }
        self.check_phase(r);
    }

    /// Rank `r`'s engine reads its node's counters, with the decided bytes of the node's ranks.
    fn observe(&mut self, r: usize) {
        let (job, node) = (self.ranks[r].job, self.ranks[r].node);
        let c = self.net.counters(node);
        let decided = self.node_decided(job, node);
        if let Some(e) = &mut self.ranks[r].engine {
            e.observe_node(sample(&c), decided);
        }
    }

    /// The decided bytes per side of the measured job's ranks on `node` (its engines' sum), as
    /// libaar.so's ranks add them up in their node's segment. Only with ranks sharing a node.
    fn node_decided(&self, job: usize, node: u32) -> SideBytes {
        let j = &self.jobs[job];
        let ranks = &self.ranks[j.first as usize..(j.first + j.n) as usize];
        if j.ranks_per_node <= 1 {
            return SideBytes::default();
        }
        ranks
            .iter()
            .filter(|rk| rk.node == node)
            .filter_map(|rk| rk.engine.as_ref())
            .fold(SideBytes::default(), |sum, e| sum.plus(e.decided_bytes()))
    }

    fn check_phase(&mut self, r: usize) {
        let rk = &self.ranks[r];
        if rk.done || rk.pending_sends > 0 || !rk.remaining.is_empty() {
            return;
        }
        let job = rk.job;
        let c = self.jobs[job].phases[rk.local as usize][rk.phase].compute_ns;
        if c > 0.0 {
            let t = self.net.now + self.net.cfg.ns_to_ticks(c);
            self.ranks[r].pending_sends = u32::MAX; // in compute: not complete until woken
            self.net.schedule_user(t, r as u32, USER_WAKE);
        } else {
            self.next_phase(r);
        }
    }

    pub(super) fn after_compute(&mut self, r: usize) {
        self.ranks[r].pending_sends = 0;
        self.next_phase(r);
    }

    fn next_phase(&mut self, r: usize) {
        let job = self.ranks[r].job;
        let local = self.ranks[r].local as usize;
        if self.jobs[job].phases[local][self.ranks[r].phase].call_ends {
            let now = self.net.now;
            let rk = &mut self.ranks[r];
            if let (Some(start), Some(e)) = (rk.call_start.take(), &mut rk.engine) {
                e.end_call(self.net.cfg.ticks_to_whole_ns(now - start));
            }
        }
        self.ranks[r].phase += 1;
        if self.ranks[r].phase < self.jobs[job].phases[local].len() {
            self.start_phase(r);
            return;
        }
        // iteration finished
        let now = self.net.now;
        let c1 = self.net.counters(self.ranks[r].node);
        let rk = &mut self.ranks[r];
        let dur = now - rk.iter_start;
        let c0 = rk.iter_ctr;
        let df = c1.req_flits.saturating_sub(c0.req_flits);
        let dp = c1.rsp_packets.saturating_sub(c0.rsp_packets);
        let stall_ratio = if df > 0 { c1.req_stalled.saturating_sub(c0.req_stalled) as f64 / df as f64 } else { 0.0 };
        let latency_cycles =
            if dp > 0 { c1.rsp_latency.saturating_sub(c0.rsp_latency) as f64 / dp as f64 } else { 0.0 };
        let j = &mut self.jobs[job];
        if j.measured && rk.iter >= j.warmup {
            let idx = (rk.iter - j.warmup) as usize;
            if j.iter_max.len() <= idx {
                j.iter_max.resize(idx + 1, 0);
            }
            if j.timing_rank.is_none() || j.timing_rank == Some(rk.local) {
                j.iter_max[idx] = j.iter_max[idx].max(dur);
            }
            if j.iter_ctr.len() <= idx {
                j.iter_ctr.resize(idx + 1, (0.0, 0.0));
            }
            if rk.local == 0 {
                j.iter_ctr[idx] = (stall_ratio, latency_cycles);
            }
            let (decisions, switches) = match &rk.engine {
                Some(e) => {
                    let (d, s) = engine_counts(e);
                    (d - rk.iter_engine.0, s - rk.iter_engine.1)
                }
                None => (0, 0),
            };
            let cfg = &self.net.cfg;
            rk.rec.iterations.push(RankIteration {
                i: rk.iter.into(),
                arm: rk.arm,
                start_ns: cfg.ticks_to_whole_ns(rk.iter_start),
                end_ns: cfg.ticks_to_whole_ns(now),
                messages: rk.iter_msgs,
                bytes: rk.iter_bytes,
                decisions,
                switches,
                latency_us: (dp > 0).then(|| cfg.nic_cycles_to_us(latency_cycles)),
                stall_ratio: (df > 0).then_some(stall_ratio),
            });
        }
        rk.iter += 1;
        if rk.iter >= j.iterations {
            rk.done = true;
            j.done_ranks += 1;
            return;
        }
        if !j.synchronized {
            self.start_iteration(r);
            return;
        }
        // Ranks without phases are done from the start and never end an iteration.
        j.at_barrier.push(r);
        if j.at_barrier.len() as u32 != j.n - j.idle_ranks {
            return;
        }
        for r in std::mem::take(&mut j.at_barrier) {
            self.start_iteration(r);
        }
    }
}

/// The engine's cumulative (threshold decisions, switches of side).
fn engine_counts(e: &Engine) -> (u64, u64) {
    let s = e.stats();
    (s.decisions, s.switches_to_low_latency + s.switches_to_low_stall)
}

fn sample(c: &NicCounters) -> CounterSample {
    CounterSample {
        req_flits: c.req_flits as i64,
        req_stalled: c.req_stalled as i64,
        rsp_latency: c.rsp_latency as i64,
        rsp_packets: c.rsp_packets as i64,
        rsp_stalled: Some(c.rsp_stalled as i64),
    }
}
