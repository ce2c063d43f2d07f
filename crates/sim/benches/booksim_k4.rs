//! Performance benchmark: a paper-scale experiment (1,024 ranks on 6 Aries-like groups, alltoall,
//! every rank running the engine) in packet-hops/s per core, then the BookSim2 k=4 `dragonflynew`
//! configuration (p=4, a=8, h=4, g=33, 1,056 nodes) under uniform random traffic at 0.3
//! flits/cycle/node for 60,451 cycles, MIN routing, on one core. BookSim2 takes 263 s for this on
//! the reference machine.
//! Run: cargo bench -p aar-sim --bench booksim_k4   (or: aar sim bench)
fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let r = aar_sim::bench::run_bench(quick);
    println!("{}", aar_sim::bench::render(&r));
}
