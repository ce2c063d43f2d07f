//! MPI-like workloads as per-rank phase programs (ember-style motifs), and node placements.
//!
//! A rank runs its phases in order. A phase posts its sends at once (in order, each one decided
//! by the rank's engine), then waits until every send has completed locally (all responses back)
//! and every expected message has fully arrived; then it computes for `compute_ns` and moves on.

use crate::rng::Rng;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Phase {
    /// (destination rank within the job, bytes, tag)
    pub sends: Vec<(u32, u64, u32)>,
    /// (source rank within the job, tag)
    pub recvs: Vec<(u32, u32)>,
    pub compute_ns: f64,
    /// inside MPI_Alltoall (the engine replaces plain Adaptive with ADAPTIVE1 there)
    pub alltoall: bool,
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
}

impl Workload {
    pub fn name(&self) -> String {
        match self {
            Workload::PingPong { bytes } => format!("pingpong-{bytes}"),
            Workload::Allreduce { bytes } => format!("allreduce-{bytes}"),
            Workload::Alltoall { bytes } => format!("alltoall-{bytes}"),
            Workload::Barrier => "barrier".into(),
            Workload::Broadcast { bytes } => format!("broadcast-{bytes}"),
            Workload::Halo3d { bytes, .. } => format!("halo3d-{bytes}"),
            Workload::Sweep3d { bytes, .. } => format!("sweep3d-{bytes}"),
            Workload::RandomRingLatency => "rr-latency".into(),
            Workload::RandomRingBandwidth { bytes, .. } => format!("rr-bandwidth-{bytes}"),
            Workload::Incast { bytes } => format!("incast-{bytes}"),
            Workload::Bcast { bytes } => format!("bcast-{bytes}"),
        }
    }

    pub fn parse(s: &str) -> Option<Workload> {
        let (name, arg) = match s.split_once(':') {
            Some((a, b)) => (a, Some(b)),
            None => (s, None),
        };
        let bytes = arg.map(parse_size).unwrap_or(Some(8))?;
        Some(match name {
            "pingpong" => Workload::PingPong { bytes },
            "allreduce" => Workload::Allreduce { bytes },
            "alltoall" => Workload::Alltoall { bytes },
            "barrier" => Workload::Barrier,
            "broadcast" | "bcast" => Workload::Broadcast { bytes },
            "halo3d" => Workload::Halo3d { bytes, compute_ns: 1000.0 },
            "sweep3d" => Workload::Sweep3d { bytes, compute_ns: 500.0 },
            "rr-latency" => Workload::RandomRingLatency,
            "rr-bandwidth" => {
                Workload::RandomRingBandwidth { bytes: arg.and_then(parse_size).unwrap_or(131072), outstanding: 8 }
            }
            "incast" => Workload::Incast { bytes },
            _ => return None,
        })
    }

    /// One iteration of rank `r` of `n`; tags are unique within an iteration.
    pub fn phases(&self, r: u32, n: u32, ring: &[u32]) -> Vec<Phase> {
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
        }
        v
    }
}

pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = if let Some(x) = s.strip_suffix("KiB").or(s.strip_suffix('K')).or(s.strip_suffix('k')) {
        (x, 1024)
    } else if let Some(x) = s.strip_suffix("MiB").or(s.strip_suffix('M')) {
        (x, 1 << 20)
    } else if let Some(x) = s.strip_suffix('B') {
        (x, 1)
    } else {
        (s, 1)
    };
    num.trim().parse::<u64>().ok().map(|v| v * mul)
}

fn grid3(n: u32) -> (u32, u32, u32) {
    let mut best = (n, 1, 1);
    let mut score = u32::MAX;
    for x in 1..=n {
        if n % x != 0 {
            continue;
        }
        for y in 1..=n / x {
            if (n / x) % y != 0 {
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

fn grid2(n: u32) -> (u32, u32) {
    let mut x = (n as f64).sqrt() as u32;
    while x > 1 && n % x != 0 {
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
}

impl Placement {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "same-blade" | "blade" => Placement::SameBlade,
            "same-group" | "group" => Placement::SameGroup,
            "across-groups" | "groups" => Placement::AcrossGroups,
            "scattered" => Placement::Scattered,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Placement::SameBlade => "same-blade",
            Placement::SameGroup => "same-group",
            Placement::AcrossGroups => "across-groups",
            Placement::Scattered => "scattered",
        }
    }

    /// Nodes for `n` ranks (one rank per node).
    pub fn nodes(self, topo: &Topology, n: u32, rng: &mut Rng) -> Vec<u32> {
        let p = topo.p;
        let rpg = topo.routers_per_group;
        let npg = p * rpg;
        match self {
            Placement::SameBlade => {
                assert!(n <= p, "same-blade placement holds at most {p} ranks");
                (0..n).collect()
            }
            Placement::SameGroup => {
                assert!(n <= rpg, "same-group placement: at most one rank per router");
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
                let g = topo.groups;
                (0..n).map(|i| (i % g) * npg + ((i / g) * 13 % rpg) * p + (i / g / rpg) % p).collect()
            }
            Placement::Scattered => {
                let mut all: Vec<u32> = (0..topo.n_nodes).collect();
                rng.shuffle(&mut all);
                all.truncate(n as usize);
                all
            }
        }
    }
}
