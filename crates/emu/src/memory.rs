//! Memory registration: GNI_MemRegister and GNI_MemDeregister. A registration is what lets a
//! post read or write a range; posts check their ranges against it (crate::rma). In a job it is
//! also published in the rank's shared file, under a handle that names the rank
//! ([`crate::job`]), so that other ranks' posts find it.

use std::ffi::c_void;
use std::sync::Arc;

use aar_abi::*;

use crate::job;
use crate::registry::{self, mem_handle_for, MemReg};
use crate::shm::{Reg, NO_RING};

/// True when every page of [addr, addr+len) is mapped, checked the way registration pins pages.
pub fn mapped(addr: u64, len: u64) -> bool {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let Some(end) = addr.checked_add(len) else {
        return false;
    };
    let mut at = addr & !(page - 1);
    let mut residency = [0u8; 1024];
    while at < end {
        let chunk = (end - at).min(page * residency.len() as u64);
        // SAFETY: mincore only inspects the mapping of the page-aligned range and writes one
        // byte per page into `residency`, which has room for chunk/page (<= 1024) bytes.
        if unsafe { libc::mincore(at as *mut c_void, chunk as usize, residency.as_mut_ptr()) } != 0 {
            return false;
        }
        at += chunk.div_ceil(page) * page;
    }
    true
}

/// GNI_MemRegister: registers [address, address+length) on `nic`; remote events of posts into it
/// go to `dst_cq` (0: none).
pub fn register(nic: usize, address: u64, length: u64, dst_cq: usize, flags: u32) -> Result<GniMemHandle, GniReturn> {
    if address == 0 || length == 0 || !mapped(address, length) {
        return Err(GNI_RC_INVALID_PARAM);
    }
    let mut reg = registry::write();
    reg.nic(nic)?;
    let dst_cq = match dst_cq {
        0 => None,
        h => Some(reg.cq(h)?.clone()),
    };
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
