//! Every DMAPP symbol the emulated library exports (cabi/dmapp.h; `libdmapp.so` is a link to
//! this library): set-up and job queries, RMA attributes, segments, the symmetric heap,
//! completion, the 67 data calls (22 calls in their blocking, `_nb` and `_nbi` forms and
//! `dmapp_get_flag_nbi`, from one table), and the emulator's DMAPP control calls (cabi/aar_emu.h). As for uGNI, each export only handles the C side (NULL
//! pointers, reading and writing the caller's structs, a panic, which becomes
//! DMAPP_RC_RESOURCE_ERROR); the work is done in `crate::dmapp`.

use std::ffi::{c_int, c_void};

use aar_abi::dmapp::Direction::{Get, Put};
use aar_abi::dmapp::*;

use super::{guarded, put};
use crate::amo::AmoOp;
use crate::dmapp::attrs::{self, Attrs, Requested};
use crate::dmapp::job;
use crate::dmapp::ops::{self, AmoSpec, Form, Op, Pes, Step};

// Every export has exactly the type aar_abi gives that function, the type libaar.so calls it
// through (the data calls' checks are in the table below).
const _: AttrsInitFn = dmapp_init;
const _: AttrsInitFn = dmapp_init_ext;
const _: VoidFn = dmapp_finalize;
const _: GetJobinfoFn = dmapp_get_jobinfo;
const _: GetAttrsFn = dmapp_get_rma_attrs;
const _: GetAttrsFn = dmapp_get_rma_attrs_ext;
const _: AttrsInitFn = dmapp_set_rma_attrs;
const _: AttrsInitFn = dmapp_set_rma_attrs_ext;
const _: MemRegisterFn = dmapp_mem_register;
const _: MemUnregisterFn = dmapp_mem_unregister;
const _: SheapMallocFn = dmapp_sheap_malloc;
const _: SheapReallocFn = dmapp_sheap_realloc;
const _: SheapFreeFn = dmapp_sheap_free;
const _: SyncidWaitFn = dmapp_syncid_wait;
const _: SyncidTestFn = dmapp_syncid_test;
const _: VoidFn = dmapp_gsync_wait;
const _: GsyncTestFn = dmapp_gsync_test;

/// [`guarded`] for DMAPP: a panic becomes DMAPP_RC_RESOURCE_ERROR.
fn guard(body: impl FnOnce() -> Result<(), DmappReturn>) -> DmappReturn {
    guarded(DMAPP_RC_RESOURCE_ERROR, body)
}

/// DMAPP_RC_INVALID_PARAM unless `ok` (the caller's pointers are usable).
fn need(ok: bool) -> Result<(), DmappReturn> {
    ok.then_some(()).ok_or(DMAPP_RC_INVALID_PARAM)
}

/// Which attribute struct a call takes: `dmapp_rma_attrs_t` or `dmapp_rma_attrs_ext_t`.
#[derive(Clone, Copy)]
enum Struct {
    Base,
    Ext,
}

/// The caller's attribute struct, if the pointer is not NULL.
///
/// # Safety
/// `p` is NULL or readable for the struct's size.
unsafe fn read_attrs(p: *const c_void, s: Struct) -> Option<Requested> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null, readable for the struct's size (contract); copied once.
    Some(unsafe {
        match s {
            Struct::Base => Requested::Base(p.cast::<[u8; attrs::BASE_BYTES]>().read_unaligned()),
            Struct::Ext => Requested::Ext(p.cast::<[u8; attrs::EXT_BYTES]>().read_unaligned()),
        }
    })
}

/// Writes `a` into the caller's struct, if the pointer is not NULL.
///
/// # Safety
/// `p` is NULL or writable for the struct's size.
unsafe fn write_attrs(p: *mut c_void, s: Struct, a: &Attrs) {
    if p.is_null() {
        return;
    }
    // SAFETY: non-null, writable for the struct's size (contract).
    unsafe {
        match s {
            Struct::Base => put(p.cast(), a.base_bytes()),
            Struct::Ext => put(p.cast(), attrs::layout().encode(a)),
        }
    }
}

/// `dmapp_init[_ext]` and `dmapp_set_rma_attrs[_ext]`: `apply` the request, write `actual`.
///
/// # Safety
/// `requested` is NULL or readable and `actual` NULL or writable for the struct's size.
unsafe fn set_with(
    s: Struct,
    requested: *mut c_void,
    actual: *mut c_void,
    apply: impl FnOnce(Option<Requested>) -> Result<Attrs, DmappReturn>,
) -> DmappReturn {
    guard(|| {
        // SAFETY: the caller's structs (contract).
        let now = apply(unsafe { read_attrs(requested, s) })?;
        // SAFETY: the caller's structs (contract).
        unsafe { write_attrs(actual, s, &now) };
        Ok(())
    })
}

// ---- set-up and job queries --------------------------------------------------------------------

/// Starts the job: `AAR_EMU_DMAPP_PES` PEs, the symmetric heap, the data segment, and
/// `requested` (NULL: DMAPP's defaults) as the attributes of every thread; `actual` (if not NULL)
/// receives them. When the job runs already, nothing changes and `actual` receives the calling
/// thread's attributes.
///
/// # Safety
/// `requested` is NULL or a readable `dmapp_rma_attrs_t`; `actual` NULL or writable for one.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_init(requested: *mut c_void, actual: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's structs (contract above).
    unsafe { set_with(Struct::Base, requested, actual, |r| job::init("dmapp_init", r)) }
}

/// [`dmapp_init`] with `dmapp_rma_attrs_ext_t`s (the emulator's 48 bytes, in the layout
/// `AAR_EMU_DMAPP_LAYOUT` says).
///
/// # Safety
/// `requested` is NULL or a readable `dmapp_rma_attrs_ext_t`; `actual` NULL or writable for one.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_init_ext(requested: *mut c_void, actual: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's structs (contract above).
    unsafe { set_with(Struct::Ext, requested, actual, |r| job::init("dmapp_init_ext", r)) }
}

/// # Safety
/// Nothing the caller passes; after it, every address of the symmetric heap is invalid.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_finalize() -> DmappReturn {
    guard(job::finalize)
}

/// # Safety
/// `info` is NULL or writable for a `dmapp_jobinfo_t`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_get_jobinfo(info: *mut DmappJobinfo) -> DmappReturn {
    guard(|| {
        need(!info.is_null())?;
        let j = job::jobinfo()?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(info, j) };
        Ok(())
    })
}

// ---- RMA attributes ----------------------------------------------------------------------------

/// # Safety
/// `attrs` is NULL or writable for a `dmapp_rma_attrs_t`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_get_rma_attrs(attrs: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's struct (contract above).
    unsafe { get_into(Struct::Base, attrs) }
}

/// # Safety
/// `attrs` is NULL or writable for a `dmapp_rma_attrs_ext_t`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_get_rma_attrs_ext(attrs: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's struct (contract above).
    unsafe { get_into(Struct::Ext, attrs) }
}

/// `dmapp_get_rma_attrs[_ext]`: the calling thread's attributes into the caller's struct.
///
/// # Safety
/// `out` is NULL or writable for the struct's size.
unsafe fn get_into(s: Struct, out: *mut c_void) -> DmappReturn {
    guard(|| {
        need(!out.is_null())?;
        // SAFETY: non-null, writable for the struct's size (contract).
        unsafe { write_attrs(out, s, &attrs::get()?) };
        Ok(())
    })
}

/// The calling thread's attributes become `requested` (the ext-only fields kept), if DMAPP
/// accepts every value; otherwise DMAPP_RC_INVALID_PARAM and nothing changes. `actual` (if not
/// NULL) receives what is in force.
///
/// # Safety
/// `requested` is NULL or a readable `dmapp_rma_attrs_t`; `actual` NULL or writable for one.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_set_rma_attrs(requested: *mut c_void, actual: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's structs (contract above).
    unsafe { set_with(Struct::Base, requested, actual, |r| attrs::set("dmapp_set_rma_attrs", r)) }
}

/// [`dmapp_set_rma_attrs`] with `dmapp_rma_attrs_ext_t`s; unknown `queue_flags` bits are cleared.
///
/// # Safety
/// `requested` is NULL or a readable `dmapp_rma_attrs_ext_t`; `actual` NULL or writable for one.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_set_rma_attrs_ext(requested: *mut c_void, actual: *mut c_void) -> DmappReturn {
    // SAFETY: the caller's structs (contract above).
    unsafe { set_with(Struct::Ext, requested, actual, |r| attrs::set("dmapp_set_rma_attrs_ext", r)) }
}

// ---- segments ----------------------------------------------------------------------------------

/// Makes [addr, addr+length) of this process a segment that every PE has (PE j > 0 a copy of its
/// own, zeroed).
///
/// # Safety
/// `seg` is NULL or writable for a `dmapp_seg_desc_t`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_mem_register(addr: *mut c_void, length: u64, seg: *mut DmappSegDesc) -> DmappReturn {
    guard(|| {
        need(!seg.is_null())?;
        let d = job::register(addr as u64, length)?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(seg, d) };
        Ok(())
    })
}

/// # Safety
/// `seg` is NULL or a readable `dmapp_seg_desc_t`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_mem_unregister(seg: *mut DmappSegDesc) -> DmappReturn {
    guard(|| {
        need(!seg.is_null())?;
        // SAFETY: non-null descriptor (contract above).
        job::unregister(&unsafe { seg.read_unaligned() })
    })
}

// ---- the symmetric heap: a panic (never expected) gives NULL, as no room does --------------------

/// A block of `size` bytes of the symmetric heap at the same offset on every PE, or NULL (no job,
/// no room).
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn dmapp_sheap_malloc(size: usize) -> *mut c_void {
    sheap(|| job::sheap_malloc(size as u64))
}

/// # Safety
/// None beyond the C contract: `ptr` is only compared with the blocks handed out, and read (PE
/// 0's copy) only if it is one.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_sheap_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    sheap(|| job::sheap_realloc(ptr as u64, size as u64))
}

/// # Safety
/// None: `ptr` is only compared with the blocks handed out.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_sheap_free(ptr: *mut c_void) {
    sheap(|| {
        job::sheap_free(ptr as u64);
        None
    });
}

fn sheap(body: impl FnOnce() -> Option<u64>) -> *mut c_void {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
        .ok()
        .flatten()
        .map_or(std::ptr::null_mut(), |a| a as *mut c_void)
}

// ---- completion: everything completes inside its call --------------------------------------------

/// # Safety
/// `syncid` is NULL or readable.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_syncid_wait(syncid: *mut DmappSyncidHandle) -> DmappReturn {
    // SAFETY: the caller's sync id (contract above).
    guard(|| unsafe { known_syncid(syncid) })
}

/// # Safety
/// `syncid` is NULL or readable; `flag` NULL or writable.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_syncid_test(syncid: *mut DmappSyncidHandle, flag: *mut c_int) -> DmappReturn {
    guard(|| {
        need(!flag.is_null())?;
        // SAFETY: the caller's sync id (contract above).
        unsafe { known_syncid(syncid)? };
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(flag, 1) };
        Ok(())
    })
}

/// A sync id an `_nb` call wrote, in a running job.
///
/// # Safety
/// `syncid` is NULL or readable.
unsafe fn known_syncid(syncid: *mut DmappSyncidHandle) -> Result<(), DmappReturn> {
    job::get(&job::read())?;
    // SAFETY: non-null (checked first), readable (contract).
    need(!syncid.is_null() && unsafe { syncid.read_unaligned() } == ops::syncid_done())
}

/// # Safety
/// Nothing the caller passes.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_gsync_wait() -> DmappReturn {
    guard(|| job::get(&job::read()).map(drop))
}

/// # Safety
/// `flag` is NULL or writable.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn dmapp_gsync_test(flag: *mut c_int) -> DmappReturn {
    guard(|| {
        need(!flag.is_null())?;
        job::get(&job::read())?;
        // SAFETY: non-null out-parameter (contract above).
        unsafe { put(flag, 1) };
        Ok(())
    })
}

// ---- data calls ----------------------------------------------------------------------------------

/// One data-call export: its C side is only catching a panic; `crate::dmapp::ops` checks the
/// arguments.
macro_rules! data_call {
    ($name:ident, $form:expr, ($($arg:ident: $t:ty),*) => $op:expr) => {
        #[doc = concat!("`", stringify!($name), "` (cabi/dmapp.h).")]
        ///
        /// # Safety
        /// Each pointer is NULL or points to what cabi/dmapp.h says: a segment descriptor, PE and
        /// index lists of the lengths given, a `dmapp_amo_t`, a sync id to write, local buffers
        /// of the elements the call moves (the remote side is checked against the segment).
        #[cfg_attr(not(test), no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $t),*) -> DmappReturn {
            let op = $op;
            // SAFETY: the caller's pointers, as this function's contract says.
            guard(|| match unsafe { ops::call(stringify!($name), $form, op) } {
                DMAPP_RC_SUCCESS => Ok(()),
                rc => Err(rc),
            })
        }
    };
}

/// The three forms of each data call, from one row: `FnType, NbFnType: [blocking, _nb, _nbi]
/// (parameters of the blocking form) => the call's arguments as an `ops::Op``. The `_nb` form
/// takes a sync id after them; each export is checked against its `aar_abi::dmapp` type.
macro_rules! data_calls {
    ($($fn_ty:ident, $nb_ty:ident: [$blocking:ident, $nb:ident, $nbi:ident]
        ($($arg:ident: $t:ty),* $(,)?) => $op:expr;)*) => {$(
        const _: $fn_ty = $blocking;
        const _: $nb_ty = $nb;
        const _: $fn_ty = $nbi;
        data_call!($blocking, Form::Blocking, ($($arg: $t),*) => $op);
        data_call!($nb, Form::Nb(syncid), ($($arg: $t,)* syncid: *mut DmappSyncidHandle) => $op);
        data_call!($nbi, Form::Nbi, ($($arg: $t),*) => $op);
    )*};
}

/// An operation with one operand.
fn one(op: AmoOp, operand: i64) -> AmoSpec {
    AmoSpec::Op(op, operand, 0)
}

type Seg = *mut DmappSegDesc;
type Buf = *mut c_void;

data_calls! {
    PutFn, PutNbFn: [dmapp_put, dmapp_put_nb, dmapp_put_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe: DmappPe, source_addr: Buf, nelems: u64, ty: DmappType)
        => Op::rma(Put, target_addr, source_addr, target_seg, Pes::One(target_pe), nelems, ty);
    GetFn, GetNbFn: [dmapp_get, dmapp_get_nb, dmapp_get_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, nelems: u64, ty: DmappType)
        => Op::rma(Get, target_addr, source_addr, source_seg, Pes::One(source_pe), nelems, ty);
    PutFlagFn, PutFlagNbFn: [dmapp_put_flag, dmapp_put_flag_nb, dmapp_put_flag_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe: DmappPe, source_addr: Buf, nelems: u64, ty: DmappType,
         target_flag: Buf, flag_value: u64)
        => Op::rma(Put, target_addr, source_addr, target_seg, Pes::One(target_pe), nelems, ty).flag(target_flag, flag_value);
    IputFn, IputNbFn: [dmapp_iput, dmapp_iput_nb, dmapp_iput_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe: DmappPe, source_addr: Buf, tst: isize, sst: isize,
         nelems: u64, ty: DmappType)
        => Op::rma(Put, target_addr, source_addr, target_seg, Pes::One(target_pe), nelems, ty)
            .steps(Step::Stride(tst), Step::Stride(sst));
    IgetFn, IgetNbFn: [dmapp_iget, dmapp_iget_nb, dmapp_iget_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, tst: isize, sst: isize,
         nelems: u64, ty: DmappType)
        => Op::rma(Get, target_addr, source_addr, source_seg, Pes::One(source_pe), nelems, ty)
            .steps(Step::Stride(tst), Step::Stride(sst));
    IxputFn, IxputNbFn: [dmapp_ixput, dmapp_ixput_nb, dmapp_ixput_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe: DmappPe, source_addr: Buf, tidx: *mut isize, nelems: u64,
         ty: DmappType)
        => Op::rma(Put, target_addr, source_addr, target_seg, Pes::One(target_pe), nelems, ty)
            .steps(Step::Index(tidx), Step::Unit);
    IxgetFn, IxgetNbFn: [dmapp_ixget, dmapp_ixget_nb, dmapp_ixget_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, sidx: *mut isize, nelems: u64,
         ty: DmappType)
        => Op::rma(Get, target_addr, source_addr, source_seg, Pes::One(source_pe), nelems, ty)
            .steps(Step::Unit, Step::Index(sidx));
    PutIxpeFn, PutIxpeNbFn: [dmapp_put_ixpe, dmapp_put_ixpe_nb, dmapp_put_ixpe_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe_list: *mut DmappPe, num_target_pes: u32, source_addr: Buf,
         nelems: u64, ty: DmappType)
        => Op::rma(Put, target_addr, source_addr, target_seg, Pes::List(target_pe_list, num_target_pes), nelems, ty);
    PutIxpeFn, PutIxpeNbFn: [dmapp_scatter_ixpe, dmapp_scatter_ixpe_nb, dmapp_scatter_ixpe_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe_list: *mut DmappPe, num_target_pes: u32, source_addr: Buf,
         nelems: u64, ty: DmappType)
        => Op::rma(Put, target_addr, source_addr, target_seg, Pes::List(target_pe_list, num_target_pes), nelems, ty)
            .blocks();
    GatherIxpeFn, GatherIxpeNbFn: [dmapp_gather_ixpe, dmapp_gather_ixpe_nb, dmapp_gather_ixpe_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe_list: *mut DmappPe, num_source_pes: u32,
         nelems: u64, ty: DmappType)
        => Op::rma(Get, target_addr, source_addr, source_seg, Pes::List(source_pe_list, num_source_pes), nelems, ty)
            .blocks();
    AmoFn, AmoNbFn: [dmapp_aadd_qw, dmapp_aadd_qw_nb, dmapp_aadd_qw_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe: DmappPe, operand: i64)
        => Op::amo(target_addr, target_seg, target_pe, one(AmoOp::Add, operand), None);
    AmoFn, AmoNbFn: [dmapp_aand_qw, dmapp_aand_qw_nb, dmapp_aand_qw_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe: DmappPe, operand: i64)
        => Op::amo(target_addr, target_seg, target_pe, one(AmoOp::And, operand), None);
    AmoFn, AmoNbFn: [dmapp_aor_qw, dmapp_aor_qw_nb, dmapp_aor_qw_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe: DmappPe, operand: i64)
        => Op::amo(target_addr, target_seg, target_pe, one(AmoOp::Or, operand), None);
    AmoFn, AmoNbFn: [dmapp_axor_qw, dmapp_axor_qw_nb, dmapp_axor_qw_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe: DmappPe, operand: i64)
        => Op::amo(target_addr, target_seg, target_pe, one(AmoOp::Xor, operand), None);
    FetchAmoFn, FetchAmoNbFn: [dmapp_afadd_qw, dmapp_afadd_qw_nb, dmapp_afadd_qw_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, operand: i64)
        => Op::amo(source_addr, source_seg, source_pe, one(AmoOp::Add, operand), Some(target_addr));
    FetchAmoFn, FetchAmoNbFn: [dmapp_afand_qw, dmapp_afand_qw_nb, dmapp_afand_qw_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, operand: i64)
        => Op::amo(source_addr, source_seg, source_pe, one(AmoOp::And, operand), Some(target_addr));
    FetchAmoFn, FetchAmoNbFn: [dmapp_afor_qw, dmapp_afor_qw_nb, dmapp_afor_qw_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, operand: i64)
        => Op::amo(source_addr, source_seg, source_pe, one(AmoOp::Or, operand), Some(target_addr));
    FetchAmoFn, FetchAmoNbFn: [dmapp_afxor_qw, dmapp_afxor_qw_nb, dmapp_afxor_qw_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, operand: i64)
        => Op::amo(source_addr, source_seg, source_pe, one(AmoOp::Xor, operand), Some(target_addr));
    FetchAmo2Fn, FetchAmo2NbFn: [dmapp_afax_qw, dmapp_afax_qw_nb, dmapp_afax_qw_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, and_mask: i64, xor_mask: i64)
        => Op::amo(source_addr, source_seg, source_pe, AmoSpec::Op(AmoOp::AndXor, and_mask, xor_mask),
            Some(target_addr));
    FetchAmo2Fn, FetchAmo2NbFn: [dmapp_acswap_qw, dmapp_acswap_qw_nb, dmapp_acswap_qw_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, comperand: i64, swaperand: i64)
        => Op::amo(source_addr, source_seg, source_pe, AmoSpec::Op(AmoOp::CSwap, comperand, swaperand),
            Some(target_addr));
    AmoPutFn, AmoPutNbFn: [dmapp_amo_put, dmapp_amo_put_nb, dmapp_amo_put_nbi]
        (target_addr: Buf, target_seg: Seg, target_pe: DmappPe, amo: Buf)
        => Op::amo(target_addr, target_seg, target_pe, AmoSpec::Described(amo.cast()), None);
    AmoGetFn, AmoGetNbFn: [dmapp_amo_get, dmapp_amo_get_nb, dmapp_amo_get_nbi]
        (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, amo: Buf)
        => Op::amo(source_addr, source_seg, source_pe, AmoSpec::Described(amo.cast()), Some(target_addr));
}

// get_flag_nbi has no blocking or `_nb` form: a GET whose last element lands last (as every GET's
// does here).
const _: GetFn = dmapp_get_flag_nbi;
data_call!(dmapp_get_flag_nbi, Form::Nbi,
    (target_addr: Buf, source_addr: Buf, source_seg: Seg, source_pe: DmappPe, nelems: u64, ty: DmappType)
    => Op::rma(Get, target_addr, source_addr, source_seg, Pes::One(source_pe), nelems, ty));

// ---- the emulator's DMAPP control calls (cabi/aar_emu.h) --------------------------------------------

/// DMAPP data calls received so far, of every kind and form, whatever they returned.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_dmapp_calls() -> u64 {
    ops::calls()
}

/// `dmapp_set_rma_attrs[_ext]` calls received so far: from the calling thread (`all` == 0) or
/// from every thread.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_dmapp_attr_sets(all: c_int) -> u64 {
    if all == 0 {
        attrs::sets_here()
    } else {
        attrs::sets()
    }
}

/// The next `n` `dmapp_set_rma_attrs[_ext]` calls of any thread answer `DMAPP_RC_BUSY` and
/// change nothing (`UINT_MAX`: every one from now on; 0: none), replacing what is left of
/// `AAR_EMU_DMAPP_SET_BUSY`.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_dmapp_set_busy(n: u32) {
    attrs::set_busy(n);
}

/// The routing value in force on the calling thread for `direction` (0 PUT and AMO, 1 GET),
/// whatever the layout of the ext struct; -1 before `dmapp_init` or for another direction.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn aar_emu_dmapp_routing(direction: c_int) -> c_int {
    let Some(&d) = Direction::ALL.get(direction as usize).filter(|_| direction >= 0) else {
        return -1;
    };
    std::panic::catch_unwind(|| attrs::get().map_or(-1, |a| a.routing(d) as c_int)).unwrap_or(-1)
}
