//! `aar sim ...`: experiments on the simulated Dragonfly network.

use aar_sim::config::{Mode, NetConfig};
use aar_sim::experiment::{run_experiment, AbOrder, Background, ExperimentSpec, PolicySpec};
use aar_sim::parallel::run_all;
use aar_sim::summary::summarize;
use aar_sim::synthetic::{run_synthetic, Pattern, SynthParams};
use aar_sim::topology::TopoSpec;
use aar_sim::validate::fmt_ns;
use aar_sim::workload::{parse_size, Placement, Workload};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct SimArgs {
    /// boxed: the experiment options are large, and `aar`'s command enum holds this inline
    #[command(subcommand)]
    cmd: Box<SimCmd>,
}

#[derive(Args, Clone)]
struct NetOpts {
    /// Aries-like groups (ignored with --kim)
    #[arg(long, default_value_t = 4)]
    groups: u32,
    /// global ports per Aries router (at most 10)
    #[arg(long, default_value_t = 10)]
    global_per_router: u32,
    /// Kim et al. dragonfly instead: p,a,h,g (e.g. 4,8,4,33 = BookSim2 k=4)
    #[arg(long)]
    kim: Option<String>,
}

impl NetOpts {
    fn config(&self) -> Result<NetConfig, String> {
        if let Some(k) = &self.kim {
            let v: Vec<u32> = k
                .split(',')
                .map(|x| x.trim().parse::<u32>())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("--kim {k}: {e}"))?;
            if v.len() != 4 {
                return Err(format!("--kim {k}: expected p,a,h,g"));
            }
            return Ok(NetConfig::kim(TopoSpec::Kim { p: v[0], a: v[1], h: v[2], g: v[3] }));
        }
        if self.global_per_router > 10 {
            return Err("--global-per-router: Aries has at most 10 global ports per router".into());
        }
        let mut c = NetConfig::aries(self.groups);
        c.topo = TopoSpec::Aries { groups: self.groups, global_per_router: self.global_per_router };
        Ok(c)
    }
}

#[derive(Args, Clone)]
struct ExpOpts {
    #[command(flatten)]
    net: NetOpts,
    /// pingpong:SIZE, allreduce:SIZE, alltoall:SIZE, barrier, broadcast:SIZE, halo3d:SIZE, sweep3d:SIZE,
    /// rr-latency, rr-bandwidth[:SIZE], incast:SIZE
    #[arg(long, default_value = "pingpong:4M")]
    workload: String,
    #[arg(long, default_value_t = 2)]
    ranks: u32,
    /// same-blade, same-group, across-groups, scattered
    #[arg(long, default_value = "same-group")]
    placement: String,
    /// policies alternated across iterations (A/B): auto, off, ADAPTIVE0..3, MIN_HASH, NMIN_HASH, IN_ORDER
    #[arg(long, default_value = "auto", value_delimiter = ',')]
    policy: Vec<String>,
    /// which policy runs in which iteration: round-robin, or shuffled[:SEED] (randomized blocks,
    /// each holding every policy once), the A/B schedule of libaar.so (AAR_AB_ORDER)
    #[arg(long, default_value = "round-robin")]
    order: AbOrder,
    #[arg(long, default_value_t = 10)]
    iterations: u32,
    #[arg(long, default_value_t = 0)]
    warmup_iterations: u32,
    /// none, uniform:LOAD[:SIZE], worst-case:LOAD[:SIZE], congestors[:SIZE]
    #[arg(long, default_value = "none")]
    background: String,
    /// nodes that generate background traffic
    #[arg(long, default_value_t = 32)]
    background_nodes: u32,
    /// background anywhere in the machine instead of only in the measured job's groups
    #[arg(long)]
    background_global: bool,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl ExpOpts {
    fn spec(&self) -> Result<ExperimentSpec, String> {
        let net = self.net.config()?;
        let wl =
            Workload::parse(&self.workload).ok_or_else(|| format!("--workload {}: unknown workload", self.workload))?;
        let pl = Placement::parse(&self.placement)
            .ok_or_else(|| format!("--placement {}: unknown placement", self.placement))?;
        let arms = self
            .policy
            .iter()
            .map(|p| PolicySpec::parse(p).ok_or_else(|| format!("--policy {p}: unknown policy")))
            .collect::<Result<Vec<_>, _>>()?;
        if arms.len() > aar_sim::experiment::MAX_ARMS {
            return Err(format!("--policy: at most {} policies alternate", aar_sim::experiment::MAX_ARMS));
        }
        let topo = aar_sim::topology::Topology::new(net.topo.clone());
        let max = match pl {
            Placement::SameBlade => topo.p,
            Placement::SameGroup => topo.routers_per_group,
            _ => topo.n_nodes,
        };
        if self.ranks > max {
            return Err(format!(
                "--ranks {}: placement {} holds at most {max} ranks (one per node)",
                self.ranks,
                pl.name()
            ));
        }
        if self.ranks < 2 {
            return Err("--ranks: at least 2".into());
        }
        let mut s = ExperimentSpec::new(net, wl, self.ranks, pl);
        s.arms = arms;
        s.order = self.order;
        s.iterations = self.iterations;
        s.warmup_iterations = self.warmup_iterations;
        s.background = Background::parse(&self.background).map_err(|e| format!("--background {e}"))?;
        s.background_nodes = self.background_nodes;
        s.background_local = !self.background_global;
        s.seed = self.seed;
        Ok(s)
    }
}

#[derive(Subcommand)]
enum SimCmd {
    /// Performance benchmark: BookSim2 k=4 dragonflynew workload and Aries group scaling
    Bench {
        /// a tenth of the work (CI)
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
        #[arg(long, default_value = "docs/sim/VALIDATION.md")]
        out: PathBuf,
    },
    /// One experiment; per-rank records go to --out
    Run {
        #[command(flatten)]
        exp: ExpOpts,
        /// directory for per-rank records: aar.EXPERIMENT.RANK.0.iterations.jsonl (aar-iterations/1,
        /// read by aar report) and aar.EXPERIMENT.RANK.0.sim-rank.json (placement, counter totals)
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Repeat an experiment over seeds and message sizes in parallel; prints per-policy statistics
    Sweep {
        #[command(flatten)]
        exp: ExpOpts,
        /// seeds 1..=N
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// message sizes replacing the workload's (e.g. 8,64K,4M)
        #[arg(long, value_delimiter = ',')]
        sizes: Vec<String>,
        /// directory for per-rank records of every experiment, as with `run` (the experiment id
        /// names workload, size, placement, ranks, background and seed)
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Open-loop synthetic traffic: accepted throughput and latency versus offered load
    Synth {
        #[command(flatten)]
        net: NetOpts,
        /// ur or wc
        #[arg(long, default_value = "ur")]
        pattern: String,
        #[arg(long, default_value = "MIN_HASH", value_delimiter = ',')]
        mode: Vec<String>,
        #[arg(long, default_value = "0.1,0.3,0.5,0.7,0.9", value_delimiter = ',')]
        loads: Vec<f64>,
        #[arg(long, default_value_t = 2000)]
        warmup: u64,
        #[arg(long, default_value_t = 5000)]
        measure: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

pub fn run(a: SimArgs) -> i32 {
    match exec(a) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("aar: {e}");
            2
        }
    }
}

fn write_atomic(path: &Path, text: impl AsRef<[u8]>) -> Result<(), String> {
    if let Some(d) = path.parent() {
        if !d.as_os_str().is_empty() {
            std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot rename to {}: {e}", path.display()))
}

/// Per rank: the iteration record (aar-iterations/1) and the simulator's summary.
fn write_records(dir: &Path, r: &aar_sim::experiment::ExperimentResult) -> Result<(), String> {
    let command_line: Vec<String> = std::env::args().collect();
    for rec in &r.records {
        write_atomic(&dir.join(rec.iterations_file_name()), rec.iterations_jsonl(&command_line))?;
        write_atomic(&dir.join(rec.summary_file_name()), rec.summary_json())?;
    }
    Ok(())
}

fn exec(a: SimArgs) -> Result<i32, String> {
    match *a.cmd {
        SimCmd::Bench { quick, json } => {
            let r = aar_sim::bench::run_bench(quick);
            println!("{}", aar_sim::bench::render(&r));
            if let Some(p) = json {
                write_atomic(&p, &serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?)?;
            }
            Ok(0)
        }
        SimCmd::Validate { quick, out } => {
            let rep = aar_sim::validate::validate(quick);
            write_atomic(&out, &rep.markdown)?;
            for c in &rep.checks {
                println!(
                    "{} {}: {} (tolerance {})",
                    if c.pass { "pass" } else { "FAIL" },
                    c.name,
                    c.value,
                    c.tolerance
                );
            }
            println!("report written to {}", out.display());
            Ok(if rep.passed() { 0 } else { 1 })
        }
        SimCmd::Run { exp, out } => {
            let spec = exp.spec()?;
            let r = run_experiment(&spec, &spec.workload.name());
            let arms: Vec<String> = spec.arms.iter().map(|a| a.name()).collect();
            println!(
                "{} on {} ({} ranks, {}), {} packets, {:.1} ms simulated in {:.2} s",
                spec.workload.name(),
                spec.net.topo.describe(),
                spec.ranks,
                spec.placement.name(),
                r.packets,
                r.sim_time_ns / 1e6,
                r.wall_s
            );
            println!("| policy | iterations | median | 95% CI of median | QCD |\n|---|---:|---:|---|---:|");
            let mut seen = Vec::new();
            for arm in arms {
                if seen.contains(&arm) {
                    continue;
                }
                let s = summarize(&r.times(&arm));
                println!(
                    "| {} | {} | {} | [{}, {}] | {:.4} |",
                    arm,
                    s.n,
                    fmt_ns(s.median),
                    fmt_ns(s.ci_lo),
                    fmt_ns(s.ci_hi),
                    s.qcd
                );
                seen.push(arm);
            }
            let per: Vec<String> = r.nonmin_by_mode.iter().map(|(m, f)| format!("{m} {f:.3}")).collect();
            println!(
                "non-minimal fraction of the job's request packets: {:.3} ({})",
                r.nonmin_fraction,
                per.join(", ")
            );
            if let Some(dir) = out {
                write_records(&dir, &r)?;
                let experiment = r.records.first().map_or("", |rec| rec.experiment.as_str());
                println!("{} rank records of {experiment} written to {}", r.records.len(), dir.display());
            }
            Ok(0)
        }
        SimCmd::Sweep { exp, seeds, sizes, out } => {
            let base = exp.spec()?;
            let sizes: Vec<Option<u64>> = if sizes.is_empty() {
                vec![None]
            } else {
                sizes
                    .iter()
                    .map(|s| parse_size(s).map(Some).ok_or(format!("--sizes {s}: bad size")))
                    .collect::<Result<_, _>>()?
            };
            let mut specs = Vec::new();
            for &sz in &sizes {
                for seed in 1..=seeds {
                    let mut s = base.clone();
                    s.seed = seed;
                    if let Some(b) = sz {
                        s.workload = with_size(&s.workload, b);
                    }
                    specs.push(s);
                }
            }
            let results = run_all(&specs, "sweep", |s| run_experiment(s, &s.workload.name()));
            println!("| workload | policy | samples | median | 95% CI of median | QCD |\n|---|---|---:|---:|---|---:|");
            let mut labels: Vec<String> = results.iter().map(|r| r.label.clone()).collect();
            labels.dedup();
            for l in &labels {
                let mut seen: Vec<String> = Vec::new();
                for arm in base.arms.iter().map(|a| a.name()) {
                    if seen.contains(&arm) {
                        continue;
                    }
                    let v: Vec<f64> = results.iter().filter(|r| &r.label == l).flat_map(|r| r.times(&arm)).collect();
                    let s = summarize(&v);
                    println!(
                        "| {} | {} | {} | {} | [{}, {}] | {:.4} |",
                        l,
                        arm,
                        s.n,
                        fmt_ns(s.median),
                        fmt_ns(s.ci_lo),
                        fmt_ns(s.ci_hi),
                        s.qcd
                    );
                    seen.push(arm);
                }
            }
            if let Some(dir) = out {
                for r in &results {
                    write_records(&dir, r)?;
                }
                let n: usize = results.iter().map(|r| r.records.len()).sum();
                println!("{n} rank records of {} experiments written to {}", results.len(), dir.display());
            }
            Ok(0)
        }
        SimCmd::Synth { net, pattern, mode, loads, warmup, measure, seed } => {
            let cfg = net.config()?;
            let pattern = match pattern.as_str() {
                "ur" | "uniform" => Pattern::Uniform,
                "wc" | "worst-case" => Pattern::WorstCase,
                _ => return Err(format!("--pattern {pattern}: ur or wc")),
            };
            let modes = mode
                .iter()
                .map(|m| Mode::parse(m).ok_or(format!("--mode {m}: unknown")))
                .collect::<Result<Vec<_>, _>>()?;
            let mut runs = Vec::new();
            for &m in &modes {
                for &l in &loads {
                    runs.push(SynthParams { load: l, pattern, mode: m, warmup, measure, seed });
                }
            }
            let res = run_all(&runs, "synth", |p| run_synthetic(&cfg, p));
            println!("{} {}\n| mode | offered | accepted | mean latency (NIC cycles) | avg hops | non-minimal |\n|---|---:|---:|---:|---:|---:|", cfg.topo.describe(), pattern.name());
            for (p, r) in runs.iter().zip(&res) {
                println!(
                    "| {} | {:.3} | {:.4} | {:.1} | {:.2} | {:.3} |",
                    p.mode.name(),
                    p.load,
                    r.accepted,
                    r.avg_latency,
                    r.avg_hops,
                    r.nonmin_fraction
                );
            }
            Ok(0)
        }
    }
}

fn with_size(w: &Workload, b: u64) -> Workload {
    match w.clone() {
        Workload::PingPong { .. } => Workload::PingPong { bytes: b },
        Workload::Allreduce { .. } => Workload::Allreduce { bytes: b },
        Workload::Alltoall { .. } => Workload::Alltoall { bytes: b },
        Workload::Broadcast { .. } => Workload::Broadcast { bytes: b },
        Workload::Halo3d { compute_ns, .. } => Workload::Halo3d { bytes: b, compute_ns },
        Workload::Sweep3d { compute_ns, .. } => Workload::Sweep3d { bytes: b, compute_ns },
        Workload::RandomRingBandwidth { outstanding, .. } => Workload::RandomRingBandwidth { bytes: b, outstanding },
        Workload::Incast { .. } => Workload::Incast { bytes: b },
        Workload::Bcast { .. } => Workload::Bcast { bytes: b },
        other => other,
    }
}
