//! Open-loop synthetic traffic (Bernoulli injection per node, infinite source queues, raw packets
//! without responses): the Kim et al. / BookSim2 validation and the performance benchmark.

use crate::config::{Mode, NetConfig};
use crate::error::{ParseError, SpecError};
use crate::net::Net;
use crate::simulation::Watch;
use serde::{Deserialize, Serialize};
use std::str::FromStr;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pattern {
    /// uniform random destination (any other node)
    Uniform,
    /// worst case: every node of group i sends to random nodes of group i+1
    WorstCase,
}

impl Pattern {
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Uniform => "UR",
            Pattern::WorstCase => "WC",
        }
    }
}

impl FromStr for Pattern {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Pattern, ParseError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ur" | "uniform" => Ok(Pattern::Uniform),
            "wc" | "worst-case" => Ok(Pattern::WorstCase),
            _ => Err(ParseError::Unknown {
                what: "traffic pattern",
                text: s.into(),
                accepted: "ur (uniform) or wc (worst-case)",
            }),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SynthParams {
    /// offered load, flits per NIC cycle per node (1.0 = full injection bandwidth)
    pub load: f64,
    pub pattern: Pattern,
    pub mode: Mode,
    /// NIC cycles before measuring
    pub warmup: u64,
    /// NIC cycles measured
    pub measure: u64,
    pub seed: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SynthResult {
    pub offered: f64,
    /// accepted throughput, flits per NIC cycle per node, in the measurement window
    pub accepted: f64,
    /// mean latency (creation to tail ejection) of packets ejected in the window, NIC cycles
    pub avg_latency: f64,
    pub max_latency: f64,
    pub avg_hops: f64,
    pub nonmin_fraction: f64,
    pub packets_injected: u64,
    pub packets_delivered: u64,
    pub hops: u64,
    pub events: u64,
    pub wall_s: f64,
}

/// What a synthetic run makes the simulator do and keep ([`SynthParams::work`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynthWork {
    /// packets the nodes make, on average: every node draws one with probability load / packet
    /// flits each NIC cycle of warm-up and measurement (all injected unless the network
    /// saturates: its source queues then keep the rest)
    pub packets: u64,
    /// of those, the packets of the first [`SynthWork::MEMORY_CYCLES`] NIC cycles, which the
    /// memory grows with
    pub early_packets: u64,
}

impl SynthWork {
    /// Memory per packet injected in the first [`SynthWork::MEMORY_CYCLES`] NIC cycles, at least
    /// (the events, queues and packets in flight it makes; a packet in flight keeps no message,
    /// which it gives back when it is injected). Measured as the peak resident size of one run
    /// (`aar sim synth --groups G --loads L`): the packets and events in flight, reached within
    /// about 1,000 cycles, then level unless the network is saturated (its queues then grow):
    /// 25 bytes a packet of that window at 9 groups and load 0.5 (35 MB), 35 at 16 groups and
    /// load 0.9 (159 MB; 36 and 50 bytes while a packet in flight kept its 72-byte message).
    pub const BYTES_PER_PACKET: u64 = 24;
    /// The NIC cycles the memory grows with ([`SynthWork::BYTES_PER_PACKET`]).
    pub const MEMORY_CYCLES: u64 = 4096;

    /// The memory the run takes at least, bytes ([`SynthWork::BYTES_PER_PACKET`]).
    pub fn memory(&self) -> u64 {
        self.early_packets.saturating_mul(Self::BYTES_PER_PACKET)
    }
}

impl SynthParams {
    /// The probability that a node injects a packet in a NIC cycle: the load (flits per cycle)
    /// over the flits of a packet.
    fn injection(&self, cfg: &NetConfig) -> f64 {
        (self.load / f64::from(cfg.raw_packet_flits)).min(1.0)
    }

    /// The run's work ([`SynthWork`]) on a network of `nodes` nodes.
    pub fn work(&self, cfg: &NetConfig, nodes: u32) -> SynthWork {
        let per_cycle = f64::from(nodes) * self.injection(cfg);
        let cycles = self.warmup.saturating_add(self.measure);
        let packets = |cycles: u64| (per_cycle * cycles as f64) as u64;
        SynthWork { packets: packets(cycles), early_packets: packets(cycles.min(SynthWork::MEMORY_CYCLES)) }
    }

    /// Refuses a pattern the network cannot carry as described: worst-case traffic on one group
    /// would be traffic inside the group under another name, and uniform traffic on one node has
    /// no other node to go to.
    pub fn check(&self, cfg: &NetConfig) -> Result<(), SpecError> {
        let groups = cfg.topo.groups();
        if self.pattern == Pattern::WorstCase && groups < 2 {
            return Err(SpecError::WorstCaseOneGroup { traffic: "the worst-case pattern (wc)".into(), groups });
        }
        let nodes = cfg.topo.nodes();
        if self.pattern == Pattern::Uniform && nodes < 2 {
            return Err(SpecError::UniformOneNode { traffic: "the uniform random pattern (ur)".into(), nodes });
        }
        Ok(())
    }
}

/// Run open-loop synthetic traffic on `cfg`.
pub fn run_synthetic(cfg: &NetConfig, sp: &SynthParams) -> SynthResult {
    run_synthetic_told(cfg, sp, &|_| {})
}

/// [`run_synthetic`], telling `done` the fraction of its NIC cycles simulated as it goes.
pub fn run_synthetic_told(cfg: &NetConfig, sp: &SynthParams, done: &dyn Fn(f64)) -> SynthResult {
    let wall = Instant::now();
    let mut net = Net::new(cfg.clone(), sp.seed);
    let n = net.topo.n_nodes;
    let cyc = cfg.nic_cycle;
    let prob = sp.injection(cfg);
    let end = (sp.warmup + sp.measure) * cyc;
    net.raw.win_start = sp.warmup * cyc;
    net.raw.win_end = end;
    let npg = n / net.topo.groups;
    if prob > 0.0 {
        for node in 0..n {
            let t = net.rng.geometric(prob) * cyc;
            net.schedule_user(t, node, 0);
        }
    }
    let mut next_report = Watch::EVENTS;
    while let Some((node, _)) = net.step(end) {
        debug_assert!(node != crate::net::NOTES);
        if net.totals.events >= next_report {
            next_report = net.totals.events + Watch::EVENTS;
            done(net.now as f64 / end.max(1) as f64);
        }
        let dst = match sp.pattern {
            Pattern::Uniform => {
                let d = net.rng.below(n - 1);
                if d >= node {
                    d + 1
                } else {
                    d
                }
            }
            Pattern::WorstCase => {
                let g = node / npg;
                let dg = (g + 1) % net.topo.groups;
                dg * npg + net.rng.below(npg)
            }
        };
        net.post_raw(node, dst, sp.mode);
        let t = net.now + net.rng.geometric(prob) * cyc;
        if t < end {
            net.schedule_user(t, node, 0);
        }
    }
    let r = net.raw;
    if std::env::var("AAR_SIM_DEBUG_PORTS").is_ok() {
        let mut v: Vec<(u64, usize)> = (0..net.topo.peer.len()).map(|i| (net.port_flits(i), i)).collect();
        v.sort();
        v.reverse();
        for &(f, i) in v.iter().take(12) {
            eprintln!(
                "port {} router {} idx {} class {:?} util {:.3}",
                i,
                i as u32 / net.topo.radix,
                i as u32 % net.topo.radix,
                net.topo.class[i],
                f as f64 / end as f64
            );
        }
    }
    let cycles = sp.measure as f64;
    SynthResult {
        offered: sp.load,
        accepted: r.flits_in_window as f64 / (n as f64 * cycles),
        avg_latency: if r.lat_n > 0 { r.lat_sum as f64 / r.lat_n as f64 / cyc as f64 } else { f64::NAN },
        max_latency: r.lat_max as f64 / cyc as f64,
        avg_hops: if r.lat_n > 0 { r.hops_sum as f64 / r.lat_n as f64 } else { 0.0 },
        nonmin_fraction: if r.lat_n > 0 { r.nonmin as f64 / r.lat_n as f64 } else { 0.0 },
        packets_injected: net.totals.packets_injected,
        packets_delivered: net.totals.packets_delivered,
        hops: net.totals.hops,
        events: net.totals.events,
        wall_s: wall.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_in_any_case() {
        for (text, p) in [("ur", Pattern::Uniform), (" Uniform ", Pattern::Uniform), ("WC", Pattern::WorstCase)] {
            assert_eq!(text.parse::<Pattern>(), Ok(p), "{text}");
        }
        assert!("diagonal".parse::<Pattern>().is_err());
    }
}
