//! `aar report` end to end: the real binary on records written here, whose answers are computed
//! independently in the test (sorting, brute-force pair counting, exact binomial sums).

use aar_record::{write_line, Clock, Header, Iteration, Source, FORMAT};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn aar() -> Command {
    Command::new(env!("CARGO_BIN_EXE_aar"))
}

/// A fresh folder for one test, removed when the test ends.
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("aar-report-test-{name}-")).tempdir().unwrap()
}

fn header(exp: &str, rank: u32, nranks: u32, policies: &[&str]) -> Header {
    Header {
        format: FORMAT.into(),
        source: Source::Job,
        experiment: exp.into(),
        rank: Some(rank),
        nranks: Some(nranks),
        output_ranks: None,
        host: None,
        pid: Some(100 + rank),
        clock: Clock::Monotonic,
        policies: policies.iter().map(|p| p.to_string()).collect(),
        order: "round-robin".into(),
        boundary: "markers".into(),
        modes: vec!["ADAPTIVE0".into(), "ADAPTIVE3".into()],
        version: "0.1.0".into(),
        git_revision: None,
        command_line: vec![],
    }
}

/// One row: iteration i of `policy`, lasting `ns`, bytes in the mode column of the policy's index.
fn row(i: u64, policy: &str, mode: usize, ns: u64, label: Option<&str>) -> Iteration {
    let mut bytes = vec![0, 0];
    bytes[mode] = 1000;
    let mut messages = vec![0, 0];
    messages[mode] = 2;
    Iteration {
        i,
        policy: policy.into(),
        label: label.map(String::from),
        start_ns: 1_000_000_000 + i * 10_000_000,
        end_ns: 1_000_000_000 + i * 10_000_000 + ns,
        messages,
        bytes,
        decisions: 3,
        switches: 1,
        latency_us: Some(1.5),
        stall_ratio: None,
    }
}

fn record_path(dir: &Path, exp: &str, rank: u32) -> PathBuf {
    dir.join(format!("aar.{exp}.{rank}.{}.iterations.jsonl", 100 + rank))
}

fn write_record(dir: &Path, h: &Header, rows: &[Iteration]) -> PathBuf {
    let mut out = Vec::new();
    write_line(&mut out, h).unwrap();
    for r in rows {
        write_line(&mut out, r).unwrap();
    }
    let path = record_path(dir, &h.experiment, h.rank.expect("a rank's header"));
    std::fs::write(&path, out).unwrap();
    path
}

/// The summary record rank `rank` of `exp` writes at exit beside its iteration record, saying it
/// ended `ended` iterations of `policies`.
fn write_summary(dir: &Path, exp: &str, rank: u32, policies: &[&str], ended: u64) {
    let rec = serde_json::json!({
        "format": "aar-record/2", "job_id": exp, "rank": rank, "pid": 100 + rank, "host": "h",
        "policy_at_exit": policies[0], "ab": { "policies": policies, "boundary": "markers", "iterations": ended },
    });
    std::fs::write(dir.join(format!("aar.{exp}.{rank}.{}.json", 100 + rank)), rec.to_string()).unwrap();
}

fn run(args: &[&str]) -> Output {
    aar().arg("report").args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json_of(o: &Output) -> Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// splitmix64 and Box–Muller: reproducible noise for the generated records.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (a, b) = (self.uniform(), self.uniform());
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }
}

/// Records of `ranks` ranks × `iters` iterations alternating `policies`; rank r's time under
/// policy p is base·scale[p]·exp(σ·Z). Each rank leaves its summary record, as at the end of a
/// job. Returns the job's time per iteration (max over ranks) per policy, computed here, in the
/// order the iterations ran.
fn generate(
    dir: &Path,
    exp: &str,
    ranks: u32,
    iters: u64,
    policies: &[&str],
    scale: &[f64],
    seed: u64,
) -> Vec<Vec<f64>> {
    let mut rng = Rng(seed);
    let mut per_rank: Vec<Vec<Iteration>> = vec![Vec::new(); ranks as usize];
    let mut job: Vec<Vec<f64>> = vec![Vec::new(); policies.len()];
    for i in 0..iters {
        let p = (i % policies.len() as u64) as usize;
        let mut max = 0u64;
        for r in 0..ranks {
            let ns = (1_000_000.0 * scale[p] * (0.05 * rng.normal()).exp()) as u64;
            max = max.max(ns);
            per_rank[r as usize].push(row(i, policies[p], p % 2, ns, None));
        }
        job[p].push(max as f64);
    }
    for (r, rows) in per_rank.iter().enumerate() {
        write_record(dir, &header(exp, r as u32, ranks, policies), rows);
        write_summary(dir, exp, r as u32, policies, iters);
    }
    job
}

/// `v` in ascending order.
fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s
}

/// Type-7 quantile of a sorted sample, as NumPy computes it.
fn quantile(s: &[f64], p: f64) -> f64 {
    let h = (s.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(s.len() - 1);
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

/// U of x against y by counting pairs.
fn u_by_pairs(x: &[f64], y: &[f64]) -> f64 {
    let mut u = 0.0;
    for a in x {
        for b in y {
            if a > b {
                u += 1.0;
            } else if a == b {
                u += 0.5;
            }
        }
    }
    u
}

/// 95 % order-statistic interval of the median: [x(l), x(n−l+1)], l the largest with
/// P(Bin(n, ½) ≤ l − 1) ≤ 0.025, summing the binomial probabilities directly.
fn median_ci(s: &[f64]) -> (f64, f64) {
    let n = s.len();
    let mut pmf = 0.5f64.powi(n as i32);
    let mut cdf = 0.0;
    let mut l = 0;
    for k in 0..n {
        if cdf + pmf > 0.025 {
            break;
        }
        cdf += pmf;
        l = k + 1;
        pmf *= (n - k) as f64 / (k + 1) as f64;
    }
    (s[l - 1], s[n - l])
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

fn policy<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["experiments"][0]["policy_stats"].as_array().unwrap().iter().find(|p| p["policy"] == name).unwrap()
}

#[test]
fn a_known_difference_is_measured_and_significant() {
    let folder = tmp("known");
    let dir = folder.path();
    let job: Vec<Vec<f64>> =
        generate(dir, "known", 8, 400, &["A", "B"], &[1.0, 1.2], 7).iter().map(|v| sorted(v)).collect();
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
    let e = &j["experiments"][0];
    assert_eq!(e["ranks"], 8);
    assert_eq!(e["iterations_used"], 400);
    for (k, name) in ["A", "B"].iter().enumerate() {
        let s = &job[k];
        let p = policy(&j, name);
        assert_eq!(p["iterations"], 200);
        assert_eq!(p["median_ns"].as_f64().unwrap(), quantile(s, 0.5), "{name}");
        assert_eq!(p["p99_ns"].as_f64().unwrap(), quantile(s, 0.99), "{name}");
        assert_eq!(p["max_ns"].as_f64().unwrap(), s[s.len() - 1]);
        let mean = s.iter().sum::<f64>() / s.len() as f64;
        assert!(close(p["mean_ns"].as_f64().unwrap(), mean, 1e-12));
        let (q1, q3) = (quantile(s, 0.25), quantile(s, 0.75));
        assert!(close(p["qcd"].as_f64().unwrap(), (q3 - q1) / (q3 + q1), 1e-12));
        let (lo, hi) = median_ci(s);
        assert_eq!(p["median_ci_ns"], serde_json::json!([lo, hi]), "{name}");
        assert_eq!(p["decisions"], 8 * 200 * 3);
        assert_eq!(p["modes"][k]["share"], 1.0);
    }
    let b = &policy(&j, "B")["vs_first"];
    assert_eq!(b["u"].as_f64().unwrap(), u_by_pairs(&job[1], &job[0]));
    let ratio = b["ratio"].as_f64().unwrap();
    assert!(close(ratio, quantile(&job[1], 0.5) / quantile(&job[0], 0.5), 1e-12));
    let ci = [b["ratio_ci"][0].as_f64().unwrap(), b["ratio_ci"][1].as_f64().unwrap()];
    assert!(ci[0] < ratio && ratio < ci[1] && ci[0] < 1.2 && 1.2 < ci[1] && ci[1] - ci[0] < 0.05, "{ratio} {ci:?}");
    assert!(b["p"].as_f64().unwrap() < 1e-10 && b["significant"] == true, "{b}");
    // Seeded: the same report twice.
    let again = run(&[dir.to_str().unwrap(), "--json"]);
    assert_eq!(serde_json::from_slice::<Value>(&again.stdout).unwrap(), j);

    // The table says the same, rounded.
    let table = stdout(&run(&[dir.to_str().unwrap()]));
    assert!(table.contains("times in ms"), "{table}");
    for name in ["A", "B"] {
        let line = table.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap();
        let cells: Vec<&str> = line.split_whitespace().collect();
        let p = policy(&j, name);
        assert_eq!(cells[1], "200");
        for (cell, key) in [(2, "median_ns"), (4, "mean_ns"), (5, "p99_ns"), (6, "max_ns")] {
            let shown: f64 = cells[cell].parse().unwrap();
            let decimals = cells[cell].split('.').nth(1).map_or(0, str::len) as i32;
            let want = p[key].as_f64().unwrap() / 1e6;
            assert!((shown - want).abs() <= 0.5 * 10f64.powi(-decimals) + 1e-12, "{name} {key}: {shown} vs {want}");
        }
        if name == "B" {
            assert_eq!(cells[9], format!("{:.3}", p["vs_first"]["ratio"].as_f64().unwrap()));
            assert_eq!(cells[12], "yes");
        }
    }

    // And the CSV, exactly.
    let csv = stdout(&run(&[dir.to_str().unwrap(), "--csv"]));
    let mut lines = csv.lines();
    let cols: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r.len(), cols.len());
        let get = |c: &str| r[cols.iter().position(|x| *x == c).unwrap()];
        let p = policy(&j, get("policy"));
        for key in ["median_ns", "mean_ns", "p99_ns", "max_ns", "qcd"] {
            assert_eq!(get(key).parse::<f64>().unwrap(), p[key].as_f64().unwrap(), "{key}");
        }
        assert_eq!(get("iterations"), "200");
        assert_eq!(get("experiment"), "known");
    }
    let b_row = rows.iter().find(|r| r[1] == "B").unwrap();
    let get = |c: &str| b_row[cols.iter().position(|x| *x == c).unwrap()];
    assert_eq!(get("significant"), "true");
    assert_eq!(get("ratio").parse::<f64>().unwrap(), ratio);
    assert_eq!(get("bytes_share:ADAPTIVE3"), "1");
}

#[test]
fn identical_distributions_are_not_significant() {
    let folder = tmp("same");
    let dir = folder.path();
    // Under the null hypothesis each check below fails for about 5 % of seeds; this seed is one
    // of the other 95 % (seed 11 gives p = 0.079 for B but a ratio interval just above 1).
    let job = generate(dir, "same", 4, 600, &["A", "B", "C"], &[1.0, 1.0, 1.0], 12);
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
    for (k, name) in ["B", "C"].iter().enumerate() {
        let c = &policy(&j, name)["vs_first"];
        assert_eq!(c["u"].as_f64().unwrap(), u_by_pairs(&job[k + 1], &job[0]));
        assert!(c["p"].as_f64().unwrap() > 0.05 && c["significant"] == false, "{c}");
        assert!(c["ratio_ci"][0].as_f64().unwrap() < 1.0 && 1.0 < c["ratio_ci"][1].as_f64().unwrap(), "{c}");
        let d = &c["qcd_difference_ci"];
        assert!(d[0].as_f64().unwrap() < 0.0 && 0.0 < d[1].as_f64().unwrap(), "{c}");
        assert_eq!(c["alpha"], 0.025, "Bonferroni over two comparisons");
    }
}

/// A QCD too small for three decimals prints as `<0.001`, not as `0.000`, which would read as no
/// spread at all; an exact 0 stays `0.000`.
#[test]
fn a_tiny_spread_is_not_printed_as_none() {
    let folder = tmp("tiny-qcd");
    let dir = folder.path();
    // A: 1 ms give or take 0.5 µs (QCD about 0.00025); B: every iteration 2 ms exactly.
    let rows: Vec<Iteration> = (0..40)
        .map(|i| match i % 2 {
            0 => row(i, "A", 0, 1_000_000 + (i / 2 % 4) * 330, None),
            _ => row(i, "B", 1, 2_000_000, None),
        })
        .collect();
    write_record(dir, &header("tinyqcd", 0, 1, &["A", "B"]), &rows);
    let o = run(&[dir.to_str().unwrap()]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    let cells = |policy: &str| -> Vec<String> {
        let line = out.lines().find(|l| l.split_whitespace().next() == Some(policy)).expect("the policy's row");
        line.split_whitespace().map(String::from).collect()
    };
    let qcd_column =
        out.lines().find(|l| l.starts_with("policy ")).unwrap().split_whitespace().position(|c| c == "QCD");
    let qcd_column = qcd_column.expect("a QCD column");
    // "95% CI" is two words of the header and one cell of a row.
    assert_eq!(cells("A")[qcd_column - 1], "<0.001", "{out}");
    assert_eq!(cells("B")[qcd_column - 1], "0.000", "{out}");
}

/// Microsecond iterations of one rank (as `examples/iterations.c --bytes 8` makes): thousands of
/// them tell apart medians a few nanoseconds apart (p far below any threshold), less than the
/// clock's readings and the markers' own work vary by. The report repeats libaar.so's warning of
/// such short iterations, and calls a difference significant only when the ratio's interval lies
/// wholly beyond 1 ± 1%; the simulator's clock, which reads without cost, gets no warning.
#[test]
fn microsecond_iterations_are_warned_of_and_a_tiny_difference_is_not_significant() {
    let folder = tmp("short");
    let write = |dir: &Path, source: Source, a_ns: u64, b_ns: u64| {
        let mut rng = Rng(3);
        let rows: Vec<Iteration> = (0..4_000)
            .map(|i| {
                let (p, base) = if i % 2 == 0 { ("A", a_ns) } else { ("B", b_ns) };
                row(i, p, (i % 2) as usize, base + rng.next() % 7, None)
            })
            .collect();
        write_record(dir, &Header { source, ..header("s", 0, 1, &["A", "B"]) }, &rows);
    };
    let report = |dir: &Path| {
        let text = run(&[dir.to_str().unwrap()]);
        let json = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
        (stdout(&text), stderr(&text), json)
    };
    let short = |err: &str| err.lines().filter(|l| l.contains("its iterations last")).count();

    // 1522 vs 1530 ns: B is 0.5% slower, measurably and negligibly.
    let dir = folder.path().join("tiny");
    std::fs::create_dir(&dir).unwrap();
    write(&dir, Source::Job, 1522, 1530);
    let (out, err, j) = report(&dir);
    assert_eq!(short(&err), 1, "{err}");
    let said = err.lines().find(|l| l.contains("its iterations last")).unwrap();
    assert!(said.contains("last 1.5") && said.contains("µs (the median), timed on the monotonic clock"), "{said}");
    assert!(said.contains("Mark iterations of a millisecond or more"), "{said}");
    let c = &policy(&j, "B")["vs_first"];
    assert!(c["p"].as_f64().unwrap() < 1e-100, "{c}");
    let ci = [c["ratio_ci"][0].as_f64().unwrap(), c["ratio_ci"][1].as_f64().unwrap()];
    assert!(1.0 < ci[0] && ci[1] < 1.01, "{c}");
    assert!(c["significant"] == false && c["verdict"] == "below_margin", "{c}");
    let row_b = out.lines().find(|l| l.starts_with("B ")).unwrap();
    assert!(row_b.ends_with("  < 1%"), "{out}");
    assert!(out.contains("significant: p < 0.05 and the ratio's 95% CI wholly outside 0.990–1.010"), "{out}");

    // 5% slower is significant, short iterations or not.
    let dir = folder.path().join("clear");
    std::fs::create_dir(&dir).unwrap();
    write(&dir, Source::Job, 1522, 1600);
    let (out, err, j) = report(&dir);
    assert_eq!(short(&err), 1, "{err}");
    let c = &policy(&j, "B")["vs_first"];
    assert!(c["significant"] == true && c["verdict"] == "yes", "{c}");
    assert!(out.lines().find(|l| l.starts_with("B ")).unwrap().ends_with("  yes"), "{out}");

    // The simulator's clock reads without cost; a job's millisecond iterations are long enough.
    for (name, source, scale) in [("sim", Source::Sim, 1), ("long", Source::Job, 1000)] {
        let dir = folder.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        write(&dir, source, 1522 * scale, 1530 * scale);
        let (_, err, _) = report(&dir);
        assert_eq!(short(&err), 0, "{name}: {err}");
    }
}

/// Runs above and below the median of `in_order`, counted here as a person would: the values
/// equal to the median left out, a new run at every change of side.
fn runs_by_hand(in_order: &[f64]) -> usize {
    let mut sorted = in_order.to_vec();
    sorted.sort_by(f64::total_cmp);
    let m = quantile(&sorted, 0.5);
    let sides: Vec<bool> = in_order.iter().filter(|&&v| v != m).map(|&v| v > m).collect();
    1 + sides.windows(2).filter(|w| w[0] != w[1]).count()
}

/// The report's intervals treat iterations as independent: a policy whose slow iterations come
/// in spells (here B, slow through the middle third of the run) is named in a warning, and the
/// policies whose iterations are independent draws are not. B's intervals then come from a
/// bootstrap that resamples blocks as long as its spells are on average: its median's interval
/// is wider than the exact one for independent draws.
#[test]
fn a_policy_whose_slow_iterations_come_in_spells_is_warned_about() {
    let folder = tmp("spells");
    let dir = folder.path();
    let policies = ["A", "B", "C"];
    let mut rng = Rng(5);
    let (mut rows, mut in_order) = (Vec::new(), vec![Vec::new(); 3]);
    for i in 0..300u64 {
        let p = (i % 3) as usize;
        let spell = if p == 1 && (100..200).contains(&i) { 1.3 } else { 1.0 };
        let ns = (1_000_000.0 * spell * (0.05 * rng.normal()).exp()) as u64;
        rows.push(row(i, policies[p], p % 2, ns, None));
        in_order[p].push(ns as f64);
    }
    write_record(dir, &header("spells", 0, 1, &policies), &rows);
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let j = json_of(&o);
    for (k, name) in policies.iter().enumerate() {
        let ind = &policy(&j, name)["independence"];
        assert_eq!(ind["runs"].as_u64().unwrap() as usize, runs_by_hand(&in_order[k]), "{name}: {ind}");
    }
    let b = &policy(&j, "B")["independence"];
    assert!(b["z"].as_f64().unwrap() < -4.0 && b["p"].as_f64().unwrap() < 1e-4, "{b}");
    let warnings: Vec<&str> = j["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    let spells: Vec<&&str> = warnings.iter().filter(|w| w.contains("iterations are not independent in time")).collect();
    assert_eq!(spells.len(), 1, "{warnings:?}");
    assert!(spells[0].contains("B's iterations"), "{spells:?}");
    // B's bootstrap draws blocks of ⌈n / runs⌉ iterations; A's and C's draw one at a time, and
    // their medians' intervals are the exact ones.
    let runs_b = runs_by_hand(&in_order[1]);
    let block = 100usize.div_ceil(runs_b).max(2);
    assert!(block >= 3, "spells longer than independent draws' runs of about 2: {runs_b} runs");
    assert!(spells[0].contains(&format!("blocks of {block} consecutive iterations")), "{spells:?}");
    for (k, name) in policies.iter().enumerate() {
        let p = policy(&j, name);
        let ci = [p["median_ci_ns"][0].as_f64().unwrap(), p["median_ci_ns"][1].as_f64().unwrap()];
        let mut sorted = in_order[k].clone();
        sorted.sort_by(f64::total_cmp);
        let exact = median_ci(&sorted);
        if k == 1 {
            assert_eq!(p["bootstrap_block"], block, "{name}");
            assert!(p["median_ci_coverage"].is_null(), "a bootstrap's interval has no exact coverage");
            assert!(ci[1] - ci[0] > 1.5 * (exact.1 - exact.0), "{name}: {ci:?} against the exact {exact:?}");
        } else {
            assert_eq!(p["bootstrap_block"], 1, "{name}");
            assert_eq!(ci, [exact.0, exact.1], "{name}");
        }
    }
    // The CSV carries the block lengths too.
    let csv = stdout(&run(&[dir.to_str().unwrap(), "--csv"]));
    let cols: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = cols.iter().position(|c| *c == "bootstrap_block").unwrap();
    let blocks: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(at).unwrap()).collect();
    assert_eq!(blocks, ["1", block.to_string().as_str(), "1"], "{csv}");
    // The text report says it too, on stderr with the other warnings, and in its notes.
    let text = run(&[dir.to_str().unwrap()]);
    assert!(stderr(&text).contains("B's iterations are not independent in time"), "{}", stderr(&text));
    assert!(
        stdout(&text).contains(&format!("for B (blocks of {block}): every interval by a bootstrap")),
        "{}",
        stdout(&text)
    );
}

/// `--pool`: the same A/B experiment run in three jobs, each on a machine of its own speed, is
/// also reported as one. Its figures are those of the three jobs' iterations together, computed
/// here; an experiment with other policies is left out with a warning; a pooled report has no
/// per-rank figures (rank r of one job is not the node of rank r in another). Each job is a
/// stratum: its iterations are judged for spells against its own median (the jobs' speeds are
/// no spell) and resampled apart from the other jobs', so the ratio's interval is narrower than
/// one that lets the mix of jobs vary, and covers the 1.1 the jobs were made with.
#[test]
fn experiments_of_several_jobs_are_pooled_into_one() {
    let folder = tmp("pool");
    let dir = folder.path();
    let policies = ["A", "B"];
    let (mut all, mut jobs): (Vec<Vec<f64>>, Vec<Vec<Vec<f64>>>) = (vec![Vec::new(); 2], Vec::new());
    for (k, speed) in [1.0, 1.2, 0.9].into_iter().enumerate() {
        let job = generate(dir, &format!("job{k}"), 2, 40, &policies, &[speed, 1.1 * speed], 30 + k as u64);
        for p in 0..2 {
            all[p].extend(&job[p]);
        }
        jobs.push(job);
    }
    generate(dir, "other", 2, 20, &["C", "D"], &[1.0, 1.0], 9);
    for v in &mut all {
        v.sort_by(f64::total_cmp);
    }
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json", "--pool"]));
    let experiments = j["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 5, "four experiments and the pooled one");
    let pooled = &experiments[4];
    let mut from: Vec<&str> = pooled["pooled_from"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    from.sort();
    assert_eq!(from, ["job0", "job1", "job2"]);
    assert_eq!(pooled["experiment"], "3 experiments pooled");
    assert_eq!(pooled["iterations_used"], 120);
    assert!(
        pooled["per_rank"].as_array().unwrap().is_empty() && pooled["slowest_ranks"].as_array().unwrap().is_empty()
    );
    let stats = pooled["policy_stats"].as_array().unwrap();
    for (p, st) in stats.iter().enumerate() {
        assert_eq!(st["iterations"], 60, "{st}");
        assert_eq!(st["median_ns"].as_f64().unwrap(), quantile(&all[p], 0.5), "{st}");
        assert_eq!(st["rank_iterations"], 120, "2 ranks x 60 iterations: {st}");
    }
    let ratio = stats[1]["vs_first"]["ratio"].as_f64().unwrap();
    assert!(close(ratio, quantile(&all[1], 0.5) / quantile(&all[0], 0.5), 1e-12), "{ratio}");
    assert!(experiments[..4].iter().all(|e| e.get("pooled_from").is_none()));
    let warnings: Vec<&str> = j["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    let left_out: Vec<&&str> = warnings.iter().filter(|w| w.starts_with("--pool: experiment \"other\"")).collect();
    assert_eq!(left_out.len(), 1, "{warnings:?}");
    assert!(left_out[0].contains("has the policies C,D") && left_out[0].contains("not pooled"), "{left_out:?}");
    // The jobs' speeds differ, but each job is judged against its own median: no spells, and the
    // runs are each job's, summed.
    assert!(!warnings.iter().any(|w| w.starts_with("3 experiments pooled: ")), "{warnings:?}");
    for (p, st) in stats.iter().enumerate() {
        assert_eq!(st["bootstrap_block"], 1, "{st}");
        let runs: usize = jobs.iter().map(|job| runs_by_hand(&job[p])).sum();
        assert_eq!(st["independence"]["runs"].as_u64().unwrap() as usize, runs, "{st}");
        assert!(st["independence"]["p"].as_f64().unwrap() > 0.05, "{st}");
        assert!(st["median_ci_coverage"].is_null(), "a stratified bootstrap's interval: {st}");
    }
    // The test compares B with A within each job (van Elteren), computed here; z with the
    // continuity correction of half T's finest step, ½ · min 1/(N + 1). Jobs of 20 and 20
    // iterations are few enough for p to count every split of them.
    let (mut u, mut t, mut mean, mut var, mut step) = (0.0, 0.0, 0.0, 0.0, f64::INFINITY);
    for job in &jobs {
        let (m, n) = (job[1].len() as f64, job[0].len() as f64);
        let (us, w) = (u_by_pairs(&job[1], &job[0]), 1.0 / (m + n + 1.0));
        u += us;
        t += w * us;
        mean += w * m * n / 2.0;
        var += w * w * m * n * (m + n + 1.0) / 12.0;
        step = step.min(w);
    }
    let vs = &stats[1]["vs_first"];
    assert_eq!(vs["u"].as_f64().unwrap(), u, "{vs}");
    assert!(t > mean && close(vs["z"].as_f64().unwrap(), (t - mean - step / 2.0) / var.sqrt(), 1e-9), "{vs}");
    assert_eq!(vs["p_exact"], true, "{vs}");
    assert!(vs["significant"] == true, "B is 1.1 x A in every job: {vs}");
    // Resampled job by job, the ratio's interval is narrower than that of the same iterations
    // read as one job, where the jobs' speeds are spells and blocks of them are resampled.
    let ci = |st: &serde_json::Value| [st["ratio_ci"][0].as_f64().unwrap(), st["ratio_ci"][1].as_f64().unwrap()];
    let pooled_ci = ci(&stats[1]["vs_first"]);
    assert!(pooled_ci[0] < 1.1 && 1.1 < pooled_ci[1], "{pooled_ci:?}");
    let one = tmp("pool-as-one");
    let mut offset = 0;
    let mut rows = vec![Vec::new(); 2];
    let mut by_index = Vec::new();
    for job in &jobs {
        for i in 0..40u64 {
            let p = (i % 2) as usize;
            by_index.push((offset + i, p, job[p][(i / 2) as usize]));
        }
        offset += 40;
    }
    for &(i, p, v) in &by_index {
        rows[0].push(row(i, policies[p], p % 2, v as u64, None));
    }
    write_record(one.path(), &header("as-one", 0, 1, &policies), &rows[0]);
    let j1 = json_of(&run(&[one.path().to_str().unwrap(), "--json"]));
    assert_eq!(policy(&j1, "B")["median_ns"], stats[1]["median_ns"], "the same iterations");
    let mixed_ci = ci(&policy(&j1, "B")["vs_first"]);
    assert!(pooled_ci[1] - pooled_ci[0] < mixed_ci[1] - mixed_ci[0], "pooled {pooled_ci:?}, as one job {mixed_ci:?}");
    // The text report: the pooled table last, without a per-rank table.
    let text = stdout(&run(&[dir.to_str().unwrap(), "--pool"]));
    let last = text.split("experiment \"").last().unwrap();
    assert!(last.contains("3 experiments pooled (--pool"), "{text}");
    let pooled_text = &text[text.find("3 experiments pooled (--pool").unwrap()..];
    assert!(!pooled_text.contains("per rank:"), "{pooled_text}");
    // Its note names the test its p comes from (van Elteren's, within each job), not the
    // Mann-Whitney U of one job's table, which each job's own table names.
    assert!(pooled_text.contains("p: two-sided van Elteren stratified rank-sum test against A"), "{pooled_text}");
    assert!(!pooled_text.contains("Mann-Whitney"), "{pooled_text}");
    assert_eq!(text.matches("p: two-sided Mann-Whitney U against A").count(), 3, "{text}");
    assert_eq!(text.matches("per rank:").count(), 4, "{text}");
    // Without --pool, the experiments alone.
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
    assert_eq!(j["experiments"].as_array().unwrap().len(), 4);
    // One experiment alone has nothing to pool with: a warning, and its own report.
    let one = tmp("pool-one");
    generate(one.path(), "job", 2, 20, &policies, &[1.0, 1.1], 3);
    let j = json_of(&run(&[one.path().to_str().unwrap(), "--json", "--pool"]));
    assert_eq!(j["experiments"].as_array().unwrap().len(), 1);
    assert!(j["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("nothing pooled")), "{j}");
}

/// `--pool` places each job's iteration indices after the jobs' before it: a job whose indices
/// are near 2^64 (a damaged row) would wrap onto another job's. It is left out, its file named.
#[test]
fn a_job_whose_indices_cannot_follow_the_others_is_not_pooled() {
    let folder = tmp("pool-wrap");
    let dir = folder.path();
    let pol = ["A", "B"];
    let rows = |first: u64| -> Vec<Iteration> {
        (0..10u64)
            .map(|k| Iteration { i: first + k, ..row(k, pol[k as usize % 2], k as usize % 2, 1_000_000 + k, None) })
            .collect()
    };
    write_record(dir, &header("job0", 0, 1, &pol), &rows(0));
    let damaged = write_record(dir, &header("job1", 0, 1, &pol), &rows(u64::MAX - 9));
    write_record(dir, &header("job2", 0, 1, &pol), &rows(0));
    let o = run(&[dir.to_str().unwrap(), "--json", "--pool"]);
    let j = json_of(&o);
    let pooled = j["experiments"].as_array().unwrap().iter().find(|e| e.get("pooled_from").is_some()).unwrap();
    assert_eq!(pooled["pooled_from"], serde_json::json!(["job0", "job2"]), "{}", stderr(&o));
    assert_eq!(pooled["iterations_used"], 20, "{pooled}");
    let said =
        format!("aar: --pool: experiment \"job1\" has iteration index {} in {} (rank 0)", u64::MAX, damaged.display());
    assert!(stderr(&o).contains(&said), "{}", stderr(&o));
}

/// A header's `nranks` 0 (no writer writes it: a run has a rank at least) is read as not known,
/// not as a run of no ranks outside which every rank lies; the file is named.
#[test]
fn a_header_of_0_ranks_is_read_as_not_known() {
    let folder = tmp("nranks-0");
    let dir = folder.path();
    let pol = ["A", "B"];
    let rows: Vec<Iteration> = (0..10).map(|i| row(i, pol[i as usize % 2], 0, 1_000_000 + i, None)).collect();
    let first = write_record(dir, &header("z", 0, 0, &pol), &rows);
    write_record(dir, &header("z", 1, 0, &pol), &rows);
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    let e = &json_of(&o)["experiments"][0];
    assert_eq!(e["ranks"], 2, "both ranks read: {err}");
    assert!(!err.contains("outside"), "{err}");
    let said = format!("aar: {} (and 1 more): their headers give \"nranks\": 0", first.display());
    assert!(err.contains(&said), "{err}");
    // Summary records alone: a job of ranks 0 and 1, not "2 of 0 ranks".
    let summaries = tmp("nranks-0-summaries");
    for rank in 0..2u32 {
        let rec = serde_json::json!({
            "format": "aar-record/2", "job_id": "5", "rank": rank, "nranks": 0, "pid": 10 + rank, "host": "h",
            "policy_at_exit": "static",
        });
        std::fs::write(summaries.path().join(format!("aar.5.{rank}.{}.json", 10 + rank)), rec.to_string()).unwrap();
    }
    let o = run(&[summaries.path().to_str().unwrap()]);
    assert!(stdout(&o).starts_with("job \"5\": 2 summary records, ranks 0-1 (2 of them) on 1 host"), "{}", stdout(&o));
}

/// An experiment whose iterations are all left out (here by --skip; its own warning says so)
/// adds nothing to the pool: it is neither named among those pooled nor counted, and with one
/// experiment left there is nothing to pool (the pooled table once repeated that one's figures
/// under "2 experiments pooled").
#[test]
fn an_experiment_without_usable_iterations_is_not_pooled() {
    let folder = tmp("pool-unusable");
    let dir = folder.path();
    let policies = ["A", "B"];
    for (k, speed) in [1.0, 1.2].into_iter().enumerate() {
        generate(dir, &format!("job{k}"), 2, 40, &policies, &[speed, 1.1 * speed], 50 + k as u64);
    }
    generate(dir, "short", 2, 4, &policies, &[1.0, 1.1], 52);
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json", "--pool", "--skip", "10"]));
    let experiments = j["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 3, "two experiments and the pooled one: {j}");
    let pooled = &experiments[2];
    let mut from: Vec<&str> = pooled["pooled_from"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    from.sort();
    assert_eq!(from, ["job0", "job1"], "{pooled}");
    assert_eq!(pooled["experiment"], "2 experiments pooled");
    assert_eq!(pooled["iterations_used"], 60);
    assert_eq!(pooled["warmup_rows"], 40, "2 ranks x 10 iterations of each pooled job: {pooled}");
    // One job and one without usable iterations: nothing to pool.
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::create_dir(dir).unwrap();
    generate(dir, "job0", 2, 40, &policies, &[1.0, 1.1], 50);
    generate(dir, "short", 2, 4, &policies, &[1.0, 1.1], 52);
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json", "--pool", "--skip", "10"]));
    let experiments = j["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 1, "job0 alone: {j}");
    assert_eq!(experiments[0]["experiment"], "job0");
    let warnings = j["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().starts_with("--pool: fewer than two experiments")), "{j}");
}

/// A policy of the schedule that never ran has no figures, and no independence verdict, but the
/// report goes on (the runs test once took a median of nothing).
#[test]
fn a_policy_without_iterations_is_reported_empty() {
    let folder = tmp("empty-policy");
    let dir = folder.path();
    let rows: Vec<Iteration> = (0..20).map(|i| row(i, "A", 0, 1_000_000 + i * 1000, None)).collect();
    write_record(dir, &header("empty", 0, 1, &["A", "B"]), &rows);
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
    assert_eq!(policy(&j, "B")["iterations"], 0);
    assert!(policy(&j, "B")["independence"].is_null());
    assert_eq!(policy(&j, "A")["independence"]["runs"], 2, "20 rising iterations: one run below, one above");
}

/// A table where no test was run (one policy, or no other policy with iterations) says so in its
/// note on p, rather than naming a test and an approximation that were not used.
#[test]
fn the_note_on_p_says_no_test_was_run_where_none_was() {
    let folder = tmp("no-test");
    let dir = folder.path();
    let rows: Vec<Iteration> = (0..20).map(|i| row(i, "A", 0, 1_000_000 + i * 1000, None)).collect();
    write_record(dir, &header("one", 0, 1, &["A"]), &rows);
    write_record(dir, &header("empty", 0, 1, &["A", "B"]), &rows);
    let o = run(&[dir.to_str().unwrap()]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    let said: Vec<&str> = out.lines().map(str::trim).filter(|l| l.starts_with("p: ")).collect();
    assert_eq!(said, ["p: none, no test was run (a test needs iterations of A and of another policy)"; 2], "{out}");
    // Where a test was run, the note names it (few iterations: the exact p).
    let two: Vec<Iteration> =
        (0..8).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000 + i * 1000, None)).collect();
    write_record(dir, &header("two", 0, 1, &["A", "B"]), &two);
    let out = stdout(&run(&[record_path(dir, "two", 0).to_str().unwrap()]));
    assert!(
        out.contains("p: two-sided Mann-Whitney U against A (exact: every split of the iterations counted)"),
        "{out}"
    );
}

/// Change the header (first line) of the record at `path` with `edit`, its rows kept.
fn edit_header(path: &Path, edit: impl FnOnce(&mut Value)) {
    let text = std::fs::read_to_string(path).unwrap();
    let (head, rows) = text.split_once('\n').unwrap();
    let mut value: Value = serde_json::from_str(head).unwrap();
    edit(&mut value);
    std::fs::write(path, format!("{value}\n{rows}")).unwrap();
}

/// A rank's record whose header lacks its rank, or gives another than its name (edited, damaged
/// or renamed: libaar.so and aar sim write the same rank in both), is read as the rank its name
/// gives, and said, naming the file, what was done and how to mend it: not taken for a process
/// without a rank (an experiment of its own), nor for a copy of the other rank's record while its
/// own rank is named missing.
#[test]
fn a_ranks_record_whose_header_lacks_its_rank_or_gives_another_is_read_as_its_names_and_said() {
    fn no_rank(v: &mut Value) {
        v.as_object_mut().unwrap().remove("rank");
    }
    fn other_rank(v: &mut Value) {
        v["rank"] = 2.into();
    }
    let cases = [
        (
            "no-rank-field",
            no_rank as fn(&mut Value),
            "its header gives no \"rank\", which libaar.so and aar sim write: read as rank 1, the rank its name \
             gives (the record was edited or damaged: put \"rank\": 1 in its first line, or run the job again for \
             a clean one)",
        ),
        (
            "other-rank-field",
            other_rank,
            "its header gives rank 2 and its name rank 1, which libaar.so and aar sim write the same: read as rank \
             1, the rank its name gives, as the summary record beside it is (the record was edited, or renamed: \
             give it the name or the \"rank\" of its first line that is right, or run the job again for a clean \
             one)",
        ),
    ];
    for (name, edit, message) in cases {
        let folder = tmp(name);
        let dir = folder.path();
        generate(dir, "r", 3, 20, &["A", "B"], &[1.0, 1.1], 7);
        let path = record_path(dir, "r", 1);
        edit_header(&path, edit);
        let o = run(&[dir.to_str().unwrap(), "--json"]);
        let err = stderr(&o);
        assert_eq!(mentions(&err, &path), 1, "{name}: {err}");
        let said = err.lines().find(|l| l.contains(path.to_str().unwrap())).unwrap();
        assert_eq!(said, format!("aar: {}: {message}", path.display()), "{name}");
        let j = json_of(&o);
        let experiments = j["experiments"].as_array().unwrap();
        assert_eq!(experiments.len(), 1, "{name}: {j}");
        assert_eq!(experiments[0]["ranks"], 3, "{name}: {j}");
        assert_eq!(j["warnings"].as_array().unwrap().len(), 1, "{name}: {j}");
    }
}

/// One iteration per policy has no spread: its intervals are not a point that looks certain
/// ("1.000–1.000") but say why there are none (n=1), and a warning says how to get them.
#[test]
fn one_iteration_per_policy_gives_no_interval_and_says_why() {
    let folder = tmp("n1");
    let dir = folder.path();
    let rows = [row(0, "A", 0, 1_000_000, None), row(1, "B", 1, 1_000_000, None)];
    write_record(dir, &header("n1", 0, 1, &["A", "B"]), &rows);
    let o = run(&[dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    let b = table.lines().find(|l| l.starts_with("B ")).unwrap();
    assert!(!b.contains('–') && b.contains("n=1"), "{table}");
    let a = table.lines().find(|l| l.starts_with("A ")).unwrap();
    assert!(a.contains("n=1"), "{table}");
    let err = stderr(&o);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("1 iteration each")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("experiment \"n1\"") && said[0].contains("Run more iterations"), "{err}");
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
    let b = policy(&j, "B");
    assert!(b["vs_first"]["ratio_ci"].is_null() && b["median_ci_ns"].is_null() && b["qcd"].is_null(), "{b}");
    assert_eq!(b["vs_first"]["ratio"], 1.0);
}

/// Type-7 QCD of a sorted sample, as the test computes it.
fn qcd(s: &[f64]) -> f64 {
    let (q1, q3) = (quantile(s, 0.25), quantile(s, 0.75));
    (q3 - q1) / (q3 + q1)
}

#[test]
fn a_wider_spread_is_told_from_sampling_noise() {
    let folder = tmp("spread");
    let dir = folder.path();
    // One rank, so the job's times are the rows' own: A and C about 1 % apart iteration to
    // iteration, B five times as much; all three with the same median.
    let (policies, sigma) = (["A", "B", "C"], [0.01, 0.05, 0.01]);
    let mut rng = Rng(21);
    let mut job: Vec<Vec<f64>> = vec![Vec::new(); 3];
    let rows: Vec<Iteration> = (0..600u64)
        .map(|i| {
            let p = (i % 3) as usize;
            let ns = (1_000_000.0 * (1.0 + sigma[p] * rng.normal())) as u64;
            job[p].push(ns as f64);
            row(i, policies[p], 0, ns, None)
        })
        .collect();
    for v in &mut job {
        v.sort_by(f64::total_cmp);
    }
    write_record(dir, &header("spread", 0, 1, &policies), &rows);
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
    assert!(j["settings"]["qcd_difference_ci"].as_str().unwrap().contains("bootstrap"), "{}", j["settings"]);
    let a = policy(&j, "A");
    assert!(a["vs_first"].is_null());
    let ci = |name: &str| {
        let c = &policy(&j, name)["vs_first"];
        let d = c["qcd_difference"].as_f64().unwrap();
        let k = policies.iter().position(|p| *p == name).unwrap();
        assert!(close(d, qcd(&job[k]) - qcd(&job[0]), 1e-9), "{name}: {c}");
        let ci = [c["qcd_difference_ci"][0].as_f64().unwrap(), c["qcd_difference_ci"][1].as_f64().unwrap()];
        assert!(ci[0] < d && d < ci[1], "{name}: {c}");
        (d, ci)
    };
    // True QCDs 0.0067 and 0.034 (0.6745·σ for a normal): B is noisier, beyond doubt.
    let (db, b) = ci("B");
    assert!(0.0 < b[0] && b[1] < 0.05, "B: {db} {b:?}");
    let (dc, c) = ci("C");
    assert!(c[0] < 0.0 && 0.0 < c[1], "C spreads as A does: {dc} {c:?}");

    // The CSV carries the same numbers; nothing for the first policy.
    let csv = stdout(&run(&[dir.to_str().unwrap(), "--csv"]));
    let mut lines = csv.lines();
    let cols: Vec<&str> = lines.next().unwrap().split(',').collect();
    for line in lines {
        let r: Vec<&str> = line.split(',').collect();
        assert_eq!(r.len(), cols.len());
        let get = |c: &str| r[cols.iter().position(|x| *x == c).unwrap()];
        let want = match get("policy") {
            "A" => None,
            "B" => Some((db, b)),
            _ => Some((dc, c)),
        };
        let got = (!get("qcd_diff").is_empty()).then(|| {
            let f = |c: &str| get(c).parse::<f64>().unwrap();
            (f("qcd_diff"), [f("qcd_diff_ci_low"), f("qcd_diff_ci_high")])
        });
        assert_eq!(got, want, "{line}");
    }

    // The table and the page show the interval rounded to 4 decimals, after the QCD.
    let shown = |(_, ci): (f64, [f64; 2])| format!("{:.4}–{:.4}", ci[0], ci[1]);
    let table = stdout(&run(&[dir.to_str().unwrap()]));
    let header: Vec<&str> = table.lines().find(|l| l.starts_with("policy ")).unwrap().split("  ").collect();
    assert!(header.iter().map(|h| h.trim()).any(|h| h == "QCD Δ 95% CI"), "{table}");
    for (name, want) in [("A", "-".to_string()), ("B", shown((db, b))), ("C", shown((dc, c)))] {
        let line = table.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap();
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[7], format!("{:.3}", policy(&j, name)["qcd"].as_f64().unwrap()), "{line}");
        assert_eq!(cells[8], want, "{line}");
    }
    assert!(table.contains("QCD Δ 95% CI: of QCD - QCD of A"), "{table}");
    let page = dir.join("report.html");
    let o = run(&[dir.to_str().unwrap(), "--html", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<th>QCD</th><th>QCD Δ 95% CI</th>"), "{html}");
    assert!(html.contains(&format!("<td>{}</td>", shown((db, b)))), "{html}");
}

#[test]
fn textbook_mann_whitney_example() {
    // x = [19, 22, 16, 29, 24] against y = [20, 11, 17, 12]: U = 17, z = 1.5922 (normal approximation
    // with continuity correction, as SciPy's method="asymptotic"); p exact: U ≥ 17 or ≤ 3 in 14 of
    // the C(9, 4) = 126 splits (SciPy's method="exact": 0.1111).
    let folder = tmp("textbook");
    let dir = folder.path();
    let y = [20u64, 11, 17, 12];
    let x = [19u64, 22, 16, 29, 24];
    let mut rows = Vec::new();
    for (i, ns) in y.iter().enumerate() {
        rows.push(row(i as u64, "Y", 0, *ns * 1000, None));
    }
    for (i, ns) in x.iter().enumerate() {
        rows.push(row(10 + i as u64, "X", 1, *ns * 1000, None));
    }
    write_record(dir, &header("tb", 0, 1, &["Y", "X"]), &rows);
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
    let c = &policy(&j, "X")["vs_first"];
    assert_eq!(c["u"], 17.0);
    assert!((c["z"].as_f64().unwrap() - 1.592_168).abs() < 1e-5, "{c}");
    assert!((c["p"].as_f64().unwrap() - 14.0 / 126.0).abs() < 1e-12 && c["p_exact"] == true, "{c}");
    assert_eq!(c["significant"], false);
    // n = 4 and 5: too few iterations for a 95 % interval of the median, or of the ratio.
    assert!(policy(&j, "X")["median_ci_ns"].is_null());
    assert!(c["ratio_ci"].is_null() && c["qcd_difference_ci"].is_null(), "{c}");
}

/// Two jobs of two iterations of each policy, B slower than A in both: 2 of the 36 splits of
/// the two jobs are that extreme, p = 0.056, not significant. The normal approximation, without
/// a continuity correction, said p = 0.0285, and a bootstrap gave the ratio an interval from 4
/// iterations: "yes". The ratio's interval needs 6 iterations of each; without one, a small p
/// could say no more than "maybe".
#[test]
fn tiny_pooled_jobs_get_the_exact_p_and_no_ratio_interval() {
    let folder = tmp("tiny-pool");
    let dir = folder.path();
    for (job, speed) in [("job0", 1.0), ("job1", 1.3)] {
        let rows: Vec<Iteration> = (0..4u64)
            .map(|i| {
                let (policy, slow) = if i % 2 == 0 { ("A", 1.0) } else { ("B", 1.2) };
                row(i, policy, (i % 2) as usize, (1_000_000.0 * speed * slow * (1.0 + 0.01 * i as f64)) as u64, None)
            })
            .collect();
        write_record(dir, &header(job, 0, 1, &["A", "B"]), &rows);
    }
    let o = run(&[dir.to_str().unwrap(), "--json", "--pool"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    let pooled = j["experiments"].as_array().unwrap().iter().find(|e| e.get("pooled_from").is_some()).unwrap();
    let b = pooled["policy_stats"].as_array().unwrap().iter().find(|p| p["policy"] == "B").unwrap();
    let c = &b["vs_first"];
    assert!((c["p"].as_f64().unwrap() - 2.0 / 36.0).abs() < 1e-12 && c["p_exact"] == true, "{c}");
    assert!(c["ratio_ci"].is_null() && c["verdict"] == "no", "{c}");
    let table = stdout(&run(&[dir.to_str().unwrap(), "--pool"]));
    let pooled_table = &table[table.find("2 experiments pooled").unwrap()..];
    let b = pooled_table.lines().find(|l| l.starts_with("B ")).unwrap();
    let cells: Vec<&str> = b.split_whitespace().collect();
    assert_eq!((cells[10], cells[11], cells[12]), ("n=4", "0.0556", "no"), "{b}\n{table}");
    assert!(pooled_table.contains("exact: every split of the iterations counted"), "{table}");
}

#[test]
fn congestion_impact_and_rank_outliers() {
    let folder = tmp("gpcnet");
    let dir = folder.path();
    let mut want: [[Vec<f64>; 2]; 2] = Default::default(); // [policy][isolated, congested]
    let mut rng = Rng(5);
    let mut rows: Vec<Vec<Iteration>> = vec![Vec::new(); 6];
    for i in 0..240u64 {
        let p = (i % 2) as usize;
        let congested = (i / 40) % 3 == 2;
        let label = if congested { "congested" } else { "isolated" };
        let factor = if congested { [1.8, 1.3][p] } else { 1.0 };
        let mut max = 0;
        for (r, rank_rows) in rows.iter_mut().enumerate() {
            let slow = if r == 3 { 1.5 } else { 1.0 };
            let ns = (50_000.0 * factor * slow * (1.0 + 0.01 * rng.normal())) as u64;
            max = max.max(ns);
            rank_rows.push(row(i, ["A", "B"][p], p, ns, Some(label)));
        }
        want[p][congested as usize].push(max as f64);
    }
    for (r, rr) in rows.iter().enumerate() {
        write_record(dir, &header("g", r as u32, 6, &["A", "B"]), rr);
    }
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
    let e = &j["experiments"][0];
    for (p, name) in ["A", "B"].iter().enumerate() {
        let c = e["congestion"].as_array().unwrap().iter().find(|c| c["policy"] == *name).unwrap();
        let [iso, con] = &mut want[p];
        iso.sort_by(f64::total_cmp);
        con.sort_by(f64::total_cmp);
        assert_eq!(c["isolated"], 80);
        assert_eq!(c["congested"], 40);
        let im = quantile(iso, 0.5);
        let cm = quantile(con, 0.5);
        assert!(close(c["impact_median"].as_f64().unwrap(), cm / im, 1e-12));
        assert!(close(c["impact_p99"].as_f64().unwrap(), quantile(con, 0.99) / quantile(iso, 0.99), 1e-12));
        let r = &e["per_rank"][p];
        assert_eq!(r["outliers"].as_array().unwrap().len(), 1, "{r}");
        assert_eq!(r["outliers"][0]["rank"], 3);
        assert_eq!(r["slowest_rank"], 3);
    }
    assert!(close(e["congestion"][0]["impact_median"].as_f64().unwrap(), 1.8, 0.02));
    assert_eq!(e["slowest_ranks"][0]["rank"], 3);
    assert_eq!(e["slowest_ranks"][0]["iterations"], 240);
    let table = stdout(&run(&[dir.to_str().unwrap()]));
    assert!(table.contains("congestion impact") && table.contains("rank 3 ("), "{table}");
}

/// The congestion impact is a mean-like ratio of the table and has its rule: a value above 0 that
/// would round to 0.000 is `<0.001`, not no impact; a huge one (a damaged record's) is in exponent
/// form, not a run of digits. The CSV keeps the full numbers, as in its other columns.
#[test]
fn a_tiny_or_huge_congestion_impact_is_shown_as_the_means_are() {
    let folder = tmp("impact");
    let dir = folder.path();
    // A: isolated 5 ms, congested 1 ns (impact 2e-7); B: isolated 1 ns, congested 2 ms (2e6).
    let rows: Vec<Iteration> = (0..48u64)
        .map(|i| {
            let p = (i % 2) as usize;
            let congested = (i / 4) % 2 == 1;
            let ns = match (p, congested) {
                (0, false) => 5_000_000,
                (1, true) => 2_000_000,
                _ => 1,
            };
            row(i, ["A", "B"][p], p, ns, Some(if congested { "congested" } else { "isolated" }))
        })
        .collect();
    write_record(dir, &header("impact", 0, 1, &["A", "B"]), &rows);
    let table = stdout(&run(&[dir.to_str().unwrap()]));
    let section: Vec<&str> =
        table.lines().skip_while(|l| !l.starts_with("congestion impact")).skip(2).take(2).collect();
    let impact = |name: &str| {
        let line = section.iter().find(|l| l.split_whitespace().next() == Some(name)).expect(name);
        let cells: Vec<&str> = line.split_whitespace().collect();
        (cells[5].to_string(), cells[8].to_string())
    };
    assert_eq!(impact("A"), ("<0.001".into(), "<0.001".into()), "{table}");
    assert_eq!(impact("B"), ("2.000e6".into(), "2.000e6".into()), "{table}");
    let csv = stdout(&run(&[dir.to_str().unwrap(), "--csv"]));
    let cols: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = cols.iter().position(|c| *c == "impact_median").unwrap();
    let impacts: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(at).unwrap()).collect();
    assert_eq!(impacts, ["0.0000002", "2000000"], "{csv}");
}

/// A ratio of medians and its interval follow the means' rule too: one too small for three
/// decimals is `<0.001`, not `0.000` (a policy that did no work would read as one that took
/// none), and a huge one is in exponent form, not a run of digits.
#[test]
fn a_tiny_or_huge_ratio_of_medians_is_shown_as_the_means_are() {
    let folder = tmp("ratio");
    let dir = folder.path();
    // A: 50 µs; B: 1 ns (ratio 2e-5); C: 100 s (ratio 2e6).
    let rows: Vec<Iteration> = (0..48u64)
        .map(|i| {
            let p = (i % 3) as usize;
            row(i, ["A", "B", "C"][p], p % 2, [50_000, 1, 100_000_000_000][p], None)
        })
        .collect();
    write_record(dir, &header("ratio", 0, 1, &["A", "B", "C"]), &rows);
    let table = stdout(&run(&[dir.to_str().unwrap()]));
    let ratio = |name: &str| {
        let line = table.lines().find(|l| l.split_whitespace().next() == Some(name)).expect(name);
        let cells: Vec<&str> = line.split_whitespace().collect();
        (cells[9].to_string(), cells[10].to_string())
    };
    assert_eq!(ratio("B"), ("<0.001".into(), "<0.001–<0.001".into()), "{table}");
    assert_eq!(ratio("C"), ("2.000e6".into(), "2.000e6–2.000e6".into()), "{table}");
}

/// Lines of stderr that name `file`.
fn mentions(err: &str, file: &Path) -> usize {
    let name = file.file_name().unwrap().to_str().unwrap();
    err.lines().filter(|l| l.contains(name)).count()
}

#[test]
fn hostile_files_get_one_warning_each_and_the_rest_is_reported() {
    let folder = tmp("hostile");
    let dir = folder.path();
    generate(dir, "h", 3, 20, &["A", "B"], &[1.0, 1.1], 3);
    let named = |n: &str| dir.join(format!("{n}.iterations.jsonl"));
    let mut bad = Vec::new();
    // Rank 2, killed at its time limit: the last line is cut (in place of the one generated).
    let mut text = Vec::new();
    write_line(&mut text, &header("h", 2, 3, &["A", "B"])).unwrap();
    for i in 0..20 {
        write_line(&mut text, &row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).unwrap();
    }
    text.extend_from_slice(br#"{"i":20,"policy":"A","start_"#);
    let truncated = record_path(dir, "h", 2);
    std::fs::write(&truncated, &text).unwrap();
    for (name, content) in [
        ("empty", Vec::new()),
        ("binary", (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect()),
        ("hugeline", vec![b'{'; 3 << 20]),
        ("deep", format!("{}{}\n", "[".repeat(100_000), "]".repeat(100_000)).into_bytes()),
        ("version", b"{\"format\":\"aar-iterations/2\",\"rank\":0}\n".to_vec()),
        ("older", b"{\"format\":\"aar-iterations/0\",\"rank\":0}\n".to_vec()),
        ("foreign", b"{\"schema\":\"aar-sim-rank/1\",\"iterations\":[]}\n".to_vec()),
        ("cutheader", {
            // Stopped in its first write: half a header.
            let mut v = Vec::new();
            write_line(&mut v, &header("h", 7, 3, &["A", "B"])).unwrap();
            v.truncate(v.len() / 2);
            v
        }),
        ("headeronly", {
            let mut v = Vec::new();
            write_line(&mut v, &header("h", 5, 3, &["A", "B"])).unwrap();
            v
        }),
        ("nanish", {
            let mut v = Vec::new();
            write_line(&mut v, &header("h", 6, 3, &["A", "B"])).unwrap();
            v.extend_from_slice(b"{\"i\":0,\"policy\":\"A\",\"start_ns\":0,\"end_ns\":NaN,\"messages\":[0,0],\"bytes\":[0,0],\"decisions\":0,\"switches\":0}\n");
            v.extend_from_slice(b"{\"i\":1,\"policy\":\"B\",\"start_ns\":0,\"end_ns\":1e400,\"messages\":[0,0],\"bytes\":[0,0],\"decisions\":0,\"switches\":0}\n");
            v.extend_from_slice(b"{\"i\":-1,\"policy\":\"A\",\"start_ns\":0,\"end_ns\":5,\"messages\":[0,0],\"bytes\":[0,0],\"decisions\":0,\"switches\":0,\"latency_us\":\"inf\"}\n");
            v
        }),
    ] {
        let p = named(name);
        std::fs::write(&p, content).unwrap();
        bad.push(p);
    }
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(0), "{err}");
    for p in bad.iter().chain([&truncated]) {
        assert_eq!(mentions(&err, p), 1, "{}:\n{err}", p.display());
    }
    let cut = err.lines().find(|l| l.contains(truncated.to_str().unwrap())).unwrap();
    assert!(cut.contains("cut short") && cut.contains("the other 20 rows used"), "{cut}");
    assert!(err.lines().find(|l| l.contains("version.iterations")).unwrap().contains("aar-iterations/2"));
    let older = err.lines().find(|l| l.contains("older.iterations")).unwrap();
    assert!(
        older.contains(
            "is in format \"aar-iterations/0\", which this aar does not read (it reads aar-iterations/1 only)"
        ),
        "{older}"
    );
    assert!(err.lines().find(|l| l.contains("headeronly.iterations")).unwrap().contains("no iteration rows"));
    let cut_header = err.lines().find(|l| l.contains("cutheader.iterations")).unwrap();
    assert!(cut_header.ends_with(": is cut short (its writer was stopped, or could write no more: a full disk, the file size limit): skipped"), "{cut_header}");
    let j = json_of(&o);
    let e = &j["experiments"][0];
    assert_eq!(e["ranks"], 3, "the two good ranks and the cut one");
    assert_eq!(e["iterations_used"], 20);
}

#[test]
fn nul_bytes_a_crash_left_in_a_record_are_said_as_such_and_the_rows_after_them_used() {
    let folder = tmp("zeros");
    let dir = folder.path();
    generate(dir, "z", 3, 20, &["A", "B"], &[1.0, 1.1], 5);
    // Rank 1's node crashed: its file kept the length of writes whose data was lost, from inside
    // row 10 to a block's end; rows written after it survived.
    let mut text = Vec::new();
    write_line(&mut text, &header("z", 1, 3, &["A", "B"])).unwrap();
    for i in 0..10 {
        write_line(&mut text, &row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).unwrap();
    }
    text.extend_from_slice(br#"{"i":10,"poli"#);
    text.resize(text.len() + (2 << 20), 0);
    for i in 12..20 {
        write_line(&mut text, &row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).unwrap();
    }
    let crashed = record_path(dir, "z", 1);
    std::fs::write(&crashed, &text).unwrap();
    // Rank 2's summary record, written at its exit, is all zeros.
    let summary = dir.join("aar.z.2.102.json");
    std::fs::write(&summary, [0u8; 4096]).unwrap();
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(mentions(&err, &crashed), 1, "{err}");
    let said = err.lines().find(|l| l.contains(crashed.to_str().unwrap())).unwrap();
    // The row the crash cut is said with the zeros, as a crash's, not as a full disk's.
    assert!(
        said.contains(&format!(
            ": line 12: is cut short, and {} NUL bytes follow it in place of the rest: the file grew but its data \
             never reached the disk, as when the node writing it crashed or lost power: skipped",
            2 << 20
        )) && said.ends_with("the other 18 rows used"),
        "{said}"
    );
    assert!(!said.contains("a full disk"), "{said}");
    let said = err.lines().find(|l| l.contains(summary.to_str().unwrap())).unwrap();
    assert!(
        said.ends_with(
            "not a whole summary record: it holds 4096 NUL bytes: the file grew but its data never reached the disk, \
             as when the node writing it crashed or lost power: rank 2's health is not checked"
        ),
        "{said}"
    );
    assert_eq!(json_of(&o)["experiments"][0]["ranks"], 3);
}

#[test]
fn inconsistent_ranks_are_decided_and_said() {
    let folder = tmp("inconsistent");
    let dir = folder.path();
    let pol = ["A", "B"];
    let rows = |n: u64, f: &dyn Fn(u64) -> &'static str| -> Vec<Iteration> {
        (0..n).map(|i| row(i, f(i), 0, 1_000_000 + i * 1000, None)).collect()
    };
    let rr = |i: u64| ["A", "B"][i as usize % 2];
    write_record(dir, &header("x", 0, 4, &pol), &rows(30, &rr));
    // Rank 1 lacks the last 3 iterations (stopped early).
    write_record(dir, &header("x", 1, 4, &pol), &rows(27, &rr));
    // Rank 2 disagrees on the policy of iteration 4 and names an unknown policy in iteration 5.
    let odd = |i: u64| {
        if i == 4 {
            "B"
        } else if i == 5 {
            "Z"
        } else {
            ["A", "B"][i as usize % 2]
        }
    };
    let rank2 = write_record(dir, &header("x", 2, 4, &pol), &rows(30, &odd));
    // Rank 3 ran other policies.
    let rank3 = write_record(dir, &header("x", 3, 4, &["A", "C"]), &rows(30, &|i| ["A", "C"][i as usize % 2]));
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    let j = json_of(&o);
    let e = &j["experiments"][0];
    assert_eq!(mentions(&err, &rank3), 1, "{err}");
    assert!(err.contains("has policies [\"A\", \"C\"]"), "{err}");
    assert_eq!(mentions(&err, &rank2), 1, "{err}");
    assert!(err.contains("1 row names a policy that is not in the header (first: iteration 5, \"Z\")"), "{err}");
    assert!(err.contains("lack some of the 3 ranks"), "{err}");
    assert!(err.contains("disagree on the policy"), "{err}");
    assert!(err.contains("header says 4 ranks but 3"), "{err}");
    assert_eq!(e["iterations_conflicting"], 1);
    // Iteration 5 lacks rank 2 (its row was skipped) and 27..29 lack rank 1.
    assert_eq!(e["iterations_incomplete"], 4);
    assert_eq!(e["iterations_used"], 30 - 1 - 4);
    let kept = json_of(&run(&[dir.to_str().unwrap(), "--json", "--keep-incomplete"]));
    assert_eq!(kept["experiments"][0]["iterations_used"], 29);
    // --skip leaves out the first iterations of the experiment.
    let skipped = json_of(&run(&[dir.to_str().unwrap(), "--json", "--skip", "10"]));
    let e = &skipped["experiments"][0];
    assert_eq!(e["iterations_used"], 30 - 10 - 3);
    assert_eq!(e["warmup_rows"], 30);
}

/// Ranks that exited having marked fewer iterations than the others (their summary records say
/// how many they ended) are not blamed as missing: the warning says the ranks reached the
/// iteration boundary unequally often, and how to mark iterations alike; a rank with no summary
/// record was stopped, and one whose record is cut short is said so.
#[test]
fn uneven_iteration_boundaries_are_told_from_stopped_ranks() {
    let folder = tmp("uneven");
    let dir = folder.path();
    let rr =
        |n: u64| -> Vec<Iteration> { (0..n).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect() };
    let summary = |rank: u32, ended: u64| {
        let rec = serde_json::json!({
            "format": "aar-record/2", "job_id": "u", "rank": rank, "pid": 100 + rank, "host": "h",
            "policy_at_exit": "A", "ab": { "policies": ["A", "B"], "boundary": "markers", "iterations": ended },
        });
        std::fs::write(dir.join(format!("aar.u.{rank}.{}.json", 100 + rank)), rec.to_string()).unwrap();
    };
    for (rank, n) in [(0, 30), (1, 27)] {
        write_record(dir, &header("u", rank, 2, &["A", "B"]), &rr(n));
        summary(rank, n);
    }
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("lack some of the 2 ranks")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("rank 1 (27 iterations) ended normally having marked fewer than rank 0 (30 iterations)"));
    assert!(said[0].contains("reached the iteration boundary (markers) less often"), "{err}");
    assert!(said[0].contains("AAR_AB_BOUNDARY") && !said[0].contains("may be the one missing"), "{err}");
    assert!(stdout(&o).contains("27 iterations used (3 left out: 3 not on every rank)"), "{}", stdout(&o));
    // Without its summary record, rank 1 was stopped before its exit.
    std::fs::remove_file(dir.join("aar.u.1.101.json")).unwrap();
    let err = stderr(&run(&[dir.to_str().unwrap()]));
    assert!(
        err.contains(
            "The rows of rank 1 end early and no summary record is beside it, though libaar.so writes a rank's summary \
             record at exit: it ended without libaar.so's exit handler (killed by a signal, the batch system's at the \
             job's time limit or the OOM killer's; a crash; _exit)"
        ),
        "{err}"
    );
    // ... or it still runs: a report of a running job sees the same.
    assert!(err.contains("or is still running (a rank writes its rows at least a second apart"), "{err}");
    assert!(err.contains("report the folder again when the job has ended"), "{err}");
    assert!(!err.contains("marked fewer"), "{err}");
    // A summary record cut short is there, but says nothing: not said to be absent.
    std::fs::write(dir.join("aar.u.1.101.json"), "{\"format\": \"aar-record/2\", \"job_id\": \"u\", \"ra").unwrap();
    let err = stderr(&run(&[dir.to_str().unwrap()]));
    assert!(err.contains("aar.u.1.101.json: not a whole summary record"), "{err}");
    assert!(
        err.contains("The rows of rank 1 end early and its summary record beside them is not whole (said above)"),
        "{err}"
    );
    assert!(!err.contains("no summary record is beside"), "{err}");
}

/// A job none of whose ranks has exited (no summary record beside any iteration record: still
/// running, or killed) may have rows that end evenly: nothing else then tells that the report is
/// of part of the run. One note says so, until a rank's summary record is there; the simulator
/// writes no summary records and gets none.
#[test]
fn a_job_without_any_summary_record_is_said_to_be_unfinished() {
    let folder = tmp("unfinished");
    let rows: Vec<Iteration> = (0..20).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect();
    let note = |err: &str| err.lines().filter(|l| l.contains("no rank has a summary record")).count();
    for (name, source) in [("job", Source::Job), ("sim", Source::Sim)] {
        let dir = folder.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        for rank in 0..2 {
            write_record(&dir, &Header { source, ..header("k", rank, 2, &["A", "B"]) }, &rows);
        }
        let o = run(&[dir.to_str().unwrap()]);
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        assert!(stdout(&o).contains("20 iterations used; "), "{}", stdout(&o));
        if source == Source::Sim {
            assert!(err.is_empty(), "{err}");
            continue;
        }
        assert_eq!(note(&err), 1, "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("aar: experiment \"k\": no rank has a summary record"), "{err}");
        assert!(err.contains("may still be running, or was stopped before its ranks exited"), "{err}");
        assert!(err.contains("Report the folder again when the job has ended"), "{err}");
        let j = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
        assert!(j["warnings"][0].as_str().unwrap().contains("no rank has a summary record"), "{j}");
        // One rank has exited: the job ended (the other rank's rows, were they short, say why).
        write_summary(&dir, "k", 1, &["A", "B"], 20);
        let o = run(&[dir.to_str().unwrap()]);
        assert!(o.status.success() && stderr(&o).is_empty(), "{}", stderr(&o));
    }
}

/// Under an MPI boundary, ranks that marked fewer iterations are most likely ranks that call the
/// collective less often than others, which also call it on a communicator of only some ranks
/// (an MPI_Comm_split's: every call counts, on any communicator): the fix names that, not "a
/// collective every rank calls", which the job's MPI_Barrier on MPI_COMM_WORLD already is.
#[test]
fn uneven_mpi_boundaries_are_blamed_on_calls_on_a_smaller_communicator() {
    let folder = tmp("uneven-mpi");
    let dir = folder.path();
    for (rank, n) in [(0, 40), (1, 20)] {
        let mut h = header("m", rank, 2, &["A", "B"]);
        h.boundary = "MPI_Barrier:1".into();
        let rows: Vec<Iteration> = (0..n).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect();
        write_record(dir, &h, &rows);
        let rec = serde_json::json!({
            "format": "aar-record/2", "job_id": "m", "rank": rank, "pid": 100 + rank, "host": "h",
            "policy_at_exit": "A", "ab": { "policies": ["A", "B"], "boundary": "MPI_Barrier:1", "iterations": n },
        });
        std::fs::write(dir.join(format!("aar.m.{rank}.{}.json", 100 + rank)), rec.to_string()).unwrap();
    }
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("lack some of the 2 ranks")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("rank 1 (20 iterations) ended normally having marked fewer than rank 0 (40 iterations)"));
    assert!(said[0].contains("AAR_AB_BOUNDARY counts the calls of MPI_Barrier on every communicator"), "{err}");
    assert!(said[0].contains("(one of MPI_Comm_split's)") && said[0].contains("aar_iteration_begin/end"), "{err}");
    assert!(!said[0].contains("on a collective every rank calls"), "{err}");
}

/// Ranks that marked as many iterations as the others (their summary records say so) but whose
/// record is damaged are not said to have marked fewer ("rank 1 (30 iterations) ended normally
/// having marked fewer than rank 0 (30 iterations)"): a row left out as one no job can have is
/// named as the cause, and so is a row whose index goes past the iterations its rank ended.
#[test]
fn a_damaged_record_is_not_taken_for_uneven_iteration_boundaries() {
    let folder = tmp("damaged");
    let dir = folder.path();
    let write = |last: Iteration| {
        for rank in [0u32, 1] {
            let mut rows: Vec<Iteration> =
                (0..30).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect();
            if rank == 1 {
                rows[29] = last.clone();
            }
            write_record(dir, &header("d", rank, 2, &["A", "B"]), &rows);
            let rec = serde_json::json!({
                "format": "aar-record/2", "job_id": "d", "rank": rank, "pid": 100 + rank, "host": "h",
                "policy_at_exit": "A", "ab": { "policies": ["A", "B"], "boundary": "markers", "iterations": 30 },
            });
            std::fs::write(dir.join(format!("aar.d.{rank}.{}.json", 100 + rank)), rec.to_string()).unwrap();
        }
    };
    let lack = |err: &str| -> String {
        let said: Vec<&str> = err.lines().filter(|l| l.contains("some of the 2 ranks")).collect();
        assert_eq!(said.len(), 1, "{err}");
        assert!(!said[0].contains("marked fewer") && !said[0].contains("stopped"), "{err}");
        said[0].to_string()
    };
    // Rank 1's last iteration lasted longer than any job runs: the row is left out.
    let mut absurd = row(29, "B", 0, 1_000_000, None);
    absurd.end_ns = u64::MAX;
    write(absurd);
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("1 row has a value no job can have"), "{err}");
    let said = lack(&err);
    assert!(said.contains("Rank 1 had lines of its iteration record left out (said above with the file)"), "{said}");
    // Rank 1's last row has an index past the 30 iterations it ended.
    write(row(1_000_000, "B", 0, 1_000_000, None));
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said = lack(&err);
    assert!(
        said.contains("The rows of rank 1 go on to iteration 1000000, past the 30 iterations its summary record says")
            && said.contains("was damaged or edited"),
        "{said}"
    );
}

/// A rank whose summary record says it ended more iterations than its iteration record holds rows
/// of (the file size limit or a full disk stopped the rows: libaar.so goes on, and writes its small
/// summary record) is said as such, not as a rank that marked fewer iterations ("rank 1 (30
/// iterations) ended having marked fewer than rank 0 (30 iterations)") nor as a stopped one.
#[test]
fn rows_cut_by_a_write_failure_are_told_from_uneven_boundaries() {
    let folder = tmp("unwritten");
    let dir = folder.path();
    let rr =
        |n: u64| -> Vec<Iteration> { (0..n).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect() };
    for (rank, rows) in [(0, 30), (1, 12)] {
        let path = write_record(dir, &header("w", rank, 2, &["A", "B"]), &rr(rows));
        let rec = serde_json::json!({
            "format": "aar-record/2", "job_id": "w", "rank": rank, "pid": 100 + rank, "host": "h",
            "policy_at_exit": "A", "ab": { "policies": ["A", "B"], "boundary": "markers", "iterations": 30 },
        });
        std::fs::write(dir.join(format!("aar.w.{rank}.{}.json", 100 + rank)), rec.to_string()).unwrap();
        if rank == 1 {
            // The last row cut in the middle, as a write stopped at the file size limit leaves it.
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            std::io::Write::write_all(&mut f, b"{\"i\":12,\"policy\":\"A\",\"sta").unwrap();
        }
    }
    let o = run(&[dir.to_str().unwrap(), "--skip", "2"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("line 14 is cut short (its writer was stopped, or could write no more"), "{err}");
    let said: Vec<&str> =
        err.lines().filter(|l| l.contains("the rest were not written: either a write failed")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("rank 1's iteration record") && said[0].contains("rows of only 12 iterations of the 30"));
    assert!(said[0].contains("ulimit -f"), "{err}");
    assert!(err.contains("The rows of rank 1 end before the iterations its summary record says it ended"), "{err}");
    assert!(!err.contains("marked fewer") && !err.contains("no summary record is beside"), "{err}");
    // Rank 0 holds all 30: it is not named.
    assert!(!err.contains("rank 0's iteration record"), "{err}");
}

/// A rank whose first begins were refused while libaar.so was still starting: its rows begin at
/// a later index than the others', while its summary record counts the iterations before. The
/// iterations it lacks are said with that cause and its fix, not left unexplained.
#[test]
fn rows_that_begin_late_are_blamed_on_begins_refused_at_start_up() {
    let folder = tmp("late");
    let dir = folder.path();
    let rr = |from: u64| -> Vec<Iteration> {
        (from..12).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect()
    };
    for (rank, from) in [(0, 0), (1, 2)] {
        write_record(dir, &header("l", rank, 2, &["A", "B"]), &rr(from));
        write_summary(dir, "l", rank, &["A", "B"], 12);
    }
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("lack some of the 2 ranks")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0]
            .contains("The rows of rank 1 (from iteration 2) begin after the others' though its summary record counts")
            && said[0].contains("were refused (AAR_EINVAL")
            && said[0].contains("no longer returns \"starting\""),
        "{err}"
    );
    assert!(!err.contains("marked fewer") && !err.contains("no summary record is beside"), "{err}");
}

/// Ranks whose summary records count the begins refused while libaar.so was starting, by cause
/// (`ab.refused_begins`, which records of an older libaar.so lack): the iterations they lack are
/// said with how many begins were refused and why, per rank, not guessed from where their rows
/// begin. A rank whose record counts none is not blamed on refused begins, and a cause this aar
/// does not know is named as a newer libaar.so's.
#[test]
fn rows_that_begin_late_are_explained_by_the_refused_begins_the_summary_record_counts() {
    let folder = tmp("refused");
    let dir = folder.path();
    let rr = |from: u64| -> Vec<Iteration> {
        (from..12).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect()
    };
    let refused = [
        serde_json::json!({}),
        serde_json::json!({"inside_start_up": 1, "start_up_elsewhere": 2}),
        serde_json::json!({}),
        serde_json::json!({"start_up_elsewhere": 1, "later_cause": 1}),
    ];
    for (rank, from) in [(0, 0), (1, 3), (2, 1), (3, 2)] {
        write_record(dir, &header("r", rank, 4, &["A", "B"]), &rr(from));
        let rec = serde_json::json!({
            "format": "aar-record/2", "job_id": "r", "rank": rank, "pid": 100 + rank, "host": "h",
            "policy_at_exit": "A",
            "ab": { "policies": ["A", "B"], "boundary": "markers", "iterations": 12,
                    "refused_begins": refused[rank as usize] },
        });
        std::fs::write(dir.join(format!("aar.r.{rank}.{}.json", 100 + rank)), rec.to_string()).unwrap();
    }
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("lack some of the 4 ranks")).collect();
    assert_eq!(said.len(), 1, "{err}");
    for words in [
        "The summary records say that begins (aar_iteration_begin) were refused (AAR_EINVAL) while libaar.so was \
         still starting, each keeping its index without a row: rank 1: 3 begins (1 from inside the start-up, 2 while \
         another thread was starting it), so its rows begin at iteration 3; and rank 3: 2 begins (1 for the cause \
         \"later_cause\", 1 while another thread was starting it), so its rows begin at iteration 2.",
        "Refused from inside the start-up: called on the thread running it",
        "refused while another thread was starting it: called while another thread was starting libaar.so for \
         longer than the 2 s",
        "refused \"later_cause\": a cause this aar does not know (a newer libaar.so's: upgrade aar)",
        "no longer returns \"starting\"",
    ] {
        assert!(said[0].contains(words), "{words:?} in {}", said[0]);
    }
    // Rank 2 counts no refused begin: its late rows are not put down to them, nor guessed.
    assert!(!said[0].contains("rank 2") && !said[0].contains("begin after the others'"), "{}", said[0]);
    assert!(!err.contains("marked fewer") && !err.contains("no summary record is beside"), "{err}");

    // One rank: said in the singular.
    for rank in [2, 3] {
        std::fs::remove_file(record_path(dir, "r", rank)).unwrap();
        std::fs::remove_file(dir.join(format!("aar.r.{rank}.{}.json", 100 + rank))).unwrap();
    }
    let err = stderr(&run(&[dir.to_str().unwrap()]));
    assert!(
        err.contains(
            "Rank 1's summary record says that 3 begins (aar_iteration_begin) were refused (AAR_EINVAL) while \
             libaar.so was still starting (1 from inside the start-up, 2 while another thread was starting it), each \
             keeping its index without a row, so its rows begin at iteration 3. Refused from inside the start-up"
        ),
        "{err}"
    );

    // Counts of an edited record that add up past 2^64 are said as the most there can be, not
    // wrapped round to a few.
    let rec = serde_json::json!({
        "format": "aar-record/2", "job_id": "r", "rank": 1, "pid": 101, "host": "h", "policy_at_exit": "A",
        "ab": { "policies": ["A", "B"], "boundary": "markers", "iterations": 12,
                "refused_begins": {"inside_start_up": 1u64 << 63, "start_up_elsewhere": 1u64 << 63} },
    });
    std::fs::write(dir.join("aar.r.1.101.json"), rec.to_string()).unwrap();
    let err = stderr(&run(&[dir.to_str().unwrap()]));
    assert!(
        err.contains(
            "Rank 1's summary record says that 18446744073709551615 begins (aar_iteration_begin) were refused"
        ),
        "{err}"
    );
}

/// More than four ranks in a list of the warning of iterations some ranks lack: ranks 1 to 5 marked
/// fewer iterations than rank 0, and ranks 6 to 10 had begins refused at start-up. Each list names
/// the first four ranks, in rank order, and counts the fifth; the fifth rank is not named.
#[test]
fn ranks_that_marked_fewer_or_had_begins_refused_are_named_the_first_four() {
    let folder = tmp("lack-many");
    let dir = folder.path();
    let rr = |from: u64, to: u64| -> Vec<Iteration> {
        (from..to).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect()
    };
    for rank in 0..11u32 {
        let (from, to, refused) = match rank {
            0 => (0, 30, serde_json::json!({})),
            1..=5 => (0, 30 - u64::from(rank), serde_json::json!({})),
            _ => (u64::from(rank) - 5, 30, serde_json::json!({"inside_start_up": rank - 5})),
        };
        write_record(dir, &header("m", rank, 11, &["A", "B"]), &rr(from, to));
        let rec = serde_json::json!({
            "format": "aar-record/2", "job_id": "m", "rank": rank, "pid": 100 + rank, "host": "h",
            "policy_at_exit": "A",
            "ab": { "policies": ["A", "B"], "boundary": "markers", "iterations": to, "refused_begins": refused },
        });
        std::fs::write(dir.join(format!("aar.m.{rank}.{}.json", 100 + rank)), rec.to_string()).unwrap();
    }
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("lack some of the 11 ranks")).collect();
    assert_eq!(said.len(), 1, "{err}");
    let said = said[0];
    assert!(
        said.contains(
            "The ranks marked different numbers of iterations: rank 1 (29 iterations), rank 2 (28 iterations), rank 3 \
             (27 iterations), rank 4 (26 iterations) and 1 more ended normally having marked fewer than rank 0 (30 \
             iterations)"
        ),
        "{said}"
    );
    assert!(!said.contains("rank 5"), "counted, not named: {said}");
    let each = (6..10)
        .map(|rank| {
            let n = rank - 5;
            let begins = if n == 1 { "begin" } else { "begins" };
            format!("rank {rank}: {n} {begins} ({n} from inside the start-up), so its rows begin at iteration {n}")
        })
        .collect::<Vec<_>>()
        .join("; ");
    assert!(
        said.contains(&format!(
            "were refused (AAR_EINVAL) while libaar.so was still starting, each keeping its index \
             without a row: {each}; and 1 more. Refused from inside the start-up"
        )),
        "{said}"
    );
    assert!(!said.contains("rank 10"), "counted, not named: {said}");
}

/// More than four ranks in each of the other lists of the warning of iterations some ranks lack:
/// ranks 1 to 5 ended 30 iterations but hold rows of 12 (not written whole), ranks 6 to 10 have
/// rows that end early beside a summary record cut short, ranks 11 to 15 had a line of their
/// iteration record left out (a value no job can have), and ranks 16 to 20 have rows that begin
/// late, with summary records of a libaar.so that does not count refused begins. Each list names
/// the first four ranks, in rank order, and counts the fifth.
#[test]
fn ranks_with_unwritten_cut_left_out_or_late_rows_are_named_the_first_four() {
    let folder = tmp("lack-each");
    let dir = folder.path();
    let rr = |from: u64, to: u64| -> Vec<Iteration> {
        (from..to).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect()
    };
    for rank in 0..21u32 {
        let mut rows = match rank {
            1..=5 => rr(0, 12),
            6..=10 => rr(0, 20),
            16..=20 => rr(u64::from(rank) - 15, 30),
            _ => rr(0, 30),
        };
        if (11..=15).contains(&rank) {
            rows[15].end_ns = u64::MAX;
        }
        write_record(dir, &header("e", rank, 21, &["A", "B"]), &rows);
        let summary = dir.join(format!("aar.e.{rank}.{}.json", 100 + rank));
        if (6..=10).contains(&rank) {
            std::fs::write(&summary, "{\"format\": \"aar-record/2\", \"job_id\": \"e\", \"ra").unwrap();
        } else {
            write_summary(dir, "e", rank, &["A", "B"], 30);
        }
    }
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("lack some of the 21 ranks")).collect();
    assert_eq!(said.len(), 1, "{err}");
    let said = said[0];
    for words in [
        ". The rows of ranks 1, 2, 3, 4 and 1 more end before the iterations their summary records say they ended: \
         not written whole (said above)",
        ". The rows of ranks 6, 7, 8, 9 and 1 more end early and their summary records beside them are not whole \
         (said above)",
        ". Ranks 11, 12, 13, 14 and 1 more had lines of their iteration records left out (said above with the \
         files), so they lack those iterations",
        ". The rows of rank 16 (from iteration 1), rank 17 (from iteration 2), rank 18 (from iteration 3), rank 19 \
         (from iteration 4) and 1 more begin after the others' though their summary records count the iterations \
         before",
    ] {
        assert!(said.contains(words), "{words:?} in {said}");
    }
    assert!(!said.contains("rank 20"), "counted, not named: {said}");
    assert!(!said.contains("marked fewer") && !said.contains("no summary record is beside"), "{said}");
}

/// One rank that ended more iterations than its rows (past the rows libaar.so writes, and then
/// cut to one row) and caught an internal error: every warning about it is in the singular.
#[test]
fn warnings_about_one_rank_and_one_row_are_in_the_singular() {
    let folder = tmp("singular");
    let dir = folder.path();
    write_record(dir, &header("s", 0, 1, &["A", "B"]), &[row(0, "A", 0, 1_000_000, None)]);
    let rec = serde_json::json!({
        "format": "aar-record/2", "job_id": "s", "rank": 0, "pid": 100, "host": "h", "internal_errors": 1,
        "policy_at_exit": "A", "ab": { "policies": ["A", "B"], "boundary": "markers", "iterations": 120_000 },
    });
    std::fs::write(dir.join("aar.s.0.100.json"), rec.to_string()).unwrap();
    let o = run(&[dir.to_str().unwrap(), "--resamples", "100"]);
    let err = stderr(&o);
    for said in [
        "caught 1 internal error on rank 0 (the only rank with a summary record):",
        "the iteration record of rank 0 (the only rank with a summary record) holds its first 100000 iterations \
         of up to 120000",
        "holds rows of only 1 iteration of the 120000 its summary record says it ended",
    ] {
        assert!(err.contains(said), "{said}:\n{err}");
    }
    assert!(!err.contains(" 1 iterations") && !err.contains("1 of the 1 "), "{err}");
}

/// Values no job can have (an iteration of no time, bytes beyond any NIC, a negative mean latency)
/// do not reach the tables: the rows are left out, said once per file with the first of them.
#[test]
fn absurd_values_are_left_out_and_said() {
    let folder = tmp("absurd");
    let dir = folder.path();
    let pol = ["A", "B"];
    let rows = |r: u32| -> Vec<Iteration> {
        (0..20)
            .map(|i| {
                let mut row = row(i, pol[i as usize % 2], 0, 1_000_000 + u64::from(r) * 1000, None);
                if r == 1 && i == 4 {
                    row.end_ns = row.start_ns;
                }
                if r == 1 && i == 7 {
                    row.bytes[1] = u64::MAX / 2;
                }
                if r == 1 && i == 9 {
                    row.latency_us = Some(-3.0);
                }
                row
            })
            .collect()
    };
    write_record(dir, &header("x", 0, 2, &pol), &rows(0));
    let bad = write_record(dir, &header("x", 1, 2, &pol), &rows(1));
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert_eq!(mentions(&err, &bad), 1, "{err}");
    let line = err.lines().find(|l| l.contains(bad.to_str().unwrap())).unwrap();
    assert!(line.contains("2 rows have values no job can have (an iteration of 0 ns"), "{line}");
    assert!(line.contains("first: iteration 4") && line.contains("run the job again"), "{line}");
    assert!(line.contains("1 value is a negative mean (latency_us -3"), "{line}");
    assert!(line.ends_with("the other 18 rows used"), "{line}");
    let j = json_of(&o);
    let e = &j["experiments"][0];
    assert_eq!((e["iterations_used"].as_u64(), e["iterations_incomplete"].as_u64()), (Some(18), Some(2)), "{e}");
    for p in pol {
        assert_eq!(policy(&j, p)["latency_us_mean"], 1.5, "{p}");
        assert!(policy(&j, p)["min_ns"].as_f64().unwrap() >= 1_000_000.0, "{p}");
        let bytes: u64 = policy(&j, p)["modes"].as_array().unwrap().iter().map(|m| m["bytes"].as_u64().unwrap()).sum();
        assert!(bytes < 1 << 20, "{p}: {bytes}");
    }
}

/// Huge but finite means (a damaged record's 1e308) are averaged, not summed to infinity: the
/// table and `--json` give the same mean (before, the table said `inf` and the JSON null, which
/// reads as no latency measured), the table in exponent form.
#[test]
fn huge_finite_latencies_average_to_themselves_in_the_table_and_the_json() {
    let folder = tmp("huge-latency");
    let dir = folder.path();
    let pol = ["A", "B"];
    let rows: Vec<Iteration> = (0..20)
        .map(|i| {
            let mut row = row(i, pol[i as usize % 2], 0, 1_000_000, None);
            if i % 2 == 0 {
                row.latency_us = Some(1e308);
            }
            row
        })
        .collect();
    write_record(dir, &header("x", 0, 1, &pol), &rows);
    let j = json_of(&run(&[dir.to_str().unwrap(), "--json"]));
    assert_eq!(policy(&j, "A")["latency_us_mean"], 1e308, "{j}");
    assert_eq!(policy(&j, "B")["latency_us_mean"], 1.5, "{j}");
    let table = stdout(&run(&[dir.to_str().unwrap()]));
    assert!(!table.contains("inf"), "{table}");
    // In exponent form: not 309 digits that push the table's last columns off the screen.
    let a = table.lines().find(|l| l.starts_with("A ") && l.contains("KiB")).unwrap_or_else(|| panic!("{table}"));
    assert!(a.ends_with(" 1.000e308      -") && a.len() < 120, "{a}");
}

#[test]
fn exit_codes() {
    let folder = tmp("codes");
    let dir = folder.path();
    std::fs::write(dir.join("junk.iterations.jsonl"), b"not json\n").unwrap();
    let o = run(&[dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("junk.iterations.jsonl") && stderr(&o).contains("nothing to report"));
    // An input that is not there is a bad argument (a typo), as the help says: exit 2, nothing
    // read, even beside one that is there.
    let missing = dir.join("nope");
    let o = run(&[dir.to_str().unwrap(), missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nope: no such file or folder: nothing read"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("junk"), "nothing was read: {}", stderr(&o));
    // A file's name with a trailing / names nothing either (it was read as a folder that could not
    // be listed, and the report ended with 'nothing to report', exit 1).
    let through_file = format!("{}/", dir.join("junk.iterations.jsonl").display());
    let o = run(&[dir.to_str().unwrap(), &through_file]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{through_file}: goes through a file as if it were a folder"))
            && stderr(&o).contains("nothing read; give the file's name alone"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("JSON header") && stdout(&o).is_empty(), "nothing was read: {}", stderr(&o));
    let empty_folder = tmp("codes-empty");
    let empty = empty_folder.path();
    let o = run(&[empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("holds no *.iterations.jsonl records"), "{}", stderr(&o));
    // The last word says what to give instead.
    assert!(stderr(&o).contains("nothing to report: no usable iteration or summary records in"), "{}", stderr(&o));
    assert!(stderr(&o).contains("; give the folder AAR_OUTPUT_DIR named in the job"), "{}", stderr(&o));
    // A folder named `.` does not end the sentence twice.
    let o = aar().args(["report", "."]).current_dir(empty).output().unwrap();
    assert!(stderr(&o).contains("records in .; give the folder"), "{}", stderr(&o));

    generate(dir, "ok", 1, 10, &["A", "B"], &[1.0, 1.0], 1);
    let d = dir.to_str().unwrap();
    for (args, says) in [
        (vec![d, "--plot", "x.gif"], "aar: --plot x.gif: the file name must end in .svg or .png"),
        (
            vec![d, "--html", "/no/such/folder/r.html"],
            "aar: --html /no/such/folder/r.html: folder /no/such/folder does not exist",
        ),
        (vec![d, "--resamples", "5"], "aar: --resamples 5: at least 100 and at most 10000000"),
        (vec![d, "--resamples", "999999999"], "aar: --resamples 999999999: at least 100 and at most 10000000"),
        (vec![d, "--seed", "-1"], "\"-1\" is not a seed: a seed is a whole number from 0 to 18446744073709551615"),
        (vec![d, "--json", "--csv"], "cannot be used with"),
        (vec![d, "--skip", "many"], "--skip"),
        (vec![d, "--skip", "-1"], "invalid value '-1' for '--skip <N>'"),
        (vec![d, "--resamples", "-1"], "invalid value '-1' for '--resamples <N>'"),
        (vec![], "required"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    let o = run(&[d]);
    assert_eq!(o.status.code(), Some(0));
    let help = stdout(&run(&["--help"]));
    assert!(help.contains("Exit status: 0 report written; 1 nothing to report"), "{help}");
    assert!(help.contains("2 bad arguments (an input that does not exist included)"), "{help}");
    // Only the junk file is warned about.
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// Where --plot or --html cannot go is said before anything is read, naming the path given, what
/// is wrong with it and what to give instead: a file where its folder should be (not "does not
/// exist": it does), a folder not made yet, a folder where the file should be.
#[test]
fn output_paths_it_cannot_use_are_said_with_what_to_give() {
    let folder = tmp("outpaths");
    let dir = folder.path();
    generate(dir, "op", 1, 10, &["A", "B"], &[1.0, 1.0], 1);
    let d = dir.to_str().unwrap();
    let file = dir.join("notes.txt");
    std::fs::write(&file, "a file").unwrap();
    let html_folder = dir.join("old.html");
    std::fs::create_dir(&html_folder).unwrap();
    let through_file = file.join("r.html");
    let deeper = file.join("sub").join("r.svg");
    let missing = dir.join("new").join("r.html");
    for (flag, path, says) in [
        (
            "--html",
            &through_file,
            format!(
                "{} is a file, or goes through one, not a folder: nothing read; name a file in a folder",
                file.display()
            ),
        ),
        ("--plot", &deeper, format!("{} is a file, or goes through one, not a folder", file.join("sub").display())),
        (
            "--html",
            &missing,
            format!("does not exist: nothing read; create it first (mkdir -p {})", dir.join("new").display()),
        ),
        (
            "--html",
            &html_folder,
            format!("is a folder: nothing read; name a file in it, e.g. {}", html_folder.join("report.html").display()),
        ),
    ] {
        let o = run(&[d, flag, path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.starts_with(&format!("aar: {flag} {}: ", path.display())) && err.contains(&says), "{says}\n{err}");
        assert!(stdout(&o).is_empty());
    }
    // A folder no file can be made in (as root too: /proc): the folder and the reason are said,
    // not the name of a temporary file the user never gave, and what was done instead; the
    // table is still printed.
    let o = run(&[d, "--html", "/proc/aar-report.html"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("aar: --html /proc/aar-report.html: cannot be written (no file can be made in /proc: ")
            && err.contains("): not written, a file of that name left as it was, the rest of the report written; name a file in a folder you can write to"),
        "{err}"
    );
    assert!(!err.contains(".aar-report"), "{err}");
    assert!(stdout(&o).contains("policy"), "{}", stdout(&o));
}

/// The report's palette (plot.rs): the first policies' colours.
const COLOURS: [[u8; 3]; 3] = [[0x4e, 0x79, 0xa7], [0xf2, 0x8e, 0x2b], [0xe1, 0x57, 0x59]];

fn decode_png(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    assert!(step >= 3 && info.bit_depth == png::BitDepth::Eight, "{info:?}");
    let pixels = buf[..info.buffer_size()].chunks(step).map(|c| [c[0], c[1], c[2]]).collect();
    (info.width, info.height, pixels)
}

/// The PNG is not blank and holds each policy's legend colour.
fn check_png(path: &Path, policies: usize) {
    let (w, h, px) = decode_png(path);
    assert!(w >= 800 && h >= 400, "{w}x{h}");
    let inked = px.iter().filter(|p| **p != [255, 255, 255]).count();
    assert!(inked > px.len() / 50, "{inked} of {} pixels drawn", px.len());
    for c in &COLOURS[..policies] {
        let n = px.iter().filter(|p| *p == c).count();
        assert!(n > 100, "colour {c:?}: {n} pixels");
    }
}

fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>'))
        .map(|(_, rest)| rest.split("</text>").next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn svg_and_png_plots_name_the_policies() {
    let folder = tmp("plots");
    let dir = folder.path();
    generate(dir, "p", 3, 300, &["auto", "ADAPTIVE0", "ADAPTIVE3"], &[1.0, 1.3, 0.9], 2);
    let svg = dir.join("fig.svg");
    let o = run(&[dir.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..100]);
    let texts = svg_texts(&text);
    for name in ["auto", "ADAPTIVE0", "ADAPTIVE3"] {
        // Box-plot axis, CDF legend and series legend.
        assert!(texts.iter().filter(|t| *t == name).count() >= 3, "{name}: {texts:?}");
    }
    // Written whole (a temporary file renamed over it, none left behind), with the permissions
    // any file written here gets.
    let names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(names.iter().all(|n| !n.to_string_lossy().starts_with(".aar-report")), "{names:?}");
    let reference = dir.join("reference");
    std::fs::write(&reference, "").unwrap();
    let mode = |p: &Path| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions());
    assert_eq!(mode(&svg), mode(&reference));
    // Another report over it replaces it.
    std::fs::write(&svg, "old").unwrap();
    assert!(run(&[dir.to_str().unwrap(), "--plot", svg.to_str().unwrap()]).status.success());
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), text);
    let png = dir.join("fig.png");
    let o = run(&[dir.to_str().unwrap(), "--plot", png.to_str().unwrap()]);
    assert!(o.status.success() && stderr(&o).is_empty(), "{}", stderr(&o));
    check_png(&png, 3);

    // Without a font: one warning, and the plot is still drawn (without text).
    let bare = dir.join("bare.png");
    let o = aar()
        .args(["report", dir.to_str().unwrap(), "--plot", bare.to_str().unwrap()])
        .env("AAR_REPORT_FONT", dir.join("no-such-font.ttf"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("no usable TrueType font") && stderr(&o).contains("without text"));
    check_png(&bare, 3);
}

/// Seven policies, the most `AAR_AB` takes: the box plot names each whole (upright, cut to
/// "ADAPTIVE…" they could not be told apart), and the notes give the Bonferroni threshold to three
/// significant digits, not as `0.008333333333333333`.
/// A PNG is drawn whole in memory, a row of 500 pixels per experiment: a folder of many jobs'
/// records (65 here) is refused as PNG before anything is drawn, with the size it would have and
/// what to do, and the text report is still written; the same experiments draw as SVG.
#[test]
fn a_png_of_more_experiments_than_it_can_hold_is_refused_and_the_report_written() {
    let folder = tmp("png-rows");
    let dir = folder.path();
    for e in 0..65 {
        let rows: Vec<Iteration> =
            (0..4).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 2_000_000 + i * 1000, None)).collect();
        write_record(dir, &header(&format!("job{e}"), 0, 1, &["A", "B"]), &rows);
    }
    let png = dir.join("fig.png");
    let o = run(&[dir.to_str().unwrap(), "--plot", png.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "--plot {}: 65 experiments would make a PNG figure of 1500 × 32500 pixels (139 MiB to draw; a PNG figure \
             draws at most 64): not written, the rest of the report written; draw them as SVG",
            png.display()
        )),
        "{err}"
    );
    assert!(!png.exists());
    assert_eq!(stdout(&o).matches("experiment \"job").count(), 65, "{}", stdout(&o));
    let svg = dir.join("fig.svg");
    let o = run(&[dir.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("height=\"32500\""));
}

#[test]
fn seven_policies_are_each_named_in_the_box_plot_and_the_threshold_is_short() {
    let folder = tmp("seven");
    let dir = folder.path();
    let policies = ["ADAPTIVE0", "ADAPTIVE1", "ADAPTIVE2", "ADAPTIVE3", "auto", "steady", "off"];
    generate(dir, "seven", 2, 140, &policies, &[1.0, 0.95, 0.9, 0.85, 0.85, 0.85, 1.0], 5);
    let svg = dir.join("fig.svg");
    let o = run(&[dir.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let texts = svg_texts(&std::fs::read_to_string(&svg).unwrap());
    for name in policies {
        // Box-plot axis, CDF legend and series legend.
        assert_eq!(texts.iter().filter(|t| *t == name).count(), 3, "{name}: {texts:?}");
    }
    assert!(!texts.iter().any(|t| t.contains('…')), "{texts:?}");
    let out = stdout(&o);
    assert!(out.contains("significant: p < 0.00833 (0.05 / 6 comparisons, Bonferroni)"), "{out}");
    let png = dir.join("fig.png");
    assert!(run(&[dir.to_str().unwrap(), "--plot", png.to_str().unwrap()]).status.success());
    check_png(&png, COLOURS.len());
}

/// The time series' iteration axis of a short run labels whole iterations, each once: a run of 2
/// iterations read "0 0 0 1 1 1" (ticks at 0, 0.2, ... 1, rounded).
#[test]
fn a_short_runs_iteration_axis_labels_each_iteration_once() {
    let folder = tmp("short");
    let dir = folder.path();
    // Times of about 1 ms (labels "0.95", "1.00", ... or "950", ...): none is labelled "0" or "1".
    generate(dir, "short", 2, 2, &["A", "B"], &[1.0, 0.9], 1);
    let svg = dir.join("fig.svg");
    let o = run(&[dir.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let texts = svg_texts(&std::fs::read_to_string(&svg).unwrap());
    let iterations: Vec<&String> =
        texts.iter().filter(|t| t.parse::<i64>().is_ok_and(|i| (0..=1).contains(&i))).collect();
    assert!(!iterations.is_empty(), "{texts:?}");
    let mut once = iterations.clone();
    once.dedup();
    assert_eq!(once, iterations, "each iteration labelled once: {texts:?}");
}

/// Names with U+FFFE or U+FFFF (valid JSON and UTF-8, but characters XML forbids) are shown as
/// `?` in the plot and the page: an SVG file with one does not open ("not well-formed").
#[test]
fn characters_xml_forbids_do_not_break_the_svg() {
    let folder = tmp("xmlchars");
    let dir = folder.path();
    let (odd, exp) = ("p\u{FFFE}q", "e\u{FFFF}f");
    let rows: Vec<Iteration> =
        (0..20).map(|i| row(i, ["A", odd][i as usize % 2], 0, 1_000_000 + i * 1000, None)).collect();
    write_record(dir, &header(exp, 0, 1, &["A", odd]), &rows);
    let (svg, page) = (dir.join("fig.svg"), dir.join("page.html"));
    let o = run(&[dir.to_str().unwrap(), "--plot", svg.to_str().unwrap(), "--html", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for file in [&svg, &page] {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(!text.contains(['\u{FFFE}', '\u{FFFF}']), "{}", file.display());
        assert!(text.contains("p?q") && text.contains("e?f"), "{}", file.display());
    }
    assert!(svg_texts(&std::fs::read_to_string(&svg).unwrap()).iter().any(|t| t == "p?q"));
}

/// The pooled row of a --pool plot is titled as what it is, not as an experiment named
/// "2 experiments pooled".
#[test]
fn the_pooled_plot_is_not_titled_as_an_experiment() {
    let folder = tmp("pooltitle");
    let dir = folder.path();
    generate(dir, "j1", 2, 20, &["A", "B"], &[1.0, 0.9], 1);
    generate(dir, "j2", 2, 20, &["A", "B"], &[1.0, 0.9], 2);
    let svg = dir.join("fig.svg");
    let o = run(&[dir.to_str().unwrap(), "--pool", "--plot", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let texts = svg_texts(&std::fs::read_to_string(&svg).unwrap());
    assert!(texts.iter().any(|t| t == "experiment &quot;j1&quot;: 20 iterations"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "2 experiments pooled: 40 iterations"), "{texts:?}");
}

/// The time series' first and last points lie wholly inside its plotting area: at its edges they
/// were cut in half (the first on the axis, the last on the frame's right).
#[test]
fn the_series_first_and_last_points_are_drawn_whole() {
    let folder = tmp("edges");
    let dir = folder.path();
    generate(dir, "edges", 1, 30, &["A", "B"], &[1.0, 0.9], 3);
    let svg = dir.join("fig.svg");
    let o = run(&[dir.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    let num = |v: &str| v.parse::<f64>().unwrap();
    let series = |x: f64| x >= 1000.0;
    let tags: Vec<&str> = text.split('<').skip(1).map(|t| t.split('>').next().unwrap()).collect();
    // The plotting area: from the y axis (the vertical line of the axes) to the mesh's right end.
    let axis = tags
        .iter()
        .filter(|t| t.starts_with("polyline") && attr(t, "stroke") == Some("#000000"))
        .filter_map(|t| {
            let p: Vec<f64> = attr(t, "points").unwrap().split([' ', ',']).filter(|v| !v.is_empty()).map(num).collect();
            (p.len() == 4 && p[0] == p[2] && series(p[0])).then_some(p[0])
        })
        .fold(f64::INFINITY, f64::min);
    let right = tags
        .iter()
        .filter(|t| t.starts_with("line") && series(num(attr(t, "x1").unwrap())))
        .map(|t| num(attr(t, "x2").unwrap()))
        .fold(0.0, f64::max);
    let cx: Vec<f64> = tags
        .iter()
        .filter(|t| t.starts_with("circle"))
        .map(|t| num(attr(t, "cx").unwrap()))
        .filter(|x| series(*x))
        .collect();
    assert_eq!(cx.len(), 30, "{cx:?}");
    let (first, last) = cx.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(axis.is_finite() && first >= axis + 2.0, "axis at {axis}, first point at {first}");
    assert!(last + 2.0 <= right, "area ends at {right}, last point at {last}");
}

/// The value of attribute `name` in the tag `tag` (`<circle cx="1" ...`).
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    tag[at..].split('"').next()
}

/// The legends of the CDF and of the time series stand beside their plotting areas: no data point
/// or line lies under one, whatever the policies' times (a legend drawn in a corner of the
/// plotting area hid the points of seven policies' last iterations, 110 to 140).
#[test]
fn legends_cover_no_data() {
    let folder = tmp("legend");
    let dir = folder.path();
    let policies = ["ADAPTIVE0", "ADAPTIVE1", "ADAPTIVE2", "ADAPTIVE3", "auto", "steady", "off"];
    generate(dir, "legend", 2, 140, &policies, &[1.0, 0.95, 0.9, 0.85, 0.85, 0.85, 1.0], 5);
    let svg = dir.join("fig.svg");
    let o = run(&[dir.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    let tags = || text.split('<').skip(1).map(|t| t.split('>').next().unwrap());
    let num = |v: &str| v.parse::<f64>().unwrap();
    // Legend names: upright, left-aligned; the box plot's names are turned.
    let legend_x: Vec<f64> = text
        .split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>'))
        .filter(|(tag, rest)| {
            !tag.contains("transform") && policies.contains(&rest.split("</text>").next().unwrap().trim())
        })
        .map(|(tag, _)| num(attr(tag, "x").unwrap()))
        .collect();
    assert_eq!(legend_x.len(), 2 * policies.len(), "a legend in the CDF and in the series: {legend_x:?}");
    // Each legend's left edge (its swatches' and frame's): data of its panel lie left of it.
    let mut lefts: Vec<f64> = tags()
        .filter(|t| t.starts_with("rect") && attr(t, "width") == Some("16"))
        .map(|t| num(attr(t, "x").unwrap()))
        .collect();
    lefts.dedup();
    assert_eq!(lefts.len(), 2, "{lefts:?}");
    let colours: Vec<String> = COLOURS.iter().map(|c| format!("#{:02X}{:02X}{:02X}", c[0], c[1], c[2])).collect();
    let coloured =
        |t: &str| ["fill", "stroke"].iter().any(|a| attr(t, a).is_some_and(|c| colours.iter().any(|k| k == c)));
    let mut xs = Vec::new();
    for t in tags().filter(|t| coloured(t)) {
        if t.starts_with("circle") {
            xs.push(num(attr(t, "cx").unwrap()));
        } else if t.starts_with("polyline") {
            xs.extend(attr(t, "points").unwrap().split_whitespace().map(|p| num(p.split(',').next().unwrap())));
        }
    }
    let width = 1500.0 / 3.0;
    for left in &lefts {
        let panel = (left / width).floor();
        let mine: Vec<f64> = xs.iter().copied().filter(|x| (x / width).floor() == panel).collect();
        assert!(mine.len() > 50, "the panel's data: {mine:?}");
        assert!(mine.iter().all(|x| x < &(left - 6.0)), "legend at {left}, data up to {mine:?}");
    }
    let png = dir.join("fig.png");
    assert!(run(&[dir.to_str().unwrap(), "--plot", png.to_str().unwrap()]).status.success());
    check_png(&png, COLOURS.len());
}

/// Run chromium headless with a deadline; a missing chromium is a failure that says what to do.
fn chromium(args: &[&str], profile: &Path) -> Output {
    let exe = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].into_iter().find(|p| Path::new(p).exists());
    let Some(exe) = exe else {
        panic!("chromium is not installed: run scripts/setup (it installs Debian's chromium) to check the HTML report");
    };
    let mut child = Command::new(exe)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let mut out = out;
        std::io::Read::read_to_end(&mut out, &mut s).unwrap();
        s
    });
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Output { status, stdout: reader.join().unwrap(), stderr: Vec::new() };
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium did not finish in 90 s: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn html_page_renders_in_a_headless_browser() {
    let folder = tmp("html");
    let dir = folder.path();
    generate(dir, "web", 4, 200, &["ADAPTIVE0", "ADAPTIVE3"], &[1.0, 0.8], 4);
    // A policy name that would be markup if not escaped.
    let evil = "<b>x</b>";
    let mut rows = Vec::new();
    for i in 0..40 {
        rows.push(row(i, ["p1", evil][i as usize % 2], 0, 2_000_000 + i * 100, None));
    }
    write_record(dir, &header("evil", 0, 1, &["p1", evil]), &rows);
    let page = dir.join("report.html");
    let o = run(&[dir.to_str().unwrap(), "--html", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<b>x</b>") && html.contains("&lt;b&gt;x&lt;/b&gt;"));
    for external in ["src=", "href=", "<script", "@import", "url("] {
        assert!(!html.contains(external), "external resource? {external}");
    }
    let url = format!("file://{}", page.display());
    let profile = dir.join("profile");
    let dom = String::from_utf8_lossy(&chromium(&["--dump-dom", &url], &profile).stdout).into_owned();
    for name in ["ADAPTIVE0", "ADAPTIVE3"] {
        assert!(dom.contains(&format!("<tr class=\"policy\" data-policy=\"{name}\">")), "{name} row:\n{dom}");
    }
    let svgs = dom.matches("<svg").count();
    assert_eq!(svgs, 2, "one inline figure per experiment");
    let web = &dom[dom.find("experiment \"web\"").unwrap()..];
    let figure = &web[web.find("<svg").unwrap()..web.find("</svg>").unwrap()];
    let texts = svg_texts(figure);
    for name in ["ADAPTIVE0", "ADAPTIVE3"] {
        assert!(texts.iter().any(|t| t == name), "{name} in the SVG: {texts:?}");
    }
    let shot = dir.join("shot.png");
    let _ = chromium(&[&format!("--screenshot={}", shot.display()), "--window-size=1200,2000", &url], &profile);
    let (w, h, px) = decode_png(&shot);
    assert_eq!((w, h), (1200, 2000));
    let inked = px.iter().filter(|p| **p != [255, 255, 255]).count();
    assert!(inked > px.len() / 100, "screenshot nearly blank: {inked} pixels");
    assert!(px.iter().any(|p| *p == COLOURS[0]) && px.iter().any(|p| *p == COLOURS[1]), "policy colours on screen");
}

#[test]
fn reads_the_simulators_records() {
    let folder = tmp("sim");
    let dir = folder.path();
    let o = aar()
        .args(["sim", "run", "--groups", "3", "--global-per-router", "2", "--workload", "alltoall:4K", "--ranks", "4"])
        .args(["--placement", "scattered", "--policy", "ADAPTIVE0,ADAPTIVE3", "--iterations", "12", "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let j = json_of(&o);
    let e = &j["experiments"][0];
    assert_eq!((e["source"].as_str(), e["clock"].as_str()), (Some("sim"), Some("simulated")));
    assert_eq!((e["ranks"].as_u64(), e["iterations_used"].as_u64()), (Some(4), Some(12)));
    for name in ["ADAPTIVE0", "ADAPTIVE3"] {
        let p = policy(&j, name);
        assert_eq!(p["iterations"], 6);
        assert!(p["median_ns"].as_f64().unwrap() > 0.0);
        let own = p["modes"].as_array().unwrap().iter().find(|m| m["mode"] == name).unwrap();
        assert_eq!(own["share"], 1.0, "a pinned policy sends all its bytes in its mode: {p}");
    }
}

/// A schedule that names a policy twice (A,B,A: A in two iterations of three; libaar.so and aar sim
/// refuse to write one, an older aar sim did) gives one row per policy with all its iterations, not
/// an empty row for the second A.
#[test]
fn a_policy_named_twice_in_the_schedule_is_one_row() {
    let folder = tmp("sim-twice");
    let dir = folder.path();
    let schedule = ["ADAPTIVE0", "ADAPTIVE3", "ADAPTIVE0"];
    let rows: Vec<Iteration> = (0..12u64).map(|i| row(i, schedule[i as usize % 3], 0, 1000 + i, None)).collect();
    write_record(dir, &header("twice", 0, 1, &schedule), &rows);
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let j = json_of(&o);
    let e = &j["experiments"][0];
    let rows: Vec<(&str, u64)> = e["policy_stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["policy"].as_str().unwrap(), p["iterations"].as_u64().unwrap()))
        .collect();
    assert_eq!(rows, [("ADAPTIVE0", 8), ("ADAPTIVE3", 4)], "{e}");
    let err = stderr(&o);
    assert_eq!(err.lines().filter(|l| l.contains("names ADAPTIVE0 more than once")).count(), 1, "{err}");
    let csv = stdout(&run(&[dir.to_str().unwrap(), "--csv"]));
    assert_eq!(csv.lines().count(), 3, "a header and one line per policy: {csv}");
}

#[test]
fn indices_in_any_order_and_repeated_ones() {
    let folder = tmp("order");
    let dir = folder.path();
    // Descending indices, and iteration 7 written twice (the second is skipped with a warning).
    let mut rows: Vec<Iteration> =
        (0..20u64).rev().map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1000 + i, None)).collect();
    rows.push(row(7, "B", 0, 99_999, None));
    let path = write_record(dir, &header("o", 0, 1, &["A", "B"]), &rows);
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert_eq!(mentions(&err, &path), 1, "{err}");
    assert!(err.contains("1 row repeats an iteration index already read (first: 7)"), "{err}");
    let j = json_of(&o);
    assert_eq!(j["experiments"][0]["iterations_used"], 20);
    assert_eq!(j["experiments"][0]["warmup_rows"], 0);
    assert_eq!(policy(&j, "B")["max_ns"], 1019.0);
}

/// Two runs without a job id in one folder share the experiment name "nojob": the ranks of the
/// run with another number of ranks, or beyond the first run's ranks, are not mixed into it.
#[test]
fn another_run_of_the_same_name_is_not_mixed_in() {
    let folder = tmp("same-name");
    let dir = folder.path();
    let pol = ["A", "B"];
    let rows = |ns: u64| -> Vec<Iteration> { (0..10).map(|i| row(i, pol[i as usize % 2], 0, ns, None)).collect() };
    for rank in 0..4 {
        write_record(dir, &header("nojob", rank, 4, &pol), &rows(1_000_000));
    }
    // The other run: 6 ranks, ten times slower; its ranks 0..3 repeat the first run's.
    let other = dir.join("other");
    std::fs::create_dir(&other).unwrap();
    let mut later = Vec::new();
    for rank in 0..6 {
        later.push(write_record(&other, &header("nojob", rank, 6, &pol), &rows(10_000_000)));
    }
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    let e = &json_of(&o)["experiments"][0];
    for path in &later[4..] {
        assert_eq!(mentions(&err, path), 1, "{err}");
    }
    assert!(err.contains("has ranks 6 where rank 0") && err.contains("another run of the same name"), "{err}");
    assert_eq!(e["ranks"], 4, "{e}");
    assert_eq!(policy(&json_of(&o), "A")["median_ns"].as_f64(), Some(1_000_000.0), "the first run's times only");
    // A rank beyond the run's ranks is said too.
    let beyond = write_record(dir, &header("nojob", 9, 4, &pol), &rows(10_000_000));
    let err = stderr(&run(&[dir.to_str().unwrap()]));
    assert!(
        err.contains(&format!("{}: rank 9 of experiment \"nojob\" is outside its 4 ranks", beyond.display())),
        "{err}"
    );
}

/// A run of one rank: a record of another rank under its name is outside its 1 rank (in the singular).
#[test]
fn a_rank_beyond_a_run_of_one_rank_is_said_in_the_singular() {
    let folder = tmp("one-rank");
    let dir = folder.path();
    let pol = ["A", "B"];
    let rows: Vec<Iteration> = (0..10).map(|i| row(i, pol[i as usize % 2], 0, 1_000_000, None)).collect();
    write_record(dir, &header("solo", 0, 1, &pol), &rows);
    let beyond = write_record(dir, &header("solo", 3, 1, &pol), &rows);
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "{}: rank 3 of experiment \"solo\" is outside its 1 rank (0 to 0): skipped",
            beyond.display()
        )),
        "{err}"
    );
}

/// Ranks the header counts but no record has rows of are named, with where their records would
/// be and what to check: the job's AAR_OUTPUT_DIR, or aar sim's --out folder.
#[test]
fn missing_ranks_are_said_with_where_their_records_would_be() {
    let folder = tmp("missing");
    let dir = folder.path();
    let pol = ["A", "B"];
    let rows: Vec<Iteration> = (0..10).map(|i| row(i, pol[i as usize % 2], 0, 1_000_000, None)).collect();
    write_record(dir, &header("m4", 0, 4, &pol), &rows);
    let mut sim = header("s3", 0, 3, &pol);
    sim.source = Source::Sim;
    write_record(dir, &sim, &rows);
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said = |exp: &str| {
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(&format!("\"{exp}\": the header says"))).collect();
        assert_eq!(lines.len(), 1, "{err}");
        lines[0].to_string()
    };
    let job = said("m4");
    assert!(
        job.contains(
            "the header says 4 ranks but 1 rank has usable rows (missing: 1, 2 and 3); the iteration times are those \
             of the ranks read. A missing rank's record would be aar.m4.1.<pid>.iterations.jsonl in the folder \
             AAR_OUTPUT_DIR named in the job: give every folder that holds one"
        ) && job.contains("AAR_OUTPUT_RANKS leaves out"),
        "{job}"
    );
    // Of 20 ranks, the first 8 missing named and the other 11 counted.
    write_record(dir, &header("m20", 0, 20, &pol), &rows);
    let err = stderr(&run(&[dir.to_str().unwrap()]));
    assert!(
        err.contains(
            "the header says 20 ranks but 1 rank has usable rows (missing: 1, 2, 3, 4, 5, 6, 7, 8 and 11 more)"
        ),
        "{err}"
    );
    let sim = said("s3");
    assert!(
        sim.contains("record would be aar.s3.1.<pid>.iterations.jsonl in the folder aar sim run --out named")
            && !sim.contains("AAR_OUTPUT"),
        "{sim}"
    );
}

/// From 2,000,000,000 iterations × resamples one note says, before the bootstrap starts, that it
/// may take a while and how to make it faster; below, none. The note is read as it comes and the
/// report stopped then: how long the bootstrap takes is not what is checked.
#[test]
fn a_long_bootstrap_is_announced_by_its_size() {
    use std::io::BufRead;
    let folder = tmp("long-bootstrap");
    let dir = folder.path();
    generate(dir, "big", 1, 200, &["A", "B"], &[1.0, 1.1], 1);
    let mut child = aar()
        .args(["report", dir.to_str().unwrap(), "--resamples", "10000000"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let note = lines.map_while(Result::ok).find(|l| l.contains("may take a while"));
    let _ = child.kill();
    child.wait().unwrap();
    assert_eq!(
        note.as_deref(),
        Some(
            "aar: 200 iterations × 10000000 resamples: the bootstrap intervals may take a while (their time grows \
             with both); fewer resamples make it faster in proportion (--resamples N, at least 100; the intervals \
             then move a little more from one --seed to the next)"
        )
    );
    // A tenth of that: no note.
    let o = run(&[dir.to_str().unwrap(), "--resamples", "1000000"]);
    assert!(o.status.success() && !stderr(&o).contains("take a while"), "{}", stderr(&o));
}

/// A PMIx launcher run inside a Slurm step: its rank 0 is the first daemon's SLURM_PROCID 0 and
/// takes the daemons' SLURM_NTASKS (2) as its number of ranks, the other ranks know none. Every
/// rank is reported, and none is said to be beyond the run's ranks.
#[test]
fn a_number_of_ranks_only_some_ranks_know_skips_no_rank() {
    let folder = tmp("daemons");
    let dir = folder.path();
    let pol = ["A", "B"];
    let rows: Vec<Iteration> = (0..10).map(|i| row(i, pol[i as usize % 2], 0, 1_000_000, None)).collect();
    for rank in 0..6 {
        let mut h = header("pmix", rank, 2, &pol);
        if rank > 0 {
            h.nranks = None;
        }
        write_record(dir, &h, &rows);
    }
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("skipped") && !err.contains("the header says"), "{err}");
    assert_eq!(json_of(&o)["experiments"][0]["ranks"], 6, "{err}");
}

/// What the report cannot take in is said, never dropped in silence: a folder of summary records
/// only beside one of iterations, a report that cannot be written, a font that is no file.
#[test]
fn inputs_and_outputs_it_cannot_use_are_said() {
    let folder = tmp("said");
    let dir = folder.path();
    let iterations = dir.join("iterations");
    std::fs::create_dir(&iterations).unwrap();
    generate(&iterations, "ok", 2, 10, &["A", "B"], &[1.0, 1.0], 1);
    let summaries = dir.join("summaries");
    std::fs::create_dir(&summaries).unwrap();
    std::fs::write(summaries.join("aar.5.0.10.json"), r#"{"format":"aar-record/2","job_id":"5","rank":0}"#).unwrap();
    let o = run(&[iterations.to_str().unwrap(), summaries.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{}: summary records only, no iteration record: left out", summaries.display())),
        "{}",
        stderr(&o)
    );
    // A summary record beside a rank's iterations, cut short: named, where its rank's health
    // would be told.
    let cut = iterations.join("aar.ok.1.101.json");
    std::fs::write(&cut, r#"{"format":"aar-record/2","internal_errors":5,"#).unwrap();
    let err = stderr(&run(&[iterations.to_str().unwrap()]));
    assert!(err.contains(&format!("{}: not a whole summary record", cut.display())), "{err}");
    assert!(err.contains("rank 1's health is not checked"), "{err}");
    std::fs::remove_file(&cut).unwrap();
    // A --skip past every iteration: said as such, and no summary stands in for the comparison.
    let o = run(&[iterations.to_str().unwrap(), "--skip", "1000"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--skip 1000 leaves out every one of its iterations (20 rows)"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("usable rows") && stdout(&o).is_empty(), "{}", stderr(&o));
    // A full disk under `aar report DIR > FILE`: said, and exit 1.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = aar().arg("report").arg(&iterations).stdout(Stdio::from(full)).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("the output could not be written to the standard output"), "{}", stderr(&o));
    // A reader that goes away early is not an error.
    let mut child = aar().arg("report").arg(&iterations).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // AAR_REPORT_FONT naming a FIFO (opening it would wait for a writer forever) or a device.
    let fifo = dir.join("font.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for font in [fifo.as_path(), Path::new("/dev/zero")] {
        let svg = dir.join("p.svg");
        let mut child = aar()
            .arg("report")
            .arg(&iterations)
            .arg("--plot")
            .arg(&svg)
            .env("AAR_REPORT_FONT", font)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{font:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("no usable TrueType font") && svg.exists(), "{font:?}: {}", stderr(&o));
    }
}

/// Special files with a record's name in a folder (a FIFO, whose opening would wait for a writer
/// forever, a socket, a link to nothing) are said once each, naming them; unfinished records
/// (`*.partial`, left by a job killed while libaar.so wrote them) are counted once per folder.
#[test]
fn special_and_unfinished_files_in_a_folder_are_said_once() {
    let folder = tmp("special");
    let dir = folder.path();
    generate(dir, "sp", 2, 10, &["A", "B"], &[1.0, 1.0], 1);
    let fifo = dir.join("aar.sp.2.102.iterations.jsonl");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let socket = dir.join("aar.sp.3.103.json");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let dangling = dir.join("aar.sp.4.104.iterations.jsonl");
    std::os::unix::fs::symlink(dir.join("gone"), &dangling).unwrap();
    let sub = dir.join("late");
    std::fs::create_dir(&sub).unwrap();
    let summary = r#"{"format":"aar-record/2","job_id":"sp","rank":5,"pid":105}"#;
    for name in ["aar.sp.5.105.json.partial", "aar.sp.6.106.json.partial", "notes.partial"] {
        std::fs::write(sub.join(name), summary).unwrap();
    }
    let mut child = aar().arg("report").arg(dir).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    for (path, what) in [(&fifo, "a FIFO"), (&socket, "a socket"), (&dangling, "a symbolic link to")] {
        assert_eq!(mentions(&err, path), 1, "{}:\n{err}", path.display());
        let line = err.lines().find(|l| l.contains(path.to_str().unwrap())).unwrap();
        assert!(line.contains(what) && line.ends_with("skipped"), "{line}");
    }
    let partial: Vec<&str> = err.lines().filter(|l| l.contains(".partial")).collect();
    assert_eq!(partial.len(), 1, "{err}");
    assert!(partial[0].starts_with(&format!("aar: {}: 2 unfinished records", sub.display())), "{err}");
    assert!(partial[0].contains("stopped before it finished"), "{err}");
    assert_eq!(err.lines().count(), 4, "nothing else: {err}");
    assert!(stdout(&o).contains("10 iterations used"), "{}", stdout(&o));
}

/// A loop of symbolic links (`ln -s a b.iterations.jsonl; ln -s b.iterations.jsonl a`) is said
/// as one, with its links and how to mend it, in a folder and named on the command line; the
/// records beside it are reported.
#[test]
fn a_loop_of_symbolic_links_is_said_as_one() {
    let folder = tmp("loop");
    let dir = folder.path();
    generate(dir, "lp", 1, 10, &["A", "B"], &[1.0, 1.0], 1);
    let link = dir.join("b.iterations.jsonl");
    std::os::unix::fs::symlink("a", &link).unwrap();
    std::os::unix::fs::symlink("b.iterations.jsonl", dir.join("a")).unwrap();
    for input in [dir, link.as_path()] {
        let o = run(&[input.to_str().unwrap()]);
        let err = stderr(&o);
        let line = err.lines().find(|l| l.contains(link.to_str().unwrap())).unwrap_or_else(|| panic!("{err}"));
        assert!(
            line.ends_with(&format!(
                "{0}: a loop of symbolic links ({0} -> a -> b.iterations.jsonl): no file at its end (ELOOP): \
                 skipped. Point the link at a record (ln -sfn FILE {0}) or remove it",
                link.display()
            )),
            "{line}"
        );
        assert!(!err.contains("does not exist") && !err.contains("Too many levels"), "{err}");
    }
    assert!(stdout(&run(&[dir.to_str().unwrap()])).contains("10 iterations used"));
}

/// A record renamed to a name that is not UTF-8 (`é` in Latin-1, as a shell in another locale
/// writes it) is still found in its folder, and the folder is not said to hold no record.
#[test]
fn a_record_whose_name_is_not_utf8_is_found_in_its_folder() {
    use std::os::unix::ffi::OsStrExt;
    let folder = tmp("not-utf8");
    let dir = folder.path();
    generate(dir, "nu", 1, 10, &["A", "B"], &[1.0, 1.0], 1);
    std::fs::remove_file(dir.join("aar.nu.0.100.json")).unwrap();
    let renamed = dir.join(std::ffi::OsStr::from_bytes(b"run\xe9.iterations.jsonl"));
    std::fs::rename(record_path(dir, "nu", 0), &renamed).unwrap();
    let o = run(&[dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("10 iterations used"), "{}", stdout(&o));
    assert!(!stderr(&o).contains("holds no"), "{}", stderr(&o));
}

/// A record of a newer format is skipped with a word to upgrade aar, and a summary record's
/// fields of another JSON type than libaar.so writes are named, once per file, and read as absent.
#[test]
fn newer_formats_and_fields_of_the_wrong_type_are_said_once_per_file() {
    let folder = tmp("versions");
    let dir = folder.path();
    generate(dir, "v", 3, 10, &["A", "B"], &[1.0, 1.0], 1);
    let mut text = Vec::new();
    write_line(&mut text, &header("v", 3, 3, &["A", "B"])).unwrap();
    let text = String::from_utf8(text).unwrap().replace(FORMAT, "aar-iterations/2");
    let newer = dir.join("aar.v.3.103.iterations.jsonl");
    std::fs::write(&newer, text).unwrap();
    let summary = |rank: u32, format: &str, extra: Value| {
        let mut rec = serde_json::json!({
            "format": format, "job_id": "v", "rank": rank, "pid": 100 + rank, "host": "h",
            "policy_at_exit": "A", "internal_errors": 0, "counters": { "backend": "papi", "reads": 10 },
            "modes": { "ADAPTIVE0": { "messages": 2, "bytes": 64 } },
        });
        for (k, v) in extra.as_object().unwrap() {
            rec[k] = v.clone();
        }
        rec.to_string()
    };
    let newer_summary = dir.join("aar.v.0.100.json");
    std::fs::write(&newer_summary, summary(0, "aar-record/3", serde_json::json!({}))).unwrap();
    let typed = dir.join("aar.v.1.101.json");
    let wrong = serde_json::json!({ "internal_errors": "5", "counters": { "backend": "papi", "reads": -3 } });
    std::fs::write(&typed, summary(1, "aar-record/2", wrong)).unwrap();
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    for p in [&newer, &newer_summary, &typed] {
        assert_eq!(mentions(&err, p), 1, "{}:\n{err}", p.display());
    }
    let line = |p: &Path| err.lines().find(|l| l.contains(p.to_str().unwrap())).unwrap();
    assert!(line(&newer).contains("\"aar-iterations/2\"") && line(&newer).contains("upgrade aar"), "{err}");
    assert!(line(&newer).ends_with("skipped"), "{err}");
    let l = line(&newer_summary);
    assert!(
        l.contains("\"aar-record/3\"") && l.contains("upgrade aar") && l.contains("rank 0's health is not checked")
    );
    let l = line(&typed);
    assert!(l.contains("\"internal_errors\" is \"5\"") && l.contains("\"counters/reads\" is -3"), "{l}");
    assert!(l.contains("read as absent"), "{l}");
    assert!(!err.contains("internal errors on"), "a string is not 5 internal errors: {err}");
    // Summary records alone: summed per job, the bad field left out of the sums and said once.
    let only = tmp("versions-summaries");
    let bad_bytes = serde_json::json!({ "modes": { "ADAPTIVE0": { "messages": 2, "bytes": "64" } } });
    let bad = only.path().join("aar.v.1.101.json");
    std::fs::write(only.path().join("aar.v.0.100.json"), summary(0, "aar-record/2", serde_json::json!({}))).unwrap();
    std::fs::write(&bad, summary(1, "aar-record/2", bad_bytes)).unwrap();
    let o = run(&[only.path().to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert_eq!(mentions(&err, &bad), 1, "{err}");
    assert!(err.contains("\"modes/ADAPTIVE0/bytes\" is \"64\" where a whole number"), "{err}");
    let j = json_of(&o);
    assert_eq!(j["jobs"][0]["records"], 2);
    assert_eq!(j["jobs"][0]["modes"]["ADAPTIVE0"]["bytes"], 64, "only the good record's bytes");
}

/// A header whose rank is not one (a record damaged or edited) is said naming the file, the
/// field and what was done, not read as rank 0 or as a process without a rank.
#[test]
fn a_header_whose_rank_is_not_one_is_said_naming_the_field() {
    let folder = tmp("bad-rank");
    let dir = folder.path();
    generate(dir, "r", 2, 10, &["A", "B"], &[1.0, 1.0], 1);
    let mut bad = Vec::new();
    for (rank, text) in [(1u32, "\"1\""), (2, "-1")] {
        let path = record_path(dir, "r", rank);
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        let mut text_of = Vec::new();
        write_line(&mut text_of, &header("r", rank, 2, &["A", "B"])).unwrap();
        let head =
            String::from_utf8(text_of).unwrap().replace(&format!("\"rank\":{rank}"), &format!("\"rank\":{text}"));
        let rows: String = old.lines().skip(1).map(|l| format!("{l}\n")).collect();
        let rows = if rows.is_empty() {
            format!("{}\n", serde_json::to_string(&row(0, "A", 0, 1_000_000, None)).unwrap())
        } else {
            rows
        };
        std::fs::write(&path, head + &rows).unwrap();
        bad.push(path);
    }
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    for p in &bad {
        assert_eq!(mentions(&err, p), 1, "{}:\n{err}", p.display());
        let line = err.lines().find(|l| l.contains(p.to_str().unwrap())).unwrap();
        assert!(line.contains("has a bad header (its \"rank\" cannot be read: invalid "), "{line}");
        assert!(
            line.contains("skipped, with its rows") && line.ends_with("run the job again for a clean one)"),
            "{line}"
        );
    }
    let j = json_of(&o);
    assert_eq!(j["experiments"].as_array().unwrap().len(), 1, "{j}");
    assert_eq!(j["experiments"][0]["ranks"], 1, "rank 0 alone: {j}");
}

/// A rank read twice is said with what the second record is: a copy of the first (the same
/// process), or another process's, from another run of the same name, with what to do.
#[test]
fn a_rank_read_twice_is_said_as_a_copy_or_as_another_process() {
    let folder = tmp("rank-twice");
    let dir = folder.path();
    generate(dir, "t", 2, 10, &["A", "B"], &[1.0, 1.0], 1);
    let (copies, others) = (dir.join("copies"), dir.join("others"));
    std::fs::create_dir(&copies).unwrap();
    std::fs::create_dir(&others).unwrap();
    let first = record_path(dir, "t", 1);
    let copy = copies.join(first.file_name().unwrap());
    std::fs::copy(&first, &copy).unwrap();
    let rows: Vec<Iteration> = (0..10).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect();
    let other = write_record(&others, &Header { pid: Some(999), ..header("t", 1, 2, &["A", "B"]) }, &rows);
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    // Said once each, by path (the three have one name).
    let said_of = |p: &Path| err.lines().filter(|l| l.starts_with(&format!("aar: {}: ", p.display()))).count();
    assert_eq!((said_of(&first), said_of(&copy), said_of(&other)), (0, 1, 1), "{err}");
    let line = |p: &Path| err.lines().find(|l| l.starts_with(&format!("aar: {}: ", p.display()))).unwrap();
    let said =
        format!("rank 1 of experiment \"t\" was already read from {}, of the same process (pid 101)", first.display());
    assert!(line(&copy).contains(&said) && line(&copy).contains("skipped as a copy of it"), "{err}");
    let said = format!("already read from {}, of another process (pid 101, where this is pid 999)", first.display());
    assert!(line(&other).contains(&said) && line(&other).contains("give each run its own AAR_OUTPUT_DIR"), "{err}");
    assert_eq!(json_of(&o)["experiments"][0]["ranks"], 2);
}

/// Text a record carries (a rank's kept messages, the policy at exit, mode names) reaches the
/// terminal with its control characters shown as `?`: no escape sequence, no forged line.
#[test]
fn text_from_records_cannot_drive_the_terminal() {
    let folder = tmp("escapes");
    let dir = folder.path();
    let esc = "\u{1b}[2J\u{1b}[31mred\nforged line";
    let summary = |rank: u32, messages: Vec<&str>| {
        serde_json::json!({
            "format": "aar-record/2", "job_id": "7", "rank": rank, "pid": 10 + rank, "host": "h",
            "policy_at_exit": esc, "modes": { esc: { "messages": 1, "bytes": 8 } }, "messages": messages,
        })
    };
    std::fs::write(dir.join("aar.7.0.10.json"), summary(0, vec![]).to_string()).unwrap();
    std::fs::write(dir.join("aar.7.1.11.json"), summary(1, vec![esc]).to_string()).unwrap();
    let o = run(&[dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for text in [stdout(&o), stderr(&o)] {
        assert!(!text.contains('\u{1b}') && !text.contains("\nforged line"), "{text:?}");
    }
    assert!(stdout(&o).contains("?[2J?[31mred?forged line"), "{}", stdout(&o));
    assert!(stderr(&o).contains("kept a warning that rank 0 did not print"), "{}", stderr(&o));
}

/// `--pool` says which of the policies or the mode columns kept an experiment out.
#[test]
fn pool_names_what_differs() {
    let folder = tmp("pool-modes");
    let dir = folder.path();
    let policies = ["A", "B"];
    generate(dir, "job0", 2, 20, &policies, &[1.0, 1.0], 1);
    generate(dir, "job1", 2, 20, &policies, &[1.0, 1.0], 2);
    let mut h = header("sim", 0, 1, &policies);
    h.modes = vec!["UGAL".into(), "ADAPTIVE3".into()];
    write_record(dir, &h, &(0..20).map(|i| row(i, policies[i as usize % 2], 0, 1_000_000, None)).collect::<Vec<_>>());
    let err = stderr(&run(&[dir.to_str().unwrap(), "--pool"]));
    let said: Vec<&str> = err.lines().filter(|l| l.contains("--pool: experiment \"sim\"")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("has the mode columns UGAL,ADAPTIVE3 where \"job0\" has ADAPTIVE0,ADAPTIVE3"), "{err}");
}

/// A summary record renamed and named on the command line is read as one, without a warning
/// that it was skipped as an iteration record.
#[test]
fn a_renamed_summary_record_is_read_as_one() {
    let folder = tmp("renamed");
    let path = folder.path().join("rank0.json");
    let rec = serde_json::json!({
        "format": "aar-record/2", "job_id": "8", "rank": 0, "pid": 5, "host": "h", "policy_at_exit": "auto",
        "modes": { "ADAPTIVE3": { "messages": 4, "bytes": 64 } },
    });
    std::fs::write(&path, rec.to_string()).unwrap();
    let o = run(&[path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("job \"8\": 1 summary record"), "{}", stdout(&o));
}

/// Summary records without a job id are summed per program, not all together: runs of different
/// programs outside a batch job are not one job.
#[test]
fn summaries_without_a_job_id_are_summed_per_program() {
    let folder = tmp("nojob-programs");
    for (pid, program) in [(1, "/x/pingpong"), (2, "./pingpong"), (3, "/y/smallmsg")] {
        let rec = serde_json::json!({
            "format": "aar-record/2", "job_id": null, "rank": null, "pid": pid, "host": "h",
            "command_line": [program, "--iters", "3"], "policy_at_exit": "auto",
            "modes": { "ADAPTIVE3": { "messages": pid, "bytes": 8 } },
        });
        std::fs::write(folder.path().join(format!("aar.nojob.norank.{pid}.json")), rec.to_string()).unwrap();
    }
    let j = json_of(&run(&[folder.path().to_str().unwrap(), "--json"]));
    let jobs: Vec<(String, u64, u64)> = j["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|job| {
            let messages = job["modes"]["ADAPTIVE3"]["messages"].as_u64().unwrap();
            (job["program"].as_str().unwrap().to_string(), job["records"].as_u64().unwrap(), messages)
        })
        .collect();
    assert_eq!(jobs, [("pingpong".to_string(), 2, 3), ("smallmsg".to_string(), 1, 3)]);
    let text = stdout(&run(&[folder.path().to_str().unwrap()]));
    assert!(text.contains("records of pingpong without a job id: 2 summary records"), "{text}");
}

/// A process without a rank (`aar.nojob.norank.<pid>.json`, no `rank` in its record) is not rank 0,
/// and processes without a rank are not one rank: each is named by its record's file, and one
/// that prints its own warnings (as rank 0 does) is not taken for rank 0 that did not print a
/// rank's.
#[test]
fn processes_without_a_rank_are_named_by_their_records_not_as_rank_0() {
    let folder = tmp("norank");
    let dir = folder.path();
    let write = |name: &str, rank: Value, pid: u64, errors: u64, messages: &[&str]| {
        let rec = serde_json::json!({
            "format": "aar-record/2", "job_id": null, "rank": rank, "pid": pid, "host": "h",
            "command_line": ["/x/pingpong"], "policy_at_exit": "static", "internal_errors": errors,
            "messages": messages,
        });
        let path = dir.join(name);
        std::fs::write(&path, rec.to_string()).unwrap();
        path
    };
    write("aar.nojob.norank.1.json", Value::Null, 1, 0, &["warning A"]);
    let erring = write("aar.nojob.norank.2.json", Value::Null, 2, 1, &[]);
    write("aar.nojob.1.3.json", 1.into(), 3, 0, &["warning B"]);
    let o = run(&[dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said = format!(
        "aar: records of pingpong without a job id: libaar.so caught 1 internal error on the process without a \
         rank of {} (1 of the 3 processes with a summary record)",
        erring.display()
    );
    assert!(err.contains(&said), "{err}");
    assert!(!err.contains("rank 0"), "no record is rank 0's: {err}");
    assert!(stdout(&o).contains("3 summary records, rank 1 on 1 host"), "{}", stdout(&o));
}

/// A libaar.so older than `rank: null` wrote rank 0 in the iteration record of a process that
/// knew none, and named the record `norank`: two such processes' records in one folder are two
/// processes, each an experiment of its own, not one rank 0 read twice of which one is skipped.
#[test]
fn older_records_of_processes_without_a_rank_are_not_rank_0() {
    let folder = tmp("older-norank");
    let dir = folder.path();
    for pid in [11u32, 12] {
        let h = Header { rank: Some(0), nranks: None, pid: Some(pid), ..header(aar_record::NO_JOB, 0, 1, &["A", "B"]) };
        let mut out = Vec::new();
        write_line(&mut out, &h).unwrap();
        for i in 0..6 {
            write_line(&mut out, &row(i, ["A", "B"][i as usize % 2], 0, 1_000_000 + i * 1000, None)).unwrap();
        }
        std::fs::write(dir.join(aar_record::iterations_file_name(None, None, pid)), out).unwrap();
    }
    // A job's rank 0, named so, is rank 0 still.
    write_record(dir, &header("j", 0, 1, &["A", "B"]), &[row(0, "A", 0, 1_000_000, None)]);
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert!(!err.contains("already read"), "{err}");
    let j = json_of(&o);
    let experiments = j["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 3, "one per process, and the job's: {j}");
    for e in experiments.iter().filter(|e| e["experiment"] == aar_record::NO_JOB) {
        assert_eq!((&e["ranks"], &e["iterations_used"]), (&1.into(), &6.into()), "{e}");
        assert_eq!(e["per_rank"], serde_json::json!([]), "no ranks to compare: {e}");
    }
    let job = experiments.iter().find(|e| e["experiment"] == "j").unwrap();
    assert_eq!(job["per_rank"][0]["fastest_rank"], 0, "{job}");
}

/// A record named `norank` whose header gives a rank (edited, or a rank's record renamed) is read
/// as its name says, a process without a rank, and that is said: not as that rank of the job.
#[test]
fn a_norank_record_whose_header_gives_a_rank_is_read_as_its_names_and_said() {
    let folder = tmp("norank-with-rank");
    let dir = folder.path();
    let h = Header { rank: Some(3), pid: Some(9), ..header("j", 3, 4, &["A", "B"]) };
    let mut out = Vec::new();
    write_line(&mut out, &h).unwrap();
    for i in 0..6 {
        write_line(&mut out, &row(i, ["A", "B"][i as usize % 2], 0, 1_000_000 + i * 1000, None)).unwrap();
    }
    let path = dir.join(aar_record::iterations_file_name(Some("j"), None, 9));
    std::fs::write(&path, out).unwrap();
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    let said = err.lines().find(|l| l.contains(path.to_str().unwrap())).unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        said,
        format!(
            "aar: {}: its header gives rank 3 and its name none (norank), which libaar.so and aar sim write the \
             same: read as a process without a rank, an experiment of its own, as the summary record beside it is \
             (the record was edited, or renamed: give it the name or the \"rank\" of its first line that is right, \
             or run the job again for a clean one)",
            path.display()
        )
    );
    let j = json_of(&o);
    let e = &j["experiments"][0];
    assert_eq!(e["per_rank"], serde_json::json!([]), "no ranks to compare: {e}");
}

/// A copy of the iteration record of a process without a rank (in a subfolder, say) is that
/// process's record read twice: said as a copy and skipped, not reported as a second run. Another
/// process that had the same pid on the same host later (its rows begin at another time) is one.
#[test]
fn a_copy_of_a_record_of_a_process_without_a_rank_is_said_and_skipped() {
    let folder = tmp("norank-copy");
    let dir = folder.path();
    let write = |dir: &Path, later: u64| {
        let h = Header {
            rank: None,
            nranks: None,
            host: Some("login1".into()),
            pid: Some(7),
            ..header("nojob", 0, 1, &["A", "B"])
        };
        let mut out = Vec::new();
        write_line(&mut out, &h).unwrap();
        for i in 0..6 {
            let mut r = row(i, ["A", "B"][i as usize % 2], 0, 1_000_000 + i * 1000, None);
            (r.start_ns, r.end_ns) = (r.start_ns + later, r.end_ns + later);
            write_line(&mut out, &r).unwrap();
        }
        let path = dir.join(aar_record::iterations_file_name(None, None, 7));
        std::fs::write(&path, out).unwrap();
        path
    };
    let first = write(dir, 0);
    let (sub, again) = (dir.join("copy"), dir.join("again"));
    std::fs::create_dir(&sub).unwrap();
    std::fs::create_dir(&again).unwrap();
    let copy = sub.join(first.file_name().unwrap());
    std::fs::copy(&first, &copy).unwrap();
    write(&again, 3_600_000_000_000);
    let o = run(&[dir.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    let said = format!(
        "aar: {}: the process without a rank of experiment \"nojob\" was already read from {}, of the same process \
         (pid 7 on login1): skipped as a copy of it",
        copy.display(),
        first.display()
    );
    assert!(err.contains(&said), "{err}");
    let j = json_of(&o);
    let experiments = j["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 2, "the process and the later one of the same pid, not the copy: {j}");
}

/// A job of 8 ranks under real libaar.so (`aar run`) whose records only ranks 0 and 5 write
/// (`AAR_OUTPUT_RANKS=0,5`, a sample as a large job takes): the report reads the sample from the
/// summary records, says of how many ranks of the job's the times are the slowest, and does not
/// call the ranks left out missing; a rank the sample names without records is.
#[test]
fn a_sample_of_ranks_named_by_aar_output_ranks_is_reported_as_one() {
    let (dir, records, files) = job_of_8(
        "report-sample",
        "iterations",
        &["--iters", "12", "--bytes", "4K"],
        &[("AAR_OUTPUT_RANKS", "0,5"), ("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4711")],
    );
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(files[0].starts_with("aar.4711.0.") && files[2].starts_with("aar.4711.5."), "{files:?}");

    let o = run(&[records.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("the header says") && !err.contains("missing"), "{err}");
    assert!(out.contains("experiment \"4711\": job, 2 ranks of 8 (AAR_OUTPUT_RANKS=0,5), clock"), "{out}");
    assert!(
        out.contains(
            "iteration time = the slowest rank's end - start in each iteration, of the 2 ranks read of the job's 8 \
             (AAR_OUTPUT_RANKS=0,5): a slower rank without records is not seen"
        ),
        "{out}"
    );
    let j = json_of(&run(&[records.to_str().unwrap(), "--json"]));
    let e = &j["experiments"][0];
    assert_eq!((&e["ranks"], &e["ranks_expected"], &e["output_ranks"]), (&2.into(), &8.into(), &"0,5".into()), "{e}");

    // While the job runs, only the iteration records are there: their header names the sample,
    // and the ranks it leaves out are not missing.
    let running = dir.join("running");
    std::fs::create_dir(&running).unwrap();
    for f in files.iter().filter(|f| f.ends_with(".jsonl")) {
        std::fs::copy(records.join(f), running.join(f)).unwrap();
    }
    let head: Value =
        serde_json::from_str(std::fs::read_to_string(running.join(&files[0])).unwrap().lines().next().unwrap())
            .unwrap();
    assert_eq!((&head["nranks"], &head["output_ranks"]), (&8.into(), &"0,5".into()), "{head}");
    let o = run(&[running.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("the header says") && !err.contains("missing"), "{err}");
    assert!(out.contains("experiment \"4711\": job, 2 ranks of 8 (AAR_OUTPUT_RANKS=0,5), clock"), "{out}");

    // Rank 5's records gone: rank 5 is missing, and only rank 5. (With its summary record left,
    // that record says why it has no rows instead: `ranks_with_a_summary_record_but_no_rows_...`.)
    for f in files.iter().filter(|f| f.starts_with("aar.4711.5.")) {
        std::fs::remove_file(records.join(f)).unwrap();
    }
    let err = stderr(&run(&[records.to_str().unwrap()]));
    assert!(
        err.contains(
            "experiment \"4711\": the header says 8 ranks, of which AAR_OUTPUT_RANKS=0,5 names 2, but 1 rank has usable \
             rows (missing: 5); the iteration times are those of the ranks read."
        ) && !err.contains("AAR_OUTPUT_RANKS leaves out"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An example program of examples/, compiled into `dir` against the emulated libugni.
/// A job of 8 ranks of the example `name` (with `args`) under real libaar.so (`aar run`), its
/// records in a folder of their own (`env` added): the test's scratch folder, the records' folder
/// in it, and the records' names in order.
fn job_of_8(scratch: &str, name: &str, args: &[&str], env: &[(&str, &str)]) -> (PathBuf, PathBuf, Vec<String>) {
    job_of_8_under(scratch, name, None, args, env)
}

/// [`job_of_8`], each rank the shell script `script` (when given; libaar.so is preloaded in the
/// shell too, which calls no uGNI and so writes nothing), its `$1` the example, `args` after.
fn job_of_8_under(
    scratch: &str,
    name: &str,
    script: Option<&str>,
    args: &[&str],
    env: &[(&str, &str)],
) -> (PathBuf, PathBuf, Vec<String>) {
    let dir = aar_testkit::scratch(scratch);
    let prog = compile(&dir, name, &format!("examples/{name}.c"));
    let records = dir.join("records");
    std::fs::create_dir(&records).unwrap();
    let mut job = aar();
    job.args(["run", "-n", "8"]);
    if let Some(script) = script {
        job.args(["sh", "-c", script, "rank"]);
    }
    let job = job
        .arg(&prog)
        .args(args)
        .env("LD_PRELOAD", aar_testkit::libaar())
        .env("AAR_PAPI_EVENTS", aar_testkit::sde_events_setting())
        .env("AAR_OUTPUT_DIR", &records)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(job.status.success(), "{}", stderr(&job));
    let mut files: Vec<String> =
        std::fs::read_dir(&records).unwrap().map(|f| f.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    (dir, records, files)
}

/// The C program `source` (relative to the repository: an example, or the tests' driver) built into
/// `dir` as `name`, against the emulated libugni.so.
fn compile(dir: &Path, name: &str, source: &str) -> PathBuf {
    let lib = aar_testkit::libdir();
    let prog = dir.join(name);
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-pthread", "-I"])
        .arg(aar_testkit::root().join("cabi"))
        .arg("-I")
        .arg(aar_testkit::root().join("tests/c"))
        .arg(aar_testkit::root().join(source))
        .arg("-o")
        .arg(&prog)
        .arg(format!("-L{}", lib.display()))
        .args(["-lugni", "-ldl", &format!("-Wl,-rpath,{}", lib.display())])
        .status()
        .unwrap();
    assert!(st.success(), "compiling {source} failed");
    prog
}

/// A job of 8 ranks under real libaar.so without iterations (summary records only) whose records
/// ranks 0 to 5 write (`AAR_OUTPUT_RANKS=0:5`): each record says the job's number of ranks, so the
/// report says of how many ranks its records are, and names a rank of the sample whose record is
/// missing, and only that one (not the ranks the sample leaves out).
#[test]
fn a_job_of_summary_records_names_the_ranks_whose_record_is_missing() {
    let (dir, records, files) = job_of_8(
        "report-summaries-missing",
        "smallmsg",
        &["--count", "200"],
        &[("AAR_OUTPUT_RANKS", "0:5"), ("SLURM_JOB_ID", "4712")],
    );
    assert_eq!(files.len(), 6, "summary records of ranks 0 to 5 only: {files:?}");
    let rec: Value = serde_json::from_slice(&std::fs::read(records.join(&files[0])).unwrap()).unwrap();
    assert_eq!((&rec["rank"], &rec["nranks"]), (&0.into(), &8.into()), "{rec}");

    let o = run(&[records.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("missing"), "{err}");
    assert!(
        out.starts_with("job \"4712\": 6 summary records, ranks 0-5 (6 of 8 ranks, AAR_OUTPUT_RANKS=0:5) on 1 host;"),
        "{out}"
    );

    // Rank 3's record gone: rank 3 is missing, and only rank 3.
    std::fs::remove_file(records.join(files.iter().find(|f| f.starts_with("aar.4712.3.")).unwrap())).unwrap();
    let o = run(&[records.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(
        out.starts_with("job \"4712\": 5 summary records, ranks 0-5 (5 of 8 ranks, AAR_OUTPUT_RANKS=0:5)"),
        "{out}"
    );
    let said = "job \"4712\": the summary records say 8 ranks, of which AAR_OUTPUT_RANKS=0:5 names 6, but 5 ranks \
                have a summary record (missing: 3); the sums are those of the ranks read. A missing rank's record \
                would be aar.4712.3.<pid>.json in the folder AAR_OUTPUT_DIR named in the job";
    assert!(err.contains(said), "{err}");
    let j = json_of(&run(&[records.to_str().unwrap(), "--json"]));
    let job = &j["jobs"][0];
    assert_eq!((&job["ranks"], &job["ranks_expected"], &job["output_ranks"]), (&5.into(), &8.into(), &"0:5".into()));
    assert!(j["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().starts_with(said)), "{j}");

    // Rank 4's record edited: records that disagree on the job's number of ranks, or on
    // AAR_OUTPUT_RANKS, give no job size, and say what each rank's record says.
    let four = records.join(files.iter().find(|f| f.starts_with("aar.4712.4.")).unwrap());
    let edit = |change: &dyn Fn(&mut Value)| {
        let mut rec: Value = serde_json::from_slice(&std::fs::read(&four).unwrap()).unwrap();
        change(&mut rec);
        std::fs::write(&four, rec.to_string()).unwrap();
        let o = run(&[records.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stdout(&o).starts_with("job \"4712\": 5 summary records, ranks 0-5 (5 of them) on 1 host;"),
            "{}",
            stdout(&o)
        );
        assert!(!stderr(&o).contains("missing:"), "{}", stderr(&o));
        stderr(&o)
    };
    let err = edit(&|rec| rec["nranks"] = 9.into());
    assert!(
        err.contains(
            "aar: job \"4712\": its summary records disagree on the job's number of ranks: 8 (ranks 0, 1, 2 and 5) \
             and 9 (rank 4). No job size is used: the ranks are those read, and none is named missing."
        ),
        "{err}"
    );
    let err = edit(&|rec| {
        rec["nranks"] = 8.into();
        rec["settings"]["output_ranks"] = "0:4".into();
    });
    assert!(
        err.contains(
            "aar: job \"4712\": its summary records disagree on AAR_OUTPUT_RANKS: 0:5 (ranks 0, 1, 2 and 5) and \
             0:4 (rank 4). No job size is used"
        ),
        "{err}"
    );
    assert_eq!(err.matches("disagree on").count(), 1, "{err}");
    // A set that does not parse (an edited or damaged record) is said, and read as unset.
    let err = edit(&|rec| rec["settings"]["output_ranks"] = "0:x".into());
    assert!(
        err.contains(
            "\"settings/output_ranks\" is \"0:x\" where a set of ranks as AAR_OUTPUT_RANKS takes it (e.g. \
             \"0:63,128\") is expected: read as absent (not counted)"
        ) && err.contains("disagree on AAR_OUTPUT_RANKS: 0:5 (ranks 0, 1, 2 and 5) and unset (rank 4)."),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ranks of one experiment whose records disagree on `AAR_OUTPUT_RANKS` (an edited record, or
/// records of another run of the same name): which ranks write is not known, so the report says
/// what each rank's record says and uses no job size (no "of 8", no rank named missing), first
/// from the iteration records' headers (once, though the summary records disagree too), then
/// (headers of an older libaar.so without it) from the summary records.
#[test]
fn an_experiment_whose_records_disagree_on_aar_output_ranks_uses_no_job_size() {
    let folder = tmp("samples-disagree");
    let dir = folder.path();
    let rows: Vec<Iteration> = (0..6).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect();
    let summary = |rank: u32, sample: Option<&str>| {
        let rec = serde_json::json!({
            "format": "aar-record/2", "job_id": "d", "rank": rank, "nranks": 8, "pid": 100 + rank, "host": "h",
            "policy_at_exit": "A", "settings": { "output_ranks": sample },
            "ab": { "policies": ["A", "B"], "boundary": "markers", "iterations": 6 },
        });
        std::fs::write(dir.join(format!("aar.d.{rank}.{}.json", 100 + rank)), rec.to_string()).unwrap();
    };
    for (rank, sample) in [(0, "0:1"), (1, "0:1"), (5, "0,5")] {
        let h = Header { output_ranks: Some(sample.parse().unwrap()), ..header("d", rank, 8, &["A", "B"]) };
        write_record(dir, &h, &rows);
        summary(rank, Some(sample));
    }
    let o = run(&[dir.to_str().unwrap(), "--resamples", "100"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(
            "aar: experiment \"d\": its iteration records disagree on AAR_OUTPUT_RANKS: 0:1 (ranks 0 and 1) and \
             0,5 (rank 5). No job size is used: the ranks are those read, and none is named missing."
        ),
        "{err}"
    );
    assert_eq!(err.matches("disagree on").count(), 1, "{err}");
    assert!(!err.contains("missing:"), "{err}");
    assert!(out.contains("experiment \"d\": job, 3 ranks, clock"), "{out}");

    // Headers without the set (an older libaar.so): the summary records say it, and disagree.
    for (rank, sample) in [(0, Some("0:1")), (1, Some("0:1")), (5, None)] {
        write_record(dir, &header("d", rank, 8, &["A", "B"]), &rows);
        summary(rank, sample);
    }
    let o = run(&[dir.to_str().unwrap(), "--resamples", "100"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(
            "aar: experiment \"d\": its summary records disagree on AAR_OUTPUT_RANKS: 0:1 (ranks 0 and 1) and \
             unset (rank 5). No job size is used"
        ),
        "{err}"
    );
    assert_eq!(err.matches("disagree on").count(), 1, "{err}");
    assert!(!err.contains("missing:"), "{err}");
    assert!(out.contains("experiment \"d\": job, 3 ranks, clock"), "{out}");
}

/// Ranks of an A/B job with a summary record but no iteration record are named, compactly and
/// with the cause their records give, not left out silently: ranks 2, 3, 4 and 7 here ran a
/// program of the same job that marked no iteration (their records are a real job's, whose
/// libaar.so ran under AAR_AB and ended none), and rank 5's iteration record was deleted. The
/// warnings, the note under the table and the JSON say which ranks and why, and none of them is
/// called missing.
#[test]
fn ranks_with_a_summary_record_but_no_rows_are_named_with_why() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4713")];
    let (dir, records, files) =
        job_of_8("report-without-rows", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    let (idle_dir, idle, idle_files) = job_of_8("report-without-rows-idle", "smallmsg", &["--count", "20"], &env);
    assert_eq!(idle_files.len(), 8, "summary records only: {idle_files:?}");
    let of_rank = |files: &[String], rank: u32| -> Vec<String> {
        files.iter().filter(|f| f.starts_with(&format!("aar.4713.{rank}."))).cloned().collect()
    };
    for rank in [2, 3, 4, 7] {
        for f in of_rank(&files, rank) {
            std::fs::remove_file(records.join(f)).unwrap();
        }
        let summary = of_rank(&idle_files, rank).pop().unwrap();
        let rec: Value = serde_json::from_slice(&std::fs::read(idle.join(&summary)).unwrap()).unwrap();
        assert_eq!(rec["ab"]["iterations"], 0, "{rec}");
        std::fs::copy(idle.join(&summary), records.join(&summary)).unwrap();
    }
    let gone = of_rank(&files, 5).into_iter().find(|f| f.ends_with(".jsonl")).unwrap();
    std::fs::remove_file(records.join(&gone)).unwrap();

    let o = run(&[records.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(
            "experiment \"4713\": ranks 2:4,7 (4 ranks) have a summary record but no iteration record: their summary \
             records count no iteration ended (ab.iterations = 0)"
        ) && err.contains("a slower rank among these is not seen. Mark the iterations on every rank"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "experiment \"4713\": rank 5 has a summary record but no iteration record: its summary record names an \
             iteration record (ab.iterations_file: {gone}) that is not beside it: moved or deleted"
        )),
        "{err}"
    );
    assert!(!err.contains("missing"), "{err}");
    assert!(out.contains("experiment \"4713\": job, 3 ranks of 8, clock"), "{out}");
    assert!(
        out.contains(
            "no rows of ranks 2:4,7 (no iteration ended) and 5 (iteration record moved or deleted): they have a \
             summary record but no iteration record"
        ),
        "{out}"
    );
    let j = json_of(&run(&[records.to_str().unwrap(), "--json"]));
    let e = &j["experiments"][0];
    assert_eq!(
        e["ranks_without_rows"],
        serde_json::json!([
            { "cause": "no_iteration_ended", "ranks": "2:4,7", "count": 4 },
            { "cause": "file_missing", "ranks": "5", "count": 1 },
        ]),
        "{e}"
    );
    assert!(j["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("ranks 2:4,7 (4 ranks)")));
    // A rank without a summary record either is missing, as before.
    for f in of_rank(&files, 6) {
        std::fs::remove_file(records.join(f)).unwrap();
    }
    let err = stderr(&run(&[records.to_str().unwrap()]));
    assert!(
        err.contains(
            "the header says 8 ranks but 7 ranks have usable rows or a summary record that says why not (missing: 6)"
        ),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&idle_dir).unwrap();
}

/// Summary records of ranks without rows are used however they are given: in a folder of their
/// own (the AAR_OUTPUT_DIR of a node whose ranks wrote no iteration record) or named alone. Either
/// way they name those ranks, in the warnings, the note under the table and the HTML page alike,
/// and are not also said to be left out; a summary record that says nothing of a rank without
/// rows (rank 6 has rows) is, and only it.
#[test]
fn summary_records_given_apart_from_the_iteration_records_name_the_ranks_without_rows() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4714")];
    let (dir, records, files) = job_of_8("report-apart", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    let (idle_dir, idle, idle_files) = job_of_8("report-apart-idle", "smallmsg", &["--count", "20"], &env);
    let of_rank = |files: &[String], rank: u32| -> Vec<String> {
        files.iter().filter(|f| f.starts_with(&format!("aar.4714.{rank}."))).cloned().collect()
    };
    let node = dir.join("node2");
    std::fs::create_dir(&node).unwrap();
    for rank in [2, 3] {
        for f in of_rank(&files, rank) {
            std::fs::remove_file(records.join(f)).unwrap();
        }
    }
    let summary = |rank: u32| {
        let name = of_rank(&idle_files, rank).pop().unwrap();
        std::fs::copy(idle.join(&name), node.join(&name)).unwrap();
        node.join(name)
    };
    let (two, three) = (summary(2), summary(3));
    let said = "experiment \"4714\": ranks 2:3 (2 ranks) have a summary record but no iteration record: their summary \
                records count no iteration ended (ab.iterations = 0)";
    let noted = "no rows of ranks 2:3 (no iteration ended): they have a summary record but no iteration record";
    let html = dir.join("report.html");
    let report = |inputs: &[&Path]| {
        let o = aar().arg("report").args(inputs).arg("--html").arg(&html).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        (stdout(&o), stderr(&o), std::fs::read_to_string(&html).unwrap())
    };
    for inputs in [vec![records.as_path(), &node], vec![&records, &two, &three]] {
        let (out, err, page) = report(&inputs);
        assert!(err.contains(said), "{inputs:?}: {err}");
        assert!(!err.contains("summary records only") && !err.contains("missing"), "{inputs:?}: {err}");
        assert!(out.contains(noted), "{inputs:?}: {out}");
        assert!(page.contains(&said.replace('"', "&quot;")) && page.contains(noted), "{inputs:?}: {page}");
    }
    // A summary record of a rank with rows, beside them or named alone, is left out, and said.
    let six = summary(6);
    let (_, err, page) = report(&[&records, &node]);
    let left = format!(
        "{}: summary records only, no iteration record: 2 of its 3 summary records say why their ranks have no rows \
         (above); the other is left out of this report",
        node.display()
    );
    assert!(err.contains(said) && err.contains(&left), "{err}");
    assert!(page.contains(&left), "{page}");
    let (_, err, _) = report(&[&records, &two, &three, &six]);
    assert!(err.contains(said), "{err}");
    assert!(err.contains(&format!("{}: summary records only, no iteration record: left out", six.display())), "{err}");
    assert_eq!(err.matches("summary records only").count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&idle_dir).unwrap();
}

/// A summary record named alone whose iteration record is beside it but was not given: the rank
/// is named with that iteration record and how to give it (not called missing, and the summary
/// record not said to be left out); given too, it is read.
#[test]
fn a_summary_record_named_alone_names_the_iteration_record_beside_it_that_was_not_given() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4715")];
    let (dir, records, files) = job_of_8("report-not-given", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    // Every rank's records but rank 6's in a folder of their own.
    let others = dir.join("others");
    std::fs::create_dir(&others).unwrap();
    for f in files.iter().filter(|f| !f.starts_with("aar.4715.6.")) {
        std::fs::rename(records.join(f), others.join(f)).unwrap();
    }
    let six = |suffix: &str| {
        records.join(files.iter().find(|f| f.starts_with("aar.4715.6.") && f.ends_with(suffix)).unwrap())
    };
    let (summary, iterations) = (six(".json"), six(".iterations.jsonl"));
    let o = run(&[others.to_str().unwrap(), summary.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "experiment \"4715\": rank 6 has a summary record but no iteration record read: its iteration record is \
             beside its summary record but was not given to aar report ({}). The tables compare",
            iterations.display()
        )) && err.contains("a slower rank among these is not seen. Give it too, or the folder that holds it"),
        "{err}"
    );
    assert!(!err.contains("missing") && !err.contains("summary records only"), "{err}");
    assert!(out.contains("no rows of rank 6 (iteration record not given): it has a summary record"), "{out}");
    let j = json_of(&run(&[others.to_str().unwrap(), summary.to_str().unwrap(), "--json"]));
    assert_eq!(
        j["experiments"][0]["ranks_without_rows"],
        serde_json::json!([{ "cause": "not_given", "ranks": "6", "count": 1 }]),
        "{j}"
    );
    // Given, the iteration record is read; and the folder, which holds both, alike.
    for last in [&iterations, &records] {
        let o = run(&[others.to_str().unwrap(), summary.to_str().unwrap(), last.to_str().unwrap()]);
        let (out, err) = (stdout(&o), stderr(&o));
        assert!(o.status.success(), "{err}");
        assert!(!err.contains("rank 6") && !err.contains("summary records only"), "{err}");
        assert!(out.contains("experiment \"4715\": job, 8 ranks") && !out.contains("no rows of"), "{out}");
    }
    // Ranks 1, 2, 3, 5, 6 and 7 so (each summary record named alone, its iteration record beside
    // it): one warning names the first four iteration records to give, in rank order, and counts
    // the other two.
    let mut alone = vec![summary.clone()];
    let mut beside = vec![iterations.clone()];
    for rank in [1, 2, 3, 5, 7] {
        let (summary, iterations) = records_of(&others, &files, 4715, rank);
        for f in [&summary, &iterations] {
            std::fs::rename(f, records.join(f.file_name().unwrap())).unwrap();
        }
        alone.push(records.join(summary.file_name().unwrap()));
        beside.push(records.join(iterations.file_name().unwrap()));
    }
    beside.sort();
    let o = aar().arg("report").arg(&others).args(&alone).output().unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let named: Vec<String> = beside[..4].iter().map(|b| b.display().to_string()).collect();
    assert!(
        err.contains(&format!(
            "experiment \"4715\": ranks 1:3,5:7 (6 ranks) have a summary record but no iteration record read: their \
             iteration records are beside their summary records but were not given to aar report ({}; and 2 more). \
             The tables compare",
            named.join("; ")
        )) && err.contains("Give them too, or the folder that holds them"),
        "{err}"
    );
    for b in &beside[4..] {
        assert!(!err.contains(b.to_str().unwrap()), "counted, not named: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fork child's summary record (it writes no rows by design) in a folder of summary records only
/// is neither used nor counted among the records left out: a folder whose other records all name
/// ranks without rows is not said, and one with a record left out counts the ranks' records only.
#[test]
fn a_fork_childs_summary_record_is_not_counted_among_those_left_out() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4716")];
    let (dir, records, files) = job_of_8("report-fork-child", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    let (idle_dir, idle, idle_files) = job_of_8("report-fork-child-idle", "smallmsg", &["--count", "20"], &env);
    // The same job's ranks each fork a child that sends: each writes a summary record of its own.
    let driver = compile(&idle_dir, "driver", "tests/c/driver.c");
    let forked = idle_dir.join("forked");
    std::fs::create_dir(&forked).unwrap();
    let job = aar()
        .args(["run", "-n", "8"])
        .arg(&driver)
        .args(["fma", "64", "1", "0", "fork", "2"])
        .env("LD_PRELOAD", aar_testkit::libaar())
        .env("AAR_PAPI_EVENTS", aar_testkit::sde_events_setting())
        .env("AAR_OUTPUT_DIR", &forked)
        .envs(env)
        .output()
        .unwrap();
    assert!(job.status.success(), "{}", stderr(&job));
    let of_rank = |dir: &Path, rank: u32, child: bool| -> PathBuf {
        let named: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|f| f.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(&format!("aar.4716.{rank}.")))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        let rec = |p: &PathBuf| -> Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
        named.into_iter().find(|p| (rec(p)["fork_child"] == true) == child).unwrap()
    };
    let node = dir.join("node");
    std::fs::create_dir(&node).unwrap();
    let copy = |from: PathBuf| std::fs::copy(&from, node.join(from.file_name().unwrap())).unwrap();
    // Rank 3 wrote no rows (its summary record says why); rank 2's fork child is beside it.
    for f in files.iter().filter(|f| f.starts_with("aar.4716.3.")) {
        std::fs::remove_file(records.join(f)).unwrap();
    }
    assert!(idle_files.iter().any(|f| f.starts_with("aar.4716.3.")), "{idle_files:?}");
    copy(of_rank(&idle, 3, false));
    copy(of_rank(&forked, 2, true));
    let said = "experiment \"4716\": rank 3 has a summary record but no iteration record: its summary record counts \
                no iteration ended";
    let o = run(&[records.to_str().unwrap(), node.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(said), "{err}");
    assert!(!err.contains("summary records only") && !err.contains("missing"), "{err}");
    // A record of a rank with rows beside them is left out, and only it is counted so.
    copy(of_rank(&forked, 5, false));
    let err = stderr(&run(&[records.to_str().unwrap(), node.to_str().unwrap()]));
    assert!(
        err.contains(&format!(
            "{}: summary records only, no iteration record: 1 of its 2 summary records say why their ranks have no \
             rows (above); the other is left out of this report",
            node.display()
        )),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&idle_dir).unwrap();
}

/// An iteration record cut short at exit (fewer rows than the iterations its summary record says
/// the rank ended, none counted in ab.rows_unwritten_at_exit): the causes that fit are listed, a
/// failed write and a write in progress when the process ended, without claiming which.
#[test]
fn rows_cut_short_at_exit_list_the_causes_that_fit() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4717")];
    let (dir, records, files) = job_of_8("report-cut-at-exit", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    let of_one = |suffix: &str| {
        records.join(files.iter().find(|f| f.starts_with("aar.4717.1.") && f.ends_with(suffix)).unwrap())
    };
    let (iterations, summary) = (of_one(".iterations.jsonl"), of_one(".json"));
    // Its last 3 rows gone, as a write cut short leaves the file.
    let text = std::fs::read_to_string(&iterations).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&iterations, lines[..lines.len() - 3].join("\n") + "\n").unwrap();
    let mut rec: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(rec["ab"]["iterations"], 12, "{rec}");
    for unwritten in [rec["ab"]["rows_unwritten_at_exit"].clone(), 0.into()] {
        rec["ab"]["rows_unwritten_at_exit"] = unwritten.clone();
        std::fs::write(&summary, rec.to_string()).unwrap();
        let o = run(&[records.to_str().unwrap()]);
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        let said: Vec<&str> = err.lines().filter(|l| l.contains("rank 1's iteration record")).collect();
        assert_eq!(said.len(), 1, "{unwritten}: {err}");
        assert!(
            said[0].contains(&format!(
                "rank 1's iteration record {} holds rows of only 9 iterations of the 12 its summary record says it \
                 ended: the rest were not written: either a write failed (a full disk, or the file size limit",
                iterations.display()
            )) && said[0].contains(
                "or the process ended while a write of rows was in progress (it exited while another thread wrote \
                 them to a slow file system, or was killed during the write"
            ),
            "{unwritten}: {err}"
        );
        assert!(!err.contains("could not write") && !err.contains("another thread held"), "{unwritten}: {err}");
    }
    // Ranks 1, 2, 3, 5, 6 and 7 so, each with 3 rows held at exit: one warning names the first
    // four ranks' records in rank order, counts the other two, and sums the rows not written.
    let mut cut = Vec::new();
    for rank in [1, 2, 3, 5, 6, 7] {
        let (summary, iterations) = records_of(&records, &files, 4717, rank);
        if rank != 1 {
            let text = std::fs::read_to_string(&iterations).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            std::fs::write(&iterations, lines[..lines.len() - 3].join("\n") + "\n").unwrap();
        }
        let mut rec: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
        rec["ab"]["rows_unwritten_at_exit"] = 3.into();
        std::fs::write(&summary, rec.to_string()).unwrap();
        cut.push(format!(
            "rank {rank}'s iteration record {} holds rows of only 9 iterations of the 12 its summary record says it \
             ended",
            iterations.display()
        ));
    }
    let err = stderr(&run(&[records.to_str().unwrap()]));
    let said: Vec<&str> = err.lines().filter(|l| l.contains("holds rows of only")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains(&format!(
            "{}; and 2 more: at exit another thread held each rank's iteration record",
            cut[..4].join("; ")
        )) && said[0].contains(
            "so the 18 rows still buffered were not written (the summary records' ab.rows_unwritten_at_exit)"
        ),
        "{err}"
    );
    assert!(!said[0].contains("rank 6's") && !said[0].contains("rank 7's"), "counted, not named: {err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The records of rank `rank` of a job `job_of_8` ran (`files`, in `records`): its summary record
/// and its iteration record.
fn records_of(records: &Path, files: &[String], job: u32, rank: u32) -> (PathBuf, PathBuf) {
    let one = |suffix: &str| {
        let prefix = format!("aar.{job}.{rank}.");
        records.join(files.iter().find(|f| f.starts_with(&prefix) && f.ends_with(suffix)).unwrap())
    };
    (one(".json"), one(".iterations.jsonl"))
}

/// A summary record the user renamed, named alone: its fields (job, rank, pid) say whose it is, so
/// it names its rank as a record of the standard name does: its iteration record beside it under
/// its own name (not given), or moved away (as the record's ab.iterations_file says). The rank is
/// not called missing and the record not said to be left out.
#[test]
fn a_renamed_summary_record_named_alone_says_why_its_rank_has_no_rows() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4720")];
    let (dir, records, files) = job_of_8("report-renamed", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    let (summary, iterations) = records_of(&records, &files, 4720, 6);
    let mine = dir.join("mine");
    std::fs::create_dir(&mine).unwrap();
    let renamed = mine.join("rank6.json");
    let beside = mine.join(iterations.file_name().unwrap());
    std::fs::rename(&summary, &renamed).unwrap();
    std::fs::rename(&iterations, &beside).unwrap();
    let report = |extra: &[&str]| {
        let o = aar().arg("report").arg(&records).arg(&renamed).args(extra).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        o
    };
    let err = stderr(&report(&[]));
    assert!(
        err.contains(&format!(
            "experiment \"4720\": rank 6 has a summary record but no iteration record read: its iteration record is \
             beside its summary record but was not given to aar report ({})",
            beside.display()
        )),
        "{err}"
    );
    assert!(!err.contains("missing") && !err.contains("summary records only"), "{err}");
    std::fs::remove_file(&beside).unwrap();
    let o = report(&[]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        err.contains(&format!(
            "experiment \"4720\": rank 6 has a summary record but no iteration record: its summary record names an \
             iteration record (ab.iterations_file: {}) that is not beside it: moved or deleted",
            beside.file_name().unwrap().to_str().unwrap()
        )),
        "{err}"
    );
    assert!(!err.contains("missing") && !err.contains("summary records only"), "{err}");
    assert!(out.contains("no rows of rank 6 (iteration record moved or deleted)"), "{out}");
    let j = json_of(&report(&["--json"]));
    assert_eq!(
        j["experiments"][0]["ranks_without_rows"],
        serde_json::json!([{ "cause": "file_missing", "ranks": "6", "count": 1 }]),
        "{j}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Several ranks with a summary record but no iteration record, for one cause: the one warning of
/// that cause names each rank's own detail (the iteration record its summary record names; the
/// message of its record; why its record could not be read), the first four in rank order, and
/// counts the others, as each is a fix or a cause of its own.
#[test]
fn several_ranks_without_rows_for_one_cause_are_each_named_the_first_four() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4733")];
    let (dir, records, files) = job_of_8("report-several", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    let ranks = [1, 2, 3, 5, 6, 7];
    let of = |rank: u32| records_of(&records, &files, 4733, rank);
    let report = || {
        let o = aar().arg("report").arg(&records).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    // The one line that names ranks 1:3,5:7, with the first four of `named` and "and 2 more", and
    // not the other two.
    let said_of = |err: &str, what: &str, named: &[String]| {
        let said: Vec<&str> = err.lines().filter(|l| l.contains("ranks 1:3,5:7 (6 ranks) have a summary")).collect();
        assert_eq!(said.len(), 1, "one warning: {err}");
        assert!(said[0].contains(&format!("{what}{}; and 2 more)", named[..4].join("; "))), "{what}: {err}");
        for other in &named[4..] {
            assert!(!err.contains(other.as_str()), "counted, not named: {other}: {err}");
        }
    };
    // Their iteration records moved away: each summary record names its own.
    for &rank in &ranks {
        std::fs::remove_file(of(rank).1).unwrap();
    }
    let names: Vec<String> =
        ranks.iter().map(|&r| of(r).1.file_name().unwrap().to_str().unwrap().to_string()).collect();
    said_of(
        &report(),
        "have a summary record but no iteration record: their summary records name an iteration record \
         (ab.iterations_file: ",
        &names,
    );
    // No iteration record written, each summary record saying why in its own words.
    let messages: Vec<String> = ranks
        .iter()
        .map(|&rank| {
            let message = format!("could not create the iteration record on node nid0000{rank}: no space left");
            let mut rec: Value = serde_json::from_slice(&std::fs::read(of(rank).0).unwrap()).unwrap();
            rec["ab"].as_object_mut().unwrap().remove("iterations_file");
            rec["messages"] = serde_json::json!([message]);
            std::fs::write(of(rank).0, rec.to_string()).unwrap();
            format!("\"{message}\"")
        })
        .collect();
    said_of(
        &report(),
        "they ended iterations (ab.iterations) but libaar.so wrote no iteration record (their summary records say: ",
        &messages,
    );
    // Summary records cut short: each named, with why it could not be read.
    for &rank in &ranks {
        std::fs::write(of(rank).0, "{\"format\": \"aar-record/2\", \"ra").unwrap();
    }
    let err = report();
    let paths: Vec<String> = ranks.iter().map(|&r| of(r).0.display().to_string()).collect();
    let said: Vec<&str> = err.lines().filter(|l| l.contains("do not say why (")).collect();
    assert_eq!(said.len(), 1, "{err}");
    let at: Vec<usize> = paths[..4].iter().map(|p| said[0].find(&format!("{p}: ")).expect(p)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]) && said[0].contains("; and 2 more)"), "in rank order: {err}");
    assert!(paths[4..].iter().all(|p| !said[0].contains(p.as_str())), "counted, not named: {err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ranks whose NIC counters could not be read for different reasons (ranks 0 to 3 without one PAPI
/// event, rank 5 without another): the one warning names each reason with the ranks that gave it,
/// in the order of their lowest rank, the first four and how many more; one reason is said once.
#[test]
fn counters_unread_for_different_reasons_name_each_reason_with_its_ranks() {
    let events = aar_testkit::sde_events_setting();
    let without = |event: &str| events.replace("sde:::aries::AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_FLITS", event);
    let (events_a, events_b) = (without("NO_SUCH_EVENT_A"), without("NO_SUCH_EVENT_B"));
    let script = r#"case $PMI_RANK in
        0|1|2|3) export AAR_PAPI_EVENTS="$AAR_TEST_EVENTS_A" ;;
        5) export AAR_PAPI_EVENTS="$AAR_TEST_EVENTS_B" ;;
    esac
    exec "$@""#;
    let env = [
        ("AAR_AB", "ADAPTIVE0,auto"),
        ("SLURM_JOB_ID", "4735"),
        ("AAR_TEST_EVENTS_A", events_a.as_str()),
        ("AAR_TEST_EVENTS_B", events_b.as_str()),
    ];
    let (dir, records, files) =
        job_of_8_under("report-counters-why", "iterations", Some(script), &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    let said = || {
        let o = aar().arg("report").arg(&records).output().unwrap();
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        let said: Vec<String> =
            err.lines().filter(|l| l.contains("the NIC counters could not be read on")).map(String::from).collect();
        assert_eq!(said.len(), 1, "one warning: {err}");
        said[0].clone()
    };
    let why = |event: &str| format!("the PAPI event {event} is not available");
    let w = said();
    assert!(w.contains("could not be read on ranks 0, 1, 2, 3 and 5 (5 of the 8 ranks with a summary record; "), "{w}");
    let (a, b) = (
        w.find(&format!("; ranks 0, 1, 2 and 3: {}", why("NO_SUCH_EVENT_A"))),
        w.find(&format!("; and rank 5: {}", why("NO_SUCH_EVENT_B"))),
    );
    assert!(a.is_some() && b.is_some() && a < b, "each reason with its ranks, in rank order: {w}");
    assert!(!w.contains("'s record"), "no rank's reason stands for the others': {w}");
    // Reasons of their own on ranks 4, 6 and 7 too: five reasons, the first four named.
    let of = |rank: u32| records_of(&records, &files, 4735, rank).0;
    let edit = |rank: u32, why: &str| {
        let mut rec: Value = serde_json::from_slice(&std::fs::read(of(rank)).unwrap()).unwrap();
        rec["counters"]["unavailable_because"] = why.into();
        std::fs::write(of(rank), rec.to_string()).unwrap();
    };
    for rank in [4, 6, 7] {
        edit(rank, &format!("the PAPI component of node nid0000{rank} is not loaded"));
    }
    let w = said();
    assert!(w.contains("on ranks 0, 1, 2, 3, 4, 5, 6 and 7 (8 of the 8 ranks"), "{w}");
    assert!(
        w.contains(&format!(
            "; rank 4: the PAPI component of node nid00004 is not loaded; rank 5: {}",
            why("NO_SUCH_EVENT_B")
        )) && w.contains("; rank 6: the PAPI component of node nid00006 is not loaded; and 1 more)"),
        "{w}"
    );
    assert!(!w.contains("nid00007"), "counted, not named: {w}");
    // One reason on every rank: said once, for all.
    for rank in 0..8 {
        edit(rank, "the PAPI component sde is not loaded");
    }
    let w = said();
    assert!(
        w.contains("(8 of the 8 ranks with a summary record; their records: the PAPI component sde is not loaded)"),
        "{w}"
    );
    assert_eq!(w.matches("sde is not loaded").count(), 1, "{w}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ranks on which DMAPP was not steered for different reasons (ranks 0 to 3 on a libdmapp without
/// one call, rank 5 on one whose attributes did not read back), as their summary records say: the
/// one warning names each reason with the ranks that gave it, in the order of their lowest rank,
/// the first four and how many more; one reason is said once. A rank whose DMAPP was steered, or
/// that sent no DMAPP message, is not named.
#[test]
fn dmapp_not_steered_for_different_reasons_names_each_reason_with_its_ranks() {
    let folder = tmp("dmapp-why");
    let dir = folder.path();
    let rows: Vec<Iteration> = (0..12).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect();
    let (no_call, read_back) = (
        "this libdmapp has no dmapp_get_rma_attrs_ext",
        "the routing attributes did not read back as written after setting the PUT routing (byte 4)",
    );
    let summary = |rank: u32, messages: u64, why: Option<&str>| {
        let dmapp = match why {
            Some(why) => serde_json::json!({ "steering": false, "stopped_because": why }),
            None => serde_json::json!({ "steering": true }),
        };
        let rec = serde_json::json!({
            "format": "aar-record/2", "job_id": "d", "rank": rank, "pid": 100 + rank, "host": "h",
            "policy_at_exit": "A", "ab": { "policies": ["A", "B"], "boundary": "markers", "iterations": 12 },
            "apis": { "DMAPP": { "messages": messages } }, "dmapp": dmapp,
        });
        std::fs::write(dir.join(format!("aar.d.{rank}.{}.json", 100 + rank)), rec.to_string()).unwrap();
    };
    for rank in 0..8u32 {
        write_record(dir, &header("d", rank, 8, &["A", "B"]), &rows);
        match rank {
            0..=3 => summary(rank, 10, Some(no_call)),
            5 => summary(rank, 10, Some(read_back)),
            // Stopped, but sent no DMAPP message: no traffic kept the application's routing.
            6 => summary(rank, 0, Some(no_call)),
            _ => summary(rank, 10, None),
        }
    }
    let said = || {
        let o = run(&[dir.to_str().unwrap()]);
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        let said: Vec<String> =
            err.lines().filter(|l| l.contains("DMAPP was not steered on")).map(String::from).collect();
        assert_eq!(said.len(), 1, "one warning: {err}");
        said[0].clone()
    };
    let w = said();
    assert!(w.contains("not steered on ranks 0, 1, 2, 3 and 5 (5 of the 8 ranks with a summary record; "), "{w}");
    let (a, b) = (w.find(&format!("; ranks 0, 1, 2 and 3: {no_call}; and rank 5: {read_back})")), w.find("rank 4"));
    assert!(a.is_some() && b.is_none(), "each reason with its ranks, in rank order: {w}");
    assert!(!w.contains("'s record") && !w.contains("their records:"), "no rank's reason stands for the others': {w}");
    // Reasons of their own on ranks 4, 6 and 7 too: five reasons, the first four named.
    for rank in [4, 6, 7] {
        summary(rank, 10, Some(&format!("dmapp_set_rma_attrs_ext returned {rank}")));
    }
    let w = said();
    assert!(w.contains("on ranks 0, 1, 2, 3, 4, 5, 6 and 7 (8 of the 8 ranks"), "{w}");
    assert!(
        w.contains(&format!(
            "; ranks 0, 1, 2 and 3: {no_call}; rank 4: dmapp_set_rma_attrs_ext returned 4; rank 5: {read_back}; rank \
             6: dmapp_set_rma_attrs_ext returned 6; and 1 more)"
        )),
        "{w}"
    );
    assert!(!w.contains("returned 7"), "counted, not named: {w}");
    // One reason on every rank: said once, for all.
    for rank in 0..8 {
        summary(rank, 10, Some(no_call));
    }
    let w = said();
    assert!(
        w.contains(&format!(
            "on ranks 0, 1, 2, 3, 4, 5, 6 and 7 (8 of the 8 ranks with a summary record; their records: {no_call})"
        )),
        "{w}"
    );
    assert_eq!(w.matches(no_call).count(), 1, "{w}");
}

/// Ranks whose rows stop early and that left no summary record (as a rank killed mid-run
/// leaves its records) are said to have ended without libaar.so's exit handler (a signal, the
/// batch system's or the OOM killer's; a crash; _exit) or to be still running, the first four
/// named and the others counted, with where to learn how each ended said once; when ranks are
/// missing too, their warning says it and this one points there.
#[test]
fn ranks_stopped_before_exit_are_said_with_what_ended_them() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4734")];
    let (dir, records, files) = job_of_8("report-stopped", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    for rank in [1, 2, 3, 5, 6, 7] {
        let (summary, iterations) = records_of(&records, &files, 4734, rank);
        std::fs::remove_file(summary).unwrap();
        let text = std::fs::read_to_string(&iterations).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        std::fs::write(&iterations, lines[..lines.len() - 3].join("\n") + "\n").unwrap();
    }
    let how = "How each rank ended is the batch system's to say (Slurm: sacct -j <job id> -o JobID,State,ExitCode";
    let stopped = "The rows of ranks 1, 2, 3, 5 and 2 more end early and no summary record is beside them, though \
                   libaar.so writes a rank's summary record at exit: they ended without libaar.so's exit handler \
                   (killed by a signal, the batch system's at the job's time limit or the OOM killer's; a crash; \
                   _exit), or are still running";
    let o = aar().arg("report").arg(&records).output().unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("end early and no summary record")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains(stopped) && said[0].contains(how), "{err}");
    assert_eq!(err.matches("sacct").count(), 1, "once: {err}");
    // Rank 4 gone too (no record at all): the warning of the missing rank says where to learn how
    // ranks ended, and this one points there.
    let (summary, iterations) = records_of(&records, &files, 4734, 4);
    std::fs::remove_file(summary).unwrap();
    std::fs::remove_file(iterations).unwrap();
    let err = stderr(&aar().arg("report").arg(&records).output().unwrap());
    let said: Vec<&str> = err.lines().filter(|l| l.contains("end early and no summary record")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains(stopped)
            && said[0].contains("(how each rank ended: see the warning of the missing ranks)")
            && !said[0].contains(how),
        "{err}"
    );
    assert!(err.lines().any(|l| l.contains("(missing: 4)") && l.contains(how)), "{err}");
    assert_eq!(err.matches("sacct").count(), 1, "once: {err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rank killed by SIGKILL before libaar.so wrote anything (before its first iteration ended, as
/// the batch system or the OOM killer does) is named missing with what most likely ended it, as
/// no record can say: other ranks exited but it left neither a row nor a summary record; and where
/// to find out how it ended (the batch system's accounting, its stderr), said once, not per rank.
/// Without any summary record (the job killed whole) the kill is still named; a report of the
/// summary records alone says where to find out too.
#[test]
fn a_rank_killed_before_it_wrote_a_record_is_said_with_what_ended_it() {
    // Ranks 5 and 6 SIGKILLed as they start, before the program's first instruction: the process
    // kills itself before its exec (a kill of a background program from the shell could come
    // after a loaded machine had run the whole program). The shell that stands for the batch
    // system exits 0, so that aar run lets the other ranks run to their end (as srun without
    // --kill-on-bad-exit).
    let kill = r#"case $PMI_RANK in 5|6) sh -c 'kill -KILL $$; exec "$@"' rank "$@" & wait $!; exit 0 ;; *) exec "$@" ;; esac"#;
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4731")];
    let (dir, records, files) =
        job_of_8_under("report-killed", "iterations", Some(kill), &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 12, "ranks 5 and 6 wrote nothing: {files:?}");
    assert!(!files.iter().any(|f| f.starts_with("aar.4731.5.") || f.starts_with("aar.4731.6.")), "{files:?}");
    let how = "How each rank ended is the batch system's to say (Slurm: sacct -j <job id> -o JobID,State,ExitCode";
    let o = aar().arg("report").arg(&records).output().unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("(missing: 5 and 6)")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains(
            "Other ranks exited (their summary records are read), but the missing ranks have no record at all, \
             though libaar.so writes a rank's first row when its first iteration ends and its summary record at \
             exit: they most likely ended before their first iteration did, without libaar.so's exit handler \
             (killed by a signal, the batch system's or the OOM killer's; a crash; _exit)"
        ) && said[0].contains(how),
        "{err}"
    );
    assert_eq!(err.matches("sacct").count(), 1, "once: {err}");
    // The summary records alone: summed per job, rank 5 and 6's named missing, with where to look.
    let summaries: Vec<PathBuf> = files.iter().filter(|f| f.ends_with(".json")).map(|f| records.join(f)).collect();
    let o = aar().arg("report").args(&summaries).output().unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("(missing: 5 and 6); the sums are those of the ranks read") && err.contains(how), "{err}");
    assert_eq!(err.matches("sacct").count(), 1, "once: {err}");
    // No summary record at all (the whole job killed): the kill named, without "other ranks exited".
    for f in &summaries {
        std::fs::remove_file(f).unwrap();
    }
    let err = stderr(&aar().arg("report").arg(&records).output().unwrap());
    let said: Vec<&str> = err.lines().filter(|l| l.contains("(missing: 5 and 6)")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0]
            .contains("A rank killed before its first iteration ended (libaar.so writes its first row then) has none")
            && said[0].contains(how)
            && !said[0].contains("Other ranks exited"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rank whose iteration record is a symbolic link to nothing (the file it pointed at moved) is
/// named with the link and its target, in a folder and with its summary record named alone, not
/// called missing; the link is said once, by the rank's warning (not by the folder's scan too),
/// and a link to nothing that is no rank's iteration record is still said by the scan; the link
/// named on the command line is said to be one. Several ranks' links to nothing are one warning
/// that names each link and its target (each needs its own fix), the first few, and counts the rest.
#[test]
fn an_iteration_record_that_links_to_nothing_is_named_with_its_target() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4721")];
    let (dir, records, files) = job_of_8("report-dangling", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    let (summary, link) = records_of(&records, &files, 4721, 5);
    let target = dir.join("scratch-purged").join(link.file_name().unwrap());
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let said = |link: &Path| {
        format!(
            "experiment \"4721\": rank 5 has a summary record but no iteration record read: its iteration record \
             beside its summary record is a symbolic link to a file that does not exist ({}, a link to {})",
            link.display(),
            target.display()
        )
    };
    // Its summary record named alone, from a node's folder that holds the link too.
    let node = dir.join("node");
    std::fs::create_dir(&node).unwrap();
    let alone = node.join(summary.file_name().unwrap());
    let node_link = node.join(link.file_name().unwrap());
    std::os::unix::fs::symlink(&target, &node_link).unwrap();
    for (inputs, link) in [(vec![records.clone()], &link), (vec![records.clone(), alone.clone()], &node_link)] {
        if inputs.len() == 2 {
            std::fs::rename(&summary, &alone).unwrap();
        }
        let o = aar().arg("report").args(&inputs).output().unwrap();
        let (out, err) = (stdout(&o), stderr(&o));
        assert!(o.status.success(), "{err}");
        assert!(
            err.contains(&said(link)) && err.contains("Point the link at the iteration record"),
            "{inputs:?}: {err}"
        );
        assert!(!err.contains("missing") && !err.contains("summary records only"), "{inputs:?}: {err}");
        let lines = |path: &Path| err.lines().filter(|l| l.contains(path.to_str().unwrap())).count();
        assert_eq!(lines(link), 1, "said once: {inputs:?}: {err}");
        if inputs.len() == 2 {
            // The link in the records' folder, its summary record moved away: no rank's now.
            assert_eq!(lines(&records.join(link.file_name().unwrap())), 1, "{err}");
            assert!(err.contains(&format!(
                "aar: {}: a symbolic link to {}, which does not exist: skipped",
                records.join(link.file_name().unwrap()).display(),
                target.display()
            )));
        }
        assert!(out.contains("no rows of rank 5 (iteration record a link to nothing)"), "{out}");
        let j = json_of(&aar().arg("report").args(&inputs).arg("--json").output().unwrap());
        assert_eq!(
            j["experiments"][0]["ranks_without_rows"],
            serde_json::json!([{ "cause": "link_to_nothing", "ranks": "5", "count": 1 }]),
            "{j}"
        );
    }
    let o = run(&[link.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "{}: a symbolic link to {}, which does not exist: nothing read",
            link.display(),
            target.display()
        )),
        "{}",
        stderr(&o)
    );
    // Ranks 1, 2, 3, 5, 6 and 7 links to nothing, each to a target of its own (a purged
    // scratch folder each): one warning names the first four links with their targets, in rank
    // order, and counts the other two.
    std::fs::rename(&alone, &summary).unwrap();
    let mut links = vec![(link.clone(), target.clone())];
    for rank in [1, 2, 3, 6, 7] {
        let (_, link) = records_of(&records, &files, 4721, rank);
        let target = dir.join(format!("purged-{rank}")).join(link.file_name().unwrap());
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        links.push((link, target));
    }
    links.sort();
    let o = aar().arg("report").arg(&records).output().unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("symbolic link")).collect();
    assert_eq!(said.len(), 1, "one warning: {err}");
    let named: Vec<String> =
        links.iter().take(4).map(|(l, t)| format!("{}, a link to {}", l.display(), t.display())).collect();
    assert!(
        said[0].contains(&format!(
            "experiment \"4721\": ranks 1:3,5:7 (6 ranks) have a summary record but no iteration record read: their \
             iteration records beside their summary records are a symbolic link to a file that does not exist ({}; \
             and 2 more). The tables",
            named.join("; ")
        )),
        "{err}"
    );
    for (l, _) in &links[4..] {
        assert!(!err.contains(l.to_str().unwrap()), "counted, not named: {err}");
    }
    assert!(!err.contains("missing"), "{err}");
    assert!(out.contains("no rows of ranks 1:3,5:7 (iteration record a link to nothing)"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rank whose iteration record is a loop of symbolic links (`ln -s NAME NAME`) is named with the
/// links, not called missing, with its summary record named alone from the folder that holds the
/// loop and with that folder walked (there said once, by the rank's warning).
#[test]
fn an_iteration_record_that_is_a_loop_of_links_is_named_as_one() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4723")];
    let (dir, records, files) = job_of_8("report-link-loop", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    let (summary, iterations) = records_of(&records, &files, 4723, 3);
    let node = dir.join("node");
    std::fs::create_dir(&node).unwrap();
    let alone = node.join(summary.file_name().unwrap());
    let name = iterations.file_name().unwrap();
    let link = node.join(name);
    std::fs::rename(&summary, &alone).unwrap();
    std::fs::remove_file(&iterations).unwrap();
    std::os::unix::fs::symlink(name, &link).unwrap();
    for second in [&alone, &node] {
        let o = aar().arg("report").arg(&records).arg(second).output().unwrap();
        let (out, err) = (stdout(&o), stderr(&o));
        assert!(o.status.success(), "{err}");
        assert!(
            err.contains(&format!(
                "experiment \"4723\": rank 3 has a summary record but no iteration record read: its iteration \
                 record beside its summary record is a loop of symbolic links, with no file at its end ({} -> {}). \
                 The tables",
                link.display(),
                name.to_str().unwrap()
            )) && err.contains("Point the link at the iteration record (ln -sfn FILE LINK)"),
            "{second:?}: {err}"
        );
        assert!(!err.contains("missing") && !err.contains("summary records only"), "{second:?}: {err}");
        assert_eq!(err.lines().filter(|l| l.contains(link.to_str().unwrap())).count(), 1, "{second:?}: {err}");
        assert!(out.contains("no rows of rank 3 (iteration record a loop of links)"), "{out}");
        let j = json_of(&aar().arg("report").arg(&records).arg(second).arg("--json").output().unwrap());
        assert_eq!(
            j["experiments"][0]["ranks_without_rows"],
            serde_json::json!([{ "cause": "link_loop", "ranks": "3", "count": 1 }]),
            "{j}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two copies of one process's summary record (the user copied it into a second folder and gave
/// both) are one record: the copy is said as such, with the file counted, and is not left out;
/// a copy whose contents differ is said to differ. Alike for a rank with rows, one without, and
/// records summed per job.
#[test]
fn a_copy_of_a_summary_record_is_counted_once_and_said() {
    let env = [("AAR_AB", "ADAPTIVE0,ADAPTIVE3"), ("SLURM_JOB_ID", "4722")];
    let (dir, records, files) = job_of_8("report-copies", "iterations", &["--iters", "12", "--bytes", "4K"], &env);
    assert_eq!(files.len(), 16, "{files:?}");
    let copies = dir.join("copies");
    std::fs::create_dir(&copies).unwrap();
    let copy_of = |rank: u32| {
        let (summary, iterations) = records_of(&records, &files, 4722, rank);
        let copy = copies.join(summary.file_name().unwrap());
        std::fs::copy(&summary, &copy).unwrap();
        let pid: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
        (summary, iterations, copy, pid["pid"].as_u64().unwrap())
    };
    let said = |copy: &Path, used: &Path, rank: u32, pid: u64| {
        format!(
            "{}: a copy of the summary record {} (the same job, rank {rank} and pid {pid}): counted once, as {}",
            copy.display(),
            used.display(),
            used.display()
        )
    };
    // Rank 2 has rows: its record beside them is used, the copy is not left out.
    let (two, _, two_copy, two_pid) = copy_of(2);
    let o = run(&[records.to_str().unwrap(), copies.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&said(&two_copy, &two, 2, two_pid)), "{err}");
    assert!(!err.contains("summary records only") && !err.contains("left out"), "{err}");
    let j = json_of(&run(&[records.to_str().unwrap(), copies.to_str().unwrap(), "--json"]));
    assert!(j["warnings"].as_array().unwrap().contains(&said(&two_copy, &two, 2, two_pid).into()), "{j}");
    // Rank 3 has none: one of its two records names it, once.
    let (three, three_rows, three_copy, three_pid) = copy_of(3);
    std::fs::remove_file(&three_rows).unwrap();
    let o = run(&[records.to_str().unwrap(), copies.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(err.contains(&said(&three_copy, &three, 3, three_pid)), "{err}");
    assert!(err.contains("experiment \"4722\": rank 3 has a summary record but no iteration record"), "{err}");
    assert!(!err.contains("summary records only") && !err.contains("missing"), "{err}");
    assert!(out.contains("no rows of rank 3 (iteration record moved or deleted)"), "{out}");
    // A copy edited since: said to differ.
    let mut rec: Value = serde_json::from_slice(&std::fs::read(&two_copy).unwrap()).unwrap();
    std::fs::write(&two_copy, rec.to_string()).unwrap();
    let err = stderr(&run(&[records.to_str().unwrap(), copies.to_str().unwrap()]));
    assert!(err.contains(&said(&two_copy, &two, 2, two_pid)), "the same fields, laid out otherwise: {err}");
    rec["policy_at_exit"] = "ADAPTIVE1".into();
    std::fs::write(&two_copy, rec.to_string()).unwrap();
    let err = stderr(&run(&[records.to_str().unwrap(), copies.to_str().unwrap()]));
    assert!(
        err.contains(&format!(
            "{}: a summary record of the same process as {} (the same job, rank 2 and pid {two_pid}) but with other \
             contents (one was edited, or copied while libaar.so was writing it): counted once, as {}; keep the \
             right one and remove the other",
            two_copy.display(),
            two.display(),
            two.display()
        )),
        "{err}"
    );
    // Summary records alone, summed per job: the same.
    std::fs::copy(&two, &two_copy).unwrap();
    let o = run(&[two.to_str().unwrap(), two_copy.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(out.starts_with("job \"4722\": 1 summary record"), "{out}");
    assert_eq!(err.matches("counted once").count(), 1, "{err}");
    assert!(err.contains(&said(&two, &two_copy, 2, two_pid)), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `aar report` reads RAYON_NUM_THREADS as `aar sim` does: a value rayon would replace in
/// silence, or start far too many threads for, is said once, and the report is made as without
/// it; a good one is taken without a word.
#[test]
fn a_rayon_num_threads_aar_report_does_not_take_is_said_once() {
    let folder = tmp("rayon-threads");
    let dir = folder.path();
    let rows: Vec<Iteration> = (0..6).map(|i| row(i, ["A", "B"][i as usize % 2], 0, 1_000_000, None)).collect();
    write_record(dir, &header("t", 0, 1, &["A", "B"]), &rows);
    let report = |threads: &str| {
        aar()
            .env("RAYON_NUM_THREADS", threads)
            .args(["report", dir.to_str().unwrap(), "--resamples", "100"])
            .output()
            .unwrap()
    };
    let cpus = std::thread::available_parallelism().unwrap().get();
    let threads = if cpus == 1 { "1 thread".to_string() } else { format!("{cpus} threads") };
    // 5000, not 100000: were the check gone, the test would start that many threads
    for bad in ["abc", "0", "5000"] {
        let o = report(bad);
        let err = stderr(&o);
        assert!(o.status.success(), "{bad}: {err}");
        assert!(stdout(&o).contains("experiment \"t\""), "{bad}: {}", stdout(&o));
        let warning = format!(
            "aar: RAYON_NUM_THREADS: \"{bad}\" is not a whole number from 1 to 1024, so aar report runs on {threads} \
             instead (one per CPU available, as without it); set it to a whole number from 1 to 1024 (1: the least \
             memory), or unset it\n"
        );
        assert!(err.starts_with(&warning), "{bad}: {err}");
        assert_eq!(err.matches("RAYON_NUM_THREADS").count(), 1, "{bad}: {err}");
    }
    let o = report("3");
    assert!(o.status.success() && !stderr(&o).contains("RAYON_NUM_THREADS"), "{}", stderr(&o));
}
