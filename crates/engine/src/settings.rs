//! The `AAR_*` variables: parsed once, from a lookup the caller provides (the shim passes
//! `getenv`), so parsing is pure and testable. A bad value never stops anything: it yields a
//! [`Warning`] that names the variable, the value, what is used instead and how to fix it.

use crate::engine::{EngineConfig, Policy};
use crate::mode::RoutingMode;
use crate::model::LatencyUnit;

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
pub const VARIABLES: [(&str, &str); 18] = [
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
];

/// Everything the `AAR_*` variables configure.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Settings {
    /// Kill switch: forward every call untouched, read nothing, write nothing.
    pub disabled: bool,
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
}

/// Where `AAR_TEST_PANIC` makes the decision path panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum TestPanic {
    BeforeForward,
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
        }
    }
}

/// A bad value, and what was done instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub variable: &'static str,
    pub value: String,
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

/// Bytes, optionally with a binary suffix: `4096`, `4k`, `4KiB`, `1M`, `1MiB`.
pub fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, suffix) = v.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let scale: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale).filter(|&b| b <= 1 << 50)
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

const MODE_FIX: &str = "Use one of ADAPTIVE0, ADAPTIVE1, ADAPTIVE2, ADAPTIVE3 (ADAPTIVE_0..3 also accepted).";

impl Settings {
    /// Parse every `AAR_*` variable through `lookup` (e.g. `std::env::var`).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> (Settings, Vec<Warning>) {
        let mut p = Parser { lookup, warnings: Vec::new() };
        let d = Settings::default();
        let de = &d.engine;
        let bool_fix = "Use 1/0, true/false, yes/no or on/off.";
        let disabled = p.parse("AAR_DISABLE", false, "0 (enabled)", "is not a boolean", bool_fix, parse_bool);
        let policy = p.parse(
            "AAR_MODE",
            de.policy,
            "auto",
            "is not a routing policy",
            "Use auto, off, or a fixed mode such as ADAPTIVE3 or ADAPTIVE_0.",
            Policy::parse,
        );
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
