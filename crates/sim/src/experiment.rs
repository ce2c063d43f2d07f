//! What an experiment is: the network, the measured job (workload, ranks, placement), the
//! policies its iterations alternate (A/B), the background traffic and the seed; and what it
//! gives back. [`crate::simulation`] runs it.

use crate::config::{Mode, NetConfig};
use crate::error::{ParseError, SpecError};
use crate::record::{IterSample, RankRecord};
use crate::rng::Rng;
use crate::topology::Topology;
use crate::workload::{Placement, Workload};
pub use aar_engine::{AbOrder, AbSchedule, Seed};
use aar_engine::{ByteSize, EngineConfig, LatencyUnit, Policy};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// What chooses each message's routing mode in a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PolicySpec {
    /// the paper's algorithm (engine `Policy::Auto`)
    Auto,
    /// the `steady` policy (engine `Policy::Steady`)
    Steady,
    /// engine `Policy::Off`: the application's default routing (ADAPTIVE0; ADAPTIVE1 in alltoall)
    Off,
    /// a fixed mode; adaptive ones go through the engine (`Policy::Fixed`), non-adaptive ones are
    /// what the application requested and are never changed
    Fixed(Mode),
}

/// The policies an experiment alternates (`aar sim run --policy`): the parser's messages and `aar sim`'s
/// help.
pub const POLICIES: &str = "auto (the paper's), steady (aar's), off (the application's default routing), or \
one routing mode pinned: MIN_HASH, IN_ORDER, NMIN_HASH, ADAPTIVE0..ADAPTIVE3, UGAL";

impl FromStr for PolicySpec {
    type Err = ParseError;

    /// The engine's policy names (as in `AAR_MODE`), plus the non-adaptive modes the simulator
    /// can also pin (`MIN_HASH`, `NMIN_HASH`, `IN_ORDER`, `UGAL`) and `default` for `off`.
    fn from_str(s: &str) -> Result<PolicySpec, ParseError> {
        if s.trim().eq_ignore_ascii_case("default") {
            return Ok(PolicySpec::Off);
        }
        match s.parse::<Policy>() {
            Ok(Policy::Auto) => Ok(PolicySpec::Auto),
            Ok(Policy::Steady) => Ok(PolicySpec::Steady),
            Ok(Policy::Off) => Ok(PolicySpec::Off),
            _ => s.parse::<Mode>().map(PolicySpec::Fixed).map_err(|_| ParseError::Unknown {
                what: "policy",
                text: s.into(),
                accepted: POLICIES,
            }),
        }
    }
}

impl PolicySpec {
    pub fn name(&self) -> String {
        match self {
            PolicySpec::Auto => "auto".into(),
            PolicySpec::Steady => "steady".into(),
            PolicySpec::Off => "off".into(),
            PolicySpec::Fixed(m) => m.name().into(),
        }
    }

    /// The engine policy of this arm; `None` for the non-adaptive modes, which the engine is not
    /// asked about.
    pub fn engine_policy(&self) -> Option<Policy> {
        match *self {
            PolicySpec::Auto => Some(Policy::Auto),
            PolicySpec::Steady => Some(Policy::Steady),
            PolicySpec::Off => Some(Policy::Off),
            PolicySpec::Fixed(m) => m.routing_mode().map(Policy::Fixed),
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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Background {
    None,
    /// open-loop PUT messages of `bytes` from the background nodes to uniformly random nodes of
    /// the background's scope other than the measured job's (not only the background nodes),
    /// `load` = fraction of the NIC injection bandwidth
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
    /// a production machine: the background nodes, shuffled (fragmented allocations), form jobs
    /// of [`PRODUCTION_JOB_NODES`] nodes that run the patterns of [`PRODUCTION_MIX`] in turn,
    /// open-loop, each at its share of `load`, with `bytes` messages inside the job
    Production {
        load: f64,
        bytes: u64,
    },
}

/// Nodes per background job of a [`Background::Production`] machine: a typical small production
/// job (16 Aries routers' worth of nodes when packed).
pub const PRODUCTION_JOB_NODES: usize = 64;

/// What one background job of a production machine does: its pattern and the fraction of the
/// background's load each of its sending nodes offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobPattern {
    /// every node sends to uniformly random nodes of its job (a spectral or FFT code)
    Uniform,
    /// every node alternates between its two ring neighbours in the job (a stencil code)
    Neighbour,
    /// every node sends to the other nodes of its job in turn (a transpose)
    AllToAll,
    /// every node sends to the job's first node, which sends nothing (I/O aggregation, a
    /// reduction to a root)
    Incast,
    /// allocated and computing, or waiting: no traffic
    Idle,
}

impl JobPattern {
    pub fn name(self) -> &'static str {
        match self {
            JobPattern::Uniform => "uniform",
            JobPattern::Neighbour => "nearest-neighbour",
            JobPattern::AllToAll => "all-to-all",
            JobPattern::Incast => "incast",
            JobPattern::Idle => "idle",
        }
    }
}

/// The production mix: background job k runs `PRODUCTION_MIX[k % 5]`; its sending nodes offer
/// the given fraction of the background's load. The incast senders offer an eighth each, so that
/// the 63 of a job ask ~8x the load of the root's NIC (at load 0.2: 1.6x its bandwidth, a hot
/// spot as GPCNeT's incast congestor makes one; at 0.1: 0.8x); one job in five is idle, as
/// machines are never fully communicating.
pub const PRODUCTION_MIX: [(JobPattern, f64); 5] = [
    (JobPattern::Uniform, 1.0),
    (JobPattern::Neighbour, 1.0),
    (JobPattern::AllToAll, 1.0),
    (JobPattern::Incast, 0.125),
    (JobPattern::Idle, 0.0),
];

impl Background {
    /// Short name for experiment ids: `none`, `uniform-LOAD-BYTES`, `worst-case-LOAD-BYTES`,
    /// `congestors-BYTES`.
    pub fn name(&self) -> String {
        match self {
            Background::None => "none".into(),
            Background::Uniform { load, bytes } => format!("uniform-{load}-{bytes}"),
            Background::WorstCase { load, bytes } => format!("worst-case-{load}-{bytes}"),
            Background::Congestors { bytes } => format!("congestors-{bytes}"),
            Background::Production { load, bytes } => format!("production-{load}-{bytes}"),
        }
    }

    /// The background as the parser reads it back (`uniform:0.3:4K`), for messages.
    pub fn form(&self) -> String {
        let size = |b: u64| ByteSize(b).to_string();
        match self {
            Background::None => "none".into(),
            Background::Uniform { load, bytes } => format!("uniform:{load}:{}", size(*bytes)),
            Background::WorstCase { load, bytes } => format!("worst-case:{load}:{}", size(*bytes)),
            Background::Congestors { bytes } => format!("congestors:{}", size(*bytes)),
            Background::Production { load, bytes } => format!("production:{load}:{}", size(*bytes)),
        }
    }

    /// The fewest background nodes with which this background sends anything, and why: none
    /// without traffic (no background, or a load of 0); one per open-loop source (uniform,
    /// worst-case); 2 for a production job (a job of one node has no one to send to); 6 for the
    /// congestors (three jobs of 2 or more). With fewer, the simulation runs as if there were no
    /// background at all.
    pub fn min_nodes(&self) -> (u32, &'static str) {
        match *self {
            Background::None => (0, ""),
            Background::Uniform { load, .. }
            | Background::WorstCase { load, .. }
            | Background::Production { load, .. }
                if load == 0.0 =>
            {
                (0, "")
            }
            Background::Uniform { .. } | Background::WorstCase { .. } => (1, "one per source of traffic"),
            Background::Production { .. } => (2, "a background job has 2 or more"),
            Background::Congestors { .. } => (6, "three congestor jobs of 2 or more"),
        }
    }
}

/// The forms of a background: the parser's messages and `aar sim`'s help.
pub const BACKGROUNDS: &str =
    "none, uniform:LOAD[:SIZE], worst-case:LOAD[:SIZE], congestors[:SIZE] or production[:LOAD[:SIZE]]";

impl FromStr for Background {
    type Err = ParseError;

    /// `none`, `uniform:LOAD[:SIZE]`, `worst-case:LOAD[:SIZE]`, `congestors[:SIZE]` or
    /// `production[:LOAD[:SIZE]]` (SIZE in bytes above 0 as [`ByteSize`] reads it, default 4 KiB;
    /// LOAD a [`Load`], default 0.2 for production).
    fn from_str(s: &str) -> Result<Background, ParseError> {
        let lower = s.trim().to_ascii_lowercase();
        let parts: Vec<&str> = lower.split(':').map(str::trim).collect();
        let form = || ParseError::Form { text: s.into(), form: BACKGROUNDS };
        let size = |i: usize| match parts.get(i) {
            None => Ok(4096),
            Some(x) => match x.parse::<ByteSize>() {
                Ok(ByteSize(0)) => Err(ParseError::ZeroSize { what: "background message" }),
                Ok(b) => crate::workload::simulated_message("background", b.0),
                Err(e) => Err(ParseError::Size(e)),
            },
        };
        let load = || parts.get(1).ok_or_else(form).and_then(|x| x.parse::<Load>()).map(|l| l.0);
        let fields = match parts[0] {
            "none" => 1,
            "congestors" => 2,
            _ => 3,
        };
        let production_load = || match parts.get(1) {
            None => Ok(DEFAULT_PRODUCTION_LOAD),
            Some(x) => x.parse::<Load>().map(|l| l.0),
        };
        if parts.len() > fields {
            return Err(form());
        }
        Ok(match parts[0] {
            "none" => Background::None,
            "uniform" => Background::Uniform { load: load()?, bytes: size(2)? },
            "worst-case" => Background::WorstCase { load: load()?, bytes: size(2)? },
            "congestors" => Background::Congestors { bytes: size(1)? },
            "production" => Background::Production { load: production_load()?, bytes: size(2)? },
            _ => return Err(ParseError::Unknown { what: "kind of background", text: s.into(), accepted: BACKGROUNDS }),
        })
    }
}

/// Ranks of the measured job on one node (`--ranks-per-node`, as `aprun -N`): K consecutive ranks
/// share a node and its NIC. At least 1, at most [`RanksPerNode::MAX`] (a KNL node's cores).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RanksPerNode(pub u32);

impl RanksPerNode {
    /// Most ranks one node holds: the cores of a KNL node (68) rounded down to the 64 an Aries
    /// job uses.
    pub const MAX: u32 = 64;
}

impl FromStr for RanksPerNode {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<RanksPerNode, ParseError> {
        match s.trim().parse::<u32>() {
            Ok(k) if (1..=Self::MAX).contains(&k) => Ok(RanksPerNode(k)),
            _ => Err(ParseError::RanksPerNode { text: s.into(), max: Self::MAX }),
        }
    }
}

/// The load of `production` without one: busy but not saturated (see [`PRODUCTION_MIX`]).
pub const DEFAULT_PRODUCTION_LOAD: f64 = 0.2;

/// The nodes that generate a background when the user names none (`aar sim --background-nodes`,
/// `AAR_EMU_SIM`'s `background-nodes`). ([`ExperimentSpec::new`] keeps 64, which the library's
/// own callers and tests give or rely on.)
pub const DEFAULT_BACKGROUND_NODES: u32 = 32;

/// Offered load: the fraction of a NIC's injection bandwidth a source uses, in [0, 1] (of the
/// background, and of `aar sim synth`'s open-loop traffic): 0 (no traffic) or at least
/// [`Load::MIN`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Load(pub f64);

impl Load {
    /// The smallest load above 0: one flit per million NIC cycles. Below it a source sends
    /// nothing in any simulated time the simulator is meant for, and the gaps between its
    /// messages leave the range of the simulated clock (1e-300 injected at full rate).
    pub const MIN: f64 = 1e-6;
}

impl FromStr for Load {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Load, ParseError> {
        match s.trim().parse::<f64>() {
            // + 0.0: -0 is 0 (and named so in experiment ids)
            Ok(l) if l == 0.0 || (Self::MIN..=1.0).contains(&l) => Ok(Load(l + 0.0)),
            _ => Err(ParseError::Load(s.into())),
        }
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
    /// iterations run before the measured ones (not recorded), counted in the index the A/B
    /// schedule is applied to
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
    /// the node of each rank, instead of the placement's (the placement still names the
    /// allocation): e.g. a ping-pong between rank 0 and a chosen rank of a packed job
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_nodes: Option<Vec<u32>>,
    /// decisions per counter window of the ranks' engines (libaar.so's `AAR_WINDOW`; 1 is the
    /// paper's read after every decision); `None`: the engine's default
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_decisions: Option<u32>,
    /// every rank starts iteration i+1 when the last rank has ended iteration i (a barrier that
    /// costs no time), so one iteration's skew does not carry into the next one's time
    #[serde(default)]
    pub synchronized_iterations: bool,
    /// consecutive ranks per node ([`RanksPerNode`]): the placement gives `ranks / ranks_per_node`
    /// nodes and each holds this many ranks, which share its NIC (queue, outstanding-packet
    /// window, counters); messages between them go through shared memory, not the network
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub ranks_per_node: u32,
}

fn one() -> u32 {
    1
}

fn is_one(k: &u32) -> bool {
    *k == 1
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
            rank_nodes: None,
            window_decisions: None,
            synchronized_iterations: false,
            ranks_per_node: 1,
        }
    }
}

impl ExperimentSpec {
    /// The configuration the measured ranks' engines start with ([`engine_config`]); each
    /// iteration's policy then replaces `policy`, set here to the first arm's (`off` for an arm the
    /// engine is not asked about: MIN_HASH, NMIN_HASH, IN_ORDER, UGAL).
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            policy: self.arms.first().and_then(PolicySpec::engine_policy).unwrap_or(Policy::Off),
            ..engine_config(self.window_decisions, self.ranks_per_node)
        }
    }
}

/// The engine of a measured rank: the engine's defaults, latencies counted in NIC cycles, the NIC
/// (counters and injection) shared by the node's `ranks_per_node` ranks as on Aries, and a window
/// of `window_decisions` (`None`: each policy's default).
pub fn engine_config(window_decisions: Option<u32>, ranks_per_node: u32) -> EngineConfig {
    EngineConfig { latency_unit: LatencyUnit::Cycles, ranks_per_node: ranks_per_node.max(1), ..EngineConfig::default() }
        .with_window(window_decisions)
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
    /// Whether the experiment can run: a network the simulator can build, a job of at least two
    /// ranks whose nodes (`ranks / ranks_per_node`) fit its placement (across groups: of a network
    /// of two or more), 1 to [`MAX_ARMS`] distinct policies, and a background that can run
    /// ([`ExperimentSpec::check_background`]).
    pub fn check(&self) -> Result<(), SpecError> {
        self.net.topo.check()?;
        if self.ranks < 2 {
            return Err(SpecError::TooFewRanks(self.ranks));
        }
        let k = self.ranks_per_node;
        if k == 0 || k > RanksPerNode::MAX || !self.ranks.is_multiple_of(k) {
            return Err(SpecError::RanksPerNode { ranks: self.ranks, ranks_per_node: k, max: RanksPerNode::MAX });
        }
        let topo = Topology::new(self.net.topo.clone());
        if self.placement == Placement::AcrossGroups && topo.groups < 2 {
            return Err(SpecError::AcrossOneGroup { groups: topo.groups });
        }
        self.placement.check(&topo, self.nodes()).map_err(|e| match e {
            SpecError::PlacementFull { placement, max, larger, .. } if k > 1 => {
                SpecError::NodesFull { placement, ranks: self.ranks, ranks_per_node: k, max, larger }
            }
            e => e,
        })?;
        if let Some(nodes) = &self.rank_nodes {
            let mut sorted = nodes.clone();
            sorted.sort_unstable();
            let crowded = sorted.windows(k as usize + 1).any(|w| w[0] == w[k as usize]);
            if nodes.len() != self.ranks as usize || crowded || sorted.last().is_some_and(|&n| n >= topo.n_nodes) {
                return Err(SpecError::RankNodes {
                    ranks: self.ranks,
                    given: nodes.len(),
                    nodes: topo.n_nodes,
                    ranks_per_node: k,
                });
            }
        }
        if !(1..=MAX_ARMS).contains(&self.arms.len()) {
            return Err(SpecError::Arms { given: self.arms.len(), max: MAX_ARMS });
        }
        if let Some((_, twice)) = self.arms.iter().enumerate().find(|&(i, a)| self.arms[..i].contains(a)) {
            return Err(SpecError::DuplicateArm { policy: twice.name() });
        }
        self.check_every_arm_measured()?;
        self.check_background()
    }

    /// Whether every arm runs in at least one measured iteration (the schedule applied to the
    /// iterations after the warm-up): an arm that runs in none has no sample, and a table of its
    /// times would show a median of nothing.
    fn check_every_arm_measured(&self) -> Result<(), SpecError> {
        let schedule = arm_schedule(&self.arms, self.order);
        let first = u64::from(self.warmup_iterations);
        let measured = |n: u64| {
            let mut seen = [false; MAX_ARMS];
            (first..first + n).for_each(|i| seen[schedule.index_at(i)] = true);
            seen.iter().take(self.arms.len()).position(|&s| !s)
        };
        let Some(missing) = measured(self.iterations.into()) else { return Ok(()) };
        // two whole blocks of the schedule hold every arm, wherever the measured ones start
        let needed = (u64::from(self.iterations)..).find(|&n| measured(n).is_none()).unwrap_or_default();
        Err(SpecError::UnmeasuredArm {
            policy: self.arms[missing].name(),
            iterations: self.iterations,
            warmup: self.warmup_iterations,
            needed: u32::try_from(needed).unwrap_or(u32::MAX),
        })
    }

    /// Whether the background can mean what it says: worst-case traffic (group to group) needs
    /// two or more groups, and a background with traffic needs enough background nodes to send
    /// it ([`Background::min_nodes`]). Part of [`ExperimentSpec::check`]; the emulator's
    /// `AAR_EMU_SIM`, which places no measured job of its own, asks this alone.
    pub fn check_background(&self) -> Result<(), SpecError> {
        let groups = self.net.topo.groups();
        let worst_case = matches!(self.background, Background::WorstCase { load, .. } if load > 0.0);
        if worst_case && groups < 2 {
            return Err(SpecError::WorstCaseOneGroup {
                traffic: format!("background {}", self.background.form()),
                groups,
            });
        }
        if worst_case && self.background_local && self.net.topo.check().is_ok() {
            // kept to the measured job's groups, the background has a next group only if the job
            // has nodes in two (a placement that does not fit is its own check's to say)
            let topo = Topology::new(self.net.topo.clone());
            if self.placement.check(&topo, self.nodes()).is_ok() {
                let nodes = self.node_of_ranks(&topo, &mut self.rng());
                if nodes.iter().all(|&n| topo.group_of_node(n) == topo.group_of_node(nodes[0])) {
                    return Err(SpecError::WorstCaseJobGroup {
                        background: self.background.form(),
                        group: nodes.first().map_or(0, |&n| topo.group_of_node(n)),
                        groups,
                    });
                }
            }
        }
        let (min, why) = self.background.min_nodes();
        if self.background_nodes < min {
            return Err(SpecError::TooFewBackgroundNodes {
                background: self.background.form(),
                nodes: self.background_nodes,
                min,
                why,
            });
        }
        if min > 0 && self.net.topo.check().is_ok() {
            // as many as asked for, but only those in its scope: the nodes the run leaves free
            let topo = Topology::new(self.net.topo.clone());
            if self.placement.check(&topo, self.nodes()).is_ok() {
                let job = self.node_of_ranks(&topo, &mut self.rng());
                let free = self.background_scope(&topo, &job).len();
                if free < min as usize {
                    let mut groups: Vec<u32> = job.iter().map(|&n| topo.group_of_node(n)).collect();
                    groups.sort_unstable();
                    groups.dedup();
                    return Err(SpecError::BackgroundOutOfReach {
                        background: self.background.form(),
                        min,
                        why,
                        free: free as u32,
                        // Kept to the job's groups only where they are not the whole machine
                        // (otherwise the whole machine is what it has).
                        job_groups: (self.background_local && (groups.len() as u32) < topo.groups)
                            .then_some(groups.len() as u32),
                    });
                }
            }
        }
        Ok(())
    }

    /// How many nodes the background runs on: `background_nodes`, or fewer where fewer are free
    /// in its scope, as the simulation gives it. The placement must pass its check.
    pub fn background_nodes_used(&self) -> u32 {
        let topo = Topology::new(self.net.topo.clone());
        let job = self.node_of_ranks(&topo, &mut self.rng());
        self.background_nodes.min(self.background_scope(&topo, &job).len() as u32)
    }

    /// The nodes a background may run on around the measured job's nodes `job`, in ascending
    /// order: every node the job does not use, only in the job's groups when `background_local`.
    pub(crate) fn background_scope(&self, topo: &Topology, job: &[u32]) -> Vec<u32> {
        let used: std::collections::HashSet<u32> = job.iter().copied().collect();
        let groups: std::collections::HashSet<u32> = job.iter().map(|&n| topo.group_of_node(n)).collect();
        (0..topo.n_nodes)
            .filter(|n| !used.contains(n) && (!self.background_local || groups.contains(&topo.group_of_node(*n))))
            .collect()
    }

    /// The random numbers of a run (placement, then background, routing and ring), from the seed.
    pub(crate) fn rng(&self) -> Rng {
        Rng::new(self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xA11)
    }

    /// The node of each rank, `ranks_per_node` consecutive ranks on each of the placement's nodes
    /// (or `rank_nodes`); the placement must pass its check. A `scattered` placement draws from
    /// `rng`, which a run starts with [`ExperimentSpec::rng`].
    pub(crate) fn node_of_ranks(&self, topo: &Topology, rng: &mut Rng) -> Vec<u32> {
        let k = self.ranks_per_node.max(1) as usize;
        match &self.rank_nodes {
            Some(n) => n.clone(),
            None => self.placement.nodes(topo, self.nodes(), rng).iter().flat_map(|&n| [n].repeat(k)).collect(),
        }
    }

    /// The run's work ([`Work`]): the measured job's, counted from its workload's phases, the
    /// ones the simulation runs (a random ring taken in its natural order: the counts of messages
    /// do not depend on it, and those through shared memory barely), and the open-loop
    /// background's at its load over the simulated time the run takes at least.
    ///
    /// The counting stops once what it has counted takes more than `memory` bytes
    /// ([`Work::memory`]; [`Work::cut`] then says so): counting every message of an alltoall
    /// of 100,000 ranks (10^10) would take longer than the machine has memory to run it, and a
    /// caller that refuses a run above its memory learns that it is above in seconds.
    /// `u64::MAX` counts everything.
    pub fn work(&self, memory: u64) -> Work {
        use aar_engine::model::{packets, request_flits};
        use aar_engine::Transfer;
        let n = self.ranks;
        let ring: Vec<u32> = (0..n).collect();
        let k = self.ranks_per_node.max(1);
        let node = |r: u32| self.rank_nodes.as_ref().and_then(|v| v.get(r as usize).copied()).unwrap_or(r / k);
        let (mut messages, mut job_packets, mut cut) = (0u64, 0u64, false);
        // of one iteration: the request flits each node injects and ejects (indexed by node: a
        // table, not a map, as an alltoall counts two entries a message), the busiest rank's compute
        let nodes = self.rank_nodes.iter().flatten().map(|&m| m + 1).fold(n, u32::max);
        let mut flits = vec![(0u64, 0u64); nodes as usize];
        let mut compute_ns = 0f64;
        let rows = self.rows();
        for r in 0..n {
            let counted = Work { messages, packets: 0, background_packets: 0, min_sim_ns: 0.0, rows, cut: false };
            if counted.memory() > memory {
                cut = true;
                break;
            }
            let mut busy_ns = 0.0;
            for ph in self.workload.phases(r, n, &ring) {
                messages += ph.sends.len() as u64;
                busy_ns += ph.compute_ns;
                for &(dst, bytes, _) in ph.sends.iter().filter(|&&(dst, _, _)| node(dst) != node(r)) {
                    job_packets += packets(bytes);
                    let f = request_flits(bytes, Transfer::Put);
                    flits[node(r) as usize].0 += f;
                    flits[node(dst) as usize].1 += f;
                }
            }
            compute_ns = compute_ns.max(busy_ns);
        }
        let iterations = u64::from(self.iterations) + u64::from(self.warmup_iterations);
        // A NIC injects and ejects at most a flit a NIC cycle; the job starts after the
        // background's lead.
        let nic_ns = self.net.ticks_to_ns(self.net.nic_cycle);
        let busiest = flits.iter().map(|&(out, ins)| out.max(ins)).max().unwrap_or(0);
        let lead_ns = if self.background == Background::None { 0.0 } else { self.background_lead_ns };
        let min_sim_ns = lead_ns + iterations as f64 * (busiest as f64 * nic_ns).max(compute_ns);
        let background_packets = self.background_packets(min_sim_ns / nic_ns);
        Work {
            messages,
            // at least: past the largest count it stays there (it wrapped to a smaller one)
            packets: job_packets.saturating_mul(2).saturating_mul(iterations).saturating_add(background_packets),
            background_packets,
            min_sim_ns,
            rows,
            cut,
        }
    }

    /// Rows of the iteration records the run keeps until the end ([`Work::BYTES_PER_ROW`] each):
    /// one per rank and measured iteration.
    pub fn rows(&self) -> u64 {
        u64::from(self.ranks) * u64::from(self.iterations)
    }

    /// The packets the open-loop background offers in `cycles` NIC cycles, each request packet
    /// and its response: every source of the simulation's background (built, not run) sends a
    /// message of `bytes` every request_flits(bytes) / load cycles on average. 0 without one, and
    /// for the congestors, closed-loop jobs whose pace the network sets.
    fn background_packets(&self, cycles: f64) -> u64 {
        use aar_engine::model::{packets, request_flits};
        let bytes = match self.background {
            Background::Uniform { load, bytes }
            | Background::WorstCase { load, bytes }
            | Background::Production { load, bytes }
                if load > 0.0 =>
            {
                bytes
            }
            _ => return 0,
        };
        let (sim, _) = crate::simulation::Simulation::build_external(self);
        let load: f64 = sim.background_sources().iter().map(|s| s.load).sum();
        let per_message = 2 * packets(bytes);
        (load * cycles / request_flits(bytes, aar_engine::Transfer::Put) as f64 * per_message as f64) as u64
    }

    /// Nodes of the measured job: `ranks / ranks_per_node`.
    pub fn nodes(&self) -> u32 {
        self.ranks / self.ranks_per_node.max(1)
    }

    /// The experiment id of the records: workload (with its size), placement (a packed one with
    /// its shape, `packed-257-6`), ranks (and ranks per
    /// node when more than one), background and seed, so the ranks of one run group together and
    /// the points of a sweep stay apart.
    pub fn experiment_id(&self) -> String {
        let per_node = match self.ranks_per_node {
            1 => String::new(),
            k => format!("x{k}"),
        };
        format!(
            "sim-{}_{}_{}ranks{per_node}_{}_seed{}",
            self.workload.name(),
            self.placement.form().replace(':', "-"),
            self.ranks,
            self.background.name(),
            self.seed
        )
    }
}

/// What a run makes the simulator do and keep ([`ExperimentSpec::work`]): the measured job's
/// work, exact (unless [`Work::cut`]), and the open-loop background's packets at its load over
/// the time the run takes at least (in a busy machine, most of the packets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work {
    /// messages of one iteration, over the network or through shared memory: an iteration holds
    /// them all at once when its ranks post them together (alltoall: ranks x (ranks - 1))
    pub messages: u64,
    /// packets delivered over the network in the whole run, warm-up included: each request
    /// packet and its response (the packets a run reports); the job's exactly, and the
    /// background's ([`Work::background_packets`])
    pub packets: u64,
    /// of those, the background's: what its sources offer at their load over `min_sim_ns` (the
    /// run's own take longer, which a busy machine mostly does); 0 without open-loop traffic
    pub background_packets: u64,
    /// simulated time the run takes at least, ns: the background's lead, then each iteration's
    /// request flits of the busiest NIC at a flit a NIC cycle (or its busiest rank's compute)
    pub min_sim_ns: f64,
    /// rows of the iteration records, kept until the end ([`ExperimentSpec::rows`])
    pub rows: u64,
    /// the counting stopped at the memory it was given ([`ExperimentSpec::work`]): `messages`,
    /// `packets` and `min_sim_ns` are only those of the ranks counted, lower bounds
    pub cut: bool,
}

impl Work {
    /// Memory per message of an iteration, at least (its state in the network, its rank's phases
    /// and the receiver's expectation of it). Measured as the peak resident size of one iteration
    /// of `alltoall:8` on 11 groups: 2.55 GB with 4,096 ranks (16.8 million messages, 152 bytes
    /// each), 737 MB with 2,048 ranks (176 bytes each) and 239 MB with 1,024 ranks (228 bytes
    /// each): smaller runs take more per message, so an estimate with this is a floor, close at
    /// the large scale where memory runs out.
    pub const BYTES_PER_MESSAGE: u64 = 150;
    /// Memory per row of the iteration records (about 0.5 KB: a million iterations of 2 ranks
    /// took 930 MB, 2,000 of 96 ranks 80 MB). The one home of the figure: `aar sim` bounds
    /// `--iterations` and ranks x iterations with it too.
    pub const BYTES_PER_ROW: u64 = 512;

    /// The memory the job's work takes at least, bytes ([`Work::BYTES_PER_MESSAGE`]).
    pub fn memory(&self) -> u64 {
        self.messages
            .saturating_mul(Self::BYTES_PER_MESSAGE)
            .saturating_add(self.rows.saturating_mul(Self::BYTES_PER_ROW))
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExperimentResult {
    pub label: String,
    /// job-level iteration times: per iteration the slowest rank's duration
    pub iterations: Vec<IterSample>,
    pub records: Vec<RankRecord>,
    pub packets: u64,
    /// router-to-router hops of all packets (the unit of the simulator's speed)
    #[serde(default)]
    pub hops: u64,
    pub events: u64,
    pub sim_time_ns: f64,
    pub wall_s: f64,
    /// fraction of the measured job's request packets that took a non-minimal path
    pub nonmin_fraction: f64,
    /// the same per routing mode of the messages
    pub nonmin_by_mode: Vec<(String, f64)>,
    /// link utilisation while the measured job ran (background included)
    #[serde(default)]
    pub links: LinkUse,
    /// the nodes given to the background (`background_nodes`, or all the free nodes in its scope
    /// where there are fewer); 0 without one
    #[serde(default)]
    pub background_nodes: u32,
    /// the run was stopped at its limit of packets ([`crate::simulation::Watch::max_packets`])
    /// before the measured job had ended: `iterations` and the records hold the iterations every
    /// rank had completed, the records' totals (counters, messages per mode) the run up to the stop
    #[serde(skip)]
    pub stopped: bool,
}

/// A run stopped at its limit of packets before its job ended ([`ExperimentResult::stopped`]),
/// as a command of several runs names it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoppedRun {
    /// which run (`alltoall:64 seed 3`); empty in a command of one run
    pub run: String,
    /// packets delivered when it stopped
    pub packets: u64,
    /// measured iterations every rank had completed (what its results hold), of `of`
    pub done: usize,
    pub of: u32,
}

impl StoppedRun {
    /// The run `run` of `spec`, if its result `r` was stopped.
    pub fn of(run: String, spec: &ExperimentSpec, r: &ExperimentResult) -> Option<StoppedRun> {
        r.stopped.then_some(StoppedRun { run, packets: r.packets, done: r.iterations.len(), of: spec.iterations })
    }
}

/// Utilisation of the network's links (busy time / elapsed time, one direction of a link counted
/// as one channel) over a window, per class of channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkUse {
    /// simulated time of the window, ns
    pub window_ns: f64,
    /// mean over the router-to-node channels (ejection)
    pub terminal: f64,
    /// mean over the row (Aries green; Kim local) channels
    pub row: f64,
    /// mean over the column (Aries black) channels
    pub column: f64,
    /// mean over the cabled global channels
    pub global: f64,
    /// the busiest global channel
    pub global_max: f64,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backgrounds_parse_with_one_parser() {
        let parse = |s: &str| s.parse::<Background>();
        assert_eq!(parse("none"), Ok(Background::None));
        assert_eq!(parse("uniform:0.4:4K"), Ok(Background::Uniform { load: 0.4, bytes: 4096 }));
        assert_eq!(parse("uniform:1:4KB"), Ok(Background::Uniform { load: 1.0, bytes: 4096 }));
        assert_eq!(parse("worst-case:0.5"), Ok(Background::WorstCase { load: 0.5, bytes: 4096 }));
        assert_eq!(parse("congestors:64KiB"), Ok(Background::Congestors { bytes: 65536 }));
        assert_eq!(parse("production"), Ok(Background::Production { load: DEFAULT_PRODUCTION_LOAD, bytes: 4096 }));
        assert_eq!(parse("production:0.1:1K"), Ok(Background::Production { load: 0.1, bytes: 1024 }));
        // Names in any case, as the engine's own names (policies, modes) are read.
        assert_eq!(parse("Uniform:0.3"), Ok(Background::Uniform { load: 0.3, bytes: 4096 }));
        assert_eq!(parse("WORST-CASE:0.5:1k"), Ok(Background::WorstCase { load: 0.5, bytes: 1024 }));
        for bad in [
            "uniform",
            "uniform:x",
            "uniform:1.5",
            "uniform:7",
            "uniform:-0.1",
            "uniform:NaN",
            "uniform:inf",
            "uniform:1e-300",
            "uniform:0.0000009",
            "uniform:0.3:0",
            "uniform:0.1:zero",
            "uniform:0.3:4K:extra",
            "uniform:0.3:99999999999999999999M",
            "storm:0.1",
            "none:1",
            "congestors:1:2",
            "production:2",
            "production:0.1:0",
            "production:0.1:4K:1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let e = parse("uniform:1e-300").unwrap_err().to_string();
        assert!(e.contains("\"1e-300\"") && e.contains("at least 0.000001"), "{e}");
        assert_eq!(parse("uniform:-0"), Ok(Background::Uniform { load: 0.0, bytes: 4096 }));
        assert_eq!(parse("uniform:-0").unwrap().name(), "uniform-0-4096");
        assert_eq!(parse("uniform:1e-6"), Ok(Background::Uniform { load: 1e-6, bytes: 4096 }));
        let e = parse("uniform:7").unwrap_err().to_string();
        assert!(e.contains("\"7\"") && e.contains("LOAD in [0, 1]"), "{e}");
        let e = parse("uniform:0.3:0").unwrap_err().to_string();
        assert!(e.contains("0 bytes") && e.contains("above 0"), "{e}");
        let e = parse("uniform:0.3:4K:extra").unwrap_err().to_string();
        assert!(e.contains("uniform:0.3:4K:extra") && e.contains("uniform:LOAD[:SIZE]"), "{e}");
        let e = parse("storm:0.1").unwrap_err().to_string();
        assert!(e.contains("unknown kind") && e.contains("congestors[:SIZE]"), "{e}");
    }

    #[test]
    fn policies_are_the_engine_s_names_and_the_simulator_s_modes() {
        let parse = |s: &str| s.parse::<PolicySpec>();
        assert_eq!(parse("auto"), Ok(PolicySpec::Auto));
        assert_eq!(parse("paper"), Ok(PolicySpec::Auto));
        assert_eq!(parse("Steady"), Ok(PolicySpec::Steady));
        assert_eq!(PolicySpec::Steady.engine_policy(), Some(Policy::Steady));
        assert_eq!(parse("default"), Ok(PolicySpec::Off));
        assert_eq!(parse("ADAPTIVE_3"), Ok(PolicySpec::Fixed(Mode::Adaptive3)));
        assert_eq!(parse("min_hash"), Ok(PolicySpec::Fixed(Mode::Min)));
        let e = parse("FASTEST").unwrap_err().to_string();
        assert!(e.contains("\"FASTEST\"") && e.contains("MIN_HASH"), "{e}");
        for p in
            [PolicySpec::Auto, PolicySpec::Off, PolicySpec::Fixed(Mode::InOrder), PolicySpec::Fixed(Mode::Adaptive1)]
        {
            assert_eq!(parse(&p.name()), Ok(p), "names read back");
        }
        // every mode can be pinned, and the list of policies (messages, `aar sim --help`) names it
        for m in Mode::ALL {
            assert_eq!(parse(m.name()), Ok(PolicySpec::Fixed(m)));
            assert!(
                POLICIES.contains(m.name()) || m.routing_mode().is_some() && POLICIES.contains("ADAPTIVE0..ADAPTIVE3"),
                "{m:?}"
            );
        }
    }

    #[test]
    fn an_experiment_that_cannot_run_says_why() {
        let spec = |ranks, placement| ExperimentSpec::new(NetConfig::aries(1), Workload::Barrier, ranks, placement);
        assert_eq!(spec(4, Placement::SameBlade).check(), Ok(()));
        assert_eq!(
            spec(5, Placement::SameBlade).check(),
            Err(SpecError::PlacementFull {
                placement: "same-blade",
                ranks: 5,
                max: 4,
                larger: Placement::SameBlade.larger()
            })
        );
        assert_eq!(
            spec(97, Placement::SameGroup).check().unwrap_err().to_string(),
            "placement same-group holds at most 96 nodes (one rank per node), not 97: give at most 96 ranks, or \
             a placement that spans groups (across-groups, scattered)"
        );
        assert_eq!(spec(1, Placement::Scattered).check(), Err(SpecError::TooFewRanks(1)));
        // across the groups of a one-group network would be the same group under another name
        assert_eq!(spec(2, Placement::AcrossGroups).check(), Err(SpecError::AcrossOneGroup { groups: 1 }));
        let mut two = spec(2, Placement::AcrossGroups);
        two.net = NetConfig::aries(2);
        assert_eq!(two.check(), Ok(()));
        let mut s = spec(2, Placement::Scattered);
        s.arms = vec![PolicySpec::Auto; MAX_ARMS + 1];
        assert_eq!(s.check(), Err(SpecError::Arms { given: MAX_ARMS + 1, max: MAX_ARMS }));
        s.arms = vec![PolicySpec::Auto, PolicySpec::Fixed(Mode::Adaptive3), "paper".parse().unwrap()];
        assert_eq!(s.check(), Err(SpecError::DuplicateArm { policy: "auto".into() }));
        s.arms.clear();
        assert!(s.check().is_err());
    }

    #[test]
    fn a_background_that_cannot_run_as_described_is_refused() {
        let spec = |groups, background: &str, nodes| {
            let mut s = ExperimentSpec::new(NetConfig::aries(groups), Workload::Barrier, 2, Placement::SameBlade);
            s.background = background.parse().unwrap();
            s.background_nodes = nodes;
            s
        };
        assert_eq!(
            spec(1, "worst-case:0.5", 32).check(),
            Err(SpecError::WorstCaseOneGroup { traffic: "background worst-case:0.5:4K".into(), groups: 1 })
        );
        // kept to the groups of a job inside one group, it has no next group either
        assert_eq!(
            spec(2, "worst-case:0.5", 32).check(),
            Err(SpecError::WorstCaseJobGroup { background: "worst-case:0.5:4K".into(), group: 0, groups: 2 })
        );
        let mut global = spec(2, "worst-case:0.5", 32);
        global.background_local = false;
        assert_eq!(global.check(), Ok(()));
        let mut across = spec(2, "worst-case:0.5", 32);
        across.placement = Placement::AcrossGroups;
        assert_eq!(across.check(), Ok(()));
        // two ranks on one node are in one group, wherever the node is
        across.ranks_per_node = 2;
        assert!(matches!(across.check(), Err(SpecError::WorstCaseJobGroup { .. })), "{:?}", across.check());
        // scattered: as the run places the job (seed 1 and 3 put 2 nodes in one group of 2; 2 in two)
        let mut scattered = spec(2, "worst-case:0.5", 32);
        scattered.placement = Placement::Scattered;
        let outcomes: Vec<bool> = (1..=8)
            .map(|seed| {
                scattered.seed = seed;
                let topo = Topology::new(scattered.net.topo.clone());
                let nodes = scattered.node_of_ranks(&topo, &mut scattered.rng());
                let one = topo.group_of_node(nodes[0]) == topo.group_of_node(nodes[1]);
                assert_eq!(scattered.check().is_err(), one, "seed {seed}: {nodes:?}");
                one
            })
            .collect();
        assert!(outcomes.contains(&true) && outcomes.contains(&false), "{outcomes:?}");
        for (background, min) in [("uniform:0.3", 1), ("worst-case:0.1:64", 1), ("production", 2), ("congestors", 6)] {
            let spec = |groups, background, nodes| {
                let mut s = spec(groups, background, nodes);
                s.background_local = false;
                s
            };
            let e = spec(2, background, min - 1).check().unwrap_err();
            assert!(matches!(e, SpecError::TooFewBackgroundNodes { min: m, .. } if m == min), "{background}: {e:?}");
            assert!(e.to_string().contains(&format!("needs {min} or more background nodes")), "{e}");
            assert_eq!(spec(2, background, min).check(), Ok(()), "{background} on {min}");
        }
        // enough asked for, but not free in its scope: a group of 4 nodes (2 routers of 2), 2
        // taken by a job of one rank per router, leaves 2 in the job's group, and 10 in the machine
        let small = |background: &str, local| {
            let net = NetConfig::kim(crate::TopoSpec::Kim { p: 2, a: 2, h: 1, g: 3 });
            let mut s = ExperimentSpec::new(net, Workload::Barrier, 2, Placement::SameGroup);
            s.background = background.parse().unwrap();
            s.background_nodes = 32;
            s.background_local = local;
            s
        };
        for (background, min) in [("uniform:0.3", 1), ("production", 2), ("congestors", 6)] {
            let local = small(background, true);
            let topo = Topology::new(local.net.topo.clone());
            let scope = local.background_scope(&topo, &local.node_of_ranks(&topo, &mut local.rng()));
            assert_eq!(scope, [1, 3]);
            match local.check() {
                Ok(()) => assert!(min <= 2, "{background}"),
                Err(e) => {
                    let expected = SpecError::BackgroundOutOfReach {
                        background: local.background.form(),
                        min,
                        why: local.background.min_nodes().1,
                        free: 2,
                        job_groups: Some(1),
                    };
                    assert_eq!(e, expected, "{background}");
                    assert!(
                        e.to_string().contains(
                            "kept to the measured job's group, where only 2 nodes are free: it would send nothing"
                        ),
                        "{e}"
                    );
                }
            }
            assert_eq!(small(background, false).check(), Ok(()), "{background} in the whole machine");
        }
        let mut crowded = small("congestors", false);
        crowded.net = NetConfig::kim(crate::TopoSpec::Kim { p: 1, a: 2, h: 1, g: 3 });
        crowded.ranks = 4;
        crowded.placement = Placement::Scattered;
        assert!(matches!(crowded.check(), Err(SpecError::BackgroundOutOfReach { free: 2, job_groups: None, .. })));
        // without traffic, no background node is needed
        for background in ["none", "uniform:0", "worst-case:0", "production:0"] {
            assert_eq!(spec(2, background, 0).check(), Ok(()), "{background}");
        }
        // the message's form reads back as the same background
        for b in ["uniform:0.3:4K", "production:0.2:1M", "congestors:64", "worst-case:1:4K", "none"] {
            let parsed: Background = b.parse().unwrap();
            assert_eq!(parsed.form().parse::<Background>(), Ok(parsed), "{b}");
        }
    }
}
