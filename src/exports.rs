//! Every symbol libaar.so exports, in one place: the ABI surface in one screen.
//!
//! uGNI calls that put traffic on the network or steer it are interposed; MPI collectives that
//! can mark A/B iterations are wrapped; the C API of `cabi/aar.h` lets an application pin or
//! pause routing and mark iterations. Exports are `no_mangle` except in unit tests, so the test
//! harness itself is never interposed.
#![allow(non_snake_case)]

use crate::mpi::{self, AllToAllFn, AllreduceFn, BarrierFn, BcastFn, ReduceFn, RootedFn};
use crate::state::NICS;
use crate::trylock::Inside;
use crate::{control, init, iterations, rows, ugni};
use aar_abi::*;
use aar_engine::{Policy, RoutingMode};
use std::ffi::{c_char, c_int, c_void, CStr};

// Each interposed function has exactly the type of the function it stands in for: the uGNI ones
// aar_abi's (which the emulator's definitions are checked against too), the MPI ones `mpi`'s.
const _: PostFn = GNI_PostRdma;
const _: PostFn = GNI_PostFma;
const _: PostFn = GNI_PostCqWrite;
const _: PostFn = GNI_CtPostFma;
const _: PostFn = GNI_CtPostCqWrite;
const _: SmsgSendFn = GNI_SmsgSend;
const _: SmsgSendWTagFn = GNI_SmsgSendWTag;
const _: SmsgSetDeliveryModeFn = GNI_SmsgSetDeliveryMode;
const _: CdmAttachFn = GNI_CdmAttach;
const _: CdmDestroyFn = GNI_CdmDestroy;
const _: BarrierFn = MPI_Barrier;
const _: AllreduceFn = MPI_Allreduce;
const _: ReduceFn = MPI_Reduce;
const _: BcastFn = MPI_Bcast;
const _: AllToAllFn = MPI_Allgather;
const _: AllToAllFn = MPI_Alltoall;
const _: RootedFn = MPI_Gather;
const _: RootedFn = MPI_Scatter;

// ---- uGNI posts ------------------------------------------------------------------------------

/// # Safety
/// uGNI's contract for GNI_PostRdma.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostRdma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's arguments, under uGNI's contract.
    unsafe { ugni::post(&ugni::POST_RDMA, ep, pd) }
}

/// # Safety
/// uGNI's contract for GNI_PostFma.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostFma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's arguments, under uGNI's contract.
    unsafe { ugni::post(&ugni::POST_FMA, ep, pd) }
}

/// # Safety
/// uGNI's contract for GNI_PostCqWrite.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostCqWrite(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's arguments, under uGNI's contract.
    unsafe { ugni::post(&ugni::POST_CQWRITE, ep, pd) }
}

/// Chained FMA: only the head descriptor is read and routed (see `ugni`).
///
/// # Safety
/// uGNI's contract for GNI_CtPostFma.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CtPostFma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's arguments, under uGNI's contract.
    unsafe { ugni::post(&ugni::CT_POST_FMA, ep, pd) }
}

/// # Safety
/// uGNI's contract for GNI_CtPostCqWrite.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CtPostCqWrite(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's arguments, under uGNI's contract.
    unsafe { ugni::post(&ugni::CT_POST_CQWRITE, ep, pd) }
}

// ---- uGNI short messages -----------------------------------------------------------------------

/// # Safety
/// uGNI's contract for GNI_SmsgSend.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgSend(
    ep: GniEpHandle,
    header: *mut c_void,
    header_length: u32,
    data: *mut c_void,
    data_length: u32,
    msg_id: u32,
) -> GniReturn {
    let bytes = u64::from(header_length) + u64::from(data_length);
    ugni::smsg_send(&ugni::SMSG_SEND, bytes, |addr| {
        // SAFETY: found under this name, prototype SmsgSendFn; the caller's arguments, unchanged.
        unsafe {
            let real = std::mem::transmute::<*mut c_void, SmsgSendFn>(addr);
            real(ep, header, header_length, data, data_length, msg_id)
        }
    })
}

/// # Safety
/// uGNI's contract for GNI_SmsgSendWTag.
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
    let bytes = u64::from(header_length) + u64::from(data_length);
    ugni::smsg_send(&ugni::SMSG_SEND_WTAG, bytes, |addr| {
        // SAFETY: found under this name, prototype SmsgSendWTagFn; the caller's arguments, unchanged.
        unsafe {
            let real = std::mem::transmute::<*mut c_void, SmsgSendWTagFn>(addr);
            real(ep, header, header_length, data, data_length, msg_id, tag)
        }
    })
}

/// Forwarded as the caller asked; remembered so SMSG steering respects it.
///
/// # Safety
/// uGNI's contract for GNI_SmsgSetDeliveryMode.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_SmsgSetDeliveryMode(nic: GniNicHandle, dlvr_mode: u16) -> GniReturn {
    let Some(real) = ugni::real_fn::<SmsgSetDeliveryModeFn>(&ugni::SMSG_SET_DELIVERY_MODE) else {
        return ugni::missing(&ugni::SMSG_SET_DELIVERY_MODE);
    };
    // SAFETY: the caller's arguments, unchanged.
    let rc = unsafe { real(nic, dlvr_mode) };
    if rc == GNI_RC_SUCCESS {
        if let Some(_inside) = Inside::enter() {
            let _ = std::panic::catch_unwind(|| NICS.caller_set(nic as usize, dlvr_mode));
        }
    }
    rc
}

// ---- uGNI NIC lifetime ---------------------------------------------------------------------------

/// # Safety
/// uGNI's contract for GNI_CdmAttach.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CdmAttach(
    cdm: GniCdmHandle,
    device_id: u32,
    local_address: *mut u32,
    nic: *mut GniNicHandle,
) -> GniReturn {
    let Some(real) = ugni::real_fn::<CdmAttachFn>(&ugni::CDM_ATTACH) else {
        return ugni::missing(&ugni::CDM_ATTACH);
    };
    let inside = Inside::enter();
    if inside.is_some() {
        let _ = std::panic::catch_unwind(init::ensure_init);
    }
    // SAFETY: the caller's arguments, unchanged.
    let rc = unsafe { real(cdm, device_id, local_address, nic) };
    if rc == GNI_RC_SUCCESS && !nic.is_null() && inside.is_some() {
        // SAFETY: on success uGNI wrote the NIC handle through the caller's valid pointer.
        let handle = unsafe { *nic };
        if !handle.is_null() {
            let _ = std::panic::catch_unwind(|| NICS.attached(cdm as usize, handle as usize));
        }
    }
    rc
}

/// # Safety
/// uGNI's contract for GNI_CdmDestroy.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CdmDestroy(cdm: GniCdmHandle) -> GniReturn {
    let Some(real) = ugni::real_fn::<CdmDestroyFn>(&ugni::CDM_DESTROY) else {
        return ugni::missing(&ugni::CDM_DESTROY);
    };
    if let Some(_inside) = Inside::enter() {
        let _ = std::panic::catch_unwind(|| NICS.cdm_destroyed(cdm as usize));
    }
    // SAFETY: the caller's argument, unchanged.
    unsafe { real(cdm) }
}

// ---- MPI (handles forwarded as pointer-sized values, see `mpi`) ----------------------------------

/// # Safety
/// The MPI standard's contract for MPI_Barrier.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn MPI_Barrier(comm: usize) -> c_int {
    mpi::forward(&mpi::BARRIER, |real: BarrierFn| {
        // SAFETY: PMPI_Barrier, whose prototype BarrierFn matches; the caller's argument, unchanged.
        unsafe { real(comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Allreduce.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: usize,
    op: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::ALLREDUCE, |real: AllreduceFn| {
        // SAFETY: PMPI_Allreduce, whose prototype AllreduceFn matches; the caller's arguments, unchanged.
        unsafe { real(sendbuf, recvbuf, count, datatype, op, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Reduce.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: usize,
    op: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::REDUCE, |real: ReduceFn| {
        // SAFETY: PMPI_Reduce, whose prototype ReduceFn matches; the caller's arguments, unchanged.
        unsafe { real(sendbuf, recvbuf, count, datatype, op, root, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Bcast.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::BCAST, |real: BcastFn| {
        // SAFETY: PMPI_Bcast, whose prototype BcastFn matches; the caller's arguments, unchanged.
        unsafe { real(buffer, count, datatype, root, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Allgather.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn MPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::ALLGATHER, |real: AllToAllFn| {
        // SAFETY: PMPI_Allgather, whose prototype AllToAllFn matches; the caller's arguments, unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) }
    })
}

/// Inside it, the low-stall mode is ADAPTIVE1 (`AAR_ALLTOALL`).
///
/// # Safety
/// The MPI standard's contract for MPI_Alltoall.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::ALLTOALL, |real: AllToAllFn| {
        // SAFETY: PMPI_Alltoall, whose prototype AllToAllFn matches; the caller's arguments, unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Gather.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn MPI_Gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::GATHER, |real: RootedFn| {
        // SAFETY: PMPI_Gather, whose prototype RootedFn matches; the caller's arguments, unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Scatter.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn MPI_Scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::SCATTER, |real: RootedFn| {
        // SAFETY: PMPI_Scatter, whose prototype RootedFn matches; the caller's arguments, unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm) }
    })
}

// ---- C API (cabi/aar.h) ------------------------------------------------------------------------------

const AAR_OK: c_int = 0;
const AAR_EINVAL: c_int = -1;
const AAR_EDISABLED: c_int = -2;

fn api(policy: Option<Policy>, enabled: Option<bool>) -> c_int {
    let change = || {
        // While an A/B experiment runs, its schedule alone chooses the policy.
        let ready = init::wait_ready().is_some_and(|s| !s.disabled);
        if policy.is_some() && ready && iterations::ab_running() {
            return AAR_EINVAL;
        }
        // Killed by AAR_DISABLE: the library stays inert.
        if control::load() & control::READY != 0 && control::update(|w| control::with(w, policy, enabled, None)) {
            AAR_OK
        } else {
            AAR_EDISABLED
        }
    };
    std::panic::catch_unwind(change).unwrap_or(AAR_EDISABLED)
}

fn iteration_api(call: impl FnOnce() -> Result<(), iterations::Refused> + std::panic::UnwindSafe) -> c_int {
    match std::panic::catch_unwind(call) {
        Ok(Ok(())) => AAR_OK,
        Ok(Err(iterations::Refused::Disabled)) => AAR_EDISABLED,
        Ok(Err(iterations::Refused::Invalid)) | Err(_) => AAR_EINVAL,
    }
}

/// Pin every adaptive message to `dlvr_mode` (GNI_DLVMODE_ADAPTIVE0..3).
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_set_mode(dlvr_mode: u16) -> c_int {
    match (dlvr_mode & !GNI_DLVMODE_ROUTING_MASK, RoutingMode::from_routing_bits(dlvr_mode)) {
        (0, Some(m)) => api(Some(Policy::Fixed(m)), None),
        _ => AAR_EINVAL,
    }
}

/// Pin by name ("ADAPTIVE3", "ADAPTIVE_3"), or "auto" / "off": the names of `AAR_MODE`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn aar_set_mode_name(name: *const c_char) -> c_int {
    if name.is_null() {
        return AAR_EINVAL;
    }
    // SAFETY: non-null, NUL-terminated per the contract.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    name.parse::<Policy>().map_or(AAR_EINVAL, |p| api(Some(p), None))
}

/// Back to automatic routing (the paper's algorithm).
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_set_auto() -> c_int {
    api(Some(Policy::Auto), None)
}

/// Pause: forward every call untouched until `aar_enable()`.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_disable() -> c_int {
    api(None, Some(false))
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_enable() -> c_int {
    api(None, Some(true))
}

/// "auto", "off", a mode name, "paused" or "disabled" (AAR_DISABLE).
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_policy_name() -> *const c_char {
    let _ = std::panic::catch_unwind(init::ensure_init);
    let name: &'static CStr = match control::policy_name(control::load()) {
        "auto" => c"auto",
        "off" => c"off",
        "paused" => c"paused",
        "ADAPTIVE0" => c"ADAPTIVE0",
        "ADAPTIVE1" => c"ADAPTIVE1",
        "ADAPTIVE2" => c"ADAPTIVE2",
        "ADAPTIVE3" => c"ADAPTIVE3",
        _ => c"disabled",
    };
    name.as_ptr()
}

/// Begin the next iteration (ending the one in progress, if any).
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_iteration_begin() -> c_int {
    iteration_api(iterations::api_begin)
}

/// End the iteration in progress.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_iteration_end() -> c_int {
    iteration_api(iterations::api_end)
}

/// Label the iteration in progress, or the next one.
///
/// # Safety
/// `label` is NULL or a NUL-terminated string.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn aar_iteration_label(label: *const c_char) -> c_int {
    if label.is_null() {
        return AAR_EINVAL;
    }
    // SAFETY: non-null and NUL-terminated per the contract; strnlen reads no further than one
    // byte past the longest label, which is then refused whatever follows.
    let len = unsafe { libc::strnlen(label, rows::MAX_LABEL + 1) };
    // SAFETY: the `len` bytes strnlen just read.
    let bytes = unsafe { std::slice::from_raw_parts(label.cast::<u8>(), len) };
    iteration_api(|| iterations::api_label(bytes))
}

/// The iteration in progress, or -1.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_iteration_index() -> i64 {
    std::panic::catch_unwind(iterations::current).unwrap_or(-1)
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

// ---- aar doctor (internal: not declared in cabi/aar.h) ------------------------------------------

/// The library's own check of this environment for `aar doctor`: the effective settings and their
/// warnings, whether PAPI loads and which version, and whether each counter event exists, as a
/// JSON document (`aar-selfcheck/1`) copied into the caller's buffer. Returns the document's
/// length without the NUL; it was written (with a NUL) only if `len` is larger, otherwise call
/// again with at least that length + 1 (the same document: the check runs once per process).
/// −1: internal error. Never initialises the library's runtime (see `selfcheck`).
///
/// # Safety
/// `buf` is NULL or valid for writing `len` bytes.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn aar_selfcheck(buf: *mut c_char, len: usize) -> isize {
    // SAFETY: the caller's buffer, under the contract above.
    unsafe { crate::selfcheck::write_report(buf, len) }
}
