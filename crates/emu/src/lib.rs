//! `libugni.so` for tests and demos: the uGNI subset that the shim intercepts and the example
//! programs use, delivering data between endpoints inside one process or, in a job that
//! `aar run` started (`AAR_EMU_JOB_DIR`, see `job` and docs/emulator-job.md), between the
//! job's processes, and the DMAPP subset
//! (`libdmapp.so`, see below) over the same NIC. It logs every post and DMAPP call as received
//! (`AAR_EMU_LOG`), publishes the Aries NIC counters as PAPI Software-Defined Events
//! (`sde:::aries::AR_NIC_...`) and drives them with a deterministic NIC timing model
//! (`AAR_EMU_NETWORK`, `AAR_EMU_LATENCY_UNIT`), or with the packet-level network simulator of
//! crates/sim (`AAR_EMU_SIM`, see `timing::simulated`), which also gives completion times a
//! simulated clock (`aar_emu_clock_ns`). C declarations: cabi/gni_pub.h, cabi/dmapp.h,
//! cabi/aar_emu.h.
//!
//! DMAPP: the build makes `libdmapp.so`, a symbolic link to `libugni.so`, beside it (in
//! target/release), so `cc ... -L target/release -ldmapp -lugni` links; the object's soname stays
//! `libugni.so`, so such a program loads one object, which holds the NIC state and the counters
//! both APIs use. `dmapp_init` makes a job of `AAR_EMU_DMAPP_PES` PEs (default 4) in this process:
//! PE 0 is the process itself, and PE j > 0 has its own copy of the symmetric heap
//! (`AAR_EMU_DMAPP_SHEAP` bytes, default 16M), of the data segment and of every segment registered
//! with `dmapp_mem_register`, at the same offsets, made at the first transfer that touches it.
//! Data really moves (memcpy, atomics); each message is counted on the NIC from PE 0's NIC
//! (address 0x100) to PE j's (0x100 + j) as a PUT or GET in the uGNI mode of the routing attribute
//! the calling thread has in force. RMA attributes are per thread, validated as DMAPP does
//! (`DMAPP_RC_INVALID_PARAM`, nothing changed), and `dmapp_rma_attrs_ext_t` has the layout of
//! cabi/dmapp.h or, with `AAR_EMU_DMAPP_LAYOUT=queue-first`, another one whose routing is not at
//! bytes 8 and 9 (see `dmapp::attrs`). cabi/aar_emu.h lists the error codes and control calls.
//!
//! The post log (`AAR_EMU_LOG=<path>`, appended, one JSON object per line, written whole at the
//! call, so complete at any exit but a SIGKILL that lands in a write, which the kernel may cut at
//! a page boundary of the file), one line per call, failed calls included (`rc` says so):
//! ```text
//! {"call":"GNI_PostFma","type":3,"length":64,"dlvr_mode":128,"rc":0}       also GNI_PostRdma, GNI_PostCqWrite
//! {"call":"GNI_CtPostFma","type":3,"length":32,"dlvr_mode":64,"chain_elements":2,"chain_bytes":210,"rc":0}
//! {"call":"GNI_SmsgSend","length":48,"smsg_dlvr_mode":0,"nic":256,"rc":0}  also GNI_SmsgSendWTag
//! {"call":"GNI_SmsgSetDeliveryMode","nic":256,"dlvr_mode":128,"rc":0}
//! {"call":"dmapp_put_ixpe_nbi","kind":"PUT","pes":[1,3],"nelems":8,"type":1,"bytes":64,"messages":2,"routing":6,"routing_name":"ADAPTIVE_3","thread":4711,"rc":0}
//! {"call":"dmapp_set_rma_attrs_ext","thread":4711,"put_routing":6,"get_routing":2,"rc":0}   also dmapp_set_rma_attrs, dmapp_init[_ext]
//! ```
//! `type`, `length`, `dlvr_mode` are the head descriptor's fields exactly as received (null for a
//! NULL descriptor); `chain_elements`/`chain_bytes` count the elements linked after the head and
//! their lengths (the head's own transfer is `length`; 2^64-1 when the lengths add up past it, a
//! chain the emulator refuses with GNI_RC_INVALID_PARAM); `length` of an SMSG is header + data;
//! `nic` is the NIC address (as GNI_CdmAttach returned it; null for an unknown handle);
//! `smsg_dlvr_mode` is the mode set on that NIC when the message was sent. A DMAPP data call
//! (every form of every call) names its `kind` (PUT, GET or AMO: the AMOs follow the PUT routing),
//! its PEs (null for a NULL list), `nelems` and `type` as received, `bytes` per message
//! (nelems × element size, AMOs 8; null for an unknown type), `messages` (one per PE), the
//! routing value in force for it on the calling `thread` (the Linux thread id) and its name in
//! the emulator's table (`RoutingTable::ASSUMED`; null before dmapp_init). An attribute call gives
//! the routing values it asked for (null when it passed no attributes).
//! In an `aar run` job the ranks share the log (one `write(2)` per line, so lines never
//! interleave), and every line a rank writes after it joined the job ends with its `"rank"`.
//!
//! The modules form layers; each uses only the crate root (`warn`, `FIRST_NIC_ADDR`) and modules
//! of lower layers or, without a cycle, of its own (a unit test checks the `crate::` and
//! `super::` paths of every module against this list):
//!
//! 1. pure code, no state: `cq_entry` (the encoding of CQ entries), `amo` (the atomic memory
//!    operations), `timing` (the NIC timing models), `shm` (the records a job's ranks share,
//!    their lock and futex waits);
//! 2. configuration: `settings` (the environment), `post_log` (the post log);
//! 3. the objects behind handles: `cq` (a completion queue), `mailbox` (an endpoint's SMSG
//!    mailbox);
//! 4. process state: `registry` (every handle and its object), `counters` (the NIC counters as
//!    SDEs, driven by the process's timing model), `job` (the job this process is a rank of: its
//!    shared files, memory handles that name their owner, data movement between ranks);
//! 5. operations: `domain` (CDMs, NICs, endpoints, CQs), `memory` (registration), `rma` (posts),
//!    `smsg` (short messages), `datagram` (GNI_EpPostData and its family), `dmapp` (DMAPP's
//!    job, segments, attributes and data calls);
//! 6. exports: `exports`, every symbol the library exports and the C side of each call.
#![deny(unsafe_op_in_unsafe_fn)]
// Unit tests build the exports without `no_mangle`, so nothing calls them there.
#![cfg_attr(test, allow(dead_code))]

mod amo;
mod counters;
mod cq;
mod cq_entry;
mod datagram;
mod dmapp;
mod domain;
mod exports;
mod job;
mod mailbox;
mod memory;
mod post_log;
mod registry;
mod rma;
mod settings;
mod shm;
mod smsg;
mod timing;

/// Address of the first attached NIC outside a job; GNI_CdmGetNicAddress reports it, and each
/// further attach gets the next address, as though every CDM of the process sat on its own node.
/// The registry, DMAPP's PEs and the simulated network's placement all count NICs from it.
use aar_abi::FIRST_NIC_ADDR;

/// The emulator's only diagnostics channel: one line on stderr with a fixed prefix, said by
/// this process (warnings about the environment, which every rank of a job shares, go through
/// `settings::warn`, which says them from rank 0 only).
/// One line on stderr in one write (ranks of a job share it: `eprintln!` writes the prefix and
/// the message apart, and lines of two ranks interleave), never a panic if it cannot be written.
fn warn(msg: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("aar-emu: {msg}\n").as_bytes());
}

#[cfg(test)]
mod tests {
    #[test]
    fn modules_use_only_their_own_or_lower_layers_and_form_no_cycle() {
        aar_testkit::layers::check(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), 6);
    }
}
