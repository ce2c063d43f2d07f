//! The libc seam: the few process-level calls std does not offer, and the real functions the
//! library forwards to.

use std::ffi::{c_void, CStr};
use std::path::Path;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering::Relaxed};

/// Marks a symbol that dlsym did not find, so it is looked up once, not on every call.
const MISSING: *mut c_void = std::ptr::without_provenance_mut(1);
/// A missing symbol whose absence was reported.
const MISSING_REPORTED: *mut c_void = std::ptr::without_provenance_mut(2);

/// A real uGNI or DMAPP function: the next definition of its name after libaar.so
/// ([`next_definition`]), found on first use. 24 bytes (whether its absence was reported is one more
/// marker address), so GNI_PostRdma's fits in the line every post reads ([`crate::control::Hot`]).
pub struct Real {
    name: &'static CStr,
    addr: AtomicPtr<c_void>,
}

impl Real {
    pub const fn new(name: &'static CStr) -> Self {
        Self { name, addr: AtomicPtr::new(std::ptr::null_mut()) }
    }

    pub fn name(&self) -> &'static str {
        self.name.to_str().unwrap_or("?")
    }

    /// The function's address, `None` when no library loaded after libaar.so defines it.
    #[inline]
    pub fn addr(&self) -> Option<*mut c_void> {
        let p = self.addr.load(Relaxed);
        if p.is_null() {
            return self.resolve();
        }
        (p.addr() > MISSING_REPORTED.addr()).then_some(p)
    }

    #[cold]
    fn resolve(&self) -> Option<*mut c_void> {
        let p = next_definition(self.name);
        // Only over "not looked up yet": a thread that resolved late must not turn a reported
        // miss back into an unreported one (it would be reported twice). dlsym gives every
        // thread the same answer, so a lost exchange loses nothing.
        let _ =
            self.addr.compare_exchange(std::ptr::null_mut(), if p.is_null() { MISSING } else { p }, Relaxed, Relaxed);
        (!p.is_null()).then_some(p)
    }

    /// The function as `F`, its C prototype (an `aar_abi` function type).
    #[inline]
    pub fn get<F: Copy>(&self) -> Option<F> {
        let addr = self.addr()?;
        debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
        // SAFETY: callers name `F` as the prototype of the function called `name` (the exports
        // check theirs against aar_abi at compile time).
        Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&addr) })
    }

    /// The first time the function was found missing (to report it once).
    pub fn first_miss(&self) -> bool {
        self.addr.compare_exchange(MISSING, MISSING_REPORTED, Relaxed, Relaxed).is_ok()
    }
}

/// Stack a thread needs left for the library's start-up: measured over the emulator, the start-up
/// (the settings, PAPI's initialisation, the files) needed between 10 and 14 KiB, more than a
/// runtime's thread made with a small stack may have left; real PAPI builds with more components
/// may need more.
const ROOM_NEEDED: usize = 128 << 10;
/// The stack of the thread that runs it where the caller's is smaller.
const ROOM_GIVEN: usize = 1 << 20;

/// `f()`, run on a thread of its own with a stack of [`ROOM_GIVEN`] bytes, waited for, when the
/// stack this runs on has less than [`ROOM_NEEDED`] left below this point (a runtime's progress
/// thread made with a small stack, whose first uGNI call starts the library, or a signal handler
/// on an alternate signal stack); here otherwise, and when no thread can be made. A panic in `f`
/// goes on in the caller.
pub fn with_room<T: Send + 'static>(f: fn() -> T) -> T {
    if stack_left().is_none_or(|left| left >= ROOM_NEEDED) {
        return f();
    }
    match std::thread::Builder::new().name("aar-start-up".into()).stack_size(ROOM_GIVEN).spawn(f) {
        Ok(helper) => helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        Err(_) => f(),
    }
}

/// Bytes of the stack this code runs on below this point: the alternate signal stack when a
/// signal handler runs there (`sigaltstack`, `SA_ONSTACK`: runtimes give theirs 8 to 64 KiB,
/// wherever the thread's own stack is), else the thread's; 0 on a stack that is neither (a handler
/// whose signal stack was disarmed on entry, `SS_AUTODISARM`), whose room cannot be told; `None`
/// on the main thread's own stack (it grows up to its limit) and when glibc cannot tell.
fn stack_left() -> Option<usize> {
    let here = 0u8;
    let here = std::ptr::addr_of!(here) as usize;
    // SAFETY: with no new stack given, sigaltstack only writes the current one into `alt`.
    let alt = unsafe {
        let mut alt: libc::stack_t = std::mem::zeroed();
        (libc::sigaltstack(std::ptr::null(), &mut alt) == 0).then_some(alt)
    };
    if let Some(alt) = alt.filter(|a| a.ss_flags & libc::SS_ONSTACK != 0) {
        return Some(here.saturating_sub(alt.ss_sp as usize));
    }
    // SAFETY: gettid takes no argument.
    if unsafe { libc::syscall(libc::SYS_gettid) } == i64::from(std::process::id()) {
        return None;
    }
    // SAFETY: `attr` is initialised by pthread_getattr_np before it is read, and destroyed once;
    // pthread_attr_getstack writes the stack's lowest address and size.
    let (lowest, size) = unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let (mut addr, mut size) = (std::ptr::null_mut(), 0);
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        if rc != 0 {
            return None;
        }
        (addr as usize, size)
    };
    Some(if (lowest..lowest.saturating_add(size)).contains(&here) { here - lowest } else { 0 })
}

/// The next definition of `name` after libaar.so: `dlsym(RTLD_NEXT)`, which searches the objects
/// after it in the loader's global scope; else the first object loaded after it, outside that
/// scope, that defines `name` itself. A library dlopen()ed with RTLD_LOCAL and what it links are
/// outside it: a Python extension module (mpi4py's) and the MPI library and libugni under it call
/// libaar.so's exports (the global scope is searched first), whose real functions only the
/// second search finds. Null when neither finds one.
pub fn next_definition(name: &CStr) -> *mut c_void {
    kept_loaded(next_definition_unpinned(name))
}

/// The first definition of `name` in the process: in the loader's global scope (`RTLD_DEFAULT`,
/// the program itself included), else where [`next_definition`] looks (a PMI or an MPI under a
/// Python module). For names libaar.so does not define itself.
pub fn first_definition(name: &CStr) -> *mut c_void {
    // SAFETY: NUL-terminated name; the address is looked up, never called here.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if p.is_null() {
        next_definition(name)
    } else {
        kept_loaded(p)
    }
}

/// `addr`, with the object that holds it kept loaded ([`keep_loaded`]) when it is not null.
fn kept_loaded(addr: *mut c_void) -> *mut c_void {
    if !addr.is_null() {
        keep_loaded(addr);
    }
    addr
}

/// Mark the object that holds `addr` never to be unloaded: the callers keep the address for the
/// life of the process, and a library loaded by dlopen() (a plugin's libugni, an MPI under a
/// Python module) can be unloaded by the dlclose() of what loaded it, and another mapped at its
/// place. `RTLD_NOLOAD | RTLD_NODELETE` changes only the flag of an object already loaded.
fn keep_loaded(addr: *mut c_void) {
    let Some(file) = file_of(addr).filter(|f| !f.is_empty()).and_then(|f| std::ffi::CString::new(f).ok()) else {
        return;
    };
    // SAFETY: dlopen of an object already loaded (RTLD_NOLOAD: nothing is loaded or initialised),
    // and the handle's reference given back at once.
    unsafe {
        let handle = libc::dlopen(file.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE);
        if !handle.is_null() {
            libc::dlclose(handle);
        }
    }
}

fn next_definition_unpinned(name: &CStr) -> *mut c_void {
    // SAFETY: NUL-terminated name; RTLD_NEXT searches the objects loaded after libaar.so.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if !p.is_null() {
        return p;
    }
    let Some(own) = own_path() else { return std::ptr::null_mut() };
    for object in objects_loaded_after(&own) {
        // SAFETY: RTLD_NOLOAD only gives a handle of an object already loaded (or null), whose
        // reference is given back below; dlsym with a handle searches that object and what it
        // links; the addresses are looked up, never called here.
        unsafe {
            let handle = libc::dlopen(object.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
            if handle.is_null() {
                continue;
            }
            let p = libc::dlsym(handle, name.as_ptr());
            // Its own definition, not one of what it links (found in load order anyway), and
            // not another copy of libaar.so's, which would forward the call back here.
            let defines =
                |p: *mut c_void| !p.is_null() && file_of(p).is_some_and(|f| f.as_bytes() == object.to_bytes());
            let found = defines(p) && !defines(libc::dlsym(handle, c"aar_selfcheck".as_ptr()));
            libc::dlclose(handle);
            if found {
                return p;
            }
        }
    }
    std::ptr::null_mut()
}

/// The file names of the objects loaded after the one named `own`, in load order.
fn objects_loaded_after(own: &str) -> impl Iterator<Item = std::ffi::CString> + '_ {
    loaded_objects().into_iter().skip_while(move |name| name.to_bytes() != own.as_bytes()).skip(1)
}

/// The file names of every shared object loaded in the process, in load order (the program
/// itself, which has none, left out).
pub fn loaded_objects() -> Vec<std::ffi::CString> {
    // The loader holds its lock while it calls this: it only copies names (no dlopen here).
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, names: *mut c_void) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid entry, and the Vec given to it below.
        let (info, names) = unsafe { (&*info, &mut *names.cast::<Vec<std::ffi::CString>>()) };
        if !info.dlpi_name.is_null() {
            // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
            let name = unsafe { CStr::from_ptr(info.dlpi_name) };
            if !name.is_empty() {
                names.push(name.to_owned());
            }
        }
        0
    }
    let mut names: Vec<std::ffi::CString> = Vec::new();
    // SAFETY: `visit` matches dl_iterate_phdr's callback and only uses `names` during the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut names).cast()) };
    names
}

/// Run `f` at `exit()`, before shared-library destructors. Returns false if libc refused.
pub fn at_exit(f: extern "C" fn()) -> bool {
    // SAFETY: `f` is a plain function with C linkage and static lifetime.
    unsafe { libc::atexit(f) == 0 }
}

/// Run `prepare` before every `fork()` in this process, `parent` and `child` after it.
pub fn at_fork(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) -> bool {
    // SAFETY: plain functions with C linkage and static lifetime.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) == 0 }
}

/// A value per thread with a destructor run when the thread exits: a pthread key. Setting a key
/// among a thread's first 32 allocates nothing, and a later one that cannot allocate fails; a
/// Rust `thread_local!` with a destructor asks glibc for memory at its first use in each thread,
/// and glibc ends the process when it gets none (a program at its memory limit).
pub struct ThreadKey(libc::pthread_key_t);

impl ThreadKey {
    /// A new key whose `destructor` gets a thread's non-zero value at its exit; `None` when the
    /// process has no key left.
    pub fn new(destructor: unsafe extern "C" fn(*mut c_void)) -> Option<ThreadKey> {
        let mut key = 0;
        // SAFETY: `key` is written by the call; the destructor has the signature it expects.
        (unsafe { libc::pthread_key_create(&mut key, Some(destructor)) } == 0).then_some(ThreadKey(key))
    }

    /// Set this thread's value; false when glibc had no memory for it.
    pub fn set(&self, value: usize) -> bool {
        // SAFETY: a key made by `pthread_key_create` and never deleted.
        unsafe { libc::pthread_setspecific(self.0, value as *const c_void) == 0 }
    }
}

/// `unsigned long long f(void)`.
type ClockFn = unsafe extern "C" fn() -> u64;

/// The emulator's simulated clock.
#[derive(Clone, Copy)]
pub struct EmulatorClock(ClockFn);

impl EmulatorClock {
    /// Simulated nanoseconds.
    pub fn now(self) -> u64 {
        // SAFETY: the emulator's `unsigned long long aar_emu_clock_ns(void)`, found by name; it
        // takes no argument and only reads the emulator's state.
        unsafe { (self.0)() }
    }
}

/// The shared object an address belongs to (dladdr): its file and where it is loaded.
fn object_of(addr: *const libc::c_void) -> Option<(String, usize)> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader, valid while the object is loaded.
    let file = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    Some((file, info.dli_fbase as usize))
}

/// The file of the shared object an address belongs to.
pub fn file_of(addr: *const libc::c_void) -> Option<String> {
    object_of(addr).map(|(file, _)| file)
}

/// This library's own file. (Through a function it does not export: the address of an exported
/// one may be another copy's, which the loader lets interpose.)
pub fn own_path() -> Option<String> {
    file_of(own_path as *const libc::c_void)
}

/// The file of another copy of libaar.so that the loader put before this one (two of them in
/// `LD_PRELOAD`: a module's and one set by hand), if there is one: the application's calls reach
/// that copy first, and it forwards them to this one. Told by where `aar_selfcheck` is found,
/// which only libaar.so defines (an application may define a fallback of the C API, never that).
pub fn earlier_copy() -> Option<String> {
    defined_before_this(c"aar_selfcheck")
}

/// [`defined_before_this`] for a function name, an empty file named as "the program itself".
pub fn first_definer(name: &str) -> Option<String> {
    let first = std::ffi::CString::new(name).ok().and_then(|n| defined_before_this(&n))?;
    Some(if first.is_empty() { "the program itself".into() } else { first })
}

/// The file of the object where the loader finds `name` first, when that is not this library:
/// an object loaded before it defines `name`, and the application's calls of it go there. An
/// empty name is the program itself.
pub fn defined_before_this(name: &std::ffi::CStr) -> Option<String> {
    // SAFETY: dlsym with a NUL-terminated name; the address is looked up, never called.
    let first = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if first.is_null() {
        return None;
    }
    let (file, base) = object_of(first)?;
    let (_, own_base) = object_of(own_path as *const libc::c_void)?;
    if Some(base) == program_base() {
        // dladdr names the program by how it was started (argv[0]), not as a library.
        return Some(String::new());
    }
    (base != own_base).then_some(file)
}

/// Where the program itself is mapped: the object that holds its program headers.
fn program_base() -> Option<usize> {
    // SAFETY: getauxval only reads the auxiliary vector; AT_PHDR is the address of the program's
    // program headers in memory (0 if the kernel did not give it).
    let headers = unsafe { libc::getauxval(libc::AT_PHDR) };
    (headers != 0).then(|| object_of(headers as *const libc::c_void).map(|(_, base)| base)).flatten()
}

/// The emulator's simulated clock (`aar_emu_clock_ns`, cabi/aar_emu.h), when this process has it
/// and it runs (reads non-zero): iterations are then timed in simulated time.
pub fn emulator_clock() -> Option<EmulatorClock> {
    // SAFETY: dlsym with a NUL-terminated name.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"aar_emu_clock_ns".as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: the emulator defines it as `unsigned long long aar_emu_clock_ns(void)`.
    let f = unsafe { std::mem::transmute::<*mut libc::c_void, ClockFn>(p) };
    let clock = EmulatorClock(f);
    (clock.now() != 0).then_some(clock)
}

/// The names of the environment's variables (those that are text).
pub fn variable_names() -> impl Iterator<Item = String> {
    std::env::vars_os().filter_map(|(k, _)| k.into_string().ok())
}

pub fn pid() -> u32 {
    std::process::id()
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname NUL-terminates within it or
    // truncates, and we stop at the first NUL or the end.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// A file of the library's own (a record, the trace): its writes never raise a signal in the
/// application ([`SignalsHeld`]); one past the job's file size limit fails with `EFBIG`.
pub struct OwnFile {
    file: std::fs::File,
    /// Bytes written to it (it is made new, so also where the next write goes).
    len: u64,
}

impl std::io::Write for OwnFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _quiet = SignalsHeld::new();
        let n = self.file.write(buf)?;
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl OwnFile {
    /// `fdatasync`, where the file system can.
    pub fn sync_data(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    /// Bytes it holds: those written to it and kept.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Its device and inode: what another name of it (a hard link) shares.
    pub fn identity(&self) -> std::io::Result<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().map(|m| (m.dev(), m.ino()))
    }

    /// Append `lines`, whole lines of text. Where the file system takes only part of them (full,
    /// over quota, the file size limit), the file is cut back to its last whole line before the
    /// error is returned: a reader of JSON Lines never finds half a line at its end.
    pub fn append_lines(&mut self, lines: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        let start = self.len;
        let Err(e) = self.write_all(lines) else { return Ok(()) };
        let taken = usize::try_from(self.len - start).unwrap_or(usize::MAX).min(lines.len());
        let whole = lines[..taken].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if whole < taken {
            // Shrinking is never refused for the size limit; where it fails, the half line stays.
            let cut = start + whole as u64;
            if self.file.set_len(cut).is_ok() {
                self.len = cut;
                let _ = std::io::Seek::seek(&mut self.file, std::io::SeekFrom::Start(cut));
            }
        }
        Err(e)
    }
}

/// Create a file that must not exist yet, never following a symlink planted at its name.
pub fn create_new(path: &str) -> std::io::Result<OwnFile> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)?;
    Ok(OwnFile { file: above_stdio(file), len: 0 })
}

/// `file` on a descriptor above 2: in a process started with stdin, stdout or stderr closed, a new
/// file takes the lowest free number, and the application's output (and the library's lines to
/// stderr) would then go into a record or the trace. Where no other number can be had, `file` as
/// it is.
fn above_stdio(file: std::fs::File) -> std::fs::File {
    use std::os::fd::{AsRawFd, FromRawFd};
    if file.as_raw_fd() > 2 {
        return file;
    }
    // SAFETY: F_DUPFD_CLOEXEC duplicates an open descriptor onto the lowest free number from 3;
    // the new descriptor is owned by the File made from it, the old one closes when `file` drops.
    let fd = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return file;
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    unsafe { std::fs::File::from_raw_fd(fd) }
}

/// [`create_new`] with `bytes` written in one go; where that write fails (a full or over-quota
/// file system), the file, this process's own, is removed: an empty or cut file is no record.
pub fn create_new_with(path: &str, bytes: &[u8]) -> std::io::Result<OwnFile> {
    use std::io::Write;
    let mut f = create_new(path)?;
    if let Err(e) = f.write_all(bytes) {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(f)
}

/// Map `len` bytes of the file at `path`, shared with every process that maps it, creating it
/// (mode 0600, zero-filled) when it does not exist; symlinks are not followed, and a file there
/// that is not a regular file of this user's that only it may write is refused, untouched
/// ([`std::io::ErrorKind::AlreadyExists`]): another user who made one at that name could write
/// what the ranks read, or cut it short and so kill them with SIGBUS at their next touch. The mapping stays
/// for the life of the process. Its pages are allocated first (by every process: one that only
/// grew the file leaves them to the first touch): a full file system (a node's /dev/shm, which
/// MPI libraries fill too) is then an error here, where a touch of a page it cannot give would
/// kill the process with SIGBUS.
pub fn map_shared(path: &Path, len: usize) -> std::io::Result<&'static [u8]> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o600)
        .open(path);
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no failure and touches no memory.
    let me = unsafe { libc::geteuid() };
    // What is at the name, if it is not this user's own file that only this user may write.
    let refused = |meta: &std::fs::Metadata| {
        if !meta.file_type().is_file() {
            Some("it is not a regular file".to_string())
        } else if meta.uid() != me {
            Some(format!("it belongs to user id {}, not this user ({me})", meta.uid()))
        } else if meta.mode() & 0o022 != 0 {
            Some(format!("its mode {:o} lets other users write it", meta.mode() & 0o777))
        } else {
            None
        }
    };
    let refusal = |why: String| std::io::Error::new(std::io::ErrorKind::AlreadyExists, why);
    let file = match file {
        Ok(file) => file,
        // A symbolic link (O_NOFOLLOW) is said as such by the caller.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(e),
        // Refused because of what is at the name (a folder: EISDIR; a socket: ENXIO; another
        // user's file this user may not open, of mode 600 or wherever fs.protected_regular guards
        // sticky folders: EACCES): that is the cause, not the folder it is in.
        Err(e) => return Err(std::fs::symlink_metadata(path).ok().as_ref().and_then(refused).map_or(e, refusal)),
    };
    if let Some(why) = refused(&file.metadata()?) {
        return Err(refusal(why));
    }
    use std::os::fd::AsRawFd;
    // Every process grows it to the same size; a zero file is valid, so no one initialises it.
    let size = libc::off_t::try_from(len).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // Past the job's file size limit the allocation fails rather than raise SIGXFSZ.
    let quiet = SignalsHeld::new();
    // Refused rather than unsupported (a container's seccomp filter answers EPERM or ENOSYS, as do
    // gVisor and old kernels): the pages are allocated through the mapping instead, below.
    let mut populate = None;
    // SAFETY: an open descriptor; mode 0 allocates what is not yet allocated and keeps the
    // bytes that are, so a process that maps the file meanwhile sees its content unchanged.
    if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, size) } != 0 {
        let e = std::io::Error::last_os_error();
        if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOSYS)) {
            populate = Some(e);
        } else if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
            remove_if_unallocated(&file, path);
            return Err(e);
        }
        // A file system without it (not tmpfs): grow the file only. (glibc's posix_fallocate
        // would write zeros over bytes other processes may be writing.)
        if file.metadata()?.len() < len as u64 {
            file.set_len(len as u64)?;
        }
    }
    drop(quiet);
    // SAFETY: a fresh mapping of an open file at least `len` bytes long; the kernel chooses the
    // address. The mapping outlives the descriptor, which is closed when `file` drops.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, file.as_raw_fd(), 0)
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    if let Some(refused) = populate {
        // MADV_POPULATE_WRITE (Linux 5.14) allocates every page as a write fault would, keeping
        // the bytes there, and fails where a fault would raise SIGBUS (a full tmpfs).
        // SAFETY: the mapping just made, `len` bytes at `p`; madvise only faults its pages in.
        if unsafe { libc::madvise(p, len, libc::MADV_POPULATE_WRITE) } != 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: the mapping just made, which nothing else has seen.
            unsafe { libc::munmap(p, len) };
            remove_if_unallocated(&file, path);
            // Out of room (EFAULT: a page the file system could not give): the node's shared
            // memory is full. Otherwise (a kernel without it) the pages cannot be made safe to
            // touch, for the reason fallocate gave.
            return Err(match e.raw_os_error() {
                Some(libc::ENOMEM | libc::EFAULT) => std::io::Error::from_raw_os_error(libc::ENOSPC),
                _ => refused,
            });
        }
    }
    // SAFETY: `len` readable bytes at `p`, never unmapped; other processes change them only
    // through atomics, which is how the callers read them.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// Remove the file `path` (open as `file`) if no page of it was ever allocated (a failed
/// allocation is undone): no process can be using it, so the name does not stay behind.
fn remove_if_unallocated(file: &std::fs::File, path: &Path) {
    use std::os::unix::fs::MetadataExt;
    if file.metadata().is_ok_and(|m| m.blocks() == 0) {
        let _ = std::fs::remove_file(path);
    }
}

/// Whether process `pid` has ended (`kill(pid, 0)` says it does not exist). A pid of another PID
/// namespace says nothing here: a live process there may be absent from this one.
pub fn process_ended(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// This process's PID namespace: the inode of `/proc/self/ns/pid`, which names it on this node
/// (a pid means the same process only to processes of one namespace).
pub fn pid_namespace() -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata("/proc/self/ns/pid")?.ino())
}

/// Whether this process may create files in the folder `dir` (access(2) with the effective ids,
/// as open(2) checks them): the file system's and the folder owner's answer, which the mode bits
/// alone do not give (a folder of another user's, a read-only mount, root's way past the bits).
///
/// A process whose real and effective ids are the same (every job's) asks with plain access(2):
/// glibc answers `faccessat(AT_EACCESS)` with faccessat2(2) first, a system call that container
/// seccomp filters older than it (Docker's before 20.10, podman's, some HPC runtimes') refuse
/// with EPERM, which glibc takes for the answer: a folder the process can write in would be said
/// unusable.
pub fn can_create_in(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let mode = libc::W_OK | libc::X_OK;
    // SAFETY: the id getters take no argument; access and faccessat only read the NUL-terminated
    // path.
    let rc = unsafe {
        if libc::getuid() == libc::geteuid() && libc::getgid() == libc::getegid() {
            libc::access(path.as_ptr(), mode)
        } else {
            libc::faccessat(libc::AT_FDCWD, path.as_ptr(), mode, libc::AT_EACCESS)
        }
    };
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// A variable's value as the environment holds it: text, or bytes that are not UTF-8 (shown with
/// U+FFFD where they are not).
pub type EnvValue = Result<String, String>;

/// The environment variable `name`, unset as `None` (the settings' and the launcher's variables).
pub fn env_value(name: &str) -> Option<EnvValue> {
    std::env::var_os(name).map(|v| v.into_string().map_err(|v| v.to_string_lossy().into_owned()))
}

/// A folder an emulator variable names (`AAR_EMU_JOB_DIR`, `AAR_EMU_CRAY_XT`): unset, empty or
/// blanks is none, as the emulator takes its own variables.
pub fn emulator_folder(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(name).filter(|d| !d.to_string_lossy().trim().is_empty()).map(std::path::PathBuf::from)
}

/// The real user id, for names of files that other users must not share.
pub fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// A function of the PMI library the process loaded, if it has one and has called `PMI_Init`
/// (the library never initialises PMI itself). `F` is the function's type by pmi.h.
fn pmi_function<F: Copy>(name: &CStr) -> Option<F> {
    type InitializedFn = unsafe extern "C" fn(*mut libc::c_int) -> libc::c_int;
    debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    let (init, f) = (first_definition(c"PMI_Initialized"), first_definition(name));
    if init.is_null() || f.is_null() {
        return None;
    }
    // SAFETY: PMI_Initialized is a PMI-1 function with this prototype (pmi.h).
    let init = unsafe { std::mem::transmute::<*mut c_void, InitializedFn>(init) };
    let mut flag: libc::c_int = 0;
    // SAFETY: a valid int to write to.
    if unsafe { init(&mut flag) } != 0 || flag == 0 {
        return None;
    }
    // SAFETY: callers name `F` as the pmi.h prototype of the function called `name`.
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&f) })
}

type PmiIntFn = unsafe extern "C" fn(*mut libc::c_int) -> libc::c_int;

/// One `int` from a PMI call that writes one.
fn pmi_int(name: &CStr) -> Option<libc::c_int> {
    let f = pmi_function::<PmiIntFn>(name)?;
    let mut n: libc::c_int = 0;
    // SAFETY: a valid int to write to.
    (unsafe { f(&mut n) } == 0).then_some(n)
}

/// `PMI_Get_clique_size` of the PMI library the process loaded, if it has one and has called
/// `PMI_Init`.
pub fn pmi_clique_size() -> Option<u32> {
    pmi_int(c"PMI_Get_clique_size").and_then(|n| u32::try_from(n).ok())
}

/// This rank and the NID of every rank's node, in rank order, from Cray's `PMI_Get_rank`,
/// `PMI_Get_size` and `PMI_Get_nid`; jobs of more than `max_ranks` are refused. `Err`: why not,
/// for a message.
pub fn pmi_nids(max_ranks: usize) -> Result<(usize, Vec<u32>), String> {
    type NidFn = unsafe extern "C" fn(libc::c_int, *mut libc::c_int) -> libc::c_int;
    let (Some(rank), Some(size), Some(nid)) =
        (pmi_int(c"PMI_Get_rank"), pmi_int(c"PMI_Get_size"), pmi_function::<NidFn>(c"PMI_Get_nid"))
    else {
        return Err("the process has no initialised PMI with PMI_Get_nid (Cray's PMI)".into());
    };
    let (Ok(rank), Ok(size)) = (usize::try_from(rank), usize::try_from(size)) else {
        return Err(format!("PMI gives rank {rank} of {size}"));
    };
    if rank >= size || size > max_ranks {
        return Err(format!("PMI gives rank {rank} of {size} (at most {max_ranks} ranks are placed)"));
    }
    (0..size)
        .map(|r| {
            let mut n: libc::c_int = -1;
            // SAFETY: a rank of the job and a valid int to write to.
            let rc = unsafe { nid(r as libc::c_int, &mut n) };
            match u32::try_from(n) {
                Ok(n) if rc == 0 => Ok(n),
                _ if rc != 0 => Err(format!("PMI_Get_nid({r}) returned {rc}")),
                _ => Err(format!("PMI_Get_nid({r}) gave the NID {n}")),
            }
        })
        .collect::<Result<Vec<u32>, String>>()
        .map(|nids| (rank, nids))
}

/// The time-stamp counter: a few nanoseconds to read where `clock_gettime` takes tens. Use it as a
/// clock only where [`tsc_keeps_time`] says so.
#[inline]
pub fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC has no preconditions and no side effects.
    return unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    return now_ns();
}

/// [`tsc`], read in order with the instructions around it: every load before it has its value,
/// and none after it has started, when the counter is read (as the kernel's own clock reads it).
/// A plain RDTSC may run tens of nanoseconds ahead of a load that misses, or behind one that
/// follows: too much for stamps that order one rank's counter reading against another's.
#[inline]
pub fn tsc_ordered() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: LFENCE and RDTSC have no preconditions and no side effects.
    return unsafe {
        core::arch::x86_64::_mm_lfence();
        let t = core::arch::x86_64::_rdtsc();
        core::arch::x86_64::_mm_lfence();
        t
    };
    #[cfg(not(target_arch = "x86_64"))]
    return now_ns();
}

/// Whether the kernel keeps time with the TSC: then it found the counter constant in rate and in
/// step on every CPU, so values read on different cores of the node compare.
pub fn tsc_keeps_time() -> bool {
    cfg!(target_arch = "x86_64")
        && aar_record::text_file::read(
            Path::new("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
            4096,
        )
        .is_ok_and(|s| s.trim() == "tsc")
}

/// Monotonic nanoseconds (vDSO, no system call on Linux x86-64).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// Whether descriptor 2 was open when libaar.so was loaded (set by [`note_stderr_at_load`]).
static STDERR_OPEN_AT_LOAD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Run by the loader when libaar.so is loaded (before `main` when preloaded; registered in
/// `init`): note whether the process has a stderr. In one started without (`app 2>&-`), the first
/// file the application opens takes descriptor 2, and a line written there would land in the
/// application's own file. Only a `fcntl`: nothing else is safe this early.
pub extern "C" fn note_stderr_at_load() {
    // SAFETY: F_GETFD reads the flags of a descriptor number; on a closed one it fails with EBADF.
    let open = unsafe { libc::fcntl(2, libc::F_GETFD) } >= 0;
    STDERR_OPEN_AT_LOAD.store(open, Relaxed);
}

/// How long a line waits for a stderr that takes nothing (a pipe whose reader stopped reading:
/// a launcher's output forwarding that is stuck, `app 2>&1 | less` never paged). Then it and every
/// later line are dropped: a thread of the application must not wait on the library's lines.
const STDERR_PATIENCE_NS: u64 = 1_000_000_000;

/// Set when stderr took nothing for [`STDERR_PATIENCE_NS`]: nothing more is written there.
static STDERR_STALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What became of a line given to [`write_stderr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Written, or dropped because stderr is closed, gone, full on disk or was not there at load.
    Done,
    /// Dropped, and stderr given up: it took nothing for [`STDERR_PATIENCE_NS`]. Said once.
    Stalled,
}

/// Write a whole line to stderr with write(2): no lock (std's stderr lock could be inherited held
/// by a fork child), one call for a line of up to `PIPE_BUF` (4096) bytes so lines of different
/// ranks do not interleave, EINTR retried, anything else dropped (a closed stderr must not disturb
/// the application), and never a SIGPIPE or a SIGXFSZ: a stderr whose reader has gone (`app 2>&1 |
/// head`), or a log file at the job's file size limit, would kill the application for a line of
/// ours. Each write waits with poll(2) until stderr can take it, for [`STDERR_PATIENCE_NS`] at
/// most (a write to a full pipe would block until its reader reads, which a stuck reader never
/// does; descriptor 2 is the application's, so it cannot be made non-blocking). In a process that
/// had no stderr when the library was loaded, nothing is written: descriptor 2, if open now, is a
/// file of the application's.
pub fn write_stderr(bytes: &[u8]) -> Written {
    if !STDERR_OPEN_AT_LOAD.load(Relaxed) || STDERR_STALLED.load(Relaxed) {
        return Written::Done;
    }
    let _quiet = SignalsHeld::new();
    let deadline = now_ns().saturating_add(STDERR_PATIENCE_NS);
    let mut rest = bytes;
    while !rest.is_empty() {
        let mut fd = libc::pollfd { fd: 2, events: libc::POLLOUT, revents: 0 };
        let left_ms = deadline.saturating_sub(now_ns()).div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int;
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut fd, 1, left_ms) };
        if ready == 0 {
            return if STDERR_STALLED.swap(true, Relaxed) { Written::Done } else { Written::Stalled };
        }
        if ready < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Written::Done;
        }
        if ready < 0 {
            continue;
        }
        // A pipe that polls writable has room for `PIPE_BUF` bytes: no more, or the write could
        // block after all. (An error or hang-up polls ready too: the write then fails.)
        let chunk = &rest[..rest.len().min(libc::PIPE_BUF)];
        // SAFETY: fd 2 and a valid buffer of `chunk.len()` bytes.
        let n = unsafe { libc::write(2, chunk.as_ptr().cast(), chunk.len()) };
        if n > 0 {
            rest = &rest[n as usize..];
        } else if n < 0
            && matches!(
                std::io::Error::last_os_error().kind(),
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
            )
        {
            // Taken by another writer between the poll and the write, or a signal: poll again.
            continue;
        } else {
            return Written::Done;
        }
    }
    Written::Done
}

/// The signals a write can raise in the writing thread, whose default action ends the process:
/// SIGPIPE (a pipe without a reader) and SIGXFSZ (a file grown past the job's `ulimit -f`, which
/// batch systems pass on to the job). A write of the library's must fail instead.
const WRITE_SIGNALS: [libc::c_int; 2] = [libc::SIGPIPE, libc::SIGXFSZ];

/// [`WRITE_SIGNALS`] blocked in this thread until the drop, which takes away those the writes
/// meanwhile raised and restores the thread's mask. One already pending before is left pending:
/// it is the application's.
struct SignalsHeld {
    old_mask: libc::sigset_t,
    was_pending: [bool; WRITE_SIGNALS.len()],
}

impl SignalsHeld {
    fn new() -> SignalsHeld {
        // SAFETY: sigset_t values filled by sigemptyset/pthread_sigmask/sigpending before any read;
        // these calls only read and write them and the thread's signal mask.
        unsafe {
            let mut held: libc::sigset_t = std::mem::zeroed();
            let mut old_mask: libc::sigset_t = std::mem::zeroed();
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut held);
            WRITE_SIGNALS.iter().for_each(|&s| _ = libc::sigaddset(&mut held, s));
            libc::pthread_sigmask(libc::SIG_BLOCK, &held, &mut old_mask);
            libc::sigpending(&mut pending);
            SignalsHeld { old_mask, was_pending: WRITE_SIGNALS.map(|s| libc::sigismember(&pending, s) == 1) }
        }
    }
}

impl Drop for SignalsHeld {
    fn drop(&mut self) {
        // SAFETY: as in `new`; a zero timeout makes sigtimedwait take the pending signal or return
        // at once.
        unsafe {
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            for (&signal, &was_pending) in WRITE_SIGNALS.iter().zip(&self.was_pending) {
                if was_pending || libc::sigismember(&pending, signal) != 1 {
                    continue;
                }
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, signal);
                let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                while libc::sigtimedwait(&one, std::ptr::null_mut(), &zero) < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {}
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old_mask, std::ptr::null_mut());
        }
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds, read with the TSC once its rate is known: where the kernel
/// keeps time with the TSC ([`tsc_keeps_time`]), one reading pairs the two clocks and a pair at
/// least [`TSC_CALIBRATION_NS`] later gives the TSC's rate; until then, and elsewhere, a reading
/// is a `clock_gettime`. For intervals of microseconds within one process (`steady`'s post times).
pub struct MonotonicClock {
    tsc: bool,
    /// Whether `origin` holds the first pair.
    paired: bool,
    /// (ns, ticks) of the first pair.
    origin: (u64, u64),
    /// 0 until calibrated.
    ns_per_tick: f64,
}

/// The interval over which the TSC's rate is measured: a pair is read within about 3 µs, so the
/// rate is known to a few parts in 10,000.
pub const TSC_CALIBRATION_NS: u64 = 10_000_000;

impl MonotonicClock {
    /// Reads whether the kernel keeps time with the TSC (a file): at start-up, not per reading.
    pub fn of_this_machine() -> Self {
        Self { tsc: tsc_keeps_time(), paired: false, origin: (0, 0), ns_per_tick: 0.0 }
    }

    /// Nanoseconds of `CLOCK_MONOTONIC` (with the TSC: to within its rate's error since the
    /// origin).
    #[inline]
    pub fn now_ns(&mut self) -> u64 {
        if self.ns_per_tick > 0.0 {
            let (ns, ticks) = self.origin;
            ns.saturating_add((tsc().saturating_sub(ticks) as f64 * self.ns_per_tick) as u64)
        } else {
            self.calibrating()
        }
    }

    #[cold]
    fn calibrating(&mut self) -> u64 {
        if !self.tsc {
            return now_ns();
        }
        // A pair is the clock between two TSC readings close together (no interruption between).
        let (t0, ns, t1) = (tsc(), now_ns(), tsc());
        if t1 < t0 || t1 - t0 > 10_000 {
            return ns;
        }
        let ticks = t0 + (t1 - t0) / 2;
        let (ns0, ticks0) = self.origin;
        match self.paired {
            false => (self.paired, self.origin) = (true, (ns, ticks)),
            true if ns.saturating_sub(ns0) >= TSC_CALIBRATION_NS && ticks > ticks0 => {
                let rate = (ns - ns0) as f64 / (ticks - ticks0) as f64;
                // Between 100 MHz and 100 GHz, else the TSC is not a clock here.
                if (0.01..10.0).contains(&rate) {
                    self.ns_per_tick = rate;
                } else {
                    self.tsc = false;
                }
            }
            true => {}
        }
        ns
    }
}

/// A number that identifies the calling thread among the live ones, read in one instruction:
/// the thread pointer (the TCB's self-pointer at %fs:0 on x86-64 Linux).
#[inline(always)]
#[cfg(target_arch = "x86_64")]
pub fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: on x86-64 Linux (glibc and musl) %fs:0 holds the thread control block's own
    // address; reading it has no side effects.
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:0", out(reg) tp, options(nostack, readonly, preserves_flags, pure))
    };
    tp
}

#[inline]
#[cfg(not(target_arch = "x86_64"))]
pub fn thread_pointer() -> usize {
    // 8-aligned, as a TCB is: [`crate::trylock::TryLock`] keeps flags in the low bits beside it.
    thread_local!(static ME: u64 = const { 0 });
    ME.with(|m| m as *const u64 as usize)
}

fn membarrier(cmd: libc::c_int) -> libc::c_long {
    // SAFETY: membarrier takes two ints (the command and flags) and touches no user memory.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0) }
}

/// Whether [`process_barrier`] works in this process: the kernel has private expedited
/// membarriers (Linux 4.14 on). False on an older kernel, and without trying under a seccomp
/// filter (`Seccomp:` other than 0 in /proc/self/status, or no /proc): a filter may kill the
/// process for a call it does not list. Registers the process for them when it has one thread:
/// with more, registering waits for an RCU grace period (10 ms on the development VM), which is
/// then left to the first barrier. Found once per process (the start-up asks first, so that the
/// first take of a biased lock reads no file and allocates nothing); a fork child asks again.
pub fn process_barrier_ready() -> bool {
    let pid = u64::from(pid());
    let known = BARRIER_READY.load(Relaxed);
    if known >> 1 == pid {
        return known & 1 == 1;
    }
    let ready = process_barrier_usable().is_ok_and(|status| {
        if status_field(&status, "Threads") == Some("1") {
            let _ = membarrier(libc::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
        }
        true
    });
    BARRIER_READY.store(pid << 1 | u64::from(ready), Relaxed);
    ready
}

/// What [`process_barrier_ready`] found, and for which process: `pid << 1 | ready`; 0: not asked.
static BARRIER_READY: AtomicU64 = AtomicU64::new(0);

/// The process's status if [`process_barrier`] can be used here, else why not (for `aar doctor`,
/// in words). Makes no call that a seccomp filter might kill the process for.
pub fn process_barrier_usable() -> Result<String, &'static str> {
    let Ok(status) = aar_record::text_file::read(Path::new("/proc/self/status"), 1 << 16) else {
        return Err("/proc/self/status cannot be read, so a seccomp filter cannot be ruled out");
    };
    if status_field(&status, "Seccomp") != Some("0") {
        return Err("the process runs under a seccomp filter, which might kill it for membarrier(2)");
    }
    let commands = membarrier(libc::MEMBARRIER_CMD_QUERY);
    if commands <= 0 || commands & libc::c_long::from(libc::MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 {
        return Err("the kernel has no private expedited membarrier(2) (Linux before 4.14)");
    }
    Ok(status)
}

/// A field of a process status (/proc/PID/status), trimmed.
fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|line| line.split_once(':').filter(|(k, _)| *k == name).map(|(_, v)| v.trim()))
}

/// A full memory barrier on every running thread of this process, as if each had executed one
/// at some point during the call (membarrier(2), private expedited): each thread's stores from
/// before that point are visible to the caller afterwards, and its loads after it see the
/// caller's stores from before the call. Registers the process first where it is not yet (see
/// [`process_barrier_ready`]). False if the kernel refused.
pub fn process_barrier() -> bool {
    membarrier(libc::MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0
        || (membarrier(libc::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0
            && membarrier(libc::MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_status_gives_its_fields() {
        let status = "Name:\tx\nThreads:\t1\nSeccomp:\t0\nSeccomp_filters:\t0\n";
        assert_eq!(status_field(status, "Seccomp"), Some("0"));
        assert_eq!(status_field(status, "Threads"), Some("1"));
        assert_eq!(status_field("Seccomp:\t2\nSeccomp_filters:\t1\n", "Seccomp"), Some("2"));
        assert_eq!(status_field("Name:\tx\n", "Seccomp"), None, "a kernel that does not say");
    }

    /// Every reading lies between the `clock_gettime` readings around it, before and after the
    /// TSC's rate is known (to within the rate's error over the test's span).
    #[test]
    fn the_monotonic_clock_follows_clock_monotonic() {
        let mut clock = MonotonicClock::of_this_machine();
        let start = now_ns();
        let mut readings = 0u64;
        while now_ns() - start < 4 * TSC_CALIBRATION_NS {
            let before = now_ns();
            let t = clock.now_ns();
            let after = now_ns();
            assert!(t + 100_000 >= before && t <= after + 100_000, "{before} <= {t} <= {after}");
            readings += 1;
        }
        assert!(readings > 100);
        // Where the kernel keeps time with the TSC (x86-64 Linux, usually), the rate was learned.
        assert_eq!(clock.ns_per_tick > 0.0, tsc_keeps_time(), "{}", clock.ns_per_tick);
    }
}
