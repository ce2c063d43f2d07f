//! NIC timing: what one transfer does to the five Aries NIC counters, behind the [`NicModel`]
//! trait. Two models: the deterministic one of [`profile`] (`AAR_EMU_NETWORK`), and the
//! packet-level network simulator of [`simulated`] (`AAR_EMU_SIM`). Pure code (no FFI, no
//! globals): [`crate::counters`] owns the model of the process and publishes what it computes.

pub mod profile;
pub mod simulated;

use aar_engine::model::Transfer;

/// One transfer as the NIC sees it.
#[derive(Clone, Copy, Debug)]
pub struct NicTransfer {
    /// Which way the data travels, which decides the request flits.
    pub transfer: Transfer,
    pub bytes: u64,
    /// The routing mode exactly as the caller posted it.
    pub dlvr_mode: u16,
    /// Addresses of the sending and the receiving NIC.
    pub src_nic: u32,
    pub dst_nic: u32,
}

/// What one transfer adds to the NIC counters (non-negative, possibly fractional).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NicEffect {
    pub req_flits: f64,
    pub req_stalled_cycles: f64,
    /// Cumulative request–response latency, in microseconds.
    pub rsp_latency_us: f64,
    pub rsp_packets: f64,
    pub rsp_stalled_cycles: f64,
    /// More request–response latency, in NIC cycles (800 MHz): models that count cycles use this,
    /// so that `AAR_EMU_LATENCY_UNIT=cycles` publishes their counts without a rounding trip
    /// through microseconds. The profile model leaves it at 0.
    pub rsp_latency_cycles: f64,
}

/// A NIC timing model. The emulator calls it once per transfer (a chained post: once per element).
pub trait NicModel: Send {
    fn on_transfer(&mut self, t: &NicTransfer) -> NicEffect;
    /// Called by `aar_emu_set_network` and at start-up; models that do not use a profile ignore it.
    fn set_profile(&mut self, _profile: profile::NetworkProfile) {}
    /// The model's clock (`aar_emu_clock_ns`): nanoseconds of simulated time, or 0 for a model
    /// without one (the profile model).
    fn clock_ns(&self) -> u64 {
        0
    }
    /// True when transfers must reach the model even while the counters are frozen, because the
    /// model keeps state of its own (the simulator's network and clock).
    fn stateful(&self) -> bool {
        false
    }
}
