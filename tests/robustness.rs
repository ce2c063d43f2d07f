//! The library inside someone else's job: threads, fork, exit, re-entry, panics, hostile
//! counters and output locations. Each test would fail if its property broke.

mod common;
use common::*;
use serde_json::Value;
use std::process::Command;

fn total_messages(rec: &serde_json::Value) -> u64 {
    rec["modes"].as_object().unwrap().values().map(|m| m["messages"].as_u64().unwrap()).sum()
}

fn can_unshare() -> bool {
    Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success())
}

#[test]
fn eight_threads_posting_a_million_each_lose_nothing() {
    // 64 B posts (the fast path, decisions every 65th) and 8 KiB posts (a decision on every post:
    // the decider lock is fought over) from 8 threads at once.
    for (size, count) in [(64, 1_000_000), (8192, 50_000)] {
        let r =
            Launch::driver(&format!("stress-{size}"), &format!("threads 8 {size} {count}")).unset("AAR_EMU_LOG").run();
        r.assert_ok();
        let posts = 8 * count;
        assert_eq!(stdout_field(&r.stdout, "posts"), posts, "{}", r.stdout);
        assert_eq!(
            stdout_field(&r.stdout, "emu_posts"),
            posts,
            "every post reached the emulator exactly once: {}",
            r.stdout
        );
        let rec = &r.records()[0];
        assert_eq!(total_messages(rec), posts, "the record counts every message exactly once");
        let bytes: u64 = rec["modes"].as_object().unwrap().values().map(|m| m["bytes"].as_u64().unwrap()).sum();
        assert_eq!(bytes, posts * size);
        let decisions = rec["engine"]["decisions"].as_u64().unwrap();
        assert!(decisions > 0 && decisions <= posts, "{decisions}");
        assert_eq!(rec["internal_errors"], 0);
        let undecided = rec["decider"]["undecided_crossings"].as_u64().unwrap();
        if size == 8192 {
            // Every post crosses the threshold: it was decided, found another thread deciding, or
            // went out untouched while the first thread initialised the library.
            let untouched = rec["reasons"]["passthrough"].as_u64().unwrap();
            assert_eq!(decisions + undecided + untouched, posts, "{} {}", rec["decider"], rec["reasons"]);
            assert!(undecided > 0, "8 threads never found the decider taken: {}", rec["decider"]);
            assert_eq!(rec["decider"]["lock"], if lock_can_be_biased() { "bias-ended" } else { "never-biased" });
            let summary = r.aar_lines().into_iter().find(|l| l.contains("decisions")).unwrap();
            let says = format!("{decisions} decisions ({undecided} crossings of the threshold undecided: another");
            assert!(summary.contains(&says), "{summary}");
        }
    }
}

#[test]
fn a_thread_that_decides_after_another_decides_too() {
    // The decider's lock is biased to the first thread that decides; the next one ends the bias
    // (a process barrier) and decides as well, whether the first thread still runs or has ended.
    for (name, commands) in
        [("main-first", "fma 8192 20 0 threads 1 8192 30"), ("thread-first", "threads 1 8192 30 fma 8192 20 0")]
    {
        let r = Launch::driver(name, commands).run();
        r.assert_ok();
        let rec = &r.records()[0];
        assert_eq!(rec["engine"]["decisions"], 50, "{name}: every 8 KiB post crosses the threshold and is decided");
        assert_eq!(rec["decider"]["undecided_crossings"], 0, "{name}");
        assert_eq!(total_messages(rec), 50);
        assert_eq!(rec["internal_errors"], 0);
        assert_eq!(rec["decider"]["lock"], if lock_can_be_biased() { "bias-ended" } else { "never-biased" }, "{name}");
    }
}

#[test]
fn under_a_seccomp_filter_the_lock_is_not_biased_and_membarrier_never_made() {
    // A filter may kill the process for a call it does not list, as this one does for
    // membarrier(2): the decider's lock is then taken with the exchange by both threads.
    let mut launch = Launch::driver("seccomp", "fma 8192 20 0 threads 1 8192 30");
    launch.wrapper = vec![program("seccomp_exec").display().to_string()];
    let r = launch.run();
    r.assert_ok();
    assert_eq!(r.records()[0]["engine"]["decisions"], 50, "both threads decide");
    assert_eq!(r.records()[0]["decider"]["lock"], "never-biased");
}

#[test]
fn first_calls_from_eight_threads_at_once_initialise_once() {
    let r = Launch::driver("init-race", "threads 8 64 2000 fma 64 10 0").env("AAR_THRESHOLD", "lots").run();
    r.assert_ok();
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("AAR_THRESHOLD")).collect();
    assert_eq!(w.len(), 1, "settings parsed once: {:?}", r.aar_lines());
    assert_eq!(stdout_field(&r.stdout, "emu_posts"), 8 * 2000 + 10);
    assert_eq!(r.records().len(), 1);
    // Every post reached the emulator; those made while another thread was initialising went
    // untouched, all others were routed.
    let modes = r.dlvr_modes("GNI_PostFma");
    assert_eq!(modes.len(), 16_010);
    assert!(modes.iter().all(|&m| m == AD0 || m == AD3));
    assert_eq!(&modes[16_000..], &[AD3; 10]);
}

/// A thread made with a small stack (24 KiB, as a runtime may make its progress thread; the driver's
/// own calls take about 15 KiB of it) makes the first uGNI call of the process. The library's
/// start-up needs more than is left (PAPI's initialisation): it runs on a thread of its own, and
/// the program runs on, routed as with a thread of the default stack.
#[test]
fn a_thread_with_a_small_stack_can_start_the_library() {
    let small = Launch::driver("small-stack", "stack 24576 threads 1 8192 20").run();
    small.assert_ok();
    let default = Launch::driver("default-stack", "threads 1 8192 20").run();
    default.assert_ok();
    assert_eq!(stdout_field(&small.stdout, "emu_posts"), 20);
    assert_eq!(small.dlvr_modes("GNI_PostFma"), default.dlvr_modes("GNI_PostFma"));
    let rec = &small.records()[0];
    assert!(rec["counters"]["reads"].as_u64().unwrap() >= 2, "{}", rec["counters"]);
    assert_eq!(small.aar_lines().len(), 1, "the summary only: {:?}", small.aar_lines());
}

/// A signal handler on an alternate signal stack (`sigaltstack`, as runtimes install theirs, of
/// 8 to 64 KiB) makes the process's first call of libaar.so. The start-up needs more than such a
/// stack has (PAPI's initialisation): it runs on a thread of its own, as for a thread made with a
/// small stack, and the handler gets its answer. (The room left was measured against the thread's
/// own stack, far from the signal stack, and the start-up ran past the signal stack's end.)
#[test]
fn a_first_call_from_a_handler_on_a_small_signal_stack_starts_the_library() {
    let program = program_with("altstack_start", &["-laar"]);
    for kib in ["8", "16", "32", "64"] {
        let r = Launch::program(&format!("altstack-{kib}"), program.clone(), kib).run();
        assert!(r.status.success(), "{kib} KiB signal stack: {:?} {}", r.status, r.stderr);
        assert_eq!(r.stdout, "handler policy auto\npolicy auto\n", "{kib} KiB signal stack: {}", r.stderr);
    }
}

/// The start-up that a small-stack thread has run on a helper thread is still the start-up: a call
/// made from inside it (here by a stand-in for libpapi whose loading calls back into the program)
/// is refused at once as from inside the start-up, as on a thread of the default stack; it does not
/// wait for the start-up it is part of (2 s per call, the helper's caller waiting meanwhile) and is
/// not counted as refused while another thread started the library.
#[test]
fn a_call_from_inside_a_start_up_run_for_a_small_stack_is_from_inside_it() {
    let hold = compile("cc", "hold_start", &[root().join("tests/c/hold_start.c")], &["-shared", "-fPIC"]);
    let r = Launch::program("small-stack-inside", program_with("small_stack_start", &["-laar", "-lpthread"]), "")
        .env("AAR_PAPI_LIBRARY", &hold.display().to_string())
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .run();
    assert!(r.status.success(), "{}", r.stderr);
    assert_eq!(r.stdout, "inside begin rc=-1\ninside end rc=-1\nstarted begin rc=0 index 1 end rc=0\n");
    let recs = r.records();
    assert_eq!(recs.len(), 1, "{}", r.stderr);
    assert_eq!(recs[0]["ab"]["refused_begins"], serde_json::json!({"inside_start_up": 1}), "{}", recs[0]["ab"]);
}

#[test]
fn a_forked_child_keeps_routing_with_its_own_counters_record_and_trace() {
    let launch = Launch::driver("fork", "fma 64 3 0 fork 6 forkexec rdma 65536 4 0");
    let trace = launch.dir.join("t.%p.jsonl").display().to_string();
    let r = launch.env("AAR_TRACE", &trace).run();
    r.assert_ok();
    assert!(r.stdout.contains("child posts=12 errors=0") && r.stdout.contains("forkexec status=0"), "{}", r.stdout);
    let recs = r.records();
    assert_eq!(recs.len(), 2, "parent and child, and no record from the exec'd shell");
    let (parent, child): (Vec<_>, Vec<_>) = recs.iter().partition(|r| r["fork_child"] == false);
    let (parent, child) = (parent[0], child[0]);
    assert_ne!(parent["pid"], child["pid"]);
    assert_eq!(total_messages(parent), 7, "the parent's own messages");
    assert_eq!(total_messages(child), 12, "the child's own messages, not the parent's again");
    assert!(child["counters"]["reads"].as_u64().unwrap() >= 1, "the child reads counters: {}", child["counters"]);
    assert_eq!(child["counters"]["backend"], "papi");
    // The child's posts were routed: its 64 KiB posts went out after decisions.
    assert!(child["engine"]["decisions"].as_u64().unwrap() >= 6);
    // One trace per process, no line written twice.
    let traces: Vec<_> = std::fs::read_dir(&r.dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.to_string_lossy().ends_with(".jsonl") && p.file_name().unwrap().to_string_lossy().starts_with("t.")
        })
        .collect();
    assert_eq!(traces.len(), 2);
    let mut lines: Vec<usize> = traces.iter().map(|t| read_jsonl(t).len()).collect();
    lines.sort();
    assert_eq!(lines, [7, 12]);
    assert_eq!(r.aar_lines().iter().filter(|l| l.contains("(forked child)")).count(), 1, "{:?}", r.aar_lines());
}

#[test]
fn exit_while_another_thread_posts_writes_one_whole_record() {
    let r = Launch::driver("exit-posting", "fma 64 3 0 exit_posting").run();
    assert!(r.status.success(), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("exit_posting posts>=1000"));
    let recs = r.records();
    assert_eq!(recs.len(), 1, "one record, valid JSON");
    assert!(total_messages(&recs[0]) >= 1000);
    assert_eq!(r.aar_lines().iter().filter(|l| l.starts_with("aar: policy")).count(), 1, "one summary");
}

#[test]
fn a_thread_cancelled_inside_a_wrapped_collective_unwinds_through_it() {
    // pthread_cancel at a cancellation point inside PMPI_Allreduce: the forced unwind passes
    // through libaar.so's MPI_Allreduce, with the call routed as a call (`steady`) and as an
    // iteration boundary. The process goes on: the wrapper still forwards, posts are still routed,
    // the record is written and says nothing went wrong.
    for (test, env) in [
        ("cancel-steady", vec![("AAR_MODE", "steady")]),
        ("cancel-ab", vec![("AAR_AB", "steady,auto"), ("AAR_AB_BOUNDARY", "MPI_Allreduce")]),
    ] {
        let mut launch = Launch::program(test, program("cancel"), "65536 10");
        for (k, v) in env {
            launch = launch.env(k, v);
        }
        let r = launch.run();
        r.assert_ok();
        assert!(r.stdout.contains("worker: cancelled") && r.stdout.contains("posts=20 errors=0"), "{}", r.stdout);
        assert_eq!(r.dlvr_modes("GNI_PostRdma").len(), 20);
        let recs = r.records();
        assert_eq!(recs.len(), 1, "{test}");
        assert_eq!(recs[0]["internal_errors"], 0, "{test}");
        assert_eq!(total_messages(&recs[0]), 20, "{test}");
        // Every post after the cancellation was decided: nothing the worker held stayed held.
        assert_eq!(recs[0]["engine"]["decisions"], 20, "{test}");
        assert!(r.aar_lines().iter().all(|l| !l.contains("error")), "{test}: {:?}", r.aar_lines());
    }
}

#[test]
fn an_exception_thrown_by_the_mpi_library_reaches_the_program_and_leaves_no_state_behind() {
    // A C++ exception out of PMPI_Alltoall (an MPI error handler that throws) passes through
    // libaar.so's MPI_Alltoall to the program's catch, and the thread is no longer inside
    // MPI_Alltoall: its later posts on the Adaptive side use ADAPTIVE0, not MPI_Alltoall's ADAPTIVE1.
    // Under `steady` the call is also routed and timed as a whole.
    let prog =
        compile("g++", "throw", &[root().join("tests/c/throw.cc"), root().join("tests/c/ab_fortran_posts.c")], &[]);
    for policy in ["auto", "steady"] {
        let r = Launch::program(&format!("throw-{policy}"), prog.clone(), "65536 8").env("AAR_MODE", policy).run();
        r.assert_ok();
        let out = &r.stdout;
        assert!(out.contains("caught: MPI_ERR_OTHER from the error handler") && out.contains("posts ok"), "{out}");
        let modes = r.dlvr_modes("GNI_PostRdma");
        assert_eq!(modes.len(), 16, "{policy}");
        assert_eq!(modes[7], AD0, "{policy}: before the call, Adaptive: {modes:?}");
        assert!(modes[9..].iter().all(|&m| m == AD0), "{policy}: after the exception, still Adaptive: {modes:?}");
        assert_eq!(r.records()[0]["internal_errors"], 0, "{policy}");
    }
}

#[test]
fn with_two_copies_of_the_library_loaded_the_first_routes_and_the_second_forwards() {
    // A module's libaar.so and one set by hand, both in LD_PRELOAD: each call reaches the first
    // copy, which forwards it to the second. The second says so once and forwards untouched.
    let launch = Launch::driver("two-copies", "net 1.2 1.0 2 50 rdma 65536 10 0");
    let copy = launch.dir.join("libaar-copy.so");
    std::fs::copy(libaar(), &copy).unwrap();
    let r = launch.env("LD_PRELOAD", &format!("{}:{}", libaar().display(), copy.display())).run();
    r.assert_ok();
    let lines = r.aar_lines();
    assert_eq!(lines.len(), 2, "the warning and one summary line: {lines:?}");
    let w = lines[0];
    assert!(w.contains("two copies of libaar.so are loaded") && w.contains(&copy.display().to_string()), "{w}");
    assert!(w.contains(&format!("{} routes the calls", libaar().display())), "{w}");
    assert!(lines[1].starts_with("aar: policy auto:"), "{}", lines[1]);
    // The first copy's decisions reach the NIC (Adaptive once it has a window), not the
    // second's (it would have no counters: the first copy's event set holds the component).
    assert!(r.dlvr_modes("GNI_PostRdma")[2..].iter().all(|&m| m == AD0), "{:?}", r.dlvr_modes("GNI_PostRdma"));
    let recs = r.records();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["policy_at_exit"], "auto");
}

#[test]
fn _exit_and_kill_lose_only_their_own_record() {
    let r = Launch::driver("underscore-exit", "fma 64 3 0 _exit").run();
    r.assert_ok();
    assert!(r.records().is_empty());
    assert!(std::fs::read_dir(r.dir.join("out")).unwrap().next().is_none(), "no partial file either");
    // A killed process: nothing of it, and nothing else disturbed.
    // No post log (as in ab.rs's killed job): the kill can land in the write of one of its lines,
    // which the kernel then cuts at a page boundary of the file, and `Launch::run` takes each
    // line whole ("bad JSON line"); this test asserts on the trace and the records.
    let launch = Launch::driver("killed", "fma 64 3 0 exit_posting").unset("AAR_EMU_LOG");
    let out = launch.dir.join("out");
    std::fs::write(out.join("other-rank.json"), "{}").unwrap();
    let mut launch = launch;
    let trace = launch.dir.join("trace.jsonl");
    // Killed once its trace has lines written (however slow the machine, a minute at most).
    launch.wrapper = vec![
        "sh".into(),
        "-c".into(),
        format!(
            "\"$@\" & pid=$!; n=0; while ! [ -s {} ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done; kill -9 $pid; wait $pid; exit 0",
            trace.display()
        ),
        "sh".into(),
    ];
    launch.args = vec!["fma".into(), "64".into(), "100000000".into(), "0".into()];
    let r = launch.env("AAR_TRACE", &trace.display().to_string()).run();
    r.assert_ok();
    let names: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["other-rank.json"]);
    // Its trace keeps the lines written before, whole (the last ones, in the buffer, are lost).
    // Only a write the kill lands in may be cut, and then where the kernel stops a write to a
    // file for a fatal signal: at a page boundary of the file.
    let text = String::from_utf8_lossy(&std::fs::read(&trace).unwrap()).into_owned();
    let whole = text.rfind('\n').map_or(0, |i| i + 1);
    assert!(
        whole == text.len() || text.len().is_multiple_of(4096),
        "{} bytes of trace, cut within a page: {:?}",
        text.len(),
        &text[whole..]
    );
    let lines: Vec<Value> = text[..whole]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad trace line {l:?}: {e}")))
        .collect();
    assert!(!lines.is_empty(), "{} bytes of trace", text.len());
}

#[test]
fn an_allocator_that_re_enters_ugni_does_not_deadlock() {
    let mut launch = Launch::driver(
        "reenter",
        "reenter 1 fma 64 200 0 rdma 65536 40 0 smsg 10 20 ct 64 4 0 api mode 0x80 rdma 8192 10 0 reenter 0",
    );
    launch.program = program_with("driver", &["-DREENTER"]);
    let trace = launch.dir.join("trace.jsonl").display().to_string();
    let r = launch.env("AAR_TRACE", &trace).run();
    r.assert_ok();
    let reentered = stdout_field(&r.stdout, "reentered");
    assert!(reentered > 0, "the allocator did re-enter: {}", r.stdout);
    assert_eq!(stdout_field(&r.stdout, "posts"), stdout_field(&r.stdout, "emu_posts"), "{}", r.stdout);
}

#[test]
fn a_panic_inside_the_library_never_reaches_the_application() {
    // Before the real call: the post still goes out, once, exactly as the caller wrote it.
    let r = Launch::driver("panic-before", "fma 64 3 0 rdma 65536 5 0x100 fma 64 3 0")
        .env("AAR_TEST_PANIC", "before-forward")
        .run();
    r.assert_ok();
    assert!(r.stdout.contains("posts=11 errors=0 emu_posts=11"), "{}", r.stdout);
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), [0x100; 5], "forwarded unchanged, flags and all");
    assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD3; 6], "below the threshold nothing panics");
    let errors: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("internal error")).collect();
    assert_eq!(errors.len(), 1, "reported once: {errors:?}");
    assert!(errors[0].contains("forwarded unchanged") && errors[0].contains("src/route.rs"), "{}", errors[0]);
    assert_eq!(r.records()[0]["internal_errors"], 5);
    // The record counts what went out: the 5 panicked posts with the caller's routing (ADAPTIVE0
    // and its flag), passed through, beside the 6 routed ones.
    let rec = &r.records()[0];
    assert_eq!(
        rec["apis"]["uGNI"]["modes"],
        serde_json::json!({"ADAPTIVE0": {"messages": 5, "bytes": 5 * 65536}, "ADAPTIVE3": {"messages": 6, "bytes": 6 * 64}}),
        "{rec}"
    );
    assert_eq!(rec["reasons"]["passthrough"], 5, "{}", rec["reasons"]);
    // After the real call: not forwarded a second time.
    let r = Launch::driver("panic-after", "rdma 65536 5 0").env("AAR_TEST_PANIC", "after-forward").run();
    r.assert_ok();
    assert!(r.stdout.contains("posts=5 errors=0 emu_posts=5"), "{}", r.stdout);
    assert!(r.dlvr_modes("GNI_PostRdma").iter().all(|&m| m == AD3), "routed before the panic");
}

#[test]
fn papi_shut_down_under_the_library_is_one_warning_then_high_bias() {
    let r = Launch::driver("papi-shutdown", "rdma 65536 12 0 papi_shutdown rdma 65536 12 0").run();
    r.assert_ok();
    assert!(r.stdout.contains("papi_shutdown done"), "{}", r.stdout);
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("PAPI was shut down") && w[0].contains("ADAPTIVE3 (fixed)"), "{}", w[0]);
    let modes = r.dlvr_modes("GNI_PostRdma");
    assert!(modes[12..].iter().skip(8).all(|&m| m == AD3), "fixed High Bias after the failed read: {modes:?}");
    let counters = &r.records()[0]["counters"];
    assert_eq!(counters["read_failures"], 1);
    // The record says why, in the warning's first words.
    let why = counters["unavailable_because"].as_str().unwrap();
    assert!(why.contains("PAPI was shut down") && w[0].starts_with(&format!("aar: {why}")), "{why} / {}", w[0]);
}

/// `PAPI_shutdown` destroys every event set, libaar.so's too; a program that then initialises PAPI
/// again and makes a set of its own gets the number libaar.so's set had (PAPI gives the lowest
/// free one). libaar.so must not read the program's set as its NIC counters (it did, 28 reads
/// without a failure), nor start its set again from the `PAPI_stop` calls inside the shutdown: its
/// counters are given up at the program's `PAPI_shutdown` (or, shut down behind libaar.so's back,
/// at its new `PAPI_library_init`), with the shutdown's one warning, and the program measures as
/// it asked.
#[test]
fn papi_shut_down_and_initialised_again_is_not_read_as_the_nic_counters() {
    let program = program_with("driver", &["-DWITH_PAPI", "-lpapi"]);
    let event = sde_events_setting().split(',').next().unwrap().to_string();
    for (name, shutdown) in [("papi-reinit-behind", "papi_shutdown"), ("papi-reinit", "papi shutdown")] {
        let script = format!("rdma 65536 12 0 {shutdown} papi start {event} rdma 65536 24 0 papi stop rdma 65536 4 0");
        let r = Launch::program(name, program.clone(), &script).env("AAR_WINDOW", "1").run();
        r.assert_ok();
        assert!(r.stdout.contains("papi start rc=0\n") && r.stdout.contains("papi stop rc=0\n"), "{}", r.stdout);
        let w: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
        assert_eq!(w.len(), 1, "{name}: {w:?}");
        assert!(w[0].contains("PAPI was shut down") && w[0].contains("ADAPTIVE3 (fixed)"), "{name}: {}", w[0]);
        let modes = r.dlvr_modes("GNI_PostRdma");
        assert!(modes[12..].iter().all(|&m| m == AD3), "{name}: fixed High Bias after the shutdown: {modes:?}");
        let counters = &r.records()[0]["counters"];
        assert!(counters["unavailable_because"].as_str().unwrap().contains("PAPI was shut down"), "{counters}");
        assert_eq!(counters["gave_way"], 0, "{name}: {counters}");
        // The start-up's read and one per post before the shutdown, none after it.
        assert_eq!(counters["reads"], 13, "{name}: {counters}");
    }

    // Shut down while libaar.so's counters were stepped aside for the program's set: the warning
    // that promised them back at that set's stop is followed by one that says they do not come,
    // and the program's new set (libaar.so's old number) counts as the program asked.
    let script = format!(
        "rdma 65536 12 0 papi start {event} rdma 65536 12 0 papi shutdown papi start {event} rdma 65536 12 0 \
         papi stop rdma 65536 4 0"
    );
    let r = Launch::program("papi-reinit-aside", program, &script).run();
    r.assert_ok();
    assert_eq!(r.stdout.matches("papi start rc=0\n").count(), 2, "{}", r.stdout);
    assert!(r.stdout.contains("papi stop rc=0\n"), "{}", r.stdout);
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("stopped its counters to let it count"), "{}", w[0]);
    assert!(w[1].contains("PAPI was shut down") && w[1].contains("do not count again"), "{}", w[1]);
    assert!(w[1].contains("Shut PAPI down only after the application's last send"), "{}", w[1]);
    let counters = &r.records()[0]["counters"];
    assert!(counters["unavailable_because"].as_str().unwrap().contains("PAPI was shut down"), "{counters}");
    assert!(r.dlvr_modes("GNI_PostRdma")[12..].iter().all(|&m| m == AD3), "{:?}", r.dlvr_modes("GNI_PostRdma"));
}

/// tests/c/flaky_papi.c, a PAPI for AAR_PAPI_LIBRARY over the real libpapi.
fn flaky_papi() -> std::path::PathBuf {
    compile(
        "cc",
        "flaky_papi",
        &[root().join("tests/c/flaky_papi.c")],
        &["-shared", "-fPIC", "-Wl,--no-as-needed", "-lpapi"],
    )
}

/// A PAPI whose read fails now and then (a component's read interrupted under it): two failures
/// in a row are tried again at the next decisions, and routing stays automatic with no warning;
/// three in a row give the counters up, with one warning, as a PAPI that went away.
#[test]
fn a_read_that_fails_is_tried_again_and_three_in_a_row_give_the_counters_up() {
    let flaky = flaky_papi();
    let run = |name: &str, fail: &str| {
        Launch::driver(name, "rdma 65536 40 0")
            .env("AAR_WINDOW", "1")
            .env("AAR_PAPI_LIBRARY", &flaky.display().to_string())
            .env("FLAKY_PAPI_FAIL", fail)
            .run()
    };
    // Reads 10 and 11 fail, or read 20 alone: never three in a row.
    for (name, fail, failures) in [("papi-flaky-2", "10 2", 2), ("papi-flaky-1", "20 1", 1)] {
        let r = run(name, fail);
        r.assert_ok();
        let w: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
        assert!(w.is_empty(), "{name}: {w:?}");
        // The summary line at exit says them, where no warning did.
        let summary = r.aar_lines().into_iter().find(|l| l.starts_with("aar: policy")).unwrap();
        assert!(summary.contains(&format!(" counter reads ({failures} failed)")), "{name}: {summary}");
        let rec = &r.records()[0];
        let counters = &rec["counters"];
        assert_eq!(counters["read_failures"], failures, "{name}: {counters}");
        assert_eq!(counters["unavailable_because"], serde_json::Value::Null, "{name}: {counters}");
        assert_eq!(rec["policy_at_exit"], "auto", "{name}");
        assert!(r.dlvr_modes("GNI_PostRdma")[30..].contains(&AD0), "{name}: automatic to the end");
    }
    // Every other read from the 10th on: never two in a row, so never given up, but aar report
    // names the rank (more than 1 % of its reads failed).
    let r = run("papi-flaky-every-other", "10 0 2");
    r.assert_ok();
    assert!(r.aar_lines().iter().all(|l| l.starts_with("aar: policy")), "{:?}", r.aar_lines());
    let failed = r.records()[0]["counters"]["read_failures"].as_u64().unwrap();
    assert!((14..=17).contains(&failed), "{failed}");
    let out = Command::new(aar_command()).arg("report").arg(r.dir.join("out")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("of the counter reads failed") && stderr.contains("tried again"), "{stderr}");
    // From read 10 on, every read fails: given up at the third.
    let r = run("papi-flaky-all", "10 0");
    r.assert_ok();
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("PAPI_read failed") && w[0].contains("ADAPTIVE3 (fixed)"), "{}", w[0]);
    let counters = &r.records()[0]["counters"];
    assert_eq!(counters["read_failures"], 3, "{counters}");
    assert!(counters["unavailable_because"].as_str().unwrap().contains("PAPI_read failed"), "{counters}");
    let modes = r.dlvr_modes("GNI_PostRdma");
    assert!(modes[14..].iter().all(|&m| m == AD3), "fixed High Bias once given up: {modes:?}");
}

/// A fork while another thread has been inside a decision longer than the fork waits for the
/// decider (here: in a counter read that holds a lock of PAPI's, as libsde's read holds its
/// spinlock): the child must not read the counters (the lock is held by a thread it does not
/// have, for good) nor trust the engine it inherited. It routes without counters, says so once,
/// and its record says why; the parent keeps its counters.
#[test]
fn a_fork_while_a_thread_is_stuck_in_a_counter_read_leaves_the_child_without_counters_not_hung() {
    let flaky = flaky_papi();
    let r = Launch::driver("fork-mid-read", "rdma 65536 2 0 forkmidread 3 400")
        .env("AAR_WINDOW", "1")
        .env("AAR_PAPI_LIBRARY", &flaky.display().to_string())
        .run();
    r.assert_ok();
    assert!(r.stdout.contains("forkmidread child=exited status=0"), "{}", r.stdout);
    assert!(r.stdout.contains("child posts=6 errors=0"), "{}", r.stdout);
    let said: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("forked while a thread")).collect();
    assert_eq!(said.len(), 1, "{:?}", r.aar_lines());
    assert!(
        said[0].contains("100 ms") && said[0].contains("ADAPTIVE3 (fixed)") && said[0].contains("Fork while no other"),
        "{}",
        said[0]
    );
    let recs = r.records();
    assert_eq!(recs.len(), 2, "parent and child");
    let (parent, child): (Vec<_>, Vec<_>) = recs.iter().partition(|r| r["fork_child"] == false);
    let (parent, child) = (&parent[0]["counters"], &child[0]["counters"]);
    assert_eq!(child["reads"], 0, "{child}");
    assert!(child["unavailable_because"].as_str().unwrap().contains("forked while a thread"), "{child}");
    assert_eq!(parent["unavailable_because"], serde_json::Value::Null, "{parent}");
    assert!(parent["reads"].as_u64().unwrap() >= 3, "{parent}");
}

#[test]
fn decreasing_wrapped_and_absurd_counters_are_discarded_and_routing_goes_on() {
    // Counters set backwards, wrapped to the bottom of i64, and pushed to an absurd latency,
    // between windows of real traffic (AAR_WINDOW=1: a read after every decision).
    let script = "net 1.2 1.0 2 50 rdma 8192 6 0 \
                  cset 10 10 10 10 10 rdma 8192 3 0 \
                  cset 9223372036854775800 0 0 100 0 rdma 8192 2 0 cset -9223372036854775800 0 0 100 0 rdma 8192 3 0 \
                  cadd 1 0 9000000000000000 1 0 rdma 8192 3 0 \
                  rdma 8192 10 0";
    let r = Launch::driver("hostile-counters", script).env("AAR_WINDOW", "1").run();
    r.assert_ok();
    let rec = &r.records()[0];
    let e = &rec["engine"];
    assert!(e["windows_discarded_decreasing"].as_u64().unwrap() >= 2, "{e}");
    assert!(e["windows_discarded_absurd"].as_u64().unwrap() >= 1, "{e}");
    assert!(e["window_latency_us_sum"].as_f64().unwrap().is_finite());
    let modes = r.dlvr_modes("GNI_PostRdma");
    assert!(modes[modes.len() - 5..].iter().all(|&m| m == AD0), "routing recovers on the next good windows: {modes:?}");
    assert!(
        r.aar_lines().iter().all(|l| l.starts_with("aar: policy")),
        "bad windows are not warnings: {:?}",
        r.aar_lines()
    );
}

#[test]
fn output_problems_are_one_warning_and_never_touch_anything_else() {
    // A symlink planted at the record's final name: not followed, not replaced.
    let launch = Launch::driver("record-symlink", "fma 64 3 0");
    let victim = launch.dir.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let out = launch.dir.join("out");
    let mut launch = launch;
    launch.wrapper = vec![
        "sh".into(),
        "-c".into(),
        format!(
            "ln -s {v} {o}/aar.nojob.norank.$$.json; ln -s {v} {o}/aar.nojob.norank.$$.json.partial; exec \"$@\"",
            v = victim.display(),
            o = out.display()
        ),
        "sh".into(),
    ];
    let r = launch.run();
    r.assert_ok();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("could not write the record")).collect();
    assert_eq!(w.len(), 1, "{:?}", r.aar_lines());
    // An earlier run's record of the same name (no job id, the same rank and pid): kept, and the
    // warning says how to keep runs apart.
    let r = Launch::driver("record-taken", "fma 64 3 0").with_earlier_record().run();
    r.assert_ok();
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("could not write the record")).collect();
    assert_eq!(w.len(), 1, "{:?}", r.aar_lines());
    assert!(w[0].contains("already there") && w[0].contains("give each run its own AAR_OUTPUT_DIR"), "{}", w[0]);
    earlier_record_kept(&r);
    // A job id that tries to climb out of the folder stays inside it.
    let r = Launch::driver("record-jobid", "fma 64 3 0").env("SLURM_JOB_ID", "../../escape").run();
    r.assert_ok();
    assert_eq!(r.records().len(), 1);
    assert!(!r.dir.join("escape").exists() && !r.dir.parent().unwrap().join("escape").exists());

    if !can_unshare() {
        eprintln!("note: no mount namespace here: the read-only and full-disk cases are not run");
        return;
    }
    // Read-only and full file systems, in a private mount namespace.
    for (name, setup) in [
        ("record-readonly", "mount --bind \"$o\" \"$o\" && mount -o remount,ro,bind \"$o\""),
        ("record-full", "mount -t tmpfs -o size=64k tmpfs \"$o\" && dd if=/dev/zero of=\"$o/fill\" bs=4k count=64 2>/dev/null; true"),
    ] {
        let launch = Launch::driver(name, "fma 64 3 0 rdma 65536 3 0");
        let out = launch.dir.join("out");
        let mut launch = launch;
        launch.wrapper = vec!["unshare".into(), "-m".into(), "sh".into(), "-c".into(), format!("o={}; {setup} || exit 97; exec \"$@\"", out.display()), "sh".into()];
        let r = launch.run();
        assert_ne!(r.status.code(), Some(97), "{name}: namespace setup failed: {}", r.stderr);
        r.assert_ok();
        let lines: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
        assert_eq!(lines.len(), 1, "{name}: one warning: {lines:?}");
        assert!(lines[0].contains("AAR_OUTPUT_DIR") || lines[0].contains("record"), "{name}: {}", lines[0]);
        assert!(r.stdout.contains("errors=0"), "{name}: the application continues");
    }
}

#[test]
fn the_below_threshold_path_allocates_nothing_and_makes_no_system_call() {
    // Allocations: counted by the program's own allocator while 64 B posts run, with and without
    // the library (the emulator's own allocations, if any, are in both), and inside an A/B
    // iteration (its boundaries, which may allocate, are outside the counted posts).
    let count = |preload: bool, ab: bool| {
        let script = "iter begin fma 64 100 0 iter end iter begin allocs 1 fma 64 20000 0 allocs 0 iter end";
        let mut launch = Launch::driver(&format!("allocs-{preload}-{ab}"), script).unset("AAR_EMU_LOG");
        launch.program = program_with("driver", &["-DREENTER"]);
        if ab {
            launch = launch.env("AAR_AB", "ADAPTIVE0,ADAPTIVE3,auto");
        }
        if !preload {
            launch = launch.no_preload();
        }
        let r = launch.run();
        r.assert_ok();
        if ab {
            assert_eq!(r.records()[0]["ab"]["iterations"], 2, "the A/B run did run its iterations");
        }
        stdout_field(&r.stdout, "allocations")
    };
    let without = count(false, false);
    assert_eq!(count(true, false), without, "libaar.so allocated on the below-threshold path");
    assert_eq!(count(true, true), without, "libaar.so allocated on the below-threshold path of an A/B iteration");

    // System calls the library adds (over the same program without it) do not grow with the
    // number of posts: 20,000 versus 200,000 (a call per decision would add thousands).
    let Ok(st) = Command::new("strace").arg("-V").output() else { panic!("strace is missing: run scripts/setup") };
    assert!(st.status.success());
    // The posts run in iteration 0 of an A/B experiment whose first policy is the default one
    // (auto): the posts' path is the default one, with the A/B machinery on.
    let syscalls = |posts: u64, preload: bool| {
        let script = format!("iter begin fma 64 {posts} 0 iter end");
        let mut launch = Launch::driver(&format!("syscalls-{posts}-{preload}"), &script)
            .unset("AAR_EMU_LOG")
            .env("AAR_SUMMARY", "0")
            .env("AAR_AB", "auto,ADAPTIVE3")
            .unset("AAR_OUTPUT_DIR");
        if !preload {
            launch = launch.no_preload();
        }
        let log = launch.dir.join("strace.txt");
        launch.wrapper = vec!["strace".into(), "-f".into(), "-c".into(), "-o".into(), log.display().to_string()];
        let r = launch.run();
        r.assert_ok();
        let text = std::fs::read_to_string(&log).unwrap();
        let total = text.lines().find(|l| l.trim_end().ends_with("total")).unwrap_or_else(|| panic!("{text}"));
        total.split_whitespace().nth(3).unwrap().parse::<i64>().unwrap_or_else(|_| panic!("{total}"))
    };
    let added = |posts| syscalls(posts, true) - syscalls(posts, false);
    let (few, many) = (added(20_000), added(200_000));
    assert!(many < few + 50, "system calls added by libaar.so grow with posts: {few} for 20k posts, {many} for 200k");
}

/// Batch systems pass the user's limits on to the job, `ulimit -f` among them, and a write past
/// it raises SIGXFSZ, whose default action ends the process. The library's trace, record and
/// lines on stderr fail instead, with the limit named as the fix, and the application goes on.
/// What the trace holds ends with a whole line.
#[test]
fn the_job_file_size_limit_ends_the_library_files_never_the_application() {
    // The trace and the record grow past a limit of 2 or 4 KiB (the emulator's own log is not
    // ours).
    let launch = Launch::driver("fsize-files", "rdma 65536 300 0").unset("AAR_EMU_LOG");
    let trace = launch.dir.join("trace.jsonl");
    let mut launch = launch.env("AAR_TRACE", &trace.display().to_string());
    launch.wrapper = ["sh", "-c", "ulimit -f 4 && exec \"$@\"", "sh"].map(String::from).to_vec();
    let r = launch.run();
    r.assert_ok();
    assert_eq!(stdout_field(&r.stdout, "errors"), 0, "{}", r.stdout);
    // (`ulimit -f` counts 512 or 1024 bytes, by the shell.)
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!((1024..=4096).contains(&text.len()), "the trace up to the limit: {} bytes", text.len());
    // Cut back to its last whole line: a JSON Lines reader takes every line.
    assert!(text.ends_with('\n'), "the trace ends with a whole line: {text}");
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    let lines = r.aar_lines();
    for what in ["AAR_TRACE", "record"] {
        let line =
            lines.iter().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no warning about the {what}: {lines:?}"));
        assert!(line.contains("File too large") && line.contains("ulimit -f"), "{line}");
    }

    // The iteration record's first write (its header and a second of rows, 3000 here) past the
    // limit: the rows that fit stay, whole, and the summary record names the file.
    let launch = Launch::driver("fsize-rows", "fma 64 1 0 iterloop 3000")
        .unset("AAR_EMU_LOG")
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3");
    let mut launch = launch;
    launch.wrapper = ["sh", "-c", "ulimit -f 40 && exec \"$@\"", "sh"].map(String::from).to_vec();
    let r = launch.run();
    r.assert_ok();
    let rec = &r.records()[0];
    let file = rec["ab"]["iterations_file"].as_str().unwrap_or_else(|| panic!("no iteration record: {}", r.stderr));
    let text = std::fs::read_to_string(r.dir.join("out").join(file)).unwrap();
    assert!(text.ends_with('\n') && text.lines().count() > 2, "{} bytes", text.len());
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("iteration record")).collect();
    assert!(said.iter().any(|l| l.contains("File too large") && l.contains("ulimit -f")), "{said:?}");

    // Stderr is a log file the limit has already stopped: the library's lines go nowhere.
    let launch = Launch::driver("fsize-stderr", "rdma 65536 8 0").unset("AAR_EMU_LOG").env("AAR_WINDOWS", "1");
    let log = launch.dir.join("stderr.log");
    let mut launch = launch;
    let script = format!("head -c 4096 /dev/zero >{0} && ulimit -f 4 && exec \"$@\" 2>>{0}", log.display());
    launch.wrapper = vec!["sh".into(), "-c".into(), script, "sh".into()];
    let r = launch.run();
    r.assert_ok();
    assert_eq!(stdout_field(&r.stdout, "errors"), 0, "{}", r.stdout);
    // The warning about the misspelt variable and the summary went nowhere (the record too).
    assert_eq!(std::fs::metadata(&log).unwrap().len(), 4096);
}

/// A program that keeps as many files open as its limit allows (sockets of a large job, a file
/// per rank) leaves none for the library's records: the warning names the limit (`ulimit -n`),
/// not the output folder, which is fine.
#[test]
fn with_every_descriptor_taken_the_warning_names_the_open_file_limit() {
    let mut launch = Launch::driver("fdfull", "rdma 65536 10 0 fdfull rdma 65536 10 0 iterloop 10")
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .unset("AAR_EMU_LOG");
    launch.wrapper = ["sh", "-c", "ulimit -n 256 && exec \"$@\"", "sh"].map(String::from).to_vec();
    let r = launch.run();
    r.assert_ok();
    assert!(stdout_field(&r.stdout, "fds") > 0, "{}", r.stdout);
    assert_eq!((stdout_field(&r.stdout, "posts"), stdout_field(&r.stdout, "errors")), (20, 0), "{}", r.stdout);
    let lines = r.aar_lines();
    let warning = lines.iter().find(|l| l.contains("iteration record")).unwrap_or_else(|| panic!("{lines:?}"));
    assert!(warning.contains("Too many open files") && warning.contains("ulimit -n"), "{warning}");
    assert!(!lines.iter().any(|l| l.contains("writable file system")), "{lines:?}");
}

/// A program at its memory limit (`ulimit -v`, a batch system's memory limit, a node with strict
/// overcommit) sees malloc return NULL and copes. libaar.so's own needs must not then end it: its
/// first post (the thread's counters), an A/B experiment's iteration rows and the record at exit
/// take their memory from the library's reserve, and the program keeps its exit status and its
/// output.
#[test]
fn a_program_at_its_memory_limit_keeps_running_and_gets_its_record() {
    let r = Launch::driver("memfull", "memfull rdma 65536 100 0 iterloop 20000")
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3,auto")
        // The emulator's post log allocates on every post.
        .unset("AAR_EMU_LOG")
        .run();
    r.assert_ok();
    assert!(stdout_field(&r.stdout, "memfull bytes") > 0, "{}", r.stdout);
    assert_eq!(stdout_field(&r.stdout, "posts"), 100, "{}", r.stdout);
    assert_eq!(stdout_field(&r.stdout, "errors"), 0, "{}", r.stdout);
    assert!(r.stdout.contains("iterloop failed=0"), "{}", r.stdout);
    let warning =
        r.aar_lines().into_iter().find(|l| l.contains("malloc refused")).unwrap_or_else(|| panic!("{}", r.stderr));
    assert!(warning.contains("reserve") && warning.contains("ulimit -v"), "{warning}");
    let record = r.records().pop().expect("the record");
    assert_eq!(total_messages(&record), 100);
    assert!(record["messages"].as_array().unwrap().iter().any(|m| m.as_str().unwrap().contains("malloc refused")));
    let (_, rows) = iteration_records(&r.dir.join("out")).remove(0);
    assert_eq!(rows.len(), 20000, "every row written");
}

/// A program that measures with PAPI itself (or a tool in it: Score-P, TAU, HPCToolkit) counts
/// on the PAPI component that serves the NIC counters too, and PAPI counts one event set per
/// component at a time. The program's measurement comes first. Started after libaar.so's event
/// set, libaar.so stops its own and steps aside (one warning, the first time), and counts again,
/// with the policy it fell back from, when the program stops its set. Started before, libaar.so's
/// waits and starts when the program stops its set. Either way routing falls back as without
/// counters while the program counts.
#[test]
fn the_programs_own_papi_measurement_comes_first() {
    let program = program_with("driver", &["-DWITH_PAPI", "-lpapi"]);
    let event = sde_events_setting().split(',').next().unwrap().to_string();

    // Twice around: auto, the program's set (fixed), auto again, the program's set again.
    let script = format!(
        "rdma 65536 12 0 papi start {event} rdma 65536 12 0 papi stop rdma 65536 24 0 \
         papi start {event} rdma 65536 4 0 papi stop"
    );
    let r = Launch::program("papi-own-after", program.clone(), &script).run();
    r.assert_ok();
    assert_eq!(r.stdout.matches("papi start rc=0\n").count(), 2, "{}", r.stdout);
    assert_eq!(r.stdout.matches("papi stop rc=0\n").count(), 2, "{}", r.stdout);
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
    assert_eq!(w.len(), 1, "one warning, the first time: {w:?}");
    assert!(w[0].contains("stopped its counters to let it count, until the application stops that set"), "{}", w[0]);
    assert!(w[0].contains("ADAPTIVE3 (fixed)") && w[0].contains("Leave that component's events out"), "{}", w[0]);
    let modes = r.dlvr_modes("GNI_PostRdma");
    assert_eq!(modes.len(), 52);
    assert!(modes[..12].contains(&AD0), "auto before: {modes:?}");
    assert!(modes[12..24].iter().all(|&m| m == AD3), "fixed High Bias while the program counts: {modes:?}");
    assert!(modes[24..48].contains(&AD0), "auto again after its stop: {modes:?}");
    assert!(modes[48..].iter().all(|&m| m == AD3), "fixed again: {modes:?}");
    let rec = &r.records()[0];
    let counters = &rec["counters"];
    assert_eq!((counters["gave_way"].as_u64(), counters["read_failures"].as_u64()), (Some(2), Some(0)), "{counters}");
    assert_eq!(counters["unavailable_because"], serde_json::Value::Null, "counting again at exit: {counters}");
    assert_eq!(rec["policy_at_exit"], "auto");

    // The program's set first: libaar.so's waits for it to stop, then counts.
    let script = format!("papi start {event} rdma 65536 12 0 papi stop rdma 65536 48 0");
    let r = Launch::program("papi-own-before", program.clone(), &script).env("AAR_WINDOW", "1").run();
    r.assert_ok();
    assert!(r.stdout.contains("papi start rc=0\n") && r.stdout.contains("papi stop rc=0\n"), "{}", r.stdout);
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("already counts") && w[0].contains("ADAPTIVE3 (fixed)"), "{}", w[0]);
    assert!(w[0].contains("once the application stops that set"), "{}", w[0]);
    let modes = r.dlvr_modes("GNI_PostRdma");
    assert!(modes[..12].iter().all(|&m| m == AD3), "fixed while the program's set counts: {modes:?}");
    assert!(modes[12..].contains(&AD0), "automatic again after its stop: {modes:?}");
    let rec = &r.records()[0];
    let counters = &rec["counters"];
    assert_eq!(counters["unavailable_because"], serde_json::Value::Null, "counting at exit: {counters}");
    assert!(counters["reads"].as_u64().unwrap() >= 40, "{counters}");
    assert_eq!(rec["policy_at_exit"], "auto");

    // Without libaar.so the same program measures as it does with it.
    let r = Launch::program("papi-own-alone", program, &format!("rdma 65536 12 0 papi start {event} papi stop"))
        .no_preload()
        .run();
    r.assert_ok();
    assert!(r.stdout.contains("papi start rc=0\n"), "{}", r.stdout);
}

/// libpapi is not safe to initialise from two threads at once: a program's `PAPI_library_init`
/// while another thread's first call has libaar.so opening PAPI waits for libaar.so to finish.
/// flaky_papi makes libaar.so's set-up take a second (its first `PAPI_is_initialized`) and says
/// when libaar.so initialises PAPI: it does, the program's call coming after it.
#[test]
fn the_programs_papi_initialisation_waits_for_libaar_s_set_up_on_another_thread() {
    let flaky = flaky_papi();
    let program = program_with("papi_init_race", &["-lpapi", "-lpthread"]);
    let r = Launch::program("papi-init-race", program, "")
        .env("AAR_PAPI_LIBRARY", &flaky.display().to_string())
        .env("FLAKY_PAPI_SLOW_START", "1000")
        .run();
    r.assert_ok();
    assert!(r.stdout.contains("PAPI_library_init ok"), "{}", r.stdout);
    assert_eq!(
        r.stderr.matches("flaky_papi: PAPI_library_init").count(),
        1,
        "libaar.so initialised PAPI: {}",
        r.stderr
    );
    assert!(r.aar_lines().iter().all(|l| l.starts_with("aar: policy")), "{:?}", r.aar_lines());
}

/// A second library that takes the program's posts (another router, such as the SC'19 authors'
/// awr, or a tracer), preloaded with libaar.so. Before it: the program's posts reach it first, and
/// libaar.so says so once, naming it. After it: libaar.so routes, then passes each post on to it.
/// Either way every post goes out once, routed by libaar.so (the later of the two that route).
#[test]
fn another_library_that_takes_the_posts_is_named_when_it_comes_first() {
    let router = compile("cc", "other_router", &[root().join("tests/c/other_router.c")], &["-shared", "-fPIC"]);
    for (name, before) in [("router-before", true), ("router-after", false)] {
        let preload = if before {
            format!("{} {}", router.display(), libaar().display())
        } else {
            format!("{} {}", libaar().display(), router.display())
        };
        let r = Launch::driver(name, "rdma 65536 4 0 fma 64 3 0").env("LD_PRELOAD", &preload).run();
        r.assert_ok();
        assert!(r.stdout.contains("posts=7 errors=0 emu_posts=7"), "{name}: {}", r.stdout);
        assert!(r.stderr.contains("other_router: posts 7\n"), "{name}: the router saw every post: {}", r.stderr);
        assert_eq!(r.dlvr_modes("GNI_PostRdma")[0], AD3, "{name}: libaar.so's first decision on the wire");
        let w: Vec<_> = r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect();
        if before {
            assert_eq!(w.len(), 1, "{name}: {w:?}");
            let first = format!("GNI_PostRdma is defined first by {}", router.display());
            assert!(w[0].contains(&first) && w[0].contains("Preload one router"), "{name}: {}", w[0]);
        } else {
            assert!(w.is_empty(), "{name}: {w:?}");
        }
    }
    // libugni itself before libaar.so takes every post: libaar.so, initialised by a collective it
    // wraps, says so (the posts alone would never reach it).
    let ugni = libaar().with_file_name("libugni.so");
    let r = Launch::driver("ugni-before", "alltoall 65536 2")
        .env("LD_PRELOAD", &format!("{} {}", ugni.display(), libaar().display()))
        .env("AAR_AB_BOUNDARY", "MPI_Alltoall")
        .run();
    r.assert_ok();
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("GNI_PostRdma") || l.contains("libugni")).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains(&format!("libugni ({}) is loaded before libaar.so", ugni.display())), "{}", w[0]);
    let modes = r.dlvr_modes("GNI_PostRdma");
    assert!(modes.iter().all(|&m| m == 0), "as the caller asked: {modes:?}");

    // The program exports sends of its own (libugni's archive linked in, -rdynamic): named as the
    // program, not by the name it was started with.
    let r = Launch::program("own-ugni", program("own_ugni"), "").run();
    r.assert_ok();
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("GNI_PostRdma")).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("aar: the program itself defines GNI_PostRdma"), "{}", w[0]);
}

/// Random programs over the driver (posts of every kind, threads, fork, the C API, iteration
/// markers, collectives, PAPI started or shut down by the program, counters that go wrong) under
/// random settings: libaar.so never crashes the program, never reports an internal error, and
/// never changes what the program sees. The driver checks every byte it sends and every
/// descriptor field it set; its exit status must be the one it has without libaar.so.
#[test]
fn random_programs_under_random_settings_see_what_they_see_without_the_library() {
    use proptest::prelude::*;
    let program = program_with("driver", &["-DWITH_PAPI", "-lpapi"]);
    let event = sde_events_setting().split(',').next().unwrap().to_string();
    let dlvr = || prop::sample::select(vec![0x00u32, 0x20, 0x40, 0x80, 0x01]);
    let command = prop_oneof![
        (prop::sample::select(vec![8u32, 64, 4096]), 1..20u32, dlvr()).prop_map(|(s, n, d)| format!("fma {s} {n} {d}")),
        (prop::sample::select(vec![4096u32, 65536, 1 << 20]), 1..30u32, dlvr())
            .prop_map(|(s, n, d)| format!("rdma {s} {n} {d}")),
        (1..8u32).prop_map(|n| format!("burst 65536 {n} 0")),
        (1..4u32, dlvr()).prop_map(|(n, d)| format!("ct 64 {n} {d}")),
        (1..10u32).prop_map(|n| format!("smsg 64 {n}")),
        dlvr().prop_map(|d| format!("smsgmode {d}")),
        (1..5u32).prop_map(|n| format!("cqwrite {n} 0")),
        prop::sample::select(vec![
            "badpost",
            "nullpost",
            "api auto",
            "api disable",
            "api enable",
            "iter begin",
            "iter end"
        ])
        .prop_map(str::to_string),
        dlvr().prop_map(|d| format!("api mode {d}")),
        prop::sample::select(vec!["steady", "auto", "off", "ADAPTIVE3", "bogus"]).prop_map(|p| format!("api name {p}")),
        (1..50u32).prop_map(|n| format!("iterloop {n}")),
        (1..4u32, 1..20u32).prop_map(|(t, n)| format!("threads {t} 64 {n}")),
        (1..5u32).prop_map(|n| format!("fork {n}")),
        Just("forkexec".to_string()),
        Just("papi_shutdown".to_string()),
        Just(format!("papi start {event}")),
        Just("papi stop".to_string()),
        Just("papi shutdown".to_string()),
        (1..4u32).prop_map(|n| format!("alltoall 4096 {n}")),
        (1..3u32).prop_map(|n| format!("barrier 64 {n}")),
        Just("neighbor 4096 2".to_string()),
        prop::array::uniform5(-5..5i64).prop_map(|v| format!("cadd {} {} {} {} {}", v[0], v[1], v[2], v[3], v[4])),
        prop::array::uniform5(0..1_000_000_000i64)
            .prop_map(|v| format!("cset {} {} {} {} {}", v[0], v[1], v[2], v[3], v[4])),
        (0..2u32).prop_map(|f| format!("freeze {f}")),
    ];
    let setting = prop_oneof![
        prop::sample::select(vec!["auto", "steady", "off", "ADAPTIVE0", "ADAPTIVE3", "bogus"])
            .prop_map(|v| ("AAR_MODE", v)),
        prop::sample::select(vec!["1", "8", "0", "x"]).prop_map(|v| ("AAR_WINDOW", v)),
        prop::sample::select(vec!["0", "4096", "1K", "huge"]).prop_map(|v| ("AAR_THRESHOLD", v)),
        prop::sample::select(vec!["ADAPTIVE0,ADAPTIVE3,auto", "auto,steady", "bogus,,"]).prop_map(|v| ("AAR_AB", v)),
        prop::sample::select(vec!["MPI_Barrier", "MPI_Barrier:3", "MPI_Alltoall", "nope"])
            .prop_map(|v| ("AAR_AB_BOUNDARY", v)),
        Just(("AAR_TRACE", "trace.%p.jsonl")),
    ];
    let case = (prop::collection::vec(command, 1..10), prop::collection::vec(setting, 0..3));
    let mut runner = proptest::test_runner::TestRunner::new(aar_testkit::proptest_config(64));
    let result = runner.run(&case, |(commands, settings)| {
        let script = commands.join(" ");
        let run = |preload: bool| {
            let mut launch = Launch::program("random-program", program.clone(), &script).unset("AAR_EMU_LOG");
            for (k, v) in &settings {
                let v = if *k == "AAR_TRACE" { launch.dir.join(v).display().to_string() } else { v.to_string() };
                launch = launch.env(k, &v);
            }
            if !preload {
                launch = launch.no_preload();
            }
            let r = launch.run();
            // (Read before the folder goes: a record that is not whole JSON fails here.)
            let records = r.records();
            let _ = std::fs::remove_dir_all(&r.dir);
            (r, records)
        };
        let ((with, records), (without, _)) = (run(true), run(false));
        let what = format!("{settings:?} {script}\n{}", with.stderr);
        prop_assert_eq!(with.status.code(), without.status.code(), "exit status: {}", what);
        prop_assert!(!with.stderr.contains("internal error"), "{}", what);
        prop_assert!(records.iter().all(|r| r["format"].is_string()), "{}", what);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A program that handles, blocks or has left pending the signals a write raises (SIGPIPE, and
/// SIGXFSZ at the job's file size limit), interrupted by a timer (no SA_RESTART) throughout: the
/// library's lines to a stderr without a reader, its trace and its record past `ulimit -f` raise
/// none that the program sees, take none of the program's own, and lose no trace line to EINTR.
#[test]
fn a_program_that_handles_or_blocks_signals_sees_only_its_own() {
    for mode in ["handle", "block", "pending"] {
        for limit in [false, true] {
            let test = format!("signals-{mode}-{limit}");
            let mut launch = Launch::program(&test, program("signals"), &format!("{mode} 50"))
                .unset("AAR_EMU_LOG")
                .env("AAR_LOG", "debug")
                .env("AAR_THRESHOLD", "banana");
            let trace = launch.dir.join("trace.jsonl");
            launch = launch.env("AAR_TRACE", &trace.display().to_string());
            if limit {
                let script = format!("ulimit -f 4 && exec \"$@\" 2>>{}", launch.dir.join("stderr.log").display());
                launch.wrapper = ["sh", "-c", &script, "sh"].map(String::from).to_vec();
            } else {
                let (reader, writer) = std::io::pipe().unwrap();
                drop(reader);
                launch.stderr = Some(writer.into());
            }
            let r = launch.run();
            assert!(r.status.success(), "{test}: {} {}", r.status, r.stdout);
            let own = u8::from(mode == "pending");
            let expected = format!("{mode} sigpipe={own} sigxfsz=0\nexit {mode} sigpipe={own} sigxfsz=0\n");
            assert_eq!(r.stdout, expected, "{test}");
            if limit {
                assert!(r.records().is_empty(), "{test}: the record is past the limit");
            } else {
                assert_eq!(read_jsonl(&trace).len(), 50, "{test}: every trace line");
                assert_eq!(total_messages(&r.records().pop().expect("the record")), 50, "{test}");
            }
        }
    }
}

/// A stderr that takes nothing: a pipe already full whose reader is alive and never reads (a stuck
/// output forwarding). The library's warning waits for it a while, then gives stderr up: without
/// that, the write would block the program for as long as the reader does not read (for ever
/// here; the launch's two minutes end the test). The program runs to its end, its posts forwarded,
/// and its record keeps the warning and says why stderr lacks it.
#[test]
fn a_stderr_that_takes_nothing_does_not_hold_the_program() {
    use std::os::fd::AsRawFd;
    let (reader, mut writer) = std::io::pipe().unwrap();
    let fd = writer.as_raw_fd();
    // SAFETY: F_GETFL/F_SETFL on the pipe's own descriptor, held open by `writer`.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) }, 0);
    while std::io::Write::write(&mut writer, &[b'x'; 4096]).is_ok() {}
    // SAFETY: as above; the program gets a blocking stderr, as a launcher's pipe is.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETFL, flags) }, 0);
    let mut launch = Launch::driver("stderr-full", "rdma 65536 20 0").env("AAR_THRESHOLD", "banana");
    launch.stderr = Some(writer.into());
    let r = launch.run();
    drop(reader);
    assert!(r.status.success(), "{} {}", r.status, r.stdout);
    let posts = r.log.iter().filter(|v| v["call"] == "GNI_PostRdma").count();
    assert_eq!(posts, 20, "every post forwarded");
    let rec = r.records().pop().expect("the record");
    assert_eq!(total_messages(&rec), 20);
    let messages: Vec<&str> = rec["messages"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    assert!(messages.iter().any(|m| m.contains("AAR_THRESHOLD")), "the warning is kept: {messages:?}");
    assert!(messages.iter().any(|m| m.contains("stderr took nothing for 1 s")), "{messages:?}");
}

/// Under a container's seccomp filter that refuses fallocate(2) (EPERM), the ranks of a node
/// still share their segment in /dev/shm: its pages are allocated through the mapping instead
/// (MADV_POPULATE_WRITE, which fails where a touch would raise SIGBUS), not given up with a fix
/// ("free space in /dev/shm") that does not apply.
#[test]
fn a_seccomp_filter_that_refuses_fallocate_still_shares_the_node_segment() {
    let job = format!("falloc-refused-{}", std::process::id());
    let mut launch = Launch::driver("seccomp-fallocate", "rdma 65536 20 0")
        .env("SLURM_JOB_ID", &job)
        .env("PMI_RANK", "0")
        .env("PMI_GNI_LOC_ADDR", "0x1234")
        .env("MPI_LOCALNRANKS", "2");
    launch.wrapper =
        vec![program("seccomp_errno").display().to_string(), libc::SYS_fallocate.to_string(), libc::EPERM.to_string()];
    let r = launch.run();
    let record = r.records().pop().expect("the record");
    // The other rank never came: the segment stays, and goes here.
    let segment = record["node"]["shared_reading"].as_str().map(str::to_string);
    if let Some(s) = &segment {
        let _ = std::fs::remove_file(s);
    }
    r.assert_ok();
    assert!(r.aar_lines().iter().all(|l| !l.contains("shared segment")), "{}", r.stderr);
    assert!(segment.is_some_and(|s| s.starts_with("/dev/shm/aar-node-") && s.contains(&job)), "{}", record["node"]);
}
