//! Network parameters. Where Aries specifics are not public the values are documented choices
//! (see docs/sim/MODEL.md); every one of them is a field here.

use crate::error::ParseError;
use crate::topology::{PortClass, TopoSpec};
use aar_engine::model::MAX_OUTSTANDING_PACKETS as MAX_OUTSTANDING;
use aar_engine::RoutingMode;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Per-packet routing algorithm (the Aries `dlvr_mode` family plus the textbook ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[repr(u8)]
pub enum Mode {
    /// MIN_HASH: minimal, path (gateway link, dimension order, parallel link) hashed per packet.
    Min = 0,
    /// IN_ORDER: minimal, one deterministic path per (source, destination): in-order delivery.
    InOrder = 1,
    /// NMIN_HASH / Valiant: through a random intermediate group (or router, inside a group).
    Val = 2,
    /// ADAPTIVE0: UGAL over 2 minimal + 2 non-minimal candidates, no bias.
    Adaptive0 = 3,
    /// ADAPTIVE1: bias towards minimal grows with the hop index ("increasingly minimal bias").
    Adaptive1 = 4,
    /// ADAPTIVE2: small bias towards minimal.
    Adaptive2 = 5,
    /// ADAPTIVE3: large bias towards minimal.
    Adaptive3 = 6,
    /// UGAL-L as in BookSim2 `ugal_dragonflynew` (q_min <= 2 q_nonmin + 30), for the Kim validation.
    Ugal = 7,
}

pub const N_MODES: usize = 8;

impl Mode {
    pub const ALL: [Mode; N_MODES] = [
        Mode::Min,
        Mode::InOrder,
        Mode::Val,
        Mode::Adaptive0,
        Mode::Adaptive1,
        Mode::Adaptive2,
        Mode::Adaptive3,
        Mode::Ugal,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Mode::Min => "MIN_HASH",
            Mode::InOrder => "IN_ORDER",
            Mode::Val => "NMIN_HASH",
            Mode::Adaptive0 => "ADAPTIVE0",
            Mode::Adaptive1 => "ADAPTIVE1",
            Mode::Adaptive2 => "ADAPTIVE2",
            Mode::Adaptive3 => "ADAPTIVE3",
            Mode::Ugal => "UGAL",
        }
    }
    #[inline]
    pub fn is_adaptive(self) -> bool {
        (self as u8) >= 3
    }
    pub fn from_u8(x: u8) -> Mode {
        Mode::ALL[x as usize]
    }

    /// The engine's routing mode of an adaptive mode; `None` for the others, which the engine
    /// never chooses.
    pub fn routing_mode(self) -> Option<RoutingMode> {
        Some(match self {
            Mode::Adaptive0 => RoutingMode::Adaptive0,
            Mode::Adaptive1 => RoutingMode::Adaptive1,
            Mode::Adaptive2 => RoutingMode::Adaptive2,
            Mode::Adaptive3 => RoutingMode::Adaptive3,
            _ => return None,
        })
    }

    /// The mode a uGNI `dlvr_mode` asks for (its routing byte; flag bits such as ORDERED_TAIL do
    /// not change paths). The one reading of `dlvr_mode` for the simulator and the emulator's
    /// timing. Combinations no real caller sends: IN_ORDER if both NO_ADAPT and NO_HASH are set,
    /// else MIN_HASH if MIN_HASH, NO_ADAPT or NO_RADAPT (no adaptivity) is set, else the strongest
    /// adaptive bias present, else NMIN_HASH if set, else ADAPTIVE0 (NO_HASH alone turns off
    /// hashing, not adaptivity).
    pub fn from_dlvr_mode(dlvr_mode: u16) -> Mode {
        use aar_abi::*;
        match dlvr_mode & GNI_DLVMODE_ROUTING_MASK {
            GNI_DLVMODE_ADAPTIVE0 => Mode::Adaptive0,
            GNI_DLVMODE_ADAPTIVE1 => Mode::Adaptive1,
            GNI_DLVMODE_ADAPTIVE2 => Mode::Adaptive2,
            GNI_DLVMODE_ADAPTIVE3 => Mode::Adaptive3,
            GNI_DLVMODE_MIN_HASH => Mode::Min,
            GNI_DLVMODE_NMIN_HASH => Mode::Val,
            m if m & GNI_DLVMODE_IN_ORDER == GNI_DLVMODE_IN_ORDER => Mode::InOrder,
            m if m & (GNI_DLVMODE_MIN_HASH | GNI_DLVMODE_NO_ADAPT | GNI_DLVMODE_NO_RADAPT) != 0 => Mode::Min,
            m if m & GNI_DLVMODE_ADAPTIVE3 != 0 => Mode::Adaptive3,
            m if m & GNI_DLVMODE_ADAPTIVE2 != 0 => Mode::Adaptive2,
            m if m & GNI_DLVMODE_ADAPTIVE1 != 0 => Mode::Adaptive1,
            m if m & GNI_DLVMODE_NMIN_HASH != 0 => Mode::Val,
            _ => Mode::Adaptive0,
        }
    }
}

/// The names `aar sim --mode` and `--policy` accept: their messages and `aar sim`'s help.
pub const MODE_NAMES: &str =
    "MIN_HASH, IN_ORDER, NMIN_HASH (or VALIANT), ADAPTIVE0..ADAPTIVE3 (or ADAPTIVE_0..3), UGAL";

impl FromStr for Mode {
    type Err = ParseError;

    /// uGNI's names (`MIN_HASH`, `ADAPTIVE3`), Cray MPICH's (`ADAPTIVE_3`), short forms (`MIN`,
    /// `VAL`, `A3`) and `UGAL`, in any case.
    fn from_str(s: &str) -> Result<Mode, ParseError> {
        let u: String = s.trim().to_ascii_uppercase().chars().filter(|c| *c != '_' && *c != '-').collect();
        Ok(match u.as_str() {
            "MIN" | "MINHASH" => Mode::Min,
            "INORDER" => Mode::InOrder,
            "VAL" | "NMIN" | "NMINHASH" | "VALIANT" => Mode::Val,
            "ADAPTIVE0" | "A0" | "AD0" => Mode::Adaptive0,
            "ADAPTIVE1" | "A1" | "AD1" => Mode::Adaptive1,
            "ADAPTIVE2" | "A2" | "AD2" => Mode::Adaptive2,
            "ADAPTIVE3" | "A3" | "AD3" => Mode::Adaptive3,
            "UGAL" | "UGALL" => Mode::Ugal,
            _ => return Err(ParseError::Unknown { what: "routing mode", text: s.into(), accepted: MODE_NAMES }),
        })
    }
}

impl From<RoutingMode> for Mode {
    fn from(m: RoutingMode) -> Mode {
        match m {
            RoutingMode::Adaptive0 => Mode::Adaptive0,
            RoutingMode::Adaptive1 => Mode::Adaptive1,
            RoutingMode::Adaptive2 => Mode::Adaptive2,
            RoutingMode::Adaptive3 => Mode::Adaptive3,
        }
    }
}

/// Minimal path taken iff `4 * q_min <= mul_x4 * q_nonmin + 4 * add` (queues in flits).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bias {
    pub mul_x4: u32,
    pub add: i32,
}

impl Bias {
    pub const fn new(mul: f32, add: i32) -> Self {
        Bias { mul_x4: (mul * 4.0) as u32, add }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetConfig {
    pub topo: TopoSpec,
    /// Picoseconds per simulation tick: converts ticks to the times reported and the inputs given
    /// in ns (background lead time, compute time, shared-memory delay) to ticks (Kim runs use
    /// 1 tick = 1 cycle and 1000).
    pub tick_ps: u64,
    /// NIC clock period in ticks (counters count NIC cycles).
    pub nic_cycle: u64,
    /// Channel latency per port class [Terminal, Row, Column, Global], ticks (credits use the same).
    pub latency: [u64; 4],
    /// Serialization time of one flit per port class, ticks.
    pub flit_time: [u64; 4],
    /// Router pipeline delay (routing + allocation) from head arrival to first possible departure.
    pub router_delay: u64,
    /// Space reserved for each virtual channel at the input of each port class, flits (at least one
    /// maximum-size packet, so every VC can always make progress: deadlock freedom).
    pub vc_buf: [u32; 4],
    /// Space shared by all virtual channels of an input port (used first), flits.
    pub shared_buf: [u32; 4],
    /// Flits from one NIC input (an Aries processor tile) that may wait inside the router for one
    /// output port: the row and column buffers its packets occupy on the way to that output. The
    /// processor tile's input queue is FIFO per class: a head packet whose output has no such room
    /// stays at the head and blocks the packets behind it, so a NIC whose packets keep asking for
    /// a busy output is back-pressured (its stall counter moves). 0: no limit, every input is
    /// virtual-output-queued (the Kim / BookSim2 configuration).
    #[serde(default)]
    pub tile_buf: u32,
    /// Max outstanding request packets (awaiting a response) per NIC.
    pub max_outstanding: u32,
    /// Adaptive decisions are re-evaluated at every source-group hop up to this hop index
    /// (0 = decide once at the source router, like BookSim's UGAL-L).
    pub reeval_hops: u8,
    /// Bias per mode (index = Mode as u8) and hop index 0, 1, >=2.
    pub bias: [[Bias; 3]; N_MODES],
    /// Flits per packet of raw (synthetic, no response) traffic.
    pub raw_packet_flits: u32,
}

/// Flits a processor tile's packets may hold inside the router for one output port on the
/// Aries-like network (`NetConfig::tile_buf`): one 64-byte PUT packet in the row buffer of the
/// output's column and one in the column buffer of the output tile. Not published by Cray.
pub const ARIES_TILE_BUF: u32 = 10;

pub fn class_index(c: PortClass) -> usize {
    match c {
        PortClass::Terminal => 0,
        PortClass::Row => 1,
        PortClass::Column => 2,
        PortClass::Global | PortClass::Unused => 3,
    }
}

fn default_bias() -> [[Bias; 3]; N_MODES] {
    let none = Bias::new(1.0, 0);
    let small = Bias::new(1.0, 16);
    // High Bias: a non-minimal path only when the minimal port holds more than half an input
    // buffer pool (128 flits) beyond twice the non-minimal port's load. Calibrated on one
    // published observation (SC'19 Fig. 7: under High Bias an intra-group 4 MiB ping-pong stalls
    // clearly more than under plain Adaptive): every value from ~80 flits up keeps that
    // ping-pong on minimal paths; 48, the value before, let it divert before the NIC stalled.
    let large = Bias::new(2.0, 128);
    [
        [none; 3],               // Min (unused)
        [none; 3],               // InOrder (unused)
        [none; 3],               // Val (unused)
        [none; 3],               // Adaptive0
        [none, small, large],    // Adaptive1: increasingly minimal
        [small; 3],              // Adaptive2
        [large; 3],              // Adaptive3
        [Bias::new(2.0, 30); 3], // Ugal (BookSim2 ugal_dragonflynew)
    ]
}

impl NetConfig {
    /// BookSim2 `dragonflynew` k=4 equivalent: 1 tick = 1 cycle, 1 flit/cycle/channel,
    /// 10 cycles intra-group, 100 cycles global, 256-flit VC buffers, 10-flit packets.
    pub fn booksim_k4() -> Self {
        Self::kim(TopoSpec::booksim_k4())
    }
    pub fn kim(topo: TopoSpec) -> Self {
        NetConfig {
            topo,
            tick_ps: 1000,
            nic_cycle: 1,
            latency: [1, 10, 10, 100],
            flit_time: [1, 1, 1, 1],
            router_delay: 3,
            vc_buf: [256, 256, 256, 256],
            shared_buf: [0, 0, 0, 0],
            tile_buf: 0,
            max_outstanding: MAX_OUTSTANDING as u32,
            reeval_hops: 0,
            bias: default_bias(),
            raw_packet_flits: 10,
        }
    }
    /// Aries-like: 1 tick = 1 ps. 16-byte flits; 5.25 GB/s intra-group (3048 ps/flit), 4.7 GB/s
    /// global (3404 ps/flit), NIC 1 flit per 800 MHz cycle; router 70 ns + wire 30 ns = ~100 ns per
    /// intra-group hop; optical global cables 250 ns.
    pub fn aries(groups: u32) -> Self {
        NetConfig {
            topo: TopoSpec::aries(groups),
            tick_ps: 1,
            nic_cycle: 1250,
            latency: [10_000, 30_000, 30_000, 250_000],
            flit_time: [1250, 3048, 3048, 3404],
            router_delay: 70_000,
            vc_buf: [5, 5, 5, 5],
            shared_buf: [256, 256, 256, 512],
            tile_buf: ARIES_TILE_BUF,
            max_outstanding: MAX_OUTSTANDING as u32,
            reeval_hops: 2,
            bias: default_bias(),
            raw_packet_flits: 5,
        }
    }
    pub fn ticks_to_ns(&self, t: u64) -> f64 {
        t as f64 * self.tick_ps as f64 / 1000.0
    }
    /// Simulated time in whole ns (rounded down), as iteration records hold it.
    pub fn ticks_to_whole_ns(&self, t: u64) -> u64 {
        (u128::from(t) * u128::from(self.tick_ps) / 1000) as u64
    }
    /// NIC cycles (the unit of the simulated latency counter) in µs, from the simulated NIC clock:
    /// 1.25 ns per cycle on the Aries-like network (800 MHz, the engine's `NIC_CYCLE_US`), one
    /// tick on a Kim network. The one place the simulator converts counter latencies to time.
    pub fn nic_cycles_to_us(&self, cycles: f64) -> f64 {
        cycles * (self.nic_cycle * self.tick_ps) as f64 / 1e6
    }
    pub fn ns_to_ticks(&self, ns: f64) -> u64 {
        (ns * 1000.0 / self.tick_ps as f64).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_conversions() {
        let aries = NetConfig::aries(2);
        // 800 MHz NIC: the engine converts cycles with the same period
        assert_eq!(aries.nic_cycles_to_us(800.0), 1.0);
        assert_eq!(aries.nic_cycles_to_us(1.0), aar_engine::LatencyUnit::Cycles.to_us(1.0));
        assert_eq!(aries.ticks_to_whole_ns(1_999), 1);
        assert_eq!(aries.ticks_to_whole_ns(u64::MAX), u64::MAX / 1000);
        let kim = NetConfig::booksim_k4();
        assert_eq!(kim.nic_cycles_to_us(1000.0), 1.0);
        assert_eq!(kim.ticks_to_whole_ns(7), 7);
    }

    #[test]
    fn routing_modes_from_dlvr_mode() {
        use aar_abi::*;
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_ADAPTIVE0), Mode::Adaptive0);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_ADAPTIVE1), Mode::Adaptive1);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_ADAPTIVE2), Mode::Adaptive2);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_ADAPTIVE3), Mode::Adaptive3);
        let tail = GNI_DLVMODE_ADAPTIVE3 | GNI_DLVMODE_ORDERED_TAIL;
        assert_eq!(Mode::from_dlvr_mode(tail), Mode::Adaptive3, "ORDERED_TAIL is a flag");
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_MIN_HASH), Mode::Min);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_NMIN_HASH), Mode::Val);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_IN_ORDER), Mode::InOrder);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_NO_ADAPT), Mode::Min);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_NO_RADAPT), Mode::Min);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_ADAPTIVE3 | GNI_DLVMODE_MIN_HASH), Mode::Min);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_NO_HASH), Mode::Adaptive0);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_NO_HASH | GNI_DLVMODE_ADAPTIVE2), Mode::Adaptive2);
        assert_eq!(Mode::from_dlvr_mode(GNI_DLVMODE_NMIN_HASH | GNI_DLVMODE_ADAPTIVE1), Mode::Adaptive1);
        // Every adaptive request maps to the engine's mode of the same name.
        for m in aar_engine::RoutingMode::ALL {
            assert_eq!(Mode::from_dlvr_mode(m.dlvr_bits()).name(), m.name());
        }
    }
}
