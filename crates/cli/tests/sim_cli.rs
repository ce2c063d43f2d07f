//! `aar sim` end to end: per-rank iteration records (aar-iterations/1) and summaries are written,
//! A/B policies follow the engine's schedule, bad arguments are reported with exit code 2 and a
//! message that names the option and what it accepts, and sizes are read as the engine reads them.

use aar_sim::experiment::{arm_schedule, AbOrder, PolicySpec};
use aar_sim::record::aar_record::{Clock, Iteration, Reader, Source, FORMAT, ITERATIONS_SUFFIX};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn aar() -> Command {
    Command::new(env!("CARGO_BIN_EXE_aar"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aar-sim-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Files of `dir` whose names end with `suffix`, sorted.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Reads one iteration record with the one reader: its header and rows (all of them must parse).
fn read(path: &Path) -> (aar_sim::record::aar_record::Header, Vec<Iteration>) {
    let reader = Reader::new(std::io::BufReader::new(std::fs::File::open(path).unwrap())).unwrap();
    let header = reader.header().clone();
    let rows = reader.map(|r| r.unwrap()).collect();
    (header, rows)
}

/// Runs `aar sim run` on a small alltoall with `order`, checks every rank's record, returns the
/// policies of rank 0's rows.
fn run_and_check(order: &str, expect_order: &str) -> Vec<String> {
    let dir = temp_dir(&order.replace(':', "-"));
    let out = aar()
        .args(["sim", "run", "--groups", "2", "--global-per-router", "2", "--workload", "alltoall:4K", "--ranks", "4"])
        .args(["--placement", "scattered", "--policy", "auto,ADAPTIVE3,off", "--iterations", "7"])
        .args(["--warmup-iterations", "1", "--order", order, "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| auto |") && text.contains("| ADAPTIVE3 |") && text.contains("| off |"), "{text}");
    // 2 or 3 iterations each: too few for a 95% interval of the median; their range, said to be one.
    for arm in ["auto", "ADAPTIVE3", "off"] {
        let line = text.lines().find(|l| l.starts_with(&format!("| {arm} |"))).unwrap();
        assert!(line.contains(" | range ["), "{line}");
    }
    let arms = [PolicySpec::Auto, PolicySpec::Fixed(aar_sim::Mode::Adaptive3), PolicySpec::Off];
    let schedule = arm_schedule(&arms, order.parse::<AbOrder>().unwrap());
    let expected: Vec<String> = (1..8).map(|i| arms[schedule.index_at(i)].name()).collect();
    let records = files(&dir, ITERATIONS_SUFFIX);
    let summaries = files(&dir, ".sim-rank.json");
    assert_eq!((records.len(), summaries.len()), (4, 4), "{records:?} {summaries:?}");
    let experiment = "sim-alltoall-4096_scattered_4ranks_none_seed1";
    for (r, (path, summary)) in records.iter().zip(&summaries).enumerate() {
        let name = format!("aar.{experiment}.{r}.0.iterations.jsonl");
        assert_eq!(path.file_name().unwrap().to_str().unwrap(), name);
        let (h, rows) = read(path);
        assert_eq!(h.format, FORMAT);
        assert_eq!((h.source, h.clock), (Source::Sim, Clock::Simulated));
        assert_eq!(h.experiment, experiment);
        assert_eq!((h.rank, h.nranks), (Some(r as u32), Some(4)));
        assert_eq!(h.policies, ["auto", "ADAPTIVE3", "off"]);
        assert_eq!(h.order, expect_order);
        assert_eq!(h.boundary, "sim");
        // What produced it, as libaar.so's records say (the clone's revision, or "unknown" outside one).
        assert!(h.git_revision.as_deref().is_some_and(|g| g.len() >= 7), "{:?}", h.git_revision);
        assert_eq!(h.modes[3..7], ["ADAPTIVE0", "ADAPTIVE1", "ADAPTIVE2", "ADAPTIVE3"]);
        // one row per measured iteration, indexed as the schedule is (the warm-up iteration is 0)
        assert_eq!(rows.iter().map(|r| r.i).collect::<Vec<_>>(), (1..8).collect::<Vec<_>>());
        assert_eq!(rows.iter().map(|r| r.policy.clone()).collect::<Vec<_>>(), expected);
        for row in &rows {
            assert!(row.start_ns < row.end_ns, "{row:?}");
            assert_eq!(row.label.as_deref(), Some("isolated"));
            assert_eq!(row.messages.iter().sum::<u64>(), 3, "alltoall of 4 ranks: 3 sends each");
            assert_eq!(row.bytes.iter().sum::<u64>(), 3 * 4096);
            assert!(row.latency_us.is_some_and(|l| l > 0.1 && l < 100.0), "{row:?}");
            assert!(row.stall_ratio.is_some());
        }
        assert!(rows.windows(2).all(|w| w[0].end_ns <= w[1].start_ns), "start and end increase");
        // per mode, the rows add up to the rank's totals in its summary
        let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
        assert_eq!(s["schema"], "aar-sim-rank/2");
        assert_eq!(s["rank"], r);
        for m in 0..h.modes.len() {
            assert_eq!(rows.iter().map(|r| r.messages[m]).sum::<u64>(), s["messages_per_mode"][m].as_u64().unwrap());
            assert_eq!(rows.iter().map(|r| r.bytes[m]).sum::<u64>(), s["bytes_per_mode"][m].as_u64().unwrap());
        }
        // the engine's totals include the warm-up iteration, which has no row
        assert!(rows.iter().map(|r| r.decisions).sum::<u64>() <= s["engine_decisions"].as_u64().unwrap());
    }
    // ADAPTIVE3 iterations go through the engine and keep ADAPTIVE3; `off` is the application's
    // default, ADAPTIVE1 inside MPI_Alltoall
    let (_, rows) = read(&records[0]);
    for row in &rows {
        match row.policy.as_str() {
            "ADAPTIVE3" => assert_eq!(row.messages[6], 3),
            "off" => assert_eq!(row.messages[4], 3),
            _ => {}
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    rows.into_iter().map(|r| r.policy).collect()
}

#[test]
fn run_writes_one_iteration_record_per_rank_round_robin() {
    let policies = run_and_check("round-robin", "round-robin");
    assert_eq!(policies, ["ADAPTIVE3", "off", "auto", "ADAPTIVE3", "off", "auto", "ADAPTIVE3"]);
}

#[test]
fn run_follows_a_shuffled_schedule() {
    let policies = run_and_check("shuffled:42", "shuffled:42");
    assert_ne!(policies, ["ADAPTIVE3", "off", "auto", "ADAPTIVE3", "off", "auto", "ADAPTIVE3"]);
}

#[test]
fn sweep_points_are_separate_experiments_in_one_folder() {
    let dir = temp_dir("sweep");
    let out = aar()
        .args(["sim", "sweep", "--groups", "2", "--global-per-router", "2", "--workload", "pingpong:1K"])
        .args(["--placement", "across-groups", "--policy", "ADAPTIVE0,ADAPTIVE3", "--iterations", "2", "--seeds", "2"])
        .args(["--sizes", "64,1K", "--background", "congestors:1K", "--background-nodes", "12", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let records = files(&dir, ITERATIONS_SUFFIX);
    assert_eq!(records.len(), 2 * 2 * 2, "sizes x seeds x ranks: {records:?}");
    let mut experiments: Vec<String> = records.iter().map(|p| read(p).0.experiment).collect();
    experiments.dedup();
    assert_eq!(
        experiments,
        [
            "sim-pingpong-1024_across-groups_2ranks_congestors-1024_seed1",
            "sim-pingpong-1024_across-groups_2ranks_congestors-1024_seed2",
            "sim-pingpong-64_across-groups_2ranks_congestors-1024_seed1",
            "sim-pingpong-64_across-groups_2ranks_congestors-1024_seed2",
        ]
    );
    for p in &records {
        let (h, rows) = read(p);
        assert_eq!(h.order, "round-robin");
        assert_eq!(rows.iter().map(|r| r.policy.as_str()).collect::<Vec<_>>(), ["ADAPTIVE0", "ADAPTIVE3"]);
        assert!(rows.iter().all(|r| r.label.as_deref() == Some("congested")), "GPCNeT congestors ran");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    let out = aar().args(["sim", "run", "--placement", "same-blade", "--ranks", "5"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("aar: --ranks 5"));
    let out = aar().args(["sim", "run", "--policy", "FASTEST"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    for bad in ["random", "shuffled:x", "rr:3"] {
        let out = aar().args(["sim", "run", "--order", bad]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "--order {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--order") && (err.contains("round-robin") || err.contains("whole number")), "{err}");
    }
    let out = aar().args(["sim", "sweep", "--order", "shuffled:-1", "--seeds", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let nine = "auto,off,ADAPTIVE0,ADAPTIVE1,ADAPTIVE2,ADAPTIVE3,MIN_HASH,NMIN_HASH,IN_ORDER";
    let out = aar().args(["sim", "run", "--policy", nine]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 8"));
    // a packed placement of the right form whose groups cannot each get a router says so, not that
    // the form is wrong
    for (bad, why) in [("packed:5:6", "spreads 5 routers over 6 groups"), ("packed:4:0", "GROUPS must be 1 or more")] {
        let out = aar().args(["sim", "run", "--placement", bad]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "--placement {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("'{bad}' for '--placement")) && err.contains(why), "{err}");
        assert!(!err.contains("does not have the form"), "{err}");
    }
    // a value the option's parser refuses: clap names the option and the value, the parser says why
    let out = aar().args(["sim", "run", "--background", "uniform:1.5"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'uniform:1.5' for '--background") && err.contains("LOAD in [0, 1]"), "{err}");
}

#[test]
fn a_sweep_starts_from_its_seed() {
    let dir = temp_dir("sweep-seed");
    let (code, stdout, err) = sim(&[
        "sweep",
        "--groups",
        "1",
        "--placement",
        "scattered",
        "--workload",
        "pingpong:64",
        "--iterations",
        "1",
        "--seed",
        "7",
        "--seeds",
        "2",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stdout}\n{err}");
    let mut experiments: Vec<String> = files(&dir, ITERATIONS_SUFFIX).iter().map(|p| read(p).0.experiment).collect();
    experiments.dedup();
    assert_eq!(
        experiments,
        ["sim-pingpong-64_scattered_2ranks_none_seed7", "sim-pingpong-64_scattered_2ranks_none_seed8"]
    );
    let _ = std::fs::remove_dir_all(&dir);
    let (code, stdout, err) = sim(&["sweep", "--seed", "18446744073709551615", "--seeds", "2"]);
    assert_eq!(code, Some(2), "{stdout}");
    assert!(err.starts_with("aar: --seed 18446744073709551615 --seeds 2: the seeds would go past"), "{err}");
}

/// Runs `aar sim ARGS` and returns (exit status, stdout, stderr).
fn sim(args: &[&str]) -> (Option<i32>, String, String) {
    let out = aar().arg("sim").args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// A small experiment's options: one group, two ranks on one router, one iteration.
const SMALL: [&str; 8] = ["--groups", "1", "--placement", "same-blade", "--ranks", "2", "--iterations", "1"];

/// The same with a background that can run as described: worst-case traffic needs a second group
/// in its scope (`--background-global`), the congestors 6 background nodes.
const SMALL_BACKGROUND: [&str; 11] = [
    "--groups",
    "2",
    "--placement",
    "same-blade",
    "--ranks",
    "2",
    "--iterations",
    "1",
    "--background-nodes",
    "6",
    "--background-global",
];

#[test]
fn backgrounds_the_simulator_refuses_are_refused_with_what_is_accepted() {
    for (bad, why) in [
        ("uniform:7", "LOAD in [0, 1]"),
        ("uniform:0.3:0", "above 0"),
        ("uniform:0.3:4K:extra", "uniform:LOAD[:SIZE]"),
        ("uniform:0.3:4X", "not a size in bytes"),
        ("storm:0.1", "congestors[:SIZE]"),
    ] {
        let (code, stdout, err) = sim(&["run", "--background", bad]);
        assert_eq!(code, Some(2), "--background {bad}: {stdout}");
        assert!(err.contains(&format!("'{bad}' for '--background")) && err.contains(why), "{bad}: {err}");
        assert!(stdout.is_empty(), "nothing ran: {stdout}");
    }
}

#[test]
fn bad_sizes_and_workloads_are_refused_naming_the_option() {
    for (args, option, why) in [
        (vec!["run", "--workload", "pingpong:4X"], "--workload", "not a size in bytes"),
        (vec!["run", "--workload", "pingpong:99999999999999999999M"], "--workload", "size"),
        (vec!["run", "--workload", "pingpong:2000000G"], "--workload", "more than 1P (1 PiB)"),
        (vec!["run", "--workload", "allgather:8"], "--workload", "rr-bandwidth[:SIZE]"),
        (vec!["run", "--workload", "barrier:4K"], "--workload", "takes no size"),
        (vec!["run", "--workload", "pingpong:2G"], "--workload", "at most 1073741824 bytes (16777216 packets)"),
        (vec!["run", "--background", "uniform:0.3:2G"], "--background", "background messages of 2147483648 bytes"),
        (vec!["sweep", "--sizes", "64,4X"], "--sizes", "not a size in bytes"),
        (vec!["run", "--placement", "diagonal"], "--placement", "same-blade, same-group"),
        (vec!["run", "--kim", "4,8,4"], "--kim", "p,a,h,g"),
        (vec!["run", "--kim", "4,8,1,40"], "--kim", "at most 9 groups"),
        // within the nodes the simulator builds, but 537 M router ports (75 GB): an abort, out of memory
        (vec!["run", "--kim", "1,256,256,4096"], "--kim", "536870912 router ports"),
        // --kim gives the whole shape: an Aries option beside it was silently ignored
        (vec!["run", "--kim", "4,8,4,33", "--groups", "2"], "--kim", "cannot be used with '--groups"),
        (vec!["synth", "--kim", "4,8,4,33", "--global-per-router", "2"], "--kim", "with '--global-per-router"),
        (vec!["run", "--iterations", "0"], "--iterations", "0"),
        // Bounded: each iteration is kept in memory, and cycle counts must not overflow.
        (vec!["run", "--iterations", "4294967295"], "--iterations", "a whole number from 1 to 100000"),
        (vec!["run", "--warmup-iterations", "100001"], "--warmup-iterations", "a whole number from 0 to 100000"),
        // ... and so is the product: 6,144 ranks x 100,000 rows would be about 300 GB
        (
            vec!["run", "--groups", "16", "--placement", "scattered", "--ranks", "6144", "--iterations", "100000"],
            "--ranks 6144 --iterations 100000",
            "at most 4000000 (about 2 GB); use fewer iterations (at most 651)",
        ),
        // ranks alone past the bound: no number of iterations fits (it said "at most 0" iterations)
        (
            vec!["run", "--groups", "961", "--placement", "scattered", "--ranks", "4000064", "--ranks-per-node", "64"],
            "--ranks 4000064 --iterations 10",
            "use at most 4000000 ranks, which even one iteration needs",
        ),
        (vec!["sweep", "--seeds", "18446744073709551614"], "--seeds", "a whole number from 1 to 100000"),
        (vec!["synth", "--measure", "18446744073709549616"], "--measure", "a whole number from 1 to 1000000000"),
        (vec!["synth", "--warmup", "18446744073709551615"], "--warmup", "a whole number from 0 to 1000000000"),
        // negative numbers reach the option's parser, which says what it takes (clap would take
        // them for options: "unexpected argument '-1' found", naming neither)
        (vec!["run", "--seed", "-1"], "'-1' for '--seed", "a seed is a whole number from 0 to 18446744073709551615"),
        (vec!["synth", "--seed", "-1"], "'-1' for '--seed", "a seed is a whole number from 0 to 18446744073709551615"),
        (vec!["run", "--seed", "18446744073709551616"], "--seed", "a seed is a whole number from 0 to"),
        (vec!["run", "--ranks", "-3"], "'-3' for '--ranks", "a whole number from 0 to 4294967295"),
        (vec!["run", "--background-nodes", "-1"], "'-1' for '--background-nodes", "a whole number from 0"),
        (vec!["run", "--groups", "-1"], "'-1' for '--groups", "a whole number from 0"),
        (vec!["run", "--global-per-router", "-1"], "'-1' for '--global-per-router", "a whole number from 0"),
        (vec!["run", "--iterations", "-1"], "'-1' for '--iterations", "a whole number from 1 to 100000"),
        (vec!["run", "--warmup-iterations", "-1"], "'-1' for '--warmup-iterations", "a whole number from 0"),
        (vec!["run", "--window", "-2"], "'-2' for '--window", "a whole number from 1 to 1000000"),
        (vec!["run", "--ranks-per-node", "-1"], "'-1' for '--ranks-per-node", "from 1 to 64"),
        (vec!["run", "--kim", "-1,8,4,33"], "'-1,8,4,33' for '--kim", "p,a,h,g of four whole numbers"),
        (vec!["synth", "--kim", "4,8,-4,33"], "'4,8,-4,33' for '--kim", "p,a,h,g of four whole numbers"),
        (vec!["run", "--background", "-1"], "'-1' for '--background", "none, uniform:LOAD"),
        (vec!["sweep", "--seeds", "-1"], "'-1' for '--seeds", "a whole number from 1 to 100000"),
        (vec!["sweep", "--sizes", "-1"], "'-1' for '--sizes", "not a size in bytes"),
        (vec!["synth", "--loads", "-0.5"], "'-0.5' for '--loads", "LOAD in [0, 1]"),
        (vec!["synth", "--warmup", "-1"], "'-1' for '--warmup", "a whole number from 0 to 1000000000"),
        (vec!["synth", "--measure", "-1"], "'-1' for '--measure", "a whole number from 1 to 1000000000"),
        (vec!["synth", "--loads", "0.5,2"], "--loads", "LOAD in [0, 1]"),
        (vec!["synth", "--pattern", "tornado"], "--pattern", "ur (uniform) or wc"),
        (vec!["synth", "--pattern", "wc", "--groups", "1"], "--pattern wc", "the network has 1 group"),
        // uniform traffic on a network of one node: the only node sent to node 1, out of bounds (a panic)
        (vec!["synth", "--kim", "1,1,1,1"], "--pattern ur --kim 1,1,1,1", "the network has 1 node: give it 2 or more"),
        (vec!["synth", "--mode", "FASTEST"], "--mode", "ADAPTIVE0..ADAPTIVE3"),
    ] {
        let (code, stdout, err) = sim(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}");
        assert!(err.contains(option) && err.contains(why), "{args:?}: {err}");
    }
    // checks of the whole experiment name the option too
    let (code, _, err) = sim(&["sweep", "--workload", "barrier", "--sizes", "64", "--seeds", "1"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("aar: --sizes 64: workload barrier takes no size"), "{err}");
    let (code, _, err) = sim(&["sweep", "--workload", "halo3d", "--sizes", "64,2GiB", "--seeds", "1"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("aar: --sizes 2G: halo3d messages of 2147483648 bytes"), "{err}");
    let (code, _, err) = sim(&["run", "--groups", "0"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("aar: --groups 0") && err.contains("groups = 0"), "{err}");
    let (code, _, err) = sim(&["run", "--global-per-router", "11"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--global-per-router 11") && err.contains("1..=10"), "{err}");
}

#[test]
fn every_option_that_takes_a_size_reads_it_as_the_engine_does() {
    let dir = temp_dir("sizes");
    for (size, bytes) in [("4KB", 4096), ("4KiB", 4096), ("64k", 65536)] {
        let d = dir.to_str().unwrap();
        let workload = format!("alltoall:{size}");
        let (code, out, err) = sim(&[&["run", "--workload", &workload, "--out", d][..], &SMALL[..]].concat());
        assert_eq!(code, Some(0), "--workload {workload}: {err}");
        assert!(out.contains(&format!("sim-alltoall-{bytes}_same-blade")), "{out}");
        for background in [format!("uniform:0.1:{size}"), format!("worst-case:0.1:{size}")] {
            let (code, out, err) =
                sim(&[&["run", "--background", &background, "--out", d][..], &SMALL_BACKGROUND[..]].concat());
            assert_eq!(code, Some(0), "--background {background}: {err}");
            let kind = background.split(':').next().unwrap();
            assert!(out.contains(&format!("_{kind}-0.1-{bytes}_seed1")), "{out}");
        }
        let background = format!("congestors:{size}");
        let (code, out, err) =
            sim(&[&["run", "--background", &background, "--out", d][..], &SMALL_BACKGROUND[..]].concat());
        assert_eq!(code, Some(0), "--background {background}: {err}");
        assert!(out.contains(&format!("_congestors-{bytes}_seed1")), "{out}");
        let (code, out, err) =
            sim(&[&["sweep", "--workload", "pingpong", "--seeds", "1", "--sizes", size][..], &SMALL[..]].concat());
        assert_eq!(code, Some(0), "--sizes {size}: {err}");
        assert!(out.contains(&format!("| pingpong-{bytes} | auto | 1 |")), "{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `aar sim paper --quick`, the suite's CI form, on the real 1,024-rank job in the busy machine:
/// the document and one plot per benchmark are written next to it, the JSON says the job is
/// 1,024 ranks on 257 routers over 6 groups, the background's measured loads are within their
/// band, and every gate passes (exit status 0).
#[test]
fn the_quick_paper_suite_writes_its_document_and_passes_its_gates() {
    let dir = temp_dir("paper");
    let doc = dir.join("PAPER.md");
    let json = dir.join("paper.json");
    let out = aar().args(["sim", "paper", "--quick", "--out"]).arg(&doc).arg("--json").arg(&json).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(text.starts_with("# The SC'19 microbenchmarks at paper scale"), "{text}");
    assert!(text.contains("Generated by `aar sim paper --quick`") && text.contains("agrees"), "{text}");
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!((r["ranks"].as_u64(), r["routers"].as_u64(), r["groups"].as_u64()), (Some(1024), Some(257), Some(6)));
    let gates = r["gates"].as_array().unwrap();
    assert!(gates.len() >= 8 && gates.iter().all(|g| g["pass"] == true), "{gates:?}");
    for p in r["background"]["patterns"].as_array().unwrap() {
        let (doc, got) = (p["documented"].as_f64().unwrap(), p["measured"].as_f64().unwrap());
        assert!((got - doc).abs() <= 0.1 * doc, "{p}");
    }
    let cases = r["cases"].as_array().unwrap();
    assert!(cases.len() >= 4);
    for c in cases {
        let arms: Vec<&str> = c["arms"].as_array().unwrap().iter().map(|a| a["policy"].as_str().unwrap()).collect();
        assert_eq!(arms, ["ADAPTIVE0", "ADAPTIVE3", "auto", "steady"]);
        let a0 = &c["arms"][0]["summary"]["median"];
        assert_eq!(a0.as_f64(), Some(1.0), "times are normalised to ADAPTIVE0's median");
        // Each policy runs alone against the same background from the same start: at 8 B the
        // ping-pong's `auto` sends every byte with ADAPTIVE3, as ADAPTIVE3 does, and takes the
        // same time to the nanosecond.
        if c["case"]["bench"].as_str().unwrap().starts_with("ping-pong") {
            let arm = |i: usize| (c["arms"][i]["share_a3"].as_f64(), c["arms"][i]["median_ns"].as_f64());
            assert_eq!(arm(2).0, Some(1.0), "{c}");
            assert_eq!(arm(2), arm(1), "auto and ADAPTIVE3 route alike and meet the same machine");
        }
        // A barrier carries no payload: `steady` does not try routings on it, so it routes every
        // message as `auto` does, from the same start, and takes the same time.
        if c["case"]["bench"] == "barrier" {
            let arm = |i: usize| (c["arms"][i]["share_a3"].as_f64(), c["arms"][i]["median_ns"].as_f64());
            assert_eq!(arm(3), arm(2), "steady and auto route the barrier alike: {c}");
        }
        // every plot the document shows is there, an SVG
        let bench = c["case"]["bench"].as_str().unwrap();
        let name = text.split(&format!("![{bench}](")).nth(1).and_then(|t| t.split(')').next()).unwrap();
        let svg = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("<rect"), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--ranks-per-node K` puts K consecutive ranks on each node of the placement (the records say
/// which node), and the experiment id says so; a K that does not divide the ranks, or nodes the
/// placement cannot hold, or a K outside 1..=64 are refused naming `--ranks-per-node`.
#[test]
fn ranks_per_node_place_consecutive_ranks_on_one_node_and_bad_values_are_refused() {
    let dir = temp_dir("ranks-per-node");
    let (code, stdout, err) = sim(&[
        "run",
        "--workload",
        "alltoall:1K",
        "--ranks",
        "8",
        "--ranks-per-node",
        "4",
        "--placement",
        "same-blade",
        "--iterations",
        "2",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stdout}\n{err}");
    let summaries = files(&dir, ".sim-rank.json");
    assert_eq!(summaries.len(), 8);
    let mut nodes = Vec::new();
    for f in &summaries {
        assert!(f.to_str().unwrap().contains("_8ranksx4_"), "{f:?}");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        nodes.push((v["rank"].as_u64().unwrap(), v["node"].as_u64().unwrap()));
        // 3 of an alltoall's 7 messages go to ranks of the same node, through shared memory
        assert_eq!(v["intra_node_messages"].as_u64(), Some(2 * 3), "{v}");
        assert_eq!(v["messages_per_mode"].as_array().unwrap().iter().map(|m| m.as_u64().unwrap()).sum::<u64>(), 2 * 4);
    }
    nodes.sort_unstable();
    assert_eq!(nodes.iter().map(|n| n.1).collect::<Vec<_>>(), [0, 0, 0, 0, 1, 1, 1, 1]);
    let _ = std::fs::remove_dir_all(&dir);
    for (args, why) in [
        (vec!["run", "--ranks", "6", "--ranks-per-node", "4"], "--ranks 6 --ranks-per-node 4: 6 ranks do not fill"),
        (
            vec!["run", "--ranks", "32", "--ranks-per-node", "4", "--placement", "same-blade"],
            "--ranks 32 --ranks-per-node 4: placement same-blade holds at most 4 nodes",
        ),
        (vec!["run", "--ranks-per-node", "0"], "'0' for '--ranks-per-node"),
        (vec!["run", "--ranks-per-node", "65"], "1 to 64"),
    ] {
        let (code, stdout, err) = sim(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
}

/// Output that cannot be written (a full disk under `aar sim ... > FILE`) is an error said like
/// any other, never a panic, and the records are written all the same; a reader that stops early
/// (`| head -1`) is no error.
#[test]
fn a_stdout_that_cannot_be_written_is_said_and_the_records_are_kept() {
    let dir = temp_dir("full");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = aar()
        .args([&["sim", "run", "--out", dir.to_str().unwrap()][..], &SMALL[..]].concat())
        .stdout(std::process::Stdio::from(full))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("aar: the output could not be written to the standard output") && !err.contains("panicked"));
    assert!(!files(&dir, ITERATIONS_SUFFIX).is_empty(), "the records were written");
    let mut child = aar()
        .args([&["sim", "run"][..], &SMALL[..]].concat())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A second run of the same scenario into the same folder (other policies, other iterations: the
/// experiment id names neither) replaces the first one's records, and says so.
#[test]
fn records_of_an_earlier_run_that_are_replaced_are_said() {
    let dir = temp_dir("replace");
    let d = dir.to_str().unwrap();
    let (code, _, err) = sim(&[&["run", "--out", d, "--policy", "ADAPTIVE0"][..], &SMALL[..]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("replacing"), "{err}");
    let (code, _, err) = sim(&[&["run", "--out", d, "--policy", "ADAPTIVE3"][..], &SMALL[..]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches("replacing records that an earlier run wrote there").count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A folder whose name is not UTF-8 takes the records: the command line in their headers says it
/// lossily (as libaar.so's do), where reading the arguments as UTF-8 panicked once the run was done.
#[test]
fn records_go_to_a_folder_whose_name_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let mut name = temp_dir("not-utf8").into_os_string();
    name.push(std::ffi::OsStr::from_bytes(b"-\xff"));
    let dir = PathBuf::from(name);
    let out = aar().args(["sim", "run", "--out"]).arg(&dir).args(SMALL).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let records = files(&dir, ITERATIONS_SUFFIX);
    assert_eq!(records.len(), 2, "{records:?}");
    let (h, _) = read(&records[0]);
    assert!(h.command_line.iter().any(|a| a.ends_with("-\u{fffd}")), "{:?}", h.command_line);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--placement across-groups` spreads consecutive ranks over the groups: on a network of one
/// group it would be a same-group job under another name, so it is refused naming both options
/// (the network's shape as it was given: `--groups` or `--kim`).
#[test]
fn across_groups_on_one_group_is_refused_naming_both_options() {
    for (shape, named) in [(vec!["--groups", "1"], "--groups 1"), (vec!["--kim", "1,2,1,1"], "--kim 1,2,1,1")] {
        let args = [&["run", "--placement", "across-groups", "--iterations", "1"][..], &shape[..]].concat();
        let (code, stdout, err) = sim(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}");
        assert!(err.starts_with(&format!("aar: --placement across-groups {named}: ")), "{err}");
        assert!(err.contains("2 or more groups") && err.contains("same-group"), "{err}");
        assert!(stdout.is_empty(), "nothing ran: {stdout}");
    }
    let (code, _, err) = sim(&["run", "--placement", "across-groups", "--groups", "2", "--iterations", "1"]);
    assert_eq!(code, Some(0), "{err}");
}

/// `aar sim synth`: a load of 0 offers nothing to measure and is refused saying what to give
/// instead; a load too small to simulate is refused by the load's parser; a window in which no
/// packet arrives shows `-` and says why, never NaN.
#[test]
fn synthetic_loads_that_measure_nothing_are_refused_or_said_never_nan() {
    let small = ["synth", "--groups", "2", "--warmup", "0"];
    for loads in ["0", "0.1,0"] {
        let (code, stdout, err) = sim(&[&small[..], &["--loads", loads, "--measure", "100"]].concat());
        assert_eq!(code, Some(2), "--loads {loads}: {stdout}");
        assert!(err.starts_with("aar: --loads 0: a load of 0 offers no traffic") && err.contains("0.01"), "{err}");
        assert!(stdout.is_empty(), "nothing ran: {stdout}");
    }
    // 1e-300 injected at full rate: the geometric gap of so small a probability is 0
    let (code, stdout, err) = sim(&[&small[..], &["--loads", "1e-300", "--measure", "10"]].concat());
    assert_eq!(code, Some(2), "{stdout}");
    assert!(err.contains("'1e-300' for '--loads") && err.contains("at least 0.000001"), "{err}");
    let (code, stdout, err) = sim(&[&small[..], &["--loads", "0.1", "--measure", "1"]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(!stdout.to_lowercase().contains("nan"), "{stdout}");
    assert!(stdout.contains("| MIN_HASH | 0.1 | 0.0000 | - | - | - |"), "{stdout}");
    assert!(stdout.contains("no packet was delivered in the 1 NIC cycles measured"), "{stdout}");
    // a load below a thousandth is shown as given: three decimals made it 0.000 (or 0.0005 0.001)
    let (code, stdout, err) = sim(&[&small[..], &["--loads", "0.0004,0.000001", "--measure", "1"]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(stdout.contains("| MIN_HASH | 0.0004 | ") && stdout.contains("| MIN_HASH | 0.000001 | "), "{stdout}");
}

/// A policy, mode, load or size given twice (under any of its spellings) would run twice: an A/B
/// arm of the same name takes half the iterations and the table pooled them in one row, a sweep
/// point counted its identical samples twice. Each is refused naming the option and the value.
#[test]
fn a_value_given_twice_is_refused_naming_the_option_and_the_value() {
    for (args, why) in [
        (vec!["run", "--policy", "auto,ADAPTIVE3,paper"], "aar: --policy: auto is given more than once"),
        (vec!["run", "--policy", "ADAPTIVE3", "--policy", "adaptive_3"], "aar: --policy: ADAPTIVE3 is given more"),
        (vec!["sweep", "--policy", "off,default", "--seeds", "1"], "aar: --policy: off is given more than once"),
        (vec!["sweep", "--sizes", "64,4K,4096", "--seeds", "1"], "aar: --sizes: 4K is given more than once"),
        (vec!["synth", "--mode", "MIN_HASH,ADAPTIVE0,MIN"], "aar: --mode: MIN_HASH is given more than once"),
        (vec!["synth", "--loads", "0.1,0.3,0.10"], "aar: --loads: 0.1 is given more than once"),
    ] {
        let (code, stdout, err) = sim(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}");
        assert!(err.starts_with(why) && err.contains("give each"), "{args:?}: {err}");
        assert!(stdout.is_empty(), "nothing ran: {stdout}");
    }
}

/// The help of every option whose value has forms lists what its parser accepts, from the list
/// the parser's own messages use (the production background was missing from it).
#[test]
fn the_help_lists_every_form_the_parsers_accept() {
    use aar_sim::config::MODE_NAMES;
    use aar_sim::experiment::{BACKGROUNDS, POLICIES};
    use aar_sim::workload::{PLACEMENTS, WORKLOADS};
    for cmd in ["run", "sweep"] {
        let (code, help, err) = sim(&[cmd, "--help"]);
        assert_eq!(code, Some(0), "{err}");
        for forms in [WORKLOADS, BACKGROUNDS, PLACEMENTS, POLICIES] {
            assert!(help.contains(forms), "aar sim {cmd} --help lacks {forms}:\n{help}");
        }
        assert!(help.contains("production[:LOAD[:SIZE]]") && help.contains("LOAD default 0.2"), "{help}");
    }
    let (code, help, err) = sim(&["synth", "--help"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(help.contains(MODE_NAMES), "{help}");
}

/// Sizes take the suffixes B, K, M, G, T and P (K = 1024); the largest message the simulator
/// moves packet by packet is 1G, and a larger one is refused with that bound before anything is
/// built, whichever option gives it; past 1P the size itself is refused with its bound.
#[test]
fn every_suffix_is_read_and_sizes_past_the_bound_are_refused_with_it() {
    for (args, why) in [
        (vec!["run", "--workload", "pingpong:1T"], "pingpong messages of 1099511627776 bytes"),
        (vec!["run", "--workload", "alltoall:1P"], "alltoall messages of 1125899906842624 bytes"),
        (vec!["run", "--background", "uniform:0.1:1TiB"], "background messages of 1099511627776 bytes"),
        (vec!["run", "--background", "production:0.1:1pb"], "background messages of 1125899906842624 bytes"),
        (vec!["sweep", "--sizes", "64,1T", "--seeds", "1"], "aar: --sizes 1T: pingpong messages"),
    ] {
        let (code, stdout, err) = sim(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}");
        assert!(err.contains(why) && err.contains("at most 1073741824 bytes"), "{args:?}: {err}");
        assert!(stdout.is_empty(), "nothing ran: {stdout}");
    }
    for (size, why) in [("2P", "2P is more than 1P (1 PiB)"), ("1E", "optionally followed by B, K, M, G, T or P")] {
        let workload = format!("pingpong:{size}");
        let (code, _, err) = sim(&["run", "--workload", &workload]);
        assert_eq!(code, Some(2), "{size}");
        assert!(err.contains(&format!("'{workload}' for '--workload")) && err.contains(why), "{err}");
    }
}

/// Where the output cannot go is said before anything runs, naming the option and what to give:
/// `--out` of run and sweep is a folder (a file, a device or a path under a file is refused);
/// the reports and JSON of validate, paper and bench are files (a folder or a device is refused:
/// the file is renamed over its path, which would replace `/dev/null` itself).
#[test]
fn outputs_that_cannot_be_written_are_refused_before_the_simulation() {
    let dir = temp_dir("outputs");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, "kept").unwrap();
    let under_file = file.join("records");
    let (file, under_file, folder) = (file.to_str().unwrap(), under_file.to_str().unwrap(), dir.to_str().unwrap());
    let small = |cmd: &str, option: &str, path: &str| {
        let mut v = vec![cmd.to_string(), option.to_string(), path.to_string()];
        if cmd == "run" || cmd == "sweep" {
            v.extend(SMALL.iter().map(|a| a.to_string()));
        }
        v
    };
    for (args, why) in [
        (small("run", "--out", "/dev/null"), "aar: --out /dev/null: not a folder".to_string()),
        (small("sweep", "--out", file), format!("aar: --out {file}: not a folder")),
        (small("run", "--out", under_file), format!("aar: --out {under_file}: cannot create the folder")),
        (small("validate", "--out", "/dev/null"), "aar: --out /dev/null: not a regular file".to_string()),
        (small("validate", "--out", folder), format!("aar: --out {folder}: a folder, not a file")),
        (small("paper", "--out", under_file), format!("aar: --out {under_file}: cannot create the folder")),
        (small("bench", "--json", folder), format!("aar: --json {folder}: a folder, not a file: give a file name")),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, err) = sim(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}");
        assert!(err.starts_with(&why) && err.contains("give a"), "{args:?}: {err}");
        assert!(stdout.is_empty(), "nothing ran: {stdout}");
    }
    assert_eq!(std::fs::read_to_string(file).unwrap(), "kept");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two outputs of one command on one file (`--out` and `--json` of paper, or either on one of the
/// plots paper writes beside `--out`) were both written, the last over the first, after the whole
/// suite: refused before anything runs, naming both and the path.
#[test]
fn two_outputs_on_one_file_are_refused_before_the_simulation() {
    let dir = temp_dir("one-file");
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("X.md");
    std::fs::write(&report, "kept").unwrap();
    let (x, folder) = (report.to_str().unwrap(), dir.to_str().unwrap());
    let dotted = format!("{folder}/./X.md");
    let plot = format!("{folder}/paper-barrier.svg");
    for (args, why) in [
        (vec!["paper", "--quick", "--out", x, "--json", x], format!("aar: --out {x} and --json {x}: the same file")),
        (
            vec!["paper", "--quick", "--out", x, "--json", &dotted],
            format!("aar: --out {x} and --json {dotted}: the same file"),
        ),
        (
            vec!["paper", "--quick", "--out", x, "--json", &plot],
            format!("aar: --json {plot} and the plot of barrier (beside --out) {plot}: the same file"),
        ),
        (
            vec!["paper", "--quick", "--out", &plot],
            format!("aar: --out {plot} and the plot of barrier (beside --out) {plot}: the same file"),
        ),
    ] {
        let (code, stdout, err) = sim(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}");
        assert!(err.starts_with(&why) && err.contains("give each its own file"), "{args:?}: {err}");
        assert!(stdout.is_empty(), "nothing ran: {stdout}");
    }
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "kept");
    assert!(!Path::new(&plot).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A background asked for on more nodes than are free in its reach runs on all of those: the run
/// says on how many, and a note says the request was more than there are, with what gives more.
#[test]
fn a_background_on_more_nodes_than_are_free_says_how_many_ran_it() {
    let small = ["run", "--placement", "same-blade", "--ranks", "2", "--iterations", "1", "--workload", "pingpong:8"];
    let bg = ["--groups", "1", "--background", "uniform:0.1:64"];
    let (code, stdout, err) = sim(&[&small[..], &bg[..], &["--background-nodes", "4"]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(stdout.contains("background uniform:0.1:64 on 4 nodes\n"), "{stdout}");
    assert!(err.is_empty(), "{err}");
    // One group of 96 routers with 4 nodes each, 2 of them the job's: only more groups give more.
    let (code, stdout, err) = sim(&[&small[..], &bg[..], &["--background-nodes", "100000"]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(stdout.contains("background uniform:0.1:64 on 382 nodes\n"), "{stdout}");
    assert!(
        err.starts_with("aar: --background-nodes 100000: only 382 nodes are free in the background's reach")
            && err.contains("give at most 382")
            && err.contains("or more --groups for more nodes"),
        "{err}"
    );
}

/// A background that cannot mean what it says is refused before anything runs, by the
/// simulator's one check (the one `AAR_EMU_SIM` uses), naming the options: worst-case traffic
/// (group to group) on a network of one group ran as traffic inside the group, and a background
/// with fewer `--background-nodes` than it needs to send anything ran as no background at all.
#[test]
fn backgrounds_that_cannot_run_as_described_are_refused_naming_the_options() {
    let small = ["run", "--placement", "same-blade", "--ranks", "2", "--iterations", "1", "--workload", "pingpong:8"];
    for (args, starts, why) in [
        (
            vec!["--groups", "1", "--background", "worst-case:0.5"],
            "aar: --background worst-case:0.5:4K --groups 1: ",
            "the network has 1 group: give it 2 or more groups",
        ),
        (
            vec!["--kim", "2,2,1,1", "--background", "worst-case:0.1:64"],
            "aar: --background worst-case:0.1:64 --kim 2,2,1,1: ",
            "from each group to the next",
        ),
        // kept to the job's groups (the default), the background of a job inside one group has no
        // next group either: it ran as uniform traffic in the group
        (
            vec!["--groups", "2", "--background", "worst-case:0.5"],
            "aar: --background worst-case:0.5:4K --placement same-blade: ",
            "only group 0 of the 2: give the background the whole machine",
        ),
        (
            vec!["--groups", "1", "--background", "uniform:0.3", "--background-nodes", "0"],
            "aar: --background uniform:0.3:4K --background-nodes 0: ",
            "needs 1 or more background nodes",
        ),
        (
            vec!["--groups", "1", "--background", "production", "--background-nodes", "1"],
            "aar: --background production:0.2:4K --background-nodes 1: ",
            "needs 2 or more background nodes",
        ),
        (
            vec!["--groups", "1", "--background", "congestors:64", "--background-nodes", "5"],
            "aar: --background congestors:64 --background-nodes 5: ",
            "needs 6 or more background nodes (three congestor jobs of 2 or more)",
        ),
        // as many asked for as it needs, but not as many free: a group of one router of 2 nodes,
        // both the job's, so the background ran without a word as if there were none
        (
            vec!["--kim", "2,1,1,2", "--background", "uniform:0.3"],
            "aar: --background uniform:0.3:4K --background-nodes 32: ",
            "kept to the measured job's group, where only 0 nodes are free: it would send nothing; give the \
             background the whole machine, a network with more nodes per group, or no background (none) \
             (--background-global)",
        ),
        // the job's one group is the whole machine: the whole machine is no advice
        (
            vec!["--kim", "2,1,1,1", "--background", "uniform:0.3"],
            "aar: --background uniform:0.3:4K --background-nodes 32: ",
            "only 0 nodes of the machine are free of the measured job: it would send nothing; give a larger network",
        ),
        (
            vec!["--kim", "2,1,1,2", "--background", "congestors:64", "--background-global"],
            "aar: --background congestors:64 --background-nodes 32: ",
            "only 2 nodes of the machine are free of the measured job: it would send nothing; give a larger network",
        ),
    ] {
        for cmd in [&["run"][..], &["sweep", "--seeds", "1"][..]] {
            let args = [cmd, &small[1..], &args[..]].concat();
            let (code, stdout, err) = sim(&args);
            assert_eq!(code, Some(2), "{args:?}: {stdout}");
            assert!(err.starts_with(starts) && err.contains(why) && err.contains("give "), "{args:?}: {err}");
            assert!(stdout.is_empty(), "nothing ran: {stdout}");
        }
    }
    // what means something still runs: no traffic needs no background node; enough nodes; two groups
    for args in [
        vec!["--groups", "1", "--background", "uniform:0", "--background-nodes", "0"],
        vec!["--groups", "1", "--background", "production:0", "--background-nodes", "0"],
        vec!["--groups", "1", "--background", "none", "--background-nodes", "0"],
        vec!["--groups", "1", "--background", "congestors:64", "--background-nodes", "6"],
        vec!["--groups", "2", "--background", "worst-case:0.1:64", "--background-nodes", "1", "--background-global"],
        vec!["--groups", "2", "--background", "worst-case:0", "--background-nodes", "0"],
        vec!["--kim", "2,1,1,2", "--background", "uniform:0.3", "--background-global"],
    ] {
        let args = [&small[..], &args[..]].concat();
        let (code, _, err) = sim(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
    }
}

/// A policy that the A/B schedule gives none of the measured iterations (fewer iterations than
/// policies, or a shuffled block cut by the warm-up) had a row of 0 iterations and a median of
/// "0 ns", a time nothing took: refused before anything runs, naming the options, the policy and
/// how many iterations measure every policy; as many iterations as that run every policy.
#[test]
fn a_policy_no_measured_iteration_runs_is_refused_naming_the_options() {
    let small = ["--groups", "1", "--placement", "same-blade", "--workload", "pingpong:8"];
    for (args, policy, needed) in [
        (vec!["run", "--iterations", "2", "--policy", "auto,off,ADAPTIVE0"], "ADAPTIVE0", "3"),
        (vec!["sweep", "--seeds", "1", "--iterations", "1", "--policy", "auto,off"], "off", "2"),
        // shuffled:2 runs off then auto in its first block, auto then off in its second
        (
            vec![
                "run",
                "--iterations",
                "2",
                "--warmup-iterations",
                "1",
                "--policy",
                "auto,off",
                "--order",
                "shuffled:2",
            ],
            "off",
            "3",
        ),
    ] {
        let (code, stdout, err) = sim(&[&args[..], &small[..]].concat());
        assert_eq!(code, Some(2), "{args:?}: {stdout}");
        assert!(err.starts_with("aar: --iterations "), "{args:?}: {err}");
        assert!(err.contains(&format!("policy {policy} runs in none")), "{args:?}: {err}");
        assert!(err.contains(&format!("give at least {needed} iterations")), "{args:?}: {err}");
        assert!(stdout.is_empty(), "nothing ran: {stdout}");
        // the number it names measures every policy
        let mut enough = args.clone();
        let at = enough.iter().position(|a| *a == "--iterations").unwrap() + 1;
        enough[at] = needed;
        let (code, stdout, err) = sim(&[&enough[..], &small[..]].concat());
        assert_eq!(code, Some(0), "{enough:?}: {err}");
        assert!(!stdout.contains("| 0 |") && !stdout.contains("| 0 ns"), "{enough:?}: {stdout}");
    }
}

/// Two packed placements of one job differ in their shape, and the experiment id and the run's
/// header line say it (`packed-1-1`, `packed:1:1`): both runs' records stay side by side in one
/// folder (they were both `packed`, and the second replaced the first).
#[test]
fn packed_placements_of_other_shapes_are_other_experiments() {
    let dir = temp_dir("packed-shapes");
    let out = dir.to_str().unwrap();
    for shape in ["packed:1:1", "packed:2:1"] {
        let (code, stdout, err) = sim(&[
            "run",
            "--groups",
            "1",
            "--workload",
            "pingpong:8",
            "--iterations",
            "1",
            "--placement",
            shape,
            "--out",
            out,
        ]);
        assert_eq!(code, Some(0), "{shape}: {err}");
        assert!(stdout.contains(&format!("(2 ranks, {shape})")), "{shape}: {stdout}");
        assert!(!err.contains("replacing records"), "{shape}: {err}");
    }
    let names: Vec<String> = files(&dir, ".iterations.jsonl")
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "aar.sim-pingpong-8_packed-1-1_2ranks_none_seed1.0.0.iterations.jsonl",
            "aar.sim-pingpong-8_packed-1-1_2ranks_none_seed1.1.0.iterations.jsonl",
            "aar.sim-pingpong-8_packed-2-1_2ranks_none_seed1.0.0.iterations.jsonl",
            "aar.sim-pingpong-8_packed-2-1_2ranks_none_seed1.1.0.iterations.jsonl",
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The run's line gives the simulated time in a unit that shows it: a run of a microsecond said
/// "0.0 ms simulated".
#[test]
fn the_simulated_time_of_a_short_run_is_shown_in_its_unit() {
    let (code, stdout, err) =
        sim(&["run", "--groups", "1", "--placement", "same-blade", "--workload", "pingpong:8", "--iterations", "1"]);
    assert_eq!(code, Some(0), "{err}");
    let line = stdout.lines().next().unwrap();
    let time = line.split(", ").find(|f| f.contains(" simulated in ")).unwrap();
    let (value, unit) = time.split(" simulated in ").next().unwrap().split_once(' ').unwrap();
    assert_eq!(unit, "ns", "{line}");
    assert!(value.parse::<f64>().unwrap() > 0.0, "{line}");
}

/// `sweep --sizes` with a workload that takes no size is refused saying what to do with the
/// sweep (leave out --sizes), not the workload parser's "write barrier alone".
#[test]
fn sizes_for_a_workload_without_a_size_say_to_leave_them_out() {
    let (code, stdout, err) = sim(&["sweep", "--workload", "barrier", "--sizes", "8", "--seeds", "1"]);
    assert_eq!(code, Some(2), "{stdout}");
    assert!(err.starts_with("aar: --sizes 8: workload barrier takes no size"), "{err}");
    assert!(err.contains("leave out --sizes") && !err.contains("write barrier alone"), "{err}");
    assert!(stdout.is_empty(), "nothing ran: {stdout}");
}

/// Every option of every `aar sim` command says in its help what it is: --ranks,
/// --warmup-iterations and the --out of validate and paper showed only their default.
#[test]
fn every_option_of_every_command_has_a_help_text() {
    for command in ["run", "sweep", "synth", "bench", "validate", "paper"] {
        let (code, help, err) = sim(&[command, "--help"]);
        assert_eq!(code, Some(0), "{command}: {err}");
        let lines: Vec<&str> = help.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate().filter(|(_, l)| l.starts_with('-')) {
            // "--quick  smaller ..." (short help beside it) or "--ranks <RANKS>" and the text below
            let beside = line.split_once("  ").map(|(_, text)| text.trim()).unwrap_or_default();
            let below = lines.get(i + 1).copied().unwrap_or_default();
            let described = !beside.is_empty() && !beside.starts_with("[default")
                || beside.is_empty() && !below.is_empty() && !below.starts_with('-') && !below.starts_with("[default");
            assert!(described, "aar sim {command}: {line} has no help text:\n{help}");
        }
    }
}

/// A ping-pong is between ranks 0 and 1 whatever --ranks says: a larger job is said to leave the
/// others idle, once, in run and in sweep; two ranks get no word.
#[test]
fn a_ping_pong_of_more_than_two_ranks_says_the_others_send_nothing() {
    let base = ["--groups", "1", "--placement", "same-blade", "--iterations", "1", "--workload", "pingpong:8"];
    for (cmd, ranks, said) in [
        (&["run"][..], "4", Some("the other 2 ranks send nothing")),
        (&["sweep", "--seeds", "2"][..], "3", Some("the other 1 rank sends nothing")),
        (&["run"][..], "2", None),
    ] {
        let args = [cmd, &base[..], &["--ranks", ranks][..]].concat();
        let (code, stdout, err) = sim(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let notes: Vec<&str> = err.lines().filter(|l| l.contains("a ping-pong is between ranks 0 and 1")).collect();
        match said {
            Some(said) => {
                assert_eq!(notes.len(), 1, "{args:?}: {err}");
                assert!(notes[0].contains(said) && notes[0].contains("give --ranks 2"), "{}", notes[0]);
            }
            None => assert!(notes.is_empty(), "{err}"),
        }
        assert!(!stdout.contains("a ping-pong"), "notes go to stderr: {stdout}");
    }
}

#[test]
fn a_run_stopped_at_max_packets_says_so_and_keeps_the_iterations_every_rank_completed() {
    let args = ["run", "--groups", "2", "--global-per-router", "2", "--workload", "incast:4K", "--ranks", "6"];
    let args = [&args[..], &["--placement", "scattered", "--iterations", "8", "--out"]].concat();
    let full_dir = temp_dir("max-packets-full");
    let (code, full, _) = sim(&[&args[..], &[full_dir.to_str().unwrap()]].concat());
    assert_eq!(code, Some(0), "{full}");
    // `..., N packets, ...` of the run's line
    let packets: u64 = full.split(" packets").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
    let dir = temp_dir("max-packets");
    let max = (packets / 2).to_string();
    let (code, out, err) = sim(&[&args[..], &[dir.to_str().unwrap(), "--max-packets", &max]].concat());
    assert_eq!(code, Some(3), "{out}{err}");
    let said = format!("aar: --max-packets {max}: stopped after ");
    assert!(err.contains(&said) && err.contains("give a larger --max-packets"), "{err}");
    let done: usize = err.split("packets, ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((1..8).contains(&done), "{err}");
    assert!(out.contains(&format!("| auto | {done} |")), "the table holds them: {out}");
    let (records, full_records) = (files(&dir, ITERATIONS_SUFFIX), files(&full_dir, ITERATIONS_SUFFIX));
    assert_eq!(records.len(), 6);
    for (part, whole) in records.iter().zip(&full_records) {
        let ((_, rows), (_, all)) = (read(part), read(whole));
        assert_eq!(rows, all[..done], "{}: the full run's first {done} rows", part.display());
    }
    // stopped before any measured iteration: no records, said on stdout
    let none = temp_dir("max-packets-none");
    let (code, out, _) = sim(&[&args[..], &[none.to_str().unwrap(), "--max-packets", "1"]].concat());
    assert_eq!(code, Some(3));
    assert!(out.contains("| auto | 0 | - | - | -") && out.contains("no rank records written"), "{out}");
    assert!(out.contains("non-minimal fraction of the job's request packets: - (no measured packet)"), "{out}");
    assert!(!none.exists() || files(&none, ITERATIONS_SUFFIX).is_empty());
    for d in [full_dir, dir, none] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_long_run_says_what_it_takes_before_it_starts() {
    // three ping-pongs of 1 GiB: 2 x 16 Mi packets a message, requests and responses
    let (code, _, err) = sim(&["run", "--workload", "pingpong:1G", "--iterations", "3", "--max-packets", "1000"]);
    assert_eq!(code, Some(3), "{err}");
    let note =
        "aar: --workload pingpong:1G --ranks 2 --iterations 3: at least 201326592 packets (the job's own: 3 min to \
                67 min of one core";
    assert!(err.contains(note), "{err}");
    assert!(!err.contains("--max-packets N stops"), "the bound is given: {err}");
    let (code, _, err) = sim(&["run", "--workload", "pingpong:8", "--iterations", "3"]);
    assert_eq!(code, Some(0));
    assert!(!err.contains("at least"), "a short run says nothing: {err}");
    // With a background, its packets at its load over the least time the run takes: 32 nodes at
    // 0.3 flits a cycle, 4 KiB messages of 320 request flits and 2 x 64 packets: 3.84 packets a
    // NIC cycle over 4,000 cycles of lead and the 3 x 2 x 2^24 x 5 flits of the ping-pong's NICs
    // (a flit a cycle: 314.578 ms).
    let args = ["run", "--workload", "pingpong:1G", "--iterations", "3", "--background", "uniform:0.3"];
    let (code, _, err) = sim(&[&args[..], &["--max-packets", "1000"]].concat());
    assert_eq!(code, Some(3), "{err}");
    let note =
        "aar: --workload pingpong:1G --ranks 2 --iterations 3: at least 1167709593 packets (the job's 201326592 \
                and the background's 966383001 at its load over the 314.578 ms simulated the run takes at least: 19 \
                min to 6.5 h of one core";
    assert!(err.contains(note), "{err}");
    // a sweep weighs its largest run the same way (naming its seeds and sizes), and says how to
    // bound it where it is not
    let args = ["sweep", "--workload", "pingpong:8", "--sizes", "8,1G", "--iterations", "3", "--seeds", "1"];
    let (_, line) = first_line(&args, "1", true);
    let note = "aar: --workload pingpong:1G --ranks 2 --iterations 3 --seeds 1 --sizes 8,1G: at least 201326592 \
                packets (the job's own: ";
    assert!(line.starts_with(note) && line.contains("; --max-packets N stops the run after N packets"), "{line}");
}

#[test]
fn a_sweep_bounded_by_max_packets_names_the_runs_it_stopped() {
    let job = ["--groups", "2", "--global-per-router", "2", "--ranks", "6", "--placement", "scattered"];
    let job = [&job[..], &["--iterations", "8"]].concat();
    // the packets of each size's run (seed 1, as the sweep's first), from `run`'s line
    let packets = |workload: &str| {
        let (code, out, err) = sim(&[&["run", "--workload", workload][..], &job[..]].concat());
        assert_eq!(code, Some(0), "{err}");
        out.split(" packets").next().unwrap().rsplit(' ').next().unwrap().parse::<u64>().unwrap()
    };
    let (small, large) = (packets("incast:64"), packets("incast:4K"));
    assert!(small < large / 2, "{small} {large}");
    let max = (large / 2).to_string();
    let dir = temp_dir("sweep-max-packets");
    let sweep = [&["sweep", "--workload", "incast:64", "--sizes", "64,4K", "--seeds", "1"][..], &job[..]].concat();
    let (code, out, err) = sim(&[&sweep[..], &["--max-packets", &max, "--out", dir.to_str().unwrap()]].concat());
    assert_eq!(code, Some(3), "{out}{err}");
    let said = format!("aar: --max-packets {max}: 1 of 2 runs stopped: incast:4K seed 1 after ");
    let note = err.lines().find(|l| l.starts_with(&said)).unwrap_or_else(|| panic!("{err}"));
    assert!(note.contains(" holds those; give a larger --max-packets"), "{note}");
    assert!(note.contains("the table (and the records)"), "{note}");
    let done: usize = note.split("packets, ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((1..8).contains(&done), "{note}");
    assert!(
        out.contains("| incast-64 | auto | 8 |") && out.contains(&format!("| incast-4096 | auto | {done} |")),
        "{out}"
    );
    for record in files(&dir, ITERATIONS_SUFFIX) {
        let rows = read(&record).1.len();
        let expected = if record.to_str().unwrap().contains("incast-4096") { done } else { 8 };
        assert_eq!(rows, expected, "{}", record.display());
    }
    assert_eq!(files(&dir, ITERATIONS_SUFFIX).len(), 12, "{out}");
    // every run stopped before its first measured iteration: no record of them
    let none = temp_dir("sweep-max-packets-none");
    let (code, out, err) = sim(&[&sweep[..], &["--max-packets", "1", "--out", none.to_str().unwrap()]].concat());
    assert_eq!(code, Some(3), "{out}{err}");
    assert!(err.contains("aar: --max-packets 1: 2 of 2 runs stopped: incast:64 seed 1 after "), "{err}");
    assert!(out.contains("0 rank records of 0 experiments written"), "{out}");
    assert!(files(&none, ITERATIONS_SUFFIX).is_empty());
    // not reached: nothing said, exit 0
    let (code, _, err) = sim(&[&sweep[..], &["--max-packets", &(large + 1).to_string()]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("--max-packets"), "{err}");
    for d in [dir, none] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The paper suite's runs are each bounded: the document, the JSON and stderr name those stopped,
/// and the exit status is 3 (not the 1 of the gates they leave unmet).
#[test]
fn a_paper_suite_bounded_by_max_packets_says_which_runs_it_stopped() {
    let dir = temp_dir("paper-max-packets");
    let (doc, json) = (dir.join("PAPER.md"), dir.join("paper.json"));
    let (doc_s, json_s) = (doc.to_str().unwrap(), json.to_str().unwrap());
    let (code, out, err) = sim(&["paper", "--quick", "--out", doc_s, "--json", json_s, "--max-packets", "1"]);
    assert_eq!(code, Some(3), "{out}{err}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["suite"]["max_packets"], 1);
    let stopped = report["stopped"].as_array().unwrap();
    let runs = 4 * report["suite"]["cases"].as_array().unwrap().len();
    assert_eq!(stopped.len(), runs, "{report}");
    let said = format!("aar: --max-packets 1: {runs} of {runs} runs stopped: ");
    assert!(err.contains(&said) && err.contains("; barrier seed 1 steady after "), "{err}");
    assert!(err.contains("the report holds those"), "{err}");
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(text.contains("Generated by `aar sim paper --quick --max-packets 1`"), "{text}");
    let said = format!("**{runs} of {runs} runs were stopped by `--max-packets 1`** before their job ended");
    assert!(text.contains(&said) && text.contains("barrier seed 1 steady (0 of 1 measured iterations)"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_that_would_not_fit_in_memory_is_refused_before_it_starts() {
    let kb = available_kb();
    if kb > 64e6 {
        eprintln!("skipped: {kb} kB available would take an alltoall too large to count quickly");
        return;
    }
    // an alltoall whose messages alone take 1.5 times what is available (150 bytes each at least)
    let ranks = ((kb * 1024.0 * 1.5 / 150.0).sqrt() as u32).max(64);
    let groups = (ranks / 384 + 2).to_string();
    let ranks = ranks.to_string();
    let args = ["run", "--workload", "alltoall", "--ranks", &ranks, "--groups", &groups, "--placement", "scattered"];
    let (code, out, err) = sim(&[&args[..], &["--iterations", "1"]].concat());
    assert_eq!(code, Some(2), "{out}{err}");
    let said = format!("aar: --workload alltoall:8 --ranks {ranks} --iterations 1: ");
    assert!(
        err.starts_with(&said) && err.contains("this machine has available, so nothing was run: give fewer --ranks"),
        "{err}"
    );
    assert!(out.is_empty());
}

#[test]
fn a_run_far_too_large_for_memory_is_refused_without_counting_all_its_messages() {
    let kb = available_kb();
    if kb > 1e9 {
        eprintln!("skipped: {kb} kB available would take 9*10^10 messages, 13.5 TB, to be past it");
        return;
    }
    // 9*10^10 messages an iteration: counting them all took half an hour, saying nothing; counted
    // to twice the memory available, the refusal comes in seconds and says it counted no further
    let args = ["run", "--workload", "alltoall", "--ranks", "300000", "--groups", "961", "--placement", "scattered"];
    let folder = std::env::temp_dir().join(format!("aar-sim-refused-run-{}", std::process::id()));
    let (code, out, err) = sim(&[&args[..], &["--iterations", "1", "--out", folder.to_str().unwrap()]].concat());
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(!folder.exists(), "a refused run left its --out folder behind");
    assert!(err.starts_with("aar: --workload alltoall:8 --ranks 300000 --iterations 1: more than "), "{err}");
    assert!(
        err.contains(" messages an iteration and 300000 rows of records take at least ")
            && err.contains("this machine has available, so nothing was run: give fewer --ranks"),
        "{err}"
    );
    assert!(out.is_empty());
}

#[test]
fn a_sweep_that_stops_many_runs_names_the_first_ones_and_counts_the_others() {
    // 1,000 runs each stopped after a packet: one line naming every one of them was 80 KB
    let args = ["sweep", "--workload", "barrier", "--groups", "1", "--global-per-router", "1", "--ranks", "4"];
    let (code, out, err) = sim(&[&args[..], &["--seeds", "1000", "--max-packets", "1"]].concat());
    assert_eq!(code, Some(3), "{out}{err}");
    let line = err.lines().find(|l| l.starts_with("aar: --max-packets 1: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.starts_with("aar: --max-packets 1: 1000 of 1000 runs stopped: barrier seed 1 after "), "{line}");
    assert!(line.contains("; barrier seed 20 after ") && !line.contains("barrier seed 21 "), "{line}");
    assert!(line.contains(" measured iterations done; and 980 more; the table holds those; "), "{line}");
}

#[test]
fn a_sweep_whose_records_would_not_fit_in_memory_is_refused_naming_its_seeds() {
    let kb = available_kb();
    if kb > 1e9 {
        eprintln!("skipped: {kb} kB available would hold the 2 TB of records of this sweep");
        return;
    }
    // Each run is stopped after a packet (a second for all of them), but a sweep keeps every
    // run's records until the end: 1000 runs of 4,000,000 rows (512 bytes each) are 2 TB, which
    // were counted for the 2 runs at once alone and the sweep run, so that a sweep of full runs
    // ran for hours before it took more memory than the machine has.
    let args = ["sweep", "--workload", "barrier", "--groups", "1", "--global-per-router", "1", "--ranks", "40"];
    let folder = std::env::temp_dir().join(format!("aar-sim-refused-sweep-{}", std::process::id()));
    let more = ["--iterations", "100000", "--seeds", "1000", "--max-packets", "1", "--out", folder.to_str().unwrap()];
    let (code, out, err) = sim(&[&args[..], &more].concat());
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(!folder.exists(), "a refused sweep left its --out folder behind");
    assert!(err.starts_with("aar: --workload barrier --ranks 40 --iterations 100000 --seeds 1000: "), "{err}");
    assert!(
        err.contains(" runs (4000000 rows each) kept until the end take at least ")
            && err.contains("this machine has available, so nothing was run: give fewer --seeds or --sizes"),
        "{err}"
    );
    assert!(out.is_empty());
}

#[test]
fn the_warm_up_iterations_are_named_among_the_inputs_of_a_long_run() {
    // one measured iteration after 100,000 warm-up ones of 4 MiB: the note names what makes it long
    let (code, _, err) = sim(&["run", "--iterations", "1", "--warmup-iterations", "100000", "--max-packets", "1000"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.starts_with(
            "aar: --workload pingpong:4M --ranks 2 --iterations 1 --warmup-iterations 100000: at least 26214662144 \
             packets"
        ),
        "{err}"
    );
}

/// The machine's MemAvailable, kB.
fn available_kb() -> f64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemAvailable:")).unwrap();
    line.trim_end_matches("kB").trim().parse().unwrap()
}

#[test]
fn a_large_synthetic_run_says_what_it_takes_before_it_starts() {
    // 160 groups at 0.9: 61,440 nodes inject 0.18 packets a cycle each, 4,096 cycles of which the
    // memory grows with, at 24 bytes a packet: past 1 GiB, the memory says it (the packets, fewer
    // than 10^8, do not). The note comes before the run, which is not waited for.
    for (threads, memory, at_once) in [("1", "1.1 GB", ""), ("2", "2.2 GB", ", 2 runs at once")] {
        let (_, line) =
            first_line(&["synth", "--groups", "160", "--loads", "0.5,0.9", "--mode", "UGAL"], threads, true);
        let note = format!(
            "aar: --groups 160 --loads 0.9 --warmup 2000 --measure 5000: at least 77414399 packets (77 s to 26 min \
             of one core at 50,000 to 1,000,000 packets a second) and at least {memory} of memory (61440 nodes, \
             45298483 packets in the first 4096 NIC cycles{at_once}); "
        );
        assert!(line.starts_with(&note), "{threads} threads: {line}");
    }
    let (code, _, err) = sim(&["synth", "--groups", "2", "--loads", "0.9", "--measure", "500"]);
    assert_eq!(code, Some(0));
    assert!(err.is_empty(), "a short run says nothing: {err}");
}

#[test]
fn a_synthetic_run_that_would_not_fit_in_memory_is_refused_before_it_starts() {
    // At load 1 a node of Aries injects 0.2 packets a cycle: 4,096 cycles of 24 bytes each. Where
    // one run of the largest Aries network (961 groups of 384 nodes) fits, several at once do not.
    let per_node = 0.2 * 4096.0 * 24.0;
    let nodes = available_kb() * 1024.0 * 1.5 / per_node;
    let runs = (nodes / 384.0 / 961.0).ceil().max(1.0) as u32;
    let groups = (nodes / 384.0 / f64::from(runs)).ceil() as u32;
    let groups = groups.to_string();
    // distinct loads, the largest first: one run per thread, all at once
    let loads: Vec<String> = (0..runs).map(|i| format!("{}", 1.0 - f64::from(i) / 100.0)).collect();
    let loads = loads.join(",");
    let args = ["synth", "--groups", &groups, "--loads", &loads, "--warmup", "0", "--measure", "4096"];
    let (code, err) = first_line(&args, &runs.to_string(), false);
    assert_eq!(code, Some(2), "{err}");
    let said = format!("aar: --groups {groups} --loads 1 --warmup 0 --measure 4096: ");
    assert!(
        err.starts_with(&said)
            && err.contains("this machine has available, so nothing was run: give fewer --groups or lower --loads"),
        "{err}"
    );
}

/// `aar sim ARGS` on `threads` threads (RAYON_NUM_THREADS): its exit status and the first line of
/// its stderr. It is killed once that line is read if `stop`, and after 20 s if it has said
/// nothing by then: what it should have said before it started would have bounded a run that
/// goes on for minutes and takes gigabytes.
fn first_line(args: &[&str], threads: &str, stop: bool) -> (Option<i32>, String) {
    let (code, lines) = first_lines(args, threads, stop, 1);
    (code, lines.concat())
}

/// [`first_line`] for the first `n` lines.
fn first_lines(args: &[&str], threads: &str, stop: bool, n: usize) -> (Option<i32>, Vec<String>) {
    let mut child = aar()
        .arg("sim")
        .args(args)
        .env("RAYON_NUM_THREADS", threads)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let child = std::sync::Arc::new(std::sync::Mutex::new(child));
    let (said, heard) = std::sync::mpsc::channel::<()>();
    let watchdog = {
        let child = child.clone();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = heard.recv_timeout(Duration::from_secs(20)) {
                let _ = child.lock().unwrap().kill();
            }
        })
    };
    let mut stderr = std::io::BufReader::new(stderr);
    let mut lines = vec![String::new(); n];
    for line in &mut lines {
        std::io::BufRead::read_line(&mut stderr, line).unwrap();
    }
    if stop {
        let _ = child.lock().unwrap().kill();
    }
    drop(said);
    watchdog.join().unwrap();
    let status = child.lock().unwrap().wait().unwrap();
    (status.code(), lines)
}

/// RAYON_NUM_THREADS, which aar sim's memory messages tell users to set, is read by aar sim
/// itself: a value it does not take (rayon replaced some in silence, and started 100,000 threads
/// for 100000, which hung) is said once, with what runs instead and how to fix it, and one per
/// CPU runs; a value it takes is the number of runs at once.
#[test]
fn a_rayon_num_threads_aar_sim_does_not_take_is_said_and_one_thread_per_cpu_runs() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    // three runs of about 1.1 GB each: said before they start (or refused, where they do not fit),
    // with the runs at once; the command is stopped once that is read
    let synth = ["synth", "--groups", "160", "--loads", "0.9,0.8,0.7", "--mode", "UGAL"];
    let at_once = |line: &str, n: usize| {
        let runs = if n > 1 { format!(", {n} runs at once") } else { String::new() };
        let after = line.split(" NIC cycles").nth(1).unwrap_or_default();
        after.starts_with(&format!("{runs})")) || after.starts_with(&format!("{runs} take"))
    };
    // 5000, not 100000: were the check gone, the test would start that many threads
    for bad in ["abc", "0", "-1", "1025", "5000", "\u{e9}"] {
        let (_, lines) = first_lines(&synth, bad, true, 2);
        let threads = if cpus == 1 { "1 thread".to_string() } else { format!("{cpus} threads") };
        let warning = format!(
            "aar: RAYON_NUM_THREADS: \"{}\" is not a whole number from 1 to 1024, so aar sim runs on {threads} instead \
             (one per CPU available, as without it); set it to a whole number from 1 to 1024 (1: the least memory), \
             or unset it\n",
            bad.escape_debug()
        );
        assert_eq!(lines[0], warning, "{bad}");
        assert!(at_once(&lines[1], cpus.min(3)), "{bad}: {}", lines[1]);
    }
    for (threads, runs) in [("3", 3), (" 1 ", 1), ("1024", 3), ("", cpus.min(3))] {
        let (_, line) = first_line(&synth, threads, true);
        assert!(!line.contains("RAYON_NUM_THREADS") && at_once(&line, runs), "{threads:?}: {line}");
    }
}

/// A job larger than its placement holds says how to fit it, in words that suit AAR_EMU_SIM's
/// `nodes=` too, and the option that puts more ranks on each node.
#[test]
fn a_job_larger_than_its_placement_says_how_to_fit_it() {
    let (code, out, err) = sim(&["run", "--ranks", "100000"]);
    assert_eq!(code, Some(2), "{out}");
    assert_eq!(
        err,
        "aar: --ranks 100000: placement same-group holds at most 96 nodes (one rank per node), not 100000: give at \
         most 96 ranks, or a placement that spans groups (across-groups, scattered), or more ranks per node \
         (--ranks-per-node)\n"
    );
}

/// A --kim number past any integer type says which number it is and the largest accepted (it
/// was said not to have the form p,a,h,g).
#[test]
fn a_kim_number_too_large_says_which_and_the_largest_accepted() {
    let (code, out, err) = sim(&["run", "--kim", "4,8,4,99999999999999999999"]);
    assert_eq!(code, Some(2), "{out}");
    let said = "invalid value '4,8,4,99999999999999999999' for '--kim <KIM>': \"4,8,4,99999999999999999999\": g \
                (groups) = 99999999999999999999 is out of range: the largest accepted is 33, with p,a,h = 4,8,4";
    assert!(err.contains(said), "{err}");
}

#[test]
fn an_option_that_needs_another_says_it_has_no_effect_without_it() {
    let small = ["--groups", "1", "--placement", "same-blade", "--ranks", "2", "--iterations", "2"];
    let no_background = "there is no background (--background none), so";
    for (args, said) in [
        (vec!["--background-nodes", "99999999"], "aar: --background-nodes 99999999: "),
        (vec!["--background-global"], "aar: --background-global: "),
        (vec!["--background-global", "--background-nodes", "4"], "aar: --background-nodes 4 --background-global: "),
        (vec!["--order", "shuffled:3"], "aar: --order shuffled:3: one policy (--policy auto) runs in every iteration"),
    ] {
        for cmd in ["run", "sweep"] {
            let args = [&[cmd][..], &small[..], &args[..], &["--seeds", "2"][usize::from(cmd == "run") * 2..]].concat();
            let (code, _, err) = sim(&args);
            assert_eq!(code, Some(0), "{args:?}: {err}");
            assert!(err.starts_with(said) && err.contains("no effect"), "{args:?}: {err}");
            assert_eq!(err.matches("no effect").count(), 1, "said once: {err}");
            if said.contains("background") {
                assert!(err.contains(no_background) && err.contains("give --background too"), "{err}");
            } else {
                assert!(err.contains("give two or more policies"), "{err}");
            }
        }
    }
    // with what they need, or at their defaults, nothing is said
    for args in [
        vec![],
        vec!["--background", "uniform:0.3", "--background-nodes", "8", "--background-global"],
        vec!["--order", "shuffled:3", "--policy", "auto,ADAPTIVE0"],
    ] {
        let args = [&["run"][..], &small[..], &args[..]].concat();
        let (code, _, err) = sim(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(!err.contains("no effect"), "{args:?}: {err}");
    }
}

/// A record read alone says what was simulated: every rank's iteration record (in its header) and
/// summary carry the run's effective configuration, the options given and what defaults supplied
/// (the network's latencies, buffers and size, the engine's threshold and parameters); `aar
/// report` reads such records, and records written before the configuration was added as well.
#[test]
fn records_carry_the_effective_configuration_and_older_ones_still_read() {
    use aar_engine::{EngineConfig, SteadyConfig};
    use aar_sim::experiment::{Background, ExperimentSpec};
    use aar_sim::workload::Placement;
    use aar_sim::NetConfig;
    let dir = temp_dir("config");
    let out = aar()
        .args(["sim", "run", "--groups", "3", "--workload", "alltoall:4K", "--ranks", "4", "--placement", "scattered"])
        .args(["--policy", "steady,ADAPTIVE3", "--iterations", "2", "--window", "3", "--seed", "7"])
        .args(["--background", "uniform:0.2:2K", "--background-nodes", "8", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let records = files(&dir, ITERATIONS_SUFFIX);
    let summaries = files(&dir, ".sim-rank.json");
    assert_eq!((records.len(), summaries.len()), (4, 4), "{records:?} {summaries:?}");
    let json = |text: &str| -> serde_json::Value { serde_json::from_str(text).unwrap() };
    let first_line = |path: &Path| std::fs::read_to_string(path).unwrap().lines().next().unwrap().to_string();
    let config = json(&first_line(&records[0]))["config"].clone();
    // the experiment as run, which reads back as the simulator's own spec
    let spec: ExperimentSpec = serde_json::from_value(config["experiment"].clone()).unwrap();
    // --groups given; the rest of the network is the Aries-like default
    assert_eq!(spec.net, NetConfig::aries(3));
    assert_eq!(config["experiment"]["net"]["latency"], serde_json::json!([10_000, 30_000, 30_000, 250_000]));
    assert_eq!(config["experiment"]["net"]["tick_ps"], 1);
    assert_eq!((spec.ranks, spec.placement, spec.seed, spec.iterations), (4, Placement::Scattered, 7, 2));
    assert_eq!(spec.warmup_iterations, 0);
    assert_eq!(spec.background, Background::Uniform { load: 0.2, bytes: 2048 });
    assert_eq!((spec.background_nodes, spec.background_local), (8, true));
    assert_eq!(spec.window_decisions, Some(3));
    assert_eq!(config["background_nodes_used"], 8);
    let shape = &config["shape"];
    assert_eq!((shape["groups"].as_u64(), shape["routers_per_group"].as_u64()), (Some(3), Some(96)));
    assert_eq!((shape["nodes_per_router"].as_u64(), shape["nodes"].as_u64()), (Some(4), Some(3 * 96 * 4)));
    assert_eq!(shape["global_ports_per_router"], 10);
    // the engine: --window for every policy, the first arm's policy, the defaults for the rest
    let engine = &config["engine"];
    assert_eq!(
        (engine["window_decisions"].as_u64(), engine["steady"]["window_decisions"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(engine["policy"], serde_json::json!({"kind": "steady"}));
    let defaults = EngineConfig::default();
    assert_eq!(engine["threshold_bytes"], defaults.threshold_bytes);
    assert_eq!((engine["lambda"].as_f64(), engine["sigma"].as_f64()), (Some(defaults.lambda), Some(defaults.sigma)));
    assert_eq!(engine["steady"]["hysteresis"].as_f64(), Some(SteadyConfig::default().hysteresis));
    assert_eq!((engine["latency_unit"].as_str(), engine["ranks_per_node"].as_u64()), (Some("cycles"), Some(1)));
    // every rank's header and summary carry the same configuration
    for (record, summary) in records.iter().zip(&summaries) {
        assert_eq!(json(&first_line(record))["config"], config, "{}", record.display());
        assert_eq!(json(&std::fs::read_to_string(summary).unwrap())["config"], config, "{}", summary.display());
    }
    // `aar report` reads the records with it, and as they were written before it (no `config`)
    let older = temp_dir("config-older");
    std::fs::create_dir(&older).unwrap();
    for record in &records {
        let text = std::fs::read_to_string(record).unwrap();
        let (header, rows) = text.split_once('\n').unwrap();
        let mut header = json(header);
        header.as_object_mut().unwrap().remove("config").unwrap();
        let old = format!("{header}\n{rows}");
        std::fs::write(older.join(record.file_name().unwrap()), old).unwrap();
    }
    let reports: Vec<String> = [&dir, &older]
        .iter()
        .map(|d| {
            let out = aar().arg("report").arg(d).output().unwrap();
            assert!(out.status.success(), "{}: {}", d.display(), String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        })
        .collect();
    assert!(reports[0].contains("sim-alltoall-4096_scattered_4ranks_uniform-0.2-2048_seed7"), "{}", reports[0]);
    assert!(reports[0].contains("4 ranks"), "{}", reports[0]);
    assert_eq!(reports[0], reports[1], "the configuration changes nothing the report says");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&older);
}

/// A job whose messages all stay within nodes (through their shared memory) measures no routing:
/// said before the run, with what to change; a job whose messages cross the network is not told.
#[test]
fn a_job_whose_messages_never_leave_a_node_is_told_routing_has_no_effect() {
    let said = "no message of the job crosses the network";
    for (per_node, ranks, told) in [("2", "2", true), ("4", "4", true), ("1", "2", false), ("2", "4", false)] {
        let out = aar()
            .args(["sim", "run", "--groups", "1", "--placement", "same-blade", "--iterations", "2"])
            .args(["--workload", "alltoall:4K", "--ranks", ranks, "--ranks-per-node", per_node])
            .args(["--policy", "ADAPTIVE0,ADAPTIVE3"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(err.contains(said), told, "--ranks {ranks} --ranks-per-node {per_node}: {err}");
        if told {
            assert!(err.contains(&format!("--ranks {ranks} --ranks-per-node {per_node}:")), "{err}");
            assert!(err.contains("--ranks-per-node 1) to measure routing"), "{err}");
        }
    }
}
