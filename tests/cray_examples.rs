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
        let release = aar_testkit::build_release(&["aar", "aar-emu", "aar-pmi", "aar-cli"]);
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
    let mut l = Launch::program(test, examples().join(program), "");
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
