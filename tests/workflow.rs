//! The workflow a user follows, end to end with the real artifacts: an A/B experiment of an
//! example program under libaar.so over a simulated Aries network (where the routing policies
//! really differ), then `aar report` on the records the job wrote.

mod common;
use common::*;
use serde_json::Value;
use std::process::Command;

#[test]
fn a_b_run_over_a_simulated_network_then_aar_report_finds_the_faster_policy() {
    // Between two groups of a 3-group network, 64 KiB PUTs take measurably longer with plain
    // Adaptive (non-minimal paths through the third group) than with High Bias.
    let r = Launch::program("workflow", example("iterations"), "--iters 24 --bytes 64K")
        .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
        .env("AAR_AB_ORDER", "shuffled:3")
        .env("AAR_EMU_SIM", "groups=3,placement=across-groups")
        .env("SLURM_JOB_ID", "4242")
        .env("SLURM_STEP_ID", "0")
        .env("PMI_RANK", "0")
        .unset("AAR_EMU_LOG")
        .run();
    r.assert_ok();
    let records = r.dir.join("out");
    let plot = r.dir.join("ab.svg");
    let out = Command::new(aar_command()).arg("report").arg(&records).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "a clean job's records give no warning: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = report.to_string();
    // Independently of the report: the rows the library wrote, per policy.
    let (_, rows) = iteration_records(&records).remove(0);
    assert_eq!(rows.len(), 24);
    let median = |policy: &str| {
        let mut t: Vec<u64> = rows
            .iter()
            .filter(|r| r["policy"] == policy)
            .map(|r| r["end_ns"].as_u64().unwrap() - r["start_ns"].as_u64().unwrap())
            .collect();
        assert_eq!(t.len(), 12, "{policy}: the shuffled blocks give each policy half the iterations");
        t.sort();
        (t[5] + t[6]) as f64 / 2.0
    };
    let (ad0, ad3) = (median("ADAPTIVE0"), median("ADAPTIVE3"));
    assert!(ad3 < ad0 * 0.95, "High Bias is faster between groups here: {ad3} ns vs {ad0} ns");
    assert_eq!(report["experiments"][0]["experiment"], "4242.0", "the experiment is the job and step");
    let policies =
        report.pointer("/experiments/0/policy_stats").and_then(Value::as_array).expect("per-policy statistics");
    let find = |name: &str| policies.iter().find(|p| p["policy"] == name).unwrap_or_else(|| panic!("{name}: {text}"));
    let (p0, p3) = (find("ADAPTIVE0"), find("ADAPTIVE3"));
    assert_eq!((p0["iterations"].as_u64(), p3["iterations"].as_u64()), (Some(12), Some(12)));
    assert_eq!(p0["median_ns"].as_f64(), Some(ad0), "the report's median is the rows' median");
    assert_eq!(p3["median_ns"].as_f64(), Some(ad3));
    assert!((p3["vs_first"]["ratio"].as_f64().unwrap() - ad3 / ad0).abs() < 1e-9, "{p3}");
    assert_eq!(p3["vs_first"]["significant"], true, "12 against 12 iterations that never overlap: {p3}");
    let ci = &p3["vs_first"]["ratio_ci"];
    assert!(ci[0].as_f64().unwrap() <= ad3 / ad0 && ad3 / ad0 <= ci[1].as_f64().unwrap() && ci[1].as_f64() < Some(1.0));
    // The picture names both policies.
    let out = Command::new(aar_command()).arg("report").arg(&records).arg("--plot").arg(&plot).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("ADAPTIVE0") && svg.contains("ADAPTIVE3"), "the plot names the policies");
}
