//! The performance benchmark (see benches/booksim_k4.rs and `aar sim bench`).

use crate::config::{Mode, NetConfig};
use crate::synthetic::{run_synthetic, Pattern, SynthParams, SynthResult};
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

#[derive(Clone, Debug, Serialize)]
pub struct BenchResult {
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
    BenchResult { k4, k4_cycles: cycles, speedup, scaling_sim_ns: sim_cycles as f64 * 1.25, scaling }
}

pub fn render(r: &BenchResult) -> String {
    let k = &r.k4;
    let mut s = String::new();
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
