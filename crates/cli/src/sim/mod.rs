//! `aar sim ...`: experiments on the simulated Dragonfly network. [`options`] turns the options
//! into the simulator's experiment; [`output`] writes records and prints tables.

pub(crate) mod options;
mod output;
mod paper;

use aar_sim::config::Mode;
use aar_sim::error::ParseError;
use aar_sim::experiment::{Background, ExperimentResult, ExperimentSpec, Load, Seed, StoppedRun, Work};
use aar_sim::parallel::run_all;
use aar_sim::progress::{duration, Watcher};
use aar_sim::simulation::{run_experiment_told, Simulation, Watch};
use aar_sim::synthetic::{run_synthetic_told, Pattern, SynthParams, SynthWork};
use aar_sim::validate::fmt_ns;
use aar_sim::{ByteSize, Topology};
use clap::{Args, Subcommand};
use options::{whole, Bound, ExpOpts, NetOpts};
use output::{distinct_files, prepare_dir, prepare_file, summary_cells, write_atomic, write_records};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct SimArgs {
    /// boxed: the experiment options are large, and `aar`'s command enum holds this inline
    #[command(subcommand)]
    cmd: Box<SimCmd>,
}

#[derive(Subcommand)]
enum SimCmd {
    /// Performance benchmark: BookSim2 k=4 dragonflynew workload and Aries group scaling
    Bench {
        /// smaller (CI): the paper-scale alltoall under one policy, not two (most of the time), a tenth
        /// of the BookSim2 workload's cycles, and 1, 2 and 4 groups for a quarter of the simulated time
        #[arg(long)]
        quick: bool,
        /// also write the results as JSON
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Regenerate the validation report; exits 1 if a gated check leaves its tolerance
    Validate {
        /// smaller experiments (CI)
        #[arg(long)]
        quick: bool,
        /// the report (Markdown), written whole or not at all; its folder is created if missing
        #[arg(long, default_value = "docs/sim/VALIDATION.md")]
        out: PathBuf,
    },
    /// The SC'19 microbenchmark suite at paper scale (1,024 ranks on 257 routers over 6 groups of a
    /// busy machine; ADAPTIVE0, ADAPTIVE3, auto and steady each in runs of their own against the
    /// same background); regenerates docs/sim/PAPER.md and its plots next to it; exits 1 if a gate
    /// fails, 3 if a run was stopped at --max-packets
    Paper {
        /// the CI form: fewer benchmarks, one seed, one iteration per policy
        #[arg(long)]
        quick: bool,
        /// the report (Markdown); the plots, paper-BENCHMARK.svg, are written in its folder (created
        /// if missing)
        #[arg(long, default_value = "docs/sim/PAPER.md")]
        out: PathBuf,
        /// also write the figures as JSON
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        bound: Bound,
    },
    /// One experiment; per-rank records go to --out; exits 3 if stopped at --max-packets
    Run {
        #[command(flatten)]
        exp: ExpOpts,
        #[command(flatten)]
        bound: Bound,
        /// directory for per-rank records: aar.EXPERIMENT.RANK.0.iterations.jsonl (aar-iterations/1,
        /// read by aar report) and aar.EXPERIMENT.RANK.0.sim-rank.json (placement, counter totals), both
        /// with the run's effective configuration (network, engine, defaults filled in)
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Repeat an experiment over seeds and message sizes in parallel; prints per-policy statistics;
    /// exits 3 if a run was stopped at --max-packets
    Sweep {
        #[command(flatten)]
        exp: ExpOpts,
        #[command(flatten)]
        bound: Bound,
        /// N runs of each size, with seeds --seed, --seed + 1, ..., --seed + N - 1 (1 to N by default; N at
        /// most 100000)
        #[arg(long, default_value_t = 5, value_parser = whole::<u64>(1, 100_000), allow_negative_numbers = true)]
        seeds: u64,
        /// message sizes replacing the workload's (e.g. 8,64K,4MiB)
        #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
        sizes: Vec<ByteSize>,
        /// directory for per-rank records of every experiment, as with `run` (the experiment id
        /// names workload, size, placement, ranks, background and seed)
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Open-loop synthetic traffic: accepted throughput and latency versus offered load
    Synth {
        #[command(flatten)]
        net: NetOpts,
        /// ur (uniform random) or wc (worst case: group i to group i+1)
        #[arg(long, default_value = "ur")]
        pattern: Pattern,
        #[arg(long, default_value = "MIN_HASH", value_delimiter = ',', help = options::help::modes())]
        mode: Vec<Mode>,
        /// offered loads in (0, 1] (at least 0.000001), flits per NIC cycle per node (1 = the injection
        /// bandwidth)
        #[arg(long, default_value = "0.1,0.3,0.5,0.7,0.9", value_delimiter = ',', allow_negative_numbers = true)]
        loads: Vec<Load>,
        /// NIC cycles before measuring (at most 10^9: 1.25 s of the NIC's clock)
        #[arg(
            long,
            default_value_t = 2000,
            value_parser = whole::<u64>(0, 1_000_000_000),
            allow_negative_numbers = true
        )]
        warmup: u64,
        /// NIC cycles measured (at most 10^9)
        #[arg(
            long,
            default_value_t = 5000,
            value_parser = whole::<u64>(1, 1_000_000_000),
            allow_negative_numbers = true
        )]
        measure: u64,
        /// the random numbers of the traffic: a whole number from 0 to 18446744073709551615
        #[arg(long, default_value = "1", allow_negative_numbers = true)]
        seed: Seed,
    },
}

pub fn run(a: SimArgs) -> i32 {
    // Printed once the command is done (its files written): what could be said is said before
    // the error, and stdout that cannot be written is an error like any other.
    let mut text = String::new();
    let result = exec(a, &mut text);
    match (result, crate::print(&text)) {
        (Ok(code), Ok(())) => code,
        (Err(e), _) | (Ok(_), Err(e)) => {
            eprintln!("aar: {e}");
            2
        }
    }
}

fn exec(a: SimArgs, text: &mut String) -> Result<i32, String> {
    // Lines of the command's output.
    macro_rules! say {
        ($($arg:tt)*) => {{
            text.push_str(&format!($($arg)*));
            text.push('\n');
        }};
    }
    match *a.cmd {
        SimCmd::Bench { quick, json } => {
            if let Some(p) = &json {
                prepare_file("--json", p, "results.json")?;
            }
            let r = aar_sim::bench::run_bench(quick);
            say!("{}", aar_sim::bench::render(&r));
            if let Some(p) = json {
                write_atomic(&p, serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?)?;
            }
            Ok(0)
        }
        SimCmd::Validate { quick, out } => {
            prepare_file("--out", &out, "REPORT.md")?;
            let rep = aar_sim::validate::validate(quick);
            write_atomic(&out, &rep.markdown)?;
            for c in &rep.checks {
                let verdict = if c.pass { "pass" } else { "FAIL" };
                say!("{verdict} {}: {} (tolerance {})", c.name, c.value, c.tolerance);
            }
            say!("report written to {}", out.display());
            Ok(if rep.passed() { 0 } else { 1 })
        }
        SimCmd::Paper { quick, out, json, bound } => {
            prepare_file("--out", &out, "REPORT.md")?;
            if let Some(p) = &json {
                prepare_file("--json", p, "results.json")?;
            }
            let mut suite = if quick { aar_sim::paper::Suite::quick() } else { aar_sim::paper::Suite::full() };
            suite.max_packets = bound.max_packets;
            let dir = match out.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            // One plot per benchmark, beside --out: the report has a case for each of the suite's cases, so
            // its document names the benchmarks plotted.
            let plots: Vec<(String, PathBuf)> = aar_sim::paper::benches(&suite.cases)
                .into_iter()
                .map(|b| (b.to_string(), dir.join(paper::plot_name(b))))
                .collect();
            let labels: Vec<String> =
                plots.iter().map(|(bench, _)| format!("the plot of {bench} (beside --out)")).collect();
            let mut outputs = vec![("--out", out.as_path())];
            outputs.extend(json.as_deref().map(|p| ("--json", p)));
            outputs.extend(labels.iter().zip(&plots).map(|(label, (_, p))| (label.as_str(), p.as_path())));
            distinct_files(&outputs)?;
            let r = aar_sim::paper::run(&suite);
            let mut command = if quick { "aar sim paper --quick" } else { "aar sim paper" }.to_string();
            if let Some(max) = bound.max_packets {
                command += &format!(" --max-packets {max}");
            }
            for (bench, path) in &plots {
                let svg = paper::plot(&r, bench).map_err(|e| format!("plot of {bench}: {e}"))?;
                write_atomic(path, svg)?;
            }
            write_atomic(&out, aar_sim::paper::markdown(&r, paper::plot_name, &command))?;
            if let Some(p) = json {
                write_atomic(&p, serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?)?;
            }
            for g in &r.gates {
                say!("{} {}: {} (expected {})", if g.pass { "pass" } else { "FAIL" }, g.name, g.value, g.expected);
            }
            say!("suite wall time {:.0} s on {} threads; report written to {}", r.wall_s, r.threads, out.display());
            say_stopped(bound, &r.stopped, r.suite.runs().len(), "the report");
            // stopped runs first: their gates judge a suite that did not run to the end
            Ok(if !r.stopped.is_empty() {
                3
            } else if r.passed() {
                0
            } else {
                1
            })
        }
        SimCmd::Run { exp, out, bound } => {
            let spec = exp.spec()?;
            // Weighed first: a run refused for its size leaves no empty --out folder behind.
            weigh(&Weight::run(&spec, 1), 1, bound.hint())?;
            if let Some(dir) = &out {
                prepare_dir("--out", dir)?;
            }
            let mut watcher = Watcher::new("sim run");
            let mut progress = |p: &aar_sim::simulation::Progress| {
                let status = format!(
                    "{}/{} iterations, {} packets, {} simulated",
                    p.iterations_done,
                    p.iterations,
                    p.packets,
                    fmt_ns(p.sim_time_ns)
                );
                watcher.update(p.done(), &status);
            };
            let r = Simulation::build(&spec)
                .run_watched(spec.workload.name(), Watch { max_packets: bound.max_packets, progress: &mut progress });
            watcher.finish();
            say!(
                "{} on {} ({} ranks, {}), {} packets, {} simulated in {:.2} s",
                spec.workload.name(),
                spec.net.topo.describe(),
                spec.ranks,
                spec.placement.form(),
                r.packets,
                fmt_ns(r.sim_time_ns),
                r.wall_s
            );
            if spec.background != Background::None {
                say!("background {} on {} nodes", spec.background.form(), r.background_nodes);
                if r.background_nodes < spec.background_nodes {
                    // The reach: the job's groups, or with --background-global the machine.
                    let more = if spec.background_local && spec.net.topo.groups() > 1 {
                        "--background-global"
                    } else {
                        "more --groups"
                    };
                    eprintln!(
                        "aar: --background-nodes {}: only {} nodes are free in the background's reach, so all of them \
                         generate it; give at most {} to say so, or {more} for more nodes",
                        spec.background_nodes, r.background_nodes, r.background_nodes
                    );
                }
            }
            say!("| policy | iterations | median | 95% CI of median | QCD |\n|---|---:|---:|---|---:|");
            for arm in spec.arms.iter().map(|a| a.name()) {
                say!("| {arm} | {} |", summary_cells(&r.times(&arm)));
            }
            let per: Vec<String> = r.nonmin_by_mode.iter().map(|(m, f)| format!("{m} {f:.3}")).collect();
            // No mode carried a measured packet (a run stopped before its first measured
            // iteration): no fraction to give.
            if per.is_empty() {
                say!("non-minimal fraction of the job's request packets: - (no measured packet)");
            } else {
                say!(
                    "non-minimal fraction of the job's request packets: {:.3} ({})",
                    r.nonmin_fraction,
                    per.join(", ")
                );
            }
            let measured = r.iterations.len();
            let holds = if out.is_some() { "the table (and the records)" } else { "the table" };
            let stopped: Vec<StoppedRun> = StoppedRun::of(String::new(), &spec, &r).into_iter().collect();
            say_stopped(bound, &stopped, 1, holds);
            if let Some(dir) = out {
                if measured == 0 {
                    say!("no rank records written to {}: no measured iteration was done", dir.display());
                } else {
                    write_records(&dir, &spec, &r)?;
                    let experiment = r.records.first().map_or("", |rec| rec.experiment.as_str());
                    say!("{} rank records of {experiment} written to {}", r.records.len(), dir.display());
                }
            }
            Ok(if r.stopped { 3 } else { 0 })
        }
        SimCmd::Sweep { exp, bound, seeds, sizes, out } => {
            let base = exp.spec()?;
            // --seed is the first seed: the sweep's seeds go on from it (it was ignored, every sweep
            // running seeds 1..=N whatever --seed said)
            let first = base.seed;
            if first.checked_add(seeds - 1).is_none() {
                return Err(format!(
                    "--seed {first} --seeds {seeds}: the seeds would go past {}, the largest seed; give a smaller --seed",
                    u64::MAX
                ));
            }
            once("--sizes", &sizes, |a, b| a == b, |b| b.to_string())?;
            let workloads = if sizes.is_empty() {
                vec![base.workload.clone()]
            } else {
                sizes
                    .iter()
                    .map(|b| {
                        base.workload.with_bytes(b.0).map_err(|e| match e {
                            // the workload's own advice ("write barrier alone") is about --workload
                            ParseError::NoSize { workload } => format!(
                                "--sizes {b}: workload {workload} takes no size, so there is nothing to sweep: \
                                 leave out --sizes (a sweep over seeds alone), or give a workload with a size"
                            ),
                            e => format!("--sizes {b}: {e}"),
                        })
                    })
                    .collect::<Result<_, _>>()?
            };
            // the largest size at once on every core (or on as many as there are runs)
            let runs = seeds * workloads.len() as u64;
            let runs_at_once = runs.min(rayon::current_num_threads() as u64);
            let mut largest = base.clone();
            largest.workload = workloads.iter().max_by_key(|w| w.bytes()).cloned().unwrap_or(base.workload.clone());
            let mut weight = Weight::run(&largest, runs_at_once);
            // Every run's records stay until the end (the table, --out), those of the runs not
            // running at once too: a sweep of many seeds holds them all.
            let others = runs - runs_at_once;
            weight.inputs += &format!(" --seeds {seeds}");
            if !sizes.is_empty() {
                let shown: Vec<String> = sizes.iter().map(|b| b.to_string()).collect();
                weight.inputs += &format!(" --sizes {}", shown.join(","));
            }
            if others > 0 {
                weight.kept = (
                    others.saturating_mul(largest.rows()).saturating_mul(Work::BYTES_PER_ROW),
                    format!(
                        ", and the records of the other {others} runs ({} rows each) kept until the end",
                        largest.rows()
                    ),
                );
                weight.less = "fewer --seeds or --sizes (the records of every run are kept until the end), fewer \
                               --iterations or --ranks, or a workload with fewer messages";
            }
            weigh(&weight, runs_at_once, bound.hint())?;
            if let Some(dir) = &out {
                prepare_dir("--out", dir)?;
            }
            let mut specs = Vec::new();
            for w in &workloads {
                for seed in (0..seeds).map(|i| first + i) {
                    let mut s = base.clone();
                    s.seed = seed;
                    s.workload = w.clone();
                    specs.push(s);
                }
            }
            let results = run_all(&specs, "sim sweep", |s, done| {
                run_experiment_told(s, &s.workload.name(), bound.max_packets, done)
            });
            say!("| workload | policy | samples | median | 95% CI of median | QCD |\n|---|---|---:|---:|---|---:|");
            let mut labels: Vec<String> = results.iter().map(|r| r.label.clone()).collect();
            labels.dedup();
            for l in &labels {
                for arm in base.arms.iter().map(|a| a.name()) {
                    let v: Vec<f64> = results.iter().filter(|r| &r.label == l).flat_map(|r| r.times(&arm)).collect();
                    say!("| {l} | {arm} | {} |", summary_cells(&v));
                }
            }
            let holds = if out.is_some() { "the table (and the records)" } else { "the table" };
            if let Some(dir) = out {
                // a run stopped before its first measured iteration has no record to write
                let measured: Vec<(&ExperimentSpec, &ExperimentResult)> =
                    specs.iter().zip(&results).filter(|(_, r)| !r.iterations.is_empty()).collect();
                for (spec, r) in &measured {
                    write_records(&dir, spec, r)?;
                }
                let n: usize = measured.iter().map(|(_, r)| r.records.len()).sum();
                say!("{n} rank records of {} experiments written to {}", measured.len(), dir.display());
            }
            let stopped: Vec<StoppedRun> = specs
                .iter()
                .zip(&results)
                .filter_map(|(s, r)| StoppedRun::of(format!("{} seed {}", s.workload.form(), s.seed), s, r))
                .collect();
            say_stopped(bound, &stopped, specs.len(), holds);
            Ok(if stopped.is_empty() { 0 } else { 3 })
        }
        SimCmd::Synth { net, pattern, mode, loads, warmup, measure, seed } => {
            if loads.iter().any(|l| l.0 == 0.0) {
                return Err("--loads 0: a load of 0 offers no traffic, so there is nothing to measure; for the \
                            latency of an idle network give a small load (e.g. 0.01)"
                    .into());
            }
            once("--mode", &mode, |a, b| a == b, |m| m.name().to_string())?;
            once("--loads", &loads, |a, b| a.0 == b.0, |l| l.0.to_string())?;
            let cfg = net.config()?;
            let mut runs = Vec::new();
            for &m in &mode {
                for l in &loads {
                    let run = SynthParams { load: l.0, pattern, mode: m, warmup, measure, seed: seed.0 };
                    run.check(&cfg)
                        .map_err(|e| format!("--pattern {} {}: {e}", pattern.name().to_lowercase(), net.shape()))?;
                    runs.push(run);
                }
            }
            // the largest load at once on every core (or on as many as there are runs)
            let runs_at_once = (runs.len() as u64).min(rayon::current_num_threads() as u64);
            if let Some(largest) = runs.iter().max_by(|a, b| a.load.total_cmp(&b.load)) {
                let nodes = Topology::new(cfg.topo.clone()).n_nodes;
                let work = largest.work(&cfg, nodes);
                let weight = Weight {
                    inputs: format!("{} --loads {} --warmup {warmup} --measure {measure}", net.shape(), largest.load),
                    packets: work.packets,
                    whose: String::new(),
                    memory: work.memory(),
                    holds: format!(
                        "{nodes} nodes, {} packets in the first {} NIC cycles",
                        work.early_packets,
                        SynthWork::MEMORY_CYCLES.min(warmup + measure)
                    ),
                    less: "fewer --groups or lower --loads",
                    kept: (0, String::new()),
                    note: None,
                };
                weigh(&weight, runs_at_once, "; fewer --warmup and --measure cycles take less time")?;
            }
            let res = run_all(&runs, "sim synth", |p, done| run_synthetic_told(&cfg, p, done));
            say!("{} {}\n| mode | offered | accepted | mean latency (NIC cycles) | avg hops | non-minimal |\n|---|---:|---:|---:|---:|---:|", cfg.topo.describe(), pattern.name());
            let mut unmeasured = false;
            for (p, r) in runs.iter().zip(&res) {
                // The means are over the packets delivered in the window: with none there are none
                // (the simulator's latency is NaN then), which the row says as `-`.
                let means = if r.avg_latency.is_finite() {
                    format!("{:.1} | {:.2} | {:.3}", r.avg_latency, r.avg_hops, r.nonmin_fraction)
                } else {
                    unmeasured = true;
                    "- | - | -".into()
                };
                // the offered load as given: three decimals showed 0.0004 as 0.000, below what was accepted
                say!("| {} | {} | {:.4} | {means} |", p.mode.name(), p.load, r.accepted);
            }
            if unmeasured {
                say!(
                    "-: no packet was delivered in the {measure} NIC cycles measured; measure longer (--measure) or \
                     offer more load"
                );
            }
            Ok(0)
        }
    }
}

/// The stopped runs [`say_stopped`] names one by one: the others are counted (a sweep of 100,000
/// seeds stopped them all, and named every one on one line of megabytes).
const STOPPED_NAMED: usize = 20;

/// Says on stderr which of a command's `runs` runs `bound` stopped (`stopped`; none: nothing
/// said), where (the first [`STOPPED_NAMED`] of them), and that `holds` (what the command
/// reports) keeps the iterations they completed.
fn say_stopped(bound: Bound, stopped: &[StoppedRun], runs: usize, holds: &str) {
    let (Some(max), false) = (bound.max_packets, stopped.is_empty()) else { return };
    let mut each: Vec<String> = stopped
        .iter()
        .take(STOPPED_NAMED)
        .map(|s| {
            let run = if s.run.is_empty() { String::new() } else { format!("{} ", s.run) };
            format!("{run}after {} packets, {} of {} measured iterations done", s.packets, s.done, s.of)
        })
        .collect();
    if stopped.len() > STOPPED_NAMED {
        each.push(format!("and {} more", stopped.len() - STOPPED_NAMED));
    }
    let which = if runs > 1 { format!("{} of {runs} runs stopped: ", stopped.len()) } else { "stopped ".into() };
    eprintln!(
        "aar: --max-packets {max}: {which}{}; {holds} holds those; give a larger --max-packets, or leave it out, to \
         run to the end",
        each.join("; ")
    );
}

/// Refuses a list option that names one value twice (as `a` and `b` when `same(a, b)`): it would
/// run the same thing twice and count its samples twice; `shown` is how the message writes it.
fn once<T>(
    option: &str,
    items: &[T],
    same: impl Fn(&T, &T) -> bool,
    shown: impl Fn(&T) -> String,
) -> Result<(), String> {
    match items.iter().enumerate().find(|&(i, x)| items[..i].iter().any(|y| same(x, y))) {
        Some((_, x)) => Err(format!(
            "{option}: {} is given more than once (under this spelling or another): it would run twice, so give each \
             value once",
            shown(x)
        )),
        None => Ok(()),
    }
}

/// The job's packets from which a run is said to be long (at the simulator's 50,000 to 1,000,000
/// packets a second, measured from alltoall of 4,096 ranks to a barrier in a busy machine: 2 to
/// 33 minutes of one core at least).
const LONG_PACKETS: u64 = 100_000_000;

/// The memory from which a run says what it takes.
const LARGE_MEMORY: u64 = 1 << 30;

/// What a command is about to run, as [`weigh`] says it: the inputs that decide it and its work.
struct Weight {
    /// the options that decide the work, as written (`--workload alltoall:8 --ranks 4096 --iterations 10`)
    inputs: String,
    /// packets of one run, at least
    packets: u64,
    /// whose packets they are, before the time they take ("the job's own: ")
    whose: String,
    /// memory of one run, at least, bytes
    memory: u64,
    /// what takes the memory ("16773120 messages an iteration and 40960 rows of records")
    holds: String,
    /// which inputs to give to take less memory
    less: &'static str,
    /// memory kept besides that of the runs at once, bytes, and what it holds (", and the records of
    /// the other 998 runs (...) kept until the end"): a sweep's records of its other runs
    kept: (u64, String),
    /// said before the run: what makes its result say nothing about routing
    note: Option<String>,
}

impl Weight {
    /// The run's work ([`aar_sim::experiment::Work`]): the measured job's and its background's,
    /// counted only as far as [`weigh`] needs to refuse `runs_at_once` runs of it at once: to
    /// twice the machine's available memory (so that the refusal's figure reads clearly above
    /// it). Past that, counting would take longer than the refusal: minutes for an alltoall of
    /// 100,000 ranks, said nothing in the meantime.
    fn run(spec: &ExperimentSpec, runs_at_once: u64) -> Weight {
        let work = spec.work(available_memory().map_or(u64::MAX, |a| a.saturating_mul(2) / runs_at_once.max(1)));
        let job = work.packets - work.background_packets;
        let whose = match spec.background {
            Background::None => "the job's own: ".into(),
            Background::Congestors { .. } => {
                "the job's own, before the congestors', whose pace the network sets: ".into()
            }
            _ => format!(
                "the job's {job} and the background's {} at its load over the {} simulated the run takes at least: ",
                work.background_packets,
                fmt_ns(work.min_sim_ns)
            ),
        };
        Weight {
            // the warm-up iterations run the same messages, so they are inputs of the work too
            inputs: format!(
                "--workload {} --ranks {} --iterations {}{}",
                spec.workload.form(),
                spec.ranks,
                spec.iterations,
                match spec.warmup_iterations {
                    0 => String::new(),
                    w => format!(" --warmup-iterations {w}"),
                }
            ),
            packets: work.packets,
            whose,
            memory: work.memory(),
            holds: format!(
                "{}{} messages an iteration and {} rows of records",
                if work.cut { "more than " } else { "" },
                work.messages,
                work.rows
            ),
            less: "fewer --ranks or a workload with fewer messages",
            kept: (0, String::new()),
            // Every message between ranks of one node goes through its shared memory: a policy
            // can only change the time of messages that cross the network.
            note: (job == 0 && !work.cut && work.messages > 0).then(|| {
                format!(
                    "aar: --workload {} --ranks {} --ranks-per-node {}: no message of the job crosses the network \
                     (the ranks that exchange messages share a node, and send through its shared memory), so every \
                     routing policy takes the same time; put them on different nodes (e.g. --ranks-per-node 1) to \
                     measure routing",
                    spec.workload.form(),
                    spec.ranks,
                    spec.ranks_per_node
                )
            }),
        }
    }
}

/// Weighs `w` before running `runs_at_once` runs of it at once: refuses one whose memory would
/// exceed what the machine has available, and says on stderr what a long or large one takes, and
/// `bound`: how to bound it, if the command can.
fn weigh(w: &Weight, runs_at_once: u64, bound: &str) -> Result<(), String> {
    let memory = w.memory.saturating_mul(runs_at_once).saturating_add(w.kept.0);
    let at_once = if runs_at_once > 1 { format!(", {runs_at_once} runs at once") } else { String::new() };
    let (inputs, what) = (&w.inputs, format!("{}{at_once}{}", w.holds, w.kept.1));
    if let Some(available) = available_memory().filter(|&a| memory > a) {
        let fewer = if runs_at_once > 1 { ", fewer runs at once (RAYON_NUM_THREADS=1)" } else { "" };
        return Err(format!(
            "{inputs}: {what} take at least {} of memory, more than the {} this machine has available, so nothing \
             was run: give {}{fewer}, or run it on a machine with more memory",
            gigabytes(memory),
            gigabytes(available),
            w.less
        ));
    }
    if let Some(note) = &w.note {
        eprintln!("{note}");
    }
    if w.packets >= LONG_PACKETS || memory >= LARGE_MEMORY {
        let (fast, slow) = (w.packets / 1_000_000, w.packets / 50_000);
        eprintln!(
            "aar: {inputs}: at least {} packets ({}{} to {} of one core at 50,000 to 1,000,000 packets a second) and \
             at least {} of memory ({what}){bound}",
            w.packets,
            w.whose,
            duration(Duration::from_secs(fast)),
            duration(Duration::from_secs(slow)),
            gigabytes(memory)
        );
    }
    Ok(())
}

/// `bytes` as GB (10^9), one decimal.
fn gigabytes(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// The memory the machine has available for a new process (`MemAvailable` of /proc/meminfo),
/// bytes; `None` where it cannot be read (the check is then not made).
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kb: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kb * 1024)
}
