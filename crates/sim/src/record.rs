//! Per-rank result records, written as JSON. This is the one place the record format is defined,
//! so it can be aligned with the shim's records (`aar report`) when those are settled.

use crate::config::N_MODES;
use crate::net::NicCounters;
use serde::{Deserialize, Serialize};

pub const RECORD_SCHEMA: &str = "aar-sim-rank/1";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IterSample {
    pub iteration: u32,
    /// policy of this iteration's A/B arm
    pub arm: String,
    /// simulated time, ns
    pub ns: f64,
    /// NIC counter window of this iteration (rank's NIC): stalled cycles per request flit
    #[serde(default)]
    pub stall_ratio: f64,
    /// NIC counter window: mean request-response latency, NIC cycles
    #[serde(default)]
    pub latency_cycles: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RankRecord {
    pub schema: String,
    pub workload: String,
    pub rank: u32,
    pub nranks: u32,
    pub node: u32,
    pub router: u32,
    pub group: u32,
    pub arms: Vec<String>,
    pub iterations: Vec<IterSample>,
    /// indexed by `Mode as usize` (MIN_HASH, IN_ORDER, NMIN_HASH, ADAPTIVE0..3, UGAL)
    pub messages_per_mode: [u64; N_MODES],
    pub bytes_per_mode: [u64; N_MODES],
    #[serde(serialize_with = "ser_counters", skip_deserializing)]
    pub counters: NicCounters,
    pub engine_decisions: u64,
    pub engine_model_decisions: u64,
    pub switches_to_low_latency: u64,
    pub switches_to_low_stall: u64,
    pub windows_valid: u64,
    pub windows_discarded: u64,
}

fn ser_counters<S: serde::Serializer>(c: &NicCounters, s: S) -> Result<S::Ok, S::Error> {
    c.serialize(s)
}
