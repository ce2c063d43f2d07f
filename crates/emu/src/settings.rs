//! The emulator's environment variables, each read once, when the first call needs it. A bad
//! value gets one `aar-emu:` line on stderr ([`warn`]: in a job, from rank 0 only) that names the
//! variable and the value, says what the variable accepts and what is used instead; the program
//! always goes on. The types of the DMAPP
//! job's values ([`PeCount`], [`SheapSize`], [`AttrsLayout`]) live here, below the job that uses
//! them; the timing models' types parse in [`crate::timing`].

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use aar_engine::{ByteSize, LatencyUnit};

use crate::timing::profile::{NetworkProfile, ProfileItemError};
use crate::timing::simulated::{SimSetting, SimSpecError};

/// A bad value of one of the emulator's variables, with what is done instead.
#[derive(Debug, thiserror::Error)]
pub enum SettingError {
    #[error("AAR_EMU_NETWORK=\"{}\": {problem}", spec.escape_debug())]
    Network { spec: String, problem: ProfileItemError },
    #[error("AAR_EMU_LATENCY_UNIT=\"{}\" is neither \"us\" nor \"cycles\"; using the default us", .0.escape_debug())]
    LatencyUnit(String),
    #[error(
        "AAR_EMU_SIM=\"{}\": {problem}; using the default timing model (AAR_EMU_NETWORK) instead",
        spec.escape_debug()
    )]
    Sim { spec: String, problem: SimSpecError },
    #[error(
        "AAR_EMU_SIM: the network simulator failed to start (an internal error); using the default timing model \
         (AAR_EMU_NETWORK) instead"
    )]
    SimStart,
    #[error(
        "AAR_EMU_LOG={}: cannot open ({source}); posts are not logged (give a file that can be \
         created or appended to)",
        path.to_string_lossy()
    )]
    Log { path: OsString, source: std::io::Error },
    #[error(
        "AAR_EMU_LOG={}: cannot write a line ({source}); lines that cannot be written are left out of the log, \
         and this is said once (give a file on a file system with room)",
        path.to_string_lossy()
    )]
    LogWrite { path: OsString, source: std::io::Error },
    #[error("AAR_EMU_DMAPP_PES=\"{shown}\": {problem}; using the default {default} PEs", shown = value.escape_debug(), default = PeCount::default().0)]
    DmappPes { value: String, problem: <PeCount as FromStr>::Err },
    #[error("AAR_EMU_DMAPP_SHEAP=\"{shown}\": {problem}; using the default {default}", shown = value.escape_debug(), default = SheapSize::default())]
    DmappSheap { value: String, problem: <SheapSize as FromStr>::Err },
    #[error("AAR_EMU_DMAPP_LAYOUT=\"{shown}\": {problem}; using the {default} layout of cabi/dmapp.h", shown = value.escape_debug(), default = AttrsLayout::default())]
    DmappLayout { value: String, problem: <AttrsLayout as FromStr>::Err },
    #[error(
        "AAR_EMU_DMAPP_SET_BUSY=\"{shown}\": {problem}; every dmapp_set_rma_attrs[_ext] call is answered as usual",
        shown = value.escape_debug()
    )]
    DmappSetBusy { value: String, problem: <BusyCount as FromStr>::Err },
    #[error(
        "AAR_EMU_DMAPP_GET_BUSY=\"{shown}\": {problem}; every dmapp_get_rma_attrs[_ext] call is answered as usual",
        shown = value.escape_debug()
    )]
    DmappGetBusy { value: String, problem: <BusyCount as FromStr>::Err },
    #[error("AAR_EMU_JOB_COPY=\"{shown}\": {problem}; using process_vm (with the service thread as fallback)", shown = value.escape_debug())]
    JobCopy { value: String, problem: <CopyPath as FromStr>::Err },
    #[error(
        "{var}{shown} is {problem}, so this process cannot join the job of AAR_EMU_JOB_DIR: it \
         runs alone (in-process mode) and the job's other ranks cannot reach it (start it with \
         `aar run`, which sets AAR_EMU_JOB_DIR, PMI_RANK, PMI_SIZE and PMI_GNI_LOC_ADDR together)",
        shown = value.as_ref().map(|v| format!("=\"{}\"", v.escape_debug())).unwrap_or_default()
    )]
    Job { var: &'static str, value: Option<String>, problem: String },
}

impl SettingError {
    /// Says it on stderr, once per bad value: a bad value by rank 0 only ([`warn`]); a log line
    /// that could not be written by the rank that lost it, which only that rank knows.
    pub fn report(&self) {
        let line = aar_record::quotes::shortened(&self.to_string(), QUOTED_CHARS);
        match self {
            SettingError::LogWrite { .. } => crate::warn(&line),
            _ => warn(&line),
        }
    }
}

/// The characters of a quoted value (`"…"`) that a warning shows: a whole realistic spec, not a flood
/// ([`aar_record::quotes::shortened`], which also escapes every control character, so that a
/// warning is one line whatever the values it quotes).
const QUOTED_CHARS: usize = 200;

/// A warning about the environment, which every rank of a job reads alike: said by rank 0 only,
/// as libaar.so says its warnings (src/diag.rs), not once per rank. A process whose rank is not
/// known (no job, or a job environment that is not valid: [`job_env_quietly`]) says it itself.
pub fn warn(line: &str) {
    if job_env_quietly().and_then(Result::ok).is_none_or(|job| job.rank == 0) {
        crate::warn(line);
    }
}

/// A variable's value as set, even blank; a value that is not UTF-8 has U+FFFD for its bad
/// bytes, so it fails its parse and is said like any bad value instead of passing for unset.
fn raw(var: &str) -> Option<String> {
    std::env::var_os(var).map(|v| v.to_string_lossy().into_owned())
}

/// A variable's value, `None` when unset or blanks (which count as unset): [`raw`].
fn value(var: &str) -> Option<String> {
    raw(var).filter(|v| !v.trim().is_empty())
}

/// `AAR_EMU_NETWORK`: the profile model's network; the good items of a value with bad ones.
pub fn network_profile() -> NetworkProfile {
    let Some(spec) = value("AAR_EMU_NETWORK") else {
        return NetworkProfile::default();
    };
    spec.parse().unwrap_or_else(|e: crate::timing::profile::NetworkProfileError| {
        for problem in e.problems {
            SettingError::Network { spec: spec.clone(), problem }.report();
        }
        e.usable
    })
}

/// `AAR_EMU_LATENCY_UNIT`: `us` (the default, also when unset or blank) or `cycles`, as
/// `AAR_LATENCY_UNIT` takes them.
pub fn latency_unit() -> LatencyUnit {
    let Some(value) = value("AAR_EMU_LATENCY_UNIT") else {
        return LatencyUnit::Microseconds;
    };
    value.parse().unwrap_or_else(|_| {
        SettingError::LatencyUnit(value.clone()).report();
        LatencyUnit::Microseconds
    })
}

/// `AAR_EMU_SIM`: the simulator off (unset, blank, a false boolean or a bad value) or on, with
/// the simulated network ([`SimSetting`] reads the value).
pub fn sim() -> SimSetting {
    parsed("AAR_EMU_SIM", |spec, problem| SettingError::Sim { spec, problem })
}

/// `AAR_EMU_LOG`, when set to something other than blanks: the post log's path.
pub fn log_path() -> Option<OsString> {
    std::env::var_os("AAR_EMU_LOG").filter(|p| !p.to_string_lossy().trim().is_empty())
}

/// A variable read with its type's `FromStr`: its value, or (with one warning, made by `bad`
/// from the value and the problem) the type's default when unset-or-empty or bad.
fn parsed<T: FromStr + Default>(var: &str, bad: impl FnOnce(String, T::Err) -> SettingError) -> T {
    let Some(value) = value(var) else {
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

/// `AAR_EMU_DMAPP_SET_BUSY`: how many `dmapp_set_rma_attrs[_ext]` calls, the first of the
/// process, DMAPP answers `DMAPP_RC_BUSY` (changing nothing).
pub fn dmapp_set_busy() -> BusyCount {
    parsed("AAR_EMU_DMAPP_SET_BUSY", |value, problem| SettingError::DmappSetBusy { value, problem })
}

/// `AAR_EMU_DMAPP_GET_BUSY`: the same for `dmapp_get_rma_attrs[_ext]` calls (which then read
/// nothing).
pub fn dmapp_get_busy() -> BusyCount {
    parsed("AAR_EMU_DMAPP_GET_BUSY", |value, problem| SettingError::DmappGetBusy { value, problem })
}

/// The job this process is a rank of, from the environment `aar run` gives each rank:
/// `AAR_EMU_JOB_DIR` (the folder of the job's shared files), `PMI_RANK`, `PMI_SIZE`,
/// `PMI_GNI_LOC_ADDR` (this rank's NIC address) and `PMI_GNI_COOKIE` (optional, 0 without it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEnv {
    pub dir: PathBuf,
    pub rank: u32,
    pub size: u32,
    pub nic_addr: u32,
    pub cookie: u32,
}

/// `AAR_EMU_JOB_DIR` and the PMI variables: None without `AAR_EMU_JOB_DIR` (the in-process
/// mode), or, with one warning, when another of them is missing or bad.
pub fn job_env() -> Option<JobEnv> {
    job_env_quietly()?.map_err(|e| e.report()).ok()
}

/// The job environment as [`job_env`] reads it, without saying what is wrong with it: `None`
/// outside a job.
pub fn job_env_quietly() -> Option<Result<JobEnv, SettingError>> {
    let dir = PathBuf::from(std::env::var_os("AAR_EMU_JOB_DIR").filter(|d| !d.to_string_lossy().trim().is_empty())?);
    let number = |var: &'static str| -> Result<u32, SettingError> {
        let value = raw(var).ok_or_else(|| SettingError::Job { var, value: None, problem: "not set".into() })?;
        value.parse::<CrayNumber>().map(|n| n.0).map_err(|e| SettingError::Job {
            var,
            value: Some(value.clone()),
            problem: e.to_string(),
        })
    };
    let env = (|| {
        if !dir.is_dir() {
            return Err(SettingError::Job {
                var: "AAR_EMU_JOB_DIR",
                value: Some(dir.display().to_string()),
                problem: "not a folder".into(),
            });
        }
        let (rank, size) = (number("PMI_RANK")?, number("PMI_SIZE")?);
        if !(1..=MAX_RANKS).contains(&size) {
            return Err(SettingError::Job {
                var: "PMI_SIZE",
                value: Some(size.to_string()),
                problem: format!("not a number of ranks from 1 to {MAX_RANKS}"),
            });
        }
        if rank >= size {
            return Err(SettingError::Job {
                var: "PMI_RANK",
                value: Some(rank.to_string()),
                problem: format!("not below PMI_SIZE={size}"),
            });
        }
        let nic_addr = number("PMI_GNI_LOC_ADDR")?;
        let cookie = if std::env::var_os("PMI_GNI_COOKIE").is_some() { number("PMI_GNI_COOKIE")? } else { 0 };
        Ok(JobEnv { dir: dir.clone(), rank, size, nic_addr, cookie })
    })();
    Some(env)
}

/// `AAR_EMU_JOB_COPY`: how bytes move between a job's ranks.
pub fn job_copy() -> CopyPath {
    parsed("AAR_EMU_JOB_COPY", |value, problem| SettingError::JobCopy { value, problem })
}

/// How bytes move between a job's ranks (`AAR_EMU_JOB_COPY`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CopyPath {
    /// `process_vm_readv`/`process_vm_writev` into the other rank; where the kernel refuses,
    /// the other rank's service thread.
    #[default]
    ProcessVm,
    /// Always the other rank's service thread, which copies through a bounce buffer in its file.
    Service,
}

/// `AAR_EMU_JOB_COPY` is neither of the two names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a copy path (give \"process_vm\" or \"service\")")]
pub struct CopyPathError;

impl FromStr for CopyPath {
    type Err = CopyPathError;

    /// `process_vm` (also `process-vm`) or `service`, any case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "process_vm" => Ok(CopyPath::ProcessVm),
            "service" => Ok(CopyPath::Service),
            _ => Err(CopyPathError),
        }
    }
}

/// Most ranks a job may have: the rank is 24 bits of a memory handle.
pub const MAX_RANKS: u32 = 1 << 24;

/// A 32-bit number as Cray's job environment writes them: decimal, or hexadecimal after `0x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrayNumber(pub u32);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a 32-bit number (decimal, or hexadecimal after 0x)")]
pub struct CrayNumberError;

impl FromStr for CrayNumber {
    type Err = CrayNumberError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = text.trim();
        let n = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(hex) => u32::from_str_radix(hex, 16),
            None => t.parse(),
        };
        n.map(CrayNumber).map_err(|_| CrayNumberError)
    }
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

/// `AAR_EMU_DMAPP_SET_BUSY` and `AAR_EMU_DMAPP_GET_BUSY`: the number of calls answered busy, 0 (the default) to
/// [`u32::MAX`], or `always`, after the first `after` calls (`N after M`), which are answered as
/// usual: a set that fails only once another went through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusyCount {
    pub count: u32,
    pub after: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "not a number of calls (give a whole number from 0 to {max}, or \"always\", optionally followed by \"after M\", M calls answered as usual first)",
    max = u32::MAX
)]
pub struct BusyCountError;

impl FromStr for BusyCount {
    type Err = BusyCountError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut words = text.split_whitespace();
        let count = match words.next().ok_or(BusyCountError)? {
            w if w.eq_ignore_ascii_case("always") => u32::MAX,
            w => w.parse().map_err(|_| BusyCountError)?,
        };
        let after = match (words.next(), words.next(), words.next()) {
            (None, ..) => 0,
            (Some(w), Some(m), None) if w.eq_ignore_ascii_case("after") => m.parse().map_err(|_| BusyCountError)?,
            _ => return Err(BusyCountError),
        };
        Ok(BusyCount { count, after })
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

    /// `standard` or `queue-first` (also `queue_first`, as `AAR_EMU_JOB_COPY` and `AAR_EMU_SIM`
    /// take `_` for `-`), any case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = text.trim().replace('_', "-");
        Self::NAMES.into_iter().find(|(_, n)| t.eq_ignore_ascii_case(n)).map(|(l, _)| l).ok_or(AttrsLayoutError)
    }
}

impl fmt::Display for AttrsLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Self::NAMES.into_iter().find(|(l, _)| l == self).map_or("?", |(_, n)| n);
        f.write_str(name)
    }
}

/// The file size limit (`ulimit -f`, RLIMIT_FSIZE) in bytes; None when there is none.
pub fn file_size_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills a valid rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim) } != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(lim.rlim_cur)
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
        assert_eq!("257".parse(), Ok(CrayNumber(257)));
        assert_eq!("0x101".parse(), Ok(CrayNumber(257)));
        assert_eq!(" 0XfF ".parse(), Ok(CrayNumber(255)));
        for bad in ["", "-1", "0x", "4294967296", "ten"] {
            assert_eq!(bad.parse::<CrayNumber>(), Err(CrayNumberError), "{bad}");
        }
        assert_eq!("process-vm".parse(), Ok(CopyPath::ProcessVm));
        assert_eq!(" Service ".parse(), Ok(CopyPath::Service));
        assert_eq!("ptrace".parse::<CopyPath>(), Err(CopyPathError));
        assert_eq!(" Queue_First ".parse(), Ok(AttrsLayout::QueueFirst));
        assert_eq!("queue-first".parse(), Ok(AttrsLayout::QueueFirst));
        assert_eq!("queue first".parse::<AttrsLayout>(), Err(AttrsLayoutError));
        assert_eq!(" 3 ".parse(), Ok(BusyCount { count: 3, after: 0 }));
        assert_eq!("Always".parse(), Ok(BusyCount { count: u32::MAX, after: 0 }));
        assert_eq!(" 1  AFTER 2 ".parse(), Ok(BusyCount { count: 1, after: 2 }));
        assert_eq!("always after 0".parse(), Ok(BusyCount { count: u32::MAX, after: 0 }));
        for bad in ["", "-1", "4294967296", "some", "1.5", "1 after", "1 before 2", "1 after 2 3", "after 2"] {
            assert_eq!(bad.parse::<BusyCount>(), Err(BusyCountError), "{bad}");
        }
    }
}
