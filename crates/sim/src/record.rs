//! What the simulator records per rank, and how it is written.
//!
//! Every measured rank gives two files, named from the experiment id and the rank like a job's
//! (`aar_record::iterations_file_name` with pid 0):
//!
//! - `aar.<experiment>.<rank>.0.iterations.jsonl`: the iteration record in the one format real
//!   jobs write too (`aar-iterations/1`, crate `aar-record`), which `aar report` reads: one row per
//!   measured iteration with its policy, label, start and end, messages and bytes per routing mode,
//!   engine decisions and switches, and the NIC counter window of the iteration.
//! - `aar.<experiment>.<rank>.0.sim-rank.json` ([`RANK_SCHEMA`]): what only a simulated rank has
//!   and a row does not carry: its node, router and group, the NIC counter totals and the engine's
//!   window statistics over the run. `aar report` does not read it.
//!
//! Both carry the run's effective configuration ([`RunConfig`], field `config`): the iteration
//! record in its header (a field of the simulator's beside the shared [`Header`]'s, which readers
//! of the format pass over), the summary beside its own fields.

use crate::config::{Mode, N_MODES};
use crate::experiment::{ExperimentResult, ExperimentSpec};
use crate::net::NicCounters;
use crate::topology::Shape;
use aar_engine::EngineConfig;
pub use aar_record;
use aar_record::{Clock, Header, Iteration, Source, FORMAT};
use serde::{Deserialize, Serialize};

/// Schema of the per-rank summary (`*.sim-rank.json`); version 1 also held the iterations, which
/// are now in the iteration record.
pub const RANK_SCHEMA: &str = "aar-sim-rank/2";

/// Suffix of the per-rank summary after the base name the iteration record has too.
pub const RANK_SUFFIX: &str = ".sim-rank.json";

/// The effective configuration of a simulated run: every value it ran with, the defaults filled
/// in, as the simulator's own types serialize them, so that a record read alone says what was
/// simulated. Times and buffers of the network are in the simulator's units (ticks of
/// `tick_ps` picoseconds, flits).
#[derive(Clone, Debug, Serialize)]
pub struct RunConfig {
    /// the experiment as run ([`ExperimentSpec`], which reads it back): the network (its
    /// topology, latencies, flit times, router delay and buffers), the workload, ranks,
    /// placement and seed, the policies and their order, iterations and warm-up, the background
    /// traffic; `ranks_per_node` is left out when 1 and `window_decisions` when the policies'
    /// own (see `engine`)
    pub experiment: ExperimentSpec,
    /// the network's size as built from `experiment.net.topo`
    pub shape: Shape,
    /// what the measured ranks' engines ran with ([`ExperimentSpec::engine_config`]): threshold,
    /// window, the model's factors, ranks per node, `steady`'s parameters; each iteration's
    /// policy is its row's
    pub engine: EngineConfig,
    /// the nodes the background ran on: `experiment.background_nodes`, or fewer where fewer were
    /// free in its reach; 0 without background traffic
    pub background_nodes_used: u32,
}

impl RunConfig {
    /// The configuration of the run of `spec` that gave `result`.
    pub fn of(spec: &ExperimentSpec, result: &ExperimentResult) -> RunConfig {
        RunConfig {
            experiment: spec.clone(),
            shape: spec.net.topo.shape(),
            engine: spec.engine_config(),
            background_nodes_used: result.background_nodes,
        }
    }
}

/// A header of the iteration record as the simulator writes it: the shared [`Header`] and the
/// run's configuration.
#[derive(Serialize)]
struct SimHeader<'a> {
    #[serde(flatten)]
    header: Header,
    config: &'a RunConfig,
}

/// The per-rank summary as written: the rank's record and the run's configuration.
#[derive(Serialize)]
struct Summary<'a> {
    #[serde(flatten)]
    rank: &'a RankRecord,
    config: &'a RunConfig,
}

/// Job-level sample of one iteration (what the statistics of `aar sim run/sweep/validate` use).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IterSample {
    pub iteration: u32,
    /// policy of this iteration's A/B arm
    pub arm: String,
    /// simulated time, ns: the slowest rank's duration (ping-pong: the initiator's round trip)
    pub ns: f64,
    /// NIC counter window of this iteration (rank 0's NIC): stalled cycles per request flit
    #[serde(default)]
    pub stall_ratio: f64,
    /// NIC counter window: mean request-response latency, NIC cycles
    #[serde(default)]
    pub latency_cycles: f64,
}

/// One measured iteration of one rank, in the units of the iteration record. Fixed size (no
/// allocation per iteration beyond the rank's row vector).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RankIteration {
    /// iteration index (warm-up iterations count: the index the A/B schedule is applied to)
    pub i: u64,
    /// index into [`RankRecord::arms`]
    pub arm: usize,
    /// the rank's own start and end of the iteration, simulated ns
    pub start_ns: u64,
    pub end_ns: u64,
    /// messages and bytes the rank posted in the iteration, indexed by `Mode as usize`
    pub messages: [u64; N_MODES],
    pub bytes: [u64; N_MODES],
    /// the rank's engine over the iteration: threshold crossings decided, switches of side
    pub decisions: u64,
    pub switches: u64,
    /// NIC counter window from the iteration's start to its end (the rank's NIC): mean
    /// request-response latency, µs, and stalled cycles per request flit; `None` when the window
    /// saw no response (no latency) or no request flit (no stall ratio)
    pub latency_us: Option<f64>,
    pub stall_ratio: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RankRecord {
    pub schema: String,
    /// the experiment id: the same for every rank of one run, different between sweep points
    pub experiment: String,
    pub workload: String,
    pub rank: u32,
    pub nranks: u32,
    pub node: u32,
    pub router: u32,
    pub group: u32,
    /// policies of the A/B arms, in schedule order
    pub arms: Vec<String>,
    /// `round-robin`, `shuffled:SEED` or `single`
    pub order: String,
    /// `isolated` (no background traffic) or `congested` (GPCNeT congestors running) for the
    /// whole run; none with open-loop background traffic
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// the measured iterations: written to the iteration record, not to this summary
    #[serde(skip)]
    pub iterations: Vec<RankIteration>,
    /// indexed by `Mode as usize` (MIN_HASH, IN_ORDER, NMIN_HASH, ADAPTIVE0..3, UGAL), measured
    /// iterations only
    pub messages_per_mode: [u64; N_MODES],
    pub bytes_per_mode: [u64; N_MODES],
    /// messages and bytes sent to ranks of the same node (shared memory: no routing mode, no
    /// engine decision, not in the counts per mode), measured iterations only; absent when none
    #[serde(default, skip_serializing_if = "is_zero")]
    pub intra_node_messages: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub intra_node_bytes: u64,
    /// the NIC's counters at the end of the run (warm-up and background lead included)
    #[serde(serialize_with = "ser_counters", skip_deserializing)]
    pub counters: NicCounters,
    pub engine_decisions: u64,
    pub engine_model_decisions: u64,
    pub switches_to_low_latency: u64,
    pub switches_to_low_stall: u64,
    pub windows_valid: u64,
    pub windows_discarded: u64,
    /// with ranks sharing the NIC, valid windows `steady`'s state took by the node's decided
    /// bytes on a side this rank's own decisions were not all on, and those it took for no side
    /// (neither side held three quarters of the node's bytes); absent when none
    #[serde(default, skip_serializing_if = "is_zero")]
    pub windows_node_side: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub windows_node_mixed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn ser_counters<S: serde::Serializer>(c: &NicCounters, s: S) -> Result<S::Ok, S::Error> {
    c.serialize(s)
}

/// Names of the per-mode columns of the iteration record: the simulator's modes, in `Mode` order.
pub fn mode_columns() -> Vec<String> {
    Mode::ALL.iter().map(|m| m.name().to_string()).collect()
}

impl RankRecord {
    /// Base of the rank's file names: a job's pattern with the experiment as job and pid 0.
    pub fn iterations_file_name(&self) -> String {
        aar_record::iterations_file_name(Some(&self.experiment), Some(self.rank), 0)
    }

    pub fn summary_file_name(&self) -> String {
        format!("{}{RANK_SUFFIX}", aar_record::base_name(Some(&self.experiment), Some(self.rank), 0))
    }

    /// The header of the rank's iteration record; `command_line` is the program's.
    pub fn header(&self, command_line: &[String]) -> Header {
        Header {
            format: FORMAT.into(),
            source: Source::Sim,
            experiment: self.experiment.clone(),
            rank: Some(self.rank),
            nranks: Some(self.nranks),
            // Every rank of a simulation writes its records.
            output_ranks: None,
            host: None,
            pid: None,
            clock: Clock::Simulated,
            policies: self.arms.clone(),
            order: self.order.clone(),
            boundary: "sim".into(),
            modes: mode_columns(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_revision: Some(env!("AAR_GIT_REVISION").into()),
            command_line: command_line.to_vec(),
        }
    }

    /// The rank's iterations as rows of the iteration record.
    pub fn rows(&self) -> impl Iterator<Item = Iteration> + '_ {
        self.iterations.iter().map(|it| Iteration {
            i: it.i,
            policy: self.arms[it.arm].clone(),
            label: self.label.clone(),
            start_ns: it.start_ns,
            end_ns: it.end_ns,
            messages: it.messages.to_vec(),
            bytes: it.bytes.to_vec(),
            decisions: it.decisions,
            switches: it.switches,
            latency_us: it.latency_us,
            stall_ratio: it.stall_ratio,
        })
    }

    /// The whole iteration record: header line (with the run's `config`) and one line per row.
    pub fn iterations_jsonl(&self, command_line: &[String], config: &RunConfig) -> Vec<u8> {
        let mut out = Vec::with_capacity(4096 + 320 * self.iterations.len());
        let header = SimHeader { header: self.header(command_line), config };
        aar_record::write_line(&mut out, &header).expect("a header serializes");
        for row in self.rows() {
            aar_record::write_line(&mut out, &row).expect("a row serializes");
        }
        out
    }

    /// The per-rank summary ([`RANK_SCHEMA`]) with the run's `config`.
    pub fn summary_json(&self, config: &RunConfig) -> String {
        serde_json::to_string_pretty(&Summary { rank: self, config }).expect("a rank record serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> RankRecord {
        let mut messages = [0; N_MODES];
        messages[Mode::Adaptive3 as usize] = 5;
        let mut bytes = [0; N_MODES];
        bytes[Mode::Adaptive3 as usize] = 5 * 4096;
        RankRecord {
            schema: RANK_SCHEMA.into(),
            experiment: "sim-alltoall-4096_scattered_4ranks_none_seed1".into(),
            rank: 3,
            nranks: 4,
            arms: vec!["auto".into(), "ADAPTIVE3".into()],
            order: "round-robin".into(),
            label: Some("isolated".into()),
            iterations: vec![
                RankIteration { i: 0, arm: 0, start_ns: 5_000, end_ns: 9_000, ..Default::default() },
                RankIteration {
                    i: 1,
                    arm: 1,
                    start_ns: 9_000,
                    end_ns: 12_500,
                    messages,
                    bytes,
                    decisions: 2,
                    switches: 1,
                    latency_us: Some(1.5),
                    stall_ratio: Some(0.25),
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn names_follow_the_job_pattern() {
        let r = record();
        assert_eq!(r.iterations_file_name(), "aar.sim-alltoall-4096_scattered_4ranks_none_seed1.3.0.iterations.jsonl");
        assert_eq!(r.summary_file_name(), "aar.sim-alltoall-4096_scattered_4ranks_none_seed1.3.0.sim-rank.json");
        assert!(!r.summary_file_name().ends_with(aar_record::ITERATIONS_SUFFIX));
    }

    #[test]
    fn the_iteration_record_reads_back_with_the_one_reader() {
        let r = record();
        let config = config();
        let text = r.iterations_jsonl(&["aar".into(), "sim".into()], &config);
        let mut reader = aar_record::Reader::new(&text[..]).unwrap();
        let h = reader.header().clone();
        assert_eq!(h.source, Source::Sim);
        assert_eq!(h.clock, Clock::Simulated);
        assert_eq!((h.rank, h.nranks), (Some(3), Some(4)));
        assert_eq!(h.policies, ["auto", "ADAPTIVE3"]);
        assert_eq!(h.modes.len(), N_MODES);
        assert_eq!(h.modes[Mode::Adaptive3 as usize], "ADAPTIVE3");
        let rows: Vec<Iteration> = reader.by_ref().map(|r| r.unwrap()).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].policy, "auto");
        assert_eq!((rows[0].latency_us, rows[0].stall_ratio), (None, None));
        assert_eq!(rows[1].policy, "ADAPTIVE3");
        assert_eq!(rows[1].label.as_deref(), Some("isolated"));
        assert_eq!(rows[1].bytes[Mode::Adaptive3 as usize], 5 * 4096);
        assert_eq!((rows[1].decisions, rows[1].switches), (2, 1));
        assert_eq!((rows[1].latency_us, rows[1].stall_ratio), (Some(1.5), Some(0.25)));
        assert_eq!(rows[1].duration_ns(), 3_500);
        // the summary keeps what rows do not carry, without the rows
        let v: serde_json::Value = serde_json::from_str(&r.summary_json(&config)).unwrap();
        assert_eq!(v["schema"], RANK_SCHEMA);
        assert!(v.get("iterations").is_none() && v.get("node").is_some() && v.get("counters").is_some());
        // both carry the configuration, whose experiment reads back as the spec that ran
        let header: serde_json::Value = serde_json::from_slice(text.split(|b| *b == b'\n').next().unwrap()).unwrap();
        for c in [&header["config"], &v["config"]] {
            let spec: ExperimentSpec = serde_json::from_value(c["experiment"].clone()).unwrap();
            assert_eq!(spec, config.experiment);
            assert_eq!(c["shape"]["nodes"], 2 * 96 * 4);
            assert_eq!(c["engine"]["threshold_bytes"], EngineConfig::default().threshold_bytes);
        }
    }

    /// The configuration of a small real run.
    fn config() -> RunConfig {
        use crate::config::NetConfig;
        use crate::workload::{Placement, Workload};
        let spec = ExperimentSpec::new(NetConfig::aries(2), Workload::Barrier, 2, Placement::AcrossGroups);
        RunConfig::of(&spec, &crate::simulation::run_experiment(&spec, "barrier"))
    }
}
