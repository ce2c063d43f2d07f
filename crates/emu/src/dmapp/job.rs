//! The DMAPP job: `dmapp_init` makes `AAR_EMU_DMAPP_PES` virtual PEs (the process is PE 0), a
//! symmetric heap of `AAR_EMU_DMAPP_SHEAP` bytes (`dmapp_sheap_*` allocate from it) and the data
//! segment; `dmapp_mem_register` adds segments; `dmapp_finalize` forgets them all. Data calls hold
//! the job for reading while they run, so a segment never goes away under a transfer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use aar_abi::dmapp::*;

use super::attrs::{self, Attrs, Requested};
use super::segment::{Mapping, Segment, Shadow};
use crate::registry::{mem_handle_for, Map};
use crate::shm::mapped;
use crate::{settings, FIRST_NIC_ADDR};

/// `dmapp_jobinfo_t.version` and `.hw_version` of the emulated job (the emulator's own values).
const JOBINFO_VERSION: i32 = 1;
const JOBINFO_HW_VERSION: i32 = 2;

pub struct Job {
    pub npes: u32,
    /// Tells threads' own attributes from those they set in an earlier job (before a finalize).
    pub generation: u64,
    /// The attributes of threads that have not set their own (from `dmapp_init`).
    pub defaults: Attrs,
    /// Every segment, by its handle's first word.
    segments: Map<u64, Segment>,
    sheap: u64,
    data: Option<u64>,
    /// The blocks `dmapp_sheap_malloc` handed out of the symmetric heap.
    pub heap: Heap,
}

/// A first-fit allocator over the symmetric heap, by offset from its start: the same sequence of
/// calls gives the same offsets on every PE, so a block's address names the same block everywhere.
pub struct Heap {
    base: u64,
    /// Free ranges `(offset, len)`, sorted and never adjacent.
    free: Vec<(u64, u64)>,
    /// Blocks in use: offset to length (rounded up to [`Heap::ALIGN`]).
    used: std::collections::BTreeMap<u64, u64>,
}

impl Heap {
    /// Every block starts and ends on this boundary (what malloc gives on x86-64).
    pub const ALIGN: u64 = 16;

    fn new(base: u64, len: u64) -> Heap {
        Heap { base, free: vec![(0, len - len % Heap::ALIGN)], used: Default::default() }
    }

    /// The address of a new block of `size` bytes (at least one), or None when none is free.
    pub fn alloc(&mut self, size: u64) -> Option<u64> {
        let len = size.max(1).checked_next_multiple_of(Heap::ALIGN)?;
        let i = self.free.iter().position(|&(_, l)| l >= len)?;
        let (off, l) = self.free[i];
        if l == len {
            self.free.remove(i);
        } else {
            self.free[i] = (off + len, l - len);
        }
        self.used.insert(off, len);
        Some(self.base + off)
    }

    /// The length of the block at `addr`, if one starts there.
    pub fn block(&self, addr: u64) -> Option<u64> {
        self.used.get(&addr.checked_sub(self.base)?).copied()
    }

    /// Frees the block at `addr`; false if no block starts there.
    pub fn free(&mut self, addr: u64) -> bool {
        let Some(off) = addr.checked_sub(self.base) else { return false };
        let Some(len) = self.used.remove(&off) else { return false };
        let i = self.free.partition_point(|&(o, _)| o < off);
        self.free.insert(i, (off, len));
        // Merge with the neighbours, so that freed blocks make room for larger ones.
        if i + 1 < self.free.len() && self.free[i].0 + self.free[i].1 == self.free[i + 1].0 {
            self.free[i].1 += self.free.remove(i + 1).1;
        }
        if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == self.free[i].0 {
            self.free[i - 1].1 += self.free.remove(i).1;
        }
        true
    }
}

static JOB: RwLock<Option<Job>> = RwLock::new(None);
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Segment ids, never reused: a descriptor of a finalized job names nothing in the next one, even
/// where the new heap lands at the old address.
static SEGMENT_IDS: AtomicU64 = AtomicU64::new(0);

pub fn read() -> RwLockReadGuard<'static, Option<Job>> {
    JOB.read().unwrap_or_else(|e| e.into_inner())
}

fn write() -> RwLockWriteGuard<'static, Option<Job>> {
    JOB.write().unwrap_or_else(|e| e.into_inner())
}

/// The job, or DMAPP_RC_PERMISSION_ERROR (nothing is permitted before `dmapp_init`: the
/// emulator's choice, the real code is not known).
pub fn get(job: &Option<Job>) -> Result<&Job, DmappReturn> {
    job.as_ref().ok_or(DMAPP_RC_PERMISSION_ERROR)
}

/// The NIC address of a PE's node: PE j sits at 0x100 + j, so PE 0 shares its NIC with the first
/// one GNI_CdmAttach hands out, and with `AAR_EMU_SIM` PE j is on node j mod `nodes`.
pub fn nic_addr(pe: DmappPe) -> u32 {
    FIRST_NIC_ADDR.wrapping_add(pe as u32)
}

impl Job {
    fn add(&mut self, addr: u64, len: u64, shadow: Shadow, own: Option<Mapping>) -> u64 {
        let handle = mem_handle_for(SEGMENT_IDS.fetch_add(1, Ordering::Relaxed) + 1, addr, len);
        self.segments.insert(handle.qword1, Segment::new(addr, len, handle, self.npes, shadow, own));
        handle.qword1
    }

    /// The segment a descriptor names (its handle, address and length all match).
    pub fn segment(&self, d: &DmappSegDesc) -> Option<&Segment> {
        self.segments
            .get(&d.memhndl.qword1)
            .filter(|s| s.handle == d.memhndl && s.addr == d.addr as u64 && s.len == d.len as u64)
    }
}

/// `dmapp_init[_ext]`: starts the job with `requested` as every thread's attributes, DMAPP's
/// defaults ([`Attrs::DEFAULT`]) without one (Cray's own sample programs call
/// `dmapp_init(NULL, &actual)` and require success). When the job runs already, nothing changes.
/// The calling thread's attributes now.
pub fn init(call: &'static str, requested: Option<Requested>) -> Result<Attrs, DmappReturn> {
    let result = start(requested.as_ref());
    attrs::log_request(
        call,
        requested.map(|r| r.attrs(Attrs::DEFAULT)),
        result.as_ref().err().copied().unwrap_or(DMAPP_RC_SUCCESS),
    );
    result
}

fn start(requested: Option<&Requested>) -> Result<Attrs, DmappReturn> {
    let defaults = requested.map_or(Ok(Attrs::DEFAULT), attrs::defaults)?;
    let mut guard = write();
    if let Some(job) = guard.as_ref() {
        return Ok(attrs::in_force(job));
    }
    let npes = settings::dmapp_pes().0;
    let sheap_bytes = settings::dmapp_sheap().0;
    // Read now, so that a bad value is reported when the job starts.
    attrs::layout();
    let heap = Mapping::new(sheap_bytes).ok_or(DMAPP_RC_NO_SPACE)?;
    let mut job = Job {
        npes,
        generation: GENERATION.fetch_add(1, Ordering::Relaxed) + 1,
        defaults,
        segments: Map::default(),
        sheap: 0,
        data: None,
        heap: Heap::new(heap.addr(), sheap_bytes),
    };
    job.sheap = job.add(heap.addr(), sheap_bytes, Shadow::Zeroed, Some(heap));
    job.data = data_segment().map(|(addr, len)| job.add(addr, len, Shadow::CopyOfPe0, None));
    *guard = Some(job);
    Ok(defaults)
}

/// `dmapp_finalize`: forgets the job (threads' attributes with it).
pub fn finalize() -> Result<(), DmappReturn> {
    write().take().map(drop).ok_or(DMAPP_RC_PERMISSION_ERROR)
}

/// `dmapp_get_jobinfo`.
pub fn jobinfo() -> Result<DmappJobinfo, DmappReturn> {
    let guard = read();
    let job = get(&guard)?;
    let empty = DmappSegDesc {
        addr: std::ptr::null_mut(),
        len: 0,
        memhndl: Default::default(),
        flags: 0,
        reserved: std::ptr::null_mut(),
    };
    let desc = |key: u64| job.segments.get(&key).map_or(empty, Segment::descriptor);
    Ok(DmappJobinfo {
        version: JOBINFO_VERSION,
        hw_version: JOBINFO_HW_VERSION,
        npes: job.npes as i32,
        pe: 0,
        data_seg: job.data.map_or(empty, desc),
        sheap_seg: desc(job.sheap),
    })
}

/// `dmapp_sheap_malloc`: a new block of the symmetric heap; None before `dmapp_init` or when no
/// free range holds `size` bytes (Cray's libdmapp says so with a NULL and nothing else).
pub fn sheap_malloc(size: u64) -> Option<u64> {
    write().as_mut()?.heap.alloc(size)
}

/// `dmapp_sheap_free`: gives back the block at `addr`; anything else is said once per call and
/// ignored (the caller's memory is not touched).
pub fn sheap_free(addr: u64) {
    if addr != 0 && !write().as_mut().is_some_and(|job| job.heap.free(addr)) {
        crate::warn(&format!(
            "dmapp_sheap_free({addr:#x}): not a block of the symmetric heap that dmapp_sheap_malloc or \
             dmapp_sheap_realloc returned (or freed already); ignored"
        ));
    }
}

/// `dmapp_sheap_realloc`, as Cray's dmapp.h describes it: NULL `addr` allocates, size 0 frees
/// (None), an address that is not a block gives None; otherwise the block moves to a new one of
/// `size` bytes that starts with the old contents (PE 0's: the other PEs make no calls here), or
/// stays as it was (None) if there is no room.
pub fn sheap_realloc(addr: u64, size: u64) -> Option<u64> {
    if addr == 0 {
        return sheap_malloc(size);
    }
    let mut guard = write();
    let heap = &mut guard.as_mut()?.heap;
    let old = heap.block(addr)?;
    if size == 0 {
        heap.free(addr);
        return None;
    }
    let new = heap.alloc(size)?;
    // SAFETY: both blocks lie in PE 0's heap mapping, which the job (held for writing) keeps, and
    // are both in use, so they do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, new as *mut u8, old.min(size) as usize) };
    heap.free(addr);
    Some(new)
}

/// `dmapp_mem_register`: [addr, addr+len) of this process becomes a segment every PE has.
pub fn register(addr: u64, len: u64) -> Result<DmappSegDesc, DmappReturn> {
    if addr == 0 || len == 0 || !mapped(addr, len) {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    let mut guard = write();
    let job = guard.as_mut().ok_or(DMAPP_RC_PERMISSION_ERROR)?;
    let key = job.add(addr, len, Shadow::Zeroed, None);
    Ok(job.segments[&key].descriptor())
}

/// `dmapp_mem_unregister`: a segment `dmapp_mem_register` made (not the heap or data segment).
pub fn unregister(d: &DmappSegDesc) -> Result<(), DmappReturn> {
    let mut guard = write();
    let job = guard.as_mut().ok_or(DMAPP_RC_PERMISSION_ERROR)?;
    let key = d.memhndl.qword1;
    if job.segment(d).is_none() || key == job.sheap || Some(key) == job.data {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    job.segments.remove(&key);
    Ok(())
}

/// The main program's static data (`.data` and `.bss`): the first writable PT_LOAD segment that
/// has something left without the part that becomes read-only after relocation (PT_GNU_RELRO;
/// some linkers give that part a writable segment of its own).
fn data_segment() -> Option<(u64, u64)> {
    let mut found: Option<(u64, u64)> = None;
    // SAFETY: dl_iterate_phdr calls `first_object` with valid `dl_phdr_info` records and passes
    // `found` back unchanged as its data pointer.
    unsafe { libc::dl_iterate_phdr(Some(first_object), (&raw mut found).cast()) };
    found.filter(|&(addr, len)| mapped(addr, len))
}

/// dl_iterate_phdr's callback: reads the first object (the main program) and stops.
///
/// # Safety
/// `info` points to a valid record whose `dlpi_phdr` has `dlpi_phnum` headers; `data` is the
/// `Option<(u64, u64)>` that [`data_segment`] passed.
unsafe extern "C" fn first_object(info: *mut libc::dl_phdr_info, _size: usize, data: *mut libc::c_void) -> libc::c_int {
    // SAFETY: per this function's contract.
    let (info, found) = unsafe { (&*info, &mut *data.cast::<Option<(u64, u64)>>()) };
    if info.dlpi_phdr.is_null() {
        return 1;
    }
    // SAFETY: per this function's contract.
    let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let base = info.dlpi_addr;
    let relro_end = headers.iter().find(|h| h.p_type == libc::PT_GNU_RELRO).map(|h| base + h.p_vaddr + h.p_memsz);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    *found = headers.iter().filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_W != 0).find_map(|h| {
        let (start, end) = (base + h.p_vaddr, base + h.p_vaddr + h.p_memsz);
        let start = match relro_end {
            Some(r) if r > start => r.next_multiple_of(page).clamp(start, end),
            _ => start,
        };
        (start < end).then_some((start, end - start))
    });
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_segment_holds_this_programs_statics() {
        static mut STATIC_WORD: u64 = 1;
        let (addr, len) = data_segment().expect("a writable segment");
        let word = (&raw const STATIC_WORD) as u64;
        assert!(addr <= word && word + 8 <= addr + len, "{word:#x} not in {addr:#x}+{len:#x}");
    }
}
