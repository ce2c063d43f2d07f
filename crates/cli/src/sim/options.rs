//! The options that describe a network and an experiment. Every value is parsed by the `FromStr`
//! of the simulator's type that owns it (clap's `value_parser`), the parser the emulator's
//! `AAR_EMU_SIM` and the tests use too; what only the whole experiment can tell (ranks that do
//! not fit the placement, too many policies) is checked by `ExperimentSpec::check`, and the
//! message names the option.

use aar_sim::config::NetConfig;
use aar_sim::error::SpecError;
use aar_sim::experiment::{
    AbOrder, Background, ExperimentSpec, PolicySpec, RanksPerNode, Seed, Work, DEFAULT_BACKGROUND_NODES,
};
use aar_sim::topology::{KimShape, TopoSpec, ARIES_MAX_GLOBAL_PER_ROUTER};
use aar_sim::workload::{Placement, Workload};
use clap::Args;

/// Most iterations of a run: each keeps a row of the records ([`Work::BYTES_PER_ROW`]) per rank
/// until the end.
const MAX_ITERATIONS: u32 = 100_000;

/// Most rows of the records of a run ([`ExperimentSpec::rows`]: measured iterations times ranks),
/// each kept until the end ([`Work::BYTES_PER_ROW`]), per run of a sweep's parallel runs.
const MAX_RANK_ITERATIONS: u64 = 4_000_000;

/// The parser of a whole-number option of `lo..=hi`. A negative number reaches it (the options
/// take one as a value, `allow_negative_numbers`, rather than as an unknown option), and it and
/// one too large for any type are refused, as clap shows it, naming the option and the range.
pub fn whole<T: TryFrom<u64>>(lo: u64, hi: u64) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync {
    move |text| {
        text.trim()
            .parse::<u64>()
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| format!("\"{}\" is not a whole number from {lo} to {hi}", text.escape_debug()))
    }
}

/// [`whole`] from 0 to the largest `u32`.
pub fn count() -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync {
    whole(0, u32::MAX.into())
}

#[derive(Args, Clone)]
pub struct NetOpts {
    /// Aries-like groups (not with --kim, which gives its own)
    #[arg(long, default_value_t = 4, conflicts_with = "kim", value_parser = count(), allow_negative_numbers = true)]
    groups: u32,
    /// global ports per Aries router (not with --kim)
    #[arg(
        long,
        default_value_t = ARIES_MAX_GLOBAL_PER_ROUTER,
        conflicts_with = "kim",
        value_parser = count(),
        allow_negative_numbers = true
    )]
    global_per_router: u32,
    /// Kim et al. dragonfly instead: p,a,h,g (e.g. 4,8,4,33 = BookSim2 k=4)
    // A value that starts with '-' ("-1,8,4,33") reaches KimShape's parser, which says what it
    // takes (allow_negative_numbers takes only a whole value that is one number).
    #[arg(long, allow_hyphen_values = true)]
    kim: Option<KimShape>,
}

impl NetOpts {
    /// The options that give the network's shape, as written: `--kim P,A,H,G` or `--groups N`.
    pub fn shape(&self) -> String {
        match self.kim {
            Some(k) => format!("--kim {},{},{},{}", k.p, k.a, k.h, k.g),
            None => format!("--groups {}", self.groups),
        }
    }

    pub fn config(&self) -> Result<NetConfig, String> {
        if let Some(k) = self.kim {
            return Ok(NetConfig::kim(k.into()));
        }
        let topo = TopoSpec::Aries { groups: self.groups, global_per_router: self.global_per_router };
        topo.check()
            .map_err(|e| format!("--groups {} --global-per-router {}: {e}", self.groups, self.global_per_router))?;
        let mut c = NetConfig::aries(self.groups);
        c.topo = topo;
        Ok(c)
    }
}

/// `--max-packets`: the bound of every run of `run`, `sweep` and `paper`.
#[derive(Args, Clone, Copy)]
pub struct Bound {
    /// stop each run once N packets (its job's and its background's) have been delivered, before
    /// its job ends if need be: what the command reports holds the measured iterations every
    /// rank completed by then, stderr names the runs stopped and how many packets they took, and
    /// the exit status is 3
    #[arg(long, value_name = "N", value_parser = whole::<u64>(1, u64::MAX), allow_negative_numbers = true)]
    pub max_packets: Option<u64>,
}

impl Bound {
    /// What the weighing of a long run adds ([`super::weigh`]): how to bound it, where it is not.
    pub fn hint(&self) -> &'static str {
        match self.max_packets {
            None => "; --max-packets N stops the run after N packets, keeping the iterations done",
            Some(_) => "",
        }
    }
}

#[derive(Args, Clone)]
pub struct ExpOpts {
    #[command(flatten)]
    net: NetOpts,
    // The forms in the help are the parsers' own lists (one place says what each parser takes);
    // texts with brackets are attributes, as rustdoc reads brackets in a doc comment as links.
    #[arg(long, default_value = "pingpong:4M", help = help::workload())]
    workload: Workload,
    /// ranks of the measured job (at least 2), one per node of the placement unless
    /// --ranks-per-node says more
    #[arg(long, default_value_t = 2, value_parser = count(), allow_negative_numbers = true)]
    ranks: u32,
    /// consecutive ranks on each node of the placement (as aprun -N), 1 to 64: they share the node's
    /// NIC (its queue, outstanding packets and counters); messages between them use shared memory
    #[arg(long, value_name = "K", default_value = "1", allow_negative_numbers = true)]
    ranks_per_node: RanksPerNode,
    #[arg(long, default_value = "same-group", help = help::placement())]
    placement: Placement,
    #[arg(long, default_value = "auto", value_delimiter = ',', help = help::policy())]
    policy: Vec<PolicySpec>,
    // no default_value: an order given with one policy is said to have no effect
    #[arg(
        long,
        help = "which policy runs in which iteration, with two or more policies: round-robin, or \
        shuffled[:SEED] (randomized blocks, each holding every policy once), the A/B schedule of libaar.so (AAR_AB_ORDER) \
        [default: round-robin]"
    )]
    order: Option<AbOrder>,
    #[arg(
        long,
        help = help::iterations(),
        default_value_t = 10,
        value_parser = whole::<u32>(1, MAX_ITERATIONS.into()),
        allow_negative_numbers = true
    )]
    iterations: u32,
    /// iterations run before the measured ones, at most 100000: they write no record row, but
    /// count in the A/B schedule (the policies alternate from the first of them)
    #[arg(
        long,
        default_value_t = 0,
        value_parser = whole::<u32>(0, MAX_ITERATIONS.into()),
        allow_negative_numbers = true
    )]
    warmup_iterations: u32,
    /// decisions per counter window of the ranks' engines, as libaar.so's AAR_WINDOW (1: a read
    /// after every decision, the paper's schedule); default: libaar.so's default
    #[arg(long, value_parser = whole::<u32>(1, 1_000_000), allow_negative_numbers = true)]
    window: Option<u32>,
    /// every rank starts an iteration when the last rank has ended the previous one (a barrier
    /// that takes no simulated time), so skew does not carry from one iteration into the next
    #[arg(long)]
    synchronized_iterations: bool,
    #[arg(long, default_value = "none", help = help::background(), allow_negative_numbers = true)]
    background: Background,
    // no default_value: nodes given without a background are said to have no effect
    #[arg(
        long,
        value_name = "N",
        value_parser = count(),
        allow_negative_numbers = true,
        help = format!("nodes that generate the traffic of --background [default: {DEFAULT_BACKGROUND_NODES}]")
    )]
    background_nodes: Option<u32>,
    /// the traffic of --background anywhere in the machine instead of only in the measured job's
    /// groups
    #[arg(long)]
    background_global: bool,
    /// the run's random numbers (scattered placement, background, routing): a whole number from 0 to
    /// 18446744073709551615; the same seed repeats the run
    #[arg(long, default_value = "1", allow_negative_numbers = true)]
    seed: Seed,
}

impl ExpOpts {
    pub fn spec(&self) -> Result<ExperimentSpec, String> {
        let mut s = ExperimentSpec::new(self.net.config()?, self.workload.clone(), self.ranks, self.placement);
        s.arms = self.policy.clone();
        s.order = self.order.unwrap_or(s.order);
        s.iterations = self.iterations;
        s.warmup_iterations = self.warmup_iterations;
        s.window_decisions = self.window;
        s.synchronized_iterations = self.synchronized_iterations;
        s.background = self.background.clone();
        s.background_nodes = self.background_nodes.unwrap_or(DEFAULT_BACKGROUND_NODES);
        let background_nodes = s.background_nodes;
        s.background_local = !self.background_global;
        s.seed = self.seed.0;
        s.ranks_per_node = self.ranks_per_node.0;
        s.check().map_err(|e| match e {
            // the simulator's advice suits AAR_EMU_SIM too, which has no ranks per node
            SpecError::PlacementFull { .. } => {
                format!("--ranks {}: {e}, or more ranks per node (--ranks-per-node)", self.ranks)
            }
            SpecError::TooFewRanks(_) => format!("--ranks {}: {e}", self.ranks),
            SpecError::Packed { .. } => format!(
                "--ranks {} --ranks-per-node {} --placement {}: {e}",
                self.ranks,
                self.ranks_per_node.0,
                self.placement.form()
            ),
            SpecError::NodesFull { .. } | SpecError::RanksPerNode { .. } => {
                format!("--ranks {} --ranks-per-node {}: {e}", self.ranks, self.ranks_per_node.0)
            }
            SpecError::AcrossOneGroup { .. } => format!("--placement across-groups {}: {e}", self.net.shape()),
            SpecError::WorstCaseOneGroup { .. } => {
                format!("--background {} {}: {e}", self.background.form(), self.net.shape())
            }
            SpecError::WorstCaseJobGroup { .. } => format!(
                "--background {} --placement {}: {e} (--background-global, --placement across-groups)",
                self.background.form(),
                self.placement.form()
            ),
            SpecError::TooFewBackgroundNodes { .. } => {
                format!("--background {} --background-nodes {background_nodes}: {e}", self.background.form())
            }
            SpecError::BackgroundOutOfReach { job_groups, .. } => format!(
                "--background {} --background-nodes {background_nodes}: {e}{}",
                self.background.form(),
                if job_groups.is_some() { " (--background-global)" } else { "" }
            ),
            SpecError::RankNodes { .. } => e.to_string(),
            SpecError::Arms { .. } | SpecError::DuplicateArm { .. } => format!("--policy: {e}"),
            SpecError::UnmeasuredArm { .. } => format!(
                "--iterations {} --warmup-iterations {} --policy {} --order {}: {e}",
                self.iterations,
                self.warmup_iterations,
                self.policy.iter().map(|p| p.name()).collect::<Vec<_>>().join(","),
                s.order
            ),
            // UniformOneNode: synthetic traffic's, not an experiment's
            SpecError::Topology(_) | SpecError::UniformOneNode { .. } => e.to_string(),
        })?;
        let rows = s.rows();
        if rows > MAX_RANK_ITERATIONS {
            // Ranks past the bound leave no number of iterations (at least 1) that fits: say the ranks'.
            let fewer = match MAX_RANK_ITERATIONS / u64::from(self.ranks) {
                0 => format!("at most {MAX_RANK_ITERATIONS} ranks, which even one iteration needs"),
                most => format!("fewer iterations (at most {most}) or fewer ranks"),
            };
            return Err(format!(
                "--ranks {} --iterations {}: {rows} rows of records, each kept (about {}) until the end: at most \
                 {MAX_RANK_ITERATIONS} (about {:.0} GB); use {fewer}",
                self.ranks,
                self.iterations,
                help::row_kb(),
                (MAX_RANK_ITERATIONS * Work::BYTES_PER_ROW) as f64 / 1e9,
            ));
        }
        self.say_unused(&s);
        if matches!(s.workload, Workload::PingPong { .. }) && s.ranks > 2 {
            // The other ranks' nodes are still placed: a larger job spreads the two further.
            let others = s.ranks - 2;
            eprintln!(
                "aar: --workload pingpong --ranks {}: a ping-pong is between ranks 0 and 1; the other {} {} nothing \
                 (give --ranks 2 for the two alone)",
                s.ranks,
                aar_record::count(others, "rank", "ranks"),
                if others == 1 { "sends" } else { "send" }
            );
        }
        Ok(s)
    }

    /// Says on stderr which options given have no effect without another one, and what to add.
    fn say_unused(&self, s: &ExperimentSpec) {
        if s.background == Background::None {
            let given: Vec<String> = [
                self.background_nodes.map(|n| format!("--background-nodes {n}")),
                self.background_global.then(|| "--background-global".into()),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !given.is_empty() {
                eprintln!(
                    "aar: {}: there is no background (--background none), so {} no effect; give --background too \
                     (e.g. --background uniform:0.3) for background traffic",
                    given.join(" "),
                    if given.len() == 1 { "it has" } else { "they have" }
                );
            }
        }
        if let (Some(order), [arm]) = (self.order, &s.arms[..]) {
            eprintln!(
                "aar: --order {order}: one policy (--policy {}) runs in every iteration, so the order has no effect; \
                 give two or more policies (e.g. --policy auto,ADAPTIVE0) to alternate them",
                arm.name()
            );
        }
    }
}

/// The help of the options whose values have forms: each lists what the option's parser takes,
/// from the constant the parser's own messages use.
pub mod help {
    use super::{MAX_ITERATIONS, MAX_RANK_ITERATIONS};
    use aar_sim::config::MODE_NAMES;
    use aar_sim::experiment::{Load, Work, BACKGROUNDS, DEFAULT_PRODUCTION_LOAD, POLICIES};
    use aar_sim::workload::{MAX_MESSAGE_BYTES, PLACEMENTS, WORKLOADS};
    use aar_sim::ByteSize;

    pub fn workload() -> String {
        format!(
            "{WORKLOADS}; without SIZE, 8-byte messages (rr-bandwidth: 128K); SIZE at most {}",
            ByteSize(MAX_MESSAGE_BYTES)
        )
    }

    /// A row of the records ([`Work::BYTES_PER_ROW`]) in KB, one decimal ("0.5 KB").
    pub fn row_kb() -> String {
        format!("{:.1} KB", Work::BYTES_PER_ROW as f64 / 1e3)
    }

    pub fn iterations() -> String {
        format!(
            "iterations measured (each keeps about {} per rank until the end: at most {MAX_ITERATIONS}, and ranks x \
             iterations at most {MAX_RANK_ITERATIONS})",
            row_kb()
        )
    }

    pub fn placement() -> String {
        format!("{PLACEMENTS} (across-groups: rank i in group i mod groups, so 2 or more groups)")
    }

    pub fn policy() -> String {
        format!("policies alternated across iterations (A/B), each once: {POLICIES}")
    }

    pub fn background() -> String {
        format!(
            "{BACKGROUNDS} (LOAD in [0, 1], at least {} above 0: the fraction of a NIC's injection bandwidth; \
             production: background jobs of a busy machine, LOAD default {DEFAULT_PRODUCTION_LOAD}; SIZE default 4K, \
             at most {})",
            Load::MIN,
            ByteSize(MAX_MESSAGE_BYTES)
        )
    }

    pub fn modes() -> String {
        format!("routing modes: {MODE_NAMES}")
    }
}
