//! The SC'19 microbenchmark suite at the paper's scale: 1,024 ranks, one per node, packed on 257
//! Aries routers over 6 groups of a busy machine, every benchmark run under ADAPTIVE0, ADAPTIVE3,
//! `auto` (the paper's algorithm in every rank) and `steady`, each policy in runs of its own that
//! meet, seed by seed, the same background from the same start. [`run`] runs it (independent runs
//! in parallel), [`markdown`] writes the document `aar sim paper` regenerates
//! (docs/sim/PAPER.md); the plots are drawn by the CLI, which has the plotting code of
//! `aar report`.

use crate::config::{Mode, NetConfig};
use crate::experiment::{
    Background, ExperimentResult, ExperimentSpec, JobPattern, LinkUse, PolicySpec, StoppedRun, PRODUCTION_JOB_NODES,
    PRODUCTION_MIX,
};
use crate::parallel::run_all;
use crate::simulation::{run_experiment_told, Destinations, Simulation};
use crate::topology::Topology;
use crate::validate::fmt_ns;
use crate::workload::{Placement, Workload};
use aar_engine::model::{request_flits, PACKET_BYTES};
use aar_engine::Transfer;
use aar_stats::{summarize, Summary};
use serde::Serialize;
use std::fmt::Write;
use std::time::Instant;

/// Ranks of the measured job, one per node.
pub const RANKS: u32 = 1024;
/// Routers the job's nodes are packed on (Piz Daint's allocation in the paper).
pub const ROUTERS: u32 = 257;
/// Groups the job's routers are spread over.
pub const JOB_GROUPS: u32 = 6;
/// Groups of the machine: the job's 6 and one more, the "rest of the machine" that other jobs'
/// traffic crosses too (every Valiant path may use it). One group, not eight: the cost of a run
/// grows with the busy nodes, and one more group already gives the job's non-minimal paths a
/// group that it does not occupy.
pub const MACHINE_GROUPS: u32 = 7;
/// The policies every benchmark runs, in this order, each in runs of its own.
/// `steady` (the policy of docs/policy.md) runs beside the paper's, so both meet the same machine.
pub const ARMS: [PolicySpec; 4] =
    [PolicySpec::Fixed(Mode::Adaptive0), PolicySpec::Fixed(Mode::Adaptive3), PolicySpec::Auto, PolicySpec::Steady];
/// Unmeasured iterations of a collective case: `steady` times each of its three routings of the
/// call in one of them.
const COLLECTIVE_WARMUP: u32 = 3;
/// The background: a production mix at a load of 0.1 per sending node, 4 KiB messages.
pub const BACKGROUND: Background = Background::Production { load: 0.1, bytes: 4096 };

/// Which rank rank 0 plays ping-pong with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Partner {
    /// the first rank on a router of rank 0's group in another chassis and slot (2 hops)
    SameGroup,
    /// the last rank of the job, in its last group
    OtherGroup,
}

/// One benchmark at one size.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    /// the benchmark's name (one plot per benchmark)
    pub bench: String,
    /// the size's label (`8 B`, `1 MiB`, `-` for the barrier)
    pub size: String,
    pub workload: Workload,
    pub partner: Option<Partner>,
    /// one seed and one iteration of each policy instead of the suite's (the costliest benchmarks);
    /// only the automatic policies run the case's unmeasured iterations
    pub once: bool,
    /// unmeasured iterations every policy runs first (in a `once` case, the automatic policies
    /// only): an automatic policy measures a window, and `steady` times each routing of a
    /// collective call, before the measured iterations
    pub warmup: u32,
    /// iterations of each policy per seed instead of the suite's (cheap cases get more samples)
    pub iterations: Option<u32>,
}

impl Case {
    fn once(mut self) -> Case {
        self.once = true;
        self
    }

    fn iterations(mut self, per_policy: u32) -> Case {
        self.iterations = Some(per_policy);
        self
    }

    /// An MPI collective: `steady` times each of its three routings of the call once, in the
    /// unmeasured iterations, before it keeps the fastest.
    fn collective(mut self) -> Case {
        self.warmup = COLLECTIVE_WARMUP;
        self
    }

    fn new(bench: &str, workload: &str, partner: Option<Partner>) -> Case {
        let workload: Workload = workload.parse().expect("the suite's workloads parse");
        let size = match workload.bytes() {
            Some(b) => fmt_bytes(b),
            None => "-".into(),
        };
        Case { bench: bench.into(), size, workload, partner, once: false, warmup: 1, iterations: None }
    }

    /// `bench size` as the tables name it.
    pub fn label(&self) -> String {
        if self.size == "-" {
            self.bench.clone()
        } else {
            format!("{} {}", self.bench, self.size)
        }
    }
}

/// `8 B`, `4 KiB`, `1 MiB`.
pub fn fmt_bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// What the suite runs.
#[derive(Clone, Debug, Serialize)]
pub struct Suite {
    pub quick: bool,
    pub cases: Vec<Case>,
    /// seeds 1..=seeds (each seed changes the background's jobs and traffic and every routing choice)
    pub seeds: u64,
    /// measured iterations of each policy per seed
    pub iterations_per_policy: u32,
    pub background: Background,
    pub machine_groups: u32,
    /// stop each run once this many packets have been delivered (`aar sim paper --max-packets`)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_packets: Option<u64>,
}

impl Suite {
    /// The whole suite (budgeted to run in ~30 minutes on 2 cores; docs/sim/PAPER.md says how).
    pub fn full() -> Suite {
        use Partner::*;
        let cases = vec![
            Case::new("ping-pong, one group", "pingpong:8", Some(SameGroup)).iterations(6),
            Case::new("ping-pong, one group", "pingpong:128K", Some(SameGroup)),
            Case::new("ping-pong, one group", "pingpong:4M", Some(SameGroup)).once(),
            Case::new("ping-pong, two groups", "pingpong:8", Some(OtherGroup)).iterations(6),
            Case::new("ping-pong, two groups", "pingpong:128K", Some(OtherGroup)),
            Case::new("ping-pong, two groups", "pingpong:1M", Some(OtherGroup)).once(),
            Case::new("allreduce", "allreduce:8", None).iterations(6).collective(),
            Case::new("allreduce", "allreduce:16K", None).collective(),
            Case::new("alltoall", "alltoall:8", None).collective(),
            Case::new("alltoall", "alltoall:1K", None).once().collective(),
            // no payload: `steady` routes it message by message, not as a timed call
            Case::new("barrier", "barrier", None).iterations(6),
            Case::new("broadcast", "broadcast:8", None).iterations(6).collective(),
            Case::new("broadcast", "broadcast:16K", None).collective(),
            Case::new("halo3d", "halo3d:8", None).iterations(6),
            Case::new("halo3d", "halo3d:16K", None),
            Case::new("sweep3d", "sweep3d:8", None).once(),
        ];
        Suite {
            quick: false,
            cases,
            seeds: 3,
            iterations_per_policy: 2,
            background: BACKGROUND,
            machine_groups: MACHINE_GROUPS,
            max_packets: None,
        }
    }

    /// The CI form: the same job, machine and background; the benchmarks whose small size runs
    /// in seconds, one seed, one iteration per policy.
    pub fn quick() -> Suite {
        use Partner::*;
        let cases = vec![
            Case::new("ping-pong, one group", "pingpong:8", Some(SameGroup)),
            Case::new("ping-pong, two groups", "pingpong:8", Some(OtherGroup)),
            Case::new("barrier", "barrier", None),
            Case::new("halo3d", "halo3d:8", None),
        ];
        Suite { quick: true, cases, seeds: 1, iterations_per_policy: 1, ..Suite::full() }
    }

    /// The network: Aries-like, 10 global ports per router.
    pub fn net(&self) -> NetConfig {
        NetConfig::aries(self.machine_groups)
    }

    /// Every run of the suite, with the index of its case: one per case, seed and policy, the
    /// `once` cases first (they are the longest: started first, they do not end the suite alone
    /// on one core). The runs of one seed meet the same background traffic from the same start
    /// and run the same unmeasured iterations first, so their measured iterations meet the same
    /// machine: policies that route alike take the same time.
    pub fn runs(&self) -> Vec<(usize, ExperimentSpec)> {
        let order = self
            .cases
            .iter()
            .enumerate()
            .filter(|(_, c)| c.once)
            .chain(self.cases.iter().enumerate().filter(|(_, c)| !c.once));
        let mut runs = Vec::new();
        for (c, case) in order {
            for seed in 1..=self.seeds_of(case) {
                runs.extend(ARMS.iter().map(|&arm| (c, self.spec(case, seed, arm))));
            }
        }
        runs
    }

    fn seeds_of(&self, case: &Case) -> u64 {
        if case.once {
            1
        } else {
            self.seeds
        }
    }

    /// The runs of `case` (see [`Suite::runs`]).
    pub fn runs_of(&self, case: &Case) -> u64 {
        ARMS.len() as u64 * self.seeds_of(case)
    }

    /// The experiment of `case` with `seed` under policy `arm`.
    pub fn spec(&self, case: &Case, seed: u64, arm: PolicySpec) -> ExperimentSpec {
        let placement = Placement::Packed { routers: ROUTERS, groups: JOB_GROUPS };
        let mut s = ExperimentSpec::new(self.net(), case.workload.clone(), RANKS, placement);
        s.arms = vec![arm];
        // synchronised starts: no iteration's time depends on how the one before it ended (see
        // CARRY_OVER)
        s.synchronized_iterations = true;
        s.iterations = if case.once { 1 } else { case.iterations.unwrap_or(self.iterations_per_policy) };
        // An application's first iterations are not its steady state: every automatic policy
        // measures a window, and `steady` times the routings of a collective call, first. Every
        // policy runs them, so that the measured iterations start at the same moment of the
        // background; in the costliest cases only the automatic policies do.
        let automatic = arm.engine_policy().is_some_and(|p| p.is_automatic());
        s.warmup_iterations = if case.once && !automatic { 0 } else { case.warmup };
        s.background = self.background.clone();
        s.background_nodes = u32::MAX;
        s.background_local = false;
        s.seed = seed;
        if let Some(partner) = case.partner {
            let topo = Topology::new(s.net.topo.clone());
            let mut nodes = placement.nodes(&topo, RANKS, &mut crate::rng::Rng::new(0));
            let k = partner_rank(&topo, &nodes, partner);
            nodes.swap(1, k);
            s.rank_nodes = Some(nodes);
        }
        s
    }
}

/// The rank rank 0 plays ping-pong with, on the packed job's `nodes`.
fn partner_rank(topo: &Topology, nodes: &[u32], partner: Partner) -> usize {
    let r0 = topo.router_of_node(nodes[0]);
    match partner {
        Partner::SameGroup => nodes
            .iter()
            .position(|&n| {
                let r = topo.router_of_node(n);
                topo.group_of(r) == topo.group_of(r0) && topo.min_hops(r0, r) == topo.local_diam
            })
            .expect("a packed job has a router two hops away in its first group"),
        Partner::OtherGroup => nodes.len() - 1,
    }
}

/// One policy of one case, over every iteration of every seed.
#[derive(Clone, Debug, Serialize)]
pub struct ArmReport {
    pub policy: String,
    /// iteration times divided by ADAPTIVE0's median, ascending
    pub normalised: Vec<f64>,
    /// summary of `normalised` (median, its 95 % CI, QCD)
    pub summary: Summary,
    /// median iteration time, ns
    pub median_ns: f64,
    /// mean over the ranks' iteration windows: stalled cycles per request flit
    pub stall_ratio: Option<f64>,
    /// mean over the ranks' iteration windows: request-response latency, µs
    pub latency_us: Option<f64>,
    /// shares of the bytes the ranks sent under this policy with ADAPTIVE0, ADAPTIVE1, ADAPTIVE3
    pub share_a0: f64,
    pub share_a1: f64,
    pub share_a3: f64,
}

/// The paper's finding for a case, ours, and the mechanism.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub paper: String,
    pub ours: String,
    pub agrees: bool,
    pub mechanism: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct CaseReport {
    pub case: Case,
    pub arms: Vec<ArmReport>,
    /// fraction of the job's request packets sent on non-minimal paths, per routing mode of the
    /// messages (ADAPTIVE0, ADAPTIVE1, ADAPTIVE3), mean over the seeds
    pub nonminimal: Vec<(String, f64)>,
    /// link utilisation while the job ran, mean over the seeds
    pub links: LinkUse,
    /// simulated time and packets of all seeds
    pub sim_ns: f64,
    pub packets: u64,
    /// wall time of the runs of this case (summed over the seeds), s
    pub wall_s: f64,
    pub finding: Finding,
}

/// The background measured alone: per pattern, the nodes, the documented and the measured
/// offered load (request flits injected per NIC cycle).
#[derive(Clone, Debug, Serialize)]
pub struct PatternLoad {
    pub pattern: String,
    pub jobs: usize,
    pub senders: usize,
    pub documented: f64,
    pub measured: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BackgroundReport {
    pub nodes: u32,
    pub window_ns: f64,
    pub patterns: Vec<PatternLoad>,
    /// mean offered load per node of the whole machine (job nodes idle), as documented
    pub mean_load: f64,
    pub links: LinkUse,
}

/// A check of the suite (exit status of `aar sim paper`).
#[derive(Clone, Debug, Serialize)]
pub struct Gate {
    pub name: String,
    pub value: String,
    pub expected: String,
    pub pass: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct PaperReport {
    pub suite: Suite,
    pub ranks: u32,
    pub routers: u32,
    pub groups: u32,
    pub background: BackgroundReport,
    pub cases: Vec<CaseReport>,
    pub gates: Vec<Gate>,
    pub threads: usize,
    /// the runs stopped at the suite's `max_packets`, named `CASE seed SEED POLICY`: their cases
    /// hold the measured iterations they completed
    pub stopped: Vec<StoppedRun>,
    /// wall time of the whole suite, s
    pub wall_s: f64,
}

impl PaperReport {
    pub fn passed(&self) -> bool {
        self.gates.iter().all(|g| g.pass)
    }
}

/// Simulated time the background is measured alone.
const BACKGROUND_WINDOW_NS: f64 = 40_000.0;
/// Tolerance of a measured offered load against the documented one.
const LOAD_TOLERANCE: f64 = 0.10;

/// Runs the production background alone (no measured job: the job's nodes idle) for `window_ns`
/// after its lead time, and measures what each pattern's senders inject and the links carry.
pub fn measure_background(spec: &ExperimentSpec, window_ns: f64) -> BackgroundReport {
    let (mut w, _) = Simulation::build_external(spec);
    let lead = spec.net.ns_to_ticks(spec.background_lead_ns);
    w.run_until(lead);
    let ports = w.port_flits();
    let before: Vec<u64> = w.background_sources().iter().map(|s| w.net.counters(s.node).req_flits).collect();
    let end = lead + spec.net.ns_to_ticks(window_ns);
    w.run_until(end);
    let links = w.link_use(&ports, lead);
    let cycles = (end - lead) as f64 / spec.net.nic_cycle as f64;
    let mut patterns = Vec::new();
    for (pattern, share) in PRODUCTION_MIX {
        let srcs: Vec<(usize, &crate::simulation::NoiseSource)> = w
            .background_sources()
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.destinations, Destinations::Job { pattern: p, .. } if p == pattern))
            .collect();
        let mut jobs: Vec<u32> = srcs
            .iter()
            .filter_map(|(_, s)| match s.destinations {
                Destinations::Job { job, .. } => Some(job),
                _ => None,
            })
            .collect();
        jobs.dedup();
        let flits: u64 = srcs.iter().map(|&(i, s)| w.net.counters(s.node).req_flits - before[i]).sum();
        let load = match spec.background {
            Background::Production { load, .. } => load * share,
            _ => 0.0,
        };
        patterns.push(PatternLoad {
            pattern: pattern.name().into(),
            jobs: jobs.len(),
            senders: srcs.len(),
            documented: load,
            measured: if srcs.is_empty() { 0.0 } else { flits as f64 / srcs.len() as f64 / cycles },
        });
    }
    let offered: f64 = w.background_sources().iter().map(|s| s.load).sum();
    BackgroundReport {
        nodes: w.net.topo.n_nodes,
        window_ns,
        patterns,
        mean_load: offered / f64::from(w.net.topo.n_nodes),
        links,
    }
}

/// Runs the suite: every case and seed in parallel (`threads` = rayon's), then the statistics.
pub fn run(suite: &Suite) -> PaperReport {
    let wall = Instant::now();
    let specs = suite.runs();
    let results = run_all(&specs, "sim paper", |(c, s), done| {
        run_experiment_told(s, &suite.cases[*c].label(), suite.max_packets, done)
    });
    let stopped = specs
        .iter()
        .zip(&results)
        .filter_map(|((c, s), r)| {
            let run = format!("{} seed {} {}", suite.cases[*c].label(), s.seed, s.arms[0].name());
            StoppedRun::of(run, s, r)
        })
        .collect();
    let background = measure_background(&suite.spec(&suite.cases[0], 1, ARMS[0]), BACKGROUND_WINDOW_NS);
    let mut routers = std::collections::BTreeSet::new();
    let mut groups = std::collections::BTreeSet::new();
    let mut ranks = u32::MAX;
    let mut cases = Vec::new();
    for (c, case) in suite.cases.iter().enumerate() {
        let runs: Vec<&ExperimentResult> =
            specs.iter().zip(&results).filter(|((k, _), _)| *k == c).map(|(_, r)| r).collect();
        for r in &runs {
            ranks = ranks.min(r.records.len() as u32);
            routers.extend(r.records.iter().map(|x| x.router));
            groups.extend(r.records.iter().map(|x| x.group));
        }
        cases.push(case_report(case, &runs));
    }
    let ranks = if ranks == u32::MAX { 0 } else { ranks };
    let mut report = PaperReport {
        suite: suite.clone(),
        ranks,
        routers: routers.len() as u32,
        groups: groups.len() as u32,
        background,
        cases,
        gates: Vec::new(),
        threads: rayon::current_num_threads(),
        stopped,
        wall_s: 0.0,
    };
    report.gates = gates(&report);
    report.wall_s = wall.elapsed().as_secs_f64();
    report
}

fn case_report(case: &Case, runs: &[&ExperimentResult]) -> CaseReport {
    let a0 = ARMS[0].name();
    let mut a0_times: Vec<f64> = runs.iter().flat_map(|r| r.times(&a0)).collect();
    a0_times.sort_by(f64::total_cmp);
    let base = aar_stats::median(&a0_times).unwrap_or(1.0);
    let arms: Vec<ArmReport> = ARMS
        .iter()
        .map(|arm| {
            let name = arm.name();
            let times: Vec<f64> = runs.iter().flat_map(|r| r.times(&name)).collect();
            let mut normalised: Vec<f64> = times.iter().map(|t| t / base).collect();
            normalised.sort_by(f64::total_cmp);
            let (mut stall, mut ns, mut lat, mut nl) = (0.0, 0u64, 0.0, 0u64);
            let mut bytes = [0u64; crate::config::N_MODES];
            for r in runs {
                for rec in &r.records {
                    for it in rec.iterations.iter().filter(|it| rec.arms[it.arm] == name) {
                        if let Some(s) = it.stall_ratio {
                            stall += s;
                            ns += 1;
                        }
                        if let Some(l) = it.latency_us {
                            lat += l;
                            nl += 1;
                        }
                        for (b, x) in bytes.iter_mut().zip(it.bytes) {
                            *b += x;
                        }
                    }
                }
            }
            let total: u64 = bytes.iter().sum();
            let share = |m: Mode| if total > 0 { bytes[m as usize] as f64 / total as f64 } else { 0.0 };
            ArmReport {
                policy: name,
                summary: summarize(&normalised),
                median_ns: summarize(&times).median,
                normalised,
                stall_ratio: (ns > 0).then(|| stall / ns as f64),
                latency_us: (nl > 0).then(|| lat / nl as f64),
                share_a0: share(Mode::Adaptive0),
                share_a1: share(Mode::Adaptive1),
                share_a3: share(Mode::Adaptive3),
            }
        })
        .collect();
    let nonminimal = [Mode::Adaptive0, Mode::Adaptive1, Mode::Adaptive3]
        .iter()
        .filter_map(|m| {
            let v: Vec<f64> =
                runs.iter().filter_map(|r| r.nonmin_by_mode.iter().find(|(n, _)| n == m.name()).map(|x| x.1)).collect();
            (!v.is_empty()).then(|| (m.name().to_string(), aar_stats::mean(&v)))
        })
        .collect();
    let n = runs.len().max(1) as f64;
    let mut links = LinkUse::default();
    for r in runs {
        let l = r.links;
        links.window_ns += l.window_ns / n;
        links.terminal += l.terminal / n;
        links.row += l.row / n;
        links.column += l.column / n;
        links.global += l.global / n;
        links.global_max = links.global_max.max(l.global_max);
    }
    let mut rep = CaseReport {
        case: case.clone(),
        arms,
        nonminimal,
        links,
        sim_ns: runs.iter().map(|r| r.sim_time_ns).sum(),
        packets: runs.iter().map(|r| r.packets).sum(),
        wall_s: runs.iter().map(|r| r.wall_s).sum(),
        finding: Finding { paper: String::new(), ours: String::new(), agrees: false, mechanism: String::new() },
    };
    rep.finding = finding(&rep);
    rep
}

/// What the paper reports for the case, and what the simulator shows beside it.
/// Bootstrap resamples of each policy's iterations for the intervals of [`steady_against_the_others`].
const RESAMPLES: usize = 2000;

/// The criteria `steady` is held to (docs/policy.md), with intervals that say what the sampling
/// of the iterations alone explains.
fn steady_against_the_others(s: &mut String, r: &PaperReport) {
    let _ = writeln!(s, "## `steady` against `auto` and the better fixed mode\n");
    let _ = writeln!(
        s,
        "The criteria `steady` is held to (docs/policy.md): its median no more than 2% above `auto`'s and 5% \
         above the better fixed mode's, its QCD no higher than `auto`'s. Ratios of medians and the difference \
         of the QCDs, each with its percentile-bootstrap 95% interval ({RESAMPLES} resamples of each policy's \
         iterations, seeded): an interval that holds 1 (a ratio) or 0 (a difference) says that the two \
         policies differ by no more than the sampling of their iterations explains. *Same routing*: `steady` \
         and `auto` sent their bytes with the same modes (every share within 1%); their runs of a seed meet \
         the same background from the same start, so there they take the same time, but for what `steady`'s \
         tries of a collective changed in the unmeasured iterations.\n"
    );
    let _ = writeln!(
        s,
        "| benchmark | samples | `steady` / `auto` | `steady` / better fixed | QCD `steady` − `auto` | same routing |\n\
         |---|---:|---|---|---|---|"
    );
    for c in &r.cases {
        let arm = |name: &str| c.arms.iter().find(|a| a.policy == name);
        let (Some(steady), Some(auto), Some(a0), Some(a3)) =
            (arm("steady"), arm("auto"), arm("ADAPTIVE0"), arm("ADAPTIVE3"))
        else {
            continue;
        };
        let fixed = if a3.summary.median < a0.summary.median { a3 } else { a0 };
        let ratio = |base: &ArmReport| match aar_stats::ratio_of_medians(
            &base.normalised,
            &steady.normalised,
            0.95,
            RESAMPLES,
            1,
        ) {
            Some((x, lo, hi)) if base.normalised.len() > 1 => format!("{x:.3} [{lo:.3}, {hi:.3}]"),
            Some((x, _, _)) => format!("{x:.3}"),
            None => "-".into(),
        };
        let qcd = match aar_stats::qcd_difference(&auto.normalised, &steady.normalised, 0.95, RESAMPLES, 1) {
            Some((d, lo, hi)) => format!("{d:+.4} [{lo:+.4}, {hi:+.4}]"),
            None => "-".into(),
        };
        let same =
            [(steady.share_a0, auto.share_a0), (steady.share_a1, auto.share_a1), (steady.share_a3, auto.share_a3)]
                .iter()
                .all(|(x, y)| (x - y).abs() <= 0.01);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} ({}) | {} | {} |",
            c.case.label(),
            steady.summary.n,
            ratio(auto),
            ratio(fixed),
            fixed.policy,
            qcd,
            if same { "yes" } else { "no" }
        );
    }
    let _ = writeln!(s);
}

fn finding(c: &CaseReport) -> Finding {
    let (a0, a3, auto) = (&c.arms[0], &c.arms[1], &c.arms[2]);
    let m = |a: &ArmReport| a.summary.median;
    let bytes = c.case.workload.bytes().unwrap_or(0);
    let faster = |x: &ArmReport, y: &ArmReport| if m(x) < m(y) { x.policy.clone() } else { y.policy.clone() };
    let fixed = format!("{} faster ({:.3} vs {:.3})", faster(a0, a3), m(a0), m(a3));
    let (paper, ours, agrees) = match (c.case.partner, &c.case.workload) {
        (Some(Partner::SameGroup), _) if bytes >= 64 << 10 => {
            ("ADAPTIVE0 faster (large messages inside a group)".to_string(), fixed, m(a0) < m(a3))
        }
        (Some(Partner::OtherGroup), _) => ("ADAPTIVE3 faster (between groups)".to_string(), fixed, m(a3) < m(a0)),
        // The paper gives no boundary between small and large: one packet (latency-bound) is
        // small, several (bandwidth-bound) large.
        (_, Workload::Alltoall { bytes }) if *bytes <= PACKET_BYTES => {
            ("ADAPTIVE3 faster (small messages)".to_string(), fixed, m(a3) < m(a0))
        }
        (_, Workload::Alltoall { .. }) => ("ADAPTIVE0 faster (large messages)".to_string(), fixed, m(a0) < m(a3)),
        _ => {
            let ours = format!(
                "auto {:.3} of ADAPTIVE0's median; QCD {:.4} vs {:.4}",
                m(auto),
                auto.summary.qcd,
                a0.summary.qcd
            );
            (
                "auto no slower than ADAPTIVE0 and less variable (the general claim)".to_string(),
                ours,
                m(auto) <= 1.0 && auto.summary.qcd <= a0.summary.qcd,
            )
        }
    };
    let nonmin = |name: &str| c.nonminimal.iter().find(|(n, _)| n == name).map(|x| x.1);
    let mut mech = Vec::new();
    if let (Some(x), Some(y)) = (nonmin("ADAPTIVE0"), nonmin("ADAPTIVE3")) {
        mech.push(format!("non-minimal packets {:.0}% (A0) vs {:.0}% (A3)", 100.0 * x, 100.0 * y));
    }
    if let (Some(x), Some(y)) = (a0.latency_us, a3.latency_us) {
        mech.push(format!("NIC latency A0/A3 {:.2}x", x / y));
    }
    match (a0.stall_ratio, a3.stall_ratio) {
        (Some(x), Some(y)) if x < 0.005 && y < 0.005 => mech.push("no NIC stalls under either mode".into()),
        (Some(x), Some(y)) => mech.push(format!("stall ratio {x:.3} (A0) vs {y:.3} (A3)")),
        _ => {}
    }
    mech.push(format!(
        "auto sent {:.0}% of its bytes with ADAPTIVE0/1, {:.0}% with ADAPTIVE3",
        100.0 * (auto.share_a0 + auto.share_a1),
        100.0 * auto.share_a3
    ));
    Finding { paper, ours, agrees, mechanism: mech.join("; ") }
}

fn gates(r: &PaperReport) -> Vec<Gate> {
    let gate =
        |name: &str, value: String, expected: String, pass: bool| Gate { name: name.into(), value, expected, pass };
    let mut g = vec![
        gate("ranks of every run", r.ranks.to_string(), RANKS.to_string(), r.ranks == RANKS),
        gate("routers of the job", r.routers.to_string(), ROUTERS.to_string(), r.routers == ROUTERS),
        gate("groups of the job", r.groups.to_string(), JOB_GROUPS.to_string(), r.groups == JOB_GROUPS),
    ];
    for p in r.background.patterns.iter().filter(|p| p.documented > 0.0) {
        let incast = p.pattern == JobPattern::Incast.name();
        let (ok, expected) = if incast {
            // the root's NIC accepts at most one flit per cycle: senders are held back
            (p.measured <= p.documented * (1.0 + LOAD_TOLERANCE), format!("<= {:.4}", p.documented))
        } else {
            (
                (p.measured - p.documented).abs() <= LOAD_TOLERANCE * p.documented,
                format!("{:.4} +- {:.0}%", p.documented, 100.0 * LOAD_TOLERANCE),
            )
        };
        g.push(gate(&format!("background offered load, {}", p.pattern), format!("{:.4}", p.measured), expected, ok));
    }
    let every = r.cases.iter().all(|c| c.arms.iter().all(|a| !a.normalised.is_empty()));
    g.push(gate("every case has iterations of every policy", every.to_string(), "true".into(), every));
    g
}

/// The expected link utilisation of the background, for the document: every request flit a
/// sender injects is ejected at its destination with a response of one flit per packet.
fn flit_ratio(bytes: u64) -> f64 {
    let req = request_flits(bytes, Transfer::Put) as f64;
    let packets = aar_engine::model::packets(bytes) as f64;
    (req + packets) / req
}

/// The benchmarks of `cases`, in order of first appearance: one plot and one table each.
pub fn benches<'a>(cases: impl IntoIterator<Item = &'a Case>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for c in cases {
        if !out.contains(&c.bench.as_str()) {
            out.push(&c.bench);
        }
    }
    out
}

/// The document: `plot(bench)` is the file name of a benchmark's box plot, next to it.
pub fn markdown(r: &PaperReport, plot: impl Fn(&str) -> String, command: &str) -> String {
    let mut s = String::new();
    let suite = &r.suite;
    let once: Vec<String> = suite.cases.iter().filter(|c| c.once).map(Case::label).collect();
    let _ = writeln!(s, "# The SC'19 microbenchmarks at paper scale\n");
    let _ = writeln!(
        s,
        "Generated by `{command}`; do not edit by hand. The network model: [MODEL.md](MODEL.md); its \
         validation: [VALIDATION.md](VALIDATION.md).{}\n",
        if suite.quick { " **Quick form** (CI): fewer benchmarks, one seed, one iteration per policy." } else { "" }
    );
    if let (Some(max), false) = (suite.max_packets, r.stopped.is_empty()) {
        let each: Vec<String> =
            r.stopped.iter().map(|x| format!("{} ({} of {} measured iterations)", x.run, x.done, x.of)).collect();
        // "; ": the names of cases hold commas
        let _ = writeln!(
            s,
            "**{} of {} runs were stopped by `--max-packets {max}`** before their job ended; their \
             cases hold the measured iterations they completed: {}.\n",
            r.stopped.len(),
            suite.runs().len(),
            each.join("; ")
        );
    }
    let _ = writeln!(s, "## Set-up\n");
    let _ = writeln!(
        s,
        "- **Job**: {} ranks, one per node, on {} Aries routers spread over {} groups (measured from the \
         records: {} ranks, {} routers, {} groups), placed as a scheduler packs a job into a busy machine \
         (`--placement packed:{ROUTERS}:{JOB_GROUPS}`): the routers are split as evenly as possible over the \
         groups (43, 43, 43, 43, 43, 42), spread evenly over each group's 6 chassis and 16 slots, and every \
         node of a router is used before the next; {RANKS} ranks on {ROUTERS} routers leave 4 routers with 3 \
         ranks (their fourth node belongs to another job). This is the allocation of the paper's runs on Piz \
         Daint (1,024 nodes on 257 routers over 6 groups).",
        RANKS, ROUTERS, JOB_GROUPS, r.ranks, r.routers, r.groups
    );
    let _ = writeln!(
        s,
        "- **Machine**: Aries-like, {} groups of 96 routers (4 nodes each, {} nodes), 10 global ports per \
         router. The job's 6 groups and one more: the rest of a real machine is represented by the job's \
         own groups' remaining 1,280 nodes and one group of 384 nodes that the job does not use, which \
         other jobs' traffic and every Valiant path may cross. More groups cost more (the background is \
         the bulk of the simulated packets) without adding a kind of path the job does not already have.",
        suite.machine_groups, r.background.nodes
    );
    let collectives: Vec<String> =
        suite.cases.iter().filter(|c| c.warmup == COLLECTIVE_WARMUP).map(Case::label).collect();
    let more = if collectives.is_empty() {
        String::new()
    } else {
        format!(
            "; {COLLECTIVE_WARMUP} for {}: a collective call: `steady` times each of its three routings of a call \
             once before it keeps the fastest (docs/policy.md)",
            collectives.join(", ")
        )
    };
    let _ = writeln!(
        s,
        "- **Policies**: ADAPTIVE0, ADAPTIVE3, `auto` (the paper's algorithm in every rank, from its own \
         NIC's simulated counters) and `steady` (aar's own policy, docs/policy.md), each in runs of its own: \
         for every benchmark and seed one run per policy, the four meeting the same background traffic from \
         the same start, so that policies that route alike take the same time (but for what `steady`'s \
         tries of a collective change in the unmeasured iterations) and the others differ by what they \
         chose. {} measured iteration(s) of each per seed{}, seeds 1..={} (a seed changes the background \
         jobs, their traffic and every routing choice; the job's placement stays), after unmeasured \
         iterations that every policy runs, so that the measured ones start at the same moment (an \
         application's first iterations are not its steady state: one, in which every automatic policy \
         measures a window{more}).{}",
        suite.iterations_per_policy,
        suite
            .cases
            .iter()
            .filter_map(|c| c.iterations.map(|n| format!("; {n} for {}", c.label())))
            .collect::<String>()
            .replacen("; ", " (", 1)
            + if suite.cases.iter().any(|c| c.iterations.is_some()) { ": they run in seconds)" } else { "" },
        suite.seeds,
        if once.is_empty() {
            String::new()
        } else {
            format!(
                " The longest benchmarks ({}) run one iteration of each policy, seed 1, and only `auto` and \
                 `steady` run the unmeasured iterations before it (in the ping-pongs, the warm-up's one message).",
                once.join(", "),
            )
        }
    );
    let _ = writeln!(
        s,
        "- **Ping-pong** runs between rank 0 and one partner of the 1,024-rank job (the others idle): \
         *one group* is the first rank on a router two hops from rank 0's in its group (another chassis and \
         slot), *two groups* is the last rank, in the job's last group.\n"
    );
    let _ = writeln!(s, "### The busy machine\n");
    let (load, bytes) = match suite.background {
        Background::Production { load, bytes } => (load, bytes),
        _ => (0.0, 0),
    };
    let _ = writeln!(
        s,
        "Every node of the machine that the job does not use runs another job's traffic \
         (`--background production:{load}:{} --background-global`): the free nodes are shuffled (allocations in a \
         production machine are fragmented, as GPCNeT assumes when it shuffles its nodes) and cut into jobs \
         of {PRODUCTION_JOB_NODES} nodes; job k runs the k-th pattern of the mix below, open-loop (Poisson \
         message arrivals; a node does not queue more than 16 messages), {} messages, ADAPTIVE0 (Cray MPICH's \
         default). GPCNeT's closed-loop congestors (incast, all-to-all, broadcast) are the other option \
         (`--background congestors`).\n",
        fmt_bytes(bytes).replace(' ', ""),
        fmt_bytes(bytes)
    );
    let _ = writeln!(
        s,
        "| pattern | why | jobs | sending nodes | offered load per sender (documented) | measured alone |\n|---|---|---:|---:|---:|---:|"
    );
    for (p, (pattern, _)) in r.background.patterns.iter().zip(PRODUCTION_MIX) {
        let why: &str = match pattern {
            JobPattern::Uniform => "spectral codes, hashing: random destinations inside the job",
            JobPattern::Neighbour => "stencils: each node alternates between its two ring neighbours",
            JobPattern::AllToAll => "transposes: each node sends to the others of its job in turn",
            JobPattern::Incast => &format!(
                "I/O aggregation, reductions: 63 senders to the job's first node, an eighth of the load each \
                 ({:.2} of the root NIC's bandwidth offered; above 1 from a load of 0.13, a hot spot)",
                63.0 * p.documented
            ),
            JobPattern::Idle => "allocated, computing: no traffic (machines are never fully communicating)",
        };
        let _ = writeln!(
            s,
            "| {} | {why} | {} | {} | {:.4} | {:.4} |",
            p.pattern, p.jobs, p.senders, p.documented, p.measured
        );
    }
    let b = &r.background;
    let _ = writeln!(
        s,
        "\nMeasured alone ({} us after the 5 us lead, the job's nodes idle): the mean offered load over all \
         {} nodes is {:.4} flits per NIC cycle, so the router-to-node channels should carry about {:.3} \
         (requests plus one response flit per packet: x{:.2}, less what the incast roots cannot accept); they \
         carry **{:.3}**. Link utilisation (busy time / time, per direction): row {:.3}, column {:.3}, \
         global {:.3} (busiest global channel {:.3}).\n",
        b.window_ns / 1000.0,
        b.nodes,
        b.mean_load,
        b.mean_load * flit_ratio(bytes),
        flit_ratio(bytes),
        b.links.terminal,
        b.links.row,
        b.links.column,
        b.links.global,
        b.links.global_max
    );
    let _ = writeln!(s, "## Gates\n\n| check | value | expected | result |\n|---|---|---|---|");
    for g in &r.gates {
        let _ = writeln!(s, "| {} | {} | {} | {} |", g.name, g.value, g.expected, if g.pass { "pass" } else { "FAIL" });
    }
    let sim_ns: f64 = r.cases.iter().map(|c| c.sim_ns).sum();
    let packets: u64 = r.cases.iter().map(|c| c.packets).sum();
    let _ = writeln!(
        s,
        "\n**Wall time of the whole suite: {:.0} s on {} threads** ({} runs, {:.2} ms simulated, {} packets). \
         Reproduce: `{command}`.\n",
        r.wall_s,
        r.threads,
        r.cases.iter().map(|c| suite.runs_of(&c.case)).sum::<u64>(),
        sim_ns / 1e6,
        packets
    );
    let _ = writeln!(s, "## Results\n");
    let _ = writeln!(
        s,
        "Execution time of every iteration divided by the median of ADAPTIVE0's iterations of the same \
         benchmark and size (the paper's Fig. 8): boxes are the quartiles, whiskers 1.5 IQR. Median with its \
         95% confidence interval (order statistics; the whole range below 6 samples), QCD = (Q3-Q1)/(Q3+Q1) \
         of the normalised times, the NIC's stall ratio (stalled cycles per request flit) and request-response \
         latency averaged over every rank's iteration windows, and the shares of the bytes each policy sent \
         with ADAPTIVE0 / ADAPTIVE1 (alltoall's adaptive side) / ADAPTIVE3.\n"
    );
    for bench in benches(r.cases.iter().map(|c| &c.case)) {
        let _ = writeln!(s, "### {bench}\n\n![{bench}]({})\n", plot(bench));
        let _ = writeln!(
            s,
            "| size | policy | samples | median time | normalised median | 95% CI | QCD | stall ratio | latency (us) | bytes A0 / A1 / A3 |\n|---|---|---:|---:|---:|---|---:|---:|---:|---|"
        );
        for c in r.cases.iter().filter(|c| c.case.bench == bench) {
            for a in &c.arms {
                let opt = |v: Option<f64>, d: usize| v.map_or("-".into(), |v| format!("{v:.d$}"));
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {:.3} | [{:.3}, {:.3}] | {:.4} | {} | {} | {:.0}% / {:.0}% / {:.0}% |",
                    c.case.size,
                    a.policy,
                    a.summary.n,
                    fmt_ns(a.median_ns),
                    a.summary.median,
                    a.summary.ci_lo,
                    a.summary.ci_hi,
                    a.summary.qcd,
                    opt(a.stall_ratio, 3),
                    opt(a.latency_us, 2),
                    100.0 * a.share_a0,
                    100.0 * a.share_a1,
                    100.0 * a.share_a3
                );
            }
        }
        let _ = writeln!(s);
    }
    steady_against_the_others(&mut s, r);
    s.push_str(CARRY_OVER);
    let _ = writeln!(s, "## The paper's findings beside ours\n");
    let _ = writeln!(
        s,
        "The paper (De Sensi, Di Girolamo, Hoefler, SC'19) reports, on Piz Daint and Cori in production: \
         large ping-pong messages inside a group are faster with ADAPTIVE0 (non-minimal paths add bandwidth), \
         between groups ADAPTIVE3 is faster (minimal paths are shorter and less exposed to other jobs); \
         alltoall favours high bias for small messages and adaptive routing for large ones; and the \
         application-aware algorithm is up to ~2x faster than the default and reduces run-to-run noise. \
         Where the paper states no direction for a benchmark, the row holds its general claim. Verdicts \
         compare medians; a difference inside the confidence intervals is noted as such by the intervals \
         in the tables above.\n"
    );
    let _ = writeln!(s, "| benchmark | paper | simulator | agrees | mechanism (measured) |\n|---|---|---|---|---|");
    let mut agree = 0;
    for c in &r.cases {
        let f = &c.finding;
        agree += usize::from(f.agrees);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            c.case.label(),
            f.paper,
            f.ours,
            if f.agrees { "agrees" } else { "**does not agree**" },
            f.mechanism
        );
    }
    let _ = writeln!(s, "\n{agree} of {} rows agree.\n", r.cases.len());
    let _ = writeln!(s, "## Link utilisation while each benchmark ran\n");
    let _ = writeln!(
        s,
        "Mean over the seeds of busy time / time per channel direction, from the measured job's start to its \
         end (background and job together).\n\n| benchmark | window | terminal | row | column | global | busiest global | non-minimal packets A0 / A1 / A3 |\n|---|---:|---:|---:|---:|---:|---:|---|"
    );
    for c in &r.cases {
        let l = &c.links;
        let nm: Vec<String> = c.nonminimal.iter().map(|(m, f)| format!("{m} {:.0}%", 100.0 * f)).collect();
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {} |",
            c.case.label(),
            fmt_ns(l.window_ns),
            l.terminal,
            l.row,
            l.column,
            l.global,
            l.global_max,
            nm.join(", ")
        );
    }
    let _ = writeln!(s, "\n## Budget\n");
    let _ = writeln!(
        s,
        "| benchmark | runs | simulated | packets | wall time (sum of its runs) |\n|---|---:|---:|---:|---:|"
    );
    for c in &r.cases {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.0} s |",
            c.case.label(),
            suite.runs_of(&c.case),
            fmt_ns(c.sim_ns),
            c.packets,
            c.wall_s
        );
    }
    s.push_str(BUDGET_NOTES);
    s
}

/// What the iteration times carry over from the iteration before (a limit of the measurement).
const CARRY_OVER: &str = "**Iterations start together.** Every rank starts iteration i+1 when the last rank has
ended iteration i (a barrier outside the timed region that takes no simulated time). Without
it, a rank starts its next iteration as soon as it has finished its own, an uneven iteration
leaves the ranks skewed, and the early ones wait for the late ones inside the next iteration:
part of one iteration's time is carried into the next. In a first run of this suite, which
alternated the policies iteration by iteration in one run without the barrier, `auto` came out
up to 40% faster than ADAPTIVE3 although it sent every byte with ADAPTIVE3 at these sizes. Each
policy now runs alone, so no policy's time can be carried into another's.

";
/// How the suite's sizes and repetitions were chosen (the same text in the full and the quick form).
const BUDGET_NOTES: &str = "
The cost of a run is the packets it simulates, and in a busy machine most of them are the
background's: the 1,664 other nodes of the 7 groups, at a load of 0.1 per sending node, inject
about 30 packets (of 64 B) per simulated ns, and a core simulates only about 3 us of that machine
per second. A benchmark's cost therefore grows with its simulated duration as much as with its
own packets, and that decided the sizes and repetitions (the suite was budgeted at 30 minutes
on the 2 cores of the development machine):

- ping-pong: 8 B and 128 KiB (128 KiB, 2,048 packets, is twice the NIC's 1,024-packet window:
  bandwidth-bound already), and one long size per partner, one iteration of each policy, seed 1:
  inside a group the paper's own 4 MiB (its Fig. 7 case: about 820 us per round trip, bounded by
  the NIC's injection bandwidth with either mode; about 80 s of one core per round trip), between
  groups 1 MiB (a quarter of that; the direction between groups is already clear at 8 B).
- alltoall: 8 B (1,047,552 messages per iteration at 1,024 ranks, ~10 s of one core per
  iteration), and 1 KiB, one iteration of each policy, seed 1: 16 packets per message, 17 million
  per iteration, about 185 s of one core per iteration. The paper names no boundary between small
  and large alltoall messages; one packet (latency-bound) is small here, several (bandwidth-bound)
  large. Larger messages cost proportionally more (4 KiB: about 12 minutes of one core per
  iteration).
- allreduce, broadcast and halo3d: 8 B (latency-bound, where the routing mode's path length shows
  most) and 16 KiB (256 packets per message: bandwidth-bound; about 17, 3 and 10 s of one core per
  iteration); barrier has no size.
- sweep3d 8 B, one iteration of each policy, seed 1: at 1,024 ranks (a 32 x 32 grid) each of
  the four wavefronts crosses 63 steps, so an iteration lasts hundreds of simulated microseconds.
- 3 seeds x 2 iterations per policy = 6 samples per policy and size, the fewest with a 95%
  order-statistic interval of the median (it is then the range of the sample).
  `aar sim sweep --ranks 1024 --placement packed:257:6 --groups 7 --background production:0.1
  --background-global --background-nodes 1664 --policy ADAPTIVE0,ADAPTIVE3,auto,steady --synchronized-iterations --workload W
  --seeds N` repeats one benchmark with more seeds (its policies alternated in one run, as an
  A/B experiment of the library runs them).
- The background's load, 0.1 per sending node (about 0.05 flits per NIC cycle on the
  router-to-node channels on average over the machine, and 0.08 to 0.09 on the network's links,
  as measured above), keeps every link of the machine in use with hot spots (the incast roots,
  the busiest global channels) at half the cost of 0.2.

Runs are independent (one per benchmark, size, seed and policy) and run in parallel on every core, taken in order by the first free core, the longest
first; each is deterministic, so the document does not depend on the number of threads. The
wall time above was measured on the 2-core development machine while other builds shared it.
";

#[cfg(test)]
mod tests {
    use super::*;

    /// The suite builds its experiments itself, past the CLI's and the emulator's checks: each
    /// must pass the same check (a background that cannot run as described, a placement that
    /// does not fit), or the suite would measure something other than what it says.
    #[test]
    fn every_run_of_the_suites_passes_the_experiment_check() {
        for suite in [Suite::full(), Suite::quick()] {
            for (case, spec) in suite.runs() {
                if let Err(e) = spec.check() {
                    panic!("{}: {e}", suite.cases[case].label());
                }
            }
        }
    }
}
