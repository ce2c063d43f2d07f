//! `aar sim ...` subcommands.

use clap::{Args, Subcommand};

#[derive(Args)]
pub struct SimArgs {
    #[command(subcommand)]
    cmd: SimCmd,
}

#[derive(Subcommand)]
enum SimCmd {
    /// Performance benchmark: BookSim2 k=4 dragonflynew workload and Aries group scaling
    Bench {
        /// a tenth of the work (CI)
        #[arg(long)]
        quick: bool,
    },
}

pub fn run(a: SimArgs) -> i32 {
    match a.cmd {
        SimCmd::Bench { quick } => {
            let r = aar_sim::bench::run_bench(quick);
            println!("{}", aar_sim::bench::render(&r));
            0
        }
    }
}
