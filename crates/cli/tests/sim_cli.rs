//! `aar sim` end to end: records are written, bad arguments are reported with exit code 2.

use std::process::Command;

fn aar() -> Command {
    Command::new(env!("CARGO_BIN_EXE_aar"))
}

#[test]
fn run_writes_one_record_per_rank() {
    let dir = std::env::temp_dir().join(format!("aar-sim-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = aar()
        .args(["sim", "run", "--groups", "2", "--global-per-router", "2", "--workload", "alltoall:4K", "--ranks", "4"])
        .args(["--placement", "scattered", "--policy", "auto,ADAPTIVE3", "--iterations", "4", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| auto |") && text.contains("| ADAPTIVE3 |"), "{text}");
    for r in 0..4 {
        let rec = std::fs::read_to_string(dir.join(format!("rank-{r:05}.json"))).unwrap();
        let v: serde_json::Value = serde_json::from_str(&rec).unwrap();
        assert_eq!(v["schema"], "aar-sim-rank/1");
        assert_eq!(v["iterations"].as_array().unwrap().len(), 4);
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
}
