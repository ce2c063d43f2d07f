//! The `AAR_*` variables: parsed once, from a lookup the caller provides (initialisation passes
//! the environment), so parsing is pure and testable. Each format has one parser, the `FromStr`
//! of the type that owns it: the engine's [`Policy`], [`RoutingMode`], [`LatencyUnit`],
//! [`ByteSize`], [`AbOrder`] and [`PolicyList`], aar_abi's [`RoutingTable`], and here [`Boundary`],
//! [`RankSet`], [`TestPanic`], [`Switch`], [`EventList`] and [`ReadingAge`]. A bad value never stops anything: it
//! yields a [`Warning`] that names the variable, the value, what is used instead and how to fix it.
//! Settings given that no policy of the run reads (λ under a fixed mode) yield one note, a
//! [`Warning`] too, that names them and says how to make them count.

use crate::sys::{env_value, EnvValue};
use aar_abi::counters::{EVENTS, REQUIRED_EVENTS};
use aar_abi::dmapp::RoutingTable;
use aar_engine::{AbOrder, AbSchedule, ByteSize, EngineConfig, LatencyUnit, Policy, PolicyList, RoutingMode, Switch};
use aar_record::quotes::shown;
pub use aar_record::ranks::RankSet;
use core::fmt;
use core::str::FromStr;
use serde::{Serialize, Serializer};
use std::path::Path;
use tracing::level_filters::LevelFilter;

/// Every variable the library reads, with its default as documented in the README.
pub const VARIABLES: [(&str, &str); 26] = [
    ("AAR_DISABLE", "0"),
    ("AAR_MODE", "auto"),
    ("AAR_THRESHOLD", "4096"),
    ("AAR_LAMBDA", "1.2"),
    ("AAR_SIGMA", "5"),
    ("AAR_FRESHNESS", "5"),
    ("AAR_WINDOW", "8"),
    ("AAR_LOW_LATENCY_MODE", "ADAPTIVE3"),
    ("AAR_LOW_STALL_MODE", "ADAPTIVE0"),
    ("AAR_LATENCY_UNIT", "us"),
    ("AAR_PAPI_EVENTS", "the five Aries events"),
    ("AAR_PAPI_LIBRARY", "libpapi.so"),
    ("AAR_TRACE", "unset"),
    ("AAR_TRACE_MAX", "1G"),
    ("AAR_OUTPUT_DIR", "unset"),
    ("AAR_LOG", "unset"),
    ("AAR_ALLTOALL", "1"),
    ("AAR_SUMMARY", "1"),
    ("AAR_TEST_PANIC", "unset"),
    ("AAR_AB", "unset"),
    ("AAR_AB_ORDER", "round-robin"),
    ("AAR_AB_BOUNDARY", "markers"),
    ("AAR_OUTPUT_RANKS", "every rank"),
    ("AAR_DMAPP_ROUTING", "the table of the dmapp.h aar was built with, else the assumed one"),
    ("AAR_NODE_READING", "5us"),
    ("AAR_TOPOLOGY", "unset"),
];

/// `AAR_*` names that are not libaar.so settings but belong to the rest of aar (the emulator,
/// the simulator, `aar report`, the modulefiles, the build's `AAR_DMAPP_H`, the benchmarks'
/// `AAR_BENCH_DIR`): never reported as unknown.
const OTHER_AAR_PREFIXES: [&str; 8] = [
    "AAR_EMU_",
    "AAR_SIM_",
    "AAR_REPORT_",
    "AAR_PRELOAD",
    "AAR_ROOT",
    "AAR_OUTPUT_DIR_BY_MODULE",
    "AAR_DMAPP_H",
    "AAR_BENCH_DIR",
];

/// The `AAR_*` names among `names` (the environment's) that neither libaar.so nor the rest of aar
/// reads: a typo, or a variable of another version. Sorted, each once (an environment may hold a
/// name twice: `execve` takes any list).
pub fn unknown_variables(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut unknown: Vec<String> = names
        .into_iter()
        .filter(|k| k.starts_with("AAR_"))
        .filter(|k| !VARIABLES.iter().any(|(v, _)| v == k))
        .filter(|k| !OTHER_AAR_PREFIXES.iter().any(|p| k.starts_with(p)))
        .collect();
    unknown.sort();
    unknown.dedup();
    unknown
}

/// The variable libaar.so reads that `name` most likely misspells: the nearest by letters changed,
/// added, removed or swapped with a neighbour, if at most two; the first of the nearest in
/// [`VARIABLES`].
pub fn misspelt(name: &str) -> Option<&'static str> {
    VARIABLES
        .iter()
        .map(|(v, _)| (edits(name.as_bytes(), v.as_bytes()), *v))
        .filter(|&(d, _)| d <= 2)
        .min_by_key(|&(d, _)| d)
        .map(|(_, v)| v)
}

/// Edits between `a` and `b`: letters changed, added, removed, or two neighbours swapped (the
/// optimal string alignment distance).
fn edits(a: &[u8], b: &[u8]) -> usize {
    let mut rows = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    rows[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let change = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + change);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// The warning for an `AAR_*` variable libaar.so does not read ([`unknown_variables`]).
pub fn unknown_variable_warning(name: &str) -> String {
    let guess =
        misspelt(name).map_or("a typo? a variable of another version?".to_string(), |v| format!("did you mean {v}?"));
    format!(
        "{name} is set but libaar.so does not read it ({guess}): it has no effect. Correct its name or unset it; \
         the variables libaar.so reads are in the Settings table of the README (aar doctor shows their effect)."
    )
}

/// Everything the `AAR_*` variables configure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    /// Kill switch: forward every call untouched, read nothing, write nothing.
    pub disabled: bool,
    /// The engine's parameters.
    pub engine: EngineConfig,
    /// 4 or 5 PAPI event names, in the order of `aar_abi::counters::EVENTS`.
    pub papi_events: Vec<String>,
    /// Where to load PAPI from; `None`: the usual sonames through the loader's search path.
    pub papi_library: Option<String>,
    /// JSON Lines decision trace path pattern (`%r` rank, `%p` pid).
    pub trace: Option<String>,
    /// Bytes a process's trace may take; it stops at the line that would pass them.
    pub trace_max: u64,
    /// Folder for the per-rank record written at exit.
    pub output_dir: Option<String>,
    /// Diagnostics on stderr through `tracing`, up to this level; `None`: silent.
    #[serde(serialize_with = "as_text")]
    pub log: Option<LevelFilter>,
    /// Intercept MPI_Alltoall to use the alltoall mode inside it.
    pub alltoall_hook: bool,
    /// The one-line summary on stderr from rank 0 at exit.
    pub summary: bool,
    /// Testing the library's own fail-open path: panic inside the decision path, before or after
    /// the real call (`AAR_TEST_PANIC=before-forward|after-forward`).
    pub test_panic: Option<TestPanic>,
    /// A/B experiment: the policies alternated on successive iterations (`AAR_AB`); `None`: one
    /// policy for the whole run. When set, `engine.policy` is iteration 0's policy.
    pub ab: Option<PolicyList>,
    /// Which policy each iteration gets (`AAR_AB_ORDER`).
    pub ab_order: AbOrder,
    /// What marks iterations (`AAR_AB_BOUNDARY`), with or without an A/B experiment.
    pub ab_boundary: Boundary,
    /// Ranks that write records (`AAR_OUTPUT_RANKS`); `None`: every rank.
    pub output_ranks: Option<RankSet>,
    /// The values of DMAPP's routing enumerators (`AAR_DMAPP_ROUTING`); `None`: see
    /// [`Settings::dmapp_table`].
    #[serde(serialize_with = "as_text")]
    pub dmapp_routing: Option<RoutingTable>,
    /// The ranks of a node share a counter reading younger than this (`AAR_NODE_READING`);
    /// 0: every rank reads its own (they still share their decided bytes).
    #[serde(serialize_with = "as_display")]
    pub node_reading: ReadingAge,
    /// The node-to-group table (`AAR_TOPOLOGY`): a file of NIC address, group and router, or
    /// `xtprocadmin` output.
    pub topology: Option<String>,
}

/// Where the DMAPP routing table in use comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableSource {
    /// `AAR_DMAPP_ROUTING`.
    Variable,
    /// The site's `dmapp.h` the build read (its path).
    Header(&'static str),
    /// [`RoutingTable::ASSUMED`]: no source gave one (`AAR_DMAPP_ROUTING` unset, empty or blank,
    /// which counts as unset as for every `AAR_*` variable, or refused with a warning).
    Assumed,
}

impl fmt::Display for TableSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Variable => f.write_str("AAR_DMAPP_ROUTING"),
            Self::Header(path) => write!(f, "{path} (read when libaar.so was built)"),
            Self::Assumed => f.write_str(
                "assumed (no site dmapp.h was found when libaar.so was built, and AAR_DMAPP_ROUTING gave no table: \
                 it is unset or empty, or its value was refused with a warning)",
            ),
        }
    }
}

impl Serialize for TableSource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The table build.rs read from the site's `dmapp.h`, and the header's path.
fn built_table() -> Option<(RoutingTable, &'static str)> {
    let table = option_env!("AAR_DMAPP_TABLE")?.parse().ok()?;
    Some((table, option_env!("AAR_DMAPP_HEADER").unwrap_or("dmapp.h")))
}

/// A value shown as the text users write, `null` when unset.
fn as_text<T: fmt::Display, S: Serializer>(value: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

impl Settings {
    /// The A/B schedule, when `AAR_AB` is set.
    pub fn ab_schedule(&self) -> Option<AbSchedule> {
        self.ab.as_ref().map(|l| AbSchedule::new(l.0.clone(), self.ab_order))
    }

    /// The DMAPP routing table in use and where it comes from: `AAR_DMAPP_ROUTING`, else the
    /// site's `dmapp.h` read at build time, else the assumed one.
    pub fn dmapp_table(&self) -> (RoutingTable, TableSource) {
        match (self.dmapp_routing, built_table()) {
            (Some(t), _) => (t, TableSource::Variable),
            (None, Some((t, path))) => (t, TableSource::Header(path)),
            (None, None) => (RoutingTable::ASSUMED, TableSource::Assumed),
        }
    }

    /// Relative paths of files written after start-up (the record folder, the trace pattern)
    /// made relative to `start`, the folder the process is in at start-up (the first intercepted
    /// call, [`crate::init`]): an application may move into
    /// another before it writes its first iteration row or exits, or forks a child that traces.
    /// (A start-up folder whose name is not UTF-8 leaves them as they are.)
    pub fn anchor_paths(&mut self, start: &Path) {
        for path in [&mut self.output_dir, &mut self.trace].into_iter().flatten() {
            if Path::new(path.as_str()).is_relative() {
                if let Some(anchored) = start.join(path.as_str()).to_str() {
                    *path = anchored.to_string();
                }
            }
        }
    }

    /// Whether the process of this rank writes records: `AAR_OUTPUT_DIR` is set and
    /// `AAR_OUTPUT_RANKS`, if set, names the rank (a process without a rank counts as rank 0,
    /// as for messages).
    pub fn writes_records(&self, rank: Option<u32>) -> bool {
        self.output_dir.is_some() && self.output_ranks.as_ref().is_none_or(|ranks| ranks.contains(rank.unwrap_or(0)))
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            disabled: false,
            engine: EngineConfig::default(),
            papi_events: EVENTS.iter().map(|e| e.to_string_lossy().into_owned()).collect(),
            papi_library: None,
            trace: None,
            trace_max: 1 << 30,
            output_dir: None,
            log: None,
            alltoall_hook: true,
            summary: true,
            test_panic: None,
            ab: None,
            ab_order: AbOrder::RoundRobin,
            ab_boundary: Boundary::Markers,
            output_ranks: None,
            dmapp_routing: None,
            node_reading: ReadingAge::DEFAULT,
            topology: None,
        }
    }
}

/// How old a counter reading of another rank of the node may be to be used (`AAR_NODE_READING`):
/// nanoseconds, written as a whole number with an optional unit `ns`, `us` or `ms`, in any case (no
/// unit: nanoseconds). 5 µs by default: a 64 KiB PUT takes about that long on an Aries link, so a
/// reading that young moves a window's end by less than one large message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadingAge(pub u64);

impl ReadingAge {
    pub const DEFAULT: Self = Self(5_000);
    /// The largest bound taken: a second.
    const MAX_NS: u64 = 1_000_000_000;
}

impl FromStr for ReadingAge {
    type Err = String;
    fn from_str(v: &str) -> Result<Self, String> {
        let v = v.trim().to_ascii_lowercase();
        // A leading `+`, as every whole-number setting takes it.
        let v = v.strip_prefix('+').unwrap_or(&v);
        let (digits, scale) = [("ns", 1), ("us", 1_000), ("ms", 1_000_000)]
            .into_iter()
            .find_map(|(unit, scale)| v.strip_suffix(unit).map(|d| (d.trim_end(), scale)))
            .unwrap_or((v, 1));
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err("expected a whole number with an optional unit ns, us or ms".into());
        }
        // Only ASCII digits: the one way `parse` fails is a number beyond 64 bits, more than 1 s.
        let n: u64 = digits.parse().map_err(|_| "more than 1 s")?;
        match n.checked_mul(scale) {
            Some(ns) if ns <= Self::MAX_NS => Ok(Self(ns)),
            _ => Err("more than 1 s".into()),
        }
    }
}

impl fmt::Display for ReadingAge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("0"),
            ns if ns % 1_000_000 == 0 => write!(f, "{}ms", ns / 1_000_000),
            ns if ns % 1_000 == 0 => write!(f, "{}us", ns / 1_000),
            ns => write!(f, "{ns}ns"),
        }
    }
}

fn as_display<T: fmt::Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// The PAPI events of `AAR_PAPI_EVENTS`: the required ones and optionally the last of
/// `aar_abi::counters::EVENTS`, comma-separated, no blanks inside a name, each name once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventList(pub Vec<String>);

impl FromStr for EventList {
    type Err = String;
    fn from_str(v: &str) -> Result<Self, String> {
        let names: Vec<String> = v.split(',').map(|s| s.trim().to_string()).collect();
        if !(REQUIRED_EVENTS..=EVENTS.len()).contains(&names.len()) {
            return Err(format!("{} names", names.len()));
        }
        if names.iter().any(|n| n.is_empty() || n.len() > 1024 || n.contains(char::is_whitespace)) {
            return Err("a name is empty, too long or has a blank inside".into());
        }
        // PAPI refuses an event already in the set (PAPI_ECNFLCT), which would read as that
        // event being unavailable; and one counter cannot stand for two quantities.
        // Said by position too: a long name is cut in the warning.
        let twice = names.iter().enumerate().find_map(|(i, n)| Some((names[..i].iter().position(|m| m == n)?, i)));
        if let Some((first, again)) = twice {
            return Err(format!(
                "entries {} and {} are the same event, {}",
                first + 1,
                again + 1,
                shown(&names[again])
            ));
        }
        Ok(Self(names))
    }
}

/// Where `AAR_TEST_PANIC` makes the decision path panic: `before-forward` or `after-forward`, in
/// any case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestPanic {
    /// Panic after deciding, before the real function is called.
    BeforeForward,
    /// Panic after the real function returned.
    AfterForward,
}

impl FromStr for TestPanic {
    type Err = String;
    fn from_str(v: &str) -> Result<Self, String> {
        match v.trim().to_ascii_lowercase().as_str() {
            "before-forward" => Ok(Self::BeforeForward),
            "after-forward" => Ok(Self::AfterForward),
            _ => Err("expected before-forward or after-forward".into()),
        }
    }
}

impl Serialize for Boundary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The MPI functions that can mark iterations in an unmodified program (`AAR_AB_BOUNDARY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MpiFunction {
    /// `MPI_Barrier`.
    Barrier,
    /// `MPI_Allreduce`.
    Allreduce,
    /// `MPI_Reduce`.
    Reduce,
    /// `MPI_Bcast`.
    Bcast,
    /// `MPI_Allgather`.
    Allgather,
    /// `MPI_Allgatherv`.
    Allgatherv,
    /// `MPI_Alltoall`.
    Alltoall,
    /// `MPI_Alltoallv`.
    Alltoallv,
    /// `MPI_Gather`.
    Gather,
    /// `MPI_Scatter`.
    Scatter,
    /// `MPI_Gatherv`.
    Gatherv,
    /// `MPI_Scatterv`.
    Scatterv,
    /// `MPI_Alltoallw`.
    Alltoallw,
    /// `MPI_Reduce_scatter`.
    ReduceScatter,
    /// `MPI_Reduce_scatter_block`.
    ReduceScatterBlock,
    /// `MPI_Scan`.
    Scan,
    /// `MPI_Exscan`.
    Exscan,
    /// `MPI_Neighbor_allgather`.
    NeighborAllgather,
    /// `MPI_Neighbor_allgatherv`.
    NeighborAllgatherv,
    /// `MPI_Neighbor_alltoall`.
    NeighborAlltoall,
    /// `MPI_Neighbor_alltoallv`.
    NeighborAlltoallv,
    /// `MPI_Neighbor_alltoallw`.
    NeighborAlltoallw,
}

impl MpiFunction {
    /// Every function that can mark iterations.
    pub const ALL: [MpiFunction; 22] = [
        Self::Barrier,
        Self::Allreduce,
        Self::Reduce,
        Self::Bcast,
        Self::Allgather,
        Self::Allgatherv,
        Self::Alltoall,
        Self::Alltoallv,
        Self::Gather,
        Self::Scatter,
        Self::Gatherv,
        Self::Scatterv,
        Self::Alltoallw,
        Self::ReduceScatter,
        Self::ReduceScatterBlock,
        Self::Scan,
        Self::Exscan,
        Self::NeighborAllgather,
        Self::NeighborAllgatherv,
        Self::NeighborAlltoall,
        Self::NeighborAlltoallv,
        Self::NeighborAlltoallw,
    ];

    /// Whether its calls move the caller's data. `steady` routes and times only these as whole
    /// calls: a barrier's messages carry no payload, so its tries of three routings would time
    /// the same few header packets three ways and differ only by the noise of the moment, and
    /// each try would send a call on a routing chosen for bandwidth it does not use.
    pub const fn carries_payload(self) -> bool {
        !matches!(self, Self::Barrier)
    }

    /// The MPI standard's name, e.g. `MPI_Barrier`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Barrier => "MPI_Barrier",
            Self::Allreduce => "MPI_Allreduce",
            Self::Reduce => "MPI_Reduce",
            Self::Bcast => "MPI_Bcast",
            Self::Allgather => "MPI_Allgather",
            Self::Allgatherv => "MPI_Allgatherv",
            Self::Alltoall => "MPI_Alltoall",
            Self::Alltoallv => "MPI_Alltoallv",
            Self::Gather => "MPI_Gather",
            Self::Scatter => "MPI_Scatter",
            Self::Gatherv => "MPI_Gatherv",
            Self::Scatterv => "MPI_Scatterv",
            Self::Alltoallw => "MPI_Alltoallw",
            Self::ReduceScatter => "MPI_Reduce_scatter",
            Self::ReduceScatterBlock => "MPI_Reduce_scatter_block",
            Self::Scan => "MPI_Scan",
            Self::Exscan => "MPI_Exscan",
            Self::NeighborAllgather => "MPI_Neighbor_allgather",
            Self::NeighborAllgatherv => "MPI_Neighbor_allgatherv",
            Self::NeighborAlltoall => "MPI_Neighbor_alltoall",
            Self::NeighborAlltoallv => "MPI_Neighbor_alltoallv",
            Self::NeighborAlltoallw => "MPI_Neighbor_alltoallw",
        }
    }
}

/// What marks iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    /// The application's own calls (`aar_iteration_begin` / `aar_iteration_end`).
    Markers,
    /// Every `every`-th call of an MPI function, starting with the first: call 0 begins
    /// iteration 0, call `every` ends it and begins iteration 1, and so on.
    Mpi {
        /// The collective whose calls are counted.
        function: MpiFunction,
        /// Calls per iteration, at least 1.
        every: u32,
    },
}

/// Largest N of `MPI_<Fn>:N`.
pub const MAX_BOUNDARY_EVERY: u32 = 1_000_000_000;

impl FromStr for Boundary {
    type Err = String;
    /// `markers`, or `MPI_<Fn>[:N]` (any case) with N from 1 (the default) to [`MAX_BOUNDARY_EVERY`].
    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("markers") {
            return Ok(Self::Markers);
        }
        let (name, every) = match t.split_once(':') {
            Some((n, e)) => (n.trim(), Some(e.trim())),
            None => (t, None),
        };
        let named = |n: &str| MpiFunction::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(n));
        let function = named(name).ok_or_else(|| {
            // A large-count form is counted with its function: the boundary names the function.
            match name.get(..name.len().saturating_sub(2)).filter(|_| name.to_ascii_lowercase().ends_with("_c")) {
                Some(base) if named(base).is_some_and(MpiFunction::carries_payload) => format!(
                    "names a large-count form: name its function, {} (its calls of either form are counted)",
                    named(base).map_or("", MpiFunction::name)
                ),
                _ => "is not markers or one of the MPI functions that can mark iterations".to_string(),
            }
        })?;
        let every = match every {
            None => 1,
            Some(e) => e.parse::<u32>().ok().filter(|n| (1..=MAX_BOUNDARY_EVERY).contains(n)).ok_or_else(|| {
                format!(
                    "has a call count \"{}\" that is not a whole number from 1 to {MAX_BOUNDARY_EVERY}",
                    e.escape_debug()
                )
            })?,
        };
        Ok(Self::Mpi { function, every })
    }
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Markers => f.write_str("markers"),
            Self::Mpi { function, every } => write!(f, "{}:{every}", function.name()),
        }
    }
}

/// A bad value, and what was done instead; or the note of settings that no policy of the run reads
/// (its message says [`NO_EFFECT`]; `variable` and `value` are the first it names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The variable.
    pub variable: &'static str,
    /// Its value, as given.
    pub value: String,
    /// The whole message: variable, value, what is used instead and how to fix it.
    pub message: String,
    /// The note's settings, taken and without effect (empty for a bad value, which is not taken).
    pub no_effect: Vec<&'static str>,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Whether a warning carries the parser's own words on what is wrong (lists and compound
/// values, where they point at the bad part) or only the variable's problem.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Detail {
    Shown,
    Hidden,
}

/// A value as the settings take it: empty or blank is as if unset.
fn given(value: String) -> Option<String> {
    Some(value).filter(|v| !v.trim().is_empty())
}

/// The value of `name` as the settings will take it, read before they exist (the boundary an MPI
/// call checks before start-up): unset, empty, blank or not UTF-8 is none.
pub fn peek(name: &str) -> Option<String> {
    env_value(name)?.ok().and_then(given)
}

struct Parser<'a> {
    lookup: &'a dyn Fn(&str) -> Option<EnvValue>,
    warnings: Vec<Warning>,
}

impl Parser<'_> {
    /// The variable's value; unset and empty-or-blank both mean "use the default". A value that
    /// is not UTF-8 means it too, with one warning: read with U+FFFD in place of its bytes, a path
    /// would name another file, and a number or a name could not be right.
    fn get(&mut self, name: &'static str) -> Option<String> {
        match (self.lookup)(name)? {
            Ok(v) => given(v),
            Err(shown_value) => {
                if !self.warnings.iter().any(|w| w.variable == name) {
                    let message = format!(
                        "{name}={} is not valid UTF-8 (U+FFFD stands for the bytes that are not); it is ignored, \
                         as if unset. Give it in UTF-8 (for a path: a name in UTF-8, e.g. a symbolic link to it).",
                        shown(&shown_value)
                    );
                    self.warnings.push(Warning { variable: name, value: shown_value, message, no_effect: Vec::new() });
                }
                None
            }
        }
    }

    fn warn(&mut self, variable: &'static str, value: String, problem: &str, default: &str, fix: &str) {
        let message = format!("{variable}={} {problem}; using the default {default}. {fix}", shown(&value));
        self.warnings.push(Warning { variable, value, message, no_effect: Vec::new() });
    }

    /// The value of `name` through its type's parser, kept only if `valid`; `None` when unset or
    /// bad (the caller's default applies), with one warning when bad.
    fn value<T: FromStr<Err: fmt::Display>>(
        &mut self,
        name: &'static str,
        (show_default, problem, fix): (&str, &str, &str),
        detail: Detail,
        valid: impl Fn(&T) -> bool,
    ) -> Option<T> {
        let v = self.get(name)?;
        match v.trim().parse::<T>() {
            Ok(x) if valid(&x) => Some(x),
            Err(e) if detail == Detail::Shown => {
                let detail = aar_record::quotes::shortened(&e.to_string(), QUOTED_CHARS);
                self.warn(name, v, &format!("{problem} ({detail})"), show_default, fix);
                None
            }
            _ => {
                self.warn(name, v, problem, show_default, fix);
                None
            }
        }
    }

    /// The two sides' modes, from `AAR_LOW_LATENCY_MODE` and `AAR_LOW_STALL_MODE` as given (`None`:
    /// unset or bad) and the defaults `d`. One mode on both sides leaves `auto` and `steady`
    /// (under `AAR_MODE`, `AAR_AB` or `aar_set_auto`) nothing to choose: they would never switch,
    /// and would take the measurements of that mode for the low-latency side's. The variable set
    /// to the mode of the other side then gets one warning and its default, which differs: the
    /// one set away from its default, `AAR_LOW_STALL_MODE` when both are.
    fn two_sides(
        &mut self,
        latency: Option<RoutingMode>,
        stall: Option<RoutingMode>,
        d: &EngineConfig,
    ) -> (RoutingMode, RoutingMode) {
        let (l, s) = (latency.unwrap_or(d.low_latency_mode), stall.unwrap_or(d.low_stall_mode));
        if l != s {
            return (l, s);
        }
        let (variable, default, other) = if stall.is_some_and(|m| m != d.low_stall_mode) {
            ("AAR_LOW_STALL_MODE", d.low_stall_mode, "AAR_LOW_LATENCY_MODE")
        } else {
            ("AAR_LOW_LATENCY_MODE", d.low_latency_mode, "AAR_LOW_STALL_MODE")
        };
        let value = self.get(variable).unwrap_or_default();
        let message = format!(
            "{variable}={} is the mode {other} gives too ({}): with one mode for both, auto and steady could never \
             switch; using the default {} for {variable} instead. Give the two different modes, or, to send every \
             adaptive message with {}, set AAR_MODE={} and leave them unset.",
            shown(&value),
            l.name(),
            default.name(),
            l.name(),
            l.name()
        );
        self.warnings.push(Warning { variable, value, message, no_effect: Vec::new() });
        if variable == "AAR_LOW_STALL_MODE" {
            (l, default)
        } else {
            (default, s)
        }
    }

    /// One note naming the settings given (and taken) that no policy of the run reads, when none
    /// of its policies (AAR_AB's arms, else AAR_MODE's `policy`) is automatic. Their values are
    /// kept, for an automatic policy the program may select itself (C API, outside A/B runs).
    fn unused_settings(&mut self, ab: Option<&PolicyList>, policy: Policy) {
        let one = [policy];
        let policies = ab.map_or(&one[..], |l| &l.0);
        if policies.iter().any(|p| p.is_automatic()) {
            return;
        }
        let all_off = policies.iter().all(|&p| p == Policy::Off);
        let candidates = AUTOMATIC_ONLY.iter().chain(OFF_UNUSED.iter().filter(|_| all_off));
        let mut unused: Vec<(&'static str, String)> = Vec::new();
        for &name in candidates {
            // A value already refused has its warning, and its default.
            if self.warnings.iter().any(|w| w.variable == name) {
                continue;
            }
            if let Some(v) = self.get(name) {
                unused.push((name, v));
            }
        }
        let Some((variable, value)) = unused.first().cloned() else { return };
        let (has, it, they_are, it_counts) = match unused.len() {
            1 => ("has", "it", "it is", "it counts"),
            _ => ("have", "them", "they are", "they count"),
        };
        // The C API may select an automatic policy later, except in an A/B run (it is refused).
        let (chooser, readers, fix, later) = match ab {
            Some(_) => ("AAR_AB", "whose policies do not read", "add auto or steady to AAR_AB", String::new()),
            None => (
                "AAR_MODE",
                "which does not read",
                "set AAR_MODE=auto (or steady)",
                format!(
                    " (Should the program select auto or steady itself, with aar_set_auto or aar_set_mode_name, \
                     {it_counts} from then on.)"
                ),
            ),
        };
        let chosen = self.get(chooser).unwrap_or_default();
        let no_effect: Vec<&'static str> = unused.iter().map(|(n, _)| *n).collect();
        let message = format!(
            "{} {has} {NO_EFFECT} {chooser}={}, {readers} {it} (auto and steady do): {they_are} ignored. To make \
             {it} count, {fix}; else unset {it}.{later}",
            no_effect.join(", "),
            shown(&chosen),
        );
        self.warnings.push(Warning { variable, value, message, no_effect });
    }

    fn text(&mut self, name: &'static str) -> Option<String> {
        self.get(name).map(|v| v.trim().to_string())
    }

    /// `AAR_TRACE`, a path pattern: a `%` code it does not know is kept as written, and said.
    fn trace(&mut self) -> Option<String> {
        let value = self.get("AAR_TRACE")?;
        let pattern = value.trim().to_string();
        if let (_, Some(unknown)) = crate::trace::expand(&pattern, None, 0) {
            let message = format!(
                "AAR_TRACE={}: {} is not one of %r (the rank), %p (the pid) or %% (a %): kept as written. Write \
                 %% for a %.",
                shown(&pattern),
                unknown.escape_debug()
            );
            self.warnings.push(Warning { variable: "AAR_TRACE", value, message, no_effect: Vec::new() });
        }
        Some(pattern)
    }
}

/// The characters of each value a parser's message quotes that a warning keeps
/// ([`aar_record::quotes::shortened`]): the rest of the message, its example included, is kept whole.
const QUOTED_CHARS: usize = 40;

fn always<T>(_: &T) -> bool {
    true
}

/// Settings only the automatic policies (`auto`, `steady`) read: λ and σ turn the measured side
/// into an estimate of the other, a fresh measurement of the other side replaces that estimate,
/// and inside MPI_Alltoall only the low-stall side (and `steady`'s state) changes. Under a fixed
/// mode or `off` they change nothing: not the routing, not the counter reads, not the records.
const AUTOMATIC_ONLY: [&str; 4] = ["AAR_LAMBDA", "AAR_SIGMA", "AAR_FRESHNESS", "AAR_ALLTOALL"];
/// Settings `off` never reads either, though a fixed mode does: a fixed mode's windows count for
/// the side its mode is (the two side modes say which), and a side's windows let the counter reads
/// follow `AAR_WINDOW`; `off` routes nothing, so its windows have no side and the counters are
/// read after every decision.
const OFF_UNUSED: [&str; 3] = ["AAR_WINDOW", "AAR_LOW_LATENCY_MODE", "AAR_LOW_STALL_MODE"];
/// What the note of [`Parser::unused_settings`] says of the settings it names (the one warning
/// whose values are kept: they are not refused, they do nothing).
pub(crate) const NO_EFFECT: &str = "no effect under";

/// The fix of a policy name that is none (`AAR_MODE`, `aar_set_mode_name`).
pub const POLICY_NAMES_FIX: &str = "Use auto, steady, off, or a fixed mode such as ADAPTIVE3 or ADAPTIVE_0.";

/// The fixes of a bad λ and σ: each with its own default as the example.
const LAMBDA_FIX: &str = "Use a number from 0.001 to 1000 (e.g. 1.2).";
/// See [`LAMBDA_FIX`].
const SIGMA_FIX: &str = "Use a number from 0.001 to 1000 (e.g. 5).";
const MODE_IGNORED: &str = "is ignored because AAR_AB is set; using the default of an A/B run instead: each \
iteration's policy comes from the AAR_AB schedule. Unset AAR_MODE, or unset AAR_AB to run one policy.";
const MODE_FIX: &str = "Use one of ADAPTIVE0, ADAPTIVE1, ADAPTIVE2, ADAPTIVE3 (ADAPTIVE_0..3 also accepted).";

/// A factor from 1/1000 to 1000 (λ, σ): as far below 1 as above it. A factor of 1e-300 is a
/// typo, not an estimate, and would make the other mode's estimate 1e300 times this one's.
fn factor(x: &f64) -> bool {
    (0.001..=1000.0).contains(x)
}

impl Settings {
    /// Parse every `AAR_*` variable of the process's environment.
    pub fn from_environment() -> (Settings, Vec<Warning>) {
        Settings::parse(&env_value)
    }

    /// Parse every `AAR_*` variable through `lookup` (the tests' environments).
    #[cfg(test)]
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> (Settings, Vec<Warning>) {
        Settings::parse(&|k: &str| lookup(k).map(Ok))
    }

    fn parse(lookup: &dyn Fn(&str) -> Option<EnvValue>) -> (Settings, Vec<Warning>) {
        use Detail::{Hidden, Shown};
        let mut p = Parser { lookup, warnings: Vec::new() };
        let d = Settings::default();
        let de = &d.engine;
        let switch_fix = format!("Use {}.", Switch::SPELLINGS);
        let switch = |p: &mut Parser, name, default: bool, show_default| {
            p.value::<Switch>(name, (show_default, "is not a boolean", &switch_fix), Hidden, always)
                .map_or(default, |s| s.0)
        };
        let disabled = switch(&mut p, "AAR_DISABLE", false, "0 (enabled)");
        let ab = p.value::<PolicyList>(
            "AAR_AB",
            (
                "unset (no A/B experiment, one policy)",
                "is not a list of policies to alternate",
                "Give 2 to 7 different policies separated by commas, from auto, steady, off and ADAPTIVE0..ADAPTIVE3 (e.g. AAR_AB=ADAPTIVE0,ADAPTIVE3).",
            ),
            Shown,
            always,
        );
        let ab_order = p
            .value(
                "AAR_AB_ORDER",
                (
                    "round-robin",
                    "is not an order of A/B iterations",
                    "Use round-robin, shuffled, or shuffled:SEED with a whole-number seed (the same on every rank).",
                ),
                Shown,
                always,
            )
            .unwrap_or(d.ab_order);
        let boundary_fix = format!(
            "Use markers, or one of {}, optionally with :N for every N-th call (e.g. MPI_Allreduce:2).",
            MpiFunction::ALL.map(MpiFunction::name).join(", ")
        );
        let ab_boundary = p
            .value(
                "AAR_AB_BOUNDARY",
                ("markers (aar_iteration_begin/end)", "is not an iteration boundary", &boundary_fix),
                Shown,
                always,
            )
            .unwrap_or(d.ab_boundary);
        let output_ranks = p.value::<RankSet>(
            "AAR_OUTPUT_RANKS",
            (
                "(every rank writes its records)",
                "is not a list of ranks",
                "Give ranks and inclusive ranges separated by commas, e.g. AAR_OUTPUT_RANKS=0:63,128.",
            ),
            Shown,
            always,
        );
        let policy = match &ab {
            Some(list) => {
                if let Some(v) = p.get("AAR_MODE") {
                    let message = format!("AAR_MODE={} {MODE_IGNORED}", shown(&v));
                    p.warnings.push(Warning { variable: "AAR_MODE", value: v, message, no_effect: Vec::new() });
                }
                AbSchedule::new(list.0.clone(), ab_order).policy_at(0)
            }
            None => p
                .value("AAR_MODE", ("auto", "is not a routing policy", POLICY_NAMES_FIX), Hidden, always)
                .unwrap_or(de.policy),
        };
        let threshold_bytes = p
            .value::<ByteSize>(
                "AAR_THRESHOLD",
                (
                    "4096",
                    "is not a size in bytes of at most 1P",
                    "Use a whole number of bytes, optionally with a K, M, G, T or P suffix (K = 1024), at most 1P (e.g. \
                     AAR_THRESHOLD=8192 or 8K).",
                ),
                Hidden,
                always,
            )
            .map_or(de.threshold_bytes, |b| b.0);
        let lambda =
            p.value("AAR_LAMBDA", ("1.2", "is not a latency factor", LAMBDA_FIX), Hidden, factor).unwrap_or(de.lambda);
        let sigma = p.value("AAR_SIGMA", ("5", "is not a stall factor", SIGMA_FIX), Hidden, factor).unwrap_or(de.sigma);
        let freshness = p
            .value(
                "AAR_FRESHNESS",
                (
                    "5",
                    "is not a number of counter windows",
                    "Use a whole number from 0 (never reuse observations) to 1000000.",
                ),
                Hidden,
                |&n: &u32| n <= 1_000_000,
            )
            .unwrap_or(de.freshness);
        let window_decisions = p.value(
            "AAR_WINDOW",
            (
                "8 (steady: 1)",
                "is not a number of decisions per counter window",
                "Use a whole number from 1 (read the counters after every decision, as the paper does) to 1000000.",
            ),
            Hidden,
            |n: &u32| (1..=1_000_000).contains(n),
        );
        let mode = |p: &mut Parser, name, default: RoutingMode| {
            p.value::<RoutingMode>(name, (default.name(), "is not an adaptive routing mode", MODE_FIX), Hidden, always)
        };
        let latency_given = mode(&mut p, "AAR_LOW_LATENCY_MODE", de.low_latency_mode);
        let stall_given = mode(&mut p, "AAR_LOW_STALL_MODE", de.low_stall_mode);
        let (low_latency_mode, low_stall_mode) = p.two_sides(latency_given, stall_given, de);
        let latency_unit = p
            .value::<LatencyUnit>(
                "AAR_LATENCY_UNIT",
                ("us", "is not a latency counter unit", "Use us (microseconds) or cycles (800 MHz NIC clock)."),
                Hidden,
                always,
            )
            .unwrap_or(de.latency_unit);
        let papi_events = p
            .value::<EventList>(
                "AAR_PAPI_EVENTS",
                (
                    "(the five Aries AR_NIC_* events)",
                    "is not a list of 4 or 5 PAPI event names",
                    "Give comma-separated names in this order: request flits, request stalled cycles, cumulative response latency, response packets[, response stalled cycles].",
                ),
                Shown,
                always,
            )
            .map_or(d.papi_events, |l| l.0);
        let alltoall_hook = switch(&mut p, "AAR_ALLTOALL", d.alltoall_hook, "1");
        let summary = switch(&mut p, "AAR_SUMMARY", d.summary, "1");
        let test_panic = p.value::<TestPanic>(
            "AAR_TEST_PANIC",
            (
                "unset (no injected panic)",
                "is not a place to inject a panic",
                "Use before-forward or after-forward, or leave it unset (it exists to test the library).",
            ),
            Hidden,
            always,
        );
        let table_default = match built_table() {
            Some((_, path)) => format!("(the table of {path}, read when libaar.so was built)"),
            None => format!("(the assumed table {})", RoutingTable::ASSUMED),
        };
        let dmapp_routing = p.value::<RoutingTable>(
            "AAR_DMAPP_ROUTING",
            (
                &table_default,
                "is not a DMAPP routing table",
                "Give the values of the DMAPP_ROUTING_* enumerators of the site's dmapp.h as NAME=VALUE pairs \
                 separated by commas, e.g. IN_ORDER=0,DETERMINISTIC=1,ADAPTIVE=2,DETERMINISTIC_1=3,ADAPTIVE_1=4,ADAPTIVE_2=5,ADAPTIVE_3=6; \
                 the four ADAPTIVE names are needed.",
            ),
            Shown,
            always,
        );
        let log = p.value::<LevelFilter>(
            "AAR_LOG",
            ("unset (logging off)", "is not a log level", "Use error, warn, info, debug or trace."),
            Hidden,
            always,
        );
        let node_reading = p
            .value::<ReadingAge>(
                "AAR_NODE_READING",
                (
                    "5us",
                    "is not an age of a counter reading",
                    "Use a whole number of ns, us or ms up to 1 s (e.g. AAR_NODE_READING=5us), or 0 for one reading per rank.",
                ),
                Shown,
                always,
            )
            .unwrap_or(d.node_reading);
        let trace_max = p
            .value::<ByteSize>(
                "AAR_TRACE_MAX",
                (
                    "1G",
                    "is not a size in bytes above 0 and at most 1P",
                    "Use a size with an optional K, M, G, T or P suffix (K = 1024), at most 1P (e.g. AAR_TRACE_MAX=8G).",
                ),
                Shown,
                |b| b.0 > 0,
            )
            .map_or(d.trace_max, |b| b.0);
        p.unused_settings(ab.as_ref(), policy);
        let settings = Settings {
            disabled,
            engine: EngineConfig {
                policy,
                threshold_bytes,
                lambda,
                sigma,
                freshness,
                low_latency_mode,
                low_stall_mode,
                latency_unit,
                ..d.engine
            }
            .with_window(window_decisions),
            papi_events,
            papi_library: p.text("AAR_PAPI_LIBRARY"),
            trace: p.trace(),
            trace_max,
            output_dir: p.text("AAR_OUTPUT_DIR"),
            log,
            alltoall_hook,
            summary,
            test_panic,
            ab,
            ab_order,
            ab_boundary,
            output_ranks,
            dmapp_routing,
            node_reading,
            topology: p.text("AAR_TOPOLOGY"),
        };
        (settings, p.warnings)
    }
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
