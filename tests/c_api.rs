//! The C API of libaar.so (cabi/aar.h) at its edges: first calls racing the library's start-up,
//! bad arguments under the kill switch, a fork child whose first call is one of them. The rest of
//! the API is exercised where its effect is (degradation.rs: pinning, pausing; ab.rs: iterations;
//! dmapp.rs: DMAPP routing).

mod common;
use common::*;

/// The C test program, linked with -laar as aar.h advises.
fn api_edges() -> std::path::PathBuf {
    program_with("api_edges", &["-laar"])
}

/// Threads that call `aar_policy_name()` while another thread is starting the library get the
/// policy in force, not "disabled" (which aar.h keeps for AAR_DISABLE). Several processes, since
/// which thread starts the library and how long the others wait varies from run to run.
#[test]
fn policy_names_asked_during_start_up_are_the_policy_not_disabled() {
    for run in 0..5 {
        let r = Launch::program(&format!("api-first-names-{run}"), api_edges(), "first-names")
            .env("AAR_MODE", "ADAPTIVE1")
            .run();
        assert!(r.status.success(), "{}", r.stderr);
        assert_eq!(r.stdout.matches("policy ADAPTIVE1\n").count(), 8, "run {run}: {}", r.stdout);
    }
    let r = Launch::program("api-first-names-disabled", api_edges(), "first-names").env("AAR_DISABLE", "1").run();
    assert_eq!(r.stdout.matches("policy disabled\n").count(), 8, "{}", r.stdout);
}

/// A bad argument is AAR_EINVAL (-1) whether or not AAR_DISABLE is set: the answer to a bad call
/// does not depend on the environment. Without AAR_DISABLE the first bad argument of each function
/// is said, in a sentence (a flag bit once made "0x0180 is it has bits above..."); under it,
/// nothing is.
#[test]
fn a_bad_argument_is_einval_under_the_kill_switch_too() {
    for disable in ["0", "1"] {
        let r = Launch::program(&format!("api-bad-args-{disable}"), api_edges(), "bad-args")
            .env("AAR_DISABLE", disable)
            .run();
        assert!(r.status.success(), "{}", r.stderr);
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(lines.len(), 9, "{}", r.stdout);
        for l in lines {
            assert!(l.ends_with(" rc=-1"), "AAR_DISABLE={disable}: {l}");
        }
        let refused: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains(") was refused")).collect();
        let expected = [
            "aar: aar_iteration_label(NULL) was refused: no label. It returned AAR_EINVAL and changed nothing.",
            "aar: aar_set_mode(0x0180) was refused: 0x0180 is no mode alone: it has bits above the routing byte set \
             (0x0100). It returned AAR_EINVAL and changed nothing (the policy in force is still ADAPTIVE3).",
            "aar: aar_set_mode_name(NULL) was refused: no name. It returned AAR_EINVAL and changed nothing",
        ];
        if disable == "1" {
            assert!(refused.is_empty(), "nothing said under AAR_DISABLE: {refused:?}");
            continue;
        }
        assert_eq!(refused.len(), expected.len(), "{refused:?}");
        for (line, start) in refused.iter().zip(expected) {
            assert!(line.starts_with(start), "{line}\nnot: {start}");
        }
    }
}

/// A fork child that pins a mode before its first post (so the pin is the first thing the library
/// sees in it) routes with it and keeps its own record of every message it sent: the pin must
/// not put the child's posts on the fast path before the child has statistics of its own.
#[test]
fn a_fork_child_that_pins_a_mode_first_keeps_its_own_record() {
    let r = Launch::driver("api-fork-pin", "fma 64 3 0 forkmode 5 0x20 fma 64 2 0").run();
    r.assert_ok();
    assert!(r.stdout.contains("child api mode rc=0\nchild posts=10 errors=0"), "{}", r.stdout);
    let fma = r.dlvr_modes("GNI_PostFma");
    assert_eq!(fma, [AD3, AD3, AD3, AD1, AD1, AD1, AD1, AD1, AD3, AD3], "the child's posts pinned, the parent's not");
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), [AD1; 5]);
    let recs = r.records();
    let child: Vec<_> = recs.iter().filter(|r| r["fork_child"] == true).collect();
    assert_eq!(child.len(), 1, "the child's record: {:?}", r.aar_lines());
    assert_eq!(child[0]["policy_at_exit"], "ADAPTIVE1");
    let ugni = &child[0]["apis"]["uGNI"];
    assert_eq!(ugni["messages"], 10, "every message the child sent, none of the parent's: {ugni}");
    assert_eq!(ugni["modes"]["ADAPTIVE1"]["messages"], 10, "{ugni}");
}

/// A call made while the library is still starting, from inside its start-up or from another
/// thread after waiting for it in vain, is refused with AAR_EINVAL (it changed nothing; the
/// library is not disabled) and said once on stderr, and aar_policy_name() says "starting";
/// once started, the same call works. (They were AAR_EDISABLED and "disabled", which aar.h keeps
/// for AAR_DISABLE.) The start-up is held by the program itself, through a stand-in for libpapi
/// whose loading calls back into it, for as long as it needs, so nothing depends on timing.
#[test]
fn calls_while_the_library_is_still_starting_are_refused_not_disabled() {
    let hold = compile("cc", "hold_start", &[root().join("tests/c/hold_start.c")], &["-shared", "-fPIC"]);
    let r = Launch::program("api-slow-start", api_edges(), "slow-start")
        .env("AAR_PAPI_LIBRARY", &hold.display().to_string())
        .run();
    assert!(r.status.success(), "{}", r.stderr);
    let inside: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("inside aar_")).collect();
    assert_eq!(inside.len(), 8, "{}", r.stdout);
    for l in inside {
        assert!(l.ends_with(" rc=-1"), "from inside the start-up: {l}");
    }
    for expected in [
        "inside policy starting\n",
        "waiting aar_set_mode rc=-1\nwaiting policy starting\n",
        "started aar_set_mode rc=0\nstarted policy ADAPTIVE1\n",
    ] {
        assert!(r.stdout.contains(expected), "{expected:?} in {}", r.stdout);
    }
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("still starting")).collect();
    assert_eq!(said.len(), 1, "said once: {:?}", r.aar_lines());
    assert!(said[0].starts_with("aar: aar_set_mode was called") && said[0].contains("\"starting\""), "{}", said[0]);
}

/// A job of two ranks under libaar.so: rank 0 begins and ends four iterations; rank 1's first two
/// begins are refused while its start-up is held (one from inside it, one from main while another
/// thread runs it), and its rows are of iterations 2 and 3. `aar report` on the job's records says
/// that rank 1 lacks iterations 0 and 1 because two begins were refused, and for which causes,
/// as its summary record counts them; rank 0 is not blamed.
#[test]
fn aar_report_names_the_begins_a_rank_had_refused_while_starting() {
    let hold = compile("cc", "hold_start", &[root().join("tests/c/hold_start.c")], &["-shared", "-fPIC"]);
    let out = scratch("api-refused-report").join("out");
    std::fs::create_dir_all(&out).unwrap();
    let ranks = [
        Launch::driver("api-refused-report-0", &"iter begin iter end ".repeat(4)),
        Launch::program("api-refused-report-1", api_edges(), "refused-begins")
            .env("AAR_PAPI_LIBRARY", &hold.display().to_string()),
    ];
    for (rank, launch) in ranks.into_iter().enumerate() {
        launch
            .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
            .env("AAR_OUTPUT_DIR", &out.display().to_string())
            .env("SLURM_JOB_ID", "4848")
            .env("PMI_RANK", &rank.to_string())
            .env("PMI_SIZE", "2")
            .unset("AAR_EMU_LOG")
            .run()
            .assert_ok();
    }
    let run = std::process::Command::new(aar_command()).arg("report").arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("lack some of the 2 ranks")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains(
            "2 iterations lack some of the 2 ranks (first: iteration 0, on 1 rank): left out (the slowest rank may be \
             the one missing; --keep-incomplete keeps them). Rank 1's summary record says that 2 begins \
             (aar_iteration_begin) were refused (AAR_EINVAL) while libaar.so was still starting (1 from inside the \
             start-up, 1 while another thread was starting it), each keeping its index without a row, so its rows \
             begin at iteration 2. Refused from inside the start-up: called on the thread running it"
        ) && said[0].contains("no longer returns \"starting\""),
        "{}",
        said[0]
    );
    assert!(!said[0].contains("rank 0") && !said[0].contains("marked fewer"), "{}", said[0]);
    std::fs::remove_dir_all(out.parent().unwrap()).unwrap();
}

/// The weak declarations aar.h advises find libaar.so's functions under LD_PRELOAD and leave them
/// NULL without it, in code compiled position-independent (the compiler's default here, as on
/// current distributions). Code compiled with -fno-pie has them NULL even under LD_PRELOAD (the
/// link editor resolves an undefined weak function to 0 for good); dlsym(RTLD_DEFAULT), which
/// aar.h names for it, finds them there too.
#[test]
fn weak_declarations_find_the_library_in_position_independent_code_and_dlsym_everywhere() {
    let pie = program("api_weak");
    let fixed = program_with("api_weak", &["-fno-pie", "-no-pie"]);
    for (name, program, preload, expected) in [
        ("pie", &pie, true, "weak found rc=0\ndlsym found rc=0\n"),
        ("pie-alone", &pie, false, "weak null\ndlsym null\n"),
        ("fixed", &fixed, true, "weak null\ndlsym found rc=0\n"),
        ("fixed-alone", &fixed, false, "weak null\ndlsym null\n"),
    ] {
        let mut launch = Launch::program(&format!("api-weak-{name}"), program.clone(), "");
        if !preload {
            launch = launch.no_preload();
        }
        let r = launch.run();
        assert!(r.status.success(), "{name}: {}", r.stderr);
        assert_eq!(r.stdout, expected, "{name}");
    }
}

/// A later label of an iteration replaces an earlier one; calls made after libaar.so's exit
/// handler ran (from an atexit handler registered before the library's first call) still
/// return as always, but the iteration record is written by then: the iteration they end has
/// no row. aar.h says both.
#[test]
fn a_later_label_replaces_an_earlier_one_and_iterations_after_exit_have_no_row() {
    let r = Launch::program("api-after-exit", api_edges(), "after-exit").run();
    assert!(r.status.success(), "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "labels rc=0,0 begin rc=0 end rc=0\nafter exit begin rc=0 label rc=0 end rc=0 mode rc=0 policy ADAPTIVE2\n"
    );
    let records = iteration_records(&r.dir.join("out"));
    assert_eq!(records.len(), 1, "{}", r.stderr);
    let rows = &records[0].1;
    assert_eq!(rows.len(), 1, "iteration 1 ended after the record was written: {rows:?}");
    assert_eq!((&rows[0]["i"], &rows[0]["label"]), (&serde_json::json!(0), &serde_json::json!("second")));
}

/// A fork child made while another thread of the parent is still starting the library: that
/// thread is not in the child, so the child never waits on its start-up (which would refuse every
/// call with AAR_EINVAL and say "starting" for good): it runs with the library inert
/// (AAR_EDISABLED, "disabled") and says so once. The parent, its start-up over, is unaffected.
#[test]
fn a_fork_child_of_a_parent_still_starting_runs_inert_and_says_so_once() {
    let hold = compile("cc", "hold_start", &[root().join("tests/c/hold_start.c")], &["-shared", "-fPIC"]);
    let r = Launch::program("api-fork-starting", program_with("fork_starting", &["-laar"]), "")
        .env("AAR_PAPI_LIBRARY", &hold.display().to_string())
        .run();
    assert!(r.status.success(), "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "child aar_set_mode rc=-2,-2 policy disabled\nchild status=0\nparent aar_set_mode rc=0,0 policy ADAPTIVE1\n"
    );
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("was forked while")).collect();
    assert_eq!(said.len(), 1, "said once: {:?}", r.aar_lines());
    assert!(said[0].contains("forwards every call of this process untouched"), "{}", said[0]);
    assert!(!r.aar_lines().iter().any(|l| l.contains("was called while")), "not refused: {:?}", r.aar_lines());
}

/// An iteration ended after libaar.so's exit handler wrote the records (from an atexit handler
/// registered before the library's first call) is in neither the iteration record nor the
/// summary record's ab.iterations: one line on stderr says so, once however many end so, and
/// how to avoid it. Nothing is lost silently.
#[test]
fn iterations_ended_after_exit_are_said_once() {
    let r = Launch::program("api-after-exit-said", api_edges(), "after-exit").run();
    assert!(r.status.success(), "{}", r.stderr);
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("after libaar.so's exit handler")).collect();
    assert_eq!(said.len(), 1, "said once for the two iterations ended after exit: {:?}", r.aar_lines());
    for words in ["iteration 1 ended", "no row", "ab.iterations = 1", "MPI_Finalize", "atexit"] {
        assert!(said[0].contains(words), "{words:?} in {}", said[0]);
    }
    let recs = r.records();
    assert_eq!(recs.len(), 1, "{}", r.stderr);
    assert_eq!(recs[0]["ab"]["iterations"], 1, "written before the iterations after exit ended");
}

/// A thread that marks iterations while another calls exit(): what the summary record counts
/// (ab.iterations) is what the iteration record holds, every ended iteration with its row; one
/// that ends after the records were written has neither and is said. Over several runs, since
/// where the exit falls among the iterations is the scheduler's. On a loaded machine the marking
/// thread can hold the record (writing rows) through the exit handler's whole wait: the rows
/// still buffered then are not written, and the record counts them (ab.rows_unwritten_at_exit)
/// with an error on stderr, so that none is lost silently.
#[test]
fn iterations_ended_while_the_process_exits_are_counted_as_their_rows_are() {
    for run in 0..12 {
        let r = Launch::program(&format!("api-exit-race-{run}"), api_edges(), "exit-race")
            .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
            .run();
        assert!(r.status.success(), "run {run}: {}", r.stderr);
        assert_eq!(r.stdout, "raced\n", "run {run}");
        let recs = r.records();
        assert_eq!(recs.len(), 1, "run {run}: {}", r.stderr);
        let counted = recs[0]["ab"]["iterations"].as_u64().expect("ab.iterations");
        assert!(counted >= 1, "run {run}: {}", recs[0]["ab"]);
        // A number only where the exit handler did not get the iteration record in its wait.
        let not_held = recs[0]["ab"]["rows_unwritten_at_exit"].as_u64();
        let unwritten = not_held.unwrap_or(0);
        if unwritten > 0 {
            assert!(r.stderr.contains("for the iteration record in vain"), "run {run}: {}", r.stderr);
        }
        // One iteration record, unless no row was written before the exit handler's wait.
        let rows = iteration_records(&r.dir.join("out"));
        assert!(rows.len() == 1 || rows.is_empty() && unwritten > 0, "run {run}: {}", r.stderr);
        let written = rows.first().map_or(0, |(_, rows)| rows.len() as u64);
        // (A thread the scheduler lets run long before main exits passes the 100,000 rows a
        // process writes: those count, unwritten.) When the handler did not get the record, the
        // marking thread's iteration that ends as the handler counts can be counted and then
        // find the count taken, and keep no row: one at most, the thread's one in flight.
        let expected = counted.min(aar_record::MAX_ROWS);
        assert!(
            written + unwritten == expected || written + unwritten + 1 == expected && not_held.is_some(),
            "run {run}: {written} rows written and {unwritten} unwritten against ab.iterations {counted}: {}",
            recs[0]["ab"]
        );
    }
}

/// api_edges `mode` (one of its exit-while-forking modes: the process exits while a thread is
/// held inside fork()) under an A/B experiment, as `name`: it succeeds with `stdout`, and leaves
/// one summary record, the parent's (the child _exits). The run and that record.
fn exit_while_forking(name: &str, mode: &str, stdout: &str) -> (Run, Vec<serde_json::Value>) {
    let r = Launch::program(name, api_edges(), mode).env("AAR_AB", "ADAPTIVE0,ADAPTIVE3").run();
    assert!(r.status.success(), "{}", r.stderr);
    assert_eq!(r.stdout, stdout);
    let recs = r.records();
    assert_eq!(recs.len(), 1, "the parent's record (the child _exits): {}", r.stderr);
    (r, recs)
}

/// The exit handler waits only so long for the iteration record: here a thread holds it inside
/// fork() (held there by the program until after libaar.so's exit handler ran) while main calls
/// exit(). The iterations an atexit handler then ends (registered before libaar.so's first call,
/// so run after libaar.so's) come after the count the summary record has: they keep no row,
/// though the record is free by then and their rows would fill the buffer and be written. Every
/// row written is of an iteration counted (the rows and ab.iterations agree), and the iterations
/// after exit are said. Nothing here is timed: the order is the program's.
#[test]
fn iterations_ended_after_an_exit_handler_that_could_not_wait_keep_no_row() {
    let (r, recs) = exit_while_forking(
        "api-exit-while-forking",
        "exit-while-forking",
        "begin rc=0 end rc=0\nafter exit 1000 ended\n",
    );
    assert_eq!(recs[0]["ab"]["iterations"], 1, "counted at exit: iteration 0");
    // Iteration 0's row may stay in the buffer (nothing writes it after the exit handler could not):
    // fewer rows than counted is what a reader is told of; more is not.
    let rows: Vec<u64> = iteration_records(&r.dir.join("out"))
        .iter()
        .flat_map(|(_, rows)| rows.iter().map(|row| row["i"].as_u64().unwrap()))
        .collect();
    let uncounted: Vec<&u64> = rows.iter().filter(|&&i| i != 0).collect();
    assert!(
        uncounted.is_empty(),
        "{} rows of iterations not counted (first: {:?})",
        uncounted.len(),
        uncounted.first()
    );
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("after libaar.so's exit handler")).collect();
    assert_eq!(said.len(), 1, "{:?}", r.aar_lines());
    assert!(said[0].contains("iteration 1 ended") && said[0].contains("ab.iterations = 1"), "{}", said[0]);
    // Iteration 0's row was buffered when the exit handler gave up (ended just after its begin,
    // within the second after which a boundary writes rows): the record says so; no iteration
    // record had been created then.
    assert_eq!(recs[0]["ab"]["rows_unwritten_at_exit"], 1, "{}", recs[0]["ab"]);
    assert_eq!(recs[0]["ab"]["iterations_file"], serde_json::Value::Null, "{}", recs[0]["ab"]);
}

/// The rows the exit handler counted unwritten (it could not wait for the iteration record, held
/// inside fork()) stay unwritten: the atexit handler's boundaries, run after it and a second
/// later (when a boundary writes the rows buffered), write neither iteration 0's row nor an
/// iteration record, so the summary record's `rows_unwritten_at_exit` and `iterations_file` are
/// what the folder holds. Nothing here is timed: the order is the program's, and the pause only
/// makes the next write due.
#[test]
fn rows_an_exit_handler_counted_unwritten_are_not_written_after_it() {
    let (r, recs) = exit_while_forking(
        "api-exit-while-forking-pause",
        "exit-while-forking-then-pause",
        "begin rc=0 end rc=0\nafter exit 1000 ended\n",
    );
    let ab = &recs[0]["ab"];
    assert_eq!((&ab["iterations"], &ab["rows_unwritten_at_exit"]), (&1.into(), &1.into()), "{ab}");
    assert_eq!(ab["iterations_file"], serde_json::Value::Null, "{ab}");
    let written = iteration_records(&r.dir.join("out"));
    assert!(written.is_empty(), "rows written after the summary record counted them unwritten: {written:?}");
    std::fs::remove_dir_all(&r.dir).unwrap();
}

/// The same exit while a thread is held inside fork(), after 1000 iterations: more rows than
/// libaar.so buffers, so its iteration record exists and holds the rows written before the
/// buffer's last fill, and the rest are still buffered at exit. The summary record names the
/// iteration record (whose name is known without the record's lock) and counts the rows the
/// exit handler could not write; the rows written and those add up to ab.iterations, and one
/// message says so. `aar report` gives that cause for the missing rows, and not a full disk.
#[test]
fn an_exit_handler_that_could_not_wait_names_the_rows_it_could_not_write() {
    let (r, recs) =
        exit_while_forking("api-exit-while-forking-rows", "exit-while-forking 1000", "begin rc=0 end rc=0\n");
    let ab = &recs[0]["ab"];
    assert_eq!(ab["iterations"], 1000, "{ab}");
    let out = r.dir.join("out");
    let records = iteration_records(&out);
    assert_eq!(records.len(), 1, "{}", r.stderr);
    let file = ab["iterations_file"].as_str().unwrap_or_else(|| panic!("no iterations_file: {ab}"));
    assert!(out.join(file).is_file(), "{file} is the iteration record written");
    let rows: Vec<u64> = records[0].1.iter().map(|row| row["i"].as_u64().unwrap()).collect();
    assert!(rows.iter().copied().eq(0..rows.len() as u64), "rows of iterations 0 on, in order: {rows:?}");
    let unwritten = ab["rows_unwritten_at_exit"].as_u64().unwrap_or_else(|| panic!("{ab}"));
    assert!(unwritten > 0, "{ab}");
    assert_eq!(rows.len() as u64 + unwritten, 1000, "written and unwritten rows: {ab}");
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("exit handler waited")).collect();
    assert_eq!(said.len(), 1, "{:?}", r.aar_lines());
    assert!(
        said[0].contains(&format!("the {} buffered then", aar_record::count(unwritten, "row", "rows"))),
        "{}",
        said[0]
    );
    let run = std::process::Command::new(aar_command()).arg("report").arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("holds rows of only")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains(&format!(
            "holds rows of only {} of the 1000",
            aar_record::count(rows.len() as u64, "iteration", "iterations")
        )) && said[0].contains("at exit another thread held the rank's iteration record (inside fork()")
            && said[0].contains(&format!("the {} still buffered", aar_record::count(unwritten, "row", "rows")))
            && said[0].contains("join those threads before exit"),
        "{}",
        said[0]
    );
    assert!(!stderr.contains("full disk"), "{stderr}");
    std::fs::remove_dir_all(&r.dir).unwrap();
}

/// A begin refused while libaar.so is still starting (from inside the start-up, or from another
/// thread after waiting for it in vain) keeps the index it would have had: the first begin after
/// the start-up is iteration 2 after two refused ones, as on a rank that started sooner, with
/// that iteration's scheduled policy, and the summary record's ab.iterations counts the refused
/// ones (so that aar report reads the rank's rows as whole, lacking iterations 0 and 1). One
/// line says so; refused ends and labels take no index.
#[test]
fn begins_refused_while_starting_keep_their_index() {
    let hold = compile("cc", "hold_start", &[root().join("tests/c/hold_start.c")], &["-shared", "-fPIC"]);
    let r = Launch::program("api-refused-begins", api_edges(), "refused-begins")
        .env("AAR_PAPI_LIBRARY", &hold.display().to_string())
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .run();
    assert!(r.status.success(), "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "inside begin rc=-1 index -1\ninside end rc=-1\nwaiting begin rc=-1\n\
         started begin rc=0 index 2 end rc=0\nstarted begin rc=0 index 3 end rc=0\n"
    );
    let records = iteration_records(&r.dir.join("out"));
    assert_eq!(records.len(), 1, "{}", r.stderr);
    let rows: Vec<(u64, &str)> =
        records[0].1.iter().map(|row| (row["i"].as_u64().unwrap(), row["policy"].as_str().unwrap())).collect();
    assert_eq!(rows, [(2, "ADAPTIVE0"), (3, "ADAPTIVE3")]);
    let recs = r.records();
    assert_eq!(recs.len(), 1, "{}", r.stderr);
    assert_eq!(recs[0]["ab"]["iterations"], 4, "the two refused begins count");
    assert_eq!(
        recs[0]["ab"]["refused_begins"],
        serde_json::json!({"inside_start_up": 1, "start_up_elsewhere": 1}),
        "and are counted by cause"
    );
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("aar_iteration_begin was refused")).collect();
    assert_eq!(said.len(), 1, "said once: {:?}", r.aar_lines());
    assert!(said[0].contains("iteration 0 was not begun") && said[0].contains("begins iteration 1"), "{}", said[0]);
    // The refused end is said as every other refused call is: call it again.
    let others: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("still starting")).collect();
    assert_eq!(others.len(), 1, "{:?}", r.aar_lines());
    assert!(others[0].starts_with("aar: aar_iteration_end was called"), "{}", others[0]);
}

/// tests/c/api_contract.c, linked with -laar as aar.h advises, run as `case` with `env`: it checks
/// every return code and policy name aar.h promises itself and ends with "ok N checks"; the run,
/// after asserting that it succeeded and that stdout holds only the program's own lines (aar.h:
/// no function writes to stdout), preceded by `before_ok`.
fn contract(case: &str, env: &[(&str, &str)], before_ok: &str) -> Run {
    let mut launch = Launch::program(&format!("api-contract-{case}"), program_with("api_contract", &["-laar"]), case);
    for (k, v) in env {
        launch = launch.env(k, v);
    }
    let r = launch.run();
    let (before, last) = r.stdout.trim_end().rsplit_once('\n').unwrap_or(("", r.stdout.trim_end()));
    assert!(
        r.status.success() && last.starts_with("ok ") && last.ends_with(" checks"),
        "{case}: {}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(before, before_ok.trim_end(), "{case}: stdout holds only the program's lines");
    r
}

/// The rows of the one iteration record of a run: (index, policy, label).
fn rows_of(r: &Run) -> Vec<(u64, String, Option<String>)> {
    let records = iteration_records(&r.dir.join("out"));
    assert_eq!(records.len(), 1, "one iteration record: {}", r.stderr);
    let text = |v: &serde_json::Value| v.as_str().map(String::from);
    records[0]
        .1
        .iter()
        .map(|row| (row["i"].as_u64().unwrap(), text(&row["policy"]).unwrap(), text(&row["label"])))
        .collect()
}

/// Under AAR_DISABLE every call with a good argument is AAR_EDISABLED (the policy ones, the
/// iteration ones, an end with no iteration in progress too), a bad argument still AAR_EINVAL, the
/// policy "disabled" and no iteration ever in progress; nothing is written.
#[test]
fn every_call_under_the_kill_switch_is_edisabled_but_a_bad_argument() {
    let r = contract("disabled", &[("AAR_DISABLE", "1")], "");
    assert!(r.stderr.is_empty() && r.records().is_empty(), "{}", r.stderr);
    assert!(iteration_records(&r.dir.join("out")).is_empty());
}

/// The calls of aar.h as their comments say, without an A/B experiment: an end as the process's
/// first call (AAR_EINVAL), each adaptive mode pinned and every other value refused with nothing
/// changed, every name AAR_MODE takes in any case (and nothing else, non-UTF-8 included), a pause
/// that keeps the policy changed under it for the resume, a policy name that stays readable, a
/// nested begin that ends the iteration in progress, a second end refused, labels of 64 characters
/// and of every character of the set, labels with others refused. The rows are the three
/// iterations begun, each with the label it was given last; aar_version is the library's version.
#[test]
fn the_calls_do_what_aar_h_says_of_them() {
    let r = contract("calls", &[], &format!("version {}", env!("CARGO_PKG_VERSION")));
    let charset = Some("ABZabz09-_.:+/=@".to_string());
    let labels: Vec<(u64, Option<String>)> = rows_of(&r).into_iter().map(|(i, _, label)| (i, label)).collect();
    assert_eq!(labels, [(0, Some("x".repeat(64))), (1, charset), (2, Some("next".into()))]);
    assert_eq!(r.records()[0]["ab"]["iterations"], 3);
    // The first value aar_set_mode refused, the first name aar_set_mode_name refused and the first
    // label aar_iteration_label refused are said, with what was done and how to fix it (a label
    // refused unsaid left an experiment's rows without it, and aar report without its conditions);
    // the others are not said again.
    let refused: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains(") was refused")).collect();
    assert_eq!(
        refused,
        [
            "aar: aar_set_mode(0x0001) was refused: 0x0001 is GNI_DLVMODE_NO_ADAPT, not an adaptive mode. It returned \
             AAR_EINVAL and changed nothing (the policy in force is still ADAPTIVE3). Pass GNI_DLVMODE_ADAPTIVE0 (0x00), \
             GNI_DLVMODE_ADAPTIVE1 (0x20), GNI_DLVMODE_ADAPTIVE2 (0x40) or GNI_DLVMODE_ADAPTIVE3 (0x80), the uGNI \
             values, for DMAPP too (not its DMAPP_ROUTING_* values), or a name to aar_set_mode_name. Later refused \
             values are not said again.",
            "aar: aar_set_mode_name(\"\") was refused: it is not a policy. It returned AAR_EINVAL and changed nothing \
             (the policy in force is still ADAPTIVE1). Use auto, steady, off, or a fixed mode such as ADAPTIVE3 or \
             ADAPTIVE_0. Later refused values are not said again.",
            "aar: aar_iteration_label(\"café\") was refused: it is no label. It returned AAR_EINVAL and changed \
             nothing. A label is 1 to 64 characters from A-Z a-z 0-9 - _ . : + / = @ (no blank, quote or non-ASCII \
             character); the iteration keeps the label it had, if any. Later refused values are not said again.",
        ],
        "{:?}",
        r.aar_lines()
    );
}

/// Under an A/B experiment the policy calls are refused and change nothing; a pause holds across
/// iteration boundaries and, resumed, the iteration in progress has its scheduled policy, which
/// stays after its end. An iteration still in progress at exit has no row and is not counted, as
/// aar.h says (only ended iterations are).
#[test]
fn under_ab_the_schedule_alone_chooses_and_a_pause_holds_across_boundaries() {
    let r = contract("ab", &[("AAR_AB", "ADAPTIVE1,ADAPTIVE2")], "");
    let rows: Vec<(u64, String)> = rows_of(&r).into_iter().map(|(i, policy, _)| (i, policy)).collect();
    let expected: Vec<(u64, String)> =
        [(0, "ADAPTIVE1"), (1, "ADAPTIVE2"), (2, "ADAPTIVE1")].into_iter().map(|(i, p)| (i, p.to_string())).collect();
    assert_eq!(rows, expected, "iteration 3, in progress at exit, has no row");
    assert_eq!(r.records()[0]["ab"]["iterations"], 3, "nor is it counted");
    assert!(
        r.stderr.contains(
            "aar: iteration 3 was still in progress at exit (aar_iteration_begin without its aar_iteration_end): \
             it has no row and is not counted. Call aar_iteration_end after the last iteration's work"
        ),
        "and that is said: {}",
        r.stderr
    );
}

/// A fork child sees the iteration in progress at the fork; its begins and ends work (AAR_OK) and
/// switch to each iteration's scheduled policy, its label is accepted, but it writes no rows: the
/// one iteration record is the parent's, whose iterations 2 and 3 are its own, unlabelled.
#[test]
fn iterations_in_a_fork_child_switch_the_policy_but_write_no_rows() {
    let r = contract("fork", &[("AAR_AB", "ADAPTIVE1,ADAPTIVE2")], "child ok 14 checks");
    let records = iteration_records(&r.dir.join("out"));
    assert_eq!(records.len(), 1, "{}", r.stderr);
    assert_eq!(records[0].0["pid"], r.records()[0]["pid"], "the parent's");
    let rows = rows_of(&r);
    let expected: Vec<(u64, String, Option<String>)> =
        (0..4).map(|i| (i, ["ADAPTIVE1", "ADAPTIVE2"][i as usize % 2].to_string(), None)).collect();
    assert_eq!(rows, expected);
}

/// aar.f90's aar_set_mode takes a mode as a default integer (`aar_set_mode(32)`, which did not
/// compile against an interface of integer(c_int16_t) alone) or as an integer(c_int16_t); a
/// default integer out of uint16_t's range is AAR_EINVAL, not wrapped into a mode (65536 + 128 is
/// not ADAPTIVE3). Names and labels are Fortran strings: a blank-padded variable gives its text,
/// with or without c_null_char (once refused for its blanks, or read on into the array's next
/// element: "isolatedcongested").
#[test]
fn fortran_pins_a_mode_given_as_a_default_integer_or_a_c_int16_t() {
    assert!(have("gfortran"), "gfortran is missing: run scripts/setup");
    let c = |p: &str| root().join(p);
    let sources =
        [c("cabi/aar.f90"), c("tests/c/ab_posts.f90"), c("tests/c/api_fortran.f90"), c("tests/c/ab_fortran_posts.c")];
    let prog = compile("gfortran", "api_fortran", &sources, &[]);
    let r = Launch::program("api-fortran", prog, "").run();
    r.assert_ok();
    assert!(r.stdout.contains("fortran modes ok"), "{}", r.stdout);
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), [[AD1; 6].as_slice(), &[AD3; 3], &[AD2; 3]].concat());
    let labels: Vec<(u64, Option<String>)> = rows_of(&r).into_iter().map(|(i, _, label)| (i, label)).collect();
    let label = |l: &str| Some(l.to_string());
    assert_eq!(labels, [(0, label("isolated")), (1, label("congested")), (2, label("isolated"))]);
}
