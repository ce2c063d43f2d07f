//! Every symbol libugni.so exports, in one place: the uGNI subset (prototypes in
//! cabi/gni_pub.h, facts in aries-abi.md §1.5), the CQ-entry accessors, and the emulator's own
//! control API (cabi/aar_emu.h). Each uGNI call checks its arguments and returns the code a real
//! libugni would; none lets a panic cross into C.

#![allow(clippy::missing_safety_doc)] // the contracts are uGNI's, documented in gni_pub.h
#![allow(non_snake_case, non_upper_case_globals)] // C symbol names

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use aar_abi::*;

use crate::cq::{self, Cq, CqHandler};
use crate::timing::NetworkProfile;
use crate::rma::{self, Call};
use crate::smsg;
use crate::registry::{self, handle_of, mem_handle_for, Cdm, Ep, MemReg, Nic, FIRST_NIC_ADDR, GNI_CDM_MODE_DUAL_EVENTS};
use crate::{counters, post_log};

const GNI_CQ_BLOCKING: u32 = 0x1;
const GNI_MEM_READ_ONLY: u32 = 0x1;
/// GNI_CdmAttach's "nearest NIC".
const ANY_DEVICE: u32 = u32::MAX;

/// Runs an export's body; a panic (an emulator bug) becomes GNI_RC_ERROR_RESOURCE.
fn guard(body: impl FnOnce() -> GniReturn) -> GniReturn {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(GNI_RC_ERROR_RESOURCE)
}

/// Same, for bodies that use `?` on uGNI codes.
fn guard_r(body: impl FnOnce() -> Result<(), GniReturn>) -> GniReturn {
    guard(|| body().err().unwrap_or(GNI_RC_SUCCESS))
}

/// Writes an out-parameter the caller passed (null was checked by the caller of this function).
///
/// # Safety
/// `out` must be valid for a write of `T`.
unsafe fn put<T>(out: *mut T, value: T) {
    // SAFETY: per this function's contract.
    unsafe { out.write_unaligned(value) }
}

/// True when every page of [addr, addr+len) is mapped, checked the way registration pins pages.
fn mapped(addr: u64, len: u64) -> bool {
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

// ---- communication domains and NICs ----

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CdmCreate(
    inst_id: u32,
    _ptag: u8,
    _cookie: u32,
    modes: u32,
    cdm: *mut GniCdmHandle,
) -> GniReturn {
    guard(|| {
        if cdm.is_null() {
            return GNI_RC_INVALID_PARAM;
        }
        let obj = Arc::new(Cdm { inst_id, modes, nic: Mutex::new(None) });
        let h = handle_of(&obj);
        registry::write().cdms.insert(h, obj);
        // SAFETY: non-null out-parameter.
        unsafe { put(cdm, h as GniCdmHandle) };
        GNI_RC_SUCCESS
    })
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CdmAttach(
    cdm: GniCdmHandle,
    device_id: u32,
    local_addr: *mut u32,
    nic: *mut GniNicHandle,
) -> GniReturn {
    guard_r(|| {
        if nic.is_null() {
            return Err(GNI_RC_INVALID_PARAM);
        }
        let mut reg = registry::write();
        let c = reg.cdms.get(&(cdm as usize)).ok_or(GNI_RC_INVALID_PARAM)?.clone();
        if device_id != 0 && device_id != ANY_DEVICE {
            return Err(GNI_RC_NO_MATCH);
        }
        let mut attached = c.nic.lock().unwrap_or_else(|e| e.into_inner());
        if attached.is_some() {
            return Err(GNI_RC_INVALID_STATE);
        }
        let addr = reg.next_nic_addr;
        reg.next_nic_addr += 1;
        let obj = Arc::new(Nic {
            addr,
            inst_id: c.inst_id,
            dual_events: c.modes & GNI_CDM_MODE_DUAL_EVENTS != 0,
            smsg_mode: Default::default(),
        });
        let h = handle_of(&obj);
        reg.nic_by_key.insert(obj.key(), obj.clone());
        reg.nics.insert(h, obj);
        *attached = Some(h);
        // SAFETY: non-null out-parameters.
        unsafe {
            if !local_addr.is_null() {
                put(local_addr, addr);
            }
            put(nic, h as GniNicHandle);
        }
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_CdmDestroy(cdm: GniCdmHandle) -> GniReturn {
    guard_r(|| {
        let mut reg = registry::write();
        let c = reg.cdms.remove(&(cdm as usize)).ok_or(GNI_RC_INVALID_PARAM)?;
        let nic = *c.nic.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = nic {
            reg.remove_nic(n);
        }
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CdmGetNicAddress(device_id: u32, address: *mut u32, cpu_id: *mut u32) -> GniReturn {
    guard(|| {
        if address.is_null() || cpu_id.is_null() || (device_id != 0 && device_id != ANY_DEVICE) {
            return GNI_RC_INVALID_PARAM;
        }
        // SAFETY: non-null out-parameters; sched_getcpu has no preconditions.
        unsafe {
            put(address, FIRST_NIC_ADDR);
            put(cpu_id, libc::sched_getcpu().max(0) as u32);
        }
        GNI_RC_SUCCESS
    })
}

// ---- endpoints ----

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpCreate(nic: GniNicHandle, src_cq: GniCqHandle, ep: *mut GniEpHandle) -> GniReturn {
    guard_r(|| {
        if ep.is_null() {
            return Err(GNI_RC_INVALID_PARAM);
        }
        let mut reg = registry::write();
        let n = reg.nic(nic as usize)?.clone();
        let cq = match src_cq as usize {
            0 => None,
            h => Some(reg.cq(h).ok().filter(|c| c.nic == nic as usize).ok_or(GNI_RC_INVALID_PARAM)?.clone()),
        };
        if let Some(c) = &cq {
            c.eps.fetch_add(1, Ordering::Relaxed);
        }
        let obj = Arc::new(Ep {
            seq: registry::next_ep_seq(),
            nic: n,
            nic_handle: nic as usize,
            cq,
            binding: Default::default(),
            smsg_max_send: Default::default(),
            inbox: Mutex::new(None),
        });
        let h = handle_of(&obj);
        reg.eps.insert(h, obj);
        // SAFETY: non-null out-parameter.
        unsafe { put(ep, h as GniEpHandle) };
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_EpBind(ep: GniEpHandle, remote_addr: u32, remote_id: u32) -> GniReturn {
    guard_r(|| {
        let reg = registry::read();
        let e = reg.ep(ep as usize)?;
        *e.lock_binding() = registry::Binding { remote: Some((remote_addr, remote_id)), ..Default::default() };
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_EpUnbind(ep: GniEpHandle) -> GniReturn {
    guard_r(|| {
        let reg = registry::read();
        let e = reg.ep(ep as usize)?;
        *e.lock_binding() = Default::default();
        // Unbinding releases the SMSG resources.
        e.smsg_max_send.store(0, Ordering::Relaxed);
        *e.lock_inbox() = None;
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_EpDestroy(ep: GniEpHandle) -> GniReturn {
    guard_r(|| {
        let e = registry::write().eps.remove(&(ep as usize)).ok_or(GNI_RC_INVALID_PARAM)?;
        if let Some(c) = &e.cq {
            c.eps.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(())
    })
}

// ---- completion queues ----

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CqCreate(
    nic: GniNicHandle,
    entry_count: u32,
    _delay_count: u32,
    mode: u32,
    handler: Option<CqHandler>,
    context: *mut c_void,
    cq: *mut GniCqHandle,
) -> GniReturn {
    guard_r(|| {
        if cq.is_null() || entry_count == 0 {
            return Err(GNI_RC_INVALID_PARAM);
        }
        let mut reg = registry::write();
        reg.nic(nic as usize)?;
        let obj = Arc::new(Cq::new(nic as usize, entry_count, mode & GNI_CQ_BLOCKING != 0, handler, context as usize));
        let h = handle_of(&obj);
        reg.cqs.insert(h, obj);
        // SAFETY: non-null out-parameter.
        unsafe { put(cq, h as GniCqHandle) };
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_CqDestroy(cq: GniCqHandle) -> GniReturn {
    guard_r(|| {
        let mut reg = registry::write();
        if reg.cq(cq as usize)?.eps.load(Ordering::Relaxed) > 0 {
            return Err(GNI_RC_ERROR_RESOURCE);
        }
        reg.cqs.remove(&(cq as usize));
        Ok(())
    })
}

/// Looks a CQ up without holding the registry while the caller waits on it.
fn find_cq(cq: GniCqHandle) -> Result<Arc<Cq>, GniReturn> {
    registry::read().cq(cq as usize).cloned()
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CqGetEvent(cq: GniCqHandle, event: *mut u64) -> GniReturn {
    guard_r(|| {
        if event.is_null() {
            return Err(GNI_RC_INVALID_PARAM);
        }
        let (entry, rc) = find_cq(cq)?.get_event()?;
        // SAFETY: non-null out-parameter.
        unsafe { put(event, entry) };
        if rc == GNI_RC_SUCCESS {
            Ok(())
        } else {
            Err(rc)
        }
    })
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CqWaitEvent(cq: GniCqHandle, timeout: u64, event: *mut u64) -> GniReturn {
    guard_r(|| {
        if event.is_null() {
            return Err(GNI_RC_INVALID_PARAM);
        }
        let (entry, rc) = find_cq(cq)?.wait_event(timeout)?;
        // SAFETY: non-null out-parameter.
        unsafe { put(event, entry) };
        if rc == GNI_RC_SUCCESS {
            Ok(())
        } else {
            Err(rc)
        }
    })
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_GetCompleted(cq: GniCqHandle, event: u64, pd: *mut *mut GniPostDescriptor) -> GniReturn {
    guard_r(|| {
        if pd.is_null() {
            return Err(GNI_RC_INVALID_PARAM);
        }
        let found = find_cq(cq)?.get_completed(event);
        // SAFETY: non-null out-parameter.
        unsafe { put(pd, found.unwrap_or(0) as *mut GniPostDescriptor) };
        found.map(|_| ()).ok_or(GNI_RC_DESCRIPTOR_ERROR)
    })
}

// ---- memory registration ----

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_MemRegister(
    nic: GniNicHandle,
    address: u64,
    length: u64,
    dst_cq: GniCqHandle,
    flags: u32,
    _vmdh_index: u32,
    mem_hndl: *mut GniMemHandle,
) -> GniReturn {
    guard_r(|| {
        if mem_hndl.is_null() || address == 0 || length == 0 || !mapped(address, length) {
            return Err(GNI_RC_INVALID_PARAM);
        }
        let mut reg = registry::write();
        reg.nic(nic as usize)?;
        let dst_cq = match dst_cq as usize {
            0 => None,
            h => Some(reg.cq(h)?.clone()),
        };
        reg.next_mem_id += 1;
        let handle = mem_handle_for(reg.next_mem_id, address, length);
        let m = MemReg {
            nic: nic as usize,
            addr: address,
            len: length,
            dst_cq,
            read_only: flags & GNI_MEM_READ_ONLY != 0,
            check: handle.qword2,
        };
        reg.mems.insert(handle.qword1, Arc::new(m));
        // SAFETY: non-null out-parameter.
        unsafe { put(mem_hndl, handle) };
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_MemDeregister(nic: GniNicHandle, mem_hndl: *mut GniMemHandle) -> GniReturn {
    guard_r(|| {
        if mem_hndl.is_null() {
            return Err(GNI_RC_INVALID_PARAM);
        }
        // SAFETY: non-null handle pointer from the caller.
        let mh = unsafe { mem_hndl.read_unaligned() };
        let mut reg = registry::write();
        reg.mem(&mh, nic as usize).ok_or(GNI_RC_INVALID_PARAM)?;
        reg.mems.remove(&mh.qword1);
        Ok(())
    })
}

// ---- posts ----

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_PostRdma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    guard(|| rma::post(Call::PostRdma, ep as usize, pd))
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_PostFma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    guard(|| rma::post(Call::PostFma, ep as usize, pd))
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_PostCqWrite(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    guard(|| rma::post(Call::PostCqWrite, ep as usize, pd))
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_CtPostFma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    guard(|| rma::post(Call::CtPostFma, ep as usize, pd))
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_CtPostCqWrite(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    guard(|| rma::post(Call::CtPostCqWrite, ep as usize, pd))
}

// ---- short messages ----

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgBufferSizeNeeded(attr: *mut GniSmsgAttr, size: *mut c_uint) -> GniReturn {
    guard_r(|| {
        if attr.is_null() || size.is_null() {
            return Err(GNI_RC_INVALID_PARAM);
        }
        // SAFETY: non-null attribute pointer from the caller.
        let needed = smsg::buffer_size_needed(unsafe { &attr.read_unaligned() })?;
        let needed = c_uint::try_from(needed).map_err(|_| GNI_RC_INVALID_PARAM)?;
        // SAFETY: non-null out-parameter.
        unsafe { put(size, needed) };
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgInit(ep: GniEpHandle, local: *mut GniSmsgAttr, remote: *mut GniSmsgAttr) -> GniReturn {
    guard(|| {
        if local.is_null() || remote.is_null() {
            return GNI_RC_INVALID_PARAM;
        }
        // SAFETY: non-null attribute pointers from the caller, copied once.
        let (local, remote) = unsafe { (local.read_unaligned(), remote.read_unaligned()) };
        let reg = registry::read();
        match reg.ep(ep as usize) {
            Ok(e) => smsg::init(&reg, e, &local, &remote),
            Err(rc) => rc,
        }
    })
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgSend(
    ep: GniEpHandle,
    header: *mut c_void,
    header_length: u32,
    data: *mut c_void,
    data_length: u32,
    msg_id: u32,
) -> GniReturn {
    let s = smsg::Send {
        header: header.cast(),
        header_len: header_length,
        data: data.cast(),
        data_len: data_length,
        msg_id,
        tag: 0,
    };
    guard(|| smsg::send("GNI_SmsgSend", ep as usize, &s))
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgSendWTag(
    ep: GniEpHandle,
    header: *mut c_void,
    header_length: u32,
    data: *mut c_void,
    data_length: u32,
    msg_id: u32,
    tag: u8,
) -> GniReturn {
    let s = smsg::Send {
        header: header.cast(),
        header_len: header_length,
        data: data.cast(),
        data_len: data_length,
        msg_id,
        tag,
    };
    guard(|| smsg::send("GNI_SmsgSendWTag", ep as usize, &s))
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgGetNext(ep: GniEpHandle, header: *mut *mut c_void) -> GniReturn {
    guard_r(|| {
        if header.is_null() {
            return Err(GNI_RC_INVALID_PARAM);
        }
        let msg = smsg::get_next(registry::read().ep(ep as usize)?, None)?;
        // SAFETY: non-null out-parameter.
        unsafe { put(header, msg.cast()) };
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgGetNextWTag(ep: GniEpHandle, header: *mut *mut c_void, tag: *mut u8) -> GniReturn {
    guard_r(|| {
        if header.is_null() || tag.is_null() {
            return Err(GNI_RC_INVALID_PARAM);
        }
        // SAFETY: non-null in/out tag from the caller.
        let mut t = unsafe { tag.read() };
        let msg = smsg::get_next(registry::read().ep(ep as usize)?, Some(&mut t))?;
        // SAFETY: non-null out-parameters.
        unsafe {
            put(header, msg.cast());
            put(tag, t);
        }
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_SmsgRelease(ep: GniEpHandle) -> GniReturn {
    guard_r(|| match smsg::release(registry::read().ep(ep as usize)?) {
        GNI_RC_SUCCESS => Ok(()),
        rc => Err(rc),
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_SmsgSetDeliveryMode(nic: GniNicHandle, dlvr_mode: u16) -> GniReturn {
    guard(|| {
        let reg = registry::read();
        let n = reg.nic(nic as usize).ok();
        if let Some(n) = n {
            n.smsg_mode.store(dlvr_mode, Ordering::Relaxed);
        }
        let rc = if n.is_some() { GNI_RC_SUCCESS } else { GNI_RC_INVALID_PARAM };
        if post_log::enabled() {
            post_log::record(
                "GNI_SmsgSetDeliveryMode",
                &[("nic", n.map(|n| n.addr as u64).into()), ("dlvr_mode", (dlvr_mode as u64).into())],
                rc,
            );
        }
        rc
    })
}

// ---- CQ entry accessors (the GNI_CQ_* macros call these; encoding in cq.rs) ----

macro_rules! cq_getters {
    ($($name:ident => $body:expr;)*) => {$(
        #[cfg_attr(not(test), no_mangle)]
        pub extern "C" fn $name(entry: u64) -> u64 {
            let f: fn(u64) -> u64 = $body;
            f(entry)
        }
    )*};
}

cq_getters! {
    gni_cq_get_data => cq::data;
    gni_cq_get_source => |e| cq::is_remote(e) as u64;
    gni_cq_get_status => cq::status;
    gni_cq_get_info => |_| 0;
    gni_cq_overrun => |e| cq::overrun(e) as u64;
    gni_cq_rem_overrun => |_| 0;
    gni_cq_get_inst_id => cq::inst_id;
    gni_cq_get_rem_inst_id => cq::inst_id;
    gni_cq_get_tid => |_| 0;
    gni_cq_get_msg_id => cq::msg_id;
    gni_cq_get_type => cq::ty;
    gni_cq_get_block_id => |_| 0;
    gni_cq_get_unsuccessful_cnt => |_| 0;
    gni_cq_get_marker_id => |_| 0;
    gni_cq_get_failed_enqueue_cnt => |_| 0;
    gni_cq_get_ce_id => |_| 0;
    gni_cq_get_reductn_id => |_| 0;
    gni_cq_get_trans_type => |_| 0;
}

macro_rules! cq_setters {
    ($($name:ident => $body:expr;)*) => {$(
        #[cfg_attr(not(test), no_mangle)]
        pub unsafe extern "C" fn $name(entry: *mut u64, value: u64) {
            let f: fn(u64, u64) -> u64 = $body;
            if !entry.is_null() {
                // SAFETY: non-null entry pointer from the caller.
                unsafe { entry.write_unaligned(f(entry.read_unaligned(), value)) };
            }
        }
    )*};
}

cq_setters! {
    gni_cq_set_inst_id => cq::set_inst_id;
    gni_cq_set_rem_inst_id => cq::set_inst_id;
    gni_cq_set_tid => |e, _| e;
    gni_cq_set_msg_id => cq::set_msg_id;
    gni_cq_set_type => cq::set_type;
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn gni_cq_clr_status(entry: *mut u64) {
    if !entry.is_null() {
        // SAFETY: non-null entry pointer from the caller.
        unsafe { entry.write_unaligned(cq::clear_status(entry.read_unaligned())) };
    }
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn gni_cq_status_dla_overflow(_entry: u64) -> c_uint {
    0
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn gni_cq_bte_enq_status(_entry: u64) -> c_uint {
    0
}

/// `extern const char *gni_err_str[]`, indexed by gni_return_t.
#[repr(transparent)]
pub struct ErrStrTable([*const c_char; 14]);

// SAFETY: the table only holds pointers to immutable static strings.
unsafe impl Sync for ErrStrTable {}

#[cfg_attr(not(test), no_mangle)]
pub static gni_err_str: ErrStrTable = ErrStrTable([
    c"GNI_RC_SUCCESS".as_ptr(),
    c"GNI_RC_NOT_DONE".as_ptr(),
    c"GNI_RC_INVALID_PARAM".as_ptr(),
    c"GNI_RC_ERROR_RESOURCE".as_ptr(),
    c"GNI_RC_TIMEOUT".as_ptr(),
    c"GNI_RC_PERMISSION_ERROR".as_ptr(),
    c"GNI_RC_DESCRIPTOR_ERROR".as_ptr(),
    c"GNI_RC_ALIGNMENT_ERROR".as_ptr(),
    c"GNI_RC_INVALID_STATE".as_ptr(),
    c"GNI_RC_NO_MATCH".as_ptr(),
    c"GNI_RC_SIZE_ERROR".as_ptr(),
    c"GNI_RC_TRANSACTION_ERROR".as_ptr(),
    c"GNI_RC_ILLEGAL_OP".as_ptr(),
    c"GNI_RC_ERROR_NOMEM".as_ptr(),
]);

// ---- the emulator's control API (cabi/aar_emu.h) ----

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_set_network(latency_ad_us: f64, latency_bs_us: f64, stall_ad: f64, stall_bs: f64) -> c_int {
    let ok = catch_unwind(|| {
        // The response-stall fraction is only set through AAR_EMU_NETWORK; keep the default here.
        let profile = NetworkProfile {
            latency_ad: latency_ad_us,
            latency_bs: latency_bs_us,
            stall_ad,
            stall_bs,
            ..Default::default()
        };
        counters::set_network(profile)
    });
    if matches!(ok, Ok(true)) {
        0
    } else {
        -1
    }
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_counters_add(
    req_flits: i64,
    req_stalled: i64,
    rsp_latency: i64,
    rsp_packets: i64,
    rsp_stalled: i64,
) {
    counters::add([req_flits, req_stalled, rsp_latency, rsp_packets, rsp_stalled]);
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_counters_set(
    req_flits: i64,
    req_stalled: i64,
    rsp_latency: i64,
    rsp_packets: i64,
    rsp_stalled: i64,
) {
    let _ = catch_unwind(|| counters::set([req_flits, req_stalled, rsp_latency, rsp_packets, rsp_stalled]));
}

#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn aar_emu_counters_get(values: *mut i64) {
    if values.is_null() {
        return;
    }
    for (i, v) in counters::get().into_iter().enumerate() {
        // SAFETY: the caller passes room for five long longs (aar_emu.h).
        unsafe { values.add(i).write_unaligned(v) };
    }
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_counters_freeze(on: c_int) {
    counters::FROZEN.store(on != 0, Ordering::Relaxed);
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_post_count() -> u64 {
    counters::post_count()
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_clock_ns() -> u64 {
    catch_unwind(counters::clock_ns).unwrap_or(0)
}
