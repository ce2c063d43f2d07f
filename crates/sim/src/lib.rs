//! aar-sim: a packet-level Dragonfly network simulator (Cray Aries-like groups and the canonical
//! Kim et al. Dragonfly) with credit flow control, UGAL-style adaptive routing with the Aries bias
//! levels, request/response NICs with the counters the shim reads, and MPI-like workloads in which
//! every rank runs the aar decision engine.

// MSRV is 1.80 (workspace rust-version): keep `n % x != 0` and `repeat().take()`.
#![allow(clippy::manual_is_multiple_of, clippy::manual_repeat_n)]

pub mod bench;
pub mod calendar;
pub mod config;
pub mod experiment;
pub mod net;
pub mod parallel;
pub mod record;
pub mod rng;
pub mod simulation;
pub mod summary;
pub mod synthetic;
pub mod topology;
pub mod validate;
pub mod workload;

/// PUT or GET: what [`Net::post`] sends (the engine's type, re-exported for callers of the simulator).
pub use aar_engine::Transfer;
pub use config::{Mode, NetConfig};
pub use net::{Net, NicCounters, Note};
pub use topology::{TopoSpec, Topology};
