//! The MPI seam: MPI_Alltoall, so that the low-stall mode inside it is ADAPTIVE1 (what Cray
//! MPICH uses there by default). PMPI_Alltoall is resolved at run time: libaar.so has no link
//! dependency on any MPI.
//!
//! MPI handles are `int` in MPICH (Cray MPICH) and pointers in Open MPI. Every handle parameter
//! is declared pointer-sized here and forwarded unchanged in the same register or stack slot,
//! so the wrapper is correct for both ABIs without knowing which one the application uses.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

pub type AlltoallFn = unsafe extern "C" fn(*const c_void, c_int, usize, *mut c_void, c_int, usize, usize) -> c_int;

/// MPI_ERR_INTERN in MPICH, a non-zero error code in every MPI.
const MPI_ERR_INTERN: c_int = 16;

thread_local! {
    static ALLTOALL_DEPTH: Cell<u32> = const { Cell::new(0) };
}

static PMPI_ALLTOALL: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// Set by the first MPI_Alltoall: until then no thread can be inside one, and the decision path
/// skips the thread-local lookup.
static ALLTOALL_SEEN: AtomicBool = AtomicBool::new(false);

/// Whether this thread is inside MPI_Alltoall.
#[inline]
pub fn in_alltoall() -> bool {
    ALLTOALL_SEEN.load(Ordering::Relaxed) && ALLTOALL_DEPTH.try_with(|d| d.get() > 0).unwrap_or(false)
}

fn pmpi_alltoall() -> Option<AlltoallFn> {
    let mut p = PMPI_ALLTOALL.load(Ordering::Acquire);
    if p.is_null() {
        // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT finds the MPI library after us,
        // RTLD_DEFAULT covers an MPI linked into the executable itself.
        p = unsafe {
            let next = libc::dlsym(libc::RTLD_NEXT, c"PMPI_Alltoall".as_ptr());
            if next.is_null() {
                libc::dlsym(libc::RTLD_DEFAULT, c"PMPI_Alltoall".as_ptr())
            } else {
                next
            }
        };
        PMPI_ALLTOALL.store(p, Ordering::Release);
    }
    // SAFETY: a non-null PMPI_Alltoall has the MPI-standard prototype `AlltoallFn` matches
    // register for register (see the module comment).
    (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, AlltoallFn>(p) })
}

struct Depth;
impl Depth {
    fn enter() -> Depth {
        ALLTOALL_SEEN.store(true, Ordering::Relaxed);
        let _ = ALLTOALL_DEPTH.try_with(|d| d.set(d.get().saturating_add(1)));
        Depth
    }
}
impl Drop for Depth {
    fn drop(&mut self) {
        let _ = ALLTOALL_DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// # Safety
/// The arguments are those of an application's MPI_Alltoall call.
pub unsafe fn alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: usize,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: usize,
    comm: usize,
) -> c_int {
    let Some(real) = pmpi_alltoall() else {
        crate::diag::error("MPI_Alltoall was called but PMPI_Alltoall cannot be found; returning MPI_ERR_INTERN.");
        return MPI_ERR_INTERN;
    };
    let _inside = Depth::enter();
    // SAFETY: forwarding the caller's arguments unchanged to the real implementation.
    unsafe { real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) }
}
