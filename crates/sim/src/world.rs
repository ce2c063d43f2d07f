//! Jobs of ranks running workloads on the simulated network; every rank of a measured job runs
//! the aar decision engine (`aar-engine`) before each message, exactly as libaar.so does.

use crate::config::{Mode, NetConfig, N_MODES};
use crate::net::{Net, NicCounters, Note, NOTES};
use crate::record::{IterSample, RankIteration, RankRecord, RANK_SCHEMA};
use crate::rng::Rng;
use crate::workload::{parse_size, Phase, Placement, Workload};
use aar_engine::model::request_flits;
pub use aar_engine::{AbOrder, AbSchedule};
use aar_engine::{CounterSample, Engine, EngineConfig, LatencyUnit, Message, Policy, RoutingMode, Transfer};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What chooses each message's routing mode in a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PolicySpec {
    /// the paper's algorithm (engine `Policy::Auto`)
    Auto,
    /// engine `Policy::Off`: the application's default routing (ADAPTIVE0; ADAPTIVE1 in alltoall)
    Off,
    /// a fixed mode; adaptive ones go through the engine (`Policy::Fixed`), non-adaptive ones are
    /// what the application requested and are never changed
    Fixed(Mode),
}

impl PolicySpec {
    /// The engine's policy names (as in `AAR_MODE`), plus the non-adaptive modes the simulator
    /// can also pin (`MIN_HASH`, `NMIN_HASH`, `IN_ORDER`) and `default` for `off`.
    pub fn parse(s: &str) -> Option<Self> {
        if s.trim().eq_ignore_ascii_case("default") {
            return Some(PolicySpec::Off);
        }
        match aar_engine::Policy::parse(s) {
            Some(aar_engine::Policy::Auto) => Some(PolicySpec::Auto),
            Some(aar_engine::Policy::Off) => Some(PolicySpec::Off),
            _ => Mode::parse(s).map(PolicySpec::Fixed),
        }
    }
    pub fn name(&self) -> String {
        match self {
            PolicySpec::Auto => "auto".into(),
            PolicySpec::Off => "off".into(),
            PolicySpec::Fixed(m) => m.name().into(),
        }
    }

    /// The engine policy of this arm; `None` for the non-adaptive modes, which the engine is not
    /// asked about.
    pub fn engine_policy(&self) -> Option<Policy> {
        match *self {
            PolicySpec::Auto => Some(Policy::Auto),
            PolicySpec::Off => Some(Policy::Off),
            PolicySpec::Fixed(m) => to_engine_mode(m).map(Policy::Fixed),
        }
    }
}

/// The A/B schedule of a job's arms: the engine's [`AbSchedule`], the arithmetic libaar.so uses,
/// so the simulator and real jobs assign iterations to policies identically. The schedule maps an
/// iteration to an arm index from the number of arms and the order alone; arms the engine has no
/// policy for (MIN_HASH, NMIN_HASH, IN_ORDER) are entered as `Policy::Off`, which is never applied
/// (the simulator applies its own [`PolicySpec`] of the index).
pub fn arm_schedule(arms: &[PolicySpec], order: AbOrder) -> AbSchedule {
    AbSchedule::new(arms.iter().map(|a| a.engine_policy().unwrap_or(Policy::Off)).collect(), order)
}

/// Most arms one experiment alternates: the engine's A/B limit.
pub const MAX_ARMS: usize = aar_engine::ab::MAX_POLICIES;

/// How the iteration records name the order: `single` without an A/B experiment.
pub fn order_name(arms: &[PolicySpec], order: AbOrder) -> String {
    if arms.len() == 1 {
        "single".into()
    } else {
        order.to_string()
    }
}

fn to_engine_mode(m: Mode) -> Option<RoutingMode> {
    Some(match m {
        Mode::Adaptive0 => RoutingMode::Adaptive0,
        Mode::Adaptive1 => RoutingMode::Adaptive1,
        Mode::Adaptive2 => RoutingMode::Adaptive2,
        Mode::Adaptive3 => RoutingMode::Adaptive3,
        _ => return None,
    })
}

fn from_engine_mode(m: RoutingMode) -> Mode {
    match m {
        RoutingMode::Adaptive0 => Mode::Adaptive0,
        RoutingMode::Adaptive1 => Mode::Adaptive1,
        RoutingMode::Adaptive2 => Mode::Adaptive2,
        RoutingMode::Adaptive3 => Mode::Adaptive3,
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Background {
    None,
    /// open-loop PUT messages of `bytes` to uniformly random background nodes, `load` = fraction of
    /// the NIC injection bandwidth
    Uniform {
        load: f64,
        bytes: u64,
    },
    /// open-loop, every background node of group i sends to background nodes of group i+1
    WorstCase {
        load: f64,
        bytes: u64,
    },
    /// GPCNeT congestors: the background nodes split in 3 closed-loop jobs (incast, alltoall,
    /// broadcast) exchanging `bytes` messages forever
    Congestors {
        bytes: u64,
    },
}

impl Background {
    /// Short name for experiment ids: `none`, `uniform-LOAD-BYTES`, `worst-case-LOAD-BYTES`,
    /// `congestors-BYTES`.
    pub fn name(&self) -> String {
        match self {
            Background::None => "none".into(),
            Background::Uniform { load, bytes } => format!("uniform-{load}-{bytes}"),
            Background::WorstCase { load, bytes } => format!("worst-case-{load}-{bytes}"),
            Background::Congestors { bytes } => format!("congestors-{bytes}"),
        }
    }

    /// `none`, `uniform:LOAD[:SIZE]`, `worst-case:LOAD[:SIZE]` or `congestors[:SIZE]` (SIZE as in
    /// [`parse_size`], default 4 KiB; LOAD a fraction of the NIC injection bandwidth in [0, 1]).
    pub fn parse(s: &str) -> Result<Background, String> {
        let parts: Vec<&str> = s.trim().split(':').collect();
        let size = |i: usize| match parts.get(i) {
            None => Ok(4096),
            Some(x) => parse_size(x).filter(|&b| b > 0).ok_or_else(|| format!("{s}: bad size \"{x}\"")),
        };
        let load = || {
            parts
                .get(1)
                .and_then(|x| x.trim().parse::<f64>().ok())
                .filter(|l| (0.0..=1.0).contains(l))
                .ok_or_else(|| format!("{s}: expected KIND:LOAD[:SIZE] with LOAD in [0, 1]"))
        };
        let max_parts = match parts[0].trim() {
            "none" => 1,
            "congestors" => 2,
            _ => 3,
        };
        if parts.len() > max_parts {
            return Err(format!("{s}: too many fields"));
        }
        Ok(match parts[0].trim() {
            "none" => Background::None,
            "uniform" => Background::Uniform { load: load()?, bytes: size(2)? },
            "worst-case" => Background::WorstCase { load: load()?, bytes: size(2)? },
            "congestors" => Background::Congestors { bytes: size(1)? },
            k => return Err(format!("{s}: unknown kind \"{k}\" (none, uniform, worst-case, congestors)")),
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSpec {
    pub net: NetConfig,
    pub workload: Workload,
    pub ranks: u32,
    pub placement: Placement,
    /// policies alternated across iterations (A/B); one entry = a single policy; 1 to [`MAX_ARMS`]
    pub arms: Vec<PolicySpec>,
    /// which arm runs in which iteration (the engine's A/B schedule)
    #[serde(with = "order_serde", default = "round_robin")]
    pub order: AbOrder,
    pub iterations: u32,
    /// iterations run before recording (not recorded), per arm cycle
    pub warmup_iterations: u32,
    pub background: Background,
    /// number of nodes not used by the measured job that generate background traffic, picked
    /// first among the nodes sharing a router with the measured ranks, then at random in the
    /// measured job's groups (`background_local`) or anywhere
    pub background_nodes: u32,
    pub background_local: bool,
    /// routing of background traffic (Cray MPICH default: ADAPTIVE0)
    pub background_mode: Mode,
    /// simulated time the background runs before the measured job starts, ns
    pub background_lead_ns: f64,
    pub seed: u64,
}

impl ExperimentSpec {
    pub fn new(net: NetConfig, workload: Workload, ranks: u32, placement: Placement) -> Self {
        ExperimentSpec {
            net,
            workload,
            ranks,
            placement,
            arms: vec![PolicySpec::Auto],
            order: AbOrder::RoundRobin,
            iterations: 10,
            warmup_iterations: 0,
            background: Background::None,
            background_nodes: 64,
            background_local: true,
            background_mode: Mode::Adaptive0,
            background_lead_ns: 5_000.0,
            seed: 1,
        }
    }
}

fn round_robin() -> AbOrder {
    AbOrder::RoundRobin
}

/// `AbOrder` as its text (`round-robin`, `shuffled:SEED`), parsed with its `FromStr`.
mod order_serde {
    use super::AbOrder;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(order: &AbOrder, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(order)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<AbOrder, D::Error> {
        String::deserialize(d)?.parse().map_err(D::Error::custom)
    }
}

impl ExperimentSpec {
    /// The experiment id of the records: workload (with its size), placement, ranks, background
    /// and seed, so the ranks of one run group together and the points of a sweep stay apart.
    pub fn experiment_id(&self) -> String {
        format!(
            "sim-{}_{}_{}ranks_{}_seed{}",
            self.workload.name(),
            self.placement.name(),
            self.ranks,
            self.background.name(),
            self.seed
        )
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExperimentResult {
    pub label: String,
    /// job-level iteration times: per iteration the slowest rank's duration
    pub iterations: Vec<IterSample>,
    pub records: Vec<RankRecord>,
    pub packets: u64,
    pub events: u64,
    pub sim_time_ns: f64,
    pub wall_s: f64,
    /// fraction of the measured job's request packets that took a non-minimal path
    pub nonmin_fraction: f64,
    /// the same per routing mode of the messages
    pub nonmin_by_mode: Vec<(String, f64)>,
}

impl ExperimentResult {
    /// Counter windows (stall ratio, latency cycles) of rank 0's NIC per iteration of one arm.
    pub fn windows(&self, arm: &str) -> Vec<(f64, f64)> {
        self.iterations.iter().filter(|s| s.arm == arm).map(|s| (s.stall_ratio, s.latency_cycles)).collect()
    }

    /// Iteration times (ns) of one arm.
    pub fn times(&self, arm: &str) -> Vec<f64> {
        self.iterations.iter().filter(|s| s.arm == arm).map(|s| s.ns).collect()
    }
}

/// Source and destination rank of messages posted from outside the simulator
/// ([`World::post_external`]).
pub const EXTERNAL_RANK: u32 = u32::MAX - 1;

const USER_WAKE: u32 = 0;
const USER_NOISE: u32 = 1;

struct Rank {
    job: usize,
    local: u32,
    node: u32,
    phase: usize,
    iter: u32,
    pending_sends: u32,
    remaining: Vec<(u32, u32)>,
    arrived: Vec<(u32, u32)>,
    iter_start: u64,
    iter_ctr: NicCounters,
    /// messages and bytes posted in the current iteration, by mode
    iter_msgs: [u64; N_MODES],
    iter_bytes: [u64; N_MODES],
    /// the engine's (decisions, switches) when the current iteration started
    iter_engine: (u64, u64),
    done: bool,
    engine: Option<Engine>,
    arm: usize,
    rec: RankRecord,
}

struct Job {
    first: u32,
    n: u32,
    phases: Vec<Vec<Phase>>,
    iterations: u32,
    arms: Vec<PolicySpec>,
    schedule: AbSchedule,
    measured: bool,
    done_ranks: u32,
    default_mode: Mode,
    warmup: u32,
    /// the job's iteration time is this rank's (ping-pong: the initiator) or the slowest rank's
    timing_rank: Option<u32>,
    /// per recorded iteration: max rank duration
    iter_max: Vec<u64>,
    /// per recorded iteration: (stall ratio, latency cycles) of rank 0's NIC window
    iter_ctr: Vec<(f64, f64)>,
}

pub struct World {
    pub net: Net,
    ranks: Vec<Rank>,
    jobs: Vec<Job>,
    noise_nodes: Vec<u32>,
    noise_targets: Vec<u32>,
    noise_is_target_group: bool,
    noise_gap: f64,
    noise_bytes: u64,
    noise_mode: Mode,
    rng: Rng,
    node_groups: u32,
    nonmin: u64,
    reqpk: u64,
    nonmin_mode: [u64; N_MODES],
    reqpk_mode: [u64; N_MODES],
    /// external messages that have completed and not been collected yet
    external_done: Vec<u32>,
}

fn tag_of(iter: u32, tag: u32) -> u32 {
    ((iter & 0xFFFF) << 12) | (tag & 0xFFF)
}

impl World {
    pub fn build(spec: &ExperimentSpec) -> World {
        Self::build_with(spec, true).0
    }

    /// The experiment's network, placement and background traffic without the measured job, for a
    /// driver outside the simulator (the emulated uGNI of crates/emu) that posts its own messages
    /// with [`World::post_external`] and runs the network with [`World::run_until_completed`].
    /// Returns the world and the nodes the placement gives `spec.ranks` ranks: the background
    /// avoids these nodes and starts on the ones sharing their routers, as in an experiment. The
    /// workload, arms and iterations of the spec are not used. Nothing has run yet: the
    /// background's lead time (`spec.background_lead_ns`) is for the caller to run
    /// ([`World::run_until`]).
    pub fn build_external(spec: &ExperimentSpec) -> (World, Vec<u32>) {
        Self::build_with(spec, false)
    }

    fn build_with(spec: &ExperimentSpec, measured_job: bool) -> (World, Vec<u32>) {
        let net = Net::new(spec.net.clone(), spec.seed);
        let mut rng = Rng::new(spec.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xA11);
        let topo = &net.topo;
        let nodes = spec.placement.nodes(topo, spec.ranks, &mut rng);
        let mut w = World {
            node_groups: topo.groups,
            net,
            ranks: Vec::new(),
            jobs: Vec::new(),
            noise_nodes: Vec::new(),
            noise_targets: Vec::new(),
            noise_is_target_group: false,
            noise_gap: 0.0,
            noise_bytes: 0,
            noise_mode: spec.background_mode,
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
                true,
                spec.warmup_iterations,
            );
        }
        // background nodes: same routers as the measured ranks first, then the scope at random
        let topo = &w.net.topo;
        let p = topo.p;
        let npg = p * topo.routers_per_group;
        let used: std::collections::HashSet<u32> = nodes.iter().copied().collect();
        let groups: std::collections::HashSet<u32> = nodes.iter().map(|&n| n / npg).collect();
        let in_scope = |n: u32| !used.contains(&n) && (!spec.background_local || groups.contains(&(n / npg)));
        let mut near: Vec<u32> =
            nodes.iter().flat_map(|&n| (n / p * p)..(n / p * p + p)).filter(|&n| in_scope(n)).collect();
        near.sort();
        near.dedup();
        w.rng.shuffle(&mut near);
        let mut rest: Vec<u32> = (0..topo.n_nodes).filter(|&n| in_scope(n) && !near.contains(&n)).collect();
        let scope: Vec<u32> = (0..topo.n_nodes).filter(|&n| in_scope(n)).collect();
        w.rng.shuffle(&mut rest);
        let mut free = near;
        free.extend(rest);
        free.truncate(spec.background_nodes as usize);
        let cfg = &spec.net;
        match spec.background {
            Background::None => {}
            Background::Uniform { load, bytes } | Background::WorstCase { load, bytes } => {
                if load > 0.0 && !free.is_empty() {
                    let flits = request_flits(bytes, Transfer::Put) as f64;
                    w.noise_gap = flits / load * cfg.nic_cycle as f64;
                    w.noise_bytes = bytes;
                    w.noise_is_target_group = matches!(spec.background, Background::WorstCase { .. });
                    w.noise_nodes = free.clone();
                    w.noise_targets = scope.clone();
                    let lead = cfg.ns_to_ticks(spec.background_lead_ns);
                    for &n in &w.noise_nodes {
                        let t = (w.rng.f64() * w.noise_gap) as u64;
                        w.net.schedule_user(t.min(lead), n, USER_NOISE);
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
                        w.add_job(
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
        // GPCNeT-style label of every measured iteration: the congestors run for the whole run, so
        // a run is either congested or isolated; open-loop background traffic gets no label
        let label = match spec.background {
            _ if w.jobs.iter().any(|j| !j.measured) => Some("congested"),
            Background::None => Some("isolated"),
            _ if w.noise_nodes.is_empty() => Some("isolated"),
            _ => None,
        };
        let experiment = spec.experiment_id();
        for r in w.ranks.iter_mut().filter(|r| w.jobs[r.job].measured) {
            r.rec.experiment = experiment.clone();
            r.rec.label = label.map(String::from);
        }
        // start: background congestors at 0, the measured job after the lead time
        let lead = cfg.ns_to_ticks(spec.background_lead_ns);
        let has_bg = !matches!(spec.background, Background::None);
        for r in 0..w.ranks.len() {
            let t = if w.jobs[w.ranks[r].job].measured && has_bg { lead } else { 0 };
            w.net.schedule_user(t, r as u32, USER_WAKE | 0x100_0000);
        }
        (w, nodes)
    }

    /// Posts a message from node `src` to node `dst` at the current time, outside any job: its
    /// completion is collected by [`World::run_until_completed`]. Returns the message id.
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

    #[allow(clippy::too_many_arguments)]
    fn add_job(
        &mut self,
        wl: &Workload,
        nodes: &[u32],
        ring: &[u32],
        iterations: u32,
        arms: Vec<PolicySpec>,
        order: AbOrder,
        measured: bool,
        warmup: u32,
    ) {
        let n = nodes.len() as u32;
        let first = self.ranks.len() as u32;
        let job = self.jobs.len();
        let phases: Vec<Vec<Phase>> = (0..n).map(|r| wl.phases(r, n, ring)).collect();
        let default_mode = Mode::Adaptive0;
        for (i, &node) in nodes.iter().enumerate() {
            let engine = if measured {
                let cfg = EngineConfig { latency_unit: LatencyUnit::Cycles, ..EngineConfig::default() };
                Some(Engine::new(cfg))
            } else {
                None
            };
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
                remaining: Vec::new(),
                arrived: Vec::new(),
                iter_start: 0,
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
            default_mode,
            warmup,
            timing_rank,
            iter_max: Vec::new(),
            iter_ctr: Vec::new(),
        });
    }

    fn measured_done(&self) -> bool {
        self.jobs.iter().filter(|j| j.measured).all(|j| j.done_ranks == j.n)
    }

    pub fn run(mut self, label: String) -> ExperimentResult {
        let wall = Instant::now();
        while !self.measured_done() {
            match self.net.step(u64::MAX) {
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
        }
    }

    fn noise(&mut self, node: u32) {
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

    fn on_note(&mut self, n: Note) {
        match n {
            Note::Arrived(m) => {
                let msg = self.net.msgs[m as usize];
                if msg.dst_rank == u32::MAX {
                    return;
                }
                let r = msg.dst_rank as usize;
                let key = (msg.src_rank, msg.tag);
                let rk = &mut self.ranks[r];
                if let Some(i) = rk.remaining.iter().position(|&k| k == key) {
                    rk.remaining.swap_remove(i);
                    self.check_phase(r);
                } else {
                    rk.arrived.push(key);
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

    fn start_iteration(&mut self, r: usize) {
        let now = self.net.now;
        let job = self.ranks[r].job;
        let rk = &mut self.ranks[r];
        if rk.done {
            return;
        }
        rk.iter_start = now;
        rk.iter_ctr = self.net.counters(rk.node);
        rk.iter_msgs = [0; N_MODES];
        rk.iter_bytes = [0; N_MODES];
        rk.phase = 0;
        let j = &self.jobs[job];
        rk.arm = j.schedule.index_at(rk.iter.into());
        if let Some(e) = &mut rk.engine {
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
        let first = self.jobs[job].first;
        let arm = self.jobs[job].arms[self.ranks[r].arm];
        let default_mode = if alltoall { Mode::Adaptive1 } else { self.jobs[job].default_mode };
        {
            let rk = &mut self.ranks[r];
            rk.remaining = ph.recvs.iter().map(|&(s, t)| (first + s, tag_of(iter, t))).collect();
            // messages that arrived before this phase started
            let mut i = 0;
            while i < rk.remaining.len() {
                if let Some(j) = rk.arrived.iter().position(|&k| k == rk.remaining[i]) {
                    rk.arrived.swap_remove(j);
                    rk.remaining.swap_remove(i);
                } else {
                    i += 1;
                }
            }
            rk.pending_sends = sends.len() as u32;
        }
        for (dst, bytes, tag) in sends {
            let dst_rank = first + dst;
            let dst_node = self.ranks[dst_rank as usize].node;
            let node = self.ranks[r].node;
            let engine_arm = arm.engine_policy().is_some();
            let (mode, read_before, read) = match (&mut self.ranks[r].engine, arm) {
                (Some(e), _) if engine_arm => {
                    let d = e.decide(&Message { bytes, transfer: Transfer::Put, endpoint: dst_node as u64 }, alltoall);
                    (d.mode.map(from_engine_mode).unwrap_or(default_mode), d.read_before, d.read_counters)
                }
                (_, PolicySpec::Fixed(m)) => (m, false, false),
                _ => (default_mode, false, false),
            };
            if read_before {
                // the engine's window of the old side closes without this message
                let c = self.net.counters(node);
                if let Some(e) = &mut self.ranks[r].engine {
                    e.observe(sample(&c));
                }
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
                let c = self.net.counters(node);
                if let Some(e) = &mut self.ranks[r].engine {
                    e.observe(sample(&c));
                }
            }
        }
        self.check_phase(r);
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

    fn after_compute(&mut self, r: usize) {
        self.ranks[r].pending_sends = 0;
        self.next_phase(r);
    }

    fn next_phase(&mut self, r: usize) {
        let job = self.ranks[r].job;
        let local = self.ranks[r].local as usize;
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
        self.start_iteration(r);
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

/// Run one experiment.
pub fn run_experiment(spec: &ExperimentSpec, label: &str) -> ExperimentResult {
    World::build(spec).run(label.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_specs_parse_as_the_cli_writes_them() {
        assert_eq!(Background::parse("none"), Ok(Background::None));
        assert_eq!(Background::parse("uniform:0.4:4K"), Ok(Background::Uniform { load: 0.4, bytes: 4096 }));
        assert_eq!(Background::parse("worst-case:0.5"), Ok(Background::WorstCase { load: 0.5, bytes: 4096 }));
        assert_eq!(Background::parse("congestors:64K"), Ok(Background::Congestors { bytes: 65536 }));
        for bad in ["uniform", "uniform:x", "uniform:1.5", "uniform:0.1:zero", "storm:0.1", "none:1", "congestors:1:2"]
        {
            assert!(Background::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_external_driver_posts_and_runs_to_completion_among_the_background() {
        let mut spec = ExperimentSpec::new(NetConfig::aries(2), Workload::Barrier, 2, Placement::AcrossGroups);
        spec.background = Background::Uniform { load: 0.3, bytes: 4096 };
        spec.background_nodes = 8;
        let run = || {
            let (mut w, nodes) = World::build_external(&spec);
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
