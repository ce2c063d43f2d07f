//! Every symbol libugni.so exports, in one place: the uGNI subset (declared in cabi/gni_pub.h;
//! the prototypes are those of docs/abi.md), the CQ-entry accessors behind the `GNI_CQ_*`
//! macros, `gni_err_str`, and the emulator's own control API (cabi/aar_emu.h); the DMAPP subset
//! (cabi/dmapp.h) and its control calls are in the submodule [`dmapp`].
//!
//! Each export only handles the C side: NULL out-parameters, reading and writing through the
//! caller's pointers, and a panic (an emulator bug), which becomes GNI_RC_ERROR_RESOURCE instead
//! of crossing into C. The work is done by the module of its concern. Exports that dereference a
//! pointer the caller passed are `unsafe` and say what they need; a handle is only looked up in
//! the registry, never dereferenced, so a call that takes only handles and values is safe.
//! Exports are `no_mangle` except in unit tests.
#![allow(non_snake_case, non_upper_case_globals)] // C symbol names

mod dmapp;

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use aar_abi::*;

use crate::rma::{self, Call};
use crate::{counters, cq_entry, datagram, domain, memory, smsg};

// Every export has exactly the type aar_abi gives that function, the type libaar.so calls it
// through, so the emulator, the shim and gni_pub.h cannot drift apart.
const _: CdmCreateFn = GNI_CdmCreate;
const _: CdmAttachFn = GNI_CdmAttach;
const _: CdmDestroyFn = GNI_CdmDestroy;
const _: CdmGetNicAddressFn = GNI_CdmGetNicAddress;
const _: EpCreateFn = GNI_EpCreate;
const _: EpBindFn = GNI_EpBind;
const _: EpFn = GNI_EpUnbind;
const _: EpFn = GNI_EpDestroy;
const _: CqCreateFn = GNI_CqCreate;
const _: CqDestroyFn = GNI_CqDestroy;
const _: CqGetEventFn = GNI_CqGetEvent;
const _: CqWaitEventFn = GNI_CqWaitEvent;
const _: GetCompletedFn = GNI_GetCompleted;
const _: MemRegisterFn = GNI_MemRegister;
const _: MemDeregisterFn = GNI_MemDeregister;
const _: PostFn = GNI_PostRdma;
const _: PostFn = GNI_PostFma;
const _: PostFn = GNI_PostCqWrite;
const _: PostFn = GNI_CtPostFma;
const _: PostFn = GNI_CtPostCqWrite;
const _: SmsgBufferSizeNeededFn = GNI_SmsgBufferSizeNeeded;
const _: SmsgInitFn = GNI_SmsgInit;
const _: SmsgSendFn = GNI_SmsgSend;
const _: SmsgSendWTagFn = GNI_SmsgSendWTag;
const _: SmsgGetNextFn = GNI_SmsgGetNext;
const _: SmsgGetNextWTagFn = GNI_SmsgGetNextWTag;
const _: SmsgReleaseFn = GNI_SmsgRelease;
const _: SmsgSetDeliveryModeFn = GNI_SmsgSetDeliveryMode;
const _: [CqEntryGetFn; 18] = [
    gni_cq_get_data,
    gni_cq_get_source,
    gni_cq_get_status,
    gni_cq_get_info,
    gni_cq_overrun,
    gni_cq_rem_overrun,
    gni_cq_get_inst_id,
    gni_cq_get_rem_inst_id,
    gni_cq_get_tid,
    gni_cq_get_msg_id,
    gni_cq_get_type,
    gni_cq_get_block_id,
    gni_cq_get_unsuccessful_cnt,
    gni_cq_get_marker_id,
    gni_cq_get_failed_enqueue_cnt,
    gni_cq_get_ce_id,
    gni_cq_get_reductn_id,
    gni_cq_get_trans_type,
];
const _: [CqEntrySetFn; 5] =
    [gni_cq_set_inst_id, gni_cq_set_rem_inst_id, gni_cq_set_tid, gni_cq_set_msg_id, gni_cq_set_type];
const _: CqEntryClearFn = gni_cq_clr_status;
const _: [CqEntryFlagFn; 2] = [gni_cq_status_dla_overflow, gni_cq_bte_enq_status];

/// Runs an export's body and returns its code (0 is success in uGNI and DMAPP alike); a panic
/// (an emulator bug) becomes `on_panic` instead of crossing into C.
fn guarded(on_panic: u32, body: impl FnOnce() -> Result<(), u32>) -> u32 {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(rc)) => rc,
        Err(_) => on_panic,
    }
}

/// [`guarded`] for uGNI: a panic becomes GNI_RC_ERROR_RESOURCE.
fn guard(body: impl FnOnce() -> Result<(), GniReturn>) -> GniReturn {
    guarded(GNI_RC_ERROR_RESOURCE, body)
}

/// GNI_RC_INVALID_PARAM unless `ok` (the caller's pointers are usable).
fn need(ok: bool) -> Result<(), GniReturn> {
    if ok {
        Ok(())
    } else {
        Err(GNI_RC_INVALID_PARAM)
    }
}

/// A code as a result, so a body can return what it computed before failing.
fn code(rc: GniReturn) -> Result<(), GniReturn> {
    if rc == GNI_RC_SUCCESS {
        Ok(())
    } else {
        Err(rc)
    }
}

/// Writes an out-parameter the caller passed.
///
/// # Safety
/// `out` must be valid for a write of `T`.
unsafe fn put<T>(out: *mut T, value: T) {
    // SAFETY: per this function's contract.
    unsafe { out.write_unaligned(value) }
}

// ---- communication domains and NICs ----------------------------------------------------------

/// # Safety
/// `cdm` is NULL or valid for a write of a handle.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CdmCreate(
    inst_id: u32,
    _ptag: u8,
    _cookie: u32,
    modes: u32,
    cdm: *mut GniCdmHandle,
) -> GniReturn {
    guard(|| {
        need(!cdm.is_null())?;
        let h = domain::cdm_create(inst_id, modes);
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(cdm, h as GniCdmHandle) };
        Ok(())
    })
}

/// # Safety
/// `local_addr` is NULL or valid for a write; `nic` is NULL or valid for a write of a handle.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CdmAttach(
    cdm: GniCdmHandle,
    device_id: u32,
    local_addr: *mut u32,
    nic: *mut GniNicHandle,
) -> GniReturn {
    guard(|| {
        need(!nic.is_null())?;
        let (addr, h) = domain::cdm_attach(cdm as usize, device_id)?;
        // SAFETY: non-null out-parameters (contract above).
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
    guard(|| domain::cdm_destroy(cdm as usize))
}

/// # Safety
/// `address` and `cpu_id` are each NULL or valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CdmGetNicAddress(device_id: u32, address: *mut u32, cpu_id: *mut u32) -> GniReturn {
    guard(|| {
        need(!address.is_null() && !cpu_id.is_null())?;
        let (addr, cpu) = domain::nic_address(device_id)?;
        // SAFETY: non-null out-parameters (contract above).
        unsafe {
            put(address, addr);
            put(cpu_id, cpu);
        }
        Ok(())
    })
}

// ---- endpoints ---------------------------------------------------------------------------------

/// # Safety
/// `ep` is NULL or valid for a write of a handle.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpCreate(nic: GniNicHandle, src_cq: GniCqHandle, ep: *mut GniEpHandle) -> GniReturn {
    guard(|| {
        need(!ep.is_null())?;
        let h = domain::ep_create(nic as usize, src_cq as usize)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(ep, h as GniEpHandle) };
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_EpBind(ep: GniEpHandle, remote_addr: u32, remote_id: u32) -> GniReturn {
    guard(|| domain::ep_bind(ep as usize, remote_addr, remote_id))
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_EpUnbind(ep: GniEpHandle) -> GniReturn {
    guard(|| domain::ep_unbind(ep as usize))
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_EpDestroy(ep: GniEpHandle) -> GniReturn {
    guard(|| domain::ep_destroy(ep as usize))
}

// ---- completion queues -------------------------------------------------------------------------

/// # Safety
/// `cq` is NULL or valid for a write of a handle; `handler`, if any, may be called with `context`
/// and an entry from inside GNI_CqGetEvent and GNI_CqWaitEvent on this queue.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CqCreate(
    nic: GniNicHandle,
    entry_count: u32,
    _delay_count: u32,
    mode: u32,
    handler: Option<GniCqHandler>,
    context: *mut c_void,
    cq: *mut GniCqHandle,
) -> GniReturn {
    guard(|| {
        need(!cq.is_null())?;
        let h = domain::cq_create(nic as usize, entry_count, mode, handler, context as usize)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(cq, h as GniCqHandle) };
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_CqDestroy(cq: GniCqHandle) -> GniReturn {
    guard(|| domain::cq_destroy(cq as usize))
}

/// # Safety
/// `event` is NULL or valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CqGetEvent(cq: GniCqHandle, event: *mut GniCqEntry) -> GniReturn {
    guard(|| {
        need(!event.is_null())?;
        let (entry, rc) = domain::cq_find(cq as usize)?.get_event()?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(event, entry) };
        code(rc)
    })
}

/// # Safety
/// `event` is NULL or valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CqWaitEvent(cq: GniCqHandle, timeout: u64, event: *mut GniCqEntry) -> GniReturn {
    guard(|| {
        need(!event.is_null())?;
        let (entry, rc) = domain::cq_find(cq as usize)?.wait_event(timeout)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(event, entry) };
        code(rc)
    })
}

/// # Safety
/// `pd` is NULL or valid for a write of a pointer.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_GetCompleted(
    cq: GniCqHandle,
    event: GniCqEntry,
    pd: *mut *mut GniPostDescriptor,
) -> GniReturn {
    guard(|| {
        need(!pd.is_null())?;
        let found = domain::cq_find(cq as usize)?.get_completed(event);
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(pd, found.unwrap_or(0) as *mut GniPostDescriptor) };
        found.map(|_| ()).ok_or(GNI_RC_DESCRIPTOR_ERROR)
    })
}

// ---- memory registration -----------------------------------------------------------------------

/// # Safety
/// `mem_hndl` is NULL or valid for a write.
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
    guard(|| {
        need(!mem_hndl.is_null())?;
        let handle = memory::register(nic as usize, address, length, dst_cq as usize, flags)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(mem_hndl, handle) };
        Ok(())
    })
}

/// # Safety
/// `mem_hndl` is NULL or valid for a read.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_MemDeregister(nic: GniNicHandle, mem_hndl: *mut GniMemHandle) -> GniReturn {
    guard(|| {
        need(!mem_hndl.is_null())?;
        // SAFETY: non-null handle pointer (contract above).
        let mh = unsafe { mem_hndl.read_unaligned() };
        memory::deregister(nic as usize, &mh)
    })
}

// ---- posts -------------------------------------------------------------------------------------

/// # Safety
/// `pd` is NULL or a readable `gni_post_descriptor_t` (what the post's addresses and handles
/// name is checked against the registrations).
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostRdma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's descriptor (contract above).
    guard(|| unsafe { rma::post(Call::PostRdma, ep as usize, pd) })
}

/// # Safety
/// As for [`GNI_PostRdma`].
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostFma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's descriptor (contract above).
    guard(|| unsafe { rma::post(Call::PostFma, ep as usize, pd) })
}

/// # Safety
/// As for [`GNI_PostRdma`].
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostCqWrite(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's descriptor (contract above).
    guard(|| unsafe { rma::post(Call::PostCqWrite, ep as usize, pd) })
}

/// # Safety
/// As for [`GNI_PostRdma`], and the head's `next_descr` is NULL or the first of a NULL-terminated
/// list of readable chain elements of the type the head's post type implies (cabi/gni_pub.h).
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CtPostFma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's descriptor and chain (contract above).
    guard(|| unsafe { rma::post(Call::CtPostFma, ep as usize, pd) })
}

/// # Safety
/// As for [`GNI_CtPostFma`].
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CtPostCqWrite(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's descriptor and chain (contract above).
    guard(|| unsafe { rma::post(Call::CtPostCqWrite, ep as usize, pd) })
}

// ---- short messages ----------------------------------------------------------------------------

/// # Safety
/// `attr` is NULL or readable; `size` is NULL or valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgBufferSizeNeeded(attr: *mut GniSmsgAttr, size: *mut c_uint) -> GniReturn {
    guard(|| {
        need(!attr.is_null() && !size.is_null())?;
        // SAFETY: non-null attribute pointer (contract above).
        let needed = smsg::buffer_size_needed(&unsafe { attr.read_unaligned() })?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(size, needed) };
        Ok(())
    })
}

/// # Safety
/// `local` and `remote` are each NULL or readable.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgInit(ep: GniEpHandle, local: *mut GniSmsgAttr, remote: *mut GniSmsgAttr) -> GniReturn {
    guard(|| {
        need(!local.is_null() && !remote.is_null())?;
        // SAFETY: non-null attribute pointers (contract above), copied once.
        let (local, remote) = unsafe { (local.read_unaligned(), remote.read_unaligned()) };
        smsg::init(ep as usize, &local, &remote)
    })
}

/// # Safety
/// `header` and `data` are each NULL or readable for their lengths.
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
    // SAFETY: the caller's buffers (contract above).
    guard(|| unsafe { smsg::send("GNI_SmsgSend", ep as usize, &s) })
}

/// # Safety
/// As for [`GNI_SmsgSend`].
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
    // SAFETY: the caller's buffers (contract above).
    guard(|| unsafe { smsg::send("GNI_SmsgSendWTag", ep as usize, &s) })
}

/// # Safety
/// `header` is NULL or valid for a write of a pointer.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgGetNext(ep: GniEpHandle, header: *mut *mut c_void) -> GniReturn {
    guard(|| {
        need(!header.is_null())?;
        let msg = smsg::get_next(ep as usize, None)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(header, msg.cast()) };
        Ok(())
    })
}

/// # Safety
/// `header` is NULL or valid for a write of a pointer; `tag` is NULL or valid for a read and a
/// write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgGetNextWTag(ep: GniEpHandle, header: *mut *mut c_void, tag: *mut u8) -> GniReturn {
    guard(|| {
        need(!header.is_null() && !tag.is_null())?;
        // SAFETY: non-null in/out tag (contract above).
        let mut t = unsafe { tag.read() };
        let msg = smsg::get_next(ep as usize, Some(&mut t))?;
        // SAFETY: non-null out-parameters (contract above).
        unsafe {
            put(header, msg.cast());
            put(tag, t);
        }
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_SmsgRelease(ep: GniEpHandle) -> GniReturn {
    guard(|| smsg::release(ep as usize))
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_SmsgSetDeliveryMode(nic: GniNicHandle, dlvr_mode: u16) -> GniReturn {
    guard(|| smsg::set_delivery_mode(nic as usize, dlvr_mode))
}

// ---- datagrams (crate::datagram) -------------------------------------------------------------

const _: EpPostDataFn = GNI_EpPostData;
const _: EpPostDataWIdFn = GNI_EpPostDataWId;
const _: EpPostDataTestFn = GNI_EpPostDataTest;
const _: EpPostDataTestByIdFn = GNI_EpPostDataTestById;
const _: EpPostDataWaitFn = GNI_EpPostDataWait;
const _: EpPostDataWaitByIdFn = GNI_EpPostDataWaitById;
const _: PostDataProbeFn = GNI_PostDataProbe;
const _: PostDataProbeByIdFn = GNI_PostDataProbeById;
const _: PostdataProbeWaitByIdFn = GNI_PostdataProbeWaitById;
const _: EpPostDataCancelFn = GNI_EpPostDataCancel;
const _: EpPostDataCancelByIdFn = GNI_EpPostDataCancelById;

/// Posts a datagram: `in_data` copied now, `out_buf` kept for the peer's data.
///
/// # Safety
/// `in_data` is NULL or readable for `data_len` bytes.
unsafe fn post_data(
    ep: GniEpHandle,
    in_data: *mut c_void,
    data_len: u16,
    out_buf: *mut c_void,
    buf_size: u16,
    id: Option<u64>,
) -> GniReturn {
    guard(|| {
        need(!(in_data.is_null() && data_len > 0 || out_buf.is_null() && buf_size > 0))?;
        need(data_len as u32 <= GNI_DATAGRAM_MAXSIZE).map_err(|_| GNI_RC_SIZE_ERROR)?;
        let bytes: &[u8] = match data_len {
            0 => &[],
            // SAFETY: non-null and readable for data_len bytes (contract above).
            n => unsafe { std::slice::from_raw_parts(in_data.cast(), n as usize) },
        };
        datagram::post(ep as usize, bytes, out_buf as u64, buf_size, id)
    })
}

/// Runs a datagram's Test or Wait (`f`) and writes the state and peer it gives to the caller's
/// out-parameters.
///
/// # Safety
/// Each pointer is NULL or valid for a write.
unsafe fn collect(
    state: *mut GniPostState,
    addr: *mut u32,
    id: *mut u32,
    f: impl FnOnce() -> Result<(GniPostState, u32, u32), GniReturn>,
) -> GniReturn {
    guard(|| {
        need(!state.is_null() && !addr.is_null() && !id.is_null())?;
        let (s, a, i) = f()?;
        // SAFETY: non-null out-parameters (contract above).
        unsafe {
            put(state, s);
            put(addr, a);
            put(id, i);
        }
        Ok(())
    })
}

/// # Safety
/// `in_data` is NULL or readable for `data_len` bytes; `out_buf` is NULL or stays valid for
/// writes of `buf_size` bytes until the datagram is collected (Test/Wait report it completed),
/// cancelled or its endpoint destroyed.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpPostData(
    ep: GniEpHandle,
    in_data: *mut c_void,
    data_len: u16,
    out_buf: *mut c_void,
    buf_size: u16,
) -> GniReturn {
    // SAFETY: the caller's buffers (contract above).
    unsafe { post_data(ep, in_data, data_len, out_buf, buf_size, None) }
}

/// # Safety
/// As for [`GNI_EpPostData`].
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpPostDataWId(
    ep: GniEpHandle,
    in_data: *mut c_void,
    data_len: u16,
    out_buf: *mut c_void,
    buf_size: u16,
    datagram_id: u64,
) -> GniReturn {
    // SAFETY: the caller's buffers (contract above).
    unsafe { post_data(ep, in_data, data_len, out_buf, buf_size, Some(datagram_id)) }
}

/// # Safety
/// The three out-parameters are each NULL or valid for a write; the datagram's `out_buf` is
/// still valid (see [`GNI_EpPostData`]).
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpPostDataTest(
    ep: GniEpHandle,
    post_state: *mut GniPostState,
    remote_addr: *mut u32,
    remote_id: *mut u32,
) -> GniReturn {
    // SAFETY: the caller's pointers and the datagram's buffer (contract above).
    unsafe { collect(post_state, remote_addr, remote_id, || datagram::test(ep as usize, None)) }
}

/// # Safety
/// As for [`GNI_EpPostDataTest`].
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpPostDataTestById(
    ep: GniEpHandle,
    datagram_id: u64,
    post_state: *mut GniPostState,
    remote_addr: *mut u32,
    remote_id: *mut u32,
) -> GniReturn {
    // SAFETY: the caller's pointers and the datagram's buffer (contract above).
    unsafe { collect(post_state, remote_addr, remote_id, || datagram::test(ep as usize, Some(datagram_id))) }
}

/// # Safety
/// As for [`GNI_EpPostDataTest`].
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpPostDataWait(
    ep: GniEpHandle,
    timeout: u32,
    post_state: *mut GniPostState,
    remote_addr: *mut u32,
    remote_id: *mut u32,
) -> GniReturn {
    // SAFETY: the caller's pointers and the datagram's buffer (contract above).
    unsafe { collect(post_state, remote_addr, remote_id, || datagram::wait(ep as usize, None, timeout)) }
}

/// # Safety
/// As for [`GNI_EpPostDataTest`].
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpPostDataWaitById(
    ep: GniEpHandle,
    datagram_id: u64,
    timeout: u32,
    post_state: *mut GniPostState,
    remote_addr: *mut u32,
    remote_id: *mut u32,
) -> GniReturn {
    // SAFETY: the caller's pointers and the datagram's buffer (contract above).
    unsafe { collect(post_state, remote_addr, remote_id, || datagram::wait(ep as usize, Some(datagram_id), timeout)) }
}

/// # Safety
/// `remote_addr` and `remote_id` are each NULL or valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostDataProbe(nic: GniNicHandle, remote_addr: *mut u32, remote_id: *mut u32) -> GniReturn {
    guard(|| {
        need(!remote_addr.is_null() && !remote_id.is_null())?;
        let (addr, id, _) = datagram::probe(nic as usize)?;
        // SAFETY: non-null out-parameters (contract above).
        unsafe {
            put(remote_addr, addr);
            put(remote_id, id);
        }
        Ok(())
    })
}

/// # Safety
/// `datagram_id` is NULL or valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostDataProbeById(nic: GniNicHandle, datagram_id: *mut u64) -> GniReturn {
    guard(|| {
        need(!datagram_id.is_null())?;
        let (_, _, id) = datagram::probe(nic as usize)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(datagram_id, id) };
        Ok(())
    })
}

/// # Safety
/// `datagram_id` is NULL or valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostdataProbeWaitById(
    nic: GniNicHandle,
    timeout: u32,
    datagram_id: *mut u64,
) -> GniReturn {
    guard(|| {
        need(!datagram_id.is_null())?;
        let (_, _, id) = datagram::probe_wait(nic as usize, timeout)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(datagram_id, id) };
        Ok(())
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_EpPostDataCancel(ep: GniEpHandle) -> GniReturn {
    guard(|| datagram::cancel(ep as usize, None))
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_EpPostDataCancelById(ep: GniEpHandle, datagram_id: u64) -> GniReturn {
    guard(|| datagram::cancel(ep as usize, Some(datagram_id)))
}

// ---- the rest of what public uGNI programs call: event data, CQ errors, the device, the job's
// ptag, segment registration (docs/abi.md, the functions) --------------------------------------

const _: EpSetEventDataFn = GNI_EpSetEventData;
const _: CqErrorStrFn = GNI_CqErrorStr;
const _: CqErrorRecoverableFn = GNI_CqErrorRecoverable;
const _: GetDeviceTypeFn = GNI_GetDeviceType;
const _: GetPtagFn = GNI_GetPtag;
const _: MemRegisterSegmentsFn = GNI_MemRegisterSegments;

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn GNI_EpSetEventData(ep: GniEpHandle, local_event: u32, remote_event: u32) -> GniReturn {
    guard(|| domain::ep_set_event_data(ep as usize, local_event, remote_event))
}

/// Writes the entry's description, NUL-terminated; a buffer too small gets as much as fits (and
/// the NUL) and GNI_RC_SIZE_ERROR.
///
/// # Safety
/// `buffer` is NULL or valid for writes of `len` bytes.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CqErrorStr(entry: GniCqEntry, buffer: *mut c_void, len: u32) -> GniReturn {
    guard(|| {
        need(!buffer.is_null() && len > 0)?;
        let text = cq_entry::describe(entry);
        let fits = text.len().min(len as usize - 1);
        // SAFETY: non-null buffer of `len` bytes (contract above); fits + 1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast::<u8>(), fits);
            buffer.cast::<u8>().add(fits).write(0);
        }
        if fits < text.len() {
            Err(GNI_RC_SIZE_ERROR)
        } else {
            Ok(())
        }
    })
}

/// # Safety
/// `recoverable` is NULL or valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CqErrorRecoverable(entry: GniCqEntry, recoverable: *mut u32) -> GniReturn {
    guard(|| {
        need(!recoverable.is_null())?;
        let verdict = cq_entry::recoverable(entry).ok_or(GNI_RC_INVALID_STATE)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(recoverable, verdict as u32) };
        Ok(())
    })
}

/// # Safety
/// `dev_type` is NULL or valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_GetDeviceType(dev_type: *mut GniNicDevice) -> GniReturn {
    guard(|| {
        need(!dev_type.is_null())?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(dev_type, GNI_DEVICE_ARIES) };
        Ok(())
    })
}

/// # Safety
/// `ptag` is NULL or valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_GetPtag(device_id: u32, cookie: u32, ptag: *mut u8) -> GniReturn {
    guard(|| {
        need(!ptag.is_null())?;
        let found = domain::ptag_of_cookie(device_id, cookie)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(ptag, found) };
        Ok(())
    })
}

/// # Safety
/// `segments` is NULL or an array of `segment_count` readable segments; `mem_hndl` is NULL or
/// valid for a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_MemRegisterSegments(
    nic: GniNicHandle,
    segments: *mut GniMemSegment,
    segment_count: u32,
    dst_cq: GniCqHandle,
    flags: u32,
    _vmdh_index: u32,
    mem_hndl: *mut GniMemHandle,
) -> GniReturn {
    guard(|| {
        need(!segments.is_null() && !mem_hndl.is_null())?;
        // SAFETY: a non-null array of segment_count segments (contract above), only read.
        let segments = unsafe { std::slice::from_raw_parts(segments, segment_count as usize) };
        let handle = memory::register_segments(nic as usize, segments, dst_cq as usize, flags)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(mem_hndl, handle) };
        Ok(())
    })
}

// ---- CQ-entry accessors (encoding in cq_entry) --------------------------------------------------

macro_rules! cq_getters {
    ($($name:ident => $body:expr;)*) => {$(
        #[cfg_attr(not(test), no_mangle)]
        pub extern "C" fn $name(entry: GniCqEntry) -> u64 {
            let f: fn(u64) -> u64 = $body;
            f(entry)
        }
    )*};
}

cq_getters! {
    gni_cq_get_data => cq_entry::data;
    gni_cq_get_source => |e| cq_entry::is_remote(e) as u64;
    gni_cq_get_status => cq_entry::status;
    gni_cq_get_info => |_| 0;
    gni_cq_overrun => |e| cq_entry::overrun(e) as u64;
    gni_cq_rem_overrun => |_| 0;
    gni_cq_get_inst_id => cq_entry::inst_id;
    gni_cq_get_rem_inst_id => cq_entry::rem_inst_id;
    gni_cq_get_tid => |_| 0;
    gni_cq_get_msg_id => cq_entry::msg_id;
    gni_cq_get_type => cq_entry::ty;
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
        /// # Safety
        /// `entry` is NULL or valid for a read and a write.
        #[cfg_attr(not(test), no_mangle)]
        pub unsafe extern "C" fn $name(entry: *mut GniCqEntry, value: u64) {
            let f: fn(u64, u64) -> u64 = $body;
            if !entry.is_null() {
                // SAFETY: non-null entry pointer (contract above).
                unsafe { entry.write_unaligned(f(entry.read_unaligned(), value)) };
            }
        }
    )*};
}

cq_setters! {
    gni_cq_set_inst_id => cq_entry::set_inst_id;
    gni_cq_set_rem_inst_id => cq_entry::set_rem_inst_id;
    gni_cq_set_tid => |e, _| e;
    gni_cq_set_msg_id => cq_entry::set_msg_id;
    gni_cq_set_type => cq_entry::set_type;
}

/// # Safety
/// `entry` is NULL or valid for a read and a write.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn gni_cq_clr_status(entry: *mut GniCqEntry) {
    if !entry.is_null() {
        // SAFETY: non-null entry pointer (contract above).
        unsafe { entry.write_unaligned(cq_entry::clear_status(entry.read_unaligned())) };
    }
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn gni_cq_status_dla_overflow(_entry: GniCqEntry) -> c_uint {
    0
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn gni_cq_bte_enq_status(_entry: GniCqEntry) -> c_uint {
    0
}

/// `extern const char *gni_err_str[]`, indexed by gni_return_t.
#[repr(transparent)]
pub struct ErrStrTable([*const c_char; GNI_RC_ERROR_NOMEM as usize + 1]);

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

// ---- the emulator's control API (cabi/aar_emu.h) -----------------------------------------------

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_set_network(latency_ad_us: f64, latency_bs_us: f64, stall_ad: f64, stall_bs: f64) -> c_int {
    // The response-stall fraction is only set through AAR_EMU_NETWORK, and stays.
    let ok = catch_unwind(|| counters::set_network(latency_ad_us, latency_bs_us, stall_ad, stall_bs));
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

/// # Safety
/// `values` is NULL or valid for writes of five `long long`s.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn aar_emu_counters_get(values: *mut i64) {
    if values.is_null() {
        return;
    }
    for (i, v) in counters::get().into_iter().enumerate() {
        // SAFETY: non-null, with room for five values (contract above).
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
