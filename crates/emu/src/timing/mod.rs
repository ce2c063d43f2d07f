//! The NIC timing model: what one transfer does to the five Aries NIC counters.
//!
//! Pure code (no FFI, no globals) behind the [`NicModel`] trait: the default model below, or the
//! packet-level simulator (`crate::sim`, `AAR_EMU_SIM`), without touching the uGNI emulation.

pub mod simulated;

/// How a transfer loads the network: PUT-like requests carry the payload, GET-like requests are
/// one flit per packet and the payload comes back in the responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    PutLike,
    GetLike,
}

/// One transfer as the NIC sees it.
#[derive(Clone, Copy, Debug)]
pub struct Transfer {
    /// `gni_post_type_t`, or [`SMSG_POST_TYPE`] for a short message.
    pub post_type: u32,
    pub direction: Direction,
    pub bytes: u64,
    /// The routing mode exactly as the caller posted it.
    pub dlvr_mode: u16,
    /// Addresses of the sending and the receiving NIC.
    pub src_nic: u32,
    pub dst_nic: u32,
}

/// Post type used in a [`Transfer`] for SMSG sends (not a `gni_post_type_t` value).
pub const SMSG_POST_TYPE: u32 = 0x100;

/// What one transfer adds to the NIC counters (non-negative, possibly fractional).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NicEffect {
    pub req_flits: f64,
    pub req_stalled_cycles: f64,
    /// Cumulative request–response latency, in microseconds.
    pub rsp_latency_us: f64,
    pub rsp_packets: f64,
    pub rsp_stalled_cycles: f64,
    /// More request–response latency, in NIC cycles (800 MHz): models that count cycles use this,
    /// so that `AAR_EMU_LATENCY_UNIT=cycles` publishes their counts without a rounding trip
    /// through microseconds. The default model leaves it at 0.
    pub rsp_latency_cycles: f64,
}

/// A NIC timing model. The emulator calls it once per transfer (a chained post: once per element).
pub trait NicModel: Send {
    fn on_transfer(&mut self, t: &Transfer) -> NicEffect;
    /// Called by `aar_emu_set_network` and at start-up; models that do not use a profile ignore it.
    fn set_profile(&mut self, _profile: NetworkProfile) {}
    /// The model's clock (`aar_emu_clock_ns`): nanoseconds of simulated time, or 0 for a model
    /// without one (the default model).
    fn clock_ns(&self) -> u64 {
        0
    }
    /// True when transfers must reach the model even while the counters are frozen, because the
    /// model keeps state of its own (the simulator's network and clock).
    fn stateful(&self) -> bool {
        false
    }
}

/// The two ends of the network's behaviour: plain Adaptive (ADAPTIVE0, "ad") and Adaptive with
/// High Bias (ADAPTIVE3, "bs"). Modes in between are interpolated by their bias weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetworkProfile {
    /// Microseconds per response packet.
    pub latency_ad: f64,
    pub latency_bs: f64,
    /// Stalled cycles per request flit.
    pub stall_ad: f64,
    pub stall_bs: f64,
    /// Response stalled cycles as a fraction of request stalled cycles.
    pub rsp_stall: f64,
}

impl Default for NetworkProfile {
    /// A quiet network: minimal paths are shorter, so High Bias answers faster; stalls are low on
    /// both, slightly higher on minimal paths because they share fewer links.
    fn default() -> Self {
        NetworkProfile { latency_ad: 1.4, latency_bs: 1.1, stall_ad: 1.0, stall_bs: 2.0, rsp_stall: 0.0 }
    }
}

impl NetworkProfile {
    /// Profile keys in the order `AAR_EMU_NETWORK` documents them.
    pub const KEYS: [&'static str; 5] = ["latency_ad", "latency_bs", "stall_ad", "stall_bs", "rsp_stall"];

    fn get(&self, i: usize) -> f64 {
        [self.latency_ad, self.latency_bs, self.stall_ad, self.stall_bs, self.rsp_stall][i]
    }

    fn set(&mut self, i: usize, v: f64) {
        match i {
            0 => self.latency_ad = v,
            1 => self.latency_bs = v,
            2 => self.stall_ad = v,
            3 => self.stall_bs = v,
            _ => self.rsp_stall = v,
        }
    }

    /// True when every value is finite and non-negative.
    pub fn is_valid(&self) -> bool {
        (0..5).all(|i| valid_value(self.get(i)))
    }

    /// Parses `key=value,key=value`. Missing keys keep their default; each bad item yields one
    /// complaint (what was wrong, and the default kept) for the caller to print.
    pub fn parse(spec: &str) -> (NetworkProfile, Vec<String>) {
        let defaults = NetworkProfile::default();
        let mut p = defaults;
        let mut complaints = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                complaints.push(format!("item \"{item}\" is not key=value; ignored"));
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            let Some(i) = Self::KEYS.iter().position(|k| *k == key) else {
                complaints.push(format!("unknown key \"{key}\" (known: {}); ignored", Self::KEYS.join(", ")));
                continue;
            };
            match value.parse::<f64>() {
                Ok(v) if valid_value(v) => p.set(i, v),
                _ => complaints.push(format!(
                    "{key}=\"{value}\" is not a finite number >= 0; using the default {key}={}",
                    defaults.get(i)
                )),
            }
        }
        (p, complaints)
    }
}

fn valid_value(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

/// How a routing mode behaves in the default model: its bias weight towards minimal paths
/// (0 = ADAPTIVE0 … 1 = ADAPTIVE3) and a latency multiplier.
pub fn mode_behaviour(dlvr_mode: u16) -> (f64, f64) {
    // Only the low byte carries routing; flags such as ORDERED_TAIL (0x100) do not change paths.
    match dlvr_mode & 0xff {
        0x00 => (0.0, 1.0),        // ADAPTIVE0 / PERFORMANCE
        0x20 => (1.0 / 3.0, 1.0),  // ADAPTIVE1
        0x40 => (2.0 / 3.0, 1.0),  // ADAPTIVE2
        0x80 => (1.0, 1.0),        // ADAPTIVE3
        0x10 | 0x03 => (1.0, 1.0), // MIN_HASH, IN_ORDER: minimal paths only
        0x08 => (0.0, 2.0),        // NMIN_HASH: always non-minimal, twice the hops
        other => {
            // Combinations no real caller sends: the strongest minimal bias present wins.
            if other & 0x80 != 0 || other & 0x10 != 0 || other & 0x07 != 0 {
                (1.0, 1.0)
            } else if other & 0x40 != 0 {
                (2.0 / 3.0, 1.0)
            } else if other & 0x20 != 0 {
                (1.0 / 3.0, 1.0)
            } else {
                (0.0, 2.0)
            }
        }
    }
}

/// Packets and request flits for `bytes` (64 B per packet; a PUT packet is 1 header flit plus one
/// flit per 16 B of payload, a GET request is 1 flit).
pub fn packets_and_flits(direction: Direction, bytes: u64) -> (u64, u64) {
    let packets = bytes.div_ceil(64).max(1);
    let flits = match direction {
        Direction::PutLike => packets + bytes.div_ceil(16),
        Direction::GetLike => packets,
    };
    (packets, flits)
}

/// The default deterministic model: per transfer of p packets and f request flits in a mode of
/// bias weight w, latency += p·L(w), request stalls += f·s(w), with L and s interpolated between
/// the profile's two ends.
#[derive(Clone, Debug, Default)]
pub struct DefaultModel {
    pub profile: NetworkProfile,
}

impl NicModel for DefaultModel {
    fn on_transfer(&mut self, t: &Transfer) -> NicEffect {
        let (packets, flits) = packets_and_flits(t.direction, t.bytes);
        let (w, latency_factor) = mode_behaviour(t.dlvr_mode);
        let p = &self.profile;
        let latency = (p.latency_ad + w * (p.latency_bs - p.latency_ad)) * latency_factor;
        let stall = p.stall_ad + w * (p.stall_bs - p.stall_ad);
        let req_stalled = flits as f64 * stall;
        NicEffect {
            req_flits: flits as f64,
            req_stalled_cycles: req_stalled,
            rsp_latency_us: packets as f64 * latency,
            rsp_packets: packets as f64,
            rsp_stalled_cycles: req_stalled * p.rsp_stall,
            rsp_latency_cycles: 0.0,
        }
    }

    fn set_profile(&mut self, profile: NetworkProfile) {
        self.profile = profile;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(bytes: u64, mode: u16) -> Transfer {
        Transfer { post_type: 3, direction: Direction::PutLike, bytes, dlvr_mode: mode, src_nic: 1, dst_nic: 2 }
    }

    #[test]
    fn packetization_matches_the_paper() {
        assert_eq!(packets_and_flits(Direction::PutLike, 64), (1, 5));
        assert_eq!(packets_and_flits(Direction::PutLike, 0), (1, 1));
        assert_eq!(packets_and_flits(Direction::PutLike, 65), (2, 2 + 5));
        assert_eq!(packets_and_flits(Direction::GetLike, 4096), (64, 64));
        assert_eq!(packets_and_flits(Direction::PutLike, 8), (1, 2));
    }

    #[test]
    fn modes_interpolate_between_the_two_ends() {
        let profile =
            NetworkProfile { latency_ad: 1.6, latency_bs: 1.0, stall_ad: 2.0, stall_bs: 40.0, rsp_stall: 0.0 };
        let mut m = DefaultModel { profile };
        let ad = m.on_transfer(&put(64, 0x00));
        assert_eq!(
            ad,
            NicEffect {
                req_flits: 5.0,
                req_stalled_cycles: 10.0,
                rsp_latency_us: 1.6,
                rsp_packets: 1.0,
                rsp_stalled_cycles: 0.0,
                rsp_latency_cycles: 0.0
            }
        );
        let bs = m.on_transfer(&put(64, 0x80));
        assert_eq!(bs.req_stalled_cycles, 200.0);
        assert!((bs.rsp_latency_us - 1.0).abs() < 1e-12);
        let a1 = m.on_transfer(&put(64, 0x20));
        assert!((a1.rsp_latency_us - 1.4).abs() < 1e-12);
        assert!((a1.req_stalled_cycles - 5.0 * (2.0 + 38.0 / 3.0)).abs() < 1e-9);
        // Flag bits above the low byte are ignored.
        assert_eq!(m.on_transfer(&put(64, 0x180)), bs);
        // NMIN_HASH: adaptive-end stalls, doubled latency.
        let nmin = m.on_transfer(&put(64, 0x08));
        assert!((nmin.rsp_latency_us - 3.2).abs() < 1e-12);
        assert_eq!(nmin.req_stalled_cycles, 10.0);
        assert_eq!(m.on_transfer(&put(64, 0x10)), bs);
        assert_eq!(m.on_transfer(&put(64, 0x03)), bs);
    }

    #[test]
    fn profile_parsing_reports_each_bad_item() {
        let (p, c) = NetworkProfile::parse("latency_ad=1.6, latency_bs=1.0,stall_ad=2,stall_bs=40");
        assert!(c.is_empty());
        assert_eq!(
            p,
            NetworkProfile { latency_ad: 1.6, latency_bs: 1.0, stall_ad: 2.0, stall_bs: 40.0, rsp_stall: 0.0 }
        );
        let (p, c) = NetworkProfile::parse("latency_ad=abc,stall_bs=-1,bogus=3,rsp_stall=0.1,junk");
        assert_eq!(c.len(), 4, "{c:?}");
        assert!(c[0].contains("latency_ad=\"abc\"") && c[0].contains("default latency_ad=1.4"));
        assert_eq!(p.latency_ad, NetworkProfile::default().latency_ad);
        assert_eq!(p.stall_bs, NetworkProfile::default().stall_bs);
        assert_eq!(p.rsp_stall, 0.1);
        assert!(NetworkProfile::parse("latency_ad=inf").1.len() == 1);
    }
}
