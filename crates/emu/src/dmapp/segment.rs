//! Segments: memory every PE has, at the same offsets. PE 0 is this process, and its copy of a
//! segment is the process's own memory (for the symmetric heap, a mapping the emulator made at
//! `dmapp_init`); the copy of PE j > 0 is a shadow mapping, made by the first transfer that
//! touches it, so PEs that are never addressed cost nothing.

use std::sync::OnceLock;

use aar_abi::dmapp::*;
use aar_abi::GniMemHandle;

/// Anonymous, private, zero-filled memory; pages are only backed when touched.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; every access to its bytes goes through
// raw pointers whose synchronisation is the callers' (as with any memory DMAPP writes into).
unsafe impl Send for Mapping {}
// SAFETY: as above; the value itself is never mutated after creation.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// `len` bytes (more than zero), or None when the system refuses them.
    pub fn new(len: u64) -> Option<Mapping> {
        let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
        // SAFETY: a new anonymous private mapping; no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        (ptr != libc::MAP_FAILED).then(|| Mapping { ptr: ptr.cast(), len })
    }

    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned, unmapped once. Transfers into it hold
        // the job's read lock, which whoever drops a segment holds for writing.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// What a shadow holds when it is made.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shadow {
    /// Zeros: memory another PE has not written yet.
    Zeroed,
    /// PE 0's bytes at that moment: the data segment, which every PE's program initialises alike.
    CopyOfPe0,
}

pub struct Segment {
    /// PE 0's copy: where the segment is in this process.
    pub addr: u64,
    pub len: u64,
    /// The `memhndl` of its descriptor, by which calls name it.
    pub handle: GniMemHandle,
    shadow: Shadow,
    /// PE 0's memory when the emulator made it (the symmetric heap).
    _own: Option<Mapping>,
    /// PE j's copy at index j - 1 (None inside: the system refused the memory).
    shadows: Box<[OnceLock<Option<Mapping>>]>,
}

impl Segment {
    pub fn new(addr: u64, len: u64, handle: GniMemHandle, npes: u32, shadow: Shadow, own: Option<Mapping>) -> Segment {
        let shadows = (1..npes).map(|_| OnceLock::new()).collect();
        Segment { addr, len, handle, shadow, _own: own, shadows }
    }

    /// True when [addr, addr+len) lies inside the segment.
    pub fn covers(&self, addr: u64, len: u64) -> bool {
        addr >= self.addr && addr.checked_add(len).is_some_and(|end| end <= self.addr + self.len)
    }

    /// Where PE `pe`'s copy starts (`pe` is a valid PE of the job); DMAPP_RC_NO_SPACE when the
    /// system refuses the memory of a shadow.
    pub fn base(&self, pe: usize) -> Result<u64, DmappReturn> {
        let Some(slot) = pe.checked_sub(1) else {
            return Ok(self.addr);
        };
        let shadow = self.shadows[slot].get_or_init(|| {
            let m = Mapping::new(self.len)?;
            if self.shadow == Shadow::CopyOfPe0 {
                // SAFETY: PE 0's copy is `len` readable bytes of this process (checked when the
                // segment was made) and the new mapping has `len` writable bytes; they are
                // distinct mappings.
                unsafe { std::ptr::copy_nonoverlapping(self.addr as *const u8, m.ptr, self.len as usize) };
            }
            Some(m)
        });
        shadow.as_ref().map(Mapping::addr).ok_or(DMAPP_RC_NO_SPACE)
    }

    /// The descriptor DMAPP hands out for it.
    pub fn descriptor(&self) -> DmappSegDesc {
        DmappSegDesc {
            addr: self.addr as *mut _,
            len: self.len as usize,
            memhndl: self.handle,
            flags: 0,
            reserved: std::ptr::null_mut(),
        }
    }
}
