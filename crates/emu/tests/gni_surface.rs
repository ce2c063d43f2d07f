//! The part of Cray's public uGNI surface beyond posts and messages, as C programs see it: the
//! names of gni_pub.h that public uGNI programs use (with the values aar_abi gives them), event
//! data (GNI_EpSetEventData) in the CQ events of posts, CQ error decoding, the device type, the
//! job's ptag (GNI_GetPtag), segment registration, the 32-bit and cached AMO commands, and the
//! NIC an endpoint's or a registration's CQ must be of.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;

use aar_abi::*;
use common::*;

fn check() -> PathBuf {
    compile("crates/emu/tests/c/gni_surface_check.c", "gni_surface_check")
}

/// Runs a scenario outside any job (no PMI_GNI_* variables) plus `env`.
fn run_scenario(name: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = std::process::Command::new(check());
    cmd.arg(name);
    for var in ["AAR_EMU_LOG", "AAR_EMU_NETWORK", "AAR_EMU_SIM", "LD_PRELOAD", "PMI_GNI_PTAG", "PMI_GNI_COOKIE"] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("run gni_surface_check")
}

/// A clean exit with "PASS <name>" last; the lines before it and stderr.
fn passes(name: &str, env: &[(&str, &str)]) -> (Vec<String>, String) {
    let out = run_scenario(name, env);
    let stdout = expect_success(&out, name);
    let mut lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    assert_eq!(lines.pop().as_deref(), Some(format!("PASS {name}").as_str()), "{stdout}");
    (lines, stderr(&out))
}

fn quiet(name: &str, env: &[(&str, &str)]) {
    let (_, err) = passes(name, env);
    assert_eq!(err, "", "{name}: the emulator said something on stderr");
}

#[test]
fn header_names_compile_with_the_values_of_aar_abi() {
    let (lines, err) = passes("names", &[]);
    assert_eq!(err, "");
    let values: BTreeMap<&str, &str> = lines.iter().filter_map(|l| l.rsplit_once(' ')).collect();
    let want = [
        ("GNI_POST_PENDING", GNI_POST_PENDING),
        ("GNI_POST_COMPLETED", GNI_POST_COMPLETED),
        ("GNI_POST_ERROR", GNI_POST_ERROR),
        ("GNI_POST_TIMEOUT", GNI_POST_TIMEOUT),
        ("GNI_POST_TERMINATED", GNI_POST_TERMINATED),
        ("GNI_POST_REMOTE_DATA", GNI_POST_REMOTE_DATA),
        ("GNI_DEVICE_GEMINI", GNI_DEVICE_GEMINI),
        ("GNI_DEVICE_ARIES", GNI_DEVICE_ARIES),
        ("GNI_DEVICE_PISCES", GNI_DEVICE_PISCES),
        ("GNI_DATAGRAM_MAXSIZE", GNI_DATAGRAM_MAXSIZE),
        ("sizeof(gni_mem_segment_t)", size_of::<GniMemSegment>() as u32),
        ("offsetof(gni_mem_segment_t, length)", std::mem::offset_of!(GniMemSegment, length) as u32),
    ];
    for (name, value) in want {
        assert_eq!(values.get(name), Some(&value.to_string().as_str()), "{name}");
    }
    // The cached (_C) and 32-bit (_S, _SC) commands, every one with Cray's value: the 32-bit
    // ones have bit 0x200, and a few spot values.
    let amos: BTreeMap<&str, u32> = values
        .iter()
        .filter(|(k, _)| k.starts_with("GNI_FMA_ATOMIC"))
        .map(|(k, v)| (*k, u32::from_str_radix(v.trim_start_matches("0x"), 16).unwrap()))
        .collect();
    assert_eq!(amos.len(), 6 + 5 + 2 * 12 * 3, "{amos:?}");
    for (name, value) in &amos {
        let thirty_two = name.ends_with("_S") || name.ends_with("_SC");
        assert_eq!(value & 0x200 != 0, thirty_two, "{name} = {value:#x}");
    }
    for (name, value) in [
        ("GNI_FMA_ATOMIC_FADD_C", 0x018),
        ("GNI_FMA_ATOMIC_AX_C", 0x11c),
        ("GNI_FMA_ATOMIC2_FAND_S", 0x240),
        ("GNI_FMA_ATOMIC2_FIADD_SC", 0x274),
        ("GNI_FMA_ATOMIC2_FCSWAP_C", 0x06b),
        ("GNI_FMA_ATOMIC2_IADD_S", 0x354),
        ("GNI_FMA_ATOMIC2_FPADD_SC", 0x37c),
    ] {
        assert_eq!(amos.get(name), Some(&value), "{name}");
    }
}

#[test]
fn event_data_appears_in_the_local_and_remote_events_of_posts() {
    quiet("event_data", &[]);
}

#[test]
fn cq_errors_decode_as_strings_and_verdicts() {
    quiet("cq_error", &[]);
}

#[test]
fn the_device_is_an_aries() {
    quiet("device", &[]);
}

#[test]
fn the_ptag_of_the_jobs_cookie_comes_from_the_environment() {
    quiet("ptag_job", &[("PMI_GNI_PTAG", "7:219"), ("PMI_GNI_COOKIE", "0x10000:3735928559")]);
}

#[test]
fn outside_a_job_no_cookie_has_a_ptag_and_one_line_says_why() {
    let (_, err) = passes("ptag_none", &[]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("aar-emu: GNI_GetPtag: PMI_GNI_PTAG and PMI_GNI_COOKIE are not both set"), "{err}");
    assert!(err.contains("GNI_RC_NO_MATCH") && err.contains("aar run"), "{err}");
}

#[test]
fn a_bad_job_credential_is_named_once_and_matches_nothing() {
    let (_, err) = passes("ptag_none", &[("PMI_GNI_PTAG", "7:seven"), ("PMI_GNI_COOKIE", "0x10000:1")]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("PMI_GNI_PTAG=\"7:seven\": \"seven\" is not a number"), "{err}");
    assert!(err.contains("GNI_RC_NO_MATCH"), "{err}");
}

/// A ptag is 8 bits: a PMI_GNI_PTAG item past 255 is named, not cut to nothing for its cookie
/// alone in silence. A value is quoted escaped (it may hold anything, a terminal's escapes too),
/// and one that is not UTF-8 is a bad value, not one that is not set.
#[test]
fn a_ptag_past_255_or_a_credential_of_control_characters_is_named_escaped() {
    let (_, err) = passes("ptag_none", &[("PMI_GNI_PTAG", "7:300"), ("PMI_GNI_COOKIE", "0x10000:1")]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("PMI_GNI_PTAG=\"7:300\": 300 is more than 255, the largest PMI_GNI_PTAG"), "{err}");
    let (_, err) = passes("ptag_none", &[("PMI_GNI_PTAG", "7"), ("PMI_GNI_COOKIE", "\u{1b}[2J1\n")]);
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(
        err.contains(r#"PMI_GNI_COOKIE="\u{1b}[2J1\n": "\u{1b}[2J1" is not a number"#) && !err.contains('\u{1b}'),
        "{err:?}"
    );
    let out = std::process::Command::new(check())
        .arg("ptag_none")
        .env("PMI_GNI_PTAG", "7")
        .env("PMI_GNI_COOKIE", std::os::unix::ffi::OsStrExt::from_bytes(b"0x10000\xff".as_slice()) as &std::ffi::OsStr)
        .output()
        .unwrap();
    expect_success(&out, "ptag_none with a cookie that is not UTF-8");
    let err = stderr(&out);
    assert!(err.contains("PMI_GNI_COOKIE=\"0x10000\u{fffd}\": \"0x10000\u{fffd}\" is not a number"), "{err:?}");
}

#[test]
fn one_segment_registers_and_more_are_refused_once_with_a_reason() {
    let (_, err) = passes("segments", &[]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("aar-emu: GNI_MemRegisterSegments: 2 segments"), "{err}");
    assert!(err.contains("GNI_RC_ILLEGAL_OP") && err.contains("GNI_MemRegister instead"), "{err}");
}

#[test]
fn thirty_two_bit_and_cached_amos_operate_on_their_words() {
    quiet("amo32", &[]);
}

#[test]
fn an_unknown_amo_command_is_illegal_and_named_once() {
    let (_, err) = passes("amo_unknown", &[]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("aar-emu: GNI_PostFma: amo_cmd 0x0ff is not an AMO command"), "{err}");
    assert!(err.contains("GNI_RC_ILLEGAL_OP"), "{err}");
}

/// Runs a scenario as the one rank of a job (AAR_EMU_JOB_DIR, a folder under /dev/shm made and
/// removed here, also when the scenario fails), where every CDM attaches at the node's address
/// 300; as [`passes`].
fn passes_in_one_rank_job(name: &str) -> (Vec<String>, String) {
    let dir = aar_testkit::ShmDir::new(name);
    let job = dir.path().to_str().unwrap();
    passes(name, &[("AAR_EMU_JOB_DIR", job), ("PMI_RANK", "0"), ("PMI_SIZE", "1"), ("PMI_GNI_LOC_ADDR", "300")])
}

/// uGNI's GNI_EpCreate refuses a CQ of another NIC handle (GNI_RC_INVALID_PARAM): outside a job,
/// where each CDM has a NIC address of its own, and in a one-rank job, where both CDMs attach at
/// the node's address and only the handles tell the NICs apart.
#[test]
fn an_endpoint_refuses_a_cq_of_another_nic_handle() {
    let (lines, err) = passes("cq_of_another_nic", &[]);
    assert_eq!(err, "");
    assert_eq!(lines, ["addresses 256 257"]);
    let (lines, err) = passes_in_one_rank_job("cq_of_another_nic");
    assert_eq!(err, "");
    assert_eq!(lines, ["addresses 300 300"]);
}

/// GNI_MemRegister and GNI_MemRegisterSegments refuse a dst_cq of another NIC handle as
/// GNI_EpCreate does, outside a job and in a one-rank job.
#[test]
fn a_registration_refuses_a_cq_of_another_nic_handle() {
    let (lines, err) = passes("mem_cq_of_another_nic", &[]);
    assert_eq!(err, "");
    assert_eq!(lines, ["addresses 256 257"]);
    let (lines, err) = passes_in_one_rank_job("mem_cq_of_another_nic");
    assert_eq!(err, "");
    assert_eq!(lines, ["addresses 300 300"]);
}
