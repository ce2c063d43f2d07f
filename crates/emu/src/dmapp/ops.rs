//! The data calls: every PUT, GET and AMO of DMAPP, in its three forms. A call is checked
//! completely (job, sync id, element type, segment, PEs, alignment, ranges, PE copies) before any
//! byte moves; then, PE after PE, its data moves, it is counted on the NIC as one PUT or GET of
//! `nelems × element size` bytes (AMOs 8) from PE 0's NIC to the PE's, in the uGNI mode of the
//! routing the calling thread has in force, and the call is logged. Every form completes inside
//! the call: an `_nb` sync id is done at once, and so is everything `dmapp_gsync_wait` waits for.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

use aar_abi::dmapp::*;
use aar_abi::GNI_DLVMODE_ADAPTIVE0;
use aar_engine::model::Transfer;

use super::attrs::{self, thread_id};
use super::job::{self, nic_addr, Job};
use super::segment::Segment;
use crate::amo::{apply_amo, AmoOp};
use crate::counters;
use crate::post_log::{self, Record};
use crate::timing::NicTransfer;

/// The emulator's `dmapp_amo_t` (cabi/dmapp.h); Cray's is not public, and the shim never reads it.
#[repr(C)]
pub struct DmappAmo {
    pub op: u32,
    pub operand1: i64,
    pub operand2: i64,
}

/// `dmapp_amo_op_t` (cabi/dmapp.h) → operation.
fn amo_op(op: u32) -> Option<AmoOp> {
    const OPS: [AmoOp; 6] = [AmoOp::Add, AmoOp::And, AmoOp::Or, AmoOp::Xor, AmoOp::Swap, AmoOp::CSwap];
    OPS.get(op as usize).copied()
}

/// Where element i of a buffer lies, in elements from the buffer's address.
#[derive(Clone, Copy)]
pub enum Step {
    /// At i.
    Unit,
    /// At i × stride (`tst`, `sst`).
    Stride(isize),
    /// At index\[i\] (`tidx`, `sidx`): the caller's array of `nelems` offsets.
    Index(*const isize),
}

impl Step {
    /// # Safety
    /// An `Index` array has more than `i` readable entries.
    unsafe fn at(self, i: u64) -> i128 {
        match self {
            Step::Unit => i as i128,
            Step::Stride(s) => i as i128 * s as i128,
            // SAFETY: this function's contract.
            Step::Index(p) => (unsafe { p.add(i as usize).read_unaligned() }) as i128,
        }
    }

    /// The lowest and highest offset of `n` > 0 elements.
    ///
    /// # Safety
    /// An `Index` array has `n` readable entries.
    unsafe fn span(self, n: u64) -> (i128, i128) {
        match self {
            Step::Index(_) => (0..n).fold((i128::MAX, i128::MIN), |(lo, hi), i| {
                // SAFETY: i < n, this function's contract.
                let at = unsafe { self.at(i) };
                (lo.min(at), hi.max(at))
            }),
            _ => {
                // Linear from element 0 at 0: the ends are 0 and the last element.
                // SAFETY: not an index array.
                let last = unsafe { self.at(n - 1) };
                (last.min(0), last.max(0))
            }
        }
    }
}

/// A PUT or GET of elements between this process (PE 0's memory, the local side) and the segment
/// on each target PE (the remote side).
pub struct Rma {
    direction: Direction,
    target: u64,
    source: u64,
    target_step: Step,
    source_step: Step,
    /// Scatter and gather: PE k's elements start k × nelems elements into the local buffer.
    blocks: bool,
    /// put_flag: (address on the target PE, value) stored after the data.
    flag: Option<(u64, u64)>,
}

impl Rma {
    /// The local buffer: the source of a PUT, the target of a GET.
    fn local(&self) -> (u64, Step) {
        match self.direction {
            Direction::Put => (self.source, self.source_step),
            Direction::Get => (self.target, self.target_step),
        }
    }

    fn remote(&self) -> (u64, Step) {
        match self.direction {
            Direction::Put => (self.target, self.target_step),
            Direction::Get => (self.source, self.source_step),
        }
    }
}

/// What an AMO does: an operation with its two operands, or the caller's `dmapp_amo_t`.
pub enum AmoSpec {
    Op(AmoOp, i64, i64),
    Described(*const DmappAmo),
}

pub struct Amo {
    remote: u64,
    spec: AmoSpec,
    /// Fetching AMOs: where the old value goes.
    fetch_to: Option<u64>,
}

pub enum Shape {
    Rma(Rma),
    Amo(Amo),
}

/// The PE, or the PE list of the `_ixpe` calls.
pub enum Pes {
    One(DmappPe),
    List(*const DmappPe, u32),
}

impl Pes {
    /// # Safety
    /// A non-null list has its count of readable PEs, alive as long as `self`.
    unsafe fn slice(&self) -> Option<&[DmappPe]> {
        match *self {
            Pes::One(ref pe) => Some(std::slice::from_ref(pe)),
            Pes::List(_, 0) => Some(&[]),
            Pes::List(p, _) if p.is_null() => None,
            // SAFETY: this function's contract.
            Pes::List(p, n) => Some(unsafe { std::slice::from_raw_parts(p, n as usize) }),
        }
    }

    /// Messages the call sends: one per PE named.
    fn count(&self) -> u64 {
        match *self {
            Pes::One(_) => 1,
            Pes::List(_, n) => n as u64,
        }
    }
}

/// How a call completes (all three at once, in the emulator).
pub enum Form {
    Blocking,
    /// `_nb`: the sync id to write.
    Nb(*mut DmappSyncidHandle),
    /// `_nbi`: completed by `dmapp_gsync_wait`.
    Nbi,
}

/// One data call's arguments, as the exports receive them.
pub struct Op {
    shape: Shape,
    seg: *const DmappSegDesc,
    pes: Pes,
    nelems: u64,
    ty: DmappType,
}

impl Op {
    /// A contiguous PUT (`nelems` elements from `source` to `target` on each PE) or GET (from
    /// `source` on each PE to `target`).
    pub fn rma(
        direction: Direction,
        target: *mut c_void,
        source: *mut c_void,
        seg: *mut DmappSegDesc,
        pes: Pes,
        nelems: u64,
        ty: DmappType,
    ) -> Op {
        let rma = Rma {
            direction,
            target: target as u64,
            source: source as u64,
            target_step: Step::Unit,
            source_step: Step::Unit,
            blocks: false,
            flag: None,
        };
        Op { shape: Shape::Rma(rma), seg, pes, nelems, ty }
    }

    fn with_rma(mut self, f: impl FnOnce(&mut Rma)) -> Op {
        if let Shape::Rma(r) = &mut self.shape {
            f(r);
        }
        self
    }

    /// Strided or indexed: where the elements of the target and the source lie.
    pub fn steps(self, target: Step, source: Step) -> Op {
        self.with_rma(|r| (r.target_step, r.source_step) = (target, source))
    }

    /// put_flag: `value` stored at `flag` on the target PE once the data is there.
    pub fn flag(self, flag: *mut c_void, value: u64) -> Op {
        self.with_rma(|r| r.flag = Some((flag as u64, value)))
    }

    /// scatter_ixpe, gather_ixpe: one block of the local buffer per PE.
    pub fn blocks(self) -> Op {
        self.with_rma(|r| r.blocks = true)
    }

    /// An AMO on the word at `remote` on `pe`; a fetching one writes the old value to `fetch_to`.
    pub fn amo(
        remote: *mut c_void,
        seg: *mut DmappSegDesc,
        pe: DmappPe,
        spec: AmoSpec,
        fetch_to: Option<*mut c_void>,
    ) -> Op {
        let amo = Amo { remote: remote as u64, spec, fetch_to: fetch_to.map(|p| p as u64) };
        Op { shape: Shape::Amo(amo), seg, pes: Pes::One(pe), nelems: 1, ty: DMAPP_QW }
    }

    /// The routing attribute the call follows.
    fn direction(&self) -> Direction {
        match &self.shape {
            Shape::Rma(r) => r.direction,
            Shape::Amo(_) => Direction::Put,
        }
    }

    /// Bytes per message; None for an element type DMAPP does not have.
    fn bytes(&self) -> Option<u64> {
        match &self.shape {
            Shape::Rma(_) => element_bytes(self.ty).and_then(|e| self.nelems.checked_mul(e)),
            Shape::Amo(_) => Some(AMO_BYTES),
        }
    }
}

/// A checked call, ready to run on each PE.
enum Plan<'a> {
    Rma { rma: &'a Rma, elem: u64, bytes: u64 },
    Amo { remote: u64, op: AmoOp, a: u64, b: u64, fetch_to: Option<u64> },
}

/// Data calls received so far, whatever they returned (`aar_emu_dmapp_calls`).
static CALLS: AtomicU64 = AtomicU64::new(0);

pub fn calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// What `_nb` calls write as their sync id: one handle that is always complete.
pub fn syncid_done() -> DmappSyncidHandle {
    static DONE: u8 = 0;
    (&raw const DONE).cast_mut().cast()
}

/// One data call: checked, run, counted and logged; its return code.
///
/// # Safety
/// The pointers of `op` and `form` are NULL or point to what cabi/dmapp.h says: a segment
/// descriptor, PE and index lists of their lengths, a `dmapp_amo_t`, a sync id to write, and
/// local buffers of the elements the call moves.
pub unsafe fn call(name: &'static str, form: Form, op: Op) -> DmappReturn {
    CALLS.fetch_add(1, Ordering::Relaxed);
    let guard = job::read();
    let job = job::get(&guard);
    let result = match job {
        // SAFETY: this function's contract.
        Ok(job) => unsafe { run(job, &form, &op) },
        Err(rc) => Err(rc),
    };
    let rc = result.err().unwrap_or(DMAPP_RC_SUCCESS);
    if post_log::enabled() {
        let routing = job.ok().map(|job| attrs::in_force(job).routing(op.direction()));
        post_log::record(&Record::DmappData {
            call: name,
            kind: match &op.shape {
                Shape::Rma(r) if r.direction == Direction::Get => "GET",
                Shape::Rma(_) => "PUT",
                Shape::Amo(_) => "AMO",
            },
            // SAFETY: this function's contract.
            pes: unsafe { op.pes.slice() }.map(<[DmappPe]>::to_vec),
            nelems: op.nelems,
            ty: op.ty,
            bytes: op.bytes(),
            messages: op.pes.count(),
            routing,
            routing_name: routing.and_then(|v| RoutingTable::ASSUMED.routing(v)).map(Routing::name),
            thread: thread_id(),
            rc,
        });
    }
    rc
}

/// # Safety
/// As for [`call`].
unsafe fn run(job: &Job, form: &Form, op: &Op) -> Result<(), DmappReturn> {
    if matches!(form, Form::Nb(p) if p.is_null()) || op.seg.is_null() {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    // SAFETY: a non-null descriptor pointer points to a dmapp_seg_desc_t (contract); copied once.
    let desc = unsafe { op.seg.read_unaligned() };
    let seg = job.segment(&desc).ok_or(DMAPP_RC_INVALID_PARAM)?;
    // SAFETY: this function's contract.
    let pes = unsafe { op.pes.slice() }.ok_or(DMAPP_RC_INVALID_PARAM)?;
    if pes.iter().any(|&pe| pe < 0 || pe as u32 >= job.npes) {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    let plan = match &op.shape {
        // SAFETY: this function's contract.
        Shape::Rma(r) => unsafe { plan_rma(seg, r, op.nelems, op.ty)? },
        // SAFETY: this function's contract.
        Shape::Amo(a) => unsafe { plan_amo(seg, a)? },
    };
    // Every PE's copy exists before a byte moves.
    for &pe in pes {
        seg.base(pe as usize)?;
    }
    let routing = attrs::in_force(job).routing(op.direction());
    let dlvr_mode = RoutingTable::ASSUMED.routing(routing).map_or(GNI_DLVMODE_ADAPTIVE0, Routing::dlvr_mode);
    for (k, &pe) in pes.iter().enumerate() {
        let base = seg.base(pe as usize)?;
        // SAFETY: the plan was checked against the segment and this function's contract.
        let bytes = unsafe { execute(&plan, seg, base, k as u64, op.nelems) };
        counters::account(&NicTransfer {
            transfer: match op.direction() {
                Direction::Get => Transfer::Get,
                Direction::Put => Transfer::Put,
            },
            bytes,
            dlvr_mode,
            src_nic: nic_addr(0),
            dst_nic: nic_addr(pe),
        });
    }
    if let Form::Nb(p) = *form {
        // SAFETY: non-null (checked above), a sync id to write (contract).
        unsafe { p.write_unaligned(syncid_done()) };
    }
    Ok(())
}

/// Checks a PUT or GET against the segment.
///
/// # Safety
/// Index arrays have `nelems` readable entries, or are NULL.
unsafe fn plan_rma<'a>(seg: &Segment, r: &'a Rma, nelems: u64, ty: DmappType) -> Result<Plan<'a>, DmappReturn> {
    let elem = element_bytes(ty).ok_or(DMAPP_RC_INVALID_PARAM)?;
    let (local, local_step) = r.local();
    let (remote, remote_step) = r.remote();
    // ixget does not take bytes, and no GET zero elements ("zero-length GETs are not supported",
    // RB-3.1's dmapp.h).
    if r.direction == Direction::Get && (nelems == 0 || (matches!(remote_step, Step::Index(_)) && ty == DMAPP_BYTE)) {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    let bytes = nelems.checked_mul(elem).ok_or(DMAPP_RC_INVALID_PARAM)?;
    if (local | remote) & (elem - 1) != 0 || r.flag.is_some_and(|(f, _)| f & 7 != 0) {
        return Err(DMAPP_RC_ALIGNMENT_ERROR);
    }
    let no_index = |s: Step| matches!(s, Step::Index(p) if p.is_null());
    if nelems > 0 && (local == 0 || no_index(local_step) || no_index(remote_step)) {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    let inside = if nelems == 0 {
        seg.covers(remote, 0)
    } else {
        // SAFETY: a non-null index array has nelems entries (contract).
        let (lo, hi) = unsafe { remote_step.span(nelems) };
        let first = remote as i128 + lo * elem as i128;
        let end = remote as i128 + (hi + 1) * elem as i128;
        first >= seg.addr as i128 && end <= (seg.addr + seg.len) as i128
    };
    if !inside || r.flag.is_some_and(|(f, _)| !seg.covers(f, 8)) {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    Ok(Plan::Rma { rma: r, elem, bytes })
}

/// Checks an AMO against the segment.
///
/// # Safety
/// A described AMO's `dmapp_amo_t` is readable, or NULL.
unsafe fn plan_amo(seg: &Segment, a: &Amo) -> Result<Plan<'static>, DmappReturn> {
    let (op, x, y) = match a.spec {
        AmoSpec::Op(op, x, y) => (op, x, y),
        AmoSpec::Described(p) if p.is_null() => return Err(DMAPP_RC_INVALID_PARAM),
        AmoSpec::Described(p) => {
            // SAFETY: a non-null dmapp_amo_t (contract), copied once.
            let d = unsafe { p.read_unaligned() };
            (amo_op(d.op).ok_or(DMAPP_RC_INVALID_PARAM)?, d.operand1, d.operand2)
        }
    };
    if a.fetch_to == Some(0) {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    if a.remote & 7 != 0 || a.fetch_to.is_some_and(|f| f & 7 != 0) {
        return Err(DMAPP_RC_ALIGNMENT_ERROR);
    }
    if !seg.covers(a.remote, 8) {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    Ok(Plan::Amo { remote: a.remote, op, a: x as u64, b: y as u64, fetch_to: a.fetch_to })
}

/// Runs a checked plan on the PE whose copy of `seg` starts at `base`, the `k`-th PE of the
/// call; the bytes moved.
///
/// # Safety
/// `plan` was checked against `seg`, local buffers hold the elements the call moves, and index
/// arrays have `nelems` readable entries.
unsafe fn execute(plan: &Plan, seg: &Segment, base: u64, k: u64, nelems: u64) -> u64 {
    let on_pe = |addr: u64| base + (addr - seg.addr);
    match *plan {
        Plan::Rma { rma, elem, bytes } => {
            let (local, local_step) = rma.local();
            let (remote, remote_step) = rma.remote();
            let local = if rma.blocks { local.wrapping_add(k * bytes) } else { local };
            let pair = |l: u64, r: u64| match rma.direction {
                Direction::Put => (l as *const u8, on_pe(r) as *mut u8),
                Direction::Get => (on_pe(r) as *const u8, l as *mut u8),
            };
            if let (Step::Unit, Step::Unit) = (local_step, remote_step) {
                let (src, dst) = pair(local, remote);
                // SAFETY: the remote range is inside the PE's copy of the segment and the local
                // one is the caller's (contract); they may overlap (PE 0), hence memmove.
                unsafe { std::ptr::copy(src, dst, bytes as usize) };
            } else {
                for i in 0..nelems {
                    // SAFETY: i < nelems (contract on index arrays).
                    let (lo, ro) = unsafe { (local_step.at(i), remote_step.at(i)) };
                    let l = (local as i128 + lo * elem as i128) as u64;
                    let r = (remote as i128 + ro * elem as i128) as u64;
                    let (src, dst) = pair(l, r);
                    // SAFETY: as above, element by element (every remote offset was checked).
                    unsafe { std::ptr::copy(src, dst, elem as usize) };
                }
            }
            if let Some((flag, value)) = rma.flag {
                // SAFETY: checked 8-aligned and inside the segment; Release orders it after the
                // data, as pollers of the flag expect.
                unsafe { AtomicU64::from_ptr(on_pe(flag) as *mut u64) }.store(value, Ordering::Release);
            }
            bytes
        }
        Plan::Amo { remote, op, a, b, fetch_to } => {
            // SAFETY: checked 8-aligned, 8 bytes inside the segment; other AMOs on it are atomic too.
            let word = unsafe { AtomicU64::from_ptr(on_pe(remote) as *mut u64) };
            let old = apply_amo(word, op, a, b);
            if let Some(to) = fetch_to {
                // SAFETY: checked non-null and 8-aligned; the caller's result word (contract).
                unsafe { (to as *mut u64).write(old) };
            }
            AMO_BYTES
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_every_element() {
        // SAFETY: the index arrays live for the calls and have n entries.
        unsafe {
            assert_eq!(Step::Unit.span(4), (0, 3));
            assert_eq!(Step::Stride(3).span(4), (0, 9));
            assert_eq!(Step::Stride(-2).span(3), (-4, 0));
            let idx = [5isize, 2, 9, 7];
            assert_eq!(Step::Index(idx.as_ptr()).span(4), (2, 9));
            let idx = [-1isize, 3];
            assert_eq!(Step::Index(idx.as_ptr()).span(2), (-1, 3));
        }
        assert!(amo_op(5).is_some() && amo_op(6).is_none());
    }
}
