//! DMAPP (`dmapp.h`), the one-sided layer under Cray SHMEM, Coarray Fortran, UPC, Chapel and
//! Global Arrays, as laid out on x86-64: types, return codes, element types, the RMA attributes
//! that carry routing, the routing names, and the type of every function aar interposes or the
//! emulator defines.
//!
//! Two facts are not public and differ between DMAPP releases (see `docs/abi.md`): the layout of
//! `dmapp_rma_attrs_ext_t` beyond its first bytes, and the numbers of the routing enumerators. The
//! first is handled by treating the struct as an oversized byte buffer of which only the PUT and
//! GET routing bytes are changed ([`RMA_ATTRS_EXT_BYTES`], [`PUT_ROUTING_OFFSET`],
//! [`GET_ROUTING_OFFSET`]); the second by a [`RoutingTable`] that a site can give.

use core::ffi::{c_int, c_void};
use core::fmt;
use core::str::FromStr;

/// `dmapp_return_t`.
pub type DmappReturn = u32;
/// The call succeeded.
pub const DMAPP_RC_SUCCESS: DmappReturn = 0;
/// An argument is invalid (also: a routing value this DMAPP does not know).
pub const DMAPP_RC_INVALID_PARAM: DmappReturn = 1;
/// An address or size is misaligned for the element type.
pub const DMAPP_RC_ALIGNMENT_ERROR: DmappReturn = 2;
/// The network transaction failed.
pub const DMAPP_RC_TRANSACTION_ERROR: DmappReturn = 3;
/// A resource is exhausted.
pub const DMAPP_RC_RESOURCE_ERROR: DmappReturn = 4;
/// Not permitted.
pub const DMAPP_RC_PERMISSION_ERROR: DmappReturn = 5;
/// No space left (e.g. in the symmetric heap).
pub const DMAPP_RC_NO_SPACE: DmappReturn = 6;
/// Not complete yet.
pub const DMAPP_RC_NOT_DONE: DmappReturn = 7;
/// Not supported by this DMAPP (libaar.so returns it for a function the loaded libdmapp lacks).
pub const DMAPP_RC_NOT_SUPPORTED: DmappReturn = 8;
/// Not found.
pub const DMAPP_RC_NOT_FOUND: DmappReturn = 9;
/// Busy.
pub const DMAPP_RC_BUSY: DmappReturn = 10;
/// Not used.
pub const DMAPP_RC_NOT_USED: DmappReturn = 11;

/// The name of each `dmapp_return_t` value, by value.
const RC_NAMES: [&str; 12] = [
    "DMAPP_RC_SUCCESS",
    "DMAPP_RC_INVALID_PARAM",
    "DMAPP_RC_ALIGNMENT_ERROR",
    "DMAPP_RC_TRANSACTION_ERROR",
    "DMAPP_RC_RESOURCE_ERROR",
    "DMAPP_RC_PERMISSION_ERROR",
    "DMAPP_RC_NO_SPACE",
    "DMAPP_RC_NOT_DONE",
    "DMAPP_RC_NOT_SUPPORTED",
    "DMAPP_RC_NOT_FOUND",
    "DMAPP_RC_BUSY",
    "DMAPP_RC_NOT_USED",
];

/// A return code for messages: its name and value (`DMAPP_RC_BUSY (10)`), or the value alone
/// with what it is not, for a value `dmapp.h` does not define.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rc(pub DmappReturn);

impl Rc {
    /// A code that says "not now" rather than "never" (busy, not done yet, out of a resource or
    /// of space): the same call may succeed later. Every other failure, and a value `dmapp.h`
    /// does not define, is taken as lasting.
    pub const fn is_transient(self) -> bool {
        matches!(self.0, DMAPP_RC_BUSY | DMAPP_RC_NOT_DONE | DMAPP_RC_RESOURCE_ERROR | DMAPP_RC_NO_SPACE)
    }

    /// A code that says the call went out and the network failed it: `DMAPP_RC_TRANSACTION_ERROR`,
    /// which a call returns when a transaction it issued failed, so its messages were sent, whole
    /// or in part. Every other failure is DMAPP's refusal of a call it did not send.
    pub const fn went_out(self) -> bool {
        self.0 == DMAPP_RC_TRANSACTION_ERROR
    }
}

impl fmt::Display for Rc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match RC_NAMES.get(self.0 as usize) {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "{} (not a dmapp_return_t)", self.0),
        }
    }
}

/// `dmapp_pe_t`: a processing element (rank).
pub type DmappPe = c_int;

/// `dmapp_type_t`: the element type of a transfer.
pub type DmappType = u32;
/// 16-byte elements.
pub const DMAPP_DQW: DmappType = 0;
/// 8-byte elements.
pub const DMAPP_QW: DmappType = 1;
/// 4-byte elements.
pub const DMAPP_DW: DmappType = 2;
/// 1-byte elements.
pub const DMAPP_BYTE: DmappType = 3;

/// Bytes per element of `t`; `None` for a value that is not a `dmapp_type_t` (the call is then
/// the real DMAPP's to refuse).
pub const fn element_bytes(t: DmappType) -> Option<u64> {
    match t {
        DMAPP_DQW => Some(16),
        DMAPP_QW => Some(8),
        DMAPP_DW => Some(4),
        DMAPP_BYTE => Some(1),
        _ => None,
    }
}

/// Bytes an atomic memory operation moves: its operand, one quad word.
pub const AMO_BYTES: u64 = 8;

/// `dmapp_syncid_handle_t`: completion handle of an `_nb` call (a pointer to an opaque struct).
pub type DmappSyncidHandle = *mut c_void;

/// `dmapp_seg_desc_t`: a registered memory segment (48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DmappSegDesc {
    /// Start of the segment.
    pub addr: *mut c_void,
    /// Length in bytes.
    pub len: usize,
    /// Its uGNI registration.
    pub memhndl: crate::GniMemHandle,
    /// Segment flags.
    pub flags: u16,
    /// Reserved.
    pub reserved: *mut c_void,
}

/// `dmapp_jobinfo_t` (112 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DmappJobinfo {
    /// Version of the structure.
    pub version: c_int,
    /// Hardware version.
    pub hw_version: c_int,
    /// Number of PEs in the job.
    pub npes: c_int,
    /// This process's PE.
    pub pe: c_int,
    /// The data segment (static data), symmetric across PEs.
    pub data_seg: DmappSegDesc,
    /// The symmetric heap.
    pub sheap_seg: DmappSegDesc,
}

/// `dmapp_rma_attrs_t` (12 bytes), the attributes of `dmapp_init` and `dmapp_set_rma_attrs`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmappRmaAttrs {
    /// Most non-blocking operations in flight.
    pub max_outstanding_nb: u32,
    /// Transfers from this size on use the block-transfer engine.
    pub offload_threshold: u32,
    /// Routing of PUTs and of every AMO (a `dmapp_routing_type_t` value), despite its name.
    pub put_relaxed_ordering: u8,
    /// Routing of GETs (a `dmapp_routing_type_t` value).
    pub get_relaxed_ordering: u8,
    /// Most threads that use DMAPP at once.
    pub max_concurrency: u8,
}

// The x86-64 layouts of dmapp.h (docs/abi.md §2), checked when the crate is built.
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    type D = DmappSegDesc;
    assert!(size_of::<D>() == 48 && align_of::<D>() == 8, "dmapp_seg_desc_t is 48 bytes");
    assert!(offset_of!(D, addr) == 0 && offset_of!(D, len) == 8 && offset_of!(D, memhndl) == 16);
    assert!(offset_of!(D, flags) == 32 && offset_of!(D, reserved) == 40);
    type J = DmappJobinfo;
    assert!(size_of::<J>() == 112 && align_of::<J>() == 8, "dmapp_jobinfo_t is 112 bytes");
    assert!(offset_of!(J, version) == 0 && offset_of!(J, hw_version) == 4);
    assert!(offset_of!(J, npes) == 8 && offset_of!(J, pe) == 12);
    assert!(offset_of!(J, data_seg) == 16 && offset_of!(J, sheap_seg) == 64);
    type A = DmappRmaAttrs;
    assert!(size_of::<A>() == 12 && align_of::<A>() == 4, "dmapp_rma_attrs_t is 12 bytes");
    assert!(offset_of!(A, max_outstanding_nb) == 0 && offset_of!(A, offload_threshold) == 4);
    assert!(offset_of!(A, put_relaxed_ordering) == PUT_ROUTING_OFFSET, "PUT routing at byte 8");
    assert!(offset_of!(A, get_relaxed_ordering) == GET_ROUTING_OFFSET, "GET routing at byte 9");
    assert!(offset_of!(A, max_concurrency) == 10);
    assert!(size_of::<RmaAttrsExt>() == RMA_ATTRS_EXT_BYTES && align_of::<RmaAttrsExt>() == 8);
    assert!(RMA_ATTRS_EXT_BYTES >= 44, "holds RB-3.1's 44-byte dmapp_rma_attrs_ext_t");
};

/// `DMAPP_OFFLOAD_THRESHOLD`: the default `offload_threshold`, in bytes.
pub const DMAPP_OFFLOAD_THRESHOLD: u32 = 4096;
/// `DMAPP_DEF_OUTSTANDING_NB`: the default `max_outstanding_nb`.
pub const DMAPP_DEF_OUTSTANDING_NB: u32 = 512;
/// `DMAPP_MIN_OUTSTANDING_NB`: the smallest `max_outstanding_nb`.
pub const DMAPP_MIN_OUTSTANDING_NB: u32 = 5;
/// `DMAPP_MAX_OUTSTANDING_NB`: the largest `max_outstanding_nb`.
pub const DMAPP_MAX_OUTSTANDING_NB: u32 = 2048;

/// `dmapp_pi_reg_type_t`, the `PI_ordering` byte of `dmapp_rma_attrs_ext_t`.
pub type DmappPiRegType = u8;
/// Strict ordering of PI (processor interface) writes.
pub const DMAPP_PI_ORDERING_STRICT: DmappPiRegType = 0;
/// The default ordering.
pub const DMAPP_PI_ORDERING_DEFAULT: DmappPiRegType = 1;
/// Relaxed ordering.
pub const DMAPP_PI_ORDERING_RELAXED: DmappPiRegType = 2;

/// Offset of the PUT (and AMO) routing byte, in `dmapp_rma_attrs_t` and `dmapp_rma_attrs_ext_t`.
pub const PUT_ROUTING_OFFSET: usize = 8;
/// Offset of the GET routing byte, in both attribute structs.
pub const GET_ROUTING_OFFSET: usize = 9;
/// Bytes of a buffer that certainly holds a `dmapp_rma_attrs_ext_t` of any release (44 bytes in
/// the oldest known header; newer ones add a few queue fields). Align 8.
pub const RMA_ATTRS_EXT_BYTES: usize = 256;

/// A buffer for `dmapp_rma_attrs_ext_t` whose layout past the routing bytes is not relied on.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmaAttrsExt(pub [u8; RMA_ATTRS_EXT_BYTES]);

impl RmaAttrsExt {
    /// All zero, as the buffer must be before DMAPP fills it.
    pub const ZERO: RmaAttrsExt = RmaAttrsExt([0; RMA_ATTRS_EXT_BYTES]);

    /// The routing byte of `direction`.
    pub const fn routing(&self, direction: Direction) -> u8 {
        self.0[direction.offset()]
    }

    /// The same attributes with the routing byte of `direction` replaced.
    pub const fn with_routing(mut self, direction: Direction, value: u8) -> Self {
        self.0[direction.offset()] = value;
        self
    }
}

/// Which routing attribute an operation follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// PUTs and every AMO, fetching ones included.
    Put,
    /// GETs.
    Get,
}

impl Direction {
    /// Both directions.
    pub const ALL: [Direction; 2] = [Direction::Put, Direction::Get];

    /// Offset of this direction's routing byte in the attribute structs.
    pub const fn offset(self) -> usize {
        match self {
            Direction::Put => PUT_ROUTING_OFFSET,
            Direction::Get => GET_ROUTING_OFFSET,
        }
    }

    /// Position in [`Direction::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// The routing names of `dmapp_routing_type_t` (Aries releases). Which number each has in a given
/// `dmapp.h` is not public: see [`RoutingTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Routing {
    /// `DMAPP_ROUTING_IN_ORDER`: minimal, not hashed, in order.
    InOrder,
    /// `DMAPP_ROUTING_DETERMINISTIC`: non-minimal, hashed.
    Deterministic,
    /// `DMAPP_ROUTING_ADAPTIVE`: adaptive, no bias (uGNI's ADAPTIVE0).
    Adaptive,
    /// `DMAPP_ROUTING_DETERMINISTIC_1`: minimal, hashed.
    Deterministic1,
    /// `DMAPP_ROUTING_ADAPTIVE_1`: adaptive, increasing bias towards minimal (ADAPTIVE1).
    Adaptive1,
    /// `DMAPP_ROUTING_ADAPTIVE_2`: adaptive, low bias towards minimal (ADAPTIVE2).
    Adaptive2,
    /// `DMAPP_ROUTING_ADAPTIVE_3`: adaptive, high bias towards minimal (ADAPTIVE3).
    Adaptive3,
}

impl Routing {
    /// Every name, in the order of [`Routing::index`].
    pub const ALL: [Routing; 7] = [
        Routing::InOrder,
        Routing::Deterministic,
        Routing::Adaptive,
        Routing::Deterministic1,
        Routing::Adaptive1,
        Routing::Adaptive2,
        Routing::Adaptive3,
    ];

    /// Position in [`Routing::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The name without its `DMAPP_ROUTING_` prefix, as [`RoutingTable`]'s text spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Routing::InOrder => "IN_ORDER",
            Routing::Deterministic => "DETERMINISTIC",
            Routing::Adaptive => "ADAPTIVE",
            Routing::Deterministic1 => "DETERMINISTIC_1",
            Routing::Adaptive1 => "ADAPTIVE_1",
            Routing::Adaptive2 => "ADAPTIVE_2",
            Routing::Adaptive3 => "ADAPTIVE_3",
        }
    }

    /// The uGNI delivery mode with the same routing.
    pub const fn dlvr_mode(self) -> u16 {
        use crate::ugni::*;
        match self {
            Routing::InOrder => GNI_DLVMODE_IN_ORDER,
            Routing::Deterministic => GNI_DLVMODE_NMIN_HASH,
            Routing::Adaptive => GNI_DLVMODE_ADAPTIVE0,
            Routing::Deterministic1 => GNI_DLVMODE_MIN_HASH,
            Routing::Adaptive1 => GNI_DLVMODE_ADAPTIVE1,
            Routing::Adaptive2 => GNI_DLVMODE_ADAPTIVE2,
            Routing::Adaptive3 => GNI_DLVMODE_ADAPTIVE3,
        }
    }

    /// The name whose routing is this uGNI delivery mode's routing byte, if any.
    pub const fn from_dlvr_mode(dlvr_mode: u16) -> Option<Routing> {
        use crate::ugni::*;
        match dlvr_mode & GNI_DLVMODE_ROUTING_MASK {
            GNI_DLVMODE_IN_ORDER => Some(Routing::InOrder),
            GNI_DLVMODE_NMIN_HASH => Some(Routing::Deterministic),
            GNI_DLVMODE_ADAPTIVE0 => Some(Routing::Adaptive),
            GNI_DLVMODE_MIN_HASH => Some(Routing::Deterministic1),
            GNI_DLVMODE_ADAPTIVE1 => Some(Routing::Adaptive1),
            GNI_DLVMODE_ADAPTIVE2 => Some(Routing::Adaptive2),
            GNI_DLVMODE_ADAPTIVE3 => Some(Routing::Adaptive3),
            _ => None,
        }
    }

    /// One of the adaptive family, which the library may choose; the others promise ordering or
    /// determinism to the application and are never overridden.
    pub const fn is_adaptive(self) -> bool {
        matches!(self, Routing::Adaptive | Routing::Adaptive1 | Routing::Adaptive2 | Routing::Adaptive3)
    }

    /// The code Cray's own tools use for this routing (0–7, 2 reserved), e.g. in Global Arrays'
    /// `ARMCI_DMAPP_PUT_ROUTING`. Not the enumerator's value.
    pub const fn hardware_code(self) -> u8 {
        match self {
            Routing::Deterministic => 0,
            Routing::Deterministic1 => 1,
            Routing::InOrder => 3,
            Routing::Adaptive => 4,
            Routing::Adaptive1 => 5,
            Routing::Adaptive2 => 6,
            Routing::Adaptive3 => 7,
        }
    }
}

/// The value of each `DMAPP_ROUTING_*` enumerator in one DMAPP release (`None`: that release has
/// no such name). The four adaptive names must have values for the library to steer DMAPP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoutingTable(pub [Option<u8>; 7]);

impl RoutingTable {
    /// The table aar assumes when it was not built against the site's `dmapp.h` and
    /// `AAR_DMAPP_ROUTING` is not set: the three names of the oldest public header keep their
    /// values (IN_ORDER 0, DETERMINISTIC 1, ADAPTIVE 2) and the Aries names follow in the order
    /// Cray lists them. Only an assumption: the Aries values are not public. The emulator's
    /// libdmapp implements this table.
    pub const ASSUMED: RoutingTable = RoutingTable([Some(0), Some(1), Some(2), Some(3), Some(4), Some(5), Some(6)]);

    /// The enumerator value of `r`, if this release has it.
    pub const fn value(&self, r: Routing) -> Option<u8> {
        self.0[r.index()]
    }

    /// The name a raw attribute value stands for, if any.
    pub fn routing(&self, value: u8) -> Option<Routing> {
        Routing::ALL.into_iter().find(|&r| self.value(r) == Some(value))
    }

    /// Every adaptive name has a value, and no two names share one.
    pub fn check(&self) -> Result<(), RoutingTableError> {
        for r in Routing::ALL {
            if r.is_adaptive() && self.value(r).is_none() {
                return Err(RoutingTableError::Missing(r.name()));
            }
            if let Some(v) = self.value(r) {
                if let Some(other) = Routing::ALL.into_iter().find(|&o| o < r && self.value(o) == Some(v)) {
                    return Err(RoutingTableError::Shared(other.name(), r.name(), v));
                }
            }
        }
        Ok(())
    }
}

impl RoutingTable {
    /// The table a `dmapp.h` declares: the values of the `DMAPP_ROUTING_*` enumerators of its
    /// `dmapp_routing_type_t`, explicit (`= 4`, `= 0x4`) or implicit (one more than the previous
    /// enumerator, 0 for the first), comments ignored. Names aar does not know still count for
    /// the implicit values.
    pub fn from_c_header(text: &str) -> Result<RoutingTable, HeaderError> {
        let first = text.find("DMAPP_ROUTING_").ok_or(HeaderError::NoRoutingEnum)?;
        let open = text[..first].rfind('{').ok_or(HeaderError::NoRoutingEnum)?;
        let close = open + text[open..].find('}').ok_or(HeaderError::NoRoutingEnum)?;
        let mut table = RoutingTable([None; 7]);
        let mut next: u64 = 0;
        let mut body = Uncommented::new(&text[open + 1..close], open + 1);
        let mut item = [0u8; 128];
        while let Some((len, at)) = body.next_item(&mut item) {
            let item = core::str::from_utf8(&item[..len]).map_err(|_| HeaderError::Unreadable)?.trim();
            if item.is_empty() {
                continue;
            }
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (item, None),
            };
            let value = match value {
                None => next,
                Some(v) => parse_c_integer(v)
                    .or_else(|| {
                        // An earlier enumerator of this enum.
                        let r =
                            Routing::ALL.into_iter().find(|r| v.strip_prefix("DMAPP_ROUTING_") == Some(r.name()))?;
                        table.value(r).map(u64::from)
                    })
                    .ok_or(HeaderError::Unevaluable { at })?,
            };
            next = value.saturating_add(1);
            if let Some(r) = Routing::ALL.into_iter().find(|r| name.strip_prefix("DMAPP_ROUTING_") == Some(r.name())) {
                let v = u8::try_from(value).map_err(|_| HeaderError::TooLarge { at })?;
                table.0[r.index()] = Some(v);
            }
        }
        table.check().map_err(HeaderError::Table)?;
        Ok(table)
    }
}

/// A C integer literal: decimal, `0x` hexadecimal or `0` octal, with an optional `u`/`l` suffix.
fn parse_c_integer(text: &str) -> Option<u64> {
    let t = text.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

/// The items of an enum body, comments removed, one at a time (no allocation: the crate is
/// `no_std` without `alloc`).
struct Uncommented<'a> {
    rest: &'a [u8],
    /// Where `rest` ends in the header's text, so that an item's place in it is known.
    end: usize,
}

impl<'a> Uncommented<'a> {
    /// The body of an enum that starts `at` bytes into the header's text.
    fn new(body: &'a str, at: usize) -> Self {
        Self { rest: body.as_bytes(), end: at + body.len() }
    }

    /// Copies the next comma-separated item into `out` (comments dropped); its length and where
    /// its first character other than a blank is in the header's text, or `None` at the end. An
    /// item longer than `out` is cut, which makes it fail to parse.
    fn next_item(&mut self, out: &mut [u8]) -> Option<(usize, usize)> {
        if self.rest.is_empty() {
            return None;
        }
        let mut len = 0;
        let mut at = None;
        while let Some((&c, tail)) = self.rest.split_first() {
            if self.rest.starts_with(b"/*") {
                let end = self.rest[2..].windows(2).position(|w| w == b"*/").map_or(self.rest.len(), |p| p + 4);
                self.rest = &self.rest[end..];
                continue;
            }
            if self.rest.starts_with(b"//") {
                let end = self.rest.iter().position(|&b| b == b'\n').unwrap_or(self.rest.len());
                self.rest = &self.rest[end..];
                continue;
            }
            if at.is_none() && !c.is_ascii_whitespace() && c != b',' {
                at = Some(self.end - self.rest.len());
            }
            self.rest = tail;
            if c == b',' {
                break;
            }
            if len < out.len() {
                out[len] = c;
                len += 1;
            }
        }
        Some((len, at.unwrap_or(self.end - self.rest.len())))
    }
}

/// Why a `dmapp.h` gave no routing table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// No enum with `DMAPP_ROUTING_*` enumerators was found.
    NoRoutingEnum,
    /// The enum's text is not UTF-8.
    Unreadable,
    /// An enumerator's value is an expression this reader does not evaluate.
    Unevaluable {
        /// Where the enumerator starts, in bytes into the header's text.
        at: usize,
    },
    /// A routing value does not fit the attribute's byte.
    TooLarge {
        /// Where the enumerator starts, in bytes into the header's text.
        at: usize,
    },
    /// The values found do not make a usable table.
    Table(RoutingTableError),
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoRoutingEnum => f.write_str("no enum with DMAPP_ROUTING_* enumerators"),
            Self::Unreadable => f.write_str("the routing enum is not UTF-8 text"),
            Self::Unevaluable { .. } => f.write_str("an enumerator's value is not a number or an earlier enumerator"),
            Self::TooLarge { .. } => f.write_str("a routing value is above 255"),
            Self::Table(e) => write!(f, "the routing enum is not usable: {e}"),
        }
    }
}

/// Bytes of an entry's text an error keeps (the crate allocates nothing); a longer entry is
/// shown cut, with `…`.
const ENTRY_BYTES: usize = 48;

/// One comma-separated entry of a routing table's text, as a message names it: its position
/// from 1 and its text, blanks around it left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its position in the text, from 1.
    pub position: usize,
    text: [u8; ENTRY_BYTES],
    len: u8,
    cut: bool,
}

impl Entry {
    fn new(position: usize, text: &str) -> Self {
        let text = text.trim();
        let mut len = text.len().min(ENTRY_BYTES);
        while !text.is_char_boundary(len) {
            len -= 1;
        }
        let mut kept = [0; ENTRY_BYTES];
        kept[..len].copy_from_slice(&text.as_bytes()[..len]);
        Self { position, text: kept, len: len as u8, cut: len < text.len() }
    }

    /// Its text (the first bytes of a long one).
    pub fn text(&self) -> &str {
        // Cut at a character boundary of a `str`, so always UTF-8.
        core::str::from_utf8(&self.text[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Display for Entry {
    /// `entry 8, "FOO=7"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "entry {}, \"{}{}\"", self.position, self.text().escape_debug(), if self.cut { "…" } else { "" })
    }
}

/// Why a routing table's text, or a `dmapp.h`'s enumerators, were refused. The errors of the
/// text name the entry at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoutingTableError {
    /// An entry is empty or blank (a comma too many).
    Empty(Entry),
    /// An entry is not `NAME=VALUE`.
    NotAnItem(Entry),
    /// An entry's name is not one of the `DMAPP_ROUTING_*` names.
    UnknownName(Entry),
    /// An entry's value is not a number from 0 to 255.
    BadValue(Entry),
    /// An entry names a routing an earlier entry gave.
    Repeated {
        /// The later entry.
        entry: Entry,
        /// The routing's name.
        name: &'static str,
        /// The position of the entry that gave it first.
        first: usize,
    },
    /// An entry gives a routing the value an earlier entry gave another.
    SharedEntries {
        /// The later entry.
        entry: Entry,
        /// Its routing's name.
        name: &'static str,
        /// The name the earlier entry gave the value.
        other: &'static str,
        /// The position of that entry.
        first: usize,
        /// The value.
        value: u8,
    },
    /// An adaptive name has no value.
    Missing(&'static str),
    /// Two names have the same value (in a `dmapp.h`).
    Shared(&'static str, &'static str, u8),
}

/// The names, for messages.
const NAMES: &str = "IN_ORDER, DETERMINISTIC, ADAPTIVE, DETERMINISTIC_1, ADAPTIVE_1, ADAPTIVE_2, ADAPTIVE_3";

impl fmt::Display for RoutingTableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty(e) => write!(f, "entry {} is empty: remove the comma too many", e.position),
            Self::NotAnItem(e) => write!(f, "{e} is not NAME=VALUE"),
            Self::UnknownName(e) => {
                write!(f, "{e}: the name is not one of {NAMES}, with or without DMAPP_ROUTING_")
            }
            Self::BadValue(e) => write!(f, "{e}: the value is not a whole number from 0 to 255"),
            Self::Repeated { entry, name, first } => {
                write!(f, "{entry}: {name} is given twice (entry {first} gave it first); keep one of them")
            }
            Self::SharedEntries { entry, name, other, first, value } => write!(
                f,
                "{entry}: {name} and {other} (entry {first}) both have the value {value}; each name needs its own"
            ),
            Self::Missing(n) => write!(f, "{n} has no value (the four adaptive names are needed)"),
            Self::Shared(a, b, v) => write!(f, "{a} and {b} both have the value {v}"),
        }
    }
}

impl FromStr for RoutingTable {
    type Err = RoutingTableError;

    /// `NAME=VALUE` entries separated by commas, blanks around them allowed, names with or
    /// without the `DMAPP_ROUTING_` prefix, any case, values in decimal, e.g.
    /// `ADAPTIVE=4,ADAPTIVE_1=5,ADAPTIVE_2=6,ADAPTIVE_3=7,IN_ORDER=3`. Names not given are absent
    /// from the release. An error names the first entry at fault.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut table = RoutingTable([None; 7]);
        // The entry that gave each name its value.
        let mut given = [0usize; 7];
        for (i, item) in text.split(',').enumerate() {
            let entry = Entry::new(i + 1, item);
            if item.trim().is_empty() {
                return Err(RoutingTableError::Empty(entry));
            }
            let (name, value) = item.split_once('=').ok_or(RoutingTableError::NotAnItem(entry))?;
            let name = name.trim().as_bytes();
            let name = match name.split_at_checked(14) {
                Some((prefix, rest)) if prefix.eq_ignore_ascii_case(b"DMAPP_ROUTING_") => rest,
                _ => name,
            };
            let r = Routing::ALL
                .into_iter()
                .find(|r| r.name().as_bytes().eq_ignore_ascii_case(name))
                .ok_or(RoutingTableError::UnknownName(entry))?;
            let v: u8 = value.trim().parse().map_err(|_| RoutingTableError::BadValue(entry))?;
            if table.value(r).is_some() {
                return Err(RoutingTableError::Repeated { entry, name: r.name(), first: given[r.index()] });
            }
            if let Some(other) = table.routing(v) {
                let (name, other, first) = (r.name(), other.name(), given[other.index()]);
                return Err(RoutingTableError::SharedEntries { entry, name, other, first, value: v });
            }
            table.0[r.index()] = Some(v);
            given[r.index()] = entry.position;
        }
        table.check()?;
        Ok(table)
    }
}

impl fmt::Display for RoutingTable {
    /// The text [`FromStr`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for r in Routing::ALL {
            if let Some(v) = self.value(r) {
                if !first {
                    f.write_str(",")?;
                }
                write!(f, "{}={v}", r.name())?;
                first = false;
            }
        }
        Ok(())
    }
}

// ---- Function types: every DMAPP function aar interposes or the emulator defines ------------------
//
// Blocking forms `X`, non-blocking `X_nb` (one more parameter: `dmapp_syncid_handle_t *`) and
// implicit non-blocking `X_nbi` (completed by `dmapp_gsync_wait`) share their leading parameters.

/// `dmapp_init[_ext]` and `dmapp_set_rma_attrs[_ext]`: `(requested, actual)`; the `_ext` forms take
/// a `dmapp_rma_attrs_ext_t`, here an [`RmaAttrsExt`] buffer.
pub type AttrsInitFn = unsafe extern "C" fn(*mut c_void, *mut c_void) -> DmappReturn;
/// `dmapp_get_rma_attrs[_ext](attrs)`.
pub type GetAttrsFn = unsafe extern "C" fn(*mut c_void) -> DmappReturn;
/// `dmapp_finalize()`, `dmapp_gsync_wait()`.
pub type VoidFn = unsafe extern "C" fn() -> DmappReturn;
/// `dmapp_get_jobinfo(*jobinfo)`.
pub type GetJobinfoFn = unsafe extern "C" fn(*mut DmappJobinfo) -> DmappReturn;
/// `dmapp_mem_register(addr, length, *seg)`.
pub type MemRegisterFn = unsafe extern "C" fn(*mut c_void, u64, *mut DmappSegDesc) -> DmappReturn;
/// `dmapp_mem_unregister(*seg)`.
pub type MemUnregisterFn = unsafe extern "C" fn(*mut DmappSegDesc) -> DmappReturn;
/// `dmapp_sheap_malloc(size)`.
pub type SheapMallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
/// `dmapp_sheap_realloc(ptr, size)`.
pub type SheapReallocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
/// `dmapp_sheap_free(ptr)`.
pub type SheapFreeFn = unsafe extern "C" fn(*mut c_void);
/// `dmapp_syncid_wait(*syncid)`.
pub type SyncidWaitFn = unsafe extern "C" fn(*mut DmappSyncidHandle) -> DmappReturn;
/// `dmapp_syncid_test(*syncid, *flag)`.
pub type SyncidTestFn = unsafe extern "C" fn(*mut DmappSyncidHandle, *mut c_int) -> DmappReturn;
/// `dmapp_gsync_test(*flag)`.
pub type GsyncTestFn = unsafe extern "C" fn(*mut c_int) -> DmappReturn;

/// `dmapp_put[_nbi](target_addr, target_seg, target_pe, source_addr, nelems, type)`.
pub type PutFn =
    unsafe extern "C" fn(*mut c_void, *mut DmappSegDesc, DmappPe, *mut c_void, u64, DmappType) -> DmappReturn;
/// `dmapp_put_nb`: `dmapp_put`'s parameters, then `*syncid`.
pub type PutNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    *mut c_void,
    u64,
    DmappType,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// `dmapp_get[_nbi](target_addr, source_addr, source_seg, source_pe, nelems, type)`; also
/// `dmapp_get_flag_nbi`.
pub type GetFn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut DmappSegDesc, DmappPe, u64, DmappType) -> DmappReturn;
/// `dmapp_get_nb`: `dmapp_get`'s parameters, then `*syncid`.
pub type GetNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    u64,
    DmappType,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// `dmapp_put_flag[_nbi]`: `dmapp_put`'s parameters, then `target_flag, flag_value`.
pub type PutFlagFn = unsafe extern "C" fn(
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    *mut c_void,
    u64,
    DmappType,
    *mut c_void,
    u64,
) -> DmappReturn;
/// `dmapp_put_flag_nb`: `dmapp_put_flag`'s parameters, then `*syncid`.
pub type PutFlagNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    *mut c_void,
    u64,
    DmappType,
    *mut c_void,
    u64,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// `dmapp_iput[_nbi]` (strided): `dmapp_put`'s parameters with `tst, sst` (strides in elements)
/// before `nelems`.
pub type IputFn = unsafe extern "C" fn(
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    *mut c_void,
    isize,
    isize,
    u64,
    DmappType,
) -> DmappReturn;
/// `dmapp_iput_nb`: `dmapp_iput`'s parameters, then `*syncid`.
pub type IputNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    *mut c_void,
    isize,
    isize,
    u64,
    DmappType,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// `dmapp_iget[_nbi]` (strided): `dmapp_get`'s parameters with `tst, sst` before `nelems`.
pub type IgetFn = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    isize,
    isize,
    u64,
    DmappType,
) -> DmappReturn;
/// `dmapp_iget_nb`: `dmapp_iget`'s parameters, then `*syncid`.
pub type IgetNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    isize,
    isize,
    u64,
    DmappType,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// `dmapp_ixput[_nbi]` (indexed): `dmapp_put`'s parameters with `*tidx` before `nelems`.
pub type IxputFn = unsafe extern "C" fn(
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    *mut c_void,
    *mut isize,
    u64,
    DmappType,
) -> DmappReturn;
/// `dmapp_ixput_nb`: `dmapp_ixput`'s parameters, then `*syncid`.
pub type IxputNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    *mut c_void,
    *mut isize,
    u64,
    DmappType,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// `dmapp_ixget[_nbi]` (indexed): `dmapp_get`'s parameters with `*sidx` before `nelems`.
pub type IxgetFn = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    *mut isize,
    u64,
    DmappType,
) -> DmappReturn;
/// `dmapp_ixget_nb`: `dmapp_ixget`'s parameters, then `*syncid`.
pub type IxgetNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    *mut isize,
    u64,
    DmappType,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// `dmapp_put_ixpe[_nbi]` and `dmapp_scatter_ixpe[_nbi]`: `(target_addr, target_seg,
/// *target_pe_list, num_target_pes, source_addr, nelems, type)`, one message per target PE.
pub type PutIxpeFn =
    unsafe extern "C" fn(*mut c_void, *mut DmappSegDesc, *mut DmappPe, u32, *mut c_void, u64, DmappType) -> DmappReturn;
/// `dmapp_put_ixpe_nb`, `dmapp_scatter_ixpe_nb`: the parameters above, then `*syncid`.
pub type PutIxpeNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut DmappSegDesc,
    *mut DmappPe,
    u32,
    *mut c_void,
    u64,
    DmappType,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// `dmapp_gather_ixpe[_nbi]`: `(target_addr, source_addr, source_seg, *source_pe_list,
/// num_source_pes, nelems, type)`, one GET per source PE.
pub type GatherIxpeFn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut DmappSegDesc, *mut DmappPe, u32, u64, DmappType) -> DmappReturn;
/// `dmapp_gather_ixpe_nb`: the parameters above, then `*syncid`.
pub type GatherIxpeNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut DmappSegDesc,
    *mut DmappPe,
    u32,
    u64,
    DmappType,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// Non-fetching AMOs `dmapp_aadd_qw`, `aand`, `aor`, `axor` `[_nbi]`: `(target_addr, target_seg,
/// target_pe, operand)`.
pub type AmoFn = unsafe extern "C" fn(*mut c_void, *mut DmappSegDesc, DmappPe, i64) -> DmappReturn;
/// Their `_nb` forms: the parameters above, then `*syncid`.
pub type AmoNbFn =
    unsafe extern "C" fn(*mut c_void, *mut DmappSegDesc, DmappPe, i64, *mut DmappSyncidHandle) -> DmappReturn;
/// Fetching AMOs `dmapp_afadd_qw`, `afand`, `afor`, `afxor` `[_nbi]`: `(target_addr (the fetched
/// value), source_addr (remote), source_seg, source_pe, operand)`.
pub type FetchAmoFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut DmappSegDesc, DmappPe, i64) -> DmappReturn;
/// Their `_nb` forms: the parameters above, then `*syncid`.
pub type FetchAmoNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    i64,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// `dmapp_afax_qw[_nbi]` (fetch, AND then XOR) and `dmapp_acswap_qw[_nbi]` (compare and swap):
/// the fetching AMO's parameters with two operands.
pub type FetchAmo2Fn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut DmappSegDesc, DmappPe, i64, i64) -> DmappReturn;
/// Their `_nb` forms: the parameters above, then `*syncid`.
pub type FetchAmo2NbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    i64,
    i64,
    *mut DmappSyncidHandle,
) -> DmappReturn;
/// `dmapp_amo_put[_nbi](target_addr, target_seg, target_pe, *amo)`: an AMO described by an opaque
/// `dmapp_amo_t`, which aar never reads.
pub type AmoPutFn = unsafe extern "C" fn(*mut c_void, *mut DmappSegDesc, DmappPe, *mut c_void) -> DmappReturn;
/// `dmapp_amo_put_nb`: the parameters above, then `*syncid`.
pub type AmoPutNbFn =
    unsafe extern "C" fn(*mut c_void, *mut DmappSegDesc, DmappPe, *mut c_void, *mut DmappSyncidHandle) -> DmappReturn;
/// `dmapp_amo_get[_nbi](target_addr, source_addr, source_seg, source_pe, *amo)`.
pub type AmoGetFn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut DmappSegDesc, DmappPe, *mut c_void) -> DmappReturn;
/// `dmapp_amo_get_nb`: the parameters above, then `*syncid`.
pub type AmoGetNbFn = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut DmappSegDesc,
    DmappPe,
    *mut c_void,
    *mut DmappSyncidHandle,
) -> DmappReturn;

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn return_codes_name_themselves_and_say_which_pass() {
        assert_eq!(Rc(DMAPP_RC_BUSY).to_string(), "DMAPP_RC_BUSY (10)");
        assert_eq!(Rc(DMAPP_RC_INVALID_PARAM).to_string(), "DMAPP_RC_INVALID_PARAM (1)");
        assert_eq!(Rc(DMAPP_RC_NOT_USED).to_string(), "DMAPP_RC_NOT_USED (11)");
        assert_eq!(Rc(12).to_string(), "12 (not a dmapp_return_t)");
        let transient: std::vec::Vec<_> = (0..20).filter(|&rc| Rc(rc).is_transient()).collect();
        assert_eq!(transient, [DMAPP_RC_RESOURCE_ERROR, DMAPP_RC_NO_SPACE, DMAPP_RC_NOT_DONE, DMAPP_RC_BUSY]);
    }

    #[test]
    fn routing_names() {
        for r in Routing::ALL {
            assert_eq!(Routing::from_dlvr_mode(r.dlvr_mode()), Some(r));
            assert_eq!(Routing::ALL[r.index()], r);
            assert_eq!(
                r.is_adaptive(),
                crate::ugni::GNI_DLVMODE_ADAPTIVE0 == r.dlvr_mode() || r.name().starts_with("ADAPTIVE")
            );
        }
        assert_eq!(Routing::from_dlvr_mode(0x0060), None);
    }

    #[test]
    fn routing_tables() {
        assert_eq!(RoutingTable::ASSUMED.check(), Ok(()));
        let text = RoutingTable::ASSUMED.to_string();
        assert_eq!(text.parse(), Ok(RoutingTable::ASSUMED));
        let t: RoutingTable =
            "dmapp_routing_adaptive=4, ADAPTIVE_1=5,ADAPTIVE_2=6,ADAPTIVE_3=7,IN_ORDER=3".parse().unwrap();
        assert_eq!(t.value(Routing::Adaptive3), Some(7));
        assert_eq!(t.value(Routing::Deterministic), None);
        assert_eq!(t.routing(3), Some(Routing::InOrder));
        assert_eq!(t.routing(0), None);
        assert_eq!("ADAPTIVE=4".parse::<RoutingTable>(), Err(RoutingTableError::Missing("ADAPTIVE_1")));
    }

    /// The message of the text's error.
    fn refusal(text: &str) -> std::string::String {
        text.parse::<RoutingTable>().unwrap_err().to_string()
    }

    const FULL: &str = "IN_ORDER=0,DETERMINISTIC=1,ADAPTIVE=2,DETERMINISTIC_1=3,ADAPTIVE_1=4,ADAPTIVE_2=5,ADAPTIVE_3=6";

    #[test]
    fn every_refusal_of_a_tables_text_names_the_entry_at_fault() {
        let names = "IN_ORDER, DETERMINISTIC, ADAPTIVE, DETERMINISTIC_1, ADAPTIVE_1, ADAPTIVE_2, ADAPTIVE_3";
        assert_eq!(
            refusal(&std::format!("{FULL},FOO=7")),
            std::format!("entry 8, \"FOO=7\": the name is not one of {names}, with or without DMAPP_ROUTING_")
        );
        // Empty entries: a comma at the end, at the start, two in a row, a blank entry, nothing.
        assert_eq!(refusal(&std::format!("{FULL},")), "entry 8 is empty: remove the comma too many");
        assert_eq!(refusal(&std::format!(",{FULL}")), "entry 1 is empty: remove the comma too many");
        assert_eq!(refusal("ADAPTIVE=4,,ADAPTIVE_1=5"), "entry 2 is empty: remove the comma too many");
        assert_eq!(refusal("ADAPTIVE=4, \t,ADAPTIVE_1=5"), "entry 2 is empty: remove the comma too many");
        assert_eq!(refusal(""), "entry 1 is empty: remove the comma too many");
        assert_eq!(refusal("ADAPTIVE=4,ADAPTIVE_1:5"), "entry 2, \"ADAPTIVE_1:5\" is not NAME=VALUE");
        // Names twice, in any spelling; values twice.
        assert_eq!(
            refusal("ADAPTIVE=4, dmapp_routing_adaptive=5"),
            "entry 2, \"dmapp_routing_adaptive=5\": ADAPTIVE is given twice (entry 1 gave it first); keep one of them"
        );
        assert_eq!(
            refusal("ADAPTIVE=4,ADAPTIVE_1=5,ADAPTIVE_2=6,ADAPTIVE_3=6"),
            "entry 4, \"ADAPTIVE_3=6\": ADAPTIVE_3 and ADAPTIVE_2 (entry 3) both have the value 6; each name needs its own"
        );
        // Values out of range or not decimal.
        for (text, entry) in [
            ("ADAPTIVE=256", "ADAPTIVE=256"),
            ("IN_ORDER=0, ADAPTIVE=-1", "ADAPTIVE=-1"),
            ("IN_ORDER=0x3", "IN_ORDER=0x3"),
        ] {
            let position = text.split(',').count();
            assert_eq!(
                refusal(text),
                std::format!("entry {position}, \"{entry}\": the value is not a whole number from 0 to 255")
            );
        }
        assert!(refusal("ADAPTIVE=").ends_with("the value is not a whole number from 0 to 255"));
        // A missing adaptive name is named.
        assert_eq!(
            refusal("IN_ORDER=0,ADAPTIVE=2,ADAPTIVE_2=5,ADAPTIVE_3=6"),
            "ADAPTIVE_1 has no value (the four adaptive names are needed)"
        );
        // An entry is shown escaped, and cut (at a character) when long.
        assert_eq!(
            refusal("FO\"O=1"),
            std::format!("entry 1, \"FO\\\"O=1\": the name is not one of {names}, with or without DMAPP_ROUTING_")
        );
        let long = std::format!("{}=1", "é".repeat(40));
        let shown = std::format!("entry 1, \"{}…\": the name", "é".repeat(24));
        assert!(refusal(&long).starts_with(&shown), "{}", refusal(&long));
    }

    #[test]
    fn blanks_around_entries_and_names_in_any_case_are_taken() {
        let t: RoutingTable = " in_order = 0 ,\tDeterministic=1,ADAPTIVE =2 , dmapp_routing_deterministic_1= 3,\
                                Dmapp_Routing_Adaptive_1=4,adaptive_2=5,ADAPTIVE_3=6 "
            .parse()
            .unwrap();
        assert_eq!(t, RoutingTable::ASSUMED);
        assert_eq!(t.to_string(), FULL);
        // A blank inside a name or a value is not around the entry.
        assert!(refusal("ADAPTIVE _1=5").starts_with("entry 1, \"ADAPTIVE _1=5\": the name is not"));
        assert!(refusal("ADAPTIVE=4 5").starts_with("entry 1, \"ADAPTIVE=4 5\": the value is not"));
    }

    #[test]
    fn tables_from_headers() {
        // The oldest public header: three names, implicit values.
        let old = "typedef enum dmapp_routing_type {\n  DMAPP_ROUTING_IN_ORDER, /* no hash */\n  DMAPP_ROUTING_DETERMINISTIC,\n  DMAPP_ROUTING_ADAPTIVE\n} dmapp_routing_type_t;";
        assert_eq!(RoutingTable::from_c_header(old), Err(HeaderError::Table(RoutingTableError::Missing("ADAPTIVE_1"))));
        // Explicit, hexadecimal, implicit after explicit, a name aar does not know, comments
        // with commas, an alias of an earlier enumerator.
        let aries = "#include <x.h>\nenum { A = 1 };\ntypedef enum dmapp_routing_type {\n\
            DMAPP_ROUTING_DETERMINISTIC = 0, // non-minimal, hashed\n\
            DMAPP_ROUTING_DETERMINISTIC_1 = 0x1, /* minimal, hashed */\n\
            DMAPP_ROUTING_RESERVED_2,\n\
            DMAPP_ROUTING_IN_ORDER,\n\
            DMAPP_ROUTING_ADAPTIVE = 04u,\n\
            DMAPP_ROUTING_ADAPTIVE_1, DMAPP_ROUTING_ADAPTIVE_2,\n\
            DMAPP_ROUTING_ADAPTIVE_3,\n\
            DMAPP_ROUTING_DEFAULT = DMAPP_ROUTING_ADAPTIVE\n\
        } dmapp_routing_type_t;";
        let t = RoutingTable::from_c_header(aries).unwrap();
        assert_eq!(
            t.to_string(),
            "IN_ORDER=3,DETERMINISTIC=0,ADAPTIVE=4,DETERMINISTIC_1=1,ADAPTIVE_1=5,ADAPTIVE_2=6,ADAPTIVE_3=7"
        );
        assert_eq!(RoutingTable::from_c_header(include_str!("../../../cabi/dmapp.h")), Ok(RoutingTable::ASSUMED));
        assert_eq!(RoutingTable::from_c_header("int x;"), Err(HeaderError::NoRoutingEnum));
        let bad = "enum { DMAPP_ROUTING_ADAPTIVE = 1 << 2 };";
        assert_eq!(RoutingTable::from_c_header(bad), Err(HeaderError::Unevaluable { at: 7 }), "where it starts");
        let commented =
            "enum {\n  /* 1, 2 */ DMAPP_ROUTING_IN_ORDER = 0, // x, y\n  DMAPP_ROUTING_ADAPTIVE = 1 << 2\n};";
        let at = commented.find("DMAPP_ROUTING_ADAPTIVE").unwrap();
        assert_eq!(RoutingTable::from_c_header(commented), Err(HeaderError::Unevaluable { at }), "past comments");
        let big = "enum { DMAPP_ROUTING_ADAPTIVE = 300 };";
        assert_eq!(RoutingTable::from_c_header(big), Err(HeaderError::TooLarge { at: 7 }));
    }

    #[test]
    fn attribute_buffers() {
        let a = RmaAttrsExt::ZERO.with_routing(Direction::Put, 6).with_routing(Direction::Get, 2);
        assert_eq!((a.routing(Direction::Put), a.routing(Direction::Get)), (6, 2));
        assert_eq!(a.0.iter().filter(|&&b| b != 0).count(), 2);
        assert_eq!(element_bytes(DMAPP_DQW), Some(16));
        assert_eq!(element_bytes(4), None);
    }
}
