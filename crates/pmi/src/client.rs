//! The client side of the simple PMI-1 wire protocol: one session per process, on the socket the
//! launcher passed in `PMI_FD`, behind one mutex (PMI calls may come from any thread).

use crate::mapping::ProcessMapping;
use crate::wire::{check_name, check_word, quoted, Message, MAX_LINE, PROCESS_MAPPING_KEY};
use std::io::Read;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// PMI return codes (pmi.h).
pub const PMI_SUCCESS: i32 = 0;
/// See [`PMI_SUCCESS`].
pub const PMI_FAIL: i32 = -1;
/// See [`PMI_SUCCESS`].
pub const PMI_ERR_INIT: i32 = 1;
/// See [`PMI_SUCCESS`].
pub const PMI_ERR_INVALID_ARG: i32 = 3;
/// See [`PMI_SUCCESS`].
pub const PMI_ERR_INVALID_KEY: i32 = 4;
/// See [`PMI_SUCCESS`].
pub const PMI_ERR_INVALID_VAL: i32 = 6;
/// See [`PMI_SUCCESS`].
pub const PMI_ERR_INVALID_LENGTH: i32 = 8;

/// A failed PMI call: the code it returns and what the message on stderr says.
#[derive(Debug)]
pub struct PmiError {
    pub code: i32,
    pub message: String,
}

impl PmiError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        PmiError { code, message: message.into() }
    }
}

type Result<T> = std::result::Result<T, PmiError>;

/// The limits the server announced (`cmd=maxes`).
#[derive(Debug, Clone, Copy)]
pub struct Maxes {
    pub kvsname: usize,
    pub key: usize,
    pub value: usize,
}

/// An initialised PMI session.
pub struct Session {
    sock: UnixStream,
    fd: RawFd,
    /// Bytes read past the last line.
    pending: Vec<u8>,
    /// The command whose answer came longer than [`MAX_LINE`]: the rest of that line is still on
    /// the way, and would be read as the next call's answer, every answer after it one call late,
    /// so no call is made any more.
    out_of_step: Option<String>,
    pub rank: i32,
    pub size: i32,
    pub kvsname: String,
    pub maxes: Maxes,
    allgather_seq: u64,
    /// The node of every rank, in rank order (`nodes`).
    nodes: Option<Vec<usize>>,
}

/// Not yet initialised, initialised, or finalised.
pub enum State {
    Uninit,
    Ready(Session),
    Finalized,
}

/// The process's one PMI state.
pub static STATE: Mutex<State> = Mutex::new(State::Uninit);

/// PMI_FD once initialised (-1 before): PMI_Abort writes to it even while another thread holds
/// [`STATE`] (blocked in a barrier, say).
pub static ABORT_FD: AtomicI32 = AtomicI32::new(-1);

/// PMI_Init took the environment's PMI_FD (and closed it, if it failed): from then on PMI_Abort
/// writes to [`ABORT_FD`] alone, never to a descriptor that may since hold another file.
static ENV_FD_TAKEN: AtomicBool = AtomicBool::new(false);

fn env_int(name: &str) -> Result<i64> {
    let v = std::env::var(name).map_err(|_| {
        PmiError::new(
            PMI_ERR_INIT,
            format!(
                "{name} is not set: this process was not started by a PMI launcher; nothing was initialised. \
                 Start it with aar run -n N PROGRAM (or mpiexec.hydra)."
            ),
        )
    })?;
    v.trim().parse().map_err(|_| {
        PmiError::new(PMI_ERR_INIT, format!("{name}={} is not a number; nothing was initialised.", quoted(&v)))
    })
}

impl Session {
    /// Connect on PMI_FD and run the protocol's start: init, maxes, KVS name.
    pub fn init() -> Result<Session> {
        let fd = env_int("PMI_FD")?;
        let rank = env_int("PMI_RANK")?;
        let size = env_int("PMI_SIZE")?;
        let fd = RawFd::try_from(fd).ok().filter(|&fd| fd >= 0).ok_or_else(|| {
            PmiError::new(PMI_ERR_INIT, format!("PMI_FD={fd} is not a file descriptor; nothing was initialised."))
        })?;
        // SAFETY: fcntl(F_GETFD) only queries the descriptor table; any fd value is allowed.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(PmiError::new(
                PMI_ERR_INIT,
                format!("PMI_FD={fd} is not an open file descriptor of this process; nothing was initialised."),
            ));
        }
        // The session owns the descriptor and closes it when it ends (a failed start too): a
        // PMI_FD left in the environment from another job may number the program's own file,
        // stdout say, which must be left alone.
        if !unix_socket(fd) {
            return Err(PmiError::new(
                PMI_ERR_INIT,
                format!(
                    "PMI_FD={fd} is open, but not on a Unix-domain socket as a PMI launcher gives (a PMI_FD left \
                     in the environment from another job?); nothing was initialised, and descriptor {fd} was \
                     left as it is. Start the program with aar run -n N PROGRAM (or mpiexec.hydra)."
                ),
            ));
        }
        if size < 1 || rank < 0 || rank >= size || size > i64::from(i32::MAX) {
            return Err(PmiError::new(
                PMI_ERR_INIT,
                format!("PMI_RANK={rank} and PMI_SIZE={size} do not name a rank of a job; nothing was initialised."),
            ));
        }
        ENV_FD_TAKEN.store(true, Ordering::SeqCst);
        // SAFETY: the launcher gave this process the descriptor for PMI alone; it is open (checked
        // above) and from here on owned by the session (closed at PMI_Finalize).
        let sock = unsafe { UnixStream::from_raw_fd(fd) };
        let mut s = Session {
            sock,
            fd,
            pending: Vec::new(),
            out_of_step: None,
            rank: rank as i32,
            size: size as i32,
            kvsname: String::new(),
            maxes: Maxes { kvsname: 0, key: 0, value: 0 },
            allgather_seq: 0,
            nodes: None,
        };
        s.call(Message::new("init").with("pmi_version", 1).with("pmi_subversion", 1), "response_to_init")?;
        let m = s.call(Message::new("get_maxes"), "maxes")?;
        let max = |k: &str| m.get_int(k).filter(|&v| v > 1).map(|v| v as usize);
        s.maxes = match (max("kvsname_max"), max("keylen_max"), max("vallen_max")) {
            (Some(kvsname), Some(key), Some(value)) => Maxes { kvsname, key, value },
            _ => {
                return Err(PmiError::new(
                    PMI_FAIL,
                    format!("the launcher's limits {} are incomplete", quoted(&m.to_string())),
                ))
            }
        };
        let m = s.call(Message::new("get_my_kvsname"), "my_kvsname")?;
        s.kvsname = m.get("kvsname").unwrap_or_default().to_owned();
        ABORT_FD.store(fd, Ordering::SeqCst);
        Ok(s)
    }

    /// Send one message and read the answer, which must be `expect` with rc 0 if it has an rc.
    pub fn call(&mut self, msg: Message, expect: &str) -> Result<Message> {
        let answer = self.exchange(&msg, expect)?;
        match answer.get_int("rc") {
            Some(rc) if rc != 0 => Err(launcher_refused(&msg, &answer)),
            _ => Ok(answer),
        }
    }

    /// Send one message and read the answer, which must be `expect`.
    fn exchange(&mut self, msg: &Message, expect: &str) -> Result<Message> {
        let fd = self.fd;
        if let Some(earlier) = &self.out_of_step {
            return Err(PmiError::new(
                PMI_FAIL,
                format!(
                    "cmd={} was not sent: the launcher's answer to cmd={earlier} was longer than {MAX_LINE} bytes, so \
                     what it sends now cannot be matched to calls (is PMI_FD={fd} the launcher's PMI socket?)",
                    msg.cmd
                ),
            ));
        }
        let lost = |e: std::io::Error| {
            PmiError::new(PMI_FAIL, format!("the PMI connection (PMI_FD={fd}) failed during cmd={}: {e}", msg.cmd))
        };
        send_line(fd, &msg.to_line()).map_err(lost)?;
        let line = self.read_line().map_err(lost)?.ok_or_else(|| {
            let start = String::from_utf8_lossy(&self.pending).into_owned();
            // Dropped: what follows it is no answer either, and must not be read as the next one.
            self.pending = Vec::new();
            self.out_of_step = Some(msg.cmd.clone());
            PmiError::new(
                PMI_FAIL,
                format!(
                    "the launcher answered cmd={} with more than {MAX_LINE} bytes without a newline ({}): not \
                     PMI; is PMI_FD={fd} the launcher's PMI socket?",
                    msg.cmd,
                    quoted(&start)
                ),
            )
        })?;
        let answer: Message = line.parse().map_err(|e| {
            PmiError::new(PMI_FAIL, format!("the launcher answered cmd={} with a line that is not PMI: {e}", msg.cmd))
        })?;
        if answer.cmd != expect {
            return Err(PmiError::new(
                PMI_FAIL,
                format!("the launcher answered cmd={} with {}, not cmd={expect}", msg.cmd, quoted(&answer.to_string())),
            ));
        }
        Ok(answer)
    }

    /// The next line; `None` once [`MAX_LINE`] bytes came without a newline (they stay in
    /// `pending`), not to buffer a launcher that never ends its line without end.
    fn read_line(&mut self) -> std::io::Result<Option<String>> {
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
            }
            if self.pending.len() > MAX_LINE {
                return Ok(None);
            }
            let mut buf = [0u8; 4096];
            match self.sock.read(&mut buf) {
                Ok(0) => return Err(std::io::Error::other("the launcher closed the connection")),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    pub fn barrier(&mut self) -> Result<()> {
        self.call(Message::new("barrier_in"), "barrier_out").map(drop)
    }

    pub fn finalize(&mut self) -> Result<()> {
        ABORT_FD.store(-1, Ordering::SeqCst);
        self.call(Message::new("finalize"), "finalize_ack").map(drop)
    }

    pub fn universe_size(&mut self) -> Result<i32> {
        let m = self.call(Message::new("get_universe_size"), "universe_size")?;
        int_field(&m, "size")
    }

    pub fn appnum(&mut self) -> Result<i32> {
        let m = self.call(Message::new("get_appnum"), "appnum")?;
        int_field(&m, "appnum")
    }

    pub fn put(&mut self, kvsname: &str, key: &str, value: &str) -> Result<()> {
        check_name("the KVS name", kvsname, self.maxes.kvsname - 1).map_err(|e| refused(PMI_ERR_INVALID_ARG, e))?;
        check_name("the key", key, self.maxes.key - 1).map_err(|e| refused(PMI_ERR_INVALID_KEY, e))?;
        check_word("the value", value, self.maxes.value - 1).map_err(|e| refused(PMI_ERR_INVALID_VAL, e))?;
        let msg = Message::new("put").with("kvsname", kvsname).with("key", key).with("value", value);
        self.call(msg, "put_result").map(drop)
    }

    /// The value of `key`; `Ok(None)` when the KVS has no such key.
    pub fn get(&mut self, kvsname: &str, key: &str) -> Result<Option<String>> {
        check_name("the KVS name", kvsname, self.maxes.kvsname - 1).map_err(|e| refused(PMI_ERR_INVALID_ARG, e))?;
        check_name("the key", key, self.maxes.key - 1).map_err(|e| refused(PMI_ERR_INVALID_KEY, e))?;
        let msg = Message::new("get").with("kvsname", kvsname).with("key", key);
        let m = self.exchange(&msg, "get_result")?;
        match m.get_int("rc") {
            Some(0) | None => Ok(Some(m.get("value").unwrap_or_default().to_owned())),
            // The protocol's "no such key", as hydra and aar run say it.
            Some(_) if m.get("msg") == Some(&format!("key_{key}_not_found")) => Ok(None),
            // Any other refusal (a KVS name not the job's, say) is what the launcher said, not a
            // missing key.
            Some(_) => Err(launcher_refused(&msg, &m)),
        }
    }

    /// Cray's PMI_Allgather: every rank's `input`, in rank order. Each rank puts its bytes,
    /// hex-encoded in chunks that fit the value limit, under keys that carry a sequence number
    /// (every rank calls the collective in the same order), its first chunk led by its length
    /// (`LEN:HEX`, put also for no bytes), then all meet in a barrier. A rank that gave another
    /// length than this one fails the call, named with both lengths: the caller's `out` holds
    /// this rank's length times the job size, so no other could be copied whole.
    pub fn allgather(&mut self, input: &[u8]) -> Result<Vec<u8>> {
        let seq = self.allgather_seq;
        self.allgather_seq += 1;
        // Room in every chunk for the length and its colon (at most 20 + 1 characters).
        let per_chunk = (self.maxes.value.saturating_sub(1 + 21) / 2).max(1);
        let key = |rank: i32, chunk: usize| crate::wire::allgather_key(seq, rank, chunk);
        let kvs = self.kvsname.clone();
        let mut parts: Vec<&[u8]> = input.chunks(per_chunk).collect();
        if parts.is_empty() {
            parts.push(&[]);
        }
        for (i, part) in parts.iter().enumerate() {
            let value = if i == 0 { format!("{}:{}", input.len(), hex(part)) } else { hex(part) };
            self.put(&kvs, &key(self.rank, i), &value)?;
        }
        self.barrier()?;
        let part_error = |rank: i32, what: &str| {
            PmiError::new(
                PMI_FAIL,
                format!("rank {rank}'s part of PMI_Allgather number {seq} {what}; nothing was written."),
            )
        };
        let mut out = Vec::with_capacity(input.len() * self.size as usize);
        for rank in 0..self.size {
            let start = out.len();
            for i in 0..parts.len() {
                let value = self.get(&kvs, &key(rank, i))?.ok_or_else(|| part_error(rank, "is missing"))?;
                let hex_part = if i == 0 {
                    let (len, rest) = value.split_once(':').ok_or_else(|| part_error(rank, "has no length"))?;
                    let len: usize = len.parse().map_err(|_| part_error(rank, "has no length"))?;
                    if len != input.len() {
                        return Err(PmiError::new(
                            PMI_FAIL,
                            format!(
                                "rank {rank} gave {len} bytes to PMI_Allgather number {seq}, this rank {}: every rank \
                                 must give the same length; nothing was written.",
                                input.len()
                            ),
                        ));
                    }
                    rest
                } else {
                    value.as_str()
                };
                unhex(hex_part, &mut out).ok_or_else(|| part_error(rank, "is not hex"))?;
            }
            if out.len() - start != input.len() {
                return Err(part_error(
                    rank,
                    &format!("holds {} bytes, not the {} it says", out.len() - start, input.len()),
                ));
            }
        }
        Ok(out)
    }

    /// The node of every rank, in rank order, from the launcher's `PMI_process_mapping`; without
    /// one, every rank on a node of its own (said once on stderr).
    fn nodes(&mut self) -> Result<&[usize]> {
        if self.nodes.is_none() {
            let kvs = self.kvsname.clone();
            let value = self.get(&kvs, PROCESS_MAPPING_KEY)?;
            let size = self.size as usize;
            let nodes = match value.as_deref().map(str::parse::<ProcessMapping>) {
                Some(Ok(m)) => m.nodes(size),
                other => {
                    let why = match other {
                        Some(Err(e)) => e,
                        _ => format!("the launcher publishes no {PROCESS_MAPPING_KEY}"),
                    };
                    crate::exports::say(&format!(
                        "aar: PMI: {why}; every rank is taken to be alone on its node (PMI_Get_clique_size, \
                         PMI_Get_nid).\n"
                    ));
                    (0..size).collect()
                }
            };
            self.nodes = Some(nodes);
        }
        Ok(self.nodes.as_deref().unwrap_or_default())
    }

    /// The ranks on this rank's node, in rank order.
    pub fn clique(&mut self) -> Result<Vec<i32>> {
        let me = self.rank as usize;
        Ok(crate::mapping::clique(self.nodes()?, me).into_iter().map(|r| r as i32).collect())
    }

    /// Cray's NID of the node `rank` runs on: node n is NID `FIRST_NIC_ADDR + n`, the NIC address
    /// `aar run` gives its ranks in `PMI_GNI_LOC_ADDR` (libaar.so checks that a rank's NID is
    /// its NIC address before it places DMAPP PEs by NID).
    pub fn nid(&mut self, rank: i32) -> Result<i32> {
        let size = self.size;
        let nodes = self.nodes()?;
        let node = usize::try_from(rank).ok().and_then(|r| nodes.get(r)).ok_or_else(|| {
            PmiError::new(
                PMI_ERR_INVALID_ARG,
                format!("rank {rank} is not a rank of this job of {size}; nothing was written."),
            )
        })?;
        u32::try_from(*node)
            .ok()
            .map(|n| aar_abi::FIRST_NIC_ADDR.wrapping_add(n))
            .and_then(|nid| i32::try_from(nid).ok())
            .ok_or_else(|| {
                PmiError::new(
                    PMI_FAIL,
                    format!("node {node} of rank {rank} has no NID that fits an int; nothing was written."),
                )
            })
    }
}

/// The launcher's answer to `msg` has a non-zero rc: its reason (`msg=`), quoted.
fn launcher_refused(msg: &Message, answer: &Message) -> PmiError {
    PmiError::new(
        PMI_FAIL,
        format!(
            "the launcher refused {}: {}",
            quoted(&msg.to_string()),
            answer.get("msg").map_or("no reason given".into(), quoted)
        ),
    )
}

/// An argument the wire protocol cannot carry.
fn refused(code: i32, why: String) -> PmiError {
    PmiError::new(code, format!("{why}; nothing was sent."))
}

fn int_field(m: &Message, key: &str) -> Result<i32> {
    m.get_int(key).and_then(|v| i32::try_from(v).ok()).ok_or_else(|| {
        PmiError::new(PMI_FAIL, format!("the launcher's answer {} has no number {key}=", quoted(&m.to_string())))
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str, out: &mut Vec<u8>) -> Option<()> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    for pair in s.as_bytes().chunks(2) {
        out.push(u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?);
    }
    Some(())
}

/// Where PMI_Abort tells the launcher, however the session stands (another thread may be blocked
/// in a barrier while holding [`STATE`]): PMI_FD once initialised; before PMI_Init the
/// environment's PMI_FD (the simple PMI protocol takes an abort at any time, so the launcher
/// reports an abort, not a rank that exited); none after PMI_Finalize, which closed the
/// connection.
pub fn abort_fd() -> Option<RawFd> {
    match ABORT_FD.load(Ordering::SeqCst) {
        fd if fd >= 0 => Some(fd),
        _ if !ENV_FD_TAKEN.load(Ordering::SeqCst) => launcher_socket(),
        _ => None,
    }
}

/// Held while one line is written to the launcher's socket (never while an answer is awaited,
/// so a thread blocked in PMI_Barrier does not hold it): PMI_Abort's line, from another thread,
/// never lands inside the line of a call another thread is sending ([`send_abort`]).
static SENDING: Mutex<()> = Mutex::new(());

/// How long PMI_Abort waits for a line another thread is writing ([`send_abort`]).
const ABORT_SEND_WAIT: Duration = Duration::from_secs(1);

/// Write one whole line to the launcher's socket `fd`, holding [`SENDING`].
fn send_line(fd: RawFd, line: &str) -> std::io::Result<()> {
    let _sending = SENDING.lock().unwrap_or_else(PoisonError::into_inner);
    send_all(fd, line.as_bytes())
}

/// Tell the launcher on `fd` ([`abort_fd`]) that the job is to end with `code`; whether it was
/// told. Another thread's line is let finish first ([`SENDING`]), but for at most
/// [`ABORT_SEND_WAIT`]: a write that takes longer waits for a launcher that does not read (this
/// one's would block too), or is this very thread's, interrupted by a signal handler that called
/// PMI_Abort. The abort is then not sent (sent anyway, it would land inside that line, where the
/// launcher reads no abort, only a line that is not PMI), and PMI_Abort still ends the process,
/// with an exit status that is no success.
pub fn send_abort(fd: RawFd, code: i32) -> bool {
    let started = Instant::now();
    let _sending = loop {
        match SENDING.try_lock() {
            Ok(guard) => break guard,
            Err(TryLockError::Poisoned(p)) => break p.into_inner(),
            Err(TryLockError::WouldBlock) if started.elapsed() < ABORT_SEND_WAIT => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(TryLockError::WouldBlock) => return false,
        }
    };
    send_all(fd, Message::new("abort").with("exitcode", code).to_line().as_bytes()).is_ok()
}

/// Write all of `bytes` to the launcher's socket `fd`, with MSG_NOSIGNAL: a launcher that closed
/// the connection (or is gone) gives EPIPE, an error the call reports, not a SIGPIPE that would
/// kill the host program (whose SIGPIPE is most often the default, which ends it).
fn send_all(fd: RawFd, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: fd is a descriptor of this process (send fails on any other: ENOTSOCK, EBADF);
        // `bytes` is a live buffer of the given length.
        let sent = unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
        match usize::try_from(sent) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(_) => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// Before PMI_Init: the environment's PMI_FD, when it is a Unix-domain socket of this process
/// (what a launcher gives), not a number the program has since opened a file on.
fn launcher_socket() -> Option<RawFd> {
    let fd: RawFd = std::env::var("PMI_FD").ok()?.trim().parse().ok().filter(|&fd| fd >= 0)?;
    unix_socket(fd).then_some(fd)
}

/// True when `fd` is a Unix-domain socket of this process, as the PMI_FD a launcher gives is.
fn unix_socket(fd: RawFd) -> bool {
    let mut domain: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes to the live int `domain`; any fd value is
    // allowed (one that is no socket fails with ENOTSOCK, a closed one with EBADF).
    let rc = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_DOMAIN, (&raw mut domain).cast(), &mut len) };
    rc == 0 && domain == libc::AF_UNIX
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn hex_round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        let mut back = Vec::new();
        unhex(&hex(&bytes), &mut back).unwrap();
        assert_eq!(back, bytes);
        assert!(unhex("abc", &mut back).is_none() && unhex("zz", &mut back).is_none());
    }

    /// A session on one end of a socket pair; the test is the launcher at the other.
    fn session() -> (Session, UnixStream) {
        let (sock, launcher) = UnixStream::pair().unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
        let maxes = Maxes { kvsname: 256, key: 64, value: 1024 };
        let s = Session {
            sock,
            fd,
            pending: Vec::new(),
            out_of_step: None,
            rank: 0,
            size: 1,
            kvsname: "kvs".into(),
            maxes,
            allgather_seq: 0,
            nodes: None,
        };
        (s, launcher)
    }

    /// What a launcher answers is quoted in the error escaped and cut: it may be anything.
    #[test]
    fn a_launchers_answer_is_quoted_escaped_and_cut() {
        let (mut s, mut launcher) = session();
        let long = "x".repeat(5000);
        let answers = format!(
            "cmd=put_result rc=-1 msg=\u{1b}[2Jno\rroom\ncmd=maxes\u{1b}]0;title\u{7}\n\u{1b}[31m{long}\n\
             cmd=universe_size size=\u{1b}[2J\n"
        );
        launcher.write_all(answers.as_bytes()).unwrap();
        let e = s.put("kvs", "k", "v").unwrap_err().message;
        assert_eq!(e, r#"the launcher refused "cmd=put kvsname=kvs key=k value=v": "\u{1b}[2Jno\rroom""#);
        let e = s.barrier().unwrap_err().message;
        assert_eq!(
            e,
            r#"the launcher answered cmd=barrier_in with "cmd=maxes\u{1b}]0;title\u{7}", not cmd=barrier_out"#
        );
        let e = s.finalize().unwrap_err().message;
        assert_eq!(
            e,
            format!(
                r#"the launcher answered cmd=finalize with a line that is not PMI: "\u{{1b}}[31m{}…" where cmd=NAME must come first"#,
                "x".repeat(55)
            )
        );
        let e = s.universe_size().unwrap_err().message;
        assert_eq!(e, r#"the launcher's answer "cmd=universe_size size=\u{1b}[2J" has no number size="#);
    }

    /// The refused request is quoted as the answer is: a value may be 1 KiB and hold control
    /// characters (the wire refuses only spaces and newlines).
    #[test]
    fn a_refused_request_is_quoted_escaped_and_cut() {
        let (mut s, mut launcher) = session();
        launcher.write_all(b"cmd=put_result rc=-1 msg=duplicate_key_k\n").unwrap();
        let value = format!("\u{1b}[2J{}", "v".repeat(1000));
        let e = s.put("kvs", "k", &value).unwrap_err().message;
        assert_eq!(
            e,
            format!(
                r#"the launcher refused "cmd=put kvsname=kvs key=k value=\u{{1b}}[2J{}…": "duplicate_key_k""#,
                "v".repeat(24)
            )
        );
    }

    /// A get the launcher refuses for another reason than a missing key (a KVS name not the
    /// job's) fails with the launcher's reason; only `key_K_not_found` (hydra's and aar run's
    /// words) is "no such key".
    #[test]
    fn a_get_refused_for_a_wrong_kvs_name_says_what_the_launcher_said() {
        let (mut s, mut launcher) = session();
        launcher
            .write_all(
                b"cmd=get_result rc=-1 msg=no_KVS_other:_this_job_has_KVS_kvs\n\
                  cmd=get_result rc=-1 msg=key_k_not_found value=unknown\n\
                  cmd=get_result rc=-1\n",
            )
            .unwrap();
        let e = s.get("other", "k").unwrap_err();
        assert_eq!(e.code, PMI_FAIL);
        assert_eq!(
            e.message,
            r#"the launcher refused "cmd=get kvsname=other key=k": "no_KVS_other:_this_job_has_KVS_kvs""#
        );
        assert_eq!(s.get("kvs", "k").unwrap(), None);
        assert_eq!(
            s.get("kvs", "k").unwrap_err().message,
            r#"the launcher refused "cmd=get kvsname=kvs key=k": no reason given"#
        );
    }

    /// A launcher that sends bytes and never a newline fails the call once [`MAX_LINE`] came,
    /// with the start of what it sent, and the session does not keep them. (The launcher then
    /// shuts its side down: a session that read on would fail otherwise, not hang the test.)
    #[test]
    fn a_launchers_line_without_end_fails_the_call_at_max_line() {
        let (mut s, mut launcher) = session();
        // Within what the socket holds: written before the call.
        launcher.write_all(&vec![b'y'; MAX_LINE + 20_000]).unwrap();
        launcher.shutdown(std::net::Shutdown::Write).unwrap();
        let e = s.barrier().unwrap_err();
        assert_eq!(e.code, PMI_FAIL);
        assert_eq!(
            e.message,
            format!(
                "the launcher answered cmd=barrier_in with more than {MAX_LINE} bytes without a newline (\"{}…\"): \
                 not PMI; is PMI_FD={} the launcher's PMI socket?",
                "y".repeat(crate::wire::QUOTED_CHARS),
                s.fd
            )
        );
        assert!(s.pending.is_empty(), "{} bytes held", s.pending.len());
    }

    /// After an answer longer than [`MAX_LINE`], the rest of its line is still on the way: no
    /// later call is sent, rather than each taking the line meant for the call before it.
    #[test]
    fn no_call_is_made_after_an_answer_longer_than_max_line() {
        let (mut s, mut launcher) = session();
        launcher.write_all(&vec![b'y'; MAX_LINE + 20_000]).unwrap();
        launcher.write_all(b"\ncmd=barrier_out\n").unwrap();
        assert!(s.barrier().unwrap_err().message.contains("without a newline"));
        let e = s.barrier().unwrap_err();
        assert_eq!(e.code, PMI_FAIL);
        assert_eq!(
            e.message,
            format!(
                "cmd=barrier_in was not sent: the launcher's answer to cmd=barrier_in was longer than {MAX_LINE} \
                 bytes, so what it sends now cannot be matched to calls (is PMI_FD={} the launcher's PMI socket?)",
                s.fd
            )
        );
        // Nothing more was written to the launcher than the first call.
        launcher.set_nonblocking(true).unwrap();
        let mut sent = Vec::new();
        let _ = launcher.read_to_end(&mut sent);
        assert_eq!(String::from_utf8_lossy(&sent), "cmd=barrier_in\n");
    }
    /// PMI_Abort from one thread while another thread's call sends a line the socket takes only in
    /// parts (a launcher that announced long values; a socket buffer smaller than the line): the
    /// abort comes whole after that line, never inside it, where the launcher would read neither.
    #[test]
    fn an_abort_never_lands_inside_another_threads_line() {
        let (mut s, mut launcher) = session();
        s.maxes.value = 60_000;
        let fd = s.fd;
        let small: libc::c_int = 4096;
        // SAFETY: setsockopt reads the live int `small` of the given size; fd is the session's
        // open socket.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&raw const small).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
        let value = "v".repeat(50_000);
        let put_line = format!("cmd=put kvsname=kvs key=k value={value}\n");
        let put = std::thread::spawn(move || s.put("kvs", "k", &value).map_err(|e| e.message));
        // The put has begun: its first bytes wait, the rest cannot follow until they are read.
        let mut p = libc::pollfd { fd: std::os::fd::AsRawFd::as_raw_fd(&launcher), events: libc::POLLIN, revents: 0 };
        // SAFETY: a blocking poll of one live pollfd.
        assert_eq!(unsafe { libc::poll(&mut p, 1, -1) }, 1);
        let mut abort = Some(std::thread::spawn(move || send_abort(fd, 7)));
        launcher.set_nonblocking(true).unwrap();
        let mut got = Vec::new();
        let mut told = None;
        loop {
            let mut buf = [0u8; 4096];
            match launcher.read(&mut buf) {
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => panic!("{e}"),
            }
            if let Some(t) = abort.take_if(|t| t.is_finished()) {
                told = Some(t.join().unwrap());
            }
            let lines = got.iter().filter(|&&b| b == b'\n').count();
            if told.is_some_and(|t| lines > usize::from(t)) {
                break;
            }
        }
        std::io::Write::write_all(&mut launcher, b"cmd=put_result rc=0\n").unwrap();
        assert_eq!(put.join().unwrap(), Ok(()));
        let abort_line = if told == Some(true) { "cmd=abort exitcode=7\n" } else { "" };
        let got = String::from_utf8(got).unwrap();
        assert!(got == format!("{put_line}{abort_line}"), "the launcher read {:?}", got.replace(&"v".repeat(100), "…"));
    }
}
