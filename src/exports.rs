//! Every symbol libaar.so exports, in one place: the ABI surface in one screen.
//!
//! uGNI and DMAPP calls that put traffic on the network or steer it are interposed; MPI
//! collectives that can mark A/B iterations are wrapped; the C API of `cabi/aar.h` lets an
//! application pin or pause routing and mark iterations. Exports are `no_mangle` except in unit
//! tests, so the test harness itself is never interposed. The MPI wrappers are `"C-unwind"`: an
//! exception or a cancellation out of the MPI library passes through them (`mpi` says why).
#![allow(non_snake_case)]

use crate::dmapp::{self, Kind, Shape};
use crate::mpi::{
    self, AllToAllCFn, AllToAllFn, AllgathervCFn, AllgathervFn, AllreduceCFn, AllreduceFn, AlltoallvCFn, AlltoallvFn,
    AlltoallwCFn, AlltoallwFn, BarrierFn, BcastCFn, BcastFn, GathervCFn, GathervFn, NeighborAlltoallwFn, ReduceCFn,
    ReduceFn, ReduceScatterCFn, ReduceScatterFn, RootedCFn, RootedFn, ScattervCFn, ScattervFn,
};
use crate::state::NICS;
use crate::sys::Real;
use crate::trylock::Inside;
use crate::{control, endpoints, init, iterations, rows, ugni};
use aar_abi::dmapp::*;
use aar_abi::*;
use aar_engine::{Policy, RoutingMode};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

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
const _: EpCreateFn = GNI_EpCreate;
const _: EpBindFn = GNI_EpBind;
const _: EpFn = GNI_EpUnbind;
const _: EpFn = GNI_EpDestroy;
const _: BarrierFn = MPI_Barrier;
const _: AllreduceFn = MPI_Allreduce;
const _: ReduceFn = MPI_Reduce;
const _: BcastFn = MPI_Bcast;
const _: AllToAllFn = MPI_Allgather;
const _: AllgathervFn = MPI_Allgatherv;
const _: AllToAllFn = MPI_Alltoall;
const _: AlltoallvFn = MPI_Alltoallv;
const _: RootedFn = MPI_Gather;
const _: RootedFn = MPI_Scatter;
const _: GathervFn = MPI_Gatherv;
const _: ScattervFn = MPI_Scatterv;
const _: AlltoallwFn = MPI_Alltoallw;
const _: ReduceScatterFn = MPI_Reduce_scatter;
const _: AllreduceFn = MPI_Reduce_scatter_block;
const _: AllreduceFn = MPI_Scan;
const _: AllreduceFn = MPI_Exscan;
const _: AllToAllFn = MPI_Neighbor_allgather;
const _: AllgathervFn = MPI_Neighbor_allgatherv;
const _: AllToAllFn = MPI_Neighbor_alltoall;
const _: AlltoallvFn = MPI_Neighbor_alltoallv;
const _: NeighborAlltoallwFn = MPI_Neighbor_alltoallw;
const _: crate::papi::StartFn = PAPI_start;
const _: crate::papi::StopFn = PAPI_stop;
const _: crate::papi::LibraryInitFn = PAPI_library_init;
const _: crate::papi::ShutdownFn = PAPI_shutdown;

// ---- uGNI posts ------------------------------------------------------------------------------

/// # Safety
/// uGNI's contract for GNI_PostRdma.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostRdma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's arguments, under uGNI's contract.
    unsafe { ugni::post::<false>(ugni::POST_RDMA, ep, pd) }
}

/// # Safety
/// uGNI's contract for GNI_PostFma.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostFma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's arguments, under uGNI's contract.
    unsafe { ugni::post::<false>(&ugni::POST_FMA, ep, pd) }
}

/// # Safety
/// uGNI's contract for GNI_PostCqWrite.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_PostCqWrite(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's arguments, under uGNI's contract.
    unsafe { ugni::post::<true>(&ugni::POST_CQWRITE, ep, pd) }
}

/// Chained FMA: only the head descriptor is read and routed (see `ugni`).
///
/// # Safety
/// uGNI's contract for GNI_CtPostFma.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CtPostFma(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's arguments, under uGNI's contract.
    unsafe { ugni::post::<false>(&ugni::CT_POST_FMA, ep, pd) }
}

/// # Safety
/// uGNI's contract for GNI_CtPostCqWrite.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_CtPostCqWrite(ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    // SAFETY: the caller's arguments, under uGNI's contract.
    unsafe { ugni::post::<true>(&ugni::CT_POST_CQWRITE, ep, pd) }
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
    ugni::smsg_send(&ugni::SMSG_SEND, ep, bytes, |addr| {
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
    ugni::smsg_send(&ugni::SMSG_SEND_WTAG, ep, bytes, |addr| {
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
    let Some(real) = ugni::SMSG_SET_DELIVERY_MODE.get::<SmsgSetDeliveryModeFn>() else {
        return ugni::missing(&ugni::SMSG_SET_DELIVERY_MODE);
    };
    let mut rc = None;
    if let Some(_inside) = Inside::enter() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            NICS.caller_set(nic as usize, dlvr_mode, || {
                // SAFETY: the caller's arguments, unchanged.
                let r = unsafe { real(nic, dlvr_mode) };
                rc = Some(r);
                r == GNI_RC_SUCCESS
            })
        }));
    }
    // SAFETY: the caller's arguments, unchanged (not forwarded above: the table was held).
    rc.unwrap_or_else(|| unsafe { real(nic, dlvr_mode) })
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
    let Some(real) = ugni::CDM_ATTACH.get::<CdmAttachFn>() else {
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
    let Some(real) = ugni::CDM_DESTROY.get::<CdmDestroyFn>() else {
        return ugni::missing(&ugni::CDM_DESTROY);
    };
    if let Some(_inside) = Inside::enter() {
        let _ = std::panic::catch_unwind(|| NICS.cdm_destroyed(cdm as usize));
    }
    // SAFETY: the caller's argument, unchanged.
    unsafe { real(cdm) }
}

// ---- uGNI endpoints: their NIC and their destination ----------------------------------------------

/// # Safety
/// uGNI's contract for GNI_EpCreate.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpCreate(nic: GniNicHandle, src_cq: GniCqHandle, ep: *mut GniEpHandle) -> GniReturn {
    let Some(real) = ugni::EP_CREATE.get::<EpCreateFn>() else { return ugni::missing(&ugni::EP_CREATE) };
    // SAFETY: the caller's arguments, unchanged.
    let rc = unsafe { real(nic, src_cq, ep) };
    if rc == GNI_RC_SUCCESS && !ep.is_null() {
        // SAFETY: on success uGNI wrote the endpoint handle through the caller's valid pointer.
        endpoints::created(unsafe { *ep } as usize, nic as usize);
    }
    rc
}

/// # Safety
/// uGNI's contract for GNI_EpBind.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpBind(ep: GniEpHandle, remote_addr: u32, remote_id: u32) -> GniReturn {
    let Some(real) = ugni::EP_BIND.get::<EpBindFn>() else { return ugni::missing(&ugni::EP_BIND) };
    // SAFETY: the caller's arguments, unchanged.
    let rc = unsafe { real(ep, remote_addr, remote_id) };
    if rc == GNI_RC_SUCCESS {
        endpoints::bound(ep as usize, remote_addr);
    }
    rc
}

/// # Safety
/// uGNI's contract for GNI_EpUnbind.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpUnbind(ep: GniEpHandle) -> GniReturn {
    let Some(real) = ugni::EP_UNBIND.get::<EpFn>() else { return ugni::missing(&ugni::EP_UNBIND) };
    let known = endpoints::unbound(ep as usize);
    // SAFETY: the caller's argument, unchanged.
    let rc = unsafe { real(ep) };
    if rc != GNI_RC_SUCCESS {
        endpoints::restore(ep as usize, known);
    }
    rc
}

/// # Safety
/// uGNI's contract for GNI_EpDestroy.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn GNI_EpDestroy(ep: GniEpHandle) -> GniReturn {
    let Some(real) = ugni::EP_DESTROY.get::<EpFn>() else { return ugni::missing(&ugni::EP_DESTROY) };
    let known = endpoints::destroyed(ep as usize);
    // SAFETY: the caller's argument, unchanged.
    let rc = unsafe { real(ep) };
    if rc != GNI_RC_SUCCESS {
        // Refused (transactions still outstanding, a bad handle): the endpoint lives on as it was.
        endpoints::restore(ep as usize, known);
    }
    rc
}

// ---- DMAPP data calls ------------------------------------------------------------------------------
//
// Every data call, in each form DMAPP has: blocking, `_nb` (one more parameter, the sync id) and
// `_nbi`. Each is routed by the calling thread's routing attribute (`dmapp`) and forwarded once;
// its type is checked at compile time against aar_abi's.

/// A C string from a literal that ends in NUL, at compile time.
const fn c_name(name: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(name.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("a function name is NUL-terminated and has no NUL inside"),
    }
}

/// One interposed data call: its name, its `aar_abi::dmapp` type, its parameters, and the shape of
/// its messages (an expression of the parameters).
macro_rules! dmapp_call {
    ($name:ident: $fn_ty:ident ($($arg:ident: $ty:ty),* $(,)?) => $shape:expr) => {
        #[doc = concat!("`", stringify!($name), "`, routed by the calling thread's attribute.")]
        ///
        /// # Safety
        /// DMAPP's contract for this function.
        #[cfg_attr(not(test), no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> DmappReturn {
            static REAL: Real = Real::new(c_name(concat!(stringify!($name), "\0")));
            dmapp::data(&REAL, $shape, move |addr| {
                // SAFETY: the function found under this name, whose prototype is this type; the
                // caller's arguments, unchanged.
                unsafe { std::mem::transmute::<*mut c_void, $fn_ty>(addr)($($arg),*) }
            })
        }
        const _: $fn_ty = $name;
    };
}

/// A data call in its three forms: `[blocking, _nb, _nbi]: BlockingFn, NbFn (parameters) => shape`.
macro_rules! dmapp_forms {
    ($([$blocking:ident, $nb:ident, $nbi:ident]: $fn_ty:ident, $nb_ty:ident ($($arg:ident: $ty:ty),*) => $shape:expr;)*) => {$(
        dmapp_call!($blocking: $fn_ty ($($arg: $ty),*) => $shape);
        dmapp_call!($nb: $nb_ty ($($arg: $ty,)* syncid: *mut DmappSyncidHandle) => $shape);
        dmapp_call!($nbi: $fn_ty ($($arg: $ty),*) => $shape);
    )*};
}

type Addr = *mut c_void;
type Seg = *mut DmappSegDesc;

dmapp_forms! {
    [dmapp_put, dmapp_put_nb, dmapp_put_nbi]: PutFn, PutNbFn
        (target_addr: Addr, target_seg: Seg, target_pe: DmappPe, source_addr: Addr, nelems: u64, ty: DmappType)
        => Shape::transfer(Kind::Put, target_pe, nelems, ty);
    [dmapp_get, dmapp_get_nb, dmapp_get_nbi]: GetFn, GetNbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, nelems: u64, ty: DmappType)
        => Shape::transfer(Kind::Get, source_pe, nelems, ty);
    [dmapp_put_flag, dmapp_put_flag_nb, dmapp_put_flag_nbi]: PutFlagFn, PutFlagNbFn
        (target_addr: Addr, target_seg: Seg, target_pe: DmappPe, source_addr: Addr, nelems: u64, ty: DmappType,
         target_flag: Addr, flag_value: u64)
        => Shape::transfer(Kind::Put, target_pe, nelems, ty);
    [dmapp_iput, dmapp_iput_nb, dmapp_iput_nbi]: IputFn, IputNbFn
        (target_addr: Addr, target_seg: Seg, target_pe: DmappPe, source_addr: Addr, tst: isize, sst: isize,
         nelems: u64, ty: DmappType)
        => Shape::transfer(Kind::Put, target_pe, nelems, ty);
    [dmapp_iget, dmapp_iget_nb, dmapp_iget_nbi]: IgetFn, IgetNbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, tst: isize, sst: isize,
         nelems: u64, ty: DmappType)
        => Shape::transfer(Kind::Get, source_pe, nelems, ty);
    [dmapp_ixput, dmapp_ixput_nb, dmapp_ixput_nbi]: IxputFn, IxputNbFn
        (target_addr: Addr, target_seg: Seg, target_pe: DmappPe, source_addr: Addr, tidx: *mut isize, nelems: u64,
         ty: DmappType)
        => Shape::transfer(Kind::Put, target_pe, nelems, ty);
    [dmapp_ixget, dmapp_ixget_nb, dmapp_ixget_nbi]: IxgetFn, IxgetNbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, sidx: *mut isize, nelems: u64,
         ty: DmappType)
        => Shape::transfer(Kind::Get, source_pe, nelems, ty);
    [dmapp_put_ixpe, dmapp_put_ixpe_nb, dmapp_put_ixpe_nbi]: PutIxpeFn, PutIxpeNbFn
        (target_addr: Addr, target_seg: Seg, target_pe_list: *mut DmappPe, num_target_pes: u32, source_addr: Addr,
         nelems: u64, ty: DmappType)
        // SAFETY: the caller's list of num_target_pes PEs (DMAPP's contract).
        => unsafe { Shape::per_pe(Kind::Put, target_pe_list, num_target_pes, nelems, ty) };
    [dmapp_scatter_ixpe, dmapp_scatter_ixpe_nb, dmapp_scatter_ixpe_nbi]: PutIxpeFn, PutIxpeNbFn
        (target_addr: Addr, target_seg: Seg, target_pe_list: *mut DmappPe, num_target_pes: u32, source_addr: Addr,
         nelems: u64, ty: DmappType)
        // SAFETY: the caller's list of num_target_pes PEs (DMAPP's contract).
        => unsafe { Shape::per_pe(Kind::Put, target_pe_list, num_target_pes, nelems, ty) };
    [dmapp_gather_ixpe, dmapp_gather_ixpe_nb, dmapp_gather_ixpe_nbi]: GatherIxpeFn, GatherIxpeNbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe_list: *mut DmappPe, num_source_pes: u32,
         nelems: u64, ty: DmappType)
        // SAFETY: the caller's list of num_source_pes PEs (DMAPP's contract).
        => unsafe { Shape::per_pe(Kind::Get, source_pe_list, num_source_pes, nelems, ty) };
    [dmapp_aadd_qw, dmapp_aadd_qw_nb, dmapp_aadd_qw_nbi]: AmoFn, AmoNbFn
        (target_addr: Addr, target_seg: Seg, target_pe: DmappPe, operand: i64) => Shape::amo(target_pe);
    [dmapp_aand_qw, dmapp_aand_qw_nb, dmapp_aand_qw_nbi]: AmoFn, AmoNbFn
        (target_addr: Addr, target_seg: Seg, target_pe: DmappPe, operand: i64) => Shape::amo(target_pe);
    [dmapp_aor_qw, dmapp_aor_qw_nb, dmapp_aor_qw_nbi]: AmoFn, AmoNbFn
        (target_addr: Addr, target_seg: Seg, target_pe: DmappPe, operand: i64) => Shape::amo(target_pe);
    [dmapp_axor_qw, dmapp_axor_qw_nb, dmapp_axor_qw_nbi]: AmoFn, AmoNbFn
        (target_addr: Addr, target_seg: Seg, target_pe: DmappPe, operand: i64) => Shape::amo(target_pe);
    [dmapp_afadd_qw, dmapp_afadd_qw_nb, dmapp_afadd_qw_nbi]: FetchAmoFn, FetchAmoNbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, operand: i64)
        => Shape::amo(source_pe);
    [dmapp_afand_qw, dmapp_afand_qw_nb, dmapp_afand_qw_nbi]: FetchAmoFn, FetchAmoNbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, operand: i64)
        => Shape::amo(source_pe);
    [dmapp_afor_qw, dmapp_afor_qw_nb, dmapp_afor_qw_nbi]: FetchAmoFn, FetchAmoNbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, operand: i64)
        => Shape::amo(source_pe);
    [dmapp_afxor_qw, dmapp_afxor_qw_nb, dmapp_afxor_qw_nbi]: FetchAmoFn, FetchAmoNbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, operand: i64)
        => Shape::amo(source_pe);
    [dmapp_afax_qw, dmapp_afax_qw_nb, dmapp_afax_qw_nbi]: FetchAmo2Fn, FetchAmo2NbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, and_mask: i64, xor_mask: i64)
        => Shape::amo(source_pe);
    [dmapp_acswap_qw, dmapp_acswap_qw_nb, dmapp_acswap_qw_nbi]: FetchAmo2Fn, FetchAmo2NbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, comperand: i64, swaperand: i64)
        => Shape::amo(source_pe);
    [dmapp_amo_put, dmapp_amo_put_nb, dmapp_amo_put_nbi]: AmoPutFn, AmoPutNbFn
        (target_addr: Addr, target_seg: Seg, target_pe: DmappPe, amo: Addr) => Shape::amo(target_pe);
    [dmapp_amo_get, dmapp_amo_get_nb, dmapp_amo_get_nbi]: AmoGetFn, AmoGetNbFn
        (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, amo: Addr)
        => Shape::amo(source_pe);
}

dmapp_call!(dmapp_get_flag_nbi: GetFn
    (target_addr: Addr, source_addr: Addr, source_seg: Seg, source_pe: DmappPe, nelems: u64, ty: DmappType)
    => Shape::transfer(Kind::Get, source_pe, nelems, ty));

// ---- DMAPP attributes: the application's own routing ------------------------------------------------------

const _: AttrsInitFn = dmapp_init;
const _: AttrsInitFn = dmapp_init_ext;
const _: VoidFn = dmapp_finalize;
const _: AttrsInitFn = dmapp_set_rma_attrs;
const _: AttrsInitFn = dmapp_set_rma_attrs_ext;
const _: GetAttrsFn = dmapp_get_rma_attrs;
const _: GetAttrsFn = dmapp_get_rma_attrs_ext;

/// Forwarded; a new DMAPP job, whose attributes each thread reads again (on a second one of a
/// running job, what `requested` asks for is the application's routing: [`dmapp::init`]).
///
/// # Safety
/// DMAPP's contract for dmapp_init.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_init(requested: *mut c_void, actual: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's arguments, unchanged; `requested` and `actual` under DMAPP's contract.
    unsafe { dmapp::init(&dmapp::INIT, requested, actual, |real| real(requested, actual)) }
}

/// # Safety
/// DMAPP's contract for dmapp_init_ext.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_init_ext(requested: *mut c_void, actual: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's arguments, unchanged; `requested` and `actual` under DMAPP's contract.
    unsafe { dmapp::init(&dmapp::INIT_EXT, requested, actual, |real| real(requested, actual)) }
}

/// Forwarded; the job has ended: calls until the next `dmapp_init` go out untouched.
///
/// # Safety
/// DMAPP's contract for dmapp_finalize.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_finalize() -> DmappReturn {
    dmapp::finalize(&dmapp::FINALIZE)
}

/// Forwarded as asked: what the application sets is its intent, read again on success.
///
/// # Safety
/// DMAPP's contract for dmapp_set_rma_attrs.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_set_rma_attrs(requested: *mut c_void, actual: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's arguments, unchanged.
    dmapp::set_attrs(&dmapp::SET_RMA_ATTRS, |real| unsafe { real(requested, actual) })
}

/// # Safety
/// DMAPP's contract for dmapp_set_rma_attrs_ext.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_set_rma_attrs_ext(requested: *mut c_void, actual: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's arguments, unchanged.
    dmapp::set_attrs(&dmapp::SET_RMA_ATTRS_EXT, |real| unsafe { real(requested, actual) })
}

/// Forwarded; the routing bytes the caller gets are its own, not the library's.
///
/// # Safety
/// DMAPP's contract for dmapp_get_rma_attrs.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_get_rma_attrs(attrs: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's argument, under DMAPP's contract.
    unsafe { dmapp::get_attrs(&dmapp::GET_RMA_ATTRS, attrs) }
}

/// # Safety
/// DMAPP's contract for dmapp_get_rma_attrs_ext.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_get_rma_attrs_ext(attrs: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's argument, under DMAPP's contract.
    unsafe { dmapp::get_attrs(&dmapp::GET_RMA_ATTRS_EXT, attrs) }
}

// ---- MPI (handles forwarded as pointer-sized values, see `mpi`) ----------------------------------

/// # Safety
/// The MPI standard's contract for MPI_Barrier.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Barrier(comm: usize) -> c_int {
    mpi::forward(&mpi::BARRIER, [0, 0, 0, comm as u64], |real: BarrierFn| {
        // SAFETY: the next MPI_Barrier (or PMPI_Barrier), whose prototype BarrierFn matches; the caller's argument,
        // unchanged.
        unsafe { real(comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Allreduce.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: usize,
    op: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::ALLREDUCE, [count as u64, datatype as u64, op as u64, comm as u64], |real: AllreduceFn| {
        // SAFETY: the next MPI_Allreduce (or PMPI_Allreduce), whose prototype AllreduceFn matches; the caller's
        // arguments, unchanged.
        unsafe { real(sendbuf, recvbuf, count, datatype, op, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Reduce.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: usize,
    op: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::REDUCE, [count as u64, datatype as u64, root as u64, comm as u64], |real: ReduceFn| {
        // SAFETY: the next MPI_Reduce (or PMPI_Reduce), whose prototype ReduceFn matches; the caller's arguments,
        // unchanged.
        unsafe { real(sendbuf, recvbuf, count, datatype, op, root, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Bcast.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::BCAST, [count as u64, datatype as u64, root as u64, comm as u64], |real: BcastFn| {
        // SAFETY: the next MPI_Bcast (or PMPI_Bcast), whose prototype BcastFn matches; the caller's arguments,
        // unchanged.
        unsafe { real(buffer, count, datatype, root, comm) }
    })
}

/// A kind of call is its receive count and datatype and its communicator: significant on every
/// rank, where the send side is ignored under MPI_IN_PLACE (any values: a program that passes 0
/// and MPI_DATATYPE_NULL would make calls of every size one kind).
///
/// # Safety
/// The MPI standard's contract for MPI_Allgather.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::ALLGATHER, [recvcount as u64, recvtype as u64, 0, comm as u64], |real: AllToAllFn| {
        // SAFETY: the next MPI_Allgather (or PMPI_Allgather), whose prototype AllToAllFn matches; the caller's
        // arguments, unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) }
    })
}

/// The counts are the rank's own and may change from call to call: a kind of call is its
/// receive datatype and communicator, so that every rank counts its calls alike (`steady`'s
/// tries). The receive side, as for MPI_Allgather: under MPI_IN_PLACE the send side is ignored.
///
/// # Safety
/// The MPI standard's contract for MPI_Allgatherv.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::ALLGATHERV, [0, recvtype as u64, 0, comm as u64], |real: AllgathervFn| {
        // SAFETY: the next MPI_Allgatherv (or PMPI_Allgatherv), whose prototype AllgathervFn matches; the caller's
        // arguments, unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm) }
    })
}

/// Inside it, the low-stall mode is ADAPTIVE1 (`AAR_ALLTOALL`). A kind of call is its receive
/// count and datatype and its communicator, as for MPI_Allgather.
///
/// # Safety
/// The MPI standard's contract for MPI_Alltoall.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::ALLTOALL, [recvcount as u64, recvtype as u64, 0, comm as u64], |real: AllToAllFn| {
        // SAFETY: the next MPI_Alltoall (or PMPI_Alltoall), whose prototype AllToAllFn matches; the caller's arguments,
        // unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) }
    })
}

/// Routed as the other collectives: the low-stall mode stays `AAR_LOW_STALL_MODE` (only
/// MPI_Alltoall switches to ADAPTIVE1). A kind of call is its receive datatype and communicator,
/// as for MPI_Allgatherv.
///
/// # Safety
/// The MPI standard's contract for MPI_Alltoallv.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::ALLTOALLV, [0, recvtype as u64, 0, comm as u64], |real: AlltoallvFn| {
        // SAFETY: the next MPI_Alltoallv (or PMPI_Alltoallv), whose prototype AlltoallvFn matches; the caller's
        // arguments, unchanged.
        unsafe { real(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm) }
    })
}

/// A kind of call is its send count and datatype (significant on every rank but a root that
/// passes MPI_IN_PLACE, which is keyed by its receive side, one rank's share in the same terms),
/// root and communicator.
///
/// # Safety
/// The MPI standard's contract for MPI_Gather.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    let (n, t) = mpi::share(sendbuf, (sendcount as u64, sendtype as u64), (recvcount as u64, recvtype as u64));
    mpi::forward(&mpi::GATHER, [n, t, root as u64, comm as u64], |real: RootedFn| {
        // SAFETY: the next MPI_Gather (or PMPI_Gather), whose prototype RootedFn matches; the caller's arguments,
        // unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm) }
    })
}

/// A kind of call is its receive count and datatype (the send side is significant at the root
/// only; a root that passes MPI_IN_PLACE is keyed by its send side), root and communicator.
///
/// # Safety
/// The MPI standard's contract for MPI_Scatter.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    let (n, t) = mpi::share(recvbuf, (recvcount as u64, recvtype as u64), (sendcount as u64, sendtype as u64));
    mpi::forward(&mpi::SCATTER, [n, t, root as u64, comm as u64], |real: RootedFn| {
        // SAFETY: the next MPI_Scatter (or PMPI_Scatter), whose prototype RootedFn matches; the caller's arguments,
        // unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm) }
    })
}

/// The counts are each rank's own: a kind of call is its send datatype (a root that passes
/// MPI_IN_PLACE: its receive datatype), root and communicator, as for MPI_Gather.
///
/// # Safety
/// The MPI standard's contract for MPI_Gatherv.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    let (_, t) = mpi::share(sendbuf, (0, sendtype as u64), (0, recvtype as u64));
    mpi::forward(&mpi::GATHERV, [0, t, root as u64, comm as u64], |real: GathervFn| {
        // SAFETY: the next MPI_Gatherv (or PMPI_Gatherv), whose prototype GathervFn matches; the caller's arguments,
        // unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm) }
    })
}

/// A kind of call is its receive datatype (a root that passes MPI_IN_PLACE: its send datatype),
/// root and communicator, as for MPI_Scatter.
///
/// # Safety
/// The MPI standard's contract for MPI_Scatterv.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    let (_, t) = mpi::share(recvbuf, (0, recvtype as u64), (0, sendtype as u64));
    mpi::forward(&mpi::SCATTERV, [0, t, root as u64, comm as u64], |real: ScattervFn| {
        // SAFETY: the next MPI_Scatterv (or PMPI_Scatterv), whose prototype ScattervFn matches; the caller's arguments,
        // unchanged.
        unsafe { real(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm) }
    })
}

/// Its counts and datatypes are arrays of the rank's own: a kind of call is its communicator.
///
/// # Safety
/// The MPI standard's contract for MPI_Alltoallw.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const usize,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::ALLTOALLW, [0, 0, 0, comm as u64], |real: AlltoallwFn| {
        // SAFETY: the next MPI_Alltoallw (or PMPI_Alltoallw), whose prototype AlltoallwFn matches; the caller's
        // arguments, unchanged.
        unsafe { real(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm) }
    })
}

/// A kind of call is its datatype, operation and communicator (the counts are an array).
///
/// # Safety
/// The MPI standard's contract for MPI_Reduce_scatter.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: usize,
    op: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::REDUCE_SCATTER, [0, datatype as u64, op as u64, comm as u64], |real: ReduceScatterFn| {
        // SAFETY: the next MPI_Reduce_scatter (or PMPI_Reduce_scatter), whose prototype ReduceScatterFn matches; the
        // caller's arguments, unchanged.
        unsafe { real(sendbuf, recvbuf, recvcounts, datatype, op, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Reduce_scatter_block.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: usize,
    op: usize,
    comm: usize,
) -> c_int {
    let key = [recvcount as u64, datatype as u64, op as u64, comm as u64];
    mpi::forward(&mpi::REDUCE_SCATTER_BLOCK, key, |real: AllreduceFn| {
        // SAFETY: the next MPI_Reduce_scatter_block (or PMPI_Reduce_scatter_block), whose prototype AllreduceFn
        // matches; the caller's arguments, unchanged.
        unsafe { real(sendbuf, recvbuf, recvcount, datatype, op, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Scan.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: usize,
    op: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::SCAN, [count as u64, datatype as u64, op as u64, comm as u64], |real: AllreduceFn| {
        // SAFETY: the next MPI_Scan (or PMPI_Scan), whose prototype AllreduceFn matches; the caller's arguments,
        // unchanged.
        unsafe { real(sendbuf, recvbuf, count, datatype, op, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Exscan.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Exscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: usize,
    op: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::EXSCAN, [count as u64, datatype as u64, op as u64, comm as u64], |real: AllreduceFn| {
        // SAFETY: the next MPI_Exscan (or PMPI_Exscan), whose prototype AllreduceFn matches; the caller's arguments,
        // unchanged.
        unsafe { real(sendbuf, recvbuf, count, datatype, op, comm) }
    })
}

// The neighbourhood collectives (on a communicator with a topology). A rank's neighbours, and so
// what it sends, differ from rank to rank: a kind of call is its datatype and communicator, as
// for the `v` forms, and `MPI_Neighbor_alltoallw`'s, whose datatypes are arrays, its communicator.

/// # Safety
/// The MPI standard's contract for MPI_Neighbor_allgather.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Neighbor_allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::NEIGHBOR_ALLGATHER, [0, sendtype as u64, 0, comm as u64], |real: AllToAllFn| {
        // SAFETY: the next MPI_Neighbor_allgather (or PMPI_Neighbor_allgather), whose prototype AllToAllFn matches; the
        // caller's arguments, unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Neighbor_allgatherv.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Neighbor_allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::NEIGHBOR_ALLGATHERV, [0, sendtype as u64, 0, comm as u64], |real: AllgathervFn| {
        // SAFETY: the next MPI_Neighbor_allgatherv (or PMPI_Neighbor_allgatherv), whose prototype AllgathervFn matches;
        // the caller's arguments, unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm) }
    })
}

/// Routed as the other collectives: only MPI_Alltoall switches the low-stall mode to ADAPTIVE1.
///
/// # Safety
/// The MPI standard's contract for MPI_Neighbor_alltoall.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Neighbor_alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::NEIGHBOR_ALLTOALL, [0, sendtype as u64, 0, comm as u64], |real: AllToAllFn| {
        // SAFETY: the next MPI_Neighbor_alltoall (or PMPI_Neighbor_alltoall), whose prototype AllToAllFn matches; the
        // caller's arguments, unchanged.
        unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Neighbor_alltoallv.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Neighbor_alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::NEIGHBOR_ALLTOALLV, [0, sendtype as u64, 0, comm as u64], |real: AlltoallvFn| {
        // SAFETY: the next MPI_Neighbor_alltoallv (or PMPI_Neighbor_alltoallv), whose prototype AlltoallvFn matches;
        // the caller's arguments, unchanged.
        unsafe { real(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm) }
    })
}

/// # Safety
/// The MPI standard's contract for MPI_Neighbor_alltoallw.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn MPI_Neighbor_alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const isize,
    sendtypes: *const usize,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const isize,
    recvtypes: *const usize,
    comm: usize,
) -> c_int {
    mpi::forward(&mpi::NEIGHBOR_ALLTOALLW, [0, 0, 0, comm as u64], |real: NeighborAlltoallwFn| {
        // SAFETY: the next MPI_Neighbor_alltoallw (or PMPI_Neighbor_alltoallw), whose prototype NeighborAlltoallwFn
        // matches; the caller's arguments, unchanged.
        unsafe { real(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm) }
    })
}

// ---- MPI 4's large-count forms ----------------------------------------------------------------

/// The large-count forms (`MPI_Allreduce_c`: counts of `MPI_Count`, displacements of `MPI_Aint`)
/// of the wrapped collectives: each forwarded as its function's is, to the next definition of the
/// `_c` name (or its PMPI form), with the same key; a boundary named for the function is taken at
/// either form. Programs built against an MPI 4 library call these where their counts need 64
/// bits, and some bindings always do.
macro_rules! large_count {
    ($($name:ident($($arg:ident: $t:ty),* $(,)?) as $ty:ident via $collective:ident, key $key:expr;)*) => {$(
        /// # Safety
        /// The MPI standard's contract for the function of this name.
        #[cfg_attr(not(test), no_mangle)]
        pub unsafe extern "C-unwind" fn $name($($arg: $t),*) -> c_int {
            mpi::forward(&mpi::$collective, $key, |real: $ty| {
                // SAFETY: the next definition of this function (or of its PMPI form), whose
                // prototype is the type named with it; the caller's arguments, unchanged.
                unsafe { real($($arg),*) }
            })
        }
        const _: $ty = $name;
    )*};
}

large_count! {
    MPI_Allreduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: usize, op: usize, comm: usize)
        as AllreduceCFn via ALLREDUCE_C, key [count as u64, datatype as u64, op as u64, comm as u64];
    MPI_Reduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: usize, op: usize, root: c_int,
        comm: usize)
        as ReduceCFn via REDUCE_C, key [count as u64, datatype as u64, root as u64, comm as u64];
    MPI_Bcast_c(buffer: *mut c_void, count: i64, datatype: usize, root: c_int, comm: usize)
        as BcastCFn via BCAST_C, key [count as u64, datatype as u64, root as u64, comm as u64];
    MPI_Allgather_c(sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void, recvcount: i64,
        recvtype: usize, comm: usize)
        as AllToAllCFn via ALLGATHER_C, key [recvcount as u64, recvtype as u64, 0, comm as u64];
    MPI_Allgatherv_c(sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void,
        recvcounts: *const i64, displs: *const isize, recvtype: usize, comm: usize)
        as AllgathervCFn via ALLGATHERV_C, key [0, recvtype as u64, 0, comm as u64];
    MPI_Alltoall_c(sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void, recvcount: i64,
        recvtype: usize, comm: usize)
        as AllToAllCFn via ALLTOALL_C, key [recvcount as u64, recvtype as u64, 0, comm as u64];
    MPI_Alltoallv_c(sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const isize, sendtype: usize,
        recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const isize, recvtype: usize, comm: usize)
        as AlltoallvCFn via ALLTOALLV_C, key [0, recvtype as u64, 0, comm as u64];
    MPI_Gather_c(sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void, recvcount: i64,
        recvtype: usize, root: c_int, comm: usize)
        as RootedCFn via GATHER_C, key {
            let (n, t) = mpi::share(sendbuf, (sendcount as u64, sendtype as u64), (recvcount as u64, recvtype as u64));
            [n, t, root as u64, comm as u64]
        };
    MPI_Scatter_c(sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void, recvcount: i64,
        recvtype: usize, root: c_int, comm: usize)
        as RootedCFn via SCATTER_C, key {
            let (n, t) = mpi::share(recvbuf, (recvcount as u64, recvtype as u64), (sendcount as u64, sendtype as u64));
            [n, t, root as u64, comm as u64]
        };
    MPI_Gatherv_c(sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void,
        recvcounts: *const i64, displs: *const isize, recvtype: usize, root: c_int, comm: usize)
        as GathervCFn via GATHERV_C, key [0, mpi::share(sendbuf, (0, sendtype as u64), (0, recvtype as u64)).1, root as u64, comm as u64];
    MPI_Scatterv_c(sendbuf: *const c_void, sendcounts: *const i64, displs: *const isize, sendtype: usize,
        recvbuf: *mut c_void, recvcount: i64, recvtype: usize, root: c_int, comm: usize)
        as ScattervCFn via SCATTERV_C, key [0, mpi::share(recvbuf, (0, recvtype as u64), (0, sendtype as u64)).1, root as u64, comm as u64];
    MPI_Alltoallw_c(sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const isize, sendtypes: *const usize,
        recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const isize, recvtypes: *const usize, comm: usize)
        as AlltoallwCFn via ALLTOALLW_C, key [0, 0, 0, comm as u64];
    MPI_Reduce_scatter_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const i64, datatype: usize,
        op: usize, comm: usize)
        as ReduceScatterCFn via REDUCE_SCATTER_C, key [0, datatype as u64, op as u64, comm as u64];
    MPI_Reduce_scatter_block_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: i64, datatype: usize,
        op: usize, comm: usize)
        as AllreduceCFn via REDUCE_SCATTER_BLOCK_C, key [recvcount as u64, datatype as u64, op as u64, comm as u64];
    MPI_Scan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: usize, op: usize, comm: usize)
        as AllreduceCFn via SCAN_C, key [count as u64, datatype as u64, op as u64, comm as u64];
    MPI_Exscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: usize, op: usize, comm: usize)
        as AllreduceCFn via EXSCAN_C, key [count as u64, datatype as u64, op as u64, comm as u64];
    MPI_Neighbor_allgather_c(sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void,
        recvcount: i64, recvtype: usize, comm: usize)
        as AllToAllCFn via NEIGHBOR_ALLGATHER_C, key [0, sendtype as u64, 0, comm as u64];
    MPI_Neighbor_allgatherv_c(sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void,
        recvcounts: *const i64, displs: *const isize, recvtype: usize, comm: usize)
        as AllgathervCFn via NEIGHBOR_ALLGATHERV_C, key [0, sendtype as u64, 0, comm as u64];
    MPI_Neighbor_alltoall_c(sendbuf: *const c_void, sendcount: i64, sendtype: usize, recvbuf: *mut c_void,
        recvcount: i64, recvtype: usize, comm: usize)
        as AllToAllCFn via NEIGHBOR_ALLTOALL_C, key [0, sendtype as u64, 0, comm as u64];
    MPI_Neighbor_alltoallv_c(sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const isize, sendtype: usize,
        recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const isize, recvtype: usize, comm: usize)
        as AlltoallvCFn via NEIGHBOR_ALLTOALLV_C, key [0, sendtype as u64, 0, comm as u64];
    MPI_Neighbor_alltoallw_c(sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const isize,
        sendtypes: *const usize, recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const isize,
        recvtypes: *const usize, comm: usize)
        as AlltoallwCFn via NEIGHBOR_ALLTOALLW_C, key [0, 0, 0, comm as u64];
}

// ---- PAPI ------------------------------------------------------------------------------------

/// The application's own PAPI measurements come first: libaar.so stops its event set when it is
/// what keeps the application's from starting (`state::start_for_application`).
///
/// # Safety
/// PAPI's contract for PAPI_start.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PAPI_start(EventSet: c_int) -> c_int {
    crate::state::start_for_application(EventSet)
}

/// The application's measurement done: libaar.so's event set counts again if it stepped aside
/// for this one (`state::stop_for_application`).
///
/// # Safety
/// PAPI's contract for PAPI_stop.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PAPI_stop(EventSet: c_int, values: *mut std::ffi::c_longlong) -> c_int {
    // SAFETY: the caller's arguments, under PAPI's contract, passed on unchanged.
    unsafe { crate::state::stop_for_application(EventSet, values) }
}

/// The application's PAPI initialisation waits for libaar.so's own PAPI set-up when another
/// thread is making it (`init::library_init_for_application`).
///
/// # Safety
/// PAPI's contract for PAPI_library_init.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PAPI_library_init(version: c_int) -> c_int {
    init::library_init_for_application(version)
}

/// The application shuts PAPI down, destroying every event set: libaar.so's counters are given up
/// first (`state::shutdown_for_application`).
///
/// # Safety
/// PAPI's contract for PAPI_shutdown.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PAPI_shutdown() {
    crate::state::shutdown_for_application()
}

// ---- C API (cabi/aar.h) ------------------------------------------------------------------------------

const AAR_OK: c_int = 0;
const AAR_EINVAL: c_int = -1;
const AAR_EDISABLED: c_int = -2;

/// Whether the library has started and steers this process: `Ok`, or what a call of the C API
/// that needs it returns. `AAR_EDISABLED`: `AAR_DISABLE`, or a start-up that failed (an internal
/// error, said on stderr), inert for good. `AAR_EINVAL`: still starting, on another thread for
/// longer than a call waits (loading PAPI, say) or on this one (a call from inside the start-up),
/// after `while_starting` (which says so).
fn started(while_starting: impl FnOnce()) -> Result<(), c_int> {
    if init::wait_ready().is_some_and(|s| s.disabled) {
        return Err(AAR_EDISABLED);
    }
    match starting() {
        None => Ok(()),
        Some(true) => {
            while_starting();
            Err(AAR_EINVAL)
        }
        Some(false) => Err(AAR_EDISABLED),
    }
}

/// `None`: started; `Some(true)`: still starting; `Some(false)`: a start-up that failed or was
/// killed by `AAR_DISABLE`.
fn starting() -> Option<bool> {
    let ready = || control::load() & control::READY != 0;
    if ready() {
        return None;
    }
    // READY is set before the start-up ends: one that ended between the two loads is seen here.
    Some(crate::state::initialising() || ready())
}

/// A call refused while starting ([`started`]): it changed nothing and can be made again. Said
/// once per process, by every rank (each its own calls).
#[cold]
fn refused_while_starting(call: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if SAID.swap(true, Relaxed) {
        return;
    }
    crate::diag::error(&format!(
        "{call} was called while libaar.so was still starting (on another thread, longer than a call of aar.h \
         waits for it: loading PAPI or reading the job's files; or from inside the start-up itself): the call \
         changed nothing and returned AAR_EINVAL, as the calls of aar.h that change something do until the \
         start-up is over (later ones are not said again). Call it again once aar_policy_name() no longer returns \"starting\"."
    ));
}

fn api(call: &str, policy: Option<Policy>, enabled: Option<bool>) -> c_int {
    let change = || {
        if let Err(rc) = started(|| refused_while_starting(call)) {
            return rc;
        }
        // While an A/B experiment runs, its schedule alone chooses the policy.
        if policy.is_some() && iterations::ab_running() {
            return AAR_EINVAL;
        }
        control::update(|w| control::with(w, policy, enabled, None));
        AAR_OK
    };
    std::panic::catch_unwind(change).unwrap_or(AAR_EDISABLED)
}

/// An iteration call, once the library has started (before, the iteration record and the A/B
/// schedule are not in place yet: `while_starting` then).
fn iteration_api(
    f: impl FnOnce() -> Result<(), iterations::Refused> + std::panic::UnwindSafe,
    while_starting: impl FnOnce() + std::panic::UnwindSafe,
) -> c_int {
    let run = || started(while_starting).map(|()| f());
    match std::panic::catch_unwind(run) {
        Ok(Err(rc)) => rc,
        Ok(Ok(Ok(()))) => AAR_OK,
        Ok(Ok(Err(iterations::Refused::Disabled))) => AAR_EDISABLED,
        Ok(Ok(Err(iterations::Refused::Invalid))) | Err(_) => AAR_EINVAL,
    }
}

/// Pin every adaptive message to `dlvr_mode` (GNI_DLVMODE_ADAPTIVE0..3).
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_set_mode(dlvr_mode: u16) -> c_int {
    let what = match (dlvr_mode & !GNI_DLVMODE_ROUTING_MASK, RoutingMode::from_routing_bits(dlvr_mode)) {
        (0, Some(m)) => return api("aar_set_mode", Some(Policy::Fixed(m)), None),
        (0, None) => match dlvr_mode_name(dlvr_mode) {
            "OTHER" => "a combination of routing bits uGNI does not name".to_string(),
            name => format!("GNI_DLVMODE_{name}, not an adaptive mode"),
        },
        (flags, _) => format!("no mode alone: it has bits above the routing byte set ({flags:#06x})"),
    };
    static SAID: AtomicBool = AtomicBool::new(false);
    refused(&SAID, || {
        // The four values from uGNI's own constants: "GNI_DLVMODE_ADAPTIVE0 (0x00), …".
        let values: Vec<String> = RoutingMode::ALL
            .iter()
            .map(|m| format!("GNI_DLVMODE_{} ({:#04x})", dlvr_mode_name(m.dlvr_bits()), m.dlvr_bits()))
            .collect();
        (
            format!("aar_set_mode({dlvr_mode:#06x}) was refused: {dlvr_mode:#06x} is {what}"),
            format!(
                "Pass {} or {}, the uGNI values, for DMAPP too (not its DMAPP_ROUTING_* values), or a name to \
                 aar_set_mode_name.",
                values[..3].join(", "),
                values[3]
            ),
        )
    })
}

/// A call that returns AAR_EINVAL and changes nothing, said on stderr: `text` gives what was
/// refused and why, then the fix. Said by every rank (an error in the caller's code), for the
/// first such call of the process to each function (`said`) only, and not under `AAR_DISABLE` (a
/// process that sees no output). A policy call's message names the policy still in force.
#[cold]
fn refused(said: &AtomicBool, text: impl FnOnce() -> (String, String)) -> c_int {
    refused_call(said, true, text)
}

#[cold]
fn refused_call(said: &AtomicBool, policy_call: bool, text: impl FnOnce() -> (String, String)) -> c_int {
    let say = || {
        if init::wait_ready().is_none_or(|s| s.disabled) || said.swap(true, Relaxed) {
            return;
        }
        let w = control::load();
        let kept = if policy_call && w & control::READY != 0 {
            format!(" (the policy in force is still {})", control::policy_name(w))
        } else {
            String::new()
        };
        let (what, fix) = text();
        crate::diag::error(&format!(
            "{what}. It returned AAR_EINVAL and changed nothing{kept}. {fix} Later refused values are not said again."
        ));
    };
    let _ = std::panic::catch_unwind(AssertUnwindSafe(say));
    AAR_EINVAL
}

/// Pin by name ("ADAPTIVE3", "ADAPTIVE_3"), or "auto" / "steady" / "off": the names of `AAR_MODE`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn aar_set_mode_name(name: *const c_char) -> c_int {
    static SAID: AtomicBool = AtomicBool::new(false);
    let fix = || crate::settings::POLICY_NAMES_FIX.to_string();
    if name.is_null() {
        return refused(&SAID, || ("aar_set_mode_name(NULL) was refused: no name".into(), fix()));
    }
    // SAFETY: non-null, NUL-terminated per the contract.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    match name.parse::<Policy>() {
        Ok(p) => api("aar_set_mode_name", Some(p), None),
        // Quoted as a warning quotes a variable's value: escaped, and cut when long.
        Err(_) => refused(&SAID, || {
            (format!("aar_set_mode_name({}) was refused: it is not a policy", aar_record::quotes::shown(&name)), fix())
        }),
    }
}

/// Back to automatic routing (the paper's algorithm).
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_set_auto() -> c_int {
    api("aar_set_auto", Some(Policy::Auto), None)
}

/// Pause: forward every call untouched until `aar_enable()`.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_disable() -> c_int {
    api("aar_disable", None, Some(false))
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_enable() -> c_int {
    api("aar_enable", None, Some(true))
}

/// "auto", "steady", "off", a mode name, "paused", "disabled" (AAR_DISABLE) or "starting". A call
/// made while another thread initialises waits for it, as the other calls do (it would read the
/// word before READY is set and say "disabled"); one that waited in vain says "starting".
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_policy_name() -> *const c_char {
    let _ = std::panic::catch_unwind(init::wait_ready);
    let name = match starting() {
        Some(true) => "starting",
        _ => control::policy_name(control::load()),
    };
    policy_c_name(name).as_ptr()
}

/// A name [`control::policy_name`] gives, or "starting", as a static C string.
fn policy_c_name(name: &str) -> &'static CStr {
    const NAMES: [&CStr; 10] = [
        c"auto",
        c"steady",
        c"off",
        c"ADAPTIVE0",
        c"ADAPTIVE1",
        c"ADAPTIVE2",
        c"ADAPTIVE3",
        c"paused",
        c"disabled",
        c"starting",
    ];
    NAMES.into_iter().find(|c| c.to_bytes() == name.as_bytes()).unwrap_or(c"disabled")
}

/// Begin the next iteration (ending the one in progress, if any).
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_iteration_begin() -> c_int {
    // Refused while starting, it still takes its index (so the ranks' numbering stays aligned).
    let while_starting = || {
        if !iterations::refused_begin() {
            refused_while_starting("aar_iteration_begin");
        }
    };
    iteration_api(iterations::api_begin, while_starting)
}

/// End the iteration in progress.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_iteration_end() -> c_int {
    iteration_api(iterations::api_end, || refused_while_starting("aar_iteration_end"))
}

/// Label the iteration in progress, or the next one.
///
/// # Safety
/// `label` is NULL or a NUL-terminated string.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn aar_iteration_label(label: *const c_char) -> c_int {
    static SAID: AtomicBool = AtomicBool::new(false);
    let fix = || {
        format!(
            "A label is 1 to {} characters from A-Z a-z 0-9 {} (no blank, quote or non-ASCII character); the \
             iteration keeps the label it had, if any.",
            rows::MAX_LABEL,
            rows::LABEL_PUNCTUATION.chars().map(String::from).collect::<Vec<_>>().join(" ")
        )
    };
    if label.is_null() {
        return refused_call(&SAID, false, || ("aar_iteration_label(NULL) was refused: no label".into(), fix()));
    }
    // SAFETY: non-null and NUL-terminated per the contract; strnlen reads no further than one
    // byte past the longest label, which is then refused whatever follows.
    let len = unsafe { libc::strnlen(label, rows::MAX_LABEL + 1) };
    // SAFETY: the `len` bytes strnlen just read.
    let bytes = unsafe { std::slice::from_raw_parts(label.cast::<u8>(), len) };
    // A bad label is AAR_EINVAL whatever the library's state, AAR_DISABLE included.
    if !rows::valid_label(bytes) {
        // Quoted to its first MAX_LABEL characters, and "…" when it has more.
        let shown = aar_record::quotes::quoted(&String::from_utf8_lossy(bytes), rows::MAX_LABEL);
        return refused_call(&SAID, false, || {
            (format!("aar_iteration_label({shown}) was refused: it is no label"), fix())
        });
    }
    iteration_api(|| iterations::api_label(bytes), || refused_while_starting("aar_iteration_label"))
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
/// JSON document (`aar-selfcheck/2`) copied into the caller's buffer. Returns the document's
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every policy's name comes back as itself (`steady` once came back as "disabled").
    #[test]
    fn every_policy_has_its_c_name() {
        for p in Policy::ALL {
            assert_eq!(policy_c_name(p.name()).to_str(), Ok(p.name()), "{p:?}");
        }
        assert_eq!(policy_c_name("paused").to_str(), Ok("paused"));
        assert_eq!(policy_c_name("starting").to_str(), Ok("starting"));
        assert_eq!(policy_c_name("what").to_str(), Ok("disabled"));
    }
}
