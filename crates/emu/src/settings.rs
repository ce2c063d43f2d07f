//! The emulator's environment variables, each read once, when the first call needs it. A bad
//! value gets one `aar-emu:` line on stderr that names the variable and the value, says what the
//! variable accepts and what is used instead; the program always goes on. The types of the DMAPP
//! job's values ([`PeCount`], [`SheapSize`], [`AttrsLayout`]) live here, below the job that uses
//! them; the timing models' types parse in [`crate::timing`].

use std::ffi::OsString;
use std::fmt;
use std::str::FromStr;

use aar_engine::{ByteSize, LatencyUnit};

use crate::timing::profile::{NetworkProfile, ProfileItemError};
use crate::timing::simulated::SimSetupError;

/// A bad value of one of the emulator's variables, with what is done instead.
#[derive(Debug, thiserror::Error)]
pub enum SettingError {
    #[error("AAR_EMU_NETWORK=\"{spec}\": {problem}")]
    Network { spec: String, problem: ProfileItemError },
    #[error("AAR_EMU_LATENCY_UNIT=\"{0}\" is neither \"us\" nor \"cycles\"; using the default us")]
    LatencyUnit(String),
    #[error("AAR_EMU_SIM=\"{spec}\": {problem}; using the default timing model (AAR_EMU_NETWORK) instead")]
    Sim { spec: String, problem: SimSetupError },
    #[error(
        "AAR_EMU_LOG={}: cannot open ({source}); posts are not logged (give a file that can be \
         created or appended to)",
        path.to_string_lossy()
    )]
    Log { path: OsString, source: std::io::Error },
    #[error("AAR_EMU_DMAPP_PES=\"{value}\": {problem}; using the default {default} PEs", default = PeCount::default().0)]
    DmappPes { value: String, problem: <PeCount as FromStr>::Err },
    #[error("AAR_EMU_DMAPP_SHEAP=\"{value}\": {problem}; using the default {default}", default = SheapSize::default())]
    DmappSheap { value: String, problem: <SheapSize as FromStr>::Err },
    #[error("AAR_EMU_DMAPP_LAYOUT=\"{value}\": {problem}; using the {default} layout of cabi/dmapp.h", default = AttrsLayout::default())]
    DmappLayout { value: String, problem: <AttrsLayout as FromStr>::Err },
}

impl SettingError {
    /// Says it on stderr, once per bad value.
    pub fn report(&self) {
        crate::warn(&self.to_string());
    }
}

/// `AAR_EMU_NETWORK`: the profile model's network; the good items of a value with bad ones.
pub fn network_profile() -> NetworkProfile {
    let Ok(spec) = std::env::var("AAR_EMU_NETWORK") else {
        return NetworkProfile::default();
    };
    spec.parse().unwrap_or_else(|e: crate::timing::profile::NetworkProfileError| {
        for problem in e.problems {
            SettingError::Network { spec: spec.clone(), problem }.report();
        }
        e.usable
    })
}

/// `AAR_EMU_LATENCY_UNIT`: `us` (the default) or `cycles`, as `AAR_LATENCY_UNIT` takes them.
pub fn latency_unit() -> LatencyUnit {
    let Ok(value) = std::env::var("AAR_EMU_LATENCY_UNIT") else {
        return LatencyUnit::Microseconds;
    };
    value.parse().unwrap_or_else(|_| {
        SettingError::LatencyUnit(value.clone()).report();
        LatencyUnit::Microseconds
    })
}

/// `AAR_EMU_SIM`, when set to something: the simulated network's description.
pub fn sim_spec() -> Option<String> {
    std::env::var("AAR_EMU_SIM").ok().filter(|spec| !spec.trim().is_empty())
}

/// `AAR_EMU_LOG`, when set to something: the post log's path.
pub fn log_path() -> Option<OsString> {
    std::env::var_os("AAR_EMU_LOG").filter(|p| !p.is_empty())
}

/// A variable read with its type's `FromStr`: its value, or (with one warning, made by `bad`
/// from the value and the problem) the type's default when unset-or-empty or bad.
fn parsed<T: FromStr + Default>(var: &str, bad: impl FnOnce(String, T::Err) -> SettingError) -> T {
    let Some(value) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) else {
        return T::default();
    };
    value.parse().unwrap_or_else(|problem| {
        bad(value, problem).report();
        T::default()
    })
}

/// `AAR_EMU_DMAPP_PES`: how many PEs `dmapp_init` makes (the process is PE 0).
pub fn dmapp_pes() -> PeCount {
    parsed("AAR_EMU_DMAPP_PES", |value, problem| SettingError::DmappPes { value, problem })
}

/// `AAR_EMU_DMAPP_SHEAP`: the size of each PE's symmetric heap.
pub fn dmapp_sheap() -> SheapSize {
    parsed("AAR_EMU_DMAPP_SHEAP", |value, problem| SettingError::DmappSheap { value, problem })
}

/// `AAR_EMU_DMAPP_LAYOUT`: the layout of `dmapp_rma_attrs_ext_t`.
pub fn dmapp_layout() -> AttrsLayout {
    parsed("AAR_EMU_DMAPP_LAYOUT", |value, problem| SettingError::DmappLayout { value, problem })
}

/// `AAR_EMU_DMAPP_PES`: the job's PEs, 1 to [`PeCount::MAX`] (default 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeCount(pub u32);

impl PeCount {
    pub const MAX: u32 = 4096;
}

impl Default for PeCount {
    fn default() -> Self {
        PeCount(4)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a whole number of PEs from 1 to {max}", max = PeCount::MAX)]
pub struct PeCountError;

impl FromStr for PeCount {
    type Err = PeCountError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().parse() {
            Ok(n) if (1..=Self::MAX).contains(&n) => Ok(PeCount(n)),
            _ => Err(PeCountError),
        }
    }
}

/// `AAR_EMU_DMAPP_SHEAP`: the bytes of each PE's symmetric heap, from [`SheapSize::MIN`] to
/// [`SheapSize::MAX`] (default 16M).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SheapSize(pub u64);

impl SheapSize {
    pub const MIN: u64 = 4 << 10;
    pub const MAX: u64 = 64 << 30;
}

impl Default for SheapSize {
    fn default() -> Self {
        SheapSize(16 << 20)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SheapSizeError {
    /// ByteSize's own message, which names the value.
    #[error("{0}")]
    NotASize(String),
    #[error("{0} bytes is not from 4K to 64G")]
    OutOfRange(u64),
}

impl FromStr for SheapSize {
    type Err = SheapSizeError;

    /// A size in bytes as `aar_engine::ByteSize` reads it (`16M`, `65536`, `1GiB`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let ByteSize(b) = text.parse().map_err(SheapSizeError::NotASize)?;
        if (Self::MIN..=Self::MAX).contains(&b) {
            Ok(SheapSize(b))
        } else {
            Err(SheapSizeError::OutOfRange(b))
        }
    }
}

impl fmt::Display for SheapSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        ByteSize(self.0).fmt(f)
    }
}

/// The layout of the emulator's `dmapp_rma_attrs_ext_t` (`AAR_EMU_DMAPP_LAYOUT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AttrsLayout {
    /// cabi/dmapp.h's: routing at 8 and 9, `queue_flags` at 24.
    #[default]
    Standard,
    /// `queue_flags` at 8–15, routing at 16 and 17: a release whose layout the shim does not know.
    QueueFirst,
}

impl AttrsLayout {
    const NAMES: [(AttrsLayout, &'static str); 2] =
        [(AttrsLayout::Standard, "standard"), (AttrsLayout::QueueFirst, "queue-first")];
}

/// `AAR_EMU_DMAPP_LAYOUT` is neither of the two names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a layout (give \"standard\" or \"queue-first\")")]
pub struct AttrsLayoutError;

impl FromStr for AttrsLayout {
    type Err = AttrsLayoutError;

    /// `standard` or `queue-first`, any case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = text.trim();
        Self::NAMES.into_iter().find(|(_, n)| t.eq_ignore_ascii_case(n)).map(|(l, _)| l).ok_or(AttrsLayoutError)
    }
}

impl fmt::Display for AttrsLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Self::NAMES.into_iter().find(|(l, _)| l == self).map_or("?", |(_, n)| n);
        f.write_str(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_with_their_ranges() {
        assert_eq!("8".parse(), Ok(PeCount(8)));
        assert_eq!(" 4096 ".parse(), Ok(PeCount(4096)));
        for bad in ["0", "4097", "-1", "four", ""] {
            assert_eq!(bad.parse::<PeCount>(), Err(PeCountError), "{bad}");
        }
        assert_eq!("64K".parse(), Ok(SheapSize(64 << 10)));
        assert_eq!("1GiB".parse(), Ok(SheapSize(1 << 30)));
        assert_eq!("100".parse::<SheapSize>(), Err(SheapSizeError::OutOfRange(100)));
        assert_eq!("65G".parse::<SheapSize>(), Err(SheapSizeError::OutOfRange(65 << 30)));
        assert!(matches!("lots".parse::<SheapSize>(), Err(SheapSizeError::NotASize(m)) if m.contains("lots")));
        assert_eq!(SheapSize::default().to_string(), "16M");
    }
}
