//! The parser against hand-written cases: defaults, good values, one warning per bad value.

use super::*;
use aar_engine::Policy;
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
    assert_eq!((s.engine.window_decisions, s.engine.steady.window_decisions), (8, 1), "steady's own window");
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
        ("AAR_LAMBDA", "0.001"),
        ("AAR_SIGMA", "3"),
        ("AAR_FRESHNESS", "0"),
        ("AAR_WINDOW", "1"),
        ("AAR_LOW_LATENCY_MODE", "adaptive2"),
        ("AAR_LOW_STALL_MODE", "ADAPTIVE_1"),
        ("AAR_LATENCY_UNIT", "cycles"),
        ("AAR_PAPI_EVENTS", "a,b,c,d"),
        ("AAR_TRACE", "/tmp/t.%r.jsonl"),
        ("AAR_LOG", " Debug "),
        ("AAR_TEST_PANIC", "after-forward"),
        ("AAR_ALLTOALL", "off"),
    ]);
    // Taken, every one: the one warning is the note that ADAPTIVE_2 reads λ, σ, the freshness and
    // the alltoall switch not (settings_no_policy_of_the_run_reads_get_one_note).
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.contains(NO_EFFECT), "{}", w[0]);
    assert!(s.disabled);
    assert_eq!(s.engine.policy, Policy::Fixed(RoutingMode::Adaptive2));
    assert_eq!(s.engine.threshold_bytes, 8192);
    assert_eq!(s.engine.lambda, 0.001);
    assert_eq!(s.engine.sigma, 3.0);
    assert_eq!(s.engine.freshness, 0);
    assert_eq!((s.engine.window_decisions, s.engine.steady.window_decisions), (1, 1));
    assert_eq!(s.engine.low_latency_mode, RoutingMode::Adaptive2);
    assert_eq!(s.engine.low_stall_mode, RoutingMode::Adaptive1);
    assert_eq!(s.engine.latency_unit, LatencyUnit::Cycles);
    assert_eq!(s.papi_events, ["a", "b", "c", "d"]);
    assert_eq!(s.trace.as_deref(), Some("/tmp/t.%r.jsonl"));
    assert_eq!(s.log, Some(LevelFilter::DEBUG));
    assert_eq!(s.test_panic, Some(TestPanic::AfterForward));
    assert!(!s.alltoall_hook);
    assert_eq!(parse(&[("AAR_MODE", "off")]).0.engine.policy, Policy::Off);
    assert_eq!(parse(&[("AAR_MODE", "Auto")]).0.engine.policy, Policy::Auto);
}

/// Booleans in every spelling, `Y`/`N` as Cray's tools and CMake write them among them; a bad
/// one is told the spellings.
#[test]
fn booleans_are_taken_as_users_write_them() {
    for (text, on) in [("1", true), ("yes", true), ("Y", true), ("y", true), ("N", false), ("n", false), ("Off", false)]
    {
        let (s, w) = parse(&[("AAR_SUMMARY", text), ("AAR_ALLTOALL", text)]);
        assert!(w.is_empty(), "{text}: {w:?}");
        assert_eq!((s.summary, s.alltoall_hook), (on, on), "{text}");
    }
    let (s, w) = parse(&[("AAR_SUMMARY", "yep")]);
    assert!(s.summary);
    assert!(w[0].message.ends_with("Use 1/0, true/false, yes/no, y/n or on/off."), "{}", w[0].message);
}

/// Under a fixed mode or `off` (and in an A/B run of such policies only), the settings only the
/// automatic policies read get one note naming those given; their values are kept. A policy list
/// with an automatic one, an automatic AAR_MODE, or a value already refused, gets none.
#[test]
fn settings_no_policy_of_the_run_reads_get_one_note() {
    let given = [
        ("AAR_LAMBDA", "2"),
        ("AAR_SIGMA", "3"),
        ("AAR_FRESHNESS", "1"),
        ("AAR_ALLTOALL", "n"),
        ("AAR_WINDOW", "1"),
        ("AAR_LOW_LATENCY_MODE", "ADAPTIVE2"),
        ("AAR_THRESHOLD", "8K"),
        ("AAR_PAPI_EVENTS", "a,b,c,d"),
    ];
    let with = |mode: (&'static str, &'static str)| [&given[..], &[mode]].concat();
    // A fixed mode reads the window, the side modes, the threshold and the counters (its records).
    let (s, w) = parse(&with(("AAR_MODE", "ADAPTIVE0")));
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!((w[0].variable, w[0].value.as_str()), ("AAR_LAMBDA", "2"));
    let m = &w[0].message;
    assert!(
        m.starts_with(
            "AAR_LAMBDA, AAR_SIGMA, AAR_FRESHNESS, AAR_ALLTOALL have no effect under AAR_MODE=\"ADAPTIVE0\", which does \
             not read them (auto and steady do): they are ignored. To make them count, set AAR_MODE=auto (or steady); \
             else unset them."
        ),
        "{m}"
    );
    assert!(m.contains("aar_set_auto"), "{m}");
    assert_eq!((s.engine.lambda, s.engine.sigma, s.engine.freshness, s.alltoall_hook), (2.0, 3.0, 1, false), "kept");
    // `off` reads neither the window nor the side modes: its windows have no side.
    let (_, w) = parse(&with(("AAR_MODE", "off")));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].message.starts_with(
            "AAR_LAMBDA, AAR_SIGMA, AAR_FRESHNESS, AAR_ALLTOALL, AAR_WINDOW, AAR_LOW_LATENCY_MODE have no effect under \
             AAR_MODE=\"off\""
        ),
        "{}",
        w[0]
    );
    // An A/B run of fixed modes only: the fix is in AAR_AB.
    let (_, w) = parse(&with(("AAR_AB", "ADAPTIVE0,off")));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.contains("under AAR_AB=\"ADAPTIVE0,off\", whose policies do not read them"), "{}", w[0]);
    assert!(w[0].message.contains("add auto or steady to AAR_AB"), "{}", w[0]);
    assert!(!w[0].message.contains("AAR_WINDOW"), "ADAPTIVE0 reads it: {}", w[0]);
    assert!(!w[0].message.contains("aar_set_auto"), "refused in an A/B run: {}", w[0]);
    // One variable: said in the singular.
    let (_, w) = parse(&[("AAR_MODE", "ADAPTIVE_3"), ("AAR_SIGMA", "3")]);
    assert!(
        w[0].message.starts_with("AAR_SIGMA has no effect under AAR_MODE=\"ADAPTIVE_3\", which does not read it"),
        "{}",
        w[0]
    );
    assert!(w[0].message.contains("it is ignored. To make it count"), "{}", w[0]);
    // A value refused keeps its own warning and its default, and is not named again.
    let (_, w) = parse(&[("AAR_MODE", "ADAPTIVE0"), ("AAR_LAMBDA", "nan"), ("AAR_SIGMA", "3")]);
    let vars: Vec<_> = w.iter().map(|w| w.variable).collect();
    assert_eq!(vars, ["AAR_LAMBDA", "AAR_SIGMA"], "{w:?}");
    assert!(w[1].message.starts_with("AAR_SIGMA has no effect"), "{}", w[1]);
    // No note where an automatic policy runs, or none of those variables is given.
    for quiet in [
        with(("AAR_MODE", "auto")),
        with(("AAR_MODE", "steady")),
        given.to_vec(),
        with(("AAR_AB", "ADAPTIVE0,auto")),
        with(("AAR_AB", "off,steady,ADAPTIVE3")),
        vec![("AAR_MODE", "ADAPTIVE0"), ("AAR_WINDOW", "1"), ("AAR_THRESHOLD", "0"), ("AAR_LATENCY_UNIT", "cycles")],
        vec![("AAR_MODE", "off"), ("AAR_THRESHOLD", "0"), ("AAR_NODE_READING", "0"), ("AAR_TRACE", "t")],
        vec![("AAR_MODE", "ADAPTIVE0"), ("AAR_LAMBDA", " ")],
    ] {
        let (_, w) = parse(&quiet);
        assert!(w.is_empty(), "{quiet:?}: {w:?}");
    }
    // AAR_MODE refused: the default, auto, reads them all.
    let (_, w) = parse(&with(("AAR_MODE", "fast")));
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].variable, "AAR_MODE");
}

#[test]
fn node_reading_ages_in_their_units() {
    for (text, ns) in [
        ("0", 0),
        ("750", 750),
        ("750ns", 750),
        ("5us", 5_000),
        (" 2 ms ", 2_000_000),
        ("1000ms", 1_000_000_000),
        ("+5us", 5_000),
    ] {
        let (s, w) = parse(&[("AAR_NODE_READING", text)]);
        assert!(w.is_empty(), "{text}: {w:?}");
        assert_eq!(s.node_reading, ReadingAge(ns), "{text}");
        assert_eq!(s.node_reading.to_string().parse::<ReadingAge>(), Ok(s.node_reading), "shown as it parses");
    }
    assert_eq!(Settings::default().node_reading.to_string(), "5us");
    assert!("1001ms".parse::<ReadingAge>().is_err());
    for bad in ["+", "++5us", "+-5", "-5us"] {
        assert!(bad.parse::<ReadingAge>().is_err(), "{bad}");
    }
}

#[test]
fn each_bad_value_warns_once_naming_variable_value_and_default() {
    let cases = [
        ("AAR_DISABLE", "maybe", "0"),
        ("AAR_MODE", "fast", "auto"),
        ("AAR_MODE", "IN_ORDER", "auto"),
        ("AAR_THRESHOLD", "-1", "4096"),
        ("AAR_THRESHOLD", "4 EB", "4096"),
        ("AAR_THRESHOLD", "99999999999999999999", "4096"),
        ("AAR_LAMBDA", "nan", "1.2"),
        ("AAR_LAMBDA", "0", "1.2"),
        ("AAR_SIGMA", "inf", "5"),
        ("AAR_SIGMA", "-5", "5"),
        ("AAR_LAMBDA", "1e-300", "1.2"),
        ("AAR_SIGMA", "0.0009", "5"),
        ("AAR_SIGMA", "1000.5", "5"),
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
        ("AAR_LOG", "chatty", "logging off"),
        ("AAR_TEST_PANIC", "during", "unset"),
        ("AAR_SUMMARY", "loud", "1"),
        ("AAR_DMAPP_ROUTING", "ADAPTIVE=2", "(the"),
        ("AAR_DMAPP_ROUTING", "ADAPTIVE=2,ADAPTIVE_1=2,ADAPTIVE_2=5,ADAPTIVE_3=6", "(the"),
        ("AAR_DMAPP_ROUTING", "fast", "(the"),
        ("AAR_NODE_READING", "5 s", "5us"),
        ("AAR_NODE_READING", "2ms5", "5us"),
        ("AAR_NODE_READING", "-1us", "5us"),
        ("AAR_NODE_READING", "18446744073709551615ms", "5us"),
        ("AAR_TRACE_MAX", "0", "1G"),
        ("AAR_TRACE_MAX", "2 EB", "1G"),
        ("AAR_TRACE_MAX", "-1K", "1G"),
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

/// A size past the largest is said to be one, not to be no size at all; a factor's example is
/// its own default.
#[test]
fn a_size_too_large_and_a_bad_factor_are_said_as_what_they_are() {
    for (var, value) in [("AAR_THRESHOLD", "1025T"), ("AAR_TRACE_MAX", "2P")] {
        let (_, w) = parse(&[(var, value)]);
        assert!(w[0].message.contains(&format!("{var}=\"{value}\" is not a size in bytes ")), "{:?}", w[0]);
        let problem = w[0].message.split("; using").next().unwrap_or_default();
        assert!(problem.contains("at most 1P"), "{:?}", w[0]);
    }
    let (_, w) = parse(&[("AAR_SIGMA", "0")]);
    assert!(w[0].message.ends_with("(e.g. 5)."), "{:?}", w[0]);
    let (_, w) = parse(&[("AAR_LAMBDA", "0")]);
    assert!(w[0].message.ends_with("(e.g. 1.2)."), "{:?}", w[0]);
}

/// A node reading age past 64 bits is a whole number too large, not "no whole number".
#[test]
fn a_node_reading_age_too_large_for_64_bits_is_said_to_be_too_large() {
    for value in ["18446744073709551616", "99999999999999999999ns", "99999999999999999999 us"] {
        let (s, w) = parse(&[("AAR_NODE_READING", value)]);
        assert_eq!(w.len(), 1, "{value}: {w:?}");
        let m = &w[0].message;
        assert!(m.contains("(more than 1 s); using the default 5us"), "{m}");
        assert!(!m.contains("expected a whole number"), "{m}");
        assert_eq!(s.node_reading, ReadingAge::DEFAULT);
    }
    let (_, w) = parse(&[("AAR_NODE_READING", "5s")]);
    assert!(w[0].message.contains("(expected a whole number with an optional unit ns, us or ms)"), "{:?}", w[0]);
}

/// An event named twice is refused as such: PAPI would refuse the second as a conflict, said as
/// that event being unavailable, and one counter cannot stand for two quantities. The parser's
/// words are shown, so a list of 4 names is not said to be no list of 4 or 5 names without cause.
#[test]
fn a_papi_event_named_twice_is_refused_as_such() {
    for (value, why) in [
        ("a,b,a,d", "(entries 1 and 3 are the same event, \"a\")"),
        ("a,b,c,d, b", "(entries 2 and 5 are the same event, \"b\")"),
        ("a,b,c", "(3 names)"),
        ("a,b,,d", "(a name is empty"),
    ] {
        let (s, w) = parse(&[("AAR_PAPI_EVENTS", value)]);
        assert_eq!(w.len(), 1, "{value}: {w:?}");
        let m = &w[0].message;
        assert!(m.starts_with(&format!("AAR_PAPI_EVENTS={} is not a list", shown(value))), "{m}");
        assert!(m.contains(why) && m.contains("using the default (the five Aries"), "{value}: {m}");
        assert_eq!(s.papi_events, Settings::default().papi_events);
    }
}

#[test]
fn dmapp_routing_tables_and_their_source() {
    let text = "ADAPTIVE=4, adaptive_1=5,DMAPP_ROUTING_ADAPTIVE_2=6,ADAPTIVE_3=7,IN_ORDER=3";
    let (s, w) = parse(&[("AAR_DMAPP_ROUTING", text)]);
    assert!(w.is_empty(), "{w:?}");
    let (table, source) = s.dmapp_table();
    assert_eq!(source, TableSource::Variable);
    assert_eq!(table.to_string(), "IN_ORDER=3,ADAPTIVE=4,ADAPTIVE_1=5,ADAPTIVE_2=6,ADAPTIVE_3=7");
    assert_eq!(serde_json::to_value(&s).unwrap()["dmapp_routing"], table.to_string(), "shown as users write it");
    // Unset, or bad: the build's table, else the assumed one.
    let (unset, _) = parse(&[]).0.dmapp_table();
    let (bad, w) = parse(&[("AAR_DMAPP_ROUTING", "ADAPTIVE=2")]);
    assert_eq!(bad.dmapp_table().0, unset);
    assert!(w[0].message.contains("ADAPTIVE_1 has no value"), "the parser's words: {}", w[0].message);
    match built_table() {
        Some((t, path)) => assert_eq!(parse(&[]).0.dmapp_table(), (t, TableSource::Header(path))),
        None => assert_eq!(parse(&[]).0.dmapp_table(), (RoutingTable::ASSUMED, TableSource::Assumed)),
    }
    assert!(TableSource::Assumed.to_string().starts_with("assumed"));
}

#[test]
fn a_bad_dmapp_routing_table_is_named_by_its_entry_and_an_empty_one_counts_as_unset() {
    let value = "IN_ORDER=0,DETERMINISTIC=1,ADAPTIVE=2,DETERMINISTIC_1=3,ADAPTIVE_1=4,ADAPTIVE_2=5,ADAPTIVE_3=6,FOO=7";
    let (s, w) = parse(&[("AAR_DMAPP_ROUTING", value)]);
    assert_eq!(s.dmapp_routing, None);
    assert_eq!(w.len(), 1);
    let m = &w[0].message;
    assert!(m.starts_with(&format!("AAR_DMAPP_ROUTING=\"{}…\" is not a DMAPP routing table (entry 8, \"FOO=7\": the name is not one of IN_ORDER,", &value[..80])),
        "the value is shown cut, the entry whole: {m}"
    );
    assert!(m.contains("); using the default (") && m.contains("Give the values of the DMAPP_ROUTING_*"), "{m}");
    let (_, w) = parse(&[("AAR_DMAPP_ROUTING", "ADAPTIVE=4,ADAPTIVE_1=5,ADAPTIVE_2=6,ADAPTIVE_3=7,")]);
    assert!(w[0].message.contains("(entry 5 is empty: remove the comma too many)"), "{}", w[0].message);
    // Empty or blank is unset, as for every AAR_* variable, and the assumed table's source says
    // it may be.
    for empty in ["", " \t"] {
        let (s, w) = parse(&[("AAR_DMAPP_ROUTING", empty)]);
        assert!(w.is_empty() && s == Settings::default(), "{w:?}");
    }
    let assumed = TableSource::Assumed.to_string();
    assert!(assumed.contains("unset or empty, or its value was refused with a warning"), "{assumed}");
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
fn blank_means_default_and_hostile_text_is_quoted_safely() {
    let (s, w) = parse(&[("AAR_MODE", "   "), ("AAR_THRESHOLD", "")]);
    assert!(w.is_empty());
    assert_eq!(s, Settings::default());
    let (_, w) = parse(&[("AAR_MODE", "x\n\u{1b}[31m\"")]);
    assert_eq!(w.len(), 1);
    assert!(!w[0].message.contains('\n') && !w[0].message.contains('\u{1b}'), "{}", w[0].message);
}

#[test]
fn parse_boundaries() {
    assert_eq!("markers".parse::<Boundary>(), Ok(Boundary::Markers));
    assert_eq!("MPI_Barrier".parse::<Boundary>(), Ok(Boundary::Mpi { function: MpiFunction::Barrier, every: 1 }));
    assert_eq!(
        " mpi_allreduce:2 ".parse::<Boundary>(),
        Ok(Boundary::Mpi { function: MpiFunction::Allreduce, every: 2 })
    );
    for f in MpiFunction::ALL {
        let b = Boundary::Mpi { function: f, every: 7 };
        assert_eq!(b.to_string().parse::<Boundary>(), Ok(b));
    }
    for bad in ["", "MPI_Send", "MPI_Barrier:0", "MPI_Barrier:-1", "MPI_Barrier:x", "MPI_Barrier:", "markers:2"] {
        assert!(bad.parse::<Boundary>().is_err(), "{bad}");
    }
    assert_eq!(Boundary::Mpi { function: MpiFunction::Bcast, every: 1 }.to_string(), "MPI_Bcast:1");
    // The largest call count is taken; above it the message says where the counts end.
    let most = format!("MPI_Bcast:{MAX_BOUNDARY_EVERY}");
    assert_eq!(most.parse::<Boundary>(), Ok(Boundary::Mpi { function: MpiFunction::Bcast, every: MAX_BOUNDARY_EVERY }));
    let e = format!("MPI_Bcast:{}", MAX_BOUNDARY_EVERY + 1).parse::<Boundary>().unwrap_err();
    assert!(e.ends_with("that is not a whole number from 1 to 1000000000"), "{e}");
    // A large-count form is counted with its function, which the message names.
    let e = "MPI_Allreduce_c:2".parse::<Boundary>().unwrap_err();
    assert!(e.contains("names a large-count form: name its function, MPI_Allreduce"), "{e}");
    for not_a_form in ["MPI_Barrier_c", "MPI_c", "_c"] {
        let e = not_a_form.parse::<Boundary>().unwrap_err();
        assert!(e.starts_with("is not markers"), "{not_a_form}: {e}");
    }
}

#[test]
fn records_show_the_settings_as_users_write_them() {
    let json = |vars: &[(&str, &str)]| serde_json::to_value(parse(vars).0).unwrap();
    let d = json(&[]);
    assert_eq!(d["engine"]["threshold_bytes"], 4096);
    assert_eq!(d["engine"]["policy"]["kind"], "auto");
    assert_eq!(d["engine"]["low_latency_mode"], "ADAPTIVE3");
    assert_eq!(d["ab_boundary"], "markers");
    assert_eq!(d["ab_order"], "round-robin");
    assert!(d["ab"].is_null() && d["output_ranks"].is_null() && d["log"].is_null() && d["test_panic"].is_null());
    assert_eq!(d["papi_events"][0], "AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_FLITS");
    let vars = [
        ("AAR_AB", "ADAPTIVE0,ADAPTIVE_3,auto"),
        ("AAR_AB_ORDER", "shuffled:7"),
        ("AAR_AB_BOUNDARY", "mpi_allreduce:2"),
        ("AAR_OUTPUT_RANKS", "0:3, 8"),
        ("AAR_LOG", "DEBUG"),
        ("AAR_TEST_PANIC", "before-forward"),
    ];
    let s = json(&vars);
    let first = parse(&vars).0.ab_schedule().unwrap().policy_at(0);
    assert_eq!(s["ab"], "ADAPTIVE0,ADAPTIVE3,auto");
    assert_eq!(s["ab_order"], "shuffled:7");
    assert_eq!(s["ab_boundary"], "MPI_Allreduce:2");
    assert_eq!(s["output_ranks"], "0:3,8");
    assert_eq!(s["log"], "debug");
    assert_eq!(s["test_panic"], "before-forward");
    assert_eq!(s["engine"]["policy"], serde_json::to_value(first).unwrap(), "iteration 0's policy");
}

#[test]
fn records_are_written_by_the_ranks_named() {
    let (s, _) = parse(&[("AAR_OUTPUT_DIR", "/tmp"), ("AAR_OUTPUT_RANKS", "0:1,5")]);
    assert!(s.writes_records(Some(5)) && s.writes_records(None) && !s.writes_records(Some(2)));
    assert!(!parse(&[]).0.writes_records(Some(0)), "no folder, no records");
    assert!(parse(&[("AAR_OUTPUT_DIR", "/tmp")]).0.writes_records(Some(4096)));
}

#[test]
fn relative_output_and_trace_paths_are_anchored_at_the_start_up_folder() {
    let (mut s, _) = parse(&[("AAR_OUTPUT_DIR", "records"), ("AAR_TRACE", "t/%r.jsonl")]);
    s.anchor_paths(Path::new("/scratch/run"));
    assert_eq!(s.output_dir.as_deref(), Some("/scratch/run/records"));
    assert_eq!(s.trace.as_deref(), Some("/scratch/run/t/%r.jsonl"));
    // Absolute paths, and unset ones, stay as they are.
    let (mut s, _) = parse(&[("AAR_OUTPUT_DIR", "/lus/aar-records")]);
    s.anchor_paths(Path::new("/scratch/run"));
    assert_eq!(s.output_dir.as_deref(), Some("/lus/aar-records"));
    assert_eq!(s.trace, None);
}

#[test]
fn unknown_variables_are_the_aar_names_nobody_reads_and_a_near_one_is_named() {
    let env =
        ["AAR_MODE", "AAR_MOED", "AAR_EMU_LOG", "AAR_PRELOAD", "AAR_BENCH_DIR", "PATH", "AAR_ZZZ_TOP", "AAR_TRESHOLD"];
    assert_eq!(unknown_variables(env.map(String::from)), ["AAR_MOED", "AAR_TRESHOLD", "AAR_ZZZ_TOP"]);
    // A name the environment holds twice (execve takes any list) is one unknown variable.
    let twice = ["AAR_MOED", "PATH", "AAR_MOED"].map(String::from);
    assert_eq!(unknown_variables(twice), ["AAR_MOED"]);
    // Two neighbours swapped, a letter left out, one added, one changed: one edit each.
    assert_eq!(misspelt("AAR_MOED"), Some("AAR_MODE"));
    assert_eq!(misspelt("AAR_TRESHOLD"), Some("AAR_THRESHOLD"));
    assert_eq!(misspelt("AAR_MODES"), Some("AAR_MODE"));
    assert_eq!(misspelt("AAR_OUTPUT_DIT"), Some("AAR_OUTPUT_DIR"));
    // Three edits away from every variable: no guess.
    assert_eq!(misspelt("AAR_ZZZ_TOP"), None);
    assert_eq!(misspelt("AAR_MO"), Some("AAR_MODE"), "two edits, as AAR_AB: a tie goes to the first in the table");
    assert_eq!(edits(b"kitten", b"sitting"), 3);
    assert_eq!(edits(b"ab", b"ba"), 1);
    assert_eq!(edits(b"", b"abc"), 3);
    assert_eq!(edits(b"ca", b"abc"), 3, "a swap is not edited again (optimal string alignment)");
    let w = unknown_variable_warning("AAR_MOED");
    assert!(w.starts_with("AAR_MOED is set but libaar.so does not read it (did you mean AAR_MODE?)"), "{w}");
    assert!(unknown_variable_warning("AAR_ZZZ_TOP").contains("(a typo? a variable of another version?)"));
}

#[test]
fn a_value_that_is_not_utf8_is_ignored_with_one_warning() {
    // The environment's bytes, as `from_environment` passes them: U+FFFD where they are not UTF-8.
    let lookup = |k: &str| match k {
        "AAR_MODE" | "AAR_OUTPUT_DIR" => Some(Err(format!("{k}-\u{FFFD}"))),
        "AAR_AB" => Some(Ok("ADAPTIVE0,ADAPTIVE3".to_string())),
        _ => None,
    };
    let (s, w) = Settings::parse(&lookup);
    assert_eq!(s.output_dir, None);
    assert_eq!(s.ab, Some("ADAPTIVE0,ADAPTIVE3".parse().unwrap()));
    // AAR_MODE, which an A/B run reads only to say it is ignored, is one warning too.
    let vars: Vec<_> = w.iter().map(|w| w.variable).collect();
    assert_eq!(vars, ["AAR_MODE", "AAR_OUTPUT_DIR"], "{w:?}");
    assert!(
        w[1].message.starts_with("AAR_OUTPUT_DIR=\"AAR_OUTPUT_DIR-\u{FFFD}\" is not valid UTF-8"),
        "{}",
        w[1].message
    );
    assert_eq!(w[1].value, "AAR_OUTPUT_DIR-\u{FFFD}");
}

#[test]
fn the_readme_settings_table_lists_exactly_the_variables_read() {
    let readme = include_str!("../../README.md");
    let start = readme.find("\n## Settings\n").expect("README has a Settings section");
    let section = &readme[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |e| e + 1)];
    let mut documented: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .filter(|n| n.starts_with("AAR_"))
        .collect();
    let mut read: Vec<&str> = VARIABLES.iter().map(|(n, _)| *n).collect();
    documented.sort_unstable();
    read.sort_unstable();
    assert_eq!(documented, read, "README's Settings table against settings::VARIABLES");
}

/// A parser's message is kept whole, its example included; only the long values it quotes are cut
/// (with `…`, the quote closed).
#[test]
fn a_parser_s_message_is_whole_and_its_quoted_values_are_cut() {
    let (_, w) = parse(&[("AAR_TRACE_MAX", "-1")]);
    assert_eq!(w.len(), 1);
    assert!(w[0].message.contains("e.g. 4096, 64K, 1MiB); using the default 1G"), "{}", w[0].message);
    let long = format!("ADAPTIVE0,{}", "x".repeat(300));
    let (_, w) = parse(&[("AAR_AB", &long)]);
    assert_eq!(w.len(), 1);
    let quoted = format!("(\"{}…\" is not a policy", "x".repeat(40));
    assert!(w[0].message.contains(&quoted), "{}", w[0].message);
    assert!(w[0].message.len() < 600, "{}", w[0].message);
}

#[test]
fn one_mode_for_both_sides_gives_the_variable_set_to_it_its_default() {
    use RoutingMode::{Adaptive0 as A0, Adaptive2 as A2, Adaptive3 as A3};
    let cases = [
        (&[("AAR_LOW_LATENCY_MODE", "ADAPTIVE0")][..], "AAR_LOW_LATENCY_MODE", (A3, A0)),
        (&[("AAR_LOW_STALL_MODE", "adaptive_3")][..], "AAR_LOW_STALL_MODE", (A3, A0)),
        (
            &[("AAR_LOW_LATENCY_MODE", "ADAPTIVE0"), ("AAR_LOW_STALL_MODE", "ADAPTIVE0")][..],
            "AAR_LOW_LATENCY_MODE",
            (A3, A0),
        ),
        (
            &[("AAR_LOW_LATENCY_MODE", "ADAPTIVE3"), ("AAR_LOW_STALL_MODE", "ADAPTIVE3")][..],
            "AAR_LOW_STALL_MODE",
            (A3, A0),
        ),
        (
            &[("AAR_LOW_LATENCY_MODE", "ADAPTIVE2"), ("AAR_LOW_STALL_MODE", "ADAPTIVE2")][..],
            "AAR_LOW_STALL_MODE",
            (A2, A0),
        ),
    ];
    for (vars, variable, modes) in cases {
        let (s, w) = parse(vars);
        assert_eq!((s.engine.low_latency_mode, s.engine.low_stall_mode), modes, "{vars:?}");
        assert_eq!(w.len(), 1, "{vars:?}: {w:?}");
        assert_eq!(w[0].variable, variable, "{vars:?}");
        let m = &w[0].message;
        assert!(m.contains("could never switch") && m.contains("using the default"), "{m}");
    }
    let (s, w) = parse(&[("AAR_LOW_LATENCY_MODE", "ADAPTIVE2"), ("AAR_LOW_STALL_MODE", "ADAPTIVE1")]);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!((s.engine.low_latency_mode, s.engine.low_stall_mode), (A2, RoutingMode::Adaptive1));
}

#[test]
fn a_value_shown_cut_is_marked_and_one_shown_whole_is_not() {
    for (len, shown) in [(80, "x".repeat(80)), (81, format!("{}…", "x".repeat(80)))] {
        let value = "x".repeat(len);
        let (_, w) = parse(&[("AAR_WINDOW", &value)]);
        assert!(w[0].message.starts_with(&format!("AAR_WINDOW=\"{shown}\" ")), "{len}: {}", w[0].message);
    }
}
