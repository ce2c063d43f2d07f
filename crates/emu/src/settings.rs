//! The emulator's environment variables, each read once, when the first call needs it. A bad
//! value gets one `aar-emu:` line on stderr that names the variable and the value, says what the
//! variable accepts and what is used instead; the program always goes on.

use std::ffi::OsString;
use std::str::FromStr;

use aar_engine::LatencyUnit;

use crate::dmapp::attrs::AttrsLayout;
use crate::dmapp::job::{PeCount, SheapSize};
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

/// `AAR_EMU_LATENCY_UNIT`: `us` (the default) or `cycles`, any case.
pub fn latency_unit() -> LatencyUnit {
    let Ok(value) = std::env::var("AAR_EMU_LATENCY_UNIT") else {
        return LatencyUnit::Microseconds;
    };
    let v = value.trim();
    [LatencyUnit::Microseconds, LatencyUnit::Cycles]
        .into_iter()
        .find(|u| v.eq_ignore_ascii_case(u.name()))
        .unwrap_or_else(|| {
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
