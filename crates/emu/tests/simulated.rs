//! The emulator on a simulated network (`AAR_EMU_SIM`): data still arrives intact, and the NIC
//! counters and the clock are exactly what the packet-level simulator (crates/sim) computes for
//! the same transfers, uGNI posts and DMAPP calls alike. No preload: these test the emulator alone.

mod common;

use std::path::PathBuf;

use aar_abi::dmapp::{Routing, RoutingTable};
use aar_abi::*;
use aar_sim::config::{Mode, NetConfig};
use aar_sim::experiment::ExperimentSpec;
use aar_sim::simulation::Simulation;
use aar_sim::topology::TopoSpec;
use aar_sim::validate::analytic_latency;
use aar_sim::workload::{Placement, Workload};
use aar_sim::Transfer;
use common::*;

fn sim_check() -> PathBuf {
    compile("crates/emu/tests/c/sim_check.c", "sim_check")
}

/// One `step` line of sim_check: (command, clock change in ns, the five counter changes).
#[derive(Debug, Clone, PartialEq)]
struct Step {
    cmd: String,
    dt_ns: u64,
    d: [i64; 5],
}

impl Step {
    fn stall_ratio(&self) -> f64 {
        self.d[1] as f64 / self.d[0] as f64
    }
    /// Mean request-response latency per response packet, in the published unit.
    fn latency(&self) -> f64 {
        self.d[2] as f64 / self.d[3] as f64
    }
}

/// Runs sim_check with `args` and the environment, expects success and a silent stderr.
fn steps(args: &str, env: &[(&str, &str)]) -> (Vec<Step>, Vec<u64>) {
    let args: Vec<&str> = args.split_whitespace().collect();
    let out = run(&sim_check(), &args, env);
    let stdout = expect_success(&out, "sim_check");
    assert_eq!(stderr(&out), "", "the emulator said something on stderr");
    let clocks = stdout.lines().filter_map(|l| l.strip_prefix("clock ")).map(|c| c.parse().unwrap()).collect();
    let steps = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("step "))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            Step {
                cmd: f[0].to_string(),
                dt_ns: f[4].parse().unwrap(),
                d: std::array::from_fn(|i| f[5 + i].parse().unwrap()),
            }
        })
        .collect();
    (steps, clocks)
}

#[test]
fn every_transfer_arrives_intact_on_the_simulated_network() {
    // The emulator's own scenarios (PUT/GET, AMOs, SMSG, chains, CQ writes, error codes, eight
    // posting threads), with every transfer also running through the simulator.
    let exe = compile("crates/emu/tests/c/emu_check.c", "emu_check");
    let light = "groups=2,background=uniform:0.3:4K,background-nodes=4";
    for (scenario, spec) in [
        ("put_get", light),
        ("amo", light),
        ("smsg", light),
        ("chain", "groups=2,placement=same-group"),
        ("cqwrite", "groups=1,placement=same-blade"),
        ("errors", "groups=2"),
        ("threads", "groups=2,nodes=16,placement=scattered"),
    ] {
        assert_eq!(pass(&exe, scenario, &[("AAR_EMU_SIM", spec)]), Vec::<String>::new());
    }
    // DMAPP's, with the PEs on the placement's nodes (PE 2 and 3 share PE 0's and PE 1's).
    let exe = compile_with("crates/emu/tests/c/dmapp_check.c", "dmapp_check", &["-ldmapp", "-lugni"]);
    for (scenario, spec) in [
        ("put_get", "groups=2"),
        ("strided", "groups=1,placement=same-group,nodes=4"),
        ("amo", light),
        ("errors", "groups=2"),
        ("threads", "groups=2,nodes=3,placement=scattered"),
    ] {
        pass(&exe, scenario, &[("AAR_EMU_SIM", spec)]);
    }
}

/// A transfer of the sequence that both the emulator and the direct simulation run.
#[derive(Clone, Copy)]
enum Op {
    /// (sim_check command, bytes, dlvr_mode, count); for the DMAPP commands (dput, dget) the
    /// routing attribute whose uGNI mode dlvr_mode is.
    Xfer(&'static str, u64, u16, u32),
    Freeze(bool),
}

/// What the simulator itself says for `ops` on the network `AAR_EMU_SIM` describes with these
/// values: per transfer step, the clock change and the changes of the summed counters of the
/// process's two nodes (latency in cycles), frozen transfers publishing nothing.
fn simulate_directly(
    groups: u32,
    placement: Placement,
    background: &str,
    bg_nodes: u32,
    seed: u64,
    ops: &[Op],
) -> Vec<Step> {
    let mut net = NetConfig::aries(groups);
    net.topo = TopoSpec::Aries { groups, global_per_router: 10 };
    let mut e = ExperimentSpec::new(net, Workload::Barrier, 2, placement);
    e.background = background.parse().unwrap();
    e.background_nodes = bg_nodes;
    e.seed = seed;
    let (mut w, nodes) = Simulation::build_external(&e);
    w.run_until(e.net.ns_to_ticks(e.background_lead_ns));
    let sums = |w: &Simulation| {
        let mut s = [0u64; 5];
        for &n in &nodes {
            let c = w.net.counters(n);
            for (a, v) in s.iter_mut().zip([c.req_flits, c.req_stalled, c.rsp_latency, c.rsp_packets, c.rsp_stalled]) {
                *a += v;
            }
        }
        s
    };
    let clock = |w: &Simulation| e.net.ticks_to_ns(w.net.now) as u64;
    let (mut last, mut frozen, mut out) = ([0u64; 5], false, Vec::new());
    for op in ops {
        let (cmd, bytes, dlvr, count) = match *op {
            Op::Freeze(f) => {
                frozen = f;
                continue;
            }
            Op::Xfer(c, b, m, n) => (c, b, m, n),
        };
        let (t0, mut published) = (clock(&w), [0i64; 5]);
        for _ in 0..count {
            let (src, dst, kind) = match cmd {
                "put" | "smsg" | "dput" => (nodes[0], nodes[1], Transfer::Put),
                "back" => (nodes[1], nodes[0], Transfer::Put),
                "get" | "dget" => (nodes[0], nodes[1], Transfer::Get),
                c => panic!("{c}"),
            };
            let id = w.post_external(src, dst, bytes, kind, Mode::from_dlvr_mode(dlvr));
            assert!(w.run_until_completed(id, u64::MAX));
            let s = sums(&w);
            if !frozen {
                for i in 0..5 {
                    published[i] += (s[i] - last[i]) as i64;
                }
            }
            last = s;
        }
        out.push(Step { cmd: cmd.to_string(), dt_ns: clock(&w) - t0, d: published });
    }
    out
}

fn args_of(ops: &[Op]) -> String {
    ops.iter()
        .map(|op| match *op {
            Op::Xfer(c @ ("dput" | "dget"), b, m, n) => {
                let routing = Routing::from_dlvr_mode(m).and_then(|r| RoutingTable::ASSUMED.value(r)).unwrap();
                format!("{c} {b} {routing} {n}")
            }
            Op::Xfer(c, b, m, n) => format!("{c} {b} {m:#x} {n}"),
            Op::Freeze(f) => format!("freeze {}", f as u8),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn counters_and_clock_are_exactly_the_simulators() {
    let (a0, a3) = (GNI_DLVMODE_ADAPTIVE0, GNI_DLVMODE_ADAPTIVE3);
    let ops = [
        Op::Xfer("put", 64, a3, 3),
        Op::Xfer("put", 4096, a0, 2),
        Op::Xfer("get", 4096, a3, 1),
        Op::Xfer("smsg", 100, a3, 2),
        Op::Xfer("back", 64, GNI_DLVMODE_MIN_HASH, 1),
        Op::Xfer("put", 65536, GNI_DLVMODE_NMIN_HASH, 1),
        Op::Freeze(true),
        Op::Xfer("put", 1024, a0, 1),
        Op::Freeze(false),
        Op::Xfer("put", 200, GNI_DLVMODE_IN_ORDER, 1),
        Op::Xfer("dput", 4096, a3, 2),
        Op::Xfer("dget", 4096, GNI_DLVMODE_ADAPTIVE1, 1),
        Op::Xfer("dput", 100, GNI_DLVMODE_MIN_HASH, 3),
        Op::Xfer("dget", 64, a0, 2),
    ];
    let spec = "groups=3,placement=across-groups,background=uniform:0.3:4K,background-nodes=8,seed=3";
    let (got, clocks) = steps(&args_of(&ops), &[("AAR_EMU_SIM", spec), ("AAR_EMU_LATENCY_UNIT", "cycles")]);
    let want = simulate_directly(3, Placement::AcrossGroups, "uniform:0.3:4K", 8, 3, &ops);
    assert_eq!(got, want);
    // The clock starts after the background's 5 us lead and only moves with transfers.
    assert_eq!(clocks[0], 5_000);
    assert_eq!(clocks[1] - clocks[0], got.iter().map(|s| s.dt_ns).sum::<u64>());
    // Frozen: no counter moves, but the transfer takes simulated time.
    let frozen = &got[6];
    assert!(frozen.d == [0; 5] && frozen.dt_ns > 0, "{frozen:?}");
    // Packetization as the shim counts it: 5 request flits per 64-byte PUT packet, 1 per GET.
    assert_eq!(got[0].d[0], 3 * 5);
    assert_eq!(got[0].d[3], 3);
    assert_eq!(got[2].d[0], 64);
    assert_eq!(got[2].d[3], 64);
    assert_eq!(got[3].d[0], 2 * (2 + 7));
    // DMAPP calls packetized like posts: two 4 KiB PUTs, one 4 KiB GET.
    assert_eq!((got[8].cmd.as_str(), got[8].d[0], got[8].d[3]), ("dput", 2 * (64 + 256), 2 * 64));
    assert_eq!((got[9].cmd.as_str(), got[9].d[0], got[9].d[3]), ("dget", 64, 64));

    // In microseconds (the default unit) the latency is the same count divided by 800, with
    // the fractions carried over.
    let (us, _) = steps(&args_of(&ops), &[("AAR_EMU_SIM", spec)]);
    let cycles: i64 = got.iter().map(|s| s.d[2]).sum();
    let micros: i64 = us.iter().map(|s| s.d[2]).sum();
    assert_eq!(micros, cycles / 800, "{cycles} cycles");
    assert_eq!(us.iter().map(|s| s.dt_ns).collect::<Vec<_>>(), got.iter().map(|s| s.dt_ns).collect::<Vec<_>>());
}

#[test]
fn the_clock_advances_by_the_zero_load_latency() {
    let cfg = NetConfig::aries(2);
    let ns = |ticks: u64| cfg.ticks_to_ns(ticks);
    // Two nodes of one router, an idle network: request (1 + 4 flits) and response (1 flit) each
    // take exactly the analytic terminal-to-terminal latency.
    let blade = ns(analytic_latency(&cfg, &[], 5) + analytic_latency(&cfg, &[], 1));
    let puts = args_of(&[Op::Xfer("put", 64, GNI_DLVMODE_ADAPTIVE3, 1), Op::Xfer("put", 64, GNI_DLVMODE_ADAPTIVE0, 1)]);
    let (s, _) = steps(&puts, &[("AAR_EMU_SIM", "groups=1,placement=same-blade")]);
    for step in &s {
        assert!((step.dt_ns as f64 - blade).abs() <= 1.0, "{step:?} vs {blade} ns");
    }
    // Two groups: at least one global hop each way.
    let global = ns(analytic_latency(&cfg, &[3], 5) + analytic_latency(&cfg, &[3], 1));
    let puts = args_of(&[Op::Xfer("put", 64, GNI_DLVMODE_ADAPTIVE3, 4), Op::Xfer("put", 64, GNI_DLVMODE_MIN_HASH, 4)]);
    let (s, _) = steps(&puts, &[("AAR_EMU_SIM", "groups=2,placement=across-groups")]);
    for step in &s {
        assert!(step.dt_ns as f64 >= 4.0 * global, "{step:?} vs 4 x {global} ns");
        assert!((step.dt_ns as f64) < 4.0 * (global + 1_000.0), "{step:?}: more than 1 us of local hops?");
    }
    eprintln!("zero-load 64 B PUT: same blade {blade} ns, across groups >= {global} ns; measured {s:?}");
}

#[test]
fn heavy_background_adds_stalls_and_latency() {
    let run_with = |background: &str| {
        let spec = format!("groups=1,placement=same-group,background={background},background-nodes=32");
        let ops = args_of(&[
            Op::Xfer("put", 262144, GNI_DLVMODE_MIN_HASH, 1),
            Op::Xfer("put", 64, GNI_DLVMODE_ADAPTIVE0, 10),
        ]);
        steps(&ops, &[("AAR_EMU_SIM", spec.as_str()), ("AAR_EMU_LATENCY_UNIT", "cycles")]).0
    };
    let quiet = run_with("none");
    let busy = run_with("uniform:0.9:64K");
    eprintln!("quiet: {quiet:?}\nbusy:  {busy:?}");
    // MIN_HASH (one minimal path) stalls on its own at 256 KiB and more with 32 nodes sending.
    assert!(quiet[0].d[1] > 0, "{quiet:?}");
    assert!(busy[0].stall_ratio() > quiet[0].stall_ratio(), "{quiet:?} {busy:?}");
    assert!(busy[0].latency() > quiet[0].latency(), "{quiet:?} {busy:?}");
    // Small ADAPTIVE0 PUTs divert around the busy ports: longer paths, later completion.
    assert!(busy[1].latency() > quiet[1].latency(), "{quiet:?} {busy:?}");
    assert!(busy[1].dt_ns > quiet[1].dt_ns, "{quiet:?} {busy:?}");
}

#[test]
fn non_minimal_routing_costs_latency_across_groups() {
    // Three groups, so that NMIN_HASH has an intermediate group to go through.
    let ops = args_of(&[
        Op::Xfer("put", 64, GNI_DLVMODE_MIN_HASH, 20),
        Op::Xfer("put", 64, GNI_DLVMODE_NMIN_HASH, 20),
        Op::Xfer("put", 64, GNI_DLVMODE_ADAPTIVE3, 20),
    ]);
    let (s, _) =
        steps(&ops, &[("AAR_EMU_SIM", "groups=3,placement=across-groups"), ("AAR_EMU_LATENCY_UNIT", "cycles")]);
    let (min, nmin, ad3) = (&s[0], &s[1], &s[2]);
    eprintln!("MIN_HASH {min:?}\nNMIN_HASH {nmin:?}\nADAPTIVE3 {ad3:?}");
    assert!(nmin.latency() > 1.2 * min.latency(), "{min:?} {nmin:?}");
    assert!(nmin.dt_ns > min.dt_ns);
    // With no other traffic, ADAPTIVE3 keeps to minimal paths.
    assert!(ad3.latency() < nmin.latency());
}

#[test]
fn a_bad_spec_warns_once_and_the_default_model_runs() {
    let put = args_of(&[Op::Xfer("put", 64, GNI_DLVMODE_ADAPTIVE3, 1)]);
    for (spec, problem) in [
        ("groups=zero", "groups=\"zero\""),
        // Only the placement names README gives.
        ("placement=blade", "placement: unknown placement \"blade\": use same-blade, same-group,"),
        // Neither a boolean nor key=value.
        ("2", "item \"2\" is not key=value"),
        // Well-formed keys that mean nothing together.
        ("groups=1,placement=across-groups", "placement=across-groups with groups=1: there is no other group"),
        (
            "background=uniform:0.5,background-nodes=0",
            "background=\"uniform:0.5\" with background-nodes=0: it needs 1 or more",
        ),
        // A valid network whose background the posting call could not simulate in reasonable
        // host time: refused before anything is built.
        (
            "groups=16,background=uniform:1,background-nodes=1048576,background-global=1",
            "background=\"uniform:1\" on 6142 background nodes is 6142 NICs' worth of traffic",
        ),
    ] {
        let out = run(&sim_check(), &put.split(' ').collect::<Vec<_>>(), &[("AAR_EMU_SIM", spec)]);
        let stdout = expect_success(&out, "sim_check");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("aar-emu: AAR_EMU_SIM=\"{spec}\": {problem}")), "{err}");
        assert!(err.contains("default timing model"), "{err}");
        // The default model: 5 flits, 1.1 us and 2 stalled cycles per flit for ADAPTIVE3, no clock.
        assert!(stdout.contains(&format!("step {put} 0 5 10 1 1 0")), "{stdout}");
        assert!(stdout.lines().all(|l| !l.starts_with("clock ") || l == "clock 0"), "{stdout}");
    }
    // Unset, blank, or turned off with a false boolean: the default model, no clock, no warning.
    let off = [&[][..], &[("AAR_EMU_SIM", " ")], &[("AAR_EMU_SIM", "off")], &[("AAR_EMU_SIM", " 0 ")]];
    for env in off.into_iter().chain([&[("AAR_EMU_SIM", "No")][..], &[("AAR_EMU_SIM", "FALSE")]]) {
        let (s, clocks) = steps(&put, env);
        assert_eq!(clocks, [0, 0], "{env:?}");
        assert_eq!(s[0].d, [5, 10, 1, 1, 0], "{env:?}");
    }
    // A true boolean alone: the simulator with every default, its clock from the lead time on.
    for on in ["1", " Yes ", "TRUE", "on"] {
        let (_, clocks) = steps(&put, &[("AAR_EMU_SIM", on)]);
        assert_eq!(clocks[0], 5_000, "{on}");
    }
}

/// A bad value that holds a line break, a terminal escape, a `"` or a hundred thousand characters
/// is still said in one short line, its control characters escaped and its long quotes cut, as
/// libaar.so says its warnings: no value breaks the line, moves the cursor or floods stderr.
#[test]
fn a_bad_spec_is_said_in_one_safe_line_whatever_it_holds() {
    let put = args_of(&[Op::Xfer("put", 64, GNI_DLVMODE_ADAPTIVE3, 1)]);
    let long = "9".repeat(100_000);
    for (spec, said) in [
        (
            "groups=2\nseed=x".to_string(),
            "aar-emu: AAR_EMU_SIM=\"groups=2\\nseed=x\": groups=\"2\\nseed=x\" is not".to_string(),
        ),
        (
            "groups=\u{1b}[2J\"".to_string(),
            "aar-emu: AAR_EMU_SIM=\"groups=\\u{1b}[2J\\\"\": groups=\"\\u{1b}[2J\\\"\" is not".to_string(),
        ),
        (
            format!("nodes={long}"),
            format!("aar-emu: AAR_EMU_SIM=\"nodes={}…\": nodes=\"{}…\" is not", &long[..194], &long[..200]),
        ),
    ] {
        let out = run(
            &sim_check(),
            &put.split(' ').collect::<Vec<_>>(),
            &[("AAR_EMU_SIM", &spec), ("AAR_EMU_NETWORK", &spec)],
        );
        expect_success(&out, "sim_check");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 2, "{err:?}");
        assert!(err.lines().all(|l| l.starts_with("aar-emu: AAR_EMU_") && l.len() < 1000), "{err:?}");
        assert!(err.lines().all(|l| !l.contains(char::is_control)), "{err:?}");
        assert!(
            err.lines().any(|l| l.starts_with(&said) && l.ends_with("(AAR_EMU_NETWORK) instead")),
            "{said}\n{err:?}"
        );
    }
}

#[test]
fn pingpong_times_round_trips_with_the_simulated_clock() {
    let exe = compile("examples/pingpong.c", "pingpong");
    let out =
        run(&exe, &["--min", "64", "--max", "64", "--iters", "3"], &[("AAR_EMU_SIM", "groups=1,placement=same-blade")]);
    let stdout = expect_success(&out, "pingpong");
    assert!(stdout.lines().next().unwrap().ends_with("clock simulated (aar_emu_clock_ns)"), "{stdout}");
    // Two 64-byte PUTs on an idle blade, each 190 ns to local completion.
    let rt: f64 = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("64 "))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(rt, 0.38, "{stdout}");
    let out = run(&exe, &["--min", "64", "--max", "64", "--iters", "1"], &[]);
    let stdout = expect_success(&out, "pingpong");
    assert!(stdout.lines().next().unwrap().ends_with("clock CLOCK_MONOTONIC"), "{stdout}");
}
