//! What the engine decides with: its parameters ([`EngineConfig`]) and the text users write for
//! them. The A/B schedule the engine's callers share ([`AbSchedule`](crate::AbSchedule),
//! [`PolicyList`](crate::PolicyList), [`AbOrder`](crate::AbOrder)) is in [`ab`](crate::ab).
//! Where the values come from (environment variables, command-line options, experiment files)
//! is the callers' business: the engine reads nothing.

use crate::engine::Policy;
use crate::mode::RoutingMode;
use crate::model::LatencyUnit;
use crate::steady::SteadyConfig;

/// The engine's parameters: the policy and the algorithm's constants.
///
/// `repr(C)`: in declaration order, so the scalars every decision and counter read use share the
/// engine's first configuration line and `steady`'s parameters come after them (see
/// [`Engine`](crate::Engine)).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(C)]
pub struct EngineConfig {
    /// What chooses routing modes.
    pub policy: Policy,
    /// Cumulative bytes after which counters are read and the model decides again.
    pub threshold_bytes: u64,
    /// Latency factor λ: plain Adaptive latency ≈ λ × High Bias latency.
    pub lambda: f64,
    /// Stall factor σ: High Bias stall ratio ≈ σ × plain Adaptive stall ratio.
    pub sigma: f64,
    /// Counter windows for which a measured observation of the mode not in use stays usable,
    /// counting the window it was measured in.
    pub freshness: u32,
    /// Decisions per counter window: the counters are read after this many decisions on one
    /// side (and whenever the side changes, just before the first message of the new side). 1 is
    /// the paper's algorithm: a read after every decision. `steady` has its own
    /// ([`SteadyConfig::window_decisions`](crate::SteadyConfig::window_decisions)); see
    /// [`EngineConfig::with_window`].
    pub window_decisions: u32,
    /// Mode for latency-bound messages (High Bias).
    pub low_latency_mode: RoutingMode,
    /// Mode for stall-bound messages (plain Adaptive).
    pub low_stall_mode: RoutingMode,
    /// Replaces the low-stall mode inside MPI_Alltoall, as Cray MPICH does by default.
    pub alltoall_mode: RoutingMode,
    /// Unit of the cumulative latency counter.
    pub latency_unit: LatencyUnit,
    /// Windows claiming a mean latency above this (µs) are discarded as absurd.
    pub max_latency_us: f64,
    /// Windows claiming more stalled cycles per flit than this are discarded as absurd.
    pub max_stall_ratio: f64,
    /// Ranks that share this rank's NIC (ranks per node). The counters are the NIC's, and its
    /// injection is shared: the `steady` policy's cost model gives a rank 1/k of it.
    pub ranks_per_node: u32,
    /// The parameters of the `steady` policy.
    pub steady: SteadyConfig,
}

impl EngineConfig {
    /// The configuration with a window of `decisions` for every policy (`AAR_WINDOW`,
    /// `aar sim --window`); without one, each policy keeps its default (8, `steady` 1).
    pub fn with_window(mut self, decisions: Option<u32>) -> Self {
        if let Some(n) = decisions {
            self.window_decisions = n;
            self.steady.window_decisions = n;
        }
        self
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            policy: Policy::Auto,
            threshold_bytes: 4096,
            lambda: 1.2,
            sigma: 5.0,
            freshness: 5,
            window_decisions: 8,
            low_latency_mode: RoutingMode::Adaptive3,
            low_stall_mode: RoutingMode::Adaptive0,
            alltoall_mode: RoutingMode::Adaptive1,
            latency_unit: LatencyUnit::Microseconds,
            max_latency_us: 1e6,
            max_stall_ratio: 1e6,
            ranks_per_node: 1,
            steady: SteadyConfig::default(),
        }
    }
}
