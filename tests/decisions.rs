//! Decisions follow the NIC counters, read through the real libpapi from the emulator's
//! Software-Defined Events, in both directions.

mod common;
use common::*;

/// Emulated networks (latency Adaptive/High Bias in µs, stall cycles per flit Adaptive/High Bias).
const CONGESTED_MINIMAL: &str = "net 1.2 1.0 2 50"; // minimal paths stall: Adaptive wins for bulk
const LATENCY_BOUND: &str = "net 3.0 1.0 0.1 0.2"; // non-minimal paths cost latency: High Bias wins

fn trace_of(r: &Run) -> Vec<serde_json::Value> {
    read_jsonl(&r.dir.join("trace.jsonl"))
}

#[test]
fn counters_drive_the_model_to_adaptive_then_high_bias_then_adaptive_again() {
    // The paper's setting (a counter read after every decision) and the default (one read per
    // window of 8 decisions, and at every side change): both follow the network, the default
    // a few decisions later.
    for (window, settle) in [("1", 4), ("8", 18)] {
        let script = format!(
            "{CONGESTED_MINIMAL} rdma 8192 40 0 {LATENCY_BOUND} rdma 8192 40 0 {CONGESTED_MINIMAL} rdma 8192 40 0"
        );
        let launch = Launch::driver(&format!("both-ways-{window}"), &script);
        let trace = launch.dir.join("trace.jsonl").display().to_string();
        let r = launch.env("AAR_TRACE", &trace).env("AAR_WINDOW", window).run();
        r.assert_ok();
        let modes = r.dlvr_modes("GNI_PostRdma");
        assert_eq!(modes.len(), 120);
        // Each 8 KiB post crosses the 4 KiB threshold: a decision each.
        let phase = |i: usize| &modes[40 * i + settle..40 * (i + 1)];
        assert!(phase(0).iter().all(|&m| m == AD0), "window {window}: congested minimal paths: Adaptive ({modes:?})");
        assert!(phase(1).iter().all(|&m| m == AD3), "window {window}: latency-bound: back to High Bias ({modes:?})");
        assert!(phase(2).iter().all(|&m| m == AD0), "window {window}: congested again: Adaptive ({modes:?})");
        let t = trace_of(&r);
        assert_eq!(t.len(), 120);
        assert!(t[2..].iter().all(|l| l["reason"] == "model"), "window {window}: decided by the model");
        // The trace shows the window the model used: the emulator's configured stall ratios.
        assert_eq!(t[39]["stall_ratio"], 2.0, "measured on Adaptive in the congested network");
        assert_eq!(t[79]["stall_ratio"], 0.2, "measured on High Bias in the latency-bound network");
        let rec = &r.records()[0];
        assert!(rec["engine"]["switches_to_low_stall"].as_u64().unwrap() >= 2);
        assert!(rec["engine"]["switches_to_low_latency"].as_u64().unwrap() >= 1);
        assert_eq!(rec["counters"]["backend"], "papi");
    }
}

#[test]
fn a_stream_of_tiny_messages_still_triggers_decisions() {
    // 64-byte posts: 5 flits; the cumulative size crosses 4 KiB every 65 posts.
    let r = Launch::driver("tiny-stream", "fma 64 650 0").env("AAR_WINDOW", "1").run();
    r.assert_ok();
    let rec = &r.records()[0];
    assert_eq!(rec["engine"]["decisions"], 10, "650 × 64 B = 10 crossings of 4096 B");
    assert_eq!(rec["counters"]["reads"], 11, "one read per decision, plus the baseline");
    // On the emulator's default (quiet) network tiny messages are latency-bound: High Bias.
    assert!(r.dlvr_modes("GNI_PostFma").iter().all(|&m| m == AD3));
    // By default one read per 8 decisions: baseline, after the first decision (no window yet),
    // and after the ninth.
    let r = Launch::driver("tiny-stream-8", "fma 64 650 0").run();
    r.assert_ok();
    assert_eq!(r.records()[0]["engine"]["decisions"], 10);
    assert_eq!(r.records()[0]["counters"]["reads"], 3);
}

/// A CQ write's one packet carries only its value: the length a reused descriptor still holds is
/// not read by uGNI, so it adds nothing to the cumulative size, the tally or the trace.
#[test]
fn a_cq_write_counts_no_bytes_whatever_its_descriptor_s_length() {
    let trace = "trace.jsonl";
    let launch = Launch::driver("cqwrite-length", "cqwrite 5 0 65536");
    let path = launch.dir.join(trace).display().to_string();
    let r = launch.env("AAR_TRACE", &path).run();
    r.assert_ok();
    assert_eq!(r.posts("GNI_PostCqWrite").len(), 5);
    let rec = &r.records()[0];
    assert_eq!(
        (&rec["apis"]["uGNI"]["messages"], &rec["apis"]["uGNI"]["bytes"]),
        (&5.into(), &0.into()),
        "{}",
        rec["apis"]
    );
    assert_eq!(rec["engine"]["decisions"], 0, "5 × 64 KiB of stale length crossed no threshold");
    let lines = trace_of(&r);
    assert_eq!(lines.len(), 5);
    assert!(lines.iter().all(|l| l["bytes"] == 0 && l["packets"] == 1 && l["post_type"] == "CQWRITE"), "{lines:?}");
}

#[test]
fn the_threshold_variable_sets_when_decisions_happen() {
    let r =
        Launch::driver("threshold", &format!("{CONGESTED_MINIMAL} fma 1024 64 0")).env("AAR_THRESHOLD", "16K").run();
    r.assert_ok();
    assert_eq!(r.records()[0]["engine"]["decisions"], 3, "64 KiB in 1 KiB posts crosses 16 KiB (strictly) 3 times");
}

#[test]
fn gets_need_five_times_the_bytes_of_puts_to_go_adaptive() {
    // Flits: a 2 KiB PUT is 32 + 128 = 160 request flits; a 2 KiB GET is 32.
    // Break-even on High Bias with L = 1, s = 4 (Adaptive estimated L 1.2, s 0.8): f > 0.2 / (3.2 × 1.25e-3) = 50.
    let script = "net 1.2 1.0 0.8 4 freeze 0 fma 2048 10 0 fmaget 2048 10 0";
    let r = Launch::driver("put-get", script).env("AAR_THRESHOLD", "0").env("AAR_FRESHNESS", "0").run();
    r.assert_ok();
    let puts = r.dlvr_modes("GNI_PostFma");
    let (put, get) = puts.split_at(10);
    assert!(put[3..].iter().all(|&m| m == AD0), "2 KiB PUTs (160 flits) go Adaptive: {put:?}");
    assert!(get[3..].iter().all(|&m| m == AD3), "2 KiB GETs (32 flits) stay High Bias: {get:?}");
}

#[test]
fn inside_mpi_alltoall_the_low_stall_mode_is_adaptive1() {
    let r =
        Launch::driver("alltoall", &format!("{CONGESTED_MINIMAL} rdma 8192 8 0 alltoall 8192 8 rdma 8192 4 0")).run();
    r.assert_ok();
    assert!(r.stdout.contains("alltoall rc=0 reached_pmpi=1"), "{}", r.stdout);
    let modes = r.dlvr_modes("GNI_PostRdma");
    assert_eq!(&modes[4..8], &[AD0; 4], "outside: ADAPTIVE0");
    assert_eq!(&modes[8..16], &[AD1; 8], "inside MPI_Alltoall: ADAPTIVE1");
    assert_eq!(&modes[16..], &[AD0; 4], "after it: ADAPTIVE0 again");
    assert_eq!(r.records()[0]["reasons"]["alltoall"], 8);
    // AAR_ALLTOALL=0 turns the override off.
    let r = Launch::driver("alltoall-off", &format!("{CONGESTED_MINIMAL} rdma 8192 8 0 alltoall 8192 8"))
        .env("AAR_ALLTOALL", "0")
        .run();
    r.assert_ok();
    assert_eq!(&r.dlvr_modes("GNI_PostRdma")[8..], &[AD0; 8]);
}

/// Under `steady`, once a decision inside MPI_Alltoall goes to ADAPTIVE1, the alltoall's posts
/// below the threshold go with it (an alltoall's messages are posted together, and a mix of
/// minimal and non-minimal ones is the slowest); under `auto` they stay on High Bias.
#[test]
fn under_steady_an_alltoalls_small_posts_follow_its_decisions() {
    let run = |mode: &str| {
        let script = format!("{CONGESTED_MINIMAL} alltoall 1024 40 rdma 1024 10 0");
        let mut launch = Launch::driver(&format!("alltoall-small-{mode}"), &script).env("AAR_MODE", mode);
        for var in ["MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"] {
            launch = launch.unset(var);
        }
        let r = launch.run();
        r.assert_ok();
        assert!(r.stdout.contains("alltoall rc=0 reached_pmpi=1"), "{}", r.stdout);
        let modes = r.dlvr_modes("GNI_PostRdma");
        assert_eq!(modes.len(), 50);
        (modes, r.records()[0]["reasons"]["alltoall"].as_u64().unwrap())
    };
    // 1 KiB posts cross the 4 KiB threshold at every fifth: decisions at posts 5, 10, ..., 50.
    // The first has no window (High Bias); the second sees High Bias stall 50 cycles per flit
    // and goes ADAPTIVE1.
    let (modes, alltoall) = run("steady");
    let (inside, after) = modes.split_at(40);
    assert_eq!(&inside[..9], &[AD3; 9], "{modes:?}");
    assert_eq!(&inside[9..], &[AD1; 31], "from the first ADAPTIVE1 decision on, every post of the alltoall");
    assert_eq!(alltoall, 31);
    // After it, below the threshold, High Bias again; the two decided posts are ADAPTIVE0.
    assert_eq!(after, &[AD3, AD3, AD3, AD3, AD0, AD3, AD3, AD3, AD3, AD0], "{modes:?}");
    let (modes, alltoall) = run("auto");
    let decided_adaptive1: Vec<usize> = (0..40).filter(|&i| modes[i] == AD1).collect();
    assert_eq!(decided_adaptive1, [9, 14, 19, 24, 29, 34, 39], "auto: only the decided posts: {modes:?}");
    assert_eq!(alltoall, 7);
}

/// Under `steady` the calls of a collective are routed and timed as a whole: the first three try
/// `steady`'s own decisions, every post Adaptive (ADAPTIVE1 in MPI_Alltoall), every post High
/// Bias; then the fastest routes every post of the call, those below the threshold included. The
/// driver's network makes a post wait by the mode it went out with (`modetime`), so the calls'
/// wall times, measured by libaar.so around PMPI_Alltoall, decide.
#[test]
fn under_steady_collective_calls_try_each_routing_then_keep_the_fastest() {
    let run = |name: &str, mode: &str, net: &str, wait: &str| {
        // six calls of eight 1 KiB posts: a decision at every fourth post
        let script = format!("{net} modetime {wait} {}", "alltoall 1024 8 ".repeat(6));
        let r = Launch::driver(&format!("calls-{name}"), &script).env("AAR_MODE", mode).run();
        r.assert_ok();
        let modes = r.dlvr_modes("GNI_PostRdma");
        assert_eq!(modes.len(), 48);
        let collective = r.records()[0]["reasons"]["collective"].as_u64().unwrap();
        (modes, collective)
    };
    // High Bias posts take 2 ms more: after the three tries, every post ADAPTIVE1.
    let (modes, collective) = run("adaptive", "steady", CONGESTED_MINIMAL, "0 0 0 2000");
    assert_eq!(&modes[8..16], &[AD1; 8], "the second call, every post Adaptive: {modes:?}");
    assert_eq!(&modes[16..24], &[AD3; 8], "the third call, every post High Bias: {modes:?}");
    assert_eq!(&modes[24..], &[AD1; 24], "then the fastest: {modes:?}");
    assert_eq!(collective, 40);
    // ADAPTIVE1 posts take 2 ms more: every post High Bias after the tries (by the call's own
    // routing or by `steady`'s decisions, which choose High Bias on this network).
    let (modes, _) = run("high-bias", "steady", LATENCY_BOUND, "0 2000 0 0");
    assert_eq!(&modes[8..16], &[AD1; 8], "{modes:?}");
    assert_eq!(&modes[16..], &[AD3; 32], "{modes:?}");
    // `auto` keeps the paper's algorithm inside collectives: the posts below the threshold stay
    // on High Bias, and no call is routed as a whole.
    let (modes, collective) = run("auto", "auto", CONGESTED_MINIMAL, "0 0 0 2000");
    assert_eq!(collective, 0);
    assert!(modes.chunks(8).all(|call| call.iter().filter(|&&m| m == AD3).count() >= 6), "{modes:?}");
}

/// A neighbourhood collective is routed and timed as a whole like the others, but its Adaptive
/// is the low-stall mode (ADAPTIVE0): only MPI_Alltoall's is ADAPTIVE1, as in Cray MPICH.
#[test]
fn under_steady_a_neighbourhood_collective_is_routed_as_a_whole_with_adaptive0() {
    let script = format!("{CONGESTED_MINIMAL} modetime 0 0 0 2000 {}", "neighbor 1024 8 ".repeat(6));
    let r = Launch::driver("calls-neighbor", &script).env("AAR_MODE", "steady").run();
    r.assert_ok();
    assert_eq!(r.stdout.matches("neighbor rc=0 reached_pmpi=1").count(), 6, "{}", r.stdout);
    let modes = r.dlvr_modes("GNI_PostRdma");
    assert_eq!(modes.len(), 48);
    assert_eq!(&modes[8..16], &[AD0; 8], "the second call, every post Adaptive: {modes:?}");
    assert_eq!(&modes[16..24], &[AD3; 8], "the third call, every post High Bias: {modes:?}");
    assert_eq!(&modes[24..], &[AD0; 24], "then the fastest: {modes:?}");
    assert_eq!(r.records()[0]["reasons"]["collective"].as_u64(), Some(40));
}

/// A barrier's messages carry no payload: `steady` does not try routings on it or time it, and
/// its posts are decided as outside collectives.
#[test]
fn under_steady_a_barrier_is_not_routed_as_a_whole() {
    // six calls of eight 1 KiB posts, High Bias posts 2 ms slower (as in the test above, where
    // an alltoall's second call goes every post Adaptive, its third every post High Bias)
    let script = format!("{CONGESTED_MINIMAL} modetime 0 0 0 2000 {}", "barrier 1024 8 ".repeat(6));
    let r = Launch::driver("calls-barrier", &script).env("AAR_MODE", "steady").run();
    r.assert_ok();
    assert_eq!(r.stdout.matches("barrier rc=0 reached_pmpi=1").count(), 6, "{}", r.stdout);
    let modes = r.dlvr_modes("GNI_PostRdma");
    assert_eq!(modes.len(), 48);
    let reasons = &r.records()[0]["reasons"];
    assert_eq!(reasons["collective"].as_u64(), Some(0), "no post took a call's routing: {reasons}");
    assert!(!modes[16..24].iter().all(|&m| m == AD3), "no try of every post High Bias: {modes:?}");
}

#[test]
fn two_threads_inside_collectives_at_once_each_keep_their_own_calls_routing() {
    // Kind A (eight 1 KiB posts) is called once, then a second time, when `steady` tries it with
    // every message Adaptive (ADAPTIVE1 in MPI_Alltoall). Inside that second call, before its
    // posts, another thread makes a whole call of its own of another kind (four 2 KiB posts,
    // its first: `steady`'s own decisions, High Bias on this network).
    let script = format!("{LATENCY_BOUND} alltoall 1024 8 alltoall2 1024 8 2048 4");
    let r = Launch::driver("calls-threads", &script).env("AAR_MODE", "steady").run();
    r.assert_ok();
    assert!(r.stdout.contains("alltoall2 rc=0 second_rc=0"), "{}", r.stdout);
    let posts = r.posts("GNI_PostRdma");
    let modes = |len: u64| -> Vec<u64> {
        posts.iter().filter(|v| v["length"] == len).map(|v| v["dlvr_mode"].as_u64().unwrap()).collect()
    };
    let (a, b) = (modes(1024), modes(2048));
    assert_eq!((a.len(), b.len()), (16, 4), "{posts:?}");
    // The other thread's call began and ended inside this one: its own routing, and this call's
    // posts still go with this call's, every one Adaptive.
    assert_eq!(&a[8..], &[AD1; 8], "the second call of kind A, after the other thread's call: {a:?}");
    assert_eq!(b, [AD3; 4], "the other thread's call, decided message by message: {b:?}");
}

#[test]
fn latency_counter_in_cycles_is_converted_with_the_800_mhz_clock() {
    for (emu_unit, aar_unit) in [("us", "us"), ("cycles", "cycles")] {
        let launch = Launch::driver(&format!("unit-{emu_unit}"), "net 2.5 2.0 1 1 rdma 65536 4 0x80");
        let trace = launch.dir.join("trace.jsonl").display().to_string();
        let r = launch
            .env("AAR_EMU_LATENCY_UNIT", emu_unit)
            .env("AAR_LATENCY_UNIT", aar_unit)
            .env("AAR_TRACE", &trace)
            .run();
        r.assert_ok();
        let t = trace_of(&r);
        let l = t[3]["latency_us"].as_f64().unwrap();
        assert!((l - 2.0).abs() < 0.01, "{emu_unit}: High Bias latency 2.0 us, got {l}");
    }
}

/// `steady` keeps its state per destination class: the class comes from the endpoint's remote NIC
/// (seen at GNI_EpBind) and the node table (`AAR_TOPOLOGY`). The driver posts from the
/// emulator's first NIC (0x100) to its second (0x101), so the table decides where that is.
/// Without a table, or under `auto`, every destination is `unknown`, and only `steady` says once
/// that there is no table, with or without `PMI_GNI_LOC_ADDR`.
#[test]
fn steady_sees_each_destination_through_the_node_table() {
    let run = |test: &str, mode: &str, table: Option<&str>| {
        let mut launch = Launch::driver(test, "rdma 65536 6 0").env("AAR_MODE", mode).env("PMI_GNI_LOC_ADDR", "0x100");
        let trace = launch.dir.join("trace.jsonl").display().to_string();
        if let Some(text) = table {
            let path = launch.dir.join("nodes.txt");
            std::fs::write(&path, text).unwrap();
            launch = launch.env("AAR_TOPOLOGY", &path.display().to_string());
        }
        let r = launch.env("AAR_TRACE", &trace).run();
        r.assert_ok();
        let classes: Vec<String> =
            trace_of(&r).iter().map(|l| l["destination"].as_str().unwrap().to_string()).collect();
        assert_eq!(classes.len(), 6, "{classes:?}");
        (classes, r)
    };
    for (test, table, class) in [
        ("steady-other-group", "# nic group router\n0x100 2 17\n0x101 3 17\n", "other-group"),
        ("steady-same-group", "0x100 2 17\n0x101 2 16\n", "same-group"),
        ("steady-same-router", "256 2 17\n257 2 17\n", "same-router"),
    ] {
        let (classes, _) = run(test, "steady", Some(table));
        assert!(classes.iter().all(|c| c == class), "{test}: {classes:?}");
    }
    // A table that cannot place this node, or a destination: one warning each, naming the NIC.
    for (test, table, want) in [
        (
            "steady-here-unlisted",
            "0x101 3 17\n",
            "the node table cannot place this node: it does not list this node (NIC address 0x100",
        ),
        ("steady-there-unlisted", "0x100 2 17\n", "the node table does not list NIC address 0x101, a destination"),
    ] {
        let (classes, r) = run(test, "steady", Some(table));
        assert!(classes.iter().all(|c| c == "unknown"), "{test}: {classes:?}");
        let lines = r.aar_lines();
        let said: Vec<&&str> = lines.iter().filter(|l| l.contains("node table")).collect();
        assert_eq!(said.len(), 1, "{test}: {lines:?}");
        assert!(said[0].contains(want), "{test}: {said:?}");
    }
    let (classes, r) = run("steady-no-table", "steady", None);
    assert!(classes.iter().all(|c| c == "unknown"), "{classes:?}");
    assert_eq!(r.aar_lines().iter().filter(|l| l.contains("no node table")).count(), 1, "{:?}", r.aar_lines());
    // Off Cray's PMI too (no PMI_GNI_LOC_ADDR: no place is ever asked for), the missing table is
    // said once.
    let launch = Launch::driver("steady-no-table-no-nic", "rdma 65536 6 0").env("AAR_MODE", "steady");
    let r = launch.run();
    r.assert_ok();
    assert_eq!(r.aar_lines().iter().filter(|l| l.contains("no node table")).count(), 1, "{:?}", r.aar_lines());
    let (classes, r) = run("auto-no-table", "auto", None);
    assert!(classes.iter().all(|c| c == "unknown"), "{classes:?}");
    assert!(r.aar_lines().iter().all(|l| !l.contains("no node table")), "{:?}", r.aar_lines());
}

/// A node table of `xtprocadmin` lines names nodes by NID, which the library takes to be the NIC
/// address. On a Cray XC node it checks that against `/proc/cray_xt` (here the emulator's stand-in,
/// `AAR_EMU_CRAY_XT`): where this node's NID is its NIC address and its name is the table's, the
/// lines place the destinations; where either differs, one warning says which and the lines are
/// left out (every destination `unknown`, with no second message about a missing table).
#[test]
fn xtprocadmin_tables_are_checked_against_the_node() {
    let table = "NID (HEX) NODENAME TYPE STATUS MODE\n\
                 256 0x100 c0-0c0s5n0 compute up batch\n\
                 257 0x101 c2-0c0s5n0 compute up batch\n";
    let run = |test: &str, nid: &str, cname: &str| {
        let launch = Launch::driver(test, "rdma 65536 6 0").env("AAR_MODE", "steady").env("PMI_GNI_LOC_ADDR", "0x100");
        let (nodes, proc_dir, trace) =
            (launch.dir.join("nodes.txt"), launch.dir.join("cray_xt"), launch.dir.join("trace.jsonl"));
        std::fs::write(&nodes, table).unwrap();
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::write(proc_dir.join("nid"), nid).unwrap();
        std::fs::write(proc_dir.join("cname"), cname).unwrap();
        let r = launch
            .env("AAR_TOPOLOGY", &nodes.display().to_string())
            .env("AAR_EMU_CRAY_XT", &proc_dir.display().to_string())
            .env("AAR_TRACE", &trace.display().to_string())
            .run();
        r.assert_ok();
        let classes: Vec<String> =
            trace_of(&r).iter().map(|l| l["destination"].as_str().unwrap().to_string()).collect();
        assert_eq!(classes.len(), 6, "{test}: {classes:?}");
        (classes, r.aar_lines().iter().map(|l| l.to_string()).collect::<Vec<String>>())
    };
    let (classes, lines) = run("xt-agrees", "256\n", "c0-0c0s5n0\n");
    assert!(classes.iter().all(|c| c == "other-group"), "{classes:?}");
    assert!(lines.iter().all(|l| !l.contains("xtprocadmin")), "{lines:?}");
    for (test, nid, cname, want) in [
        (
            "xt-nid-differs",
            "300\n",
            "c0-0c0s5n0\n",
            "this node's NID is 300 (/proc/cray_xt/nid) but its NIC address is 0x100",
        ),
        ("xt-other-machine", "256\n", "c5-1c2s3n1\n", "lists NID 256 as c0-0c0s5n0 but this node is c5-1c2s3n1"),
    ] {
        let (classes, lines) = run(test, nid, cname);
        assert!(classes.iter().all(|c| c == "unknown"), "{test}: {classes:?}");
        let said: Vec<&String> = lines.iter().filter(|l| l.contains("xtprocadmin lines are left out")).collect();
        assert_eq!(said.len(), 1, "{test}: {lines:?}");
        assert!(said[0].contains(want) && said[0].contains("AAR_TOPOLOGY="), "{test}: {said:?}");
        assert!(lines.iter().all(|l| !l.contains("no node table")), "{test}: {lines:?}");
    }
    // AAR_EMU_CRAY_XT set to blanks is unset, as every emulator variable: not a folder of that
    // name in the working directory (here one that would contradict the table), but this
    // machine's /proc/cray_xt, which is not there: the lines are used unchecked.
    let launch =
        Launch::driver("xt-blanks", "rdma 65536 6 0").env("AAR_MODE", "steady").env("PMI_GNI_LOC_ADDR", "0x100");
    let (nodes, blanks, trace) = (launch.dir.join("nodes.txt"), launch.dir.join("  "), launch.dir.join("trace.jsonl"));
    std::fs::write(&nodes, table).unwrap();
    std::fs::create_dir_all(&blanks).unwrap();
    std::fs::write(blanks.join("nid"), "300\n").unwrap();
    assert!(!std::path::Path::new("/proc/cray_xt").exists(), "this test needs a machine that is not a Cray XC node");
    let mut launch = launch
        .env("AAR_TOPOLOGY", &nodes.display().to_string())
        .env("AAR_EMU_CRAY_XT", "  ")
        .env("AAR_TRACE", &trace.display().to_string());
    launch.wrapper = vec!["env".into(), "-C".into(), launch.dir.display().to_string()];
    let r = launch.run();
    r.assert_ok();
    let classes: Vec<String> = trace_of(&r).iter().map(|l| l["destination"].as_str().unwrap().to_string()).collect();
    assert_eq!(classes, ["other-group"; 6], "{:?}", r.aar_lines());
    assert!(r.aar_lines().iter().all(|l| !l.contains("xtprocadmin")), "{:?}", r.aar_lines());
}

/// A rank bound to more peers than the endpoint table holds (65,536) says so once, and the
/// endpoints it has no room for are of no class; those it remembered keep theirs.
#[test]
fn endpoints_past_the_table_are_of_no_class_and_said_once() {
    let table = "0x100 2 17\n0x101 3 17\n";
    let run = |test: &str, endpoints: u32| {
        let launch = Launch::driver(test, &format!("rdma 65536 3 0 endpoints {endpoints} rdma 65536 3 0"))
            .env("AAR_MODE", "steady")
            .env("PMI_GNI_LOC_ADDR", "0x100");
        let (trace, nodes) = (launch.dir.join("trace.jsonl"), launch.dir.join("nodes.txt"));
        std::fs::write(&nodes, table).unwrap();
        let r = launch
            .env("AAR_TOPOLOGY", &nodes.display().to_string())
            .env("AAR_TRACE", &trace.display().to_string())
            .run();
        r.assert_ok();
        let classes: Vec<String> =
            trace_of(&r).iter().map(|l| l["destination"].as_str().unwrap().to_string()).collect();
        let said: Vec<String> =
            r.aar_lines().iter().filter(|l| l.contains("endpoints at once")).map(|l| l.to_string()).collect();
        (classes, said)
    };
    let (classes, said) = run("endpoints-fit", 1000);
    assert_eq!(classes, ["other-group"; 6], "{said:?}");
    assert!(said.is_empty(), "{said:?}");
    let (classes, said) = run("endpoints-overflow", 140_000);
    assert_eq!(classes[..3], ["other-group"; 3]);
    assert_eq!(classes[3..], ["unknown"; 3], "the last endpoint found no room");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("up to 65536") && said[0].contains("binds so far found no room"), "{}", said[0]);
}

/// A node table is a file: a FIFO (opening it for reading waits for a writer) or a device that
/// never ends (`/dev/zero`) in its place gets one warning naming it, and the job runs on with
/// every destination of one class. The same holds for `/proc/cray_xt` (`AAR_EMU_CRAY_XT`).
#[test]
fn a_node_table_that_is_not_a_regular_file_is_refused() {
    let dir = scratch("table-files");
    let mkfifo =
        |path: &std::path::Path| assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success());
    let fifo = dir.join("nodes.fifo");
    mkfifo(&fifo);
    let table = dir.join("nodes.txt");
    std::fs::write(&table, "256 0x100 c0-0c0s5n0 compute up batch\n257 0x101 c2-0c0s5n0 compute up batch\n").unwrap();
    let proc_dir = dir.join("cray_xt");
    std::fs::create_dir_all(&proc_dir).unwrap();
    std::fs::write(proc_dir.join("cname"), "c0-0c0s5n0\n").unwrap();
    mkfifo(&proc_dir.join("nid"));
    for (test, topology, cray_xt) in [
        ("table-dev-zero", "/dev/zero".to_string(), None),
        ("table-fifo", fifo.display().to_string(), None),
        ("table-proc-fifo", table.display().to_string(), Some(proc_dir.display().to_string())),
    ] {
        let launch = Launch::driver(test, "rdma 65536 4 0");
        let trace = launch.dir.join("trace.jsonl").display().to_string();
        let mut launch = launch
            .env("AAR_MODE", "steady")
            .env("PMI_GNI_LOC_ADDR", "0x100")
            .env("AAR_TOPOLOGY", &topology)
            .env("AAR_TRACE", &trace);
        if let Some(dir) = &cray_xt {
            launch = launch.env("AAR_EMU_CRAY_XT", dir);
        }
        let r = launch.run();
        r.assert_ok();
        let lines = r.aar_lines();
        let classes: Vec<String> =
            trace_of(&r).iter().map(|l| l["destination"].as_str().unwrap().to_string()).collect();
        assert_eq!(classes.len(), 4, "{test}: {classes:?}");
        if cray_xt.is_some() {
            // The node says nothing readable of itself: the table's lines are used unchecked.
            assert!(classes.iter().all(|c| c == "other-group"), "{test}: {classes:?}");
            assert!(lines.iter().all(|l| !l.contains("AAR_TOPOLOGY")), "{test}: {lines:?}");
        } else {
            assert!(classes.iter().all(|c| c == "unknown"), "{test}: {classes:?}");
            let said: Vec<&&str> = lines.iter().filter(|l| l.contains("is not a usable node table")).collect();
            assert_eq!(said.len(), 1, "{test}: {lines:?}");
            assert!(
                said[0].contains(&format!("AAR_TOPOLOGY=\"{topology}\"")) && said[0].contains("not a regular file"),
                "{said:?}"
            );
        }
    }
}

/// `steady` weighs the flits of a rank's messages posted together as if they shared the NIC
/// (libaar.so stamps each decision with its post time): the same 16 KiB RDMA PUTs go Adaptive
/// when posted six at a time and stay on High Bias when posted one at a time.
///
/// A 16 KiB PUT is p = 256 packets, f = 1,280 request flits (1.6 µs at the NIC's rate), one
/// latency round. The emulated network has High Bias at L = 800 µs, s = 40 and Adaptive at
/// L = 960 µs, s = 8: λ = 1.2 and σ = 5, the engine's constants, so the guess of the side not yet
/// measured is what the emulator then measures. With k messages injecting together:
///   T_high_bias = 800 + k · 1.6 · 41 = 800 + 65.6 k
///   T_adaptive  = 960 + k · 1.6 · 9  = 960 + 14.4 k
/// Alone (k = 1) High Bias takes 865.6 µs against 974.4: it stays there. Adaptive is faster once
/// k > 3.125 (before Adaptive is measured there is no hysteresis), and once both sides are
/// measured the class goes back only when High Bias is 10 % faster, k < 1.216. Message i of a
/// burst finds the i − 1 before it in flight (posted microseconds apart, well within the 866 µs a
/// message takes), and the class's count, smoothed by 0.3 from the second message on (the first
/// has no window yet), reaches 3.23 at the fifth message of the first burst and stays above 2.7
/// in the bursts after it. Posted 3 ms apart (beyond a message's time on either side), each
/// message is alone, k = 1, whatever the machine's load. A burst the scheduler interrupts counts
/// fewer messages together, so the bursts are asserted on a majority, the spaced posts on every
/// message.
#[test]
fn steady_sends_messages_posted_together_adaptive_and_spaced_ones_high_bias() {
    const NETWORK: &str = "latency_ad=960,latency_bs=800,stall_ad=8,stall_bs=40";
    let run = |test: &str, burst: usize, bursts: usize| {
        let script = format!("burst 16384 {burst} 0 sleep 3000 ").repeat(bursts);
        let launch = Launch::driver(test, &script);
        let trace = launch.dir.join("trace.jsonl").display().to_string();
        let mut launch = launch.env("AAR_MODE", "steady").env("AAR_EMU_NETWORK", NETWORK).env("AAR_TRACE", &trace);
        // Alone on its NIC, whatever launcher runs the tests.
        for var in ["MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"] {
            launch = launch.unset(var);
        }
        let r = launch.run();
        r.assert_ok();
        let modes = r.dlvr_modes("GNI_PostRdma");
        assert_eq!(modes.len(), burst * bursts);
        let t = trace_of(&r);
        assert_eq!(t.len(), modes.len(), "one trace line per 16 KiB post (each crosses the 4 KiB threshold)");
        assert!(t[1..].iter().all(|l| l["reason"] == "model"), "{test}: decided by the model: {t:?}");
        modes
    };
    let together = run("steady-bursts", 6, 10);
    let adaptive = together.iter().filter(|&&m| m == AD0).count();
    assert!(adaptive > together.len() / 2, "posted six at a time: mostly Adaptive ({together:?})");
    let spaced = run("steady-spaced", 1, 60);
    assert!(spaced.iter().all(|&m| m == AD3), "posted 3 ms apart: High Bias throughout ({spaced:?})");
}
