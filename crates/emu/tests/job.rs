//! The emulator as a job of several processes, started here as `aar run` would start them (the
//! job contract's environment: AAR_EMU_JOB_DIR, a folder under /dev/shm this test makes and
//! removes, PMI_RANK, PMI_SIZE, PMI_GNI_LOC_ADDR, PMI_GNI_COOKIE), each rank a real process
//! running crates/emu/tests/c/job_check.c, with and without the real libaar.so preloaded. The
//! ranks exchange NIC addresses and memory handles through files of a scratch folder.

mod common;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;

fn job_check() -> PathBuf {
    compile("crates/emu/tests/c/job_check.c", "job_check")
}

/// A job's folders: the shared one under /dev/shm and the exchange folder; removed on drop,
/// also when the test fails.
struct JobDirs {
    shared: aar_testkit::ShmDir,
    xchg: PathBuf,
}

impl JobDirs {
    fn new(tag: &str) -> JobDirs {
        let shared = aar_testkit::ShmDir::new(tag);
        let xchg = lib_dir().join("emu-tests").join(shared.path().file_name().unwrap());
        let _ = std::fs::remove_dir_all(&xchg);
        std::fs::create_dir_all(&xchg).unwrap();
        JobDirs { shared, xchg }
    }

    /// The names of the files the ranks left in the shared folder, sorted.
    fn shared_files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.shared.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for JobDirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.xchg);
    }
}

/// How one job is started.
struct Launch<'a> {
    scenario: &'a str,
    ranks: u32,
    /// Ranks per node: they share a NIC address (0x100 + node).
    per_node: u32,
    cookie: u32,
    preload: bool,
    /// Start only these ranks (all when empty).
    only: &'a [u32],
    /// (rank, start of the one line it must say on stderr).
    says: Option<(u32, &'a str)>,
    env: &'a [(&'a str, String)],
    /// A command each rank runs under (`prlimit ... --`), before job_check.
    wrapper: &'a [&'a str],
}

impl Default for Launch<'_> {
    fn default() -> Self {
        Launch {
            scenario: "",
            ranks: 2,
            per_node: 1,
            cookie: 0x5eed,
            preload: false,
            only: &[],
            says: None,
            env: &[],
            wrapper: &[],
        }
    }
}

fn spawn(l: &Launch, dirs: &JobDirs, rank: u32) -> Child {
    let mut cmd = match l.wrapper {
        [] => Command::new(job_check()),
        [first, rest @ ..] => {
            let mut c = Command::new(first);
            c.args(rest).arg(job_check());
            c
        }
    };
    cmd.arg(l.scenario).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, _) in std::env::vars() {
        if k.starts_with("AAR_") || k.starts_with("PMI_") || k == "LD_PRELOAD" {
            cmd.env_remove(k);
        }
    }
    cmd.env("AAR_EMU_JOB_DIR", dirs.shared.path())
        .env("JOB_TEST_XCHG", &dirs.xchg)
        .env("PMI_RANK", rank.to_string())
        .env("PMI_SIZE", l.ranks.to_string())
        .env("PMI_GNI_LOC_ADDR", (0x100 + rank / l.per_node).to_string())
        .env("PMI_GNI_COOKIE", l.cookie.to_string());
    if l.preload {
        let out = dirs.xchg.join("aar-records");
        cmd.env("LD_PRELOAD", aar_testkit::libaar()).env("AAR_OUTPUT_DIR", out);
    }
    cmd.envs(l.env.iter().map(|(k, v)| (*k, v.as_str())));
    cmd.spawn().expect("start a rank")
}

/// A rank that runs, and the threads that read its stdout and stderr meanwhile (as
/// tests/common/mod.rs's `Launch::run` does): a rank that says more than a pipe holds (64 KiB)
/// would otherwise block on it and never end.
struct Running {
    rank: u32,
    child: Child,
    stdout: JoinHandle<Vec<u8>>,
    stderr: JoinHandle<Vec<u8>>,
}

impl Running {
    fn start(l: &Launch, dirs: &JobDirs, rank: u32) -> Running {
        fn read_all(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                buf
            })
        }
        let mut child = spawn(l, dirs, rank);
        let stdout = read_all(child.stdout.take().unwrap());
        let stderr = read_all(child.stderr.take().unwrap());
        Running { rank, child, stdout, stderr }
    }

    /// Waits for the rank's end; its rank and all it said.
    fn output(mut self) -> (u32, Output) {
        let status = self.child.wait().unwrap();
        let (stdout, stderr) = (self.stdout.join().unwrap(), self.stderr.join().unwrap());
        (self.rank, Output { status, stdout, stderr })
    }
}

/// Runs the job to its end (killing every rank if one hangs); each rank's output, by rank.
fn run_job(l: &Launch, dirs: &JobDirs) -> Vec<(u32, Output)> {
    let ranks: Vec<u32> = if l.only.is_empty() { (0..l.ranks).collect() } else { l.only.to_vec() };
    let mut running: Vec<Running> = ranks.iter().map(|&r| Running::start(l, dirs, r)).collect();
    // As the launcher does: a rank that fails ends the job; so does a job that hangs.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let states: Vec<_> = running.iter_mut().map(|r| r.child.try_wait().unwrap()).collect();
        let failed = states.iter().flatten().any(|s| !s.success());
        if states.iter().all(Option::is_some) {
            break;
        }
        if failed || Instant::now() > deadline {
            for r in &mut running {
                let _ = r.child.kill();
            }
            let outs: Vec<String> = running
                .into_iter()
                .map(Running::output)
                .map(|(r, out)| format!("rank {r}: {}", stderr(&out)))
                .collect();
            let why = if failed { "a rank failed" } else { "the job did not end within 120 s" };
            panic!("{}: {why}\n{}", l.scenario, outs.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    running.into_iter().map(Running::output).collect()
}

/// Runs the job and asserts that every rank passed its scenario and said nothing on stderr
/// but libaar.so's own `aar:` lines; the job's shared folder holds each rank's file and the
/// job's, nothing else.
fn pass_job(l: &Launch) {
    let dirs = JobDirs::new(l.scenario);
    for (rank, out) in run_job(l, &dirs) {
        let what = format!("{} rank {rank}{}", l.scenario, if l.preload { " under libaar.so" } else { "" });
        let stdout = expect_success(&out, &what);
        assert_eq!(stdout.lines().last(), Some(format!("PASS {}", l.scenario).as_str()), "{what}: {stdout}");
        let err = stderr(&out);
        let (said, other): (Vec<&str>, Vec<&str>) = err
            .lines()
            .filter(|line| !(l.preload && line.starts_with("aar:")))
            .partition(|line| l.says.is_some_and(|(r, start)| r == rank && line.starts_with(start)));
        assert!(other.is_empty(), "{what} said on stderr:\n{err}");
        if l.says.is_some_and(|(r, _)| r == rank) {
            assert_eq!(said.len(), 1, "{what} must say it once:\n{err}");
        }
    }
    let mut want: Vec<String> = (0..l.ranks).map(|r| format!("rank-{r}")).collect();
    want.push("job".into());
    // The counters of each node's NIC, which its ranks share.
    want.extend((0..l.ranks).map(|r| format!("nic-{}", 0x100 + r / l.per_node.max(1))));
    want.dedup();
    want.sort();
    assert_eq!(dirs.shared_files(), want);
}

#[test]
fn puts_gets_and_remote_events_cross_processes() {
    pass_job(&Launch { scenario: "rma", ranks: 2, ..Default::default() });
    pass_job(&Launch { scenario: "rma", ranks: 3, ..Default::default() });
}

/// With `AAR_EMU_SIM` every rank runs its own simulated network (docs/emulator-job.md): the
/// job's data still arrives, a good value is said by nobody and a bad one by rank 0 alone.
#[test]
fn puts_and_gets_cross_processes_on_a_simulated_network() {
    let env = [("AAR_EMU_SIM", "groups=2,nodes=3,placement=scattered".to_string())];
    pass_job(&Launch { scenario: "rma", ranks: 3, env: &env, ..Default::default() });
    let env = [("AAR_EMU_SIM", "groups=99".to_string())];
    pass_job(&Launch {
        scenario: "rma",
        ranks: 3,
        env: &env,
        says: Some((0, "aar-emu: AAR_EMU_SIM=\"groups=99\": groups=\"99\" is not a whole number from 1 to 16")),
        ..Default::default()
    });
}

/// With `AAR_EMU_SIM` a rank counts its own node's NIC only: rank 0's GETs from rank 1 congest
/// the responses rank 1's node sends, and in one process, which counts both nodes
/// (README), those response stalls are counted; in a job they are not rank 0's node's, and
/// rank 1, which posted nothing, counts nothing.
#[test]
fn a_rank_counts_only_its_own_nodes_nic_on_a_simulated_network() {
    let spec = "groups=1,background=uniform:1,background-nodes=32";
    let counters = |stdout: &str| -> [i64; 5] {
        let line = stdout.lines().find_map(|l| l.strip_prefix("counters ")).expect(stdout);
        let v: Vec<i64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
        v.try_into().unwrap()
    };
    // One process, both NICs: the target's response stalls are in the sum.
    let sim_check = compile("crates/emu/tests/c/sim_check.c", "sim_check");
    let out = run(&sim_check, &["get", "32768", "0x1", "8"], &[("AAR_EMU_SIM", spec)]);
    let stdout = expect_success(&out, "sim_check");
    let step: Vec<i64> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("step "))
        .unwrap()
        .split(' ')
        .skip(5)
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(step[4] > 0, "no response stalls in one process: {stdout}");

    let env = [("AAR_EMU_SIM", spec.to_string())];
    let l = Launch { scenario: "simget", ranks: 2, env: &env, ..Default::default() };
    let dirs = JobDirs::new(l.scenario);
    let outs = run_job(&l, &dirs);
    let of = |rank: u32| counters(&expect_success(&outs.iter().find(|(r, _)| *r == rank).unwrap().1, "simget"));
    let (zero, one) = (of(0), of(1));
    // Rank 0's node: the requests and responses of its GETs, as in one process, but no stalls of
    // another node's NIC.
    assert_eq!([zero[0], zero[3]], [step[0], step[3]], "{zero:?} vs one process's {step:?}");
    assert_eq!(zero[4], 0, "rank 0's node counts rank 1's node's response stalls: {zero:?}");
    assert_eq!(one, [0; 5], "rank 1 posted nothing");
}

/// A node's counters file that cannot be made (here a folder in its place) is said by the rank
/// that needed it, whose counters then count its own traffic; the job runs on.
#[test]
fn a_nodes_counters_that_cannot_be_shared_are_said_and_the_rank_runs_on() {
    let l = Launch {
        scenario: "rma",
        ranks: 2,
        says: Some((0, "aar-emu: the node's NIC counters ")),
        ..Default::default()
    };
    let dirs = JobDirs::new(l.scenario);
    std::fs::create_dir(dirs.shared.path().join("nic-256")).unwrap();
    let outs = run_job(&l, &dirs);
    for (rank, out) in &outs {
        let err = stderr(out);
        expect_success(out, "rma");
        let said: Vec<&str> = err.lines().filter(|line| line.starts_with("aar-emu: the node's NIC counters")).collect();
        match rank {
            0 => assert!(
                said.len() == 1
                    && said[0].contains("nic-256 cannot be shared (Is a directory")
                    && said[0].contains("count its own traffic only"),
                "rank 0: {err}"
            ),
            _ => assert!(said.is_empty(), "rank {rank}'s node file was made: {err}"),
        }
    }
}

/// A rank that says more on stderr than a pipe holds (64 KiB) before it ends: the job ends, and
/// every byte it said is kept, in order. The other ranks wait for it at a barrier.
#[test]
fn a_rank_that_says_more_than_a_pipe_holds_does_not_stall_the_job() {
    let l = Launch { scenario: "chatty", ranks: 3, ..Default::default() };
    let dirs = JobDirs::new(l.scenario);
    for (rank, out) in run_job(&l, &dirs) {
        let stdout = expect_success(&out, &format!("chatty rank {rank}"));
        assert_eq!(stdout, "PASS chatty\n", "rank {rank}");
        let err = stderr(&out);
        if rank == 0 {
            let want: String = (0..2048).map(|i| format!("chatty line {i:04} {:046}\n", 0)).collect();
            assert_eq!(want.len(), 128 * 1024);
            assert!(err == want, "rank 0 said {} bytes on stderr, not the 2048 lines it wrote", err.len());
        } else {
            assert_eq!(err, "", "rank {rank}");
        }
    }
}

#[test]
fn puts_and_gets_reach_ranks_that_share_a_node() {
    pass_job(&Launch { scenario: "rma", ranks: 4, per_node: 2, ..Default::default() });
}

/// Under libaar.so every post reaches the emulator exactly once, successful (the post log all
/// ranks append to): per rank 7 GNI_PostFma (PUTs, GETs, AMOs), 2 GNI_PostRdma, 1 GNI_CtPostFma.
#[test]
fn puts_and_gets_work_under_libaar() {
    let log = aar_testkit::scratch("job-rma-log").join("emu.jsonl");
    let env = [("AAR_EMU_LOG", log.display().to_string())];
    pass_job(&Launch { scenario: "rma", ranks: 3, preload: true, env: &env, ..Default::default() });
    let text = std::fs::read_to_string(&log).unwrap();
    let mut calls = std::collections::BTreeMap::new();
    for line in text.lines() {
        let fields = parse_log_line(line);
        assert_eq!(fields["rc"], 0, "{line}");
        *calls.entry(fields["call"].as_str().unwrap().to_string()).or_insert(0) += 1;
    }
    let want: std::collections::BTreeMap<String, i32> =
        [("GNI_PostFma", 21), ("GNI_PostRdma", 6), ("GNI_CtPostFma", 3)].map(|(c, n)| (c.to_string(), n)).into();
    assert_eq!(calls, want);
}

#[test]
fn concurrent_fetch_adds_from_every_rank_are_exact() {
    pass_job(&Launch { scenario: "amo", ranks: 4, ..Default::default() });
}

#[test]
fn cq_writes_reach_another_ranks_cq() {
    pass_job(&Launch { scenario: "cqwrite", ranks: 3, ..Default::default() });
    pass_job(&Launch { scenario: "cqwrite", ranks: 2, preload: true, ..Default::default() });
}

#[test]
fn a_cq_wait_sleeps_times_out_and_a_full_cq_overruns() {
    pass_job(&Launch { scenario: "overrun", ranks: 2, ..Default::default() });
}

#[test]
fn datagrams_meet_across_processes_directed_and_wildcard() {
    pass_job(&Launch { scenario: "dgram", ranks: 3, ..Default::default() });
    pass_job(&Launch { scenario: "dgram", ranks: 4, per_node: 2, ..Default::default() });
}

/// A datagram of a rank that has ended meets no later post: it was lost with its process.
#[test]
fn a_datagram_of_a_rank_that_ended_meets_nothing() {
    pass_job(&Launch { scenario: "dgdead", ranks: 2, ..Default::default() });
}

#[test]
fn smsg_flows_between_every_pair_with_credits_after_a_datagram_exchange() {
    pass_job(&Launch { scenario: "smsg", ranks: 3, ..Default::default() });
    pass_job(&Launch { scenario: "smsg", ranks: 2, preload: true, ..Default::default() });
}

#[test]
fn an_smsg_sender_follows_a_mailbox_set_up_again_under_another_control() {
    pass_job(&Launch { scenario: "smsgreinit", ranks: 2, ..Default::default() });
}

#[test]
fn an_smsg_send_to_a_destroyed_endpoint_fails_and_misses_the_mailbox_set_up_again() {
    pass_job(&Launch { scenario: "smsgstale", ranks: 2, ..Default::default() });
}

#[test]
fn an_smsg_mailbox_taken_over_by_a_new_endpoint_still_receives_once_the_old_endpoint_goes() {
    pass_job(&Launch { scenario: "smsgtakeover", ranks: 2, ..Default::default() });
}

#[test]
fn an_old_smsg_endpoint_can_neither_take_nor_release_the_messages_of_the_endpoint_that_took_its_mailbox_over() {
    pass_job(&Launch { scenario: "smsgtakenold", ranks: 2, ..Default::default() });
}

#[test]
fn posts_to_a_rank_that_ended_fail_and_the_poster_goes_on() {
    let says = Some((0, "aar-emu: process_vm_writev to rank 1 (pid "));
    pass_job(&Launch { scenario: "orphan", ranks: 2, says, ..Default::default() });
}

/// A rank whose process ended but is not reaped yet (a zombie, which `kill(pid, 0)` still
/// finds): posts to it fail and the poster goes on, through process_vm and through the service
/// thread, which no longer answers (the poster waited for it for ever).
#[test]
fn posts_to_a_rank_that_ended_unreaped_fail_and_the_poster_goes_on() {
    let says = Some((0, "aar-emu: process_vm_writev to rank 1 (pid "));
    pass_job(&Launch { scenario: "zombie", ranks: 2, says, ..Default::default() });
    let env = [("AAR_EMU_JOB_COPY", "service".to_string())];
    pass_job(&Launch { scenario: "zombie", ranks: 2, env: &env, ..Default::default() });
}

/// `AAR_EMU_JOB_COPY=service`: what the ranks use where the kernel refuses process_vm. Every
/// byte then goes through the other rank's service thread.
#[test]
fn the_service_thread_moves_puts_gets_amos_and_smsg() {
    let env = [("AAR_EMU_JOB_COPY", "service".to_string())];
    pass_job(&Launch { scenario: "rma", ranks: 3, env: &env, ..Default::default() });
    pass_job(&Launch { scenario: "amo", ranks: 3, env: &env, ..Default::default() });
    pass_job(&Launch { scenario: "smsg", ranks: 3, env: &env, ..Default::default() });
    pass_job(&Launch { scenario: "hostile", ranks: 2, env: &env, ..Default::default() });
    pass_job(&Launch { scenario: "cqwrite", ranks: 2, env: &env, ..Default::default() });
}

/// Bad handles, addresses and memory get uGNI's codes and move nothing; the attacked rank goes
/// on. One of the handles comes from another job: rank 1 of a job with another folder and
/// cookie, whose first registration has the same rank and slot.
fn hostile(preload: bool) {
    let other = JobDirs::new("foreign");
    let handle = other.xchg.join("foreign-handle");
    let env = [("JOB_TEST_FOREIGN_OUT", handle.display().to_string())];
    let foreign = Launch { scenario: "foreign", ranks: 2, cookie: 0xbad, only: &[1], env: &env, ..Default::default() };
    for (_, out) in run_job(&foreign, &other) {
        expect_success(&out, "foreign");
    }
    let env = [("JOB_TEST_FOREIGN", handle.display().to_string())];
    pass_job(&Launch { scenario: "hostile", ranks: 2, preload, env: &env, ..Default::default() });
}

#[test]
fn hostile_posts_fail_with_ugni_codes_and_harm_no_rank() {
    hostile(false);
}

#[test]
fn hostile_posts_fail_with_ugni_codes_under_libaar() {
    hostile(true);
}

/// A job environment that is missing a variable or has a bad one: one clear line that names it,
/// and the program runs in the in-process mode, leaving nothing in the job's folder.
#[test]
fn a_bad_job_environment_warns_once_and_runs_alone() {
    let emu_check = compile("crates/emu/tests/c/emu_check.c", "emu_check");
    let dirs = JobDirs::new("badenv");
    let dir = dirs.shared.path().display().to_string();
    let cases: [(&[(&str, &str)], &str); 6] = [
        (&[("PMI_SIZE", "2"), ("PMI_GNI_LOC_ADDR", "256")], "PMI_RANK is not set"),
        (
            &[("PMI_RANK", "0"), ("PMI_SIZE", "2"), ("PMI_GNI_LOC_ADDR", "node7")],
            "PMI_GNI_LOC_ADDR=\"node7\" is not a 32-bit number",
        ),
        (
            &[("PMI_RANK", "2"), ("PMI_SIZE", "2"), ("PMI_GNI_LOC_ADDR", "0x100")],
            "PMI_RANK=\"2\" is not below PMI_SIZE=2",
        ),
        // A size out of range is PMI_SIZE's fault, whatever the rank.
        (
            &[("PMI_RANK", "0"), ("PMI_SIZE", "0"), ("PMI_GNI_LOC_ADDR", "256")],
            "PMI_SIZE=\"0\" is not a number of ranks from 1 to 16777216",
        ),
        (
            &[("PMI_RANK", "0"), ("PMI_SIZE", "16777217"), ("PMI_GNI_LOC_ADDR", "256")],
            "PMI_SIZE=\"16777217\" is not a number of ranks from 1 to 16777216",
        ),
        (
            &[
                ("PMI_RANK", "0"),
                ("PMI_SIZE", "1"),
                ("PMI_GNI_LOC_ADDR", "256"),
                ("AAR_EMU_JOB_DIR", "/nonexistent/job"),
            ],
            "AAR_EMU_JOB_DIR=\"/nonexistent/job\" is not a folder",
        ),
    ];
    for (env, said) in cases {
        let mut all = vec![("AAR_EMU_JOB_DIR", dir.as_str())];
        all.extend_from_slice(env);
        let out = run(&emu_check, &["put_get"], &all);
        expect_success(&out, said);
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("aar-emu: {said}")) && err.contains("in-process mode"), "{err}");
        assert_eq!(dirs.shared_files(), Vec::<String>::new());
    }
}

/// Under a file size limit (`ulimit -f`) below a rank's shared file, which a rank makes at its
/// first uGNI call: no rank is killed by SIGXFSZ. GNI_CdmAttach returns GNI_RC_ERROR_RESOURCE,
/// each rank says why in one line with the fix, and no rank's file stays in the job's folder.
#[test]
fn a_file_size_limit_below_the_rank_file_fails_the_attach_and_kills_no_rank() {
    let fsize = format!("--fsize={}", 64 * 1024);
    let l = Launch { scenario: "attach", wrapper: &["prlimit", &fsize, "--"], ..Launch::default() };
    let dirs = JobDirs::new("fsize");
    for (rank, out) in run_job(&l, &dirs) {
        let stdout = expect_success(&out, &format!("rank {rank} under {fsize}"));
        assert!(stdout.contains(&format!("attach rc={}\n", aar_abi::GNI_RC_ERROR_RESOURCE)), "rank {rank}: {stdout}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "rank {rank}: {err}");
        assert!(
            err.starts_with("aar-emu: the file size limit (ulimit -f, RLIMIT_FSIZE) is 65536 bytes")
                && err.contains("GNI_RC_ERROR_RESOURCE")
                && err.contains("ulimit -f unlimited"),
            "rank {rank}: {err}"
        );
    }
    // The node's counters (40 bytes, within the limit), and no rank's file, not even a partial one.
    assert_eq!(dirs.shared_files(), ["nic-256", "nic-257"]);
}

/// A rank of a job as large as a job may say it is (PMI_SIZE=16777216, 2^24), under an
/// address-space limit (ulimit -v) that leaves room for its own file but not for a table of
/// every rank (128 MiB): it joins and runs; a failed allocation would abort the program at its
/// first uGNI call.
#[test]
fn a_rank_of_the_largest_job_joins_under_an_address_space_limit() {
    let l = Launch {
        scenario: "attach",
        ranks: 1 << 24,
        only: &[0],
        wrapper: &["prlimit", "--as=100000000", "--"],
        ..Launch::default()
    };
    let dirs = JobDirs::new("largest");
    let outs = run_job(&l, &dirs);
    let stdout = expect_success(&outs[0].1, "rank 0 of 16777216 under prlimit --as=100000000");
    assert!(stdout.contains("attach rc=0\n"), "{stdout}");
    assert_eq!(stderr(&outs[0].1), "");
    assert_eq!(dirs.shared_files(), ["job", "nic-256", "rank-0"]);
}

/// A rank's file another build made in the job's folder (a folder reused, a rank of another
/// version): of another size, or of this size with another magic (the previous layout's). A
/// rank that looks for that rank says so once, naming the file, what it does and the fix, and
/// goes on as if that rank had not started.
#[test]
fn a_rank_file_of_another_build_is_said_once_and_that_rank_counts_as_not_started() {
    for (what, small) in [("another magic", false), ("another size", true)] {
        let dirs = JobDirs::new("stranger");
        // Rank 1 of this build makes its file, which then becomes another build's.
        run_job(&Launch { scenario: "attach", only: &[1], ..Launch::default() }, &dirs);
        let file = dirs.shared.path().join("rank-1");
        if small {
            std::fs::write(&file, [0u8; 4096]).unwrap();
        } else {
            let mut bytes = std::fs::read(&file).unwrap();
            bytes[..8].copy_from_slice(&0x6161_722d_6a6f_6201u64.to_ne_bytes());
            std::fs::write(&file, bytes).unwrap();
        }
        let outs = run_job(&Launch { scenario: "stranger", only: &[0], ..Launch::default() }, &dirs);
        let out = &outs[0].1;
        let stdout = expect_success(out, what);
        assert!(stdout.ends_with("PASS stranger\n"), "{what}: {stdout}");
        let err = stderr(out);
        assert_eq!(err.lines().count(), 1, "{what}: said once: {err}");
        let found = if small { "(4096 bytes, magic 0x0, rank 0;" } else { "magic 0x6161722d6a6f6201, rank 1;" };
        assert!(
            err.starts_with(&format!("aar-emu: {}: not a file of this build's rank 1 (", file.display()))
                && err.contains(found)
                && err.contains("treats rank 1 as not started")
                && err.contains("run every rank with the same build, in a fresh folder"),
            "{what}: {err}"
        );
    }
}

/// The job's shared file another build made (the previous layout's 16 bytes, or this size with
/// another magic): the ranks would not share the datagram lock, so none joins: GNI_CdmAttach
/// returns GNI_RC_ERROR_RESOURCE, each rank says why in one line, naming the file and the fix,
/// and no rank's file is left.
#[test]
fn a_job_file_of_another_build_fails_the_attach_and_says_what_to_do() {
    let mut other_magic = vec![0u8; 24];
    other_magic[..8].copy_from_slice(&0x6161_722d_6a6f_6200u64.to_ne_bytes());
    for (bytes, found) in [(vec![0u8; 16], "(16 bytes;"), (other_magic, "(magic 0x6161722d6a6f6200;")] {
        let dirs = JobDirs::new("foreignjob");
        let file = dirs.shared.path().join("job");
        std::fs::write(&file, &bytes).unwrap();
        for (rank, out) in run_job(&Launch { scenario: "attach", ..Launch::default() }, &dirs) {
            let stdout = expect_success(&out, &format!("rank {rank}"));
            assert!(
                stdout.contains(&format!("attach rc={}\n", aar_abi::GNI_RC_ERROR_RESOURCE)),
                "rank {rank}: {stdout}"
            );
            let err = stderr(&out);
            assert_eq!(err.lines().count(), 1, "rank {rank}: {err}");
            assert!(
                err.starts_with(&format!(
                    "aar-emu: {}: this job's shared file is another build's {found}",
                    file.display()
                )) && err.contains("GNI_CdmAttach returns GNI_RC_ERROR_RESOURCE")
                    && err.contains("run every rank with the same build, in a fresh folder"),
                "rank {rank}: {err}"
            );
        }
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "the other build's file was changed");
        assert_eq!(dirs.shared_files(), ["job", "nic-256", "nic-257"]);
    }
}

/// A full /dev/shm, where a rank's shared file cannot be made, is met as a file size limit is:
/// GNI_CdmAttach returns GNI_RC_ERROR_RESOURCE (a rank running alone could not be reached by the
/// others), each rank says why in one line, and none dies of SIGBUS. Each rank runs in a mount
/// namespace of its own whose job folder is a tmpfs too small for its file.
#[test]
fn a_full_dev_shm_fails_the_attach_as_a_file_size_limit_does() {
    if !Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("note: no mount namespace here (unshare -m); the test is skipped");
        return;
    }
    let full = "mount -t tmpfs -o size=64k tmpfs \"$AAR_EMU_JOB_DIR\" || exit 97; exec \"$@\"";
    let l = Launch { scenario: "attach", wrapper: &["unshare", "-m", "sh", "-c", full, "sh"], ..Launch::default() };
    let dirs = JobDirs::new("full");
    for (rank, out) in run_job(&l, &dirs) {
        assert_ne!(out.status.code(), Some(97), "namespace setup failed: {}", stderr(&out));
        let stdout = expect_success(&out, &format!("rank {rank} on a full /dev/shm"));
        assert!(stdout.contains(&format!("attach rc={}\n", aar_abi::GNI_RC_ERROR_RESOURCE)), "rank {rank}: {stdout}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "rank {rank}: {err}");
        assert!(
            err.starts_with(&format!(
                "aar-emu: AAR_EMU_JOB_DIR={}: cannot make this rank's shared file",
                dirs.shared.path().display()
            )) && err.contains("(No space left on device")
                && err.contains("GNI_CdmAttach returns GNI_RC_ERROR_RESOURCE"),
            "rank {rank}: {err}"
        );
    }
    // The files were made, if at all, in each rank's own tmpfs, gone with its namespace.
    assert_eq!(dirs.shared_files(), Vec::<String>::new());
}

/// A bad value of one of the emulator's variables, in an `aar run` job whose every rank reads it:
/// said once, by rank 0, as libaar.so says its warnings; every rank uses the default.
#[test]
fn a_bad_setting_in_an_aar_run_job_is_said_by_rank_0_only() {
    let out = Command::new(aar_testkit::aar_command())
        .args(["run", "-n", "4", "--"])
        .arg(job_check())
        .arg("attach")
        .env("AAR_EMU_JOB_COPY", "bogus")
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    let stdout = expect_success(&out, "aar run -n 4 job_check attach");
    assert_eq!(stdout.matches("attach rc=0\n").count(), 4, "{stdout}");
    let err = stderr(&out);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("AAR_EMU_JOB_COPY")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].starts_with("aar-emu: AAR_EMU_JOB_COPY=\"bogus\": not a copy path"), "{err}");
}

/// A kernel whose Yama ptrace_scope (2 or 3) will refuse the ranks each other's memory: said
/// once, by rank 0, since all ranks of an `aar run` job run on that one kernel. The setting is
/// faked in a mount namespace of the job's own (a tmpfs over /proc/sys/kernel), not changed on
/// the host.
#[test]
fn a_ptrace_scope_that_refuses_the_ranks_is_said_by_rank_0_only() {
    if !Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("note: no mount namespace here (unshare -m); the test is skipped");
        return;
    }
    let fake = "mount -t tmpfs tmpfs /proc/sys/kernel && mkdir /proc/sys/kernel/yama \
                && echo 2 > /proc/sys/kernel/yama/ptrace_scope || exit 97; exec \"$@\"";
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", fake, "sh"])
        .arg(aar_testkit::aar_command())
        .args(["run", "-n", "4", "--"])
        .arg(job_check())
        .arg("attach")
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(97), "namespace setup failed: {}", stderr(&out));
    let stdout = expect_success(&out, "aar run -n 4 job_check attach under ptrace_scope=2");
    assert_eq!(stdout.matches("attach rc=0\n").count(), 4, "{stdout}");
    let err = stderr(&out);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("ptrace_scope")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].starts_with("aar-emu: kernel.yama.ptrace_scope=2: the kernel will refuse"), "{err}");
    assert!(said[0].contains("service threads") && said[0].ends_with("set it to 0 or 1"), "{err}");
}

/// True when strace can trace a program here (it is installed, and ptrace is allowed).
fn strace_works() -> bool {
    Command::new("strace").args(["-f", "-qq", "-o", "/dev/null", "true"]).status().is_ok_and(|s| s.success())
}

/// Runs the job with every rank under `strace -f -e trace=<calls>`; each rank's calls of those,
/// one a line, by rank.
fn traced_job(l: &Launch, calls: &str) -> Vec<(u32, String)> {
    let script = format!("exec strace -f -qq -e trace={calls} -o \"$JOB_TEST_XCHG/strace-$PMI_RANK\" -- \"$@\"");
    let wrapper = ["sh", "-c", script.as_str(), "sh"];
    let l = Launch { wrapper: &wrapper, ..*l };
    let dirs = JobDirs::new(l.scenario);
    run_job(&l, &dirs)
        .into_iter()
        .map(|(rank, out)| {
            let stdout = expect_success(&out, &format!("{} rank {rank} under strace", l.scenario));
            assert_eq!(stdout.lines().last(), Some(format!("PASS {}", l.scenario).as_str()), "rank {rank}: {stdout}");
            let trace = std::fs::read_to_string(dirs.xchg.join(format!("strace-{rank}"))).unwrap();
            (rank, trace)
        })
        .collect()
}

/// A rank holds the process of a rank it copies to once, not at every copy: rank 0's 200 copies
/// to and from rank 1 (100 PUTs, 100 GETs) open one pidfd and read rank 1's /proc/<pid>/stat
/// once, where each copy opened a pidfd and read that file (a few µs a copy).
#[test]
fn copies_to_a_rank_hold_its_process_once_not_at_every_copy() {
    if !strace_works() {
        eprintln!("note: strace cannot trace here; the test is skipped");
        return;
    }
    let l = Launch { scenario: "copies", ..Default::default() };
    let traces = traced_job(&l, "pidfd_open,openat,process_vm_readv,process_vm_writev");
    let trace = &traces.iter().find(|(r, _)| *r == 0).unwrap().1;
    let count = |what: &dyn Fn(&str) -> bool| trace.lines().filter(|l| what(l)).count();
    let copies = count(&|l| l.contains("process_vm_writev(") || l.contains("process_vm_readv("));
    assert!(copies >= 200, "rank 0 made {copies} copies, not the 200 of its posts: the test proves nothing\n{trace}");
    let pidfds = count(&|l| l.contains("pidfd_open("));
    let stats = count(&|l| l.contains("openat(") && l.contains("/proc/") && l.contains("/stat\""));
    assert!(pidfds <= 2, "{pidfds} pidfds opened for {copies} copies to one rank");
    assert!(stats <= 4, "{stats} reads of a /proc/<pid>/stat for {copies} copies to one rank");
}

/// Datagrams look for their match among the ranks that have started, not among every rank the
/// job says it has: ranks 0 and 1 of a job of 100,000 (PMI_SIZE) meet each other's directed
/// datagrams with wildcard ones, opening no other rank's file (each such post tried to open the
/// file of each of the 100,000 ranks).
#[test]
fn datagrams_in_a_large_job_look_only_at_the_ranks_that_started() {
    if !strace_works() {
        eprintln!("note: strace cannot trace here; the test is skipped");
        return;
    }
    let l = Launch { scenario: "bigjob", ranks: 100_000, only: &[0, 1], ..Default::default() };
    for (rank, trace) in traced_job(&l, "openat") {
        let opened: Vec<&str> = trace.lines().filter(|l| l.contains("/rank-")).collect();
        assert!(opened.len() <= 16, "rank {rank} opened {} rank files:\n{}", opened.len(), opened[..16].join("\n"));
    }
}
