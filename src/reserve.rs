//! libaar.so's allocator: the C library's malloc, and a reserve of its own for when malloc
//! refuses.
//!
//! A Rust allocation that fails ends the process (`handle_alloc_error` aborts). A program at its
//! memory limit (`ulimit -v`, a batch system's virtual memory limit, a node with strict
//! overcommit) sees malloc return NULL and copes; the record libaar.so writes at its exit, a
//! warning or an iteration row must not then abort a program that coped, and lose what it had
//! not flushed. So every allocation of libaar.so's goes to malloc first and, when malloc refuses,
//! to the reserve: [`RESERVE_BYTES`] in the library's own `.bss`, whose address space and commit
//! charge are taken when the library is loaded (the pages only when touched). The reserve hands
//! out blocks of power-of-two sizes and keeps freed ones by size for reuse, so repeated small
//! allocations (labels, warnings) do not use it up. The exit handler first checks that there is
//! room for a record ([`can_spare`]) and skips it, saying so, when there is not.

use crate::trylock::TryLock;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

/// Bytes set aside for when malloc refuses.
pub const RESERVE_BYTES: usize = 1 << 20;
/// The smallest block: 16 bytes, malloc's alignment, and room for the free list's link.
const SMALLEST_SHIFT: u32 = 4;
/// Block sizes: 16 bytes to [`RESERVE_BYTES`].
const SIZES: usize = (RESERVE_BYTES.trailing_zeros() - SMALLEST_SHIFT + 1) as usize;
/// No block is aligned beyond a page (a larger alignment is left to malloc).
const MAX_ALIGN: usize = 4096;
/// How long an allocation waits for another thread's turn in the reserve: a few instructions, or
/// a `fork()` of the whole process, whose handlers hold the reserve while the kernel copies the
/// process (most of a second for a large one). A null answer would end the process.
const WAIT: Duration = Duration::from_secs(5);

#[global_allocator]
static ALLOCATOR: MallocThenReserve = MallocThenReserve;

#[repr(C, align(4096))]
struct Arena(UnsafeCell<[u8; RESERVE_BYTES]>);

// SAFETY: the arena's bytes are only reached through blocks that `Blocks` hands out under
// `RESERVE`'s lock, each to one owner until it is given back.
unsafe impl Sync for Arena {}

static ARENA: Arena = Arena(UnsafeCell::new([0; RESERVE_BYTES]));

/// The reserve's blocks, behind the lock the `fork()` handlers hold too.
pub static RESERVE: TryLock<Blocks> = TryLock::new(Blocks::new());

/// Allocations malloc refused, and the size of the first.
static REFUSED: AtomicU64 = AtomicU64::new(0);
static FIRST_REFUSED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Addresses in an arena of `len` bytes at `base` (addresses, so that `Blocks` is `Send`): never
/// used from the bump offset `next` on, and freed blocks of each size, linked through their
/// first word (0 ends a list).
pub struct Blocks {
    next: usize,
    free: [usize; SIZES],
}

impl Blocks {
    const fn new() -> Self {
        Blocks { next: 0, free: [0; SIZES] }
    }

    /// The index of the block size that holds `layout`, if the reserve has one.
    fn size_index(layout: Layout) -> Option<usize> {
        let bytes = layout.size().max(layout.align()).max(1 << SMALLEST_SHIFT).checked_next_power_of_two()?;
        (layout.align() <= MAX_ALIGN && bytes <= RESERVE_BYTES)
            .then(|| (bytes.trailing_zeros() - SMALLEST_SHIFT) as usize)
    }

    const fn block_bytes(index: usize) -> usize {
        1 << (index as u32 + SMALLEST_SHIFT)
    }

    /// A block for `layout` in the arena at `base`, `len` bytes long: a freed one, or a new one.
    ///
    /// # Safety
    /// `base..base + len` is an arena only this `Blocks` hands out, aligned to [`MAX_ALIGN`].
    unsafe fn take(&mut self, base: usize, len: usize, layout: Layout) -> Option<usize> {
        let index = Self::size_index(layout)?;
        let head = self.free[index];
        if head != 0 {
            // SAFETY: `head` is a free block of this arena (the caller's contract); its first
            // word is the link `give` wrote.
            self.free[index] = unsafe { (head as *const usize).read() };
            return Some(head);
        }
        let bytes = Self::block_bytes(index);
        let start = (base + self.next).next_multiple_of(bytes.min(MAX_ALIGN));
        (start + bytes <= base + len).then(|| {
            self.next = start + bytes - base;
            start
        })
    }

    /// Give back a block `take` handed out for `layout`.
    ///
    /// # Safety
    /// `block` came from `take` with a layout of the same block size, and is no longer used.
    unsafe fn give(&mut self, block: usize, layout: Layout) {
        let Some(index) = Self::size_index(layout) else { return };
        // SAFETY: the block is the caller's to give back, at least 16 bytes and 16-aligned.
        unsafe { (block as *mut usize).write(self.free[index]) };
        self.free[index] = block;
    }
}

fn arena_base() -> usize {
    ARENA.0.get() as usize
}

fn in_reserve(ptr: *mut u8) -> bool {
    (arena_base()..arena_base() + RESERVE_BYTES).contains(&(ptr as usize))
}

/// A block of the reserve for `layout`, or null when it has none (the caller then fails).
fn from_reserve(layout: Layout) -> *mut u8 {
    count_refusal(layout.size());
    let Some(mut blocks) = RESERVE.try_lock_for(WAIT) else { return std::ptr::null_mut() };
    // SAFETY: the arena is `Blocks`'s alone, page-aligned, and we hold its lock.
    match unsafe { blocks.take(arena_base(), RESERVE_BYTES, layout) } {
        Some(block) => block as *mut u8,
        None => {
            drop(blocks);
            crate::sys::write_stderr(
                b"aar: malloc refuses libaar.so memory and its own reserve is used up; \
                  the process is ending (the program is at its memory limit: ulimit -v, \
                  the batch system's memory limit or the node's commit limit).\n",
            );
            std::ptr::null_mut()
        }
    }
}

/// Give a block back to the reserve (kept, unused, if the lock stays taken: a leak, not a fault).
///
/// # Safety
/// `ptr` is a block of the reserve handed out for `layout`, no longer used.
unsafe fn to_reserve(ptr: *mut u8, layout: Layout) {
    if let Some(mut blocks) = RESERVE.try_lock_for(WAIT) {
        // SAFETY: the caller's contract.
        unsafe { blocks.give(ptr as usize, layout) };
    }
}

struct MallocThenReserve;

// SAFETY: every pointer comes from `System` (and goes back to it) or is a block of the reserve
// of at least the layout's size and alignment, handed out to one owner at a time.
unsafe impl GlobalAlloc for MallocThenReserve {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract (a non-zero size).
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            from_reserve(layout)
        } else {
            p
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            return p;
        }
        let p = from_reserve(layout);
        if !p.is_null() {
            // SAFETY: a block of at least `layout.size()` bytes (a reused one is not zero).
            unsafe { p.write_bytes(0, layout.size()) };
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if in_reserve(ptr) {
            // SAFETY: a block of the reserve, given back by its owner.
            unsafe { to_reserve(ptr, layout) }
        } else {
            // SAFETY: from `System`, with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `GlobalAlloc::realloc`'s contract: the new size, rounded to the alignment,
        // does not overflow.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if !in_reserve(ptr) {
            // SAFETY: from `System`, with this layout.
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                return p;
            }
            // malloc refused; the old block is still valid.
        } else if Blocks::size_index(new_layout) == Blocks::size_index(layout) {
            // Its block holds the new size too.
            return ptr;
        }
        // SAFETY: a non-zero size (realloc's contract).
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks hold the smaller size, and they are distinct.
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            // SAFETY: the old block, no longer used.
            unsafe { self.dealloc(ptr, layout) };
        }
        new
    }
}

/// Whether `bytes` more can be allocated now: by malloc, else from the reserve's unused part
/// (malloc's refusal is then counted as one of the library's).
pub fn can_spare(bytes: usize) -> bool {
    let Ok(probe) = Layout::from_size_align(bytes.max(1), 16) else { return false };
    // SAFETY: a non-zero size (`black_box`: the compiler would drop an allocation and its free
    // whose memory is not used).
    let p = std::hint::black_box(unsafe { System.alloc(probe) });
    if !p.is_null() {
        // SAFETY: just allocated by `System` with this layout.
        unsafe { System.dealloc(p, probe) };
        return true;
    }
    count_refusal(bytes);
    RESERVE.try_lock_for(WAIT).is_some_and(|b| RESERVE_BYTES - b.next >= bytes)
}

fn count_refusal(bytes: usize) {
    if REFUSED.fetch_add(1, Relaxed) == 0 {
        FIRST_REFUSED_BYTES.store(bytes, Relaxed);
    }
}

/// A warning for the record if malloc refused the library anything in this process.
pub fn refusals() -> Option<String> {
    let refused = REFUSED.load(Relaxed);
    (refused > 0).then(|| {
        format!(
            "malloc refused libaar.so {refused} allocation(s), the first of {} bytes: the program is at a memory \
             limit (ulimit -v, the batch system's memory limit or the node's commit limit). libaar.so takes what \
             it needs from a reserve of its own ({} KiB) instead, and the program is not affected. If the program \
             should not be at that limit, check its memory use or raise the limit.",
            FIRST_REFUSED_BYTES.load(Relaxed),
            RESERVE_BYTES >> 10
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C, align(4096))]
    struct Small([u8; 8192]);

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn sizes_are_powers_of_two_from_16_bytes_to_the_whole_reserve() {
        assert_eq!(Blocks::size_index(layout(1, 1)), Some(0));
        assert_eq!(Blocks::size_index(layout(16, 8)), Some(0));
        assert_eq!(Blocks::size_index(layout(17, 8)), Some(1));
        assert_eq!(Blocks::size_index(layout(8, 64)), Some(2), "the alignment counts as size");
        assert_eq!(Blocks::size_index(layout(RESERVE_BYTES, 8)), Some(SIZES - 1));
        assert_eq!(Blocks::size_index(layout(RESERVE_BYTES + 1, 8)), None);
        assert_eq!(Blocks::size_index(layout(64, 8192)), None, "beyond a page: malloc's alone");
        assert_eq!(Blocks::block_bytes(SIZES - 1), RESERVE_BYTES);
    }

    #[test]
    fn blocks_are_aligned_distinct_reused_by_size_and_run_out() {
        let mut arena = Box::new(Small([0; 8192]));
        let base = arena.0.as_mut_ptr() as usize;
        let mut b = Blocks::new();
        // SAFETY: the test's own page-aligned arena, handed out by `b` alone.
        let take = |b: &mut Blocks, size, align| unsafe { b.take(base, 8192, layout(size, align)) };
        let a = take(&mut b, 24, 8).unwrap();
        let c = take(&mut b, 100, 8).unwrap();
        let d = take(&mut b, 40, 64).unwrap();
        assert_eq!(
            (a - base, c - base, d - base),
            (0, 128, 256),
            "32 bytes, then 128 and 64, each aligned to its size"
        );
        // SAFETY: blocks `take` handed out, for layouts of their sizes, unused.
        let give = |b: &mut Blocks, block, size| unsafe { b.give(block, layout(size, 8)) };
        give(&mut b, c, 100);
        assert_eq!(take(&mut b, 65, 1), Some(c), "a freed block of the same size first");
        assert_eq!(take(&mut b, 65, 1), Some(base + 384), "then a new one");
        assert_eq!(take(&mut b, 4096, 8), Some(base + 4096), "a page, aligned to one");
        assert_eq!(take(&mut b, 4096, 8), None, "no room left for another");
        assert_eq!(take(&mut b, 16, 8), None, "the gap before the page is not used");
        give(&mut b, a, 24);
        assert_eq!(take(&mut b, 32, 8), Some(a), "freed blocks still are");
    }
}
