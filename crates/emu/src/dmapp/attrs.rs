//! RMA attributes, per thread, as DMAPP keeps them: `dmapp_init` sets the job's defaults, which a
//! thread uses until it calls `dmapp_set_rma_attrs[_ext]`; from then on the thread has its own.
//! Data calls follow the routing of the calling thread (PUT routing for PUTs and every AMO, GET
//! routing for GETs) at the moment of the call.
//!
//! `dmapp_rma_attrs_t` is 12 bytes with the routing at bytes 8 and 9 (a DMAPP fact);
//! `dmapp_rma_attrs_ext_t` is the emulator's 48 bytes, in one of two layouts ([`AttrsLayout`],
//! `AAR_EMU_DMAPP_LAYOUT`): the one of cabi/dmapp.h, and `queue-first`, which moves the routing
//! bytes to 16 and 17 and puts a `uint64_t queue_flags` at 8–15, so that a caller who assumes
//! bytes 8 and 9 does not read back what it wrote.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

use aar_abi::dmapp::*;

use super::job::{self, Job};
use crate::post_log::{self, Record};
use crate::settings::{self, AttrsLayout};

/// Bytes of the emulator's `dmapp_rma_attrs_ext_t`, in either layout.
pub const EXT_BYTES: usize = 48;
/// Bytes of `dmapp_rma_attrs_t`.
pub const BASE_BYTES: usize = size_of::<DmappRmaAttrs>();

/// The `queue_flags` bits the emulator knows (both set by default); setting attributes clears the
/// others. In the `queue-first` layout they put the value 2 (ADAPTIVE) in bytes 8 and 9.
pub const QUEUE_FLAGS_KNOWN: u64 = 0x0202;

/// One thread's attributes, whatever the layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attrs {
    pub max_outstanding_nb: u32,
    pub offload_threshold: u32,
    /// Routing values (enumerators of `RoutingTable::ASSUMED`), by `Direction::index`.
    pub routing: [u8; 2],
    pub max_concurrency: u8,
    pub pi_ordering: DmappPiRegType,
    pub queue_depth: u32,
    pub queue_nelems: u32,
    pub queue_flags: u64,
}

/// The routing value of a name in the emulator's table (all seven have one).
const fn value(r: Routing) -> u8 {
    match RoutingTable::ASSUMED.value(r) {
        Some(v) => v,
        None => panic!("the emulator's table has every routing name"),
    }
}

impl Attrs {
    /// Aries' defaults: ADAPTIVE both ways.
    pub const DEFAULT: Attrs = Attrs {
        max_outstanding_nb: DMAPP_DEF_OUTSTANDING_NB,
        offload_threshold: DMAPP_OFFLOAD_THRESHOLD,
        routing: [value(Routing::Adaptive); 2],
        max_concurrency: 1,
        pi_ordering: DMAPP_PI_ORDERING_DEFAULT,
        queue_depth: 0,
        queue_nelems: 0,
        queue_flags: QUEUE_FLAGS_KNOWN,
    };

    pub fn routing(&self, direction: Direction) -> u8 {
        self.routing[direction.index()]
    }

    /// These attributes with the fields of a `dmapp_rma_attrs_t` replaced.
    fn with_base(self, b: &[u8; BASE_BYTES]) -> Attrs {
        Attrs {
            max_outstanding_nb: u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            offload_threshold: u32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
            routing: [b[PUT_ROUTING_OFFSET], b[GET_ROUTING_OFFSET]],
            max_concurrency: b[10],
            ..self
        }
    }

    /// As a `dmapp_rma_attrs_t` (its padding byte zero).
    pub fn base_bytes(&self) -> [u8; BASE_BYTES] {
        let mut b = [0; BASE_BYTES];
        b[0..4].copy_from_slice(&self.max_outstanding_nb.to_ne_bytes());
        b[4..8].copy_from_slice(&self.offload_threshold.to_ne_bytes());
        b[PUT_ROUTING_OFFSET] = self.routing[Direction::Put.index()];
        b[GET_ROUTING_OFFSET] = self.routing[Direction::Get.index()];
        b[10] = self.max_concurrency;
        b
    }

    /// What DMAPP accepts: the known queue flags are kept, anything else out of range is
    /// DMAPP_RC_INVALID_PARAM.
    fn checked(self) -> Result<Attrs, DmappReturn> {
        let valid = (DMAPP_MIN_OUTSTANDING_NB..=DMAPP_MAX_OUTSTANDING_NB).contains(&self.max_outstanding_nb)
            && self.routing.iter().all(|&v| RoutingTable::ASSUMED.routing(v).is_some())
            && self.max_concurrency >= 1
            && self.pi_ordering <= DMAPP_PI_ORDERING_RELAXED;
        if !valid {
            return Err(DMAPP_RC_INVALID_PARAM);
        }
        Ok(Attrs { queue_flags: self.queue_flags & QUEUE_FLAGS_KNOWN, ..self })
    }
}

/// Where each field after the first 8 bytes (two `uint32_t`s in both layouts) lies.
struct Offsets {
    put: usize,
    get: usize,
    max_concurrency: usize,
    pi_ordering: usize,
    queue_depth: usize,
    queue_nelems: usize,
    queue_flags: usize,
}

impl AttrsLayout {
    fn offsets(self) -> Offsets {
        match self {
            AttrsLayout::Standard => Offsets {
                put: PUT_ROUTING_OFFSET,
                get: GET_ROUTING_OFFSET,
                max_concurrency: 10,
                pi_ordering: 11,
                queue_depth: 12,
                queue_nelems: 16,
                queue_flags: 24,
            },
            AttrsLayout::QueueFirst => Offsets {
                queue_flags: 8,
                put: 16,
                get: 17,
                max_concurrency: 18,
                pi_ordering: 19,
                queue_depth: 20,
                queue_nelems: 24,
            },
        }
    }

    pub fn encode(self, a: &Attrs) -> [u8; EXT_BYTES] {
        let o = self.offsets();
        let mut b = [0; EXT_BYTES];
        b[0..4].copy_from_slice(&a.max_outstanding_nb.to_ne_bytes());
        b[4..8].copy_from_slice(&a.offload_threshold.to_ne_bytes());
        b[o.put] = a.routing[Direction::Put.index()];
        b[o.get] = a.routing[Direction::Get.index()];
        b[o.max_concurrency] = a.max_concurrency;
        b[o.pi_ordering] = a.pi_ordering;
        b[o.queue_depth..o.queue_depth + 4].copy_from_slice(&a.queue_depth.to_ne_bytes());
        b[o.queue_nelems..o.queue_nelems + 4].copy_from_slice(&a.queue_nelems.to_ne_bytes());
        b[o.queue_flags..o.queue_flags + 8].copy_from_slice(&a.queue_flags.to_ne_bytes());
        b
    }

    pub fn decode(self, b: &[u8; EXT_BYTES]) -> Attrs {
        let o = self.offsets();
        let u32_at = |at: usize| u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let mut flags = [0; 8];
        flags.copy_from_slice(&b[o.queue_flags..o.queue_flags + 8]);
        Attrs {
            max_outstanding_nb: u32_at(0),
            offload_threshold: u32_at(4),
            routing: [b[o.put], b[o.get]],
            max_concurrency: b[o.max_concurrency],
            pi_ordering: b[o.pi_ordering],
            queue_depth: u32_at(o.queue_depth),
            queue_nelems: u32_at(o.queue_nelems),
            queue_flags: u64::from_ne_bytes(flags),
        }
    }
}

/// The process's layout, read once.
pub fn layout() -> AttrsLayout {
    static LAYOUT: OnceLock<AttrsLayout> = OnceLock::new();
    *LAYOUT.get_or_init(settings::dmapp_layout)
}

/// Attributes as a caller passed them to an init or set call.
pub enum Requested {
    Base([u8; BASE_BYTES]),
    Ext([u8; EXT_BYTES]),
}

impl Requested {
    /// The attributes asked for; a `dmapp_rma_attrs_t` leaves the other fields as in `current`.
    pub fn attrs(&self, current: Attrs) -> Attrs {
        match self {
            Requested::Base(b) => current.with_base(b),
            Requested::Ext(b) => layout().decode(b),
        }
    }
}

/// A thread's own attributes, valid for the job of that generation only.
#[derive(Clone, Copy)]
struct Own {
    generation: u64,
    attrs: Attrs,
}

thread_local! {
    static OWN: Cell<Option<Own>> = const { Cell::new(None) };
    static SETS_HERE: Cell<u64> = const { Cell::new(0) };
}

static SETS: AtomicU64 = AtomicU64::new(0);

/// The calling thread's attributes in `job`.
pub fn in_force(job: &Job) -> Attrs {
    match OWN.get() {
        Some(own) if own.generation == job.generation => own.attrs,
        _ => job.defaults,
    }
}

/// `dmapp_set_rma_attrs[_ext]` calls made by the calling thread, whatever they returned.
pub fn sets_here() -> u64 {
    SETS_HERE.get()
}

/// `dmapp_set_rma_attrs[_ext]` calls made by every thread.
pub fn sets() -> u64 {
    SETS.load(Ordering::Relaxed)
}

/// The Linux thread id, as the post log names threads.
pub fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Logs one init or set call: the routing it asked for (None: no attributes were given).
pub fn log_request(call: &'static str, asked: Option<Attrs>, rc: DmappReturn) {
    if post_log::enabled() {
        post_log::record(&Record::DmappAttrs {
            call,
            thread: thread_id(),
            put_routing: asked.map(|a| a.routing(Direction::Put)),
            get_routing: asked.map(|a| a.routing(Direction::Get)),
            rc,
        });
    }
}

/// The calls of one kind still to be answered as usual before the busy ones, and the busy ones
/// still to answer ([`u32::MAX`]: every one).
struct Busy([AtomicU32; 2]);

impl Busy {
    fn new(b: settings::BusyCount) -> Self {
        Busy([AtomicU32::new(b.after), AtomicU32::new(b.count)])
    }

    /// Whether this call is one to answer busy (counting it).
    fn take(&self) -> bool {
        let [after, count] = &self.0;
        let take = |n| match n {
            0 => None,
            u32::MAX => Some(n),
            n => Some(n - 1),
        };
        if after.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok() {
            return false;
        }
        count.fetch_update(Ordering::Relaxed, Ordering::Relaxed, take).is_ok()
    }
}

/// The set calls to answer busy, from `AAR_EMU_DMAPP_SET_BUSY` until [`set_busy`].
fn sets_busy() -> &'static Busy {
    static SETS_BUSY: OnceLock<Busy> = OnceLock::new();
    SETS_BUSY.get_or_init(|| Busy::new(settings::dmapp_set_busy()))
}

/// The get calls to answer busy, from `AAR_EMU_DMAPP_GET_BUSY`.
fn gets_busy() -> &'static Busy {
    static GETS_BUSY: OnceLock<Busy> = OnceLock::new();
    GETS_BUSY.get_or_init(|| Busy::new(settings::dmapp_get_busy()))
}

/// The next `n` set calls (every one from now on: [`u32::MAX`]) answer `DMAPP_RC_BUSY`.
pub fn set_busy(n: u32) {
    let [after, count] = &sets_busy().0;
    after.store(0, Ordering::Relaxed);
    count.store(n, Ordering::Relaxed);
}

/// `dmapp_set_rma_attrs[_ext]`: the calling thread's attributes become `requested` when DMAPP
/// accepts them; nothing changes otherwise (also when `AAR_EMU_DMAPP_SET_BUSY` makes the call
/// busy). What is now in force.
pub fn set(call: &'static str, requested: Option<Requested>) -> Result<Attrs, DmappReturn> {
    SETS.fetch_add(1, Ordering::Relaxed);
    SETS_HERE.set(SETS_HERE.get() + 1);
    let guard = job::read();
    let (asked, result) = match (job::get(&guard), requested) {
        (Err(rc), r) => (r.map(|r| r.attrs(Attrs::DEFAULT)), Err(rc)),
        (Ok(job), Some(r)) if sets_busy().take() => (Some(r.attrs(in_force(job))), Err(DMAPP_RC_BUSY)),
        (Ok(_), None) => (None, Err(DMAPP_RC_INVALID_PARAM)),
        (Ok(job), Some(r)) => {
            let asked = r.attrs(in_force(job));
            let result = asked.checked().inspect(|&attrs| OWN.set(Some(Own { generation: job.generation, attrs })));
            (Some(asked), result)
        }
    };
    log_request(call, asked, result.err().unwrap_or(DMAPP_RC_SUCCESS));
    result
}

/// The job's defaults from `dmapp_init`'s request (the defaults of DMAPP for what a
/// `dmapp_rma_attrs_t` does not hold).
pub fn defaults(requested: &Requested) -> Result<Attrs, DmappReturn> {
    requested.attrs(Attrs::DEFAULT).checked()
}

/// `dmapp_get_rma_attrs[_ext]`: the calling thread's attributes (`DMAPP_RC_BUSY` when
/// `AAR_EMU_DMAPP_GET_BUSY` makes the call busy).
pub fn get() -> Result<Attrs, DmappReturn> {
    let attrs = job::get(&job::read()).map(in_force)?;
    if gets_busy().take() {
        return Err(DMAPP_RC_BUSY);
    }
    Ok(attrs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::AttrsLayoutError;

    #[test]
    fn layouts_round_trip_and_differ_where_the_shim_looks() {
        let a = Attrs { queue_depth: 7, queue_nelems: 9, routing: [6, 4], ..Attrs::DEFAULT };
        for layout in [AttrsLayout::Standard, AttrsLayout::QueueFirst] {
            assert_eq!(layout.decode(&layout.encode(&a)), a);
            assert_eq!(layout.to_string().parse(), Ok(layout));
        }
        let std = AttrsLayout::Standard.encode(&a);
        assert_eq!((std[PUT_ROUTING_OFFSET], std[GET_ROUTING_OFFSET]), (6, 4));
        assert_eq!(&std[..BASE_BYTES - 1], &a.base_bytes()[..BASE_BYTES - 1]);
        // queue-first: bytes 8 and 9 are the known queue flags, which read as ADAPTIVE.
        let qf = AttrsLayout::QueueFirst.encode(&a);
        assert_eq!((qf[8], qf[9]), (2, 2));
        assert_eq!(RoutingTable::ASSUMED.routing(2), Some(Routing::Adaptive));
        assert_eq!((qf[16], qf[17]), (6, 4));
        // A caller writing ADAPTIVE_3 into byte 8 sets an unknown flag, which a set clears.
        let mut written = qf;
        written[8] = 6;
        let back = AttrsLayout::QueueFirst.decode(&written).checked().unwrap();
        assert_eq!(AttrsLayout::QueueFirst.encode(&back)[8], 2);
        assert_eq!(back.routing, [6, 4]);
        assert_eq!("Queue-First".parse(), Ok(AttrsLayout::QueueFirst));
        assert_eq!("bytes".parse::<AttrsLayout>(), Err(AttrsLayoutError));
    }

    #[test]
    fn out_of_range_values_are_refused() {
        assert!(Attrs::DEFAULT.checked().is_ok());
        for bad in [
            Attrs { max_outstanding_nb: 4, ..Attrs::DEFAULT },
            Attrs { max_outstanding_nb: 2049, ..Attrs::DEFAULT },
            Attrs { routing: [7, 2], ..Attrs::DEFAULT },
            Attrs { routing: [2, 200], ..Attrs::DEFAULT },
            Attrs { max_concurrency: 0, ..Attrs::DEFAULT },
            Attrs { pi_ordering: 3, ..Attrs::DEFAULT },
        ] {
            assert_eq!(bad.checked(), Err(DMAPP_RC_INVALID_PARAM), "{bad:?}");
        }
        let flags = Attrs { queue_flags: u64::MAX, ..Attrs::DEFAULT }.checked().unwrap();
        assert_eq!(flags.queue_flags, QUEUE_FLAGS_KNOWN);
        let base = Attrs::DEFAULT.with_base(&Attrs { routing: [0, 6], ..Attrs::DEFAULT }.base_bytes());
        assert_eq!(base.routing, [0, 6]);
    }
}
