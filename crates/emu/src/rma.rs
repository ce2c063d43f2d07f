//! RDMA, FMA, AMO and CQ-write posts, single and chained. A post is checked completely (handles,
//! binding, registered ranges, alignment, CQ room) before any byte moves, then runs to completion
//! inside the call: data, remote events, the local completion event, then the counters.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use aar_abi::*;
use aar_engine::model::Transfer;

use crate::amo::{apply_amo, apply_amo32, decode_amo, Amo, AmoOp, Width};
use crate::counters;
use crate::cq::Cq;
use crate::cq_entry::remote_post_entry;
use crate::job;
use crate::post_log::{self, Record};
use crate::registry::{self, is_zero, Ep, MemReg, Registry};
use crate::shm::{Reg, Ring, NO_RING};
use crate::timing::NicTransfer;

/// Chain elements are not `gni_post_descriptor_t`; their real layout is not public. These are the
/// emulator's (and cabi/gni_pub.h's) definitions; aar-abi deliberately has none, because the shim
/// must never read them.
#[repr(C)]
pub struct CtPutDescr {
    pub next_descr: *mut c_void,
    pub ep_hndl: *mut c_void,
    pub length: u64,
    pub local_addr: u64,
    pub remote_addr: u64,
    pub remote_mem_hndl: GniMemHandle,
}

#[repr(C)]
pub struct CtGetDescr {
    pub next_descr: *mut c_void,
    pub ep_hndl: *mut c_void,
    pub length: u64,
    pub local_addr: u64,
    pub remote_addr: u64,
    pub remote_mem_hndl: GniMemHandle,
    pub local_mem_hndl: GniMemHandle,
}

#[repr(C)]
pub struct CtCqwDescr {
    pub next_descr: *mut c_void,
    pub ep_hndl: *mut c_void,
    pub cqwrite_value: u64,
    pub remote_mem_hndl: GniMemHandle,
}

/// A longer chain is taken to be a cycle.
const MAX_CHAIN: u64 = 1 << 16;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Call {
    PostRdma,
    PostFma,
    PostCqWrite,
    CtPostFma,
    CtPostCqWrite,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::PostRdma => "GNI_PostRdma",
            Call::PostFma => "GNI_PostFma",
            Call::PostCqWrite => "GNI_PostCqWrite",
            Call::CtPostFma => "GNI_CtPostFma",
            Call::CtPostCqWrite => "GNI_CtPostCqWrite",
        }
    }

    fn chained(self) -> bool {
        matches!(self, Call::CtPostFma | Call::CtPostCqWrite)
    }

    /// Which post types each call accepts (CE needs collective-engine setup the emulator lacks).
    fn accepts(self, ty: GniPostType) -> Result<(), GniReturn> {
        let ok = match self {
            Call::PostRdma => matches!(ty, GNI_POST_RDMA_PUT | GNI_POST_RDMA_GET),
            Call::PostFma => matches!(
                ty,
                GNI_POST_FMA_PUT
                    | GNI_POST_FMA_PUT_W_SYNCFLAG
                    | GNI_POST_FMA_GET
                    | GNI_POST_FMA_GET_W_FLAG
                    | GNI_POST_AMO
                    | GNI_POST_AMO_W_FLAG
            ),
            Call::PostCqWrite | Call::CtPostCqWrite => ty == GNI_POST_CQWRITE,
            Call::CtPostFma => matches!(ty, GNI_POST_FMA_PUT | GNI_POST_FMA_GET),
        };
        match (ok, ty) {
            (true, _) => Ok(()),
            (false, GNI_POST_CE) => Err(GNI_RC_ILLEGAL_OP),
            (false, _) => Err(GNI_RC_INVALID_PARAM),
        }
    }
}

/// One transfer's parameters, from a descriptor or a chain element.
struct Request {
    post_type: GniPostType,
    local_addr: u64,
    /// None: the request carries no local handle (chained FMA PUT elements).
    local_mh: Option<GniMemHandle>,
    remote_addr: u64,
    remote_mh: GniMemHandle,
    length: u64,
    remote_event: bool,
    sync_flag_addr: u64,
    sync_flag_value: u64,
    amo_cmd: GniFmaCmdType,
    first_operand: u64,
    second_operand: u64,
    cqwrite_value: u64,
}

impl Request {
    fn from_descriptor(d: &GniPostDescriptor) -> Request {
        Request {
            post_type: d.r#type,
            local_addr: d.local_addr,
            local_mh: Some(d.local_mem_hndl),
            remote_addr: d.remote_addr,
            remote_mh: d.remote_mem_hndl,
            length: d.length,
            remote_event: d.cq_mode & GNI_CQMODE_REMOTE_EVENT != 0,
            sync_flag_addr: d.sync_flag_addr,
            sync_flag_value: d.sync_flag_value,
            amo_cmd: d.amo_cmd,
            first_operand: d.first_operand,
            second_operand: d.second_operand,
            cqwrite_value: d.cqwrite_value,
        }
    }

    /// A chain element: the head supplies type and event modes, the element the addresses.
    fn element(
        head: &Request,
        local_addr: u64,
        local_mh: Option<GniMemHandle>,
        remote_addr: u64,
        remote_mh: GniMemHandle,
        length: u64,
    ) -> Request {
        Request {
            post_type: head.post_type,
            local_addr,
            local_mh,
            remote_addr,
            remote_mh,
            length,
            remote_event: head.remote_event,
            sync_flag_addr: 0,
            sync_flag_value: 0,
            amo_cmd: 0,
            first_operand: 0,
            second_operand: 0,
            cqwrite_value: 0,
        }
    }
}

#[derive(Clone, Copy)]
enum Op {
    /// Moves `len` bytes from `src` to `dst`, then stores the 64-bit sync flag if any. `put`:
    /// `dst` and the flag are on the remote side (else `src` is, and the flag is local).
    Copy { src: u64, dst: u64, len: u64, put: bool, flag: Option<(u64, u64)> },
    Amo {
        target: u64,
        op: AmoOp,
        width: Width,
        first: u64,
        second: u64,
        fetch_to: Option<u64>,
        flag: Option<(u64, u64)>,
    },
    /// The remote event is the whole transfer.
    CqWrite,
}

/// Where the remote side of a transfer is: in this process, or in another rank of the job.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    Here,
    Rank(u32),
}

/// Where a remote event goes: a CQ of this process, or a ring of another rank's CQ.
enum Sink {
    Cq(Arc<Cq>),
    Ring(&'static Ring),
}

impl Sink {
    fn deliver(&self, entry: u64) {
        match self {
            Sink::Cq(cq) => cq.push_unreserved(entry),
            Sink::Ring(ring) => {
                ring.push(entry, 0, false);
            }
        }
    }
}

/// The registration a post's remote handle names.
struct Remote {
    owner: Owner,
    reg: Reg,
    sink: Option<Sink>,
}

impl Remote {
    /// The registration, if it covers [addr, addr+len) and allows writing when `write`.
    fn check(self, addr: u64, len: u64, write: bool) -> Result<Remote, GniReturn> {
        if !self.reg.covers(addr, len) {
            return Err(GNI_RC_INVALID_PARAM);
        }
        if write && self.reg.read_only {
            return Err(GNI_RC_PERMISSION_ERROR);
        }
        Ok(self)
    }
}

/// The registration behind the remote handle `mh` of a post to NIC address `raddr`: the target
/// of a post is that NIC and that handle (the endpoint's remote inst_id only shapes events).
/// One of this process's, or (in a job) of the rank the handle names, on a NIC at `raddr`.
fn remote(reg: &Registry, mh: &GniMemHandle, raddr: u32) -> Result<Remote, GniReturn> {
    if let Some(m) = reg.mems.get(&mh.qword1).filter(|m| m.check == mh.qword2) {
        if reg.nics.get(&m.nic).map(|n| n.addr) != Some(raddr) {
            return Err(GNI_RC_INVALID_PARAM);
        }
        let r = Reg { addr: m.addr, len: m.len, read_only: m.read_only, ring: NO_RING };
        return Ok(Remote { owner: Owner::Here, reg: r, sink: m.dst_cq.clone().map(Sink::Cq) });
    }
    let j = job::get().ok_or(GNI_RC_INVALID_PARAM)?;
    let (rank, area, r) = j.lookup(mh).ok_or(GNI_RC_INVALID_PARAM)?;
    if rank == j.rank || area.header.nic_addr.load(Ordering::Relaxed) != raddr {
        return Err(GNI_RC_INVALID_PARAM);
    }
    Ok(Remote { owner: Owner::Rank(rank), reg: r, sink: j.ring(rank, r.ring).map(Sink::Ring) })
}

/// A checked transfer, ready to run.
struct Leg {
    op: Op,
    owner: Owner,
    bytes: u64,
    dst_nic: u32,
    /// Where a remote event (REMOTE_EVENT mode or a CQ write) goes, with its 48-bit data.
    remote_event: Option<(Sink, u64)>,
}

/// The (address, value) of the 64-bit flag a post stores after its data when `with_flag`,
/// checked against the region that receives it.
fn sync_flag(r: &Request, with_flag: bool, region: &Reg) -> Result<Option<(u64, u64)>, GniReturn> {
    if !with_flag {
        return Ok(None);
    }
    let addr = r.sync_flag_addr;
    if addr & 7 != 0 {
        return Err(GNI_RC_ALIGNMENT_ERROR);
    }
    if !region.covers(addr, 8) {
        return Err(GNI_RC_INVALID_PARAM);
    }
    if region.read_only {
        return Err(GNI_RC_PERMISSION_ERROR);
    }
    Ok(Some((addr, r.sync_flag_value)))
}

/// Says once per process that a post asked for an AMO command the emulator does not execute.
fn unknown_amo_cmd(cmd: GniFmaCmdType) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::warn(&format!(
            "GNI_PostFma: amo_cmd 0x{cmd:03x} is not an AMO command the emulator executes (it executes \
             every gni_fma_cmd_type_t of gni_pub.h: 64-bit, cached _C, 32-bit _S and _SC); the post \
             returns GNI_RC_ILLEGAL_OP and moves nothing (further unknown commands are not reported)"
        ));
    }
}

/// The registration behind `mh` on NIC `nic`, covering [addr, addr+len), writable if `write`.
fn region<'r>(
    reg: &'r Registry,
    mh: &GniMemHandle,
    nic: usize,
    addr: u64,
    len: u64,
    write: bool,
) -> Result<&'r Arc<MemReg>, GniReturn> {
    let m = reg.mem(mh, nic).ok_or(GNI_RC_INVALID_PARAM)?;
    if !m.covers(addr, len) {
        return Err(GNI_RC_INVALID_PARAM);
    }
    if write && m.read_only {
        return Err(GNI_RC_PERMISSION_ERROR);
    }
    Ok(m)
}

fn local_reg(m: &MemReg) -> Reg {
    Reg { addr: m.addr, len: m.len, read_only: m.read_only, ring: NO_RING }
}

/// Checks one transfer from `ep` to the NIC it is bound to.
fn plan(reg: &Registry, ep: &Arc<Ep>, r: &Request) -> Result<Leg, GniReturn> {
    let (raddr, _) = ep.remote().ok_or(GNI_RC_INVALID_STATE)?;
    let lh = ep.nic_handle;
    let len = r.length;
    let target;
    let op = match r.post_type {
        GNI_POST_RDMA_PUT | GNI_POST_FMA_PUT | GNI_POST_FMA_PUT_W_SYNCFLAG => {
            let rdma = r.post_type == GNI_POST_RDMA_PUT;
            if rdma && len == 0 {
                return Err(GNI_RC_INVALID_PARAM);
            }
            let remote = remote(reg, &r.remote_mh, raddr)?.check(r.remote_addr, len, true)?;
            match r.local_mh {
                // FMA PUT reads the source with the CPU: a local handle is optional there.
                Some(mh) if rdma || !is_zero(&mh) => {
                    region(reg, &mh, lh, r.local_addr, len, false)?;
                }
                None if rdma => return Err(GNI_RC_INVALID_PARAM),
                _ if len > 0 && r.local_addr == 0 => return Err(GNI_RC_INVALID_PARAM),
                _ => {}
            }
            let flag = sync_flag(r, r.post_type == GNI_POST_FMA_PUT_W_SYNCFLAG, &remote.reg)?;
            target = remote;
            Op::Copy { src: r.local_addr, dst: r.remote_addr, len, put: true, flag }
        }
        GNI_POST_RDMA_GET | GNI_POST_FMA_GET | GNI_POST_FMA_GET_W_FLAG => {
            if len == 0 {
                return Err(GNI_RC_INVALID_PARAM);
            }
            if (r.local_addr | r.remote_addr | len) & 3 != 0 {
                return Err(GNI_RC_ALIGNMENT_ERROR);
            }
            let remote = remote(reg, &r.remote_mh, raddr)?.check(r.remote_addr, len, false)?;
            let local_mh = r.local_mh.ok_or(GNI_RC_INVALID_PARAM)?;
            let local = region(reg, &local_mh, lh, r.local_addr, len, true)?;
            let flag = sync_flag(r, r.post_type == GNI_POST_FMA_GET_W_FLAG, &local_reg(local))?;
            target = remote;
            Op::Copy { src: r.remote_addr, dst: r.local_addr, len, put: false, flag }
        }
        GNI_POST_AMO | GNI_POST_AMO_W_FLAG => {
            if len == 0 {
                return Err(GNI_RC_INVALID_PARAM);
            }
            let Some(Amo { op, fetching, width }) = decode_amo(r.amo_cmd) else {
                unknown_amo_cmd(r.amo_cmd);
                return Err(GNI_RC_ILLEGAL_OP);
            };
            let word = width.bytes();
            if len != word {
                return Err(GNI_RC_INVALID_PARAM);
            }
            let misaligned = |addr: u64| addr & (word - 1) != 0;
            if misaligned(r.remote_addr) || (fetching && misaligned(r.local_addr)) {
                return Err(GNI_RC_ALIGNMENT_ERROR);
            }
            target = remote(reg, &r.remote_mh, raddr)?.check(r.remote_addr, word, true)?;
            let with_flag = r.post_type == GNI_POST_AMO_W_FLAG;
            let local = if fetching || with_flag {
                let mh = r.local_mh.ok_or(GNI_RC_INVALID_PARAM)?;
                let m = reg.mem(&mh, lh).ok_or(GNI_RC_INVALID_PARAM)?;
                if fetching {
                    region(reg, &mh, lh, r.local_addr, word, true)?;
                }
                Some(m)
            } else {
                None
            };
            let flag = match local {
                Some(m) => sync_flag(r, with_flag, &local_reg(m))?,
                None => None,
            };
            let fetch_to = fetching.then_some(r.local_addr);
            let (first, second) = (r.first_operand, r.second_operand);
            Op::Amo { target: r.remote_addr, op, width, first, second, fetch_to, flag }
        }
        GNI_POST_CQWRITE => {
            // The event goes to the CQ of the remote registration; without a handle, to the CQ
            // of the endpoint bound back to us (in this process).
            let (owner, sink) = if is_zero(&r.remote_mh) {
                (Owner::Here, reg.peer(ep).and_then(|p| p.cq.clone()).map(Sink::Cq))
            } else {
                let t = remote(reg, &r.remote_mh, raddr)?;
                (t.owner, t.sink)
            };
            let sink = sink.ok_or(GNI_RC_INVALID_PARAM)?;
            return Ok(Leg {
                op: Op::CqWrite,
                owner,
                bytes: post_payload_bytes(GNI_POST_CQWRITE, len),
                dst_nic: raddr,
                remote_event: Some((sink, r.cqwrite_value)),
            });
        }
        _ => return Err(GNI_RC_INVALID_PARAM),
    };
    let remote_event = match target.sink {
        Some(sink) if r.remote_event => Some((sink, ep.remote_event_data() as u64)),
        _ => None,
    };
    Ok(Leg { op, owner: target.owner, bytes: len, dst_nic: raddr, remote_event })
}

/// Stores a post's 64-bit flag in this process.
fn store_flag(flag: Option<(u64, u64)>) {
    if let Some((addr, value)) = flag {
        // SAFETY: plan() checked the flag address is 8-aligned and inside a writable registered
        // region; Release orders it after the data, as pollers expect.
        unsafe { AtomicU64::from_ptr(addr as *mut u64) }.store(value, Ordering::Release);
    }
}

/// Moves the bytes of a checked leg and then delivers its remote event: in this process with
/// the CPU, to or from another rank through the job (whose copies are complete on return).
fn execute(leg: &Leg) -> Result<(), GniReturn> {
    let job = job::get();
    match (leg.op, leg.owner) {
        (Op::Copy { src, dst, len, flag, .. }, Owner::Here) => {
            if len > 0 {
                // SAFETY: plan() checked both ranges (registered regions, or for an FMA PUT
                // source the caller's own non-null buffer); they may overlap, hence memmove.
                unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len as usize) };
            }
            store_flag(flag);
        }
        (Op::Copy { src, dst, len, put, flag }, Owner::Rank(rank)) => {
            let j = job.ok_or(GNI_RC_INVALID_PARAM)?;
            if put {
                j.write_to(rank, dst, src, len)?;
                if let Some((addr, value)) = flag {
                    j.write_to(rank, addr, &value as *const u64 as u64, 8)?;
                }
            } else {
                j.read_from(rank, src, dst, len)?;
                store_flag(flag);
            }
        }
        (Op::Amo { target, op, width, first, second, fetch_to, flag }, owner) => {
            let old = match (owner, job) {
                (Owner::Rank(rank), Some(j)) => j.amo(rank, target, op, width, first, second)?,
                (Owner::Rank(_), None) => return Err(GNI_RC_INVALID_PARAM),
                (Owner::Here, _) => {
                    // Other ranks' AMOs on this memory hold its lock around their update.
                    let _g = match job {
                        Some(j) => Some(j.amo_lock(j.rank)?),
                        None => None,
                    };
                    match width {
                        Width::Bits64 => {
                            // SAFETY: plan() checked the target is 8-aligned, 8 bytes inside a
                            // writable registered region; other AMOs on it go through atomics too.
                            let t = unsafe { AtomicU64::from_ptr(target as *mut u64) };
                            apply_amo(t, op, first, second)
                        }
                        Width::Bits32 => {
                            // SAFETY: plan() checked the target is 4-aligned, 4 bytes inside a
                            // writable registered region; other AMOs on it go through atomics too.
                            let t = unsafe { AtomicU32::from_ptr(target as *mut u32) };
                            apply_amo32(t, op, first, second) as u64
                        }
                    }
                }
            };
            if let Some(local) = fetch_to {
                match width {
                    // SAFETY: plan() checked the result address is 8-aligned inside a writable
                    // registered region of the initiator.
                    Width::Bits64 => unsafe { (local as *mut u64).write(old) },
                    // SAFETY: the same, 4-aligned.
                    Width::Bits32 => unsafe { (local as *mut u32).write(old as u32) },
                }
            }
            store_flag(flag);
        }
        (Op::CqWrite, _) => {}
    }
    if let Some((sink, data)) = &leg.remote_event {
        sink.deliver(remote_post_entry(*data));
    }
    Ok(())
}

#[derive(Default)]
struct ChainStats {
    elements: u64,
    bytes: u64,
}

/// One GNI_Post*/GNI_CtPost* call: counted, run, logged.
///
/// # Safety
/// `pd` is NULL or points to a whole `gni_post_descriptor_t`; for a chained post, its
/// `next_descr` is NULL or the first of a NULL-terminated list of the chain elements the head's
/// post type implies (see [`CtPutDescr`]), each readable.
pub unsafe fn post(call: Call, ep_handle: usize, pd: *mut GniPostDescriptor) -> Result<(), GniReturn> {
    counters::count_post();
    let mut chain = ChainStats::default();
    let descr = if pd.is_null() {
        None
    } else {
        // SAFETY: a non-null descriptor pointer points to a whole gni_post_descriptor_t (this
        // function's contract); it is copied once and never written.
        Some(unsafe { pd.read_unaligned() })
    };
    let result = match &descr {
        None => Err(GNI_RC_INVALID_PARAM),
        // SAFETY: the chain, if any, is as this function's contract says.
        Some(d) => unsafe { run(&registry::read(), call, ep_handle, pd as usize, d, &mut chain) },
    };
    if post_log::enabled() {
        let chained = call.chained();
        post_log::record(&Record::Post {
            call: call.name(),
            post_type: descr.map(|d| d.r#type),
            length: descr.map(|d| d.length),
            dlvr_mode: descr.map(|d| d.dlvr_mode),
            chain_elements: chained.then_some(chain.elements),
            chain_bytes: chained.then_some(chain.bytes),
            rc: result.err().unwrap_or(GNI_RC_SUCCESS),
        });
    }
    result
}

/// # Safety
/// `d.next_descr` as [`post`] says.
unsafe fn run(
    reg: &Registry,
    call: Call,
    ep_handle: usize,
    pd: usize,
    d: &GniPostDescriptor,
    chain: &mut ChainStats,
) -> Result<(), GniReturn> {
    let ep = reg.ep(ep_handle)?;
    call.accepts(d.r#type)?;
    let head = Request::from_descriptor(d);
    let first = plan(reg, ep, &head)?;
    let rest = if call.chained() {
        // SAFETY: this function's contract.
        unsafe { plan_chain(reg, ep, &head, d.next_descr, chain)? }
    } else {
        Vec::new()
    };

    // Local completion: one event per requested kind (both need a DUAL_EVENTS CDM), on the
    // descriptor's CQ or else the endpoint's.
    let kinds = [GNI_CQMODE_LOCAL_EVENT, GNI_CQMODE_GLOBAL_EVENT].iter().filter(|&&m| d.cq_mode & m != 0).count();
    if kinds == 2 && !ep.nic.dual_events {
        return Err(GNI_RC_INVALID_PARAM);
    }
    let cq = match d.src_cq_hndl as usize {
        0 => ep.cq.as_ref(),
        h => Some(reg.cq(h)?),
    };
    let cq = match (kinds, cq) {
        (0, _) => None,
        (_, None) => return Err(GNI_RC_INVALID_PARAM),
        (_, Some(cq)) if !cq.reserve(kinds) => return Err(GNI_RC_ERROR_RESOURCE),
        (_, Some(cq)) => Some(cq),
    };

    for leg in std::iter::once(&first).chain(&rest) {
        if let Err(rc) = execute(leg) {
            if let Some(cq) = cq {
                cq.unreserve(kinds);
            }
            return Err(rc);
        }
    }
    if let Some(cq) = cq {
        let event_data = ep.local_event_data();
        for _ in 0..kinds {
            cq.push_post_completion(event_data, pd);
        }
    }
    for leg in std::iter::once(&first).chain(&rest) {
        counters::account(&NicTransfer {
            transfer: Transfer::of_post_type(d.r#type),
            bytes: leg.bytes,
            dlvr_mode: d.dlvr_mode,
            src_nic: ep.nic.addr,
            dst_nic: leg.dst_nic,
        });
    }
    Ok(())
}

/// Checks every element linked from a chained head. Elements may each name their own endpoint,
/// which must sit on the head's NIC.
///
/// # Safety
/// `next` is NULL or the first of a NULL-terminated list of readable elements of the type the
/// head's post type implies.
unsafe fn plan_chain(
    reg: &Registry,
    ep: &Arc<Ep>,
    head: &Request,
    mut next: *mut c_void,
    chain: &mut ChainStats,
) -> Result<Vec<Leg>, GniReturn> {
    let mut legs = Vec::new();
    while !next.is_null() {
        if chain.elements >= MAX_CHAIN {
            return Err(GNI_RC_INVALID_PARAM);
        }
        // A non-null next_descr of a chained post points to an element of the type the head's
        // post type implies; elements are only read, never written.
        let (elem_ep, request, following) = match head.post_type {
            GNI_POST_FMA_PUT => {
                // SAFETY: `next` is non-null, so (this function's contract) a readable element of
                // the type the head's post type implies; read unaligned.
                let e = unsafe { next.cast::<CtPutDescr>().read_unaligned() };
                (
                    e.ep_hndl,
                    Request::element(head, e.local_addr, None, e.remote_addr, e.remote_mem_hndl, e.length),
                    e.next_descr,
                )
            }
            GNI_POST_FMA_GET => {
                // SAFETY: `next` is non-null, so (this function's contract) a readable element of
                // the type the head's post type implies; read unaligned.
                let e = unsafe { next.cast::<CtGetDescr>().read_unaligned() };
                let mh = Some(e.local_mem_hndl);
                (
                    e.ep_hndl,
                    Request::element(head, e.local_addr, mh, e.remote_addr, e.remote_mem_hndl, e.length),
                    e.next_descr,
                )
            }
            _ => {
                // SAFETY: `next` is non-null, so (this function's contract) a readable element of
                // the type the head's post type implies; read unaligned.
                let e = unsafe { next.cast::<CtCqwDescr>().read_unaligned() };
                let mut r = Request::element(head, 0, None, 0, e.remote_mem_hndl, 0);
                r.cqwrite_value = e.cqwrite_value;
                (e.ep_hndl, r, e.next_descr)
            }
        };
        chain.elements += 1;
        // A chain moves at most 2^64-1 bytes: a longer one (lengths no registration can hold)
        // is refused as a bad length and logged with that most, never with the total it wraps to.
        let Some(bytes) = chain.bytes.checked_add(request.length) else {
            chain.bytes = u64::MAX;
            return Err(GNI_RC_INVALID_PARAM);
        };
        chain.bytes = bytes;
        let elem_ep = reg.ep(elem_ep as usize)?;
        if elem_ep.nic_handle != ep.nic_handle {
            return Err(GNI_RC_INVALID_PARAM);
        }
        legs.push(plan(reg, elem_ep, &request)?);
        next = following;
    }
    Ok(legs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn chain_element_layouts_match_the_header() {
        assert_eq!(size_of::<CtPutDescr>(), 56);
        assert_eq!(size_of::<CtGetDescr>(), 72);
        assert_eq!(offset_of!(CtGetDescr, local_mem_hndl), 56);
        assert_eq!(size_of::<CtCqwDescr>(), 40);
    }
}
