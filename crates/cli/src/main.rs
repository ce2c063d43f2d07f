//! `aar`: the command-line front end. main.rs only dispatches; each subcommand family lives in its
//! own module (`sim.rs` now; `report` and `doctor` are added beside it).

use clap::{Parser, Subcommand};

mod sim;

#[derive(Parser)]
#[command(name = "aar", version, about = "Application-aware routing for Cray Aries jobs")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulated Dragonfly (Aries-like) network: experiments, validation, benchmark
    Sim(sim::SimArgs),
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Sim(a) => sim::run(a),
    };
    std::process::exit(code);
}
