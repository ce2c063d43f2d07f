//! What the library leaves behind: the per-rank record, the summary line, the decision trace,
//! and nothing on stdout.

mod common;
use common::*;

#[test]
fn rank0_prints_one_summary_line_and_every_rank_writes_its_record() {
    let script = "rdma 65536 6 0 fma 64 10 0 smsg 10 3";
    let r0 = Launch::driver("rank0", script).env("PMI_RANK", "0").env("SLURM_JOB_ID", "4242").run();
    r0.assert_ok();
    let lines = r0.aar_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("aar: policy auto: 19 messages"), "{}", lines[0]);
    assert!(lines[0].contains("ADAPTIVE0") && lines[0].contains("ADAPTIVE3"), "both modes chosen: {}", lines[0]);
    let r3 = Launch::driver("rank3", script).env("PMI_RANK", "3").env("SLURM_JOB_ID", "4242").run();
    r3.assert_ok();
    assert!(r3.stderr.is_empty(), "ranks other than 0 are silent: {}", r3.stderr);

    for (r, rank) in [(&r0, 0), (&r3, 3)] {
        let names: Vec<String> = std::fs::read_dir(r.dir.join("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "one file, no leftover .partial: {names:?}");
        assert!(names[0].starts_with(&format!("aar.4242.{rank}.")) && names[0].ends_with(".json"), "{names:?}");
        let rec = &r.records()[0];
        assert_eq!(rec["format"], "aar-record/2");
        assert_eq!(rec["rank"], rank);
        assert_eq!(rec["job_id"], "4242");
        assert_eq!(rec["settings"]["engine"]["threshold_bytes"], 4096);
        assert!(rec["git_revision"].as_str().unwrap().len() >= 7);
        assert!(
            rec["command_line"][0].as_str().unwrap().ends_with(&format!("driver-{}", std::process::id()))
                || rec["command_line"][0].as_str().unwrap().contains("driver")
        );
        let modes = &rec["modes"];
        let msgs: u64 = modes.as_object().unwrap().values().map(|m| m["messages"].as_u64().unwrap()).sum();
        let bytes: u64 = modes.as_object().unwrap().values().map(|m| m["bytes"].as_u64().unwrap()).sum();
        assert_eq!(msgs, 19);
        assert_eq!(bytes, 6 * 65536 + 10 * 64 + 3 * 14, "SMSG counts header and data");
        assert_eq!(rec["reasons"]["smsg"], 3);
        assert!(rec["time"]["init_ns"].as_u64().unwrap() > 0);
        assert!(rec["counters"]["reads"].as_u64().unwrap() >= 2, "baseline and the first window");
        let lock = if lock_can_be_biased() { "biased" } else { "never-biased" };
        assert_eq!(rec["decider"]["lock"], lock, "one thread decides");
        assert_eq!(rec["decider"]["undecided_crossings"], 0);
    }
}

/// A stderr whose reader has gone (`app 2>&1 | head`, a log filter that died): the library's
/// lines (a warning at start, the summary at exit) raise no SIGPIPE, which would kill the program.
/// It runs to its end, exits 0 and writes its record, as it does without the library.
#[test]
fn a_stderr_without_a_reader_never_kills_the_program() {
    // No counters: a warning at start-up as well as the summary at exit, and debug lines between.
    let script = "rdma 65536 3 0 fma 64 2 0";
    let launch = |test: &str| {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut l =
            Launch::driver(test, script).env("AAR_PAPI_EVENTS", "sde:::aries::NO_SUCH_EVENT").env("AAR_LOG", "debug");
        l.stderr = Some(writer.into());
        l
    };
    let without = launch("stderr-gone-without").no_preload().run();
    without.assert_ok();
    let r = launch("stderr-gone").run();
    assert!(r.status.success(), "{} (a SIGPIPE kills with status 141 from a shell)", r.status);
    assert_eq!(r.stdout, without.stdout);
    assert_eq!(r.posts("GNI_PostRdma").len(), 3);
    assert_eq!(r.records().len(), 1);
}

/// A process started with stderr closed: the trace file, opened later, must not take its number
/// (the lowest free one), or the lines written to stderr while it is open (the library's debug
/// lines here, any of the application's) would go into the trace. Every line of the trace stays
/// a JSON object.
#[test]
fn with_stderr_closed_the_library_s_files_never_take_its_place() {
    // No emulator log: the emulator's file would take the number first.
    let mut l =
        Launch::driver("stderr-closed", "rdma 65536 3 0 fma 64 2 0").unset("AAR_EMU_LOG").env("AAR_LOG", "debug");
    let trace = l.dir.join("trace.jsonl");
    l = l.env("AAR_TRACE", &trace.display().to_string());
    l.wrapper = vec!["sh".into(), "-c".into(), "exec \"$0\" \"$@\" 2>&-".into()];
    let r = l.run();
    r.assert_ok();
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(!text.contains("aar:"), "a line to stderr went into the trace:\n{text}");
    assert_eq!(read_jsonl(&trace).len(), 5, "{text}");
    assert_eq!(r.records().len(), 1);
}

/// A process started with stderr closed whose first file (its output) takes descriptor 2: the
/// library's lines (the summary at exit) must not go into it. A warning is kept in the record.
#[test]
fn with_stderr_closed_the_application_s_own_file_gets_no_line_of_the_library_s() {
    let mut l = Launch::driver("stderr-closed-app-file", "").unset("AAR_EMU_LOG").env("AAR_THRESHOLD", "banana");
    let file = l.dir.join("app-output.txt");
    l.args = ["open", &file.display().to_string(), "rdma", "65536", "3", "0", "fma", "64", "2", "0"]
        .map(String::from)
        .to_vec();
    l.wrapper = vec!["sh".into(), "-c".into(), "exec \"$0\" \"$@\" 2>&-".into()];
    let r = l.run();
    r.assert_ok();
    assert!(r.stdout.contains("open fd=2"), "the file took stderr's number: {}", r.stdout);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "data\n", "only the application's own output");
    let records = r.records();
    assert_eq!(records.len(), 1);
    assert!(records[0]["messages"].to_string().contains("AAR_THRESHOLD"), "the warning is kept in the record");
}

#[test]
fn the_summary_can_be_silenced_and_no_record_is_written_without_an_output_dir() {
    let r = Launch::driver("quiet", "fma 64 5 0").env("AAR_SUMMARY", "0").unset("AAR_OUTPUT_DIR").run();
    r.assert_ok();
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    assert!(r.records().is_empty());
}

#[test]
fn a_missing_output_dir_is_one_warning_at_start_and_the_program_continues() {
    let launch = Launch::driver("missing-out", "fma 64 5 0");
    let missing = launch.dir.join("does/not/exist").display().to_string();
    let r = launch.env("AAR_OUTPUT_DIR", &missing).env("AAR_SUMMARY", "0").run();
    r.assert_ok();
    let lines = r.aar_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("AAR_OUTPUT_DIR") && lines[0].contains(&missing), "{}", lines[0]);
    assert!(lines[0].ends_with(&format!("will not be written. Fix: mkdir -p {missing}")), "{}", lines[0]);
}

/// An output folder of 100,000 characters is said on one line of bounded length, its name quoted
/// and cut as the trace's is (said whole, it made a message of 100 KB, kept in the record too);
/// a folder whose name has a line break in it keeps the summary line on one line, the break
/// escaped in the record's name (it split the line, its second part without `aar:`).
#[test]
fn an_output_dir_of_any_length_or_characters_is_said_on_one_short_line() {
    let launch = Launch::driver("huge-out", "fma 64 3 0");
    let huge = launch.dir.join("y".repeat(100_000)).display().to_string();
    let r = launch.env("AAR_OUTPUT_DIR", &huge).env("AAR_SUMMARY", "0").run();
    r.assert_ok();
    let head = |s: &str| s.chars().take(2000).collect::<String>();
    assert_eq!(r.stderr.lines().count(), 1, "one line on stderr: {}", head(&r.stderr));
    let line = r.stderr.lines().next().unwrap();
    assert!(line.len() < 1024, "{} bytes: {}", line.len(), head(line));
    assert!(line.starts_with("aar: AAR_OUTPUT_DIR=\"") && line.contains("…\" cannot be used"), "{}", head(line));

    let launch = Launch::driver("newline-out", "fma 64 3 0");
    let folder = launch.dir.join("a\nb");
    std::fs::create_dir(&folder).unwrap();
    let r = launch.env("AAR_OUTPUT_DIR", &folder.display().to_string()).env("PMI_RANK", "0").run();
    r.assert_ok();
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert!(lines.iter().all(|l| l.starts_with("aar: ")), "{}", r.stderr);
    let summary = lines.iter().find(|l| l.starts_with("aar: policy")).unwrap();
    let name = read_records(&folder)[0]["pid"].as_u64().map(|pid| format!("aar.nojob.0.{pid}.json")).unwrap();
    let shown = format!("; record {}", folder.join(&name).display().to_string().replace('\n', "\\n"));
    assert!(summary.ends_with(&shown), "{summary}");
    assert!(folder.join(&name).is_file());
}

/// An output folder removed while the program runs (a clean-up of the job's scratch space): the
/// record cannot be written, and the line says the folder went away during the run, not to point
/// the setting at "a writable file system with room", which it was.
#[test]
fn an_output_dir_removed_during_the_run_is_said_as_such() {
    let launch = Launch::driver("vanished-out", "");
    let (started, go) = (launch.dir.join("started"), launch.dir.join("go"));
    let mut launch = launch.env("PMI_RANK", "3").env("SLURM_JOB_ID", "77");
    launch.args = ["fma", "64", "3", "0", "touch", &started.display().to_string()]
        .into_iter()
        .chain(["waitfile", &go.display().to_string(), "fma", "64", "1", "0"])
        .map(String::from)
        .collect();
    let out = launch.dir.join("out");
    let r = launch
        .through_sh(format!(
            "\"$@\" & while [ ! -e {s} ]; do sleep 0.01; done; rmdir {o} && touch {g}; wait $!",
            s = started.display(),
            o = out.display(),
            g = go.display()
        ))
        .run();
    r.assert_ok();
    let lines = r.aar_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("could not write the record aar.77.3.") && lines[0].contains("No such file"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("AAR_OUTPUT_DIR names was there when libaar.so started and is no longer"),
        "{}",
        lines[0]
    );
}

/// An output folder that is a symbolic link to nothing (a scratch folder cleaned up under it):
/// the warning names the link's target, and the fix makes that target, not the link's name
/// (`mkdir -p` of which fails: "File exists").
#[test]
fn an_output_dir_that_is_a_link_to_nothing_names_its_target() {
    let launch = Launch::driver("dangling-out", "fma 64 5 0");
    let target = launch.dir.join("cleaned/up").display().to_string();
    let link = launch.dir.join("records");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let link = link.display().to_string();
    let r = launch.env("AAR_OUTPUT_DIR", &link).env("AAR_SUMMARY", "0").run();
    r.assert_ok();
    let lines = r.aar_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(&format!(
            "AAR_OUTPUT_DIR=\"{link}\" cannot be used ({link} is a symbolic link to {target}, which does not exist)"
        )) && lines[0].ends_with(&format!(
            "will not be written. Fix: mkdir -p {target} (where the link leads), or point AAR_OUTPUT_DIR at another \
             folder."
        )),
        "{}",
        lines[0]
    );
}

/// A folder that exists on a file system mounted read-only (in a mount namespace of the test's):
/// the warning names that cause and its fix, and does not tell to create the folder.
#[test]
fn an_output_dir_on_a_read_only_file_system_is_named_as_such() {
    if !std::process::Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("note: no mount namespace here: the read-only case is not run");
        return;
    }
    let mut launch = Launch::driver("read-only-out", "fma 64 3 0");
    let ro = launch.dir.join("ro");
    std::fs::create_dir(&ro).unwrap();
    let ro = ro.display().to_string();
    let script = "mount -t tmpfs -o ro tmpfs \"$0\" || exit 97; exec \"$@\"".to_string();
    launch.wrapper = ["unshare", "-m", "sh", "-c", &script, &ro].map(String::from).to_vec();
    let r = launch.env("AAR_OUTPUT_DIR", &ro).env("AAR_SUMMARY", "0").run();
    assert_ne!(r.status.code(), Some(97), "namespace setup failed: {}", r.stderr);
    r.assert_ok();
    let lines = r.aar_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(&format!("AAR_OUTPUT_DIR=\"{ro}\" cannot be written in (Read-only file system"))
            && lines[0]
                .contains("It is on a read-only file system: point AAR_OUTPUT_DIR at a folder on a writable one.")
            && !lines[0].contains("mkdir"),
        "{}",
        lines[0]
    );
}

/// A folder the user may not write in, though its mode has the owner's write bit (another user's
/// folder, `/` here): said at start-up, by rank 0 only, as a missing one is; not an error from
/// every rank at exit. Run as `nobody` when the tests run as root (root may write anywhere).
#[test]
fn a_folder_of_another_user_s_is_one_warning_at_start_from_rank_0() {
    // /proc/self belongs to the process's effective user.
    let as_root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    if as_root && !have("setpriv") {
        eprintln!("note: running as root without setpriv: the case is not run");
        return;
    }
    let run = |rank: &str| {
        let mut l = Launch::driver(&format!("unwritable-out-{rank}"), "fma 64 3 0 rdma 65536 3 0")
            .unset("AAR_EMU_LOG")
            .env("AAR_OUTPUT_DIR", "/")
            .env("PMI_RANK", rank);
        if as_root {
            l.wrapper = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"].map(String::from).to_vec();
        }
        let r = l.run();
        r.assert_ok();
        r
    };
    let lines = run("0").aar_lines().into_iter().map(String::from).collect::<Vec<_>>();
    assert_eq!(lines.len(), 2, "one warning and the summary: {lines:?}");
    assert!(
        lines[0].contains("AAR_OUTPUT_DIR=\"/\" cannot be written in") && lines[0].contains("will not be written"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("This user may not create files in it") && !lines[0].contains("mkdir"), "{}", lines[0]);
    let other = run("1");
    assert!(other.aar_lines().is_empty(), "rank 1 says nothing: {:?}", other.aar_lines());
}

#[test]
fn relative_output_and_trace_paths_are_the_start_up_folder_s_after_the_application_moves() {
    // AAR_OUTPUT_DIR and AAR_TRACE relative to the folder the job started in; the application then
    // moves into a folder of its own (which has no `out`) before it exits, and forks a child that
    // traces. The record, the iteration record and both traces are in the start-up folder.
    let mut launch =
        Launch::driver("relative-paths", "rdma 65536 4 0 iter begin chdir run rdma 65536 4 0 iter end fork 2");
    std::fs::create_dir(launch.dir.join("run")).unwrap();
    let start = launch.dir.display().to_string();
    launch.wrapper = vec!["sh".into(), "-c".into(), "cd \"$0\" && exec \"$@\"".into(), start];
    let r = launch
        .env("AAR_OUTPUT_DIR", "out")
        .env("AAR_TRACE", "trace.%p.jsonl")
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .run();
    r.assert_ok();
    assert!(
        r.aar_lines().iter().all(|l| !l.contains("AAR_OUTPUT_DIR") && !l.contains("AAR_TRACE")),
        "{:?}",
        r.aar_lines()
    );
    let names = |d: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(r.dir.join(d))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert!(names("run").is_empty(), "nothing written in the folder moved to: {:?}", names("run"));
    let out = names("out");
    assert_eq!(out.iter().filter(|n| n.ends_with(".iterations.jsonl")).count(), 1, "{out:?}");
    assert_eq!(r.records().len(), 2, "the parent's and the child's summary records: {out:?}");
    let traces = names(".").into_iter().filter(|n| n.starts_with("trace.")).count();
    assert_eq!(traces, 2, "the parent's trace and the child's: {:?}", names("."));
}

#[test]
fn the_record_is_written_on_a_file_system_without_hard_links() {
    // vfat, DAOS's dfuse and some FUSE or object-store file systems refuse link(2): the record,
    // written under a temporary name and linked to its own, would never appear. Here link(2)
    // and linkat(2) fail with EPERM, as they do there.
    let mut launch = Launch::driver("no-links", "rdma 65536 3 0 fma 64 2 0").env("SLURM_JOB_ID", "66");
    launch.wrapper = vec![program("seccomp_exec").display().to_string(), "--no-links".into()];
    let r = launch.run();
    r.assert_ok();
    assert!(r.aar_lines().iter().all(|l| !l.contains("could not")), "{:?}", r.aar_lines());
    let recs = r.records();
    assert_eq!(recs.len(), 1, "one whole record");
    assert_eq!(recs[0]["apis"]["uGNI"]["messages"], 5, "{}", recs[0]);
    let names: Vec<String> = std::fs::read_dir(r.dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "no temporary file is left: {names:?}");
    assert!(names[0].starts_with("aar.66.") && names[0].ends_with(".json"), "{names:?}");
}

#[test]
fn two_steps_of_a_job_whose_ranks_have_one_pid_keep_both_records() {
    // Job steps in PID namespaces (a container per step): rank 0 of each step is pid 1, so a
    // record name of job, rank and pid alone would be the same for both, and the second step's
    // records could not be written (they never overwrite). The step tells them apart.
    if !std::process::Command::new("unshare").args(["-fp", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("note: no PID namespace here (unshare -fp); the test is skipped");
        return;
    }
    let out = scratch("steps-one-pid").join("out");
    std::fs::create_dir_all(&out).unwrap();
    for step in ["0", "1"] {
        let mut launch = Launch::driver(&format!("step-{step}"), "rdma 65536 3 0 iter begin rdma 65536 3 0 iter end");
        launch.wrapper = vec!["unshare".into(), "-fp".into()];
        let r = launch
            .env("AAR_OUTPUT_DIR", &out.display().to_string())
            .env("SLURM_JOB_ID", "555")
            .env("SLURM_STEP_ID", step)
            .env("SLURM_PROCID", "0")
            .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
            .run();
        r.assert_ok();
        assert!(r.aar_lines().iter().all(|l| !l.contains("could not") && !l.contains("cannot")), "{:?}", r.aar_lines());
    }
    let mut names: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "aar.555.0.0.1.iterations.jsonl",
            "aar.555.0.0.1.json",
            "aar.555.1.0.1.iterations.jsonl",
            "aar.555.1.0.1.json"
        ]
    );
}

/// A partial record of the same name (the same job, rank and pid: a container's rank 0 is pid 1 in
/// every step, and pids come round again), which another process is writing or one killed while it
/// wrote left, is left alone and does not keep this process's record from being written: it is
/// written under the next partial name, then linked to its own. With the partial name taken, the
/// record was never written, by any later process of that name.
#[test]
fn a_partial_record_of_the_same_name_is_left_alone_and_the_record_still_written() {
    for (test, theirs) in [("partial-taken", "{\"being\": \"written\"}"), ("partial-empty", "")] {
        let launch = Launch::driver(test, "rdma 65536 3 0");
        let out = launch.dir.join("out");
        let r = launch
            .through_sh(format!(
                "printf %s '{theirs}' >{}/aar.nojob.norank.$$.json.partial; exec \"$@\"",
                out.display()
            ))
            .run();
        r.assert_ok();
        assert!(r.aar_lines().iter().all(|l| !l.contains("could not")), "{test}: {:?}", r.aar_lines());
        assert_eq!(r.records().len(), 1, "{test}");
        assert_eq!(r.records()[0]["apis"]["uGNI"]["messages"], 3, "{test}");
        let mut names: Vec<String> =
            std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        let partial = out.join(&names[1]);
        assert_eq!(names.len(), 2, "{test}: the record and the other's partial only: {names:?}");
        assert!(names[1].ends_with(".json.partial"), "{test}: {names:?}");
        assert_eq!(std::fs::read_to_string(partial).unwrap(), theirs, "{test}: the other's partial stays as it was");
    }
}

/// Over NFS, link(2) can make the record's name and still fail (EEXIST: the reply was lost and
/// the request sent again found the name taken, by itself). The name is this process's record:
/// written, named in the summary, nothing said. A name that is another file stays that file's.
#[test]
fn a_link_that_made_the_name_but_failed_leaves_the_record_written() {
    let shim = compile("cc", "link_lost_reply", &[root().join("tests/c/link_lost_reply.c")], &["-shared", "-fPIC"]);
    let preload = format!("{}:{}", libaar().display(), shim.display());
    let r = Launch::driver("link-lost-reply", "rdma 65536 3 0").env("LD_PRELOAD", &preload).run();
    r.assert_ok();
    let said = r.aar_lines();
    assert!(said.iter().all(|l| !l.contains("could not")), "{said:?}");
    assert_eq!(r.records().len(), 1, "{said:?}");
    let names: Vec<String> = std::fs::read_dir(r.dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "no partial left: {names:?}");
    assert!(
        said.iter().any(|l| l.contains(&format!("; record {}", r.dir.join("out").join(&names[0]).display()))),
        "{said:?}"
    );

    // The name already another file's (an earlier run's record): link fails, and it is not ours.
    let r = Launch::driver("link-lost-reply-taken", "rdma 65536 3 0")
        .env("LD_PRELOAD", &preload)
        .with_earlier_record()
        .run();
    r.assert_ok();
    let w: Vec<_> = r.aar_lines().into_iter().filter(|l| l.contains("could not write the record")).collect();
    assert_eq!(w.len(), 1, "{:?}", r.aar_lines());
    earlier_record_kept(&r);
}

#[test]
fn ranks_that_mpirun_starts_inside_a_slurm_allocation_keep_their_own_rank() {
    // Open MPI's mpirun in an allocation: srun starts one daemon per node, and every process a
    // daemon starts inherits its SLURM_PROCID (the node's index) and SLURM_NTASKS (the number of
    // nodes) beside the rank mpirun gives it. Taken from Slurm's variables, ranks 0 and 1 of one
    // node were both rank 0 of a 2-rank job: the report kept one of them, and both spoke as rank 0.
    let out = scratch("mpirun-in-slurm").join("out");
    std::fs::create_dir_all(&out).unwrap();
    for rank in ["0", "1"] {
        let r = Launch::driver(&format!("mpirun-in-slurm-{rank}"), "iter begin rdma 65536 3 0 iter end")
            .env("AAR_OUTPUT_DIR", &out.display().to_string())
            .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
            .env("SLURM_JOB_ID", "700")
            .env("SLURM_STEP_ID", "0")
            .env("SLURM_PROCID", "0")
            .env("SLURM_NTASKS", "2")
            .env("OMPI_COMM_WORLD_RANK", rank)
            .env("OMPI_COMM_WORLD_SIZE", "4")
            .unset("AAR_EMU_LOG")
            .run();
        r.assert_ok();
        let summaries = r.aar_lines().iter().filter(|l| l.starts_with("aar: policy")).count();
        assert_eq!(summaries, usize::from(rank == "0"), "rank 0 alone says its summary: {:?}", r.aar_lines());
    }
    let headers: Vec<(u64, u64)> = iteration_records(&out)
        .iter()
        .map(|(h, _)| (h["rank"].as_u64().unwrap(), h["nranks"].as_u64().unwrap()))
        .collect();
    assert_eq!(headers, [(0, 4), (1, 4)], "mpirun's ranks, of mpirun's 4");
    let o = std::process::Command::new(aar_command()).arg("report").arg(&out).arg("--json").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("already read"), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc.pointer("/experiments/0/ranks").and_then(|r| r.as_u64()), Some(2), "both ranks are read: {doc}");
}

#[test]
fn a_requeued_job_keeps_both_runs_records_and_reports_them_apart() {
    // scontrol requeue, or a node failure: Slurm starts the job again with its job id, numbers its
    // steps from 0 again and sets SLURM_RESTART_COUNT. In PID namespaces its ranks have the pids
    // of the first run's too: named by job, step, rank and pid alone, the second run's records
    // could not be written; and even under other pids, aar report mixed the two runs' ranks into
    // one experiment, skipping the later run's as "already read".
    let namespaces = std::process::Command::new("unshare").args(["-fp", "true"]).status().is_ok_and(|s| s.success());
    let out = scratch("requeued").join("out");
    std::fs::create_dir_all(&out).unwrap();
    for (run, restart) in [("first", None), ("again", Some("1"))] {
        let mut launch = Launch::driver(&format!("requeued-{run}"), "iter begin rdma 65536 3 0 iter end")
            .env("AAR_OUTPUT_DIR", &out.display().to_string())
            .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
            .env("SLURM_JOB_ID", "910")
            .env("SLURM_STEP_ID", "0")
            .env("SLURM_PROCID", "0")
            .unset("AAR_EMU_LOG");
        if let Some(n) = restart {
            launch = launch.env("SLURM_RESTART_COUNT", n);
        }
        if namespaces {
            launch.wrapper = vec!["unshare".into(), "-fp".into()];
        }
        let r = launch.run();
        r.assert_ok();
        assert!(r.aar_lines().iter().all(|l| !l.contains("could not") && !l.contains("cannot")), "{:?}", r.aar_lines());
    }
    let records = read_records(&out);
    let runs: Vec<(&str, Option<u64>)> =
        records.iter().map(|r| (r["step"].as_str().unwrap(), r["restart"].as_u64())).collect();
    assert_eq!(runs.len(), 2, "both runs' summary records: {runs:?}");
    assert!(runs.contains(&("0", None)) && runs.contains(&("0", Some(1))), "{runs:?}");
    let experiments: Vec<String> =
        iteration_records(&out).iter().map(|(h, _)| h["experiment"].as_str().unwrap().to_string()).collect();
    assert_eq!(experiments.len(), 2, "{experiments:?}");
    assert!(experiments.contains(&"910.0".into()) && experiments.contains(&"910.0.restart1".into()), "{experiments:?}");
    let o = std::process::Command::new(aar_command()).arg("report").arg(&out).arg("--json").output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("already read"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["experiments"].as_array().map(Vec::len), Some(2), "one experiment per run: {doc}");
}

#[test]
fn a_rank_other_than_0_whose_record_cannot_be_written_says_so() {
    // The folder is there and writable, but this rank's record meets a full file system (or its
    // quota): at exit, or (in an A/B experiment) its iteration record at the first rows. Only this rank knows the record is lost; said as a warning, from rank 0
    // alone, nothing was said at all, and aar report took the rank for one that was stopped.
    if !std::process::Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("note: no mount namespace here (unshare -m); the test is skipped");
        return;
    }
    for (name, ab) in [("rank5-full", None), ("rank5-full-ab", Some("ADAPTIVE0,ADAPTIVE3"))] {
        let mut launch = Launch::driver(name, "iter begin rdma 65536 3 0 iter end")
            .env("PMI_RANK", "5")
            .env("SLURM_JOB_ID", "920")
            .unset("AAR_EMU_LOG");
        if let Some(policies) = ab {
            launch = launch.env("AAR_AB", policies);
        }
        let out = launch.dir.join("out");
        // The folder is there and writable (as the check at initialisation sees it), but full.
        let setup = "mount -t tmpfs -o size=64k tmpfs \"$o\" || exit 97; dd if=/dev/zero of=\"$o/fill\" bs=4k count=64 2>/dev/null";
        launch.wrapper = vec![
            "unshare".into(),
            "-m".into(),
            "sh".into(),
            "-c".into(),
            format!("o={}; {setup}; exec \"$@\"", out.display()),
            "sh".into(),
        ];
        let r = launch.run();
        assert_ne!(r.status.code(), Some(97), "{name}: namespace setup failed: {}", r.stderr);
        r.assert_ok();
        let lines = r.aar_lines();
        assert_eq!(lines.len(), 1, "{name}: one line, from rank 5 too: {lines:?}");
        assert!(
            lines[0].contains("aar.920.5.")
                && lines[0].contains("AAR_OUTPUT_DIR")
                && lines[0].contains("No space left on device"),
            "{name}: names the record, the setting and the cause: {}",
            lines[0]
        );
    }
}

#[test]
fn the_trace_has_one_line_per_message_with_the_documented_fields() {
    let launch = Launch::driver("trace", "rdma 65536 4 0 fma 64 3 0 fma 64 2 0x3 rdmaget 8192 2 0 smsg 8 2");
    let pattern = launch.dir.join("t.%r.%p.jsonl").display().to_string();
    let r = launch.env("AAR_TRACE", &pattern).env("PMI_RANK", "0").run();
    r.assert_ok();
    let files: Vec<_> = std::fs::read_dir(&r.dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("t.0."))
        .collect();
    assert_eq!(files.len(), 1, "%r and %p expanded: {files:?}");
    let t = read_jsonl(&files[0]);
    assert_eq!(t.len(), 13);
    for l in &t {
        for f in ["bytes", "post_type", "flits", "packets", "latency_us", "stall_ratio", "chosen", "reason"] {
            assert!(l.get(f).is_some(), "field {f} missing in {l}");
        }
    }
    assert_eq!(
        (t[0]["post_type"].as_str(), t[0]["bytes"].as_u64(), t[0]["flits"].as_u64(), t[0]["packets"].as_u64()),
        (Some("RDMA_PUT"), Some(65536), Some(5120), Some(1024))
    );
    assert_eq!(t[0]["reason"], "threshold", "no counter window yet");
    assert_eq!(t[2]["reason"], "model");
    assert_eq!(t[2]["chosen"], "ADAPTIVE0");
    assert_eq!(t[4]["reason"], "threshold");
    assert_eq!(t[4]["chosen"], "ADAPTIVE3");
    assert_eq!(t[7]["reason"], "passthrough");
    assert_eq!(t[7]["chosen"], "IN_ORDER");
    assert_eq!(
        (t[9]["post_type"].as_str(), t[9]["flits"].as_u64()),
        (Some("RDMA_GET"), Some(128)),
        "a GET request is one flit per packet"
    );
    assert_eq!((t[11]["post_type"].as_str(), t[11]["reason"].as_str()), (Some("SMSG"), Some("smsg")));
    // The chosen modes in the trace are what reached the emulator.
    let rdma = r.dlvr_modes("GNI_PostRdma");
    let traced: Vec<&str> =
        t.iter().filter(|l| l["call"] == "GNI_PostRdma").map(|l| l["chosen"].as_str().unwrap()).collect();
    let names: Vec<&str> = rdma
        .iter()
        .map(|m| match m {
            0 => "ADAPTIVE0",
            0x80 => "ADAPTIVE3",
            _ => "?",
        })
        .collect();
    assert_eq!(traced, names);
}

/// A trace stops at `AAR_TRACE_MAX` (one line on every post of a long job would fill the file
/// system), after whole lines only, with one warning that names the variable; routing goes on.
#[test]
fn the_trace_stops_whole_at_its_cap_and_routing_goes_on() {
    let launch = Launch::driver("trace-max", "rdma 65536 40 0 fma 64 40 0");
    let path = launch.dir.join("t.jsonl");
    let r = launch.env("AAR_TRACE", &path.display().to_string()).env("AAR_TRACE_MAX", "4K").run();
    r.assert_ok();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.len() <= 4096 && text.len() > 3072, "{} bytes", text.len());
    assert!(text.ends_with('\n'));
    let lines = read_jsonl(&path);
    assert_eq!(lines.len(), text.lines().count(), "every line is whole JSON");
    let warnings: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("AAR_TRACE_MAX")).collect();
    assert_eq!(warnings.len(), 1, "{}", r.stderr);
    assert!(warnings[0].contains(&format!("reached AAR_TRACE_MAX=4K after {} lines", lines.len())), "{}", warnings[0]);
    assert_eq!((r.dlvr_modes("GNI_PostRdma").len(), r.dlvr_modes("GNI_PostFma").len()), (40, 40));
    let rec = &r.records()[0];
    assert_eq!(rec["settings"]["trace_max"], 4096);
}

/// A post made after libaar.so's exit handler wrote the trace (here, from an atexit handler
/// registered before the first uGNI call, so run after the library's) goes out as always; its
/// line has no file to go to, and one message says so. A trace that stopped at its cap says
/// nothing more: it had said why it stopped.
#[test]
fn a_post_after_the_exit_handler_goes_out_and_is_said_to_have_no_trace_line() {
    let said = "has no line in the trace";
    for (test, cap, told) in [("trace-after-exit", None, 1), ("trace-after-exit-capped", Some("1K"), 0)] {
        let launch = Launch::driver(test, "postatexit 32 fma 16 30 0");
        let path = launch.dir.join("t.jsonl");
        let launch = launch.env("AAR_TRACE", &path.display().to_string());
        let r = match cap {
            Some(cap) => launch.env("AAR_TRACE_MAX", cap).run(),
            None => launch.run(),
        };
        r.assert_ok();
        assert!(r.stdout.contains("postatexit rc=0"), "{test}: {}", r.stdout);
        let sizes: Vec<u64> = read_jsonl(&path).iter().map(|l| l["bytes"].as_u64().unwrap()).collect();
        assert!(!sizes.is_empty() && sizes.iter().all(|&b| b == 16), "{test}: {sizes:?}");
        assert_eq!(sizes.len() == 30, cap.is_none(), "{test}: {} lines", sizes.len());
        let lines: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains(said)).collect();
        assert_eq!(lines.len(), told, "{test}: {}", r.stderr);
        if told > 0 {
            assert!(lines[0].contains("atexit handler") && lines[0].contains("went out as always"), "{}", lines[0]);
        }
    }
}

/// A `%` the trace pattern does not know is kept as written, and said once.
#[test]
fn an_unknown_escape_in_the_trace_pattern_is_kept_and_said() {
    let launch = Launch::driver("trace-escape", "rdma 65536 2 0 fork 1");
    let pattern = launch.dir.join("t.%p.%q").display().to_string();
    let r = launch.env("AAR_TRACE", &pattern).env("AAR_SUMMARY", "0").run();
    r.assert_ok();
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("AAR_TRACE=")).collect();
    assert_eq!(said.len(), 1, "once, though the fork child opens a trace too: {}", r.stderr);
    assert!(
        said[0].contains("%q is not one of %r (the rank), %p (the pid) or %% (a %): kept as written"),
        "{}",
        said[0]
    );
    let traces: Vec<String> = std::fs::read_dir(&r.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("t.") && n.ends_with(".%q"))
        .collect();
    assert_eq!(traces.len(), 2, "the parent's and the child's: {traces:?}");
}

#[test]
fn an_existing_trace_file_is_never_overwritten_nor_a_symlink_followed() {
    let launch = Launch::driver("trace-exists", "fma 64 3 0");
    let path = launch.dir.join("trace.jsonl");
    let victim = launch.dir.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let r = launch.env("AAR_TRACE", &path.display().to_string()).env("AAR_SUMMARY", "0").run();
    r.assert_ok();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let lines = r.aar_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("AAR_TRACE") && lines[0].contains("cannot create"), "{}", lines[0]);
    assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD3; 3], "routing continues without the trace");
}

/// `AAR_TRACE` naming a folder (the output folder, say) is said as such, with a file name in it
/// to give instead; `%r` in a process without a rank is `norank`, as README says.
#[test]
fn a_trace_pattern_naming_a_folder_says_so_and_a_rankless_process_traces_as_norank() {
    for slash in ["", "/"] {
        let launch = Launch::driver("trace-folder", "fma 64 3 0");
        let folder = launch.dir.join("out").display().to_string();
        let r = launch.env("AAR_TRACE", &format!("{folder}{slash}")).env("AAR_SUMMARY", "0").run();
        r.assert_ok();
        let lines = r.aar_lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        let fix = format!("It is a folder: name a file in it, e.g. AAR_TRACE=\"{folder}/trace.%r.%p.jsonl\".");
        assert!(lines[0].contains("no decision trace is written") && lines[0].ends_with(&fix), "{}", lines[0]);
        assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD3; 3], "routing continues without the trace");
    }

    let launch = Launch::driver("trace-norank", "fma 64 3 0");
    let pattern = launch.dir.join("t.%r.jsonl").display().to_string();
    let r = launch.env("AAR_TRACE", &pattern).unset("PMI_RANK").run();
    r.assert_ok();
    assert_eq!(read_jsonl(&r.dir.join("t.norank.jsonl")).len(), 3);
}

/// The message of a trace that reached its cap after one line says "1 line".
#[test]
fn a_trace_capped_after_one_line_says_one_line() {
    let launch = Launch::driver("trace-max-one", "rdma 65536 3 0");
    let path = launch.dir.join("t.jsonl");
    let r = launch.env("AAR_TRACE", &path.display().to_string()).env("AAR_TRACE_MAX", "300").run();
    r.assert_ok();
    assert_eq!(read_jsonl(&path).len(), 1, "a line is 250 to 300 bytes");
    let said: Vec<&str> = r.aar_lines().into_iter().filter(|l| l.contains("AAR_TRACE_MAX=300")).collect();
    assert_eq!(said.len(), 1, "{}", r.stderr);
    assert!(said[0].contains("reached AAR_TRACE_MAX=300 after 1 line; "), "{}", said[0]);
}

/// A program given thousands of arguments (its input files, say) leaves records of bounded size
/// that `aar report` reads: they keep the program's name and 16 KiB of its arguments, and say how
/// many they left out. Kept whole, 1.5 MB of arguments made an iteration record whose header line
/// no reader takes.
#[test]
fn a_long_command_line_is_cut_and_its_records_stay_readable() {
    let files: Vec<String> = (0..1500).map(|i| format!("input-{i:04}-{}", "x".repeat(990))).collect();
    let script = format!("rdma 65536 10 0 iterloop 10 {}", files.join(" "));
    let r = Launch::driver("long-command-line", &script).run();
    // The driver stops at the first argument that is not a command of its, after the others.
    assert_eq!(r.status.code(), Some(2), "{}", r.stderr);
    let rec = &r.records()[0];
    let line: Vec<&str> = rec["command_line"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(line[1..7], ["rdma", "65536", "10", "0", "iterloop", "10"]);
    let kept: usize = line[1..line.len() - 1].iter().map(|a| a.len()).sum();
    assert!((15 << 10..=16 << 10).contains(&kept), "{kept} bytes of arguments kept");
    let left_out = &files[line.len() - 1 - 7..];
    let bytes: usize = left_out.iter().map(String::len).sum();
    assert_eq!(line.last().unwrap(), &format!("... ({} more arguments, {bytes} bytes, not kept)", left_out.len()));
    let out = std::process::Command::new(aar_command()).arg("report").arg(r.dir.join("out")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.contains("skipped"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("10 iterations"), "{}", String::from_utf8_lossy(&out.stdout));
}

/// A batch system's job id is text the library does not choose: a PBS server's long host name,
/// a workflow tool's own ids, or a user's `export SLURM_JOB_ID=...` with slashes in it. Made into
/// records' names as it was, one longer than a file name may be (255 bytes) made every record
/// fail to be written; a '/' would have put the record in another folder. Two jobs whose long ids
/// differ only at the end keep names of their own.
#[test]
fn a_job_id_no_file_name_can_hold_still_names_the_records() {
    let head = format!("job/{}", "x".repeat(300));
    let mut names = Vec::new();
    for (test, job) in [("long-job-id-a", format!("{head} ä/a")), ("long-job-id-b", format!("{head} ä/b"))] {
        let r = Launch::driver(test, "iter begin rdma 65536 3 0 iter end")
            .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
            .env("SLURM_JOB_ID", &job)
            .env("PMI_RANK", "0")
            .unset("AAR_EMU_LOG")
            .run();
        r.assert_ok();
        let lines = r.aar_lines();
        assert!(lines.iter().all(|l| !l.contains("could not") && !l.contains("cannot")), "{lines:?}");
        let mut files: Vec<String> = std::fs::read_dir(r.dir.join("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files.len(), 2, "the summary and the iteration record, in the folder itself: {files:?}");
        for f in &files {
            assert!(f.len() <= 200 && f.starts_with("aar.job_xxx"), "{f}");
        }
        assert_eq!(r.records()[0]["job_id"], job.as_str(), "the record keeps the whole job id");
        let (header, rows) = &iteration_records(&r.dir.join("out"))[0];
        assert_eq!(header["experiment"], job.as_str());
        assert_eq!(rows.len(), 1);
        // Rank 0's files: what the job id made of the name is before ".0.<pid>".
        names.push(files[0][..files[0].find(".0.").unwrap()].to_string());
    }
    assert_ne!(names[0], names[1], "ids that differ only past the cut have names of their own");
}

/// The summary line counts one in the singular: it said "1 messages", "1 decisions", "1 switches"
/// and "A/B, 1 iterations".
#[test]
fn the_summary_line_says_one_in_the_singular() {
    let summary = |r: &Run| r.aar_lines().into_iter().find(|l| l.starts_with("aar: policy")).unwrap().to_string();
    let r = Launch::driver("summary-one", "iter begin rdma 65536 1 0 iter end")
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .env("PMI_RANK", "0")
        .run();
    r.assert_ok();
    let line = summary(&r);
    assert!(
        line.starts_with(
            "aar: policy ADAPTIVE0,ADAPTIVE3 (A/B, 1 iteration): 1 message, 64.0 KiB (ADAPTIVE0 100% of bytes in 1 \
             message); 1 decision, 0 switches; "
        ),
        "{line}"
    );
    // auto's first decision has no counter window: High Bias, then Adaptive to measure it.
    let r = Launch::driver("summary-one-switch", "rdma 65536 2 0").env("PMI_RANK", "0").run();
    r.assert_ok();
    let line = summary(&r);
    assert!(line.starts_with("aar: policy auto: 2 messages, 128.0 KiB ("), "{line}");
    assert!(line.contains(" in 1 message, ") && line.contains("; 2 decisions, 1 switch; "), "{line}");
}

/// AAR_LOG's diagnostics carry the prefix `aar:` as the library's other lines on stderr do (they
/// had none: a time stamp first, among the application's own lines).
#[test]
fn every_line_on_stderr_carries_the_prefix_aar_log_s_too() {
    let r = Launch::driver("log-prefix", "rdma 65536 2 0").env("AAR_LOG", "debug").env("AAR_THRESHOLD", "4 K!").run();
    r.assert_ok();
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert!(lines.iter().any(|l| l.contains(" DEBUG ")), "a debug line: {}", r.stderr);
    assert!(lines.iter().any(|l| l.starts_with("aar: AAR_THRESHOLD=")), "a warning: {}", r.stderr);
    assert!(lines.iter().all(|l| l.starts_with("aar: ")), "{}", r.stderr);
}

/// A label goes to the iteration in progress, or to the next one when none is, even around
/// boundaries that found the iteration record held (here by a thread inside fork()): after an end
/// whose row was lost, "x" is for the next iteration, not the one that ended; a label for the next
/// iteration, "y", whose begin then found the record held, is that iteration's (which has no row),
/// not the one after.
#[test]
fn a_label_goes_to_its_own_iteration_around_boundaries_that_lost_their_rows() {
    let cases = [
        ("iter begin rdma 8192 1 0 forkhold iter end forkrelease iter label x iter begin iter end", Some("x")),
        ("iter label y forkhold iter begin forkrelease iter end iter begin iter end", None),
    ];
    for (k, (script, label)) in cases.into_iter().enumerate() {
        let r = Launch::driver(&format!("label-around-lost-{k}"), script).run();
        r.assert_ok();
        assert!(r.stdout.contains("forkhold entered=1\n") && r.stdout.contains("rc=0\n"), "{}", r.stdout);
        assert!(!r.stdout.contains("rc=-"), "every call succeeds: {}", r.stdout);
        assert!(r.aar_lines().iter().any(|l| l.contains("held the iteration record")), "{}", r.stderr);
        let (_, rows) = iteration_records(&r.dir.join("out")).remove(0);
        let kept: Vec<_> = rows.iter().map(|row| (row["i"].as_u64(), row["label"].as_str())).collect();
        assert_eq!(kept, [(Some(1), label)], "{script}: {rows:?}");
    }
}

/// Under a container's seccomp filter older than faccessat2(2) (Docker's before 20.10 answered it
/// with EPERM), a folder the process can write in is not said unusable at start-up, and the record
/// is written in it.
#[test]
fn a_seccomp_filter_that_refuses_faccessat2_does_not_make_the_output_folder_unusable() {
    let mut launch = Launch::driver("seccomp-faccessat2", "rdma 65536 2 0");
    launch.wrapper =
        vec![program("seccomp_errno").display().to_string(), libc::SYS_faccessat2.to_string(), libc::EPERM.to_string()];
    let r = launch.run();
    r.assert_ok();
    assert!(r.aar_lines().iter().all(|l| !l.contains("AAR_OUTPUT_DIR")), "{}", r.stderr);
    assert_eq!(r.records().len(), 1, "{}", r.stderr);
}

/// A post made on the thread that is writing the decision trace (from a signal handler that
/// interrupted the write, or a write(2) hook that posts, as a file system client that forwards
/// writes over the network does) goes out, and its line, which cannot be written then, is counted
/// in the record and said once at exit, not lost silently.
#[test]
fn a_post_made_while_the_trace_is_written_is_counted_and_said() {
    let mut launch = Launch::program("trace-nested", program("trace_nested"), "1000").unset("AAR_EMU_LOG");
    let trace = launch.dir.join("trace.jsonl");
    launch = launch.env("AAR_TRACE", &trace.display().to_string()).env("TRACE_FILE", &trace.display().to_string());
    let r = launch.run();
    r.assert_ok();
    let (posts, nested) = (stdout_field(&r.stdout, "posts"), stdout_field(&r.stdout, "nested"));
    // One per write of the trace: its 64 KiB buffer fills several times, and the exit handler's.
    assert!(nested >= 2, "{}", r.stdout);
    let rec = r.records().pop().expect("the record");
    let messages: u64 = rec["modes"].as_object().unwrap().values().map(|m| m["messages"].as_u64().unwrap()).sum();
    assert_eq!(messages, posts, "every post went out and was counted: {rec}");
    let lines = read_jsonl(&trace).len() as u64;
    assert_eq!(lines, posts - nested, "{}", r.stderr);
    assert_eq!(
        rec["trace"],
        serde_json::json!({"lines": lines, "lines_lost_waiting": 0, "lines_lost_nested": nested}),
        "{}",
        r.stderr
    );
    let told: Vec<&str> = r.stderr.lines().filter(|l| l.contains("trace.lines_lost_nested")).collect();
    assert_eq!(told.len(), 1, "said once: {}", r.stderr);
    assert!(told[0].starts_with("aar:") && told[0].contains(&format!("{nested} post")), "{}", told[0]);
    // The exit handler's own write is no exception: a post from inside it was made before the trace ended.
    assert!(!r.stderr.contains("after libaar.so's exit handler"), "{}", r.stderr);
}

/// A process outside a job knows no rank (its records are `aar.nojob.norank.<pid>.*`): its
/// iteration record's header says none (`rank` null), not rank 0, which no process had. Two such
/// processes' records in one folder are two processes to `aar report`, each an experiment of its
/// own, not two rank 0s of one run of which one is "already read" and skipped.
#[test]
fn a_process_outside_a_job_claims_no_rank_in_its_iteration_record() {
    let script = "iter begin rdma 8192 1 0 iter end iter begin rdma 8192 1 0 iter end";
    let out = scratch("norank-iterations-both");
    std::fs::create_dir_all(&out).unwrap();
    for name in ["norank-iterations-a", "norank-iterations-b"] {
        let r = Launch::driver(name, script).run();
        r.assert_ok();
        let recs = iteration_records(&r.dir.join("out"));
        assert_eq!(recs.len(), 1, "{:?}", r.aar_lines());
        let (header, rows) = &recs[0];
        assert!(header.get("rank").is_some_and(|r| r.is_null()), "no rank, and not rank 0: {header}");
        assert_eq!(header["experiment"], "nojob", "{header}");
        assert_eq!(rows.len(), 2, "{rows:?}");
        for e in std::fs::read_dir(r.dir.join("out")).unwrap() {
            let e = e.unwrap();
            assert!(e.file_name().to_string_lossy().starts_with("aar.nojob.norank."), "{:?}", e.file_name());
            std::fs::copy(e.path(), out.join(e.file_name())).unwrap();
        }
    }
    let o = std::process::Command::new(aar_command()).arg("report").arg(&out).arg("--json").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("already read") && !err.contains("rank 0"), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let experiments = doc["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 2, "one per process: {doc}");
    let mut processes = Vec::new();
    for e in experiments {
        assert_eq!(e["ranks"], 1, "{e}");
        assert_eq!(e["iterations_used"], 2, "{e}");
        assert_eq!(e["per_rank"], serde_json::json!([]), "no ranks to compare: {e}");
        let process = e["process"].as_str().unwrap_or_else(|| panic!("its record named: {e}"));
        assert!(process.contains("aar.nojob.norank.") && process.ends_with(".iterations.jsonl"), "{e}");
        processes.push(process.to_string());
    }
    // The text says which process each experiment is: their headlines differ.
    let o = std::process::Command::new(aar_command()).arg("report").arg(&out).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    for p in &processes {
        let line = format!("experiment \"nojob\": job, a process without a rank ({p}), clock");
        assert!(text.contains(&line), "{line:?} in:\n{text}");
    }
}
