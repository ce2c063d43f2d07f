//! Synthetic iteration records (`aar-iterations/1`) for benchmarking and trying out `aar report`.
//!
//! ```sh
//! cargo run --release -p aar-cli --example gen_records -- --out /tmp/recs --ranks 64 --iterations 1000 \
//!     --policies ADAPTIVE0,ADAPTIVE3 --scale 1,0.8 --noise 0.05
//! ```
//!
//! Rank r's time in iteration i under policy p is
//! `base · scale[p] · exp(jitter·Zᵢ) · exp(noise·Zᵣᵢ) · (slow factor if r is the slow rank)`:
//! Zᵢ is shared by all ranks of the iteration (the machine's state), Zᵣᵢ is the rank's own; all
//! are standard normal draws from a seeded generator, so a run is reproducible. Policies
//! alternate round-robin. With `--labels`, blocks of iterations alternate `isolated` and
//! `congested` (congested ones take `--congestion` times longer). Each rank also leaves the summary
//! record a rank of a job writes at exit (`aar-record`, its iterations counted), as after a job
//! that ended.

use aar_record::{iterations_file_name, summary_file_name, write_line, Clock, Header, Source, FORMAT, SUMMARY_FORMAT};
use clap::Parser;
use rayon::prelude::*;
use std::io::Write;
use std::path::PathBuf;

#[derive(Parser)]
struct Args {
    /// Folder to write one file per rank into (created)
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = 4)]
    ranks: u32,
    #[arg(long, default_value_t = 100)]
    iterations: u64,
    #[arg(long, default_value = "ADAPTIVE0,ADAPTIVE3", value_delimiter = ',')]
    policies: Vec<String>,
    /// Median time multiplier per policy
    #[arg(long, default_value = "1,1", value_delimiter = ',')]
    scale: Vec<f64>,
    /// Median iteration time of the first policy, µs
    #[arg(long, default_value_t = 1000.0)]
    base_us: f64,
    /// Log-normal σ of each rank's own noise
    #[arg(long, default_value_t = 0.05)]
    noise: f64,
    /// Log-normal σ of the noise all ranks of an iteration share
    #[arg(long, default_value_t = 0.02)]
    jitter: f64,
    /// RANK:FACTOR: one rank that is that much slower
    #[arg(long)]
    slow_rank: Option<String>,
    /// Label iterations isolated/congested in alternating blocks of 2·policies
    #[arg(long)]
    labels: bool,
    #[arg(long, default_value_t = 1.5)]
    congestion: f64,
    #[arg(long, default_value = "synthetic")]
    experiment: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A standard normal draw determined by `key` (Box–Muller).
fn normal(key: u64) -> f64 {
    let a = splitmix(key);
    let b = splitmix(a);
    let u1 = ((a >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let u2 = ((b >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn main() {
    let a = Args::parse();
    let k = a.policies.len();
    if k == 0 || a.scale.len() != k {
        eprintln!("gen_records: --scale needs one factor per policy ({k})");
        std::process::exit(2);
    }
    let slow = a.slow_rank.as_deref().map(|s| {
        let (r, f) = s.split_once(':').expect("--slow-rank RANK:FACTOR");
        (r.parse::<u32>().expect("rank"), f.parse::<f64>().expect("factor"))
    });
    std::fs::create_dir_all(&a.out).expect("create --out");
    let modes = vec!["ADAPTIVE0".to_string(), "ADAPTIVE3".to_string()];
    let base_ns = a.base_us * 1e3;
    (0..a.ranks).into_par_iter().for_each(|rank| {
        let name = iterations_file_name(Some(&a.experiment), Some(rank), 10_000 + rank);
        let file = std::fs::File::create(a.out.join(name)).expect("create record");
        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
        let header = Header {
            format: FORMAT.into(),
            source: Source::Job,
            experiment: a.experiment.clone(),
            rank: Some(rank),
            nranks: Some(a.ranks),
            output_ranks: None,
            host: Some(format!("nid{:05}", rank / 32)),
            pid: Some(10_000 + rank),
            clock: Clock::Monotonic,
            policies: a.policies.clone(),
            order: "round-robin".into(),
            boundary: "markers".into(),
            modes: modes.clone(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_revision: None,
            command_line: vec!["gen_records".into()],
        };
        let mut line = Vec::new();
        write_line(&mut line, &header).expect("header");
        w.write_all(&line).expect("write");
        let rank_factor = match slow {
            Some((r, f)) if r == rank => f,
            _ => 1.0,
        };
        let period = (base_ns * 4.0) as u64;
        for i in 0..a.iterations {
            let p = (i % k as u64) as usize;
            let shared = (a.jitter * normal(a.seed ^ splitmix(i))).exp();
            let own = (a.noise * normal(a.seed ^ splitmix(((rank as u64) << 40) ^ i ^ 0x5555))).exp();
            let label = if a.labels { Some(if (i / (2 * k as u64)).is_multiple_of(2) { "isolated" } else { "congested" }) } else { None };
            let congestion = if label == Some("congested") { a.congestion } else { 1.0 };
            let d = (base_ns * a.scale[p] * shared * own * rank_factor * congestion).max(1.0) as u64;
            let start = i * period + (rank as u64 % 7) * 100;
            let mode = p % modes.len();
            let (mut msgs, mut bytes) = ([0u64; 2], [0u64; 2]);
            msgs[mode] = 40;
            bytes[mode] = 40 * 65_536;
            let label = label.map_or(String::new(), |l| format!(",\"label\":\"{l}\""));
            writeln!(
                w,
                "{{\"i\":{i},\"policy\":{}{label},\"start_ns\":{start},\"end_ns\":{},\"messages\":[{},{}],\"bytes\":[{},{}],\"decisions\":{},\"switches\":{}}}",
                serde_json::Value::from(a.policies[p].as_str()),
                start + d,
                msgs[0],
                msgs[1],
                bytes[0],
                bytes[1],
                10,
                i % 3 / 2
            )
            .expect("write");
        }
        w.flush().expect("flush");
        let summary = serde_json::json!({
            "format": SUMMARY_FORMAT, "job_id": a.experiment, "rank": rank, "pid": 10_000 + rank,
            "host": header.host, "policy_at_exit": a.policies[0],
            "ab": { "policies": a.policies, "boundary": "markers", "iterations": a.iterations },
        });
        let name = summary_file_name(Some(&a.experiment), Some(rank), 10_000 + rank);
        std::fs::write(a.out.join(name), summary.to_string()).expect("write summary record");
    });
}
