//! `aar`: the command-line front end. main.rs dispatches (after starting rayon's threads for the commands that use them); each subcommand family lives in its
//! own module: `sim` (simulator experiments), `report` (statistics and plots of A/B records) and
//! `doctor` (can this program and this environment use libaar.so?) and `run` (an emulated
//! multi-rank job, with its PMI service); the hidden `man` writes the manual pages (scripts/install).

use clap::{CommandFactory, Parser, Subcommand};

mod doctor;
mod man;
mod program;
mod report;
mod run;
mod sim;

/// `aar --help` and the DESCRIPTION of aar(1). Hard-wrapped for `--help` (clap does not wrap it
/// here); the man page fills each paragraph, blank lines apart, itself.
const LONG_ABOUT: &str = "\
aar is the command of libaar.so, the library that \"module load aar\" preloads into the programs of
a job: before each uGNI or DMAPP message goes on the network it chooses the message's routing mode
from the NIC's counters. libaar(7) describes the library and its AAR_* settings.

aar doctor ./app, on a compute node, checks that a program and the environment are ready for it.

aar report compares the routing policies of an A/B experiment (AAR_AB) from the records the job's
ranks, or aar sim, wrote.

aar run starts a job of several ranks on this machine over the emulated Aries NIC, and aar sim runs
experiments on a simulated Aries (Dragonfly) network: to try aar without a Cray.";

#[derive(Parser)]
#[command(name = "aar", version, about = "Application-aware routing for Cray Aries jobs", long_about = LONG_ABOUT)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Statistics and plots of the per-rank iteration records of A/B runs (jobs and aar sim)
    Report(report::ReportArgs),
    /// Check that a program and this environment are ready for libaar.so
    Doctor(doctor::DoctorArgs),
    /// Simulated Dragonfly (Aries-like) network: experiments, validation, benchmark
    Sim(sim::SimArgs),
    /// Start a job of N ranks of PROGRAM on this machine (emulated Aries: Cray-style PMI and PMI_GNI_* environment)
    Run(run::RunArgs),
    /// Write the manual pages (aar(1), aar-*(1), libaar(7)) into a folder: scripts/install's step
    #[command(hide = true)]
    Man(man::ManArgs),
}

/// Write a command's output on stdout: `Err`, a sentence for `aar: ...`, when it could not be
/// written (a full disk under `aar ... > FILE`). A reader that has gone (`aar ... | head`) took
/// what it wanted: no error. Never a panic, as `print!` would.
fn print(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!(
            "the output could not be written to the standard output ({e}); free space where it goes, or give \
             another file"
        )),
        _ => Ok(()),
    }
}

/// The most threads `aar sim` and `aar report` run on (RAYON_NUM_THREADS). Each run of a sweep
/// takes a thread of its own and keeps its memory while it runs, so threads past the CPUs only
/// hold more runs at once; and rayon starts them all at once (100,000 hung the command). A fixed
/// bound rather than a multiple of the CPUs, so that a value that works on one node works on
/// every node: 1024 is more than the hardware threads of the largest nodes aar is meant for.
const MAX_THREADS: u64 = 1024;

/// Starts rayon's threads for `aar COMMAND` with RAYON_NUM_THREADS, read here before rayon would
/// read it (rayon takes any number, and a value it does not read it replaces in silence): unset
/// or empty, rayon's default, one per CPU available; one aar does not take, said on stderr, with
/// the default instead. Only the commands that use rayon: under `aar run` the variable is the
/// ranks' own.
fn start_threads(command: &str) -> Result<(), String> {
    let Some(given) = std::env::var_os("RAYON_NUM_THREADS").filter(|v| !v.is_empty()) else { return Ok(()) };
    let threads = sim::options::whole::<usize>(1, MAX_THREADS)(&given.to_string_lossy()).unwrap_or_else(|e| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        eprintln!(
            "aar: RAYON_NUM_THREADS: {e}, so aar {command} runs on {} instead (one per CPU available, as without it); \
             set it to a whole number from 1 to {MAX_THREADS} (1: the least memory), or unset it",
            aar_record::count(cpus as u64, "thread", "threads")
        );
        cpus
    });
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().map_err(|e| {
        format!(
            "RAYON_NUM_THREADS: {threads} threads could not be started ({e}), so nothing was run: set it to fewer \
             threads, or unset it for one per CPU"
        )
    })
}

fn main() {
    let cli = Cli::parse();
    let threads = match &cli.cmd {
        Cmd::Report(_) => start_threads("report"),
        Cmd::Sim(_) => start_threads("sim"),
        _ => Ok(()),
    };
    if let Err(e) = threads {
        eprintln!("aar: {e}");
        std::process::exit(2);
    }
    let code = match cli.cmd {
        Cmd::Report(a) => report::run(a),
        Cmd::Doctor(a) => doctor::run(a),
        Cmd::Sim(a) => sim::run(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Man(a) => man::run(a, Cli::command()),
    };
    std::process::exit(code);
}
