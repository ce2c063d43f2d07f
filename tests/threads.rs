//! Several threads of one process at once (an MPI_THREAD_MULTIPLE or OpenMP program): uGNI and
//! DMAPP posts, iteration markers of aar.h and the decision trace (`AAR_TRACE`), with the real
//! libaar.so preloaded over the emulator and the real libpapi. tests/c/threads_trace.c makes the
//! posts and marks and prints what each thread did; the trace, the record and the iteration
//! record must say exactly that. A thread that exits halfway, and a process that exits while its
//! threads still post, end as any other (Launch::run's timeout catches a hang).

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What one thread of threads_trace made (posts and marks that returned AAR_OK).
#[derive(Debug, Default, Clone, Copy)]
struct Made {
    bytes: u64,
    posts: u64,
    begins: u64,
    ends: u64,
}

/// The program's report: per thread ("main", "0", ...), and the total.
fn made(r: &Run) -> (BTreeMap<String, Made>, Made) {
    let field = |line: &str, key: &str| stdout_field(line.split_once(' ').unwrap().1, key);
    let mut per = BTreeMap::new();
    let mut total = None;
    for line in r.stdout.lines() {
        let m = |bytes| Made {
            bytes,
            posts: field(line, "posts"),
            begins: field(line, "begins"),
            ends: field(line, "ends"),
        };
        if let Some(rest) = line.strip_prefix("thread ") {
            per.insert(rest.split(' ').next().unwrap().to_string(), m(field(line, "bytes")));
        } else if line.starts_with("total ") {
            total = Some(m(0));
        }
    }
    (per, total.unwrap_or_else(|| panic!("no total in\n{}", r.stdout)))
}

/// The DMAPP thread's key in [`made`] (the uGNI threads are 0..threads).
fn dmapp_thread(threads: usize) -> String {
    threads.to_string()
}

fn threads_program() -> PathBuf {
    dmapp_program("threads_trace", &["-pthread"])
}

/// threads_trace with args, traced, its record in out/.
fn run(test: &str, args: &str, log: bool) -> (Run, PathBuf) {
    let launch = Launch::program(test, threads_program(), args);
    let trace = launch.dir.join("trace.jsonl");
    let launch = launch.env("AAR_TRACE", &trace.display().to_string());
    let r = if log { launch } else { launch.unset("AAR_EMU_LOG") }.run();
    r.assert_ok();
    assert!(!r.stderr.contains("internal error"), "{}", r.stderr);
    (r, trace)
}

/// Every line of the trace, each checked whole: the file ends with a newline and each line is
/// one JSON object with the fields of a line.
fn trace_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "the trace ends in the middle of a line: {:?}",
        text.lines().last()
    );
    text.lines()
        .enumerate()
        .map(|(n, l)| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("trace line {}: {e}: {l:?}", n + 1));
            for key in ["t_ns", "api", "call", "messages", "bytes", "chosen", "reason"] {
                assert!(!v[key].is_null(), "trace line {} has no {key}: {l}", n + 1);
            }
            v
        })
        .collect()
}

/// Trace lines per thread, told apart by the size each thread posts: (api, bytes) -> lines.
fn lines_per_size(lines: &[Value]) -> BTreeMap<(String, u64), u64> {
    let mut per = BTreeMap::new();
    for l in lines {
        assert_eq!(l["messages"], 1, "{l}");
        *per.entry((l["api"].as_str().unwrap().to_string(), l["bytes"].as_u64().unwrap())).or_insert(0) += 1;
    }
    per
}

fn api_of(key: &str, threads: usize) -> &'static str {
    if key == dmapp_thread(threads) {
        "DMAPP"
    } else {
        "uGNI"
    }
}

/// The one record of the run.
fn record(r: &Run) -> Value {
    let records = r.records();
    assert_eq!(records.len(), 1, "one record: {records:?}\n{}", r.stderr);
    records.into_iter().next().unwrap()
}

/// Messages and bytes per mode the trace's lines went out with.
fn trace_modes(lines: &[Value]) -> BTreeMap<String, (u64, u64)> {
    let mut per = BTreeMap::new();
    for l in lines {
        let e = per.entry(l["chosen"].as_str().unwrap().to_string()).or_insert((0, 0));
        e.0 += l["messages"].as_u64().unwrap();
        e.1 += l["bytes"].as_u64().unwrap();
    }
    per
}

/// The record's `modes` (or `apis.X.modes`) as (messages, bytes) per mode.
fn record_modes(modes: &Value) -> BTreeMap<String, (u64, u64)> {
    modes
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), (v["messages"].as_u64().unwrap(), v["bytes"].as_u64().unwrap())))
        .collect()
}

/// The iteration record's rows, checked for what holds under any interleaving of threads: one
/// row per ended iteration (`ab.iterations` of the record), each index once, the indices in the
/// order the iterations ran, no two iterations at once. On a loaded host a thread can be kept off
/// the CPU while it holds the record for longer than a boundary waits (100 ms): that boundary's
/// rows are then lost, which the library must say; a loss it did not say fails. Also whether it
/// said one.
fn rows_checked(r: &Run, record: &Value) -> (Value, Vec<Value>, bool) {
    let mut files = iteration_records(&r.dir.join("out"));
    assert_eq!(files.len(), 1, "one iteration record\n{}", r.stderr);
    let (header, rows) = files.remove(0);
    let iterations = record["ab"]["iterations"].as_u64().unwrap();
    let lost = r.aar_lines().iter().any(|l| l.contains("another thread held the iteration record for over"));
    if lost {
        assert!((rows.len() as u64) < iterations, "a loss said, but a row per ended iteration\n{}", r.stderr);
    } else {
        assert_eq!(rows.len() as u64, iterations, "a row per ended iteration\n{}", r.stderr);
    }
    let mut by_time = rows.clone();
    by_time.sort_by_key(|row| (row["start_ns"].as_u64().unwrap(), row["end_ns"].as_u64().unwrap()));
    let order: Vec<u64> = by_time.iter().map(|row| row["i"].as_u64().unwrap()).collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), order.len(), "an iteration has two rows: {order:?}");
    if let Some(k) = order.windows(2).position(|w| w[0] > w[1]) {
        panic!(
            "iterations are numbered in the order they began, but iteration {} began after {} (rows by start: ...{:?}...)",
            order[k + 1],
            order[k],
            &order[k.saturating_sub(3)..(k + 5).min(order.len())]
        );
    }
    for pair in by_time.windows(2) {
        assert!(
            pair[0]["end_ns"].as_u64() <= pair[1]["start_ns"].as_u64(),
            "two iterations at once: {} and {}",
            pair[0],
            pair[1]
        );
    }
    (header, by_time, lost)
}

/// Sum of one column (messages or bytes) of the rows, per mode.
fn rows_sum(header: &Value, rows: &[Value], column: &str) -> BTreeMap<String, u64> {
    let names: Vec<&str> = header["modes"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    let mut sum = BTreeMap::new();
    for row in rows {
        for (name, n) in names.iter().zip(row[column].as_array().unwrap()) {
            *sum.entry(name.to_string()).or_insert(0) += n.as_u64().unwrap();
        }
    }
    sum.retain(|_, n| *n > 0);
    sum
}

/// The checks common to runs whose threads all returned (join): the trace has one whole line
/// per post, per thread, and the record counts exactly those posts.
fn posts_exact(r: &Run, trace: &Path, threads: usize) -> (Value, Vec<Value>) {
    let (per, total) = made(r);
    let lines = trace_lines(trace);
    let per_size = lines_per_size(&lines);
    for (k, m) in &per {
        let api = api_of(k, threads);
        assert_eq!(
            per_size.get(&(api.to_string(), m.bytes)).copied().unwrap_or(0),
            m.posts,
            "thread {k} ({api}, {} bytes)",
            m.bytes
        );
    }
    assert_eq!(lines.len() as u64, total.posts, "no other line: {per_size:?}");
    let rec = record(r);
    // Threads that wait for each other's lines (never a second here) lose none.
    assert_eq!(
        rec["trace"],
        serde_json::json!({"lines": total.posts, "lines_lost_waiting": 0, "lines_lost_nested": 0}),
        "{}",
        r.stderr
    );
    let api_made = |api: &str| {
        per.iter()
            .filter(|(k, _)| api_of(k, threads) == api)
            .fold((0, 0), |(n, b), (_, m)| (n + m.posts, b + m.posts * m.bytes))
    };
    for api in ["uGNI", "DMAPP"] {
        let a = &rec["apis"][api];
        assert_eq!((a["messages"].as_u64().unwrap(), a["bytes"].as_u64().unwrap()), api_made(api), "record's {api}");
    }
    // uGNI lines name the modes as the record does (DMAPP lines in DMAPP's names).
    let ugni: Vec<Value> = lines.iter().filter(|l| l["api"] == "uGNI").cloned().collect();
    assert_eq!(
        record_modes(&rec["apis"]["uGNI"]["modes"]),
        trace_modes(&ugni),
        "record's uGNI modes against the trace"
    );
    // Every post reached the emulator once (its log holds the uGNI posts with their routing).
    let logged: Vec<&Value> = r.log.iter().filter(|v| v["call"] == "GNI_PostRdma").collect();
    assert_eq!(logged.len() as u64, api_made("uGNI").0);
    let mut by_mode: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for v in logged {
        let e = by_mode.entry(mode_name(v["dlvr_mode"].as_u64().unwrap()).to_string()).or_default();
        e.0 += 1;
        e.1 += v["length"].as_u64().unwrap_or_else(|| panic!("no length in {v}"));
    }
    assert_eq!(record_modes(&rec["apis"]["uGNI"]["modes"]), by_mode, "the record's modes are the emulator's");
    (rec, lines)
}

#[test]
fn threads_that_post_and_begin_iterations_at_once_have_every_line_count_and_row() {
    let threads = 12;
    let (r, trace) = run("threads-begin", &format!("{threads} 2000 begin join"), true);
    let (rec, lines) = posts_exact(&r, &trace, threads);
    let (per, total) = made(&r);
    assert_eq!(per["0"].posts, 1000, "thread 0 exits halfway");
    // Every begin ends the iteration before it; the main thread's end ends the last one.
    assert_eq!(per["main"].ends, 1, "{}", r.stdout);
    let (header, rows, lost) = rows_checked(&r, &rec);
    if lost {
        return;
    }
    assert_eq!(rows.len() as u64, total.begins, "a row per begin");
    for pair in rows.windows(2) {
        assert_eq!(pair[0]["end_ns"], pair[1]["start_ns"], "a begin ends the one before at the same moment");
    }
    // From the first begin (before the threads start) every post is in an iteration: the rows
    // hold every message but the main thread's first post.
    let first = lines.iter().find(|l| l["bytes"] == 8).expect("the main thread's post is traced");
    let mut expect = record_modes(&rec["modes"]);
    let e = expect.get_mut(first["chosen"].as_str().unwrap()).unwrap();
    (e.0, e.1) = (e.0 - 1, e.1 - 8);
    expect.retain(|_, (n, _)| *n > 0);
    let messages: BTreeMap<String, u64> = expect.iter().map(|(k, (n, _))| (k.clone(), *n)).collect();
    let bytes: BTreeMap<String, u64> = expect.iter().map(|(k, (_, b))| (k.clone(), *b)).collect();
    assert_eq!(rows_sum(&header, &rows, "messages"), messages, "rows' messages");
    assert_eq!(rows_sum(&header, &rows, "bytes"), bytes, "rows' bytes");
}

#[test]
fn threads_that_end_iterations_while_others_post_lose_no_row_and_count_none_twice() {
    let threads = 12;
    let (r, trace) = run("threads-both", &format!("{threads} 2000 both join"), true);
    let (rec, _) = posts_exact(&r, &trace, threads);
    let (_, total) = made(&r);
    let (header, rows, lost) = rows_checked(&r, &rec);
    // Every begun iteration ended (by a begin, an end, or the main thread's last end).
    assert!(lost || rows.len() as u64 == total.begins, "{} rows, {} begins", rows.len(), total.begins);
    assert!(total.ends >= 1 && total.ends <= total.begins, "{}", r.stdout);
    let all: u64 = rows_sum(&header, &rows, "messages").values().sum();
    assert!(all <= total.posts, "rows hold {all} messages of {} posts", total.posts);
    for row in &rows {
        if let Some(label) = row["label"].as_str() {
            assert!(label.starts_with('t') && label[1..].parse::<usize>().is_ok_and(|k| k <= threads), "{row}");
        }
    }
}

#[test]
fn a_process_that_exits_while_its_threads_post_and_mark_ends_with_whole_files() {
    let threads = 6;
    let (r, trace) = run("threads-exit", &format!("{threads} 1000 both exit"), false);
    let (per, total) = made(&r);
    let lines = trace_lines(&trace);
    let per_size = lines_per_size(&lines);
    // Each post that returned before exit() was called is in the trace and the record.
    for (k, m) in &per {
        let api = api_of(k, threads);
        let traced = per_size.get(&(api.to_string(), m.bytes)).copied().unwrap_or(0);
        assert!(traced >= m.posts, "thread {k}: {traced} lines, {} posts before exit", m.posts);
    }
    let rec = record(&r);
    let counted =
        rec["apis"]["uGNI"]["messages"].as_u64().unwrap() + rec["apis"]["DMAPP"]["messages"].as_u64().unwrap();
    assert!(counted >= total.posts, "record counts {counted} of {} posts before exit", total.posts);
    let (_, rows, lost) = rows_checked(&r, &rec);
    // Every begin before exit ended but the last, which may still be in progress.
    assert!(lost || rows.len() as u64 + 1 >= total.begins, "{} rows, {} begins before exit", rows.len(), total.begins);
    for line in r.aar_lines().iter().filter(|l| l.contains("after libaar.so's exit handler")) {
        assert!(line.contains("another thread"), "the message names what ended it here: {line}");
    }
}

/// Posts while another thread holds the decision trace for over a second (here, one inside
/// fork(): libaar.so's fork handler holds the trace until the fork is done, and the driver's
/// forkhold keeps the fork there) go out as always, but their lines are lost: the record counts
/// them, one message per process says so, and every line before and after is in the file. A
/// process that exits while the fork still holds the trace loses no more (the fork handler wrote
/// the buffer before it took the trace), and exits.
#[test]
fn trace_lines_that_wait_too_long_for_another_thread_are_counted_and_said() {
    let said =
        "a line of the decision trace (AAR_TRACE) was dropped after waiting over 1 s: another thread held the trace";
    // (test, script, the posts' sizes, the sizes of the lines in the trace, lines lost)
    type Case = (&'static str, &'static str, &'static [u64], &'static [u64], u64);
    let cases: [Case; 3] = [
        ("trace-held", "fma 8 2 0 forkhold fma 16 2 0 forkrelease fma 32 1 0", &[8, 8, 16, 16, 32], &[8, 8, 32], 2),
        ("trace-held-at-exit", "fma 8 2 0 forkhold fma 16 1 0", &[8, 8, 16], &[8, 8], 1),
        ("trace-not-held", "fma 8 2 0 fma 16 2 0 fma 32 1 0", &[8, 8, 16, 16, 32], &[8, 8, 16, 16, 32], 0),
    ];
    for (test, script, posts, traced, lost) in cases {
        let launch = Launch::driver(test, script).unset("AAR_EMU_LOG");
        let trace = launch.dir.join("trace.jsonl");
        let r = launch.env("AAR_TRACE", &trace.display().to_string()).run();
        r.assert_ok();
        assert!(!r.stderr.contains("internal error"), "{}", r.stderr);
        let in_file: Vec<u64> = trace_lines(&trace).iter().map(|l| l["bytes"].as_u64().unwrap()).collect();
        assert_eq!(in_file, traced, "{test}: the lines of the posts made while the trace was free");
        let rec = record(&r);
        assert_eq!(
            rec["trace"],
            serde_json::json!({"lines": traced.len(), "lines_lost_waiting": lost, "lines_lost_nested": 0}),
            "{test}"
        );
        let sent = (rec["apis"]["uGNI"]["messages"].as_u64(), rec["apis"]["uGNI"]["bytes"].as_u64());
        assert_eq!(sent, (Some(posts.len() as u64), Some(posts.iter().sum())), "{test}: every post went out");
        let told: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains(said)).collect();
        assert_eq!(told.len(), usize::from(lost > 0), "{test}: said once when lost: {}", r.stderr);
        let kept: Vec<&str> = rec["messages"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        if test == "trace-held-at-exit" {
            // A fork still in progress at exit holds the record's messages too: the record says
            // they are missing, rather than holding none.
            assert_eq!(kept.len(), 1, "{test}: {kept:?}");
            assert!(kept[0].contains("not in its record") && kept[0].contains("inside fork()"), "{}", kept[0]);
        } else {
            let n = kept.iter().filter(|m| m.contains(said)).count();
            assert_eq!(n, usize::from(lost > 0), "{test}: the record keeps the message: {kept:?}");
        }
        if lost > 0 {
            assert!(told[0].contains("trace.lines_lost_waiting") && told[0].contains("AAR_TRACE"), "{}", told[0]);
        }
    }
}

/// A fork child's record counts its own trace: its lines in its own file (`%p`), or none when
/// the pattern has no `%p` (the child stops tracing), never the parent's.
#[test]
fn a_fork_child_s_record_counts_its_own_trace_lines() {
    for (test, pattern, child_trace) in
        [("trace-fork-own", "trace.%p.jsonl", Some(2)), ("trace-fork-none", "trace.jsonl", None)]
    {
        let launch = Launch::driver(test, "fma 8 3 0 fork 1 fma 32 1 0").unset("AAR_EMU_LOG");
        let pattern = launch.dir.join(pattern).display().to_string();
        let r = launch.env("AAR_TRACE", &pattern).run();
        r.assert_ok();
        let records = r.records();
        assert_eq!(records.len(), 2, "{test}: the parent's and the child's: {}", r.stderr);
        for rec in records {
            let pid = rec["pid"].as_u64().unwrap();
            let child = rec["fork_child"] != false;
            let expect = if child { child_trace } else { Some(4) };
            let file = pattern.replace("%p", &pid.to_string());
            let counted =
                expect.map(|n: u64| serde_json::json!({"lines": n, "lines_lost_waiting": 0, "lines_lost_nested": 0}));
            assert_eq!(rec["trace"], counted.unwrap_or(Value::Null), "{test}, pid {pid}");
            if let (Some(n), true) = (expect, !child || pattern.contains("%p")) {
                assert_eq!(trace_lines(Path::new(&file)).len() as u64, n, "{test}: {file}");
            }
        }
    }
}

/// A warning libaar.so writes to a stderr no one reads (a full pipe: a launcher's output stalled)
/// blocks the thread that writes it, no other: the other threads' posts, which ask for the same
/// piece of state (this node's place in the node table, which the warning is about), go on.
#[test]
fn a_warning_stuck_on_a_full_stderr_holds_up_only_its_own_thread() {
    let (reader, mut writer) = std::io::pipe().unwrap();
    {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let fd = writer.as_raw_fd();
        // SAFETY: fcntl on a pipe descriptor this test owns.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) };
        while writer.write(&[b'x'; 4096]).is_ok() {}
        // SAFETY: as above.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
    }
    let mut l =
        Launch::driver("stalled-stderr", "stalled 4 8192 5").env("AAR_MODE", "steady").env("PMI_GNI_LOC_ADDR", "0x999");
    let nodes = l.dir.join("nodes.txt");
    std::fs::write(&nodes, "0x100 0 0\n").unwrap();
    l = l.env("AAR_TOPOLOGY", &nodes.display().to_string());
    l.stderr = Some(writer.into());
    let r = l.run();
    drop(reader);
    assert!(r.stdout.contains("stalled done=3 of 4"), "{}", r.stdout);
}
