//! The library degrades, never breaks: no PAPI, bad settings, the kill switch, fixed modes,
//! an old libugni.

mod common;
use common::*;
use std::process::Command;

/// Warnings only (the exit summary also starts with "aar: policy").
fn warnings(r: &Run) -> Vec<&str> {
    r.aar_lines().into_iter().filter(|l| !l.starts_with("aar: policy")).collect()
}

#[test]
fn without_papi_the_program_completes_with_one_warning_and_high_bias_fixed() {
    let script = "rdma 65536 6 0 fma 64 4 0 fma 64 2 0x10 smsg 10 2";
    let launch = Launch::driver("no-papi", script);
    let ns = launch.dir.join("ns");
    std::fs::create_dir_all(&ns).unwrap();
    // Preferred: a mount namespace where no libpapi exists at all. Without the privilege to make
    // one, point the library at a PAPI that does not exist.
    let can_unshare = Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success());
    let mut launch = launch;
    if can_unshare {
        launch.wrapper = vec![
            "unshare".into(),
            "-m".into(),
            "sh".into(),
            root().join("tests/support/without-papi.sh").display().to_string(),
            ns.display().to_string(),
        ];
    } else {
        eprintln!("note: no mount namespace here; simulating absence with AAR_PAPI_LIBRARY");
        launch = launch.env("AAR_PAPI_LIBRARY", &ns.join("libpapi.so").display().to_string());
    }
    let r = launch.run();
    assert_ne!(r.status.code(), Some(97), "the namespace could not be set up: {}", r.stderr);
    r.assert_ok();
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "exactly one warning: {w:?}");
    assert!(w[0].contains("PAPI could not be loaded") && w[0].contains("ADAPTIVE3 (fixed)"), "{}", w[0]);
    // Adaptive requests get High Bias, large or small; MIN_HASH stays.
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), [AD3; 6]);
    assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD3, AD3, AD3, AD3, 0x10, 0x10]);
    let rec = &r.records()[0];
    assert_eq!(rec["counters"]["backend"], "none");
    let why = rec["counters"]["unavailable_because"].as_str().unwrap();
    assert!(why.starts_with("PAPI could not be loaded") && w[0].starts_with(&format!("aar: {why}")), "{why}");
    assert_eq!(rec["policy_at_exit"], "ADAPTIVE3");
}

/// AAR_PAPI_LIBRARY naming a FIFO: dlopen would wait for a writer at initialisation, inside
/// the host's first post. The library is not opened; one warning says why, and routing falls
/// back as without PAPI.
#[test]
fn a_papi_library_that_is_not_a_file_is_not_opened() {
    let launch = Launch::driver("papi-fifo", "rdma 65536 3 0");
    let fifo = launch.dir.join("libpapi.so");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let r = launch.env("AAR_PAPI_LIBRARY", &fifo.display().to_string()).run();
    r.assert_ok();
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("PAPI could not be loaded") && w[0].contains("not a regular file"), "{}", w[0]);
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), [AD3; 3]);
}

/// AAR_PAPI_LIBRARY naming a file that is not there, a folder, or a library that is not PAPI's:
/// one warning, which names the variable and says to correct it or unset it (it said "set
/// AAR_PAPI_LIBRARY", which is set, and did not name it), and routing falls back as without PAPI.
#[test]
fn a_wrong_papi_library_is_one_warning_that_says_to_correct_the_variable() {
    let dir = scratch("papi-library-wrong");
    std::fs::write(dir.join("not_papi.c"), "int not_papi(void) { return 0; }\n").unwrap();
    let not_papi = compile("cc", "not_papi", &[dir.join("not_papi.c")], &["-shared", "-fPIC"]);
    let cases = [
        ("papi-library-missing", dir.join("no-such-libpapi.so"), "cannot open shared object file"),
        ("papi-library-folder", dir.clone(), "not a regular file"),
        ("papi-library-not-papi", not_papi, "lacks PAPI_is_initialized"),
    ];
    for (name, path, why) in cases {
        let path = path.display().to_string();
        let r = Launch::driver(name, "rdma 65536 3 0").env("AAR_PAPI_LIBRARY", &path).run();
        r.assert_ok();
        let w = warnings(&r);
        assert_eq!(w.len(), 1, "{name}: {w:?}");
        assert!(w[0].contains(why) && w[0].contains("ADAPTIVE3 (fixed)"), "{name}: {}", w[0]);
        assert!(w[0].contains(&format!("Correct AAR_PAPI_LIBRARY (it names {path})")), "{name}: {}", w[0]);
        assert!(!w[0].contains("set AAR_PAPI_LIBRARY or"), "{name}: {}", w[0]);
        assert_eq!(r.dlvr_modes("GNI_PostRdma"), [AD3; 3], "{name}");
    }
}

#[test]
fn a_missing_event_is_one_warning_too() {
    // Unknown names inside the SDE namespace are accepted by PAPI as placeholders, so the
    // missing events here are outside it.
    let events = sde_events_setting().replace("sde:::aries::AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_STALLED", "NO_SUCH_EVENT");
    let r = Launch::driver("no-event", "rdma 65536 3 0").env("AAR_PAPI_EVENTS", &events).run();
    r.assert_ok();
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("NO_SUCH_EVENT") && w[0].contains("is not available"), "{}", w[0]);
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), [AD3; 3]);
    // Only the optional fifth event missing: counters still work, with one note.
    let events = sde_events_setting().replace("sde:::aries::AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_STALLED", "NO_SUCH_EVENT");
    let r = Launch::driver("no-opt-event", "rdma 65536 6 0").env("AAR_PAPI_EVENTS", &events).run();
    r.assert_ok();
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("optional"), "{}", w[0]);
    let counters = &r.records()[0]["counters"];
    assert_eq!(counters["backend"], "papi");
    assert!(counters["unavailable_because"].is_null(), "{counters}");
    assert_eq!(&r.dlvr_modes("GNI_PostRdma")[2..], [AD0; 4], "automatic routing still runs");
}

/// An event named twice in `AAR_PAPI_EVENTS` is said as such, once, and the list is not used:
/// real PAPI refuses the second copy as a conflict, which read as the event being unavailable (a
/// required one: no automatic routing; the optional fifth: a note that it is missing).
#[test]
fn a_papi_event_named_twice_is_one_warning_that_says_so() {
    let events: Vec<String> = sde_events_setting().split(',').map(String::from).collect();
    for (test, twice) in [("event-twice", 1), ("optional-event-twice", 4)] {
        let mut names = events.clone();
        names[twice] = names[0].clone();
        let r = Launch::driver(test, "rdma 65536 3 0").env("AAR_PAPI_EVENTS", &names.join(",")).run();
        r.assert_ok();
        let w = warnings(&r);
        let said: Vec<&&str> = w.iter().filter(|l| l.starts_with("aar: AAR_PAPI_EVENTS=")).collect();
        assert_eq!(said.len(), 1, "{test}: {w:?}");
        let same = format!("(entries 1 and {} are the same event, \"{}", twice + 1, &names[0][..20]);
        assert!(said[0].contains(&same), "{}", said[0]);
        assert!(!w.iter().any(|l| l.contains(&format!("{} is not available", names[0]))), "{test}: {w:?}");
    }
}

/// An `AAR_*` variable libaar.so does not read (a typo, a variable of another version) gets one
/// warning from rank 0 that names it and the variable it most likely misspells; the others are
/// quiet but keep it in their record. aar's other variables (the emulator's, the module's) get
/// none, and routing is what it is without the typo.
#[test]
fn an_aar_variable_nobody_reads_is_one_warning_with_the_likely_name() {
    let script = "rdma 65536 5 0 fma 64 5 0";
    let typos = |l: Launch| l.env("AAR_MOED", "ADAPTIVE3").env("AAR_ZZZ_TOP", "1").env("AAR_PRELOAD", "/x/libaar.so");
    let r = typos(Launch::driver("unknown-variables", script)).env("PMI_RANK", "0").run();
    r.assert_ok();
    let w = warnings(&r);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with("aar: AAR_MOED is set but libaar.so does not read it (did you mean AAR_MODE?)"),
        "{}",
        w[0]
    );
    assert!(w[1].starts_with("aar: AAR_ZZZ_TOP is set but libaar.so does not read it (a typo?"), "{}", w[1]);
    let baseline = Launch::driver("unknown-variables-baseline", script).run();
    baseline.assert_ok();
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), baseline.dlvr_modes("GNI_PostRdma"), "AAR_MOED pins nothing");
    let other = typos(Launch::driver("unknown-variables-rank1", script)).env("PMI_RANK", "1").run();
    other.assert_ok();
    assert!(other.stderr.is_empty(), "{}", other.stderr);
    let kept = other.records()[0]["messages"].to_string();
    assert!(kept.contains("AAR_MOED is set") && kept.contains("AAR_ZZZ_TOP is set"), "{kept}");
}

#[test]
fn each_bad_setting_gets_one_warning_naming_it_and_the_default_is_used() {
    let cases = [
        ("AAR_MODE", "fastest", "auto"),
        ("AAR_MODE", "IN_ORDER", "auto"),
        ("AAR_DISABLE", "perhaps", "0"),
        ("AAR_THRESHOLD", "4 bananas", "4096"),
        ("AAR_THRESHOLD", "-1", "4096"),
        ("AAR_LAMBDA", "NaN", "1.2"),
        ("AAR_SIGMA", "0", "5"),
        ("AAR_FRESHNESS", "soon", "5"),
        ("AAR_LOW_LATENCY_MODE", "MIN_HASH", "ADAPTIVE3"),
        ("AAR_LOW_STALL_MODE", "ADAPTIVE7", "ADAPTIVE0"),
        ("AAR_LATENCY_UNIT", "ns", "us"),
        ("AAR_PAPI_EVENTS", "one,two", "AR_NIC"),
        ("AAR_ALLTOALL", "2", "1"),
        ("AAR_SUMMARY", "loud", "1"),
        ("AAR_LOG", "chatty", "off"),
    ];
    let baseline = Launch::driver("bad-baseline", "rdma 65536 5 0 fma 64 5 0").run();
    baseline.assert_ok();
    for (var, value, default) in cases {
        let mut launch =
            Launch::driver(&format!("bad-{}", var.to_lowercase()), "rdma 65536 5 0 fma 64 5 0").env(var, value);
        if var == "AAR_PAPI_EVENTS" {
            launch = launch.unset("AAR_PAPI_EVENTS").env(var, value);
        }
        let r = launch.run();
        r.assert_ok();
        let w: Vec<&str> = warnings(&r).into_iter().filter(|l| l.starts_with(&format!("aar: {var}="))).collect();
        assert_eq!(w.len(), 1, "{var}={value}: expected one warning, got {:?}", r.aar_lines());
        assert!(w[0].contains(value) && w[0].contains(default), "{var}: {}", w[0]);
        if var != "AAR_PAPI_EVENTS" {
            assert_eq!(warnings(&r).len(), 1, "{var}: nothing else to warn about: {:?}", warnings(&r));
            assert_eq!(r.dlvr_modes("GNI_PostRdma"), baseline.dlvr_modes("GNI_PostRdma"), "{var}: default behaviour");
        }
    }
}

#[test]
fn the_kill_switch_leaves_every_descriptor_untouched_and_writes_nothing() {
    let script = "rdma 65536 5 0 fma 64 5 0 fma 64 2 0x100 smsg 10 2 api mode 0x80 fma 64 2 0 policy";
    // Bad values of the settings it does not use are not said: nothing replaces them.
    let r = Launch::driver("disable", script)
        .env("AAR_DISABLE", "1")
        .env("AAR_THRESHOLD", "4 bananas")
        .env("PMI_RANK", "first")
        .env("AAR_MOED", "steady")
        .run();
    r.assert_ok();
    let off = Launch::driver("disable-ref", script).no_preload().run();
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), off.dlvr_modes("GNI_PostRdma"));
    assert_eq!(r.dlvr_modes("GNI_PostFma"), off.dlvr_modes("GNI_PostFma"));
    assert!(r.posts("GNI_SmsgSetDeliveryMode").is_empty(), "SMSG modes untouched");
    assert!(r.stdout.contains("api mode rc=-2"), "the C API reports the kill switch: {}", r.stdout);
    assert!(r.stdout.contains("policy disabled"), "{}", r.stdout);
    assert!(r.stderr.is_empty(), "nothing on stderr: {}", r.stderr);
    assert!(r.records().is_empty(), "no record");
}

#[test]
fn a_fixed_mode_from_the_environment_applies_to_every_adaptive_message() {
    let r = Launch::driver("fixed-env", "rdma 65536 5 0 fma 64 5 0 fma 64 2 0x3 smsg 10 2")
        .env("AAR_MODE", "ADAPTIVE_1")
        .run();
    r.assert_ok();
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), [AD1; 5]);
    assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD1, AD1, AD1, AD1, AD1, 0x3, 0x3]);
    let smsg: Vec<_> = r.posts("GNI_SmsgSend").iter().map(|v| v["smsg_dlvr_mode"].as_u64().unwrap()).collect();
    assert_eq!(smsg, [AD1, AD1], "SMSG steered to the fixed mode");
    let rec = &r.records()[0];
    assert_eq!(rec["reasons"]["fixed"], 12);
    // Counters are still read for the record: the baseline, and after the first decision.
    assert!(rec["counters"]["reads"].as_u64().unwrap() >= 2, "{}", rec["counters"]);
    assert!(rec["engine"]["windows_valid"].as_u64().unwrap() >= 1);
}

/// Settings only the automatic policies read, given under a fixed mode, do nothing: one note on
/// stderr (from rank 0, as every warning; nothing on stdout) names them and the fix, and the fixed
/// mode routes as without them. An A/B run with an automatic arm reads them: no note.
#[test]
fn settings_a_fixed_mode_never_reads_get_one_note() {
    let launch = |test: &str| Launch::driver(test, "rdma 65536 3 0").env("AAR_LAMBDA", "2").env("AAR_ALLTOALL", "n");
    let r = launch("unused-fixed").env("AAR_MODE", "ADAPTIVE0").run();
    r.assert_ok();
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), [AD0; 3]);
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with(
            "aar: AAR_LAMBDA, AAR_ALLTOALL have no effect under AAR_MODE=\"ADAPTIVE0\", which does not read them (auto \
             and steady do): they are ignored. To make them count, set AAR_MODE=auto (or steady)"
        ),
        "{}",
        w[0]
    );
    assert!(!r.stdout.contains("AAR_LAMBDA"), "{}", r.stdout);
    let other = launch("unused-fixed-rank1").env("AAR_MODE", "ADAPTIVE0").env("PMI_RANK", "1").run();
    other.assert_ok();
    assert!(!other.stderr.contains("AAR_LAMBDA"), "rank 0 says it: {}", other.stderr);
    let ab = launch("unused-ab-auto").env("AAR_AB", "ADAPTIVE0,auto").run();
    ab.assert_ok();
    assert!(!ab.stderr.contains("no effect"), "{}", ab.stderr);
}

#[test]
fn off_observes_without_rewriting() {
    let r = Launch::driver("mode-off", "rdma 65536 5 0 fma 64 5 0x40").env("AAR_MODE", "off").run();
    r.assert_ok();
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), [AD0; 5]);
    assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD2; 5]);
    let rec = &r.records()[0];
    assert_eq!(rec["reasons"]["passthrough"], 10);
    assert!(rec["engine"]["windows_valid"].as_u64().unwrap() >= 4, "counter windows are still measured");
}

#[test]
fn the_c_api_pins_pauses_and_resumes_routing() {
    let script = "net 1.2 1.0 2 50 rdma 65536 4 0 \
                  api mode 0x40 policy rdma 65536 3 0 fma 64 2 0 smsg 10 1 \
                  api disable policy rdma 65536 3 0 smsg 10 1 \
                  api enable policy rdma 65536 3 0 \
                  api name ADAPTIVE_1 rdma 65536 2 0 \
                  api name steady policy \
                  api auto policy rdma 65536 3 0 \
                  api mode 0x3 api mode 0x180 api name IN_ORDER";
    let r = Launch::driver("c-api", script).run();
    r.assert_ok();
    let o = &r.stdout;
    for expect in [
        "api mode rc=0",
        "policy ADAPTIVE2",
        "api disable rc=0",
        "policy paused",
        "api enable rc=0",
        "policy steady",
        "api auto rc=0",
        "policy auto",
    ] {
        assert!(o.contains(expect), "{expect}: {o}");
    }
    assert_eq!(o.matches("api mode rc=-1").count(), 2, "IN_ORDER and flag bits are refused: {o}");
    assert!(o.contains("api name rc=-1"), "{o}");
    let rdma = r.dlvr_modes("GNI_PostRdma");
    assert_eq!(&rdma[4..7], &[AD2; 3], "pinned");
    assert_eq!(&rdma[7..10], &[AD0; 3], "paused: as the caller wrote them");
    assert_eq!(&rdma[10..13], &[AD2; 3], "resumed with the pinned mode");
    assert_eq!(&rdma[13..15], &[AD1; 2], "pinned by name");
    assert_eq!(&rdma[16..18], &[AD0; 2], "automatic again: the model chooses Adaptive here");
    assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD2, AD2]);
    // SMSG: pinned mode while pinned; while paused the NICs get the caller's mode (0) back.
    let smsg: Vec<_> = r.posts("GNI_SmsgSend").iter().map(|v| v["smsg_dlvr_mode"].as_u64().unwrap()).collect();
    assert_eq!(smsg, [AD2, AD0]);
}

#[test]
fn the_applications_own_smsg_mode_is_respected_when_not_adaptive() {
    let r = Launch::driver("smsg-intent", "smsg 10 2 smsgmode 0x3 smsg 10 2 smsgmode 0x100 smsg 10 2").run();
    r.assert_ok();
    let smsg: Vec<_> = r.posts("GNI_SmsgSend").iter().map(|v| v["smsg_dlvr_mode"].as_u64().unwrap()).collect();
    assert_eq!(
        smsg,
        [AD3, AD3, 0x3, 0x3, 0x180, 0x180],
        "High Bias, then IN_ORDER as asked, then High Bias with the flag kept"
    );
}

#[test]
fn an_old_libugni_without_chained_posts_is_tolerated() {
    let dir = scratch("old-ugni");
    let lib = dir.join("libugni.so");
    let inc = root().join("cabi");
    let st = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-I"])
        .arg(&inc)
        .arg(root().join("tests/c/old_ugni.c"))
        .arg("-o")
        .arg(&lib)
        .status()
        .unwrap();
    assert!(st.success());
    let prog = dir.join("old_main");
    let st = Command::new("cc")
        .args(["-O2", "-I"])
        .arg(&inc)
        .arg(root().join("tests/c/old_main.c"))
        .arg("-o")
        .arg(&prog)
        .arg(format!("-L{}", dir.display()))
        .args(["-lugni", "-ldl"])
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new(&prog)
        .env("LD_PRELOAD", libaar())
        .env_remove("LD_LIBRARY_PATH")
        .env("AAR_MODE", "ADAPTIVE3")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("postfma rc=0 dlvr=0x80 posts=1"), "{stdout}");
    assert!(stdout.contains("ctpostfma rc=12 posts=1"), "GNI_RC_ILLEGAL_OP, nothing forwarded: {stdout}");
    assert_eq!(stderr.matches("GNI_CtPostFma was called but").count(), 1, "{stderr}");
}

/// A value that is not UTF-8 (a path in another encoding) is one warning and ignored. Read with
/// U+FFFD in place of its bytes, a path names another file: the record went nowhere with a
/// misleading "no such folder", and a trace was written under another name without a word.
#[test]
fn a_setting_that_is_not_utf8_is_one_warning_and_ignored() {
    use std::os::unix::ffi::OsStrExt;
    let launch = Launch::driver("not-utf8", "rdma 65536 3 0");
    let dir = launch.dir.clone();
    let out = dir.join(std::ffi::OsStr::from_bytes(b"out\xff"));
    std::fs::create_dir_all(&out).unwrap();
    let script = format!(
        "export AAR_OUTPUT_DIR=\"$(printf '{0}/out\\377')\" AAR_TRACE=\"$(printf '{0}/trace\\377.jsonl')\" \
         AAR_MODE=\"$(printf 'ADAPTIVE\\377')\"; exec \"$@\"",
        dir.display()
    );
    let r = launch.through_sh(script).run();
    r.assert_ok();
    let w = warnings(&r);
    for var in ["AAR_OUTPUT_DIR", "AAR_TRACE", "AAR_MODE"] {
        let line = w.iter().find(|l| l.starts_with(&format!("aar: {var}="))).unwrap_or_else(|| panic!("{var}: {w:?}"));
        assert!(line.contains("is not valid UTF-8") && line.contains("ignored, as if unset"), "{line}");
    }
    assert_eq!(w.len(), 3, "one warning each: {w:?}");
    // AAR_MODE ignored: the default, auto, and its first decision High Bias.
    assert_eq!(r.dlvr_modes("GNI_PostRdma")[0], AD3);
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "nothing in the folder it named");
    let named: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(
        !named.iter().any(|n| n.to_str().is_some_and(|n| n.contains('\u{FFFD}'))),
        "a file under a mangled name: {named:?}"
    );
}

/// A batch system's job id variable (or a step's) that holds bytes that are not UTF-8 was passed
/// over silently: the records took the next variable's id, or were named `nojob`, with no word of
/// why. Each is one warning, as for the rank variables, that names it and what was used instead.
#[test]
fn a_job_id_that_is_not_utf8_is_said_and_the_next_one_used() {
    let run = |test: &str, exports: &str| {
        let mut launch = Launch::driver(test, "rdma 65536 3 0");
        for var in ["SLURM_JOB_ID", "PBS_JOBID", "COBALT_JOBID", "LSB_JOBID", "JOB_ID", "SLURM_STEP_ID", "ALPS_APP_ID"]
        {
            launch = launch.unset(var);
        }
        let r = launch.through_sh(format!("export {exports}; exec \"$@\"")).env("SLURM_PROCID", "0").run();
        r.assert_ok();
        assert_eq!(r.dlvr_modes("GNI_PostRdma").len(), 3, "every call forwarded");
        r
    };
    let r = run("job-not-utf8", "SLURM_JOB_ID=\"$(printf '12\\377')\" PBS_JOBID=55 SLURM_STEP_ID=0");
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("aar: SLURM_JOB_ID=\"12\u{fffd}\" is not a job id")
            && w[0].contains("the job id is taken from PBS_JOBID=\"55\" instead"),
        "{}",
        w[0]
    );
    assert_eq!((r.records()[0]["job_id"].as_str(), r.records()[0]["step"].as_str()), (Some("55"), Some("0")));

    let r = run("job-none-utf8", "SLURM_JOB_ID=\"$(printf '\\377')\" SLURM_STEP_ID=\"$(printf '\\376')\"");
    let w = warnings(&r);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].starts_with("aar: SLURM_JOB_ID=") && w[0].contains("no job id"), "{}", w[0]);
    assert!(w[1].starts_with("aar: SLURM_STEP_ID=") && w[1].contains("no job step"), "{}", w[1]);
    assert_eq!(r.records()[0]["job_id"], serde_json::Value::Null);
}

/// A launcher's rank or size variable set to something that is not a number (a batch script's
/// `export PMI_RANK=$RANK` with the wrong variable, a wrapper's leftovers) was passed over
/// silently: the rank came from the next variable, or there was none, and nothing said why the
/// records were named `norank` or two processes both spoke as rank 0. Each is one warning, from
/// rank 0 as the other settings' are, kept in every rank's record; the call goes on as before.
#[test]
fn a_rank_or_size_variable_that_is_not_a_number_is_said_and_the_next_one_used() {
    let script = "iter begin rdma 65536 3 0 iter end";
    let launch = |test: &str, vars: &[(&str, &str)]| {
        let mut l = Launch::driver(test, script).env("AAR_AB", "ADAPTIVE0,ADAPTIVE3").env("SLURM_JOB_ID", "77");
        for (k, v) in vars {
            l = l.env(k, v);
        }
        let r = l.run();
        r.assert_ok();
        assert_eq!(r.dlvr_modes("GNI_PostRdma").len(), 3, "every call forwarded");
        r
    };

    // Rank 0 (from SLURM_PROCID) says it, and the size is the one of the next variable.
    let r =
        launch("bad-rank-0", &[("PMI_RANK", "abc"), ("SLURM_PROCID", "0"), ("PMI_SIZE", "0"), ("SLURM_NTASKS", "4")]);
    let w = warnings(&r);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with("aar: PMI_RANK=\"abc\" is not a rank") && w[0].contains("SLURM_PROCID=0 instead"),
        "{}",
        w[0]
    );
    assert!(
        w[1].starts_with("aar: PMI_SIZE=\"0\" is not a number of ranks") && w[1].contains("SLURM_NTASKS=4"),
        "{}",
        w[1]
    );
    let (header, _) = &iteration_records(&r.dir.join("out"))[0];
    assert_eq!((header["rank"].as_u64(), header["nranks"].as_u64()), (Some(0), Some(4)));

    // Rank 3 is silent, and keeps the warning in its record.
    let r = launch("bad-rank-3", &[("PMI_RANK", "abc"), ("SLURM_PROCID", "3")]);
    assert!(r.stderr.is_empty(), "ranks other than 0 are silent: {}", r.stderr);
    let rec = &r.records()[0];
    assert_eq!(rec["rank"], 3);
    assert!(rec["messages"][0].as_str().unwrap().starts_with("PMI_RANK=\"abc\" is not a rank"), "{}", rec["messages"]);

    // Nothing else gives the rank: the process has none, and says so.
    let r = launch("bad-rank-none", &[("SLURM_PROCID", "-3")]);
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("aar: SLURM_PROCID=\"-3\"") && w[0].contains("no rank"), "{}", w[0]);
    assert_eq!(r.records()[0]["rank"], serde_json::Value::Null);

    // Blank is unset, as for the AAR_* variables: nothing to say.
    let r = launch("blank-rank", &[("PMI_RANK", " "), ("SLURM_PROCID", "0")]);
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    // A blank SLURM_PROCID beside another rank is unset too: it does not say that the process is
    // another launcher's (whose SLURM_NTASKS would count its daemons), as one of another rank does.
    let r = launch("blank-procid", &[("PMI_RANK", "0"), ("SLURM_PROCID", " "), ("SLURM_NTASKS", "4")]);
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    let (header, _) = &iteration_records(&r.dir.join("out"))[0];
    assert_eq!((header["rank"].as_u64(), header["nranks"].as_u64()), (Some(0), Some(4)));

    // The ranks on the node (whether the ranks share one counter reading) alike.
    let r = launch("bad-local-size", &[("MPI_LOCALNRANKS", "four"), ("OMPI_COMM_WORLD_LOCAL_SIZE", "2")]);
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("aar: MPI_LOCALNRANKS=\"four\" is not a number of ranks on a node")
            && w[0].contains("OMPI_COMM_WORLD_LOCAL_SIZE=2 instead"),
        "{}",
        w[0]
    );
    assert_eq!(r.records()[0]["node"]["ranks_per_node"], 2);
}

/// `SLURM_RESTART_COUNT` set to something that is not a number (a batch script's own variable of
/// that name, a wrapper's leftovers) was ignored silently: the run was taken for the job's first,
/// and nothing said why its records had no `.restart<N>`. It is one warning, as the launchers'
/// other numbers get, from rank 0, kept in the record; the call goes on as before.
#[test]
fn a_restart_count_that_is_not_a_number_is_said() {
    let launch = |test: &str, count: &str| {
        let r = Launch::driver(test, "iter begin rdma 65536 3 0 iter end")
            .env("AAR_AB", "ADAPTIVE0,ADAPTIVE3")
            .env("SLURM_JOB_ID", "78")
            .env("SLURM_PROCID", "0")
            .env("SLURM_RESTART_COUNT", count)
            .run();
        r.assert_ok();
        assert_eq!(r.dlvr_modes("GNI_PostRdma").len(), 3, "every call forwarded");
        r
    };
    let r = launch("bad-restart-count", "twice");
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("aar: SLURM_RESTART_COUNT=\"twice\" is not a number of restarts (a whole number from 0)")
            && w[0].contains("the run is taken for the job's first"),
        "{}",
        w[0]
    );
    let rec = &r.records()[0];
    assert_eq!(rec["restart"], serde_json::Value::Null);
    assert!(rec["messages"][0].as_str().unwrap().starts_with("SLURM_RESTART_COUNT=\"twice\""), "{}", rec["messages"]);

    // 0 (the job's first run, as Slurm sets it) and a count are silent.
    for (count, restart) in [("0", None), ("2", Some(2))] {
        let r = launch(&format!("restart-count-{count}"), count);
        assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
        assert_eq!(r.records()[0]["restart"].as_u64(), restart);
    }
}

/// The AAR_* values that are names or units are taken in any case, as AAR_MODE's (`adaptive3`),
/// AAR_THRESHOLD's (`8k`) and AAR_LOG's (`DEBUG`) are: AAR_NODE_READING's unit and
/// AAR_TEST_PANIC's place were refused unless in lower case, with a warning and the default.
#[test]
fn names_and_units_in_values_are_taken_in_any_case() {
    let r = Launch::driver("any-case", "rdma 65536 3 0")
        .env("AAR_NODE_READING", "7US")
        .env("AAR_TEST_PANIC", "After-Forward")
        .run();
    r.assert_ok();
    assert!(r.stdout.contains("posts=3 errors=0 emu_posts=3"), "{}", r.stdout);
    assert!(warnings(&r).iter().all(|l| l.contains("internal error")), "{:?}", warnings(&r));
    let rec = &r.records()[0];
    assert_eq!(rec["settings"]["node_reading"], "7us");
    assert_eq!(rec["settings"]["test_panic"], "after-forward");
    assert_eq!(rec["internal_errors"], 3, "every decision panicked after forwarding");
}

/// AAR_LOW_LATENCY_MODE set to AAR_LOW_STALL_MODE's mode (here its default, ADAPTIVE0) was taken
/// silently: auto had one mode for both sides and could never switch. It is one warning, and the
/// variable set to it gets its default: auto switches as it does by default.
#[test]
fn one_mode_for_both_sides_is_said_and_the_variable_gets_its_default() {
    let r = Launch::driver("same-modes", "rdma 65536 2 0").env("AAR_LOW_LATENCY_MODE", "adaptive0").run();
    r.assert_ok();
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("aar: AAR_LOW_LATENCY_MODE=\"adaptive0\" is the mode AAR_LOW_STALL_MODE gives too")
            && w[0].contains("could never switch; using the default ADAPTIVE3 for AAR_LOW_LATENCY_MODE instead"),
        "{}",
        w[0]
    );
    assert_eq!(r.records()[0]["settings"]["engine"]["low_latency_mode"], "ADAPTIVE3");
    assert_eq!(r.dlvr_modes("GNI_PostRdma"), [AD3, AD0], "High Bias first, then Adaptive, as by default");
}

/// A NIC the application set to a non-adaptive SMSG mode is never steered, and what went on the
/// wire is what the trace, the record and the summary say: its sends carry the application's
/// mode, passed through, whatever the library's policy (automatic, then pinned to ADAPTIVE2).
/// Traced (every send on the slow path) and not (after each change, sends on the fast path).
#[test]
fn smsg_sends_on_a_nic_the_application_pinned_are_counted_with_its_mode() {
    for traced in [true, false] {
        let script = "smsgmode 0x3 smsg 10 2 api mode 0x40 smsg 20 3";
        let launch = Launch::driver(&format!("smsg-pinned-count-{traced}"), script);
        let trace = launch.dir.join("t.jsonl");
        let r = if traced { launch.env("AAR_TRACE", &trace.display().to_string()) } else { launch }.run();
        r.assert_ok();
        let wire: Vec<_> = r.posts("GNI_SmsgSend").iter().map(|v| v["smsg_dlvr_mode"].as_u64().unwrap()).collect();
        assert_eq!(wire, [0x3; 5], "the NICs stay IN_ORDER");
        assert_eq!(r.posts("GNI_SmsgSetDeliveryMode").len(), 2, "the driver's own two calls, none from the library");
        if traced {
            let lines: Vec<_> = read_jsonl(&trace).into_iter().filter(|l| l["post_type"] == "SMSG").collect();
            assert_eq!(lines.len(), 5, "{lines:?}");
            for l in &lines {
                let said = (l["requested"].as_str(), l["chosen"].as_str(), l["reason"].as_str());
                assert_eq!(said, (Some("IN_ORDER"), Some("IN_ORDER"), Some("passthrough")), "{l}");
            }
        }
        let rec = &r.records()[0];
        let modes = &rec["modes"];
        assert_eq!((&modes["IN_ORDER"]["messages"], &modes["IN_ORDER"]["bytes"]), (&5.into(), &100.into()), "{modes}");
        assert_eq!(modes.as_object().unwrap().len(), 1, "nothing counted as the library's: {modes}");
        assert_eq!(rec["reasons"]["passthrough"], 5, "{}", rec["reasons"]);
        let summary = r.aar_lines().into_iter().find(|l| l.starts_with("aar: policy")).unwrap();
        assert!(summary.contains("IN_ORDER 100% of bytes in 5 messages"), "{summary}");
    }
}
