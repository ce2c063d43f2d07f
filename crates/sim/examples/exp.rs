use aar_sim::experiment::*;
use aar_sim::simulation::run_experiment;
use aar_sim::workload::*;
use aar_sim::*;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let wl: Workload = a[1].parse().unwrap();
    let ranks: u32 = a[2].parse().unwrap();
    let pl: Placement = a[3].parse().unwrap();
    let arms: Vec<PolicySpec> = a[4].split(',').map(|x| x.parse().unwrap()).collect();
    let bg: f64 = a.get(5).map(|x| x.parse().unwrap()).unwrap_or(0.0);
    let groups: u32 = a.get(6).map(|x| x.parse().unwrap()).unwrap_or(2);
    let mut spec = ExperimentSpec::new(NetConfig::aries(groups), wl, ranks, pl);
    spec.arms = arms;
    spec.iterations = 6;
    if bg > 0.0 {
        spec.background = Background::Uniform { load: bg, bytes: 4096 };
        spec.background_nodes = a.get(7).map(|x| x.parse().unwrap()).unwrap_or(16);
    }
    let r = run_experiment(&spec, "x");
    for s in &r.iterations {
        println!("{} {} {:.0} ns", s.iteration, s.arm, s.ns);
    }
    println!(
        "packets {} events {} sim {:.0} ns wall {:.2}s nonmin {:.3}",
        r.packets, r.events, r.sim_time_ns, r.wall_s, r.nonmin_fraction
    );
    println!("{}", serde_json::to_string(&r.records[0]).unwrap());
}
