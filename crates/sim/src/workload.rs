//! MPI-like workloads as per-rank phase programs (ember-style motifs), and node placements.
//!
//! A rank runs its phases in order. A phase posts its sends at once (in order, each one decided
//! by the rank's engine), then waits until every send has completed locally (all responses back)
//! and every expected message has fully arrived; then it computes for `compute_ns` and moves on.

use crate::error::{ParseError, SpecError};
use crate::rng::Rng;
use crate::topology::Topology;
use aar_engine::model::packets;
use aar_engine::ByteSize;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Phase {
    /// (destination rank within the job, bytes, tag)
    pub sends: Vec<(u32, u64, u32)>,
    /// (source rank within the job, tag)
    pub recvs: Vec<(u32, u32)>,
    pub compute_ns: f64,
    /// inside MPI_Alltoall (the engine replaces plain Adaptive with ADAPTIVE1 there)
    pub alltoall: bool,
    /// The collective call this phase begins, by its key (the same on every rank: what libaar.so
    /// makes of an MPI collective's function and arguments), if it begins one.
    pub call_begins: Option<u64>,
    /// This phase ends a collective call.
    pub call_ends: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Workload {
    PingPong {
        bytes: u64,
    },
    Allreduce {
        bytes: u64,
    },
    Alltoall {
        bytes: u64,
    },
    Barrier,
    Broadcast {
        bytes: u64,
    },
    /// 3-D halo exchange with the 6 face neighbours (periodic), then compute
    Halo3d {
        bytes: u64,
        compute_ns: f64,
    },
    /// 2-D wavefront sweeps from the 4 corners, compute per cell block
    Sweep3d {
        bytes: u64,
        compute_ns: f64,
    },
    /// GPCNeT random-ring two-sided latency (8 B) canary
    RandomRingLatency,
    /// GPCNeT random-ring bandwidth canary: 8 outstanding 128 KiB messages per round
    RandomRingBandwidth {
        bytes: u64,
        outstanding: u32,
    },
    /// congestor: every rank sends to rank 0
    Incast {
        bytes: u64,
    },
    /// congestor: rank 0 sends to every rank
    Bcast {
        bytes: u64,
    },
    /// a mixed-phase application: a 3-D halo exchange of `bytes`, an 8-byte allreduce, and the
    /// same again, per iteration (large stall-bound messages alternating with small latency-bound ones)
    HaloAllreduce {
        bytes: u64,
        compute_ns: f64,
    },
}

impl Workload {
    /// `KIND-BYTES`, or the kind alone for the workloads without a size.
    pub fn name(&self) -> String {
        match self.bytes() {
            Some(bytes) => format!("{}-{bytes}", self.kind()),
            None => self.kind().into(),
        }
    }

    /// As `--workload` takes it (`alltoall:4K`, `barrier`).
    pub fn form(&self) -> String {
        match self.bytes() {
            Some(bytes) => format!("{}:{}", self.kind(), ByteSize(bytes)),
            None => self.kind().into(),
        }
    }

    /// The size of its messages; `None` for the workloads without one.
    pub fn bytes(&self) -> Option<u64> {
        match *self {
            Workload::PingPong { bytes }
            | Workload::Allreduce { bytes }
            | Workload::Alltoall { bytes }
            | Workload::Broadcast { bytes }
            | Workload::Halo3d { bytes, .. }
            | Workload::Sweep3d { bytes, .. }
            | Workload::RandomRingBandwidth { bytes, .. }
            | Workload::Incast { bytes }
            | Workload::Bcast { bytes }
            | Workload::HaloAllreduce { bytes, .. } => Some(bytes),
            Workload::Barrier | Workload::RandomRingLatency => None,
        }
    }

    /// The kind of workload, as in [`Workload::name`].
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::PingPong { .. } => "pingpong",
            Workload::Allreduce { .. } => "allreduce",
            Workload::Alltoall { .. } => "alltoall",
            Workload::Barrier => "barrier",
            Workload::Broadcast { .. } => "broadcast",
            Workload::Halo3d { .. } => "halo3d",
            Workload::Sweep3d { .. } => "sweep3d",
            Workload::RandomRingLatency => "rr-latency",
            Workload::RandomRingBandwidth { .. } => "rr-bandwidth",
            Workload::Incast { .. } => "incast",
            Workload::Bcast { .. } => "bcast",
            Workload::HaloAllreduce { .. } => "halo-allreduce",
        }
    }

    /// The same workload with messages of `bytes`; an error for the ones without a size, and for
    /// messages above [`MAX_MESSAGE_BYTES`].
    pub fn with_bytes(&self, bytes: u64) -> Result<Workload, ParseError> {
        let bytes = simulated_message(self.kind(), bytes)?;
        Ok(match self.clone() {
            Workload::PingPong { .. } => Workload::PingPong { bytes },
            Workload::Allreduce { .. } => Workload::Allreduce { bytes },
            Workload::Alltoall { .. } => Workload::Alltoall { bytes },
            Workload::Broadcast { .. } => Workload::Broadcast { bytes },
            Workload::Halo3d { compute_ns, .. } => Workload::Halo3d { bytes, compute_ns },
            Workload::Sweep3d { compute_ns, .. } => Workload::Sweep3d { bytes, compute_ns },
            Workload::RandomRingBandwidth { outstanding, .. } => Workload::RandomRingBandwidth { bytes, outstanding },
            Workload::Incast { .. } => Workload::Incast { bytes },
            Workload::Bcast { .. } => Workload::Bcast { bytes },
            Workload::HaloAllreduce { compute_ns, .. } => Workload::HaloAllreduce { bytes, compute_ns },
            Workload::Barrier => return Err(ParseError::NoSize { workload: "barrier" }),
            Workload::RandomRingLatency => return Err(ParseError::NoSize { workload: "rr-latency" }),
        })
    }

    /// One iteration of rank `r` of `n`; tags are unique within an iteration. A collective's
    /// phases are marked as one call ([`Phase::call_begins`], [`Phase::call_ends`]).
    pub fn phases(&self, r: u32, n: u32, ring: &[u32]) -> Vec<Phase> {
        let mut v = self.motif(r, n, ring);
        // kinds of call apart as libaar.so tells MPI collectives apart: the function and its size;
        // a barrier, whose messages carry no payload, is not a call `steady` routes as a whole
        // (libaar.so: `MpiFunction::carries_payload`)
        let kind = match *self {
            Workload::Allreduce { bytes } => Some((1, bytes)),
            Workload::Alltoall { bytes } => Some((2, bytes)),
            Workload::Broadcast { bytes } => Some((4, bytes)),
            _ => None,
        };
        if let (Some((function, bytes)), Some(first)) = (kind, v.first_mut()) {
            first.call_begins = Some(aar_engine::calls::call_key(&[function, bytes]));
            if let Some(last) = v.last_mut() {
                last.call_ends = true;
            }
        }
        v
    }

    fn motif(&self, r: u32, n: u32, ring: &[u32]) -> Vec<Phase> {
        let mut v = Vec::new();
        match *self {
            Workload::PingPong { bytes } => {
                if r == 0 {
                    v.push(Phase { sends: vec![(1, bytes, 0)], ..Default::default() });
                    v.push(Phase { recvs: vec![(1, 1)], ..Default::default() });
                } else if r == 1 {
                    v.push(Phase { recvs: vec![(0, 0)], ..Default::default() });
                    v.push(Phase { sends: vec![(0, bytes, 1)], ..Default::default() });
                }
            }
            Workload::Allreduce { bytes } => {
                let p2 = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
                if r >= p2 {
                    v.push(Phase { sends: vec![(r - p2, bytes, 100)], ..Default::default() });
                    v.push(Phase { recvs: vec![(r - p2, 101)], ..Default::default() });
                    return v;
                }
                if r + p2 < n {
                    v.push(Phase { recvs: vec![(r + p2, 100)], ..Default::default() });
                }
                let mut k = 0;
                while (1 << k) < p2 {
                    let partner = r ^ (1 << k);
                    v.push(Phase { sends: vec![(partner, bytes, k)], recvs: vec![(partner, k)], ..Default::default() });
                    k += 1;
                }
                if r + p2 < n {
                    v.push(Phase { sends: vec![(r + p2, bytes, 101)], ..Default::default() });
                }
            }
            Workload::Alltoall { bytes } => {
                let mut ph = Phase { alltoall: true, ..Default::default() };
                for i in 1..n {
                    ph.sends.push(((r + i) % n, bytes, 0));
                    ph.recvs.push(((r + n - i) % n, 0));
                }
                v.push(ph);
            }
            Workload::Barrier => {
                let mut k = 0;
                while (1u32 << k) < n {
                    let d = 1u32 << k;
                    v.push(Phase {
                        sends: vec![((r + d) % n, 8, k)],
                        recvs: vec![((r + n - d % n) % n, k)],
                        ..Default::default()
                    });
                    k += 1;
                }
            }
            Workload::Broadcast { bytes } => {
                // binomial tree rooted at 0: parent = r - lowbit(r), children r + m for m < lowbit(r)
                let low = if r == 0 { n.next_power_of_two() } else { r & r.wrapping_neg() };
                if r != 0 {
                    v.push(Phase { recvs: vec![(r - low, 0)], ..Default::default() });
                }
                let mut ph = Phase::default();
                let mut m = low >> 1;
                while m > 0 {
                    if r + m < n {
                        ph.sends.push((r + m, bytes, 0));
                    }
                    m >>= 1;
                }
                if !ph.sends.is_empty() {
                    v.push(ph);
                }
            }
            Workload::Halo3d { bytes, compute_ns } => {
                let (px, py, pz) = grid3(n);
                let (x, y, z) = (r % px, (r / px) % py, r / (px * py));
                let id = |x: u32, y: u32, z: u32| x + px * (y + py * z);
                let nb = [
                    id((x + 1) % px, y, z),
                    id((x + px - 1) % px, y, z),
                    id(x, (y + 1) % py, z),
                    id(x, (y + py - 1) % py, z),
                    id(x, y, (z + 1) % pz),
                    id(x, y, (z + pz - 1) % pz),
                ];
                let mut ph = Phase { compute_ns: 0.0, ..Default::default() };
                for (k, &d) in nb.iter().enumerate() {
                    if d != r {
                        ph.sends.push((d, bytes, k as u32));
                    }
                }
                // the message this rank gets from neighbour d carries the tag d used: the opposite face
                for (k, &d) in nb.iter().enumerate() {
                    if d != r {
                        ph.recvs.push((d, (k ^ 1) as u32));
                    }
                }
                v.push(Phase { compute_ns, ..Default::default() });
                v.push(ph);
            }
            Workload::Sweep3d { bytes, compute_ns } => {
                let (px, py) = grid2(n);
                let (x, y) = (r % px, r / px);
                let id = |x: u32, y: u32| x + px * y;
                for (s, (dx, dy)) in [(1i32, 1i32), (-1, 1), (1, -1), (-1, -1)].iter().enumerate() {
                    let s = s as u32 * 4;
                    let mut recv = Phase::default();
                    let ux = x as i32 - dx;
                    let uy = y as i32 - dy;
                    if ux >= 0 && ux < px as i32 {
                        recv.recvs.push((id(ux as u32, y), s));
                    }
                    if uy >= 0 && uy < py as i32 {
                        recv.recvs.push((id(x, uy as u32), s + 1));
                    }
                    recv.compute_ns = compute_ns;
                    v.push(recv);
                    let mut send = Phase::default();
                    let (nx, ny) = (x as i32 + dx, y as i32 + dy);
                    if nx >= 0 && nx < px as i32 {
                        send.sends.push((id(nx as u32, y), bytes, s));
                    }
                    if ny >= 0 && ny < py as i32 {
                        send.sends.push((id(x, ny as u32), bytes, s + 1));
                    }
                    v.push(send);
                }
            }
            Workload::RandomRingLatency | Workload::RandomRingBandwidth { .. } => {
                let (bytes, k) = match *self {
                    Workload::RandomRingBandwidth { bytes, outstanding } => (bytes, outstanding),
                    _ => (8, 1),
                };
                let pos = ring.iter().position(|&x| x == r).unwrap() as u32;
                let next = ring[((pos + 1) % n) as usize];
                let prev = ring[((pos + n - 1) % n) as usize];
                let mut ph = Phase::default();
                for t in 0..k {
                    ph.sends.push((next, bytes, t));
                    ph.recvs.push((prev, t));
                }
                v.push(ph);
            }
            Workload::Incast { bytes } => {
                if r == 0 {
                    v.push(Phase { recvs: (1..n).map(|s| (s, 0)).collect(), ..Default::default() });
                } else {
                    v.push(Phase { sends: vec![(0, bytes, 0)], ..Default::default() });
                }
            }
            Workload::Bcast { bytes } => {
                if r == 0 {
                    v.push(Phase { sends: (1..n).map(|d| (d, bytes, 0)).collect(), ..Default::default() });
                } else {
                    v.push(Phase { recvs: vec![(0, 0)], ..Default::default() });
                }
            }
            Workload::HaloAllreduce { bytes, compute_ns } => {
                let halo = Workload::Halo3d { bytes, compute_ns }.phases(r, n, ring);
                let allreduce = Workload::Allreduce { bytes: 8 }.phases(r, n, ring);
                // four motifs in a row: tags apart by 256 (the halo uses 0..5, the allreduce up to 101)
                for (i, motif) in [&halo, &allreduce, &halo, &allreduce].into_iter().enumerate() {
                    let shift = 256 * i as u32;
                    v.extend(motif.iter().map(|p| Phase {
                        sends: p.sends.iter().map(|&(d, b, t)| (d, b, t + shift)).collect(),
                        recvs: p.recvs.iter().map(|&(s, t)| (s, t + shift)).collect(),
                        ..p.clone()
                    }));
                }
            }
        }
        v
    }
}

/// The largest message a workload sends: 1 GiB, 16 Mi packets, each of which the simulator moves
/// hop by hop (the paper measures up to 4 MiB).
pub const MAX_MESSAGE_BYTES: u64 = 1 << 30;

/// `bytes`, if the simulator can move a message of that size: at most [`MAX_MESSAGE_BYTES`].
pub fn simulated_message(what: &str, bytes: u64) -> Result<u64, ParseError> {
    if bytes <= MAX_MESSAGE_BYTES {
        return Ok(bytes);
    }
    Err(ParseError::MessageTooLarge {
        workload: what.to_string(),
        bytes,
        packets: packets(bytes),
        max: MAX_MESSAGE_BYTES,
        max_packets: packets(MAX_MESSAGE_BYTES),
    })
}

/// Workload names as `aar sim --workload` takes them, with their size: the parser's messages and
/// `aar sim`'s help.
pub const WORKLOADS: &str = "pingpong[:SIZE], allreduce[:SIZE], alltoall[:SIZE], barrier, broadcast[:SIZE], \
halo3d[:SIZE], sweep3d[:SIZE], halo-allreduce[:SIZE], rr-latency, rr-bandwidth[:SIZE], incast[:SIZE] (SIZE e.g. 64, 4K, 4KiB, 1M)";

impl FromStr for Workload {
    type Err = ParseError;

    /// `NAME[:SIZE]`; without a size, messages are 8 bytes (rr-bandwidth: 128 KiB, GPCNeT's).
    fn from_str(s: &str) -> Result<Workload, ParseError> {
        let (name, size) = match s.trim().split_once(':') {
            Some((name, size)) => (name, Some(size)),
            None => (s.trim(), None),
        };
        // Names in any case, as every name the project reads.
        let name = name.trim().to_ascii_lowercase();
        let sizeless = match name.as_str() {
            "barrier" => Some(("barrier", Workload::Barrier)),
            "rr-latency" => Some(("rr-latency", Workload::RandomRingLatency)),
            _ => None,
        };
        if let Some((workload, w)) = sizeless {
            return if size.is_none() { Ok(w) } else { Err(ParseError::NoSize { workload }) };
        }
        let w = match name.as_str() {
            "pingpong" => Workload::PingPong { bytes: 8 },
            "allreduce" => Workload::Allreduce { bytes: 8 },
            "alltoall" => Workload::Alltoall { bytes: 8 },
            "broadcast" | "bcast" => Workload::Broadcast { bytes: 8 },
            "halo3d" => Workload::Halo3d { bytes: 8, compute_ns: 1000.0 },
            "sweep3d" => Workload::Sweep3d { bytes: 8, compute_ns: 500.0 },
            "halo-allreduce" => Workload::HaloAllreduce { bytes: 8, compute_ns: 1000.0 },
            "rr-bandwidth" => Workload::RandomRingBandwidth { bytes: 128 << 10, outstanding: 8 },
            "incast" => Workload::Incast { bytes: 8 },
            _ => return Err(ParseError::Unknown { what: "workload", text: s.into(), accepted: WORKLOADS }),
        };
        match size {
            None => Ok(w),
            Some(x) => w.with_bytes(x.parse::<ByteSize>().map_err(ParseError::Size)?.0),
        }
    }
}

fn grid3(n: u32) -> (u32, u32, u32) {
    let mut best = (n, 1, 1);
    let mut score = u32::MAX;
    for x in 1..=n {
        if !n.is_multiple_of(x) {
            continue;
        }
        for y in 1..=n / x {
            if !(n / x).is_multiple_of(y) {
                continue;
            }
            let z = n / x / y;
            let s = x.max(y).max(z) - x.min(y).min(z);
            if s < score {
                score = s;
                best = (x, y, z);
            }
        }
    }
    best
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn grid2(n: u32) -> (u32, u32) {
    let mut x = (n as f64).sqrt() as u32;
    while x > 1 && !n.is_multiple_of(x) {
        x -= 1;
    }
    (x.max(1), n / x.max(1))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// all ranks on the 4 nodes of one router (blade); at most 4 nodes
    SameBlade,
    /// nodes of group 0 spread over chassis and slots (never two on one router)
    SameGroup,
    /// ranks alternate between groups 0, 1, 2, ... (rank i in group i % groups)
    AcrossGroups,
    /// random nodes anywhere (seeded)
    Scattered,
    /// as a scheduler packs a job into a busy machine: `routers` routers spread evenly over the
    /// first `groups` groups (the routers of a group evenly over its chassis and slots), every
    /// node of a router used before the next one, ranks numbered in that order
    Packed { routers: u32, groups: u32 },
}

/// The placements `aar sim --placement` takes: the parser's messages and `aar sim`'s help.
pub const PLACEMENTS: &str = "same-blade, same-group, across-groups, scattered, packed:ROUTERS:GROUPS";

/// The form of a packed placement, for messages.
const PACKED: &str = "packed:ROUTERS:GROUPS (e.g. packed:257:6)";

impl FromStr for Placement {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Placement, ParseError> {
        let t = s.trim().to_ascii_lowercase();
        Ok(match t.as_str() {
            "same-blade" => Placement::SameBlade,
            "same-group" => Placement::SameGroup,
            "across-groups" => Placement::AcrossGroups,
            "scattered" => Placement::Scattered,
            t if t.starts_with("packed") => {
                let form = || ParseError::Form { text: s.into(), form: PACKED };
                let v: Vec<u32> = t
                    .split(':')
                    .skip(1)
                    .map(|x| x.trim().parse::<u32>().map_err(|_| form()))
                    .collect::<Result<_, _>>()?;
                match (t.split(':').next(), v.as_slice()) {
                    (Some("packed"), &[routers, groups]) if groups >= 1 && routers >= groups => {
                        Placement::Packed { routers, groups }
                    }
                    (Some("packed"), &[routers, groups]) => {
                        return Err(ParseError::PackedShape { text: s.into(), routers, groups })
                    }
                    _ => return Err(form()),
                }
            }
            _ => return Err(ParseError::Unknown { what: "placement", text: s.into(), accepted: PLACEMENTS }),
        })
    }
}

impl Placement {
    pub fn name(self) -> &'static str {
        match self {
            Placement::SameBlade => "same-blade",
            Placement::SameGroup => "same-group",
            Placement::AcrossGroups => "across-groups",
            Placement::Scattered => "scattered",
            Placement::Packed { .. } => "packed",
        }
    }

    /// The placement as the parser reads it back (`packed:257:6`, or the name of the others),
    /// for messages and the experiment id: two packed placements differ in their shape.
    pub fn form(self) -> String {
        match self {
            Placement::Packed { routers, groups } => format!("packed:{routers}:{groups}"),
            other => other.name().into(),
        }
    }

    /// The most ranks (one per node) the placement has nodes for on `topo`: the nodes of one
    /// router (same blade), one node per router of a group (same group), the nodes of its routers
    /// (packed), or every node.
    pub fn capacity(self, topo: &Topology) -> u32 {
        match self {
            Placement::SameBlade => topo.p,
            Placement::SameGroup => topo.routers_per_group,
            Placement::AcrossGroups | Placement::Scattered => topo.n_nodes,
            Placement::Packed { routers, .. } => routers.saturating_mul(topo.p),
        }
    }

    /// What holds more nodes than this placement (for a job too large for it), in words that suit
    /// both `aar sim`'s options and `AAR_EMU_SIM`'s keys.
    pub fn larger(self) -> &'static str {
        match self {
            Placement::SameBlade => "a placement over more routers (same-group, across-groups, scattered)",
            Placement::SameGroup => "a placement that spans groups (across-groups, scattered)",
            Placement::Packed { .. } => {
                "a packed placement of more routers (packed:ROUTERS:GROUPS, over more groups where its groups have no \
                 router left)"
            }
            Placement::AcrossGroups | Placement::Scattered => "a larger network (more groups)",
        }
    }

    /// Whether a job of `nodes` nodes fits on `topo` with this placement (a packed one also needs
    /// its groups in the machine, at most all their routers, and a node on every router).
    pub fn check(self, topo: &Topology, nodes: u32) -> Result<(), SpecError> {
        if let Placement::Packed { routers, groups } = self {
            if groups > topo.groups || routers > groups * topo.routers_per_group || nodes < routers {
                return Err(SpecError::Packed {
                    routers,
                    groups,
                    nodes,
                    machine_groups: topo.groups,
                    routers_per_group: topo.routers_per_group,
                });
            }
        }
        let max = self.capacity(topo);
        if nodes > max {
            // one rank per node here; with more, the experiment says it in nodes
            return Err(SpecError::PlacementFull { placement: self.name(), ranks: nodes, max, larger: self.larger() });
        }
        Ok(())
    }

    /// Nodes for `n` ranks (one rank per node); `n` must pass [`Placement::check`].
    pub fn nodes(self, topo: &Topology, n: u32, rng: &mut Rng) -> Vec<u32> {
        if let Err(e) = self.check(topo, n) {
            panic!("{e}");
        }
        let p = topo.p;
        let rpg = topo.routers_per_group;
        let npg = p * rpg;
        match self {
            Placement::SameBlade => (0..n).collect(),
            Placement::SameGroup => {
                // routers chosen so consecutive ranks differ in chassis and slot where possible
                let step = if topo.aries { 16 * 3 + 7 } else { 1 };
                let mut used = vec![false; rpg as usize];
                let mut out = Vec::new();
                let mut r = 0u32;
                while out.len() < n as usize {
                    while used[r as usize] {
                        r = (r + 1) % rpg;
                    }
                    used[r as usize] = true;
                    out.push(r * p);
                    r = (r + step) % rpg;
                }
                out
            }
            Placement::AcrossGroups => {
                // the j-th rank of a group on router j * stride of it, spread over chassis and
                // slots: a stride that shares no factor with the routers of a group visits each
                // once before it uses a router's next node (13 for Aries' 96; a Kim group of 13
                // or 26 routers put every rank of a group on one node)
                let g = topo.groups;
                let stride = (13..).find(|&s| gcd(s, rpg) == 1).unwrap_or(1);
                (0..n).map(|i| (i % g) * npg + ((i / g) * stride % rpg) * p + (i / g / rpg) % p).collect()
            }
            Placement::Scattered => {
                let mut all: Vec<u32> = (0..topo.n_nodes).collect();
                rng.shuffle(&mut all);
                all.truncate(n as usize);
                all
            }
            Placement::Packed { routers, groups } => {
                // routers per group as even as possible (the first groups get one more), spread
                // evenly over the group's chassis and slots; ranks per router the same way
                let mut out = Vec::with_capacity(n as usize);
                let mut router = 0;
                for g in 0..groups {
                    let k = routers / groups + u32::from(g < routers % groups);
                    for j in 0..k {
                        let r = g * rpg + j * rpg / k;
                        let on_router = n / routers + u32::from(router < n % routers);
                        out.extend((0..on_router).map(|i| r * p + i));
                        router += 1;
                    }
                }
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopoSpec;

    #[test]
    fn workloads_parse_with_sizes_as_the_engine_reads_them() {
        let parse = |s: &str| s.parse::<Workload>();
        for size in ["4096", "4K", "4k", "4KB", "4KiB", "4 KiB"] {
            assert_eq!(parse(&format!("alltoall:{size}")), Ok(Workload::Alltoall { bytes: 4096 }), "{size}");
        }
        assert_eq!(parse("pingpong:64k"), Ok(Workload::PingPong { bytes: 65536 }));
        assert_eq!(parse("pingpong"), Ok(Workload::PingPong { bytes: 8 }));
        assert_eq!(parse("bcast:1M"), Ok(Workload::Broadcast { bytes: 1 << 20 }));
        assert_eq!(parse("rr-bandwidth"), Ok(Workload::RandomRingBandwidth { bytes: 128 << 10, outstanding: 8 }));
        assert_eq!(parse("barrier"), Ok(Workload::Barrier));
        assert_eq!(parse("halo3d:2K"), Ok(Workload::Halo3d { bytes: 2048, compute_ns: 1000.0 }));
        assert_eq!(parse("halo-allreduce:1M"), Ok(Workload::HaloAllreduce { bytes: 1 << 20, compute_ns: 1000.0 }));
        // Names in any case, as the engine's own names (policies, modes) are read.
        assert_eq!(parse("AllToAll:4K"), Ok(Workload::Alltoall { bytes: 4096 }));
        assert_eq!(parse(" RR-Latency "), Ok(Workload::RandomRingLatency));
        for bad in ["pingpong:4X", "pingpong:", "pingpong:-1", "pingpong:99999999999999999999M", "pingpong:2000000G"] {
            assert!(matches!(parse(bad), Err(ParseError::Size(_))), "{bad}: {:?}", parse(bad));
        }
        assert_eq!(parse("barrier:4K"), Err(ParseError::NoSize { workload: "barrier" }));
        // Every packet is simulated: 1 GiB (16 Mi packets) is the largest message, whichever way
        // the size comes.
        assert_eq!(parse("halo-allreduce:1G"), Ok(Workload::HaloAllreduce { bytes: 1 << 30, compute_ns: 1000.0 }));
        let too_large = |kind: &str, bytes: u64| ParseError::MessageTooLarge {
            workload: kind.into(),
            bytes,
            packets: bytes.div_ceil(64),
            max: 1 << 30,
            max_packets: 1 << 24,
        };
        assert_eq!(parse("halo-allreduce:1025M"), Err(too_large("halo-allreduce", 1025 << 20)));
        assert_eq!(Workload::Incast { bytes: 8 }.with_bytes((1 << 30) + 1), Err(too_large("incast", (1 << 30) + 1)));
        let e = parse("pingpong:2G").unwrap_err().to_string();
        assert!(e.contains("pingpong messages of 2147483648 bytes are 33554432 packets"), "{e}");
        let e = parse("allgather:8").unwrap_err().to_string();
        assert!(e.contains("\"allgather:8\"") && e.contains("rr-latency"), "{e}");
    }

    #[test]
    fn the_mixed_workload_receives_every_message_it_sends_once() {
        let w = Workload::HaloAllreduce { bytes: 1 << 20, compute_ns: 1000.0 };
        for n in [2u32, 6, 8, 12] {
            let ring: Vec<u32> = (0..n).collect();
            let (mut sent, mut expected) = (Vec::new(), Vec::new());
            for r in 0..n {
                let phases = w.phases(r, n, &ring);
                for p in &phases {
                    sent.extend(p.sends.iter().map(|&(d, b, t)| (r, d, t, b > 8)));
                    expected.extend(p.recvs.iter().map(|&(s, t)| (s, r, t, t % 512 < 256)));
                }
                let large = phases.iter().flat_map(|p| &p.sends).filter(|s| s.1 == 1 << 20).count();
                let small = phases.iter().flat_map(|p| &p.sends).filter(|s| s.1 == 8).count();
                assert!(large > 0 && small > 0, "rank {r} of {n}: {large} halo and {small} allreduce messages");
            }
            sent.sort_unstable();
            expected.sort_unstable();
            assert_eq!(sent, expected, "{n} ranks");
        }
    }

    #[test]
    fn sweeps_resize_the_workloads_that_have_a_size() {
        let w = Workload::Sweep3d { bytes: 8, compute_ns: 500.0 };
        assert_eq!(w.with_bytes(64), Ok(Workload::Sweep3d { bytes: 64, compute_ns: 500.0 }));
        assert_eq!(Workload::RandomRingLatency.with_bytes(64), Err(ParseError::NoSize { workload: "rr-latency" }));
    }

    #[test]
    fn placements_parse_and_know_their_capacity() {
        assert_eq!(" same-blade".parse::<Placement>(), Ok(Placement::SameBlade));
        // Only the names PLACEMENTS gives, which the documents give.
        for short in ["blade", "group", "groups"] {
            assert!(short.parse::<Placement>().is_err(), "{short}");
        }
        assert_eq!(" across-groups ".parse::<Placement>(), Ok(Placement::AcrossGroups));
        assert_eq!("Same-Group".parse::<Placement>(), Ok(Placement::SameGroup));
        assert_eq!("PACKED:8:2".parse::<Placement>(), Ok(Placement::Packed { routers: 8, groups: 2 }));
        let e = "diagonal".parse::<Placement>().unwrap_err().to_string();
        assert!(e.contains("\"diagonal\"") && e.contains("same-blade, same-group, across-groups, scattered"), "{e}");
        assert_eq!("packed:257:6".parse::<Placement>(), Ok(Placement::Packed { routers: 257, groups: 6 }));
        for bad in ["packed:5:6", "packed:4:0"] {
            let e = bad.parse::<Placement>().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("ROUTERS at least GROUPS"), "{bad}: {e}");
        }
        for bad in ["packed", "packed:257", "packed:257:6:1", "packed:x:6", "packedd:4:2"] {
            let e = bad.parse::<Placement>().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("packed:ROUTERS:GROUPS"), "{bad}: {e}");
        }
        let aries = Topology::new(TopoSpec::aries(2));
        let packed = Placement::Packed { routers: 9, groups: 2 };
        assert_eq!(packed.capacity(&aries), 36);
        assert!(packed.check(&aries, 8).is_err(), "a rank on every router");
        assert!(Placement::Packed { routers: 9, groups: 3 }.check(&aries, 20).is_err(), "3 groups of 2");
        assert!(Placement::Packed { routers: 200, groups: 2 }.check(&aries, 200).is_err(), "96 routers a group");
        let e = packed.check(&aries, 37).unwrap_err().to_string();
        assert!(e.contains("packed holds at most 36"), "{e}");
        assert!(
            e.ends_with(
                "give at most 36 ranks, or a packed placement of more routers (packed:ROUTERS:GROUPS, over \
                 more groups where its groups have no router left)"
            ),
            "{e}"
        );
        let nodes = packed.nodes(&aries, 34, &mut Rng::new(1));
        let routers: Vec<u32> = nodes.iter().map(|n| n / 4).collect();
        // 5 routers in group 0 (0, 19, 38, 57, 76), 4 in group 1; 34 ranks: 7 routers of 4, 2 of 3
        assert_eq!(
            routers,
            [
                0, 0, 0, 0, 19, 19, 19, 19, 38, 38, 38, 38, 57, 57, 57, 57, 76, 76, 76, 76, 96, 96, 96, 96, 120, 120,
                120, 120, 144, 144, 144, 168, 168, 168
            ]
        );
        let caps: Vec<u32> =
            [Placement::SameBlade, Placement::SameGroup, Placement::AcrossGroups, Placement::Scattered]
                .iter()
                .map(|p| p.capacity(&aries))
                .collect();
        assert_eq!(caps, [4, 96, 768, 768]);
        for p in [Placement::SameBlade, Placement::SameGroup, Placement::AcrossGroups, Placement::Scattered] {
            let n = p.capacity(&aries);
            assert_eq!(p.nodes(&aries, n, &mut Rng::new(1)).len(), n as usize, "{p:?} places its capacity");
            assert!(p.check(&aries, n + 1).is_err());
        }
    }

    #[test]
    fn placements_give_every_rank_a_node_of_its_own() {
        // Kim groups of 13 and 26 routers: across-groups stepped through a group's routers by 13,
        // so every rank of a group landed on one node (ranks 0 and 3 of 6 on node 0 of 3 groups)
        let shapes = [
            TopoSpec::aries(2),
            TopoSpec::aries(3),
            TopoSpec::Kim { p: 2, a: 13, h: 2, g: 3 },
            TopoSpec::Kim { p: 2, a: 26, h: 1, g: 3 },
            TopoSpec::booksim_k4(),
        ];
        for spec in shapes {
            let topo = Topology::new(spec.clone());
            for p in [Placement::SameBlade, Placement::SameGroup, Placement::AcrossGroups, Placement::Scattered] {
                let n = p.capacity(&topo);
                let mut nodes = p.nodes(&topo, n, &mut Rng::new(1));
                nodes.sort_unstable();
                nodes.dedup();
                assert_eq!(nodes.len(), n as usize, "{spec:?} {p:?}: {n} ranks on {} nodes", nodes.len());
                assert!(nodes.iter().all(|&x| x < topo.n_nodes), "{spec:?} {p:?}");
            }
        }
        // Aries keeps its stride of 13: the same nodes as before
        let aries = Topology::new(TopoSpec::aries(2));
        assert_eq!(Placement::AcrossGroups.nodes(&aries, 6, &mut Rng::new(1)), [0, 384, 52, 436, 104, 488]);
    }
}
