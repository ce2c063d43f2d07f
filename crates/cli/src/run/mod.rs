//! `aar run [-n N] [-N K] [-l] [-t LIMIT] [--] PROGRAM ARGS...`: an emulated multi-rank job on
//! this machine, as a Cray job is started by aprun or srun.
//!
//! - The job ([`job`]): a job id, the folder `AAR_EMU_JOB_DIR` (/dev/shm/aar-job-ID, mode 0700)
//!   the emulated libugni.so keeps shared state in, and each rank's environment as ALPS sets it
//!   (`PMI_RANK`, `PMI_SIZE`, `PMI_JOBID`, `PMI_GNI_PTAG`, `PMI_GNI_COOKIE`, `PMI_GNI_DEV_ID`,
//!   `PMI_GNI_LOC_ADDR`: rank r is on node r / K, whose NIC address is `FIRST_NIC_ADDR` + node;
//!   and, as hydra, `MPI_LOCALNRANKS`), and the job's node table in its folder (`topology`).
//! - Capacity ([`capacity`]): before any rank starts, the job's need of /dev/shm (the emulator's
//!   shared state, about 8.5 MiB per rank), of processes (RLIMIT_NPROC) and of open files (a PMI
//!   socket and two output pipes per rank) is checked; a job too big is refused with the need, what there is and the
//!   fix. A soft open-file limit too low is raised to the need when the hard one allows (as srun
//!   does); the ranks get the original back. An address-space limit (`ulimit -v`) too low for a
//!   rank that maps the emulator files of all ranks is said, with the fix; the job starts anyway.
//! - PMI ([`server`]): one socket pair per rank, the rank's end inherited as `PMI_FD` at one small
//!   descriptor, the same for every rank ([`rank_pmi_fd`], 3 unless aar run was given 3 open to
//!   pass on), so a shell rank's `>&$PMI_FD` works in dash too (which takes none above 9); served in
//!   one poll loop with the simple PMI-1 wire protocol that MPICH's hydra speaks, so libpmi.so.0
//!   works under both; the KVS holds `PMI_process_mapping` (hydra's format) for the cliques; each key is put once
//!   and the KVS holds at most [`server::KVS_MAX_BYTES`], a put refused otherwise.
//!   Answers wait in a queue per rank, written as its socket takes them without blocking, so a
//!   rank that does not read them stops no other; one that leaves more than [`MAX_UNREAD`] unread
//!   ends the job (exit status 1), said in one line that names it (also when the job is already
//!   ending, which keeps its exit status); so does one that sends more than [`MAX_LINE`] bytes
//!   without a newline, whose connection is closed. A line that is not PMI is
//!   answered with an error; the first [`NOT_PMI_SAID`] of a rank are said, the rest counted, and
//!   the count is said at the end of the job; each in one short line, the word at fault quoted by
//!   [`pmi::wire::quoted`] (escaped and cut: a rank's line may hold 64 KiB of anything).
//! - The end: the job's exit status is 0 when every rank exits 0. The first rank that calls
//!   PMI_Abort, exits non-zero or dies by a signal ends the job: one message says which rank and
//!   what happened, the ranks still running get SIGTERM (and SIGCONT, so that a rank stopped from
//!   outside acts on it), then SIGKILL after [`GRACE`]; a rank that called PMI_Abort gets them too,
//!   as srun ends a whole step: MPICH's waits in it for an answer on its PMI_FD, which hydra never
//!   sends (it kills the ranks), and which it must not get: on an answer, or the connection
//!   closed, MPICH 4's MPI_Abort returns to the program. The job exits
//!   with that rank's code (128 + the signal for a signal; a PMI_Abort code's low byte, but 1 for a
//!   code whose low byte is 0: an abort is no success, though hydra's mpiexec exits 0 for
//!   MPI_Abort(comm, 0); Slurm's srun kills the step and fails). A rank that called PMI_Init and
//!   exits 0 without PMI_Finalize fails with exit status 1, as under hydra's mpiexec and Open MPI's
//!   mpirun: it left the job early, and the others may wait for it for ever; so does one that closes
//!   its PMI_FD without PMI_Finalize and runs on, as hydra's proxy takes such a close (no PMI call
//!   of it can reach the launcher again), whether or not another waits for it yet. A rank that ended, or
//!   closed its PMI_FD (PMI_Finalize does) and runs on, while others wait in PMI_Barrier ends the
//!   job with exit status 1: that barrier can never complete. SIGINT, SIGTERM, SIGHUP or SIGQUIT to `aar run` is
//!   forwarded to the ranks the same way ([`signals`]), once: each rank runs in a process group of
//!   its own (as a shell's job does), so a signal to the launcher's group (a key's at the terminal,
//!   whose foreground group it is; `kill -- -PGID`; a terminal's hangup) reaches the launcher alone,
//!   and one Ctrl-C is one SIGINT to each rank; another such signal while the job ends (a second
//!   Ctrl-C, or one while a rank's failure ends it) sends SIGKILL to the ranks still running at
//!   once; one that was ignored when `aar run` started (nohup) stays ignored, by the launcher and
//!   the ranks; one that was blocked (a signal mask its parent left it) is unblocked. SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU or SIGPWR, whose default action would end
//!   the launcher alone, end the job with SIGTERM to the ranks and exit status 128 + that signal.
//!   A time limit ([`time`]: `--time`,
//!   `MPIEXEC_TIMEOUT`; none by default) that runs out ends the job the same way, with exit status
//!   124; the time the job was stopped does not count. Processes the ranks leave running end with
//!   the job (the launcher is their subreaper: SIGTERM, SIGKILL after [`GRACE`], or at once at one
//!   of those signals), and ranks end with a launcher killed by SIGKILL.
//!   Whatever the end, the job folder is removed after the last rank ended; folders that launchers
//!   killed by SIGKILL left behind are removed by the next `aar run`.
//!
//! - Job control, as users of mpiexec and srun expect it: SIGTSTP (Ctrl-Z) stops the job, SIGSTOP
//!   to the ranks and every process they started (as srun: no rank can catch or ignore it), then
//!   the launcher stops itself with SIGTSTP (so its shell reports a stopped job), or with SIGSTOP
//!   in an orphaned process group, where the kernel discards SIGTSTP. SIGCONT (`fg`, `bg`,
//!   `kill -CONT`) goes to all of them; the time limit and the grace before SIGKILL are moved by the
//!   time stopped. SIGUSR1 and SIGUSR2 are forwarded to the ranks, as srun and hydra forward them;
//!   SIGWINCH (a resize of the terminal) to each rank's process group, silently. A rank stopped by
//!   SIGTTIN or SIGTTOU (it read the terminal itself, or changed its settings: outside the
//!   terminal's foreground group it cannot) ends the job with exit status 1, named with the fix; so
//!   does a process a rank started that is stopped so, looked for every [`TTY_CHECK`] while the
//!   launcher has a controlling terminal (its stop sends the launcher no SIGCHLD).
//!   SIGSTOP, which no process can catch, stops only the launcher.
//!
//! - Output ([`output`]): each rank's stdout and stderr are pipes the launcher copies to its own a
//!   whole line at a time, as srun does (`--label`: each line starts with its rank), through a
//!   bounded queue written when the launcher's stream takes it without blocking, so a stream
//!   nobody reads stops the ranks that write to it, never PMI; rank 0 gets its stdin, the others
//!   /dev/null. A stdin that is the launcher's controlling terminal, which rank 0 outside the
//!   terminal's foreground group could not read (SIGTTIN would stop it), is read by the launcher,
//!   while in the foreground, and passed to rank 0 through a pipe ([`input`]), as hydra's mpiexec
//!   does; rank 0 sees the end of its input at Ctrl-D, and what it did not read of what was typed
//!   is lost at its end, said with how many bytes. The launcher's own lines wait in stderr's
//!   queue, after what a rank wrote before a line about it (held back while that waits in its
//!   pipe), and past 1 MiB more are counted, the count said at the end ([`output::say()`]).
//! - Options srun users type out of habit: `--ntasks`, `--ntasks-per-node`, `-t` are taken; those
//!   aar run has not are refused with what to do instead ([`Refused`]). The exit status of a job a
//!   rank's failure ended is, as srun's, the highest code of the ranks that failed on their own:
//!   those that had ended when the launcher began to end the job. A rank that ends after that (of
//!   its SIGTERM, of SIGPIPE from a peer the SIGTERM killed, by its SIGTERM handler's exit code)
//!   ended with the job, and is not counted.

/// One line on stderr, as `eprintln!` but queued after the ranks' lines that wait to be written
/// there and written out as far as stderr takes it without blocking ([`output::say`]): a stderr
/// nobody reads (a full pipe) does not stop PMI or the job's end; [`run`] writes out what is left
/// before it returns. Without `eprintln!`'s panic when stderr cannot be written (a closed pipe:
/// `aar run ... 2>&1 | head`): the line is lost, and the launcher still ends its ranks and what
/// they left running, and removes the job folder, instead of dying mid-job.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::run::output::say(format_args!($($arg)*))
    };
}

mod capacity;
mod input;
mod job;
mod output;
mod server;
mod signals;
mod time;

use aar_record::count;
use clap::Args;
use job::Job;
use pmi::wire::{Message, MAX_LINE};
use server::{Outcome, Server};
use signals::SignalPipe;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The most ranks a job may have.
const MAX_RANKS: u32 = 4096;

#[derive(Args)]
#[command(
    after_help = "Exit status: 0 when every rank exits 0; else the code of the rank that ended the job, or the highest of the ranks that failed on their own \
(as srun's; those that had ended when aar run began to end the job: not one that ends after its SIGTERM) (its PMI_Abort code (1 for a code of 0: an abort is no success), its exit code, or 128 + the signal that killed it), 128 + the signal aar run got, 1 when a rank \
that called PMI_Init exited 0, or closed its PMI_FD and ran on, without PMI_Finalize, or ended or closed its PMI_FD while others wait in PMI_Barrier or left more than 1 MiB of PMI answers unread or sent more than 64 KiB on its PMI_FD without a newline, or was stopped by SIGTTIN or SIGTTOU for reading or setting the terminal itself, 124 when the time limit (--time, MPIEXEC_TIMEOUT) ran \
out, 2 for bad arguments, 127 when the job or a rank cannot be started (a job too big for /dev/shm or for the process or open-file \
limits is refused before any rank starts). Ranks that do not \
end within 3 s of SIGTERM (or of the signal aar run got) get SIGKILL, at once when aar run gets one of those signals while the job \
ends; processes the ranks left running end with the job."
)]
pub struct RunArgs {
    /// How many ranks (processes) to start (as srun -n, aprun -n)
    #[arg(short = 'n', long = "ranks", visible_alias = "ntasks", value_name = "N", default_value_t = 1,
          allow_negative_numbers = true, value_parser = ranks_arg(MAX_RANKS,
          "the number of ranks to start", "give -n N within that, as srun -n N"))]
    ranks: u32,
    /// Ranks per node (as aprun -N and srun --ntasks-per-node; not srun's -N, the number of
    /// nodes): rank r runs on node r / K, whose NIC address is 0x100 + node
    #[arg(short = 'N', long = "ranks-per-node", visible_alias = "ntasks-per-node", value_name = "K", default_value_t = 1,
          allow_negative_numbers = true, value_parser = ranks_arg(u32::MAX,
          "ranks per node, not a number of nodes",
          "give -N K with K at least 1 (1, the default, puts each rank on a node of its own), as aprun -N K"))]
    ranks_per_node: u32,
    /// Time limit, as srun --time: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS or
    /// DAYS-HOURS\[:MINUTES\[:SECONDS\]\]; 0 for none. On expiry the ranks still running are named and
    /// ended as at any end, and aar run exits 124; time the job was stopped (Ctrl-Z) does not count.
    /// Default: MPIEXEC_TIMEOUT (seconds, as hydra and Open MPI read it), else none, as mpiexec's:
    /// a long run is no error, and a guessed limit would kill honest ones; set one where a hung
    /// rank must not wait forever (batch scripts, tests)
    #[arg(short = 't', long = "time", value_name = "LIMIT", allow_negative_numbers = true)]
    time: Option<time::TimeLimit>,
    /// Start each line of the ranks' output with the rank that wrote it and ": " (as srun -l).
    /// With or without it, lines of different ranks never mix mid-line
    #[arg(short = 'l', long = "label")]
    label: bool,
    /// srun's options that aar run has not, taken only to be refused with what to do instead
    /// ([`Refused::check`]), rather than as "unexpected argument".
    #[command(flatten)]
    refused: Refused,
    /// The program each rank runs (a path, or a name looked up in PATH), and its arguments
    // Everything from PROGRAM on is its own (trailing_var_arg). Not allow_hyphen_values: with it
    // clap reads `-n4` (srun's spelling) as a PROGRAM named "-n4"; a program whose name starts
    // with '-' comes after `--`.
    #[arg(value_name = "PROGRAM", required = true, trailing_var_arg = true)]
    command: Vec<OsString>,
}

/// The parser of a count of ranks from 1 to `most` ([`crate::sim::options::whole`]); a value it
/// refuses is said with what the option means (`what`), that no job was started, and `fix`.
fn ranks_arg(most: u32, what: &'static str, fix: &'static str) -> impl Fn(&str) -> Result<u32, String> + Clone {
    let parse = crate::sim::options::whole::<u32>(1, most.into());
    move |text| parse(text).map_err(|e| format!("{e} ({what}); no job was started: {fix}"))
}

/// srun's and aprun's options a user types out of habit that aar run has not (or needs not): each
/// is refused with what to use instead, or taken when it asks for what aar run does anyway.
#[derive(Args)]
struct Refused {
    #[arg(long = "nodes", value_name = "K", hide = true)]
    nodes: Option<String>,
    #[arg(short = 'c', long = "cpus-per-task", value_name = "NCPUS", hide = true)]
    cpus_per_task: Option<String>,
    #[arg(short = 'd', long = "depth", value_name = "DEPTH", hide = true)]
    depth: Option<String>,
    #[arg(long = "export", value_name = "VARIABLES", hide = true)]
    export: Option<String>,
    #[arg(short = 'o', long = "output", value_name = "FILE", hide = true)]
    output: Option<String>,
    #[arg(short = 'e', long = "error", value_name = "FILE", hide = true)]
    error: Option<String>,
    #[arg(short = 'K', long = "kill-on-bad-exit", value_name = "0|1", hide = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "1")]
    kill_on_bad_exit: Option<String>,
}

impl Refused {
    /// The message for the first option given that aar run refuses; `None` when all can be taken.
    fn check(&self, ranks: u32) -> Option<String> {
        let tail = "no job was started.";
        if let Some(k) = &self.nodes {
            let per_node = match k.parse::<u32>() {
                Ok(k) if k > 0 => format!(" (here: -n {ranks} --ntasks-per-node {})", ranks.div_ceil(k)),
                _ => String::new(),
            };
            return Some(format!(
                "--nodes {k}: aar run places ranks by how many share a node, not by a number of nodes: for N ranks on K nodes give -N/--ntasks-per-node with N/K rounded up{per_node}, as aprun -N; {tail}"
            ));
        }
        if let Some((opt, v)) = [("-c/--cpus-per-task", &self.cpus_per_task), ("-d/--depth", &self.depth)]
            .into_iter()
            .find_map(|(o, v)| v.as_ref().map(|v| (o, v)))
        {
            return Some(format!(
                "{opt} {v}: aar run binds no rank to CPUs: every rank may use all of this machine's; leave {opt} out (and set OMP_NUM_THREADS for a rank's threads); {tail}"
            ));
        }
        if let Some(v) = self.export.as_ref().filter(|v| !v.eq_ignore_ascii_case("ALL")) {
            return Some(format!(
                "--export={v}: aar run gives the ranks its whole environment (as --export=ALL), plus the job's variables; for another environment start it under env: env -i PATH=\"$PATH\" aar run ..., or env VAR=value aar run ...; {tail}"
            ));
        }
        if let Some((opt, v)) = [("-o/--output", &self.output), ("-e/--error", &self.error)]
            .into_iter()
            .find_map(|(o, v)| v.as_ref().map(|v| (o, v)))
        {
            return Some(format!(
                "{opt} {v}: aar run writes the ranks' stdout and stderr to its own, whole lines (-l starts each with its rank); redirect those: aar run ... >FILE 2>FILE; {tail}"
            ));
        }
        if let Some(v) = self.kill_on_bad_exit.as_ref().filter(|v| v.as_str() != "1") {
            return Some(format!(
                "--kill-on-bad-exit={v}: aar run always ends the job when a rank fails (as srun -K, and as an MPI job must: the others would wait for it); give -K or leave it out; {tail}"
            ));
        }
        None
    }
}

/// Why `program` is no program this machine can execute, with how to fix it: exec would fail
/// with ENOEXEC and execvp then run the file with /bin/sh, whose errors about its bytes mislead.
/// An ELF file of another machine or class, one that is no executable, and a file that is
/// neither ELF nor a `#!` script are refused; one aar cannot read is left to exec.
fn runnable(program: &Path) -> Result<(), String> {
    use crate::doctor::elf::{self, NotElf};
    let shown = program.display();
    match elf::read(program) {
        Ok(file) => {
            let here = elf::read(Path::new("/proc/self/exe")).ok();
            match here {
                Some(h) if !h.compatible(&file) => Err(format!(
                    "{shown} is an {}, but this machine runs {}-bit {} programs: build it for this \
                     machine (or run it on a node of its own)",
                    file.describe(),
                    if h.is_64 { 64 } else { 32 },
                    elf::machine_name(h.machine)
                )),
                _ if !file.is_program() => {
                    Err(format!("{shown} is an {}, not a program: give the executable you launch", file.describe()))
                }
                _ => Ok(()),
            }
        }
        Err(NotElf::Script(_) | NotElf::Unreadable(_) | NotElf::NotRegular) => Ok(()),
        Err(why @ (NotElf::OtherFormat(_) | NotElf::UnknownFormat | NotElf::Damaged(_))) => Err(format!(
            "{shown} is {why}, not a program this machine can execute, though its execute bit is set: give \
             the compiled program, or, if it is a script, give it a #! line (e.g. #!/bin/sh)"
        )),
    }
}

/// Exit status for bad arguments (as clap's).
const EXIT_USAGE: i32 = 2;
/// Exit status when a rank cannot be started (as a shell's "command not found").
const EXIT_CANNOT_START: i32 = 127;
/// Exit status of a job ended by PMI_Abort with a code whose low byte is 0 (MPI_Abort(comm, 0)).
const EXIT_ABORT_ZERO: i32 = 1;
/// Exit status when the time limit ran out (as GNU timeout's).
const EXIT_TIMEOUT: i32 = 124;
/// Exit status when the job can never finish (a barrier a rank that ended will never enter, a rank
/// that does not read its PMI answers, one cut off for a line longer than [`MAX_LINE`], one stopped
/// by SIGTTIN or SIGTTOU).
const EXIT_STUCK: i32 = 1;
/// Exit status when a rank that called PMI_Init exits 0, or closes its PMI_FD and runs on, without
/// PMI_Finalize.
const EXIT_NO_FINALIZE: i32 = 1;
/// How long ranks have to end after SIGTERM before they get SIGKILL.
const GRACE: Duration = Duration::from_secs(3);
/// How long a stop of the job waits for its ranks to be stopped before the launcher stops.
const STOP_WAIT: Duration = Duration::from_secs(1);

pub fn run(args: RunArgs) -> i32 {
    let code = run_job(args);
    // What waits for stdout and stderr, the launcher's own lines too (the job folder's removal,
    // say), waiting as any program's writes do.
    output::flush(true);
    code
}

fn run_job(args: RunArgs) -> i32 {
    if let Some(refused) = args.refused.check(args.ranks) {
        say!("aar run: {refused}");
        return EXIT_USAGE;
    }
    let env = std::env::var_os(time::ENV).map(|v| v.to_string_lossy().into_owned());
    let limit = match time::choose(args.time.clone(), env.as_deref()) {
        Ok(l) => l,
        Err(e) => {
            say!("aar run: {e}");
            return EXIT_USAGE;
        }
    };
    let program = match crate::program::find_executable(&args.command[0]) {
        Ok(p) => p,
        Err(e) => {
            say!("aar run: {e}; no job was started. {}", e.fix());
            return EXIT_USAGE;
        }
    };
    if let Err(why) = runnable(&program) {
        say!("aar run: {why}; no job was started.");
        return EXIT_USAGE;
    }
    // Limits first: nothing to undo yet.
    let nofile = match capacity::check_processes(u64::from(args.ranks))
        .and_then(|()| capacity::check_open_files(u64::from(args.ranks)))
    {
        Ok(n) => n,
        Err(e) => {
            say!("aar run: {e}");
            return EXIT_CANNOT_START;
        }
    };
    if let Some(warning) = capacity::check_address_space(u64::from(args.ranks)) {
        say!("aar run: {warning}");
    }
    if let Some(warning) = capacity::check_file_size() {
        say!("aar run: {warning}");
    }
    let signals = match SignalPipe::install() {
        Ok(s) => s,
        Err(e) => {
            say!("aar run: cannot set up signal handling: {e}; no rank was started.");
            return EXIT_CANNOT_START;
        }
    };
    let job = match Job::create(args.ranks as usize, args.ranks_per_node as usize) {
        Ok(j) => j,
        Err(e) => {
            say!("aar run: {e}");
            return EXIT_CANNOT_START;
        }
    };
    // Processes the ranks start and leave behind become this launcher's children, not init's:
    // they are ended with the job, as a job step's are, instead of holding its output open.
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag of this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
    let mut sup = Supervisor::new(&job, signals, limit, nofile, args.label);
    sup.start(&job, &program, &args.command);
    let code = sup.supervise();
    // What the last ranks wrote before they ended; then what the processes they left running
    // wrote before they were ended (which closes the pipes those held open).
    sup.drain_output();
    end_leftovers(code);
    sup.drain_output();
    code
    // `job` drops here: the job folder goes, after the last rank ended.
}

/// The processes the ranks left running (this launcher's children once the ranks ended, as
/// their subreaper): SIGTERM (also to their children, who come here when their parent ends),
/// SIGKILL after [`GRACE`], and reaped; one that a SIGKILL does not
/// end within another [`GRACE`] (stuck in the kernel) is left, said. A request to end the job
/// ([`signals::end_requested`]: a Ctrl-C, `kill`) that comes while they are waited for sends the
/// SIGKILL at once, as to the ranks in the job's end; the job's exit status `code` stays.
fn end_leftovers(code: i32) {
    let left = reap_orphans(&[]);
    if left.is_empty() {
        return;
    }
    say!(
        "aar run: the ranks left {} running (pids {left:?}): SIGTERM, then SIGKILL after {} s, as at the end of a \
         job step.",
        if left.len() == 1 { "1 process".to_string() } else { format!("{} processes", left.len()) },
        GRACE.as_secs()
    );
    let send = |pids: &[libc::pid_t], sig| {
        for &pid in pids {
            // SAFETY: kill only sends a signal; pid is a child of this process not yet reaped.
            unsafe { libc::kill(pid, sig) };
        }
    };
    // SIGCONT after it, as to the ranks (`Supervisor::terminate`).
    send(&left, libc::SIGTERM);
    send(&left, libc::SIGCONT);
    let mut sent_term = left;
    let started = Instant::now();
    let mut kill_at = started + GRACE;
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let left = reap_orphans(&[]);
        if left.is_empty() {
            return;
        }
        // The children of those that ended come to this process (a subreaper): within the grace
        // they get their SIGTERM too, not a SIGKILL with no warning.
        let new: Vec<_> = left.iter().copied().filter(|pid| !sent_term.contains(pid)).collect();
        if !new.is_empty() && Instant::now() < kill_at {
            send(&new, libc::SIGTERM);
            send(&new, libc::SIGCONT);
        }
        sent_term.extend(new);
        if started.elapsed() >= GRACE * 2 {
            // Only a process waiting in the kernel (state D: a hung file system or device) outlives
            // a SIGKILL; it ends when that wait does.
            let states: Vec<String> = processes()
                .into_iter()
                .filter(|p| left.contains(&p.pid))
                .map(|p| format!("{} in state {}", p.pid, p.state))
                .collect();
            say!(
                "aar run: processes {left:?} did not end within {} s of SIGKILL ({}): left running, as a process \
                 waiting in the kernel (state D, a hung file system or device) ends only when that wait does. \
                 `cat /proc/PID/stack` or `ps -o pid,stat,wchan -p PID` shows where it waits; it goes once \
                 that returns, else the machine's administrator can see what hangs.",
                GRACE.as_secs(),
                states.join(", ")
            );
            return;
        }
        if let Some(sig) = signals::end_requested().filter(|_| Instant::now() < kill_at) {
            say!(
                "aar run: got {} while the processes the ranks left running had their grace to end: SIGKILL to \
                 {} at once, without waiting out the {} s grace; the job's exit code stays {code}.",
                signals::name(sig),
                count(left.len() as u64, "process", "processes"),
                GRACE.as_secs()
            );
            kill_at = Instant::now();
        }
        if Instant::now() >= kill_at {
            send(&left, libc::SIGKILL);
        }
    }
}

/// Reap this process's children that ended, but `ranks` (their statuses are the supervisor's);
/// those still running.
fn reap_orphans(ranks: &[libc::pid_t]) -> Vec<libc::pid_t> {
    children()
        .into_iter()
        .filter(|pid| !ranks.contains(pid))
        // SAFETY: waitpid with WNOHANG on one child of this process.
        .filter(|&pid| unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) } == 0)
        .collect()
}

/// This process's children, from /proc.
fn children() -> Vec<libc::pid_t> {
    let me = std::process::id() as libc::pid_t;
    processes().into_iter().filter(|p| p.ppid == me).map(|p| p.pid).collect()
}

/// This process's descendants (the ranks, what they started, and what they left to this launcher
/// as their subreaper), parents before their children, from /proc.
fn descendants() -> Vec<Process> {
    let all = processes();
    let mut found: Vec<Process> = Vec::new();
    let mut parents = vec![std::process::id() as libc::pid_t];
    // Bounded: /proc is read process by process, so a reused pid could make a loop of parents.
    while let Some(parent) = parents.pop().filter(|_| found.len() < all.len()) {
        for p in all.iter().filter(|p| p.ppid == parent) {
            parents.push(p.pid);
            found.push(p.clone());
        }
    }
    found
}

/// A process as /proc/PID/stat shows it.
#[derive(Clone)]
struct Process {
    pid: libc::pid_t,
    ppid: libc::pid_t,
    /// R, S, D, T (stopped), t (traced), Z, X...
    state: char,
    /// Stopped (T): the signal that stopped it, when /proc shows it.
    stopped_by: Option<libc::c_int>,
}

impl Process {
    /// Stopped, or gone: nothing of it runs.
    fn halted(&self) -> bool {
        matches!(self.state, 'T' | 't' | 'Z' | 'X')
    }
}

/// The processes of this machine.
fn processes() -> Vec<Process> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter_map(|pid| {
            // The state and the parent are the 3rd and 4th fields, after the name in parentheses;
            // the 52nd (exit_code, Linux 3.5 on) holds, while a process is stopped, the signal
            // that stopped it, as waitpid would report it to its parent.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let state = rest.first()?.chars().next()?;
            let ppid = rest.get(1)?.parse().ok()?;
            let stopped_by = rest.get(52 - 3).and_then(|f| f.parse().ok()).filter(|_| state == 'T');
            Some(Process { pid, ppid, state, stopped_by })
        })
        .collect()
}

/// SIGSTOP to this launcher's descendants, parents first, again until no new one shows (a process
/// may fork before its stop), then wait until they are stopped, so the job is stopped when its
/// shell says so; bounded by [`STOP_WAIT`], for a process stuck in the kernel (it stops when it
/// leaves it).
fn stop_descendants() {
    let started = Instant::now();
    let mut sent: Vec<libc::pid_t> = Vec::new();
    loop {
        let new: Vec<libc::pid_t> =
            descendants().into_iter().map(|p| p.pid).filter(|pid| !sent.contains(pid)).collect();
        if new.is_empty() || started.elapsed() >= STOP_WAIT {
            break;
        }
        for &pid in &new {
            // SAFETY: kill only sends SIGSTOP to a process of this job (found just now; as with any
            // kill by pid, one that ended since and whose pid was reused would get it instead).
            unsafe { libc::kill(pid, libc::SIGSTOP) };
        }
        sent.extend(new);
    }
    while !descendants().iter().all(Process::halted) && started.elapsed() < STOP_WAIT {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A stop by SIGTTIN or SIGTTOU, which the terminal's job control sends a process outside its
/// foreground group that reads it or sets it: what the process did, and what to do instead.
fn tty_stop(sig: libc::c_int) -> Option<(&'static str, &'static str)> {
    match sig {
        libc::SIGTTIN => Some((
            "it read the terminal itself (opened /dev/tty, say)",
            "have it read its stdin instead (aar run passes what is typed at the terminal to rank 0's stdin), \
             or give it its input in a file",
        )),
        libc::SIGTTOU => Some((
            "it changed the terminal's settings itself (stty, a password prompt's or an editor's tcsetattr \
             on /dev/tty, say) or wrote to the terminal under `stty tostop`",
            "have it write to its stdout or stderr (aar run copies them to its own) and leave the \
             terminal's settings alone",
        )),
        _ => None,
    }
}

/// How often, with a controlling terminal, the loop looks for processes the ranks started that
/// its job control stopped ([`Supervisor::check_tty_stops_below`]): their stops send the launcher
/// no SIGCHLD.
const TTY_CHECK: Duration = Duration::from_secs(1);

/// This launcher's session has a controlling terminal (the 7th field of its /proc stat, tty_nr,
/// is not 0): the ranks' processes, in its session, can be stopped by its job control.
fn has_controlling_terminal() -> bool {
    std::fs::read_to_string("/proc/self/stat").ok().is_some_and(|stat| {
        stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(7 - 3)).is_some_and(|t| t != "0")
    })
}

/// What an exec of `program`, an executable file (checked before the job), that failed with `e`
/// says of the file at fault, which is not the program: its `#!` interpreter, named as a shell
/// names a "bad interpreter", or its loader; the file system for a binary refused execution.
fn exec_hint(program: &Path, e: &std::io::Error) -> String {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let interpreter = head[..n]
        .strip_prefix(b"#!")
        .and_then(|rest| rest.split(|&b| b == b'\n').next())
        .and_then(|line| line.split(|b| b.is_ascii_whitespace()).find(|w| !w.is_empty()))
        .map(String::from_utf8_lossy);
    match (e.kind(), interpreter) {
        (std::io::ErrorKind::NotFound, Some(i)) => {
            format!(" (its #! interpreter {i} does not exist: fix the program's first line, or install it)")
        }
        (std::io::ErrorKind::PermissionDenied, Some(i)) => {
            format!(" (its #! interpreter {i} is no executable file: fix the program's first line)")
        }
        (std::io::ErrorKind::NotFound, None) => {
            " (its loader, the ELF interpreter, does not exist: a program built for another system)".into()
        }
        (std::io::ErrorKind::PermissionDenied, None) => {
            " (its file system may be mounted noexec, which `findmnt -T PROGRAM` shows: put it elsewhere)".into()
        }
        _ => String::new(),
    }
}

/// One started rank: its process, the launcher's end of its PMI socket, and its exit.
struct Rank {
    child: Child,
    /// Its stdout and stderr, on their way to the launcher's.
    out: output::Relay,
    err: output::Relay,
    /// Non-blocking: the loop that serves every rank never waits for one.
    conn: Option<UnixStream>,
    /// When `conn` was closed.
    closed_at: Option<Instant>,
    /// The rank closed it (the launcher read its end, or a write met its close), not the launcher.
    hung_up: bool,
    /// Bytes read past the last full line.
    pending: Vec<u8>,
    /// Answers that wait for room in its PMI socket, written as it takes them without blocking
    /// ([`Supervisor::send`]); more than [`MAX_UNREAD`] bytes end the job.
    replies: Vec<u8>,
    /// Its answers passed [`MAX_UNREAD`] and its connection was closed: the job's end is to say so.
    unread: bool,
    /// The lines it sent that are not PMI: the first [`NOT_PMI_SAID`] are said, the rest counted.
    not_pmi: u64,
    /// It sent `cmd=init` (PMI_Init), and `cmd=finalize` (PMI_Finalize): one that did the first
    /// and exits without the second left the job early ([`Supervisor::collect`]).
    initialized: bool,
    finalized: bool,
    status: Option<ExitStatus>,
}

impl Rank {
    /// What the rank wrote and the launcher has not read yet, as far as that does not wait: before
    /// a line of the launcher's about what the rank did (PMI_Abort, a line that is not PMI, its
    /// end), which the rank wrote out before it (libpmi.so.0's PMI_Abort, MPICH's MPI_Abort say
    /// why first), so that its own words come first. What a full queue leaves in its stderr pipe
    /// holds the launcher's lines back until it is read ([`output::Relay::hold_after`]).
    fn read_output(&mut self) {
        self.out.drain(false);
        self.err.drain(false);
        self.err.hold_after();
    }

    fn close(&mut self) {
        self.conn = None;
        self.replies = Vec::new();
        self.closed_at.get_or_insert_with(Instant::now);
    }

    /// The rank closed its end of its PMI connection.
    fn hung_up(&mut self) {
        self.hung_up = true;
        self.close();
    }

    /// It closed its PMI connection after PMI_Init without PMI_Finalize: it left PMI, and the
    /// others may wait for it for ever ([`Supervisor::check_closed`]).
    fn left_pmi(&self) -> bool {
        self.hung_up && self.initialized && !self.finalized
    }

    /// Write out its answers that wait, as far as its PMI socket takes them without blocking; a
    /// failed write (it closed its end) closes the connection.
    fn flush_replies(&mut self) {
        let Some(conn) = self.conn.as_mut() else { return };
        while !self.replies.is_empty() {
            match conn.write(&self.replies) {
                Ok(n) if n > 0 => drop(self.replies.drain(..n)),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                _ => return self.hung_up(),
            }
        }
    }

    /// Its PMI connection was closed at least [`CLOSED_GRACE`] ago while it runs on. (A rank that
    /// is exiting closes it before the launcher can reap it: its exit status says more.)
    fn closed_for_good(&self, now: Instant) -> bool {
        self.status.is_none() && self.closed_at.is_some_and(|t| now >= t + CLOSED_GRACE)
    }
}

/// How long a rank that closed its PMI connection may take to show that it exited.
const CLOSED_GRACE: Duration = Duration::from_secs(1);

/// The bytes of answers a rank may leave unread in the launcher ([`Rank::replies`]; its socket
/// holds some more) before the job ends. A PMI client reads each answer before it asks again, so
/// a rank's answers wait only while it is busy or stopped, a few hundred bytes; a rank past this
/// sends requests (or lines that are not PMI) and never reads: out of step with PMI for good
/// (the answers it would read next are stale), it can take part in no barrier or KVS get again.
/// Ending the job then, with a line that names the rank, is what srun (`--kill-on-bad-exit`,
/// as aar run always is) and mpiexec do with a rank that failed; to stop answering it instead
/// would only move the hang to the others' next barrier, or leave it running outside the job.
const MAX_UNREAD: usize = 1 << 20;

/// The lines that are not PMI said for one rank; further ones are counted, and the count is said
/// at the end of the job, so a rank that floods its PMI_FD cannot fill the launcher's stderr.
const NOT_PMI_SAID: u64 = 10;

struct Supervisor {
    ranks: Vec<Rank>,
    size: usize,
    server: Server,
    signals: SignalPipe,
    /// The job's exit status once something ended it.
    ending: Option<i32>,
    /// A rank's failure ended the job: the exit status is then the highest of the ranks that
    /// failed on their own (had ended when the job's end began), as srun's is.
    by_rank: bool,
    /// A signal to the launcher ended the job: the first such.
    by_signal: Option<libc::c_int>,
    /// When the ranks still running get SIGKILL, and the signal they got before.
    kill_at: Option<Instant>,
    sent: libc::c_int,
    killed: bool,
    /// The job's time limit, and when it runs out (from the start of the first rank).
    limit: Option<time::TimeLimit>,
    deadline: Option<Instant>,
    /// The open-file limit the ranks get back at exec, if this launcher raised its own.
    nofile: Option<libc::rlimit>,
    /// When SIGTSTP stopped the job, until the SIGCONT that resumed it.
    stopped_at: Option<Instant>,
    /// Each line of the ranks' output starts with its rank (`--label`).
    label: bool,
    /// The descriptor each rank gets its PMI socket at ([`rank_pmi_fd`]).
    pmi_fd: RawFd,
    /// What is typed at the terminal, on its way to rank 0 ([`input`]), when the launcher's stdin
    /// is its controlling terminal.
    stdin: Option<input::Relay>,
    /// When to look next for processes the ranks started that the terminal stopped
    /// ([`Self::check_tty_stops_below`]); `None` without a controlling terminal, whose job
    /// control alone stops them so.
    tty_check_at: Option<Instant>,
}

/// The descriptor every rank gets its end of its PMI socket at: the first after stdio at which this
/// launcher passes on no descriptor of its own (one it was given open and not close-on-exec, as
/// `aar run ... 3<file` gives, which the ranks inherit), so 3 but in such a case. Small and the same
/// for every rank, not whatever number the launcher's socket has (10 and more from the third rank
/// on): dash, Debian's /bin/sh, refuses `>&$PMI_FD` of a descriptor above 9.
fn rank_pmi_fd() -> RawFd {
    let mut fd = 3;
    loop {
        // SAFETY: fcntl(F_GETFD) only queries the descriptor table; any fd value is allowed.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if flags < 0 || flags & libc::FD_CLOEXEC != 0 {
            return fd;
        }
        fd += 1;
    }
}

impl Supervisor {
    fn new(
        job: &Job,
        signals: SignalPipe,
        limit: Option<time::TimeLimit>,
        nofile: Option<libc::rlimit>,
        label: bool,
    ) -> Self {
        Supervisor {
            ranks: Vec::new(),
            size: job.size,
            server: Server::new(job.size, job.kvsname(), &job.mapping),
            signals,
            ending: None,
            by_rank: false,
            by_signal: None,
            kill_at: None,
            sent: libc::SIGTERM,
            killed: false,
            limit,
            deadline: None,
            nofile,
            stopped_at: None,
            label,
            pmi_fd: rank_pmi_fd(),
            stdin: None,
            tty_check_at: has_controlling_terminal().then(Instant::now),
        }
    }

    /// Start every rank; a rank that cannot start ends the job.
    fn start(&mut self, job: &Job, program: &Path, command: &[OsString]) {
        let nodes = job.mapping.nodes(job.size);
        // A limit past what a clock can hold (`--time 200000000000000000`) never runs out: none.
        self.deadline = self.limit.as_ref().and_then(|l| Instant::now().checked_add(l.limit));
        for (rank, &node) in nodes.iter().enumerate() {
            if let Err(e) = self.spawn(job, rank, node, program, command) {
                let shown = command[0].to_string_lossy();
                let hint = exec_hint(program, &e);
                self.end(EXIT_CANNOT_START, None, format!("cannot start rank {rank} ({shown}): {e}{hint}"));
                return;
            }
        }
    }

    fn spawn(
        &mut self,
        job: &Job,
        rank: usize,
        node: usize,
        program: &Path,
        command: &[OsString],
    ) -> std::io::Result<()> {
        let (ours, theirs) = UnixStream::pair()?;
        // Ours only: the rank's end, another open file, stays blocking, as libpmi.so.0 expects.
        ours.set_nonblocking(true)?;
        let (fd, pmi_fd) = (theirs.as_raw_fd(), self.pmi_fd);
        let mut cmd = Command::new(program);
        // An outer launcher's wiring (`aar run` inside an srun or mpirun step, or under another
        // MPI's launcher) is not this job's: a PMI_SPAWNED would make MPICH take itself for
        // spawned, and PMIx or Open MPI variables would send a rank to the outer job's server.
        for (name, _) in std::env::vars_os() {
            let name_bytes = name.as_encoded_bytes();
            if [&b"PMI_"[..], b"PMIX_", b"OMPI_"].iter().any(|p| name_bytes.starts_with(p)) {
                cmd.env_remove(&name);
            }
        }
        cmd.arg0(&command[0]).args(&command[1..]).envs(job.env(rank, node)).env("PMI_FD", pmi_fd.to_string());
        if rank != 0 {
            cmd.stdin(Stdio::null());
        } else if let Some((relay, read_end)) = input::Relay::for_terminal() {
            cmd.stdin(Stdio::from(read_end));
            self.stdin = Some(relay);
        }
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        // A process group of its own: a signal to the launcher's group (a key's at the terminal,
        // `kill -- -PGID`) reaches the launcher alone, which forwards it to each rank once.
        cmd.process_group(0);
        let nofile = self.nofile;
        // SAFETY: getpid takes no argument and cannot fail.
        let launcher = unsafe { libc::getpid() };
        // SAFETY: between fork and exec (after the stdio is set up) the closure calls only dup2,
        // fcntl, setrlimit, prctl, getppid and _exit (async-signal-safe, no allocation), to put the
        // rank's end of its PMI socket at `pmi_fd` and let it survive exec (`fd` and the launcher's
        // other descriptors stay close-on-exec), to give the rank the open-file limit aar run was
        // started with, and to end the rank with the launcher.
        unsafe {
            cmd.pre_exec(move || {
                // dup2 clears close-on-exec on the copy, but onto itself (`fd` is `pmi_fd`) it
                // changes nothing: fcntl clears it either way.
                if libc::dup2(fd, pmi_fd) < 0 || libc::fcntl(pmi_fd, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(lim) = nofile {
                    libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                }
                // A launcher killed by SIGKILL (no handler runs) takes its ranks with it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // A launcher that died between the fork and the prctl sent nothing: the rank
                // would run on alone, its PMI peer gone. It ends as if the signal had come.
                if libc::getppid() != launcher {
                    libc::_exit(128 + libc::SIGKILL);
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn()?;
        drop(theirs);
        let label = self.label.then(|| output::label(rank, job.size));
        self.ranks.push(Rank {
            out: output::Relay::new(child.stdout.take().map(output::Pipe::Out), output::Sink::Stdout, label.clone()),
            err: output::Relay::new(child.stderr.take().map(output::Pipe::Err), output::Sink::Stderr, label),
            child,
            conn: Some(ours),
            closed_at: None,
            hung_up: false,
            pending: Vec::new(),
            replies: Vec::new(),
            unread: false,
            not_pmi: 0,
            initialized: false,
            finalized: false,
            status: None,
        });
        Ok(())
    }

    fn running(&self) -> Vec<usize> {
        (0..self.ranks.len()).filter(|&r| self.ranks[r].status.is_none()).collect()
    }

    fn signal_running(&self, sig: libc::c_int) {
        self.signal(&self.running(), sig);
    }

    /// `sig`, which ends a process, then SIGCONT: a rank stopped from outside (`kill -STOP`, a
    /// debugger that let it go stopped) acts on it now, not at the SIGKILL after the grace, as
    /// `kill %1` and scancel do.
    fn terminate(&self, ranks: &[usize], sig: libc::c_int) {
        self.signal(ranks, sig);
        self.signal(ranks, libc::SIGCONT);
    }

    fn signal(&self, ranks: &[usize], sig: libc::c_int) {
        for &r in ranks {
            let pid = self.ranks[r].child.id() as libc::pid_t;
            // SAFETY: kill only sends a signal; pid is a child not yet reaped, so it is still ours.
            unsafe { libc::kill(pid, sig) };
        }
    }

    /// The first call ends the job with `code`: `why` on stderr, SIGTERM to every rank still
    /// running, SIGKILL to those left after the grace period. `by`, the rank that ended the job,
    /// gets it too when it still runs: one that called PMI_Abort and waits in it (MPICH's waits for
    /// an answer on its PMI_FD, which hydra never sends: it kills the ranks; its connection stays
    /// open, as on an answer or at its close MPICH 4's MPI_Abort returns to the program) ends
    /// with the job, as srun ends all of a step's tasks. The ranks that already ended are collected
    /// first: when a rank's failure ends the job, one of them that failed with a higher code raises
    /// the job's, in a line that says so. Later calls change nothing.
    fn end(&mut self, code: i32, by: Option<usize>, why: String) {
        if self.ending.is_some() {
            return;
        }
        // First, so that a PMI_Abort read below from a rank that already ended ends nothing more.
        self.ending = Some(code);
        self.by_rank = by.is_some();
        // The ranks that already ended when the job's end begins, before any SIGTERM is sent:
        // they ended on their own, so only their failures can raise the job's exit code
        // ([`Self::reap`] says why later ones cannot). Collected now, not at the next look, and
        // no more named among the ranks still running.
        let early: Vec<(usize, i32, String)> =
            (0..self.ranks.len()).filter_map(|r| self.collect(r).map(|(code, what, _)| (r, code, what))).collect();
        let running = self.running();
        let n = running.len();
        let to = match by.filter(|r| running.contains(r)) {
            Some(r) if n == 1 => format!("SIGTERM to rank {r}, the only rank still running"),
            Some(r) => format!("SIGTERM to the {n} ranks still running, rank {r} too"),
            None if by.is_some() => {
                format!("SIGTERM to the {} still running", count(n as u64, "other rank", "other ranks"))
            }
            None => format!("SIGTERM to the {} still running", count(n as u64, "rank", "ranks")),
        };
        match n {
            0 => say!("aar run: {why}; the job ends with exit code {code}."),
            _ => say!("aar run: {why}; ending the job with exit code {code}: {to}."),
        }
        self.terminate(&running, libc::SIGTERM);
        self.kill_at = Some(Instant::now() + GRACE);
        for (r, failed, what) in early {
            match self.ending {
                Some(current) if self.by_rank && failed > current => {
                    let pid = self.ranks[r].child.id();
                    say!(
                        "aar run: rank {r} (pid {pid}) {what} too, before the job's end began: the job's exit code is \
                         now {failed}, the highest of the ranks that failed on their own (as srun's)."
                    );
                    self.ending = Some(failed);
                }
                _ => {}
            }
        }
    }

    /// Serve PMI and watch the ranks until the last ended; the job's exit status.
    fn supervise(&mut self) -> i32 {
        while !self.running().is_empty() {
            self.wait_for_events();
            let arrived = self.signals.drain();
            for &sig in &arrived {
                if signals::ENDING.contains(&sig) || signals::FATAL.contains(&sig) {
                    self.on_launcher_signal(sig);
                } else if signals::FORWARDED.contains(&sig) {
                    self.forward(sig);
                } else if sig == libc::SIGTSTP {
                    self.stop();
                } else if sig == libc::SIGCONT {
                    self.resume();
                } else if sig == signals::RESIZE {
                    self.forward_resize();
                }
            }
            if arrived.contains(&libc::SIGCHLD) {
                // Processes the ranks left behind that ended: no zombies for the job's length.
                let ranks: Vec<libc::pid_t> = self.ranks.iter().map(|r| r.child.id() as libc::pid_t).collect();
                reap_orphans(&ranks);
                self.check_tty_stops();
            }
            if let Some(stdin) = self.stdin.as_mut() {
                stdin.pump();
            }
            for r in 0..self.ranks.len() {
                self.ranks[r].flush_replies();
                self.serve(r);
                self.ranks[r].out.pump();
                self.ranks[r].err.pump();
            }
            self.reap();
            self.check_closed();
            self.check_barrier();
            self.check_time();
            if self.tty_check_at.is_some_and(|t| Instant::now() >= t) {
                self.tty_check_at = Some(Instant::now() + TTY_CHECK);
                self.check_tty_stops_below();
            }
            if self.kill_at.is_some_and(|t| Instant::now() >= t) && !self.killed {
                let late = self.running();
                if !late.is_empty() {
                    say!(
                        "aar run: ranks {late:?} did not end within {} s of {}: SIGKILL.",
                        GRACE.as_secs(),
                        signals::name(self.sent)
                    );
                    self.signal_running(libc::SIGKILL);
                }
                self.killed = true;
            }
        }
        if let Some(stdin) = self.stdin.as_mut() {
            stdin.drop_unread("the job ended before rank 0 read");
        }
        self.say_not_pmi_counts();
        self.ending.unwrap_or(0)
    }

    /// What the ranks (and what they started) wrote and the launcher has not yet copied out,
    /// waiting for the launcher's stdout and stderr to take it.
    fn drain_output(&mut self) {
        for rank in &mut self.ranks {
            rank.out.drain(true);
            rank.err.drain(true);
        }
    }

    /// Block until a rank writes, its PMI socket takes answers that wait, a signal arrives, the
    /// launcher's stdout or stderr takes the lines that wait for it, or the SIGKILL time comes.
    fn wait_for_events(&mut self) {
        let mut fds = vec![libc::pollfd { fd: self.signals.fd(), events: libc::POLLIN, revents: 0 }];
        // A rank's socket, and room in it when answers wait for it.
        fds.extend(self.ranks.iter().filter_map(|r| Some((r.conn.as_ref()?, r.replies.is_empty()))).map(
            |(c, sent)| libc::pollfd {
                fd: c.as_raw_fd(),
                events: if sent { libc::POLLIN } else { libc::POLLIN | libc::POLLOUT },
                revents: 0,
            },
        ));
        fds.extend(self.ranks.iter().flat_map(|r| [r.out.fd(), r.err.fd()]).flatten().map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }));
        fds.extend(self.stdin.as_ref().and_then(input::Relay::poll_fd));
        // The launcher's stdout or stderr, when lines wait for room in it.
        fds.extend(output::waiting_sinks().into_iter().map(|fd| libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        }));
        let kill_at = self.kill_at.filter(|_| !self.killed);
        let deadline = self.deadline.filter(|_| self.ending.is_none());
        // When a rank that closed its PMI connection is known to run on: one that left PMI
        // without PMI_Finalize, or any while a barrier waits.
        let waiting = self.server.waiting();
        let closed = self
            .ranks
            .iter()
            .enumerate()
            .filter(|(r, rank)| {
                self.ending.is_none()
                    && rank.status.is_none()
                    && (rank.left_pmi() || (!waiting.is_empty() && !waiting.contains(r)))
            })
            .filter_map(|(_, rank)| rank.closed_at.map(|t| t + CLOSED_GRACE))
            .min();
        let recheck = self.stdin.as_ref().and_then(input::Relay::recheck_at);
        let tty_check = self.tty_check_at.filter(|_| self.ending.is_none());
        let timeout = match kill_at.into_iter().chain(deadline).chain(closed).chain(recheck).chain(tty_check).min() {
            // Rounded up: a wake-up just before the time would only poll again.
            Some(t) => {
                t.saturating_duration_since(Instant::now()).as_micros().div_ceil(1000).min(60_000) as libc::c_int
            }
            None => -1,
        };
        // SAFETY: fds is a live array of fds.len() pollfd entries; a failure (EINTR) only means
        // the loop looks again.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
    }

    /// A signal that ends the job ([`signals::ENDING`], [`signals::FATAL`]), to each rank once: the
    /// ranks, in process groups of their own, get no signal sent to the launcher's group (a key's
    /// at the terminal, `kill -- -PGID`) but this one (a rank whose second Ctrl-C means "quit now,
    /// without cleaning up", as many programs' does, would take one press for two).
    fn on_launcher_signal(&mut self, sig: libc::c_int) {
        let name = signals::name(sig);
        if let Some(code) = self.ending {
            // A request to end a job already ending: no more grace. Said as it is: the end began
            // with this signal, another, or no signal of the launcher's at all (a rank's failure,
            // the time limit).
            let got = match self.by_signal {
                Some(first) if first == sig => format!("got {name} again"),
                Some(first) => format!("got {name} after {}", signals::name(first)),
                None => format!("got {name} while the job was ending (its ranks got SIGTERM)"),
            };
            let n = self.running().len();
            say!(
                "aar run: {got}: SIGKILL to the {} still running, without waiting out the {} s grace; the job's \
                 exit code stays {code}.",
                count(n as u64, "rank", "ranks"),
                GRACE.as_secs()
            );
            self.signal_running(libc::SIGKILL);
            self.killed = true;
            return;
        }
        // First, so that a PMI_Abort read below from a rank that already ended ends nothing more.
        self.ending = Some(128 + sig);
        self.by_signal = Some(sig);
        // The ranks that ended before the signal is passed on (in the same look as the signal: a
        // failure and a Ctrl-C at once) are collected first: not counted as still running, and a
        // failure of theirs is named, though the signal, which asked for the end, gives the job's
        // exit status.
        let early: Vec<(usize, String)> =
            (0..self.ranks.len()).filter_map(|r| self.collect(r).map(|(_, what, _)| (r, what))).collect();
        let running = self.running();
        let n = running.len();
        // A request to end the job goes to the ranks as it came; another fatal signal (a timer's,
        // the CPU time limit's) was the launcher's, and the ranks get SIGTERM.
        let (to_ranks, how) =
            if signals::FATAL.contains(&sig) { (libc::SIGTERM, "SIGTERM to") } else { (sig, "forwarded to") };
        say!(
            "aar run: got {name}: {how} the {} still running; the job ends with exit code {}.",
            count(n as u64, "rank", "ranks"),
            128 + sig
        );
        self.terminate(&running, to_ranks);
        self.sent = to_ranks;
        self.kill_at = Some(Instant::now() + GRACE);
        for (r, what) in early {
            let pid = self.ranks[r].child.id();
            say!(
                "aar run: rank {r} (pid {pid}) {what}, before the job's end began; the job's exit code stays {}, of \
                 {name}.",
                128 + sig
            );
        }
    }

    /// SIGUSR1 or SIGUSR2 to the launcher: to the ranks still running, and nothing else (a rank
    /// that dies of it ends the job, as any rank killed by a signal).
    fn forward(&mut self, sig: libc::c_int) {
        let n = self.running().len();
        say!(
            "aar run: got {}: forwarded to the {} still running.",
            signals::name(sig),
            count(n as u64, "rank", "ranks")
        );
        self.signal_running(sig);
    }

    /// SIGWINCH to the launcher (the terminal was resized while the launcher's process group is
    /// its foreground one): to each running rank's process group, as the terminal would send it to
    /// a job of its own, so that a rank (or what it started) that asks the terminal for its size
    /// (on /dev/tty: its stdout is a pipe) draws for the new one. Silent: a resize is no event of
    /// the job's, and a dragged window sends dozens. The default action of SIGWINCH is to ignore
    /// it, so a rank that does not care is not disturbed.
    fn forward_resize(&self) {
        for r in self.running() {
            let pid = self.ranks[r].child.id() as libc::pid_t;
            // SAFETY: kill only sends SIGWINCH, to the process group the rank leads (it was
            // started in one of its own) or, when it left that group, to the rank alone.
            unsafe {
                if libc::kill(-pid, libc::SIGWINCH) != 0 {
                    libc::kill(pid, libc::SIGWINCH);
                }
            }
        }
    }

    /// Ranks stopped by SIGTTIN or SIGTTOU: a rank that reads the terminal itself (opens
    /// /dev/tty), changes its settings, or writes to it under `stty tostop`, is stopped by the
    /// kernel, as a background job's process is, since it runs in a process group of its own,
    /// outside the terminal's foreground group; nothing would resume it (a SIGCONT only makes it
    /// try again and stop again), and the job would hang without a word. It ends the job, named in
    /// one line with why and what to do instead. (Looked at when a SIGCHLD came: a child's stop
    /// sends one. A process a rank started is not the launcher's child, and its stop not seen.)
    fn check_tty_stops(&mut self) {
        for r in 0..self.ranks.len() {
            if self.ranks[r].status.is_some() {
                continue;
            }
            let pid = self.ranks[r].child.id() as libc::pid_t;
            // SAFETY: waitid fills a zeroed (valid) siginfo_t; with WSTOPPED alone (no WEXITED) it
            // reports and takes only a stop of this child, never its exit, which stays for
            // `Child::try_wait`; WNOHANG leaves si_pid 0 when the child has no stop to report.
            let sig = unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                let rc = libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WSTOPPED | libc::WNOHANG);
                if rc != 0 || info.si_pid() != pid {
                    continue;
                }
                info.si_status()
            };
            let Some((did, instead)) = tty_stop(sig) else { continue };
            self.ranks[r].read_output();
            let why = format!(
                "rank {r} (pid {pid}) was stopped by {}: {did}, which no rank can: each rank runs in a process \
                 group of its own, outside the terminal's foreground group, and it would wait stopped for ever; {instead}",
                signals::name(sig)
            );
            match self.ending {
                None => self.end(EXIT_STUCK, Some(r), why),
                // It gets SIGKILL with the others still running after the grace.
                Some(code) => say!("aar run: {why} (the job was already ending; its exit code stays {code})."),
            }
        }
    }

    /// Processes the ranks started (not the ranks: [`Self::check_tty_stops`]) stopped by SIGTTIN
    /// or SIGTTOU, as a rank is when it reads or sets the terminal itself: a rank that does not
    /// stop with them (a shell that traps SIGTTIN, a wrapper such as `timeout` that ignores it,
    /// one whose child runs in a process group of its own) waits for them for ever, and the job
    /// with it, without a word. Their stops send the launcher no SIGCHLD: looked for every
    /// [`TTY_CHECK`], in /proc, while the launcher has a controlling terminal. The first found
    /// ends the job, named with its rank, why and what to do instead.
    fn check_tty_stops_below(&mut self) {
        // A rank stopped with it (its process group got the signal) is named as itself.
        self.check_tty_stops();
        if self.ending.is_some() {
            return;
        }
        let all = descendants();
        let rank_of =
            |pid: libc::pid_t| self.ranks.iter().position(|r| r.status.is_none() && r.child.id() as libc::pid_t == pid);
        for p in all.iter().filter(|p| rank_of(p.pid).is_none()) {
            let Some((sig, (did, instead))) = p.stopped_by.and_then(|sig| Some((sig, tty_stop(sig)?))) else {
                continue;
            };
            // Its rank: up its parents (bounded, as /proc is read process by process).
            let mut up = p.ppid;
            let mut r = None;
            for _ in 0..all.len() {
                r = rank_of(up);
                match all.iter().find(|q| q.pid == up) {
                    Some(q) if r.is_none() => up = q.ppid,
                    _ => break,
                }
            }
            // One the ranks left running (this launcher's child now) holds up no rank.
            let Some(r) = r else { continue };
            self.ranks[r].read_output();
            let pid = self.ranks[r].child.id();
            let why = format!(
                "rank {r} (pid {pid}): process {} it started was stopped by {}: {did}, which no process of a rank \
                 can: each rank runs in a process group of its own, outside the terminal's foreground group, and \
                 it would wait stopped for ever, and rank {r} for it; {instead}",
                p.pid,
                signals::name(sig)
            );
            self.end(EXIT_STUCK, Some(r), why);
            return;
        }
    }

    /// SIGTSTP to the launcher (Ctrl-Z): SIGSTOP to the ranks still running and to the processes
    /// they started (as srun stops a step's tasks: none can catch or ignore SIGSTOP, so nothing of
    /// the job runs on alone), then the launcher stops; it returns once resumed. The time limit
    /// and the grace before SIGKILL do not count the time stopped ([`Self::resume`]).
    fn stop(&mut self) {
        if signals::continued_since_stop_request() {
            // `kill -TSTP` then `kill -CONT` before this loop looked: the stop is already over.
            return;
        }
        let n = self.running().len();
        let limit = match (&self.limit, self.deadline.filter(|_| self.ending.is_none())) {
            (Some(l), Some(t)) => format!(
                "; the time limit of {} ({}) does not count the time stopped ({} left)",
                time::show(l.limit),
                l.from,
                time::show(t.saturating_duration_since(Instant::now()))
            ),
            _ => String::new(),
        };
        say!(
            "aar run: got SIGTSTP: SIGSTOP to the {} still running and the processes they started, then aar run \
             stops; SIGCONT (fg or bg in its shell, kill -CONT {}) resumes the job{limit}.",
            count(n as u64, "rank", "ranks"),
            std::process::id()
        );
        stop_descendants();
        self.stopped_at.get_or_insert_with(Instant::now);
        signals::stop_self();
        // Resumed: at once, before the time limit is looked at (the SIGCONT that resumed this
        // process comes through the pipe too, and only resumes again what is still stopped).
        self.resume();
    }

    /// SIGCONT to the launcher: to the ranks and the processes they started (stopped or not: a
    /// continue is harmless to a running process); after a stop of the job, its time limit and the
    /// grace before SIGKILL are moved by the time it was stopped.
    fn resume(&mut self) {
        for p in descendants() {
            // SAFETY: kill only sends SIGCONT to a process of this job.
            unsafe { libc::kill(p.pid, libc::SIGCONT) };
        }
        let Some(at) = self.stopped_at.take() else { return };
        let stopped = at.elapsed();
        self.deadline = self.deadline.and_then(|t| t.checked_add(stopped));
        self.kill_at = self.kill_at.map(|t| t + stopped);
        let n = self.running().len();
        let limit = match (&self.limit, self.deadline.filter(|_| self.ending.is_none())) {
            (Some(_), Some(t)) => {
                format!("; the time limit has {} left", time::show(t.saturating_duration_since(Instant::now())))
            }
            _ => String::new(),
        };
        say!(
            "aar run: got SIGCONT after {} stopped: the {} still running go on{limit}.",
            time::show(stopped),
            count(n as u64, "rank", "ranks")
        );
    }

    /// Read what rank `r` sent and answer its complete messages (a rank that waits for an
    /// answer sends nothing more, so one read per wake-up keeps up). Whether anything was read.
    fn serve(&mut self, r: usize) -> bool {
        let Some(conn) = self.ranks[r].conn.as_mut() else { return false };
        let mut buf = [0u8; 4096];
        // SAFETY: a zero-timeout poll of one live pollfd, to read only when it would not block.
        let ready = unsafe {
            let mut p = libc::pollfd { fd: conn.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            libc::poll(&mut p, 1, 0) > 0
        };
        if !ready {
            return false;
        }
        match conn.read(&mut buf) {
            Err(e) if matches!(e.kind(), std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock) => {
                return false;
            }
            Ok(0) | Err(_) => {
                self.ranks[r].hung_up();
                return false;
            }
            Ok(n) => self.ranks[r].pending.extend_from_slice(&buf[..n]),
        }
        while let Some(end) = self.ranks[r].pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.ranks[r].pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            match line.parse::<Message>() {
                Ok(msg) => self.answer(r, &msg),
                Err(e) => {
                    let rank = &mut self.ranks[r];
                    rank.not_pmi += 1;
                    if rank.not_pmi <= NOT_PMI_SAID {
                        rank.read_output();
                        let more = if rank.not_pmi == NOT_PMI_SAID {
                            format!(
                                " Further ones from rank {r} are answered the same way and counted, not said: the \
                                 count is said at the end of the job."
                            )
                        } else {
                            String::new()
                        };
                        say!(
                            "aar run: rank {r} sent a line that is not PMI ({e}); it was answered with an error.{more}"
                        );
                    }
                    self.send(r, &Message::new("error").with("rc", -1).with("msg", "not_a_PMI_message"));
                }
            }
        }
        self.end_unread();
        if self.ranks[r].pending.len() > MAX_LINE {
            self.ranks[r].close();
            self.end_cut_off(r);
        }
        true
    }

    /// Rank `r` sent more than [`MAX_LINE`] bytes without a newline and its connection was
    /// closed: out of PMI for good, as a rank that closed its PMI_FD ([`Self::check_closed`]), it
    /// ends the job at once, named in one line; when the job is already ending, its exit code
    /// stays. (Not left for a barrier to show: the others may wait for it outside PMI.)
    fn end_cut_off(&mut self, r: usize) {
        self.ranks[r].read_output();
        let pid = self.ranks[r].child.id();
        let why = format!(
            "rank {r} (pid {pid}) sent more than {MAX_LINE} bytes on its PMI_FD without a newline: not PMI (a PMI \
             line is shorter); its PMI connection is closed, and it can take part in no PMI call again"
        );
        match self.ending {
            None => self.end(EXIT_STUCK, Some(r), format!("{why}, so the job can never complete")),
            Some(code) => say!("aar run: {why} (the job was already ending; its exit code stays {code})."),
        }
    }

    fn answer(&mut self, r: usize, msg: &Message) {
        let outcome = self.server.handle(r, msg);
        match msg.cmd.as_str() {
            // Only an init the launcher took (rc=0): a refused one (another PMI version) left the
            // rank outside PMI, and its exit without PMI_Finalize is no early leave.
            "init" => {
                let took = |(to, m): &(usize, Message)| *to == r && m.get_int("rc") == Some(0);
                if matches!(&outcome, Outcome::Replies(replies) if replies.iter().any(took)) {
                    self.ranks[r].initialized = true;
                }
            }
            "finalize" => self.ranks[r].finalized = true,
            _ => {}
        }
        match outcome {
            Outcome::Replies(replies) => {
                for (to, m) in replies {
                    self.send(to, &m);
                }
            }
            Outcome::Refused { reply, say } => {
                if let Some(line) = say {
                    // After what the rank wrote before: it waits for this answer.
                    self.ranks[r].read_output();
                    say!("aar run: {line}");
                }
                self.send(r, &reply);
            }
            Outcome::Abort(code) => {
                let pid = self.ranks[r].child.id();
                // As exit() would give it: the code's low byte; but an abort is never a success,
                // though MPI_Abort(comm, 0) is common (hydra's mpiexec exits 0 then, Slurm's srun
                // does not: it kills the step).
                let (status, shown) = match code & 0xff {
                    0 => (EXIT_ABORT_ZERO, format!(" (exit status {EXIT_ABORT_ZERO}: an abort is no success)")),
                    s if s == code => (s, String::new()),
                    s => (s, format!(" (exit status {s})")),
                };
                // Its own line about the abort (with the cause) before the launcher's.
                self.ranks[r].read_output();
                self.end(
                    status,
                    Some(r),
                    format!("rank {r} (pid {pid}) called PMI_Abort with exit code {code}{shown}"),
                );
            }
        }
    }

    /// Queue answer `m` for rank `r` and write out what its socket takes without blocking: a
    /// rank that does not read its answers must not stop the loop that serves every other rank.
    /// One whose unread answers pass [`MAX_UNREAD`] has its connection closed, and ends the job
    /// ([`Self::end_unread`]).
    fn send(&mut self, r: usize, m: &Message) {
        let Some(rank) = self.ranks.get_mut(r).filter(|rank| rank.conn.is_some()) else { return };
        rank.replies.extend_from_slice(m.to_line().as_bytes());
        rank.flush_replies();
        if rank.replies.len() > MAX_UNREAD {
            rank.close();
            rank.unread = true;
        }
    }

    /// Each rank whose unread answers passed [`MAX_UNREAD`] ([`Self::send`]) is named, once (its
    /// connection is closed, so it cannot pass it again), and ends the job; when the job is
    /// already ending, its exit code stays.
    fn end_unread(&mut self) {
        while let Some(r) = self.ranks.iter().position(|rank| rank.unread) {
            self.ranks[r].unread = false;
            self.ranks[r].read_output();
            let pid = self.ranks[r].child.id();
            let why = format!(
                "rank {r} (pid {pid}) does not read the answers to what it sends on its PMI_FD: more than {} MiB of \
                 them waited for it (a PMI client reads each answer before it asks again); its PMI connection is \
                 closed",
                MAX_UNREAD >> 20
            );
            match self.ending {
                None => self.end(EXIT_STUCK, Some(r), format!("{why}, and the job can never complete")),
                Some(code) => say!("aar run: {why} (the job was already ending; its exit code stays {code})."),
            }
        }
    }

    /// The lines that are not PMI, for each rank that sent more than were said.
    fn say_not_pmi_counts(&self) {
        for (r, rank) in self.ranks.iter().enumerate().filter(|(_, rank)| rank.not_pmi > NOT_PMI_SAID) {
            say!(
                "aar run: rank {r} sent {} lines that are not PMI in all ({} after the {NOT_PMI_SAID} said), each \
                 answered with an error.",
                rank.not_pmi,
                rank.not_pmi - NOT_PMI_SAID
            );
        }
    }

    /// Collect the ranks that ended; the first that failed ends the job.
    fn reap(&mut self) {
        for r in 0..self.ranks.len() {
            // (A PMI_Abort it sent before it ended, read now, may end the job: then by this rank.)
            let before = self.ending;
            let Some((code, what, status)) = self.collect(r) else { continue };
            let pid = self.ranks[r].child.id();
            match before {
                None => self.end(code, Some(r), format!("rank {r} (pid {pid}) {what}")),
                // A rank that ends after the job's end began (its SIGTERM sent) never counts as
                // failing on its own, whatever its status: a wait status cannot tell whether the
                // rank ended before that SIGTERM reached it or because of it, and most such ends
                // are its doing: killed by SIGPIPE writing to a peer the SIGTERM already killed
                // (SIGPIPE, 13, is delivered before a pending SIGTERM, 15), a SIGTERM handler's
                // exit code, an MPI library's exit at a connection the end closed. Counting them
                // made the job's exit code a race between ranks (141 instead of an MPI_Abort's
                // code). A rank that had ended on its own before is counted at the end's start
                // ([`Self::end`]); one that ends on its own in the instant between that look and
                // the SIGTERM is not, and the job keeps the code of the failure seen first. (srun
                // counts a task's exit code whenever it comes, but a signal only when no task gave
                // a code, and reports a cancelled step's signals as no error.)
                Some(current) if self.by_rank && code > current && !self.ended_by_launcher(status) => say!(
                    "aar run: rank {r} (pid {pid}) {what} after the job's end began: an end of the job, not a failure \
                     of its own; the job's exit code stays {current}."
                ),
                Some(_) => {}
            }
        }
    }

    /// Rank `r`'s exit, if it ended and was not collected before: what it sent and wrote last
    /// is read, and, when it failed, its code as the job's exit status would give it, what
    /// happened in words, and its status.
    fn collect(&mut self, r: usize) -> Option<(i32, String, ExitStatus)> {
        if self.ranks[r].status.is_some() {
            return None;
        }
        let status = self.ranks[r].child.try_wait().ok()??;
        // Ended before what it sent last is read: the end that brings is not sent to it.
        self.ranks[r].status = Some(status);
        // What the rank sent just before it ended (PMI_Abort, then exit) says more than its
        // exit status; bounded, in case a child it left behind keeps the socket open.
        for _ in 0..16 {
            if !self.serve(r) {
                break;
            }
        }
        // Its last lines before the line that says it ended.
        self.ranks[r].read_output();
        let rank = &self.ranks[r];
        if let Some(sig) = status.signal() {
            Some((128 + sig, format!("was killed by {} (signal {sig})", signals::name(sig)), status))
        } else if status.code() == Some(0) && rank.initialized && !rank.finalized {
            // As hydra's mpiexec and Open MPI's mpirun take it: a rank that called PMI_Init and
            // exits without PMI_Finalize left the job early; the others may wait for it for ever
            // (in a barrier, or for its data over the network), so the job ends.
            Some((
                EXIT_NO_FINALIZE,
                "exited with code 0 without calling PMI_Finalize, after its PMI_Init: a rank that leaves a PMI \
                 job early is a failure (as under hydra's mpiexec and Open MPI's mpirun), since the others may \
                 wait for it for ever; call PMI_Finalize (MPI_Finalize does) before a rank exits"
                    .to_owned(),
                status,
            ))
        } else {
            status.code().filter(|&c| c != 0).map(|code| (code, format!("exited with code {code}"), status))
        }
    }

    /// `status` is that of a rank the launcher's own signal killed.
    fn ended_by_launcher(&self, status: ExitStatus) -> bool {
        status.signal().is_some_and(|sig| sig == self.sent || (sig == libc::SIGKILL && self.killed))
    }

    /// The time limit ran out: the job ends.
    fn check_time(&mut self) {
        if self.ending.is_some() || self.deadline.is_none_or(|t| Instant::now() < t) {
            return;
        }
        let Some(limit) = &self.limit else { return };
        let running = self.running();
        // A hung job of thousands of ranks names a few of them.
        let shown: Vec<String> = running.iter().take(8).map(|r| r.to_string()).collect();
        let more = match running.len().saturating_sub(shown.len()) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let why = format!(
            "the time limit of {} ({}) ran out with {} still running ({}{more})",
            time::show(limit.limit),
            limit.from,
            if running.len() == 1 { "rank" } else { "ranks" },
            shown.join(", ")
        );
        self.end(EXIT_TIMEOUT, None, why);
    }

    /// A rank that closed its PMI connection after PMI_Init without PMI_Finalize and runs on
    /// left the job's PMI for good (no PMI call of it can reach the launcher again), as one that
    /// exits without PMI_Finalize left the job ([`Self::collect`]): it ends the job, whether or
    /// not another waits in a barrier yet, as hydra's proxy ends it at such a close.
    fn check_closed(&mut self) {
        if self.ending.is_some() {
            return;
        }
        let now = Instant::now();
        let Some(r) = (0..self.ranks.len()).find(|&r| self.ranks[r].left_pmi() && self.ranks[r].closed_for_good(now))
        else {
            return;
        };
        self.ranks[r].read_output();
        let pid = self.ranks[r].child.id();
        self.end(
            EXIT_NO_FINALIZE,
            Some(r),
            format!(
                "rank {r} (pid {pid}) closed its PMI connection (PMI_FD) without calling PMI_Finalize, after its \
                 PMI_Init, and runs on: it can take part in no PMI call again, and the others may wait for it for \
                 ever (hydra's mpiexec ends the job the same way); call PMI_Finalize (MPI_Finalize does) instead \
                 of closing PMI_FD"
            ),
        );
    }

    /// A barrier that a rank which already ended, or closed its PMI connection (PMI_Finalize
    /// closes it), never enters can never complete.
    fn check_barrier(&mut self) {
        let waiting = self.server.waiting();
        if waiting.is_empty() || self.ending.is_some() {
            return;
        }
        let now = Instant::now();
        let gone = (0..self.size).filter(|r| !waiting.contains(r)).find_map(|r| match self.ranks.get(r) {
            Some(rank) if rank.closed_for_good(now) => {
                Some(format!("rank {r} closed its PMI connection (PMI_FD) and runs on"))
            }
            Some(rank) if rank.status.is_none() => None,
            _ => Some(format!("rank {r} ended")),
        });
        if let Some(g) = gone {
            self.end(
                EXIT_STUCK,
                None,
                format!("{g} while ranks {waiting:?} wait in PMI_Barrier, which therefore can never complete"),
            );
        }
    }
}
