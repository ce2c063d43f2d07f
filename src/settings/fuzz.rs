//! Hostile input for the `AAR_*` parser, with proptest: every variable gets arbitrary text
//! (empty, blank, huge, non-ASCII, control characters, multi-byte characters at the byte offsets
//! the parsers slice at, numbers at the edges of every range). `Settings::from_lookup` never
//! panics, every warning names its variable, quotes the value safely and stays bounded in length,
//! and the settings it returns are within their documented ranges.
//!
//! The runs are reproducible: a fixed seed unless `PROPTEST_RNG_SEED` is set, 2,000 cases unless
//! `PROPTEST_CASES` is set. Explore new inputs with e.g.
//! `PROPTEST_RNG_SEED=$RANDOM PROPTEST_CASES=20000 cargo test --release -p aar --lib settings::fuzz`.
//! A failure prints the minimal input; nothing is written to the source tree.

use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

/// The one variable whose warning keeps the value as written: AAR_TRACE, a path pattern with a
/// `%` code it does not know (the file is made under that name, the code unexpanded).
const KEPT_AS_WRITTEN: &str = "AAR_TRACE";

/// Text that the parsers have special cases for, or that sits at the edge of a range.
const TOKENS: &[&str] = &[
    "",
    " ",
    "\t",
    "0",
    "1",
    "-1",
    "+1",
    "-0",
    "00",
    "0x10",
    "1_000",
    "1e3",
    "1.",
    ".5",
    "5.",
    "1,2",
    "true",
    "FALSE",
    "Yes",
    "no",
    "Y",
    "n",
    "on",
    "OFF",
    "maybe",
    "auto",
    "AUTO",
    "paper",
    "off",
    "observe",
    "ADAPTIVE0",
    "ADAPTIVE=2,ADAPTIVE_1=4,ADAPTIVE_2=5,ADAPTIVE_3=6",
    "DMAPP_ROUTING_ADAPTIVE=2,ADAPTIVE_1=4,ADAPTIVE_2=5,ADAPTIVE_3=300",
    "ADAPTIVE_3",
    "adaptive3",
    "GNI_DLVMODE_ADAPTIVE1",
    "GNI_DLVMODE_",
    "ADAPTIVE",
    "ADAPTIVE_",
    "ADAPTIVE4",
    "ADAPTIVE33",
    "ADAPTIVE__3",
    "IN_ORDER",
    "MIN_HASH",
    "NMIN_HASH",
    "us",
    "usec",
    "cycles",
    "ns",
    "k",
    "K",
    "KiB",
    "kb",
    "M",
    "MiB",
    "G",
    "GiB",
    "T",
    "b",
    "4096",
    "4K",
    "16k",
    "1M",
    "1125899906842624",
    "1125899906842625",
    "1048576M",
    "1048576G",
    "1048577G",
    "18446744073709551615",
    "18446744073709551616",
    "18446744073709551615k",
    "99999999999999999999",
    "4294967295",
    "4294967296",
    "1000000",
    "1000001",
    "2147483648",
    "1000",
    "1000.0",
    "1000.0000000000001",
    "1000.0000001",
    "999.9999",
    "1e-300",
    "4.9e-324",
    "5e-324",
    "2.2250738585072014e-308",
    "1e308",
    "1.7976931348623157e308",
    "1e309",
    "-1e309",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "+inf",
    "-inf",
    "infinity",
    "Infinity",
    "0.0",
    "-0.0",
    "1.2",
    "5",
    "a,b,c",
    "a,b,c,d",
    "a,b,c,d,e",
    "a,b,c,d,e,f",
    "a,,c,d",
    ",,,,",
    "a b,c,d,e",
    "sde:::aries::X",
    "%r",
    "%p",
    "%%",
    "%",
    "/tmp/x.%r.jsonl",
    "../../etc/passwd",
    "\\",
    "\"",
    "'",
    "\n",
    "\r\n",
    "\0",
    "\u{1b}[31m",
    "\u{7f}",
    "\u{85}",
    "\u{a0}",
    "\u{200b}",
    "\u{202e}",
    "\u{2028}",
    "\u{feff}",
    "\u{fffd}",
    "é",
    "€",
    "😀",
    "١٢",
    "１２",
    "Ａ",
    "İ",
    "ß",
    "\u{10ffff}",
    "debug",
    "Trace",
    "before-forward",
    "after-forward",
    "markers",
    "MPI_Barrier",
    "mpi_allreduce:2",
    "MPI_Bcast:0",
    "shuffled:7",
    "round-robin",
    "0:3,8",
    "9:3",
    "ADAPTIVE0,ADAPTIVE3",
    "auto,auto",
];

/// Characters whose UTF-8 encoding is 2, 3 and 4 bytes long: placed at the byte offsets where
/// a parser slices (e.g. 8, 9, 12), they catch `&s[..n]` on a non-boundary.
const WIDE: &[char] = &['é', '€', '😀', '\u{85}', '\u{a0}', '\u{2028}', '\u{10ffff}', 'İ'];

fn any_text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..max).prop_map(String::from_iter)
}

fn value() -> impl Strategy<Value = Option<String>> {
    let token = prop::sample::select(TOKENS);
    let sep = prop::sample::select(&["", " ", ",", "\t", "_", "\n", "\u{a0}"][..]);
    let suffix = prop::sample::select(&["", "k", "K", "KiB", "M", "MiB", "G", "GiB", "T", " k", "e3", "%"][..]);
    prop_oneof![
        3 => Just(None),
        4 => any_text(40).prop_map(Some),
        4 => token.clone().prop_map(|t| Some(t.to_string())),
        4 => (prop::collection::vec((token, sep), 1..5)).prop_map(|v| Some(v.into_iter().map(|(t, s)| format!("{t}{s}")).collect())),
        // An ASCII stem of any length then a wide character: the slicing-at-a-byte-offset bug.
        4 => ("[A-Za-z_]{0,14}", prop::sample::select(WIDE), "[A-Za-z0-9_]{0,3}")
            .prop_map(|(a, w, b)| Some(format!("{a}{w}{b}"))),
        2 => ("(GNI_DLVMODE_)?(ADAPTIVE|adaptive|ADAPTIVE_)", prop::sample::select(WIDE), "[0-9]?")
            .prop_map(|(a, w, b)| Some(format!("{a}{w}{b}"))),
        3 => "[\\x00-\\x1f\\x7f\\u{80}-\\u{9f} ]{0,16}".prop_map(Some),
        2 => (any::<i64>(), suffix.clone()).prop_map(|(n, s)| Some(format!("{n}{s}"))),
        2 => (any::<u64>(), suffix).prop_map(|(n, s)| Some(format!("{n}{s}"))),
        2 => any::<f64>().prop_map(|x| Some(format!("{x}"))),
        2 => any::<f64>().prop_map(|x| Some(format!("{x:e}"))),
        2 => "[ \\t]{0,3}[0-9]{0,25}[.]?[0-9]{0,5}[ \\t]{0,3}".prop_map(Some),
        // Huge values: the warning must still be short.
        1 => (any::<char>(), 1_000usize..100_000).prop_map(|(c, n)| Some(std::iter::repeat_n(c, n).collect())),
        1 => (prop::sample::select(TOKENS), 1_000usize..50_000).prop_map(|(t, n)| Some(t.repeat(n.min(200_000 / t.len().max(1))))),
    ]
}

/// One value (or none) for every variable.
fn environment() -> impl Strategy<Value = HashMap<&'static str, String>> {
    prop::collection::vec(value(), VARIABLES.len())
        .prop_map(|values| VARIABLES.iter().zip(values).filter_map(|((name, _), v)| v.map(|v| (*name, v))).collect())
}

/// The longest a warning may be: the value is quoted up to 80 characters, each escaped to at
/// most 10 (`\u{10ffff}`), plus the variable, the problem, the default and the fix.
const MAX_WARNING_CHARS: usize = 1500;

fn check_settings(env: &HashMap<&'static str, String>) -> Result<(), TestCaseError> {
    let asked = std::cell::RefCell::new(Vec::<String>::new());
    let lookup = |k: &str| {
        asked.borrow_mut().push(k.to_string());
        env.get(k).cloned()
    };
    let (s, warnings) = Settings::from_lookup(&lookup);
    let names: Vec<&str> = VARIABLES.iter().map(|(n, _)| *n).collect();
    for k in asked.borrow().iter() {
        prop_assert!(names.contains(&k.as_str()), "looked up {k:?}, which VARIABLES does not list");
    }
    let mut warned = Vec::new();
    for w in &warnings {
        prop_assert!(names.contains(&w.variable), "warning for an unknown variable {:?}: {}", w.variable, w.message);
        prop_assert!(!warned.contains(&w.variable), "two warnings for {}: {warnings:?}", w.variable);
        warned.push(w.variable);
        let raw = env.get(w.variable);
        prop_assert!(
            raw.is_some_and(|r| !r.trim().is_empty()),
            "warning for {} which is unset or blank: {}",
            w.variable,
            w.message
        );
        prop_assert_eq!(Some(&w.value), raw, "the warning's value is the variable's value");
        let m = &w.message;
        // The note of settings no policy of the run reads names them first, without their values.
        let note = !w.no_effect.is_empty();
        let first = if note { w.variable.to_string() } else { format!("{}=\"", w.variable) };
        prop_assert!(m.starts_with(&first), "the warning names its variable first: {m}");
        prop_assert!(
            m.contains("using the default")
                || (w.variable == KEPT_AS_WRITTEN && m.contains("kept as written"))
                || (note && m.contains("ignored")),
            "the warning says what is used instead: {m}"
        );
        if note {
            let policies = s.ab.as_ref().map_or(vec![s.engine.policy], |l| l.0.clone());
            prop_assert!(!policies.iter().any(|p| p.is_automatic()), "a note under an automatic policy: {m}");
        }
        prop_assert!(
            m.chars().count() <= MAX_WARNING_CHARS,
            "warning of {} characters for a {}-byte value",
            m.chars().count(),
            w.value.len()
        );
        // Quoted safely: nothing that moves the cursor, clears the line, or reorders text.
        let bad = m.chars().find(|&c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}'));
        prop_assert!(bad.is_none(), "warning carries {bad:?} unescaped: {m:?}");
    }
    // Whatever the input, what comes out is within the documented ranges.
    let e = &s.engine;
    prop_assert!(e.lambda.is_finite() && e.lambda > 0.0 && e.lambda <= 1000.0, "lambda {}", e.lambda);
    prop_assert!(e.sigma.is_finite() && e.sigma > 0.0 && e.sigma <= 1000.0, "sigma {}", e.sigma);
    prop_assert!(e.freshness <= 1_000_000, "freshness {}", e.freshness);
    prop_assert!(e.threshold_bytes <= 1 << 50, "threshold {}", e.threshold_bytes);
    prop_assert!((REQUIRED_EVENTS..=EVENTS.len()).contains(&s.papi_events.len()), "{:?}", s.papi_events);
    prop_assert!(
        s.papi_events.iter().all(|n| !n.is_empty() && !n.contains(char::is_whitespace)),
        "{:?}",
        s.papi_events
    );
    prop_assert_ne!(e.low_latency_mode, e.low_stall_mode, "the two sides have two modes");
    for v in [&s.papi_library, &s.trace, &s.output_dir].into_iter().flatten() {
        prop_assert!(!v.trim().is_empty() && v.trim() == v, "kept text is trimmed and not blank: {v:?}");
    }
    // Unset means the default, without a warning (blank: see above).
    let (unset, w) = Settings::from_lookup(&|_: &str| None);
    prop_assert!(w.is_empty());
    prop_assert_eq!(&unset, &Settings::default());
    // A variable that was warned about keeps its default: the settings are the same as with
    // that variable unset.
    // (The note's variables keep their values: not refused, only of no effect.)
    let noted: Vec<&str> = warnings.iter().filter(|w| !w.no_effect.is_empty()).map(|w| w.variable).collect();
    for v in warned.iter().filter(|&&v| v != KEPT_AS_WRITTEN && !noted.contains(&v)) {
        let (without, _) = Settings::from_lookup(&|k: &str| if k == *v { None } else { env.get(k).cloned() });
        prop_assert_eq!(&without, &s, "{} was warned about but does not keep its default", v);
    }
    // Parsing is a function of the variables only.
    let (again, w2) = Settings::from_lookup(&|k: &str| env.get(k).cloned());
    prop_assert_eq!(again, s);
    prop_assert_eq!(w2, warnings);
    Ok(())
}

proptest! {
    // 500 environments: each holds one or two huge values on average (2 of the 36 weights of
    // `value`, 26 variables), which the warnings escape whole before they cut them, about 25 ms
    // a case; `each_variable_alone` below tries 2000 single variables.
    #![proptest_config(aar_testkit::proptest_config(500))]

    #[test]
    fn settings_never_panic_and_warnings_are_bounded(env in environment()) {
        check_settings(&env)?;
    }
}

proptest! {
    #![proptest_config(aar_testkit::proptest_config(2000))]

    /// One variable at a time, so that a value the other variables' warnings would hide is seen.
    #[test]
    fn each_variable_alone(var in prop::sample::select(&VARIABLES[..]), v in value()) {
        let env: HashMap<&'static str, String> = v.map(|v| (var.0, v)).into_iter().collect();
        check_settings(&env)?;
    }
}

/// Every variable alone with every token, and with text that cuts a multi-byte character at
/// the offsets the parsers slice at.
#[test]
fn edge_values_for_every_variable() {
    let long = "x".repeat(5000);
    let extra = ["ADAPTIVEé", "aaaaaaaé", "aaaaaaaaé", "ADAPTIVE_é", "GNI_DLVMODE€", "GNI_DLVMODé", long.as_str()];
    for (name, _) in VARIABLES {
        for t in TOKENS.iter().copied().chain(extra) {
            let env: HashMap<&'static str, String> = [(name, t.to_string())].into_iter().collect();
            let r = std::panic::catch_unwind(|| check_settings(&env));
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => panic!("{name}={t:?}: {e}"),
                Err(_) => panic!("Settings::from_lookup panicked on {name}={t:?}"),
            }
        }
    }
}
