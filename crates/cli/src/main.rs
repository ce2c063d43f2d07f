//! `aar`: the command-line front end. main.rs only dispatches; each subcommand family lives in its
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

fn main() {
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Report(a) => report::run(a),
        Cmd::Doctor(a) => doctor::run(a),
        Cmd::Sim(a) => sim::run(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Man(a) => man::run(a, Cli::command()),
    };
    std::process::exit(code);
}
