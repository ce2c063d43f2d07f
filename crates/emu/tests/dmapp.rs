//! The emulated libdmapp as C programs see it, linked `-ldmapp -lugni`: data moved by every call
//! in every form and element type, the error codes, per-thread RMA attributes and their
//! validation, the post log, the `queue-first` attribute layout, the job's settings, and one
//! object serving both APIs. No preload: these test the emulator alone. (The NIC counters moved
//! by DMAPP traffic are checked with uGNI's in emulator.rs, the simulated network in
//! simulated.rs.)

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use aar_abi::dmapp::*;
use common::*;
use serde_json::Value;

const LIBS: &[&str] = &["-ldmapp", "-lugni"];

fn dmapp_check() -> PathBuf {
    compile_with("crates/emu/tests/c/dmapp_check.c", "dmapp_check", LIBS)
}

fn scenario(name: &str) {
    assert_eq!(pass(&dmapp_check(), name, &[]), Vec::<String>::new());
}

#[test]
fn the_symmetric_heap_gives_blocks_at_the_same_offset_on_every_pe() {
    scenario("sheap");
}

#[test]
fn freeing_what_is_not_a_heap_block_is_said_once_per_call_and_ignored() {
    let out = run(&dmapp_check(), &["sheap_bad_free"], &[]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    for line in lines {
        assert!(line.starts_with("aar-emu: dmapp_sheap_free(0x") && line.ends_with("; ignored"), "{line}");
    }
}

#[test]
fn header_layouts_match_the_abi() {
    scenario("layout");
}

#[test]
fn nothing_is_permitted_outside_a_job_and_init_checks_its_attributes() {
    scenario("init");
}

#[test]
fn puts_and_gets_of_every_type_and_form_reach_every_pe() {
    scenario("put_get");
}

#[test]
fn strided_indexed_and_pe_list_calls_move_the_right_elements() {
    scenario("strided");
}

#[test]
fn every_amo_in_every_form_operates_on_the_remote_word() {
    scenario("amo");
}

#[test]
fn registered_and_data_segments_have_a_copy_on_every_pe() {
    scenario("segments");
}

#[test]
fn bad_arguments_get_dmapp_error_codes_and_move_nothing() {
    scenario("errors");
}

#[test]
fn attribute_sets_are_validated_and_refused_ones_change_nothing() {
    scenario("attrs");
}

/// The log's lines as JSON objects.
fn log_lines(path: &std::path::Path) -> Vec<serde_json::Map<String, Value>> {
    std::fs::read_to_string(path).unwrap().lines().map(parse_log_line).collect()
}

#[test]
fn every_data_and_attribute_call_is_logged_with_the_routing_in_force() {
    let log = scratch("dmapp_log.jsonl");
    let lines = pass(&dmapp_check(), "log", &[("AAR_EMU_LOG", log.to_str().unwrap())]);
    let t: i32 = lines[0].strip_prefix("thread ").unwrap().parse().unwrap();
    let want = [
        format!(
            r#"{{"call":"dmapp_put","kind":"PUT","pes":[1],"nelems":8,"type":1,"bytes":64,"messages":1,"routing":null,"routing_name":null,"thread":{t},"rc":{DMAPP_RC_PERMISSION_ERROR}}}"#
        ),
        format!(r#"{{"call":"dmapp_init","thread":{t},"put_routing":2,"get_routing":2,"rc":0}}"#),
        format!(
            r#"{{"call":"dmapp_put_nbi","kind":"PUT","pes":[1],"nelems":8,"type":1,"bytes":64,"messages":1,"routing":2,"routing_name":"ADAPTIVE","thread":{t},"rc":0}}"#
        ),
        format!(r#"{{"call":"dmapp_set_rma_attrs_ext","thread":{t},"put_routing":6,"get_routing":0,"rc":0}}"#),
        format!(
            r#"{{"call":"dmapp_get_nb","kind":"GET","pes":[2],"nelems":100,"type":3,"bytes":100,"messages":1,"routing":0,"routing_name":"IN_ORDER","thread":{t},"rc":0}}"#
        ),
        format!(
            r#"{{"call":"dmapp_afadd_qw","kind":"AMO","pes":[3],"nelems":1,"type":1,"bytes":8,"messages":1,"routing":6,"routing_name":"ADAPTIVE_3","thread":{t},"rc":0}}"#
        ),
        format!(
            r#"{{"call":"dmapp_put_ixpe_nbi","kind":"PUT","pes":[1,3],"nelems":8,"type":2,"bytes":32,"messages":2,"routing":6,"routing_name":"ADAPTIVE_3","thread":{t},"rc":0}}"#
        ),
        format!(r#"{{"call":"dmapp_set_rma_attrs","thread":{t},"put_routing":7,"get_routing":0,"rc":1}}"#),
        format!(
            r#"{{"call":"dmapp_put","kind":"PUT","pes":[1],"nelems":8,"type":9,"bytes":null,"messages":1,"routing":6,"routing_name":"ADAPTIVE_3","thread":{t},"rc":1}}"#
        ),
        format!(
            r#"{{"call":"dmapp_gather_ixpe","kind":"GET","pes":null,"nelems":1,"type":1,"bytes":8,"messages":2,"routing":0,"routing_name":"IN_ORDER","thread":{t},"rc":1}}"#
        ),
        format!(r#"{{"call":"dmapp_set_rma_attrs_ext","thread":{t},"put_routing":null,"get_routing":null,"rc":1}}"#),
    ];
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().collect::<Vec<_>>(), want);
    // The routing values and names are those of the table the emulator implements.
    assert_eq!(RoutingTable::ASSUMED.value(Routing::Adaptive3), Some(6));
    assert_eq!(RoutingTable::ASSUMED.value(Routing::InOrder), Some(0));
}

#[test]
fn each_thread_has_its_own_attributes_and_its_operations_follow_them() {
    let log = scratch("dmapp_threads.jsonl");
    let lines = pass(&dmapp_check(), "threads", &[("AAR_EMU_LOG", log.to_str().unwrap())]);
    // "thread <tid> <k> <sets>" per worker, then "main <tid>".
    let workers: Vec<(i64, u64, u64)> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("thread "))
        .map(|l| {
            let f: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            (f[0] as i64, f[1], f[2])
        })
        .collect();
    let main: i64 = lines.iter().find_map(|l| l.strip_prefix("main ")).unwrap().parse().unwrap();
    assert_eq!(workers.len(), 4);

    // Replay the log: each thread starts with the job's attributes (dmapp_init's, ADAPTIVE both
    // ways) and every data call carries the routing its thread set last.
    let adaptive = RoutingTable::ASSUMED.value(Routing::Adaptive).unwrap() as u64;
    let mut in_force: BTreeMap<i64, [u64; 2]> = BTreeMap::new();
    let (mut sets, mut calls): (BTreeMap<i64, u64>, BTreeMap<i64, u64>) = Default::default();
    for l in log_lines(&log) {
        let thread = l["thread"].as_i64().unwrap();
        let now = in_force.entry(thread).or_insert([adaptive; 2]);
        match l["call"].as_str().unwrap() {
            "dmapp_init" => assert_eq!(thread, main),
            "dmapp_set_rma_attrs" => {
                assert_eq!(l["rc"], 0);
                *now = [l["put_routing"].as_u64().unwrap(), l["get_routing"].as_u64().unwrap()];
                *sets.entry(thread).or_default() += 1;
            }
            call => {
                let direction = if l["kind"] == "GET" { Direction::Get } else { Direction::Put };
                assert_eq!(l["routing"].as_u64(), Some(now[direction.index()]), "{call} on {thread}: {l:?}");
                let name = RoutingTable::ASSUMED.routing(now[direction.index()] as u8).unwrap().name();
                assert_eq!(l["routing_name"], name);
                assert_eq!(l["rc"], 0);
                *calls.entry(thread).or_default() += 1;
            }
        }
    }
    for &(tid, k, n) in &workers {
        assert_eq!(sets[&tid], n, "thread {k}");
        assert_eq!(n, k + 1);
        assert_eq!(calls[&tid], 3 * 200 * n, "thread {k}: a PUT, a GET and an AMO per round");
    }
    // The main thread's own setting (ADAPTIVE_2) held through the workers' sets.
    assert_eq!(in_force[&main], [RoutingTable::ASSUMED.value(Routing::Adaptive2).unwrap() as u64; 2]);
}

#[test]
fn the_queue_first_layout_does_not_read_back_bytes_8_and_9() {
    assert_eq!(pass(&dmapp_check(), "queue_first", &[("AAR_EMU_DMAPP_LAYOUT", "queue-first")]), Vec::<String>::new());
    // Without it, the standard layout: the same program's first check fails (bytes 16 and 17 are
    // queue fields there), which shows the variable is what changed the layout.
    let out = run(&dmapp_check(), &["queue_first"], &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("buf[16] == DMAPP_ROUTING_ADAPTIVE"), "{}", stderr(&out));
}

#[test]
fn aar_emu_dmapp_set_busy_makes_set_calls_busy_and_a_bad_value_is_said() {
    assert_eq!(pass(&dmapp_check(), "busy", &[("AAR_EMU_DMAPP_SET_BUSY", "2")]), Vec::<String>::new());
    // Without it no set is busy: the scenario's first check fails, which shows the variable is
    // what made the calls busy.
    let out = run(&dmapp_check(), &["busy"], &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("returned 0, expected 10"), "DMAPP_RC_BUSY: {}", stderr(&out));
    let out = run(&dmapp_check(), &["busy"], &[("AAR_EMU_DMAPP_SET_BUSY", "lots")]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "aar-emu: AAR_EMU_DMAPP_SET_BUSY=\"lots\": not a number of calls (give a whole number from 0 to 4294967295, \
             or \"always\", optionally followed by \"after M\", M calls answered as usual first); every \
             dmapp_set_rma_attrs[_ext] call is answered as usual"
        ),
        "{}",
        stderr(&out)
    );
}

/// `AAR_EMU_DMAPP_GET_BUSY` makes the first get of the scenario busy (its first check fails on
/// that), and a bad value is said and answers every get as usual.
#[test]
fn aar_emu_dmapp_get_busy_makes_get_calls_busy_and_a_bad_value_is_said() {
    let out = run(&dmapp_check(), &["busy"], &[("AAR_EMU_DMAPP_SET_BUSY", "2"), ("AAR_EMU_DMAPP_GET_BUSY", "1")]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("dmapp_get_rma_attrs_ext(&e)") && stderr(&out).contains("10"), "{}", stderr(&out));
    let out =
        run(&dmapp_check(), &["busy"], &[("AAR_EMU_DMAPP_SET_BUSY", "2"), ("AAR_EMU_DMAPP_GET_BUSY", "1 before 2")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "aar-emu: AAR_EMU_DMAPP_GET_BUSY=\"1 before 2\": not a number of calls (give a whole number from 0 to \
             4294967295, or \"always\", optionally followed by \"after M\", M calls answered as usual first); every \
             dmapp_get_rma_attrs[_ext] call is answered as usual"
        ),
        "{}",
        stderr(&out)
    );
}

/// "job npes N sheap BYTES" from the job scenario, with its stderr.
fn job_shape(env: &[(&str, &str)]) -> ((u32, u64), String) {
    let out = run(&dmapp_check(), &["job"], env);
    let stdout = expect_success(&out, "job");
    let f: Vec<&str> = stdout.lines().next().unwrap().split(' ').collect();
    ((f[2].parse().unwrap(), f[4].parse().unwrap()), stderr(&out))
}

#[test]
fn pes_and_heap_size_come_from_the_environment() {
    assert_eq!(job_shape(&[]), ((4, 16 << 20), String::new()));
    let env = [("AAR_EMU_DMAPP_PES", "7"), ("AAR_EMU_DMAPP_SHEAP", "64K"), ("AAR_EMU_DMAPP_LAYOUT", "Queue-First")];
    assert_eq!(job_shape(&env), ((7, 64 << 10), String::new()));
    assert_eq!(job_shape(&[("AAR_EMU_DMAPP_PES", "1")]).0, (1, 16 << 20));
}

#[test]
fn bad_dmapp_settings_warn_once_each_and_keep_the_defaults() {
    let env = [("AAR_EMU_DMAPP_PES", "0"), ("AAR_EMU_DMAPP_SHEAP", "lots"), ("AAR_EMU_DMAPP_LAYOUT", "bytes")];
    let (shape, err) = job_shape(&env);
    assert_eq!(shape, (4, 16 << 20));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    for (var, value, instead, fix) in [
        ("AAR_EMU_DMAPP_PES", "0", "using the default 4 PEs", "from 1 to 4096"),
        ("AAR_EMU_DMAPP_SHEAP", "lots", "using the default 16M", "e.g. 4096, 64K, 1MiB"),
        ("AAR_EMU_DMAPP_LAYOUT", "bytes", "using the standard layout", "give \"standard\" or \"queue-first\""),
    ] {
        let line = lines.iter().find(|l| l.contains(var)).unwrap_or_else(|| panic!("no {var} warning: {err}"));
        assert!(line.starts_with(&format!("aar-emu: {var}=\"{value}\"")), "{line}");
        assert!(line.contains(instead) && line.contains(fix), "{line}");
    }
    let (shape, err) = job_shape(&[("AAR_EMU_DMAPP_SHEAP", "100")]);
    assert_eq!(shape, (4, 16 << 20));
    assert!(err.contains("100 bytes is not from 4K to 64G"), "{err}");
}

#[test]
fn one_object_serves_dmapp_and_ugni() {
    // Linked -ldmapp -lugni, and -ldmapp alone: libdmapp.so is a link to libugni.so, whose soname
    // the program records, so one object is loaded and defines both APIs.
    for (name, libs) in [("dmapp_check", LIBS), ("dmapp_check_dmapp_only", &["-ldmapp"][..])] {
        let exe = compile_with("crates/emu/tests/c/dmapp_check.c", name, libs);
        let lines = pass(&exe, "one_object", &[]);
        let object = lines[0].strip_prefix("object ").unwrap();
        assert!(object.ends_with("/libugni.so"), "{object}");
    }
    let link = std::fs::read_link(lib_dir().join("libdmapp.so")).expect("libdmapp.so is a symbolic link");
    assert_eq!(link, PathBuf::from("libugni.so"));
}
