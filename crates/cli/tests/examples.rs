//! The batch-script examples (examples/ab-slurm.sbatch, examples/ab-aprun.pbs) cannot rot
//! silently: they parse (`bash -n`), every `aar` subcommand and option they use exists in the
//! real binary's help, they build examples/cray/ab_exchange.c (the source path they compile is
//! there, from examples/ where they are submitted) as examples/cray/Makefile does, with the
//! cray-pmi and cray-ugni flags of pkg-config, run it as two ranks on two nodes with only options
//! its usage text names, and the AAR_* settings they export parse without a warning in the real
//! libaar.so (its own self-check, through `aar doctor --json`). Run outside a batch job, they stop
//! first with a message that says so.

use aar_testkit::{libaar, root};
use std::process::Command;

const SCRIPTS: [&str; 2] = ["examples/ab-slurm.sbatch", "examples/ab-aprun.pbs"];

fn aar_help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_aar")).args(args).arg("--help").output().unwrap();
    assert!(out.status.success(), "aar {args:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The script's lines without comments (a `#` that starts a word), joined across `\` ends.
fn commands(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let code = match line.find(" #") {
            _ if line.trim_start().starts_with('#') => "",
            Some(i) => &line[..i],
            None => line,
        };
        match code.trim_end().strip_suffix('\\') {
            Some(head) => current.push_str(head),
            None => {
                current.push_str(code);
                lines.push(std::mem::take(&mut current));
            }
        }
    }
    lines
}

/// `line` with each double-quoted string one word, `"..."`: a message that names the program is
/// not a use of it, and a quoted argument stays one argument.
fn quoted_as_words(line: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for c in line.chars() {
        match (c, inside) {
            ('"', false) => {
                inside = true;
                out.push_str("\"...\"");
            }
            ('"', true) => inside = false,
            (_, true) => {}
            (c, false) => out.push(c),
        }
    }
    out
}

/// Each use of `program` in the script: the words after it, up to a shell operator.
fn invocations(text: &str, program: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for line in commands(text) {
        let line = quoted_as_words(&line);
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            // `module load aar` names the module, and `command -v aar` asks whether the command
            // exists: neither runs it.
            if *w == program && (i == 0 || !["load", "-v"].contains(&words[i - 1])) {
                let args = words[i + 1..]
                    .iter()
                    .take_while(|w| !["||", "&&", ";", "|", ")", "then"].contains(w))
                    .map(|w| w.to_string())
                    .collect();
                found.push(args);
            }
        }
    }
    found
}

#[test]
fn the_batch_scripts_parse_and_use_only_what_exists() {
    let top = aar_help(&[]);
    let program_c = std::fs::read_to_string(root().join("examples/cray/ab_exchange.c")).unwrap();
    let usage = program_c.lines().find(|l| l.contains("usage: ab_exchange")).expect("ab_exchange.c usage line");
    for script in SCRIPTS {
        let path = root().join(script);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{script}: {e}"));
        let st = Command::new("bash").arg("-n").arg(&path).status().unwrap();
        assert!(st.success(), "bash -n {script} failed");
        for needed in [
            "module load aar",
            "CRAYPE_LINK_TYPE=dynamic",
            "AAR_AB=ADAPTIVE0,ADAPTIVE3,auto",
            "AAR_AB_ORDER=shuffled:7",
            "AAR_OUTPUT_DIR=",
            "cc -O2 -o ab_exchange cray/ab_exchange.c $(pkg-config --cflags --libs cray-pmi cray-ugni)",
            "aar doctor --ranks 2 ./ab_exchange",
            "aar report \"$AAR_OUTPUT_DIR\" --plot \"ab-$",
        ] {
            assert!(text.contains(needed), "{script} lacks {needed:?}");
        }
        let uses = invocations(&text, "aar");
        let subcommands: Vec<&str> = uses.iter().filter_map(|a| a.first().map(String::as_str)).collect();
        assert!(subcommands.contains(&"doctor") && subcommands.contains(&"report"), "{script}: {uses:?}");
        for args in &uses {
            let sub = &args[0];
            assert!(
                top.lines().any(|l| l.split_whitespace().next() == Some(sub.as_str())),
                "{script}: aar {sub} is not a subcommand of aar:\n{top}"
            );
            let help = aar_help(&[sub]);
            for option in args.iter().filter(|a| a.starts_with("--")) {
                let name = option.split('=').next().unwrap();
                assert!(
                    help.contains(&format!("{name} ")),
                    "{script}: aar {sub} {name} is not in `aar {sub} --help`:\n{help}"
                );
            }
        }
        // What they compile is there from examples/, and only what they compile.
        for args in invocations(&text, "cc") {
            for source in args.iter().filter(|a| a.ends_with(".c")) {
                assert!(root().join("examples").join(source).is_file(), "{script}: cc {source}: no examples/{source}");
            }
        }
        assert!(!text.contains("iterations.c") && !text.contains("./iterations"), "{script} still names iterations.c");
        // ab_exchange pairs ranks across nodes: two ranks, one on each of two nodes.
        // Each job's log, plots and records are its own: a fixed name is overwritten by the next job.
        for line in text.lines().filter(|l| l.starts_with("#SBATCH --output") || l.starts_with("#SBATCH --error")) {
            assert!(line.contains("%j"), "{script}: {line} is one file for every job");
        }
        assert!(!text.lines().any(|l| l.starts_with("#PBS -o")), "{script}: #PBS -o is one file for every job");
        let reports: Vec<String> =
            commands(&text).into_iter().filter(|l| l.trim_start().starts_with("aar report")).collect();
        assert_eq!(reports.len(), 1, "{script}: {reports:?}");
        let words: Vec<&str> = reports[0].split_whitespace().collect();
        for plot in ["--plot", "--html"] {
            let name = words.iter().position(|w| *w == plot).and_then(|i| words.get(i + 1)).expect(plot);
            assert!(name.contains("$SLURM_JOB_ID") || name.contains("$job_id"), "{script}: {plot} {name}");
        }
        let layout = if script.ends_with(".sbatch") {
            ["#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1"].as_slice()
        } else {
            ["aprun -n 2 -N 1 ./ab_exchange"].as_slice()
        };
        for needed in layout {
            assert!(text.contains(needed), "{script} lacks {needed:?}");
        }
        let runs = invocations(&text, "./ab_exchange");
        assert!(!runs.is_empty(), "{script} never runs ./ab_exchange");
        for option in runs.iter().flatten().filter(|a| a.starts_with("--")) {
            assert!(usage.contains(option.as_str()), "{script}: ab_exchange {option} is not in {usage:?}");
        }
    }
}

#[test]
fn the_settings_the_scripts_export_parse_in_the_real_library_without_a_warning() {
    let libaar = libaar();
    for script in SCRIPTS {
        let text = std::fs::read_to_string(root().join(script)).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_aar"));
        cmd.args(["doctor", "--json", "--lib"]).arg(&libaar);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AAR_")) {
            cmd.env_remove(k);
        }
        let mut exported = Vec::new();
        for line in commands(&text) {
            let Some((name, value)) = line.trim().strip_prefix("export ").and_then(|a| a.split_once('=')) else {
                continue;
            };
            // Values with shell expansions (folders of the job) are not settings to parse.
            if name.starts_with("AAR_") && !value.contains('$') {
                cmd.env(name, value);
                exported.push(name.to_string());
            }
        }
        assert!(exported.contains(&"AAR_AB".to_string()) && exported.contains(&"AAR_AB_ORDER".to_string()));
        let out = cmd.output().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("aar doctor --json");
        let sc = &doc["selfcheck"];
        assert_eq!(sc["warnings"], serde_json::json!([]), "{script}: {}", sc["warnings"]);
        assert_eq!(sc["unknown_variables"], serde_json::json!([]), "{script}");
        assert_eq!(sc["settings"]["ab"], "ADAPTIVE0,ADAPTIVE3,auto", "{script}");
        assert_eq!(sc["settings"]["ab_order"], "shuffled:7", "{script}");
    }
}

/// Run outside a batch job (`bash ab-slurm.sbatch` on a login node, where the modules load), a
/// script stops first, saying it is not in a batch job, how to submit it and what to set to try
/// it outside one, not with set -u's "SLURM_SUBMIT_DIR: unbound variable"; it builds nothing.
#[test]
fn the_batch_scripts_run_outside_a_job_say_how_to_submit_them() {
    let dir = std::env::temp_dir().join(format!("aar-examples-outside-a-job-{}", std::process::id()));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // A login node's commands: module and aar succeed, the compiler and launchers log their call.
    let log = dir.join("calls.log");
    for name in ["module", "aar", "pkg-config", "cc", "srun", "aprun"] {
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho {name} >>'{}'\n", log.display())).unwrap();
        let st = Command::new("chmod").arg("+x").arg(&path).status().unwrap();
        assert!(st.success());
    }
    for (script, submit, set) in [
        ("ab-slurm.sbatch", "sbatch ab-slurm.sbatch", "set SLURM_SUBMIT_DIR"),
        ("ab-aprun.pbs", "qsub ab-aprun.pbs", "set PBS_O_WORKDIR"),
    ] {
        let out = Command::new("bash")
            .arg(root().join("examples").join(script))
            .current_dir(&dir)
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("HOME", &dir)
            .env("AAR_PRELOAD", "libaar.so")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{script}: {stderr}");
        assert!(
            stderr.starts_with(&format!("{script}: ")) && stderr.contains("is not set: this is not a batch job"),
            "{script}: {stderr}"
        );
        assert!(stderr.contains(submit) && stderr.contains(set), "{script}: {stderr}");
        assert!(!stderr.contains("unbound variable"), "{script}: {stderr}");
        assert!(!log.exists(), "{script} ran {:?} before it stopped", std::fs::read_to_string(&log));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// examples/pingpong.c built `-fno-pie -no-pie` at `dir/name`, linked against the libugni.so of
/// `libdir` (-ldl for ugni_pair.h's dlsym before glibc 2.34; -Wpedantic: the lookup's result is
/// turned into a function pointer as ISO C allows). Checks that the program is not a PIE.
fn pingpong_without_pie(dir: &std::path::Path, name: &str, libdir: &std::path::Path) -> std::path::PathBuf {
    let program = dir.join(name);
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-fno-pie", "-no-pie", "-I"])
        .arg(root().join("cabi"))
        .arg(root().join("examples/pingpong.c"))
        .arg("-L")
        .arg(libdir)
        .args(["-lugni", "-ldl", "-o"])
        .arg(&program)
        .status()
        .expect("run cc");
    assert!(st.success(), "cc of examples/pingpong.c without PIE against {} failed", libdir.display());
    // e_type ET_EXEC (2), not ET_DYN (3): the build really is not position-independent.
    let elf = std::fs::read(&program).unwrap();
    assert_eq!(u16::from_le_bytes([elf[16], elf[17]]), 2, "{name} was built as a PIE");
    program
}

/// The uGNI examples' clock (ugni_pair.h) in a program built without -fPIE, over a libugni.so
/// that has the emulator's aar_emu_clock_ns and one that has not (a real libugni's case; here the
/// emulator with that one dynamic symbol renamed). Declared weak, its address was fixed at link
/// time: linked against the emulator, pingpong crashed (SIGSEGV) at its first timing over a
/// libugni without it; linked against one without it, it never used the simulated clock over the
/// emulator. Looked up at run time, it follows the library the program runs with.
#[test]
fn the_examples_clock_follows_the_libugni_they_run_with_in_a_build_without_pie() {
    let emulator = aar_testkit::libdir();
    let dir = aar_testkit::scratch("examples-clock-no-pie");
    let without = dir.join("without-clock");
    std::fs::create_dir_all(&without).unwrap();
    let mut lib = std::fs::read(emulator.join("libugni.so")).unwrap();
    let name = b"\0aar_emu_clock_ns\0";
    let at = lib.windows(name.len()).position(|w| w == name).expect("aar_emu_clock_ns in libugni.so") + name.len() - 2;
    lib[at] = b'X';
    std::fs::write(without.join("libugni.so"), lib).unwrap();

    let linked_with_clock = pingpong_without_pie(&dir, "pingpong-linked-with-clock", emulator);
    let linked_without_clock = pingpong_without_pie(&dir, "pingpong-linked-without-clock", &without);
    for program in [&linked_with_clock, &linked_without_clock] {
        for (libdir, clock) in
            [(emulator, "clock simulated (aar_emu_clock_ns)"), (without.as_path(), "clock CLOCK_MONOTONIC")]
        {
            let out = Command::new(program)
                .args(["--min", "64", "--max", "64", "--iters", "1"])
                .env("LD_LIBRARY_PATH", libdir)
                .env("AAR_EMU_SIM", "groups=1,placement=same-blade")
                .env_remove("LD_PRELOAD")
                .output()
                .unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            let run = format!("{} over {}", program.display(), libdir.display());
            assert!(out.status.success(), "{run}: {:?}\n{stdout}\n{stderr}", out.status);
            assert!(stdout.lines().next().unwrap_or("").ends_with(clock), "{run}: not {clock:?}:\n{stdout}");
            assert!(stdout.contains("pingpong: OK"), "{run}:\n{stdout}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// examples/shmem_ring.c refuses a --max whose 3 x --max + 8 bytes of symmetric heap do not fit,
/// saying how to fix it, and ends cleanly: the check computed 3 x --max + 8, which a --max near
/// 2^64 wrapped to a few bytes (0x5555555555555558 to 16), and the ring wrote past the heap
/// (SIGSEGV). A --max one word above what the heap holds is refused too, and one at it runs.
#[test]
fn shmem_ring_refuses_a_max_its_symmetric_heap_cannot_hold() {
    let lib = aar_testkit::libdir();
    let dir = aar_testkit::scratch("examples-shmem-ring-max");
    let program = dir.join("shmem_ring");
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root().join("cabi"))
        .arg(root().join("examples/shmem_ring.c"))
        .arg("-L")
        .arg(lib)
        .args(["-ldmapp", "-lugni", "-ldl", "-o"])
        .arg(&program)
        .status()
        .expect("run cc");
    assert!(st.success(), "cc of examples/shmem_ring.c failed");
    // A 64K heap holds --max (65536 - 8) / 3 = 21842, rounded down to 8-byte words: 21840.
    for (max, refused) in [("0x5555555555555558", true), ("21848", true), ("21840", false)] {
        let out = Command::new(&program)
            .args(["--min", "8", "--max", max, "--iters", "1"])
            .env("LD_LIBRARY_PATH", lib)
            .env("AAR_EMU_DMAPP_SHEAP", "64K")
            .env_remove("LD_PRELOAD")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if refused {
            assert_eq!(out.status.code(), Some(1), "--max {max}: {:?}\n{stderr}", out.status);
            assert!(
                stderr.starts_with("shmem_ring: --max ")
                    && stderr.contains("bytes of symmetric heap, there are 65536")
                    && stderr.contains("AAR_EMU_DMAPP_SHEAP"),
                "--max {max}: {stderr}"
            );
        } else {
            assert!(out.status.success(), "--max {max}: {:?}\n{stderr}", out.status);
            assert!(String::from_utf8_lossy(&out.stdout).contains("all data verified"), "--max {max}: {out:?}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// examples/NAME.c built with warnings as errors at `dir/NAME`, against the emulator's libugni.so
/// (and libdmapp.so for shmem_ring).
fn build_example(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let program = dir.join(name);
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I"])
        .arg(root().join("cabi"))
        .arg(root().join("examples").join(format!("{name}.c")))
        .arg("-L")
        .arg(aar_testkit::libdir())
        .args(if name == "shmem_ring" { ["-ldmapp", "-lugni", "-ldl"].as_slice() } else { &["-lugni", "-ldl"] })
        .arg("-o")
        .arg(&program)
        .status()
        .expect("run cc");
    assert!(st.success(), "cc of examples/{name}.c failed");
    program
}

/// `program ARGS` over the emulator, outside any job, with `env` added: (exit code, stdout, stderr).
fn run_example(program: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(program);
    cmd.args(args).env("LD_LIBRARY_PATH", aar_testkit::libdir());
    for var in ["LD_PRELOAD", "AAR_EMU_SIM", "AAR_EMU_JOB_DIR", "PMI_GNI_PTAG", "PMI_GNI_COOKIE", "PMI_GNI_DEV_ID"] {
        cmd.env_remove(var);
    }
    let out = cmd.envs(env.iter().copied()).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// Every option the examples' shared parser (ugni_pair.h) refuses is refused with one line that
/// names the program, the option and the value given, says what the option takes and what to type
/// instead, before the usage text, exit 2, with nothing run (no stdout). They got the usage text
/// alone. The value suggested is then accepted (the program runs), so the advice is true.
#[test]
fn the_examples_refuse_a_bad_option_saying_what_it_takes_and_what_to_type() {
    let dir = aar_testkit::scratch("examples-option-refusals");
    let programs: Vec<_> =
        ["pingpong", "iterations", "smallmsg", "shmem_ring"].iter().map(|n| (*n, build_example(&dir, n))).collect();
    let program = |name: &str| &programs.iter().find(|(n, _)| *n == name).unwrap().1;
    // (program, arguments, what the one line says after "PROGRAM: ", the arguments it suggests
    // instead: small runs, so that each one is run too).
    let cases: &[(&str, &[&str], &str, &[&str])] = &[
        (
            "pingpong",
            &["--max", "64", "--min", "0"],
            "--min 0 refused: --min takes 1 or more bytes; type e.g. --min 1;",
            &["--max", "64", "--min", "1", "--iters", "1"],
        ),
        (
            "pingpong",
            &["--min", "32", "--max", "16"],
            "--min 32 refused: --min may not be above --max, which is 16; type e.g. --min 16, or --max 32;",
            &["--min", "16", "--max", "16", "--iters", "1"],
        ),
        (
            "pingpong",
            &["--min", "32M"],
            "--min 32M refused: --min may not be above --max, which is 16M; type e.g. --min 16M, or --max 32M;",
            &["--min", "16M", "--iters", "1"],
        ),
        (
            "pingpong",
            &["--min", "64", "--max", "64", "--iters", "2000000"],
            "--iters 2000000 refused: --iters takes 1 to 1000000 round trips; type e.g. --iters 1000000;",
            &["--min", "64", "--max", "64", "--iters", "1"],
        ),
        (
            "pingpong",
            &["--min", "64", "--max", "64", "--iters", "1", "--dlvr-mode", "0x10000"],
            "--dlvr-mode 0x10000 refused: --dlvr-mode takes 0x0 to 0xffff; type e.g. --dlvr-mode 0xffff;",
            &["--min", "64", "--max", "64", "--iters", "1", "--dlvr-mode", "0x0"],
        ),
        (
            "pingpong",
            &["--min", "-1"],
            "--min -1 refused: not a number it can read; --min takes 1 or more bytes, decimal or 0x hex, \
             with an optional K or M (times 1024 or 1048576); type e.g. --min 16;",
            &["--min", "16", "--max", "64", "--iters", "1"],
        ),
        (
            "iterations",
            &["--iters", "1", "--bytes", "2G"],
            "--bytes 2G refused: not a number it can read; --bytes takes 1 to 1024M bytes, decimal or 0x hex, \
             with an optional K or M (times 1024 or 1048576); type e.g. --bytes 64K;",
            &["--iters", "1", "--bytes", "64K"],
        ),
        // The inputs tests/cray_examples.rs gives ab_exchange, which reads them with the same
        // parser (examples/cray/parse_size.h).
        (
            "iterations",
            &["--iters", "1", "--bytes", "-5"],
            "--bytes -5 refused: not a number it can read; --bytes takes 1 to 1024M bytes, decimal or 0x hex, \
             with an optional K or M (times 1024 or 1048576); type e.g. --bytes 64K;",
            &["--iters", "1", "--bytes", "0x10K"],
        ),
        (
            "iterations",
            &["--iters", "1", "--bytes", "5-"],
            "--bytes 5- refused: not a number it can read; --bytes takes 1 to 1024M bytes, decimal or 0x hex, \
             with an optional K or M (times 1024 or 1048576); type e.g. --bytes 64K;",
            &["--iters", "1", "--bytes", "16M"],
        ),
        (
            "iterations",
            &["--iters", "1", "--bytes", " -5"],
            "--bytes  -5 refused: not a number it can read; --bytes takes 1 to 1024M bytes, decimal or 0x hex, \
             with an optional K or M (times 1024 or 1048576); type e.g. --bytes 64K;",
            &["--iters", "1", "--bytes", "64K"],
        ),
        // strtoull skips blanks and takes a '+' before the digits: these ran as --bytes 64.
        (
            "iterations",
            &["--iters", "1", "--bytes", " 64"],
            "--bytes  64 refused: not a number it can read; --bytes takes 1 to 1024M bytes, decimal or 0x hex, \
             with an optional K or M (times 1024 or 1048576); type e.g. --bytes 64K;",
            &["--iters", "1", "--bytes", "64"],
        ),
        (
            "iterations",
            &["--iters", "1", "--bytes", "+64"],
            "--bytes +64 refused: not a number it can read; --bytes takes 1 to 1024M bytes, decimal or 0x hex, \
             with an optional K or M (times 1024 or 1048576); type e.g. --bytes 64K;",
            &["--iters", "1", "--bytes", "64"],
        ),
        (
            "iterations",
            &["--iters", "1", "--bytes", ""],
            "--bytes  refused: not a number it can read; --bytes takes 1 to 1024M bytes, decimal or 0x hex, \
             with an optional K or M (times 1024 or 1048576); type e.g. --bytes 64K;",
            &["--iters", "1", "--bytes", "64K"],
        ),
        (
            "iterations",
            &["--iters", "1", "--bytes", "17592186044417M"],
            "--bytes 17592186044417M refused: not a number it can read; --bytes takes 1 to 1024M bytes, decimal or 0x hex, \
             with an optional K or M (times 1024 or 1048576); type e.g. --bytes 64K;",
            &["--iters", "1", "--bytes", "64K"],
        ),
        (
            "iterations",
            &["--iters", "1", "--bytes", "1025M"],
            "--bytes 1025M refused: --bytes takes 1 to 1024M bytes; type e.g. --bytes 1024M;",
            &[],
        ),
        (
            "smallmsg",
            &["--count", "100", "--size", "5000"],
            "--size 5000 refused: --size takes 8 to 4K bytes; type e.g. --size 4K;",
            &["--count", "100", "--size", "4K"],
        ),
        (
            "smallmsg",
            &["--count", "100", "--mix", "foo"],
            "--mix foo refused: --mix takes smsg, fma or both; type e.g. --mix both;",
            &["--count", "100", "--mix", "both"],
        ),
        (
            "smallmsg",
            &["--count", "100", "--window", "65"],
            "--window 65 refused: --window takes 1 to 64 messages; type e.g. --window 64;",
            &["--count", "100", "--window", "64"],
        ),
        (
            "smallmsg",
            &["--count", "100", "--smsg-mode", "65536"],
            "--smsg-mode 65536 refused: --smsg-mode takes 0x0 to 0xffff; type e.g. --smsg-mode 0xffff;",
            &[],
        ),
        (
            "shmem_ring",
            &["--iters", "1", "--max", "12"],
            "--max 12 refused: --max takes 8 or more bytes, a multiple of 8; type e.g. --max 16;",
            &["--iters", "1", "--max", "16"],
        ),
        (
            "shmem_ring",
            &["--iters", "1", "--min", "4", "--max", "64"],
            "--min 4 refused: --min takes 8 or more bytes, a multiple of 8; type e.g. --min 8;",
            &["--iters", "1", "--min", "8", "--max", "64"],
        ),
        (
            "shmem_ring",
            &["--iters", "1", "--min", "24", "--max", "16"],
            "--min 24 refused: --min may not be above --max, which is 16; type e.g. --min 16, or --max 24;",
            &["--iters", "1", "--min", "16", "--max", "16"],
        ),
        (
            "shmem_ring",
            &["--iters", "1", "--max", "64", "--laps", "3"],
            "--laps refused: not an option of shmem_ring (its options are below);",
            &[],
        ),
        ("shmem_ring", &["--iters"], "--iters refused: a value must follow it;", &[]),
    ];
    for (name, args, says, instead) in cases {
        let (code, stdout, stderr) = run_example(program(name), args, &[]);
        let run = format!("{name} {}", args.join(" "));
        assert_eq!(code, Some(2), "{run}: {stderr}");
        assert_eq!(stdout, "", "{run} ran");
        let first = stderr.lines().next().unwrap_or("");
        assert_eq!(first, format!("{name}: {says} nothing was run"), "{run}");
        assert!(stderr.lines().nth(1).unwrap_or("").starts_with(&format!("usage: {name} ")), "{run}: {stderr}");
        if !instead.is_empty() {
            let (code, _, stderr) = run_example(program(name), instead, &[]);
            assert_eq!(code, Some(0), "{name} {}, as suggested: {stderr}", instead.join(" "));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An LD_PRELOAD library that says on stderr what reaches GNI_CdmCreate (its inst_id, ptag and
/// cookie) and GNI_CdmAttach (its device), then passes the call on to the libugni.so behind it
/// (the emulator, which checks neither ptag nor cookie).
fn cdm_create_spy(dir: &std::path::Path) -> std::path::PathBuf {
    let source = dir.join("spy.c");
    std::fs::write(
        &source,
        r#"#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
int GNI_CdmCreate(uint32_t inst_id, uint8_t ptag, uint32_t cookie, uint32_t modes, void *cdm)
{
	int (*next)(uint32_t, uint8_t, uint32_t, uint32_t, void *) =
		(int (*)(uint32_t, uint8_t, uint32_t, uint32_t, void *))dlsym(RTLD_NEXT, "GNI_CdmCreate");
	fprintf(stderr, "spy: GNI_CdmCreate inst_id %u ptag %u cookie 0x%x\n", inst_id, ptag, cookie);
	return next(inst_id, ptag, cookie, modes, cdm);
}
int GNI_CdmAttach(void *cdm, uint32_t device_id, uint32_t *address, void *nic)
{
	int (*next)(void *, uint32_t, uint32_t *, void *) =
		(int (*)(void *, uint32_t, uint32_t *, void *))dlsym(RTLD_NEXT, "GNI_CdmAttach");
	fprintf(stderr, "spy: GNI_CdmAttach device %u\n", device_id);
	return next(cdm, device_id, address, nic);
}
"#,
    )
    .unwrap();
    let spy = dir.join("libspy.so");
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o"])
        .arg(&spy)
        .arg(&source)
        .arg("-ldl")
        .status()
        .expect("run cc");
    assert!(st.success(), "cc of the GNI_CdmCreate spy failed");
    spy
}

/// Inside a Cray job (PMI_GNI_PTAG and PMI_GNI_COOKIE set, as the launcher sets them) the uGNI
/// examples create their domains with the job's ptag and cookie (the first of each list), where
/// they passed GNI_FIND_ALLOC_PTAG and a cookie of their own; outside one they still do that. One
/// variable without the other, or a bad value, is refused by name before any domain is made,
/// exit 1.
#[test]
fn the_examples_create_their_domains_with_the_jobs_ptag_and_cookie() {
    let dir = aar_testkit::scratch("examples-job-ptag-cookie");
    let spy = cdm_create_spy(&dir);
    let spy = spy.to_str().unwrap();
    for (name, args, own_cookie) in [
        ("pingpong", ["--min", "64", "--max", "64", "--iters", "1"].as_slice(), "0x1234"),
        ("iterations", ["--iters", "1", "--bytes", "64"].as_slice(), "0x1235"),
        ("smallmsg", ["--count", "10"].as_slice(), "0x5678"),
    ] {
        let program = build_example(&dir, name);
        for (env, ptag, cookie) in [
            (vec![], "255", own_cookie),
            (vec![("PMI_GNI_PTAG", "7:8"), ("PMI_GNI_COOKIE", "0x10000:0x20000")], "7", "0x10000"),
            (vec![("PMI_GNI_PTAG", "0xdb"), ("PMI_GNI_COOKIE", "3735928559")], "219", "0xdeadbeef"),
        ] {
            let mut env = env.clone();
            env.push(("LD_PRELOAD", spy));
            let (code, _, stderr) = run_example(&program, args, &env);
            assert_eq!(code, Some(0), "{name} with {env:?}: {stderr}");
            let created: Vec<&str> = stderr.lines().filter(|l| l.starts_with("spy: GNI_CdmCreate ")).collect();
            assert_eq!(
                created,
                [0, 1].map(|i| format!("spy: GNI_CdmCreate inst_id {i} ptag {ptag} cookie {cookie}")),
                "{name} with {env:?}"
            );
        }
        for (env, says) in [
            (
                vec![("PMI_GNI_PTAG", "7")],
                "PMI_GNI_PTAG is set but PMI_GNI_COOKIE is not: a job launcher (aprun, srun or aar run) sets both",
            ),
            (
                vec![("PMI_GNI_COOKIE", "7")],
                "PMI_GNI_COOKIE is set but PMI_GNI_PTAG is not: a job launcher (aprun, srun or aar run) sets both",
            ),
            (
                vec![("PMI_GNI_PTAG", "493"), ("PMI_GNI_COOKIE", "1")],
                "PMI_GNI_PTAG=\"493\" refused: out of range (at most 255)",
            ),
            (
                vec![("PMI_GNI_PTAG", "7"), ("PMI_GNI_COOKIE", "0x100000000")],
                "PMI_GNI_COOKIE=\"0x100000000\" refused: out of range (at most 4294967295)",
            ),
            (vec![("PMI_GNI_PTAG", "seven"), ("PMI_GNI_COOKIE", "1")], "PMI_GNI_PTAG=\"seven\" refused: not a number"),
            (vec![("PMI_GNI_PTAG", "7"), ("PMI_GNI_COOKIE", "")], "PMI_GNI_COOKIE=\"\" refused: not a number"),
        ] {
            let mut env = env.clone();
            env.push(("LD_PRELOAD", spy));
            let (code, stdout, stderr) = run_example(&program, args, &env);
            assert_eq!(code, Some(1), "{name} with {env:?}: {stderr}");
            assert!(stderr.starts_with(&format!("{name}: {says}")), "{name} with {env:?}: {stderr}");
            assert!(stderr.trim_end().ends_with("nothing was run"), "{name} with {env:?}: {stderr}");
            assert!(!stderr.contains("spy: "), "{name} with {env:?} made a domain: {stderr}");
            assert!(stdout.is_empty(), "{name} with {env:?}: {stdout}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Inside a Cray job (PMI_GNI_DEV_ID set, as the launcher sets it) the uGNI examples attach their
/// domains to the job's NIC device (the first of the list), as the Cray examples do, where they
/// always attached to device 0; outside one they still do. A value that is not a number or does
/// not fit GNI_CdmAttach's uint32_t is refused by name before any domain is made, exit 1; a device
/// the node does not have (the emulator's has device 0 only) is refused by GNI_CdmAttach, which
/// says so, followed by where the device came from.
#[test]
fn the_examples_attach_to_the_jobs_nic_device() {
    let dir = aar_testkit::scratch("examples-job-device");
    let spy = cdm_create_spy(&dir);
    let spy = spy.to_str().unwrap();
    for (name, args) in [
        ("pingpong", ["--min", "64", "--max", "64", "--iters", "1"].as_slice()),
        ("iterations", ["--iters", "1", "--bytes", "64"].as_slice()),
        ("smallmsg", ["--count", "10"].as_slice()),
    ] {
        let program = build_example(&dir, name);
        let run = |device: Option<&str>| {
            let mut env = vec![("LD_PRELOAD", spy)];
            env.extend(device.map(|d| ("PMI_GNI_DEV_ID", d)));
            let (code, stdout, stderr) = run_example(&program, args, &env);
            let attached: Vec<String> =
                stderr.lines().filter(|l| l.starts_with("spy: GNI_CdmAttach ")).map(String::from).collect();
            (code, stdout, stderr, attached)
        };
        // The emulator's node has device 0, which is also the nearest one's (u32::MAX).
        for (device, attached_to) in [(None, "0"), (Some("0"), "0"), (Some("0xffffffff:0"), "4294967295")] {
            let (code, _, stderr, attached) = run(device);
            assert_eq!(code, Some(0), "{name} with PMI_GNI_DEV_ID {device:?}: {stderr}");
            let each = format!("spy: GNI_CdmAttach device {attached_to}");
            assert_eq!(attached, [each.clone(), each], "{name} with {device:?}");
        }
        let (code, stdout, stderr, attached) = run(Some("1"));
        assert_eq!(code, Some(1), "{name} with PMI_GNI_DEV_ID=1: {stderr}");
        assert_eq!(attached, ["spy: GNI_CdmAttach device 1"], "{name}");
        let said: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("spy: ")).collect();
        assert_eq!(
            said,
            [
                format!("{name}: GNI_CdmAttach failed: GNI_RC_NO_MATCH (9)"),
                format!(
                    "{name}: the NIC device was the job's PMI_GNI_DEV_ID=\"1\": the job launcher (aprun, srun or \
                     aar run) sets it; unset it for device 0"
                ),
            ],
            "{name}"
        );
        assert!(stdout.is_empty(), "{name} with PMI_GNI_DEV_ID=1: {stdout}");
        for (device, says) in [
            ("0x100000000", "PMI_GNI_DEV_ID=\"0x100000000\" refused: out of range (at most 4294967295)"),
            ("nic1", "PMI_GNI_DEV_ID=\"nic1\" refused: not a number"),
            ("", "PMI_GNI_DEV_ID=\"\" refused: not a number"),
        ] {
            let (code, stdout, stderr, _) = run(Some(device));
            assert_eq!(code, Some(1), "{name} with PMI_GNI_DEV_ID={device:?}: {stderr}");
            assert!(stderr.starts_with(&format!("{name}: {says}")), "{name} with {device:?}: {stderr}");
            assert!(stderr.trim_end().ends_with("nothing was run"), "{name} with {device:?}: {stderr}");
            assert!(!stderr.contains("spy: "), "{name} with {device:?} made a domain: {stderr}");
            assert!(stdout.is_empty(), "{name} with {device:?}: {stdout}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_program_the_cray_makefile_builds_is_ignored_by_git() {
    // examples/cray/README.md has the reader run `make -C examples/cray` in the clone: what that
    // builds must not show up as untracked files (`git status`, `git add -A`).
    let makefile = std::fs::read_to_string(root().join("examples/cray/Makefile")).unwrap();
    let programs: Vec<&str> = makefile
        .lines()
        .find_map(|l| l.strip_prefix("PROGRAMS = "))
        .expect("examples/cray/Makefile lists its PROGRAMS")
        .split_whitespace()
        .collect();
    assert!(programs.contains(&"ab_exchange"), "{programs:?}");
    let ignore = std::fs::read_to_string(root().join("examples/cray/.gitignore")).unwrap();
    let ignored: Vec<&str> = ignore.lines().map(str::trim).collect();
    let missing: Vec<&&str> = programs.iter().filter(|p| !ignored.contains(p)).collect();
    assert!(missing.is_empty(), "examples/cray/.gitignore lacks {missing:?}, which the Makefile builds");
}
