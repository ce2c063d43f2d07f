//! `libugni.so` for tests and demos: the uGNI subset that the shim intercepts and the example
//! programs use, delivering data between endpoints inside one process. It logs every post as
//! received (`AAR_EMU_LOG`), publishes the Aries NIC counters as PAPI Software-Defined Events
//! (`sde:::aries::AR_NIC_...`) and drives them with a deterministic NIC timing model
//! (`AAR_EMU_NETWORK`, `AAR_EMU_LATENCY_UNIT`), or with the packet-level network simulator of
//! crates/sim (`AAR_EMU_SIM`, see `timing::simulated`), which also gives completion times a
//! simulated clock (`aar_emu_clock_ns`). C declarations: cabi/gni_pub.h, cabi/aar_emu.h.
//!
//! The post log (`AAR_EMU_LOG=<path>`, appended, one JSON object per line, written whole at the
//! call, so complete at any exit), one line per call, failed calls included (`rc` says so):
//! ```text
//! {"call":"GNI_PostFma","type":3,"length":64,"dlvr_mode":128,"rc":0}       also GNI_PostRdma, GNI_PostCqWrite
//! {"call":"GNI_CtPostFma","type":3,"length":32,"dlvr_mode":64,"chain_elements":2,"chain_bytes":210,"rc":0}
//! {"call":"GNI_SmsgSend","length":48,"smsg_dlvr_mode":0,"nic":256,"rc":0}  also GNI_SmsgSendWTag
//! {"call":"GNI_SmsgSetDeliveryMode","nic":256,"dlvr_mode":128,"rc":0}
//! ```
//! `type`, `length`, `dlvr_mode` are the head descriptor's fields exactly as received (null for a
//! NULL descriptor); `chain_elements`/`chain_bytes` count the elements linked after the head and
//! their lengths (the head's own transfer is `length`); `length` of an SMSG is header + data;
//! `nic` is the NIC address (as GNI_CdmAttach returned it; null for an unknown handle);
//! `smsg_dlvr_mode` is the mode set on that NIC when the message was sent.
//!
//! Modules: `exports` lists every exported symbol and handles the C side of each call; the work
//! is done by `domain` (CDMs, NICs, endpoints), `memory` (registration), `cq` and `cq_entry`
//! (completion queues and their entries), `rma` and `amo` (posts) and `smsg` (short messages),
//! over the handles of `registry`. Every transfer reaches `counters`, which publishes the NIC
//! counters that a model of `timing` computes; `post_log` writes the post log and `settings`
//! reads the environment.
#![deny(unsafe_op_in_unsafe_fn)]
// Unit tests build the exports without `no_mangle`, so nothing calls them there.
#![cfg_attr(test, allow(dead_code))]

mod amo;
mod counters;
mod cq;
mod cq_entry;
mod domain;
mod exports;
mod memory;
mod post_log;
mod registry;
mod rma;
mod settings;
mod smsg;
mod timing;

/// The emulator's only diagnostics channel: one line on stderr with a fixed prefix.
fn warn(msg: &str) {
    eprintln!("aar-emu: {msg}");
}
