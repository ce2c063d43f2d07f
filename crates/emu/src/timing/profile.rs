//! The deterministic timing model (`AAR_EMU_NETWORK`, `aar_emu_set_network`): a network profile
//! gives the latency and the stall ratio at the two ends of adaptive routing, and every routing
//! mode lies between them by its bias towards minimal paths.

use std::str::FromStr;

use aar_engine::model::{packets, request_flits};
use aar_sim::config::Mode;

use super::{NicEffect, NicModel, NicTransfer};

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

/// The keys of `AAR_EMU_NETWORK`, one per field of [`NetworkProfile`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileKey {
    LatencyAd,
    LatencyBs,
    StallAd,
    StallBs,
    RspStall,
}

impl ProfileKey {
    /// Every key, in the order `AAR_EMU_NETWORK` documents them.
    pub const ALL: [ProfileKey; 5] =
        [ProfileKey::LatencyAd, ProfileKey::LatencyBs, ProfileKey::StallAd, ProfileKey::StallBs, ProfileKey::RspStall];

    /// The key as `AAR_EMU_NETWORK` spells it.
    pub fn name(self) -> &'static str {
        match self {
            ProfileKey::LatencyAd => "latency_ad",
            ProfileKey::LatencyBs => "latency_bs",
            ProfileKey::StallAd => "stall_ad",
            ProfileKey::StallBs => "stall_bs",
            ProfileKey::RspStall => "rsp_stall",
        }
    }

    /// "latency_ad, latency_bs, ...", for messages.
    fn known() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

/// A bad item of `AAR_EMU_NETWORK`, and what is done about it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProfileItemError {
    #[error("item \"{}\" is not key=value (keys: {known}); ignored", .0.escape_debug(), known = ProfileKey::known())]
    NotKeyValue(String),
    // `first`: what the key's first item left in force (its value, or the default where it was refused).
    #[error("key \"{}\" is given twice (give each key once); the second is ignored: {}={first} stays", key.name(), key.name())]
    Repeated { key: ProfileKey, first: f64 },
    #[error("unknown key \"{}\" (known: {known}); ignored", key.escape_debug(), known = ProfileKey::known())]
    UnknownKey { key: String },
    #[error(
        "{}=\"{}\" is not a number from 0 to {max:e}; using the default {}={default}",
        key.name(),
        value.escape_debug(),
        key.name(),
        max = NetworkProfile::MAX_VALUE
    )]
    BadValue { key: ProfileKey, value: String, default: f64 },
}

/// One `key=value` item of `AAR_EMU_NETWORK`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProfileItem {
    pub key: ProfileKey,
    pub value: f64,
}

impl FromStr for ProfileItem {
    type Err = ProfileItemError;

    fn from_str(item: &str) -> Result<Self, Self::Err> {
        let (key, value) = item.split_once('=').ok_or_else(|| ProfileItemError::NotKeyValue(item.to_string()))?;
        let (key, value) = (key.trim(), value.trim());
        let key = ProfileKey::ALL
            .into_iter()
            .find(|k| k.name() == key)
            .ok_or_else(|| ProfileItemError::UnknownKey { key: key.to_string() })?;
        match value.parse::<f64>() {
            Ok(v) if valid_value(v) && v <= NetworkProfile::MAX_VALUE => Ok(ProfileItem { key, value: v }),
            _ => Err(ProfileItemError::BadValue {
                key,
                value: value.to_string(),
                default: NetworkProfile::default().get(key),
            }),
        }
    }
}

/// The bad items of an `AAR_EMU_NETWORK` value, and the profile its good items make.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}", .problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct NetworkProfileError {
    /// One per bad item, in the order of the items.
    pub problems: Vec<ProfileItemError>,
    /// What is used instead: the good items over the defaults.
    pub usable: NetworkProfile,
}

impl FromStr for NetworkProfile {
    type Err = NetworkProfileError;

    /// Parses `key=value,key=value` (any subset of the keys, in any order); a missing key keeps
    /// its default. A bad item does not spoil the others: the error carries the profile the good
    /// items make, with one problem per bad item.
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let mut profile = NetworkProfile::default();
        let mut problems = Vec::new();
        let mut given = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let parsed = item.parse::<ProfileItem>();
            // A key given again, with a good value or a bad one, changes nothing.
            let key = match &parsed {
                Ok(ProfileItem { key, .. }) | Err(ProfileItemError::BadValue { key, .. }) => Some(*key),
                Err(_) => None,
            };
            if let Some(key) = key {
                if given.contains(&key) {
                    problems.push(ProfileItemError::Repeated { key, first: profile.get(key) });
                    continue;
                }
                given.push(key);
            }
            match parsed {
                Ok(ProfileItem { key, value }) => *profile.field(key) = value,
                Err(e) => problems.push(e),
            }
        }
        if problems.is_empty() {
            Ok(profile)
        } else {
            Err(NetworkProfileError { problems, usable: profile })
        }
    }
}

impl NetworkProfile {
    /// The largest value `AAR_EMU_NETWORK` takes for any key: a second per response, a million
    /// stalled cycles per flit. Far beyond any network, and small enough that the counters a
    /// program drives for days stay far from overflowing (a larger value, e.g. u64::MAX, fills
    /// a 64-bit counter in a few transfers and wraps it negative).
    pub const MAX_VALUE: f64 = 1e6;

    fn field(&mut self, key: ProfileKey) -> &mut f64 {
        match key {
            ProfileKey::LatencyAd => &mut self.latency_ad,
            ProfileKey::LatencyBs => &mut self.latency_bs,
            ProfileKey::StallAd => &mut self.stall_ad,
            ProfileKey::StallBs => &mut self.stall_bs,
            ProfileKey::RspStall => &mut self.rsp_stall,
        }
    }

    fn get(mut self, key: ProfileKey) -> f64 {
        *self.field(key)
    }

    /// True when every value is finite and non-negative.
    pub fn is_valid(&self) -> bool {
        ProfileKey::ALL.into_iter().all(|k| valid_value(self.get(k)))
    }
}

fn valid_value(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

/// How a routing mode behaves in the profile model: its bias weight towards minimal paths
/// (0 = ADAPTIVE0 … 1 = ADAPTIVE3) and a latency multiplier. The routing is the simulator's
/// reading of `dlvr_mode` (`Mode::from_dlvr_mode`), so the two timing models agree on what every
/// value asks for.
pub fn mode_behaviour(dlvr_mode: u16) -> (f64, f64) {
    match Mode::from_dlvr_mode(dlvr_mode) {
        Mode::Adaptive0 | Mode::Ugal => (0.0, 1.0),
        Mode::Adaptive1 => (1.0 / 3.0, 1.0),
        Mode::Adaptive2 => (2.0 / 3.0, 1.0),
        // Minimal paths only, or the strongest bias towards them.
        Mode::Adaptive3 | Mode::Min | Mode::InOrder => (1.0, 1.0),
        // Always non-minimal: twice the hops.
        Mode::Val => (0.0, 2.0),
    }
}

/// The deterministic profile model: per transfer of p packets and f request flits in a mode of
/// bias weight w, latency += p·L(w), request stalls += f·s(w), with L and s interpolated between
/// the profile's two ends.
#[derive(Clone, Debug, Default)]
pub struct DefaultModel {
    pub profile: NetworkProfile,
}

impl NicModel for DefaultModel {
    fn on_transfer(&mut self, t: &NicTransfer) -> NicEffect {
        let (packets, flits) = (packets(t.bytes), request_flits(t.bytes, t.transfer));
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
    use aar_abi::*;
    use aar_engine::model::Transfer;

    use super::*;

    fn put(bytes: u64, mode: u16) -> NicTransfer {
        NicTransfer { transfer: Transfer::Put, bytes, dlvr_mode: mode, src_nic: 1, dst_nic: 2 }
    }

    #[test]
    fn modes_interpolate_between_the_two_ends() {
        let profile =
            NetworkProfile { latency_ad: 1.6, latency_bs: 1.0, stall_ad: 2.0, stall_bs: 40.0, rsp_stall: 0.0 };
        let mut m = DefaultModel { profile };
        let ad = m.on_transfer(&put(64, GNI_DLVMODE_ADAPTIVE0));
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
        let bs = m.on_transfer(&put(64, GNI_DLVMODE_ADAPTIVE3));
        assert_eq!(bs.req_stalled_cycles, 200.0);
        assert!((bs.rsp_latency_us - 1.0).abs() < 1e-12);
        let a1 = m.on_transfer(&put(64, GNI_DLVMODE_ADAPTIVE1));
        assert!((a1.rsp_latency_us - 1.4).abs() < 1e-12);
        assert!((a1.req_stalled_cycles - 5.0 * (2.0 + 38.0 / 3.0)).abs() < 1e-9);
        // Flag bits above the routing byte are ignored.
        assert_eq!(m.on_transfer(&put(64, GNI_DLVMODE_ADAPTIVE3 | GNI_DLVMODE_ORDERED_TAIL)), bs);
        // NMIN_HASH: adaptive-end stalls, doubled latency.
        let nmin = m.on_transfer(&put(64, GNI_DLVMODE_NMIN_HASH));
        assert!((nmin.rsp_latency_us - 3.2).abs() < 1e-12);
        assert_eq!(nmin.req_stalled_cycles, 10.0);
        assert_eq!(m.on_transfer(&put(64, GNI_DLVMODE_MIN_HASH)), bs);
        assert_eq!(m.on_transfer(&put(64, GNI_DLVMODE_IN_ORDER)), bs);
    }

    #[test]
    fn odd_combinations_take_the_strongest_minimal_bias() {
        assert_eq!(mode_behaviour(GNI_DLVMODE_ADAPTIVE1 | GNI_DLVMODE_ADAPTIVE2), (2.0 / 3.0, 1.0));
        assert_eq!(mode_behaviour(GNI_DLVMODE_ADAPTIVE1 | GNI_DLVMODE_NMIN_HASH), (1.0 / 3.0, 1.0));
        assert_eq!(mode_behaviour(GNI_DLVMODE_NO_RADAPT), (1.0, 1.0));
        assert_eq!(mode_behaviour(GNI_DLVMODE_NO_HASH), (0.0, 1.0), "no hashing, still adaptive");
        assert_eq!(mode_behaviour(GNI_DLVMODE_ADAPTIVE2 | GNI_DLVMODE_MIN_HASH), (1.0, 1.0));
    }

    #[test]
    fn profile_parsing_reports_each_bad_item_and_keeps_the_good_ones() {
        let p: NetworkProfile = "latency_ad=1.6, latency_bs=1.0,stall_ad=2,stall_bs=40".parse().unwrap();
        assert_eq!(
            p,
            NetworkProfile { latency_ad: 1.6, latency_bs: 1.0, stall_ad: 2.0, stall_bs: 40.0, rsp_stall: 0.0 }
        );
        let e = "latency_ad=abc,stall_bs=-1,bogus=3,rsp_stall=0.1,junk".parse::<NetworkProfile>().unwrap_err();
        let c: Vec<String> = e.problems.iter().map(ToString::to_string).collect();
        assert_eq!(c.len(), 4, "{c:?}");
        assert_eq!(c[0], "latency_ad=\"abc\" is not a number from 0 to 1e6; using the default latency_ad=1.4");
        assert_eq!(c[1], "stall_bs=\"-1\" is not a number from 0 to 1e6; using the default stall_bs=2");
        assert!(c[2].starts_with("unknown key \"bogus\" (known: latency_ad, latency_bs, stall_ad,"), "{}", c[2]);
        assert_eq!(
            c[3],
            "item \"junk\" is not key=value (keys: latency_ad, latency_bs, stall_ad, stall_bs, rsp_stall); ignored"
        );
        assert_eq!(e.usable, NetworkProfile { rsp_stall: 0.1, ..NetworkProfile::default() });
        for bad in ["inf", "-inf", "NaN", "1000000.5", "18446744073709551615", "1e308"] {
            let e = format!("latency_ad={bad}").parse::<NetworkProfile>().unwrap_err();
            assert_eq!((e.problems.len(), e.usable), (1, NetworkProfile::default()), "{bad}");
        }
        let p: NetworkProfile = "stall_bs=1e6,rsp_stall=0".parse().unwrap();
        assert_eq!(p.stall_bs, 1e6);
        assert_eq!("".parse::<NetworkProfile>().unwrap(), NetworkProfile::default());
        // A key given twice (a typo for another, or an edit that left the old item) is said,
        // as AAR_EMU_SIM says it, and the first stays.
        let e = "latency_ad=1,stall_ad=3,latency_ad=2".parse::<NetworkProfile>().unwrap_err();
        let c: Vec<String> = e.problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            c,
            ["key \"latency_ad\" is given twice (give each key once); the second is ignored: latency_ad=1 stays"]
        );
        assert_eq!(e.usable, NetworkProfile { latency_ad: 1.0, stall_ad: 3.0, ..NetworkProfile::default() });
        let e = "latency_ad=1,latency_ad=x".parse::<NetworkProfile>().unwrap_err();
        assert_eq!((e.problems.len(), e.usable.latency_ad), (1, 1.0), "{e}");
        assert!(e.to_string().contains("the second is ignored: latency_ad=1 stays"), "{e}");
        let e = "latency_ad=x,latency_ad=1".parse::<NetworkProfile>().unwrap_err();
        assert_eq!((e.problems.len(), e.usable.latency_ad), (2, 1.4), "{e}");
        // The first was refused: the default stays, and the message says so, not that 1.4 was given.
        assert!(e.to_string().ends_with("the second is ignored: latency_ad=1.4 stays"), "{e}");
    }
}
