//! The performance benchmark (see benches/booksim_k4.rs and `aar sim bench`): a paper-scale
//! experiment, the BookSim2 k=4 reference, and run time versus Aries-like group count.

use crate::config::{Mode, NetConfig};
use crate::experiment::{ExperimentSpec, PolicySpec};
use crate::simulation::run_experiment;
use crate::synthetic::{run_synthetic, Pattern, SynthParams, SynthResult};
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
    let r = run_experiment(&spec, "bench");
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
    let cfg = NetConfig::booksim_k4();
    run_synthetic(
        &cfg,
        &SynthParams { load: 0.3, pattern: Pattern::Uniform, mode: Mode::Min, warmup: 0, measure: cycles, seed: 1 },
    )
}

pub fn run_bench(quick: bool) -> BenchResult {
    let paper = run_paper_case(quick);
    let cycles = if quick { BOOKSIM_CYCLES / 10 } else { BOOKSIM_CYCLES };
    let k4 = run_k4(cycles);
    let speedup = BOOKSIM_SECONDS * (cycles as f64 / BOOKSIM_CYCLES as f64) / k4.wall_s;
    let groups: &[u32] = if quick { &[1, 2, 4] } else { &[1, 2, 4, 8, 14, 16] };
    let sim_cycles = if quick { 2_000 } else { 8_000 };
    let mut scaling = Vec::new();
    for &g in groups {
        let cfg = NetConfig::aries(g);
        let r = run_synthetic(
            &cfg,
            &SynthParams {
                load: 0.3,
                pattern: Pattern::Uniform,
                mode: Mode::Adaptive0,
                warmup: 0,
                measure: sim_cycles,
                seed: 1,
            },
        );
        scaling.push(ScalingRow {
            groups: g,
            nodes: g * 384,
            packets: r.packets_delivered,
            hops: r.hops,
            wall_s: r.wall_s,
            packets_per_s: r.packets_delivered as f64 / r.wall_s,
        });
    }
    BenchResult { paper, k4, k4_cycles: cycles, speedup, scaling_sim_ns: sim_cycles as f64 * 1.25, scaling }
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
