//! The `AAR_*` variables: parsed once, from a lookup the caller provides (the shim passes
//! `getenv`), so parsing is pure and testable. A bad value never stops anything: it yields a
//! [`Warning`] that names the variable, the value, what is used instead and how to fix it.

use crate::ab::{AbOrder, AbSchedule, Boundary, PolicyList};
use crate::engine::{EngineConfig, Policy};
use crate::mode::RoutingMode;
use crate::model::LatencyUnit;
use crate::size::ByteSize;

/// Aries event names, in the order the engine needs them: request flits, request stalled cycles,
/// cumulative response latency, response packets, and (optional) response stalled cycles.
pub const DEFAULT_PAPI_EVENTS: [&str; 5] = [
    "AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_FLITS",
    "AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_STALLED",
    "AR_NIC_ORB_PRF_NET_RSP_TRACK_2",
    "AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_NET_TRACK",
    "AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_STALLED",
];

/// Every variable the library reads, with its default as documented in the README.
pub const VARIABLES: [(&str, &str); 22] = [
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
    ("AAR_OUTPUT_DIR", "unset"),
    ("AAR_LOG", "unset"),
    ("AAR_ALLTOALL", "1"),
    ("AAR_SUMMARY", "1"),
    ("AAR_TEST_PANIC", "unset"),
    ("AAR_AB", "unset"),
    ("AAR_AB_ORDER", "round-robin"),
    ("AAR_AB_BOUNDARY", "markers"),
    ("AAR_OUTPUT_RANKS", "every rank"),
];

/// Everything the `AAR_*` variables configure.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Settings {
    /// Kill switch: forward every call untouched, read nothing, write nothing.
    pub disabled: bool,
    /// The engine's parameters.
    pub engine: EngineConfig,
    /// 4 or 5 PAPI event names (see [`DEFAULT_PAPI_EVENTS`]).
    pub papi_events: Vec<String>,
    /// Where to load PAPI from; `None`: the usual sonames through the loader's search path.
    pub papi_library: Option<String>,
    /// JSON Lines decision trace path pattern (`%r` rank, `%p` pid).
    pub trace: Option<String>,
    /// Folder for the per-rank record written at exit.
    pub output_dir: Option<String>,
    /// `tracing` filter for diagnostics on stderr.
    pub log: Option<String>,
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
}

impl Settings {
    /// The A/B schedule, when `AAR_AB` is set.
    pub fn ab_schedule(&self) -> Option<AbSchedule> {
        self.ab.as_ref().map(|l| AbSchedule::new(l.0.clone(), self.ab_order))
    }
}

/// Ranks as users write them for `AAR_OUTPUT_RANKS`: comma-separated ranks and inclusive
/// ranges, e.g. `0:63,128`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSet(Vec<(u32, u32)>);

/// Most items one [`RankSet`] holds (a few hundred bytes of settings, whatever the input).
pub const MAX_RANK_ITEMS: usize = 1024;

impl RankSet {
    /// Whether `rank` is in the set.
    pub fn contains(&self, rank: u32) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&rank))
    }
}

impl core::str::FromStr for RankSet {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let mut ranges = Vec::new();
        for item in text.split(',') {
            if ranges.len() == MAX_RANK_ITEMS {
                return Err(format!("more than {MAX_RANK_ITEMS} items"));
            }
            let rank =
                |t: &str| t.trim().parse::<u32>().map_err(|_| format!("\"{}\" is not a rank", t.trim().escape_debug()));
            let range = match item.split_once(':') {
                Some((lo, hi)) => (rank(lo)?, rank(hi)?),
                None => (rank(item)?, rank(item)?),
            };
            if range.0 > range.1 {
                return Err(format!("the range {}:{} runs backwards", range.0, range.1));
            }
            ranges.push(range);
        }
        Ok(Self(ranges))
    }
}

impl core::fmt::Display for RankSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, &(lo, hi)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}:{hi}")?;
            }
        }
        Ok(())
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for RankSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Where `AAR_TEST_PANIC` makes the decision path panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum TestPanic {
    /// Panic after deciding, before the real function is called.
    BeforeForward,
    /// Panic after the real function returned.
    AfterForward,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            disabled: false,
            engine: EngineConfig::default(),
            papi_events: DEFAULT_PAPI_EVENTS.iter().map(|s| s.to_string()).collect(),
            papi_library: None,
            trace: None,
            output_dir: None,
            log: None,
            alltoall_hook: true,
            summary: true,
            test_panic: None,
            ab: None,
            ab_order: AbOrder::RoundRobin,
            ab_boundary: Boundary::Markers,
            output_ranks: None,
        }
    }
}

/// A bad value, and what was done instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The variable.
    pub variable: &'static str,
    /// Its value, as given.
    pub value: String,
    /// The whole message: variable, value, what is used instead and how to fix it.
    pub message: String,
}

impl core::fmt::Display for Warning {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.message)
    }
}

struct Parser<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    warnings: Vec<Warning>,
}

impl Parser<'_> {
    /// The variable's value; unset and empty-or-blank both mean "use the default".
    fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name).filter(|v| !v.trim().is_empty())
    }

    fn warn(&mut self, variable: &'static str, value: &str, problem: &str, default: &str, fix: &str) {
        let shown: String = value.chars().take(80).collect();
        let shown = shown.escape_debug().to_string();
        self.warnings.push(Warning {
            variable,
            value: value.to_string(),
            message: format!("{variable}=\"{shown}\" {problem}; using the default {default}. {fix}"),
        });
    }

    fn parse<T>(
        &mut self,
        name: &'static str,
        default: T,
        show_default: &str,
        problem: &str,
        fix: &str,
        f: impl Fn(&str) -> Option<T>,
    ) -> T {
        match self.get(name) {
            None => default,
            Some(v) => match f(v.trim()) {
                Some(x) => x,
                None => {
                    self.warn(name, &v, problem, show_default, fix);
                    default
                }
            },
        }
    }

    /// A value of a type with `FromStr`, whose error (a detail) goes into the warning; `None`
    /// when unset or bad (the caller's default applies).
    fn parse_str<T: core::str::FromStr<Err = String>>(
        &mut self,
        name: &'static str,
        show_default: &str,
        problem: &str,
        fix: &str,
    ) -> Option<T> {
        let v = self.get(name)?;
        match v.trim().parse::<T>() {
            Ok(x) => Some(x),
            Err(detail) => {
                let detail: String = detail.chars().take(120).collect();
                self.warn(name, &v, &format!("{problem} ({detail})"), show_default, fix);
                None
            }
        }
    }

    fn text(&self, name: &str) -> Option<String> {
        self.get(name).map(|v| v.trim().to_string())
    }
}

/// `1/0, true/false, yes/no, on/off`, any case.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Bytes, optionally with a binary suffix (see [`ByteSize`]).
pub fn parse_bytes(v: &str) -> Option<u64> {
    v.parse::<ByteSize>().ok().map(|b| b.0)
}

/// A finite factor above zero and at most 1000.
fn parse_factor(v: &str) -> Option<f64> {
    v.parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0 && *x <= 1000.0)
}

fn parse_unit(v: &str) -> Option<LatencyUnit> {
    match v.to_ascii_lowercase().as_str() {
        "us" | "usec" | "microseconds" => Some(LatencyUnit::Microseconds),
        "cycles" | "cycle" => Some(LatencyUnit::Cycles),
        _ => None,
    }
}

fn parse_events(v: &str) -> Option<Vec<String>> {
    let names: Vec<String> = v.split(',').map(|s| s.trim().to_string()).collect();
    let ok = (4..=5).contains(&names.len())
        && names.iter().all(|n| !n.is_empty() && n.len() <= 1024 && !n.contains(char::is_whitespace));
    ok.then_some(names)
}

const BOUNDARY_FIX: &str = "Use markers, or one of MPI_Barrier, MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Allgather, \
MPI_Alltoall, MPI_Gather, MPI_Scatter, optionally with :N for every N-th call (e.g. MPI_Allreduce:2).";
const MODE_IGNORED: &str = "is ignored because AAR_AB is set; using the default of an A/B run instead: each \
iteration's policy comes from the AAR_AB schedule. Unset AAR_MODE, or unset AAR_AB to run one policy.";

const MODE_FIX: &str = "Use one of ADAPTIVE0, ADAPTIVE1, ADAPTIVE2, ADAPTIVE3 (ADAPTIVE_0..3 also accepted).";

impl Settings {
    /// Parse every `AAR_*` variable through `lookup` (e.g. `std::env::var`).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> (Settings, Vec<Warning>) {
        let mut p = Parser { lookup, warnings: Vec::new() };
        let d = Settings::default();
        let de = &d.engine;
        let bool_fix = "Use 1/0, true/false, yes/no or on/off.";
        let disabled = p.parse("AAR_DISABLE", false, "0 (enabled)", "is not a boolean", bool_fix, parse_bool);
        let ab = p.parse_str::<PolicyList>(
            "AAR_AB",
            "unset (no A/B experiment, one policy)",
            "is not a list of policies to alternate",
            "Give 2 to 8 different policies separated by commas, from auto, off and ADAPTIVE0..ADAPTIVE3 (e.g. AAR_AB=ADAPTIVE0,ADAPTIVE3).",
        );
        let ab_order = p
            .parse_str(
                "AAR_AB_ORDER",
                "round-robin",
                "is not an order of A/B iterations",
                "Use round-robin, shuffled, or shuffled:SEED with a whole-number seed (the same on every rank).",
            )
            .unwrap_or(AbOrder::RoundRobin);
        let ab_boundary = p
            .parse_str(
                "AAR_AB_BOUNDARY",
                "markers (aar_iteration_begin/end)",
                "is not an iteration boundary",
                BOUNDARY_FIX,
            )
            .unwrap_or(Boundary::Markers);
        let output_ranks = p.parse_str::<RankSet>(
            "AAR_OUTPUT_RANKS",
            "(every rank writes its records)",
            "is not a list of ranks",
            "Give ranks and inclusive ranges separated by commas, e.g. AAR_OUTPUT_RANKS=0:63,128.",
        );
        let policy = match &ab {
            Some(list) => {
                if let Some(v) = p.get("AAR_MODE") {
                    let shown: String = v.chars().take(80).collect();
                    let message = format!("AAR_MODE=\"{}\" {MODE_IGNORED}", shown.escape_debug());
                    p.warnings.push(Warning { variable: "AAR_MODE", value: v, message });
                }
                AbSchedule::new(list.0.clone(), ab_order).policy_at(0)
            }
            None => p.parse(
                "AAR_MODE",
                de.policy,
                "auto",
                "is not a routing policy",
                "Use auto, off, or a fixed mode such as ADAPTIVE3 or ADAPTIVE_0.",
                Policy::parse,
            ),
        };
        let threshold_bytes = p.parse(
            "AAR_THRESHOLD",
            de.threshold_bytes,
            "4096",
            "is not a size in bytes",
            "Use a whole number of bytes, optionally with a K or M suffix (e.g. AAR_THRESHOLD=8192 or 8K).",
            parse_bytes,
        );
        let factor_fix = "Use a number above 0 and at most 1000 (e.g. 1.2).";
        let lambda = p.parse("AAR_LAMBDA", de.lambda, "1.2", "is not a latency factor", factor_fix, parse_factor);
        let sigma = p.parse("AAR_SIGMA", de.sigma, "5", "is not a stall factor", factor_fix, parse_factor);
        let freshness = p.parse(
            "AAR_FRESHNESS",
            de.freshness,
            "5",
            "is not a number of decisions",
            "Use a whole number from 0 (never reuse observations) to 1000000.",
            |v| v.parse::<u32>().ok().filter(|&n| n <= 1_000_000),
        );
        let window_decisions = p.parse(
            "AAR_WINDOW",
            de.window_decisions,
            "8",
            "is not a number of decisions per counter window",
            "Use a whole number from 1 (read the counters after every decision, as the paper does) to 1000000.",
            |v| v.parse::<u32>().ok().filter(|&n| (1..=1_000_000).contains(&n)),
        );
        let mode = |v: &str| RoutingMode::parse(v);
        let low_latency_mode = p.parse(
            "AAR_LOW_LATENCY_MODE",
            de.low_latency_mode,
            "ADAPTIVE3",
            "is not an adaptive routing mode",
            MODE_FIX,
            mode,
        );
        let low_stall_mode = p.parse(
            "AAR_LOW_STALL_MODE",
            de.low_stall_mode,
            "ADAPTIVE0",
            "is not an adaptive routing mode",
            MODE_FIX,
            mode,
        );
        let latency_unit = p.parse(
            "AAR_LATENCY_UNIT",
            de.latency_unit,
            "us",
            "is not a latency counter unit",
            "Use us (microseconds) or cycles (800 MHz NIC clock).",
            parse_unit,
        );
        let papi_events = p.parse(
            "AAR_PAPI_EVENTS",
            d.papi_events.clone(),
            "(the five Aries AR_NIC_* events)",
            "is not a list of 4 or 5 PAPI event names",
            "Give comma-separated names in this order: request flits, request stalled cycles, cumulative response latency, response packets[, response stalled cycles].",
            parse_events,
        );
        let alltoall_hook = p.parse("AAR_ALLTOALL", true, "1", "is not a boolean", bool_fix, parse_bool);
        let summary = p.parse("AAR_SUMMARY", true, "1", "is not a boolean", bool_fix, parse_bool);
        let test_panic = p.parse(
            "AAR_TEST_PANIC",
            None,
            "unset (no injected panic)",
            "is not a place to inject a panic",
            "Use before-forward or after-forward, or leave it unset (it exists to test the library).",
            |v| match v {
                "before-forward" => Some(Some(TestPanic::BeforeForward)),
                "after-forward" => Some(Some(TestPanic::AfterForward)),
                _ => None,
            },
        );
        let settings = Settings {
            disabled,
            engine: EngineConfig {
                policy,
                threshold_bytes,
                lambda,
                sigma,
                freshness,
                window_decisions,
                low_latency_mode,
                low_stall_mode,
                latency_unit,
                ..d.engine
            },
            papi_events,
            papi_library: p.text("AAR_PAPI_LIBRARY"),
            trace: p.text("AAR_TRACE"),
            output_dir: p.text("AAR_OUTPUT_DIR"),
            log: p.text("AAR_LOG"),
            alltoall_hook,
            summary,
            test_panic,
            ab,
            ab_order,
            ab_boundary,
            output_ranks,
        };
        (settings, p.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(vars: &[(&str, &str)]) -> (Settings, Vec<Warning>) {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_lookup(&|k| map.get(k).cloned())
    }

    #[test]
    fn nothing_set_gives_the_documented_defaults() {
        let (s, w) = parse(&[]);
        assert!(w.is_empty());
        assert_eq!(s, Settings::default());
        assert_eq!(s.engine.threshold_bytes, 4096);
        assert_eq!(s.engine.lambda, 1.2);
        assert_eq!(s.engine.sigma, 5.0);
        assert_eq!(s.engine.freshness, 5);
        assert_eq!(s.papi_events.len(), 5);
        for (name, _) in VARIABLES {
            assert!(name.starts_with("AAR_"));
        }
    }

    #[test]
    fn good_values_are_taken() {
        let (s, w) = parse(&[
            ("AAR_MODE", "ADAPTIVE_2"),
            ("AAR_DISABLE", "yes"),
            ("AAR_THRESHOLD", "8K"),
            ("AAR_LAMBDA", "1.5"),
            ("AAR_SIGMA", "3"),
            ("AAR_FRESHNESS", "0"),
            ("AAR_WINDOW", "1"),
            ("AAR_LOW_LATENCY_MODE", "adaptive2"),
            ("AAR_LOW_STALL_MODE", "ADAPTIVE_1"),
            ("AAR_LATENCY_UNIT", "cycles"),
            ("AAR_PAPI_EVENTS", "a,b,c,d"),
            ("AAR_TRACE", "/tmp/t.%r.jsonl"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert!(s.disabled);
        assert_eq!(s.engine.policy, Policy::Fixed(RoutingMode::Adaptive2));
        assert_eq!(s.engine.threshold_bytes, 8192);
        assert_eq!(s.engine.lambda, 1.5);
        assert_eq!(s.engine.sigma, 3.0);
        assert_eq!(s.engine.freshness, 0);
        assert_eq!(s.engine.window_decisions, 1);
        assert_eq!(s.engine.low_latency_mode, RoutingMode::Adaptive2);
        assert_eq!(s.engine.low_stall_mode, RoutingMode::Adaptive1);
        assert_eq!(s.engine.latency_unit, LatencyUnit::Cycles);
        assert_eq!(s.papi_events, ["a", "b", "c", "d"]);
        assert_eq!(s.trace.as_deref(), Some("/tmp/t.%r.jsonl"));
        assert_eq!(parse(&[("AAR_MODE", "off")]).0.engine.policy, Policy::Off);
        assert_eq!(parse(&[("AAR_MODE", "Auto")]).0.engine.policy, Policy::Auto);
    }

    #[test]
    fn each_bad_value_warns_once_naming_variable_value_and_default() {
        let cases = [
            ("AAR_DISABLE", "maybe", "0"),
            ("AAR_MODE", "fast", "auto"),
            ("AAR_MODE", "IN_ORDER", "auto"),
            ("AAR_THRESHOLD", "-1", "4096"),
            ("AAR_THRESHOLD", "4 TB", "4096"),
            ("AAR_THRESHOLD", "99999999999999999999", "4096"),
            ("AAR_LAMBDA", "nan", "1.2"),
            ("AAR_LAMBDA", "0", "1.2"),
            ("AAR_SIGMA", "inf", "5"),
            ("AAR_SIGMA", "-5", "5"),
            ("AAR_FRESHNESS", "1.5", "5"),
            ("AAR_WINDOW", "0", "8"),
            ("AAR_LOW_LATENCY_MODE", "MIN_HASH", "ADAPTIVE3"),
            ("AAR_LOW_STALL_MODE", "ADAPTIVE9", "ADAPTIVE0"),
            ("AAR_LATENCY_UNIT", "ns", "us"),
            ("AAR_PAPI_EVENTS", "a,b,c", "(the five"),
            ("AAR_PAPI_EVENTS", "a,b,,d", "(the five"),
            ("AAR_AB", "ADAPTIVE0", "unset"),
            ("AAR_AB", "ADAPTIVE0,fast", "unset"),
            ("AAR_AB", "auto,auto", "unset"),
            ("AAR_AB_ORDER", "random", "round-robin"),
            ("AAR_AB_ORDER", "shuffled:x", "round-robin"),
            ("AAR_AB_BOUNDARY", "MPI_Send", "markers"),
            ("AAR_AB_BOUNDARY", "MPI_Barrier:0", "markers"),
            ("AAR_OUTPUT_RANKS", "0:x", "every rank"),
            ("AAR_OUTPUT_RANKS", "9:3", "every rank"),
        ];
        for (var, value, default) in cases {
            let (s, w) = parse(&[(var, value)]);
            assert_eq!(w.len(), 1, "{var}={value}: {w:?}");
            let msg = &w[0].message;
            assert!(msg.contains(var) && msg.contains(value) && msg.contains(default), "{msg}");
            assert!(msg.contains("using the default"), "{msg}");
            assert_eq!(w[0].variable, var);
            assert_eq!(s, Settings::default(), "{var}={value} must leave the default");
        }
    }

    #[test]
    fn ab_experiments() {
        let (s, w) = parse(&[
            ("AAR_AB", "ADAPTIVE_3, auto"),
            ("AAR_AB_ORDER", "shuffled:5"),
            ("AAR_AB_BOUNDARY", "MPI_Allreduce:2"),
            ("AAR_OUTPUT_RANKS", "0:3, 8"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.ab, Some(PolicyList(vec![Policy::Fixed(RoutingMode::Adaptive3), Policy::Auto])));
        assert_eq!(s.ab_order, AbOrder::Shuffled(5));
        assert_eq!(s.ab_boundary.to_string(), "MPI_Allreduce:2");
        let ranks = s.output_ranks.as_ref().unwrap();
        assert_eq!(ranks.to_string(), "0:3,8");
        assert!([0, 3, 8].iter().all(|&r| ranks.contains(r)) && ![4, 7, 9].iter().any(|&r| ranks.contains(r)));
        let schedule = s.ab_schedule().unwrap();
        assert_eq!(s.engine.policy, schedule.policy_at(0), "before the first iteration: iteration 0's policy");
        // AAR_MODE gives way to the schedule, with one warning.
        let (s, w) = parse(&[("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("AAR_MODE", "ADAPTIVE2")]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].message.starts_with("AAR_MODE=\"ADAPTIVE2\" is ignored because AAR_AB is set"), "{}", w[0]);
        assert_eq!(s.engine.policy, Policy::Fixed(RoutingMode::Adaptive0));
        // Without A/B, the same variables still parse; no schedule.
        let (s, w) = parse(&[("AAR_AB_BOUNDARY", "mpi_barrier")]);
        assert!(w.is_empty() && s.ab_schedule().is_none());
        assert_eq!(s.ab_boundary.to_string(), "MPI_Barrier:1");
        // The detail of what is wrong is in the warning.
        let (_, w) = parse(&[("AAR_AB", "ADAPTIVE0,fast")]);
        assert!(w[0].message.contains("\"fast\" is not a policy"), "{}", w[0]);
    }

    #[test]
    fn rank_sets() {
        let r: RankSet = "5".parse().unwrap();
        assert!(r.contains(5) && !r.contains(4));
        let r: RankSet = "0:4294967295".parse().unwrap();
        assert!(r.contains(u32::MAX));
        for bad in ["", ",", "1,", "-1", "a", "1:2:3", "3:1", "1.5"] {
            assert!(bad.parse::<RankSet>().is_err(), "{bad}");
        }
        let many = vec!["1"; MAX_RANK_ITEMS + 1].join(",");
        assert!(many.parse::<RankSet>().is_err());
    }

    #[test]
    fn blank_means_default_and_hostile_text_is_quoted_safely() {
        let (s, w) = parse(&[("AAR_MODE", "   "), ("AAR_THRESHOLD", "")]);
        assert!(w.is_empty());
        assert_eq!(s, Settings::default());
        let (_, w) = parse(&[("AAR_MODE", "x\n\u{1b}[31m\"")]);
        assert_eq!(w.len(), 1);
        assert!(!w[0].message.contains('\n') && !w[0].message.contains('\u{1b}'), "{}", w[0].message);
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("0"), Some(0));
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("4k"), Some(4096));
        assert_eq!(parse_bytes("4KiB"), Some(4096));
        assert_eq!(parse_bytes("1M"), Some(1 << 20));
        assert_eq!(parse_bytes("2 MiB"), Some(2 << 20));
        for bad in ["", "k", "-4", "4.5", "4x", "0x10", "18446744073709551615k"] {
            assert_eq!(parse_bytes(bad), None, "{bad}");
        }
    }
}
