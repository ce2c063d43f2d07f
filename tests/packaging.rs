//! The way users get the library: `scripts/install` into a prefix, then `module load aar` (Lmod,
//! with the Lua and the Tcl modulefile, and Environment Modules 5 with the Tcl one), then a job step
//! that runs a uGNI program.

mod common;
use common::*;
use std::path::Path;
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
        "share/doc/aar/examples/ab-aprun.pbs",
        "share/doc/aar/examples/cray/ab_exchange.c",
        "share/doc/aar/examples/cray/cray_util.h",
        "share/doc/aar/examples/cray/parse_size.h",
        "share/doc/aar/examples/cray/pmi_gni_env.h",
        "share/doc/aar/examples/ugni_pair.h",
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
        let (stdout, stderr) = login_shell(&script, &dir, &dir, &[("SCRATCH", &scratch_dir)], flavour);
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

/// `module load aar`, then `man aar`, as with Cray's own tools (`man intro_mpi`): install puts
/// aar(1), a page per subcommand as the CLI nests them (aar-sim-run(1)) and libaar(7) with its
/// Cray-style name intro_aar(7) under PREFIX/share/man. Each renders without a groff warning; each
/// command's page lists every long option its `--help` gives; libaar(7) has an entry for every
/// variable in settings::VARIABLES. Both modulefiles put the pages first on MANPATH and keep man's
/// default path behind them (an unset MANPATH means that path; a set one replaces it but for an
/// empty entry), leave a MANPATH of the user's as it was, and the unload takes MANPATH back.
#[test]
fn module_load_aar_then_man_aar_finds_the_installed_pages() {
    assert!(have("man") && Path::new(LMOD_INIT).exists(), "man (man-db) or Lmod is missing: run scripts/setup");
    let dir = scratch("packaging-man");
    let prefix = dir.join("prefix");
    let out = install(&prefix, &dir);
    assert!(out.status.success(), "install failed: {}", String::from_utf8_lossy(&out.stderr));
    let man = prefix.join("share/man");
    let mut pages: Vec<String> = ["man1", "man7"]
        .iter()
        .flat_map(|s| {
            std::fs::read_dir(man.join(s))
                .unwrap()
                .map(move |e| format!("{s}/{}", e.unwrap().file_name().to_str().unwrap()))
        })
        .collect();
    pages.sort();
    for page in ["aar.1", "aar-report.1", "aar-doctor.1", "aar-run.1", "aar-sim.1", "aar-sim-run.1", "aar-sim-sweep.1"]
    {
        assert!(pages.contains(&format!("man1/{page}")), "{page} not installed: {pages:?}");
    }
    for page in ["libaar.7", "intro_aar.7"] {
        assert!(pages.contains(&format!("man7/{page}")), "{page} not installed: {pages:?}");
    }
    let mut library = String::new();
    // As man shows it on a terminal 80 wide, from share/man, where intro_aar.7's `.so
    // man7/libaar.7` is found; with `--nh --nj` (no hyphenation, no justification) for the text
    // the checks read, so that names stay whole.
    let render = |page: &str, plain: bool| {
        let out = Command::new("man")
            .args(if plain { &["--nh", "--nj"][..] } else { &[] })
            .args(["--warnings=w", "-l", page])
            .current_dir(&man)
            .env("MANWIDTH", "80")
            .env("LC_ALL", "C.UTF-8")
            .output()
            .unwrap();
        let (text, warnings) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && !text.trim().is_empty(), "{page}: {warnings}\n{text}");
        (text.into_owned(), warnings.into_owned())
    };
    for page in &pages {
        // Every groff warning on, as the user reads it (justified, hyphenated).
        let (shown, warnings) = render(page, false);
        assert!(warnings.is_empty(), "{page}: {warnings}\n{shown}");
        let (text, _) = render(page, true);
        if page == "man7/intro_aar.7" {
            library = text;
            continue;
        }
        let Some(command) = page.strip_prefix("man1/").and_then(|p| p.strip_suffix(".1")) else { continue };
        // aar-sim-run(1) is `aar sim run`: its long options as its --help lists them.
        let help =
            Command::new(prefix.join("bin/aar")).args(command.split('-').skip(1)).arg("--help").output().unwrap();
        assert!(help.status.success(), "{command} --help");
        let help = String::from_utf8_lossy(&help.stdout);
        let apart = |c: char| c.is_whitespace() || ",[]|<>=".contains(c);
        let options: Vec<&str> = help
            .lines()
            .filter(|l| l.trim_start().starts_with('-'))
            .flat_map(|l| l.split(apart))
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .collect();
        assert!(options.contains(&"--help"), "{command}: {help}");
        let words: Vec<&str> = text.split(apart).collect();
        for option in options {
            assert!(words.contains(&option), "{page} lacks {option}, which `{command} --help` lists:\n{text}");
        }
    }
    // Each variable the library reads (settings::VARIABLES, in the library's source) is an entry:
    // its name the tag of its paragraph, at the section's indent (its text on the same line when
    // the name is short).
    let source = std::fs::read_to_string(root().join("src/settings.rs")).unwrap();
    let table = &source[source.find("pub const VARIABLES").unwrap()..];
    let table = &table[..table.find("];").unwrap()];
    let variables: Vec<&str> = table.split("(\"").skip(1).map(|t| t.split('"').next().unwrap()).collect();
    assert!(variables.len() > 20 && variables.iter().all(|v| v.starts_with("AAR_")), "{variables:?}");
    for v in variables {
        let tag = |l: &str| {
            l.strip_prefix("       ").is_some_and(|r| !r.starts_with(' ') && r.split_whitespace().next() == Some(v))
        };
        assert!(library.lines().any(tag), "libaar(7) has no entry for {v}:\n{library}");
    }
    assert!(library.contains("module load aar"), "{library}");

    for flavour in ["lmod", "tcl"] {
        let script = format!(
            "source {LMOD_INIT}\n\
             echo \"before=$(manpath -q)\"\n\
             module use {prefix}/modulefiles/{flavour}\n\
             module load aar || exit 3\n\
             echo \"loaded=[$MANPATH]\"; echo \"after=$(manpath -q)\"\n\
             echo \"aar=$(man -w aar)\"; echo \"intro=$(man -w intro_aar)\"\n\
             module unload aar; echo \"unloaded=[${{MANPATH-unset}}]\"\n\
             export MANPATH=/opt/mine; module load aar; echo \"mine=[$MANPATH]\"\n\
             module unload aar; echo \"mine-unloaded=[$MANPATH]\"\n",
            prefix = prefix.display(),
        );
        let (stdout, _) = login_shell(&script, &dir, &dir, &[], flavour);
        let line = |key: &str| stdout.lines().find_map(|l| l.strip_prefix(&format!("{key}="))).unwrap_or("").to_owned();
        let before = line("before");
        // The pages first, then an empty entry: man's default path (`manpath` expands it).
        let loaded = line("loaded");
        let loaded: Vec<&str> = loaded.trim_matches(['[', ']']).split(':').collect();
        assert!(loaded[0] == man.display().to_string() && loaded.contains(&""), "{flavour}: {stdout}");
        let after: Vec<String> = line("after").split(':').map(str::to_owned).collect();
        assert_eq!(after[0], man.display().to_string(), "{flavour}: the pages come first: {stdout}");
        for entry in before.split(':') {
            assert!(
                after.iter().any(|a| a == entry),
                "{flavour}: the default path's {entry} stays reachable: {stdout}"
            );
        }
        assert_eq!(line("aar"), man.join("man1/aar.1").display().to_string(), "{flavour}: {stdout}");
        assert!(line("intro").starts_with(&man.join("man7/").display().to_string()), "{flavour}: {stdout}");
        assert_eq!(line("unloaded"), "[unset]", "{flavour}: {stdout}");
        assert_eq!(line("mine"), format!("[{}:/opt/mine]", man.display()), "{flavour}: {stdout}");
        assert_eq!(line("mine-unloaded"), "[/opt/mine]", "{flavour}: {stdout}");
    }
}

/// The batch scripts, whole, as their batch system runs them, from a writable copy of
/// PREFIX/share/doc/aar/examples in a folder whose path has a space (so has $SCRATCH): Lmod's
/// `module` (with a stand-in papi module), the job's variables, and `srun`/`aprun` stand-ins that
/// start each step with `aar run` in the allocation's layout (two nodes, one rank on each). They
/// build ab_exchange with the emulation kit's cray-pmi and cray-ugni, check it with `aar doctor`
/// under the experiment's own settings (its policies, its record folder: exported before the
/// check), run the A/B experiment, and `aar report` reads its records from the job's folder.
#[test]
fn the_batch_scripts_run_whole_from_an_installed_copy() {
    assert!(std::path::Path::new(LMOD_INIT).exists(), "Lmod is missing: run scripts/setup");
    let dir = scratch("packaging-ab");
    let prefix = dir.join("prefix");
    let out = install(&prefix, &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(prefix.join("emu/lib/pkgconfig/cray-ugni.pc").exists(), "the emulation kit was not installed");
    // The emulator's own functions (the README's aar_emu_clock_ns, aar_emu_set_network, ...) are
    // declared by the kit's aar_emu.h, on cray-ugni's include path.
    let emu_c = dir.join("emu_calls.c");
    std::fs::write(
        &emu_c,
        "#include <aar_emu.h>\n#include <stdio.h>\n\
         int main(void) { printf(\"posts=%llu\\n\", aar_emu_post_count()); return 0; }\n",
    )
    .unwrap();
    let build = format!(
        "set -e\nexport PKG_CONFIG_PATH={}/emu/lib/pkgconfig\n\
         cc -Wall -Werror {} $(pkg-config --cflags --libs cray-ugni) -o emu_calls\n./emu_calls\n",
        prefix.display(),
        emu_c.display()
    );
    let (stdout, _) = login_shell(&build, &dir, &dir, &[], "aar_emu.h");
    assert_eq!(stdout, "posts=0\n");
    let submit = dir.join("sub mit");
    let st = Command::new("cp").arg("-r").arg(prefix.join("share/doc/aar/examples")).arg(&submit).status().unwrap();
    assert!(st.success());
    // The launchers: each logs its arguments, then starts the step as aar run.
    let shims = dir.join("shims");
    std::fs::create_dir_all(&shims).unwrap();
    let log = dir.join("launches.log");
    for (name, body) in [
        (
            "srun",
            "nodes=$SLURM_NNODES per=$SLURM_NTASKS_PER_NODE n=\n\
             while :; do case $1 in --nodes=*) nodes=${1#*=} ;; --ntasks=*) n=${1#*=} ;; *) break ;; esac; shift; done\n\
             exec aar run -n \"${n:-$((nodes * per))}\" -N \"$per\" \"$@\"\n",
        ),
        (
            "aprun",
            "n=1 per=\n\
             while :; do case $1 in -n) n=$2 ;; -N) per=$2 ;; *) break ;; esac; shift 2; done\n\
             exec aar run -n \"$n\" -N \"${per:-$n}\" \"$@\"\n",
        ),
    ] {
        let path = shims.join(name);
        std::fs::write(&path, format!("#!/bin/bash\necho \"{name} $*\" >>'{}'\n{body}", log.display())).unwrap();
        let st = Command::new("chmod").arg("+x").arg(&path).status().unwrap();
        assert!(st.success());
    }
    let papi = dir.join("modulefiles/papi");
    std::fs::create_dir_all(&papi).unwrap();
    std::fs::write(papi.join("7.lua"), "whatis(\"PAPI stand-in: the emulation kit's libugni registers the events\")\n")
        .unwrap();
    let scratch_dir = dir.join("scr atch");
    std::fs::create_dir_all(&scratch_dir).unwrap();
    for (script, job_vars, job) in [
        ("ab-slurm.sbatch", "SLURM_JOB_ID=4242 SLURM_NNODES=2 SLURM_NTASKS_PER_NODE=1 SLURM_SUBMIT_DIR", "4242"),
        ("ab-aprun.pbs", "PBS_JOBID=4243.sdb PBS_O_WORKDIR", "4243"),
    ] {
        let _ = std::fs::remove_file(&log);
        let run = format!(
            "source {LMOD_INIT}\n\
             module use {prefix}/modulefiles/lmod\n\
             module use {modulefiles}\n\
             export -f module\n\
             export PATH={shims}:$PATH PKG_CONFIG_PATH={prefix}/emu/lib/pkgconfig AAR_PAPI_EVENTS={events}\n\
             export {job_vars}=\"$PWD\"\n\
             exec bash ./{script}\n",
            prefix = prefix.display(),
            modulefiles = dir.join("modulefiles").display(),
            shims = shims.display(),
            events = sde_events_setting(),
        );
        let (stdout, stderr) = login_shell(&run, &dir, &submit, &[("SCRATCH", &scratch_dir)], script);
        let all = format!("{stdout}\n{stderr}");
        let records = scratch_dir.join(format!("aar-ab-{job}"));
        // aar doctor checked the experiment the job then ran, not the module's defaults.
        for said in [
            "in effect: A/B experiment: ADAPTIVE0,ADAPTIVE3,auto alternated per iteration, order shuffled:7"
                .to_string(),
            format!("records in {}", records.display()),
            // The file count is the job's 2 ranks', not the one-task step's.
            format!("this job's 2 ranks (--ranks 2) would make 4 files in AAR_OUTPUT_DIR={}", records.display()),
            "result: all well (exit 0)".to_string(),
            "ab_exchange: 2 ranks, 1 pair across nodes, 300 iterations".to_string(),
        ] {
            assert!(all.contains(&said), "{script} does not say {said:?}:\n{all}");
        }
        let launches = std::fs::read_to_string(&log).unwrap();
        let expected = if script.ends_with(".sbatch") {
            "srun --nodes=1 --ntasks=1 aar doctor --ranks 2 ./ab_exchange\nsrun ./ab_exchange --iters 300 --bytes 64K\n"
        } else {
            "aprun -n 1 aar doctor --ranks 2 ./ab_exchange\naprun -n 2 -N 1 ./ab_exchange --iters 300 --bytes 64K\n"
        };
        assert_eq!(launches, expected, "{script}");
        // The report read the two ranks' records of the job's own folder: 100 iterations a policy.
        let rows: Vec<&str> = stdout.lines().filter(|l| l.split_whitespace().nth(1) == Some("100")).collect();
        let policies: Vec<&str> = rows.iter().filter_map(|l| l.split_whitespace().next()).collect();
        assert_eq!(policies, ["ADAPTIVE0", "ADAPTIVE3", "auto"], "{script}:\n{stdout}");
        let names: Vec<String> = std::fs::read_dir(&records)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".iterations.jsonl"))
            .collect();
        assert_eq!(names.len(), 2, "{script}: {names:?}");
        // The plots are the job's own, by its number, in the folder it was submitted from.
        for plot in [format!("ab-{job}.png"), format!("ab-{job}.html")] {
            assert!(submit.join(&plot).is_file(), "{script}: no {plot} in the folder it was submitted from");
        }
    }
}

/// Run `script` in a login-like shell: an empty environment but PATH, HOME=`home` and `env`, in
/// `cwd`; it must succeed (`what` names it in the failure). Its stdout and stderr.
fn login_shell(script: &str, home: &Path, cwd: &Path, env: &[(&str, &Path)], what: &str) -> (String, String) {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{what}: {stdout}\n{stderr}");
    (stdout, stderr)
}

/// Install into `prefix`; the install's output.
fn install(prefix: &std::path::Path, cwd: &std::path::Path) -> std::process::Output {
    Command::new(root().join("scripts/install"))
        .arg(prefix)
        .current_dir(cwd)
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap()
}

/// Install takes the files cargo built, from where cargo put them: with CARGO_TARGET_DIR set (a
/// login node's home quota), or a cargo config's target-dir, target/release holds an older build
/// or none, and copying from there installed a stale libaar.so without a word. Here `cargo` is a
/// stand-in that reports, as cargo does in its JSON messages, files of its own in another folder.
#[test]
fn install_takes_the_files_from_where_cargo_built_them() {
    let dir = scratch("packaging-target-dir");
    let release = dir.join("elsewhere/release");
    let path = stand_in_cargo(&dir, &release, Libsde::Present);
    let prefix = dir.join("prefix");
    let out = Command::new(root().join("scripts/install")).arg(&prefix).env("PATH", path).output().unwrap();
    assert!(out.status.success(), "install failed: {}", String::from_utf8_lossy(&out.stderr));
    for (installed, f) in [
        ("lib/libaar.so", "libaar.so"),
        ("bin/aar", "aar"),
        ("emu/lib/libugni.so", "libugni.so"),
        ("emu/lib/libpmi.so.0", "libpmi.so"),
    ] {
        let got = std::fs::read(prefix.join(installed)).unwrap();
        let want = built_by_cargo(f);
        assert!(
            got == want.as_bytes(),
            "{installed} ({} bytes) is not the {f} cargo built in {} (an older build from target/release?)",
            got.len(),
            release.display()
        );
    }
    // The manual pages, from that aar's clap definitions, are that aar's too.
    let page = std::fs::read_to_string(prefix.join("share/man/man1/aar.1")).unwrap();
    assert_eq!(page, "by the aar cargo built\n", "aar(1) is not the page the aar cargo built wrote");
}

/// Whether the stand-in cargo of [`stand_in_cargo`] finds PAPI's libsde.
#[derive(Clone, Copy, PartialEq)]
enum Libsde {
    Present,
    Missing,
}

/// The content of the stand-in cargo's `f`. Its `aar` is a program: install runs `aar man --out
/// DIR`, which writes two pages, aar.1 and aar-report.1, that say which aar wrote them.
fn built_by_cargo(f: &str) -> String {
    match f {
        "aar" => "#!/bin/sh\n# built by cargo: aar\n[ \"$1 $2\" = 'man --out' ] && echo 'by the aar cargo built' > \"$3/aar.1\" \
                  && echo 'by the aar cargo built' > \"$3/aar-report.1\"\n"
            .to_owned(),
        _ => format!("built by cargo: {f}\n"),
    }
}

/// A stand-in `cargo` in `dir/bin` that reports, as cargo does in its JSON messages, the files it
/// "built" in `release` (libaar.so, aar, libugni.so, libpmi.so, each holding `built by cargo:
/// NAME`, aar's as a comment of its script). With libsde missing, a build of aar-emu fails as its
/// link does without libsde. The PATH that finds it first.
fn stand_in_cargo(dir: &Path, release: &Path, libsde: Libsde) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(release).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let built = ["libaar.so", "aar", "libugni.so", "libpmi.so"];
    for f in built {
        std::fs::write(release.join(f), built_by_cargo(f)).unwrap();
    }
    std::fs::set_permissions(release.join("aar"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let report: String = built
        .iter()
        .map(|f| {
            format!(
                "printf '%s\\n' '{{\"reason\":\"compiler-artifact\",\"filenames\":[\"{}\"],\"fresh\":true}}'\n",
                release.join(f).display()
            )
        })
        .collect();
    let missing = match libsde {
        Libsde::Present => "",
        Libsde::Missing => {
            "case \" $* \" in *' aar-emu '*) echo 'error: linking with `cc` failed: unable to find library -lsde' >&2; exit 101 ;; esac\n"
        }
    };
    aar_testkit::write_script(&bin.join("cargo"), &format!("#!/bin/sh\n{missing}{report}"));
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

/// Installing again over an earlier install, where PAPI's libsde is missing this time (another
/// host, a module not loaded): the earlier install's emulation kit stayed in PREFIX/emu, built
/// from the older sources, beside this version's libaar.so, while the note said only that the kit
/// "was not built". The kit's files go, and the note says so; a file of someone else's in
/// PREFIX/emu stays, and is named.
#[test]
fn an_install_without_libsde_removes_an_earlier_installs_emulation_kit() {
    let dir = scratch("packaging-stale-kit");
    let release = dir.join("release");
    let install_with = |libsde, prefix: &Path| {
        let path = stand_in_cargo(&dir, &release, libsde);
        let out = Command::new(root().join("scripts/install")).arg(prefix).env("PATH", path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "install failed: {stderr}");
        stderr
    };
    for other in [None, Some("lib/libmine.so")] {
        let prefix = dir.join(format!("prefix-{}", other.is_some()));
        let emu = prefix.join("emu");
        install_with(Libsde::Present, &prefix);
        assert!(emu.join("lib/pkgconfig/cray-ugni.pc").exists(), "the first install has the kit");
        if let Some(other) = other {
            std::fs::write(emu.join(other), "not aar's\n").unwrap();
        }
        let stderr = install_with(Libsde::Missing, &prefix);
        let mut said = format!(
            "was not built (see above; it needs PAPI's libsde, e.g. Debian's libpapi-dev); the kit an earlier \
             install left in {}, out of date now, was removed",
            emu.display()
        );
        match other {
            None => {
                said += "; everything else is installed.";
                assert!(!emu.exists(), "{} is left: {:?}", emu.display(), walk(&emu));
            }
            Some(other) => {
                said += &format!(" ({} keeps the files the install did not put there)", emu.display());
                assert_eq!(walk(&emu), [emu.join(other), emu.join("lib")], "only the other file is left");
            }
        }
        assert!(stderr.contains(&said), "no {said:?} in:\n{stderr}");
        assert!(prefix.join("lib/libaar.so").exists() && prefix.join("bin/aar").exists(), "{stderr}");
    }
}

/// An administrator's `scripts/install --help` (or `-h`, or `--prefix=/opt/aar`) is not a relative
/// PREFIX: it installed into a folder named `--help` under the current one. Options, no argument
/// and more than one are refused before anything is built or made; `--help` prints the usage.
#[test]
fn install_takes_one_folder_and_no_option_for_it() {
    let dir = scratch("packaging-args");
    let run = |args: &[&str]| {
        let out = Command::new(root().join("scripts/install")).args(args).current_dir(&dir).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    for help in ["--help", "-h"] {
        let (code, text) = run(&[help]);
        assert_eq!(code, Some(0), "{help}: {text}");
        assert!(text.starts_with("usage: scripts/install PREFIX"), "{help}: {text}");
    }
    for args in [&["--prefix=/opt/aar"][..], &["-x"], &[], &[""], &["/opt/aar/0.1.0", "extra"]] {
        let (code, text) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {text}");
        assert!(
            text.contains("usage: scripts/install PREFIX") && text.contains("nothing was installed"),
            "{args:?}: {text}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "install made {left:?} in the current folder");
}

/// A site install is for everyone who loads the module: an administrator's umask of 077 (or 027,
/// as hardened hosts set) must not leave folders, modulefiles or pkg-config files that only the
/// installer can read, while the copied files had explicit modes.
#[test]
fn an_install_under_a_strict_umask_is_readable_by_everyone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("packaging-umask");
    let prefix = dir.join("opt/aar/0.1");
    let out = Command::new("sh")
        .arg("-c")
        .arg("umask 077 && exec \"$0\" \"$1\"")
        .arg(root().join("scripts/install"))
        .arg(&prefix)
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(out.status.success(), "install failed: {}", String::from_utf8_lossy(&out.stderr));
    let version = std::fs::read_dir(prefix.join("modulefiles/tcl/aar")).unwrap().next().unwrap().unwrap().file_name();
    let version = version.to_str().unwrap();
    for (path, want) in [
        (dir.join("opt"), 0o755),
        (prefix.clone(), 0o755),
        (prefix.join("lib"), 0o755),
        (prefix.join("lib/libaar.so"), 0o755),
        (prefix.join("lib/pkgconfig/aar.pc"), 0o644),
        (prefix.join("modulefiles/lmod/aar"), 0o755),
        (prefix.join(format!("modulefiles/lmod/aar/{version}.lua")), 0o644),
        (prefix.join(format!("modulefiles/tcl/aar/{version}")), 0o644),
        (prefix.join("share/doc/aar/examples/cray"), 0o755),
    ] {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, want, "{}: mode {mode:o}, not {want:o}", path.display());
    }
}

/// The module among the others a user loads and in the environments users have: another module
/// adding to LD_PRELOAD (with ':', as modules do) is neither lost nor left holding libaar.so
/// after unload or purge; a `'` in $SCRATCH is a folder name, not shell code; an empty $SCRATCH
/// is unset; a trailing '/' (a '//', a '/./') in $SCRATCH is not in the folder's name; a folder
/// the user exports after loading survives a reload and the unload; a program
/// linked with -laar (pkg-config aar) runs with the module loaded and
/// without it. And install refuses a prefix LD_PRELOAD or `-Wl,-rpath,` cannot carry (a `,` split the
/// rpath of `pkg-config --libs aar`, which then failed to link), and takes a relative one
/// from where it was given.
#[test]
fn the_module_lives_with_other_modules_and_odd_environments() {
    let dir = scratch("packaging-odd");
    for bad in ["with space", "colon:ed", "R&D", "it's", "comma,ed"] {
        let out = install(&dir.join(bad).join("0.1"), &dir);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was installed"), "{bad}");
        assert!(!dir.join(bad).exists(), "{bad}");
    }
    // Spelt as tab completion leaves it, with a trailing '/' (and a '//' and a '/./'): the
    // modulefiles name one spelling, or Environment Modules' unload, which removes exactly what
    // the modulefile names, would leave a first install's entries behind after a reinstall.
    let out = install(std::path::Path::new("rel//./prefix/"), &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let prefix = dir.join("rel/prefix");
    assert!(prefix.join("lib/libaar.so").exists(), "a relative prefix is taken from where install ran");
    let version = std::fs::read_dir(prefix.join("modulefiles/tcl/aar")).unwrap().next().unwrap().unwrap().path();
    let tcl = std::fs::read_to_string(version).unwrap();
    assert!(tcl.contains(&format!("set root \"{}\"\n", prefix.display())), "{tcl}");
    let tool = dir.join("mf/tool");
    std::fs::create_dir_all(&tool).unwrap();
    std::fs::write(tool.join("1.0.lua"), "prepend_path(\"LD_PRELOAD\", \"/opt/tool/libtool.so\")\n").unwrap();
    std::fs::write(
        dir.join("capi.c"),
        "#include <aar.h>\n#include <stdio.h>\nint main(void) { printf(\"version=%s\\n\", aar_version()); return 0; }\n",
    )
    .unwrap();
    let lib = prefix.join("lib/libaar.so");
    for flavour in ["lmod", "tcl"] {
        let quoted = dir.join(format!("q'{flavour};touch pwned;'"));
        let script = format!(
            "source {LMOD_INIT}\n\
             module use {prefix}/modulefiles/{flavour}\n\
             module use {mf}\n\
             module load aar tool; module unload aar; echo \"A=[$LD_PRELOAD]\"\n\
             module purge; echo \"B=[$LD_PRELOAD]\"\n\
             module load tool aar; echo \"C=[$LD_PRELOAD]\"; module purge; echo \"D=[$LD_PRELOAD]\"\n\
             export SCRATCH=\"{quoted}\"; module load aar || exit 3\n\
             echo \"E=$AAR_OUTPUT_DIR\"; test -d \"$AAR_OUTPUT_DIR\" && echo made\n\
             module purge; export SCRATCH=; module load aar; echo \"F=$AAR_OUTPUT_DIR\"\n\
             export AAR_OUTPUT_DIR={dir}/mine; module reload aar 2>/dev/null || exit 7\n\
             echo \"G=$AAR_OUTPUT_DIR\"; module unload aar; echo \"H=[$AAR_OUTPUT_DIR]\"; module load aar\n\
             unset AAR_OUTPUT_DIR; module reload aar 2>/dev/null; echo \"I=$AAR_OUTPUT_DIR\"\n\
             cd {dir} && cc capi.c $(pkg-config --cflags --libs aar) -o capi-{flavour} || exit 4\n\
             ./capi-{flavour} || exit 5\n\
             module purge; ./capi-{flavour} || exit 6\n\
             export SCRATCH={dir}//slash/./; module load aar || exit 8; echo \"J=$AAR_OUTPUT_DIR\"\n\
             test -d \"$AAR_OUTPUT_DIR\" && echo made; module unload aar; echo \"K=[$AAR_OUTPUT_DIR]\"\n",
            prefix = prefix.display(),
            mf = dir.join("mf").display(),
            quoted = quoted.display(),
            dir = dir.display(),
        );
        let (stdout, stderr) = login_shell(&script, &dir, &dir, &[], flavour);
        let lib = lib.display();
        for want in [
            "A=[/opt/tool/libtool.so]".to_string(),
            "B=[]".to_string(),
            format!("C=[{lib}:/opt/tool/libtool.so]"),
            "D=[]".to_string(),
            format!("E={}/aar-records\nmade", quoted.display()),
            format!("F={}/aar-records", dir.display()),
            // The user's own folder, exported after the load, survives a reload and the unload.
            format!("G={}/mine", dir.display()),
            format!("H=[{}/mine]", dir.display()),
            format!("I={}/aar-records", dir.display()),
            // One spelling from both modulefiles, whatever '/' the user's $SCRATCH ends with.
            format!("J={}/slash/aar-records\nmade\nK=[]", dir.display()),
        ] {
            assert!(stdout.contains(&want), "{flavour}: no {want:?} in:\n{stdout}\n{stderr}");
        }
        assert!(!dir.join("pwned").exists(), "{flavour}: $SCRATCH ran as shell code");
        assert_eq!(
            stdout.matches("version=").count(),
            2,
            "{flavour}: -laar runs with and without the module: {stdout}"
        );
    }
}

/// The users this process can load the module as: its own, and `nobody` when it runs as root and
/// setpriv is there (else only its own, said once).
fn tmp_users() -> (u32, Vec<u32>) {
    // /proc/self belongs to the process's effective user.
    let me = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    let mut users = vec![me];
    if me == 0 && have("setpriv") {
        users.push(65534);
    } else {
        eprintln!("note: not root, or no setpriv: only this user's folder is checked");
    }
    (me, users)
}

/// Run `script` as `user` (with setpriv when that is not `me`) in a bare environment: PATH only,
/// no $SCRATCH, no $HOME.
fn bare_shell_as(user: u32, me: u32, script: &str, cwd: &Path) -> std::process::Output {
    let mut cmd = match user == me {
        true => Command::new("bash"),
        false => {
            let mut c = Command::new("setpriv");
            c.args([&format!("--reuid={user}"), &format!("--regid={user}"), "--clear-groups", "bash"]);
            c
        }
    };
    cmd.arg("-c").arg(script).current_dir(cwd).env_clear().env("PATH", "/usr/bin:/bin").output().unwrap()
}

/// The tests that make and remove /tmp/aar-records-UID take turns.
static TMP_FOLDERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Removes what a test made in /tmp at its end, a failure included: only empty folders (never a
/// user's records) and links.
struct Made(Vec<std::path::PathBuf>);
impl Drop for Made {
    fn drop(&mut self) {
        for f in &self.0 {
            match f.symlink_metadata() {
                Ok(m) if m.is_dir() => _ = std::fs::remove_dir(f),
                Ok(_) => _ = std::fs::remove_file(f),
                Err(_) => {}
            }
        }
    }
}

/// With neither $SCRATCH nor $HOME (a bare environment: `env -i`, some batch and cron set-ups), the
/// module's record folder is in /tmp, which the node's users share: each user gets a folder of
/// their own (by uid) to write in, whoever loaded the module on the node first, and the unload
/// takes it back. The second user is `nobody` when the tests run as root (with setpriv); otherwise
/// only the test's user is checked.
#[test]
fn without_scratch_and_home_each_user_gets_a_record_folder_of_their_own_in_tmp() {
    let _turn = TMP_FOLDERS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("packaging-no-home");
    let prefix = dir.join("prefix");
    let out = install(&prefix, &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (me, users) = tmp_users();
    let folders: Vec<_> = users.iter().map(|u| std::path::PathBuf::from(format!("/tmp/aar-records-{u}"))).collect();
    let _made = Made(folders.iter().filter(|f| !f.exists()).cloned().collect());
    for flavour in ["lmod", "tcl"] {
        for &user in &users {
            let script = format!(
                "source {LMOD_INIT}\n\
                 module use {prefix}/modulefiles/{flavour}\n\
                 module load aar || exit 3\n\
                 echo \"dir=$AAR_OUTPUT_DIR\"; : > \"$AAR_OUTPUT_DIR/probe\" && rm \"$AAR_OUTPUT_DIR/probe\" && echo writable\n\
                 module unload aar; echo \"after=[$AAR_OUTPUT_DIR]\"\n",
                prefix = prefix.display()
            );
            let out = bare_shell_as(user, me, &script, &dir);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let want = format!("dir=/tmp/aar-records-{user}\nwritable\nafter=[]\n");
            assert!(
                out.status.success() && stdout.contains(&want),
                "{flavour}, user {user}: no {want:?} in:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Any user can make /tmp/aar-records-UID first. A folder of another user's (mode 777: records,
/// which hold command lines, in a folder they control; mode 755: no record can be written), a
/// folder of the user's own that others can write in, or a link (its owner can point it elsewhere
/// later) is not used: the module makes a folder of the user's only (mktemp -d, mode 700), says
/// why and where on load, with the same line from the Lmod and the Tcl modulefile, and leaves
/// the other as it was. A folder it makes itself is mode 700, and then it says nothing. Another
/// user's folders can only be made as root: otherwise the user's own ones are checked.
#[test]
fn a_record_folder_in_tmp_that_another_user_can_control_is_not_used() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let _turn = TMP_FOLDERS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("packaging-tmp-taken");
    let prefix = dir.join("prefix");
    let out = install(&prefix, &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (me, users) = tmp_users();
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum There {
        Nothing,
        Folder { owner: u32, mode: u32 },
        Link { owner: u32 },
    }
    for &user in &users {
        let other = if user == me { 65534 } else { me };
        let mut cases = vec![There::Nothing, There::Folder { owner: user, mode: 0o777 }, There::Link { owner: user }];
        if me == 0 {
            cases.extend([
                There::Folder { owner: other, mode: 0o777 },
                There::Folder { owner: other, mode: 0o755 },
                There::Link { owner: other },
            ]);
        }
        let folder = std::path::PathBuf::from(format!("/tmp/aar-records-{user}"));
        assert!(
            folder.symlink_metadata().is_err(),
            "{} exists (not made by this test): move it away to run this test",
            folder.display()
        );
        // The link points at a folder of the user's only, which the module would take if it
        // followed the link.
        let target = dir.join(format!("link-target-{user}"));
        std::fs::create_dir(&target).unwrap();
        std::os::unix::fs::chown(&target, Some(user), Some(user)).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700)).unwrap();
        for flavour in ["lmod", "tcl"] {
            for &there in &cases {
                let mut made = Made(vec![folder.clone()]);
                match there {
                    There::Nothing => {}
                    There::Folder { owner, mode } => {
                        std::fs::create_dir(&folder).unwrap();
                        std::os::unix::fs::chown(&folder, Some(owner), Some(owner)).unwrap();
                        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(mode)).unwrap();
                    }
                    There::Link { owner } => {
                        std::os::unix::fs::symlink(&target, &folder).unwrap();
                        std::os::unix::fs::lchown(&folder, Some(owner), Some(owner)).unwrap();
                    }
                }
                let script = format!(
                    "source {LMOD_INIT}\n\
                     module use {prefix}/modulefiles/{flavour}\n\
                     module load aar || exit 3\n\
                     echo \"dir=$AAR_OUTPUT_DIR\"; : > \"$AAR_OUTPUT_DIR/probe\" && rm \"$AAR_OUTPUT_DIR/probe\" && echo writable\n\
                     stat -c 'owner=%u mode=%a' -- \"$AAR_OUTPUT_DIR\"\n\
                     module unload aar; echo \"after=[$AAR_OUTPUT_DIR]\"\n",
                    prefix = prefix.display()
                );
                let out = bare_shell_as(user, me, &script, &dir);
                let stdout = String::from_utf8_lossy(&out.stdout);
                let stderr = String::from_utf8_lossy(&out.stderr);
                let what = format!("{flavour}, user {user}, {there:?}");
                let used = stdout.lines().find_map(|l| l.strip_prefix("dir=")).unwrap_or_default().to_string();
                made.0.push(used.clone().into());
                let want = format!("writable\nowner={user} mode=700\nafter=[]\n");
                assert!(out.status.success() && stdout.contains(&want), "{what}: no {want:?} in:\n{stdout}\n{stderr}");
                let why = match there {
                    There::Nothing => {
                        assert_eq!(used, folder.to_str().unwrap(), "{what}: {stdout}");
                        assert!(!stderr.contains("aar:"), "{what}: nothing to say: {stderr}");
                        continue;
                    }
                    There::Folder { owner, .. } if owner != user => format!("belongs to another user (uid {owner})"),
                    There::Folder { mode, .. } => format!("can be written in by other users (mode {mode:o})"),
                    There::Link { .. } => "is a symbolic link".to_string(),
                };
                let private = used.strip_prefix(&format!("{}.", folder.display())).unwrap_or_default();
                assert!(private.len() == 6 && !private.contains('/'), "{what}: a new folder beside it: {used}");
                let said = format!(
                    "aar: {} {why}, so records go to {used}, a folder of this user's only, made for this load. \
                     Set SCRATCH or HOME, or export AAR_OUTPUT_DIR, for a folder that stays.\n",
                    folder.display()
                );
                assert_eq!(stderr.matches(&said).count(), 1, "{what}: no {said:?} in:\n{stderr}");
                // What was there is left as it was.
                let m = folder.symlink_metadata().unwrap();
                match there {
                    There::Folder { owner, mode } => {
                        assert_eq!((m.uid(), m.mode() & 0o7777), (owner, mode), "{what}");
                        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0, "{what}");
                    }
                    _ => assert!(m.file_type().is_symlink(), "{what}"),
                }
            }
        }
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "user {user}: nothing was written through the link");
    }
}

/// A relative $SCRATCH or $HOME (`SCRATCH=scratch module load aar`, a batch system's relative
/// one) gave a relative AAR_OUTPUT_DIR: the module made the folder under the one it was loaded in,
/// while each process writes under the folder it starts in, and nobody was told. It is skipped
/// for the next choice ($HOME, then /tmp), with one line on load, the same from both modulefiles,
/// naming the variable, its value, where records go and the fix; the unload takes it all back.
#[test]
fn a_relative_scratch_or_home_is_not_used_for_records() {
    let _turn = TMP_FOLDERS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("packaging-relative");
    let prefix = dir.join("prefix");
    let out = install(&prefix, &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let work = dir.join("work");
    std::fs::create_dir(&work).unwrap();
    let (me, _) = tmp_users();
    let tmp = std::path::PathBuf::from(format!("/tmp/aar-records-{me}"));
    let mut made = Made(if tmp.symlink_metadata().is_err() { vec![tmp.clone()] } else { vec![] });
    for flavour in ["lmod", "tcl"] {
        let script = format!(
            "source {LMOD_INIT}\n\
             module use {prefix}/modulefiles/{flavour}\n\
             module load aar || exit 3\n\
             echo \"dir=$AAR_OUTPUT_DIR\"; module unload aar; echo \"after=[$AAR_OUTPUT_DIR]\"\n",
            prefix = prefix.display()
        );
        let said = |name: &str, value: &str, to: &str| {
            format!(
                "aar: {name} is a relative path ({value}), which each process would take from the folder it \
                 starts in, so records go to {to} instead. Set {name} to an absolute path (such as {}/{value}), \
                 or export AAR_OUTPUT_DIR, then module unload aar; module load aar.\n",
                work.display()
            )
        };
        // A relative SCRATCH: $HOME/aar-records.
        let (stdout, stderr) = login_shell(&script, &dir, &work, &[("SCRATCH", Path::new("scratch"))], flavour);
        let home = dir.join("aar-records");
        let want = format!("dir={}\nafter=[]\n", home.display());
        assert!(stdout.contains(&want), "{flavour}: no {want:?} in:\n{stdout}\n{stderr}");
        assert!(home.is_dir(), "{flavour}: {} was not made", home.display());
        let line = said("SCRATCH", "scratch", home.to_str().unwrap());
        assert_eq!(stderr.matches(&line).count(), 1, "{flavour}: no {line:?} in:\n{stderr}");
        assert_eq!(stderr.matches("aar: ").count(), 1, "{flavour}: one line: {stderr}");
        // A relative HOME as well: /tmp/aar-records-UID (or the private folder beside it). When
        // this test made that folder, it is made one others can write in, so that the module
        // takes a private one beside it and says so too: after the lines that say why /tmp.
        let tmp_unsafe = made.0.contains(&tmp);
        if tmp_unsafe {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::create_dir(&tmp);
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let env = [("SCRATCH", Path::new("./scratch/")), ("HOME", Path::new("home"))];
        let (stdout, stderr) = login_shell(&script, &dir, &work, &env, flavour);
        let used = stdout.lines().find_map(|l| l.strip_prefix("dir=")).unwrap_or_default().to_string();
        made.0.push(used.clone().into());
        assert!(used.starts_with(tmp.to_str().unwrap()), "{flavour}: {stdout}\n{stderr}");
        assert!(stdout.contains("after=[]\n"), "{flavour}: {stdout}");
        let mut at = Vec::new();
        for line in [said("SCRATCH", "./scratch/", &used), said("HOME", "home", &used)] {
            assert_eq!(stderr.matches(&line).count(), 1, "{flavour}: no {line:?} in:\n{stderr}");
            at.push(stderr.find(&line).unwrap());
        }
        if tmp_unsafe {
            let line =
                format!("aar: {} can be written in by other users (mode 777), so records go to {used}", tmp.display());
            at.push(stderr.find(&line).unwrap_or_else(|| panic!("{flavour}: no {line:?} in:\n{stderr}")));
            assert!(at.is_sorted(), "{flavour}: the relative variables are said first, then /tmp:\n{stderr}");
        } else {
            eprintln!("note: {} was there before the test: the order of the lines is not checked", tmp.display());
        }
        let left: Vec<_> = std::fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "{flavour}: the module made {left:?} in the folder it was loaded in");
    }
}

/// A program built with AddressSanitizer (a user's debug build, started from the same batch
/// script as the job) runs with the module loaded: ASan refuses to start when a library is
/// preloaded before its runtime, unless told that this one may be. Its checks still work (an
/// overflow is still caught), the user's own ASAN_OPTIONS are kept, and unload restores them.
#[test]
fn a_program_built_with_asan_runs_with_the_module_loaded() {
    let dir = scratch("packaging-asan");
    let out = install(&dir.join("prefix"), &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let source = dir.join("asan.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\n#include <stdlib.h>\n\
         int main(int argc, char **argv) { (void)argv; char *p = malloc(8); p[argc > 1 ? 8 : 0] = 1;\n\
         printf(\"asan ok\\n\"); free(p); return 0; }\n",
    )
    .unwrap();
    let program = dir.join("asan");
    let st = Command::new("gcc").args(["-fsanitize=address", "-g", "-o"]).arg(&program).arg(&source).status().unwrap();
    assert!(st.success(), "gcc -fsanitize=address failed (install gcc's sanitizer runtimes)");
    for flavour in ["lmod", "tcl"] {
        let script = format!(
            "source {LMOD_INIT}\n\
             module use {prefix}/modulefiles/{flavour}\n\
             export ASAN_OPTIONS=detect_leaks=0\n\
             module load aar || exit 3\n\
             echo \"loaded=[$ASAN_OPTIONS] [$LD_PRELOAD]\"\n\
             {program}; echo \"clean=$?\"\n\
             {program} overflow; echo \"overflow=$?\"\n\
             module unload aar; echo \"unloaded=[$ASAN_OPTIONS]\"\n",
            prefix = dir.join("prefix").display(),
            program = program.display(),
        );
        let (stdout, stderr) = login_shell(&script, &dir, &dir, &[], flavour);
        let lib = dir.join("prefix/lib/libaar.so");
        for want in [
            "asan ok\nclean=0".to_string(),
            format!("loaded=[verify_asan_link_order=0:detect_leaks=0] [{}]", lib.display()),
            "overflow=1".to_string(),
            "unloaded=[detect_leaks=0]".to_string(),
        ] {
            assert!(stdout.contains(&want), "{flavour}: no {want:?} in:\n{stdout}\n{stderr}");
        }
        assert!(!stderr.contains("does not come first"), "{flavour}: ASan refused the preload:\n{stderr}");
        assert!(stderr.contains("heap-buffer-overflow"), "{flavour}: ASan still catches an overflow:\n{stderr}");
    }
}

/// When /tmp/aar-records-UID cannot be used, the private folder made in its place is taken again
/// by the next load (a reload, a swap, an unload and load, another shell): each reload made a
/// new one, scattering one user's records over many folders. Only a folder (not a link) of the
/// user's that no other user can write in is taken again; the others beside it are left alone.
#[test]
fn a_private_record_folder_in_tmp_is_taken_again_by_later_loads() {
    use std::os::unix::fs::PermissionsExt;
    let _turn = TMP_FOLDERS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("packaging-tmp-again");
    let prefix = dir.join("prefix");
    let out = install(&prefix, &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (me, users) = tmp_users();
    for &user in &users {
        let folder = std::path::PathBuf::from(format!("/tmp/aar-records-{user}"));
        let privates = || -> Vec<std::path::PathBuf> {
            let mut v: Vec<_> = std::fs::read_dir("/tmp")
                .unwrap()
                .map(|e| e.unwrap().path())
                // Other names in /tmp, another program's, need not be UTF-8.
                .filter(|p| p.to_string_lossy().starts_with(&format!("{}.", folder.display())))
                .collect();
            v.sort();
            v
        };
        assert!(
            folder.symlink_metadata().is_err() && privates().is_empty(),
            "{}(.*) exists (not made by this test): move it away to run this test",
            folder.display()
        );
        // Beside it, folders named as the module's private ones that it must not take: a link to
        // a folder of the user's only, a folder of the user's others can write in, and (as root)
        // a folder of another user's.
        let target = dir.join(format!("link-target-{user}"));
        std::fs::create_dir(&target).unwrap();
        std::os::unix::fs::chown(&target, Some(user), Some(user)).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut made = Made(vec![folder.clone()]);
        let decoy = |name: &str| std::path::PathBuf::from(format!("{}.{name}", folder.display()));
        std::os::unix::fs::symlink(&target, decoy("link00")).unwrap();
        std::os::unix::fs::lchown(decoy("link00"), Some(user), Some(user)).unwrap();
        let mut decoys = vec![(decoy("open00"), user, 0o777)];
        if me == 0 {
            decoys.push((decoy("other0"), if user == me { 65534 } else { me }, 0o700));
        }
        for (path, owner, mode) in &decoys {
            std::fs::create_dir(path).unwrap();
            std::os::unix::fs::chown(path, Some(*owner), Some(*owner)).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode)).unwrap();
        }
        made.0.extend(privates());
        // What /tmp/aar-records-UID is: a folder of the user's that others can write in.
        std::fs::create_dir(&folder).unwrap();
        std::os::unix::fs::chown(&folder, Some(user), Some(user)).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o777)).unwrap();
        let before = privates();
        for flavour in ["lmod", "tcl"] {
            let load = format!("source {LMOD_INIT}\nmodule use {}/modulefiles/{flavour}\n", prefix.display());
            let mut used = Vec::new();
            let mut said = String::new();
            for script in [
                format!(
                    "{load}module load aar || exit 3; echo \"dir=$AAR_OUTPUT_DIR\"\n\
                     module reload aar || exit 4; echo \"dir=$AAR_OUTPUT_DIR\"\n\
                     module unload aar; module load aar || exit 5; echo \"dir=$AAR_OUTPUT_DIR\"\n"
                ),
                // Another shell, later.
                format!("{load}module load aar || exit 3; echo \"dir=$AAR_OUTPUT_DIR\"\n"),
            ] {
                let out = bare_shell_as(user, me, &script, &dir);
                let stdout = String::from_utf8_lossy(&out.stdout);
                said += &String::from_utf8_lossy(&out.stderr);
                assert!(out.status.success(), "{flavour}, user {user}: {stdout}\n{said}");
                used.extend(stdout.lines().filter_map(|l| l.strip_prefix("dir=")).map(str::to_string));
            }
            let now = privates();
            let new: Vec<_> = now.iter().filter(|p| !before.contains(p)).collect();
            made.0.extend(now.iter().filter(|p| !before.contains(p)).cloned());
            assert_eq!(new.len(), 1, "{flavour}, user {user}: one private folder, not one per load: {now:?}\n{said}");
            let private = new[0].to_str().unwrap();
            assert_eq!(used, [private; 4], "{flavour}, user {user}: every load takes the same folder:\n{said}");
            let why = format!(
                "aar: {} can be written in by other users (mode 777), so records go to {private}, a folder of this \
                 user's only, made ",
                folder.display()
            );
            assert_eq!(said.matches(&format!("{why}for this load.")).count(), 1, "{flavour}, user {user}:\n{said}");
            assert_eq!(
                said.matches(&format!("{why}by an earlier load.")).count(),
                3,
                "{flavour}, user {user}:\n{said}"
            );
            std::fs::remove_dir(private).unwrap();
        }
        for (path, _, _) in &decoys {
            assert_eq!(std::fs::read_dir(path).unwrap().count(), 0, "user {user}: {} was written in", path.display());
        }
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "user {user}: nothing was written through the link");
    }
}

/// A PREFIX that cannot be made (under a file) or written in (a folder of another user's, as an
/// administrator's `scripts/install /opt/aar/0.1` without sudo is) is refused before the build,
/// which takes minutes, naming PREFIX and the folder in the way: it failed only after the build,
/// with mkdir's bare words. So is a PREFIX of the user's holding an earlier install's folder the
/// user cannot write in. Here `cargo` is a stand-in that says when it runs.
#[test]
fn install_refuses_a_prefix_it_cannot_write_in_before_building() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("packaging-unwritable");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    aar_testkit::write_script(&bin.join("cargo"), "#!/bin/sh\necho 'stand-in cargo ran' >&2\nexit 1\n");
    std::fs::write(dir.join("file"), "").unwrap();
    let (me, users) = tmp_users();
    // Not this user's to write in: root's folder for `nobody`, or the user's own made read-only.
    let locked = dir.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let user = *users.last().unwrap();
    let mut cases = vec![(me, dir.join("file/aar/0.1"), dir.join("file"), "is not a folder".to_string())];
    if user != 0 {
        let name =
            String::from_utf8_lossy(&Command::new("id").args(["-un", &user.to_string()]).output().unwrap().stdout)
                .trim()
                .to_string();
        cases.push((
            user,
            locked.join("aar/0.1"),
            locked.clone(),
            format!("is a folder this user ({name}) cannot write in"),
        ));
    }
    // scripts/install PREFIX as `user`, with the stand-in cargo first on PATH.
    let install_as = |user, prefix: &std::path::Path| {
        let install = root().join("scripts/install");
        let script = format!("PATH={}:$PATH exec {} {}", bin.display(), install.display(), prefix.display());
        bare_shell_as(user, me, &script, &dir)
    };
    for (user, prefix, blocker, why) in cases {
        let out = install_as(user, &prefix);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want = format!(
            "aar install: PREFIX \"{}\" cannot be made: \"{}\" {why}; nothing was built or installed.",
            prefix.display(),
            blocker.display()
        );
        assert_eq!(out.status.code(), Some(2), "user {user}, {}: {stderr}", prefix.display());
        assert!(stderr.contains(&want), "user {user}: no {want:?} in:\n{stderr}");
        assert!(
            !stderr.contains("cargo ran"),
            "user {user}, {}: cargo ran before the prefix was checked",
            prefix.display()
        );
    }
    // A PREFIX of this user's over an earlier install by another (root's `lib`, as after an
    // administrator's install): it failed after the build, with install's bare words, the files
    // before that folder already replaced. Refused before the build, naming the folder.
    if user != 0 {
        let prefix = dir.join("earlier");
        std::fs::create_dir_all(prefix.join("lib")).unwrap();
        std::os::unix::fs::chown(&prefix, Some(user), None).unwrap();
        let out = install_as(user, &prefix);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want = format!(
            "aar install: \"{p}/lib\", in PREFIX \"{p}\" (an earlier install's?), is a folder this user",
            p = prefix.display()
        );
        assert_eq!(out.status.code(), Some(2), "user {user}, {}: {stderr}", prefix.display());
        assert!(
            stderr.contains(&want) && stderr.contains("nothing was built or installed"),
            "user {user}: no {want:?} in:\n{stderr}"
        );
        assert!(
            !stderr.contains("cargo ran"),
            "user {user}: cargo ran before the earlier install's folders were checked"
        );
    }
    // A folder that access(2) lets root write in but whose file system makes no folder: mkdir's
    // own words, still before the build.
    if me == 0 {
        let prefix = "/proc/aar-test/0.1";
        let script = format!("PATH={}:$PATH exec {} {prefix}", bin.display(), root().join("scripts/install").display());
        let out = bare_shell_as(0, me, &script, &dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want = format!("aar install: PREFIX \"{prefix}\" cannot be made (cannot create directory");
        assert_eq!(out.status.code(), Some(2), "{prefix}: {stderr}");
        assert!(
            stderr.contains(&want) && stderr.contains("nothing was built or installed"),
            "no {want:?} in:\n{stderr}"
        );
        assert!(!stderr.contains("cargo ran"), "{prefix}: cargo ran before the prefix was made");
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Installing twice into one PREFIX, the second time over another version's install (as
/// `scripts/install /opt/aar` for each release does): that version's modulefiles named this
/// PREFIX, whose files are now this version's, so `module load aar/0.0.1` loaded this version
/// under the old name, and an older install of a higher version stayed the default. They go,
/// with a word; a modulefile that names another prefix stays, and nothing is left half-written.
#[test]
fn an_install_over_another_version_leaves_only_its_own_modulefiles() {
    let dir = scratch("packaging-over");
    let prefix = dir.join("opt/aar");
    let out = install(&prefix, &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lmod = prefix.join("modulefiles/lmod/aar");
    let tcl = prefix.join("modulefiles/tcl/aar");
    let version = std::fs::read_dir(&tcl).unwrap().next().unwrap().unwrap().file_name().into_string().unwrap();
    let ours_lua = std::fs::read_to_string(lmod.join(format!("{version}.lua"))).unwrap();
    let ours_tcl = std::fs::read_to_string(tcl.join(&version)).unwrap();
    // What the installs of 99.0.0 (a later one, installed before a roll-back) and 0.0.1 left.
    for other in ["99.0.0", "0.0.1"] {
        std::fs::write(lmod.join(format!("{other}.lua")), ours_lua.replace(&version, other)).unwrap();
        std::fs::write(tcl.join(other), ours_tcl.replace(&version, other)).unwrap();
    }
    let foreign = "#%Module1.0\nset root \"/opt/elsewhere\"\nsetenv AAR_ROOT $root\n";
    std::fs::write(tcl.join("0.0.0"), foreign).unwrap();
    let out = install(&prefix, &dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let mut left: Vec<String> = [&lmod, &tcl]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    let mut want = [version.clone(), format!("{version}.lua"), "0.0.0".to_string()];
    want.sort();
    assert_eq!(left, want, "{stderr}");
    assert_eq!(std::fs::read_to_string(tcl.join("0.0.0")).unwrap(), foreign);
    for removed in [lmod.join("99.0.0.lua"), tcl.join("0.0.1")] {
        let said = format!("aar install: removed {}, another version's modulefile for this PREFIX", removed.display());
        assert!(stderr.contains(&said), "no {said:?} in:\n{stderr}");
    }
    let half: Vec<_> = walk(&prefix).into_iter().filter(|p| p.to_string_lossy().contains(".new.")).collect();
    assert!(half.is_empty(), "half-written files left: {half:?}");
    for flavour in ["lmod", "tcl"] {
        let script = format!(
            "source {LMOD_INIT}\nmodule use {}/modulefiles/{flavour}\n\
             module load aar || exit 3; module list 2>&1\n\
             module load aar/0.0.1 2>/dev/null && echo 'loaded 0.0.1'; true\n",
            prefix.display()
        );
        let (stdout, stderr) = login_shell(&script, &dir, &dir, &[], flavour);
        assert!(
            stdout.contains(&format!("aar/{version}")),
            "{flavour}: the default is this version:\n{stdout}\n{stderr}"
        );
        assert!(!stdout.contains("loaded 0.0.1"), "{flavour}: {stdout}\n{stderr}");
    }
}

/// A site's `default` link beside the modulefiles (`ln -s 0.1.0 default`, as administrators pin a
/// default) names this PREFIX through the modulefile it points at: reinstalling the same version
/// (a rebuild, a fix) removed the link as "another version's modulefile", and the site's default
/// with it. Links are the site's: they stay, whatever they point at.
#[test]
fn an_install_keeps_a_default_link_beside_the_modulefiles() {
    let dir = scratch("packaging-default-link");
    let path = stand_in_cargo(&dir, &dir.join("release"), Libsde::Present);
    let prefix = dir.join("prefix");
    let install = || {
        let out = Command::new(root().join("scripts/install")).arg(&prefix).env("PATH", &path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "install failed: {stderr}");
        stderr
    };
    install();
    let tcl = prefix.join("modulefiles/tcl/aar");
    let version = std::fs::read_dir(&tcl).unwrap().next().unwrap().unwrap().file_name().into_string().unwrap();
    std::os::unix::fs::symlink(&version, tcl.join("default")).unwrap();
    let stderr = install();
    assert_eq!(
        std::fs::read_link(tcl.join("default")).ok(),
        Some(std::path::PathBuf::from(&version)),
        "the site's default link is gone:\n{stderr}"
    );
    assert!(!stderr.contains("removed"), "{stderr}");
}

/// A site's default (`.version`, `.modulerc`) naming the earlier version installed in the same
/// PREFIX: install removes that version's modulefile, and Environment Modules then refused
/// `module load aar` for every user ("Unable to locate a modulefile for 'aar/0.0.9'"), the install
/// having said only that it removed the modulefile. It names each such file, the version, and the
/// fix; a default naming a version that stays gets no line. Under Environment Modules 5 the load
/// fails as said, and works after the fix it names.
#[test]
fn an_install_names_a_sites_default_for_a_version_it_removed() {
    let dir = scratch("packaging-default-gone");
    let path = stand_in_cargo(&dir, &dir.join("release"), Libsde::Present);
    let prefix = dir.join("prefix");
    let install = || {
        let out = Command::new(root().join("scripts/install")).arg(&prefix).env("PATH", &path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "install failed: {stderr}");
        stderr
    };
    install();
    let tcl = prefix.join("modulefiles/tcl/aar");
    let lmod = prefix.join("modulefiles/lmod/aar");
    let version = std::fs::read_dir(&tcl).unwrap().next().unwrap().unwrap().file_name().into_string().unwrap();
    let ours = std::fs::read_to_string(tcl.join(&version)).unwrap();
    std::fs::write(tcl.join("0.0.9"), ours.replace(&version, "0.0.9")).unwrap();
    std::fs::write(tcl.join("0.0.0"), "#%Module1.0\nset root \"/opt/elsewhere\"\n").unwrap();
    std::fs::write(tcl.join(".version"), "#%Module1.0\nset ModulesVersion \"0.0.9\"\n").unwrap();
    std::fs::write(lmod.join(".modulerc.lua"), "module_version(\"aar/0.0.0\", \"default\")\n").unwrap();
    let ours = std::fs::read_to_string(lmod.join(format!("{version}.lua"))).unwrap();
    std::fs::write(lmod.join("0.0.9.lua"), ours.replace(&version, "0.0.9")).unwrap();
    std::os::unix::fs::symlink("0.0.9.lua", lmod.join("default")).unwrap();
    let stderr = install();
    for (rc, fails) in [
        (
            tcl.join(".version"),
            "Environment Modules refuses `module load aar`: \"Unable to locate a modulefile for 'aar/0.0.9'\"",
        ),
        (lmod.join("default"), "`module load aar/default` finds no file"),
    ] {
        let said = format!(
            "aar install: {} names aar 0.0.9, whose modulefile was removed above: the default it sets is gone ({fails}). \
             Make it name {version} instead, or remove it.\n",
            rc.display()
        );
        assert!(stderr.contains(&said), "no {said:?} in:\n{stderr}");
    }
    assert_eq!(stderr.matches(" names aar ").count(), 2, "only the defaults of a removed version, once:\n{stderr}");
    if !Path::new(EM_INIT).exists() {
        eprintln!(
            "note: {EM_INIT} is missing (scripts/setup unpacks Environment Modules 5 there): not tested under it"
        );
        return;
    }
    let script = format!(
        "source {EM_INIT}\nmodule use {tcl}/..\n\
         module load aar && exit 3\n\
         sed -i 's/0\\.0\\.9/{version}/' {tcl}/.version\n\
         module load aar || exit 4\n\
         echo \"fixed LD_PRELOAD=$LD_PRELOAD\"\n",
        tcl = tcl.display()
    );
    let (stdout, stderr) = login_shell(&script, &dir, &dir, &[], "Environment Modules 5");
    assert!(stderr.contains("Unable to locate a modulefile for 'aar/0.0.9'"), "{stderr}");
    assert!(stdout.contains(&format!("fixed LD_PRELOAD={}/lib/libaar.so", prefix.display())), "{stdout}\n{stderr}");
}

/// Installing over an older version whose aar had other subcommands: its pages (aar-old(1)) stayed
/// in PREFIX/share/man beside this version's, and `man aar-old` showed a command this aar does not
/// have. The aar pages this version's `aar man` did not write go, with a word; pages of other
/// packages in a shared share/man stay, whatever their names, and so do this version's.
#[test]
fn an_install_removes_the_pages_of_another_version_that_this_one_does_not_write() {
    let dir = scratch("packaging-stale-pages");
    let path = stand_in_cargo(&dir, &dir.join("release"), Libsde::Present);
    let prefix = dir.join("prefix");
    let man = prefix.join("share/man");
    let install = || {
        let out = Command::new(root().join("scripts/install")).arg(&prefix).env("PATH", &path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "install failed: {stderr}");
        stderr
    };
    install();
    let stale = ["man1/aar-old.1", "man1/aar-sim-old.1", "man7/libaar.7", "man7/intro_aar.7"];
    let others = ["man1/aarx.1", "man1/other.1", "man1/aar-old.1.gz", "man7/aar-old.7", "man7/libaarx.7"];
    for page in stale.iter().chain(&others) {
        std::fs::write(man.join(page), ".TH OLD 1\n").unwrap();
    }
    let stderr = install();
    for page in stale {
        assert!(!man.join(page).exists(), "{page} of the older version stayed:\n{stderr}");
    }
    for page in others.iter().chain(&["man1/aar.1", "man1/aar-report.1"]) {
        assert!(man.join(page).exists(), "{page} was removed:\n{stderr}");
    }
    let said = format!(
        "aar install: removed aar-old.1 aar-sim-old.1 libaar.7 intro_aar.7 from {}, pages of another version",
        man.display()
    );
    assert!(stderr.contains(&said), "no {said:?} in:\n{stderr}");
    // A third install, with nothing stale left, says nothing of pages.
    let stderr = install();
    assert!(!stderr.contains("pages of another version"), "{stderr}");
}

/// Every file under `dir`, folders included.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.symlink_metadata().unwrap().is_dir() {
            all.extend(walk(&p));
        }
        all.push(p);
    }
    all
}

/// scripts/setup (which demo and test run first) as a user runs it on Debian, whose PATH holds no
/// /sbin or /usr/sbin (/usr/local/bin:/usr/bin:/bin), where ldconfig is: it ended at once with
/// "ldconfig: command not found" (127), before installing anything. Here apt-get and sudo are
/// stand-ins that say when they run (this machine has what setup installs), and rustup one that
/// does nothing (its toolchains are no part of this).
#[test]
fn setup_runs_with_a_users_path_without_sbin() {
    let dir = scratch("packaging-setup-path");
    for tool in ["apt-get", "sudo"] {
        aar_testkit::write_script(
            &dir.join(tool),
            &format!("#!/bin/sh\necho \"stand-in {tool} ran: $*\" >&2\nexit 99\n"),
        );
    }
    aar_testkit::write_script(&dir.join("rustup"), "#!/bin/sh\nexit 0\n");
    let cargo = std::path::PathBuf::from(std::env::var_os("CARGO").expect("CARGO, set by cargo test"));
    let path = format!("{}:{}:/usr/local/bin:/usr/bin:/bin", dir.display(), cargo.parent().unwrap().display());
    let out = Command::new(root().join("scripts/setup")).current_dir(root()).env("PATH", &path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("stand-in"), "this machine lacks what scripts/setup installs: run it first. {stderr}");
    assert!(out.status.success(), "PATH={path}: {:?}: {stderr}", out.status);
}

/// scripts/setup on a fresh Debian or Ubuntu machine, whose cargo packages are all older than the
/// minimum Rust version (bookworm's is Rust 1.63, its cargo calling itself 0.66), and which has no
/// rustup: setup installs rustup and the stable toolchain, from static.rust-lang.org, running
/// rustup-init only when it matches its published SHA-256, and says so when it cannot. Here
/// apt-get, sudo and curl are stand-ins (curl "downloads" a stand-in rustup-init, which makes
/// stand-in rustup, cargo and rustc in `CARGO_HOME`), and nothing leaves the test's folder.
#[test]
fn setup_without_rustup_installs_it_and_checks_what_it_downloads() {
    let dir = scratch("packaging-setup-rust");
    let standins = dir.join("standins");
    std::fs::create_dir(&standins).unwrap();
    for tool in ["apt-get", "sudo"] {
        aar_testkit::write_script(
            &standins.join(tool),
            &format!("#!/bin/sh\necho \"stand-in {tool} ran: $*\" >&2\nexit 99\n"),
        );
    }
    aar_testkit::write_script(
        &standins.join("curl"),
        "#!/bin/sh\nout=''; url=''\n\
         while [ $# -gt 0 ]; do case $1 in -o|--proto) [ \"$1\" = -o ] && out=$2; shift 2 ;; -*) shift ;; *) url=$1; shift ;; esac; done\n\
         echo \"stand-in curl: $url\" >&2\n\
         [ -n \"$OFFLINE\" ] && { echo 'curl: (6) Could not resolve host' >&2; exit 6; }\n\
         case $url in\n\
         */rustup-init) cp \"$STANDINS/rustup-init.payload\" \"$out\" ;;\n\
         */rustup-init.sha256) if [ -n \"$BAD_SHA\" ]; then echo '00  rustup-init' >\"$out\"; else sha256sum \"$STANDINS/rustup-init.payload\" >\"$out\"; fi ;;\n\
         *) exit 22 ;;\n\
         esac\n",
    );
    std::fs::write(
        standins.join("rustup-init.payload"),
        "#!/bin/sh\necho \"stand-in rustup-init ran: $*\" >&2\nbin=${CARGO_HOME:?}/bin\nmkdir -p \"$bin\"\n\
         printf '#!/bin/sh\\necho \"rustc 9.0.0 (stand-in)\"\\n' >\"$bin/rustc\"\n\
         printf '#!/bin/sh\\necho \"cargo 9.0.0 (stand-in)\"\\n' >\"$bin/cargo\"\n\
         printf '#!/bin/sh\\ncase \"$*\" in \"component list\"*) printf \"miri\\\\nrust-src\\\\n\" ;; esac\\n' >\"$bin/rustup\"\n\
         chmod +x \"$bin/rustc\" \"$bin/cargo\" \"$bin/rustup\"\n",
    )
    .unwrap();
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let msrv = manifest.lines().find_map(|l| l.strip_prefix("rust-version = \"")).unwrap().trim_end_matches('"');
    // Debian bookworm's toolchain, as apt-get installs it.
    let old = dir.join("bookworm");
    std::fs::create_dir(&old).unwrap();
    aar_testkit::write_script(&old.join("cargo"), "#!/bin/sh\necho 'cargo 0.66.0'\n");
    aar_testkit::write_script(&old.join("rustc"), "#!/bin/sh\necho 'rustc 1.63.0'\n");
    let dist = format!("https://static.rust-lang.org/rustup/dist/{}-unknown-linux-gnu", std::env::consts::ARCH);
    let setup = |case: &str, toolchain: &str, env: &[(&str, &str)]| {
        let cargo_home = dir.join(case);
        let path = format!("{}:{toolchain}/usr/local/bin:/usr/bin:/bin", standins.display());
        let out = Command::new(root().join("scripts/setup"))
            .current_dir(root())
            .env("PATH", &path)
            .env("HOME", &dir)
            .env("CARGO_HOME", &cargo_home)
            .env("STANDINS", &standins)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !stderr.contains("stand-in apt-get"),
            "{case}: this machine lacks what scripts/setup installs: {stderr}"
        );
        (out.status.code(), stderr, cargo_home.join("bin/rustc").exists())
    };
    // No Rust at all, or bookworm's: rustup is installed, checked, with the stable toolchain.
    for (case, toolchain, found) in [
        ("none", String::new(), String::new()),
        ("old", format!("{}:", old.display()), format!("; {}/rustc is Rust 1.63.0", old.display())),
    ] {
        let (code, stderr, installed) = setup(case, &toolchain, &[]);
        assert_eq!(code, Some(0), "{case}: {stderr}");
        let said = format!(
            "aar setup: installing rustup and the stable Rust toolchain into {} (aar needs Rust {msrv} or newer{found})",
            dir.join(case).display()
        );
        assert!(stderr.contains(&said), "{case}: no {said:?} in: {stderr}");
        assert!(stderr.contains(&format!("stand-in curl: {dist}/rustup-init\n")), "{case}: {stderr}");
        assert!(
            stderr.contains("stand-in rustup-init ran: -y -q --profile default --default-toolchain stable"),
            "{case}: {stderr}"
        );
        assert!(installed, "{case}: {stderr}");
    }
    // A download that does not match its SHA-256 is not run; no network: said, and nothing run.
    let (code, stderr, installed) = setup("bad-sha", "", &[("BAD_SHA", "1")]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "aar setup: the rustup-init downloaded from {dist} does not match its published SHA-256; it was not run"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("rustup-init ran") && !installed, "{stderr}");
    let (code, stderr, installed) = setup("offline", "", &[("OFFLINE", "1")]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "aar setup: could not download rustup from {dist}; nothing more was installed: install Rust {msrv} or newer"
        )),
        "{stderr}"
    );
    assert!(!installed, "{stderr}");
}

/// scripts/build-release (which install, demo and the benchmarks call) takes FILE first: without
/// one it ended on bash's own "1: usage: ..." words, and `--help` or an option in FILE's place
/// built the workspace for minutes before looking for a file of that name. Here `cargo` is a
/// stand-in that says when it runs.
#[test]
fn build_release_takes_a_file_first_and_builds_nothing_without_one() {
    let dir = scratch("packaging-build-release");
    aar_testkit::write_script(&dir.join("cargo"), "#!/bin/sh\necho 'stand-in cargo ran' >&2\nexit 1\n");
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default());
    let run = |args: &[&str]| {
        let out = Command::new(root().join("scripts/build-release")).args(args).env("PATH", &path).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let usage = "usage: scripts/build-release FILE [cargo build arguments]";
    for help in ["--help", "-h"] {
        let (code, stdout, stderr) = run(&[help]);
        assert_eq!(code, Some(0), "{help}: {stdout}{stderr}");
        assert!(stdout.starts_with(usage) && stderr.is_empty(), "{help}: {stdout}{stderr}");
    }
    for args in [&[][..], &[""], &["-p", "aar"], &["--release"]] {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{args:?}: a folder printed: {stdout}");
        assert!(
            stderr.starts_with("aar build-release: ") && stderr.contains(usage) && stderr.contains("nothing was built"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("cargo ran"), "{args:?}: cargo ran: {stderr}");
    }
}

/// Environment Modules 3.2, a Cray XC's `module`, runs the module that `module swap` brings in
/// with mode switch2, where `module-info mode load` is false (Modules 4 and 5, and Lmod, say
/// load): the Tcl modulefile did not make its record folder then, nor check the one in /tmp.
/// Here tclsh runs the modulefile with the modes and `module-info` answers of Modules 3.2: the
/// folder is made on load and on switch2, and in no other mode.
#[test]
fn the_tcl_modulefile_makes_its_folder_when_modules_3_2_swaps_it_in() {
    let dir = scratch("packaging-tcl-modes");
    // Modules 3.2's module-info mode X: true for the current mode, and for "switch" in all three
    // switch modes; remove is its unload. The commands that change the environment print it.
    let stub = "set mode [lindex $argv 1]\n\
        proc module-info {what args} { global mode\n\
            if {$what ne \"mode\"} { error \"module-info $what\" }\n\
            if {[llength $args] == 0} { return $mode }\n\
            set m [lindex $args 0]\n\
            return [expr {$m eq $mode || ($m eq \"switch\" && [string match switch? $mode])}] }\n\
        proc module-whatis {args} {}\n\
        proc conflict {args} {}\n\
        proc prepend-path {var value} { puts \"prepend-path $var $value\" }\n\
        proc append-path {var value} { puts \"append-path $var $value\" }\n\
        proc setenv {var value} { puts \"setenv $var $value\" }\n\
        source [lindex $argv 0]\n\
        if {$mode eq \"help\"} { ModulesHelp }\n";
    std::fs::write(dir.join("modules-3.2.tcl"), stub).unwrap();
    for mode in ["load", "switch2", "remove", "switch1", "switch3", "display", "help", "whatis"] {
        let scratch_dir = dir.join(format!("scratch-{mode}"));
        let out = Command::new("tclsh")
            .arg(dir.join("modules-3.2.tcl"))
            .arg(root().join("modulefiles/tcl/aar.in"))
            .arg(mode)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("SCRATCH", &scratch_dir)
            .output()
            .expect("tclsh (Debian's tcl, which lmod brings) is missing: run scripts/setup");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: the modulefile failed under tclsh:\n{stdout}\n{stderr}");
        assert!(stdout.contains("prepend-path LD_PRELOAD @PREFIX@/lib/libaar.so\n"), "{mode}: {stdout}");
        let records = scratch_dir.join("aar-records");
        assert!(stdout.contains(&format!("setenv AAR_OUTPUT_DIR {}\n", records.display())), "{mode}: {stdout}");
        let made = matches!(mode, "load" | "switch2");
        assert_eq!(records.is_dir(), made, "{mode}: the record folder is made on load (and switch2) only");
    }
}

/// Environment Modules 5, whose modulecmd.tcl (a real Tcl interpreter, unlike Lmod's reading of
/// Tcl) is the `module` of most Cray XC sites, as scripts/setup unpacks it beside Lmod.
const EM_INIT: &str = "/opt/environment-modules/usr/share/modules/init/bash";

/// The Tcl modulefile under Environment Modules 5 itself: `module display`, `help` and `whatis`
/// say what a load does (and make no folder), the load sets each variable the Lmod tests expect and
/// preloads the library into a uGNI program, a second load changes nothing, another version is
/// refused (`conflict`) and swapped in with `module switch`, the unload gives back the environment
/// as it was, and the fix the relative-SCRATCH line names (`module reload aar` is no command of
/// Modules 3.2, and 4 and 5 refuse a name after it) runs and takes the new setting.
#[test]
fn environment_modules_5_loads_the_tcl_modulefile_and_unload_takes_everything_back() {
    if !Path::new(EM_INIT).exists() {
        eprintln!(
            "note: {EM_INIT} is missing (scripts/setup unpacks Environment Modules 5 there): not tested under it"
        );
        return;
    }
    let dir = scratch("packaging-envmodules");
    let prefix = dir.join("prefix");
    let out = install(&prefix, &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let version = std::fs::read_dir(prefix.join("modulefiles/tcl/aar")).unwrap().next().unwrap().unwrap().file_name();
    let version = version.to_str().unwrap();
    // Another version of aar, in a folder of its own, for the conflict and the swap.
    let tcl = std::fs::read_to_string(prefix.join("modulefiles/tcl/aar").join(version)).unwrap();
    std::fs::create_dir_all(dir.join("other/aar")).unwrap();
    std::fs::write(dir.join("other/aar/0.0.1"), tcl.replace(version, "0.0.1")).unwrap();
    let work = dir.join("work");
    std::fs::create_dir(&work).unwrap();
    let scratch_dir = dir.join("scratch");
    let log = dir.join("emu.jsonl");
    let script = format!(
        "source {EM_INIT}\n\
         module use {prefix}/modulefiles/tcl\n\
         module use --append {dir}/other\n\
         snapshot() {{ env | grep -v '^\\(LOADEDMODULES\\|_LMFILES_\\|__MODULES_\\)' | LC_ALL=C sort > {dir}/env-$1; }}\n\
         snapshot before\n\
         module display aar 2>&1 | sed 's/^/display: /'\n\
         test -e {scratch} && echo 'display made a folder'\n\
         module help aar 2>&1 | sed 's/^/help: /'\n\
         module whatis aar 2>&1 | sed 's/^/whatis: /'\n\
         module load aar || exit 3\n\
         for v in LD_PRELOAD ASAN_OPTIONS AAR_PRELOAD AAR_ROOT PATH CPATH LIBRARY_PATH PKG_CONFIG_PATH MANPATH \\\n\
             AAR_OUTPUT_DIR AAR_OUTPUT_DIR_BY_MODULE; do echo \"$v=[${{!v}}]\"; done\n\
         test -d \"$AAR_OUTPUT_DIR\" && echo made\n\
         module load aar || exit 4\n\
         echo \"again LD_PRELOAD=[$LD_PRELOAD] PATH=[$PATH] MANPATH=[$MANPATH]\"\n\
         AAR_PAPI_EVENTS={events} AAR_EMU_LOG={log} {driver} fma 64 3 0 rdma 65536 4 0 || exit 5\n\
         echo \"aar=$(command -v aar)\"\n\
         module load aar/0.0.1 2>/dev/null && exit 6\n\
         echo \"refused $(module -t list 2>&1 | grep aar) LD_PRELOAD=[$LD_PRELOAD]\"\n\
         module switch aar aar/0.0.1 || exit 7\n\
         echo \"switched $(module -t list 2>&1 | grep aar) LD_PRELOAD=[$LD_PRELOAD]\"\n\
         module switch aar aar/{version} || exit 8\n\
         module unload aar || exit 9\n\
         snapshot after\n\
         diff {dir}/env-before {dir}/env-after && echo 'unload gave the environment back'\n\
         cd {work} && SCRATCH=scratch module load aar 2> {dir}/said || exit 10\n\
         echo \"relative=$AAR_OUTPUT_DIR\"\n\
         advice=$(sed -n 's/^aar: SCRATCH is a relative path .*, then \\(.*\\)\\.$/\\1/p' {dir}/said)\n\
         echo \"advice=$advice\"\n\
         eval \"$advice\" || exit 11\n\
         echo \"advised=$AAR_OUTPUT_DIR\"\n\
         module unload aar\n",
        prefix = prefix.display(),
        dir = dir.display(),
        scratch = scratch_dir.display(),
        work = work.display(),
        events = sde_events_setting(),
        log = log.display(),
        driver = program("driver").display(),
    );
    let (stdout, stderr) = login_shell(&script, &dir, &dir, &[("SCRATCH", &scratch_dir)], "Environment Modules 5");
    let p = prefix.display();
    let records = scratch_dir.join("aar-records");
    let r = records.display();
    for want in [
        format!("display: prepend-path\tLD_PRELOAD {p}/lib/libaar.so\n"),
        format!("display: setenv\t\tAAR_OUTPUT_DIR {r}\n"),
        format!("help: {p}/share/doc/aar/README.md\n"),
        format!(" aar/{version}: aar {version}: application-aware routing (LD_PRELOAD over uGNI and DMAPP)"),
        format!("LD_PRELOAD=[{p}/lib/libaar.so]\n"),
        "ASAN_OPTIONS=[verify_asan_link_order=0]\n".to_string(),
        format!("AAR_PRELOAD=[{p}/lib/libaar.so]\n"),
        format!("AAR_ROOT=[{p}]\n"),
        format!("PATH=[{p}/bin:/usr/local/bin:/usr/bin:/bin]\n"),
        format!("CPATH=[{p}/include]\n"),
        format!("LIBRARY_PATH=[{p}/lib]\n"),
        format!("PKG_CONFIG_PATH=[{p}/lib/pkgconfig]\n"),
        // man's default path stays behind the pages (the trailing ':').
        format!("MANPATH=[{p}/share/man:]\n"),
        format!("AAR_OUTPUT_DIR=[{r}]\nAAR_OUTPUT_DIR_BY_MODULE=[{r}]\nmade\n"),
        // A second load is no second entry.
        format!(
            "again LD_PRELOAD=[{p}/lib/libaar.so] PATH=[{p}/bin:/usr/local/bin:/usr/bin:/bin] MANPATH=[{p}/share/man:]"
        ),
        format!("aar={p}/bin/aar\n"),
        format!("refused aar/{version} LD_PRELOAD=[{p}/lib/libaar.so]\n"),
        format!("switched aar/0.0.1 LD_PRELOAD=[{p}/lib/libaar.so]\n"),
        "unload gave the environment back\n".to_string(),
        format!("relative={}/aar-records\n", dir.display()),
        "advice=module unload aar; module load aar\n".to_string(),
        format!("advised={r}\n"),
    ] {
        assert!(stdout.contains(&want), "no {want:?} in:\n{stdout}\n{stderr}");
    }
    assert!(!stdout.contains("display made a folder"), "{stdout}");
    assert!(prefix.join("share/doc/aar/README.md").exists(), "module help names a README that is not there");
    // The library was preloaded into the job step and left its record where the module said.
    let modes: Vec<u64> = read_jsonl(&log).iter().map(|v| v["dlvr_mode"].as_u64().unwrap()).collect();
    assert_eq!(&modes[..3], &[AD3; 3], "small messages routed High Bias:\n{stderr}");
    assert_eq!(read_records(&records).len(), 1, "one record in $SCRATCH/aar-records:\n{stderr}");
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "the module made {left:?} in the folder it was loaded in");
}

/// The loader splits LD_PRELOAD at ' ' as at ':', so `export LD_PRELOAD="$LD_PRELOAD /x/libtool.so"`
/// after `module load aar` joins the module's entry and the tool's into one ':' entry: the unload,
/// which takes back ':' entries only (no module command edits a variable on unload), left libaar.so
/// preloaded without a word, routing every job with no module loaded. Under Lmod (both modulefiles)
/// and Environment Modules 5 the unload now says so and gives the command that takes it out, which
/// works (a ' in the other library's path included); an entry of its own gets no such line.
#[test]
fn an_unload_says_how_to_take_out_a_preload_entry_joined_to_another_by_a_space() {
    let dir = scratch("packaging-glued-preload");
    let prefix = dir.join("prefix");
    let out = install(&prefix, &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Another library, by a path with a quote, so that the advice's quoting is used.
    let libm = Command::new("cc").arg("-print-file-name=libm.so.6").output().unwrap();
    let libm = String::from_utf8_lossy(&libm.stdout).trim().to_string();
    let other = dir.join("it's.so");
    std::os::unix::fs::symlink(&libm, &other).unwrap();
    let lib = prefix.join("lib/libaar.so");
    let mut flavours = vec![(LMOD_INIT, "lmod"), (LMOD_INIT, "tcl")];
    if Path::new(EM_INIT).exists() {
        flavours.push((EM_INIT, "tcl"));
    }
    for (init, flavour) in flavours {
        let said = dir.join("said");
        let script = format!(
            "source {init}\n\
             module use {prefix}/modulefiles/{flavour}\n\
             module load aar || exit 3\n\
             export LD_PRELOAD=\"$LD_PRELOAD {other}\"\n\
             module unload aar 2> {said} || exit 4\n\
             echo \"unloaded LD_PRELOAD=[$LD_PRELOAD]\"\n\
             eval \"$(sed -n 's/^aar: LD_PRELOAD keeps .*\\. To take it out: //p' {said})\" || exit 5\n\
             echo \"advised LD_PRELOAD=[$LD_PRELOAD]\"\n\
             module load aar || exit 6\n\
             module unload aar 2>> {said} || exit 7\n\
             echo \"apart LD_PRELOAD=[$LD_PRELOAD]\"\n",
            prefix = prefix.display(),
            other = other.display(),
            said = said.display(),
        );
        let what = format!("{init} {flavour}");
        let (stdout, _) = login_shell(&format!("set -e\n{script}"), &dir, &dir, &[], &what);
        let said = std::fs::read_to_string(&said).unwrap();
        let (lib, other) = (lib.display(), other.display());
        assert!(
            said.starts_with(&format!(
                "aar: LD_PRELOAD keeps {lib} after the unload: a space joins it to another library ({lib} {other})"
            )),
            "{what}: no line about the entry left behind: {said}"
        );
        assert_eq!(said.matches("LD_PRELOAD keeps").count(), 1, "{what}: an entry of its own is no such case: {said}");
        for want in [
            format!("unloaded LD_PRELOAD=[{lib} {other}]\n"),
            format!("advised LD_PRELOAD=[{other}]\n"),
            format!("apart LD_PRELOAD=[{other}]\n"),
        ] {
            assert!(stdout.contains(&want), "{what}: no {want:?} in:\n{stdout}\n{said}");
        }
    }
}

/// Many Cray sites log their users in with tcsh, where `module` writes csh for the shell to run.
/// The Lmod modulefile made its record folder with execute{}, whose command is run by the user's
/// shell: csh took its `2>/dev/null` for an argument `2` (and stdout to /dev/null), so each load
/// made a folder `2` in the folder it was loaded in. Under tcsh, with Lmod (both modulefiles) and
/// Environment Modules 5 (the Tcl one): the load makes `$SCRATCH/aar-records` and nothing where it
/// is loaded, the command the unload gives for a library joined to ours by a space is csh that
/// works, and the unload gives the environment back.
#[test]
fn the_modules_load_and_unload_from_tcsh() {
    assert!(have("tcsh"), "tcsh is missing: run scripts/setup");
    let dir = scratch("packaging-tcsh");
    let prefix = dir.join("prefix");
    let out = install(&prefix, &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let libm = Command::new("cc").arg("-print-file-name=libm.so.6").output().unwrap();
    let other = String::from_utf8_lossy(&libm.stdout).trim().to_string();
    let lib = prefix.join("lib/libaar.so");
    let mut flavours = vec![("/usr/share/lmod/lmod/init/tcsh", "lmod"), ("/usr/share/lmod/lmod/init/tcsh", "tcl")];
    let em_tcsh = EM_INIT.replace("/init/bash", "/init/tcsh");
    if Path::new(&em_tcsh).exists() {
        flavours.push((&em_tcsh, "tcl"));
    }
    for (i, (init, flavour)) in flavours.into_iter().enumerate() {
        let what = format!("{init} {flavour}");
        let work = dir.join(format!("work-{i}"));
        let scratch_dir = dir.join(format!("scratch-{i}"));
        std::fs::create_dir(&work).unwrap();
        // The module commands' own bookkeeping is left out of the comparison.
        let snapshot = format!(
            "env | grep -Ev '^(LOADEDMODULES|_LMFILES_|__MODULES_|__LMOD_REF_COUNT_|_ModuleTable)' | LC_ALL=C sort > {}/env",
            dir.display()
        );
        let script = format!(
            "source {init}\n\
             module use {prefix}/modulefiles/{flavour}\n\
             {snapshot}-before-{i}\n\
             module load aar\n\
             echo \"loaded LD_PRELOAD=[$LD_PRELOAD] AAR_OUTPUT_DIR=[$AAR_OUTPUT_DIR]\"\n\
             setenv LD_PRELOAD \"$LD_PRELOAD {other}\"\n\
             module unload aar >& {dir}/said-{i}\n\
             sed -n 's/^aar: LD_PRELOAD keeps .*\\. To take it out: //p' {dir}/said-{i} > {dir}/fix-{i}\n\
             source {dir}/fix-{i}\n\
             echo \"advised LD_PRELOAD=[$LD_PRELOAD]\"\n\
             unsetenv LD_PRELOAD\n\
             {snapshot}-after-{i}\n\
             diff {dir}/env-before-{i} {dir}/env-after-{i} && echo 'unload gave the environment back'\n",
            prefix = prefix.display(),
            dir = dir.display(),
        );
        std::fs::write(dir.join(format!("script-{i}.csh")), &script).unwrap();
        let out = Command::new("tcsh")
            .arg("-f")
            .arg(dir.join(format!("script-{i}.csh")))
            .current_dir(&work)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &dir)
            .env("SCRATCH", &scratch_dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let records = scratch_dir.join("aar-records");
        for want in [
            format!("loaded LD_PRELOAD=[{}] AAR_OUTPUT_DIR=[{}]\n", lib.display(), records.display()),
            format!("advised LD_PRELOAD=[{other}]\n"),
            "unload gave the environment back\n".to_string(),
        ] {
            assert!(stdout.contains(&want), "{what}: no {want:?} in:\n{stdout}\n{stderr}");
        }
        assert!(records.is_dir(), "{what}: the load did not make {}", records.display());
        let left: Vec<_> = std::fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "{what}: the module made {left:?} in the folder it was loaded in");
    }
}
