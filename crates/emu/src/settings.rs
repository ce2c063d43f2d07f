//! The emulator's environment variables, each read once, when the first call needs it. A bad
//! value gets one `aar-emu:` line on stderr that names the variable and the value, says what the
//! variable accepts and what is used instead; the program always goes on.

use std::ffi::OsString;

use aar_engine::LatencyUnit;

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
