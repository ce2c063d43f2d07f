//! The routing decision engine of aar: pure Rust, no `unsafe`, no I/O.
//!
//! The same code runs inside libaar.so (one engine per process) and inside every simulated rank
//! of the Dragonfly simulator, so what the simulator measures is what ships.
//!
//! Data flow: the caller describes each message ([`Message`]); the engine accumulates its size
//! and, when the cumulative-size threshold is crossed, decides with the cost model
//! ([`model`]) from the latest counter window; after the send the caller reads the NIC counters
//! and hands them to [`Engine::observe`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod ab;
pub mod calls;
pub mod class;
pub mod engine;
pub mod mode;
pub mod model;
pub mod settings;
pub mod size;
pub mod steady;
pub mod switch;

pub use ab::{AbOrder, AbSchedule, PolicyList, Seed};
pub use calls::{CallArm, CallTicket};
pub use class::{DestinationClass, NodeLocation};
pub use engine::{
    accumulate, CounterSample, Decision, Engine, EngineStats, Message, Policy, Reason, SideBytes, WindowOutcome,
};
pub use mode::{requested_mode, with_mode, RoutingMode};
pub use model::{LatencyUnit, Transfer, Window};
pub use settings::EngineConfig;
pub use size::ByteSize;
pub use steady::SteadyConfig;
pub use switch::Switch;
