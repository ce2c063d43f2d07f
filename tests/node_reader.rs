//! One counter reader per node (`AAR_NODE_READING`): ranks that share a NIC share a reading
//! through a segment in shared memory. Real processes under the real libaar.so and libpapi over
//! the emulator: several ranks racing on one segment, a rank that exits while another still uses
//! its reading, a reading too old to use, a writer that died holding the segment (and one of
//! ranks of several PID namespaces, whose pids a rank cannot judge), a window
//! without the response stalls a rank counts, a rank whose looks at the segment find nothing and
//! pause, and the segment removed when the last rank leaves.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A decision after every 64 KiB post and a read after every decision, so every post needs a
/// reading.
fn every_post_reads(l: Launch) -> Launch {
    l.env("AAR_WINDOW", "1").env("AAR_SUMMARY", "0")
}

/// The driver as one rank of a job `job` on the node with NIC address 0x1234, of `ranks` ranks
/// per node, without `aar run` (so each process can run its own script).
fn rank(test: &str, job: &str, r: u32, ranks: u32, script: &str) -> Launch {
    every_post_reads(Launch::driver(test, script))
        .env("SLURM_JOB_ID", job)
        .env("PMI_RANK", &r.to_string())
        .env("PMI_GNI_LOC_ADDR", "0x1234")
        .env("MPI_LOCALNRANKS", &ranks.to_string())
}

/// The job's segments in /dev/shm.
fn segments(job: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(&format!("-{job}-0x1234-")))
        .collect();
    v.sort();
    v
}

fn counters(rec: &Value) -> (u64, u64) {
    (rec["counters"]["reads"].as_u64().unwrap(), rec["counters"]["shared_readings"].as_u64().unwrap())
}

/// Every reading a rank observed is accounted for once (its baseline and one per decision), and
/// none took it back in time.
fn check_accounting(rec: &Value) {
    let (reads, shared) = counters(rec);
    let decisions = rec["engine"]["decisions"].as_u64().unwrap();
    assert_eq!(reads + shared, decisions + 1, "readings: {}", rec["counters"]);
    assert_eq!(
        rec["engine"]["windows_discarded_decreasing"], 0,
        "a reading older than the rank's own: {}",
        rec["engine"]
    );
}

/// Two ranks, run step by step through files: the first takes a reading, exits, and the second
/// still uses it; the segment goes when the second leaves. `age` is `AAR_NODE_READING`.
fn two_ranks_in_turn(test: &str, age: &str) -> (Vec<Value>, Vec<PathBuf>) {
    let job = format!("{test}-{}", std::process::id());
    let steps = scratch(&format!("{test}-steps"));
    let f = |name: &str| steps.join(name).display().to_string();
    let first = format!("fma 64 1 0 touch {} waitfile {} rdma 65536 1 0", f("ready0"), f("ready1"));
    let second =
        format!("fma 64 1 0 touch {} waitfile {} waitfile {} rdma 65536 1 0", f("ready1"), f("ready0"), f("gone0"));
    let r1 = rank(&format!("{test}-1"), &job, 1, 2, &second).env("AAR_NODE_READING", age);
    let t1 = std::thread::spawn(move || r1.run());
    let r0 = rank(&format!("{test}-0"), &job, 0, 2, &first).env("AAR_NODE_READING", age).run();
    r0.assert_ok();
    std::fs::write(f("gone0"), "").unwrap();
    let r1 = t1.join().unwrap();
    r1.assert_ok();
    let recs: Vec<Value> = r0.records().into_iter().chain(r1.records()).collect();
    assert_eq!(recs.len(), 2);
    (recs, segments(&job))
}

#[test]
fn a_rank_uses_the_reading_of_a_rank_that_has_exited_and_the_last_one_removes_the_segment() {
    let (recs, left) = two_ranks_in_turn("node-in-turn", "1000ms");
    let mut shared = 0;
    for rec in &recs {
        check_accounting(rec);
        assert_eq!(rec["node"]["ranks_per_node"], 2, "{}", rec["node"]);
        assert_eq!(rec["node"]["nic_address"], 0x1234);
        assert!(rec["node"]["shared_reading"].as_str().unwrap().starts_with("/dev/shm/aar-node-"), "{}", rec["node"]);
        shared += counters(rec).1;
    }
    // Whichever rank initialised first, one of them found a newer reading of the other: the
    // second rank's at the first one's decision, or the first rank's (now ended) at the second's.
    assert!(shared >= 1, "no reading was shared: {recs:?}");
    assert!(left.is_empty(), "the segment outlived its last rank: {left:?}");
    let path = recs[1]["node"]["shared_reading"].as_str().unwrap();
    assert!(path.contains(&format!("-node-in-turn-{}-0x1234-", std::process::id())), "{path}");
}

/// Jobs whose ids differ only past the length a segment's name keeps of them (batch systems and
/// users make ids of any length) have segments of their own: a rank never takes another job's
/// readings or decided bytes for its node mates'.
#[test]
fn jobs_whose_long_ids_differ_only_at_their_ends_have_segments_of_their_own() {
    let long = format!("{}-{}", "j".repeat(200), std::process::id());
    let path = |job: String, test: &str| {
        let out = rank(test, &job, 0, 2, "rdma 65536 2 0").run();
        out.assert_ok();
        let rec = out.records().remove(0);
        rec["node"]["shared_reading"].as_str().unwrap_or_else(|| panic!("no segment: {}", rec["node"])).to_string()
    };
    let a = path(format!("{long}-a"), "node-long-id-a");
    let b = path(format!("{long}-b"), "node-long-id-b");
    assert_ne!(a, b, "two jobs share a node segment");
    for p in [&a, &b] {
        let name = Path::new(p).file_name().unwrap().len();
        assert!(name < 255, "{p}: {name} bytes, longer than a file name may be");
    }
}

/// PAPI counts from the start of each process's event set: a rank that starts after 32 posts of
/// its node mate counts 32 posts less than it. Readings passed between them would make windows
/// shrink by that much, or go back in time; windows (the difference of two readings of one rank)
/// pass untouched. (32: the first rank is then still in its first round of looks at the segment,
/// `node::Looks`, when the second starts publishing.)
#[test]
fn ranks_whose_counters_started_apart_share_windows_not_readings() {
    let test = "node-offset";
    let job = format!("{test}-{}", std::process::id());
    let steps = scratch(&format!("{test}-steps"));
    let f = |name: &str| steps.join(name).display().to_string();
    let first = format!("rdma 65536 32 0 touch {} waitfile {} rdma 65536 40 0", f("ready0"), f("ready1"));
    let second = format!("touch {} rdma 65536 40 0", f("ready1"));
    let r0 = rank(&format!("{test}-0"), &job, 0, 2, &first).env("AAR_NODE_READING", "1000ms");
    let t0 = std::thread::spawn(move || r0.run());
    // The second rank's process, and its PAPI event set, start after the first one's 32 posts.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !steps.join("ready0").exists() {
        assert!(std::time::Instant::now() < deadline, "the first rank never got ready");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let r1 = rank(&format!("{test}-1"), &job, 1, 2, &second).env("AAR_NODE_READING", "1000ms").run();
    let r0 = t0.join().unwrap();
    r0.assert_ok();
    r1.assert_ok();
    let recs: Vec<Value> = r0.records().into_iter().chain(r1.records()).collect();
    assert_eq!(recs.len(), 2);
    let mut shared = 0;
    for rec in &recs {
        check_accounting(rec);
        assert_eq!(rec["engine"]["windows_discarded_absurd"], 0, "{}", rec["engine"]);
        shared += counters(rec).1;
    }
    assert!(shared >= 1, "no window was shared: {recs:?}");
}

/// A reading older than `AAR_NODE_READING` is never used, and with `AAR_NODE_READING=0` none is
/// (the ranks still share the segment, for their decided bytes).
#[test]
fn a_reading_older_than_the_bound_is_never_used() {
    for (test, age) in [("node-stale", "1ns"), ("node-unshared", "0")] {
        let (recs, left) = two_ranks_in_turn(test, age);
        for rec in &recs {
            check_accounting(rec);
            assert_eq!(counters(rec).1, 0, "AAR_NODE_READING={age}, a reading was shared: {}", rec["counters"]);
            assert!(rec["node"]["shared_reading"].is_string(), "{}", rec["node"]);
        }
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn a_rank_alone_on_its_node_makes_no_segment() {
    let job = format!("node-alone-{}", std::process::id());
    let r = rank("node-alone", &job, 0, 1, "rdma 65536 10 0").run();
    r.assert_ok();
    let rec = &r.records()[0];
    assert_eq!(rec["node"]["shared_reading"], Value::Null, "{}", rec["node"]);
    assert_eq!(counters(rec), (11, 0));
    assert!(segments(&job).is_empty());
}

/// A rank whose node mate never reads finds no window in a round of 64 looks at the segment, so
/// it pauses its looks for 64 readings, then 128 (`node::Looks`): of its 200 decisions'
/// readings, 64 + 8 are made without looking, and each is still accounted for once.
#[test]
fn a_rank_whose_looks_find_nothing_pauses_them() {
    let job = format!("node-pause-{}", std::process::id());
    let r = rank("node-pause", &job, 0, 2, "rdma 65536 200 0").env("AAR_NODE_READING", "1000ms").run();
    r.assert_ok();
    let rec = &r.records()[0];
    check_accounting(rec);
    assert_eq!(counters(rec), (201, 0));
    assert_eq!(rec["counters"]["reads_in_pauses"], 72, "{}", rec["counters"]);
    // With one reading per rank, no look and no pause.
    let r = rank("node-pause-off", &job, 0, 2, "rdma 65536 200 0").env("AAR_NODE_READING", "0").run();
    r.assert_ok();
    assert_eq!(r.records()[0]["counters"]["reads_in_pauses"], 0, "{}", r.records()[0]["counters"]);
    assert!(segments(&job).is_empty());
}

/// A writer that died while writing leaves the sequence odd: once its reading is `STUCK_NS` old
/// and a rank has seen its claim held for `STUCK_NS` more, the rank releases the slot. Not at
/// its first look, though `kill(pid, 0)` finds no such process: a live writer of another PID
/// namespace has a pid this one may lack. A reading stamped in the future (a corrupted segment) is
/// as suspect as an old one: its age never grew, so the slot stayed held for the rest of the run.
#[test]
fn a_writer_that_died_holding_the_segment_does_not_stop_the_others() {
    for (test, taken) in [("node-dead-writer", 1), ("node-dead-writer-future", u64::MAX / 2)] {
        dead_writer(test, taken);
    }
}

fn dead_writer(test: &str, taken: u64) {
    let job = format!("{test}-{}", std::process::id());
    let steps = scratch(&format!("{test}-steps"));
    let f = |name: &str| steps.join(name).display().to_string();
    // One post (one look at the segment), then, `STUCK_NS` later, more.
    let script = format!(
        "fma 64 1 0 touch {} waitfile {} rdma 65536 1 0 touch {} waitfile {} sleep 20000 rdma 65536 5 0 touch {} \
         waitfile {}",
        f("attached"),
        f("go"),
        f("looked"),
        f("check"),
        f("done"),
        f("end")
    );
    let launch = rank(test, &job, 0, 2, &script).env("AAR_NODE_READING", "1000ms");
    let t = std::thread::spawn(move || launch.run());
    wait_for(&steps.join("attached"));
    let seg = segments(&job);
    assert_eq!(seg.len(), 1, "{seg:?}");
    // A process that has ended, as the writer: its pid in the sequence word (high half) with an
    // odd sequence (low half), and the reading's time `taken` on the node's clock (the segment's
    // first 16 bytes: the sequence word, then that time).
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let mut bytes = std::fs::read(&seg[0]).unwrap();
    let claim = (u64::from(dead_pid) << 32) | 7;
    bytes[..8].copy_from_slice(&claim.to_ne_bytes());
    bytes[8..16].copy_from_slice(&taken.to_ne_bytes());
    std::fs::write(&seg[0], &bytes).unwrap();
    std::fs::write(f("go"), "").unwrap();
    wait_for(&steps.join("looked"));
    let seq = u64::from_ne_bytes(std::fs::read(&seg[0]).unwrap()[..8].try_into().unwrap());
    assert_eq!(seq, claim, "{test}: released at the rank's first sight of it");
    std::fs::write(f("check"), "").unwrap();
    wait_for(&steps.join("done"));
    let after = std::fs::read(&seg[0]).unwrap();
    let seq = u64::from_ne_bytes(after[..8].try_into().unwrap());
    assert_eq!(seq >> 32, 0, "{test}: the dead writer still holds the segment: {seq:#x}");
    assert_eq!(seq & 1, 0, "{test}: left odd: {seq:#x}");
    assert!(seq as u32 > 7, "{test}: no reading was published after the release: {seq:#x}");
    std::fs::write(f("end"), "").unwrap();
    let r = t.join().unwrap();
    r.assert_ok();
    let rec = &r.records()[0];
    check_accounting(rec);
    assert_eq!(counters(rec).1, 0, "only this rank took readings");
    assert!(segments(&job).is_empty());
}

/// Ranks of one node in different PID namespaces (containers that share /dev/shm): a writer's
/// pid means nothing to a rank of another namespace (`kill` answers ESRCH for a live writer, or
/// finds an unrelated process). The segment records its ranks' namespace; a rank that finds
/// another one there says so, once, and from then on the node's ranks release a claim only once
/// they have seen it held for `UNJUDGED_STUCK_NS` (1 s), not `STUCK_NS`, whatever `kill` says.
/// Two ways: a segment file made beforehand with another namespace recorded (the rank under test,
/// rank 0, finds it and prints the warning), and, where `unshare --pid` works (root), a real
/// rank in a new PID namespace that attaches after the rank under test (its record keeps the
/// warning; the rank under test learns of it from the segment). Two writers each: one whose pid
/// this namespace lacks (`kill` says ended: released all the same only at the long bound), and
/// one whose pid is a live process that maps the segment, here the other rank (as a writer's of
/// another namespace may be: released at the long bound, where asking would keep it for good).
#[test]
fn ranks_of_several_pid_namespaces_release_a_claim_only_after_the_long_bound() {
    use std::os::unix::fs::OpenOptionsExt;
    let can_unshare =
        std::process::Command::new("unshare").args(["--pid", "--fork", "true"]).status().is_ok_and(|s| s.success());
    if !can_unshare {
        eprintln!("note: no PID namespace here (unshare --pid): only the recorded-namespace case is run");
    }
    let hows = ["recorded", "unshare"].into_iter().take(1 + usize::from(can_unshare));
    for (how, writer) in hows.flat_map(|h| [(h, "ended"), (h, "mapping")]) {
        let test = &format!("node-pidns-{how}-{writer}");
        let job = format!("{test}-{}", std::process::id());
        let steps = scratch(&format!("{test}-steps"));
        let f = |name: &str| steps.join(name).display().to_string();
        if how == "recorded" {
            // The segment's name, learnt from a rank of another job (the names differ in the job
            // only), made with the namespace `1` recorded (`Segment::pid_ns`, bytes 104 to 112:
            // after the first line and the second's counts and decided bytes).
            let probe = rank(&format!("{test}-probe"), &format!("{job}x"), 0, 2, "rdma 65536 2 0").run();
            probe.assert_ok();
            let probe_path = probe.records()[0]["node"]["shared_reading"].as_str().unwrap().to_string();
            let path = probe_path.replace(&format!("-{job}x-"), &format!("-{job}-"));
            let mut bytes = vec![0u8; 128];
            bytes[104..112].copy_from_slice(&1u64.to_ne_bytes());
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path).unwrap();
            std::io::Write::write_all(&mut file, &bytes).unwrap();
        }
        // One look, `STUCK_NS` (10 ms) and more later more looks, then, past 1 s, more again.
        let script = format!(
            "fma 64 1 0 touch {} waitfile {} rdma 65536 1 0 sleep 20000 rdma 65536 5 0 touch {} waitfile {} \
             sleep 1100000 rdma 65536 5 0 touch {} waitfile {}",
            f("attached"),
            f("go"),
            f("held"),
            f("check"),
            f("done"),
            f("end")
        );
        // Three ranks to the node, of which two come at most: the file stays named.
        let launch = rank(test, &job, 0, 3, &script).env("AAR_NODE_READING", "1000ms");
        let t = std::thread::spawn(move || launch.run());
        wait_for(&steps.join("attached"));
        // The other rank: of a new PID namespace, or of this one.
        let script = format!("fma 64 1 0 touch {} waitfile {}", f("attached1"), f("end"));
        let mut l = rank(&format!("{test}-1"), &job, 1, 3, &script).env("AAR_NODE_READING", "1000ms");
        if how == "unshare" {
            l.wrapper = vec!["unshare".into(), "--pid".into(), "--fork".into()];
        }
        let mate = std::thread::spawn(move || l.run());
        wait_for(&steps.join("attached1"));
        let seg = segments(&job);
        assert_eq!(seg.len(), 1, "{test}: {seg:?}");
        let name = seg[0].file_name().unwrap().to_str().unwrap();
        // The writer's pid: one this namespace lacks, or that of the other rank's process (the
        // one that maps the segment, not its `unshare`).
        let pid = if writer == "ended" {
            let mut dead = std::process::Command::new("true").spawn().unwrap();
            dead.wait().unwrap();
            dead.id()
        } else {
            let mapping = std::fs::read_dir("/proc").unwrap().flatten().find(|e| {
                std::fs::read_to_string(e.path().join("cmdline")).is_ok_and(|c| c.contains(&f("attached1")))
                    && std::fs::read_to_string(e.path().join("maps")).is_ok_and(|m| m.contains(name))
            });
            mapping.unwrap().file_name().to_str().unwrap().parse().unwrap()
        };
        let claim = (u64::from(pid) << 32) | 7;
        let mut bytes = std::fs::read(&seg[0]).unwrap();
        assert_eq!(
            bytes[104..112],
            u64::MAX.to_ne_bytes(),
            "{test}: the segment is not marked with several namespaces"
        );
        bytes[..8].copy_from_slice(&claim.to_ne_bytes());
        bytes[8..16].copy_from_slice(&1u64.to_ne_bytes());
        std::fs::write(&seg[0], &bytes).unwrap();
        let start = std::time::Instant::now();
        std::fs::write(f("go"), "").unwrap();
        wait_for(&steps.join("held"));
        // The rank has seen the claim held for at most the time since "go".
        let held = start.elapsed();
        let seq = u64::from_ne_bytes(std::fs::read(&seg[0]).unwrap()[..8].try_into().unwrap());
        if held < std::time::Duration::from_millis(900) {
            assert_eq!(seq, claim, "{test}: released after {held:?}, short of the long bound");
        } else {
            eprintln!("note: {test}: the rank took {held:?} over its looks, past what the check needs");
        }
        std::fs::write(f("check"), "").unwrap();
        wait_for(&steps.join("done"));
        let seq = u64::from_ne_bytes(std::fs::read(&seg[0]).unwrap()[..8].try_into().unwrap());
        assert_eq!(seq >> 32, 0, "{test}: the claim is still held past the long bound: {seq:#x}");
        assert_eq!(seq & 1, 0, "{test}: left odd: {seq:#x}");
        assert!(seq as u32 > 7, "{test}: no reading was published after the release: {seq:#x}");
        std::fs::write(f("end"), "").unwrap();
        let r = t.join().unwrap();
        r.assert_ok();
        let rec = &r.records()[0];
        check_accounting(rec);
        let said = |rec: &Value| -> Vec<String> {
            let m = rec["messages"].as_array().unwrap();
            m.iter().map(|m| m.as_str().unwrap().to_string()).filter(|m| m.contains("PID namespace")).collect()
        };
        let m = mate.join().unwrap();
        m.assert_ok();
        // Each rank that found another namespace recorded keeps the warning once; rank 0 prints it.
        let kept = said(&m.records()[0]);
        assert_eq!(kept.len(), 1, "{test}: the other rank: {kept:?}");
        let lines: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("PID namespace")).collect();
        if how == "recorded" {
            assert_eq!(lines.len(), 1, "{test}: one warning on stderr: {}", r.stderr);
            assert!(lines[0].contains("a rank before it is in pid:[1]"), "{test}: {}", lines[0]);
            assert_eq!(said(rec), [&lines[0]["aar: ".len()..]], "{test}");
        } else {
            // The rank under test came first: it found its own namespace recorded.
            assert!(lines.is_empty() && said(rec).is_empty(), "{test}: {}", r.stderr);
        }
        assert!(kept[0].contains("1000 ms") && kept[0].contains("one PID namespace"), "{test}: {}", kept[0]);
        assert!(segments(&job).is_empty(), "{test}");
    }
}

/// A window counted without response stalls (the optional fifth event), where this rank's own
/// readings count them, is not taken: a sample moved on by it has none, nor does any sample after
/// it, so the rank's stall ratios would stop subtracting response stalls for the rest of the run.
/// Such a window comes from a rank whose PAPI lacked the event, or from a segment something else
/// wrote: here the test writes it, and then one with response stalls, which the rank takes.
#[test]
fn a_window_without_the_response_stalls_this_rank_counts_is_not_taken() {
    use std::os::unix::fs::FileExt;
    let test = "node-no-rsp-stalled";
    let job = format!("{test}-{}", std::process::id());
    let steps = scratch(&format!("{test}-steps"));
    let f = |name: &str| steps.join(name).display().to_string();
    // The first 64 KiB post publishes this rank's window; then one post after each window the
    // test writes.
    let script = format!(
        "fma 64 1 0 rdma 65536 1 0 touch {} waitfile {} rdma 65536 1 0 touch {} waitfile {} rdma 65536 1 0 \
         touch {} waitfile {}",
        f("published"),
        f("go1"),
        f("done1"),
        f("go2"),
        f("done2"),
        f("end")
    );
    let launch = rank(test, &job, 0, 2, &script).env("AAR_NODE_READING", "1000ms");
    let t = std::thread::spawn(move || launch.run());
    // The segment (`Segment` in src/node.rs): the sequence word, the window's end on the node's
    // clock, 1 when the window has response stalls, then its five counts.
    let write_window = |with_rsp_stalled: u64| {
        let seg = segments(&job);
        assert_eq!(seg.len(), 1, "{seg:?}");
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&seg[0]).unwrap();
        let mut head = [0u8; 16];
        file.read_exact_at(&mut head, 0).unwrap();
        let seq = u64::from_ne_bytes(head[..8].try_into().unwrap());
        let last = u64::from_ne_bytes(head[8..].try_into().unwrap());
        assert!(seq & 1 == 0 && last != 0, "no window published, or a writer holds the segment: {seq:#x} {last}");
        file.write_all_at(&with_rsp_stalled.to_ne_bytes(), 16).unwrap();
        for i in 0..5 {
            file.write_all_at(&100i64.to_ne_bytes(), 24 + 8 * i).unwrap();
        }
        // Ended 10^7 ticks of the node's clock (a few ms) after the latest window, this rank's
        // own: past the slack, and young.
        file.write_all_at(&(last + 10_000_000).to_ne_bytes(), 8).unwrap();
    };
    wait_for(&steps.join("published"));
    write_window(0);
    std::fs::write(f("go1"), "").unwrap();
    wait_for(&steps.join("done1"));
    write_window(1);
    std::fs::write(f("go2"), "").unwrap();
    wait_for(&steps.join("done2"));
    std::fs::write(f("end"), "").unwrap();
    let r = t.join().unwrap();
    r.assert_ok();
    let rec = &r.records()[0];
    check_accounting(rec);
    assert_eq!(counters(rec).1, 1, "only the window with response stalls is taken: {}", rec["counters"]);
    assert!(segments(&job).is_empty());
}

/// A writer's pid that `kill(pid, 0)` still finds is not always a live writer: a rank killed
/// while writing stays a zombie until its parent reaps it (a launcher that waits for its ranks
/// in order reaps it at the end of the job), and a pid may since be another process's. Neither
/// maps the segment: once the slot has been held that way for `STUCK_NS`, the others release
/// it. A live rank that maps the segment keeps it, however long it holds it (a stopped writer
/// may still write: releasing its slot could show its torn window). A claim in the rank's own
/// name (its pid reused from a dead writer, or a corrupted word) is released too: the rank maps
/// the segment, but it knows it is not writing. (The `sleep 20000` between the posts lets
/// `STUCK_NS` pass.)
#[test]
fn a_writer_pid_is_released_unless_that_process_maps_the_segment() {
    for (test, writer) in [
        ("node-zombie-writer", "zombie"),
        ("node-reused-pid", "other"),
        ("node-live-writer", "rank"),
        ("node-own-pid", "self"),
    ] {
        let job = format!("{test}-{}", std::process::id());
        let steps = scratch(&format!("{test}-steps"));
        let f = |name: &str| steps.join(name).display().to_string();
        let script = format!(
            "fma 64 1 0 touch {} waitfile {} rdma 65536 1 0 sleep 20000 rdma 65536 5 0 touch {} waitfile {}",
            f("attached"),
            f("go"),
            f("done"),
            f("end")
        );
        // Three ranks to the node, of which two come at most: the file stays named.
        let launch = rank(test, &job, 0, 3, &script).env("AAR_NODE_READING", "1000ms");
        let t = std::thread::spawn(move || launch.run());
        wait_for(&steps.join("attached"));
        // The writer: a zombie (ended, not reaped), a live process of this user that never
        // mapped the segment (a pid given to another process since the writer died), another
        // rank of the node, which maps it, or the rank itself.
        let mate = (writer == "rank").then(|| {
            let script = format!("fma 64 1 0 touch {} waitfile {}", f("attached1"), f("end"));
            let l = rank(&format!("{test}-1"), &job, 1, 3, &script).env("AAR_NODE_READING", "1000ms");
            let t = std::thread::spawn(move || l.run());
            wait_for(&steps.join("attached1"));
            t
        });
        let seg = segments(&job);
        assert_eq!(seg.len(), 1, "{test}: {seg:?}");
        let mut other = match writer {
            "zombie" => Some(std::process::Command::new("true").spawn().unwrap()),
            "other" => Some(std::process::Command::new("sleep").arg("60").spawn().unwrap()),
            _ => None,
        };
        let pid = match &other {
            Some(p) => p.id(),
            None => {
                let marker = if writer == "rank" { f("attached1") } else { f("go") };
                let maps = std::fs::read_dir("/proc")
                    .unwrap()
                    .flatten()
                    .find(|e| std::fs::read_to_string(e.path().join("cmdline")).is_ok_and(|c| c.contains(&marker)));
                maps.unwrap().file_name().to_str().unwrap().parse().unwrap()
            }
        };
        let state = || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        while writer == "zombie" && !state().contains(") Z ") {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let claim = (u64::from(pid) << 32) | 7;
        let mut bytes = std::fs::read(&seg[0]).unwrap();
        bytes[..8].copy_from_slice(&claim.to_ne_bytes());
        bytes[8..16].copy_from_slice(&1u64.to_ne_bytes());
        std::fs::write(&seg[0], &bytes).unwrap();
        std::fs::write(f("go"), "").unwrap();
        wait_for(&steps.join("done"));
        let after = std::fs::read(&seg[0]).unwrap();
        let seq = u64::from_ne_bytes(after[..8].try_into().unwrap());
        assert!(writer != "zombie" || state().contains(") Z "), "{test}: the zombie was reaped meanwhile");
        std::fs::write(f("end"), "").unwrap();
        if let Some(p) = &mut other {
            let _ = p.kill();
            p.wait().unwrap();
        }
        let r = t.join().unwrap();
        r.assert_ok();
        if let Some(mate) = mate {
            mate.join().unwrap().assert_ok();
            assert_eq!(seq, claim, "{test}: the slot of a live rank that maps the segment was released");
        } else {
            assert_eq!(seq >> 32, 0, "{test}: pid {pid} still holds the segment: {seq:#x}");
            assert_eq!(seq & 1, 0, "{test}: left odd: {seq:#x}");
            assert!(seq as u32 > 7, "{test}: no reading was published after the release: {seq:#x}");
        }
        check_accounting(&r.records()[0]);
        assert!(segments(&job).is_empty(), "{test}");
    }
}

/// Ranks of one node racing: `aar run` with 4 ranks to a node, every rank a reading per post,
/// over the emulator's node-wide counters. No rank ever goes back in time, every reading is
/// accounted for, and the segment lives in the job's folder.
#[test]
fn four_ranks_of_a_node_race_on_one_segment() {
    let mut l = every_post_reads(Launch::driver("node-race", "rdma 65536 300 0")).env("AAR_NODE_READING", "1000ms");
    let aar = aar_command().display().to_string();
    l.wrapper = [aar.as_str(), "run", "-n", "8", "-N", "4", "--"].map(String::from).to_vec();
    let r = l.run();
    r.assert_ok();
    let recs = r.records();
    assert_eq!(recs.len(), 8);
    let mut by_node = std::collections::BTreeMap::<u64, Vec<&Value>>::new();
    for rec in &recs {
        check_accounting(rec);
        assert_eq!(rec["node"]["ranks_per_node"], 4, "{}", rec["node"]);
        assert!(rec["engine"]["windows_valid"].as_u64().unwrap() > 0, "{}", rec["engine"]);
        by_node.entry(rec["node"]["nic_address"].as_u64().unwrap()).or_default().push(rec);
    }
    assert_eq!(by_node.len(), 2);
    for ranks in by_node.values() {
        let paths: std::collections::BTreeSet<&str> =
            ranks.iter().map(|r| r["node"]["shared_reading"].as_str().unwrap()).collect();
        assert_eq!(paths.len(), 1, "one segment per node: {paths:?}");
        assert!(paths.iter().all(|p| p.contains("/aar-job-")), "{paths:?}");
    }
    // The node table aar run writes places both nodes on router 0 of group 0 (4 nodes a router).
    assert!(recs.iter().all(|r| r["node"]["location"] == serde_json::json!([0, 0])), "{recs:?}");
}

fn wait_for(path: &Path) {
    for _ in 0..60_000 {
        if path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("{} never appeared", path.display());
}

#[test]
fn sharing_a_reading_allocates_nothing() {
    // The program's own allocator counts while 64 KiB posts each make a decision and a read under
    // `steady`, with the segment (one process of two on the node, alone on it: its own readings,
    // published, and its decided bytes) and without it (the only rank of its node).
    let count = |ranks: u32| {
        let job = format!("node-allocs-{}-{ranks}", std::process::id());
        let mut l = rank(
            &format!("node-allocs-{ranks}"),
            &job,
            0,
            ranks,
            "rdma 65536 10 0 allocs 1 rdma 65536 2000 0 allocs 0",
        )
        .env("AAR_NODE_READING", "1000ms")
        .env("AAR_MODE", "steady")
        .unset("AAR_EMU_LOG");
        l.program = program_with("driver", &["-DREENTER"]);
        let r = l.run();
        r.assert_ok();
        let rec = &r.records()[0];
        assert_eq!(rec["node"]["shared_reading"].is_string(), ranks > 1, "{}", rec["node"]);
        stdout_field(&r.stdout, "allocations")
    };
    assert_eq!(count(2), count(1), "the shared reading or decided bytes allocated on the decision path");
}

/// The ranks of a node add their decided bytes per side to the segment, and `steady` attributes
/// a window by them: rank 0, pinned to ADAPTIVE3 through the C API, decides on High Bias while
/// rank 1, pinned to ADAPTIVE0, puts 30 times its bytes on Adaptive, so rank 0's window around
/// them measured the node's Adaptive traffic (`steady` learns under both pins: it is `AAR_MODE`).
/// Each rank reads its own counters (`AAR_NODE_READING=1ns`: no reading is young enough to
/// share), so only the decided bytes go through the segment.
#[test]
fn steady_attributes_a_window_by_the_bytes_its_node_mates_decided() {
    let test = "node-decided";
    let job = format!("{test}-{}", std::process::id());
    let steps = scratch(&format!("{test}-steps"));
    let f = |name: &str| steps.join(name).display().to_string();
    // Each rank's first reading (at its first call) comes before the other's first decision.
    let first = format!(
        "fma 64 1 0 touch {} waitfile {} api name ADAPTIVE3 rdma 65536 1 0 touch {} waitfile {} rdma 65536 3 0",
        f("init0"),
        f("init1"),
        f("ready0"),
        f("done1")
    );
    let second = format!(
        "fma 64 1 0 touch {} waitfile {} waitfile {} api name ADAPTIVE0 rdma 65536 30 0 touch {}",
        f("init1"),
        f("init0"),
        f("ready0"),
        f("done1")
    );
    let launch = |r: u32, script: &str| {
        rank(&format!("{test}-{r}"), &job, r, 2, script).env("AAR_NODE_READING", "1ns").env("AAR_MODE", "steady")
    };
    let r1 = launch(1, &second);
    let t1 = std::thread::spawn(move || r1.run());
    let r0 = launch(0, &first).run();
    let r1 = t1.join().unwrap();
    r0.assert_ok();
    r1.assert_ok();
    let (rec0, rec1) = (&r0.records()[0], &r1.records()[0]);
    for rec in [rec0, rec1] {
        check_accounting(rec);
        assert_eq!(counters(rec).1, 0, "no reading shared: {}", rec["counters"]);
    }
    // Rank 0: its first window is its own High Bias bytes alone; the second holds rank 1's 30
    // posts on Adaptive and its own one on High Bias; the last two its own again.
    let e0 = &rec0["engine"];
    assert_eq!(
        (&e0["windows_valid"], &e0["windows_node_side"], &e0["windows_node_mixed"]),
        (&4.into(), &1.into(), &0.into()),
        "{e0}"
    );
    assert_eq!(e0["windows_class_attributed"], 3, "{e0}");
    // Rank 1: its first window holds rank 0's first post and its own, half and half; the rest
    // its own Adaptive bytes alone.
    let e1 = &rec1["engine"];
    assert_eq!((&e1["windows_node_side"], &e1["windows_node_mixed"]), (&0.into(), &1.into()), "{e1}");
    assert!(segments(&job).is_empty());
}

/// A job killed whole (its time limit, `scancel`, an `MPI_Abort`): no rank leaves, and still
/// nothing of it stays in /dev/shm, because the segment's file goes as soon as both ranks of the
/// node have mapped it; they go on sharing it through their mappings.
#[test]
fn a_job_whose_ranks_are_all_killed_leaves_no_segment_behind() {
    let test = "node-killed";
    let job = format!("{test}-{}", std::process::id());
    let steps = scratch(&format!("{test}-steps"));
    let f = |name: &str| steps.join(name).display().to_string();
    let ranks: Vec<_> = (0..2u32)
        .map(|r| {
            // Both ranks post, then wait for the other's readiness; the wrapper then notes what
            // the rank has mapped and kills it (never waiting more than 60 s).
            let other = 1 - r;
            let script = format!("rdma 65536 4 0 touch {} waitfile {} waitfile {}", f(&format!("ready{r}")), f(&format!("ready{other}")), f("never"));
            let mut l = rank(&format!("{test}-{r}"), &job, r, 2, &script).env("AAR_NODE_READING", "1000ms");
            l.wrapper = vec![
                "sh".into(),
                "-c".into(),
                format!(
                    "\"$@\" & pid=$!; n=0; while ! [ -e {a} -a -e {b} ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done; \
                     grep aar-node /proc/$pid/maps >{maps}; kill -9 $pid; wait $pid; exit 0",
                    a = f("ready0"),
                    b = f("ready1"),
                    maps = f(&format!("maps{r}"))
                ),
                "sh".into(),
            ];
            std::thread::spawn(move || l.run())
        })
        .collect();
    for t in ranks {
        let r = t.join().unwrap();
        r.assert_ok();
        assert!(r.records().is_empty(), "a killed rank wrote its summary: {}", r.stderr);
    }
    for r in 0..2 {
        let maps = std::fs::read_to_string(steps.join(format!("maps{r}"))).unwrap();
        assert!(maps.contains(&format!("-{job}-0x1234-")), "rank {r} never mapped the node's segment: {maps:?}");
        assert!(maps.contains("(deleted)"), "rank {r} ran with the segment's file still named: {maps:?}");
    }
    assert_eq!(segments(&job), Vec::<PathBuf>::new(), "the killed job's segment stayed in /dev/shm");
}

/// MPI libraries keep their own shared memory in /dev/shm, and a node's /dev/shm fills up. A
/// segment whose pages the file system cannot give would kill the rank with SIGBUS at its first
/// touch (a file grown by `ftruncate` on tmpfs has no pages yet): the rank must find out before,
/// say so once, read its own counters, and leave no segment behind. Both ways of finding out:
/// fallocate(2), and where a container's seccomp filter refuses it, faulting the pages in through
/// the mapping.
#[test]
fn a_full_dev_shm_leaves_each_rank_its_own_reading() {
    if !std::process::Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("note: no mount namespace here: the full /dev/shm case is not run");
        return;
    }
    let job = format!("full-shm-{}", std::process::id());
    let refuse_fallocate =
        [program("seccomp_errno").display().to_string(), libc::SYS_fallocate.to_string(), libc::EPERM.to_string()];
    for refused in [false, true] {
        let test = format!("node-full-shm-{}", if refused { "no-fallocate" } else { "fallocate" });
        let mut launch = rank(&test, &job, 0, 2, "rdma 65536 8 0");
        // A private /dev/shm of one page, taken whole by another file.
        let setup =
            "mount -t tmpfs -o size=4k tmpfs /dev/shm && dd if=/dev/zero of=/dev/shm/fill bs=4k count=1 2>/dev/null";
        // What is left in it after the rank, on stderr.
        let script = format!("{setup} || exit 97; \"$@\"; rc=$?; echo left: $(ls /dev/shm) >&2; exit $rc");
        launch.wrapper = vec!["unshare".into(), "-m".into(), "sh".into(), "-c".into(), script, "sh".into()];
        if refused {
            launch.wrapper.extend(refuse_fallocate.iter().cloned());
        }
        let r = launch.run();
        assert_ne!(r.status.code(), Some(97), "{test}: namespace setup failed: {}", r.stderr);
        r.assert_ok();
        let recs = r.records();
        assert_eq!(recs.len(), 1, "{test}");
        assert_eq!(recs[0]["node"]["shared_reading"], Value::Null, "{test}: {}", recs[0]["node"]);
        assert_eq!(counters(&recs[0]).1, 0, "{test}: {}", recs[0]["counters"]);
        assert_eq!(recs[0]["engine"]["decisions"], 8, "{test}");
        let lines: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("/dev/shm")).collect();
        assert_eq!(lines.len(), 1, "{test}: one warning that names /dev/shm: {}", r.stderr);
        assert!(lines[0].contains("No space left") && lines[0].contains("its own"), "{test}: {}", lines[0]);
        assert!(r.stderr.contains("left: fill\n"), "{test}: a segment stayed behind: {}", r.stderr);
    }

    // Under `aar run`, whose job folder is there too: /dev/shm has room for the job when it starts
    // (aar run refuses a job that does not fit), then each rank fills it before its program runs:
    // none is left for the emulator's rank files or the node's segment. No rank dies of SIGBUS:
    // a rank that cannot join the job fails its GNI_CdmAttach (GNI_RC_ERROR_RESOURCE, as under a
    // file size limit) and says why, and the driver ends the job with its error.
    let mut launch = rank("node-full-shm-run", &job, 0, 2, "rdma 65536 8 0");
    let setup = "mount -t tmpfs -o size=20m tmpfs /dev/shm";
    let fill = "dd if=/dev/zero of=/dev/shm/fill-$PMI_RANK bs=64k 2>/dev/null; exec \"$@\"";
    let aar = aar_command().display().to_string();
    let script = format!("{setup} || exit 97; exec \"$@\"");
    launch.wrapper =
        ["unshare", "-m", "sh", "-c", &script, "sh", &aar, "run", "-n", "2", "-N", "2", "--", "sh", "-c", fill, "sh"]
            .map(String::from)
            .to_vec();
    let r = launch.run();
    assert_ne!(r.status.code(), Some(97), "namespace setup failed: {}", r.stderr);
    assert_eq!(r.status.code(), Some(2), "the driver's exit code, not a signal's: {}", r.stderr);
    let why = r
        .stderr
        .lines()
        .filter(|l| l.contains("cannot make this rank's shared file of ") && l.contains(" bytes (No space left"));
    assert!(why.count() >= 1, "a rank that cannot join says why: {}", r.stderr);
    assert!(r.stderr.contains("driver: GNI_CdmAttach failed: GNI_RC_ERROR_RESOURCE (3)\n"), "{}", r.stderr);
}

/// A fork child of a rank inherits the segment's mapping and the rank's attachment, and reads
/// the counters for its own posts: when it takes the write slot it must name itself, not its
/// parent (a child that dies writing would hold the slot for as long as its parent lives; a
/// parent that has ended would have the live child's slot released under it, and its torn window
/// taken). `tests/c/writer_papi.c` says, from inside every PAPI read made while the slot is held,
/// whose pid the slot names.
#[test]
fn a_fork_child_that_writes_the_segment_names_itself_not_its_parent() {
    let papi = compile(
        "cc",
        "writer_papi",
        &[root().join("tests/c/writer_papi.c")],
        &["-shared", "-fPIC", "-Wl,--no-as-needed", "-lpapi"],
    );
    let job = format!("node-fork-{}", std::process::id());
    let r = rank("node-fork", &job, 0, 2, "rdma 65536 4 0 fork 4 rdma 65536 2 0")
        .env("AAR_NODE_READING", "1000ms")
        .env("AAR_PAPI_LIBRARY", &papi.display().to_string())
        .run();
    r.assert_ok();
    let child = stdout_field(&r.stdout, "child");
    let writes: Vec<(u64, u64)> = r
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("writer_papi: pid="))
        .map(|l| {
            let (pid, claim) = l.split_once(" claim=").unwrap();
            (pid.parse().unwrap(), claim.parse().unwrap())
        })
        .collect();
    assert!(writes.iter().any(|&(pid, _)| pid == child), "the child never wrote the segment: {}", r.stderr);
    assert!(writes.iter().any(|&(pid, _)| pid != child), "the parent never wrote the segment: {}", r.stderr);
    for (pid, claim) in writes {
        assert_eq!(claim, pid, "pid {pid} wrote the segment in the name of {claim} (the child is {child})");
    }
    // The child never left in the parent's place: the last rank (the parent) removed the file.
    assert!(segments(&job).is_empty());
}

/// A /dev/shm the rank cannot create files in (mounted read-only, or of another user's mode, or
/// missing in a container): the rank says so once, with a fix that fits (not "free space"), reads
/// its own counters and decides as usual.
#[test]
fn a_dev_shm_the_rank_cannot_write_leaves_it_its_own_reading_and_says_why() {
    if !std::process::Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("note: no mount namespace here: the unwritable /dev/shm case is not run");
        return;
    }
    let job = format!("ro-shm-{}", std::process::id());
    for (test, setup, fix) in [
        ("node-ro-shm", "mount -t tmpfs -o ro,size=4k tmpfs /dev/shm", "let this user create files in /dev/shm"),
        (
            "node-no-shm",
            "mount -t tmpfs -o size=4k tmpfs /dev && rmdir /dev/shm 2>/dev/null; true",
            "/dev/shm does not exist",
        ),
    ] {
        let mut launch = rank(test, &job, 0, 2, "rdma 65536 8 0");
        let script = format!("{setup} || exit 97; exec \"$@\"");
        launch.wrapper = vec!["unshare".into(), "-m".into(), "sh".into(), "-c".into(), script, "sh".into()];
        let r = launch.run();
        assert_ne!(r.status.code(), Some(97), "{test}: namespace setup failed: {}", r.stderr);
        r.assert_ok();
        let recs = r.records();
        assert_eq!(recs[0]["node"]["shared_reading"], Value::Null, "{test}: {}", recs[0]["node"]);
        assert_eq!(recs[0]["engine"]["decisions"], 8, "{test}");
        let lines: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("/dev/shm")).collect();
        assert_eq!(lines.len(), 1, "{test}: one warning that names /dev/shm: {}", r.stderr);
        assert!(lines[0].contains("its own") && lines[0].contains(fix), "{test}: {}", lines[0]);
        assert!(!lines[0].contains("Free space"), "{test}: {}", lines[0]);
    }
}

/// Something at the segment's name that is not this user's own segment (another user's file, one
/// other users may write, a FIFO, a folder): the rank leaves it as it is, says so once and reads its own
/// counters. Another user's file mapped would let that user feed the rank's routing, or cut the
/// file short and so kill the rank with SIGBUS at its next touch.
#[test]
fn a_file_at_the_segments_name_that_is_not_this_users_own_is_left_alone_and_said() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    // The segment's name, learnt from a rank of another job: the names differ in the job only.
    let job = format!("foreign-{}", std::process::id());
    let probe = rank("node-foreign-probe", &format!("{job}x"), 0, 2, "rdma 65536 2 0").run();
    probe.assert_ok();
    let probe_path = probe.records()[0]["node"]["shared_reading"].as_str().unwrap().to_string();
    assert!(segments(&format!("{job}x")).is_empty(), "the probe's segment is gone at its exit");
    let path = PathBuf::from(probe_path.replace(&format!("-{job}x-"), &format!("-{job}-")));
    let run_beside = |test: &str, why: &str| {
        let r = rank(test, &job, 0, 2, "rdma 65536 8 0").run();
        r.assert_ok();
        let recs = r.records();
        assert_eq!(recs[0]["node"]["shared_reading"], Value::Null, "{test}: {}", recs[0]["node"]);
        assert_eq!(recs[0]["engine"]["decisions"], 8, "{test}");
        let lines: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("shared segment")).collect();
        assert_eq!(lines.len(), 1, "{test}: one warning: {}", r.stderr);
        assert!(lines[0].contains(why) && lines[0].contains("left as it is"), "{test}: {}", lines[0]);
    };
    // Writable by others, this user's.
    std::fs::write(&path, b"x").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    run_beside("node-foreign-mode", "its mode 666 lets other users write it");
    assert_eq!(std::fs::read(&path).unwrap(), b"x", "untouched");
    // Another user's (only root can give a file away).
    if std::process::Command::new("chown").arg("65534").arg(&path).status().is_ok_and(|s| s.success()) {
        run_beside("node-foreign-owner", "it belongs to user id 65534, not this user");
        assert_eq!(std::fs::read(&path).unwrap(), b"x", "untouched");
    } else {
        eprintln!("note: this user cannot give a file away: the other user's file case is not run");
    }
    std::fs::remove_file(&path).unwrap();
    // A FIFO, which opens at once for reading and writing and would then be grown and removed.
    assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
    run_beside("node-foreign-fifo", "it is not a regular file");
    assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_fifo(), "left in place");
    std::fs::remove_file(&path).unwrap();
    // A folder, which the open refuses (EISDIR) before anything is asked of it: what is at the
    // name is still the cause, not /dev/shm.
    std::fs::create_dir(&path).unwrap();
    run_beside("node-foreign-dir", "it is not a regular file");
    assert!(std::fs::symlink_metadata(&path).unwrap().is_dir(), "left in place");
    std::fs::remove_dir(&path).unwrap();
}

/// Another user's file at the segment's name that this user may not open at all (mode 600, the
/// plain way to squat a name in /dev/shm; any of another user's files where the kernel protects
/// files in sticky folders, `fs.protected_regular`): the open fails with EACCES, and the warning
/// must say that the file at the name is the cause and is left as it is, not send the user to
/// fix /dev/shm, which this user can write in. Run as `nobody` (the file is root's): root opens
/// any file.
#[test]
fn another_user_s_file_this_user_may_not_open_at_the_segment_s_name_is_said_as_such() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 || !have("setpriv") {
        eprintln!("note: not root, or no setpriv: the case of another user's unreadable file is not run");
        return;
    }
    let job = format!("squat-{}", std::process::id());
    let probe = rank("node-squat-probe", &format!("{job}x"), 0, 2, "rdma 65536 2 0").run();
    probe.assert_ok();
    let probe_path = probe.records()[0]["node"]["shared_reading"].as_str().unwrap().to_string();
    // The name nobody's rank of the job uses: the same but for the user id and the job.
    let path = PathBuf::from(
        probe_path.replace("/aar-node-0-", "/aar-node-65534-").replace(&format!("-{job}x-"), &format!("-{job}-")),
    );
    assert_ne!(path.display().to_string(), probe_path);
    std::fs::write(&path, b"x").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut l = rank("node-squat", &job, 0, 2, "rdma 65536 8 0").unset("AAR_EMU_LOG");
    let out = l.dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    l.wrapper = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"].map(String::from).to_vec();
    let r = l.run();
    r.assert_ok();
    let recs = r.records();
    assert_eq!(recs.len(), 1, "{}", r.stderr);
    assert_eq!(recs[0]["node"]["shared_reading"], Value::Null, "{}", recs[0]["node"]);
    assert_eq!(recs[0]["engine"]["decisions"], 8);
    let lines: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("shared segment")).collect();
    assert_eq!(lines.len(), 1, "one warning: {}", r.stderr);
    for part in [
        &path.display().to_string(),
        "its own counters",
        "belongs to user id 0, not this user (65534)",
        "left as it is",
    ] {
        assert!(lines[0].contains(part), "{part:?} in {}", lines[0]);
    }
    assert!(!lines[0].contains("let this user create files"), "not the fault of /dev/shm: {}", lines[0]);
    assert_eq!(std::fs::read(&path).unwrap(), b"x", "untouched");
    std::fs::remove_file(&path).unwrap();
}
