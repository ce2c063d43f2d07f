//! The way users get the library: `scripts/install` into a prefix, then `module load aar` (Lmod,
//! with the Lua and the Tcl modulefile), then a job step that runs a uGNI program.

mod common;
use common::*;
use std::process::Command;

const LMOD_INIT: &str = "/usr/share/lmod/lmod/init/bash";

#[test]
fn module_load_aar_preloads_the_library_and_unload_takes_everything_back() {
    assert!(std::path::Path::new(LMOD_INIT).exists(), "Lmod is missing: run scripts/setup");
    let dir = scratch("packaging");
    let prefix = dir.join("prefix");
    let st = Command::new(root().join("scripts/install"))
        .arg(&prefix)
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(st.status.success(), "install failed: {}", String::from_utf8_lossy(&st.stderr));
    for f in [
        "lib/libaar.so",
        "include/aar.h",
        "include/aar.f90",
        "bin/aar",
        "lib/pkgconfig/aar.pc",
        "share/doc/aar/README.md",
        "share/doc/aar/examples/ab-slurm.sbatch",
    ] {
        assert!(prefix.join(f).exists(), "{f} not installed");
    }
    let pc = std::fs::read_to_string(prefix.join("lib/pkgconfig/aar.pc")).unwrap();
    assert!(pc.contains(&format!("prefix={}", prefix.display())) && !pc.contains('@'), "{pc}");

    let driver = program("driver");
    let events = sde_events_setting();
    for flavour in ["lmod", "tcl"] {
        let scratch_dir = dir.join(format!("scratch-{flavour}"));
        std::fs::create_dir_all(&scratch_dir).unwrap();
        let log = dir.join(format!("emu-{flavour}.jsonl"));
        let script = format!(
            "source {LMOD_INIT}\n\
             module use {prefix}/modulefiles/{flavour}\n\
             module load aar || exit 3\n\
             echo \"loaded LD_PRELOAD=$LD_PRELOAD\"\n\
             AAR_PAPI_EVENTS={events} AAR_EMU_LOG={log} {driver} fma 64 3 0 rdma 65536 4 0 || exit 4\n\
             AAR_PAPI_EVENTS={events} AAR_AB=ADAPTIVE0,ADAPTIVE3 {driver} {ab} || exit 5\n\
             echo \"aar=$(command -v aar)\"\n\
             aar report \"$AAR_OUTPUT_DIR\" --csv || exit 6\n\
             module unload aar\n\
             echo \"unloaded LD_PRELOAD=[$LD_PRELOAD] $(env | grep -c '^AAR_')\"\n",
            prefix = prefix.display(),
            log = log.display(),
            driver = driver.display(),
            ab = "iter begin rdma 65536 2 0 iter end iter begin rdma 65536 2 0 iter end",
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &dir)
            .env("SCRATCH", &scratch_dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{flavour}: {stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!("loaded LD_PRELOAD={}", prefix.join("lib/libaar.so").display())),
            "{flavour}: {stdout}"
        );
        assert!(stdout.contains("unloaded LD_PRELOAD=[] 0"), "{flavour}: unload leaves nothing behind: {stdout}");
        // The job step was routed by the preloaded library and left its record where the module said.
        let modes: Vec<u64> = read_jsonl(&log).iter().map(|v| v["dlvr_mode"].as_u64().unwrap()).collect();
        assert_eq!(&modes[..3], &[AD3; 3], "{flavour}: small messages routed High Bias");
        let records = read_records(&scratch_dir.join("aar-records"));
        assert_eq!(records.len(), 2, "{flavour}: one record per job step in $SCRATCH/aar-records");
        // The A/B step, read back by the installed aar from the folder the module chose.
        assert!(stdout.contains(&format!("aar={}", prefix.join("bin/aar").display())), "{flavour}: {stdout}");
        let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("nojob,")).collect();
        assert_eq!(rows.len(), 2, "{flavour}: one CSV row per policy: {stdout}");
        assert!(rows[0].starts_with("nojob,ADAPTIVE0,1,") && rows[1].starts_with("nojob,ADAPTIVE3,1,"), "{rows:?}");
        assert!(stderr.contains("aar: policy auto"), "{flavour}: summary line: {stderr}");
    }
}
