//! aar-sim: a packet-level Dragonfly network simulator (Cray Aries-like groups and the canonical
//! Kim et al. Dragonfly) with credit flow control, UGAL-style adaptive routing with the Aries bias
//! levels, request/response NICs with the counters the shim reads, and MPI-like workloads in which
//! every rank runs the aar decision engine.

pub mod bench;
pub mod calendar;
pub mod config;
pub mod error;
pub mod experiment;
pub mod net;
pub mod paper;
pub mod parallel;
pub mod progress;
pub mod record;
pub mod rng;
pub mod simulation;
pub mod synthetic;
pub mod topology;
pub mod validate;
pub mod workload;

// The engine's types in the simulator's interface: PUT or GET (what `Net::post` sends) and
// sizes in bytes (of workloads, sweeps and background messages).
pub use aar_engine::{ByteSize, Transfer};
pub use config::{Mode, NetConfig};
pub use net::{Net, NicCounters, Note};
pub use topology::{TopoSpec, Topology};
