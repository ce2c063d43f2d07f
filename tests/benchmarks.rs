//! The benchmarks build and run (a smoke run with tiny batches: their figures are measured by
//! scripts/bench-overhead, never asserted in tests).

mod common;
use common::*;
use std::process::Command;

#[test]
fn the_overhead_benchmark_builds_and_measures_every_path() {
    let dir = scratch("bench-overhead");
    let bin = dir.join("overhead");
    let lib = libdir();
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
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
    assert!(stdout.contains("through libaar.so vs the emulator directly"), "the shim was measured: {stdout}");
    for path in ["below", "1k", "read", "smsg", "mix", "dput", "dread"] {
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
