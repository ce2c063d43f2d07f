//! The emulated libugni.so as C programs see it: data delivery, error codes, the post log, and
//! the NIC counters read through the real libpapi (moved by uGNI posts and DMAPP calls alike).
//! No preload: these test the emulator alone.

mod common;

use std::path::PathBuf;
use std::process::Command;

use aar_abi::*;
use aar_engine::model::{packets, request_flits, Transfer};
use common::*;

fn emu_check() -> PathBuf {
    compile("crates/emu/tests/c/emu_check.c", "emu_check")
}

fn scenario(name: &str) {
    assert_eq!(pass(&emu_check(), name, &[]), Vec::<String>::new());
}

#[test]
fn header_layouts_match_the_abi() {
    scenario("layout");
}

#[test]
fn put_and_get_deliver_bytes_and_events() {
    scenario("put_get");
}

#[test]
fn amos_operate_atomically_on_remote_words() {
    scenario("amo");
}

#[test]
fn smsg_delivers_in_order_with_credits_and_tags() {
    scenario("smsg");
}

#[test]
fn chained_posts_transfer_every_element_with_one_completion() {
    scenario("chain");
}

#[test]
fn cq_writes_reach_the_remote_cq() {
    scenario("cqwrite");
}

#[test]
fn bad_arguments_get_ugni_error_codes() {
    scenario("errors");
}

#[test]
fn datagrams_meet_their_peer_and_collect_its_bytes() {
    scenario("datagram");
}

#[test]
fn eight_threads_post_at_once() {
    scenario("threads");
}

#[test]
fn every_post_is_logged_as_received() {
    let log = scratch("log_sequence.jsonl");
    let out = run(&emu_check(), &["log"], &[("AAR_EMU_LOG", log.to_str().unwrap())]);
    let stdout = expect_success(&out, "log");
    let nics: Vec<u32> =
        stdout.lines().find_map(|l| l.strip_prefix("nic ")).unwrap().split(' ').map(|n| n.parse().unwrap()).collect();
    let a = nics[0];
    let text = std::fs::read_to_string(&log).unwrap();
    let want = [
        r#"{"call":"GNI_PostFma","type":3,"length":64,"dlvr_mode":128,"rc":0}"#.to_string(),
        r#"{"call":"GNI_PostRdma","type":2,"length":4096,"dlvr_mode":259,"rc":0}"#.to_string(),
        r#"{"call":"GNI_PostFma","type":3,"length":8,"dlvr_mode":0,"rc":2}"#.to_string(),
        r#"{"call":"GNI_PostFma","type":null,"length":null,"dlvr_mode":null,"rc":2}"#.to_string(),
        r#"{"call":"GNI_PostCqWrite","type":7,"length":0,"dlvr_mode":32,"rc":0}"#.to_string(),
        r#"{"call":"GNI_CtPostFma","type":3,"length":32,"dlvr_mode":64,"chain_elements":2,"chain_bytes":210,"rc":0}"#
            .to_string(),
        format!(r#"{{"call":"GNI_SmsgSend","length":48,"smsg_dlvr_mode":0,"nic":{a},"rc":0}}"#),
        format!(r#"{{"call":"GNI_SmsgSetDeliveryMode","nic":{a},"dlvr_mode":128,"rc":0}}"#),
        format!(r#"{{"call":"GNI_SmsgSendWTag","length":16,"smsg_dlvr_mode":128,"nic":{a},"rc":0}}"#),
        r#"{"call":"GNI_SmsgSend","length":8,"smsg_dlvr_mode":null,"nic":null,"rc":2}"#.to_string(),
        r#"{"call":"GNI_SmsgSetDeliveryMode","nic":null,"dlvr_mode":0,"rc":2}"#.to_string(),
    ];
    let got: Vec<&str> = text.lines().collect();
    assert_eq!(got, want);
    for line in &got {
        // Each a JSON object that opens with the call and closes with its return code.
        let fields = parse_log_line(line);
        assert!(line.starts_with(r#"{"call":""#) && line.ends_with(&format!(r#","rc":{}}}"#, fields["rc"])), "{line}");
    }
}

/// Chain lengths that add up past 2^64-1 are refused and logged with the most a chain can move,
/// never with the small total the sum would wrap to.
#[test]
fn a_chain_whose_total_passes_2_64_is_refused_and_logged_unwrapped() {
    let log = scratch("log_chain_wrap.jsonl");
    let out = run(&emu_check(), &["chain_wrap"], &[("AAR_EMU_LOG", log.to_str().unwrap())]);
    expect_success(&out, "chain_wrap");
    let text = std::fs::read_to_string(&log).unwrap();
    let want = format!(
        r#"{{"call":"GNI_CtPostFma","type":3,"length":16,"dlvr_mode":0,"chain_elements":2,"chain_bytes":{},"rc":2}}"#,
        u64::MAX
    );
    assert_eq!(text.lines().collect::<Vec<_>>(), [want.as_str()]);
}

#[test]
fn an_unopenable_log_path_warns_and_the_program_runs() {
    let out = run(&emu_check(), &["put_get"], &[("AAR_EMU_LOG", "/nonexistent-dir/x.jsonl")]);
    expect_success(&out, "put_get");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("aar-emu: AAR_EMU_LOG=/nonexistent-dir/x.jsonl"), "{err}");
}

#[test]
fn blank_values_are_unset_values() {
    // A blank AAR_EMU_LOG names no file: nothing is created in the working directory.
    let blank = std::path::Path::new("  ");
    let _ = std::fs::remove_file(blank);
    let out = run(
        &emu_check(),
        &["put_get"],
        &[
            ("AAR_EMU_LOG", "  "),
            ("AAR_EMU_LATENCY_UNIT", ""),
            ("AAR_EMU_NETWORK", " "),
            ("AAR_EMU_SIM", ""),
            ("AAR_EMU_JOB_DIR", " "),
        ],
    );
    expect_success(&out, "put_get");
    assert_eq!(stderr(&out), "", "blank values are unset values, with nothing to warn about");
    let created = blank.exists();
    let _ = std::fs::remove_file(blank);
    assert!(!created, "AAR_EMU_LOG=\"  \" created a file named by two blanks");
}

#[test]
fn a_value_that_is_not_utf8_is_said_as_a_bad_value() {
    use std::os::unix::ffi::OsStrExt;
    // Bytes no UTF-8 string holds: each value is bad, not unset, and is said with U+FFFD for them.
    let bad = |text: &str| std::ffi::OsStr::from_bytes(&[text.as_bytes(), b"\xff"].concat()).to_owned();
    let vars = [("AAR_EMU_NETWORK", "latency_ad=2"), ("AAR_EMU_LATENCY_UNIT", "cycles"), ("AAR_EMU_SIM", "groups=3")];
    let out = Command::new(emu_check())
        .arg("put_get")
        .env_remove("AAR_EMU_LOG")
        .env_remove("LD_PRELOAD")
        .envs(vars.map(|(var, text)| (var, bad(text))))
        .output()
        .expect("run emu_check");
    expect_success(&out, "put_get");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 3, "{err}");
    for (var, text) in vars {
        let said = format!("aar-emu: {var}=\"{text}\u{FFFD}\"");
        assert!(err.lines().any(|l| l.starts_with(&said)), "no {said} in:\n{err}");
    }
}

#[test]
fn a_log_that_cannot_be_written_warns_once_and_the_program_runs() {
    // /dev/full opens, and every write to it fails with ENOSPC.
    let out = run(&emu_check(), &["put_get"], &[("AAR_EMU_LOG", "/dev/full")]);
    expect_success(&out, "put_get");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("aar-emu: AAR_EMU_LOG=/dev/full: cannot write a line ("), "{err}");
    assert!(err.contains("said once"), "{err}");
}

/// A log that reaches the file size limit (`ulimit -f`, which batch systems pass on) is one that
/// cannot be written: its lines are left out with one warning, and no SIGXFSZ ends the program.
#[test]
fn a_log_at_the_file_size_limit_warns_once_and_the_program_runs() {
    let log = std::env::temp_dir().join(format!("aar-emu-fsize-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let out = Command::new("prlimit")
        .args(["--fsize=200", "--"])
        .arg(emu_check())
        .arg("put_get")
        .env("AAR_EMU_LOG", &log)
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    let kept = std::fs::metadata(&log).map(|m| m.len());
    let _ = std::fs::remove_file(&log);
    expect_success(&out, "put_get under prlimit --fsize=200");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot write a line (File too large"), "{err}");
    assert!(kept.as_ref().is_ok_and(|&n| n <= 200), "the log stays within the limit: {kept:?}");
}

/// What the default timing model adds to (req_flits, req_stalled, rsp_latency_us, rsp_packets,
/// rsp_stalled) for one transfer, computed from the documented rules (packets and flits as the
/// shim's cost model counts them).
fn model(bytes: u64, transfer: Transfer, mode: u16, p: (f64, f64, f64, f64)) -> [f64; 5] {
    let (lat_ad, lat_bs, st_ad, st_bs) = p;
    let packets = packets(bytes) as f64;
    let flits = request_flits(bytes, transfer) as f64;
    let (w, factor) = match mode & GNI_DLVMODE_ROUTING_MASK {
        GNI_DLVMODE_ADAPTIVE0 => (0.0, 1.0),
        GNI_DLVMODE_ADAPTIVE1 => (1.0 / 3.0, 1.0),
        GNI_DLVMODE_ADAPTIVE2 => (2.0 / 3.0, 1.0),
        GNI_DLVMODE_ADAPTIVE3 | GNI_DLVMODE_MIN_HASH | GNI_DLVMODE_IN_ORDER => (1.0, 1.0),
        GNI_DLVMODE_NMIN_HASH => (0.0, 2.0),
        m => panic!("mode {m:#x} not used here"),
    };
    let latency = (lat_ad + w * (lat_bs - lat_ad)) * factor;
    let stall = st_ad + w * (st_bs - st_ad);
    [flits, flits * stall, packets * latency, packets, 0.0]
}

fn sum(parts: &[[f64; 5]]) -> [f64; 5] {
    let mut s = [0.0; 5];
    for p in parts {
        for i in 0..5 {
            s[i] += p[i];
        }
    }
    s
}

/// Runs papi_counters and checks every step's counter changes against the model, with
/// fractional amounts carried over (the cumulative counter is the floor of the cumulative sum).
/// Nothing on stderr.
fn check_counters(args: &[&str], env: &[(&str, &str)], latency_scale: f64) {
    check_counters_warned(args, env, latency_scale, 0.0, "");
}

/// [`check_counters`], with `warning` (if not empty) as the one line on stderr.
/// `rsp_stall`: the response stalls per request stall the model is expected to count with.
fn check_counters_warned(args: &[&str], env: &[(&str, &str)], latency_scale: f64, rsp_stall: f64, warning: &str) {
    let exe = compile("crates/emu/tests/c/papi_counters.c", "papi_counters");
    let out = run(&exe, args, env);
    let stdout = expect_success(&out, "papi_counters");
    let want = if warning.is_empty() { String::new() } else { format!("{warning}\n") };
    assert_eq!(stderr(&out), want);
    let prof = (1.5, 1.0, 2.0, 40.0);
    let m = |bytes, transfer, mode| {
        let mut e = model(bytes, transfer, mode, prof);
        e[2] *= latency_scale;
        e[4] = e[1] * rsp_stall;
        e
    };
    let (put, get) = (Transfer::Put, Transfer::Get);
    let (a0, a2, a3) = (GNI_DLVMODE_ADAPTIVE0, GNI_DLVMODE_ADAPTIVE2, GNI_DLVMODE_ADAPTIVE3);
    // (step, model amounts, injected integer amounts)
    let steps: Vec<(&str, [f64; 5], [i64; 5])> = vec![
        ("put64_a0", m(64, put, a0), [0; 5]),
        ("put64_a3", m(64, put, a3), [0; 5]),
        ("get4096_a0", m(4096, get, a0), [0; 5]),
        ("put1000_a3_tail", m(1000, put, a3 | GNI_DLVMODE_ORDERED_TAIL), [0; 5]),
        ("put64_nmin", m(64, put, GNI_DLVMODE_NMIN_HASH), [0; 5]),
        ("amo8_a2", m(8, put, a2), [0; 5]),
        ("smsg100_a3", m(100, put, a3), [0; 5]),
        ("chain_64_2x128_a0", sum(&[m(64, put, a0), m(128, put, a0), m(128, put, a0)]), [0; 5]),
        ("cqwrite_len4096_and_chain_of_2_a2", sum(&[m(0, put, a2), m(0, put, a2), m(0, put, a2)]), [0; 5]),
        // DMAPP: nelems x element size per PE, in the uGNI mode of the routing attribute.
        ("dmapp_init", [0.0; 5], [0; 5]),
        ("dmapp_put64_ad", m(64, put, a0), [0; 5]),
        ("dmapp_put1000_a3", m(1000, put, a3), [0; 5]),
        ("dmapp_get4096_a2", m(4096, get, a2), [0; 5]),
        ("dmapp_amo_a3", m(8, put, a3), [0; 5]),
        ("dmapp_ixpe_3x64_a3", sum(&[m(64, put, a3), m(64, put, a3), m(64, put, a3)]), [0; 5]),
        ("dmapp_iput128_a3", m(128, put, a3), [0; 5]),
        (
            "dmapp_put64_inorder_get64_nmin",
            sum(&[m(64, put, GNI_DLVMODE_IN_ORDER), m(64, get, GNI_DLVMODE_NMIN_HASH)]),
            [0; 5],
        ),
        ("frozen_put", [0.0; 5], [0; 5]),
        ("injected", [0.0; 5], [-3, 0, 0, 0, 7]),
        ("thawed_put64_a0", m(64, put, a0), [0; 5]),
        ("set", [0.0; 5], [1000, 0, 0, 0, 1]),
    ];
    let got: Vec<(String, [i64; 5])> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("step "))
        .map(|l| {
            let mut parts = l.split(' ');
            let name = parts.next().unwrap().to_string();
            let v: Vec<i64> = parts.map(|x| x.parse().unwrap()).collect();
            (name, v.try_into().unwrap())
        })
        .collect();
    assert_eq!(got.len(), steps.len(), "{stdout}");
    let (mut model_sum, mut injected, mut counted) = ([0.0f64; 5], [0i64; 5], [0i64; 5]);
    for ((name, delta), (want_name, amounts, inject)) in got.iter().zip(&steps) {
        assert_eq!(name, want_name);
        for i in 0..5 {
            model_sum[i] += amounts[i];
            injected[i] += inject[i];
            counted[i] += delta[i];
            let lo = (model_sum[i] - 1e-6).floor() as i64 + injected[i];
            let hi = (model_sum[i] + 1e-6).floor() as i64 + injected[i];
            assert!(
                (lo..=hi).contains(&counted[i]),
                "step {name}, counter {i}: cumulative {} but the model says {} (+{} injected)\n{stdout}",
                counted[i],
                model_sum[i],
                injected[i]
            );
        }
    }
}

#[test]
fn counters_read_through_papi_follow_the_model() {
    check_counters(&["--set-network"], &[], 1.0);
}

/// aar_emu_set_network sets the two ends of the profile; the response stalls per request stall
/// that AAR_EMU_NETWORK gave stay.
#[test]
fn setting_the_network_keeps_the_response_stalls_of_the_environment() {
    check_counters_warned(&["--set-network"], &[("AAR_EMU_NETWORK", "rsp_stall=0.5")], 1.0, 0.5, "");
}

#[test]
fn network_profile_and_latency_unit_come_from_the_environment() {
    let env = [
        ("AAR_EMU_NETWORK", "latency_ad=1.5, latency_bs=1.0,stall_ad=2,stall_bs=40"),
        ("AAR_EMU_LATENCY_UNIT", "cycles"),
    ];
    check_counters(&[], &env, 800.0);
}

#[test]
fn a_network_value_too_large_to_count_warns_and_keeps_the_default() {
    // rsp_stall=u64::MAX would add about 1.8e19 response stalls per stalled request cycle:
    // the counter would overflow at the first transfer. The model's rsp_stall is the default 0.
    let huge = "18446744073709551615";
    let env = [
        ("AAR_EMU_NETWORK", &*format!("latency_ad=1.5, latency_bs=1.0,stall_ad=2,stall_bs=40,rsp_stall={huge}")),
        ("AAR_EMU_LATENCY_UNIT", "cycles"),
    ];
    let warning = format!(
        "aar-emu: AAR_EMU_NETWORK=\"{}\": rsp_stall=\"{huge}\" is not a number from 0 to 1e6; using the default \
         rsp_stall=0",
        env[0].1
    );
    check_counters_warned(&[], &env, 800.0, 0.0, &warning);
}

#[test]
fn a_bad_network_value_warns_once_and_keeps_the_default() {
    let out =
        run(&emu_check(), &["put_get"], &[("AAR_EMU_NETWORK", "latency_ad=fast"), ("AAR_EMU_LATENCY_UNIT", "ns")]);
    expect_success(&out, "put_get");
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines.iter().all(|l| l.starts_with("aar-emu: ")), "{err}");
    let network = lines.iter().find(|l| l.contains("AAR_EMU_NETWORK")).expect("network warning");
    assert!(network.contains("latency_ad=\"fast\"") && network.contains("default latency_ad=1.4"), "{network}");
    let unit = lines.iter().find(|l| l.contains("AAR_EMU_LATENCY_UNIT")).expect("unit warning");
    assert!(unit.contains("\"ns\"") && unit.contains("default us"), "{unit}");
}

#[test]
fn pingpong_example_sweeps_sizes_with_fma_then_rdma() {
    let exe = compile("examples/pingpong.c", "pingpong");
    let log = scratch("pingpong.jsonl");
    let out = run(
        &exe,
        &["--min", "16", "--max", "64K", "--iters", "2", "--dlvr-mode", "0x80"],
        &[("AAR_EMU_LOG", log.to_str().unwrap())],
    );
    let stdout = expect_success(&out, "pingpong");
    assert!(stdout.contains("pingpong: OK, 52 messages"), "{stdout}");
    let lines: Vec<_> = std::fs::read_to_string(&log).unwrap().lines().map(parse_log_line).collect();
    assert_eq!(lines.len(), 52);
    for l in &lines {
        let len = l["length"].as_u64().unwrap();
        let want_call = if len < 4096 { "GNI_PostFma" } else { "GNI_PostRdma" };
        assert_eq!(l["call"], want_call);
        assert_eq!(l["dlvr_mode"], GNI_DLVMODE_ADAPTIVE3);
        assert_eq!(l["rc"], GNI_RC_SUCCESS);
    }
    let bad = run(&exe, &["--iters", "zero"], &[]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn smallmsg_example_streams_smsg_and_fma_puts() {
    let exe = compile("examples/smallmsg.c", "smallmsg");
    let log = scratch("smallmsg.jsonl");
    let out = run(
        &exe,
        &["--count", "300", "--window", "32", "--smsg-mode", "0x80"],
        &[("AAR_EMU_LOG", log.to_str().unwrap())],
    );
    let stdout = expect_success(&out, "smallmsg");
    assert!(stdout.contains("smallmsg: OK, 300 messages (150 SMSG, 150 FMA PUT)"), "{stdout}");
    let text = std::fs::read_to_string(&log).unwrap();
    let sends = text.lines().filter(|l| l.contains("\"call\":\"GNI_SmsgSend")).collect::<Vec<_>>();
    // With 16 credits and windows of 32, some sends find no credit and are retried.
    assert!(sends.len() >= 150, "{}", sends.len());
    assert_eq!(sends.iter().filter(|l| l.ends_with("\"rc\":0}")).count(), 150);
    assert!(sends.iter().all(|l| l.contains("\"smsg_dlvr_mode\":128")));
    assert_eq!(text.lines().filter(|l| l.contains("GNI_PostFma")).count(), 150);
}
