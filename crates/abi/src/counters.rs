//! The Aries NIC counters the decision engine reads, by their PAPI event names.
//!
//! They count at the NIC's Outstanding Request Buffer (ORB) and are cumulative, per NIC: every
//! rank on a node shares them. The shim reads them through PAPI (names configurable with
//! `AAR_PAPI_EVENTS`); the emulator publishes counters of the same names as PAPI Software-Defined
//! Events; the simulator keeps the same five quantities per node.

use core::ffi::CStr;

/// Request flits sent: the denominator of the stall ratio.
pub const REQ_FLITS: &CStr = c"AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_FLITS";
/// NIC cycles a ready request flit waited for the network: the numerator of the stall ratio.
pub const REQ_STALLED: &CStr = c"AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_STALLED";
/// Sum of the request-to-response times of tracked requests (increment rate programmable).
pub const RSP_LATENCY: &CStr = c"AR_NIC_ORB_PRF_NET_RSP_TRACK_2";
/// Responses tracked: the denominator of the mean latency.
pub const RSP_PACKETS: &CStr = c"AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_NET_TRACK";
/// NIC cycles a response waited (optional: subtracted from the request stalls when read).
pub const RSP_STALLED: &CStr = c"AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_STALLED";

/// The five events in the order the engine takes them: request flits, request stalled cycles,
/// cumulative response latency, response packets, and the optional response stalled cycles.
pub const EVENTS: [&CStr; 5] = [REQ_FLITS, REQ_STALLED, RSP_LATENCY, RSP_PACKETS, RSP_STALLED];

/// How many of [`EVENTS`] must be present; the fifth may be missing.
pub const REQUIRED_EVENTS: usize = 4;

/// The prefix every Aries NIC event name starts with (what `papi_native_avail` lists on an XC).
pub const EVENT_PREFIX: &str = "AR_NIC_";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_aries_nic_events() {
        for e in EVENTS {
            assert!(e.to_str().unwrap().starts_with(EVENT_PREFIX));
        }
    }
}
