//! The Cray-style uGNI programs of examples/cray, built with their own Makefile through the Cray
//! pkg-config names (cray-pmi, cray-ugni), run unmodified as multi-rank jobs by `aar run` over the
//! emulator's job mode, with and without libaar.so preloaded. Each program checks its own data
//! and CQ events and fails the job otherwise; here the test checks that every rank really posted
//! through the emulator, and, under libaar.so, that the routing modes the emulator saw on each
//! rank are exactly the ones that rank's record says it chose.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// examples/cray built once per test binary by its own Makefile, in a copy of the folder (so
/// programs a user built in the source tree are not taken for fresh), with the pkg-config files
/// of the build tree.
fn examples() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let release = aar_testkit::release_dir();
        let out = scratch("cray-examples-build");
        for entry in std::fs::read_dir(root().join("examples/cray")).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name == "Makefile" || name.ends_with(".c") || name.ends_with(".h") {
                std::fs::copy(&path, out.join(&name)).unwrap();
            }
        }
        let st = Command::new("make")
            .args(["-s", "-C"])
            .arg(&out)
            .arg("CFLAGS=-O2 -Wall -Wextra -Werror")
            .env("PKG_CONFIG_PATH", release.join("pkgconfig"))
            .status()
            .expect("run make");
        assert!(st.success(), "make in a copy of examples/cray failed");
        out
    })
}

/// `program` of examples/cray as a job of `ranks` ranks (`ranks_per_node` to a node).
fn job(test: &str, program: &str, ranks: u32, ranks_per_node: u32) -> Launch {
    job_of(test, examples().join(program), ranks, ranks_per_node)
}

/// The program at `path` as a job of `ranks` ranks (`ranks_per_node` to a node).
fn job_of(test: &str, path: PathBuf, ranks: u32, ranks_per_node: u32) -> Launch {
    let mut l = Launch::program(test, path, "");
    let aar = aar_command().display().to_string();
    let (n, k) = (ranks.to_string(), ranks_per_node.to_string());
    l.wrapper = [aar.as_str(), "run", "-n", &n, "-N", &k, "--"].map(String::from).to_vec();
    l
}

/// Messages and bytes per routing mode, as a record's `apis.uGNI.modes` names them.
type ByMode = BTreeMap<String, (u64, u64)>;

/// What the emulator received from each rank: the posts and SMSG sends that succeeded, by the
/// routing mode they carried.
fn emulator_modes(log: &[Value], ranks: u32) -> Vec<ByMode> {
    let mut by_rank = vec![ByMode::new(); ranks as usize];
    for v in log {
        let call = v["call"].as_str().unwrap();
        let (mode, bytes) = if call.starts_with("GNI_SmsgSend") {
            (v["smsg_dlvr_mode"].as_u64().unwrap(), v["length"].as_u64().unwrap())
        } else if call.starts_with("GNI_Post") || call.starts_with("GNI_CtPost") {
            let chained = v["chain_bytes"].as_u64().unwrap_or(0);
            (v["dlvr_mode"].as_u64().unwrap(), v["length"].as_u64().unwrap() + chained)
        } else {
            continue;
        };
        assert_eq!(v["rc"], 0, "a post failed in the emulator: {v}");
        let rank = v["rank"].as_u64().unwrap_or_else(|| panic!("a line of the job's log names no rank: {v}"));
        let e = by_rank[rank as usize].entry(mode_name(mode).to_string()).or_default();
        e.0 += 1;
        e.1 += bytes;
    }
    by_rank
}

/// Runs `program` with `ranks` ranks, without and with libaar.so; checks what reached the
/// emulator from every rank against what each rank's record says it routed.
fn check(program: &str, ranks: u32, ranks_per_node: u32) {
    let test = format!("cray-{program}-{ranks}-{ranks_per_node}");
    let plain = job(&format!("{test}-plain"), program, ranks, ranks_per_node).no_preload().run();
    plain.assert_ok();
    assert!(plain.stdout.starts_with(&format!("{program}: {ranks} ranks")), "{}", plain.stdout);
    let plain_modes = emulator_modes(&plain.log, ranks);
    for (rank, modes) in plain_modes.iter().enumerate() {
        assert!(!modes.is_empty(), "rank {rank} of {program} posted nothing: {:?}", plain.log);
    }
    assert!(plain.records().is_empty(), "records without libaar.so");

    let routed = job(&format!("{test}-aar"), program, ranks, ranks_per_node).run();
    routed.assert_ok();
    let seen = emulator_modes(&routed.log, ranks);
    let records = routed.records();
    assert_eq!(records.len(), ranks as usize, "one record per rank: {records:?}");
    for r in &records {
        let rank = r["rank"].as_u64().unwrap() as usize;
        let recorded: ByMode = r["apis"]["uGNI"]["modes"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(m, v)| (m.clone(), (v["messages"].as_u64().unwrap(), v["bytes"].as_u64().unwrap())))
            .collect();
        assert_eq!(recorded, seen[rank], "{program}, rank {rank}: the record's modes against the emulator's");
        // The same traffic as without the library: only the routing differs.
        let count = |m: &ByMode| m.values().fold((0, 0), |a, v| (a.0 + v.0, a.1 + v.1));
        assert_eq!(count(&seen[rank]), count(&plain_modes[rank]), "{program}, rank {rank}: messages and bytes");
    }
}

#[test]
fn rdma_put_and_get_around_a_ring() {
    check("rdma_put_get", 2, 1);
    check("rdma_put_get", 3, 1);
}

#[test]
fn fma_put_and_get_around_a_ring() {
    check("fma_put_get", 2, 1);
    check("fma_put_get", 3, 1);
}

#[test]
fn atomic_fetch_and_add_from_every_rank() {
    check("amo", 2, 1);
    check("amo", 3, 1);
}

#[test]
fn cq_writes_to_remote_cqs() {
    check("cq_write", 2, 1);
    check("cq_write", 3, 1);
}

#[test]
fn smsg_all_to_all_after_a_datagram_exchange() {
    check("smsg_datagram", 2, 1);
    check("smsg_datagram", 3, 1);
    // Two ranks on each node share its NIC address.
    check("smsg_datagram", 4, 2);
}

#[test]
fn all_pairs_exchange_with_remote_events() {
    check("all_pairs", 2, 1);
    check("all_pairs", 3, 1);
}

/// ab_exchange, the program of the batch-script A/B examples: pairs of ranks on different nodes
/// RDMA PUT to each other in every iteration. Under libaar.so with `AAR_AB`, every rank's record
/// has each iteration, under the policy the schedule gives it, and the emulator saw each
/// iteration's posts, from every rank, with that policy's routing mode; `aar report` then
/// compares the policies.
#[test]
fn ab_exchange_alternates_policies_iteration_by_iteration_across_nodes() {
    check("ab_exchange", 2, 1);

    let (ranks, iters, bytes) = (4u32, 6usize, 8192u64);
    let list = ["ADAPTIVE0", "ADAPTIVE3"];
    let mut launch = job("cray-ab-exchange-ab", "ab_exchange", ranks, 1).env("AAR_AB", &list.join(","));
    launch.args = ["--iters", &iters.to_string(), "--bytes", "8K"].map(String::from).to_vec();
    let r = launch.run();
    r.assert_ok();
    assert!(r.stdout.starts_with("ab_exchange: 4 ranks, 2 pairs across nodes, 6 iterations"), "{}", r.stdout);
    // The schedule, computed here: round-robin, iteration i runs under list[i mod 2].
    let expected: Vec<&str> = (0..iters).map(|i| list[i % list.len()]).collect();

    let out = r.dir.join("out");
    let recs = iteration_records(&out);
    assert_eq!(recs.len(), ranks as usize, "one iteration record per rank: {recs:?}");
    for (rank, (header, rows)) in recs.iter().enumerate() {
        assert_eq!(header["rank"].as_u64(), Some(rank as u64));
        assert_eq!(header["nranks"].as_u64(), Some(ranks as u64));
        assert_eq!(header["policies"], serde_json::json!(list));
        assert_eq!((header["order"].as_str(), header["boundary"].as_str()), (Some("round-robin"), Some("markers")));
        let index: Vec<u64> = rows.iter().map(|row| row["i"].as_u64().unwrap()).collect();
        assert_eq!(index, (0..iters as u64).collect::<Vec<_>>(), "rank {rank}: the iterations asked for");
        let policies: Vec<&str> = rows.iter().map(|row| row["policy"].as_str().unwrap()).collect();
        assert_eq!(policies, expected, "rank {rank}: the schedule");
        // Each iteration's one PUT is in its policy's column.
        let modes = header["modes"].as_array().unwrap();
        for row in rows {
            let col = modes.iter().position(|m| *m == row["policy"]).unwrap();
            let mut want = vec![0; modes.len()];
            want[col] = 1;
            assert_eq!(row["messages"], serde_json::json!(want), "rank {rank}: {row}");
            want[col] = bytes;
            assert_eq!(row["bytes"], serde_json::json!(want), "rank {rank}: {row}");
        }
    }

    // The emulator's log is one file the ranks append to: iteration i's PUTs, one from each rank,
    // all come before any of iteration i + 1 (the barrier inside each iteration), and carry the
    // routing mode of iteration i's policy.
    let puts: Vec<&Value> = r.posts("GNI_PostRdma");
    assert_eq!(puts.len(), iters * ranks as usize, "one PUT per rank and iteration: {puts:?}");
    for (i, block) in puts.chunks(ranks as usize).enumerate() {
        let mut from: Vec<u64> = block.iter().map(|v| v["rank"].as_u64().unwrap()).collect();
        from.sort();
        assert_eq!(from, (0..ranks as u64).collect::<Vec<_>>(), "iteration {i}: a PUT from every rank: {block:?}");
        for v in block {
            assert_eq!(v["rc"], 0, "{v}");
            assert_eq!(v["length"].as_u64(), Some(bytes), "{v}");
            assert_eq!(mode_name(v["dlvr_mode"].as_u64().unwrap()), expected[i], "iteration {i}: {v}");
        }
    }

    // One row per policy, each with its iterations.
    let report =
        Command::new(aar_command()).args(["report", "--json", "--resamples", "100"]).arg(&out).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let doc: Value = serde_json::from_slice(&report.stdout).expect("aar report --json");
    let experiments = doc["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 1, "one experiment: {doc}");
    let stats = experiments[0]["policy_stats"].as_array().unwrap();
    let rows: Vec<(&str, u64)> =
        stats.iter().map(|p| (p["policy"].as_str().unwrap(), p["iterations"].as_u64().unwrap())).collect();
    assert_eq!(rows, [("ADAPTIVE0", 3), ("ADAPTIVE3", 3)], "{doc}");
}

/// ab_exchange built without -fPIE (-fno-pie, or a compiler wrapper's default; and -Wpedantic: dlsym's
/// result is turned into a function pointer as ISO C allows): under libaar.so with
/// `AAR_AB` every rank still marks its iterations. A weak declaration of the markers is set to
/// NULL for good by the linker in such a program, and the experiment had no iteration to compare.
#[test]
fn ab_exchange_built_without_pie_still_marks_its_iterations() {
    let release = aar_testkit::release_dir();
    let dir = scratch("cray-ab-exchange-no-pie-build");
    for name in ["Makefile", "ab_exchange.c", "cray_util.h", "parse_size.h", "pmi_gni_env.h"] {
        std::fs::copy(root().join("examples/cray").join(name), dir.join(name)).unwrap();
    }
    let st = Command::new("make")
        .args(["-s", "-C"])
        .arg(&dir)
        .args(["ab_exchange", "CFLAGS=-O2 -Wall -Wextra -Wpedantic -Werror -fno-pie", "LDFLAGS=-no-pie"])
        .env("PKG_CONFIG_PATH", release.join("pkgconfig"))
        .status()
        .expect("run make");
    assert!(st.success(), "make ab_exchange without PIE failed");
    let program = dir.join("ab_exchange");
    // e_type ET_EXEC (2), not ET_DYN (3): the build really is not position-independent.
    let elf = std::fs::read(&program).unwrap();
    assert_eq!(u16::from_le_bytes([elf[16], elf[17]]), 2, "ab_exchange was built as a PIE");

    let mut launch = job_of("cray-ab-exchange-no-pie", program, 2, 1).env("AAR_AB", "ADAPTIVE0,ADAPTIVE3");
    launch.args = ["--iters", "4", "--bytes", "4K"].map(String::from).to_vec();
    let r = launch.run();
    r.assert_ok();
    assert!(r.stdout.starts_with("ab_exchange: 2 ranks, 1 pair across nodes, 4 iterations"), "{}", r.stdout);
    assert!(!r.stdout.contains("without libaar.so"), "{}", r.stdout);
    let recs = iteration_records(&r.dir.join("out"));
    assert_eq!(recs.len(), 2, "one iteration record per rank: {recs:?}");
    for (rank, (_, rows)) in recs.iter().enumerate() {
        let policies: Vec<&str> = rows.iter().map(|row| row["policy"].as_str().unwrap()).collect();
        assert_eq!(policies, ["ADAPTIVE0", "ADAPTIVE3", "ADAPTIVE0", "ADAPTIVE3"], "rank {rank}");
    }
}

/// ab_exchange reads --iters and --bytes with the parser the one-process examples use
/// (examples/cray/parse_size.h; crates/cli/tests/examples.rs gives them the same inputs). It
/// refuses a size that its K or M suffix takes past 64 bits (`17592186044417M` is 2^64 + 1 MiB,
/// which wrapped to 1 MiB and was run), a '-' anywhere (` -5`, after a blank, was read as
/// 2^64 - 5 iterations), a blank or '+' before the digits (` 64` and `+64` were read as 64) and an
/// empty value, naming the option, the value and what it takes,
/// before any PMI or uGNI call (the program runs outside a job). What it takes goes on to the job's
/// set-up, and in a job `0x10K` is 16384 bytes.
#[test]
fn ab_exchange_refuses_sizes_that_overflow() {
    let bytes = "refused: it takes 1 byte to 512M";
    let iters = "refused: it takes a count of 1 or more";
    for (args, said) in [
        (["--bytes", "17592186044417M"], format!("--bytes 17592186044417M {bytes}")),
        (["--bytes", "18014398509481985K"], format!("--bytes 18014398509481985K {bytes}")),
        (["--iters", "17592186044417M"], format!("--iters 17592186044417M {iters}")),
        (["--bytes", "-5"], format!("--bytes -5 {bytes}")),
        (["--bytes", "5-"], format!("--bytes 5- {bytes}")),
        (["--bytes", ""], format!("--bytes  {bytes}")),
        (["--iters", " -5"], format!("--iters  -5 {iters}")),
        (["--iters", "-5"], format!("--iters -5 {iters}")),
        (["--bytes", " 64"], format!("--bytes  64 {bytes}")),
        (["--bytes", "+64"], format!("--bytes +64 {bytes}")),
        (["--iters", "+4"], format!("--iters +4 {iters}")),
    ] {
        let out = Command::new(examples().join("ab_exchange")).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with(&format!("ab_exchange: {said}")), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    for args in [["--bytes", "16M"], ["--iters", "16M"], ["--bytes", "0x10K"]] {
        let out = Command::new(examples().join("ab_exchange")).args(args).env_remove("PMI_FD").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("refused") && stderr.contains("PMI_Init"), "{args:?}: {stderr}");
    }
    let mut launch = job("cray-ab-exchange-hex-size", "ab_exchange", 2, 1).no_preload();
    launch.args = ["--iters", "0x2", "--bytes", "0x10K"].map(String::from).to_vec();
    let r = launch.run();
    r.assert_ok();
    assert!(r.stdout.contains(" 2 iterations of RDMA PUTs of 16384 bytes each way"), "{}", r.stdout);
}

/// A return code outside gni_err_str (a newer libugni's) is named "?" with its number when a
/// completion is waited for, as CHECK names it: the wait read past the array's end. A
/// GNI_CqGetEvent preloaded before the emulator's returns 42.
#[test]
fn a_cq_return_code_outside_gni_err_str_is_named_not_read_past_its_end() {
    let dir = scratch("cray-cq-unknown-rc");
    let shim_c = dir.join("cq_rc.c");
    std::fs::write(
        &shim_c,
        "#include \"gni_pub.h\"\n\
         gni_return_t GNI_CqGetEvent(gni_cq_handle_t cq, gni_cq_entry_t *ev)\n\
         { (void)cq; *ev = 0; return (gni_return_t)42; }\n",
    )
    .unwrap();
    let shim = dir.join("libcq_rc.so");
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wall", "-Werror", "-I"])
        .arg(root().join("cabi"))
        .arg(&shim_c)
        .arg("-o")
        .arg(&shim)
        .status()
        .unwrap();
    assert!(st.success(), "building the GNI_CqGetEvent shim failed");
    let r = job("cray-cq-unknown-rc-run", "rdma_put_get", 2, 1)
        .no_preload()
        .env("LD_PRELOAD", &shim.display().to_string())
        .run();
    assert!(!r.status.success(), "the job went on without its completions: {}", r.stdout);
    assert!(r.stderr.contains("GNI_CqGetEvent returned ? (42)"), "{}", r.stderr);
}

/// A PMI_GNI_* value too large for its uGNI type is refused, named with its value and its range,
/// not cut to the type's width: a PMI_GNI_PTAG of 493 ran as ptag 237 (493 - 256), and a cookie
/// of 2^32 + c as c. The values the job launcher gives are taken.
#[test]
fn job_values_out_of_their_range_are_refused_not_truncated() {
    let cookie_too_large = format!("PMI_GNI_COOKIE={}", (1u64 << 32) + 7);
    for (setting, said) in [
        ("PMI_GNI_PTAG=493", "PMI_GNI_PTAG=\"493\" is out of range (at most 255)"),
        ("PMI_GNI_PTAG=0x1ed:237", "PMI_GNI_PTAG=\"0x1ed:237\" is out of range (at most 255)"),
        (cookie_too_large.as_str(), "PMI_GNI_COOKIE=\"4294967303\" is out of range (at most 4294967295)"),
    ] {
        let mut launch = job("cray-job-env-range", "rdma_put_get", 2, 1).no_preload();
        // After aar run's own settings, so that the program sees this one.
        launch.wrapper.extend(["env".to_string(), setting.to_string()]);
        let r = launch.run();
        assert!(!r.status.success(), "{setting}: the job ran: {}", r.stdout);
        // Each rank refuses it; the first to call PMI_Abort ends the others (SIGTERM, as srun),
        // maybe before they say so.
        let refused = |l: &str| {
            l.starts_with("rdma_put_get: rank ")
                && l.ends_with(&format!(
                    ": {said}: the job launcher sets it (aprun, srun or aar run); do not set it yourself"
                ))
        };
        assert!(r.stderr.lines().any(refused), "{setting}: {}", r.stderr);
        assert!(r.stderr.contains("do not set it yourself"), "{setting}: {}", r.stderr);
    }
}
