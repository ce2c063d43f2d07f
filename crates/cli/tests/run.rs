//! `aar run` end to end: the real `aar` binary starts jobs of real processes, C programs built
//! against the real libpmi.so.0 with the Cray pkg-config name (`pkg-config cray-pmi`, from the
//! build tree's .pc files); the same program also runs under MPICH's mpiexec.hydra.

use aar_testkit::{release_dir, root, target_dir};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::FromRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;

/// crates/cli/tests/c/pmi_job.c, built against the build tree's libpmi.so.0.
fn pmi_job() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| build_pmi_job(&release_dir().join("pkgconfig"), "pmi_job"))
}

/// pmi_job.c built as a Cray user's Makefile would build it, `cc -pthread pmi_job.c $(pkg-config
/// --cflags --libs cray-pmi)`, with the .pc files of `pkgconfig`.
fn build_pmi_job(pkgconfig: &Path, name: &str) -> PathBuf {
    {
        let pc = Command::new("pkg-config")
            .args(["--cflags", "--libs", "cray-pmi"])
            .env("PKG_CONFIG_PATH", pkgconfig)
            .output()
            .expect("run pkg-config (scripts/setup installs it)");
        assert!(pc.status.success(), "pkg-config cray-pmi: {}", String::from_utf8_lossy(&pc.stderr));
        let flags = String::from_utf8(pc.stdout).unwrap();
        let dir = target_dir().join("aar-tests").join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join(format!("{name}-{}", std::process::id()));
        let st = Command::new("cc")
            .args(["-O2", "-Wall", "-Wextra", "-Werror", "-pthread"])
            .arg(root().join("crates/cli/tests/c/pmi_job.c"))
            .arg("-o")
            .arg(&out)
            .args(flags.split_whitespace())
            .status()
            .expect("run cc");
        assert!(st.success(), "compiling pmi_job.c with {flags} failed");
        out
    }
}

fn aar() -> Command {
    Command::new(env!("CARGO_BIN_EXE_aar"))
}

fn aar_run(args: &[&str], program_args: &[&str]) -> Output {
    aar().arg("run").args(args).arg(pmi_job()).args(program_args).output().unwrap()
}

/// One rank's `key=value` line, by key.
type Line = BTreeMap<String, String>;

/// The ranks' report lines (`rank=...`), in rank order.
fn rank_lines(stdout: &[u8]) -> Vec<Line> {
    let mut lines: Vec<Line> = String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| l.starts_with("rank="))
        .map(|l| l.split(' ').filter_map(|w| w.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect())
        .collect();
    lines.sort_by_key(|l| l["rank"].parse::<usize>().unwrap());
    lines
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `err` has a line with `first`, and a line with `then` after it.
fn said_before(err: &str, first: &str, then: &str) -> bool {
    let at = |s: &str| err.lines().position(|l| l.contains(s));
    matches!((at(first), at(then)), (Some(a), Some(b)) if a < b)
}

/// The job folder the ranks saw, which must be gone now that `aar run` returned.
fn assert_job_dir_removed(lines: &[Line]) {
    let dir = &lines[0]["jobdir"];
    assert!(dir.starts_with("/dev/shm/aar-job-"), "job folder {dir}");
    assert!(lines.iter().all(|l| &l["jobdir"] == dir && l["jobdir_mode"] == "700"), "{lines:?}");
    assert!(!Path::new(dir).exists(), "{dir} is left behind");
}

#[test]
fn ranks_find_each_other_through_pmi() {
    let out = aar_run(&["-n", "3"], &[]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let lines = rank_lines(&out.stdout);
    assert_eq!(lines.len(), 3, "{}", text(&out.stdout));
    for (r, l) in lines.iter().enumerate() {
        assert_eq!(l["failures"], "0", "rank {r}: {}", text(&out.stderr));
        assert_eq!(l["size"], "3");
        // One rank per node: each its own clique and its own NIC address.
        assert_eq!(l["clique"], r.to_string());
        assert_eq!(l["loc_addr"], (0x100 + r).to_string());
        // Cray's PMI_Get_nid: a node's NID is its NIC address.
        assert_eq!(l["nids"], "256,257,258");
        assert_eq!(l["dev_id"], "0");
        for k in ["jobid", "ptag", "cookie"] {
            assert_eq!(l[k], lines[0][k], "{k} differs between ranks");
        }
    }
    assert!(lines[0]["cookie"].parse::<u32>().is_ok() && lines[0]["ptag"].parse::<u8>().is_ok(), "{:?}", lines[0]);
    assert_eq!(lines[0]["jobdir"], format!("/dev/shm/aar-job-{}", lines[0]["jobid"]));
    // A get of a KVS the job has not fails with the launcher's reason, not as a missing key.
    let err = text(&out.stderr);
    let wrong_kvs = format!(
        "aar: PMI_KVS_Get: the launcher refused \"cmd=get kvsname=no-such-kvs key=rank-0\": \
         \"no_KVS_no-such-kvs:_this_job_has_KVS_aar-{}\"",
        lines[0]["jobid"]
    );
    assert_eq!(err.lines().filter(|l| *l == wrong_kvs).count(), 3, "{err}");
    assert_job_dir_removed(&lines);
}

#[test]
fn ranks_per_node_make_cliques_and_share_a_nic() {
    let out = aar_run(&["-n", "3", "-N", "2"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = rank_lines(&out.stdout);
    let cliques: Vec<&str> = lines.iter().map(|l| l["clique"].as_str()).collect();
    assert_eq!(cliques, ["0,1", "0,1", "2"]);
    let nics: Vec<&str> = lines.iter().map(|l| l["loc_addr"].as_str()).collect();
    assert_eq!(nics, ["256", "256", "257"]);
    assert!(lines.iter().all(|l| l["nids"] == nics.join(",")), "{lines:?}");
    assert!(lines.iter().all(|l| l["failures"] == "0"), "{}", text(&out.stderr));

    let out = aar_run(&["-n", "2", "--ranks-per-node", "2"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = rank_lines(&out.stdout);
    assert_eq!(lines.iter().map(|l| l["clique"].as_str()).collect::<Vec<_>>(), ["0,1", "0,1"]);
    assert_job_dir_removed(&lines);
}

#[test]
fn pmi_abort_ends_the_job_with_its_code() {
    let out = aar_run(&["-n", "3"], &["abort", "1", "7"]);
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("aar: rank 1: PMI_Abort(7): pmi_job asked to abort"), "{err}");
    // (A folder another test's launcher left behind may be removed, and said, by this one.)
    let msg: Vec<&str> =
        err.lines().filter(|l| l.starts_with("aar run:") && !l.contains("that no longer runs")).collect();
    assert_eq!(msg.len(), 1, "{err}");
    assert!(msg[0].contains("rank 1") && msg[0].contains("PMI_Abort") && msg[0].contains("exit code 7"), "{err}");
    // The other two wait in a barrier that never completes, and rank 1 in PMI_Abort, as MPICH's
    // waits there: only the launcher ends them, all three, as srun ends a step.
    assert!(msg[0].contains("SIGTERM to the 3 ranks still running, rank 1 too."), "{err}");
    // The rank's own line, with the cause, first: it wrote it before it told the launcher.
    assert!(said_before(&err, "aar: rank 1: PMI_Abort(7)", "called PMI_Abort with exit code 7"), "{err}");
    // Rank 1 got that SIGTERM (and no SIGKILL after the grace: the one line above), and its PMI
    // connection stayed open, which MPICH's MPI_Abort would return to the program at.
    assert!(err.contains("pmi_job: rank 1: got SIGTERM after PMI_Abort\n"), "{err}");
    assert!(!err.contains("PMI_FD closed"), "{err}");
    assert_job_dir_removed(&rank_lines(&out.stdout));
    // A code exit() would cut to its low byte: the message says what the status will be.
    let out = aar_run(&["-n", "2"], &["abort", "0", "300"]);
    assert_eq!(out.status.code(), Some(44), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("PMI_Abort with exit code 300 (exit status 44)"), "{err}");
    assert!(said_before(&err, "aar: rank 0: PMI_Abort(300)", "called PMI_Abort with exit code 300"), "{err}");
    // MPI_Abort(comm, 0) (and a code exit() would cut to 0) is no success in a batch script.
    for code in ["0", "256"] {
        let out = aar_run(&["-n", "2"], &["abort", "1", code]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "PMI_Abort({code}): {err}");
        assert!(
            err.contains(&format!("PMI_Abort with exit code {code} (exit status 1: an abort is no success)")),
            "{err}"
        );
        assert!(said_before(&err, &format!("aar: rank 1: PMI_Abort({code})"), "called PMI_Abort with"), "{err}");
    }
    // Before PMI_Init the launcher is told on the PMI_FD it gave: an abort, not an exit code.
    let out = aar_run(&["-n", "2"], &["early", "1", "9"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.contains("aar: rank 1: PMI_Abort(9): pmi_job asked to abort before PMI_Init\n"), "{err}");
    assert!(err.contains("rank 1 (pid ") && err.contains("called PMI_Abort with exit code 9;"), "{err}");
    assert!(said_before(&err, "aar: rank 1: PMI_Abort(9)", "called PMI_Abort with exit code 9"), "{err}");
    assert!(!err.contains("exited with code"), "{err}");
    // After PMI_Finalize the launcher cannot be told: the rank's exit status alone must fail the
    // job, so a code whose low byte is 0 exits 1, not 0; another code as exit() gives it.
    for (code, status) in [("256", 1), ("0", 1), ("5", 5)] {
        let out = aar_run(&["-n", "2"], &["finalized", "1", code]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "PMI_Abort({code}) after PMI_Finalize: {err}");
        assert!(
            err.contains(&format!("aar: rank 1: PMI_Abort({code}): pmi_job asked to abort after PMI_Finalize")),
            "{err}"
        );
        assert!(err.contains("rank 1 (pid ") && err.contains(&format!("exited with code {status}")), "{err}");
        assert!(said_before(&err, "aar: rank 1: PMI_Abort(", "exited with code"), "{err}");
    }
}

#[test]
fn a_rank_killed_by_a_signal_ends_the_job() {
    let out = aar_run(&["-n", "3"], &["segv", "2"]);
    assert_eq!(out.status.code(), Some(128 + 11), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("rank 2") && err.contains("SIGSEGV"), "{err}");
    assert_job_dir_removed(&rank_lines(&out.stdout));
}

#[test]
fn a_rank_that_leaves_a_barrier_for_good_ends_the_job() {
    let out = aar_run(&["-n", "3"], &["leave", "0"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    // It called PMI_Init and exits 0 without PMI_Finalize: a failure of its own, named as such.
    assert!(
        err.contains("aar run: rank 0 (pid ") && err.contains(") exited with code 0 without calling PMI_Finalize"),
        "{err}"
    );
    assert_job_dir_removed(&rank_lines(&out.stdout));
}

/// A rank that called PMI_Init and exits 0 without PMI_Finalize while the others wait for it
/// outside PMI (for its data over the network, say: no barrier the launcher could see) ends the
/// job, as under hydra's mpiexec and Open MPI's mpirun: one line names it, says what was done and
/// what to call; the job does not wait for ever.
#[test]
fn a_rank_that_exits_without_pmi_finalize_ends_the_job() {
    let out = aar_within_60_s().args(["run", "-n", "3"]).arg(pmi_job()).args(["gone", "1"]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line = err.lines().find(|l| l.starts_with("aar run: rank 1 (pid ")).unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains(
            ") exited with code 0 without calling PMI_Finalize, after its PMI_Init: a rank that leaves a PMI job \
             early is a failure (as under hydra's mpiexec and Open MPI's mpirun), since the others may wait for it \
             for ever; call PMI_Finalize (MPI_Finalize does) before a rank exits; ending the job with exit code 1: \
             SIGTERM to the 2 other ranks still running."
        ),
        "{err}"
    );
    assert_job_dir_removed(&rank_lines(&out.stdout));
}

/// A rank whose PMI_Allgather length differs from another's: the call fails on every rank, which
/// names the rank and both lengths, instead of a copy cut to its own length (the caller's buffer
/// holds its length times the job size).
#[test]
fn an_allgather_of_unequal_lengths_fails_on_every_rank_naming_both() {
    let out = aar_run(&["-n", "3"], &["unequal", "2"]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{}: {stdout}{err}", out.status);
    let mut lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("unequal ")).collect();
    lines.sort();
    assert_eq!(lines, ["unequal rank=0 rc=-1", "unequal rank=1 rc=-1", "unequal rank=2 rc=-1"], "{err}");
    let said = |line: &str| err.lines().filter(|l| *l == line).count();
    let tail = "every rank must give the same length; nothing was written.";
    let shorter =
        format!("aar: PMI_Allgather: rank 2 gave 2000 bytes to PMI_Allgather number 2, this rank 1022: {tail}");
    let longer =
        format!("aar: PMI_Allgather: rank 0 gave 1022 bytes to PMI_Allgather number 2, this rank 2000: {tail}");
    assert_eq!((said(&shorter), said(&longer)), (2, 1), "{err}");
}

/// A PMI call on a connection the launcher closed (here: after a line longer than it reads, which
/// also ends the job; the rank ignores its SIGTERM) fails with an error that says so; the rank,
/// with SIGPIPE's default action as C programs have it, lives on (no SIGPIPE from libpmi.so.0's
/// write) and exits 0, which leaves the job's exit code that of the cut-off.
#[test]
fn a_pmi_call_on_a_connection_the_launcher_closed_fails_and_the_rank_lives() {
    let out = aar_within_60_s().args(["run", "-n", "1"]).arg(pmi_job()).arg("launcher-closed").output().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{}: {stdout}{err}", out.status);
    assert!(err.contains("bytes on its PMI_FD without a newline"), "{err}");
    assert_eq!(stdout, "launcher-closed rc=-1\n", "{err}");
    let line = err.lines().find(|l| l.starts_with("aar: PMI_Init: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains(") failed during cmd=init: Broken pipe"), "{err}");
}

/// A rank that closes its PMI_FD after PMI_Init without PMI_Finalize and runs on, while the
/// others wait for it outside PMI (no barrier the launcher could see), ends the job, as hydra's
/// proxy ends it at such a close: one line names it, says what was done and what to call.
#[test]
fn a_rank_that_closes_its_pmi_fd_without_pmi_finalize_ends_the_job() {
    // Rank 1 closes PMI_FD and waits for a signal, the others too; were the job not ended, it
    // would run until the 60 s timeout kills it.
    let out = aar_within_60_s().args(["run", "-n", "3"]).arg(pmi_job()).args(["close", "1"]).output().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(stdout.contains("closed\n") && stdout.contains("waiting rank=0\n"), "{stdout}");
    let line = err.lines().find(|l| l.starts_with("aar run: rank 1 (pid ")).unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains(
            ") closed its PMI connection (PMI_FD) without calling PMI_Finalize, after its PMI_Init, and runs on: \
             it can take part in no PMI call again, and the others may wait for it for ever (hydra's mpiexec ends \
             the job the same way); call PMI_Finalize (MPI_Finalize does) instead of closing PMI_FD; ending the \
             job with exit code 1: SIGTERM to the 3 ranks still running, rank 1 too."
        ),
        "{err}"
    );
    assert_job_dir_removed(&rank_lines(&out.stdout));
}

/// A rank that sends more than 64 KiB on its PMI_FD without a newline is cut off from PMI for
/// good: the job ends at once, in one line that names it and why, as for a rank that closes its
/// PMI_FD, not later at a barrier (here there is none: the others wait outside PMI, and the job
/// would run until the 60 s timeout killed it).
#[test]
fn a_rank_cut_off_for_a_line_too_long_ends_the_job_at_once() {
    let script = r#"if [ $PMI_RANK = 1 ]; then head -c 70000 /dev/zero | tr '\0' x >&$PMI_FD; echo sent; fi
        exec sleep 60"#;
    let out = aar_within_60_s().args(["run", "-n", "2", "sh", "-c", script]).output().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{err}");
    let line = err.lines().find(|l| l.starts_with("aar run: rank 1 (pid ")).unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains(
            ") sent more than 65536 bytes on its PMI_FD without a newline: not PMI (a PMI line is shorter); its PMI \
             connection is closed, and it can take part in no PMI call again, so the job can never complete; \
             ending the job with exit code 1: SIGTERM to the 2 ranks still running, rank 1 too."
        ),
        "{err}"
    );
    assert_eq!(err.lines().filter(|l| l.contains("65536")).count(), 1, "{err}");
}

/// An init the launcher refuses (another PMI version) leaves the rank outside PMI, as hydra's
/// refusal does: its exit without PMI_Finalize is no early leave of a PMI job, and the job
/// succeeds.
#[test]
fn a_refused_pmi_init_does_not_count_as_one() {
    let script = r#"echo cmd=init pmi_version=2 pmi_subversion=0 >&$PMI_FD; read -r r <&$PMI_FD; echo "$r""#;
    let out = aar_within_60_s().args(["run", "-n", "2", "sh", "-c", script]).output().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{err}");
    let refused = stdout.lines().filter(|l| l.contains("rc=-1 msg=aar_run_serves_PMI-1_only,_not_version_2"));
    assert_eq!(refused.count(), 2, "{stdout}");
    assert!(!err.contains("PMI_Finalize"), "{err}");
}

#[test]
fn a_rank_that_closes_its_pmi_fd_while_others_wait_in_a_barrier_ends_the_job() {
    // Rank 1 calls PMI_Finalize, which closes PMI_FD, and waits for a signal; were the job not
    // ended, it would run for ever.
    let out = aar_within_60_s().args(["run", "-n", "3"]).arg(pmi_job()).args(["linger", "1"]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(text(&out.stdout).contains("finalized\n"), "{}", text(&out.stdout));
    assert!(
        err.contains("rank 1 closed its PMI connection (PMI_FD) and runs on while ranks [")
            && err.contains("] wait in PMI_Barrier, which therefore can never complete"),
        "{err}"
    );
    assert_job_dir_removed(&rank_lines(&out.stdout));
}

#[test]
fn sigterm_to_the_launcher_ends_every_rank_and_cleans_up() {
    let mut child = aar()
        .arg("run")
        .args(["-n", "3"])
        .arg(pmi_job())
        .arg("hang")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (mut lines, mut pids) = (Vec::new(), Vec::new());
    while pids.len() < 3 {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the job ended early: {lines:?}");
        if let Some(pid) = line.trim().strip_prefix("ready pid=") {
            pids.push(pid.to_owned());
        } else {
            lines.push(line);
        }
    }
    // SAFETY: kill only sends SIGTERM to the launcher this test started.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 15), "{err}");
    assert!(err.contains("got SIGTERM: forwarded to the 3 ranks"), "{err}");
    // The ranks ignore SIGTERM: the launcher has to escalate.
    assert!(err.contains("SIGKILL"), "{err}");
    for pid in &pids {
        assert!(!Path::new("/proc").join(pid).exists(), "rank pid {pid} is still there");
    }
    assert_job_dir_removed(&rank_lines(lines.concat().as_bytes()));
}

#[test]
fn plain_programs_run_and_their_exit_code_is_the_jobs() {
    let st = aar().args(["run", "-n", "2", "true"]).status().unwrap();
    assert!(st.success());
    let out =
        aar().args(["run", "-n", "3", "--", "sh", "-c", "test $PMI_RANK = 1 && exit 5; exit 0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    let err = text(&out.stderr);
    assert!(err.contains("rank 1") && err.contains("exited with code 5"), "{err}");
}

#[test]
fn options_take_attached_values_as_srun_does_and_program_arguments_pass_untouched() {
    // `-n3 -N2`, as srun and aprun users write them; what follows PROGRAM is its own, options
    // of aar run's among it included.
    let out = aar()
        .args([
            "run",
            "-n3",
            "-N2",
            "--time=1",
            "sh",
            "-c",
            r#"echo "rank=$PMI_RANK of $PMI_SIZE local $MPI_LOCALNRANKS: $*""#,
        ])
        .args(["x", "-n", "5", "-N1", "--bogus"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "rank=0 of 3 local 2: -n 5 -N1 --bogus",
            "rank=1 of 3 local 2: -n 5 -N1 --bogus",
            "rank=2 of 3 local 1: -n 5 -N1 --bogus"
        ]
    );
}

#[test]
fn bad_arguments_are_named_and_start_nothing() {
    for (args, named) in [
        (&["run", "-n", "0", "true"][..], "0"),
        (&["run", "-N", "0", "true"][..], "0"),
        (&["run", "-n", "2"][..], "PROGRAM"),
        (&["run", "./no-such-program"][..], "\"./no-such-program\" does not exist"),
        (&["run", "no-such-program-in-path"][..], "no folder of PATH"),
        // An option aar run does not have is named as one, not looked for as PROGRAM.
        (&["run", "--no-such-option", "2", "true"][..], "unexpected argument '--no-such-option'"),
        (&["run", "-x", "true"][..], "unexpected argument '-x'"),
    ] {
        let out = aar().args(args).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(named), "{args:?}: {err}");
    }
    // A count of ranks out of range: the option, the value, what it means, that nothing was
    // started, and the fix.
    let err = text(&aar().args(["run", "-N", "0", "true"]).output().unwrap().stderr);
    assert!(
        err.starts_with(
            "error: invalid value '0' for '--ranks-per-node <K>': \"0\" is not a whole number from 1 to 4294967295 \
             (ranks per node, not a number of nodes); no job was started: give -N K with K at least 1 (1, the \
             default, puts each rank on a node of its own), as aprun -N K\n"
        ),
        "{err}"
    );
    let err = text(&aar().args(["run", "-n", "-2", "true"]).output().unwrap().stderr);
    assert!(
        err.starts_with(
            "error: invalid value '-2' for '--ranks <N>': \"-2\" is not a whole number from 1 to 4096 (the number of \
             ranks to start); no job was started: give -n N within that, as srun -n N\n"
        ),
        "{err}"
    );
    let not_executable = root().join("Cargo.toml");
    let out = aar().arg("run").arg(&not_executable).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is not a file this user may execute"), "{}", text(&out.stderr));
}

#[test]
fn outside_a_job_pmi_init_says_what_is_missing() {
    let out = Command::new(pmi_job()).env_remove("PMI_FD").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("aar: PMI_Init: PMI_FD is not set") && err.contains("aar run -n N"), "{err}");
    // A PMI_FD that is no number is quoted escaped: it may be anything.
    let out = Command::new(pmi_job()).env("PMI_FD", "\u{1b}[2J3").output().unwrap();
    let err = text(&out.stderr);
    assert!(
        err.contains(r#"aar: PMI_Init: PMI_FD="\u{1b}[2J3" is not a number"#) && !err.contains('\u{1b}'),
        "{err:?}"
    );
}

/// An MPICH program one of whose ranks calls MPI_Abort while the other waits for it.
const MPI_ABORT_C: &str = r#"#include <mpi.h>
int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1)
        MPI_Abort(MPI_COMM_WORLD, 6);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"#;

/// MPICH's MPI_Abort waits after it told the launcher (for an answer on PMI_FD, which hydra never
/// sends: it kills the ranks): aar run ends that rank with the others, with the SIGTERM its line
/// names, not with a SIGKILL after the grace.
#[test]
fn an_mpich_rank_that_calls_mpi_abort_ends_with_the_job() {
    let have = |c: &str| Command::new("sh").args(["-c", &format!("command -v {c} >/dev/null")]).status().unwrap();
    if !have("mpicc.mpich").success() {
        eprintln!("skipped: no mpicc.mpich (Debian's libmpich-dev; scripts/setup installs it)");
        return;
    }
    let dir = target_dir().join("aar-tests").join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("mpi_abort-{}.c", std::process::id()));
    std::fs::write(&src, MPI_ABORT_C).unwrap();
    let prog = dir.join(format!("mpi_abort-{}", std::process::id()));
    let st = Command::new("mpicc.mpich")
        .args(["-O2", "-Wall", "-Wextra", "-Werror"])
        .arg(&src)
        .arg("-o")
        .arg(&prog)
        .status();
    std::fs::remove_file(&src).unwrap();
    assert!(st.unwrap().success(), "compiling the MPI_Abort program with mpicc.mpich failed");
    let out = aar().args(["run", "-n", "2"]).arg(&prog).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    let msg: Vec<&str> =
        err.lines().filter(|l| l.starts_with("aar run:") && !l.contains("that no longer runs")).collect();
    // One line: no SIGKILL after the grace was needed, and no rank died of anything but the
    // launcher's SIGTERM (or exited but with the abort's code).
    assert_eq!(msg.len(), 1, "{err}");
    assert!(msg[0].contains("rank 1 (pid ") && msg[0].contains("called PMI_Abort with exit code 6;"), "{err}");
    assert!(msg[0].ends_with("SIGTERM to the 2 ranks still running, rank 1 too."), "{err}");
    // MPICH's own line (`Abort(6) on node 1 ...`), which it writes before it tells the launcher,
    // first.
    assert!(said_before(&err, "MPI_Abort(MPI_COMM_WORLD, 6)", "called PMI_Abort with exit code 6"), "{err}");
}

#[test]
fn the_same_library_works_under_mpiexec_hydra() {
    let hydra = Path::new("/usr/bin/mpiexec.hydra");
    if !hydra.exists() {
        eprintln!("skipped: no /usr/bin/mpiexec.hydra (Debian's mpich; scripts/setup installs it)");
        return;
    }
    let out = Command::new(hydra).args(["-n", "3"]).arg(pmi_job()).output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let lines = rank_lines(&out.stdout);
    assert_eq!(lines.len(), 3);
    for l in &lines {
        assert_eq!(l["failures"], "0", "{}", text(&out.stderr));
        // hydra runs all ranks on this one host: one clique, from its PMI_process_mapping.
        assert_eq!(l["clique"], "0,1,2");
        assert_eq!(l["nids"], "256,256,256");
        assert_eq!(l["jobdir"], "none");
    }
    let out = Command::new(hydra).args(["-n", "2"]).arg(pmi_job()).args(["abort", "1", "7"]).output().unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
}

#[test]
fn a_rank_that_cannot_be_started_ends_the_job() {
    let dir = target_dir().join("aar-tests").join(format!("run-noexec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("not-a-program");
    // exec fails: its interpreter does not exist.
    aar_testkit::write_script(&prog, "#!/no/such/interpreter\n");
    let out = aar().args(["run", "-n", "2"]).arg(&prog).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(err.contains("cannot start rank 0"), "{err}");
    assert!(
        err.contains("(its #! interpreter /no/such/interpreter does not exist: fix the program's first line"),
        "{err}"
    );
    // An interpreter that is no executable file (a folder) fails with EACCES: the program is
    // executable, and the line names what is not.
    let script = dir.join("bad-interpreter");
    aar_testkit::write_script(&script, &format!("#!{}\n", dir.display()));
    let out = aar().args(["run", "-n", "2"]).arg(&script).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    let named = format!("Permission denied (os error 13) (its #! interpreter {} is no executable file", dir.display());
    assert!(err.contains(&named), "{err}");
}

/// A file exec cannot run (ENOEXEC), which execvp would hand to /bin/sh, is named before any
/// rank starts: an ELF program of another machine, and a data file with its execute bit set.
#[test]
fn a_file_this_machine_cannot_execute_starts_no_rank() {
    use std::os::unix::fs::PermissionsExt;
    let dir = aar_testkit::scratch("run-foreign");
    // aar itself with e_machine (bytes 18-19, little-endian here) set to another machine's.
    let mut bytes = std::fs::read(env!("CARGO_BIN_EXE_aar")).unwrap();
    let (other, name) = if cfg!(target_arch = "aarch64") { (62u16, "x86-64") } else { (183u16, "AArch64") };
    bytes[18..20].copy_from_slice(&other.to_le_bytes());
    let foreign = dir.join("foreign");
    let data = dir.join("data.txt");
    std::fs::write(&foreign, &bytes).unwrap();
    std::fs::write(&data, "1 2 3\n").unwrap();
    for f in [&foreign, &data] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = aar().args(["run", "-n", "2"]).arg(&foreign).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let said = format!(
        "aar run: {} is an ELF 64-bit position-independent executable, {name}, but this machine runs",
        foreign.display()
    );
    assert!(err.starts_with(&said), "{err}");
    assert!(err.contains("build it for this machine") && err.contains("no job was started"), "{err}");
    let out = aar().args(["run", "-n", "2"]).arg(&data).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let said = format!(
        "aar run: {} is not an ELF file (unknown format), not a program this machine can execute",
        data.display()
    );
    assert!(err.starts_with(&said), "{err}");
    assert!(err.contains("give it a #! line") && !err.contains("rank"), "{err}");
}

/// A launcher whose every job folder already exists (another user's, or a launcher's in another
/// pid namespace sharing /dev/shm, which are not stale) names the folders, says that no rank was
/// started and how to go on.
#[test]
fn a_launcher_whose_job_folders_all_exist_names_them() {
    // The shell makes the 64 folders of its own pid, which `exec` hands to aar run: made after
    // the launcher's process started, they are no stale ones of a launcher gone.
    let script = "k=0; while [ $k -lt 64 ]; do mkdir /dev/shm/aar-job-$(($$ + k * 4194304)) || exit 99; k=$((k+1)); \
                  done; exec \"$0\" run true";
    let mut child =
        Command::new("sh").args(["-c", script, env!("CARGO_BIN_EXE_aar")]).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id() as u64;
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let st = child.wait().unwrap();
    for k in 0..64 {
        let _ = std::fs::remove_dir(format!("/dev/shm/aar-job-{}", pid + k * (1 << 22)));
    }
    assert_eq!(st.code(), Some(127), "{err}");
    let (first, last) = (format!("/dev/shm/aar-job-{pid}"), format!("/dev/shm/aar-job-{}", pid + 63 * (1 << 22)));
    assert!(err.starts_with("aar run: cannot make a job folder: the 64 job folders this launcher (pid "), "{err}");
    assert!(err.contains(&format!("{first} to {last}")), "{err}");
    assert!(err.contains("no rank was started") && err.contains(&format!("rm -r {first}")), "{err}");
}

/// A folder whose launcher was killed by SIGKILL is removed even when its pid now belongs to
/// another process, one that started after the folder last changed.
#[test]
fn a_job_folder_whose_pid_was_reused_is_removed() {
    let mut other = Command::new("sleep").arg(marker()).spawn().unwrap();
    let dir = PathBuf::from(format!("/dev/shm/aar-job-{}", other.id()));
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("topology"), "").unwrap();
    // Last changed an hour ago: long before `sleep` started.
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::open(&dir).unwrap().set_modified(hour_ago).unwrap();
    let out = aar().args(["run", "true"]).output().unwrap();
    let err = text(&out.stderr);
    let left = dir.exists();
    let _ = std::fs::remove_dir_all(&dir);
    other.kill().unwrap();
    other.wait().unwrap();
    assert!(out.status.success(), "{err}");
    // (Said by this launcher, unless one of another test removed it first.)
    assert!(!left, "{} is left: {err}", dir.display());
}

#[test]
fn job_folders_of_launchers_that_are_gone_are_removed() {
    // A job id whose launcher pid (the id modulo 2^22) does not run.
    let pid = (1..1u64 << 22).rev().find(|p| !Path::new("/proc").join(p.to_string()).exists()).unwrap();
    let stale = PathBuf::from(format!("/dev/shm/aar-job-{}", pid + 63 * (1 << 22)));
    std::fs::create_dir_all(stale.join("inside")).unwrap();
    let out = aar().args(["run", "true"]).output().unwrap();
    assert!(out.status.success());
    // Removed by this aar run or by one of the other tests' (which one says so on its stderr).
    assert!(!stale.exists(), "{} is still there", stale.display());
}

#[test]
fn the_installed_emulation_kit_builds_and_runs_a_job() {
    let prefix = target_dir().join("aar-tests").join(format!("run-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prefix);
    let st = Command::new(root().join("scripts/install"))
        .arg(&prefix)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap();
    assert!(st.status.success(), "install failed: {}", text(&st.stderr));
    let emu = prefix.join("emu");
    for f in
        ["lib/libpmi.so.0", "lib/libpmi.so", "lib/libugni.so", "lib/libdmapp.so", "include/pmi.h", "include/gni_pub.h"]
    {
        assert!(emu.join(f).exists(), "{f} not installed");
    }
    let pkgconfig = emu.join("lib/pkgconfig");
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "cray-pmi", "cray-ugni", "cray-dmapp"])
        .env("PKG_CONFIG_PATH", &pkgconfig)
        .output()
        .unwrap();
    let flags = text(&flags.stdout);
    assert!(flags.contains(&format!("-I{}", emu.join("include").display())) && !flags.contains("/release"), "{flags}");
    // Built and run from the installed tree alone: the installed aar, the installed libpmi.so.0
    // (found through the rpath of cray-pmi.pc, not through cargo's LD_LIBRARY_PATH).
    let prog = build_pmi_job(&pkgconfig, "pmi_job-installed");
    let out = Command::new(prefix.join("bin/aar"))
        .args(["run", "-n", "2"])
        .arg(&prog)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = rank_lines(&out.stdout);
    assert!(lines.len() == 2 && lines.iter().all(|l| l["failures"] == "0"), "{}", text(&out.stderr));
    let ldd = Command::new("ldd").arg(&prog).env_remove("LD_LIBRARY_PATH").output().unwrap();
    assert!(text(&ldd.stdout).contains(&emu.join("lib/libpmi.so.0").display().to_string()), "{}", text(&ldd.stdout));
}

/// A `sleep` argument that marks the processes one test starts, for [`sleeps`]: no other test
/// of this file gets it (tests run in parallel, and one that finds another's `sleep`s stops,
/// counts or kills the wrong processes), nor does another test process (this one's pid is in
/// it). Years of seconds, so such a `sleep` runs until the test ends it.
fn marker() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("9{:07}{n:03}", std::process::id())
}

/// Processes running `sleep SECONDS`: `SECONDS` (a [`marker`]) marks the ones a test started.
fn sleeps(seconds: &str) -> Vec<libc::pid_t> {
    let want = format!("sleep\0{seconds}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want.as_bytes()))
        .collect()
}

/// Wait up to 10 s for no process to run `sleep SECONDS`; those left are killed (so a failing
/// test leaves nothing behind) and returned.
fn gone_within_10_s(seconds: &str) -> Vec<libc::pid_t> {
    let start = std::time::Instant::now();
    while !sleeps(seconds).is_empty() && start.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left = sleeps(seconds);
    for &pid in &left {
        // SAFETY: kill only sends SIGKILL to a `sleep` this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    left
}

/// What the ranks leave running ends with the job, as a job step's processes do (they would hold
/// a pipe on the job's output open, so `aar run ... | tee log` would not end), and a launcher
/// killed by SIGKILL takes its ranks with it.
#[test]
fn processes_the_ranks_leave_behind_end_with_the_job() {
    let scratch = tempfile::tempdir().unwrap();
    let file = |name: &str| Stdio::from(std::fs::File::create(scratch.path().join(name)).unwrap());
    // Rank 0 fails; rank 1's shell ends at SIGTERM, its `sleep` does not (it is not signalled).
    // Rank 2 exits 0 and leaves a `sleep` in the background.
    let (orphan, daemon) = (marker(), marker());
    let script = format!(
        "case $PMI_RANK in 0) sleep 0.5; exit 3;; 1) sleep {orphan}; exit 0;; *) sleep {daemon} & exit 0;; esac"
    );
    let st = aar()
        .args(["run", "-n", "3", "--", "sh", "-c", &script])
        .stdout(file("out"))
        .stderr(file("err"))
        .status()
        .unwrap();
    let err = std::fs::read_to_string(scratch.path().join("err")).unwrap();
    assert_eq!(st.code(), Some(3), "{err}");
    assert!(gone_within_10_s(&orphan).is_empty() && gone_within_10_s(&daemon).is_empty(), "{err}");
    assert!(err.contains("aar run: the ranks left 2 processes running (pids ["), "{err}");
    // SIGKILL to the launcher: no handler of its runs, its ranks end all the same.
    let held = marker();
    let mut launcher = aar().args(["run", "-n", "2", "sleep", &held]).stderr(Stdio::null()).spawn().unwrap();
    let start = std::time::Instant::now();
    while sleeps(&held).len() < 2 && start.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(sleeps(&held).len(), 2, "both ranks started");
    launcher.kill().unwrap();
    launcher.wait().unwrap();
    // Its job folder, which it could not remove (the next aar run would, and say so).
    let _ = std::fs::remove_dir_all(format!("/dev/shm/aar-job-{}", launcher.id()));
    assert_eq!(gone_within_10_s(&held), [], "ranks outlived their launcher");
}

/// `aar` under coreutils' `timeout -s KILL 60`: a launcher that fails to end a hung job fails
/// the test (exit status 137; its ranks end with it) instead of hanging it.
fn aar_within_60_s() -> Command {
    let mut c = Command::new("timeout");
    c.args(["-s", "KILL", "60", env!("CARGO_BIN_EXE_aar")]);
    c
}

/// `aar run ARGS` with its stderr left unread until its stdout says `until` (or closes, the
/// launcher killed at 60 s): the job's stdout, its stderr, and its exit status.
fn run_with_stderr_unread_until(args: &[&str], until: impl Fn(&str) -> bool) -> (String, String, ExitStatus) {
    let mut child = aar_within_60_s().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let mut out = String::new();
    while !until(&out) {
        if stdout.read_line(&mut out).unwrap() == 0 {
            break;
        }
    }
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    stdout.read_to_string(&mut out).unwrap();
    (out, err, child.wait().unwrap())
}

/// A hung job ends at its time limit (`--time`, else `MPIEXEC_TIMEOUT`): one message names the
/// limit and the ranks still running (the first eight, and how many more), and the exit status is
/// 124, as GNU timeout's.
#[test]
fn a_job_past_its_time_limit_is_ended() {
    let held = marker();
    // Every rank waits for ever; none is in a barrier the launcher could see as stuck.
    let out = aar_within_60_s().args(["run", "-n", "10", "--time", "0:01", "sleep", &held]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{err}");
    let msg: Vec<&str> =
        err.lines().filter(|l| l.starts_with("aar run:") && !l.contains("that no longer runs")).collect();
    assert_eq!(msg.len(), 1, "{err}");
    assert!(
        msg[0].contains(
            "the time limit of 0:00:01 (--time 0:01) ran out with ranks still running (0, 1, 2, 3, 4, 5, 6, 7 and 2 more)"
        )
            && msg[0].contains("exit code 124"),
        "{err}"
    );
    assert_eq!(gone_within_10_s(&held), [], "ranks outlived the time limit");

    // Ranks in a barrier that one never enters (it ignores SIGTERM: the limit escalates to SIGKILL).
    let out = aar_within_60_s()
        .args(["run", "-n", "2"])
        .arg(pmi_job())
        .arg("hang")
        .env("MPIEXEC_TIMEOUT", "1")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{err}");
    assert!(err.contains("(MPIEXEC_TIMEOUT=1) ran out with ranks still running (0, 1)"), "{err}");
    assert!(err.contains("did not end within 3 s of SIGTERM: SIGKILL"), "{err}");
    assert_job_dir_removed(&rank_lines(&out.stdout));

    // --time wins over MPIEXEC_TIMEOUT; 0 is no limit.
    let out = aar().args(["run", "--time", "0", "sleep", "1.5"]).env("MPIEXEC_TIMEOUT", "1").output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Bad limits are named, and start nothing.
    for (time, env, named) in [
        (Some("1:2:3:4"), None, "\"1:2:3:4\" is no time limit"),
        (Some("-5"), None, "\"-5\" is no time limit"),
        (Some("10m"), None, "\"10m\" is no time limit"),
        (None, Some("10m"), "MPIEXEC_TIMEOUT=\"10m\" is not a whole number of seconds"),
    ] {
        let out = echo_job_with_limit(aar(), 1, time, env);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{time:?} {env:?}: {err}");
        assert!(err.contains(named) && out.stdout.is_empty(), "{time:?} {env:?}: {err}");
    }
}

/// `aar run -n N sh -c 'echo started'` through `aar` (a command for the aar binary), with
/// `--time` and `MPIEXEC_TIMEOUT` when given.
fn echo_job_with_limit(mut aar: Command, n: u32, time: Option<&str>, env: Option<&str>) -> Output {
    aar.args(["run", "-n", &n.to_string()]);
    if let Some(t) = time {
        aar.args(["--time", t]);
    }
    if let Some(e) = env {
        aar.env("MPIEXEC_TIMEOUT", e);
    }
    aar.args(["sh", "-c", "echo started"]).output().unwrap()
}

/// A time limit longer than the clock can count to (still a number srun's formats allow) never
/// runs out: the job runs as without one, instead of the launcher panicking (exit status 101)
/// when it starts the ranks.
#[test]
fn a_time_limit_past_what_the_clock_holds_is_no_limit() {
    for (time, env) in [(Some("200000000000000000"), None), (None, Some("18446744073709551615"))] {
        let out = echo_job_with_limit(aar_within_60_s(), 2, time, env);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{time:?} {env:?}: {err}");
        assert_eq!(text(&out.stdout), "started\nstarted\n", "{time:?} {env:?}: {err}");
    }
}

/// A stderr that cannot be written (`aar run ... 2>&1 | head` once head is gone) loses the
/// launcher's lines, nothing else: it still ends the job with the failing rank's code and ends
/// what the ranks left running, instead of dying of the write (a panic, exit status 101) and
/// leaving them running.
#[test]
fn a_closed_stderr_does_not_stop_the_launcher_from_ending_the_job() {
    let left = marker();
    let (reader, writer) = std::io::pipe().unwrap();
    // Closed before the launcher starts: each of its writes to stderr fails (EPIPE).
    drop(reader);
    let script = format!("sleep {left} & exit $((PMI_RANK + 3))");
    let st = aar_within_60_s()
        .args(["run", "-n", "2", "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(writer)
        .status()
        .unwrap();
    assert!(matches!(st.code(), Some(3 | 4)), "{st}");
    assert_eq!(gone_within_10_s(&left), [], "processes the ranks left outlived the job");
}

/// A signal ignored when `aar run` starts (`nohup aar run`, `aar run &` in a script) stays
/// ignored, by the launcher and by its ranks: a hangup does not end a job started under nohup.
#[test]
fn signals_ignored_when_the_launcher_starts_stay_ignored() {
    use std::os::unix::process::CommandExt;
    let scratch = tempfile::tempdir().unwrap();
    let go = scratch.path().join("go");
    let script = format!(
        "grep SigIgn /proc/self/status; echo ready; while [ ! -e {} ]; do sleep 0.05; done; echo done",
        go.display()
    );
    let mut cmd = aar();
    cmd.args(["run", "-n", "2", "--time", "1:00", "--", "sh", "-c", &script]);
    // SAFETY: signal is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            libc::signal(libc::SIGUSR1, libc::SIG_IGN);
            Ok(())
        });
    }
    let job = Job::spawn(cmd);
    job.expect_lines(2, "ready");
    job.signal(libc::SIGHUP);
    job.signal(libc::SIGUSR1);
    std::fs::write(&go, "").unwrap();
    let (st, err, out) = job.finish_with_output();
    assert_eq!(st.code(), Some(0), "{err}");
    assert!(!err.contains("got SIGHUP") && !err.contains("got SIGUSR1"), "{err}");
    // SIGHUP is bit 0 of the mask, SIGUSR1 bit 9: 0x201.
    let masks: Vec<&str> = out.lines().filter(|l| l.starts_with("SigIgn:")).collect();
    assert_eq!(masks.len(), 2, "{out}");
    for m in masks {
        let mask = u64::from_str_radix(m.trim_start_matches("SigIgn:").trim(), 16).unwrap();
        assert_eq!(mask & 0x201, 0x201, "a rank's {m}");
    }
}

/// A signal mask inherited through exec (a parent that blocked SIGCHLD, SIGINT and SIGTERM and
/// exec'd aar run without restoring it) hides no end of a rank and no request to end from the
/// launcher: ranks that leave a process holding their output open end the job (their SIGCHLD is
/// all that tells it), and SIGTERM ends a job.
#[test]
fn signals_blocked_when_the_launcher_starts_are_seen() {
    use std::os::unix::process::CommandExt;
    let blocked = |args: &[&str]| {
        let mut cmd = aar();
        cmd.arg("run").args(args);
        // SAFETY: sigemptyset, sigaddset and sigprocmask are async-signal-safe; the set is local.
        unsafe {
            cmd.pre_exec(|| {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                for sig in [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM] {
                    libc::sigaddset(&mut set, sig);
                }
                libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                Ok(())
            });
        }
        cmd
    };
    let left = marker();
    let script = format!("sleep {left} & exit 0");
    let (st, err) = Job::spawn(blocked(&["-n", "2", "--", "sh", "-c", &script])).finish();
    assert_eq!(st.code(), Some(0), "{err}");
    assert!(err.contains("aar run: the ranks left 2 processes running"), "{err}");
    assert_eq!(gone_within_10_s(&left), [], "processes the ranks left outlived the job");
    let held = marker();
    let script = format!("echo ready; exec sleep {held}");
    let job = Job::spawn(blocked(&["-n", "2", "--", "sh", "-c", &script]));
    job.expect_lines(2, "ready");
    job.signal(libc::SIGTERM);
    let (st, err) = job.finish();
    assert_eq!(st.code(), Some(128 + libc::SIGTERM), "{err}");
    assert!(err.contains("aar run: got SIGTERM: forwarded to the 2 ranks still running"), "{err}");
    assert_eq!(gone_within_10_s(&held), [], "ranks outlived the job");
}

/// The bytes of a rank's file in the job folder, as `aar run`'s capacity check counts them
/// (crates/cli/src/run/capacity.rs, RANK_FILE_BYTES).
const RANK_FILE_BYTES: u64 = 8_869_040;

/// examples/cray/all_pairs.c (every rank puts to every other through the emulated uGNI), built
/// with `pkg-config cray-pmi cray-ugni` of the build tree.
fn all_pairs() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let release = release_dir();
        let pc = Command::new("pkg-config")
            .args(["--cflags", "--libs", "cray-pmi", "cray-ugni"])
            .env("PKG_CONFIG_PATH", release.join("pkgconfig"))
            .output()
            .unwrap();
        assert!(pc.status.success(), "{}", text(&pc.stderr));
        let dir = target_dir().join("aar-tests").join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let prog = dir.join(format!("all_pairs-{}", std::process::id()));
        let st = Command::new("cc")
            .arg("-O2")
            .arg(root().join("examples/cray/all_pairs.c"))
            .arg("-o")
            .arg(&prog)
            .args(text(&pc.stdout).split_whitespace())
            .status()
            .unwrap();
        assert!(st.success());
        prog
    })
}

/// The address space a small uGNI rank takes besides the rank files it maps, as
/// crates/cli/src/run/capacity.rs counts it (RANK_BASE_BYTES).
const RANK_BASE_BYTES: u64 = 8 << 20;

/// An address-space limit (`ulimit -v`, which the ranks inherit) below what a rank that reaches
/// every rank through the emulated uGNI needs is named before the job starts, with the fix; the
/// job starts all the same (a rank without uGNI needs little). Within the limit the check asks
/// for, such ranks run.
#[test]
fn an_address_space_limit_too_low_for_the_ranks_is_named() {
    let need = 3 * RANK_FILE_BYTES.div_ceil(4096) * 4096 + RANK_BASE_BYTES;
    let aar_path = env!("CARGO_BIN_EXE_aar");
    let out = Command::new("prlimit")
        .arg(format!("--as={need}"))
        .args(["--", aar_path, "run", "-n", "3"])
        .arg(all_pairs())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "all_pairs within --as={need}: {}\n{err}", text(&out.stdout));
    assert!(!err.contains("ulimit -v"), "{err}");

    let low = need - 1;
    let out = Command::new("prlimit")
        .arg(format!("--as={low}"))
        .args(["--", aar_path, "run", "-n", "3", "sh", "-c", "echo started"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(text(&out.stdout).matches("started").count(), 3, "{err}");
    assert!(
        err.contains(&format!(
            "the address-space limit (ulimit -v, RLIMIT_AS), which the ranks inherit, is {} KiB",
            low / 1024
        )) && err.contains("a job of 3 ranks that reaches every rank through the emulated uGNI")
            && err.contains("The job is started all the same")
            && err.contains(&format!("ulimit -v unlimited, or at least ulimit -v {}", need.div_ceil(1024)))
            && err.contains("or run fewer ranks (-n 2 fits)"),
        "{err}"
    );

    // With room for its own file and one peer's only, a uGNI rank says which peer it cannot map
    // and why, where its post only failed with GNI_RC_INVALID_PARAM.
    let short = need - RANK_FILE_BYTES.div_ceil(4096) * 4096 / 2;
    let out = Command::new("prlimit")
        .arg(format!("--as={short}"))
        .args(["--", aar_path, "run", "-n", "3"])
        .arg(all_pairs())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("aar-emu: cannot map rank ")
            && err.contains("posts to it fail with GNI_RC_INVALID_PARAM")
            && err.contains("raise the address-space limit (ulimit -v) or run fewer ranks"),
        "{err}"
    );
}

/// A file size limit (`ulimit -f`, which batch systems pass on to the ranks) below the file a
/// rank's emulated uGNI allocates whole at its first call fails that rank's `GNI_CdmAttach`:
/// named before the job starts, with the fix, and by the rank itself; no rank is killed. At that
/// file's size the ranks run and nothing is said.
#[test]
fn a_file_size_limit_below_a_ranks_emulator_file_is_named() {
    let run = |fsize: u64| {
        Command::new("prlimit")
            .arg(format!("--fsize={fsize}"))
            .args(["--", env!("CARGO_BIN_EXE_aar"), "run", "-n", "2", "--time", "1"])
            .arg(all_pairs())
            .output()
            .unwrap()
    };
    let out = run(RANK_FILE_BYTES);
    let err = text(&out.stderr);
    assert!(out.status.success(), "all_pairs within --fsize={RANK_FILE_BYTES}: {}\n{err}", text(&out.stdout));
    assert!(!err.contains("ulimit -f"), "{err}");

    let out = run(RANK_FILE_BYTES - 1);
    let err = text(&out.stderr);
    // all_pairs aborts the job (PMI_Abort(1)) when its attach fails.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("SIGXFSZ"), "no rank is killed: {err}");
    let warning = err.find(&format!(
        "aar run: the file size limit (ulimit -f, RLIMIT_FSIZE), which the ranks inherit, is {} bytes",
        RANK_FILE_BYTES - 1
    ));
    let rank = err.find("aar-emu: the file size limit");
    assert!(warning.is_some() && rank.is_some() && warning < rank, "{err}");
    assert!(
        err.contains("so such a rank's GNI_CdmAttach will fail with GNI_RC_ERROR_RESOURCE")
            && err.contains(&format!("ulimit -f unlimited, or at least {} KiB", RANK_FILE_BYTES.div_ceil(1024))),
        "{err}"
    );
}

/// What the capacity check counts per rank is what a rank of a uGNI program takes of /dev/shm.
#[test]
fn the_capacity_check_counts_what_a_rank_takes_of_dev_shm() {
    let prog = all_pairs();
    // Each rank's file after the program ended (the folder goes when the job does): its length
    // and the bytes allocated to it.
    let script = r#""$0" || exit 9; stat -c "file=%s blocks=%b of=%B" "$AAR_EMU_JOB_DIR/rank-$PMI_RANK""#;
    let out = aar().args(["run", "-n", "2", "--", "sh", "-c", script]).arg(prog).output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let stdout = text(&out.stdout);
    let sizes: Vec<(u64, u64)> = stdout
        .lines()
        .filter_map(|l| {
            let (len, rest) = l.strip_prefix("file=")?.split_once(" blocks=")?;
            let (blocks, of) = rest.split_once(" of=")?;
            Some((len.parse().ok()?, blocks.parse::<u64>().ok()? * of.parse::<u64>().ok()?))
        })
        .collect();
    assert_eq!(sizes.len(), 2, "{stdout}");
    for (len, allocated) in sizes {
        assert_eq!(len, RANK_FILE_BYTES, "the emulator's rank file changed size: update capacity.rs and this test");
        assert!(allocated <= RANK_FILE_BYTES.div_ceil(4096) * 4096, "{allocated} bytes allocated");
        assert!(allocated >= RANK_FILE_BYTES, "{allocated} bytes allocated: not allocated whole?");
    }
}

/// A job too big for this machine's /dev/shm or limits is refused before any rank starts, with
/// the need, what there is, and the fix.
#[test]
fn a_job_too_big_for_this_machine_is_refused_before_it_starts() {
    let aar_path = env!("CARGO_BIN_EXE_aar");
    // A private /dev/shm of 20 MiB: room for 2 ranks, not 4.
    let script = format!(
        "mount -t tmpfs -o size=20m tmpfs /dev/shm || exit 97; {aar_path} run -n 4 sh -c 'echo started'; rc=$?; \
         echo left: $(ls /dev/shm) >&2; exit $rc"
    );
    let out = Command::new("unshare").args(["-m", "sh", "-c", &script]).output().unwrap();
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(97), "namespace setup failed: {err}");
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains("a job of 4 ranks needs 33.9 MiB of /dev/shm for the emulator's shared state (8.5 MiB per rank)")
            && err.contains("and it has 20.0 MiB free of 20.0 MiB; no rank was started. Run fewer ranks (-n 2 fits)")
            && err.contains("mount -o remount,size="),
        "{err}"
    );
    assert!(out.stdout.is_empty() && err.contains("left:\n"), "{err}");
    // Room for no rank: the fix does not suggest `-n 0`, which is no job.
    let script = format!("mount -t tmpfs -o size=4m tmpfs /dev/shm || exit 97; {aar_path} run -n 1 true");
    let out = Command::new("unshare").args(["-m", "sh", "-c", &script]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains("no rank was started. Not even one rank fits: free /dev/shm (") && !err.contains("-n 0"),
        "{err}"
    );

    // Open files: a socket and two pipes per rank. A soft limit too low is raised (the ranks get it back); a
    // hard limit too low refuses the job.
    let ranks_see = "test $(ulimit -n) = 40 || echo rank sees $(ulimit -n)";
    let out = Command::new("prlimit")
        .args(["--nofile=40:4096", "--", aar_path, "run", "-n", "50", "sh", "-c", ranks_see])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{}{}", text(&out.stdout), text(&out.stderr));
    let out =
        Command::new("prlimit").args(["--nofile=40:40", "--", aar_path, "run", "-n", "50", "true"]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains("a job of 50 ranks needs 166 open files in aar run")
            && err.contains("its limit is 40 (hard limit 40); no rank was started. Run at most -n 8 ranks")
            && err.contains("ulimit -n 166"),
        "{err}"
    );
    let out =
        Command::new("prlimit").args(["--nofile=12:12", "--", aar_path, "run", "-n", "4", "true"]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains("no rank was started. Not even one rank fits: raise the hard limit (ulimit -n 28 as root"),
        "{err}"
    );
    assert!(!err.contains("-n 0"), "{err}");

    // Processes: the kernel does not count root's, so as nobody without capabilities.
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped the process limit: needs root to run aar run as nobody");
        return;
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"])
        .args(["prlimit", "--nproc=20:20", "--", aar_path, "run", "-n", "50", "sh", "-c", "echo started"])
        .current_dir("/")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains("a job of 50 ranks needs 100 more processes and threads of user 65534")
            && err.contains("the limit is 20 (ulimit -u)")
            && err.contains("no rank was started"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

/// A job of `aar run` over `sh -c SCRIPT`, its stdout read line by line on a thread (so a job
/// that misbehaves fails the test at a deadline instead of hanging it); killed if the test fails.
struct Job {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    /// Lines [`Job::expect_lines`] passed over.
    skipped: std::cell::RefCell<Vec<String>>,
}

impl Job {
    fn start(args: &[&str], script: &str, session: Session) -> Job {
        use std::os::unix::process::CommandExt;
        let mut cmd = aar();
        cmd.arg("run").args(args).args(["--", "sh", "-c", script]).stdout(Stdio::piped()).stderr(Stdio::piped());
        match session {
            // As a shell starts a job: its own process group, its parent (the shell) in another
            // of the same session.
            Session::Job => {
                cmd.process_group(0);
            }
            // A new session: an orphaned process group (a daemon's, a batch system's), in which
            // the kernel discards SIGTSTP.
            Session::Orphaned => unsafe {
                // SAFETY: setsid is async-signal-safe.
                cmd.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
            },
        }
        Job::spawn(cmd)
    }

    /// `cmd` started with its stdout and stderr piped, stdout read line by line on a thread.
    fn spawn(mut cmd: Command) -> Job {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Job { child, lines, skipped: Default::default() }
    }

    fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// Wait up to 30 s for `n` lines that start with `prefix` (other lines are kept for
    /// [`Job::finish_with_output`]).
    fn expect_lines(&self, n: usize, prefix: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut seen = 0;
        while seen < n {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => seen += 1,
                Ok(line) => self.skipped.borrow_mut().push(line),
                Err(e) => panic!("{seen} of {n} lines \"{prefix}...\" within 30 s ({e})"),
            }
        }
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill only sends a signal to the launcher this test started.
        assert_eq!(unsafe { libc::kill(self.pid(), sig) }, 0);
    }

    /// As [`Job::finish`], and the stdout lines [`Job::expect_lines`] did not take (read to the
    /// end of the output, up to 30 s).
    fn finish_with_output(mut self) -> (std::process::ExitStatus, String, String) {
        let (st, err) = self.wait_for_exit();
        let mut out = self.skipped.take();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while let Ok(line) = self.lines.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            out.push(line);
        }
        (st, err, out.join("\n"))
    }

    /// Wait up to 60 s for the launcher to exit: its status and stderr.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        self.wait_for_exit()
    }

    fn wait_for_exit(&mut self) -> (std::process::ExitStatus, String) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                let mut err = String::new();
                std::io::Read::read_to_string(&mut self.child.stderr.take().unwrap(), &mut err).unwrap();
                return (st, err);
            }
            assert!(std::time::Instant::now() < deadline, "aar run did not exit within 60 s");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // A test that failed: the launcher goes, and its ranks with it (PR_SET_PDEATHSIG).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone, Copy, Debug)]
enum Session {
    Job,
    Orphaned,
}

/// A process's state (R, S, T...) from /proc/PID/stat; None once it is gone.
fn state(pid: libc::pid_t) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().next()?.chars().next()
}

/// The descendants of `pid`, from /proc.
fn descendants(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let parent = |p: libc::pid_t| -> Option<libc::pid_t> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    let all: Vec<(libc::pid_t, libc::pid_t)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter_map(|p| Some((p, parent(p)?)))
        .collect();
    let (mut found, mut parents) = (Vec::new(), vec![pid]);
    while let Some(p) = parents.pop() {
        for &(child, _) in all.iter().filter(|(_, pp)| *pp == p) {
            found.push(child);
            parents.push(child);
        }
    }
    found
}

/// Poll up to 30 s for `check`; whether it held.
fn within_30_s(mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !check() {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

/// SIGTSTP to `aar run` (Ctrl-Z, or `kill -TSTP` of the launcher alone) stops every process of
/// the job, the ranks' children too, then the launcher; SIGCONT resumes them all, and the time
/// the job was stopped does not count against its time limit. In an orphaned process group,
/// where the kernel discards SIGTSTP, the launcher stops all the same.
#[test]
fn sigtstp_stops_the_whole_job_and_sigcont_resumes_it() {
    for (session, limit) in [(Session::Job, 6), (Session::Orphaned, 0)] {
        // Each rank: a shell whose child `sleep` runs until the test ends it.
        let held = marker();
        let script = format!("echo ready; sleep {held}; echo done $PMI_RANK");
        let started = std::time::Instant::now();
        let job = Job::start(&["-n", "2", "--time", &format!("0:{limit}")], &script, session);
        job.expect_lines(2, "ready");
        // Both `sleep`s started (a shell that is starting one may wait for it in state D).
        assert!(within_30_s(|| sleeps(&held).len() == 2), "{session:?}: the ranks' sleeps did not start");
        job.signal(libc::SIGTSTP);
        let all_stopped = || {
            let procs = descendants(job.pid());
            procs.len() == 4 && state(job.pid()) == Some('T') && procs.iter().all(|&p| state(p) == Some('T'))
        };
        assert!(
            within_30_s(all_stopped),
            "{session:?}: launcher {:?}, job {:?}",
            state(job.pid()),
            descendants(job.pid()).iter().map(|&p| (p, state(p))).collect::<Vec<_>>()
        );
        // A stopped process acts on SIGTERM only once continued; and a stop longer than the time
        // limit does not end the job once it goes on.
        for pid in sleeps(&held) {
            // SAFETY: kill only sends SIGTERM to a `sleep` this test started.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        while started.elapsed() < std::time::Duration::from_secs(limit + 2) {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(all_stopped(), "{session:?}: the job went on while stopped");
        job.signal(libc::SIGCONT);
        job.expect_lines(2, "done");
        let (st, err) = job.finish();
        assert_eq!(st.code(), Some(0), "{session:?}: {err}");
        assert!(
            err.contains(
                "got SIGTSTP: SIGSTOP to the 2 ranks still running and the processes they started, then aar run stops"
            ) && err.contains("stopped: the 2 ranks still running go on"),
            "{session:?}: {err}"
        );
        if limit > 0 {
            assert!(err.contains("the time limit of 0:00:06 (--time 0:6) does not count the time stopped"), "{err}");
        }
        assert_eq!(gone_within_10_s(&held), [], "{session:?}");
    }
}

/// SIGUSR1 and SIGUSR2 to `aar run` go to the ranks, as srun and hydra's mpiexec forward them,
/// and the job goes on.
#[test]
fn sigusr1_and_sigusr2_are_forwarded_to_the_ranks() {
    let script = "trap 'echo usr1 $PMI_RANK' USR1; trap 'echo usr2 $PMI_RANK; exit 0' USR2; echo ready; \
                  while :; do sleep 0.05; done";
    let job = Job::start(&["-n", "3"], script, Session::Job);
    job.expect_lines(3, "ready");
    job.signal(libc::SIGUSR1);
    job.expect_lines(3, "usr1 ");
    job.signal(libc::SIGUSR2);
    job.expect_lines(3, "usr2 ");
    let (st, err) = job.finish();
    assert_eq!(st.code(), Some(0), "{err}");
    assert!(err.contains("got SIGUSR1: forwarded to the 3 ranks still running."), "{err}");
    assert!(err.contains("got SIGUSR2: forwarded to the 3 ranks"), "{err}");
}

/// A rank stopped from outside the launcher (`kill -STOP`, a debugger's stop that was let go)
/// acts on the SIGTERM that ends the job at once, as `kill %1` and scancel make it: SIGCONT
/// follows the SIGTERM, so it is not left for the SIGKILL after the grace.
#[test]
fn a_rank_stopped_from_outside_ends_with_the_job_at_its_sigterm() {
    let held = marker();
    let go = std::env::temp_dir().join(format!("aar-run-stopped-{held}"));
    let _ = std::fs::remove_file(&go);
    let script = format!(
        "if [ \"$PMI_RANK\" = 0 ]; then while [ ! -e {go} ]; do sleep 0.05; done; exit 3; else exec sleep {held}; fi",
        go = go.display()
    );
    let child = aar_within_60_s()
        .args(["run", "-n", "2", "sh", "-c", &script])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(within_30_s(|| sleeps(&held).len() == 1), "rank 1 did not start");
    let rank1 = sleeps(&held)[0];
    // SAFETY: kill only sends SIGSTOP to the `sleep` this test's job started.
    unsafe { libc::kill(rank1, libc::SIGSTOP) };
    assert!(within_30_s(|| state(rank1) == Some('T')), "rank 1 did not stop");
    std::fs::write(&go, "").unwrap();
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&go);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("SIGTERM to the 1 other rank still running"), "{err}");
    assert!(!err.contains("SIGKILL"), "the stopped rank waited for SIGKILL: {err}");
    assert_eq!(gone_within_10_s(&held), []);
}

/// A request to end a job that is already ending (a second Ctrl-C, `kill` after Ctrl-C) sends
/// the ranks still running SIGKILL at once, in a line that says what came when: "again" only for
/// the same signal. Deterministic: the launcher is held stopped while SIGINT and SIGTERM are sent,
/// so it takes both at once (in the order the kernel runs their handlers, which the line follows).
#[test]
fn a_second_request_to_end_the_job_says_which_signals_came() {
    let held = marker();
    // The ranks ignore SIGINT and SIGTERM (a `sleep` keeps the dispositions it was started with).
    let script = format!("trap '' INT TERM; exec sleep {held}");
    let mut cmd = aar();
    cmd.args(["run", "-n", "2", "sh", "-c", &script]);
    with_default_sigint(&mut cmd);
    let job = Job::spawn(cmd);
    assert!(within_30_s(|| sleeps(&held).len() == 2), "the ranks did not start");
    job.signal(libc::SIGSTOP);
    assert!(within_30_s(|| state(job.pid()) == Some('T')), "aar run did not stop");
    job.signal(libc::SIGINT);
    job.signal(libc::SIGTERM);
    job.signal(libc::SIGCONT);
    let (st, err) = job.finish();
    let forwarded = |name: &str| err.contains(&format!("got {name}: forwarded to the 2 ranks still running"));
    let (first, then) = match (forwarded("SIGINT"), forwarded("SIGTERM")) {
        (true, false) => (libc::SIGINT, "SIGTERM after SIGINT"),
        (false, true) => (libc::SIGTERM, "SIGINT after SIGTERM"),
        _ => panic!("not one of the two forwarded: {err}"),
    };
    assert_eq!(st.code(), Some(128 + first), "{err}");
    let second = format!(
        "got {then}: SIGKILL to the 2 ranks still running, without waiting out the 3 s grace; the job's exit code \
         stays {}.",
        128 + first
    );
    assert!(err.contains(&second), "{err}");
    assert!(!err.contains("again"), "{err}");
    assert_eq!(gone_within_10_s(&held), []);
}

/// A request to end `aar run` that comes after the job ended, while the launcher waits to write
/// the ranks' last output to a stdout nothing reads (`aar run ... | less` at its prompt, a
/// terminal stopped by ^S), ends that wait: the output that waited is dropped, said on stderr,
/// and the launcher exits. Before, a blocking write took every Ctrl-C and `kill` for ever.
#[test]
fn a_signal_ends_the_wait_for_a_stdout_nothing_reads_after_the_job() {
    let mut child = aar()
        .args(["run", "--", "sh", "-c", "echo ready >&2; exec yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Held open, never read.
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || stderr.lines().map_while(Result::ok).try_for_each(|l| tx.send(l)));
    let pid = child.id() as libc::pid_t;
    let seen = |want: &str| loop {
        match lines.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(l) if l.contains(want) => break,
            Ok(_) => {}
            Err(e) => panic!("no line \"{want}\" within 30 s ({e})"),
        }
    };
    seen("ready");
    // The stdout pipe full: more output waits in the launcher.
    let full = || {
        use std::os::fd::AsRawFd;
        let fd = stdout.as_raw_fd();
        let mut held: libc::c_int = 0;
        // SAFETY: fcntl and ioctl only query the test's live pipe; FIONREAD fills the c_int.
        unsafe { libc::ioctl(fd, libc::FIONREAD, &mut held) == 0 && held >= libc::fcntl(fd, libc::F_GETPIPE_SZ) }
    };
    assert!(within_30_s(full), "the rank's output did not fill the pipe");
    // SAFETY: kill only sends SIGTERM to the launcher this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    seen("got SIGTERM: forwarded to the 1 rank still running");
    // The rank reaped: the job is over, and the launcher waits for its stdout.
    assert!(within_30_s(|| descendants(pid).is_empty()), "the rank did not end");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let exited = within_30_s(|| child.try_wait().unwrap().is_some());
    let _ = child.kill();
    let st = child.wait().unwrap();
    assert!(exited, "aar run did not exit at a SIGTERM after its job ended");
    assert_eq!(st.code(), Some(128 + libc::SIGTERM));
    seen("got SIGTERM while the job's last output waited for its stdout, which nothing reads: the ");
}

/// `cmd` gets SIGINT with its default action, as a terminal's job does: a suite started in the
/// background by a script (`&` without job control ignores SIGINT) would hand the launcher an
/// ignored SIGINT, which it rightly keeps ignored.
fn with_default_sigint(cmd: &mut Command) {
    // SAFETY: signal is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// A Ctrl-C while a rank's failure ends the job (the others got SIGTERM and have the grace to
/// end) sends them SIGKILL at once; the line says it came while the job was ending, not "again"
/// (there was no first), and that the job's exit code stays the rank's.
#[test]
fn a_signal_while_a_ranks_failure_ends_the_job_is_not_said_to_come_again() {
    let held = marker();
    // Rank 0 fails when the test types a line; rank 1 ignores SIGTERM, so the launcher waits out
    // the grace (3 s) for it: the SIGINT below comes within it.
    let script = format!("if [ \"$PMI_RANK\" = 0 ]; then read x; exit 3; else trap '' TERM; exec sleep {held}; fi");
    let mut cmd = aar();
    cmd.args(["run", "-n", "2", "sh", "-c", &script]);
    with_default_sigint(&mut cmd);
    // Not under `timeout`, which would pass the test's SIGINT on to its whole process group.
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    assert!(within_30_s(|| sleeps(&held).len() == 1), "rank 1 did not start");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"fail\n").unwrap();
    let mut err = String::new();
    while !err.contains("SIGTERM to the 1 other rank still running") {
        assert!(stderr.read_line(&mut err).unwrap() > 0, "the job did not end at rank 0's failure: {err}");
    }
    // SAFETY: kill only sends SIGINT to the launcher this test started.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    stderr.read_to_string(&mut err).unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(3), "{err}");
    assert!(
        err.contains(
            "got SIGINT while the job was ending (its ranks got SIGTERM): SIGKILL to the 1 rank still running, \
             without waiting out the 3 s grace; the job's exit code stays 3."
        ),
        "{err}"
    );
    assert!(!err.contains("again"), "{err}");
    assert_eq!(gone_within_10_s(&held), []);
}

/// A request to end `aar run` (a Ctrl-C, `kill`) that comes while it gives the processes the ranks
/// left running their grace to end after SIGTERM sends them SIGKILL at once, said, as a second
/// Ctrl-C does to ranks in the job's end; the job's exit status stays. Before, the signal was
/// taken and nothing done: the launcher waited out the grace all the same.
#[test]
fn a_signal_while_the_ranks_leftovers_have_their_grace_kills_them_at_once() {
    let held = marker();
    // The rank exits 0 and leaves a `sleep` that ignores SIGTERM from its start (it keeps the
    // disposition it was started with): a leftover that sets its own trap may not have set it yet
    // when the job ends, on a busy machine, and then ends at its SIGTERM, before the test's SIGINT.
    let script = format!("trap '' TERM; sleep {held} >/dev/null 2>&1 & exit 0");
    let mut cmd = aar();
    cmd.args(["run", "--", "sh", "-c", &script]);
    with_default_sigint(&mut cmd);
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut err = String::new();
    while !err.contains("aar run: the ranks left 1 process running") {
        assert!(stderr.read_line(&mut err).unwrap() > 0, "no line about the process left running: {err}");
    }
    // SAFETY: kill only sends SIGINT to the launcher this test started.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    stderr.read_to_string(&mut err).unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "aar run: got SIGINT while the processes the ranks left running had their grace to end: SIGKILL to 1 \
             process at once, without waiting out the 3 s grace; the job's exit code stays 0."
        ),
        "{err}"
    );
    assert_eq!(gone_within_10_s(&held), []);
}

/// A process the ranks left running that has children of its own: when it ends at its SIGTERM,
/// its children come to `aar run`, and they get a SIGTERM within the grace too, so that they can
/// end cleanly. Before, they were found and given SIGKILL at the grace's end, with no warning.
#[test]
fn the_children_of_a_leftover_that_ends_get_their_sigterm_too() {
    let held = marker();
    let dir = std::env::temp_dir().join(format!("aar-run-leftover-tree-{held}"));
    std::fs::create_dir_all(&dir).unwrap();
    let said = dir.join("term");
    std::fs::write(
        dir.join("grandchild.sh"),
        "trap 'echo term > \"$1\"; exit 0' TERM\n: > \"$1.ready\"\nwhile :; do sleep 0.1; done\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("leftover.sh"),
        format!("sh \"$(dirname \"$0\")/grandchild.sh\" \"$1\" &\nexec sleep {held}\n"),
    )
    .unwrap();
    // The rank ends once the grandchild is ready for its SIGTERM.
    let script = format!(
        "sh '{0}' '{1}' >/dev/null 2>&1 & while [ ! -e '{1}.ready' ]; do sleep 0.01; done; exit 0",
        dir.join("leftover.sh").display(),
        said.display()
    );
    let out = aar().args(["run", "--", "sh", "-c", &script]).stdin(Stdio::null()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("aar run: the ranks left 1 process running"), "{err}");
    assert_eq!(std::fs::read_to_string(&said).unwrap_or_default(), "term\n", "the grandchild had no SIGTERM: {err}");
    assert_eq!(gone_within_10_s(&held), []);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A Ctrl-C that the launcher takes in the same look as a rank's failure (the rank ended before
/// the SIGINT was passed on) ends the job as interrupted (exit status 130), and the failed rank
/// is still named, and not counted among the ranks still running. Deterministic: the launcher is
/// held stopped while rank 0 fails and the SIGINT comes. Before, rank 0's failure was never said.
#[test]
fn a_ctrl_c_with_a_ranks_failure_in_one_look_says_both() {
    let held = marker();
    let script = format!("if [ \"$PMI_RANK\" = 0 ]; then read x; exit 3; else exec sleep {held}; fi");
    let mut cmd = aar();
    cmd.args(["run", "-n", "2", "sh", "-c", &script]).stdin(Stdio::piped());
    with_default_sigint(&mut cmd);
    let mut job = Job::spawn(cmd);
    assert!(within_30_s(|| sleeps(&held).len() == 1), "rank 1 did not start");
    job.signal(libc::SIGSTOP);
    assert!(within_30_s(|| state(job.pid()) == Some('T')), "aar run did not stop");
    std::io::Write::write_all(&mut job.child.stdin.take().unwrap(), b"fail\n").unwrap();
    // Rank 0 ended (a zombie: its launcher is stopped and has not reaped it).
    assert!(within_30_s(|| descendants(job.pid()).iter().any(|&p| state(p) == Some('Z'))), "rank 0 did not end");
    job.signal(libc::SIGINT);
    job.signal(libc::SIGCONT);
    let (st, err) = job.finish();
    assert_eq!(st.code(), Some(128 + libc::SIGINT), "{err}");
    assert!(err.contains("aar run: got SIGINT: forwarded to the 1 rank still running"), "{err}");
    let rank0 = err.lines().find(|l| l.contains("exited with code 3")).unwrap_or_default();
    assert!(
        rank0.starts_with("aar run: rank 0 (pid ")
            && rank0.ends_with("before the job's end began; the job's exit code stays 130, of SIGINT."),
        "{err}"
    );
    assert_eq!(gone_within_10_s(&held), []);
}

/// SIGQUIT to `aar run` goes to the ranks, as srun and hydra's mpiexec forward it (a user asking
/// a hung job for core dumps), and ends the job with 128 + SIGQUIT.
#[test]
fn sigquit_to_the_launcher_goes_to_the_ranks() {
    let held = marker();
    // No core files from the test's `sleep`s.
    let mut cmd = Command::new("prlimit");
    cmd.args(["--core=0", "--", env!("CARGO_BIN_EXE_aar"), "run", "-n", "2", "sleep", &held]);
    // SIGQUIT as a terminal's job gets it: a suite started in the background by a script (`&`
    // without job control ignores SIGINT and SIGQUIT) would hand the launcher an ignored SIGQUIT,
    // which it rightly keeps ignored (signals_ignored_when_the_launcher_starts_stay_ignored).
    // SAFETY: signal is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    // prlimit execs the launcher: the job's pid is its.
    let job = Job::spawn(cmd);
    assert!(within_30_s(|| sleeps(&held).len() == 2), "the ranks did not start");
    job.signal(libc::SIGQUIT);
    let (st, err) = job.finish();
    assert_eq!(st.code(), Some(128 + libc::SIGQUIT), "{err}");
    assert!(err.contains("got SIGQUIT: forwarded to the 2 ranks still running"), "{err}");
    assert!(!err.contains("SIGKILL"), "the ranks' default action is to end: {err}");
    assert_eq!(gone_within_10_s(&held), []);
}

/// `aar run` as a terminal's job: the session leader of a new pseudo-terminal, its stdin, stdout
/// and stderr, so its process group is the terminal's foreground group; what the terminal shows is
/// gathered on a thread until the last process holding it closed it.
struct Terminal {
    child: std::process::Child,
    /// The terminal's master side: what is written to it is typed.
    keys: std::fs::File,
    shown: std::sync::Arc<std::sync::Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Terminal {
    fn start(mut cmd: Command) -> Terminal {
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: openpty writes two descriptors into the live ints; the other arguments may be NULL.
        let rc =
            unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: openpty just opened both; each is owned here from now on.
        let (master, slave) =
            unsafe { (std::os::fd::OwnedFd::from_raw_fd(master), std::os::fd::OwnedFd::from_raw_fd(slave)) };
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: setsid, ioctl and signal are async-signal-safe: the launcher leads a session
        // whose controlling terminal is the pseudo-terminal (its stdin), and gets SIGINT with its
        // default action, as a terminal's job does (a suite started in the background by a script
        // would hand it an ignored SIGINT, which it keeps ignored).
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        // The test's own copies of the terminal's slave side, or its reader would never see the end.
        drop(cmd);
        let shown = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let reader = {
            let shown = std::sync::Arc::clone(&shown);
            let mut terminal = std::fs::File::from(master.try_clone().unwrap());
            // Until the last process holding the terminal closed it (EIO).
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = terminal.read(&mut buf) {
                    shown.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            })
        };
        Terminal { child, keys: std::fs::File::from(master), shown, reader: Some(reader) }
    }

    /// Wait up to 30 s for the terminal to show each of `what`; whether it did.
    fn shows(&self, what: &[&str]) -> bool {
        within_30_s(|| {
            let s = self.shown.lock().unwrap();
            what.iter().all(|w| s.contains(w))
        })
    }

    fn shown(&self) -> String {
        self.shown.lock().unwrap().clone()
    }

    fn type_keys(&mut self, keys: &[u8]) {
        std::io::Write::write_all(&mut self.keys, keys).unwrap();
    }

    /// Wait up to 60 s for the process started to exit, and then for the terminal to be closed:
    /// its status, and all the terminal showed.
    fn finish(mut self) -> (ExitStatus, String) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let st = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            assert!(std::time::Instant::now() < deadline, "it did not exit within 60 s: {}", self.shown());
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        self.reader.take().unwrap().join().unwrap();
        (st, self.shown())
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // A test that failed: the launcher goes, and its ranks with it (PR_SET_PDEATHSIG).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Ctrl-C at a terminal: the terminal sends SIGINT to its whole foreground process group, which
/// holds `aar run` alone (each rank runs in a process group of its own), and `aar run` forwards it
/// once, so each rank gets one SIGINT, not two (a program whose second Ctrl-C means "quit now, skip
/// the cleanup" took one press for two).
#[test]
fn ctrl_c_at_the_terminal_reaches_each_rank_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sigints");
    // Each rank logs every SIGINT it gets, and waits (its `sleep`s end at the terminal's SIGINT).
    let wait = format!(
        "trap 'echo INT $PMI_RANK >> {}' INT; echo ready $PMI_RANK; i=0; while [ $i -lt 300 ]; do sleep 0.1; \
         i=$((i+1)); done",
        log.display()
    );
    let mut cmd = aar();
    cmd.args(["run", "-n", "2", "sh", "-c", &wait]);
    let mut terminal = Terminal::start(cmd);
    assert!(terminal.shows(&["ready 0", "ready 1"]), "the ranks did not start: {}", terminal.shown());
    // Ctrl-C, as typed.
    terminal.type_keys(b"\x03");
    let (st, shown) = terminal.finish();
    assert_eq!(st.code(), Some(128 + libc::SIGINT), "{shown}");
    let mut got: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(str::to_owned).collect();
    got.sort();
    assert_eq!(got, ["INT 0", "INT 1"], "one SIGINT each: {shown}");
    assert!(shown.contains("got SIGINT: forwarded to the 2 ranks still running"), "{shown}");
}

/// A signal sent to `aar run`'s whole process group by another process (`kill -INT -- -PGID`, a
/// script's `kill 0`, a batch system that signals the job's group) reaches each rank once: the
/// ranks, in process groups of their own, get it only from `aar run`. Before, the ranks shared
/// the launcher's group and got the group's SIGINT, then `aar run`'s forwarded one.
///
/// Deterministic: the launcher is held stopped while the group signal is sent, so a rank that
/// gets it directly has logged it (its SIGINT comes before the SIGUSR1 the test sends next, and
/// the shell runs its traps in signal order) before the launcher, resumed, forwards its own.
#[test]
fn a_signal_to_the_launchers_process_group_reaches_each_rank_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("signals");
    // A rank logs each SIGINT and SIGUSR1; a SIGINT after the SIGUSR1 ends it.
    let script = format!(
        "log={}; echo $$ > $log.pid$PMI_RANK; trap 'echo USR1 $PMI_RANK >> $log; u=1' USR1; \
         trap 'echo INT $PMI_RANK >> $log; [ -n \"$u\" ] && exit 0' INT; echo ready $PMI_RANK; \
         i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done",
        log.display()
    );
    let mut cmd = aar();
    cmd.args(["run", "-n", "2", "sh", "-c", &script]);
    // As a shell starts a job: a process group of its own; SIGINT with its default action (see
    // `Terminal::start`).
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // SAFETY: signal is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let job = Job::spawn(cmd);
    job.expect_lines(2, "ready");
    let ranks: Vec<libc::pid_t> = (0..2)
        .map(|r| std::fs::read_to_string(format!("{}.pid{r}", log.display())).unwrap().trim().parse().unwrap())
        .collect();
    job.signal(libc::SIGSTOP);
    assert!(within_30_s(|| state(job.pid()) == Some('T')), "aar run did not stop");
    // SAFETY: kill only sends SIGINT to the process group of the launcher this test started.
    assert_eq!(unsafe { libc::kill(-job.pid(), libc::SIGINT) }, 0);
    for &pid in &ranks {
        // SAFETY: kill only sends SIGUSR1 to a rank of this test's job (running: it waits for
        // its SIGINT).
        assert_eq!(unsafe { libc::kill(pid, libc::SIGUSR1) }, 0);
    }
    let logged = |what: &str| std::fs::read_to_string(&log).unwrap_or_default().contains(what);
    assert!(within_30_s(|| logged("USR1 0") && logged("USR1 1")), "the ranks did not log SIGUSR1");
    job.signal(libc::SIGCONT);
    let (st, err) = job.finish();
    assert_eq!(st.code(), Some(128 + libc::SIGINT), "{err}");
    let got = std::fs::read_to_string(&log).unwrap();
    for r in 0..2 {
        let mine: Vec<&str> = got.lines().filter(|l| l.ends_with(&format!(" {r}"))).collect();
        assert_eq!(mine, [format!("USR1 {r}"), format!("INT {r}")], "rank {r}: one SIGINT, from aar run: {err}");
    }
    assert!(err.contains("got SIGINT: forwarded to the 2 ranks still running"), "{err}");
}

/// Rank 0 reads what is typed at the terminal that is `aar run`'s stdin, up to Ctrl-D (end of
/// input), though it runs outside the terminal's foreground process group (where a read of the
/// terminal would stop it with SIGTTIN): `aar run` reads the terminal and passes it on, as hydra's
/// mpiexec does.
#[test]
fn rank_0_reads_what_is_typed_at_the_terminal() {
    let script = r#"echo ready $PMI_RANK; if [ "$PMI_RANK" = 0 ]; then while read x; do echo "got=$x"; done; echo "end of input"; fi"#;
    let mut cmd = aar();
    cmd.args(["run", "-n", "2", "sh", "-c", script]);
    let mut terminal = Terminal::start(cmd);
    assert!(terminal.shows(&["ready 0", "ready 1"]), "the ranks did not start: {}", terminal.shown());
    terminal.type_keys(b"typed\n");
    assert!(terminal.shows(&["got=typed"]), "rank 0 did not read the line: {}", terminal.shown());
    // Ctrl-D at the start of a line: the end of input.
    terminal.type_keys(b"\x04");
    let (st, shown) = terminal.finish();
    assert!(shown.contains("end of input"), "{shown}");
    assert_eq!(st.code(), Some(0), "{shown}");
}

/// A job in the background (`aar run ... &` in a shell with job control) leaves the terminal to
/// the foreground (a line typed there is the shell's, and rank 0 waits for input, neither stolen
/// nor stopped for tty input); brought to the foreground with `fg`, its rank 0 reads what is typed.
#[test]
fn a_job_in_the_background_leaves_the_terminal_to_the_shell_until_fg() {
    // A shell with job control (`set -m`): the job runs in a process group of its own, in the
    // background, while the shell reads a line; then `fg` brings it to the foreground. bash, whose
    // `fg` of a job that runs sends it no SIGCONT (dash's does), so no signal tells `aar run`.
    let script = r#"set -m; "$AAR" run -n 2 sh -c 'echo ready $PMI_RANK; if [ $PMI_RANK = 0 ]; then read x; echo got=$x; fi' & read y; echo shell=$y; fg; echo fg=$?"#;
    let mut cmd = Command::new("bash");
    cmd.args(["-c", script]).env("AAR", env!("CARGO_BIN_EXE_aar"));
    let mut terminal = Terminal::start(cmd);
    assert!(terminal.shows(&["ready 0", "ready 1"]), "the ranks did not start: {}", terminal.shown());
    terminal.type_keys(b"first\n");
    assert!(terminal.shows(&["shell=first"]), "the shell did not get its line: {}", terminal.shown());
    terminal.type_keys(b"second\n");
    let (st, shown) = terminal.finish();
    assert!(shown.contains("got=second") && shown.contains("fg=0"), "{shown}");
    assert!(!shown.contains("got=first"), "{shown}");
    assert_eq!(st.code(), Some(0), "{shown}");
}

/// What is typed at the terminal while the job runs is read by `aar run` for rank 0; what rank 0
/// never reads is lost with the job (not left in the terminal for the shell, which would have got
/// a command typed ahead): `aar run` says how many bytes, so a command that never ran is explained.
/// Deterministic: the job ends only once the terminal holds nothing unread (`aar run` took it).
#[test]
fn what_is_typed_and_rank_0_never_reads_is_said_lost() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("go");
    let script = format!("echo ready; while [ ! -e {} ]; do sleep 0.1; done", flag.display());
    let mut cmd = aar();
    cmd.args(["run", "-n", "1", "sh", "-c", &script]);
    let mut terminal = Terminal::start(cmd);
    assert!(terminal.shows(&["ready"]), "the rank did not start: {}", terminal.shown());
    terminal.type_keys(b"ls -l\n");
    // The terminal's side the job reads, opened again to ask how much input it holds unread.
    let mut name = [0 as libc::c_char; 128];
    let master = std::os::fd::AsRawFd::as_raw_fd(&terminal.keys);
    // SAFETY: ptsname_r writes a NUL-terminated name of at most name.len() bytes into the live buffer.
    assert_eq!(unsafe { libc::ptsname_r(master, name.as_mut_ptr(), name.len()) }, 0);
    // SAFETY: ptsname_r wrote a NUL-terminated string into name.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_str().unwrap().to_owned();
    let slave =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK).open(&name).unwrap();
    let unread = || {
        let mut n: libc::c_int = -1;
        // SAFETY: FIONREAD writes the bytes the terminal holds unread into the live c_int.
        assert_eq!(unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&slave), libc::FIONREAD, &mut n) }, 0);
        n
    };
    assert!(within_30_s(|| unread() == 0), "aar run did not read the terminal: {}", terminal.shown());
    drop(slave);
    std::fs::write(&flag, "").unwrap();
    let (st, shown) = terminal.finish();
    assert_eq!(st.code(), Some(0), "{shown}");
    let said = shown.lines().find(|l| l.contains("the last 6 bytes typed at the terminal")).unwrap_or_default();
    assert!(said.starts_with("aar run: ") && said.contains("they are lost"), "{shown}");
}

/// A rank that reads the terminal itself (`/dev/tty`), or changes its settings, is stopped by the
/// kernel (SIGTTIN, SIGTTOU: it runs outside the terminal's foreground process group); `aar run`
/// names it, says why and what to do instead, and ends the job (exit status 1). Before, the job
/// hung without a word.
#[test]
fn a_rank_stopped_for_using_the_terminal_itself_ends_the_job_with_the_reason() {
    for (touch, sig, fix) in [
        ("read x </dev/tty", "SIGTTIN", "read its stdin instead"),
        ("stty -echo </dev/tty", "SIGTTOU", "leave the terminal's settings alone"),
    ] {
        // Rank 0 touches the terminal once rank 1 has said it is ready: the job ends at rank 0's
        // stop, and on a busy machine rank 1 may not have started yet.
        let dir = tempfile::tempdir().unwrap();
        let ready1 = dir.path().join("ready1");
        let script = format!(
            "echo ready $PMI_RANK; if [ $PMI_RANK = 0 ]; then while [ ! -e {r} ]; do sleep 0.05; done; {touch}; \
             echo went on; else touch {r}; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; fi",
            r = ready1.display()
        );
        let mut cmd = aar();
        cmd.args(["run", "-n", "2", "sh", "-c", &script]);
        let terminal = Terminal::start(cmd);
        assert!(terminal.shows(&["ready 0", "ready 1"]), "the ranks did not start: {}", terminal.shown());
        let (st, shown) = terminal.finish();
        assert_eq!(st.code(), Some(1), "{sig}: {shown}");
        let said = shown.lines().find(|l| l.contains(&format!("was stopped by {sig}"))).unwrap_or_default();
        assert!(said.starts_with("aar run: rank 0 (pid "), "{sig}: {shown}");
        assert!(said.contains(fix) && said.contains("SIGTERM to the 2 ranks still running, rank 0 too"), "{shown}");
        assert!(!shown.contains("went on") && !shown.contains("did not end within"), "{shown}");
    }
}

/// A process a rank started that reads the terminal itself is stopped by SIGTTIN as the rank
/// would be; a rank that is not stopped with it (a shell that traps SIGTTIN, `timeout`, which
/// ignores it) waits for it for ever. `aar run` finds it, names it with its rank, says why and
/// what to do instead, and ends the job (exit status 1). Before, the job hung without a word.
#[test]
fn a_process_a_rank_started_stopped_for_reading_the_terminal_ends_the_job() {
    // Rank 0 starts `cat` once rank 1 has said it is ready: the job ends at `cat`'s stop, and on a
    // busy machine rank 1 may not have started yet.
    let dir = tempfile::tempdir().unwrap();
    let ready1 = dir.path().join("ready1");
    let script = format!(
        "trap 'echo caught' TTIN; echo ready $PMI_RANK; if [ $PMI_RANK = 0 ]; then while [ ! -e {r} ]; do sleep 0.05; \
         done; cat /dev/tty; echo went on; else touch {r}; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; fi",
        r = ready1.display()
    );
    let mut cmd = aar();
    cmd.args(["run", "-n", "2", "sh", "-c", &script]);
    let terminal = Terminal::start(cmd);
    assert!(terminal.shows(&["ready 0", "ready 1"]), "the ranks did not start: {}", terminal.shown());
    let (st, shown) = terminal.finish();
    assert_eq!(st.code(), Some(1), "{shown}");
    let said = shown.lines().find(|l| l.contains("was stopped by SIGTTIN")).unwrap_or_default();
    assert!(said.starts_with("aar run: rank 0 (pid ") && said.contains(": process "), "{shown}");
    assert!(
        said.contains("read its stdin instead") && said.contains("SIGTERM to the 2 ranks still running"),
        "{shown}"
    );
    assert!(!shown.contains("went on"), "{shown}");
}

/// A resize of the terminal (SIGWINCH to its foreground process group, `aar run`'s) reaches each
/// rank's process group, which, outside the terminal's foreground group, would not get it: a rank
/// that draws for the terminal's size learns the new one.
#[test]
fn a_resize_of_the_terminal_reaches_the_ranks() {
    let script = "trap 'echo resized $PMI_RANK $(stty size </dev/tty); exit 0' WINCH; echo ready $PMI_RANK; \
                  i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; echo not resized";
    let mut cmd = aar();
    cmd.args(["run", "-n", "2", "sh", "-c", script]);
    let terminal = Terminal::start(cmd);
    assert!(terminal.shows(&["ready 0", "ready 1"]), "the ranks did not start: {}", terminal.shown());
    let size = libc::winsize { ws_row: 33, ws_col: 111, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCSWINSZ reads one live winsize; the terminal sends SIGWINCH to its foreground group.
    let rc = unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&terminal.keys), libc::TIOCSWINSZ, &size) };
    assert_eq!(rc, 0, "TIOCSWINSZ: {}", std::io::Error::last_os_error());
    let (st, shown) = terminal.finish();
    assert!(shown.contains("resized 0 33 111") && shown.contains("resized 1 33 111"), "{shown}");
    assert!(!shown.contains("not resized"), "{shown}");
    assert_eq!(st.code(), Some(0), "{shown}");
}

/// A signal whose default action would end `aar run` alone (a timer's SIGALRM, the CPU time
/// limit's SIGXCPU) ends the whole job instead: SIGTERM to the ranks, the processes they left
/// running ended too, the job folder removed, and 128 + that signal as the exit status. Before,
/// the launcher died of it and those processes ran on.
#[test]
fn a_fatal_signal_to_the_launcher_ends_the_job_and_what_the_ranks_started() {
    for sig in [libc::SIGALRM, libc::SIGXCPU] {
        let held = marker();
        let script = format!("sleep {held} & echo ready; wait");
        // Not under `timeout`, which a SIGALRM would end: the signal is for the launcher.
        let mut child = aar()
            .args(["run", "-n", "2", "--time", "1", "sh", "-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        assert!(within_30_s(|| sleeps(&held).len() == 2), "the ranks' sleeps did not start");
        // SAFETY: kill only sends `sig` to the launcher this test started.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
        let status = child.wait().unwrap();
        // The sleeps hold stderr open: gone (or killed) before it is read to its end.
        let left = gone_within_10_s(&held);
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let name = if sig == libc::SIGALRM { "SIGALRM" } else { "SIGXCPU" };
        assert_eq!(status.code(), Some(128 + sig), "{name}: {err}");
        assert!(err.contains(&format!("got {name}: SIGTERM to the 2 ranks still running")), "{err}");
        assert_eq!(left, [], "{name}: the ranks' background sleeps were left running");
    }
}

/// srun's and aprun's options a user types out of habit: those that ask for what aar run does are
/// taken (`-t`, `--ntasks`, `--ntasks-per-node`, `--export=ALL`, `-K`); the others are refused
/// before any rank starts, with the option named and what to do instead.
#[test]
fn srun_options_are_taken_or_refused_with_what_to_use_instead() {
    let script = r#"echo "$PMI_RANK/$PMI_SIZE local $MPI_LOCALNRANKS""#;
    let out = aar()
        .args(["run", "--ntasks", "3", "--ntasks-per-node=2", "-t", "1", "--export=ALL", "-K", "sh", "-c", script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    lines.sort();
    assert_eq!(lines, ["0/3 local 2", "1/3 local 2", "2/3 local 1"]);
    for (args, named, fix) in [
        (&["--nodes", "2"][..], "--nodes 2", "--ntasks-per-node 3"),
        (&["-c", "4"][..], "-c/--cpus-per-task 4", "OMP_NUM_THREADS"),
        (&["-d4"][..], "-d/--depth 4", "OMP_NUM_THREADS"),
        (&["--export=NONE"][..], "--export=NONE", "env -i"),
        (&["-o", "out.%t"][..], "-o/--output out.%t", ">FILE"),
        (&["--error=err"][..], "-e/--error err", "2>FILE"),
        (&["--kill-on-bad-exit=0"][..], "--kill-on-bad-exit=0", "give -K or leave it out"),
    ] {
        let out = aar().args(["run", "-n", "5"]).args(args).args(["sh", "-c", "echo started"]).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} started the job");
        assert!(err.starts_with(&format!("aar run: {named}: ")), "{args:?}: {err}");
        assert!(err.contains(fix) && err.contains("no job was started"), "{args:?}: {err}");
    }
}

/// Each rank's place as srun and hydra give it, which programs and wrapper scripts read; the
/// values a batch script's environment holds for itself are replaced, and an outer launcher's
/// PMI, PMIx and Open MPI variables are not passed on.
#[test]
fn each_rank_sees_its_place_as_srun_and_hydra_give_it() {
    let script = r#"echo "$PMI_RANK $SLURM_PROCID $ALPS_APP_PE $SLURM_LOCALID $MPI_LOCALRANKID $SLURM_NODEID $SLURM_NTASKS $SLURM_NPROCS $SLURM_NNODES $MPI_LOCALNRANKS $PMI_GNI_LOC_ADDR${PMI_SPAWNED-}${PMI_PORT-}${PMIX_RANK-}${OMPI_COMM_WORLD_RANK-}""#;
    let out = aar()
        .args(["run", "-n", "5", "-N", "2", "sh", "-c", script])
        .env("SLURM_PROCID", "0")
        .env("SLURM_LOCALID", "0")
        .env("SLURM_NTASKS", "1")
        .env("PMI_SPAWNED", "1")
        .env("PMI_PORT", "node7:5000")
        .env("PMIX_RANK", "9")
        .env("OMPI_COMM_WORLD_RANK", "9")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "0 0 0 0 0 0 5 5 3 2 256",
            "1 1 1 1 1 0 5 5 3 2 256",
            "2 2 2 0 0 1 5 5 3 2 257",
            "3 3 3 1 1 1 5 5 3 2 257",
            "4 4 4 0 0 2 5 5 3 1 258",
        ]
    );
}

/// Each rank gets its PMI socket at one small descriptor, so a shell rank speaks PMI itself with
/// `>&$PMI_FD`: sh is dash on Debian, which refuses a descriptor above 9 (the numbers of the
/// launcher's sockets from the third rank on). 12 ranks init, put, meet in a barrier, get their
/// neighbour's value and finalize, each answered; each holds its socket once (at `PMI_FD` only).
#[test]
fn shell_ranks_speak_pmi_on_their_pmi_fd() {
    const RANKS: usize = 12;
    let script = r#"p() { echo "$1" >&$PMI_FD; read -r r <&$PMI_FD; }
        p 'cmd=init pmi_version=1 pmi_subversion=1'; init=$r
        p cmd=get_my_kvsname; kvs=${r##*kvsname=}
        p "cmd=put kvsname=$kvs key=k$PMI_RANK value=v$PMI_RANK"; put=$r
        p cmd=barrier_in; bar=$r
        p "cmd=get kvsname=$kvs key=k$(( (PMI_RANK + 1) % PMI_SIZE ))"; got=$r
        p cmd=finalize
        held=$(for f in /proc/$$/fd/*; do readlink "$f"; done | grep -cxF "$(readlink /proc/$$/fd/$PMI_FD)")
        echo "$PMI_RANK: $init; $put; $bar; $got; $r; held $held""#;
    let out = aar().args(["run", "-n", &RANKS.to_string(), "sh", "-c", script]).output().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{}: {stdout}{err}", out.status);
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort_by_key(|l| l.split(':').next().and_then(|r| r.parse::<usize>().ok()));
    let want: Vec<String> = (0..RANKS)
        .map(|r| {
            format!(
                "{r}: cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0; cmd=put_result rc=0 msg=success; \
                 cmd=barrier_out; cmd=get_result rc=0 msg=success value=v{}; cmd=finalize_ack; held 1",
                (r + 1) % RANKS
            )
        })
        .collect();
    assert_eq!(lines, want, "{err}");
}

/// A descriptor aar run was given open to pass on (`3</dev/null`) reaches every rank at its
/// number; the PMI socket takes the next one (4, closed here in case the test was given it).
#[test]
fn a_descriptor_given_to_aar_run_is_passed_on_and_pmi_fd_takes_the_next() {
    let script = r#"echo cmd=init pmi_version=1 pmi_subversion=1 >&$PMI_FD; read -r r <&$PMI_FD
        echo cmd=finalize >&$PMI_FD; read -r f <&$PMI_FD; echo "$PMI_FD $(readlink /proc/$$/fd/3) $r""#;
    let out = Command::new("sh")
        .args(["-c", r#"exec "$0" run -n 3 sh -c "$1" 3</dev/null 4<&-"#, env!("CARGO_BIN_EXE_aar"), script])
        .output()
        .unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{}: {stdout}{err}", out.status);
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["4 /dev/null cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0"; 3],
        "{err}"
    );
}

/// The ranks' output reaches aar run's stdout a whole line at a time (ranks that wrote to it
/// themselves split lines wherever their stdio buffers filled, and two ranks' pieces mixed);
/// `-l` starts each line with its rank, and ends a last line left unended; stdin is rank 0's.
#[test]
fn ranks_output_comes_in_whole_lines_and_label_names_the_rank() {
    let script = r#"awk -v r="$PMI_RANK" 'BEGIN { for (i = 0; i < 20000; i++) printf "rank %d line %d xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", r, i }'"#;
    let out = aar().args(["run", "-n", "4", "sh", "-c", script]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let broken: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            !(w.len() == 5 && w[0] == "rank" && w[2] == "line" && w[4].len() == 48 && w[4].bytes().all(|b| b == b'x'))
        })
        .collect();
    assert_eq!(stdout.lines().count(), 80_000);
    assert!(broken.is_empty(), "{} lines mixed mid-line, as {:?}", broken.len(), &broken[..broken.len().min(3)]);

    let mut child = aar()
        .args(["run", "-n", "11", "-l", "sh", "-c", r#"read x; echo "in=$x"; echo err >&2; printf end"#])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(b"typed\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    lines.sort();
    let mut want: Vec<String> = (0..11)
        .flat_map(|r| [format!("{r:>2}: in={}", if r == 0 { "typed" } else { "" }), format!("{r:>2}: end")])
        .collect();
    want.sort();
    assert_eq!(lines, want);
    let mut errs: Vec<String> =
        text(&out.stderr).lines().filter(|l| !l.starts_with("aar run:")).map(str::to_string).collect();
    errs.sort();
    assert_eq!(errs, (0..11).map(|r| format!("{r:>2}: err")).collect::<Vec<_>>());
}

/// Two ranks fail on their own: the job's exit status is the higher code, as srun's is the
/// highest of its tasks'. Only ranks that had ended when the launcher began to end the job
/// count: not the exit code a rank's SIGTERM handler gives, nor the launcher's own SIGTERM.
#[test]
fn the_jobs_exit_status_is_the_highest_of_the_ranks_that_failed_on_their_own() {
    let scratch = tempfile::tempdir().unwrap();
    let go = scratch.path().join("go");
    // Ranks 0 and 1 exit 4 and 5 when told; rank 2 exits 7 at the SIGTERM, rank 3 dies of it.
    let script = format!(
        "echo \"pid $PMI_RANK $$\"; case $PMI_RANK in \
         0|1) while [ ! -e {go} ]; do sleep 0.05; done; exit $((4 + PMI_RANK));; \
         2) trap 'exit 7' TERM; while :; do sleep 0.1; done;; \
         *) exec sleep 60;; esac",
        go = go.display()
    );
    let job = Job::start(&["-n", "4"], &script, Session::Job);
    let mut pids = [0 as libc::pid_t; 4];
    for _ in 0..4 {
        let line = job.lines.recv_timeout(std::time::Duration::from_secs(30)).expect("a rank's pid within 30 s");
        let (rank, pid) = line.strip_prefix("pid ").and_then(|l| l.split_once(' ')).expect(&line);
        pids[rank.parse::<usize>().unwrap()] = pid.parse().unwrap();
    }
    // The launcher stopped (SIGSTOP: it cannot notice), both ranks exit: when it goes on, the
    // first it collects (rank 0) ends the job, and rank 1 had ended before that end began.
    job.signal(libc::SIGSTOP);
    assert!(within_30_s(|| state(job.pid()) == Some('T')), "aar run did not stop");
    std::fs::write(&go, "").unwrap();
    assert!(within_30_s(|| pids[..2].iter().all(|&p| state(p) == Some('Z'))), "ranks 0 and 1 did not exit");
    job.signal(libc::SIGCONT);
    let (status, err) = job.finish();
    assert_eq!(status.code(), Some(5), "{err}");
    assert!(
        err.contains("rank 0 (pid ")
            && err.contains(
                "exited with code 4; ending the job with exit code 4: SIGTERM to the 2 other ranks still running."
            ),
        "{err}"
    );
    assert!(err.contains("exited with code 5 too, before the job's end began: the job's exit code is now 5"), "{err}");
    // Rank 2 exited 7 of the SIGTERM: said, not counted; rank 3 died of the launcher's SIGTERM
    // (143): neither.
    assert!(err.contains("rank 2 (pid ") && err.contains("exited with code 7 after the job's end began"), "{err}");
    assert!(err.contains("the job's exit code stays 5"), "{err}");
    assert!(!err.contains("now 7") && !err.contains("now 143") && !err.contains("SIGTERM (signal 15)"), "{err}");
}

/// A rank that dies of SIGPIPE at the SIGTERM that ends the job (it wrote to a peer that the
/// SIGTERM killed first; SIGPIPE is delivered before a pending SIGTERM) ended with the job: the
/// job's exit status stays the PMI_Abort's code, not 128 + SIGPIPE.
#[test]
fn a_rank_killed_by_sigpipe_as_the_job_ends_does_not_change_its_exit_status() {
    let out = aar_run(&["-n", "3"], &["sigpipe", "1", "6"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("rank 1 (pid ") && err.contains("called PMI_Abort with exit code 6"), "{err}");
    assert!(err.contains("SIGTERM to the 3 ranks still running, rank 1 too."), "{err}");
    // Both other ranks died of SIGPIPE, each said as no failure of its own.
    let said: Vec<&str> =
        err.lines().filter(|l| l.contains("was killed by SIGPIPE (signal 13) after the job's end began")).collect();
    assert_eq!(said.len(), 2, "{err}");
    assert!(said.iter().all(|l| l.ends_with("the job's exit code stays 6.")), "{err}");
    // 141 (128 + SIGPIPE) as a number of its own: a pid such as 14118 in the lines is no failure.
    assert!(!err.split(|c: char| !c.is_ascii_digit()).any(|n| n == "141"), "{err}");
}

/// A launcher whose stdout nobody reads (`aar run ... | less` left at its prompt, a terminal
/// stopped with ^S) still serves PMI: its ranks pass their barrier while a process of rank 1
/// writes more to stdout than the pipes and the launcher hold, and everything it wrote comes out
/// once stdout is read (rank 1 waits for that process to end).
#[test]
fn a_stdout_nobody_reads_does_not_stop_pmi() {
    const BYTES: usize = 4_000_000;
    // The rank's own program writes to stderr (its report line, after its barrier), which is read.
    let script = format!(
        "if [ $PMI_RANK = 1 ]; then yes | head -c {BYTES} & fi; {} >&2; rc=$?; wait; exit $rc",
        pmi_job().display()
    );
    let mut child = aar_within_60_s()
        .args(["run", "-n", "2", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    // Stdout is not read until both ranks said they passed their barrier (or the launcher, killed
    // at 60 s, closed stderr).
    let mut err = String::new();
    while !(err.contains("rank=0 ") && err.contains("rank=1 ")) {
        if stderr.read_line(&mut err).unwrap() == 0 {
            break;
        }
    }
    assert!(err.contains("rank=0 ") && err.contains("rank=1 "), "the ranks did not pass their barrier: {err}");
    let mut out = Vec::new();
    stdout.read_to_end(&mut out).unwrap();
    stderr.read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}: {err}");
    assert!(err.contains("failures=0") && !err.contains("failures=1"), "{err}");
    assert_eq!(out.len(), BYTES, "{err}");
    assert!(out.chunks(2).all(|l| l == b"y\n"), "{err}");
}

/// No rank changes what the others read from the KVS: rank 1's puts of the launcher's
/// `PMI_process_mapping` and of rank 2's key fail (PMI_KVS_Put returns PMI_FAIL), every rank
/// still gets the first values, and `aar run` names rank 1 and the key once. The same through
/// the wire from shell ranks: the put is answered `rc=-1`, the get the launcher's mapping.
#[test]
fn a_rank_cannot_overwrite_a_key_and_is_named_once() {
    let out = aar_run(&["-n", "3"], &["overwrite", "1"]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{}: {stdout}{err}", out.status);
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("overwrite ")).collect();
    let expect = |r: usize, put: i32| {
        format!("overwrite rank={r} mapping_put={put} other_put={put} mapping=(vector,(0,3,1)) rank-2=value-2-15")
    };
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(sorted, [expect(0, 0), expect(1, -1), expect(2, 0)], "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.starts_with("aar run:")).collect();
    assert_eq!(
        said,
        [
            r#"aar run: rank 1 tried to overwrite KVS key "PMI_process_mapping", which aar run put: where the ranks run; the put was answered with an error (PMI_KVS_Put fails) and the key keeps its first value. Each key is put once in a job: give each rank's keys its rank. Further overwrites by rank 1 are refused without a line."#
        ],
        "{err}"
    );
    for key in ["PMI_process_mapping", "rank-2"] {
        let failed = format!(r#" key={key} value=junk": "duplicate_key_{key}""#);
        assert_eq!(
            err.lines().filter(|l| l.starts_with("aar: PMI_KVS_Put: ") && l.ends_with(&failed)).count(),
            1,
            "{err}"
        );
    }

    let script = r#"p() { echo "$1" >&$PMI_FD; read -r r <&$PMI_FD; }; p "cmd=init pmi_version=1 pmi_subversion=1"
        p cmd=get_my_kvsname; kvs=${r##*kvsname=}
        [ $PMI_RANK = 0 ] && p "cmd=put kvsname=$kvs key=PMI_process_mapping value=junk" && echo "$r"
        p cmd=barrier_in; p "cmd=get kvsname=$kvs key=PMI_process_mapping"; echo "$r"; p cmd=finalize"#;
    let out = aar().args(["run", "-n", "2", "sh", "-c", script]).output().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{}: {stdout}{err}", out.status);
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    let get = "cmd=get_result rc=0 msg=success value=(vector,(0,2,1))";
    assert_eq!(lines, [get, get, "cmd=put_result rc=-1 msg=duplicate_key_PMI_process_mapping"], "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("aar run: rank 0 tried to overwrite")).count(), 1, "{err}");
}

/// A rank that puts without end is refused once the job's KVS holds 64 MiB (`KVS_MAX_BYTES` in
/// crates/cli/src/run/server.rs): its put fails, and every later one; the launcher names it
/// and the bound once, and goes on serving every rank's gets.
#[test]
fn a_rank_that_fills_the_kvs_is_refused_and_named_once() {
    const KVS_MAX_BYTES: u64 = 64 << 20;
    let out = aar_run(&["-n", "2"], &["fill-kvs", "1"]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{}: {stdout}{err:.3000}", out.status);
    let lines = stdout.lines().filter(|l| l.starts_with("fill ")).collect::<Vec<_>>();
    assert!(lines.contains(&"fill rank=0 puts=0 again=0 mapping_get=0"), "{lines:?}");
    let rank1 = lines.iter().find(|l| l.starts_with("fill rank=1 ")).expect("rank 1's line");
    let puts: u64 = rank1.split(' ').find_map(|w| w.strip_prefix("puts=")).unwrap().parse().unwrap();
    // Each put is a key of 8 to 12 bytes and a value of 1023; the checks before put a few KiB.
    assert!(((KVS_MAX_BYTES - 64 * 1024) / 1035..=KVS_MAX_BYTES / 1031).contains(&puts), "{rank1}");
    assert!(rank1.ends_with(" again=-1 mapping_get=0"), "{rank1}");
    let said: Vec<&str> = err.lines().filter(|l| l.starts_with("aar run:")).collect();
    assert_eq!(said.len(), 1, "{said:?}");
    let start = format!("aar run: rank 1's put of KVS key \"fill-1-{puts}\" was answered with an error (PMI_KVS_Put fails): the job's KVS holds ");
    assert!(said[0].starts_with(&start), "{}", said[0]);
    assert!(
        said[0].contains(&format!(
            " bytes of keys and values, and {KVS_MAX_BYTES} is the most aar run keeps (rank 1 put the most, "
        )) && said[0].ends_with("Further puts refused to rank 1 are not said."),
        "{}",
        said[0]
    );
}

/// A line that is not PMI is quoted in the launcher's line about it as a terminal can show it
/// and in one short line: a rank's line may hold 64 KiB of anything. Rank 0 sends a line that
/// would clear the screen and overwrite itself (ESC [2J, a carriage return, a `"`), then a word of
/// 60000 bytes; each reads its answer, and the launcher quotes each word escaped and cut.
#[test]
fn a_line_that_is_not_pmi_is_said_escaped_and_cut() {
    let script = r#"p() { printf '%s\n' "$1" >&$PMI_FD; read -r r <&$PMI_FD; echo "$r"; }
        p "$(printf '\033[2Jcleared\rover"')"; p "cmd=put $(head -c 60000 /dev/zero | tr '\0' x)""#;
    let out = aar().args(["run", "-n", "1", "sh", "-c", script]).output().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{}: {stdout}{err:.2000}", out.status);
    assert_eq!(stdout, "cmd=error rc=-1 msg=not_a_PMI_message\n".repeat(2), "{err:.2000}");
    let said =
        |what: &str| format!("aar run: rank 0 sent a line that is not PMI ({what}); it was answered with an error.");
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            said(r#""\u{1b}[2Jcleared\rover\"" where cmd=NAME must come first"#),
            said(&format!("\"{}…\" is not key=value", "x".repeat(60))),
        ],
        "{:?}",
        err.get(..2000)
    );
}

/// A launcher whose stderr nobody reads while the job runs (`aar run ... 2>&1 | less` left at its
/// prompt) still serves PMI after a line of its own: rank 1 writes more to stderr than the pipe
/// holds, then a line that is not PMI, which the launcher answers and says on stderr, then the
/// job's PMI calls. The test reads stderr only once both ranks wrote their report line on stdout,
/// and there the rank's lines come first, then the launcher's line about what it did after them.
#[test]
fn a_stderr_nobody_reads_does_not_stop_pmi_after_a_line_of_the_launcher() {
    const LINES: usize = 40_000;
    let script = format!(
        "if [ $PMI_RANK = 1 ]; then yes stderr-line | head -n {LINES} >&2; echo hello >&$PMI_FD; \
         read reply <&$PMI_FD; echo \"answer: $reply\"; fi; exec {}",
        pmi_job().display()
    );
    let reported = |out: &str| out.contains("rank=0 ") && out.contains("rank=1 ");
    let (out, err, status) = run_with_stderr_unread_until(&["run", "-n", "2", "sh", "-c", &script], reported);
    assert!(reported(&out), "PMI was not served: {out}");
    assert!(status.success(), "{status}: {out}");
    assert!(out.contains("answer: cmd=error rc=-1 msg=not_a_PMI_message\n"), "{out}");
    assert!(!out.contains("failures=1"), "{out}");
    // (pmi_job's checks of bad arguments make libpmi.so.0 say lines of its own, in both ranks.)
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.iter().filter(|l| **l == "stderr-line").count(), LINES, "the rank's lines are not all whole");
    let said = lines.iter().position(|l| l.starts_with("aar run: rank 1 sent a line that is not PMI"));
    let last = lines.iter().rposition(|l| *l == "stderr-line");
    assert!(said.is_some() && said > last, "the launcher's line is missing or before the rank's lines");
}

/// A rank that sends lines on its PMI_FD and never reads the answers does not stop PMI for the
/// others: rank 1 sends 5000 lines that are not PMI (more answers than its socket holds: a
/// launcher that waited for room in it would serve no one), then rank 0 runs all of PMI that needs
/// no other rank; only then does rank 1 send on and on, until the answers it left unread end the
/// job, in one line that names it. The launcher says the first lines that are not PMI and counts
/// the rest. (A launcher that hangs is killed at 60 s, and the test fails.)
#[test]
fn a_rank_that_never_reads_its_pmi_answers_stops_no_other_rank_and_ends_the_job() {
    const LINES: u64 = 5000;
    // The job folder, the ranks' own, says when each step is done.
    let script = format!(
        "d=$AAR_EMU_JOB_DIR; if [ $PMI_RANK = 1 ]; then yes hello | head -n {LINES} >&$PMI_FD; touch $d/sent; \
         while [ ! -e $d/served ]; do sleep 0.01; done; exec yes hello >&$PMI_FD; fi; \
         while [ ! -e $d/sent ]; do sleep 0.01; done; {} alone; rc=$?; touch $d/served; \
         [ $rc = 0 ] && exec sleep 600; exit $rc",
        pmi_job().display()
    );
    let out = aar_within_60_s().args(["run", "-n", "2", "sh", "-c", &script]).output().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.contains("alone rank=0 size=2 failures=0\n"), "rank 0 was not served: {stdout}\n{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.starts_with("aar run:")).collect();
    let unread: Vec<&&str> = said.iter().filter(|l| l.contains("does not read the answers")).collect();
    assert_eq!(unread.len(), 1, "{err}");
    assert!(
        unread[0].starts_with("aar run: rank 1 (pid ") && unread[0].contains("ending the job with exit code 1"),
        "{err}"
    );
    let not_pmi = said.iter().filter(|l| l.starts_with("aar run: rank 1 sent a line that is not PMI")).count();
    assert_eq!(not_pmi, 10, "{err}");
    let count =
        said.iter().find_map(|l| l.strip_prefix("aar run: rank 1 sent ")?.split_once(" lines that are not PMI in all"));
    let total: u64 = count.and_then(|(n, _)| n.parse().ok()).unwrap_or_else(|| panic!("no count: {err}"));
    assert!(total > LINES, "{total}: {err}");
}

/// A rank that leaves more than 1 MiB of answers unread when the job is already ending is named
/// all the same, once, and the job keeps the exit code of what ended it: rank 0 exits 3, and rank
/// 1, at the SIGTERM that follows, sends PMI requests on and on without reading an answer (`yes`
/// sends that many in a few milliseconds, well within the 3 s before its SIGKILL), until the
/// launcher closes its connection and the write fails.
#[test]
fn a_rank_that_leaves_its_pmi_answers_unread_as_the_job_ends_is_named() {
    let script = "d=$AAR_EMU_JOB_DIR; if [ $PMI_RANK = 1 ]; then trap 'yes cmd=get_maxes >&$PMI_FD; exit 0' TERM; \
                  touch $d/ready; while :; do sleep 0.01; done; fi; while [ ! -e $d/ready ]; do sleep 0.01; done; exit 3";
    let out = aar_within_60_s().args(["run", "-n", "2", "sh", "-c", script]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let unread: Vec<&str> = err.lines().filter(|l| l.contains("does not read the answers")).collect();
    assert_eq!(unread.len(), 1, "{err}");
    assert!(unread[0].starts_with("aar run: rank 1 (pid "), "{err}");
    assert!(
        unread[0].ends_with("its PMI connection is closed (the job was already ending; its exit code stays 3)."),
        "{err}"
    );
    assert!(said_before(&err, "rank 0 (pid ", "does not read the answers"), "{err}");
}

/// The launcher's line about a rank's PMI_Abort comes after the rank's own line about it (which
/// libpmi.so.0's PMI_Abort writes before it tells the launcher) also when the launcher's stderr is
/// not read and its queue for it is full, so that line is left in the rank's pipe: rank 1 fills the
/// queue (`pmi_job fill-stderr` returns once the launcher no longer reads rank 1's stderr), then
/// rank 0 aborts. The test reads stderr only once rank 1, on stdout, says it got the SIGTERM the
/// launcher sends after its line.
#[test]
fn a_ranks_line_about_its_abort_comes_first_also_when_stderr_is_not_read() {
    let job = pmi_job().display();
    let script = format!(
        "d=$AAR_EMU_JOB_DIR; if [ $PMI_RANK = 1 ]; then trap 'echo rank 1 got SIGTERM; exit 0' TERM; \
         {job} fill-stderr || exit 1; touch $d/full; while :; do sleep 0.01; done; fi; \
         while [ ! -e $d/full ]; do sleep 0.01; done; exec {job} early 0 5"
    );
    let (out, err, status) = run_with_stderr_unread_until(&["run", "-n", "2", "sh", "-c", &script], |out| {
        out.contains("rank 1 got SIGTERM\n")
    });
    let said: Vec<&str> = err.lines().filter(|l| l.starts_with("aar run:")).collect();
    assert!(out.contains("rank 1 got SIGTERM\n"), "{status}: {out}\n{said:?}");
    assert_eq!(status.code(), Some(5), "{said:?}");
    // The queue was full: more than its 1 MiB of rank 1's lines came before the abort's.
    let filled = err.lines().take_while(|l| !l.starts_with("aar")).filter(|l| l.len() == 4095).count();
    assert!(filled * 4096 > 1 << 20, "{filled} lines of rank 1 first: {said:?}");
    let own = "aar: rank 0: PMI_Abort(5): pmi_job asked to abort before PMI_Init";
    assert!(said_before(&err, own, "aar run: rank 0 (pid "), "{said:?}");
    assert!(said.iter().any(|l| l.contains("called PMI_Abort with exit code 5;")), "{said:?}");
}

/// The launcher's own lines beyond what its stderr queue holds for them (1 MiB more than the
/// ranks' 1 MiB) while nobody reads its stderr are lost, and counted: one line at the end says how
/// many. Each of 400 ranks sends 10 lines that are not PMI, of one word of 64 characters U+10FFFD
/// (which the launcher's line quotes cut to 60, each escaped as `\u{10fffd}`: about 720 bytes a
/// line), and reads each answer (so the launcher's line about it was said first), then says "done"
/// on stdout: 4000 lines, 2.9 MB. The test reads stderr only after the 400 "done"; the lines it
/// finds and the count make 4000.
#[test]
fn the_launchers_lines_lost_to_a_stderr_nobody_reads_are_counted() {
    const RANKS: usize = 400;
    let script = "c=$(printf '\\364\\217\\277\\275'); w=$c$c$c$c; w=$w$w$w$w; w=$w$w$w$w; i=0; \
                  while [ $i -lt 10 ]; do echo $w >&$PMI_FD; read reply <&$PMI_FD; i=$((i+1)); done; echo done";
    let (out, err, status) =
        run_with_stderr_unread_until(&["run", "-n", &RANKS.to_string(), "sh", "-c", script], |out| {
            out.matches("done\n").count() >= RANKS
        });
    let lines: Vec<&str> = err.lines().collect();
    let short: Vec<&str> = lines.iter().take(2).chain(lines.last()).copied().collect();
    assert!(status.success(), "{status}: {short:?}");
    assert_eq!(out.matches("done\n").count(), RANKS, "{out}");
    let said =
        lines.iter().filter(|l| l.starts_with("aar run: rank ") && l.contains("sent a line that is not PMI")).count();
    let lost: usize = lines
        .last()
        .and_then(|l| {
            l.strip_prefix("aar run: ")?.strip_suffix(
                " more of its lines were lost: its stderr was not read while the job ran and 2 MiB waited for it.",
            )
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of lost lines last: {said} said; {short:?}"));
    assert!(lost > 0 && said > 0, "{said} said, {lost} lost");
    assert_eq!(said + lost, RANKS * 10, "{said} said, {lost} lost; {short:?}");
}
