//! An experiment being simulated: the network and the jobs of ranks on it, in the manner of
//! BookSim2's traffic manager. The measured job's ranks run their workload's phases
//! (`rank`), every one of them asking the aar decision engine (`aar-engine`) before each
//! message it sends through the NIC, exactly as libaar.so does (not under the MIN_HASH,
//! NMIN_HASH, IN_ORDER and UGAL arms, which no engine decides); background jobs and open-loop traffic (`background`)
//! share the network. A driver outside the simulator (the emulated uGNI) may post its own
//! messages instead of a measured job.

mod background;
mod rank;

use crate::config::{class_index, Mode, N_MODES};
use crate::experiment::{Background, ExperimentResult, ExperimentSpec, LinkUse};
use crate::net::{Net, Note, NOTES};
use crate::record::IterSample;
use crate::rng::Rng;
use crate::topology::{PortClass, NONE};
use aar_engine::Transfer;
pub use background::{Destinations, NoiseSource};
use rank::{Job, Measured, Rank};
pub use rank::{SHM_BYTES_PER_NS, SHM_LATENCY_NS};
use std::time::Instant;

/// Source and destination rank of messages posted from outside the simulator
/// ([`Simulation::post_external`]).
pub const EXTERNAL_RANK: u32 = u32::MAX - 1;

const USER_WAKE: u32 = 0;
const USER_NOISE: u32 = 1;

/// The network, the jobs on it and the background: built from an [`ExperimentSpec`], then run
/// to the end of the measured job ([`Simulation::run`]) or step by step by an external driver.
pub struct Simulation {
    pub net: Net,
    ranks: Vec<Rank>,
    jobs: Vec<Job>,
    /// the open-loop background's sending nodes (the index is the user event's argument)
    noise: Vec<NoiseSource>,
    /// destinations of `uniform` and `worst-case` backgrounds
    noise_targets: Vec<u32>,
    /// nodes of each job of a production background
    noise_jobs: Vec<Vec<u32>>,
    noise_bytes: u64,
    noise_mode: Mode,
    /// the nodes given to the background: `background_nodes`, or fewer where fewer are free
    background_nodes: u32,
    /// when the measured job starts (after the background's lead time), ticks
    measured_start: u64,
    rng: Rng,
    node_groups: u32,
    nonmin: u64,
    reqpk: u64,
    nonmin_mode: [u64; N_MODES],
    reqpk_mode: [u64; N_MODES],
    /// external messages that have completed and not been collected yet
    external_done: Vec<u32>,
}

/// Run one experiment.
pub fn run_experiment(spec: &ExperimentSpec, label: &str) -> ExperimentResult {
    Simulation::build(spec).run(label.to_string())
}

/// [`run_experiment`], stopped once `max_packets` packets have been delivered
/// ([`Watch::max_packets`]), telling `done` the fraction of the run done as it goes
/// ([`Progress::done`]), as runs in parallel are told ([`crate::parallel::run_all`]).
pub fn run_experiment_told(
    spec: &ExperimentSpec,
    label: &str,
    max_packets: Option<u64>,
    done: &dyn Fn(f64),
) -> ExperimentResult {
    Simulation::build(spec).run_watched(label.to_string(), Watch { max_packets, progress: &mut |p| done(p.done()) })
}

/// How far a run has come ([`Watch::progress`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    pub events: u64,
    /// packets delivered (the job's and the background's)
    pub packets: u64,
    pub sim_time_ns: f64,
    /// iterations (warm-up included) every rank of the measured job has completed, of `iterations`
    pub iterations_done: u32,
    pub iterations: u32,
}

impl Progress {
    /// The fraction of the run done: its iterations every rank has completed.
    pub fn done(&self) -> f64 {
        f64::from(self.iterations_done) / f64::from(self.iterations.max(1))
    }
}

/// What a run is bounded by and told as it goes ([`Simulation::run_watched`]).
pub struct Watch<'a> {
    /// stop once this many packets have been delivered, before the job's end if need be
    pub max_packets: Option<u64>,
    /// called every [`Watch::EVENTS`] events or so, and once at the end
    pub progress: &'a mut dyn FnMut(&Progress),
}

impl Watch<'_> {
    /// Events between two calls of `progress` (a few hundredths of a second of the simulator's).
    pub const EVENTS: u64 = 1 << 16;
    /// Simulated time after which the limit and the progress are looked at, at the latest, ns
    /// (a few hundred packets of one NIC).
    pub const SLICE_NS: f64 = 1000.0;
}

impl Simulation {
    pub fn build(spec: &ExperimentSpec) -> Simulation {
        Self::build_with(spec, true).0
    }

    /// The experiment's network, placement and background traffic without the measured job, for a
    /// driver outside the simulator (the emulated uGNI of crates/emu) that posts its own messages
    /// with [`Simulation::post_external`] and runs the network with [`Simulation::run_until_completed`].
    /// Returns the simulation and the node of each of `spec.ranks` ranks (`spec.ranks_per_node`
    /// consecutive ranks per node): the background avoids these nodes and starts on the ones
    /// sharing their routers, as in an experiment. The workload, arms and iterations of the spec
    /// are not used. Nothing has run yet: the
    /// background's lead time (`spec.background_lead_ns`) is for the caller to run
    /// ([`Simulation::run_until`]).
    pub fn build_external(spec: &ExperimentSpec) -> (Simulation, Vec<u32>) {
        Self::build_with(spec, false)
    }

    fn build_with(spec: &ExperimentSpec, measured_job: bool) -> (Simulation, Vec<u32>) {
        let net = Net::new(spec.net.clone(), spec.seed);
        let mut rng = spec.rng();
        let nodes = spec.node_of_ranks(&net.topo, &mut rng);
        let mut w = Simulation {
            node_groups: net.topo.groups,
            net,
            ranks: Vec::new(),
            jobs: Vec::new(),
            noise: Vec::new(),
            noise_targets: Vec::new(),
            noise_jobs: Vec::new(),
            noise_bytes: 0,
            noise_mode: spec.background_mode,
            background_nodes: 0,
            measured_start: 0,
            rng,
            nonmin: 0,
            reqpk: 0,
            nonmin_mode: [0; N_MODES],
            reqpk_mode: [0; N_MODES],
            external_done: Vec::new(),
        };
        let mut ring: Vec<u32> = (0..spec.ranks).collect();
        w.rng.shuffle(&mut ring);
        if measured_job {
            w.add_job(
                &spec.workload,
                &nodes,
                &ring,
                spec.iterations + spec.warmup_iterations,
                spec.arms.clone(),
                spec.order,
                Some(Measured {
                    warmup: spec.warmup_iterations,
                    window_decisions: spec.window_decisions,
                    synchronized: spec.synchronized_iterations,
                    ranks_per_node: spec.ranks_per_node.max(1),
                }),
            );
        }
        w.add_background(spec, &nodes);
        // GPCNeT-style label of every measured iteration: the congestors run for the whole run, so
        // a run is either congested or isolated; open-loop background traffic gets no label
        let label = match spec.background {
            _ if w.jobs.iter().any(|j| !j.measured) => Some("congested"),
            Background::None => Some("isolated"),
            _ if w.noise.is_empty() => Some("isolated"),
            _ => None,
        };
        let experiment = spec.experiment_id();
        for r in w.ranks.iter_mut().filter(|r| w.jobs[r.job].measured) {
            r.rec.experiment = experiment.clone();
            r.rec.label = label.map(String::from);
        }
        // start: background congestors at 0, the measured job after the lead time
        let lead = spec.net.ns_to_ticks(spec.background_lead_ns);
        let has_bg = !matches!(spec.background, Background::None);
        w.measured_start = if has_bg { lead } else { 0 };
        for r in 0..w.ranks.len() {
            let t = if w.jobs[w.ranks[r].job].measured && has_bg { lead } else { 0 };
            w.net.schedule_user(t, r as u32, USER_WAKE | 0x100_0000);
        }
        (w, nodes)
    }

    /// Posts a message from node `src` to node `dst` at the current time, outside any job: its
    /// completion is collected by [`Simulation::run_until_completed`]. Returns the message id.
    pub fn post_external(&mut self, src: u32, dst: u32, bytes: u64, transfer: Transfer, mode: Mode) -> u32 {
        self.net.post(src, dst, bytes, transfer, mode, EXTERNAL_RANK, EXTERNAL_RANK, 0)
    }

    /// Runs the network, background included, until the external message `id` has completed (all
    /// of its responses are back at the source NIC: `self.net.now` is then its completion time)
    /// or until time `limit` (ticks). Returns whether it completed; a completed message is freed.
    pub fn run_until_completed(&mut self, id: u32, limit: u64) -> bool {
        loop {
            if let Some(i) = self.external_done.iter().position(|&m| m == id) {
                self.external_done.swap_remove(i);
                self.net.free_msg(id);
                return true;
            }
            if !self.step_external(limit) {
                return false;
            }
        }
    }

    /// Runs the network, background included, up to time `t` (ticks).
    pub fn run_until(&mut self, t: u64) {
        while self.step_external(t) {}
        self.net.now = self.net.now.max(t);
    }

    /// One step of the network for an external driver; false when no event is left up to `limit`.
    fn step_external(&mut self, limit: u64) -> bool {
        match self.net.step(limit) {
            None => false,
            Some((NOTES, _)) => {
                let notes: Vec<Note> = self.net.notes.drain(..).collect();
                for n in notes {
                    match n {
                        Note::Arrived(m) if self.net.msgs[m as usize].dst_rank == EXTERNAL_RANK => {}
                        Note::Completed(m) if self.net.msgs[m as usize].src_rank == EXTERNAL_RANK => {
                            self.external_done.push(m)
                        }
                        n => self.on_note(n),
                    }
                }
                true
            }
            Some((a, d)) => {
                self.user_event(a, d);
                true
            }
        }
    }

    fn user_event(&mut self, a: u32, d: u32) {
        if d & 0xFF == USER_NOISE {
            self.noise(a);
        } else if d & 0x100_0000 != 0 {
            self.start_iteration(a as usize);
        } else {
            self.after_compute(a as usize);
        }
    }

    fn measured_done(&self) -> bool {
        self.jobs.iter().filter(|j| j.measured).all(|j| j.done_ranks == j.n)
    }

    /// The open-loop background's sending nodes, their pattern and offered load.
    pub fn background_sources(&self) -> &[NoiseSource] {
        &self.noise
    }

    /// Flits sent so far by every output port of every router (the base of [`Simulation::link_use`]).
    pub fn port_flits(&self) -> Vec<u64> {
        (0..self.net.topo.peer.len()).map(|p| self.net.port_flits(p)).collect()
    }

    /// Utilisation of the links since `base` (flits per port, from [`Simulation::port_flits`]) was
    /// taken at time `t0`: per port, flits times the class's flit time over the elapsed time.
    pub fn link_use(&self, base: &[u64], t0: u64) -> LinkUse {
        let dt = self.net.now.saturating_sub(t0);
        let topo = &self.net.topo;
        let mut sum = [0.0f64; 4];
        let mut n = [0u32; 4];
        let mut global_max = 0.0f64;
        if dt == 0 {
            return LinkUse::default();
        }
        for (port, &flits0) in base.iter().enumerate() {
            let class = topo.class[port];
            if class == PortClass::Unused || (class != PortClass::Terminal && topo.peer[port] == NONE) {
                continue;
            }
            let k = class_index(class);
            let u = (self.net.port_flits(port) - flits0) as f64 * self.net.cfg.flit_time[k] as f64 / dt as f64;
            sum[k] += u;
            n[k] += 1;
            if class == PortClass::Global {
                global_max = global_max.max(u);
            }
        }
        let mean = |k: usize| if n[k] > 0 { sum[k] / f64::from(n[k]) } else { 0.0 };
        LinkUse {
            window_ns: self.net.cfg.ticks_to_ns(dt),
            terminal: mean(0),
            row: mean(1),
            column: mean(2),
            global: mean(3),
            global_max,
        }
    }

    pub fn run(self, label: String) -> ExperimentResult {
        self.run_watched(label, Watch { max_packets: None, progress: &mut |_| {} })
    }

    /// Iterations (warm-up included) every rank of the measured job has completed, of how many.
    fn iterations_done(&self) -> (u32, u32) {
        let job = self.jobs.iter().find(|j| j.measured);
        let ranks = job.map_or(&[][..], |j| &self.ranks[j.first as usize..(j.first + j.n) as usize]);
        // ranks without phases (a ping-pong's others) never start an iteration
        let busy = ranks.iter().filter(|r| !self.jobs[r.job].phases[r.local as usize].is_empty());
        (busy.map(|r| r.iter).min().unwrap_or(0), job.map_or(0, |j| j.iterations))
    }

    fn progress(&self) -> Progress {
        let (iterations_done, iterations) = self.iterations_done();
        Progress {
            events: self.net.totals.events,
            packets: self.net.totals.packets_delivered,
            sim_time_ns: self.net.cfg.ticks_to_ns(self.net.now),
            iterations_done,
            iterations,
        }
    }

    /// [`Simulation::run`], bounded and watched by `watch`: stopped at its limit, the result keeps
    /// the iterations every rank completed ([`ExperimentResult::stopped`]).
    pub fn run_watched(mut self, label: String, watch: Watch) -> ExperimentResult {
        let wall = Instant::now();
        let mut base: Option<(Vec<u64>, u64)> = None;
        let mut next_report = Watch::EVENTS;
        let mut stopped = false;
        // The network runs in slices of simulated time between which the watch is looked at: it
        // would otherwise wait for the next event of a rank or of the background, which a large
        // message holds back for all of its packets.
        let slice = self.net.cfg.ns_to_ticks(Watch::SLICE_NS).max(1);
        'run: while !self.measured_done() {
            if base.is_none() && self.net.now >= self.measured_start {
                base = Some((self.port_flits(), self.net.now));
            }
            let event = loop {
                if self.net.totals.events >= next_report {
                    next_report = self.net.totals.events + Watch::EVENTS;
                    (watch.progress)(&self.progress());
                }
                if watch.max_packets.is_some_and(|max| self.net.totals.packets_delivered >= max) {
                    stopped = true;
                    break 'run;
                }
                let Some(next) = self.net.next_time() else { break None };
                if let Some(event) = self.net.step(next.saturating_add(slice)) {
                    break Some(event);
                }
            };
            match event {
                None => break,
                Some((NOTES, _)) => {
                    let notes: Vec<Note> = self.net.notes.drain(..).collect();
                    for n in notes {
                        self.on_note(n);
                    }
                }
                Some((a, d)) => self.user_event(a, d),
            }
        }
        let links = base.map(|(b, t0)| self.link_use(&b, t0)).unwrap_or_default();
        (watch.progress)(&self.progress());
        if stopped {
            // Only iterations every rank completed: one some ranks are still in has no time yet.
            let done = self.iterations_done().0;
            for j in self.jobs.iter_mut().filter(|j| j.measured) {
                let measured = done.saturating_sub(j.warmup) as usize;
                j.iter_max.truncate(measured);
                j.iter_ctr.truncate(measured);
            }
            for r in &mut self.ranks {
                r.rec.iterations.retain(|it| it.i < u64::from(done));
            }
        }
        let mut iterations = Vec::new();
        let mut records = Vec::new();
        for (ji, j) in self.jobs.iter().enumerate() {
            if !j.measured {
                continue;
            }
            for (i, &t) in j.iter_max.iter().enumerate() {
                let it = i as u32 + j.warmup;
                let arm = j.arms[j.schedule.index_at(it.into())].name();
                let (stall_ratio, latency_cycles) = j.iter_ctr.get(i).copied().unwrap_or((0.0, 0.0));
                iterations.push(IterSample {
                    iteration: it,
                    arm,
                    ns: self.net.cfg.ticks_to_ns(t),
                    stall_ratio,
                    latency_cycles,
                });
            }
            for r in &mut self.ranks[j.first as usize..(j.first + j.n) as usize] {
                if r.job != ji {
                    continue;
                }
                let c = self.net.counters(r.node);
                r.rec.counters = c;
                if let Some(e) = &r.engine {
                    let s = e.stats();
                    r.rec.engine_decisions = s.decisions;
                    r.rec.engine_model_decisions = s.decisions_model;
                    r.rec.switches_to_low_latency = s.switches_to_low_latency;
                    r.rec.switches_to_low_stall = s.switches_to_low_stall;
                    r.rec.windows_valid = s.windows_valid;
                    r.rec.windows_discarded =
                        s.windows_discarded_decreasing + s.windows_discarded_empty + s.windows_discarded_absurd;
                    (r.rec.windows_node_side, r.rec.windows_node_mixed) = (s.windows_node_side, s.windows_node_mixed);
                    if std::env::var_os("AAR_SIM_DEBUG_ENGINE").is_some() {
                        eprintln!("rank {}: {:?}", r.local, s);
                    }
                }
                records.push(r.rec.clone());
            }
        }
        ExperimentResult {
            label,
            iterations,
            records,
            packets: self.net.totals.packets_delivered,
            hops: self.net.totals.hops,
            events: self.net.totals.events,
            sim_time_ns: self.net.cfg.ticks_to_ns(self.net.now),
            wall_s: wall.elapsed().as_secs_f64(),
            nonmin_fraction: if self.reqpk > 0 { self.nonmin as f64 / self.reqpk as f64 } else { 0.0 },
            nonmin_by_mode: Mode::ALL
                .iter()
                .filter(|m| self.reqpk_mode[**m as usize] > 0)
                .map(|m| {
                    (m.name().to_string(), self.nonmin_mode[*m as usize] as f64 / self.reqpk_mode[*m as usize] as f64)
                })
                .collect(),
            links,
            background_nodes: self.background_nodes,
            stopped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NetConfig;
    use crate::workload::{Placement, Workload};

    #[test]
    fn an_external_driver_posts_and_runs_to_completion_among_the_background() {
        let mut spec = ExperimentSpec::new(NetConfig::aries(2), Workload::Barrier, 2, Placement::AcrossGroups);
        spec.background = Background::Uniform { load: 0.3, bytes: 4096 };
        spec.background_nodes = 8;
        let run = || {
            let (mut w, nodes) = Simulation::build_external(&spec);
            let npg = w.net.topo.p * w.net.topo.routers_per_group;
            assert_eq!(nodes, vec![0, npg]);
            let lead = spec.net.ns_to_ticks(spec.background_lead_ns);
            w.run_until(lead);
            assert_eq!(w.net.now, lead);
            let id = w.post_external(nodes[0], nodes[1], 4096, Transfer::Put, Mode::Adaptive3);
            assert!(w.run_until_completed(id, u64::MAX));
            let c = w.net.counters(nodes[0]);
            assert_eq!((c.req_flits, c.rsp_packets), (64 * 5, 64));
            // the background never runs on the driver's nodes
            assert_eq!(w.net.counters(nodes[1]).req_flits, 0);
            (w.net.now, w.net.totals.packets_delivered)
        };
        let (t, delivered) = run();
        assert!(delivered > 2 * 64, "the background ran too");
        assert_eq!(run(), (t, delivered), "deterministic");
    }
}
