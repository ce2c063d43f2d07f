//! The benchmarks build and run (a smoke run with tiny batches: their figures are measured by
//! scripts/bench-overhead, never asserted in tests).

mod common;
use common::*;
use std::process::Command;

/// bench/overhead.c built as scripts/bench-overhead builds it, warnings as errors, in `dir`.
fn build_overhead(dir: &std::path::Path) -> std::path::PathBuf {
    let bin = dir.join("overhead");
    let lib = libdir();
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-rdynamic", "-I"])
        .arg(root().join("cabi"))
        .arg(root().join("bench/overhead.c"))
        .arg("-o")
        .arg(&bin)
        .arg(format!("-L{}", lib.display()))
        .args(["-ldmapp", "-lugni", "-ldl"])
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .unwrap();
    assert!(st.success());
    bin
}

#[test]
fn the_overhead_benchmark_builds_and_measures_every_path() {
    let dir = scratch("bench-overhead");
    let bin = build_overhead(&dir);
    let out = Command::new(&bin)
        .args(["--batches", "3", "--batch-posts", "200", "--runs", "2"])
        .env("LD_PRELOAD", libaar())
        .env("AAR_PAPI_EVENTS", sde_events_setting())
        .env("AAR_SUMMARY", "0")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // The harness also measures the SC'19 stand-in (bench/sc19.c), so it names no library.
    assert!(
        stdout.contains("through the preloaded library vs the emulator directly"),
        "the shim was measured: {stdout}"
    );
    // coll: libaar.so's MPI_Allreduce found the harness's PMPI_Allreduce (the harness checks the
    // result of every call).
    for path in ["below", "1k", "read", "smsg", "mix", "dput", "dread", "coll"] {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(path))
            .unwrap_or_else(|| panic!("no {path} line: {stdout}"));
        // direct, shim, added, ratio, then the spread of the added cost over the runs "min..max".
        let numbers: Vec<f64> =
            line.split_whitespace().skip(1).flat_map(|x| x.split("..")).map(|x| x.parse().unwrap()).collect();
        assert_eq!(numbers.len(), 6, "{line}");
        assert!(numbers[4] <= numbers[2] && numbers[2] <= numbers[5], "median within the spread: {line}");
        assert!(numbers[0] > 0.0 && numbers[1] > 0.0, "{line}");
    }
}

#[test]
fn the_overhead_benchmark_refuses_what_it_would_misread_and_says_its_usage() {
    let dir = scratch("bench-overhead-args");
    let bin = build_overhead(&dir);
    // Each was measured as something else: an unknown option or path was skipped (nothing, or
    // every path, measured), and --batches 0 read a median outside its array.
    for (args, said) in [
        (&["--batches", "0"][..], "--batches 0: give a whole number from 1 to 1000000"),
        (&["--batches", "-5"][..], "--batches -5: give a whole number from 1 to 1000000"),
        (&["--batch-posts", "2x"][..], "--batch-posts 2x: give a whole number"),
        (&["--runs", "65"][..], "--runs 65: give a whole number from 1 to 64"),
        (&["--batches"][..], "--batches (no value)"),
        (&["--only", "reads"][..], "--only reads: no such path"),
        (&["--help-me"][..], "--help-me: unknown option"),
    ] {
        let out = Command::new(&bin).args(args).env_remove("LD_PRELOAD").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said) && stderr.contains("usage: overhead"), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing measured");
    }
    let out = Command::new(&bin).arg("--help").output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("--only PATH"));
    // the script's --help is its comment, before it builds anything
    let out = Command::new(root().join("scripts/bench-overhead")).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("scripts/bench-overhead --compare [ROUNDS]"), "{text}");
    assert!(!text.contains("set -euo") && !text.contains("# overhead per post"), "{text}");
}

#[test]
fn the_sc19_stand_in_builds_and_routes_the_read_path() {
    let dir = scratch("bench-sc19");
    let so = dir.join("libsc19.so");
    let st = Command::new("cc")
        .args(["-O3", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-I"])
        .arg(root().join("cabi"))
        .arg(root().join("bench/sc19.c"))
        .arg("-o")
        .arg(&so)
        .args(["-lpapi", "-ldl", "-lm"])
        .status()
        .unwrap();
    assert!(st.success());
    let bin = build_overhead(&dir);
    let log = dir.join("emu.jsonl");
    let out = Command::new(&bin)
        .args(["--only", "read", "--batches", "2", "--batch-posts", "100", "--runs", "1"])
        .env("LD_PRELOAD", &so)
        .env("SC19_PAPI_EVENTS", sde_events_setting())
        .env("SC19_REPORT", "1")
        .env("AAR_EMU_LOG", &log)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.lines().any(|l| l.split_whitespace().next() == Some("read")), "{stdout}");
    let modes: Vec<u64> = read_jsonl(&log)
        .iter()
        .filter(|v| v["call"] == "GNI_PostRdma")
        .map(|v| v["dlvr_mode"].as_u64().unwrap())
        .collect();
    assert!(modes.iter().all(|&m| m == AD0 || m == AD3), "{modes:?}");
    // Half the posts go through the stand-in (the harness alternates), every one 64 KiB and over
    // the threshold. The first read has no window before it and the second makes the first
    // window: the posts before it keep the caller's routing, and every later one is decided by
    // the model, which sends 64 KiB on the low-stall side on the emulator's idle network.
    let through = modes.len() as u64 / 2 * 65536;
    let report = format!("sc19: {through} bytes, 0 below the threshold, {} on the low-stall side", through - 2 * 65536);
    assert!(stderr.contains(&report), "expected {report:?} in {stderr}");
}

/// scripts/bench-report runs the `aar` and `gen_records` cargo built, from where cargo put them
/// (scripts/build-release, as install and demo do): it took them from target/release (or
/// CARGO_TARGET_DIR), where a cargo config's target-dir leaves an older build or none. Here `cargo`
/// is a stand-in that reports, as cargo does in its JSON messages, programs of its own elsewhere.
#[test]
fn bench_report_runs_the_programs_from_where_cargo_built_them() {
    let dir = scratch("bench-report-target-dir");
    let (release, bin, log) = (dir.join("elsewhere/release"), dir.join("bin"), dir.join("ran.log"));
    std::fs::create_dir_all(release.join("examples")).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    // Written by a child process: see aar_testkit::write_script (ETXTBSY).
    let script = |path: &std::path::Path, text: String| aar_testkit::write_script(path, &format!("#!/bin/sh\n{text}"));
    let (aar, gen) = (release.join("aar"), release.join("examples/gen_records"));
    script(&aar, format!("echo \"aar $*\" >>'{}'\necho '\"iterations_used\": 10'\n", log.display()));
    script(&gen, format!("echo \"gen_records $*\" >>'{}'\nmkdir -p \"$2\"\n", log.display()));
    let report: String = [&aar, &gen]
        .iter()
        .map(|f| {
            format!(
                "printf '%s\\n' '{{\"reason\":\"compiler-artifact\",\"filenames\":[\"{}\"],\"fresh\":true}}'\n",
                f.display()
            )
        })
        .collect();
    script(&bin.join("cargo"), report);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(root().join("scripts/bench-report"))
        .args(["2", "3"])
        .env("PATH", path)
        .env("AAR_BENCH_DIR", &dir)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    let ran = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(out.status.success(), "{}{ran}", String::from_utf8_lossy(&out.stderr));
    assert!(ran.contains("gen_records --out ") && ran.contains("aar report "), "{ran}");
}

/// The ablation series of `scripts/bench-overhead --ablation` (bench/ablation/) applies, patch
/// after patch, to the files as they are: a change to the read path that a patch touches must
/// refresh the series (bench/ablation/README.md says how), or the script stops at that patch.
/// The files the patches touch are copied into a scratch folder and patched there with
/// `git apply`, which works outside a repository (and checks that each patched file is there).
#[test]
fn the_ablation_patches_apply_to_the_read_path_as_it_is() {
    let dir = scratch("bench-ablation");
    let mut patches: Vec<_> = std::fs::read_dir(root().join("bench/ablation"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "patch"))
        .collect();
    patches.sort();
    assert_eq!(patches.len(), 5, "{patches:?}");
    for patch in &patches {
        let text = std::fs::read_to_string(patch).unwrap();
        for line in text.lines().filter_map(|l| l.strip_prefix("diff --git a/")) {
            let file = line.split(" b/").next().unwrap();
            let copy = dir.join(file);
            if !copy.exists() {
                std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
                std::fs::copy(root().join(file), &copy).unwrap();
            }
        }
        // (The scratch folder is inside this repository: without the ceiling, git would apply
        // the patch relative to the repository's top and skip every file outside the folder.)
        let out = Command::new("git")
            .arg("apply")
            .arg(patch)
            .current_dir(&dir)
            .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} does not apply after the ones before it: {}; refresh the series as bench/ablation/README.md says",
            patch.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
