//! DMAPP under libaar.so: every data call forwarded once with its data and return code, the
//! routing attribute set only when the decision changes, per thread, never over the
//! application's non-adaptive choice, given back when the library stops routing, and the
//! fail-safe stop when this DMAPP's attributes are not what the library assumes. The emulator's
//! post log names every data call with the routing in force for it, and every attribute set call.

mod common;
use aar_abi::dmapp::{DMAPP_RC_INVALID_PARAM, DMAPP_RC_TRANSACTION_ERROR};
use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The emulator's values of the routing names (cabi/dmapp.h, the assumed table).
const IN_ORDER: u64 = 0;
const DETERMINISTIC: u64 = 1;
const ADAPTIVE: u64 = 2;
const DETERMINISTIC_1: u64 = 3;
const ADAPTIVE_3: u64 = 6;

fn driver(test: &str, args: &str) -> Launch {
    Launch::program(test, dmapp_program("dmapp_driver", &[]), args)
}

/// The data calls the emulator received, in order.
fn data_calls(r: &Run) -> Vec<&Value> {
    r.log.iter().filter(|v| v.get("kind").is_some()).collect()
}

/// The attribute set calls it received.
fn sets(r: &Run) -> Vec<&Value> {
    r.log.iter().filter(|v| v["call"].as_str().is_some_and(|c| c.starts_with("dmapp_set_rma_attrs"))).collect()
}

/// The routing values of the data calls of one kind (PUT, GET, AMO), in order.
fn routings(r: &Run, kind: &str) -> Vec<u64> {
    data_calls(r).iter().filter(|v| v["kind"] == kind).map(|v| v["routing"].as_u64().unwrap()).collect()
}

/// Lines the library printed other than the summary.
fn warnings(r: &Run) -> Vec<&str> {
    r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect()
}

fn record(r: &Run) -> Value {
    let recs = r.records();
    assert_eq!(recs.len(), 1, "one record");
    recs[0].clone()
}

#[test]
fn every_data_call_is_forwarded_once_with_its_data_and_return_code() {
    let script = "init all errors put 1 64 3 get 1 64 2 ixpe 3 64 amo 5 form nb put 2 4096 2 get 2 4096 2 \
                  form nbi put 3 65536 3 get 3 65536 1";
    let r = driver("dmapp-forward", script).run();
    r.assert_ok();
    // The program checked every byte and every AMO result; it counted its own calls by name.
    let called: BTreeMap<String, u64> = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("called "))
        .map(|l| {
            let (name, n) = l.split_once('=').unwrap();
            (name.to_string(), n.parse().unwrap())
        })
        .collect();
    assert_eq!(called.len(), 67, "every interposed data call was made: {called:?}");
    let mut received: BTreeMap<String, u64> = BTreeMap::new();
    for v in data_calls(&r) {
        *received.entry(v["call"].as_str().unwrap().to_string()).or_default() += 1;
    }
    assert_eq!(received, called, "each call reached the emulator exactly once");
    assert_eq!(stdout_field(&r.stdout, "calls"), stdout_field(&r.stdout, "emu_calls"));
    // Return codes: what the program saw is what the emulator returned, errors included.
    let seen: Vec<(String, u64)> = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("rc "))
        .map(|l| {
            let (name, rc) = l.split_once('=').unwrap();
            (name.to_string(), rc.parse().unwrap())
        })
        .collect();
    let returned: Vec<(String, u64)> = data_calls(&r)
        .iter()
        .filter(|v| v["rc"] != 0)
        .map(|v| (v["call"].as_str().unwrap().to_string(), v["rc"].as_u64().unwrap()))
        .collect();
    assert_eq!(seen.len(), 7);
    assert_eq!(returned, seen, "the emulator's errors came back unchanged");
    // The record counts every message that went out, as the emulator did: one per target PE,
    // nelems x element size each (AMOs 8), in the API's own totals; those of the calls DMAPP
    // refused apart.
    let rec = record(&r);
    let (went_out, refused): (Vec<&Value>, Vec<&Value>) = data_calls(&r).into_iter().partition(|v| v["rc"] == 0);
    let messages: u64 = went_out.iter().map(|v| v["messages"].as_u64().unwrap()).sum();
    let bytes: u64 = went_out.iter().map(|v| v["messages"].as_u64().unwrap() * v["bytes"].as_u64().unwrap_or(0)).sum();
    assert_eq!(rec["apis"]["DMAPP"]["messages"], messages, "{}", rec["apis"]);
    assert_eq!(rec["apis"]["DMAPP"]["bytes"], bytes);
    let refused: u64 = refused.iter().map(|v| v["messages"].as_u64().unwrap()).sum();
    assert!(refused > 0);
    assert_eq!(rec["apis"]["DMAPP"]["refused"], refused, "{}", rec["apis"]);
    assert_eq!(rec["apis"]["uGNI"]["messages"], 0);
    let modes: u64 = rec["modes"].as_object().unwrap().values().map(|m| m["messages"].as_u64().unwrap()).sum();
    assert_eq!(modes, messages);
    // Without the library: the same output and the same calls with the same arguments and results.
    let without = driver("dmapp-forward-without", script).no_preload().run();
    without.assert_ok();
    // (But for the attribute set calls the emulator counted, on the last line.)
    let before_sets = |out: &str| out.split(" sets=").next().unwrap().to_string();
    assert_eq!(before_sets(&r.stdout), before_sets(&without.stdout), "the library never writes to stdout");
    let strip = |r: &Run| -> Vec<String> {
        data_calls(r)
            .iter()
            .map(|v| format!("{} {} {} {} {}", v["call"], v["pes"], v["nelems"], v["type"], v["rc"]))
            .collect()
    };
    assert_eq!(strip(&r), strip(&without));
}

/// A DMAPP program loaded the way Python loads an extension module: dlopen() with RTLD_LOCAL, so
/// that it and libdmapp are outside the loader's global scope, where `dlsym(RTLD_NEXT)` from
/// libaar.so does not look. Every data call still reaches libdmapp, with the routing it gets in a
/// program that links libdmapp, and libdmapp stays loaded after the program is closed.
#[test]
fn a_dmapp_program_dlopened_with_rtld_local_is_forwarded_and_routed_as_when_linked() {
    let script = "init put 1 64 3 get 1 64 2 amo 5 form nbi put 3 65536 3 get 3 65536 1 put 2 64 2";
    let linked = driver("dmapp-linked", script).run();
    linked.assert_ok();
    let module = program_with("dmapp_driver", &["-shared", "-fPIC", "-Dmain=dmapp_main", "-ldmapp"]);
    // --as-needed: the host links no DMAPP or uGNI (compile adds -lugni).
    let host = program_with("dlopen_host", &["-Wl,--as-needed"]);
    // The emulator's counters are libsde's, which PAPI finds only in the global scope: preloaded,
    // libsde is there, as for a program that links the emulator.
    // Then the host closes the program, as a plugin framework closes a plugin it does not use:
    // libaar.so keeps loaded the libdmapp it forwards to, so that the addresses it keeps stay
    // valid; without libaar.so it is unloaded.
    let args = format!("--then-check libugni.so {} dmapp_main {script}", module.display());
    let local = Launch::program("dmapp-rtld-local", host.clone(), &args)
        .env("LD_PRELOAD", &format!("{} libsde.so.1", libaar().display()))
        .run();
    local.assert_ok();
    assert!(local.stdout.ends_with("libugni.so still loaded: yes\n"), "{}", local.stdout);
    let alone = Launch::program("dmapp-rtld-local-alone", host, &args).env("LD_PRELOAD", "libsde.so.1").run();
    alone.assert_ok();
    assert!(alone.stdout.ends_with("libugni.so still loaded: no\n"), "{}", alone.stdout);
    assert!(warnings(&local).is_empty(), "{:?}", warnings(&local));
    let calls = |r: &Run| -> Vec<String> {
        data_calls(r)
            .iter()
            .map(|v| format!("{} {} {} {} {}", v["call"], v["nelems"], v["type"], v["routing"], v["rc"]))
            .collect()
    };
    let routed: BTreeSet<u64> = data_calls(&local).iter().map(|v| v["routing"].as_u64().unwrap()).collect();
    assert_eq!(routed, BTreeSet::from([ADAPTIVE, ADAPTIVE_3]), "libaar.so routed them: {:?}", calls(&local));
    assert_eq!(calls(&local), calls(&linked));
    assert_eq!(record(&local)["apis"]["DMAPP"], record(&linked)["apis"]["DMAPP"]);
}

/// PMI loaded with the program the way Python loads an extension module (dlopen, RTLD_LOCAL): the
/// library still finds it, and takes the number of ranks on the node from PMI's clique, as when
/// the program links PMI. (The launcher's own count, `MPI_LOCALNRANKS`, is taken away.)
#[test]
fn pmi_dlopened_with_rtld_local_still_gives_the_ranks_on_the_node() {
    let linked = dmapp_program("dmapp_driver", &["-DWITH_PMI", "-lpmi"]);
    let module =
        program_with("dmapp_driver", &["-shared", "-fPIC", "-Dmain=dmapp_main", "-DWITH_PMI", "-lpmi", "-ldmapp"]);
    let host = program_with("dlopen_host", &["-Wl,--as-needed"]);
    let script = "pmi init put 1 65536 2";
    let aar = aar_command().display().to_string();
    let with_libsde = format!("{} libsde.so.1", libaar().display());
    for (test, program, args, preload) in [
        ("pmi-linked", linked, script.to_string(), libaar().display().to_string()),
        ("pmi-rtld-local", host, format!("{} dmapp_main {script}", module.display()), with_libsde),
    ] {
        let mut l = Launch::program(test, program, &args).env("LD_PRELOAD", &preload);
        l.wrapper = [aar.as_str(), "run", "-n", "2", "-N", "2", "--", "env", "-u", "MPI_LOCALNRANKS"]
            .map(String::from)
            .to_vec();
        let r = l.run();
        r.assert_ok();
        let recs = r.records();
        assert_eq!(recs.len(), 2, "{test}");
        for rec in &recs {
            assert_eq!(rec["node"]["ranks_per_node"], 2, "{test}: {}", rec["node"]);
        }
    }
}

/// What the emulator saw of one thread.
#[derive(Debug, Default)]
struct Thread {
    /// Attribute set calls.
    sets: u64,
    /// Changes of routing along its data calls (per direction, from the job's default), which
    /// each set call must account for.
    changes: u64,
    /// Bytes of each of its PUTs.
    put_sizes: BTreeSet<u64>,
}

fn threads(r: &Run) -> BTreeMap<u64, Thread> {
    let mut per: BTreeMap<u64, Thread> = BTreeMap::new();
    let mut in_force: BTreeMap<(u64, bool), u64> = BTreeMap::new();
    for v in &r.log {
        let Some(thread) = v["thread"].as_u64() else { continue };
        if v["call"].as_str().unwrap().starts_with("dmapp_set_rma_attrs") {
            per.entry(thread).or_default().sets += 1;
        } else if let Some(kind) = v["kind"].as_str() {
            let t = per.entry(thread).or_default();
            let routing = v["routing"].as_u64().unwrap();
            let before = in_force.insert((thread, kind == "GET"), routing).unwrap_or(ADAPTIVE);
            t.changes += u64::from(before != routing);
            if kind == "PUT" {
                t.put_sizes.insert(v["bytes"].as_u64().unwrap());
            }
        }
    }
    per
}

#[test]
fn attribute_sets_happen_only_when_the_decision_changes_per_thread() {
    // Automatic routing: 8 KiB PUTs decide on every call (the model may switch), 64 B ones stay
    // below the threshold; seven threads at once.
    let r = driver("dmapp-sets-auto", "init threads 4 8192 200 threads 3 64 500").run();
    r.assert_ok();
    let per = threads(&r);
    let workers: Vec<_> = per.iter().filter(|(_, t)| !t.put_sizes.is_empty()).collect();
    assert_eq!(workers.len(), 7, "{per:?}");
    for (id, t) in &per {
        assert_eq!(t.sets, t.changes, "thread {id}: one set call per change of routing, no other: {t:?}");
    }
    let small: Vec<_> = workers.iter().filter(|(_, t)| t.put_sizes.contains(&64)).collect();
    assert_eq!(small.len(), 3);
    assert!(small.iter().all(|(_, t)| t.sets >= 1), "64 B PUTs go High Bias: {small:?}");
    // Each thread reported the set calls made on it.
    for line in r.stdout.lines().filter(|l| l.starts_with("thread ")) {
        let tid = stdout_field(line, "tid");
        assert_eq!(stdout_field(line, "sets"), per[&tid].sets, "{line}");
    }
    let rec = record(&r);
    let total: u64 = per.values().map(|t| t.sets).sum();
    assert_eq!(rec["dmapp"]["attribute_sets"], total);
    assert_eq!(rec["dmapp"]["threads"], 7);
    // Every 8 KiB PUT crosses the threshold; one that finds another thread deciding is routed
    // without a decision of its own.
    let decisions = rec["engine"]["decisions"].as_u64().unwrap();
    assert!(decisions > 0 && decisions <= rec["apis"]["DMAPP"]["messages"].as_u64().unwrap(), "{decisions}");
    // A fixed mode: one set per thread and direction used, however many calls.
    let r = driver("dmapp-sets-fixed", "init threads 5 64 300 put 1 65536 20 get 1 65536 20")
        .env("AAR_MODE", "ADAPTIVE3")
        .run();
    r.assert_ok();
    for (id, t) in threads(&r).iter().filter(|(_, t)| !t.put_sizes.is_empty()) {
        assert_eq!((t.sets, t.changes), (2, 2), "thread {id}: PUT and GET set once each");
    }
    assert!(routings(&r, "PUT").iter().chain(&routings(&r, "GET")).all(|&v| v == ADAPTIVE_3));
}

#[test]
fn a_direction_the_application_made_in_order_or_deterministic_is_never_changed() {
    for (put, get, attrs) in [
        (IN_ORDER, ADAPTIVE, "attrs"),
        (DETERMINISTIC, ADAPTIVE, "attrs"),
        (DETERMINISTIC_1, ADAPTIVE, "attrs12"),
        (ADAPTIVE, IN_ORDER, "attrs12"),
        (ADAPTIVE, DETERMINISTIC, "attrs"),
        (ADAPTIVE, DETERMINISTIC_1, "attrs"),
    ] {
        let script = format!("init {attrs} {put} {get} put 1 64 5 get 1 64 5 amo 3 put 1 65536 5 get 1 65536 5");
        for mode in ["auto", "ADAPTIVE3"] {
            let r = driver(&format!("dmapp-intent-{put}-{get}-{mode}"), &script).env("AAR_MODE", mode).run();
            r.assert_ok();
            assert!(r.stdout.contains("attrs rc=0"), "{}", r.stdout);
            let steered = |app: u64, got: Vec<u64>| {
                if app == ADAPTIVE {
                    assert!(got.contains(&ADAPTIVE_3), "{mode}: the adaptive direction is steered: {got:?}");
                    assert!(got.iter().all(|&v| (2..=6).contains(&v) && v != 3), "only adaptive values: {got:?}");
                } else {
                    assert!(got.iter().all(|&v| v == app), "{mode}: the application's {app} kept: {got:?}");
                }
            };
            steered(put, routings(&r, "PUT"));
            steered(put, routings(&r, "AMO"));
            steered(get, routings(&r, "GET"));
            let ours: Vec<_> = sets(&r).into_iter().skip(1).collect();
            assert!(!ours.is_empty(), "{mode}: the library did steer the other direction");
            for s in ours {
                if put != ADAPTIVE {
                    assert_eq!(s["put_routing"], put, "{s}");
                }
                if get != ADAPTIVE {
                    assert_eq!(s["get_routing"], get, "{s}");
                }
            }
        }
    }
}

#[test]
fn the_applications_attributes_come_back_on_disable_on_off_and_across_ab_policies() {
    // aar_disable() and aar_enable().
    let r = driver("dmapp-disable", "init put 1 64 3 api disable put 1 64 3 get 1 64 2 api enable put 1 64 3").run();
    r.assert_ok();
    assert_eq!(routings(&r, "PUT"), [6, 6, 6, 2, 2, 2, 6, 6, 6]);
    assert_eq!(routings(&r, "GET"), [2, 2], "the GET attribute was never changed");
    assert_eq!(sets(&r).len(), 3, "to ADAPTIVE_3, back to the application's, to ADAPTIVE_3 again");
    // AAR_MODE=off: observed, never changed.
    let r = driver("dmapp-off", "init put 1 64 5 get 1 65536 5 amo 3").env("AAR_MODE", "off").run();
    r.assert_ok();
    assert!(data_calls(&r).iter().all(|v| v["routing"] == ADAPTIVE));
    assert!(sets(&r).is_empty());
    assert_eq!(record(&r)["apis"]["DMAPP"]["messages"], 15);
    // Switched off, and back to automatic, from the C API.
    let r = driver("dmapp-off-api", "init put 1 64 3 api name off put 1 64 3 api auto put 1 64 2").run();
    r.assert_ok();
    assert_eq!(routings(&r, "PUT"), [6, 6, 6, 2, 2, 2, 6, 6]);
    assert_eq!(sets(&r).len(), 3);
    // A/B iterations: ADAPTIVE_3, the application's own under off, ADAPTIVE_3 again.
    let r = driver(
        "dmapp-ab",
        "init iter begin put 1 64 3 iter end iter begin put 1 64 3 iter end iter begin put 1 64 3 iter end",
    )
    .env("AAR_AB", "ADAPTIVE3,off")
    .run();
    r.assert_ok();
    assert_eq!(routings(&r, "PUT"), [6, 6, 6, 2, 2, 2, 6, 6, 6]);
    assert_eq!(sets(&r).len(), 3);
    let (header, rows) = &iteration_records(&r.dir.join("out"))[0];
    let modes: Vec<&str> = header["modes"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    let column = |name: &str| modes.iter().position(|m| *m == name).unwrap();
    assert_eq!(rows.len(), 3);
    for (row, col) in rows.iter().zip([column("ADAPTIVE3"), column("ADAPTIVE0"), column("ADAPTIVE3")]) {
        assert_eq!(row["messages"][col], 3, "the iteration's DMAPP messages in its mode's column: {row}");
    }
}

#[test]
fn the_applications_own_get_modify_set_keeps_its_routing() {
    let r = driver("dmapp-getset", "init put 1 64 2 get 1 64 1 routing getset routing put 1 64 2 get 1 64 1 routing")
        .env("AAR_MODE", "ADAPTIVE3")
        .run();
    r.assert_ok();
    let lines: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("routing") || l.starts_with("getset")).collect();
    assert_eq!(
        lines,
        [
            "routing put=6 get=6",
            "getset saw put=2 get=2 base put=2 get=2",
            "getset rc=0",
            "routing put=2 get=2",
            "routing put=6 get=6"
        ],
        "the application reads its own routing, and its set keeps it"
    );
    let s = sets(&r);
    assert_eq!(s.len(), 5, "two by the library, the application's, two by the library: {s:?}");
    assert_eq!((&s[2]["put_routing"], &s[2]["get_routing"]), (&Value::from(2), &Value::from(2)), "{}", s[2]);
}

/// The (PUT, GET) routing of every attribute set call the emulator received, in order.
fn set_routings(r: &Run) -> Vec<(u64, u64)> {
    sets(r).iter().map(|s| (s["put_routing"].as_u64().unwrap(), s["get_routing"].as_u64().unwrap())).collect()
}

/// An application (a PGAS runtime, a SHMEM library) may state its routing at any time, also after
/// the library has steered the thread: from that call on the application's routing is what the
/// library keeps, gives back and never changes when it is not adaptive; made adaptive again, it is
/// steered again.
#[test]
fn the_applications_change_of_routing_between_calls_is_followed_and_never_overridden() {
    let script = "init put 1 64 3 attrs 0 2 put 1 64 3 get 1 64 2 api disable put 1 64 2 get 1 64 1 \
                  api enable put 1 64 2 attrs 2 2 put 1 64 3";
    let r = driver("dmapp-change", script).run();
    r.assert_ok();
    // 64 B PUTs go High Bias (ADAPTIVE_3) while the application's PUT routing is ADAPTIVE, and
    // keep IN_ORDER from the application's set on, disabled or not, until it makes them ADAPTIVE.
    assert_eq!(routings(&r, "PUT"), [6, 6, 6, 0, 0, 0, 0, 0, 0, 0, 6, 6, 6]);
    assert_eq!(routings(&r, "GET"), [6, 6, 2], "GET steered, then given back on disable");
    assert_eq!(
        set_routings(&r),
        [(6, 2), (0, 2), (0, 6), (0, 2), (2, 2), (6, 2)],
        "library, application, library (GET only), give-back (the application's IN_ORDER PUT in it), \
         application, library"
    );
    // The record counts the IN_ORDER PUTs as such, the steered ones as High Bias.
    let rec = record(&r);
    assert_eq!(rec["modes"]["IN_ORDER"]["messages"], 7, "{}", rec["modes"]);
    assert_eq!(rec["modes"]["ADAPTIVE3"]["messages"], 8, "{}", rec["modes"]);
}

/// A set call of the application's that DMAPP refuses changes nothing: not the routing in force
/// (the library's, over the application's adaptive one), not the library's view of its intent,
/// and it does not stop the library steering.
#[test]
fn a_set_the_application_makes_that_dmapp_refuses_changes_nothing() {
    let r =
        driver("dmapp-refused-set", "init put 1 64 3 attrs 99 0 put 1 64 3 get 1 64 2 api disable put 1 64 1").run();
    r.assert_ok();
    assert!(r.stdout.contains("attrs rc=1"), "DMAPP_RC_INVALID_PARAM: {}", r.stdout);
    assert_eq!(routings(&r, "PUT"), [6, 6, 6, 6, 6, 6, 2]);
    assert_eq!(routings(&r, "GET"), [6, 6], "the refused IN_ORDER GET was never in force");
    assert_eq!(
        set_routings(&r),
        [(6, 2), (99, 0), (6, 6), (2, 6)],
        "the refused set, then the library's only (given back lazily, the PUT direction at the next PUT)"
    );
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    assert!(record(&r)["dmapp"]["stopped_because"].is_null(), "{}", record(&r)["dmapp"]);
}

/// What the emulator saw, in order: `S` for an attribute set call DMAPP answered busy, `s` for one
/// it took, and each data call's routing value.
fn sets_and_routings(r: &Run) -> String {
    let mut out = String::new();
    for v in &r.log {
        if v["call"].as_str().is_some_and(|c| c.starts_with("dmapp_set_rma_attrs")) {
            out += if v["rc"] == 10 { "S" } else { "s" };
        } else if let Some(routing) = v["routing"].as_u64() {
            out += &routing.to_string();
        }
    }
    out
}

/// The record's count of DMAPP messages of each routing against what the emulator's log says went
/// out with it: ADAPTIVE (2) is ADAPTIVE0, ADAPTIVE_3 (6) is ADAPTIVE3.
fn assert_counted_as_sent(r: &Run) {
    let rec = record(r);
    for (value, mode) in [(ADAPTIVE, "ADAPTIVE0"), (ADAPTIVE_3, "ADAPTIVE3")] {
        let sent: u64 =
            data_calls(r).iter().filter(|v| v["routing"] == value).map(|v| v["messages"].as_u64().unwrap()).sum();
        let counted = rec["modes"][mode]["messages"].as_u64().unwrap_or(0);
        assert_eq!(counted, sent, "{mode}: {}", rec["modes"]);
    }
}

/// DMAPP answering the library's attribute set `DMAPP_RC_BUSY` once changes nothing: the call
/// goes out with the routing in force and is counted with it, the thread's next call sets the
/// routing again, and steering goes on without a word.
#[test]
fn a_busy_attribute_set_is_tried_again_at_the_next_call_and_steering_goes_on() {
    let r = driver("dmapp-busy-once", "init put 1 64 5 get 1 64 3").env("AAR_EMU_DMAPP_SET_BUSY", "1").run();
    r.assert_ok();
    assert_eq!(sets_and_routings(&r), "S2s6666s666", "busy, tried again at the next PUT, then steered");
    assert_eq!(set_routings(&r), [(6, 2), (6, 2), (6, 6)]);
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    let rec = record(&r);
    assert_eq!(rec["dmapp"]["steering"], true, "{}", rec["dmapp"]);
    assert!(rec["dmapp"]["stopped_because"].is_null(), "{}", rec["dmapp"]);
    assert_eq!(rec["dmapp"]["attribute_sets"], 3);
    assert_counted_as_sent(&r);
}

/// A DMAPP that answers every attribute set busy: the thread tries again at its next call, then
/// after letting 1, 3, 7, ... calls pass; the eighth busy answer in a row stops DMAPP steering
/// with one warning that names the call, the code, what happens instead and what to change.
#[test]
fn an_attribute_set_busy_eight_times_in_a_row_stops_steering_with_one_warning() {
    let r = driver("dmapp-busy-always", "init put 1 64 200 get 1 64 3").env("AAR_EMU_DMAPP_SET_BUSY", "always").run();
    r.assert_ok();
    assert!(data_calls(&r).iter().all(|v| v["routing"] == ADAPTIVE), "nothing was ever changed");
    let seen = sets_and_routings(&r);
    let attempts_before: Vec<usize> = seen.match_indices('S').map(|(i, _)| seen[..i].matches('2').count()).collect();
    assert_eq!(attempts_before, [0, 1, 3, 7, 15, 31, 63, 127], "{seen}");
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    for part in [
        "DMAPP: dmapp_set_rma_attrs_ext returned DMAPP_RC_BUSY (10) on 8 attempts in a row to set a thread's PUT routing to ADAPTIVE_3",
        "stops steering DMAPP",
        "forwarded untouched",
        "dmapp_gsync_wait",
        "AAR_MODE",
    ] {
        assert!(w[0].contains(part), "{part:?} in {}", w[0]);
    }
    let rec = record(&r);
    assert_eq!(rec["dmapp"]["steering"], false);
    assert!(rec["dmapp"]["stopped_because"].as_str().unwrap().contains("DMAPP_RC_BUSY (10)"), "{}", rec["dmapp"]);
    assert_counted_as_sent(&r);
}

/// DMAPP turns busy after the library has steered the thread: giving the application's routing
/// back (here after `aar_disable`) fails like any change, so the calls go out with the library's
/// routing and are counted with it; once DMAPP takes sets again, the routing is given back.
#[test]
fn a_routing_that_cannot_be_given_back_while_dmapp_is_busy_is_counted_as_it_went_out() {
    let script = "init put 1 64 3 busy -1 api disable put 1 64 200 busy 0 put 1 64 200";
    let r = driver("dmapp-busy-give-back", script).run();
    r.assert_ok();
    let seen = sets_and_routings(&r);
    assert!(seen.starts_with("s666S6S6"), "steered, then busy: {seen}");
    let (_, after) = seen.rsplit_once('s').unwrap();
    assert!(after.len() > 50 && after.chars().all(|c| c == '2'), "given back once DMAPP takes sets again: {seen}");
    assert_eq!(warnings(&r).len(), 1, "{:?}", warnings(&r));
    assert_counted_as_sent(&r);
}

/// DMAPP's attributes are the calling thread's: a thread that sets its own routing changes only
/// its own traffic, the library steers each thread's adaptive directions apart, and another
/// thread's set call leaves the threads the library already steers alone (no set call on them).
#[test]
fn a_threads_own_routing_is_its_own_and_leaves_the_other_threads_alone() {
    let script = "init put 1 64 3 tattrs 0 2 64 3 put 1 64 3 tattrs 2 1 64 2 put 1 64 2";
    let r = driver("dmapp-thread-attrs", script).run();
    r.assert_ok();
    let mut per: BTreeMap<u64, BTreeMap<&str, Vec<u64>>> = BTreeMap::new();
    let mut set_calls: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for v in &r.log {
        let Some(thread) = v["thread"].as_u64() else { continue };
        if let Some(kind) = v["kind"].as_str() {
            per.entry(thread).or_default().entry(kind).or_default().push(v["routing"].as_u64().unwrap());
        } else if v["call"].as_str().is_some_and(|c| c.starts_with("dmapp_set_rma_attrs")) {
            set_calls
                .entry(thread)
                .or_default()
                .push((v["put_routing"].as_u64().unwrap(), v["get_routing"].as_u64().unwrap()));
        }
    }
    assert_eq!(per.len(), 3, "{per:?}");
    let main = *per.iter().find(|(_, k)| !k.contains_key("GET")).unwrap().0;
    assert_eq!(per[&main]["PUT"], [6; 8], "the main thread stays steered");
    assert_eq!(set_calls[&main], [(6, 2)], "one set call on the main thread, whatever the others set");
    let lines: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("tattrs ")).collect();
    assert_eq!(lines.len(), 2, "{}", r.stdout);
    for (line, (put, get, count)) in lines.iter().zip([(0, 6, 3), (6, 1, 2)]) {
        let tid = stdout_field(line, "tid");
        assert_eq!(per[&tid]["PUT"], vec![put; count], "{line}");
        assert_eq!(per[&tid]["GET"], vec![get; count], "{line}");
        assert_eq!((stdout_field(line, "put"), stdout_field(line, "get")), (put, get), "{line}");
        assert_eq!(stdout_field(line, "sets"), 2, "its own set and the library's one: {line}");
        assert_eq!(set_calls[&tid].len(), 2, "{line}");
        // The library's set on this thread kept the application's non-adaptive direction.
        let (app_put, app_get) = set_calls[&tid][0];
        assert!(app_put == 0 || app_get == 1, "{line}: {:?}", set_calls[&tid]);
        assert_eq!(set_calls[&tid][1], (put, get), "{line}");
    }
    assert_eq!(record(&r)["dmapp"]["threads"], 3);
}

/// Eight threads at once, each stating its own routing (IN_ORDER, DETERMINISTIC, DETERMINISTIC_1 or
/// ADAPTIVE per direction, through either attribute call) and changing it half-way while the
/// others send: on each thread and in each half, a direction the application made non-adaptive
/// carries exactly its value, an adaptive one the library's, and `dmapp_get_rma_attrs_ext` shows the
/// thread its own routing; no thread's set or steering reaches another's.
#[test]
fn threads_at_once_with_their_own_routing_each_keep_theirs_through_their_changes() {
    const THREADS: usize = 8;
    const COUNT: usize = 20;
    let r = driver("dmapp-mt-attrs", &format!("init mt {THREADS} 64 {COUNT}")).env("AAR_MODE", "ADAPTIVE3").run();
    r.assert_ok();
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    // What each thread stated in each half, and what dmapp_get_rma_attrs_ext showed it.
    let mut stated: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    for line in r.stdout.lines().filter(|l| l.starts_with("mt ")) {
        let (asked, saw) = line.split_once(" saw ").unwrap();
        let app = (stdout_field(asked, "put"), stdout_field(asked, "get"));
        assert_eq!((stdout_field(saw, "put"), stdout_field(saw, "get")), app, "shown its own routing: {line}");
        stated.insert((stdout_field(line, "tid"), stdout_field(line, "half")), app);
    }
    assert_eq!(stated.len(), 2 * THREADS, "{}", r.stdout);
    let mut per: BTreeMap<u64, Vec<(&str, u64)>> = BTreeMap::new();
    for v in data_calls(&r) {
        per.entry(v["thread"].as_u64().unwrap())
            .or_default()
            .push((v["kind"].as_str().unwrap(), v["routing"].as_u64().unwrap()));
    }
    assert_eq!(per.len(), THREADS, "{per:?}");
    let steered = |app: u64| if app == ADAPTIVE { ADAPTIVE_3 } else { app };
    for (tid, calls) in &per {
        assert_eq!(calls.len(), 2 * 2 * COUNT, "thread {tid}");
        for (half, calls) in calls.chunks(2 * COUNT).enumerate() {
            let (put, get) = stated[&(*tid, half as u64)];
            let want: Vec<(&str, u64)> =
                (0..COUNT).flat_map(|_| [("PUT", steered(put)), ("GET", steered(get))]).collect();
            assert_eq!(calls, want, "thread {tid}, half {half}: the application's PUT {put}, GET {get}");
        }
    }
    let non_adaptive: BTreeSet<u64> = stated.values().flat_map(|&(p, g)| [p, g]).filter(|&v| v != ADAPTIVE).collect();
    assert_eq!(non_adaptive, BTreeSet::from([IN_ORDER, DETERMINISTIC, DETERMINISTIC_1]), "every kind is exercised");
    assert_counted_as_sent(&r);
    let rec = record(&r);
    assert_eq!((rec["dmapp"]["steering"].as_bool(), rec["dmapp"]["threads"].as_u64()), (Some(true), Some(8)));
}

/// A call forwarded after an internal error before its forward (`AAR_TEST_PANIC=before-forward`,
/// at each decided call) is counted all the same, with the routing in force: the record holds what
/// went out.
#[test]
fn a_call_forwarded_after_an_internal_error_is_counted() {
    let r = driver("dmapp-panic", "init put 1 65536 4 get 1 65536 3 put 1 64 3")
        .env("AAR_TEST_PANIC", "before-forward")
        .run();
    r.assert_ok();
    assert!(r.aar_lines().iter().any(|l| l.contains("internal error")), "{:?}", r.aar_lines());
    let rec = record(&r);
    let sent: u64 = data_calls(&r).iter().map(|v| v["messages"].as_u64().unwrap()).sum();
    assert_eq!(rec["apis"]["DMAPP"]["messages"], sent, "{}", rec["apis"]);
    assert_counted_as_sent(&r);
}

/// A set that went through but did not read back as written, whose give-back DMAPP answers busy:
/// what is in force is not known, so the calls meanwhile are counted of unknown routing (OTHER)
/// rather than as the application's, and the application's attributes are given back, whole, at
/// the thread's next call.
#[test]
fn a_busy_give_back_after_an_unverified_set_is_tried_again_and_counted_as_unknown_meanwhile() {
    let r = driver("dmapp-unverified-busy", "init put 1 64 3 get 1 64 2")
        .env("AAR_EMU_DMAPP_LAYOUT", "queue-first")
        .env("AAR_EMU_DMAPP_SET_BUSY", "1 after 1")
        .run();
    r.assert_ok();
    assert_eq!(sets_and_routings(&r), "sS2s2222", "the unverified set, its give-back busy, then given back");
    assert_eq!(warnings(&r).len(), 1, "{:?}", warnings(&r));
    let rec = record(&r);
    assert_eq!(rec["dmapp"]["steering"], false);
    assert_eq!(rec["dmapp"]["attribute_sets"], 3);
    assert_eq!(rec["modes"]["OTHER"]["messages"], 1, "the call made while the routing was not known: {}", rec["modes"]);
    assert_eq!(rec["modes"]["ADAPTIVE0"]["messages"], 4, "{}", rec["modes"]);
}

/// A set whose read-back DMAPP answers busy, and whose restore it answers busy too: what is in
/// force is not known (the call meanwhile is counted of unknown routing), the thread's next call
/// reads the attributes again and sets and verifies its routing, and steering goes on without a
/// word, rather than stopping as if the attribute layout were wrong.
#[test]
fn a_busy_read_back_whose_restore_is_busy_too_leaves_the_routing_unknown_and_steering_on() {
    let r = driver("dmapp-busy-read-back", "init put 1 64 5")
        .env("AAR_EMU_DMAPP_GET_BUSY", "1 after 2")
        .env("AAR_EMU_DMAPP_SET_BUSY", "1 after 1")
        .run();
    r.assert_ok();
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    assert_eq!(sets_and_routings(&r), "sS6s6666", "set, restore busy, then set and verified again");
    let rec = record(&r);
    assert_eq!(rec["dmapp"]["steering"], true, "{}", rec["dmapp"]);
    assert_eq!(rec["modes"]["OTHER"]["messages"], 1, "the call made while the routing was not known: {}", rec["modes"]);
    assert_eq!(rec["modes"]["ADAPTIVE3"]["messages"], 4, "{}", rec["modes"]);
    assert_eq!(rec["dmapp"]["attribute_sets"], 3);
}

/// The application that reads its attributes while what is in force is not known (the give-back
/// of a set that did not read back was refused as busy) gets its own: the give-back is made before
/// its get, not at its next data call, so that a get-modify-set cannot take what that set left for
/// the application's. (This emulator's layout drops what the library wrote at byte 8, so the
/// order of the set calls is what shows it.)
#[test]
fn the_application_reads_its_own_attributes_after_an_unverified_set() {
    let r = driver("dmapp-unverified-get", "init put 1 64 1 getset put 1 64 2")
        .env("AAR_EMU_DMAPP_LAYOUT", "queue-first")
        .env("AAR_EMU_DMAPP_SET_BUSY", "1 after 1")
        .run();
    r.assert_ok();
    assert_eq!(sets_and_routings(&r), "sS2ss22", "given back at the get, then the application's set");
}

#[test]
fn an_unknown_attribute_layout_stops_steering_with_one_warning_and_the_program_runs_on() {
    let script = "init put 1 64 5 get 1 64 5 threads 3 64 50 amo 4 put 1 65536 5 get 1 65536 2 all";
    let r = driver("dmapp-layout", script).env("AAR_EMU_DMAPP_LAYOUT", "queue-first").run();
    r.assert_ok();
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("did not read back as written") && w[0].contains("AAR_DMAPP_H"), "{}", w[0]);
    assert!(data_calls(&r).iter().all(|v| v["routing"] == ADAPTIVE), "forwarded untouched");
    assert_eq!(sets(&r).len(), 2, "the set that failed to read back, and the give-back");
    let rec = record(&r);
    assert_eq!(rec["dmapp"]["steering"], false);
    assert!(rec["dmapp"]["stopped_because"].as_str().unwrap().contains("byte 8"), "{}", rec["dmapp"]);
    assert_eq!(
        rec["apis"]["DMAPP"]["messages"],
        data_calls(&r).iter().map(|v| v["messages"].as_u64().unwrap()).sum::<u64>()
    );
    assert!(r.aar_lines().iter().any(|l| l.contains("not steered")), "{:?}", r.aar_lines());
}

#[test]
fn the_routing_table_comes_from_aar_dmapp_routing_and_a_wrong_one_stops_steering() {
    // A table of the emulator's values in another order: its ADAPTIVE_3 is the emulator's 5.
    let swapped = "IN_ORDER=0,DETERMINISTIC=1,ADAPTIVE=2,DETERMINISTIC_1=3,ADAPTIVE_1=4,ADAPTIVE_2=6,ADAPTIVE_3=5";
    let r = driver("dmapp-table", "init put 1 64 3").env("AAR_DMAPP_ROUTING", swapped).run();
    r.assert_ok();
    assert_eq!(routings(&r, "PUT"), [5, 5, 5]);
    let rec = record(&r);
    assert_eq!(rec["dmapp"]["table_source"], "AAR_DMAPP_ROUTING");
    assert_eq!(rec["dmapp"]["routing_table"], swapped);
    // A bad value: one warning, and the next source.
    let r = driver("dmapp-table-bad", "init put 1 64 3").env("AAR_DMAPP_ROUTING", "ADAPTIVE=2").run();
    r.assert_ok();
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("AAR_DMAPP_ROUTING=\"ADAPTIVE=2\"") && w[0].contains("ADAPTIVE_1"), "{}", w[0]);
    assert_eq!(routings(&r, "PUT"), [6, 6, 6]);
    assert!(record(&r)["dmapp"]["table_source"].as_str().unwrap().starts_with("assumed"));
    // A table whose values this DMAPP refuses: one warning, steering stops, data intact.
    let r = driver("dmapp-table-refused", "init put 1 64 3 get 1 64 3 threads 2 64 20 all")
        .env("AAR_DMAPP_ROUTING", "ADAPTIVE=2,ADAPTIVE_1=7,ADAPTIVE_2=8,ADAPTIVE_3=9")
        .run();
    r.assert_ok();
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("refused the PUT routing ADAPTIVE_3 (value 9)"), "{}", w[0]);
    assert!(data_calls(&r).iter().all(|v| v["routing"] == ADAPTIVE));
    assert_eq!(record(&r)["dmapp"]["steering"], false);
    // A table that does not name the application's routing: never changed, one note.
    let r = driver("dmapp-table-unnamed", "init put 1 64 3 get 1 64 3")
        .env("AAR_DMAPP_ROUTING", "ADAPTIVE=4,ADAPTIVE_1=5,ADAPTIVE_2=6,ADAPTIVE_3=7")
        .run();
    r.assert_ok();
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("routing attribute is 2, which the routing table in use"), "{}", w[0]);
    assert!(sets(&r).is_empty() && data_calls(&r).iter().all(|v| v["routing"] == ADAPTIVE));
}

#[test]
fn a_program_mixing_ugni_and_dmapp_keeps_one_engine_and_one_record() {
    // 1000 B uGNI posts and 3500 B DMAPP PUTs, alternating: one cumulative sum passes the
    // 4096 B threshold at every DMAPP PUT (10 decisions); separate sums would decide 7 times.
    let script = format!("init {}", "ugni 1000 1 put 1 3500 1 ".repeat(10));
    let launch = driver("dmapp-mixed", &script);
    let trace = launch.dir.join("trace.jsonl");
    let r = launch.env("AAR_TRACE", &trace.display().to_string()).run();
    r.assert_ok();
    let rec = record(&r);
    assert_eq!(rec["engine"]["decisions"], 10, "{}", rec["engine"]);
    assert_eq!(rec["apis"]["uGNI"]["messages"], 10);
    assert_eq!(rec["apis"]["uGNI"]["bytes"], 10_000);
    assert_eq!(rec["apis"]["DMAPP"]["messages"], 10);
    assert_eq!(rec["apis"]["DMAPP"]["bytes"], 35_000);
    assert_eq!(r.posts("GNI_PostRdma").len(), 10);
    let lines = read_jsonl(&trace);
    let apis: Vec<&str> = lines.iter().map(|l| l["api"].as_str().unwrap()).collect();
    assert_eq!(apis, ["uGNI", "DMAPP"].repeat(10));
    for l in lines.iter().filter(|l| l["api"] == "DMAPP") {
        assert_eq!(
            (&l["call"], &l["post_type"], &l["bytes"], &l["messages"]),
            (&"dmapp_put".into(), &"PUT".into(), &3500.into(), &1.into())
        );
        assert_eq!(l["requested"], "ADAPTIVE", "the application's routing, in DMAPP's names");
        assert_ne!(l["reason"], "passthrough", "{l}");
        // The names are those of the table in use, which the line says, with its source.
        let table = l["dmapp_table"].as_str().unwrap();
        assert!(
            table.starts_with("IN_ORDER=0,DETERMINISTIC=1,ADAPTIVE=2,") && table.contains("from assumed"),
            "{table}"
        );
    }
    assert!(lines.iter().filter(|l| l["api"] == "uGNI").all(|l| l.get("dmapp_table").is_none()));
    let summary = r.aar_lines().into_iter().find(|l| l.starts_with("aar: policy")).unwrap();
    assert!(summary.contains("20 messages") && summary.contains("DMAPP 10 of them"), "{summary}");
}

#[test]
fn ugni_posts_made_from_inside_a_dmapp_call_go_out_untouched_and_count_once() {
    let layer = compile("cc", "dmapp_layer", &[root().join("tests/c/dmapp_layer.c")], &["-shared", "-fPIC"]);
    let preload = format!("{} {}", libaar().display(), layer.display());
    let r = driver("dmapp-inside", "init ugni 64 5 put 1 64 5 ugni 64 5").env("LD_PRELOAD", &preload).run();
    r.assert_ok();
    let modes = r.dlvr_modes("GNI_PostRdma");
    // The program's own posts ask for ADAPTIVE0 too (0) and are routed (High Bias below the
    // threshold); the five made inside dmapp_put keep their ADAPTIVE0.
    assert_eq!(modes.len(), 15);
    assert_eq!(&modes[..5], [AD3; 5]);
    assert_eq!(&modes[5..10], [AD0; 5], "untouched inside DMAPP");
    assert_eq!(&modes[10..], [AD3; 5]);
    let rec = record(&r);
    assert_eq!(rec["apis"]["uGNI"]["messages"], 10, "the DMAPP call's own uGNI traffic is not counted again");
    assert_eq!(rec["apis"]["DMAPP"]["messages"], 5);
}

/// A DMAPP call that went out and that the network failed (`DMAPP_RC_TRANSACTION_ERROR`, which
/// tests/c/dmapp_layer.c returns for each PUT it forwarded) is counted with the messages that went
/// out, with the routing they went out with, and as failed (`apis.DMAPP.failed`), not as refused:
/// it was sent. A code by which DMAPP refuses a call (`DMAPP_RC_INVALID_PARAM`) is still counted
/// as refused. Below the threshold (the fast path) and past it (a decision, the slow path) alike.
#[test]
fn a_dmapp_call_the_network_failed_is_counted_as_sent_and_failed_not_refused() {
    let layer = compile("cc", "dmapp_layer", &[root().join("tests/c/dmapp_layer.c")], &["-shared", "-fPIC"]);
    let preload = format!("{} {}", libaar().display(), layer.display());
    for (rc, name) in [(DMAPP_RC_TRANSACTION_ERROR, "transaction"), (DMAPP_RC_INVALID_PARAM, "invalid")] {
        let r = driver(&format!("dmapp-failed-{name}"), "init put 1 64 3 put 1 65536 2")
            .env("LD_PRELOAD", &preload)
            .env("DMAPP_LAYER_RC", &rc.to_string())
            .run();
        assert_eq!(stdout_field(&r.stdout, "errors"), 5, "{name}: each PUT returned {rc}: {}", r.stdout);
        assert_eq!(data_calls(&r).len(), 5, "{name}: each went out once");
        let rec = record(&r);
        let dmapp = &rec["apis"]["DMAPP"];
        if rc == DMAPP_RC_TRANSACTION_ERROR {
            assert_eq!(dmapp["messages"], 5, "{name}: sent: {dmapp}");
            assert_eq!(dmapp["bytes"], 3 * 64 + 2 * 65536, "{name}: {dmapp}");
            let modes: u64 =
                dmapp["modes"].as_object().unwrap().values().map(|m| m["messages"].as_u64().unwrap()).sum();
            assert_eq!(modes, 5, "{name}: each with the routing it went out with: {dmapp}");
            assert_eq!((dmapp["refused"].as_u64(), dmapp["failed"].as_u64()), (Some(0), Some(5)), "{name}: {dmapp}");
        } else {
            assert_eq!(dmapp["messages"], 0, "{name}: nothing sent: {dmapp}");
            assert_eq!((dmapp["refused"].as_u64(), dmapp["failed"].as_u64()), (Some(5), Some(0)), "{name}: {dmapp}");
        }
        assert!(rec["apis"]["uGNI"]["failed"].is_null(), "uGNI says no failure it cannot see: {}", rec["apis"]);
    }
}

#[test]
fn aar_disable_touches_nothing() {
    let r = driver("dmapp-disabled", "init all put 1 64 10 threads 2 8192 20 getset").env("AAR_DISABLE", "1").run();
    r.assert_ok();
    assert_eq!(sets(&r).len(), 1, "only the application's own");
    assert!(data_calls(&r).iter().all(|v| v["routing"] == ADAPTIVE));
    assert!(r.aar_lines().is_empty() && r.records().is_empty());
    assert_eq!(stdout_field(&r.stdout, "calls"), stdout_field(&r.stdout, "emu_calls"));
}

#[test]
fn the_below_threshold_dmapp_path_allocates_nothing() {
    let count = |env: &[(&str, &str)], preload: bool| {
        let script = "init put 1 64 10 get 1 64 10 amo 10 allocs 1 put 1 64 20000 get 1 64 2000 amo 2000 allocs 0";
        let mut launch = driver(&format!("dmapp-allocs-{preload}-{}", env.len()), script).unset("AAR_EMU_LOG");
        for (k, v) in env {
            launch = launch.env(k, v);
        }
        if !preload {
            launch = launch.no_preload();
        }
        let r = launch.run();
        r.assert_ok();
        stdout_field(&r.stdout, "allocations")
    };
    let without = count(&[], false);
    assert_eq!(count(&[], true), without, "libaar.so allocated on the below-threshold DMAPP path");
    assert_eq!(count(&[("AAR_MODE", "off")], true), without, "or with AAR_MODE=off");
}

#[test]
fn the_shmem_example_verifies_its_data_and_routes_small_and_large_puts_apart() {
    let program = compile("cc", "example-shmem_ring", &[root().join("examples/shmem_ring.c")], &["-ldmapp"]);
    let r = Launch::program("dmapp-example", program, "--max 256K --iters 3").run();
    r.assert_ok();
    assert!(r.stdout.contains("shmem_ring: all data verified"), "{}", r.stdout);
    // On the emulator's quiet default network, small PUTs go High Bias below the threshold and
    // large ones plain Adaptive once the model has counter windows to decide from.
    let put_routing = |size: u64| -> BTreeSet<u64> {
        data_calls(&r)
            .iter()
            .filter(|v| v["kind"] == "PUT" && v["bytes"].as_u64() == Some(size))
            .map(|v| v["routing"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(put_routing(64), BTreeSet::from([ADAPTIVE_3]));
    assert_eq!(put_routing(256 << 10), BTreeSet::from([ADAPTIVE]));
    // The record counts the DMAPP traffic, with the attribute set calls the emulator saw.
    let rec = record(&r);
    let dmapp_messages = rec["apis"]["DMAPP"]["messages"].as_u64().unwrap();
    assert_eq!(dmapp_messages, data_calls(&r).len() as u64);
    assert_eq!(rec["dmapp"]["attribute_sets"].as_u64().unwrap(), sets(&r).len() as u64, "{}", rec["dmapp"]);
}

/// A DMAPP call names a PE, which the library places through Cray's PMI (`PMI_Get_nid`). This
/// process has no PMI (it is PE 0 of the emulator's job of virtual PEs), so every DMAPP call is of
/// one destination class (`unknown` in the trace), even with a node table. `steady`, which keeps
/// state per class, says so once; `auto` has one class anyway and says nothing.
#[test]
fn without_pmi_dmapp_calls_are_one_destination_class_and_steady_says_so_once() {
    let run = |test: &str, (var, mode): (&str, &str), calls: usize| {
        let commands = if calls == 0 { "init" } else { "init put 1 65536 4 get 2 65536 3 put 3 8192 2" };
        let launch = driver(test, commands);
        let (trace, table) = (launch.dir.join("trace.jsonl"), launch.dir.join("nodes.txt"));
        std::fs::write(&table, "0x100 0 0\n0x101 0 1\n0x102 1 0\n0x103 2 0\n").unwrap();
        let r = launch
            .env(var, mode)
            .env("PMI_GNI_LOC_ADDR", "0x100")
            .env("AAR_TOPOLOGY", &table.display().to_string())
            .env("AAR_TRACE", &trace.display().to_string())
            .run();
        r.assert_ok();
        let lines = read_jsonl(&trace);
        assert_eq!(lines.len(), calls, "{test}: a decision per call (each crosses the threshold)");
        assert!(lines.iter().all(|l| l["api"] == "DMAPP" && l["destination"] == "unknown"), "{test}: {lines:?}");
        let said = "DMAPP calls cannot be placed: the process has no initialised PMI with PMI_Get_nid";
        let kept =
            record(&r)["messages"].as_array().unwrap().iter().filter(|m| m.as_str().unwrap().contains(said)).count();
        (warnings(&r).into_iter().filter(|l| l.contains(said)).count(), kept)
    };
    let steady = ("AAR_MODE", "steady");
    assert_eq!(run("dmapp-class-steady", steady, 9), (1, 1), "said once on stderr, kept once in the record");
    assert_eq!(run("dmapp-class-auto", ("AAR_MODE", "auto"), 9), (0, 0));
    // Where steady may decide (the policy, or an A/B arm), the PEs are placed at dmapp_init, on
    // its thread (PMI-1 is not thread-safe), not at the first data call.
    assert_eq!(run("dmapp-class-init-only", steady, 0), (1, 1));
    assert_eq!(run("dmapp-class-init-ab", ("AAR_AB", "auto,steady"), 0), (1, 1));
    assert_eq!(run("dmapp-class-init-auto", ("AAR_MODE", "auto"), 0), (0, 0));
}

/// Under `aar run`, 4 ranks on 4 nodes, with PMI initialised (as Cray's `dmapp_init` does), the
/// DMAPP job of each process has 4 PEs: in rank 0, PE p is PMI's rank p, whose NID
/// (`PMI_Get_nid`) is the NIC address of its node, so `steady` gives each call the class of its
/// PE's node in the table. In the other ranks DMAPP's PE (0, the emulator's) is not PMI's rank:
/// they place no PE, and say why once in their records.
#[test]
fn under_pmi_steady_places_each_dmapp_pe_on_its_node() {
    let program = dmapp_program("dmapp_driver", &["-DWITH_PMI", "-lpmi"]);
    let mut l =
        Launch::program("dmapp-pe-places", program, "pmi init put 1 65536 2 put 2 65536 2 put 3 65536 2 ixpe 3 65536")
            .env("AAR_MODE", "steady")
            .env("AAR_EMU_DMAPP_PES", "4");
    let (trace, table) = (l.dir.join("trace-%r.jsonl"), l.dir.join("nodes.txt"));
    // Node n of the job has NIC address 0x100 + n (PMI_GNI_LOC_ADDR): PE 1 shares rank 0's group,
    // PE 2 its router, PE 3 is in another group.
    std::fs::write(&table, "0x100 0 0\n0x101 0 1\n0x102 0 0\n0x103 2 0\n").unwrap();
    l = l.env("AAR_TOPOLOGY", &table.display().to_string()).env("AAR_TRACE", &trace.display().to_string());
    let aar = aar_command().display().to_string();
    l.wrapper = [aar.as_str(), "run", "-n", "4", "-N", "1", "--"].map(String::from).to_vec();
    let r = l.run();
    r.assert_ok();
    let classes = |rank: usize| -> Vec<(u64, String)> {
        read_jsonl(&r.dir.join(format!("trace-{rank}.jsonl")))
            .iter()
            .filter(|l| l["api"] == "DMAPP")
            .map(|l| (l["messages"].as_u64().unwrap(), l["destination"].as_str().unwrap().to_string()))
            .collect()
    };
    let one = |c: &str| (1, c.to_string());
    assert_eq!(
        classes(0),
        [one("same-group"), one("same-group"), one("same-router"), one("same-router")]
            .into_iter()
            .chain([one("other-group"), one("other-group"), (3, "unknown".to_string())])
            .chain([one("same-group"), one("same-router"), one("other-group")])
            .collect::<Vec<_>>(),
        "rank 0: each PE's class; a call to several PEs (ixpe) is of none, its checking GETs of theirs"
    );
    let said = "DMAPP calls cannot be placed: DMAPP's PE 0 of 4 is not PMI's rank";
    for rank in 1..4 {
        let theirs = classes(rank);
        assert_eq!(theirs.len(), 10, "rank {rank}: a line per DMAPP call, as rank 0: {theirs:?}");
        assert!(theirs.iter().all(|(_, c)| c == "unknown"), "rank {rank}: {theirs:?}");
    }
    let recs = r.records();
    assert_eq!(recs.len(), 4);
    for rec in &recs {
        let kept = rec["messages"].as_array().unwrap().iter().filter(|m| m.as_str().unwrap().contains(said)).count();
        let rank = rec["rank"].as_u64().unwrap();
        assert_eq!(kept, usize::from(rank != 0), "rank {rank}: {}", rec["messages"]);
    }

    // Where a rank's NIC address (PMI_GNI_LOC_ADDR) is not its NID, the table's keys are not NIDs:
    // no PE is placed, said once.
    let l = Launch::program(
        "dmapp-pe-nid-not-nic",
        dmapp_program("dmapp_driver", &["-DWITH_PMI", "-lpmi"]),
        "pmi init put 1 65536 2",
    )
    .env("AAR_MODE", "steady")
    .env("AAR_EMU_DMAPP_PES", "2");
    let (trace, table) = (l.dir.join("trace-%r.jsonl"), l.dir.join("nodes.txt"));
    std::fs::write(&table, "0x200 0 0\n0x100 0 0\n0x101 0 1\n").unwrap();
    let mut l = l.env("AAR_TOPOLOGY", &table.display().to_string()).env("AAR_TRACE", &trace.display().to_string());
    l.wrapper =
        [aar.as_str(), "run", "-n", "2", "-N", "1", "--", "env", "PMI_GNI_LOC_ADDR=0x200"].map(String::from).to_vec();
    let r = l.run();
    r.assert_ok();
    let lines = read_jsonl(&r.dir.join("trace-0.jsonl"));
    assert_eq!(lines.iter().filter(|l| l["api"] == "DMAPP").count(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| l["destination"] == "unknown"), "{lines:?}");
    let said = "DMAPP calls cannot be placed: this rank's NID is 0x100 (PMI_Get_nid) but its NIC address is 0x200";
    assert_eq!(r.aar_lines().iter().filter(|l| l.contains(said)).count(), 1, "{:?}", r.aar_lines());
}

/// A call made before `dmapp_init` (a program error: DMAPP refuses it for want of a job) does not
/// try to place the PEs: there is no job to ask for its PE, and a failed placement is final. So
/// the job that follows has its PEs placed, and `steady` gives each call its PE's class (the
/// library used to say the PEs could not be placed, for good, because `dmapp_get_jobinfo` had
/// refused the call made without a job).
#[test]
fn a_dmapp_call_before_dmapp_init_leaves_the_pes_to_be_placed_in_the_job() {
    let program = dmapp_program("dmapp_driver", &["-DWITH_PMI", "-lpmi"]);
    let l = Launch::program("dmapp-pe-places-closed", program, "pmi closed init put 1 65536 2")
        .env("AAR_MODE", "steady")
        .env("AAR_EMU_DMAPP_PES", "2");
    let (trace, table) = (l.dir.join("trace-%r.jsonl"), l.dir.join("nodes.txt"));
    std::fs::write(&table, "0x100 0 0\n0x101 0 1\n").unwrap();
    let mut l = l.env("AAR_TOPOLOGY", &table.display().to_string()).env("AAR_TRACE", &trace.display().to_string());
    let aar = aar_command().display().to_string();
    l.wrapper = [aar.as_str(), "run", "-n", "2", "-N", "1", "--"].map(String::from).to_vec();
    let r = l.run();
    r.assert_ok();
    let classes: Vec<String> = read_jsonl(&r.dir.join("trace-0.jsonl"))
        .iter()
        .filter(|l| l["api"] == "DMAPP")
        .map(|l| l["destination"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        classes,
        ["unknown", "unknown", "unknown", "same-group", "same-group"],
        "rank 0: without a job, then in it"
    );
    let rank0 = r.records().into_iter().find(|rec| rec["rank"] == 0).expect("rank 0's record");
    let placed = |m: &Value| !m.as_str().unwrap().contains("cannot be placed");
    assert!(rank0["messages"].as_array().unwrap().iter().all(placed), "{}", rank0["messages"]);
}

/// A fork while libaar.so places the PEs after `dmapp_init` (on another thread, in PMI_Get_nid,
/// made slow here): the child's DMAPP calls go out and end; the placement the child will never
/// finish is not waited for.
#[test]
fn a_fork_while_the_pes_are_placed_leaves_the_child_sending_not_waiting() {
    let program = dmapp_program("dmapp_driver", &["-DWITH_PMI", "-DSLOW_NID", "-rdynamic", "-lpmi"]);
    let l = Launch::program("dmapp-fork-placing", program, "pmi forkplacing 300")
        .env("AAR_MODE", "steady")
        .env("AAR_EMU_DMAPP_PES", "2")
        .env("SLOW_NID_MS", "400");
    let table = l.dir.join("nodes.txt");
    std::fs::write(&table, "0x100 0 0\n0x101 0 1\n").unwrap();
    let mut l = l.env("AAR_TOPOLOGY", &table.display().to_string());
    let aar = aar_command().display().to_string();
    l.wrapper = [aar.as_str(), "run", "-n", "2", "-N", "1", "--"].map(String::from).to_vec();
    let r = l.run();
    assert!(r.stdout.contains("forkplacing child=exited status=0"), "{}\n{}", r.stdout, r.stderr);
    r.assert_ok();
}

/// A SHMEM program at its memory limit (malloc returns NULL) keeps making its DMAPP calls, each
/// forwarded and routed, and keeps its exit status: what libaar.so still needs comes from its
/// reserve, and the record says so.
#[test]
fn a_program_at_its_memory_limit_keeps_its_dmapp_calls_and_its_record() {
    // The emulator's post log allocates on every call; its first PUT and the first of the
    // non-blocking form set up what they need before the memory runs out.
    let script = "init put 1 65536 10 form nbi put 1 65536 1 form blocking memfull put 1 65536 100 get 1 65536 10 \
                  form nbi put 1 65536 50";
    let r = driver("dmapp-memfull", script).unset("AAR_EMU_LOG").run();
    r.assert_ok();
    assert!(stdout_field(&r.stdout, "memfull bytes") > 0, "{}", r.stdout);
    assert!(r.stdout.contains("calls=171 errors=0 emu_calls=171"), "{}", r.stdout);
    let w = warnings(&r);
    assert!(w.iter().any(|l| l.contains("malloc refused libaar.so")), "{w:?}");
    let rec = record(&r);
    assert_eq!(rec["apis"]["DMAPP"]["messages"], 171, "{}", rec["apis"]);
    assert!(rec["messages"].as_array().unwrap().iter().any(|m| m.as_str().unwrap().contains("malloc refused")));
}

/// A call whose size does not fit in 64 bits (`nelems` × the element size, or that times the PEs
/// of an `_ixpe` call) is one DMAPP refuses: it is forwarded and its code comes back, and it is
/// taken as messages of 0 bytes, so that it does not cross the threshold (no decision, no
/// attribute set call for it), and counted as refused, so that it does not wrap the record's
/// byte totals.
#[test]
fn a_call_whose_size_does_not_fit_in_64_bits_is_counted_with_no_bytes() {
    let r = driver("dmapp-huge", "init put 1 64 1 huge put 1 64 1").run();
    r.assert_ok();
    let refused: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("rc ")).collect();
    assert_eq!(refused, ["rc dmapp_put=1", "rc dmapp_get_nbi=1", "rc dmapp_iput_nb=1", "rc dmapp_put_ixpe=1"]);
    let rec = record(&r);
    assert_eq!(rec["apis"]["DMAPP"]["messages"], 2, "{}", rec["apis"]);
    assert_eq!(rec["apis"]["DMAPP"]["refused"], 7, "{}", rec["apis"]);
    assert_eq!(rec["apis"]["DMAPP"]["bytes"], 128, "the two 64 B PUTs only: {}", rec["apis"]);
    assert_eq!(rec["modes"]["ADAPTIVE3"]["bytes"], 128, "{}", rec["modes"]);
    assert_eq!(rec["engine"]["decisions"], 0, "below the threshold throughout");
    assert_eq!(routings(&r, "PUT"), [ADAPTIVE_3; 5]);
    assert_eq!(routings(&r, "GET"), [ADAPTIVE_3]);
    assert_eq!(sets(&r).len(), 2, "High Bias set once per direction");
    // Sizes that fit, each below 2^64, refused all the same: counted as refused, their bytes in
    // no total.
    let r = driver("dmapp-huger", "init huger put 1 64 1").run();
    r.assert_ok();
    assert_eq!(r.stdout.lines().filter(|l| l.starts_with("rc dmapp_put=1")).count(), 5, "{}", r.stdout);
    let rec = record(&r);
    assert_eq!(rec["apis"]["DMAPP"]["messages"], 1, "{}", rec["apis"]);
    assert_eq!(rec["apis"]["DMAPP"]["refused"], 5, "{}", rec["apis"]);
    assert_eq!(rec["apis"]["DMAPP"]["bytes"], 64, "{}", rec["apis"]);
}

/// Without a job (before `dmapp_init`, after `dmapp_finalize`) DMAPP refuses every call, the
/// attribute calls too: the calls are forwarded with their codes and counted as refused,
/// the library reads and sets no attribute, and it steers the thread again in the next job. (It
/// used to change the routing after `dmapp_finalize`, take DMAPP's refusal for a routing table or
/// layout that is not this DMAPP's, and stop steering DMAPP for the rest of the process.)
#[test]
fn calls_without_a_dmapp_job_go_out_untouched_and_the_next_job_is_steered() {
    let r = driver("dmapp-finalize", "closed init put 1 64 2 finalize closed init put 1 64 2 get 1 64 1").run();
    r.assert_ok();
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    let refused = r.stdout.lines().filter(|l| l.starts_with("rc ")).count();
    assert_eq!(refused, 6, "{}", r.stdout);
    let calls: Vec<(&str, Option<u64>)> =
        data_calls(&r).iter().map(|v| (v["kind"].as_str().unwrap(), v["routing"].as_u64())).collect();
    let closed = [("PUT", None), ("GET", None), ("AMO", None)];
    let steered = [("PUT", Some(ADAPTIVE_3)), ("PUT", Some(ADAPTIVE_3))];
    let expected: Vec<(&str, Option<u64>)> =
        [&closed[..], &steered, &closed, &steered, &[("GET", Some(ADAPTIVE_3))]].concat();
    assert_eq!(calls, expected);
    assert_eq!(set_routings(&r), [(ADAPTIVE_3, ADAPTIVE), (ADAPTIVE_3, ADAPTIVE), (ADAPTIVE_3, ADAPTIVE_3)]);
    let rec = record(&r);
    assert_eq!(rec["dmapp"]["steering"], true, "{}", rec["dmapp"]);
    assert_eq!(rec["apis"]["DMAPP"]["refused"], 6, "{}", rec["apis"]);
    assert!(rec["modes"]["OTHER"].is_null(), "{}", rec["modes"]);
    assert_eq!(rec["modes"]["ADAPTIVE3"]["messages"], 5, "{}", rec["modes"]);
}

/// A thread's change of routing that reaches DMAPP after another thread's `dmapp_finalize` ended
/// the job is refused; that refusal says nothing of the routing table or the layout, so steering
/// goes on, and the next job is steered (a program whose DMAPP calls run while another thread
/// finalizes is wrong, but the library used to stop steering DMAPP for the rest of the process).
/// tests/c/dmapp_finrace.c makes the interleaving, both where the refusal comes back after the
/// library's `dmapp_finalize` has returned and where it comes back before. The PUT then goes out
/// without a job, which DMAPP refuses: it is counted as refused and traced of unknown routing (it
/// used to be counted with the routing its thread had read in the job that ended).
#[test]
fn a_change_of_routing_that_meets_dmapp_finalize_does_not_stop_steering() {
    let finrace = compile("cc", "dmapp_finrace", &[root().join("tests/c/dmapp_finrace.c")], &["-shared", "-fPIC"]);
    let preload = format!("{} {}", libaar().display(), finrace.display());
    for inside in [0, 1] {
        let script = format!("init put 1 64 2 finrace {inside} init put 1 64 2 get 1 64 1 routing");
        let launch = driver(&format!("dmapp-finrace-{inside}"), &script);
        let trace = launch.dir.join("trace.jsonl");
        let r = launch.env("LD_PRELOAD", &preload).env("AAR_TRACE", &trace.display().to_string()).run();
        r.assert_ok();
        // The PUT is refused (DMAPP_RC_PERMISSION_ERROR: no job); the finalize succeeds.
        assert!(r.stdout.contains("finrace put rc=5\n") && r.stdout.contains("finalize rc=0\n"), "{}", r.stdout);
        assert!(warnings(&r).is_empty(), "inside {inside}: {:?}", warnings(&r));
        assert!(r.stdout.contains("routing put=6 get=6\n"), "inside {inside}: {}", r.stdout);
        let calls: Vec<Option<u64>> = data_calls(&r).iter().map(|v| v["routing"].as_u64()).collect();
        assert_eq!(
            calls,
            [Some(ADAPTIVE_3), Some(ADAPTIVE_3), None, Some(ADAPTIVE_3), Some(ADAPTIVE_3), Some(ADAPTIVE_3)]
        );
        let rec = record(&r);
        assert_eq!(rec["dmapp"]["steering"], true, "inside {inside}");
        assert_eq!(rec["apis"]["DMAPP"]["refused"], 1, "inside {inside}: the PUT without a job: {}", rec["apis"]);
        assert_counted_as_sent(&r);
        let chosen: Vec<String> =
            read_jsonl(&trace).iter().map(|l| l["chosen"].as_str().unwrap().to_string()).collect();
        assert_eq!(
            chosen,
            ["ADAPTIVE_3", "ADAPTIVE_3", "unknown", "ADAPTIVE_3", "ADAPTIVE_3", "ADAPTIVE_3"],
            "inside {inside}"
        );
    }
}

/// A second `dmapp_init` while the job runs keeps every thread's attributes (in the emulator; a
/// release's behaviour is open), the library's routing too: the application's own, which it asks
/// for again, is still its intent, shown by `dmapp_init`'s `actual` and `dmapp_get_rma_attrs[_ext]` and given back when the
/// library stops routing. (The library used to take its own routing for the application's.)
#[test]
fn a_second_dmapp_init_keeps_the_applications_routing_its_own() {
    let inits = |r: &Run| -> Vec<String> {
        r.stdout.lines().filter(|l| l.starts_with("init") || l.starts_with("routing")).map(String::from).collect()
    };
    // The thread that calls dmapp_init again, then aar_disable().
    let r = driver("dmapp-reinit", "init put 1 64 2 initext routing api disable put 1 64 2 routing").run();
    r.assert_ok();
    assert_eq!(
        inits(&r),
        ["init rc=0 put=2 get=2", "init rc=0 put=2 get=2", "routing put=6 get=2", "routing put=2 get=2"],
        "actual shows the application's routing; disabled, it is given back"
    );
    assert_eq!(routings(&r, "PUT"), [ADAPTIVE_3, ADAPTIVE_3, ADAPTIVE, ADAPTIVE]);
    assert_eq!(set_routings(&r), [(ADAPTIVE_3, ADAPTIVE), (ADAPTIVE, ADAPTIVE)]);
    // Its get-modify-set keeps its own routing.
    let r = driver("dmapp-reinit-getset", "init put 1 64 2 init getset routing").run();
    r.assert_ok();
    assert!(r.stdout.contains("getset saw put=2 get=2 base put=2 get=2\n"), "{}", r.stdout);
    assert!(r.stdout.contains("routing put=2 get=2\n"), "{}", r.stdout);
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
}

/// A second `dmapp_init` while the job runs, through either export, is the application's new
/// intent: what it asks for is its routing from then on, shown by `actual` and
/// `dmapp_get_rma_attrs[_ext]` and kept when the library stops routing, also where it is exactly
/// the routing the library has in force (which DMAPP kept: the library used to keep the earlier
/// intent then) or where DMAPP kept the library's routing instead (a non-adaptive request then
/// goes in force at the thread's next call, never overridden).
#[test]
fn a_second_dmapp_init_of_a_running_job_states_the_applications_new_intent() {
    let lines = |r: &Run| -> Vec<String> {
        let wanted = ["init", "routing", "getset saw"];
        r.stdout.lines().filter(|l| wanted.iter().any(|w| l.starts_with(w))).map(String::from).collect()
    };
    for init in ["initas", "initas12"] {
        // Asks for ADAPTIVE, the library puts ADAPTIVE_3 in force, the application asks for it.
        let first = "initas 2 2 put 1 64 1 get 1 64 1";
        let run = |name: &str, then: &str| {
            let r = driver(&format!("{name}-{init}"), &format!("{first} {init} 6 6 {then}"))
                .env("AAR_MODE", "ADAPTIVE3")
                .run();
            r.assert_ok();
            assert!(warnings(&r).is_empty(), "{init}: {:?}", warnings(&r));
            lines(&r)
        };
        assert_eq!(
            run("dmapp-reinit-asks-ours", "getset"),
            ["init rc=0 put=2 get=2", "init rc=0 put=6 get=6", "getset saw put=6 get=6 base put=6 get=6"],
            "{init}: actual and dmapp_get_rma_attrs[_ext] show what the application asked for"
        );
        assert_eq!(
            run("dmapp-reinit-asks-ours-off", "api disable put 1 64 1 get 1 64 1 routing"),
            ["init rc=0 put=2 get=2", "init rc=0 put=6 get=6", "routing put=6 get=6"],
            "{init}: disabled, the library gives back what the application asked for"
        );
        // Asks for PUT DETERMINISTIC and GET IN_ORDER, which DMAPP (the emulator) does not apply:
        // it keeps the library's ADAPTIVE_3 in force, and says success.
        let r = driver(
            &format!("dmapp-reinit-asks-other-{init}"),
            &format!("{first} {init} 1 0 put 1 64 1 get 1 64 1 routing"),
        )
        .env("AAR_MODE", "ADAPTIVE3")
        .run();
        r.assert_ok();
        assert_eq!(
            lines(&r),
            ["init rc=0 put=2 get=2", "init rc=0 put=1 get=0", "routing put=1 get=0"],
            "{init}: the application's non-adaptive request goes in force and is never changed"
        );
        assert_eq!(routings(&r, "PUT"), [ADAPTIVE_3, DETERMINISTIC], "{init}");
        assert_eq!(routings(&r, "GET"), [ADAPTIVE_3, IN_ORDER], "{init}");
    }
}

/// After `dmapp_finalize`, a new job's attributes are the application's: a `dmapp_init` that asks
/// for exactly the routing the library had in force on the thread states the application's new
/// intent, which `actual` shows and the library keeps when it stops routing. (The library used to
/// take that routing for its own, kept in force by DMAPP, and give back the previous job's.)
#[test]
fn a_dmapp_init_after_dmapp_finalize_that_asks_for_the_librarys_routing_is_the_applications_intent() {
    let script = "init put 1 64 2 get 1 64 1 finalize initas 6 6 routing api disable put 1 64 1 get 1 64 1 routing";
    let r = driver("dmapp-reinit-asks", script).run();
    r.assert_ok();
    let lines: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("init") || l.starts_with("routing")).collect();
    assert_eq!(
        lines,
        ["init rc=0 put=2 get=2", "init rc=0 put=6 get=6", "routing put=6 get=6", "routing put=6 get=6"],
        "actual shows what the application asked for; disabled, the library gives back nothing"
    );
    let calls: Vec<(&str, u64)> =
        data_calls(&r).iter().map(|v| (v["kind"].as_str().unwrap(), v["routing"].as_u64().unwrap())).collect();
    assert_eq!(
        calls,
        [("PUT", ADAPTIVE_3), ("PUT", ADAPTIVE_3), ("GET", ADAPTIVE_3), ("PUT", ADAPTIVE_3), ("GET", ADAPTIVE_3)]
    );
    assert_eq!(set_routings(&r), [(ADAPTIVE_3, ADAPTIVE), (ADAPTIVE_3, ADAPTIVE_3)], "no set in the second job");
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
}

/// tests/c/dmapp_old_main.c linked against tests/c/dmapp_old.c as its libdmapp.so (built with
/// `flags`), both in `dir`.
fn over_old_libdmapp(dir: &std::path::Path, flags: &[&str]) -> std::path::PathBuf {
    let cc = |args: &[&std::ffi::OsStr]| {
        let st = std::process::Command::new("cc")
            .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(root().join("cabi"))
            .arg("-I")
            .arg(root().join("tests/c"))
            .args(flags)
            .args(args)
            .status()
            .unwrap();
        assert!(st.success(), "cc {args:?}");
    };
    std::fs::create_dir_all(dir).unwrap();
    let lib = dir.join("libdmapp.so");
    let prog = dir.join("dmapp_old_main");
    let c = |name: &str| root().join("tests/c").join(name);
    cc(&["-shared".as_ref(), "-fPIC".as_ref(), c("dmapp_old.c").as_os_str(), "-o".as_ref(), lib.as_os_str()]);
    let (link_dir, rpath) = (format!("-L{}", dir.display()), format!("-Wl,-rpath,{}", dir.display()));
    cc(&[
        c("dmapp_old_main.c").as_os_str(),
        "-o".as_ref(),
        prog.as_os_str(),
        link_dir.as_ref(),
        "-ldmapp".as_ref(),
        rpath.as_ref(),
    ]);
    prog
}

/// A libdmapp without `dmapp_get_rma_attrs_ext` or `dmapp_set_rma_attrs_ext` (an older release, or
/// one libaar.so cannot find them in): DMAPP is not steered, and the library says so once, with the
/// call it lacks, in a warning and in the record; every call is forwarded and counted, with the
/// application's routing where it can be read, else of unknown routing. (The library used to
/// forward them all of unknown routing without a word, its record saying DMAPP was steered, or,
/// lacking only the set, to blame the routing table or the attribute layout.)
#[test]
fn a_libdmapp_without_the_ext_attribute_calls_is_said_once_and_not_steered() {
    for (flags, lacks, mode) in [
        (&[][..], "dmapp_get_rma_attrs_ext", "OTHER"),
        (&["-DWITH_GET_EXT"][..], "dmapp_set_rma_attrs_ext", "ADAPTIVE0"),
    ] {
        let dir = scratch(&format!("dmapp-old-lib{}", flags.len()));
        let r = Launch::program("dmapp-old", over_old_libdmapp(&dir, flags), "").env("AAR_MODE", "ADAPTIVE3").run();
        r.assert_ok();
        assert_eq!(r.stdout, "routing=2\nrouting=2\nown=2\nputs=4 gets=1\n", "forwarded untouched");
        let w: Vec<&str> = warnings(&r).into_iter().filter(|l| l.contains("DMAPP")).collect();
        assert_eq!(w.len(), 1, "{:?}", r.aar_lines());
        assert!(
            w[0].contains(&format!("DMAPP: this libdmapp has no {lacks}: "))
                && w[0].contains("does not steer DMAPP")
                && w[0].contains("module load cray-dmapp")
                && !w[0].contains("routing table in use"),
            "{}",
            w[0]
        );
        let rec = record(&r);
        assert_eq!(rec["dmapp"]["steering"], false, "{}", rec["dmapp"]);
        assert_eq!(rec["dmapp"]["stopped_because"], format!("this libdmapp has no {lacks}"));
        assert_eq!(rec["dmapp"]["attribute_sets"], 0, "{}", rec["dmapp"]);
        assert_eq!(rec["apis"]["DMAPP"]["messages"], 5, "{}", rec["apis"]);
        assert_eq!(rec["modes"][mode]["messages"], 5, "{}", rec["modes"]);
    }
}

/// A libdmapp whose `_ext` attribute calls call its other exported functions through its PLT (as
/// a library built with -fPIC does): those calls reach libaar.so's `dmapp_get_rma_attrs` and
/// `dmapp_set_rma_attrs` from inside the library's own reading and setting of a thread's routing,
/// and go out untouched. (The library used to handle them as the application's: reading the
/// attributes again from inside their reading until the stack overflowed, and taking its own
/// routing for the application's, which it then kept after `aar_disable()`.)
#[test]
fn attribute_calls_libdmapp_makes_itself_go_out_untouched() {
    let dir = scratch("dmapp-old-plt-lib");
    let prog = over_old_libdmapp(&dir, &["-DWITH_EXT"]);
    let r = Launch::program("dmapp-old-plt", prog, "").env("AAR_MODE", "ADAPTIVE3").run();
    r.assert_ok();
    assert_eq!(
        r.stdout, "routing=6\nrouting=2\nown=2\nputs=4 gets=1\n",
        "ADAPTIVE_3 while steered; the application's ADAPTIVE back after aar_disable()"
    );
    assert!(warnings(&r).iter().all(|l| !l.contains("DMAPP")), "{:?}", warnings(&r));
    let rec = record(&r);
    assert_eq!(rec["dmapp"]["steering"], true, "{}", rec["dmapp"]);
    assert_eq!(rec["dmapp"]["attribute_sets"], 3, "PUT and GET set once, then given back: {}", rec["dmapp"]);
    assert_eq!(rec["modes"]["ADAPTIVE3"]["messages"], 4, "{}", rec["modes"]);
    assert_eq!(rec["modes"]["ADAPTIVE0"]["messages"], 1, "{}", rec["modes"]);
}

#[test]
fn a_bad_aar_dmapp_routing_is_named_by_its_entry_and_an_empty_one_is_unset_without_being_called_so() {
    let assumed = "IN_ORDER=0,DETERMINISTIC=1,ADAPTIVE=2,DETERMINISTIC_1=3,ADAPTIVE_1=4,ADAPTIVE_2=5,ADAPTIVE_3=6";
    // An unknown name in entry 8, and a comma at the end: one warning each that names the entry,
    // and the assumed table steers (its ADAPTIVE_3 is the emulator's).
    for (test, value, said) in [
        ("dmapp-table-unknown", format!("{assumed},FOO=7"), "(entry 8, \"FOO=7\": the name is not one of IN_ORDER,"),
        ("dmapp-table-comma", format!("{assumed},"), "(entry 8 is empty: remove the comma too many)"),
    ] {
        let r = driver(test, "init put 1 64 3").env("AAR_DMAPP_ROUTING", &value).run();
        r.assert_ok();
        let w = warnings(&r);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("aar: AAR_DMAPP_ROUTING=\"IN_ORDER=0,") && w[0].contains(said), "{}", w[0]);
        assert!(
            w[0].contains(&format!("; using the default (the assumed table {assumed}). Give the values")),
            "{}",
            w[0]
        );
        assert_eq!(routings(&r, "PUT"), [ADAPTIVE_3; 3]);
        let rec = record(&r);
        assert_eq!(rec["dmapp"]["routing_table"], assumed);
        let source = rec["dmapp"]["table_source"].as_str().unwrap();
        assert!(source.starts_with("assumed") && source.contains("its value was refused with a warning"), "{source}");
    }
    // Empty: as if unset (as every AAR_* variable), no warning, and the record does not say unset
    // alone.
    let r = driver("dmapp-table-empty", "init put 1 64 3").env("AAR_DMAPP_ROUTING", "").run();
    r.assert_ok();
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    assert_eq!(routings(&r, "PUT"), [ADAPTIVE_3; 3]);
    let source = record(&r)["dmapp"]["table_source"].as_str().unwrap().to_string();
    assert!(source.contains("AAR_DMAPP_ROUTING gave no table: it is unset or empty"), "{source}");
}

// ---- fork() -------------------------------------------------------------------------------------

/// A fork child's record counts the child's threads only: the forking thread (the only one the
/// child has) if the library had read its attributes in the parent or reads them in the child,
/// and the threads the child starts; not the parent's other threads.
#[test]
fn a_fork_child_counts_its_own_dmapp_threads_only() {
    for (test, script, parent, child) in [
        ("dmapp-fork-threads", "init threads 4 64 10 fork put 1 64 1", 4, 1),
        ("dmapp-fork-threads-main", "init put 1 64 1 threads 4 64 10 fork put 1 64 1", 5, 1),
        ("dmapp-fork-threads-more", "init put 1 64 1 threads 4 64 10 fork threads 2 64 5", 5, 3),
    ] {
        let r = driver(test, script).run();
        r.assert_ok();
        assert!(r.stdout.contains("fork status=0\n"), "{test}: {}", r.stdout);
        let recs = r.records();
        assert_eq!(recs.len(), 2, "{test}: the parent's and the child's");
        let threads = |fork_child: bool| {
            let rec = recs.iter().find(|rec| rec["fork_child"] == fork_child).unwrap();
            rec["dmapp"]["threads"].as_u64()
        };
        assert_eq!((threads(false), threads(true)), (Some(parent), Some(child)), "{test}: (parent, child)");
    }
}
