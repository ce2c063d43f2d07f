//! `libugni.so` for tests and demos: the uGNI subset that the shim intercepts and the example
//! programs use, delivering data between endpoints inside one process. It logs every post as
//! received (`AAR_EMU_LOG`), publishes the Aries NIC counters as PAPI Software-Defined Events
//! (`sde:::aries::AR_NIC_...`) and drives them with a deterministic NIC timing model
//! (`AAR_EMU_NETWORK`, `AAR_EMU_LATENCY_UNIT`). C declarations: cabi/gni_pub.h, cabi/aar_emu.h.
#![deny(unsafe_op_in_unsafe_fn)]
// Unit tests build the exports without `no_mangle`, so nothing calls them there.
#![cfg_attr(test, allow(dead_code))]

mod api;
mod counters;
mod cq;
mod log;
pub mod model;
mod rma;
mod smsg;
mod world;

/// The emulator's only diagnostics channel: one line on stderr with a fixed prefix.
fn warn(msg: &str) {
    eprintln!("aar-emu: {msg}");
}
