//! Memory registration: GNI_MemRegister and GNI_MemDeregister. A registration is what lets a
//! post read or write a range; posts check their ranges against it (crate::rma). In a job it is
//! also published in the rank's shared file, under a handle that names the rank
//! ([`crate::job`]), so that other ranks' posts find it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aar_abi::*;

use crate::job;
use crate::registry::{self, mem_handle_for, MemReg};
use crate::shm::{mapped, Reg, NO_RING};

/// GNI_MemRegister: registers [address, address+length) on `nic`; remote events of posts into it
/// go to `dst_cq` (0: none), which must be a CQ of `nic`.
pub fn register(nic: usize, address: u64, length: u64, dst_cq: usize, flags: u32) -> Result<GniMemHandle, GniReturn> {
    if address == 0 || length == 0 || !mapped(address, length) {
        return Err(GNI_RC_INVALID_PARAM);
    }
    let mut reg = registry::write();
    reg.nic(nic)?;
    let dst_cq = reg.cq_of_nic(dst_cq, nic)?.cloned();
    let read_only = flags & GNI_MEM_READ_ONLY != 0;
    let handle = match job::get() {
        Some(j) => {
            let ring = dst_cq.as_ref().map_or(NO_RING, |c| c.ring_index());
            j.register(&Reg { addr: address, len: length, read_only, ring })?
        }
        None => {
            reg.next_mem_id += 1;
            mem_handle_for(reg.next_mem_id, address, length)
        }
    };
    let m = MemReg { nic, addr: address, len: length, dst_cq, read_only, check: handle.qword2 };
    reg.mems.insert(handle.qword1, Arc::new(m));
    Ok(handle)
}

/// GNI_MemRegisterSegments: one segment is registered as GNI_MemRegister registers it. Several
/// are refused with GNI_RC_ILLEGAL_OP (said once): with several, uGNI addresses the region by
/// offsets instead of virtual addresses, which the emulator's posts do not do.
pub fn register_segments(
    nic: usize,
    segments: &[GniMemSegment],
    dst_cq: usize,
    flags: u32,
) -> Result<GniMemHandle, GniReturn> {
    match segments {
        [] => Err(GNI_RC_INVALID_PARAM),
        [one] => register(nic, one.address, one.length, dst_cq, flags),
        more => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                crate::warn(&format!(
                    "GNI_MemRegisterSegments: {} segments: the emulator registers one segment per call; \
                     returning GNI_RC_ILLEGAL_OP (register each segment with GNI_MemRegister instead)",
                    more.len()
                ));
            }
            Err(GNI_RC_ILLEGAL_OP)
        }
    }
}

/// GNI_MemDeregister: a handle registered on `nic`.
pub fn deregister(nic: usize, mh: &GniMemHandle) -> Result<(), GniReturn> {
    let mut reg = registry::write();
    reg.mem(mh, nic).ok_or(GNI_RC_INVALID_PARAM)?;
    reg.mems.remove(&mh.qword1);
    if let Some(j) = job::get() {
        j.deregister(mh);
    }
    Ok(())
}
