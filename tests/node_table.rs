//! The node table (`AAR_TOPOLOGY`) as a site writes it, mistakes included: what the library
//! makes of each table, seen in the decision trace's `destination`, and the one message a table
//! it cannot use gets. The driver posts from the emulator's first NIC (0x100) to its second
//! (0x101) under `steady`, the policy that asks where destinations sit.

mod common;
use common::*;

/// The destination of every traced post, and the library's lines on stderr about the table.
fn run(test: &str, table: &[u8]) -> (Vec<String>, Vec<String>) {
    run_script(test, table, "rdma 65536 3 0", None).0
}

/// [`run`] of the driver's commands `script` (3 posts), with `preload` after libaar.so; also
/// the driver's output.
fn run_script(test: &str, table: &[u8], script: &str, preload: Option<&str>) -> ((Vec<String>, Vec<String>), String) {
    let mut launch = Launch::driver(test, script).env("AAR_MODE", "steady").env("PMI_GNI_LOC_ADDR", "0x100");
    if let Some(p) = preload {
        launch = launch.env("LD_PRELOAD", &format!("{}:{p}", libaar().display()));
    }
    let (nodes, trace) = (launch.dir.join("nodes.txt"), launch.dir.join("trace.jsonl"));
    std::fs::write(&nodes, table).unwrap();
    let r =
        launch.env("AAR_TOPOLOGY", &nodes.display().to_string()).env("AAR_TRACE", &trace.display().to_string()).run();
    r.assert_ok();
    let classes: Vec<String> =
        read_jsonl(&trace).iter().map(|l| l["destination"].as_str().unwrap().to_string()).collect();
    assert_eq!(classes.len(), 3, "{test}: {classes:?}");
    let said = r.aar_lines().into_iter().filter(|l| l.contains("node table")).map(String::from).collect();
    ((classes, said), r.stdout.clone())
}

/// Tables the library uses as written: hexadecimal groups and routers as NIC addresses are, a
/// byte-order mark an editor put first, and a table mixing both forms, whose xtprocadmin lines'
/// groups are never the NIC GROUP ROUTER lines' (a site's group 0 is not cabinets c2 and c3).
#[test]
fn tables_in_every_documented_form_place_the_destination() {
    for (test, table, class) in [
        ("table-hex", &b"0x100 0x2 0x11\n0x101 0x2 0x10\n"[..], "same-group"),
        ("table-bom", b"\xef\xbb\xbf0x100 2 17\n0x101 2 17\n", "same-router"),
        ("table-mixed", b"0x100 0 0\n257 0x101 c2-0c0s5n0 compute up batch\n", "other-group"),
    ] {
        let (classes, said) = run(test, table);
        assert_eq!(classes, [class; 3], "{test}: {said:?}");
        assert!(said.is_empty(), "{test}: {said:?}");
    }
}

/// An unbind or a destroy that uGNI refuses (tests/c/ep_busy.c) leaves the endpoint as it was:
/// its posts still go to the place it is bound to.
#[test]
fn an_endpoint_whose_unbind_or_destroy_was_refused_keeps_its_destination() {
    let busy = compile("cc", "ep_busy", &[root().join("tests/c/ep_busy.c")], &["-shared", "-fPIC"]);
    let script = "rdma 65536 1 0 epunbind rdma 65536 1 0 epdestroy rdma 65536 1 0";
    let ((classes, said), out) =
        run_script("ep-busy", b"0x100 0x2 0x11\n0x101 0x2 0x10\n", script, Some(&busy.display().to_string()));
    assert!(out.contains("epunbind rc=1") && out.contains("epdestroy rc=1"), "refused (GNI_RC_NOT_DONE): {out}");
    assert_eq!(classes, ["same-group"; 3], "{said:?}");
}

/// A table the library cannot use gets one message that names the variable and the file, the line
/// and what is wrong with it, says that every destination is then of one class, and how to fix it.
#[test]
fn a_malformed_table_is_one_message_naming_its_line() {
    for (test, table, want) in [
        (
            "table-hex-mismatch",
            &b"256 0x999 c0-0c0s5n0 compute up batch\n257 0x101 c2-0c0s5n0 compute up batch\n"[..],
            "line 1: its (HEX) field 0x999 is not its NID 256 (0x100)",
        ),
        (
            "table-twice",
            b"0x100 2 17\n0x101 3 17\n# again\n257 2 17\n",
            "line 4: NIC address 0x101 is listed twice (first on line 2)",
        ),
        (
            "table-too-big",
            b"0x100 2 17\n0x101 2 4294967296\n",
            "line 2: group and router must be whole numbers from 0 to 4294967295, decimal or 0x hexadecimal",
        ),
        (
            "table-nic-too-big",
            b"0x100 2 17\n0x100000101 2 17\n",
            "line 2: the first field is not a NIC address (whole numbers from 0 to 4294967295",
        ),
        ("table-empty", b"", "(no node is listed)"),
    ] {
        let (classes, said) = run(test, table);
        assert_eq!(classes, ["unknown"; 3], "{test}: {said:?}");
        assert_eq!(said.len(), 1, "{test}: {said:?}");
        for part in
            ["AAR_TOPOLOGY=\"", "nodes.txt\" is not a usable node table (", want, "every destination is treated alike"]
        {
            assert!(said[0].contains(part), "{test}: {part:?} in {}", said[0]);
        }
        assert!(said[0].contains("Give a file of NIC GROUP ROUTER lines or xtprocadmin output"), "{}", said[0]);
    }
}

/// A table that does not list this node, or a destination, is used as far as it goes, and the
/// one message about it names the table (the variable and the file), which NIC address it lacks,
/// and what to give instead: a job may have more than one table about, and the message is what
/// tells which one to fix.
#[test]
fn a_table_without_this_node_or_a_destination_is_named_in_its_message() {
    for (test, table, want) in [
        ("table-no-here", &b"0x101 2 17\n"[..], "does not list this node (NIC address 0x100"),
        ("table-no-there", b"0x100 2 17\n", "does not list NIC address 0x101, a destination"),
    ] {
        let (classes, said) = run(test, table);
        assert_eq!(classes, ["unknown"; 3], "{test}: {said:?}");
        assert_eq!(said.len(), 1, "{test}: {said:?}");
        for part in [want, "AAR_TOPOLOGY=\"", "nodes.txt\"", "Give a table that lists every node of the job"] {
            assert!(said[0].contains(part), "{test}: {part:?} in {}", said[0]);
        }
    }
}

/// A `PMI_GNI_LOC_ADDR` that is set but is no NIC address (a launcher's other format, a
/// mistake) leaves this node without a place, said once: with the value as given, not as if the
/// variable were unset.
#[test]
fn a_nic_address_that_does_not_parse_is_said_as_given_not_as_unset() {
    let launch = Launch::driver("table-bad-nic", "rdma 65536 3 0").env("AAR_MODE", "steady");
    let (nodes, trace) = (launch.dir.join("nodes.txt"), launch.dir.join("trace.jsonl"));
    std::fs::write(&nodes, "0x100 2 17\n0x101 2 16\n").unwrap();
    let r = launch
        .env("PMI_GNI_LOC_ADDR", "nic-0x100")
        .env("AAR_TOPOLOGY", &nodes.display().to_string())
        .env("AAR_TRACE", &trace.display().to_string())
        .run();
    r.assert_ok();
    let classes: Vec<String> =
        read_jsonl(&trace).iter().map(|l| l["destination"].as_str().unwrap().to_string()).collect();
    assert_eq!(classes, ["unknown"; 3]);
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("PMI_GNI_LOC_ADDR")).collect();
    assert_eq!(said.len(), 1, "{:?}", r.aar_lines());
    for part in ["PMI_GNI_LOC_ADDR=\"nic-0x100\" is not a NIC address", "every destination is treated alike"] {
        assert!(said[0].contains(part), "{part:?} in {}", said[0]);
    }
    assert!(!said[0].contains("is unset"), "{}", said[0]);
}
