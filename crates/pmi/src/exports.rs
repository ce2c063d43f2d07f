//! Every C symbol of libpmi.so.0, in one file: PMI-1 (as MPICH's pmi.h declares it) and Cray's
//! extensions (`PMI_Allgather`, `PMI_Get_clique_size`, `PMI_Get_clique_ranks`, `PMI_Get_nid`). Each checks its
//! pointers, runs inside `catch_unwind`, and on failure says why on stderr (prefix `aar:`, the
//! call's name) and returns a PMI error code. Only `PMI_Abort` ends the process.

use crate::client::{
    abort_fd, send_abort, PmiError, Session, State, PMI_ERR_INIT, PMI_ERR_INVALID_ARG, PMI_ERR_INVALID_LENGTH,
    PMI_FAIL, PMI_SUCCESS, STATE,
};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::PoisonError;

type Result<T> = std::result::Result<T, PmiError>;

/// Run one call: its code, and its failure said on stderr.
fn guard(call: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => PMI_SUCCESS,
        Ok(Err(e)) => {
            say(&format!("aar: {call}: {}\n", e.message));
            e.code
        }
        Err(_) => {
            say(&format!("aar: {call}: an internal error (a panic in libpmi.so.0); the call failed.\n"));
            PMI_FAIL
        }
    }
}

/// One line on stderr in one write, so the lines of ranks that share a terminal do not mix.
pub(crate) fn say(line: &str) {
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `f` on the initialised session.
fn with_session<T>(f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
    let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    match &mut *state {
        State::Ready(s) => f(s),
        State::Uninit => {
            Err(PmiError::new(PMI_ERR_INIT, "called before PMI_Init; nothing was done. Call PMI_Init first."))
        }
        State::Finalized => Err(PmiError::new(PMI_ERR_INIT, "called after PMI_Finalize; nothing was done.")),
    }
}

fn null(name: &str) -> PmiError {
    PmiError::new(PMI_ERR_INVALID_ARG, format!("the argument {name} is NULL; nothing was done."))
}

/// Store `value` through the caller's out-pointer `p` (named `name` in messages).
fn put_out<T>(name: &str, p: *mut T, value: T) -> Result<()> {
    if p.is_null() {
        return Err(null(name));
    }
    // SAFETY: p is non-null and, by the PMI API, points to a writable T of the caller.
    unsafe { p.write(value) };
    Ok(())
}

/// The caller's C string argument `name`.
fn c_str<'a>(name: &str, p: *const c_char) -> Result<&'a str> {
    if p.is_null() {
        return Err(null(name));
    }
    // SAFETY: p is non-null and, by the PMI API, a NUL-terminated string that outlives the call.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map_err(|_| PmiError::new(PMI_ERR_INVALID_ARG, format!("the argument {name} is not UTF-8; nothing was done.")))
}

/// Copy `s` and its NUL into the caller's buffer `buf` of `length` bytes.
fn copy_out(name: &str, buf: *mut c_char, length: c_int, s: &str) -> Result<()> {
    if buf.is_null() {
        return Err(null(name));
    }
    if length < 0 || (length as usize) < s.len() + 1 {
        return Err(PmiError::new(
            PMI_ERR_INVALID_LENGTH,
            format!(
                "{name} holds {length} bytes, {} are needed ({} and its NUL); nothing was written.",
                s.len() + 1,
                crate::wire::quoted(s)
            ),
        ));
    }
    // SAFETY: buf is non-null and holds `length` >= s.len() + 1 writable bytes (the caller's
    // promise by the PMI API); s is a distinct Rust string.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
        buf.add(s.len()).write(0);
    }
    Ok(())
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Init(spawned: *mut c_int) -> c_int {
    guard("PMI_Init", || {
        put_out("spawned", spawned, 0)?;
        let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        match *state {
            State::Ready(_) => Ok(()),
            State::Uninit => {
                *state = State::Ready(Session::init()?);
                Ok(())
            }
            // PMI_FD was closed at PMI_Finalize: its number may now be another file of the program.
            State::Finalized => Err(PmiError::new(
                PMI_ERR_INIT,
                "called after PMI_Finalize; PMI cannot be initialised twice in one process (PMI-1).",
            )),
        }
    })
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Initialized(initialized: *mut c_int) -> c_int {
    guard("PMI_Initialized", || {
        let ready = matches!(*STATE.lock().unwrap_or_else(PoisonError::into_inner), State::Ready(_));
        put_out("initialized", initialized, c_int::from(ready))
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn PMI_Finalize() -> c_int {
    guard("PMI_Finalize", || {
        let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        let State::Ready(s) = &mut *state else {
            return Err(PmiError::new(PMI_ERR_INIT, "called without a PMI_Init before it; nothing was done."));
        };
        let done = s.finalize();
        *state = State::Finalized;
        done
    })
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Get_size(size: *mut c_int) -> c_int {
    guard("PMI_Get_size", || {
        let n = with_session(|s| Ok(s.size))?;
        put_out("size", size, n)
    })
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Get_rank(rank: *mut c_int) -> c_int {
    guard("PMI_Get_rank", || {
        let r = with_session(|s| Ok(s.rank))?;
        put_out("rank", rank, r)
    })
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Get_universe_size(size: *mut c_int) -> c_int {
    guard("PMI_Get_universe_size", || {
        if size.is_null() {
            return Err(null("size"));
        }
        let n = with_session(Session::universe_size)?;
        put_out("size", size, n)
    })
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Get_appnum(appnum: *mut c_int) -> c_int {
    guard("PMI_Get_appnum", || {
        if appnum.is_null() {
            return Err(null("appnum"));
        }
        let n = with_session(Session::appnum)?;
        put_out("appnum", appnum, n)
    })
}

#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn PMI_Barrier() -> c_int {
    guard("PMI_Barrier", || with_session(Session::barrier))
}

/// Ends the whole job: says why on stderr, tells the launcher, and exits with `exit_code`.
/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Abort(exit_code: c_int, error_msg: *const c_char) -> c_int {
    let msg = c_str("error_msg", error_msg).unwrap_or("(no message)");
    let rank = std::env::var("PMI_RANK").unwrap_or_else(|_| "?".into());
    // A launcher that is told ends the job with the code. One that cannot be (after
    // PMI_Finalize, or no launcher's PMI_FD) sees only the exit status, which must not read as a
    // success: exit(256) gives 0, as exit(0) does.
    let fd = abort_fd();
    let failing = |told: bool| if told || exit_code & 0xff != 0 { exit_code } else { 1 };
    let shown = match fd {
        Some(_) => String::new(),
        None => format!(" (the launcher could not be told: after PMI_Finalize, or no PMI_FD; exit status {}, as an abort is no success)", failing(false)),
    };
    // Said, and the program's stdio buffers flushed, before the launcher is told: it ends the
    // job's ranks, this one too, at once (SIGTERM, as srun does), so nothing may wait for after.
    say(&format!("aar: rank {rank}: PMI_Abort({exit_code}): {msg}{shown}\n"));
    // SAFETY: fflush(NULL) flushes every open output stream of the C library.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    let status = failing(fd.is_some_and(|fd| send_abort(fd, exit_code)));
    // SAFETY: exit ends the process as the caller asked (C's exit, which runs the program's
    // atexit handlers, as MPICH's PMI_Abort does).
    unsafe { libc::exit(status) }
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_KVS_Get_my_name(kvsname: *mut c_char, length: c_int) -> c_int {
    guard("PMI_KVS_Get_my_name", || {
        let name = with_session(|s| Ok(s.kvsname.clone()))?;
        copy_out("kvsname", kvsname, length, &name)
    })
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_KVS_Get_name_length_max(length: *mut c_int) -> c_int {
    guard("PMI_KVS_Get_name_length_max", || {
        let n = with_session(|s| Ok(s.maxes.kvsname))?;
        put_out("length", length, n as c_int)
    })
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_KVS_Get_key_length_max(length: *mut c_int) -> c_int {
    guard("PMI_KVS_Get_key_length_max", || {
        let n = with_session(|s| Ok(s.maxes.key))?;
        put_out("length", length, n as c_int)
    })
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_KVS_Get_value_length_max(length: *mut c_int) -> c_int {
    guard("PMI_KVS_Get_value_length_max", || {
        let n = with_session(|s| Ok(s.maxes.value))?;
        put_out("length", length, n as c_int)
    })
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_KVS_Put(kvsname: *const c_char, key: *const c_char, value: *const c_char) -> c_int {
    guard("PMI_KVS_Put", || {
        let (kvsname, key, value) = (c_str("kvsname", kvsname)?, c_str("key", key)?, c_str("value", value)?);
        with_session(|s| s.put(kvsname, key, value))
    })
}

/// The wire protocol has no commit: puts are visible to all after the next barrier.
/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_KVS_Commit(kvsname: *const c_char) -> c_int {
    guard("PMI_KVS_Commit", || {
        c_str("kvsname", kvsname)?;
        with_session(|_| Ok(()))
    })
}

/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_KVS_Get(
    kvsname: *const c_char,
    key: *const c_char,
    value: *mut c_char,
    length: c_int,
) -> c_int {
    guard("PMI_KVS_Get", || {
        let (kvsname, key) = (c_str("kvsname", kvsname)?, c_str("key", key)?);
        if value.is_null() {
            return Err(null("value"));
        }
        let found = with_session(|s| s.get(kvsname, key))?.ok_or_else(|| {
            PmiError::new(
                PMI_FAIL,
                format!("the KVS {kvsname} has no key {key} (yet: puts of other ranks are seen after a PMI_Barrier)."),
            )
        })?;
        copy_out("value", value, length, &found)
    })
}

/// Cray's extension: every rank's `len` bytes from `in_buf`, in rank order, into `out_buf`
/// (`len` times the job size bytes).
/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Allgather(in_buf: *mut c_void, out_buf: *mut c_void, len: c_int) -> c_int {
    guard("PMI_Allgather", || {
        let len = usize::try_from(len)
            .map_err(|_| PmiError::new(PMI_ERR_INVALID_ARG, format!("len is {len}, less than 0; nothing was done.")))?;
        if in_buf.is_null() && len > 0 {
            return Err(null("in"));
        }
        if out_buf.is_null() && len > 0 {
            return Err(null("out"));
        }
        let input: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: in_buf is non-null and, by Cray's API, holds len readable bytes.
            unsafe { std::slice::from_raw_parts(in_buf.cast::<u8>(), len) }
        };
        let all = with_session(|s| s.allgather(input))?;
        if !all.is_empty() {
            // SAFETY: out_buf is non-null and, by Cray's API, holds len times the job size
            // writable bytes, which is all.len() (each rank's part has len bytes, checked).
            unsafe { std::ptr::copy_nonoverlapping(all.as_ptr(), out_buf.cast::<u8>(), all.len()) };
        }
        Ok(())
    })
}

/// Cray's extension: how many ranks share this rank's node.
/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Get_clique_size(size: *mut c_int) -> c_int {
    guard("PMI_Get_clique_size", || {
        if size.is_null() {
            return Err(null("size"));
        }
        let clique = with_session(Session::clique)?;
        put_out("size", size, clique.len() as c_int)
    })
}

/// Cray's extension: the ranks on this rank's node, in rank order, into `ranks` (`length`
/// entries, at least the clique size).
/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Get_clique_ranks(ranks: *mut c_int, length: c_int) -> c_int {
    guard("PMI_Get_clique_ranks", || {
        if ranks.is_null() {
            return Err(null("ranks"));
        }
        let clique = with_session(Session::clique)?;
        if length < 0 || (length as usize) < clique.len() {
            return Err(PmiError::new(
                PMI_ERR_INVALID_LENGTH,
                format!(
                    "length is {length}, the clique has {} rank{}; nothing was written.",
                    clique.len(),
                    if clique.len() == 1 { "" } else { "s" }
                ),
            ));
        }
        // SAFETY: ranks is non-null and holds `length` >= clique.len() writable ints (the
        // caller's promise by Cray's API).
        unsafe { std::ptr::copy_nonoverlapping(clique.as_ptr(), ranks, clique.len()) };
        Ok(())
    })
}

/// Cray's extension: the NID of the node `rank` runs on (Cray programs map ranks to nodes with it;
/// libaar.so places DMAPP PEs with it).
/// # Safety
/// pmi.h's contract: each pointer is NULL (refused) or points to what pmi.h says.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn PMI_Get_nid(rank: c_int, nid: *mut c_int) -> c_int {
    guard("PMI_Get_nid", || {
        if nid.is_null() {
            return Err(null("nid"));
        }
        let n = with_session(|s| s.nid(rank))?;
        put_out("nid", nid, n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A KVS value any rank may have put is quoted escaped and cut when it does not fit.
    #[test]
    fn a_value_that_does_not_fit_is_quoted_escaped_and_cut() {
        let mut buf = [0 as c_char; 4];
        let value = format!("\u{1b}[2J{}", "v".repeat(100));
        let e = copy_out("value", buf.as_mut_ptr(), 4, &value).unwrap_err().message;
        let shown = format!(r#""\u{{1b}}[2J{}…""#, "v".repeat(56));
        assert_eq!(e, format!("value holds 4 bytes, 105 are needed ({shown} and its NUL); nothing was written."));
    }
}
