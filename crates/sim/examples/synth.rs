use aar_sim::synthetic::*;
use aar_sim::*;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let topo = &a[1];
    let mode: Mode = a[2].parse().unwrap();
    let load: f64 = a[3].parse().unwrap();
    let pat = if a.get(4).map(|s| s.as_str()) == Some("wc") { Pattern::WorstCase } else { Pattern::Uniform };
    let cfg = if topo == "k4" { NetConfig::booksim_k4() } else { NetConfig::aries(topo.parse().unwrap()) };
    let r = run_synthetic(&cfg, &SynthParams { load, pattern: pat, mode, warmup: 3000, measure: 5000, seed: 1 });
    println!("{:?}", r);
}
