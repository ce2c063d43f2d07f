//! The performance benchmark (see benches/booksim_k4.rs and `aar sim bench`): a paper-scale
//! experiment, the BookSim2 k=4 reference, and run time versus Aries-like group count, told on
//! stderr as they run ([`Watcher`]). Each runs alone on one core: the watcher is told from it
//! every 65,536 events, which the rates it measures do not feel.

use crate::config::{Mode, NetConfig};
use crate::experiment::{ExperimentSpec, PolicySpec};
use crate::progress::Watcher;
use crate::simulation::run_experiment_told;
use crate::synthetic::{run_synthetic, run_synthetic_told, Pattern, SynthParams, SynthResult};
use crate::topology::Topology;
use crate::workload::{Placement, Workload};
use serde::Serialize;

/// BookSim2 wall time for the same work on the reference machine (one core), seconds.
pub const BOOKSIM_SECONDS: f64 = 263.0;
pub const BOOKSIM_CYCLES: u64 = 60_451;

#[derive(Clone, Debug, Serialize)]
pub struct ScalingRow {
    pub groups: u32,
    pub nodes: u32,
    pub packets: u64,
    pub hops: u64,
    pub wall_s: f64,
    pub packets_per_s: f64,
}

/// The paper-scale case: a measured job of the SC'19 size on an Aries-like machine, every rank
/// running the engine, A/B arms alternating.
#[derive(Clone, Debug, Serialize)]
pub struct PaperCase {
    /// what ran, as `aar sim run` options (the command that reproduces it)
    pub command: String,
    pub packets: u64,
    pub hops: u64,
    pub events: u64,
    pub sim_ns: f64,
    pub wall_s: f64,
}

impl PaperCase {
    /// Packet-hops per second of wall time on the one core the experiment runs on.
    pub fn hops_per_s(&self) -> f64 {
        self.hops as f64 / self.wall_s
    }
}

/// 1,024 ranks, one per node, scattered over 6 Aries-like groups (2,304 nodes), alltoall of 64 B
/// (the paper's smallest alltoall, one packet per message: 1,047,552 messages per iteration), one
/// iteration under ADAPTIVE0 and one under ADAPTIVE3 (`quick`: ADAPTIVE0 only).
pub fn run_paper_case(quick: bool) -> PaperCase {
    let (spec, command) = paper_case(quick);
    paper_result(&spec, command, &|_| {})
}

/// The experiment of [`run_paper_case`] and the command that reproduces it.
fn paper_case(quick: bool) -> (ExperimentSpec, String) {
    let (groups, ranks, bytes) = (6, 1024, 64);
    let mut spec =
        ExperimentSpec::new(NetConfig::aries(groups), Workload::Alltoall { bytes }, ranks, Placement::Scattered);
    spec.arms = if quick {
        vec![PolicySpec::Fixed(Mode::Adaptive0)]
    } else {
        vec![PolicySpec::Fixed(Mode::Adaptive0), PolicySpec::Fixed(Mode::Adaptive3)]
    };
    spec.iterations = spec.arms.len() as u32;
    let policies: Vec<String> = spec.arms.iter().map(|a| a.name()).collect();
    let command = format!(
        "aar sim run --groups {groups} --ranks {ranks} --placement scattered --workload alltoall:{bytes} \
         --policy {} --iterations {} --seed {}",
        policies.join(","),
        spec.iterations,
        spec.seed
    );
    (spec, command)
}

/// Runs the paper-scale case, telling `done` the fraction of it done.
fn paper_result(spec: &ExperimentSpec, command: String, done: &dyn Fn(f64)) -> PaperCase {
    let r = run_experiment_told(spec, "bench", None, done);
    PaperCase { command, packets: r.packets, hops: r.hops, events: r.events, sim_ns: r.sim_time_ns, wall_s: r.wall_s }
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchResult {
    pub paper: PaperCase,
    pub k4: SynthResult,
    pub k4_cycles: u64,
    pub speedup: f64,
    pub scaling_sim_ns: f64,
    pub scaling: Vec<ScalingRow>,
}

pub fn run_k4(cycles: u64) -> SynthResult {
    run_synthetic(&NetConfig::booksim_k4(), &k4_params(cycles))
}

/// The BookSim2 workload: uniform random at 0.3 flits a cycle, MIN, for `cycles`.
fn k4_params(cycles: u64) -> SynthParams {
    SynthParams { load: 0.3, pattern: Pattern::Uniform, mode: Mode::Min, warmup: 0, measure: cycles, seed: 1 }
}

pub fn run_bench(quick: bool) -> BenchResult {
    let (paper_spec, command) = paper_case(quick);
    let cycles = if quick { BOOKSIM_CYCLES / 10 } else { BOOKSIM_CYCLES };
    let groups: &[u32] = if quick { &[1, 2, 4] } else { &[1, 2, 4, 8, 14, 16] };
    let sim_cycles = if quick { 2_000 } else { 8_000 };
    let scaling_runs: Vec<(u32, NetConfig, SynthParams)> = groups
        .iter()
        .map(|&g| {
            let p = SynthParams {
                load: 0.3,
                pattern: Pattern::Uniform,
                mode: Mode::Adaptive0,
                warmup: 0,
                measure: sim_cycles,
                seed: 1,
            };
            (g, NetConfig::aries(g), p)
        })
        .collect();
    // The parts in the order they run, each weighed by its packets.
    let synth_packets = |cfg: &NetConfig, p: &SynthParams| p.work(cfg, Topology::new(cfg.topo.clone()).n_nodes).packets;
    let mut parts = vec![("the paper-scale case".to_string(), paper_spec.work(u64::MAX).packets)];
    parts.push(("the BookSim2 workload".into(), synth_packets(&NetConfig::booksim_k4(), &k4_params(cycles))));
    parts.extend(scaling_runs.iter().map(|(g, cfg, p)| (format!("{g} groups"), synth_packets(cfg, p))));
    let watcher = std::cell::RefCell::new(Watcher::new("sim bench"));
    let tell = |part: usize| {
        let parts = &parts;
        let watcher = &watcher;
        move |done: f64| {
            let (fraction, status) = told(parts, part, done);
            watcher.borrow_mut().update(fraction, &status);
        }
    };
    let paper = paper_result(&paper_spec, command, &tell(0));
    let k4 = run_synthetic_told(&NetConfig::booksim_k4(), &k4_params(cycles), &tell(1));
    let speedup = BOOKSIM_SECONDS * (cycles as f64 / BOOKSIM_CYCLES as f64) / k4.wall_s;
    let mut scaling = Vec::new();
    for (i, (g, cfg, p)) in scaling_runs.iter().enumerate() {
        let g = *g;
        let r = run_synthetic_told(cfg, p, &tell(2 + i));
        scaling.push(ScalingRow {
            groups: g,
            nodes: g * 384,
            packets: r.packets_delivered,
            hops: r.hops,
            wall_s: r.wall_s,
            packets_per_s: r.packets_delivered as f64 / r.wall_s,
        });
    }
    watcher.into_inner().finish();
    BenchResult { paper, k4, k4_cycles: cycles, speedup, scaling_sim_ns: sim_cycles as f64 * 1.25, scaling }
}

/// The fraction of the benchmark done when part `part` of `parts` (each named, with its packets)
/// is `done` done (the parts before it all done), and what [`Watcher::update`] shows beside it.
fn told(parts: &[(String, u64)], part: usize, done: f64) -> (f64, String) {
    let total: u64 = parts.iter().map(|p| p.1).sum();
    let before: u64 = parts[..part].iter().map(|p| p.1).sum();
    let fraction = (before as f64 + done * parts[part].1 as f64) / total.max(1) as f64;
    (fraction, format!("{} ({} of {})", parts[part].0, part + 1, parts.len()))
}

pub fn render(r: &BenchResult) -> String {
    let k = &r.k4;
    let p = &r.paper;
    let mut s = String::new();
    s += "Paper scale: 1,024 ranks scattered over 6 Aries-like groups, alltoall 64 B, every rank running the engine, one core\n";
    s += &format!("  reproduce: {}\n", p.command);
    s += &format!(
        "  wall {:.2} s | {:.1} us simulated | packets {} | packet-hops {} | {:.0} packet-hops/s per core | {:.0} events/s\n",
        p.wall_s,
        p.sim_ns / 1e3,
        p.packets,
        p.hops,
        p.hops_per_s(),
        p.events as f64 / p.wall_s
    );
    s += &format!(
        "BookSim2 k=4 dragonflynew (1,056 nodes), UR 0.3 flits/cycle, MIN, {} cycles, one core\n",
        r.k4_cycles
    );
    s += &format!(
        "  wall {:.2} s | packets {} delivered ({} injected) | {:.0} packets/s | {:.0} packet-hops/s | {:.0} events/s\n",
        k.wall_s,
        k.packets_delivered,
        k.packets_injected,
        k.packets_delivered as f64 / k.wall_s,
        k.hops as f64 / k.wall_s,
        k.events as f64 / k.wall_s
    );
    s += &format!(
        "  accepted {:.3} flits/cycle/node, mean latency {:.1} cycles; speedup vs BookSim2 (263 s for 60,451 cycles): {:.1}x\n",
        k.accepted, k.avg_latency, r.speedup
    );
    s += &format!(
        "Aries-like groups, UR 0.3 flits/NIC-cycle/node, ADAPTIVE0, {:.0} ns simulated, one core\n",
        r.scaling_sim_ns
    );
    s += "| groups | nodes | packets | packet-hops | wall s | packets/s | packet-hops/s |\n|---:|---:|---:|---:|---:|---:|---:|\n";
    for row in &r.scaling {
        s += &format!(
            "| {} | {} | {} | {} | {:.2} | {:.0} | {:.0} |\n",
            row.groups,
            row.nodes,
            row.packets,
            row.hops,
            row.wall_s,
            row.packets_per_s,
            row.hops as f64 / row.wall_s
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_benchmark_is_told_done_by_the_packets_of_its_parts() {
        let parts = [("a".to_string(), 600), ("b".to_string(), 300), ("c".to_string(), 100)];
        assert_eq!(told(&parts, 0, 0.5), (0.3, "a (1 of 3)".into()));
        assert_eq!(told(&parts, 1, 0.0), (0.6, "b (2 of 3)".into()));
        assert_eq!(told(&parts, 2, 1.0), (1.0, "c (3 of 3)".into()));
    }
}
