//! The decision trace (`AAR_TRACE`) against what it may meet in a job: a pattern of any length or
//! characters, a write that fails on a rank other than 0, a fork child under a pattern whose `%p`
//! is a literal one. Real processes under the real libaar.so and the emulator.

mod common;
use common::*;

/// A pattern of 100,000 characters (the environment allows 128 KiB) or with a line break in it
/// is said on one line of bounded length: the value and the path quoted, escaped and cut, as
/// every warning about a variable quotes it. Said whole, the 100 KB pattern made a message of
/// 200 KB (pattern and path), and a line break in the path split the message in two.
#[test]
fn a_trace_pattern_of_any_length_or_characters_is_said_on_one_short_line() {
    for (test, name, cause) in [
        ("trace-huge-pattern", "y".repeat(100_000), "File name too long"),
        ("trace-newline-pattern", "a\nb/t.jsonl".to_string(), "No such file or directory"),
    ] {
        let launch = Launch::driver(test, "fma 64 3 0");
        let pattern = launch.dir.join(&name).display().to_string();
        let r = launch.env("AAR_TRACE", &pattern).env("AAR_SUMMARY", "0").run();
        r.assert_ok();
        let head = |s: &str| s.chars().take(2000).collect::<String>();
        assert_eq!(r.stderr.lines().count(), 1, "{test}: one line on stderr: {}", head(&r.stderr));
        let line = r.stderr.lines().next().unwrap();
        assert!(line.len() < 1024, "{test}: {} bytes: {}", line.len(), head(line));
        assert!(line.starts_with("aar: AAR_TRACE=\""), "{test}: {line}");
        assert!(line.contains(cause) && line.contains("no decision trace is written"), "{test}: {line}");
        assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD3; 3], "{test}: routing continues without the trace");
    }
}

/// A trace whose write fails on a rank other than 0 (the job's file size limit; a full file
/// system, where a mount namespace can be had) is said by that rank: only it knows its trace is
/// cut short, as a record that cannot be written is said by its rank. As a warning, from rank 0
/// alone, nothing was said at all. The posts go out as always.
#[test]
fn a_trace_that_cannot_be_written_on_rank_5_is_said_by_rank_5() {
    let full_disk = std::process::Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success());
    if !full_disk {
        eprintln!("note: no mount namespace here (unshare -m); the full file system case is skipped");
    }
    for (test, cause, fix) in [
        ("trace-rank5-fsize", "File too large", "ulimit -f"),
        ("trace-rank5-full", "No space left on device", "Point AAR_TRACE at a writable file system with room."),
    ] {
        if test.ends_with("full") && !full_disk {
            continue;
        }
        // (The emulator's log is not the library's: it would meet the limit too.)
        let mut launch =
            Launch::driver(test, "rdma 65536 300 0").unset("AAR_EMU_LOG").env("PMI_RANK", "5").env("AAR_SUMMARY", "0");
        let folder = launch.dir.join("traces");
        std::fs::create_dir(&folder).unwrap();
        let setup = if test.ends_with("fsize") {
            "ulimit -f 4".to_string()
        } else {
            format!(
                "mount -t tmpfs -o size=64k tmpfs {0} || exit 97; dd if=/dev/zero of={0}/fill bs=4k count=64 2>/dev/null",
                folder.display()
            )
        };
        let wrapper = if test.ends_with("fsize") { vec![] } else { vec!["unshare", "-m"] };
        launch.wrapper = wrapper.into_iter().map(String::from).collect();
        launch.wrapper.extend(["sh".into(), "-c".into(), format!("{setup}; exec \"$@\""), "sh".into()]);
        let r = launch.env("AAR_TRACE", &folder.join("t.%r.jsonl").display().to_string()).run();
        assert_ne!(r.status.code(), Some(97), "{test}: namespace setup failed: {}", r.stderr);
        r.assert_ok();
        assert_eq!(stdout_field(&r.stdout, "emu_posts"), 300, "{test}: {}", r.stdout);
        let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("AAR_TRACE")).collect();
        assert_eq!(said.len(), 1, "{test}: once, by rank 5: {}", r.stderr);
        assert!(said[0].contains("writing the decision trace") && said[0].contains("t.5.jsonl"), "{test}: {}", said[0]);
        assert!(said[0].contains(cause) && said[0].contains(fix), "{test}: {}", said[0]);
    }
}

/// `%%p` in the pattern is a `%` and a `p`, not the pid: a fork child that posts has no name of
/// its own to trace to, and stops tracing (as without `%p`) rather than try to create the
/// parent's file and warn that it is there.
#[test]
fn a_fork_child_under_a_literal_percent_p_stops_tracing_quietly() {
    let launch = Launch::driver("trace-literal-p", "fma 64 3 0 fork 2");
    let pattern = launch.dir.join("t.%%p").display().to_string();
    let r = launch.env("AAR_TRACE", &pattern).env("AAR_SUMMARY", "0").run();
    r.assert_ok();
    assert!(r.stdout.contains("child posts=4 errors=0"), "{}", r.stdout);
    assert!(r.aar_lines().is_empty(), "{:?}", r.aar_lines());
    let lines = read_jsonl(&r.dir.join("t.%p"));
    assert_eq!(lines.len(), 3, "the parent's lines only: {lines:?}");
    let recs = r.records();
    let child = recs.iter().find(|r| r["fork_child"] == true).expect("the child's record");
    assert!(child["trace"].is_null(), "{}", child["trace"]);
}

/// A pattern that names one file for every rank (no `%r`, no `%p`) is said by rank 0, which
/// creates it: every other rank finds the name taken, and its own warning of that is rank 0's to
/// say, so nothing showed. With `%r` each rank has its name, and nothing is said.
#[test]
fn one_trace_name_for_every_rank_is_said_by_rank_0() {
    for (test, name, said) in [("trace-one-name", "t.jsonl", true), ("trace-rank-name", "t.%r.jsonl", false)] {
        let launch = Launch::driver(test, "fma 64 3 0");
        let pattern = launch.dir.join(name).display().to_string();
        let r =
            launch.env("AAR_TRACE", &pattern).env("PMI_RANK", "0").env("PMI_SIZE", "4").env("AAR_SUMMARY", "0").run();
        r.assert_ok();
        let lines: Vec<&str> = r.stderr.lines().filter(|l| l.contains("names one file for every rank")).collect();
        assert_eq!(lines.len(), usize::from(said), "{test}: {}", r.stderr);
        if said {
            assert!(lines[0].starts_with("aar: AAR_TRACE=\"") && lines[0].contains("Add %r"), "{test}: {}", lines[0]);
        }
        assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD3; 3], "{test}");
    }
}

/// Rank 0 may be the one that finds the one name taken: another rank created it first (they
/// start together) and traces into it. Rank 0, whose warnings show, says the name is one for
/// every rank; "no decision trace is written" would be false, and the fix for a file left by an
/// earlier run (a new name) does not stop the next run doing the same.
#[test]
fn one_trace_name_taken_before_rank_0_is_said_as_one_name() {
    let launch = Launch::driver("trace-one-name-taken", "fma 64 3 0");
    let path = launch.dir.join("t.jsonl");
    // Another rank's trace, created first.
    std::fs::write(&path, "").unwrap();
    let pattern = path.display().to_string();
    let r = launch.env("AAR_TRACE", &pattern).env("PMI_RANK", "0").env("PMI_SIZE", "4").env("AAR_SUMMARY", "0").run();
    r.assert_ok();
    let said = r.aar_lines();
    assert_eq!(said.len(), 1, "{}", r.stderr);
    assert!(said[0].contains("names one file for every rank") && said[0].contains("Add %r"), "{}", said[0]);
    assert!(said[0].contains("File exists") && !said[0].contains("no decision trace is written"), "{}", said[0]);
    assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD3; 3]);
}

/// A fork child that sends nothing (a helper that does other work, then calls exit()) writes
/// nothing: under a pattern with `%p` it has no trace file of its own, not even an empty one,
/// as it has no record. Its trace used to be made at its exit, where the child's own state is
/// made, and left empty beside the parent's.
#[test]
fn a_fork_child_that_sends_nothing_leaves_no_trace_file() {
    let launch = Launch::driver("trace-fork-silent", "fma 64 3 0 fork 0 fma 64 1 0").unset("AAR_EMU_LOG");
    let folder = launch.dir.join("traces");
    std::fs::create_dir(&folder).unwrap();
    let pattern = folder.join("t.%p.jsonl").display().to_string();
    let r = launch.env("AAR_TRACE", &pattern).env("AAR_SUMMARY", "0").run();
    r.assert_ok();
    assert!(r.stdout.contains("child posts=0 errors=0"), "{}", r.stdout);
    assert!(r.aar_lines().is_empty(), "{:?}", r.aar_lines());
    let files: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "the parent's trace only: {files:?}");
    assert_eq!(read_jsonl(&files[0]).len(), 4, "{}", files[0].display());
    let recs = r.records();
    assert_eq!(recs.len(), 1, "the parent's record only: {recs:?}");
}

/// A trace whose write fails when libaar.so writes its buffer before a fork (here at the job's
/// file size limit) is said, as a failure of any other write of it is, and stops there. The
/// failure was ignored: a program that forked a helper and then exited without more posts had
/// its trace cut short with nothing said, and its record counted lines the file lacks.
#[test]
fn a_trace_write_that_fails_before_a_fork_is_said() {
    // (The emulator's log is not the library's: it would meet the limit too.)
    let mut launch = Launch::driver("trace-fork-fsize", "rdma 65536 40 0 forkexec")
        .unset("AAR_EMU_LOG")
        .env("PMI_RANK", "3")
        .env("AAR_SUMMARY", "0");
    launch.wrapper = ["sh", "-c", "ulimit -f 4; exec \"$@\"", "sh"].into_iter().map(String::from).collect();
    let pattern = launch.dir.join("t.%r.jsonl").display().to_string();
    let r = launch.env("AAR_TRACE", &pattern).run();
    r.assert_ok();
    assert!(r.stdout.contains("forkexec status=0"), "{}", r.stdout);
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("AAR_TRACE")).collect();
    assert_eq!(said.len(), 1, "once, by rank 3: {}", r.stderr);
    assert!(said[0].contains("writing the decision trace") && said[0].contains("t.3.jsonl"), "{}", said[0]);
    assert!(said[0].contains("File too large") && said[0].contains("ulimit -f"), "{}", said[0]);
    let lines = read_jsonl(&r.dir.join("t.3.jsonl"));
    assert!(!lines.is_empty() && lines.len() < 40, "cut back to whole lines at the limit: {}", lines.len());
}

/// A trace that stopped at `AAR_TRACE_MAX`, in a process that exits while a thread is held
/// inside fork() (whose fork handler holds the trace for the fork): every line it took is in its
/// file, and the record counts them all and none lost. The lines the stop wrote out still counted
/// as in the buffer: the exit handler, kept from the trace by the fork, said that "up to N lines"
/// were not written and took them off trace.lines, which then counted fewer than the file holds.
#[test]
fn a_trace_stopped_at_its_cap_loses_no_lines_at_an_exit_held_by_a_fork() {
    let launch = Launch::driver("trace-cap-forkhold", "fma 64 20 0 forkhold");
    let path = launch.dir.join("t.jsonl");
    let r = launch.env("AAR_TRACE", &path.display().to_string()).env("AAR_TRACE_MAX", "2K").run();
    r.assert_ok();
    assert!(r.stdout.contains("forkhold entered=1"), "{}", r.stdout);
    let lines = read_jsonl(&path);
    assert!(!lines.is_empty() && lines.len() < 20, "stopped at its cap: {} lines", lines.len());
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("AAR_TRACE")).collect();
    assert_eq!(said.len(), 1, "the cap only: {}", r.stderr);
    assert!(said[0].contains("reached AAR_TRACE_MAX=2K"), "{}", said[0]);
    let recs = r.records();
    assert_eq!(recs.len(), 1, "{}", r.stderr);
    assert_eq!(recs[0]["trace"]["lines"], lines.len(), "{}", recs[0]["trace"]);
    assert_eq!(recs[0]["trace"]["lines_lost_waiting"], 0, "{}", recs[0]["trace"]);
}

/// A trace that reaches `AAR_TRACE_MAX` on a rank other than 0 is said by that rank: its file ends
/// as a whole trace would, and only it knows the trace was cut short. As a warning, from rank 0
/// alone, a rank that writes no record (no `AAR_OUTPUT_DIR` here) had it said nowhere.
#[test]
fn a_trace_capped_on_rank_5_is_said_by_rank_5() {
    let launch = Launch::driver("trace-max-rank5", "rdma 65536 5 0").env("PMI_RANK", "5").unset("AAR_OUTPUT_DIR");
    let path = launch.dir.join("t.%r.jsonl");
    let r = launch.env("AAR_TRACE", &path.display().to_string()).env("AAR_TRACE_MAX", "600").run();
    r.assert_ok();
    let lines = read_jsonl(&r.dir.join("t.5.jsonl"));
    assert!((1..5).contains(&lines.len()), "{} lines", lines.len());
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("AAR_TRACE_MAX=600")).collect();
    assert_eq!(said.len(), 1, "{}", r.stderr);
    assert!(
        said[0].contains(&format!("t.5.jsonl\" reached AAR_TRACE_MAX=600 after {} line", lines.len())),
        "{}",
        said[0]
    );
    assert_eq!(r.dlvr_modes("GNI_PostRdma").len(), 5, "routing goes on");
}
