//! `aar sim validate`: zero-load latency against the analytic model, Kim et al. throughput and
//! latency versus offered load, and the SC'19 observations on the Aries-like network. Produces a
//! Markdown report and a pass/fail verdict for every gated check.

use crate::config::{Mode, NetConfig};
use crate::experiment::{Background, ExperimentResult, ExperimentSpec, PolicySpec};
use crate::net::Net;
use crate::parallel::run_all;
use crate::simulation::run_experiment;
use crate::synthetic::{run_synthetic, Pattern, SynthParams, SynthResult};
use crate::topology::TopoSpec;
use crate::workload::{Placement, Workload};
use aar_stats::{summarize, Summary};
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub value: String,
    pub tolerance: String,
    pub pass: bool,
}

pub struct Report {
    pub markdown: String,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.pass)
    }
}

type Obs = (String, Summary, Summary, bool, bool, bool, (f64, f64), ((f64, f64), (f64, f64)));

const CLASS_NAMES: [&str; 4] = ["T", "R", "C", "G"];

/// Analytic zero-load latency (ticks) of a `flits`-flit packet over router-to-router hops of the
/// given port classes (1 row/local, 2 column, 3 global), from the start of injection at the source
/// NIC to the tail's arrival at the destination NIC. Per hop: the head needs `latency + flit_time`
/// to be received, then `router_delay` before it may leave; a packet may not leave faster than
/// its tail arrives (cut-through), which adds `flits * (ft_in - ft_out)` when a faster channel
/// follows a slower one.
pub fn analytic_latency(cfg: &NetConfig, hops: &[usize], flits: u64) -> u64 {
    let mut chans = vec![0usize];
    chans.extend_from_slice(hops);
    chans.push(0);
    let (lat, ft) = (cfg.latency, cfg.flit_time);
    let mut head = lat[0] + ft[0];
    let mut tail = lat[0] + flits * ft[0];
    for &c in &chans[1..] {
        let start = (head + cfg.router_delay).max(tail.saturating_sub(flits * ft[c]));
        head = start + lat[c] + ft[c];
        tail = start + flits * ft[c] + lat[c];
    }
    tail
}

struct ZeroRow {
    class: String,
    hops: usize,
    count: usize,
    sim_min: u64,
    sim_max: u64,
    analytic: u64,
    mismatches: usize,
}

fn zero_load(cfg: &NetConfig, modes: &[Mode], pairs: u32, seed: u64) -> Vec<ZeroRow> {
    let mut net = Net::new(cfg.clone(), seed);
    let n = net.topo.n_nodes;
    let mut rows: BTreeMap<String, ZeroRow> = BTreeMap::new();
    let flits = cfg.raw_packet_flits as u64;
    let mut x = seed;
    for &mode in modes {
        for i in 0..pairs {
            let s = (crate::rng::splitmix64(&mut x) % n as u64) as u32;
            let d = if i % 5 == 0 {
                s / cfg_p(cfg) * cfg_p(cfg) + (s + 1) % cfg_p(cfg)
            } else {
                (crate::rng::splitmix64(&mut x) % n as u64) as u32
            };
            if s == d {
                continue;
            }
            net.post_raw(s, d, mode);
            while net.step(u64::MAX).is_some() {}
            let (lat, h, path) = net.raw.last;
            let hops: Vec<usize> = (0..h as usize).map(|k| ((path >> (2 * k)) & 3) as usize).collect();
            let mut class = String::from("T");
            for &c in &hops {
                class.push('-');
                class.push_str(CLASS_NAMES[c]);
            }
            class.push_str("-T");
            let a = analytic_latency(cfg, &hops, flits);
            let row = rows.entry(format!("{:02}{}", hops.len(), class)).or_insert(ZeroRow {
                class,
                hops: hops.len(),
                count: 0,
                sim_min: u64::MAX,
                sim_max: 0,
                analytic: a,
                mismatches: 0,
            });
            row.count += 1;
            row.sim_min = row.sim_min.min(lat);
            row.sim_max = row.sim_max.max(lat);
            if lat != a {
                row.mismatches += 1;
            }
        }
    }
    rows.into_values().collect()
}

fn cfg_p(cfg: &NetConfig) -> u32 {
    match cfg.topo {
        TopoSpec::Kim { p, .. } => p,
        TopoSpec::Aries { .. } => 4,
    }
}

/// The Aries-like network used for the SC'19 experiments: 4 groups, 3 global ports per router
/// (96 global links between every pair of groups, close to Piz Daint's 73 with 14 groups).
pub fn sc19_net() -> NetConfig {
    let mut c = NetConfig::aries(4);
    c.topo = TopoSpec::Aries { groups: 4, global_per_router: 3 };
    c
}

#[derive(Clone)]
struct KimRun {
    pattern: Pattern,
    mode: Mode,
    load: f64,
}

fn summary_row(label: &str, s: &Summary) -> String {
    format!(
        "| {} | {} | {} | [{}, {}] | {:.4} | {} |\n",
        label,
        s.n,
        fmt_ns(s.median),
        fmt_ns(s.ci_lo),
        fmt_ns(s.ci_hi),
        s.qcd,
        fmt_ns(s.max)
    )
}

pub fn validate(quick: bool) -> Report {
    let mut md = String::new();
    let mut checks = Vec::new();
    let t0 = std::time::Instant::now();
    md += "# Simulator validation\n\n";
    md += "Generated by `aar sim validate";
    md += if quick { " --quick" } else { "" };
    md += "`; do not edit by hand. Parameters and their reasons: [MODEL.md](MODEL.md).\n\n";

    // ------------------------------------------------------------------ zero load
    md += "## 1. Zero-load latency per path class\n\n";
    md += "One packet at a time on an idle network; its latency (start of injection to tail at the destination NIC) \
is compared with the analytic sum `sum(channel latency) + hops * router delay + sum(flit time of each channel for the head) + \
(flits - 1) * flit time of the last channel`, plus the cut-through wait where a faster channel follows a slower one \
(see `validate::analytic_latency`). Tolerance: exact (0 ticks).\n\n";
    for (name, cfg, unit) in [
        ("Kim k=4 (BookSim2 dragonflynew), 10-flit packets, 1 tick = 1 cycle", NetConfig::booksim_k4(), 1.0),
        ("Aries-like, 4 groups, 5-flit (64-byte PUT) packets, 1 tick = 1 ps, shown in ns", sc19_net(), 1000.0),
    ] {
        let rows = zero_load(&cfg, &[Mode::Min, Mode::Val, Mode::Adaptive0], if quick { 150 } else { 400 }, 17);
        let _ = writeln!(md, "**{name}**\n");
        md += "| path (T terminal, R row/local, C column, G global) | router hops | packets | simulated | analytic | mismatches |\n|---|---:|---:|---:|---:|---:|\n";
        let mut bad = 0;
        let mut total = 0;
        for r in &rows {
            let sim = if r.sim_min == r.sim_max {
                format!("{}", r.sim_min as f64 / unit)
            } else {
                format!("{}..{}", r.sim_min as f64 / unit, r.sim_max as f64 / unit)
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                r.class,
                r.hops,
                r.count,
                sim,
                r.analytic as f64 / unit,
                r.mismatches
            );
            bad += r.mismatches;
            total += r.count;
        }
        md += "\n";
        checks.push(Check {
            name: format!("zero-load latency = analytic ({})", name.split(',').next().unwrap()),
            value: format!("{} of {} packets differ, {} path classes", bad, total, rows.len()),
            tolerance: "0 ticks".into(),
            pass: bad == 0 && total > 0,
        });
    }

    // ------------------------------------------------------------------ Kim
    md += "## 2. Kim et al. Dragonfly (BookSim2 k=4: p=4, a=8, h=4, g=33, 1,056 nodes)\n\n";
    let (warm, meas) = if quick { (1000, 2000) } else { (2000, 5000) };
    let _ = writeln!(
        md,
        "Open-loop Bernoulli injection of 10-flit packets, infinite source queues; {warm} warm-up cycles, {meas} measured. \
Accepted throughput in flits/cycle/node (1.0 = injection bandwidth); latency = creation to tail ejection (cycles) of packets \
ejected in the window, so above saturation it only shows the growth of source queues. UGAL = UGAL-L decided at the source \
router (BookSim2 `ugal_dragonflynew` rule: minimal iff q_min <= 2 q_nonmin + 30 flits).\n"
    );
    let mut runs = Vec::new();
    let ur_loads: &[f64] = if quick { &[0.1, 0.5, 0.9, 1.0] } else { &[0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0] };
    let wc_loads: &[f64] =
        if quick { &[0.03, 0.1, 0.3, 0.6] } else { &[0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6] };
    for (pattern, loads) in [(Pattern::Uniform, ur_loads), (Pattern::WorstCase, wc_loads)] {
        for mode in [Mode::Min, Mode::Val, Mode::Ugal] {
            for &load in loads {
                runs.push(KimRun { pattern, mode, load });
            }
        }
    }
    let kcfg = NetConfig::booksim_k4();
    let res: Vec<SynthResult> = run_all(&runs, "sim validate (Kim et al.)", |r, _| {
        run_synthetic(
            &kcfg,
            &SynthParams { load: r.load, pattern: r.pattern, mode: r.mode, warmup: warm, measure: meas, seed: 7 },
        )
    });
    let get = |p: Pattern, m: Mode, l: f64| -> &SynthResult {
        let i = runs.iter().position(|r| r.pattern == p && r.mode == m && (r.load - l).abs() < 1e-9).unwrap();
        &res[i]
    };
    for (pattern, loads) in [(Pattern::Uniform, ur_loads), (Pattern::WorstCase, wc_loads)] {
        let _ = writeln!(
            md,
            "**{}** — accepted throughput / mean latency (cycles) / non-minimal fraction\n",
            if pattern == Pattern::Uniform { "Uniform random (UR)" } else { "Worst case (WC): group i -> group i+1" }
        );
        md += "| offered | MIN | VAL | UGAL |\n|---:|---|---|---|\n";
        for &l in loads {
            let cell = |m: Mode| {
                let r = get(pattern, m, l);
                format!("{:.3} / {:.0} / {:.2}", r.accepted, r.avg_latency, r.nonmin_fraction)
            };
            let _ = writeln!(md, "| {:.2} | {} | {} | {} |", l, cell(Mode::Min), cell(Mode::Val), cell(Mode::Ugal));
        }
        md += "\n";
    }
    let ur_min_sat = get(Pattern::Uniform, Mode::Min, 1.0).accepted;
    checks.push(Check {
        name: "UR, MIN saturates near full injection bandwidth (accepted at offered 1.0)".into(),
        value: format!("{:.3}", ur_min_sat),
        tolerance: ">= 0.85".into(),
        pass: ur_min_sat >= 0.85,
    });
    let wc_min = get(Pattern::WorstCase, Mode::Min, 0.6).accepted;
    checks.push(Check {
        name: "WC, MIN saturates at 1/(a*p) = 1/32 = 0.03125 (accepted at offered 0.6)".into(),
        value: format!("{:.4}", wc_min),
        tolerance: "0.03125 +- 10%".into(),
        pass: (wc_min - 1.0 / 32.0).abs() <= 0.1 / 32.0,
    });
    let wc_val = get(Pattern::WorstCase, Mode::Val, 0.6).accepted;
    checks.push(Check {
        name: "WC, VAL saturates near 0.5 (accepted at offered 0.6)".into(),
        value: format!("{:.3}", wc_val),
        tolerance: "[0.40, 0.52]".into(),
        pass: (0.40..=0.52).contains(&wc_val),
    });
    let ur_val = get(Pattern::Uniform, Mode::Val, 1.0).accepted;
    checks.push(Check {
        name: "UR, VAL saturates near 0.5 (accepted at offered 1.0)".into(),
        value: format!("{:.3}", ur_val),
        tolerance: "[0.40, 0.52]".into(),
        pass: (0.40..=0.52).contains(&ur_val),
    });
    let ur_ugal = get(Pattern::Uniform, Mode::Ugal, 0.9).accepted;
    let ur_min = get(Pattern::Uniform, Mode::Min, 0.9).accepted;
    checks.push(Check {
        name: "UR, UGAL follows MIN (accepted at offered 0.9, ratio UGAL/MIN)".into(),
        value: format!("{:.3} / {:.3} = {:.3}", ur_ugal, ur_min, ur_ugal / ur_min),
        tolerance: ">= 0.95".into(),
        pass: ur_ugal / ur_min >= 0.95,
    });
    let wc_ugal = get(Pattern::WorstCase, Mode::Ugal, 0.6).accepted;
    checks.push(Check {
        name: "WC, UGAL approaches VAL (accepted at offered 0.6, ratio UGAL/VAL)".into(),
        value: format!("{:.3} / {:.3} = {:.3}", wc_ugal, wc_val, wc_ugal / wc_val),
        tolerance: ">= 0.90".into(),
        pass: wc_ugal / wc_val >= 0.90,
    });
    let low = get(Pattern::Uniform, Mode::Min, 0.1);
    // zero-load average over the UR path mix: hops-weighted analytic value
    let zl = zero_load_mean(&kcfg);
    checks.push(Check {
        name: "UR, MIN latency at offered 0.1 close to the zero-load average".into(),
        value: format!("{:.1} vs {:.1} cycles", low.avg_latency, zl),
        tolerance: "within +15%".into(),
        pass: low.avg_latency >= zl * 0.98 && low.avg_latency <= zl * 1.15,
    });

    // ------------------------------------------------------------------ SC'19
    md += "## 3. SC'19 observations on the Aries-like network with background traffic\n\n";
    let net = sc19_net();
    let seeds: Vec<u64> = if quick { (1..=3).collect() } else { (1..=4).collect() };
    let pp_bytes: u64 = if quick { 1 << 20 } else { 4 << 20 };
    let iters = 4;
    let bg = Background::Uniform { load: 0.4, bytes: 4096 };
    let bg_nodes = 16;
    let _ = writeln!(
        md,
        "Network: {}, {} ps ticks. Background: {} nodes (first the other nodes of the measured ranks' routers, then random nodes of \
the measured groups) send open-loop 4 KiB PUTs to random nodes of those groups at {:.0}% of their injection bandwidth with \
ADAPTIVE0 (Cray MPICH's default), starting 5 us before the measured job. Each run alternates the policies on successive iterations \
(A/B, the paper's methodology) with {} iterations; {} seeds (the seed changes background placement, destinations and every \
routing choice). Statistics over all iterations of all seeds: median, 95% CI of the median (order statistics), QCD = (Q3-Q1)/(Q3+Q1).\n",
        net.topo.describe(),
        net.tick_ps,
        bg_nodes,
        40.0,
        iters,
        seeds.len()
    );
    struct Sc {
        label: String,
        spec: ExperimentSpec,
    }
    let mut scs = Vec::new();
    let mk = |wl: Workload, ranks: u32, pl: Placement, arms: Vec<PolicySpec>, seed: u64, its: u32| {
        let mut s = ExperimentSpec::new(net.clone(), wl, ranks, pl);
        s.arms = arms;
        s.iterations = its;
        s.background = bg.clone();
        s.background_nodes = bg_nodes;
        s.background_local = true;
        s.seed = seed;
        s
    };
    let pp_arms = vec![PolicySpec::Fixed(Mode::Adaptive0), PolicySpec::Fixed(Mode::Adaptive3)];
    for &seed in &seeds {
        scs.push(Sc {
            label: "pp-intra".into(),
            spec: mk(Workload::PingPong { bytes: pp_bytes }, 2, Placement::SameGroup, pp_arms.clone(), seed, iters),
        });
        scs.push(Sc {
            label: "pp-inter".into(),
            spec: mk(Workload::PingPong { bytes: pp_bytes }, 2, Placement::AcrossGroups, pp_arms.clone(), seed, iters),
        });
    }
    let a2a_sizes: Vec<u64> = if quick { vec![64, 16384] } else { vec![64, 1024, 16384, 65536] };
    let a2a_ranks = if quick { 8 } else { 16 };
    for &seed in &seeds {
        for &b in &a2a_sizes {
            scs.push(Sc {
                label: format!("a2a-{b}"),
                spec: mk(Workload::Alltoall { bytes: b }, a2a_ranks, Placement::AcrossGroups, pp_arms.clone(), seed, 4),
            });
        }
    }
    // a loaded network: one global port per router (32 links per group pair) and heavy background
    let loaded_net = {
        let mut c = NetConfig::aries(4);
        c.topo = TopoSpec::Aries { groups: 4, global_per_router: 1 };
        c
    };
    let loaded_seeds: Vec<u64> = if quick { vec![] } else { (1..=3).collect() };
    let mkl =
        |wl: Workload, ranks: u32, pl: Placement, bg: Background, nodes: u32, local: bool, seed: u64, its: u32| {
            let mut s = ExperimentSpec::new(loaded_net.clone(), wl, ranks, pl);
            s.arms = vec![PolicySpec::Fixed(Mode::Adaptive0), PolicySpec::Fixed(Mode::Adaptive3), PolicySpec::Auto];
            s.iterations = its;
            s.background = bg;
            s.background_nodes = nodes;
            s.background_local = local;
            s.seed = seed;
            s
        };
    for &seed in &loaded_seeds {
        scs.push(Sc {
            label: "loaded-pp-intra".into(),
            spec: mkl(
                Workload::PingPong { bytes: 256 << 10 },
                2,
                Placement::SameGroup,
                Background::Uniform { load: 0.6, bytes: 4096 },
                128,
                true,
                seed,
                9,
            ),
        });
        scs.push(Sc {
            label: "loaded-pp-inter".into(),
            spec: mkl(
                Workload::PingPong { bytes: 256 << 10 },
                2,
                Placement::AcrossGroups,
                Background::WorstCase { load: 0.6, bytes: 4096 },
                64,
                false,
                seed,
                9,
            ),
        });
        for b in [64u64, 65536] {
            scs.push(Sc {
                label: format!("loaded-a2a-{b}"),
                spec: mkl(
                    Workload::Alltoall { bytes: b },
                    16,
                    Placement::AcrossGroups,
                    Background::Uniform { load: 0.5, bytes: 4096 },
                    64,
                    false,
                    seed,
                    9,
                ),
            });
        }
    }
    let results: Vec<ExperimentResult> =
        run_all(&scs, "sim validate (SC'19)", |s, _| run_experiment(&s.spec, &s.label));
    let pool = |label: &str, arm: &str| -> Vec<f64> {
        results.iter().filter(|r| r.label == label).flat_map(|r| r.times(arm)).collect()
    };
    let window = |label: &str, arm: &str| -> (f64, f64) {
        let w: Vec<(f64, f64)> = results.iter().filter(|r| r.label == label).flat_map(|r| r.windows(arm)).collect();
        let s = summarize(&w.iter().map(|x| x.0).collect::<Vec<_>>()).median;
        let l = summarize(&w.iter().map(|x| x.1).collect::<Vec<_>>()).median;
        (s, l)
    };
    let nonmin = |label: &str| -> (f64, f64) {
        let per = |mode: &str| {
            let v: Vec<f64> = results
                .iter()
                .filter(|r| r.label == label)
                .filter_map(|r| r.nonmin_by_mode.iter().find(|(m, _)| m == mode).map(|x| x.1))
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        (per("ADAPTIVE0"), per("ADAPTIVE3"))
    };
    let mut obs: Vec<Obs> = Vec::new();
    let compare = |obs: &mut Vec<Obs>, md: &mut String, label: &str, title: &str, expect_a0_faster: bool| {
        let a0 = summarize(&pool(label, "ADAPTIVE0"));
        let a3 = summarize(&pool(label, "ADAPTIVE3"));
        md.push_str(&summary_row(&format!("{title}, ADAPTIVE0"), &a0));
        md.push_str(&summary_row(&format!("{title}, ADAPTIVE3"), &a3));
        let auto = pool(label, "auto");
        if !auto.is_empty() {
            md.push_str(&summary_row(
                &format!("{title}, auto (the paper's algorithm in every rank)"),
                &summarize(&auto),
            ));
        }
        let a0_faster = a0.median < a3.median;
        let separated = a0.ci_hi < a3.ci_lo || a3.ci_hi < a0.ci_lo;
        let w = (window(label, "ADAPTIVE0"), window(label, "ADAPTIVE3"));
        obs.push((
            title.to_string(),
            a0,
            a3,
            a0_faster == expect_a0_faster,
            separated,
            expect_a0_faster,
            nonmin(label),
            w,
        ));
    };
    let render_obs = |md: &mut String, obs: &[Obs]| -> usize {
        md.push_str("\n| observation (paper) | simulator | A0/A3 median ratio | CIs separated | QCD A0 / A3 | rank 0 NIC stall ratio A0 / A3 (cycles/flit) | rank 0 NIC latency A0 / A3 (cycles) | non-minimal packets A0 / A3 | agrees |\n|---|---|---:|---|---|---|---|---:|---|\n");
        let mut agree = 0;
        for (title, a0, a3, agrees, sep, expect_a0, nm, w) in obs {
            let paper = if *expect_a0 { "ADAPTIVE0 faster" } else { "ADAPTIVE3 faster" };
            let sim = if a0.median < a3.median { "ADAPTIVE0 faster" } else { "ADAPTIVE3 faster" };
            let _ = writeln!(
                md,
                "| {title}: {paper} | {sim} | {:.3} | {} | {:.4} / {:.4} | {:.3} / {:.3} | {:.0} / {:.0} | {:.2} / {:.2} | {} |",
                a0.median / a3.median,
                if *sep { "yes" } else { "no" },
                a0.qcd,
                a3.qcd,
                w.0 .0,
                w.1 .0,
                w.0 .1,
                w.1 .1,
                nm.0,
                nm.1,
                if *agrees { "yes" } else { "**no**" }
            );
            if *agrees {
                agree += 1;
            }
        }
        agree
    };
    md += "### 3a. Light background\n\n| experiment, arm | samples | median | 95% CI of median | QCD | max |\n|---|---:|---:|---|---:|---:|\n";
    compare(&mut obs, &mut md, "pp-intra", &format!("ping-pong {} MiB, one group", pp_bytes >> 20), true);
    compare(&mut obs, &mut md, "pp-inter", &format!("ping-pong {} MiB, two groups", pp_bytes >> 20), false);
    for (i, &b) in a2a_sizes.iter().enumerate() {
        let expect_a0 = i + 1 == a2a_sizes.len() || b >= 16384;
        compare(&mut obs, &mut md, &format!("a2a-{b}"), &format!("alltoall {a2a_ranks} ranks, {b} B"), expect_a0);
    }
    // the observation the High Bias value is calibrated on (MODEL.md, "NIC stalls"): gated, so
    // that the mechanism cannot silently stop producing it
    let (s0, s3) = (window("pp-intra", "ADAPTIVE0").0, window("pp-intra", "ADAPTIVE3").0);
    checks.push(Check {
        name: format!(
            "NIC stalls, ping-pong {} MiB in one group: High Bias stalls clearly more than Adaptive (SC'19 Fig. 7; median stalled cycles per request flit, ADAPTIVE3 / ADAPTIVE0)",
            pp_bytes >> 20
        ),
        value: format!("{s3:.3} / {s0:.3}"),
        tolerance: "ADAPTIVE3 >= 0.05 and >= 2x ADAPTIVE0".into(),
        pass: s3 >= 0.05 && s3 >= 2.0 * s0,
    });
    let light = obs.len();
    let mut agree_all = render_obs(&mut md, &obs[..light]);
    if !loaded_seeds.is_empty() {
        let _ = writeln!(
            md,
            "\n### 3b. Loaded network\n\nAries-like, 4 groups, **1** global port per router (32 links per group pair), so that global \
links can congest. Intra-group ping-pong (256 KiB): 128 nodes of the group send uniform random 4 KiB PUTs inside it at 60% of \
injection bandwidth. Inter-group ping-pong (256 KiB): 64 nodes anywhere send worst-case traffic (group i -> i+1) at 60%. \
Alltoall (16 ranks over the 4 groups): 64 nodes anywhere, uniform random at 50%. Background routing ADAPTIVE0; {} seeds, 9 \
iterations each alternating ADAPTIVE0, ADAPTIVE3 and `auto` (the engine's paper policy deciding per message from the NIC counters).\n\n| experiment, arm | samples | median | 95% CI of median | QCD | max |\n|---|---:|---:|---|---:|---:|",
            loaded_seeds.len()
        );
        compare(&mut obs, &mut md, "loaded-pp-intra", "loaded, ping-pong 256 KiB, one group", true);
        compare(&mut obs, &mut md, "loaded-pp-inter", "loaded, ping-pong 256 KiB, two groups", false);
        compare(&mut obs, &mut md, "loaded-a2a-64", "loaded, alltoall 16 ranks, 64 B", false);
        compare(&mut obs, &mut md, "loaded-a2a-65536", "loaded, alltoall 16 ranks, 65536 B", true);
        agree_all += render_obs(&mut md, &obs[light..]);
    }
    let _ = writeln!(
        md,
        "\n{agree_all} of {} observations agree in direction. These are reported, not gated: the simulator's behaviour comes from its \
mechanism (queues, credits, paths), and parameters are not tuned to make it agree (one exception: the High Bias value is \
calibrated on the intra-group stalls, the gated check above). See MODEL.md, section \"SC'19 observations\", \
for the discussion.\n",
        obs.len()
    );
    let packets: u64 = results.iter().map(|r| r.packets).sum();
    let _ = writeln!(md, "SC'19 runs: {} experiments, {} packets simulated.\n", results.len(), packets);

    // ------------------------------------------------------------------ verdict
    let mut head = String::new();
    head += "## Gated checks\n\n| check | value | tolerance | result |\n|---|---|---|---|\n";
    for c in &checks {
        let _ = writeln!(
            head,
            "| {} | {} | {} | {} |",
            c.name,
            c.value,
            c.tolerance,
            if c.pass { "pass" } else { "**FAIL**" }
        );
    }
    let _ = writeln!(
        head,
        "\nValidation wall time: {:.0} s on {} threads.\n",
        t0.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
    let split = md.find("## 1.").unwrap();
    md.insert_str(split, &head);
    Report { markdown: md, checks }
}

/// Mean zero-load latency (cycles) of a uniform random packet under MIN on `cfg`, from the
/// analytic formula over every source/destination router pair and every hashed gateway.
fn zero_load_mean(cfg: &NetConfig) -> f64 {
    let topo = crate::topology::Topology::new(cfg.topo.clone());
    let flits = cfg.raw_packet_flits as u64;
    let mut sum = 0.0;
    let mut cnt = 0.0;
    let p = topo.p as f64;
    for r in 0..topo.n_routers {
        for t in 0..topo.n_routers {
            let w = if r == t { p * (p - 1.0) } else { p * p };
            let (g1, g2) = (topo.group_of(r), topo.group_of(t));
            let lat = if r == t {
                analytic_latency(cfg, &[], flits) as f64
            } else if g1 == g2 {
                analytic_latency(cfg, &[1], flits) as f64
            } else {
                let gws = topo.gateways(g1, g2);
                gws.iter()
                    .map(|&gp| {
                        let gr = gp / topo.radix;
                        let far = topo.far_router(gp);
                        let mut h = Vec::new();
                        if gr != r {
                            h.push(1);
                        }
                        h.push(3);
                        if far != t {
                            h.push(1);
                        }
                        analytic_latency(cfg, &h, flits) as f64
                    })
                    .sum::<f64>()
                    / gws.len() as f64
            };
            sum += w * lat;
            cnt += w;
        }
    }
    sum / cnt / cfg.nic_cycle as f64
}

/// Simulated time for tables: ns, µs (written us) or ms.
pub fn fmt_ns(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.3} ms", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.2} us", x / 1e3)
    } else {
        format!("{:.0} ns", x)
    }
}
