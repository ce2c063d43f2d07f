//! A/B routing experiments: iterations marked by the application (the C and Fortran API) or by
//! an MPI collective, the policy schedule every rank follows without communicating, what reached
//! the emulated NIC in each iteration, and the iteration records.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Policy names as records write them, for a mode column index.
const MODES: [&str; 4] = ["ADAPTIVE0", "ADAPTIVE1", "ADAPTIVE2", "ADAPTIVE3"];

fn column(header: &Value, name: &str) -> usize {
    header["modes"].as_array().unwrap().iter().position(|m| m == name).unwrap_or_else(|| panic!("no {name} column"))
}

fn policies(rows: &[Value]) -> Vec<String> {
    rows.iter().map(|r| r["policy"].as_str().unwrap().to_string()).collect()
}

/// RDMA posts' modes, in order.
fn rdma_modes(log: &[Value]) -> Vec<&'static str> {
    log.iter().filter(|v| v["call"] == "GNI_PostRdma").map(|v| mode_name(v["dlvr_mode"].as_u64().unwrap())).collect()
}

/// Every row's messages and bytes are all in its policy's column: `posts` messages of `bytes`.
fn assert_rows_hold_their_posts(header: &Value, rows: &[Value], posts: u64, bytes: u64) {
    for r in rows {
        let col = column(header, r["policy"].as_str().unwrap());
        let messages: Vec<u64> = r["messages"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        let by_mode: Vec<u64> = r["bytes"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        let mut want = vec![0; messages.len()];
        want[col] = posts;
        assert_eq!(messages, want, "messages per mode of {r}");
        want[col] = posts * bytes;
        assert_eq!(by_mode, want, "bytes per mode of {r}");
        assert!(r["end_ns"].as_u64() >= r["start_ns"].as_u64(), "{r}");
    }
}

#[test]
fn round_robin_markers_route_each_iteration_by_the_schedule_and_record_it() {
    let list = ["ADAPTIVE0", "ADAPTIVE2", "ADAPTIVE3"];
    let iters = 9;
    let r = Launch::program("ab-rr", example("iterations"), &format!("--iters {iters} --bytes 8192 --label-every 4"))
        .env("AAR_AB", &list.join(","))
        .env("PMI_RANK", "0")
        .env("SLURM_JOB_ID", "77")
        .env("SLURM_STEP_ID", "3")
        .env("PMI_SIZE", "1")
        .run();
    r.assert_ok();
    assert!(r.stdout.starts_with(&format!("iterations: {iters} iterations")), "{}", r.stdout);
    let summary = r.aar_lines().join("\n");
    assert!(
        summary.starts_with("aar: policy ADAPTIVE0,ADAPTIVE2,ADAPTIVE3 (A/B, 9 iterations): 18 messages"),
        "{summary}"
    );
    // The schedule, computed here independently: iteration i uses list[i mod 3], for both of its
    // posts, and that is what reached the NIC.
    let expected: Vec<&str> = (0..iters).map(|i| list[i % list.len()]).collect();
    let posted = rdma_modes(&r.log);
    assert_eq!(posted.len(), 2 * iters);
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(&posted[2 * i..2 * i + 2], &[*want, *want], "iteration {i}: {posted:?}");
    }
    let recs = iteration_records(&r.dir.join("out"));
    assert_eq!(recs.len(), 1);
    let (header, rows) = &recs[0];
    assert_eq!(header["format"], "aar-iterations/1");
    assert_eq!((header["source"].as_str(), header["experiment"].as_str()), (Some("job"), Some("77.3")));
    assert_eq!((header["rank"].as_u64(), header["nranks"].as_u64()), (Some(0), Some(1)));
    assert_eq!(header["policies"], serde_json::json!(list));
    assert_eq!((header["order"].as_str(), header["boundary"].as_str()), (Some("round-robin"), Some("markers")));
    assert_eq!(header["clock"], "monotonic");
    assert_eq!(header["modes"][0], "ADAPTIVE0");
    assert_eq!(rows.len(), iters);
    assert_eq!(
        rows.iter().map(|r| r["i"].as_u64().unwrap()).collect::<Vec<_>>(),
        (0..iters as u64).collect::<Vec<_>>()
    );
    assert_eq!(policies(rows), expected);
    assert_rows_hold_their_posts(header, rows, 2, 8192);
    let labels: Vec<Option<&str>> = rows.iter().map(|r| r["label"].as_str()).collect();
    for (i, l) in labels.iter().enumerate() {
        assert_eq!(*l, (i % 4 == 0).then_some("congested"), "labels: {labels:?}");
    }
    // The summary record points at it.
    let rec = &r.records()[0];
    assert_eq!(rec["format"], "aar-record/2");
    let ab = &rec["ab"];
    assert_eq!(
        (ab["order"].as_str(), ab["boundary"].as_str(), ab["iterations"].as_u64()),
        (Some("round-robin"), Some("markers"), Some(iters as u64))
    );
    assert_eq!(ab["policies"], serde_json::json!(list));
    let file = ab["iterations_file"].as_str().unwrap();
    assert!(file.starts_with("aar.77.3.0.") && file.ends_with(".iterations.jsonl"), "job 77, step 3, rank 0: {file}");
    assert!(r.dir.join("out").join(file).exists());
}

#[test]
fn shuffled_blocks_hold_each_policy_once_and_every_rank_draws_the_same_order() {
    let list = MODES;
    let iters = 12;
    let run = |rank: &str| {
        let r = Launch::program(
            &format!("ab-shuffled-{rank}"),
            example("iterations"),
            &format!("--iters {iters} --bytes 4096"),
        )
        .env("AAR_AB", &list.join(","))
        .env("AAR_AB_ORDER", "shuffled:42")
        .env("PMI_RANK", rank)
        .run();
        r.assert_ok();
        let recs = iteration_records(&r.dir.join("out"));
        assert_eq!(recs.len(), 1);
        let (header, rows) = recs.into_iter().next().unwrap();
        assert_eq!(header["order"], "shuffled:42");
        assert_eq!(rows.len(), iters);
        assert_rows_hold_their_posts(&header, &rows, 2, 4096);
        // What the record says each iteration had is what its posts got.
        let posted = rdma_modes(&r.log);
        let order = policies(&rows);
        for (i, p) in order.iter().enumerate() {
            assert_eq!(&posted[2 * i..2 * i + 2], &[p.as_str(), p.as_str()], "iteration {i}");
        }
        order
    };
    let order = run("0");
    for block in order.chunks(list.len()) {
        let mut b: Vec<&str> = block.iter().map(String::as_str).collect();
        b.sort();
        assert_eq!(b, list, "each block of {} holds each policy once: {order:?}", list.len());
    }
    let round_robin: Vec<&str> = (0..iters).map(|i| list[i % list.len()]).collect();
    assert_ne!(order, round_robin, "shuffled, not round-robin");
    assert_eq!(run("5"), order, "another rank, without any communication, draws the same order");
}

#[test]
fn the_policy_changes_only_at_boundaries_and_the_c_api_cannot_override_the_schedule() {
    // Before the first begin: iteration 0's policy; after an end: it stays until the next begin.
    let script = "rdma 8192 2 0 iter index iter begin iter index rdma 8192 3 0 iter end iter index rdma 8192 2 0 \
                  iter label second iter begin rdma 8192 3 0 api mode 0x80 api name auto api auto rdma 8192 1 0 \
                  api disable rdma 8192 1 0 api enable rdma 8192 1 0 iter end iter end policy";
    let r =
        Launch::driver("ab-boundaries", script).env("AAR_AB", "ADAPTIVE1,ADAPTIVE2").env("AAR_MODE", "ADAPTIVE3").run();
    r.assert_ok();
    let out = &r.stdout;
    for want in
        ["iter index=-1\niter begin rc=0\niter index=0\n", "iter end rc=0\niter index=-1\n", "iter label rc=0\n"]
    {
        assert!(out.contains(want), "{want:?} in {out}");
    }
    assert_eq!(
        out.matches("api mode rc=-1").count()
            + out.matches("api name rc=-1").count()
            + out.matches("api auto rc=-1").count(),
        3,
        "policy calls refused: {out}"
    );
    assert!(out.contains("api disable rc=0") && out.contains("api enable rc=0"), "pausing still works: {out}");
    assert!(out.contains("iter end rc=0\niter end rc=-1\npolicy ADAPTIVE2"), "a second end is refused: {out}");
    let (a1, a2) = (0x20, 0x40);
    assert_eq!(
        r.dlvr_modes("GNI_PostRdma"),
        [a1, a1, a1, a1, a1, a1, a1, a2, a2, a2, a2, 0, a2],
        "before iteration 0, in it, between the iterations, in iteration 1 (refused calls change nothing; paused: as written)"
    );
    let warnings: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("AAR_MODE=\"ADAPTIVE3\" is ignored because AAR_AB is set"), "{}", warnings[0]);
    let recs = iteration_records(&r.dir.join("out"));
    let (header, rows) = &recs[0];
    assert_eq!(policies(rows), ["ADAPTIVE1", "ADAPTIVE2"]);
    assert_rows_hold_their_posts(header, &rows[..1], 3, 8192);
    // Iteration 1: 6 posts, one of them paused (passthrough, as the caller wrote it: ADAPTIVE0).
    assert_eq!(rows[1]["messages"][column(header, "ADAPTIVE2")], 5);
    assert_eq!(rows[1]["messages"][column(header, "ADAPTIVE0")], 1);
    assert_eq!(rows[1]["label"], "second", "a label given between iterations is the next one's");
    assert!(rows[0].get("label").is_none());
    assert_eq!(r.records()[0]["ab"]["iterations"], 2);
}

#[test]
fn one_policy_runs_record_iterations_too() {
    let script = "iter begin rdma 8192 2 0 fma 64 3 0 iter end iter label bad!label iter label x iter begin rdma 65536 2 0x80 iter end";
    let r = Launch::driver("ab-single", script).env("AAR_MODE", "ADAPTIVE2").run();
    r.assert_ok();
    assert!(r.stdout.contains("iter label rc=-1\niter label rc=0"), "a bad label is refused: {}", r.stdout);
    let recs = iteration_records(&r.dir.join("out"));
    let (header, rows) = &recs[0];
    assert_eq!(
        (header["order"].as_str(), header["policies"].clone()),
        (Some("single"), serde_json::json!(["ADAPTIVE2"]))
    );
    assert_eq!(policies(rows), ["ADAPTIVE2", "ADAPTIVE2"]);
    assert_eq!(rows[0]["messages"][column(header, "ADAPTIVE2")], 5);
    assert_eq!(rows[0]["bytes"][column(header, "ADAPTIVE2")], 2 * 8192 + 3 * 64);
    assert_eq!(
        rows[1]["bytes"][column(header, "ADAPTIVE2")],
        2 * 65536,
        "pinned: the caller's ADAPTIVE3 becomes ADAPTIVE2"
    );
    assert_eq!(rows[1]["label"], "x");
    assert!(rows[0]["decisions"].as_u64().unwrap() >= 1 && rows[1]["decisions"] == 2, "{rows:?}");
    assert!(rows[1]["latency_us"].as_f64().unwrap() > 0.0, "counter windows read in the iteration: {}", rows[1]);
    let rec = &r.records()[0];
    assert_eq!((rec["ab"]["order"].as_str(), rec["ab"]["iterations"].as_u64()), (Some("single"), Some(2)));
}

/// `auto` after a fixed iteration starts from what the fixed iteration measured (its windows
/// are attributed to the side of the mode in force); after `off` (the application's own
/// routing) it has nothing attributed and starts as on a fresh start.
#[test]
fn auto_resumes_from_the_windows_fixed_iterations_measured_but_not_from_off() {
    let script = "iter begin rdma 65536 4 0 iter end iter begin rdma 65536 4 0 iter end";
    let run = |first: &str| {
        let launch = Launch::driver(&format!("ab-auto-after-{first}"), script);
        let trace = launch.dir.join("trace.jsonl");
        let r = launch.env("AAR_AB", &format!("{first},auto")).env("AAR_TRACE", &trace.display().to_string()).run();
        r.assert_ok();
        let t = read_jsonl(&trace);
        assert_eq!(t.len(), 8);
        let rows = iteration_records(&r.dir.join("out")).remove(0).1;
        (t, rows)
    };
    // The emulator's quiet network: ADAPTIVE0 latency 1.4 µs per response, ADAPTIVE3 1.1 µs.
    let (t, rows) = run("ADAPTIVE0");
    assert!(t[..4].iter().all(|l| l["reason"] == "fixed" && l["chosen"] == "ADAPTIVE0"), "{t:?}");
    let first_auto = &t[4];
    assert_eq!(first_auto["reason"], "model", "auto's first decision uses the fixed iteration's window: {first_auto}");
    assert!((first_auto["latency_us"].as_f64().unwrap() - 1.4).abs() < 0.01, "measured under ADAPTIVE0: {first_auto}");
    assert_eq!(first_auto["chosen"], "ADAPTIVE0");
    assert!((rows[0]["latency_us"].as_f64().unwrap() - 1.4).abs() < 0.01, "{}", rows[0]);

    let (t, _) = run("off");
    assert!(t[..4].iter().all(|l| l["reason"] == "passthrough"), "{t:?}");
    assert_eq!(t[4]["reason"], "threshold", "nothing attributed under off: auto starts afresh: {}", t[4]);
    assert_eq!(t[4]["chosen"], "ADAPTIVE3");
}

#[test]
fn without_counters_an_auto_arm_routes_high_bias_and_the_warning_says_so() {
    let script = "iter begin rdma 65536 4 0 iter end iter begin rdma 65536 4 0 iter end";
    let events =
        sde_events_setting().replace("sde:::aries::AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_NET_TRACK", "NO_SUCH_EVENT");
    let r =
        Launch::driver("ab-no-counters", script).env("AAR_AB", "ADAPTIVE0,auto").env("AAR_PAPI_EVENTS", &events).run();
    r.assert_ok();
    let lines = r.aar_lines();
    let warning = lines.iter().find(|l| l.contains("NO_SUCH_EVENT")).unwrap_or_else(|| panic!("{lines:?}"));
    assert!(warning.contains("The A/B policy auto needs the NIC counters"), "{warning}");
    assert!(warning.contains("ADAPTIVE3") && !warning.contains("AAR_MODE is not auto"), "{warning}");
    // Iteration 0 (ADAPTIVE0) keeps its fixed mode; iteration 1 (auto) has no window: High Bias.
    assert_eq!(rdma_modes(&r.log), ["ADAPTIVE0"; 4].into_iter().chain(["ADAPTIVE3"; 4]).collect::<Vec<_>>());
    let r = Launch::driver("ab-no-counters-fixed", script)
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE2")
        .env("AAR_PAPI_EVENTS", &events)
        .run();
    let lines = r.aar_lines();
    let warning = lines.iter().find(|l| l.contains("NO_SUCH_EVENT")).unwrap_or_else(|| panic!("{lines:?}"));
    assert!(warning.contains("Routing is unaffected (no A/B policy is automatic: auto or steady)"), "{warning}");
    assert_eq!(rdma_modes(&r.log), ["ADAPTIVE0"; 4].into_iter().chain(["ADAPTIVE2"; 4]).collect::<Vec<_>>());
}

#[test]
fn bad_ab_values_are_one_warning_each_and_the_run_goes_on_without_a_b() {
    let r = Launch::driver("ab-bad", "iter begin rdma 8192 2 0 iter end")
        .env("AAR_AB", "ADAPTIVE0,fast")
        .env("AAR_AB_ORDER", "random")
        .env("AAR_AB_BOUNDARY", "MPI_Send:2")
        .env("AAR_OUTPUT_RANKS", "0:x")
        .run();
    r.assert_ok();
    let warnings: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    for (var, value) in [
        ("AAR_AB", "ADAPTIVE0,fast"),
        ("AAR_AB_ORDER", "random"),
        ("AAR_AB_BOUNDARY", "MPI_Send:2"),
        ("AAR_OUTPUT_RANKS", "0:x"),
    ] {
        let w: Vec<_> = warnings.iter().filter(|w| w.starts_with(&format!("aar: {var}=\"{value}\""))).collect();
        assert_eq!(w.len(), 1, "{var}: {warnings:?}");
        assert!(w[0].contains("using the default"), "{}", w[0]);
    }
    // The fix lists every function that can mark iterations.
    let boundary = warnings.iter().find(|w| w.starts_with("aar: AAR_AB_BOUNDARY")).unwrap();
    assert!(boundary.contains("one of MPI_Barrier, MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Allgather, MPI_Allgatherv, MPI_Alltoall, MPI_Alltoallv, MPI_Gather, MPI_Scatter, MPI_Gatherv, MPI_Scatterv, MPI_Alltoallw, MPI_Reduce_scatter, MPI_Reduce_scatter_block, MPI_Scan, MPI_Exscan, MPI_Neighbor_allgather, MPI_Neighbor_allgatherv, MPI_Neighbor_alltoall, MPI_Neighbor_alltoallv, MPI_Neighbor_alltoallw, optionally"), "{boundary}");
    // The defaults: no A/B, markers, every rank writes.
    assert!(r.stdout.contains("iter begin rc=0"), "{}", r.stdout);
    let recs = iteration_records(&r.dir.join("out"));
    assert_eq!(recs[0].0["order"], "single");
    assert_eq!(recs[0].1.len(), 1);
}

#[test]
fn output_ranks_limit_who_writes_and_a_process_without_a_rank_counts_as_rank_0() {
    for (rank, ranks, writes) in
        [(Some("3"), "0,2:4", true), (Some("1"), "0,2:4", false), (None, "1:9", false), (None, "0", true)]
    {
        let mut launch = Launch::driver(&format!("ab-ranks-{rank:?}-{ranks}"), "iter begin rdma 8192 1 0 iter end")
            .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
            .env("AAR_OUTPUT_RANKS", ranks);
        if let Some(rank) = rank {
            launch = launch.env("PMI_RANK", rank);
        }
        let r = launch.run();
        r.assert_ok();
        let files = std::fs::read_dir(r.dir.join("out")).unwrap().count();
        assert_eq!(files, if writes { 2 } else { 0 }, "rank {rank:?} with AAR_OUTPUT_RANKS={ranks}");
        // Routing is the same whether the rank writes or not.
        assert_eq!(r.dlvr_modes("GNI_PostRdma"), [AD0]);
    }
}

#[test]
fn a_killed_job_keeps_every_row_written_before_the_kill() {
    let mut launch = Launch::program("ab-killed", example("iterations"), "--iters 0 --bytes 4096")
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .unset("AAR_EMU_LOG");
    let out = launch.dir.join("out");
    // Kill -9 once the record holds the header and rows from two writes (the first row is written
    // at once, later ones about every second); never wait more than 60 s.
    launch.wrapper = vec![
        "sh".into(),
        "-c".into(),
        format!(
            "\"$@\" & pid=$!; n=0; while [ $(cat {o}/*.iterations.jsonl 2>/dev/null | wc -l) -lt 3 ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done; kill -9 $pid; wait $pid; exit 0",
            o = out.display()
        ),
        "sh".into(),
    ];
    let r = launch.run();
    r.assert_ok();
    let files: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "the iteration record only, no summary record: {files:?}");
    // Rows are written whole, in one write() each time; a kill during a large write() can still
    // cut it (the kernel stops between pages), so the last line may be cut short. The one reader
    // reports that line as such and reads every row before it.
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let reader = aar_record::Reader::new(std::io::BufReader::new(text.as_bytes())).unwrap();
    let read: Vec<_> = reader.collect();
    let whole = complete.lines().count() - 1;
    assert!(read[..whole].iter().all(Result::is_ok), "every complete row reads: {read:?}");
    match &read[whole..] {
        [] => assert_eq!(complete.len(), text.len()),
        [Err(p)] => assert!(matches!(p.fault, aar_record::Fault::CutShort), "{p:?}"),
        rest => panic!("after the complete rows: {rest:?}"),
    }
    let lines: Vec<serde_json::Value> = complete.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.len() >= 3, "{} lines", lines.len());
    let rows = &lines[1..];
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["i"], i as u64);
        assert_eq!(row["policy"], ["ADAPTIVE0", "ADAPTIVE3"][i % 2]);
    }
    assert_rows_hold_their_posts(&lines[0], rows, 2, 4096);
}

#[test]
fn a_full_disk_is_one_warning_per_file_then_no_more_rows_and_no_empty_record() {
    let ok = Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: no mount namespace here (unshare -m), so no full file system to test with");
        return;
    }
    // 100 iterations of 2 rows' worth each fill no buffer: the rows meet the full disk at the
    // first write (the first iteration's end) and at exit; the trace's buffer, at exit.
    let script = "iter begin rdma 8192 1 0 iter end ".repeat(100);
    let mut launch = Launch::driver("ab-full", &script).env("AAR_AB", "ADAPTIVE0,ADAPTIVE3").unset("AAR_EMU_LOG");
    let out = launch.dir.join("out");
    let trace = out.join("trace.jsonl");
    let listing = launch.dir.join("listing");
    launch = launch.env("AAR_TRACE", &trace.display().to_string());
    // The full file system is seen only inside the namespace: what is left in it is listed there.
    launch.wrapper = vec![
        "unshare".into(),
        "-m".into(),
        "sh".into(),
        "-c".into(),
        format!(
            "o={}; mount -t tmpfs -o size=64k tmpfs \"$o\" && dd if=/dev/zero of=\"$o/fill\" bs=4k count=64 2>/dev/null; \
             \"$@\"; rc=$?; ls -A \"$o\" >{}; exit $rc",
            out.display(),
            listing.display()
        ),
        "sh".into(),
    ];
    let r = launch.run();
    r.assert_ok();
    assert!(r.stdout.contains("posts=100 errors=0"), "{}", r.stdout);
    let warnings: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let rows = warnings.iter().find(|w| w.contains("iteration record")).expect("a warning about the rows");
    assert!(rows.contains("no more iteration rows") && rows.contains("AAR_OUTPUT_DIR"), "{rows}");
    let traced = warnings.iter().find(|w| w.contains("decision trace")).expect("a warning about the trace");
    assert!(
        traced.contains(&format!("\"{}\" (AAR_TRACE)", trace.display()))
            && traced.contains("No space left on device")
            && traced.contains("Point AAR_TRACE at"),
        "{traced}"
    );
    // The record it could not write is not left empty (or cut) for `aar report` to trip on.
    let left = std::fs::read_to_string(&listing).unwrap();
    let mut left: Vec<&str> = left.lines().collect();
    left.sort();
    assert_eq!(left, ["fill", "trace.jsonl"], "left in the output folder");
}

/// Rows a rank writes at most (src/rows.rs).
const MAX_ROWS: u64 = 100_000;

/// A boundary on a call the program makes every few microseconds (a solver's `MPI_Allreduce`)
/// ends an iteration as often: one warning says so after 1,000, with how to mark longer ones, and
/// rows stop after the cap, so that a thousand ranks do not write hundreds of MB a second each.
/// Long iterations get neither warning.
#[test]
fn iterations_of_microseconds_are_warned_of_and_their_rows_capped() {
    let r = Launch::driver("ab-short", "rdma 8192 2 0 iterloop 120000")
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .unset("AAR_EMU_LOG")
        .run();
    r.assert_ok();
    let lines = r.aar_lines();
    let short: Vec<_> = lines.iter().filter(|l| l.contains("iterations last")).collect();
    assert_eq!(short.len(), 1, "{lines:?}");
    assert!(short[0].contains("AAR_AB_BOUNDARY=MPI_<Fn>:N with a larger N"), "{}", short[0]);
    let capped: Vec<_> = lines.iter().filter(|l| l.contains("holds the first 100000 iterations")).collect();
    assert_eq!(capped.len(), 1, "{lines:?}");
    let (_, rows) = iteration_records(&r.dir.join("out")).remove(0);
    assert_eq!(rows.len() as u64, MAX_ROWS);
    assert_eq!(r.records()[0]["ab"]["iterations"], 120_000, "every iteration counted");
    // The report says what it compares (few resamples: the intervals are not what is checked).
    let out = std::process::Command::new(aar_command())
        .args(["report", "--resamples", "100"])
        .arg(r.dir.join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // A process outside a job has no rank: its record is named by its file.
    let record = std::fs::read_dir(r.dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".iterations.jsonl"))
        .unwrap();
    let said = format!(
        "iteration record of the process without a rank of {} (the only process with a summary record) holds its first \
         100000 iterations of up to 120000",
        record.display()
    );
    assert!(stderr.contains(&said), "{said:?} in {stderr}");

    // Iterations of 2 ms: no warning.
    let r = Launch::driver("ab-long", &"iter begin sleep 2000 iter end ".repeat(1001))
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .unset("AAR_EMU_LOG")
        .run();
    r.assert_ok();
    assert!(!r.stderr.contains("iterations last"), "{}", r.stderr);
    assert_eq!(iteration_records(&r.dir.join("out")).remove(0).1.len(), 1001);
}

#[test]
fn memory_stays_bounded_over_hundreds_of_thousands_of_iterations() {
    let rss = |iters: u64| {
        let r = Launch::driver(&format!("ab-memory-{iters}"), &format!("rdma 8192 2 0 iterloop {iters} maxrss"))
            .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3,auto")
            .env("AAR_AB_ORDER", "shuffled")
            .unset("AAR_EMU_LOG")
            .run();
        r.assert_ok();
        assert!(r.stdout.contains("iterloop failed=0"), "{}", r.stdout);
        let (_, rows) = iteration_records(&r.dir.join("out")).remove(0);
        assert_eq!(rows.len() as u64, iters.min(MAX_ROWS), "every row written, up to the cap");
        assert_eq!(rows.last().unwrap()["i"], iters.min(MAX_ROWS) - 1);
        let kb: u64 = r.stdout.split("maxrss_kb=").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
        let _ = std::fs::remove_dir_all(&r.dir);
        kb
    };
    let (few, many) = (rss(2_000), rss(200_000));
    assert!(many < few + 4096, "peak memory grows with iterations: {few} KiB for 2,000, {many} KiB for 200,000");
}

#[test]
fn a_fork_child_writes_no_rows_and_the_parent_keeps_its_own() {
    let r = Launch::driver("ab-fork", "iter begin fma 64 3 0 fork 2 iter end iter begin fma 64 1 0 iter end")
        .env("AAR_AB", "ADAPTIVE2,ADAPTIVE3")
        .run();
    r.assert_ok();
    let recs = iteration_records(&r.dir.join("out"));
    assert_eq!(recs.len(), 1, "the parent's iteration record only");
    let (header, rows) = &recs[0];
    assert_eq!(policies(rows), ["ADAPTIVE2", "ADAPTIVE3"]);
    assert_eq!(rows[0]["messages"][column(header, "ADAPTIVE2")], 3, "the parent's own messages: {}", rows[0]);
    let summaries = r.records();
    assert_eq!(summaries.len(), 2);
    let child = summaries.iter().find(|s| s["fork_child"] == true).unwrap();
    assert!(child["ab"]["iterations_file"].is_null());
}

#[test]
fn iterations_over_a_simulated_network_are_timed_in_simulated_time() {
    let r = Launch::program("ab-sim", example("iterations"), "--iters 4 --bytes 65536")
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .env("AAR_EMU_SIM", "groups=3")
        .unset("AAR_EMU_LOG")
        .run();
    r.assert_ok();
    assert!(r.stdout.contains("(simulated clock)"), "{}", r.stdout);
    let (header, rows) = iteration_records(&r.dir.join("out")).remove(0);
    assert_eq!(header["clock"], "simulated");
    assert_eq!(rows.len(), 4);
    // The simulated clock moves only while transfers are in flight, so the rows' durations add
    // up to exactly what the program measured around its two PUTs per iteration.
    let total_us: f64 =
        rows.iter().map(|r| (r["end_ns"].as_u64().unwrap() - r["start_ns"].as_u64().unwrap()) as f64 / 1e3).sum();
    let per_iteration: f64 = r.stdout.split(", ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(
        (total_us / 4.0 - per_iteration).abs() < 0.01,
        "rows {total_us} µs in all, program {per_iteration} µs per iteration"
    );
    assert!(rows[0]["start_ns"].as_u64().unwrap() >= 5000, "simulated time starts at 5 µs");
}

#[test]
fn fortran_programs_mark_iterations_through_the_aar_module() {
    assert!(have("gfortran"), "gfortran is missing: run scripts/setup");
    let c = |p: &str| root().join(p);
    let prog = compile(
        "gfortran",
        "ab_fortran",
        &[c("cabi/aar.f90"), c("tests/c/ab_posts.f90"), c("tests/c/ab_fortran.f90"), c("tests/c/ab_fortran_posts.c")],
        &[],
    );
    let r = Launch::program("ab-fortran", prog, "").env("AAR_AB", "ADAPTIVE3,ADAPTIVE1").run();
    r.assert_ok();
    assert!(r.stdout.contains("fortran ok"), "{}", r.stdout);
    let (header, rows) = iteration_records(&r.dir.join("out")).remove(0);
    assert_eq!(policies(&rows), ["ADAPTIVE3", "ADAPTIVE1", "ADAPTIVE3", "ADAPTIVE1"]);
    let labels: Vec<&str> = rows.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["isolated", "congested", "isolated", "congested"]);
    assert_rows_hold_their_posts(&header, &rows, 3, 8192);
    let posted = rdma_modes(&r.log);
    assert_eq!(posted, [["ADAPTIVE3"; 3], ["ADAPTIVE1"; 3], ["ADAPTIVE3"; 3], ["ADAPTIVE1"; 3]].concat());
}

/// What an MPI job left: its run, the ranks' iteration records and each rank's post log.
type MpiJob = (Run, Vec<IterationRecord>, BTreeMap<u64, Vec<Value>>);

/// An MPI implementation the tests run jobs under: MPICH (Cray MPICH's base, `int` handles) or
/// Open MPI (pointer handles).
#[derive(Clone, Copy)]
enum Mpi {
    Mpich,
    OpenMpi,
}

impl Mpi {
    fn compiler(self) -> &'static str {
        match self {
            Mpi::Mpich => "mpicc.mpich",
            Mpi::OpenMpi => "mpicc.openmpi",
        }
    }

    /// The launcher of a 3-rank job, and the variable that holds a rank's number.
    fn launcher(self) -> (Vec<String>, &'static str) {
        match self {
            Mpi::Mpich => (vec!["mpiexec.mpich".into(), "-n".into(), "3".into()], "PMI_RANK"),
            Mpi::OpenMpi => {
                (["mpiexec.openmpi", "--oversubscribe", "-n", "3"].map(String::from).to_vec(), "OMPI_COMM_WORLD_RANK")
            }
        }
    }

    /// Whether its compiler and launcher are installed; else the test says it is skipped.
    fn present(self) -> bool {
        let launcher = self.launcher().0.remove(0);
        let here = have(self.compiler()) && have(&launcher);
        if !here {
            eprintln!("SKIPPED: {} or {launcher} is not installed; scripts/setup installs them", self.compiler());
        }
        here
    }
}

/// ab_mpi.c as a 3-rank MPICH job, its mode from the boundary (see [`mpi_program_job`]).
fn mpi_job(test: &str, boundary: &str, iters: usize, extra: &[(&str, &str)]) -> MpiJob {
    mpi_job_under(Mpi::Mpich, test, boundary, iters, extra)
}

/// [`mpi_job`] under `mpi`.
fn mpi_job_under(mpi: Mpi, test: &str, boundary: &str, iters: usize, extra: &[(&str, &str)]) -> MpiJob {
    let prog = compile(mpi.compiler(), "ab_mpi", &[root().join("tests/c/ab_mpi.c")], &[]);
    // ab_mpi's mode is the function's name: MPI_Reduce_scatter_block:1 -> reduce_scatter_block
    let name = boundary.split(':').next().unwrap().to_lowercase();
    let kind = name.strip_prefix("mpi_").unwrap();
    mpi_program_job_under(mpi, test, prog, &format!("{kind} {iters} 8192"), boundary, extra)
}

/// Per-rank iteration records and post logs of a 3-rank MPICH job of `prog` (the emulator's log
/// is made per rank by the launch wrapper).
fn mpi_program_job(test: &str, prog: PathBuf, args: &str, boundary: &str, extra: &[(&str, &str)]) -> MpiJob {
    mpi_program_job_under(Mpi::Mpich, test, prog, args, boundary, extra)
}

/// [`mpi_program_job`] under `mpi`.
fn mpi_program_job_under(
    mpi: Mpi,
    test: &str,
    prog: PathBuf,
    args: &str,
    boundary: &str,
    extra: &[(&str, &str)],
) -> MpiJob {
    let mut launch = Launch::program(test, prog, args)
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE1,ADAPTIVE3")
        .env("AAR_AB_ORDER", "shuffled:7")
        .env("AAR_AB_BOUNDARY", boundary)
        // Open MPI: as root, and on this node only (no ssh needed).
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_plm", "isolated")
        .unset("AAR_EMU_LOG");
    let session = launch.dir.display().to_string();
    launch = launch.env(OPEN_MPI_TMPDIR, &session);
    for (k, v) in extra {
        launch = launch.env(k, v);
    }
    let logs = launch.dir.clone();
    let (mut wrapper, rank) = mpi.launcher();
    wrapper.extend([
        "sh".into(),
        "-c".into(),
        format!("AAR_EMU_LOG={}/emu.${rank}.jsonl exec \"$0\" \"$@\"", logs.display()),
    ]);
    launch.wrapper = wrapper;
    let r = launch.run();
    r.assert_ok();
    for rank in 0..3 {
        assert!(r.stdout.contains(&format!("rank {rank} of 3: ok")), "{}", r.stdout);
    }
    let posts = (0..3u64).map(|rank| (rank, read_jsonl(&logs.join(format!("emu.{rank}.jsonl"))))).collect();
    let recs = iteration_records(&r.dir.join("out"));
    (r, recs, posts)
}

fn check_mpi_job(boundary: &str) {
    check_mpi_job_under(Mpi::Mpich, boundary);
}

fn check_mpi_job_under(mpi: Mpi, boundary: &str) {
    if !mpi.present() {
        return;
    }
    let iters = 9;
    let test = format!("ab-{}-{}", mpi.compiler(), boundary.replace(':', "-"));
    let job = mpi_job_under(mpi, &test, boundary, iters, &[]);
    check_schedule(boundary, iters, job);
}

/// Every rank of `job` ran `iters` iterations, with the same policy in each, in blocks holding
/// every policy once, and its posts (two per iteration) went out with its iteration's policy.
fn check_schedule(boundary: &str, iters: usize, (r, recs, posts): MpiJob) {
    assert_eq!(recs.len(), 3, "one iteration record per rank");
    let reference = policies(&recs[0].1);
    assert_eq!(reference.len(), iters, "the last collective ends the last iteration: {reference:?}");
    for block in reference.chunks(3) {
        let mut b = block.to_vec();
        b.sort();
        assert_eq!(b, ["ADAPTIVE0", "ADAPTIVE1", "ADAPTIVE3"], "{reference:?}");
    }
    for (rank, (header, rows)) in recs.iter().enumerate() {
        assert_eq!(header["rank"], rank as u64);
        assert_eq!((header["nranks"].as_u64(), header["boundary"].as_str()), (Some(3), Some(boundary)));
        assert_eq!(policies(rows), reference, "rank {rank} has the same policy in the same iteration");
        assert_rows_hold_their_posts(header, rows, 2, 8192);
        // And that is what its posts got.
        let modes = rdma_modes(&posts[&(rank as u64)]);
        let want: Vec<&str> = reference.iter().flat_map(|p| [p.as_str(), p.as_str()]).collect();
        assert_eq!(modes, want, "rank {rank}");
    }
    assert_eq!(r.aar_lines().iter().filter(|l| !l.starts_with("aar: policy")).count(), 0, "{:?}", r.aar_lines());
}

#[test]
fn an_mpi_barrier_marks_iterations_and_every_rank_follows_the_schedule() {
    check_mpi_job("MPI_Barrier:1");
}

#[test]
fn every_second_mpi_allreduce_marks_iterations() {
    check_mpi_job("MPI_Allreduce:2");
}

/// The `v` collectives, whose counts differ between ranks and calls.
#[test]
fn an_mpi_allgatherv_or_alltoallv_marks_iterations() {
    check_mpi_job("MPI_Allgatherv:1");
    check_mpi_job("MPI_Alltoallv:1");
}

/// The other blocking collectives: rooted `v` forms, `MPI_Alltoallw`, the reduce-scatters, the
/// scans and the neighbourhood collectives (on a periodic ring), each with its results checked by
/// every rank.
#[test]
fn every_other_wrapped_collective_marks_iterations() {
    for f in [
        "MPI_Gatherv",
        "MPI_Scatterv",
        "MPI_Alltoallw",
        "MPI_Reduce_scatter",
        "MPI_Reduce_scatter_block",
        "MPI_Scan",
        "MPI_Exscan",
        "MPI_Neighbor_allgather",
        "MPI_Neighbor_allgatherv",
        "MPI_Neighbor_alltoall",
        "MPI_Neighbor_alltoallv",
        "MPI_Neighbor_alltoallw",
    ] {
        check_mpi_job(&format!("{f}:1"));
    }
}

/// MPI 4's large-count forms (`MPI_Allreduce_c`, counts of `MPI_Count` and displacements of
/// `MPI_Aint`) are wrapped too, and a boundary named for a function is taken at its large-count
/// form: `ab_mpi` built with `-DLARGE_COUNT` calls only those (MPICH 4 has them; Open MPI 4.1
/// does not), with every result checked by every rank.
#[test]
fn the_large_count_forms_of_the_collectives_mark_iterations() {
    if !have("mpicc.mpich") || !have("mpiexec.mpich") {
        eprintln!("SKIPPED: MPICH (mpicc.mpich, mpiexec.mpich) is not installed; scripts/setup installs it");
        return;
    }
    let prog = compile("mpicc.mpich", "ab_mpi", &[root().join("tests/c/ab_mpi.c")], &["-DLARGE_COUNT"]);
    let needed = Command::new("nm").args(["-D", "--undefined-only"]).arg(&prog).output().unwrap();
    let needed = String::from_utf8_lossy(&needed.stdout);
    assert!(needed.contains("MPI_Allreduce_c") && !needed.contains("MPI_Allreduce\n"), "{needed}");
    let iters = 6;
    for boundary in [
        "MPI_Allreduce:2",
        "MPI_Allgatherv:1",
        "MPI_Alltoallv:1",
        "MPI_Gatherv:1",
        "MPI_Scatterv:1",
        "MPI_Alltoallw:1",
        "MPI_Reduce_scatter:1",
        "MPI_Reduce_scatter_block:1",
        "MPI_Scan:1",
        "MPI_Exscan:1",
        "MPI_Neighbor_allgather:1",
        "MPI_Neighbor_allgatherv:1",
        "MPI_Neighbor_alltoall:1",
        "MPI_Neighbor_alltoallv:1",
        "MPI_Neighbor_alltoallw:1",
    ] {
        let kind = boundary.split(':').next().unwrap().to_lowercase();
        let args = format!("{} {iters} 8192", kind.strip_prefix("mpi_").unwrap());
        let test = format!("ab-large-count-{}", boundary.replace(':', "-"));
        check_schedule(boundary, iters, mpi_program_job(&test, prog.clone(), &args, boundary, &[]));
    }
}

/// Open MPI's handles are pointers where MPICH's are `int`s: the same wrappers forward them
/// unchanged, in registers and on the stack, and in arrays (MPI_Alltoallw's datatypes), so an
/// Open MPI job's collectives mark iterations as an MPICH job's do.
#[test]
fn open_mpi_s_collectives_mark_iterations_through_the_same_wrappers() {
    for boundary in ["MPI_Allreduce:2", "MPI_Alltoallw:1", "MPI_Neighbor_alltoallw:1", "MPI_Scatterv:1"] {
        check_mpi_job_under(Mpi::OpenMpi, boundary);
    }
}

/// A boundary on a collective the program never calls marks nothing, and the one warning says so
/// first, before the bindings that bypass libaar.so (a C program calls the C function).
#[test]
fn a_boundary_on_a_collective_the_program_never_calls_is_said_to_be_never_called() {
    if !Mpi::Mpich.present() {
        return;
    }
    let prog = compile("mpicc.mpich", "ab_mpi", &[root().join("tests/c/ab_mpi.c")], &[]);
    let (r, recs, _) = mpi_program_job("ab-never-called", prog, "allreduce 3 8192", "MPI_Bcast", &[]);
    assert!(recs.iter().all(|(_, rows)| rows.is_empty()), "no iteration marked");
    let w: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("no iteration was marked")).collect();
    assert_eq!(w.len(), 1, "{}", r.stderr);
    assert!(w[0].contains("Either the program never calls MPI_Bcast (choose a collective"), "{}", w[0]);
}

/// Open MPI's Fortran bindings, `use mpi` included, call `PMPI_Allreduce` themselves (README,
/// "Limits"): a boundary on MPI_Allreduce marks nothing in a Fortran program, and the one warning
/// says so, with what to do instead (not `use mpi`, which is what the program uses).
#[test]
fn under_open_mpi_a_fortran_program_s_boundary_is_bypassed_and_the_warning_says_what_to_do() {
    if !have("mpif90.openmpi") || !have("mpiexec.openmpi") {
        eprintln!("SKIPPED: Open MPI (mpif90.openmpi, mpiexec.openmpi) is not installed; scripts/setup installs it");
        return;
    }
    let c = |p: &str| root().join(p);
    let prog = compile(
        "mpif90.openmpi",
        "ab_mpi_fortran",
        &[c("tests/c/ab_posts.f90"), c("tests/c/ab_mpi.f90"), c("tests/c/ab_fortran_posts.c")],
        &[],
    );
    let (r, recs, _) =
        mpi_program_job_under(Mpi::OpenMpi, "ab-openmpi-fortran", prog, "9 8192", "MPI_Allreduce:2", &[]);
    assert!(recs.iter().all(|(_, rows)| rows.is_empty()), "no iteration marked");
    let w: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("no iteration was marked")).collect();
    assert_eq!(w.len(), 1, "{}", r.stderr);
    for part in [
        "no call of MPI_Allreduce reached libaar.so. Either the program never calls MPI_Allreduce",
        "or something calls PMPI_Allreduce instead",
        "Open MPI's, for `use mpi` and mpif.h too",
        "`aar doctor PROGRAM`",
        "the aar module's",
    ] {
        assert!(w[0].contains(part), "{part:?} in {}", w[0]);
    }
    assert!(!w[0].contains("through `use mpi`"), "{}", w[0]);
}

/// What `tests/c/pmpi_tool.c` (a profiling tool of the mpiP, IPM or Score-P kind) counted: its
/// `pmpi_tool: MPI_<Fn> N` lines, one per function and rank, sorted.
fn tool_counts(r: &Run) -> Vec<&str> {
    let mut lines: Vec<&str> = r.stderr.lines().filter(|l| l.starts_with("pmpi_tool: ")).collect();
    lines.sort();
    lines
}

/// A profiling tool preloaded after libaar.so (`module load aar` after the tool's module: the aar
/// module prepends) sees every call of each wrapped collective, as many as without libaar.so,
/// while libaar.so marks iterations by that collective as before. One preloaded before libaar.so
/// takes the calls and calls PMPI itself: a boundary there is one warning naming the tool.
#[test]
fn a_profiling_tool_after_the_library_sees_every_collective_and_one_before_it_is_named() {
    if !have("mpicc.mpich") || !have("mpiexec.mpich") {
        eprintln!("SKIPPED: MPICH (mpicc.mpich, mpiexec.mpich) is not installed; scripts/setup installs it");
        return;
    }
    let tool = compile("mpicc.mpich", "pmpi_tool", &[root().join("tests/c/pmpi_tool.c")], &["-shared", "-fPIC"]);
    let prog = compile("mpicc.mpich", "ab_mpi", &[root().join("tests/c/ab_mpi.c")], &[]);
    let both = format!("{} {}", libaar().display(), tool.display());
    let iters = 6;
    for (boundary, args) in [
        ("MPI_Allreduce:2", "allreduce"),
        ("MPI_Alltoallv:1", "alltoallv"),
        ("MPI_Neighbor_alltoallw:1", "neighbor_alltoallw"),
    ] {
        let args = format!("{args} {iters} 8192");
        let test = format!("ab-pmpi-tool-{}", boundary.replace(':', "-"));
        let (alone, _, _) = mpi_program_job(
            &format!("{test}-alone"),
            prog.clone(),
            &args,
            boundary,
            &[("LD_PRELOAD", &tool.display().to_string())],
        );
        assert!(alone.aar_lines().is_empty(), "{:?}", alone.aar_lines());
        let counted = tool_counts(&alone);
        let function = boundary.split(':').next().unwrap();
        assert!(
            counted.iter().filter(|l| l.starts_with(&format!("pmpi_tool: {function} "))).count() == 3,
            "{counted:?}"
        );
        let job = mpi_program_job(&test, prog.clone(), &args, boundary, &[("LD_PRELOAD", &both)]);
        assert_eq!(tool_counts(&job.0), counted, "the tool after libaar.so counts what it counts alone");
        check_schedule(boundary, iters, job);
    }

    let boundary = "MPI_Allreduce:2";
    let before = format!("{} {}", tool.display(), libaar().display());
    let (r, recs, _) = mpi_program_job(
        "ab-pmpi-tool-before",
        prog,
        &format!("allreduce {iters} 8192"),
        boundary,
        &[("LD_PRELOAD", &before)],
    );
    let warnings: Vec<&str> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
    assert_eq!(warnings.len(), 1, "one warning, from rank 0: {warnings:?}");
    for part in [
        "AAR_AB_BOUNDARY=MPI_Allreduce:2".to_string(),
        format!("defined first by {}", tool.display()),
        "PMPI_Allreduce".into(),
        "Put libaar.so before it in LD_PRELOAD".into(),
    ] {
        assert!(warnings[0].contains(&part), "{part:?} in {}", warnings[0]);
    }
    assert!(recs.is_empty(), "libaar.so saw no boundary, as the warning says");
    let summaries = r.records();
    assert_eq!(summaries.len(), 3);
    assert!(summaries.iter().all(|s| s["ab"]["iterations"] == 0), "{summaries:?}");
    assert_eq!(tool_counts(&r).len(), 3, "the tool before libaar.so counted its calls: {}", r.stderr);
}

/// An MPI program loaded the way Python loads an extension module (mpi4py): dlopen() with
/// RTLD_LOCAL, so that it, MPICH and libugni are outside the loader's global scope, where
/// `dlsym(RTLD_NEXT)` from libaar.so does not look. Its collectives and posts still reach MPICH and
/// libugni, and the A/B experiment runs as in a program that links them.
#[test]
fn a_program_dlopened_with_rtld_local_like_a_python_module_is_routed_and_forwarded() {
    if !have("mpicc.mpich") || !have("mpiexec.mpich") {
        eprintln!("SKIPPED: MPICH (mpicc.mpich, mpiexec.mpich) is not installed; scripts/setup installs it");
        return;
    }
    let module = compile(
        "mpicc.mpich",
        "ab_mpi_module",
        &[root().join("tests/c/ab_mpi.c")],
        &["-shared", "-fPIC", "-Dmain=ab_mpi_main"],
    );
    // --as-needed: the host links neither libugni nor MPI (compile adds -lugni).
    let host = compile("cc", "dlopen_host", &[root().join("tests/c/dlopen_host.c")], &["-Wl,--as-needed"]);
    let needed = Command::new("readelf").arg("-d").arg(&host).output().unwrap();
    assert!(!String::from_utf8_lossy(&needed.stdout).contains("libugni"), "the host must not link libugni");
    let (boundary, iters) = ("MPI_Allreduce:2", 6);
    let args = format!("{} ab_mpi_main allreduce {iters} 8192", module.display());
    // The emulator publishes its counters through libsde, where PAPI finds them only in the global
    // scope (on a Cray they are the NIC's, read by PAPI's own component): preloaded, libsde is
    // there, as for a program that links the emulator.
    let preload = format!("{} libsde.so.1", libaar().display());
    let job = mpi_program_job("ab-rtld-local", host, &args, boundary, &[("LD_PRELOAD", &preload)]);
    check_schedule(boundary, iters, job);
}

/// MPICH's Fortran bindings call the C MPI functions, so libaar.so's wrappers see a Fortran
/// program's collectives too.
#[test]
fn a_fortran_program_s_mpi_allreduce_marks_iterations() {
    if !have("mpif90.mpich") || !have("mpiexec.mpich") {
        eprintln!("SKIPPED: MPICH (mpif90.mpich, mpiexec.mpich) is not installed; scripts/setup installs it");
        return;
    }
    let c = |p: &str| root().join(p);
    let prog = compile(
        "mpif90.mpich",
        "ab_mpi_fortran",
        &[c("tests/c/ab_posts.f90"), c("tests/c/ab_mpi.f90"), c("tests/c/ab_fortran_posts.c")],
        &[],
    );
    let (boundary, iters) = ("MPI_Allreduce:2", 9);
    let job = mpi_program_job("ab-mpi-fortran", prog, &format!("{iters} 8192"), boundary, &[]);
    check_schedule(boundary, iters, job);
}

#[test]
fn mpi_jobs_output_ranks_programs_without_ugni_and_markers_refused_under_an_mpi_boundary() {
    if !have("mpiexec.mpich") {
        eprintln!("SKIPPED: MPICH is not installed; scripts/setup installs it");
        return;
    }
    let (_, recs, _) = mpi_job("ab-mpi-ranks", "MPI_Barrier", 3, &[("AAR_OUTPUT_RANKS", "0,2")]);
    let ranks: Vec<u64> = recs.iter().map(|(h, _)| h["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, [0, 2]);
    // An MPI program that makes no uGNI call is left alone, unless its first boundary call
    // initialises the library. An empty or blank AAR_AB_BOUNDARY is unset: no boundary.
    let cases = [(None, false), (Some(""), false), (Some(" "), false), (Some("MPI_Barrier"), true)];
    for (i, (boundary, initialised)) in cases.into_iter().enumerate() {
        let prog = compile("mpicc.mpich", "ab_mpi", &[root().join("tests/c/ab_mpi.c")], &[]);
        let mut launch = Launch::program(&format!("ab-mpi-inert-{i}"), prog, "barrier 0 64").unset("AAR_EMU_LOG");
        if let Some(b) = boundary {
            launch = launch.env("AAR_AB_BOUNDARY", b);
        }
        launch.wrapper = vec!["mpiexec.mpich".into(), "-n".into(), "2".into()];
        let r = launch.run();
        r.assert_ok();
        assert_eq!(r.aar_lines().len(), usize::from(initialised), "{boundary:?}: {:?}", r.aar_lines());
        assert_eq!(r.records().len(), if initialised { 2 } else { 0 });
    }
    // Markers are refused while an MPI function marks iterations.
    let r = Launch::driver("ab-markers-refused", "iter begin iter end iter label ok")
        .env("AAR_AB_BOUNDARY", "MPI_Barrier")
        .run();
    r.assert_ok();
    assert!(r.stdout.contains("iter begin rc=-1\niter end rc=-1\niter label rc=0"), "{}", r.stdout);
}

/// Threads that reach the boundary at the same moments (MPI_THREAD_MULTIPLE collectives on
/// MPI_COMM_SELF), from the first call on, while the library starts up: every iteration begun
/// is ended and keeps its row, each under its own scheduled policy (rows were lost when one
/// thread ended an iteration another had not yet begun in the record, and the first ones took
/// the policy in force before the schedule existed), and iterations begin in index order.
#[test]
fn boundaries_of_several_threads_at_once_keep_every_row_and_policy() {
    if !have("mpicc.mpich") || !have("mpiexec.mpich") {
        eprintln!("SKIPPED: MPICH (mpicc.mpich, mpiexec.mpich) is not installed; scripts/setup installs it");
        return;
    }
    let prog = ab_threads_program();
    let (calls, threads, every) = (5000u64, 4u64, 10u64);
    let mut launch = Launch::program("ab-threads", prog, &format!("{calls} {threads}"))
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .env("AAR_AB_BOUNDARY", &format!("MPI_Barrier:{every}"))
        .unset("AAR_EMU_LOG");
    launch.wrapper = ["mpiexec.mpich", "-n", "1"].map(String::from).to_vec();
    let r = launch.run();
    r.assert_ok();
    let recs = iteration_records(&r.dir.join("out"));
    assert_eq!(recs.len(), 1);
    let rows = &recs[0].1;
    let summary = &r.records()[0];
    let boundaries = calls * threads / every;
    // The last iteration is still open at exit: every one before it has its row.
    assert_eq!(summary["ab"]["iterations"], boundaries - 1, "{}", summary["ab"]);
    assert_eq!(rows.len() as u64, boundaries - 1, "one row per ended iteration");
    let mut seen: Vec<u64> = rows.iter().map(|row| row["i"].as_u64().unwrap()).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), rows.len(), "each iteration once");
    // Numbered in the order they began (the index was once taken before the record's lock, so a
    // thread that waited longer for it began a lower index after a higher one).
    let mut by_start: Vec<(u64, u64)> =
        rows.iter().map(|row| (row["start_ns"].as_u64().unwrap(), row["i"].as_u64().unwrap())).collect();
    by_start.sort_unstable();
    if let Some(k) = by_start.windows(2).position(|w| w[0].1 > w[1].1) {
        panic!(
            "iteration {} began after {} (rows by start: (start_ns, i) ...{:?}...)",
            by_start[k + 1].1,
            by_start[k].1,
            &by_start[k.saturating_sub(2)..(k + 4).min(by_start.len())]
        );
    }
    for row in rows {
        let i = row["i"].as_u64().unwrap();
        assert_eq!(row["policy"], ["ADAPTIVE0", "ADAPTIVE3"][(i % 2) as usize], "iteration {i}: {row}");
    }
    // A program that makes no uGNI call: a bad boundary, or one the program never calls, is
    // still said (the library starts at the first wrapped collective when a boundary is asked).
    for (boundary, said) in [
        ("MPI_Barrier:0", "AAR_AB_BOUNDARY=\"MPI_Barrier:0\" is not an iteration boundary"),
        ("MPI_Ibarrier", "AAR_AB_BOUNDARY=\"MPI_Ibarrier\" is not an iteration boundary"),
        ("MPI_Allreduce", "AAR_AB is set but no iteration was marked: no call of MPI_Allreduce reached libaar.so"),
    ] {
        let mut launch =
            Launch::program(&format!("ab-threads-{}", boundary.replace(':', "-")), ab_threads_program(), "10 2")
                .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
                .env("AAR_AB_BOUNDARY", boundary)
                .unset("AAR_EMU_LOG");
        launch.wrapper = ["mpiexec.mpich", "-n", "1"].map(String::from).to_vec();
        let r = launch.run();
        r.assert_ok();
        let lines: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains(said)).collect();
        assert_eq!(lines.len(), 1, "{boundary}: {}", r.stderr);
        if boundary == "MPI_Allreduce" {
            // The markers it offers are refused while AAR_AB_BOUNDARY names an MPI function.
            assert!(
                lines[0].contains("unset AAR_AB_BOUNDARY and mark iterations with aar_iteration_begin/end"),
                "{}",
                lines[0]
            );
        }
    }
}

/// ab_threads, built once.
fn ab_threads_program() -> PathBuf {
    compile("mpicc.mpich", "ab_threads", &[root().join("tests/c/ab_threads.c")], &["-pthread"])
}

/// AAR_AB with markers in a program that never marks an iteration: the whole run had iteration
/// 0's policy and compared nothing, which the exit says (else only the summary's "0 iterations"
/// would); a program that marks one is not told so.
#[test]
fn an_experiment_whose_iterations_were_never_marked_says_so() {
    let said = "AAR_AB is set but no iteration was marked: the program never called aar_iteration_begin, so \
                the whole run used ADAPTIVE3 (iteration 0's policy)";
    for (test, script, warned) in
        [("ab-unmarked", "rdma 8192 1 0 ", true), ("ab-marked", "iter begin rdma 8192 1 0 iter end ", false)]
    {
        let launch = Launch::driver(test, script)
            .env("AAR_AB", "ADAPTIVE3,ADAPTIVE0")
            .env("AAR_AB_ORDER", "round-robin")
            .unset("AAR_EMU_LOG");
        let r = launch.run();
        r.assert_ok();
        let lines: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains(said)).collect();
        assert_eq!(lines.len(), usize::from(warned), "{test}: {}", r.stderr);
        if warned {
            assert!(lines[0].contains("AAR_AB_BOUNDARY=MPI_<Fn>[:N]"), "{}", lines[0]);
        }
    }
}

/// Iteration calls while another thread holds the iteration record for over 100 ms (here, one
/// inside fork(): libaar.so's fork handler holds the record until the fork is done). They do not
/// wait longer: an end and a begin still end and begin (AAR_OK), but those iterations have no row,
/// count in the summary record all the same, and one message says so, whichever call lost first;
/// a label is AAR_EINVAL, as aar.h says, and not set. Once the fork is done, rows are kept again,
/// and the record keeps the message, said while the fork held the record's messages too.
#[test]
fn iteration_calls_that_find_the_record_held_lose_their_rows_visibly() {
    let cases = [
        (
            "iter label late iter end iter index iter begin iter end",
            "iter label rc=-1\niter end rc=0\niter index=-1\niter begin rc=0\niter end rc=0\n",
            "the label \"late\" was not set",
        ),
        ("iter end iter begin", "iter end rc=0\niter begin rc=0\n", "iteration 1 ended without its row"),
        ("iter begin iter end", "iter begin rc=0\niter end rc=0\n", "iterations 1 (ended) and 2 (begun) have no row"),
    ];
    for (k, (held_calls, held_out, said)) in cases.into_iter().enumerate() {
        let script = format!(
            "iter begin rdma 8192 1 0 iter end iter begin rdma 8192 1 0 forkhold {held_calls} forkrelease \
             iter begin iter label after rdma 8192 2 0 iter end"
        );
        let r = Launch::driver(&format!("ab-record-held-{k}"), &script).run();
        r.assert_ok();
        let out = &r.stdout;
        assert!(out.contains("forkhold entered=1\n") && out.contains("forkrelease ok=1\n"), "{out}");
        let held = out.split("forkhold entered=1\n").nth(1).and_then(|t| t.split("forkrelease").next());
        assert_eq!(held, Some(held_out), "ended and begun all the same; a label refused: {out}");
        let lost: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("held the iteration record")).collect();
        assert_eq!(lost.len(), 1, "said once: {}", r.stderr);
        assert!(lost[0].contains(said), "{}", lost[0]);
        // The fork handler still holds the messages too: the line is kept for the record all the same.
        let messages = &r.records()[0]["messages"];
        let kept = messages
            .as_array()
            .map_or(0, |m| m.iter().filter(|l| l.as_str().is_some_and(|l| l.contains(said))).count());
        assert_eq!(kept, 1, "the record keeps the line said: {messages}");
        let (_, rows) = iteration_records(&r.dir.join("out")).remove(0);
        let kept: Vec<_> = rows.iter().map(|row| (row["i"].as_u64(), row["label"].as_str())).collect();
        assert_eq!(kept, [(Some(0), None), (Some(3), Some("after"))], "iterations 1 and 2 have no row: {rows:?}");
        assert_eq!(r.records()[0]["ab"]["iterations"], 4, "every ended iteration counts");
    }
}
