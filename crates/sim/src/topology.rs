//! Dragonfly topologies: the canonical one-dimensional Dragonfly of Kim et al. (p, a, h, g) and an
//! Aries-like two-dimensional group (6 chassis x 16 routers, row links all-to-all in a chassis,
//! 3 parallel column links between every pair of chassis, up to 10 global links per router).
//!
//! Ids are plain integers. Router `r` is in group `r / routers_per_group`. Node `n` hangs off router
//! `n / p` at terminal port `n % p`. A *port id* is `router * radix + port`; every router has the same
//! port layout: `[0, p)` terminals, then local ports, then global ports. A link is bidirectional:
//! output port `x` feeds input port `peer[x]`, and input port `x` is fed by output port `peer[x]`.

use crate::error::{ParseError, TopologyError};
use serde::{Deserialize, Serialize};
use std::num::{IntErrorKind, ParseIntError};
use std::str::FromStr;

pub const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PortClass {
    Terminal,
    /// Kim: the only local class. Aries: rank-1 (green, backplane) links within a chassis.
    Row,
    /// Aries rank-2 (black) links between chassis, 3 parallel links per pair.
    Column,
    Global,
    /// A global port that is not cabled (more ports than the group count can use).
    Unused,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TopoSpec {
    /// Kim et al.: p terminals, a routers per group (all-to-all), h global links per router, g groups.
    Kim { p: u32, a: u32, h: u32, g: u32 },
    /// Aries-like: 4 nodes per router, 6 x 16 routers per group, `global_per_router` global ports.
    Aries { groups: u32, global_per_router: u32 },
}

impl TopoSpec {
    /// BookSim2 `dragonflynew` with k = 4: p = 4, a = 8, h = 4, g = 33 (1,056 nodes).
    pub fn booksim_k4() -> Self {
        TopoSpec::Kim { p: 4, a: 8, h: 4, g: 33 }
    }
    pub fn aries(groups: u32) -> Self {
        TopoSpec::Aries { groups, global_per_router: 10 }
    }
    /// The number of groups, without building the network.
    pub fn groups(&self) -> u32 {
        match *self {
            TopoSpec::Kim { g, .. } => g,
            TopoSpec::Aries { groups, .. } => groups,
        }
    }
    pub fn describe(&self) -> String {
        match self {
            TopoSpec::Kim { p, a, h, g } => format!("Kim dragonfly p={p} a={a} h={h} g={g}"),
            TopoSpec::Aries { groups, global_per_router } => {
                format!("Aries-like {groups} groups x 96 routers, {global_per_router} global ports/router")
            }
        }
    }
}

/// The size of the network a [`TopoSpec`] names, as the simulator builds it: an Aries-like spec
/// names only its groups and global ports, the rest is the Aries group's. What the records'
/// configuration gives beside the spec ([`crate::record::RunConfig`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub groups: u32,
    pub routers_per_group: u32,
    pub nodes_per_router: u32,
    /// global ports of every router (cabled or not: a small network leaves some unused)
    pub global_ports_per_router: u32,
    pub routers: u64,
    pub nodes: u64,
}

impl TopoSpec {
    /// The network's size ([`Shape`]).
    pub fn shape(&self) -> Shape {
        let (p, a, h, g) = match *self {
            TopoSpec::Kim { p, a, h, g } => (p, a, h, g),
            TopoSpec::Aries { groups, global_per_router } => {
                (ARIES_NODES_PER_ROUTER, ARIES_ROWS * ARIES_COLS, global_per_router, groups)
            }
        };
        let routers = u64::from(a) * u64::from(g);
        Shape {
            groups: g,
            routers_per_group: a,
            nodes_per_router: p,
            global_ports_per_router: h,
            routers,
            nodes: routers * u64::from(p),
        }
    }

    /// Nodes of the network: nodes per router x routers per group x groups.
    pub fn nodes(&self) -> u64 {
        self.shape().nodes
    }

    /// Ports of every router: its nodes', its local links' and its global links'.
    pub fn radix(&self) -> u32 {
        match *self {
            TopoSpec::Kim { p, a, h, .. } => p + (a - 1) + h,
            TopoSpec::Aries { global_per_router, .. } => {
                ARIES_NODES_PER_ROUTER + (ARIES_COLS - 1) + (ARIES_ROWS - 1) * ARIES_COL_LINKS + global_per_router
            }
        }
    }

    /// Whether the simulator can build this Dragonfly: every dimension in range, a global link
    /// between every pair of groups, at most [`MAX_NODES`] nodes and at most [`MAX_PORTS`] router
    /// ports.
    pub fn check(&self) -> Result<(), TopologyError> {
        let range = |name, value: u32, min: u32, max: u32| {
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(TopologyError::OutOfRange { name, value: value.into(), min: min.into(), max: max.into() })
            }
        };
        let (a, h, g) = match *self {
            TopoSpec::Kim { p, a, h, g } => {
                for (name, value) in KIM_NAMES.iter().zip([p, a, h]) {
                    range(name, value, 1, KIM_MAX_DIM)?;
                }
                (a, h, g)
            }
            TopoSpec::Aries { groups, global_per_router } => {
                range("global ports per router", global_per_router, 1, ARIES_MAX_GLOBAL_PER_ROUTER)?;
                (ARIES_ROWS * ARIES_COLS, global_per_router, groups)
            }
        };
        let channels = a * h;
        if g == 0 {
            return Err(TopologyError::OutOfRange { name: "groups", value: 0, min: 1, max: u64::from(channels) + 1 });
        }
        if g - 1 > channels {
            let aries = matches!(self, TopoSpec::Aries { .. });
            return Err(TopologyError::TooManyGroups { groups: g, channels, aries });
        }
        let nodes = self.nodes();
        if nodes > MAX_NODES {
            return Err(TopologyError::TooLarge { nodes, max: MAX_NODES });
        }
        let ports = u64::from(a) * u64::from(g) * u64::from(self.radix());
        if ports > MAX_PORTS {
            return Err(TopologyError::TooManyPorts { ports, max: MAX_PORTS });
        }
        Ok(())
    }
}

/// The most nodes a simulated network may have.
pub const MAX_NODES: u64 = 1 << 20;

/// The most router ports (routers x ports per router) the simulator builds: each holds its
/// channel's state, a credit counter per virtual channel and its links, about 140 bytes (the
/// peak resident size of a ping-pong on 400 Aries groups, 1.69 M ports, was 241 MB), so this
/// is about 1.2 GB. The largest Aries network (961 groups of 96 routers of 44 ports) has 4.06 M;
/// a Kim network of large routers can have far more nodes' worth of ports than of nodes
/// (`1,256,256,4096`: 1,048,576 nodes but 537 M ports, 75 GB).
pub const MAX_PORTS: u64 = 1 << 23;

/// The most nodes per router, routers per group and global links per router of a Kim et al.
/// Dragonfly.
pub const KIM_MAX_DIM: u32 = 256;

/// The numbers of a [`KimShape`] as messages name them, in the order `p,a,h,g`.
const KIM_NAMES: [&str; 4] =
    ["p (nodes per router)", "a (routers per group)", "h (global links per router)", "g (groups)"];

/// The shape of a Kim et al. Dragonfly as `aar sim --kim` takes it: `p,a,h,g` (nodes per router,
/// routers per group, global links per router, groups), e.g. `4,8,4,33` for BookSim2's k = 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KimShape {
    pub p: u32,
    pub a: u32,
    pub h: u32,
    pub g: u32,
}

impl FromStr for KimShape {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<KimShape, ParseError> {
        let form = || ParseError::Form { text: s.into(), form: "p,a,h,g of four whole numbers (e.g. 4,8,4,33)" };
        let fields: Vec<&str> = s.split(',').map(str::trim).collect();
        let parsed: Vec<Result<u32, ParseIntError>> = fields.iter().map(|x| x.parse::<u32>()).collect();
        let too_large = |e: &ParseIntError| *e.kind() == IntErrorKind::PosOverflow;
        if parsed.len() != 4 || parsed.iter().any(|n| n.as_ref().is_err_and(|e| !too_large(e))) {
            return Err(form());
        }
        // A whole number too large for any field is named, with the largest its field takes (for
        // g, the largest the other three allow, once they are in range themselves).
        let mut v = [0u32; 4];
        for (i, n) in parsed.iter().enumerate() {
            let max = match (n, v) {
                (Ok(n), _) => {
                    v[i] = *n;
                    continue;
                }
                (Err(_), [p, a, h, _]) if i == 3 => {
                    // one group always fits numbers that are in range
                    TopoSpec::Kim { p, a, h, g: 1 }.check()?;
                    let ports_per_group = u64::from(a) * u64::from(TopoSpec::Kim { p, a, h, g: 1 }.radix());
                    let most = (u64::from(a) * u64::from(h) + 1)
                        .min(MAX_NODES / (u64::from(p) * u64::from(a)))
                        .min(MAX_PORTS / ports_per_group);
                    format!("{most}, with p,a,h = {p},{a},{h}")
                }
                (Err(_), _) => KIM_MAX_DIM.to_string(),
            };
            return Err(ParseError::TooLarge { text: s.into(), name: KIM_NAMES[i], number: fields[i].into(), max });
        }
        let [p, a, h, g] = v;
        let shape = KimShape { p, a, h, g };
        TopoSpec::from(shape).check()?;
        Ok(shape)
    }
}

impl From<KimShape> for TopoSpec {
    fn from(k: KimShape) -> TopoSpec {
        TopoSpec::Kim { p: k.p, a: k.a, h: k.h, g: k.g }
    }
}

pub const ARIES_ROWS: u32 = 6; // chassis per group
pub const ARIES_COLS: u32 = 16; // routers (blades) per chassis
pub const ARIES_COL_LINKS: u32 = 3; // parallel black links per chassis pair
pub const ARIES_NODES_PER_ROUTER: u32 = 4;
pub const ARIES_MAX_GLOBAL_PER_ROUTER: u32 = 10;

#[derive(Clone, Debug)]
pub struct Topology {
    pub spec: TopoSpec,
    pub aries: bool,
    pub p: u32,
    pub routers_per_group: u32,
    pub groups: u32,
    pub radix: u32,
    pub n_routers: u32,
    pub n_nodes: u32,
    /// first local port, first global port, number of global ports
    pub local0: u32,
    pub global0: u32,
    pub n_global: u32,
    /// class of each port index within a router (same layout for every router)
    pub class_of_port: Vec<PortClass>,
    /// per port id: the peer port id (NONE for terminals and uncabled ports)
    pub peer: Vec<u32>,
    /// per port id: class (global ports that are uncabled are `Unused`)
    pub class: Vec<PortClass>,
    /// global output port ids from group g to group d: gw[gw_off[g*G+d] .. gw_off[g*G+d+1]]
    pub gw: Vec<u32>,
    pub gw_off: Vec<u32>,
    /// maximum local hops of a minimal intra-group route (1 for Kim, 2 for Aries)
    pub local_diam: u32,
}

impl Topology {
    /// Builds the network; `spec` must pass [`TopoSpec::check`].
    pub fn new(spec: TopoSpec) -> Self {
        if let Err(e) = spec.check() {
            panic!("{}: {e}", spec.describe());
        }
        let s = spec.shape();
        let aries = matches!(spec, TopoSpec::Aries { .. });
        Self::build(spec, aries, s.nodes_per_router, s.routers_per_group, s.global_ports_per_router, s.groups)
    }

    fn build(spec: TopoSpec, aries: bool, p: u32, a: u32, h: u32, g: u32) -> Self {
        let radix = spec.radix();
        let local0 = p;
        let global0 = radix - h;
        let n_local = global0 - local0;
        let n_routers = a * g;
        let mut class_of_port = vec![PortClass::Terminal; p as usize];
        if aries {
            class_of_port.extend(std::iter::repeat_n(PortClass::Row, (ARIES_COLS - 1) as usize));
            class_of_port.extend(std::iter::repeat_n(PortClass::Column, ((ARIES_ROWS - 1) * ARIES_COL_LINKS) as usize));
        } else {
            class_of_port.extend(std::iter::repeat_n(PortClass::Row, n_local as usize));
        }
        class_of_port.extend(std::iter::repeat_n(PortClass::Global, h as usize));
        let np = (n_routers * radix) as usize;
        let mut peer = vec![NONE; np];
        let mut class = vec![PortClass::Terminal; np];
        for r in 0..n_routers {
            for port in 0..radix {
                class[(r * radix + port) as usize] = class_of_port[port as usize];
            }
        }
        // local links
        for grp in 0..g {
            for i in 0..a {
                let r = grp * a + i;
                if aries {
                    let (c, s) = (i / ARIES_COLS, i % ARIES_COLS);
                    for s2 in 0..ARIES_COLS {
                        if s2 == s {
                            continue;
                        }
                        let port = local0 + if s2 < s { s2 } else { s2 - 1 };
                        let r2 = grp * a + c * ARIES_COLS + s2;
                        let port2 = local0 + if s < s2 { s } else { s - 1 };
                        peer[(r * radix + port) as usize] = r2 * radix + port2;
                    }
                    for c2 in 0..ARIES_ROWS {
                        if c2 == c {
                            continue;
                        }
                        for k in 0..ARIES_COL_LINKS {
                            let port =
                                local0 + (ARIES_COLS - 1) + ARIES_COL_LINKS * (if c2 < c { c2 } else { c2 - 1 }) + k;
                            let r2 = grp * a + c2 * ARIES_COLS + s;
                            let port2 =
                                local0 + (ARIES_COLS - 1) + ARIES_COL_LINKS * (if c < c2 { c } else { c - 1 }) + k;
                            peer[(r * radix + port) as usize] = r2 * radix + port2;
                        }
                    }
                } else {
                    for j in 0..a {
                        if j == i {
                            continue;
                        }
                        let port = local0 + if j < i { j } else { j - 1 };
                        let port2 = local0 + if i < j { i } else { i - 1 };
                        peer[(r * radix + port) as usize] = (grp * a + j) * radix + port2;
                    }
                }
            }
        }
        // global links: global channel c = i*h + k (port k of router i) of group `grp` goes to
        // group (grp + 1 + c % (g-1)) % g as its (c / (g-1))-th link to that group; the m-th link
        // from grp to d is paired with the m-th link from d to grp.
        let per_pair = if g > 1 { (a * h) / (g - 1) } else { 0 };
        let mut gw_lists: Vec<Vec<u32>> = vec![Vec::new(); (g * g) as usize];
        if g > 1 {
            for grp in 0..g {
                for c in 0..(a * h) {
                    let (i, k) = (c / h, c % h);
                    let port_id = (grp * a + i) * radix + global0 + k;
                    let m = c / (g - 1);
                    if m >= per_pair {
                        class[port_id as usize] = PortClass::Unused;
                        continue;
                    }
                    let d = (grp + 1 + c % (g - 1)) % g;
                    gw_lists[(grp * g + d) as usize].push(port_id);
                }
            }
            for grp in 0..g {
                for d in 0..g {
                    if d == grp {
                        continue;
                    }
                    let l1 = &gw_lists[(grp * g + d) as usize];
                    let l2 = &gw_lists[(d * g + grp) as usize];
                    assert_eq!(l1.len(), l2.len());
                    for m in 0..l1.len() {
                        peer[l1[m] as usize] = l2[m];
                    }
                }
            }
        } else {
            for r in 0..n_routers {
                for k in 0..h {
                    class[(r * radix + global0 + k) as usize] = PortClass::Unused;
                }
            }
        }
        let mut gw = Vec::new();
        let mut gw_off = vec![0u32];
        for l in &gw_lists {
            gw.extend_from_slice(l);
            gw_off.push(gw.len() as u32);
        }
        Topology {
            spec,
            aries,
            p,
            routers_per_group: a,
            groups: g,
            radix,
            n_routers,
            n_nodes: n_routers * p,
            local0,
            global0,
            n_global: h,
            class_of_port,
            peer,
            class,
            gw,
            gw_off,
            local_diam: if aries { 2 } else { 1 },
        }
    }

    #[inline]
    pub fn group_of(&self, router: u32) -> u32 {
        router / self.routers_per_group
    }
    #[inline]
    pub fn router_of_node(&self, node: u32) -> u32 {
        node / self.p
    }
    #[inline]
    pub fn group_of_node(&self, node: u32) -> u32 {
        node / (self.p * self.routers_per_group)
    }
    /// Global ports (port ids) from group `g` towards group `d`.
    #[inline]
    pub fn gateways(&self, g: u32, d: u32) -> &[u32] {
        let i = (g * self.groups + d) as usize;
        &self.gw[self.gw_off[i] as usize..self.gw_off[i + 1] as usize]
    }

    /// Next output port (index within router) for a minimal intra-group route from router `r` to
    /// router `t` (same group, r != t). `bits` chooses dimension order and the parallel column link;
    /// the same `bits` at the next router continues the same route.
    #[inline]
    pub fn intra_port(&self, r: u32, t: u32, bits: u32) -> u32 {
        let a = self.routers_per_group;
        let (i, j) = (r % a, t % a);
        debug_assert!(i != j && self.group_of(r) == self.group_of(t));
        if !self.aries {
            return self.local0 + if j < i { j } else { j - 1 };
        }
        let (c1, s1) = (i / ARIES_COLS, i % ARIES_COLS);
        let (c2, s2) = (j / ARIES_COLS, j % ARIES_COLS);
        let row_port = |s2: u32| self.local0 + if s2 < s1 { s2 } else { s2 - 1 };
        let col_port = |c2: u32, k: u32| {
            self.local0 + (ARIES_COLS - 1) + ARIES_COL_LINKS * (if c2 < c1 { c2 } else { c2 - 1 }) + k
        };
        if c1 == c2 {
            row_port(s2)
        } else if s1 == s2 || bits & 1 == 0 {
            col_port(c2, (bits >> 1) % ARIES_COL_LINKS)
        } else {
            row_port(s2)
        }
    }

    /// Router-to-router hops of a minimal intra-group route.
    pub fn intra_hops(&self, r: u32, t: u32) -> u32 {
        if r == t {
            return 0;
        }
        if !self.aries {
            return 1;
        }
        let a = self.routers_per_group;
        let (i, j) = (r % a, t % a);
        if i / ARIES_COLS == j / ARIES_COLS || i % ARIES_COLS == j % ARIES_COLS {
            1
        } else {
            2
        }
    }

    /// Router at the far end of output port id `port_id` (NONE for terminals / uncabled).
    #[inline]
    pub fn far_router(&self, port_id: u32) -> u32 {
        let p = self.peer[port_id as usize];
        if p == NONE {
            NONE
        } else {
            p / self.radix
        }
    }

    /// Length (router-to-router hops) of the shortest minimal route between two routers.
    pub fn min_hops(&self, r: u32, t: u32) -> u32 {
        let (g1, g2) = (self.group_of(r), self.group_of(t));
        if g1 == g2 {
            return self.intra_hops(r, t);
        }
        self.gateways(g1, g2)
            .iter()
            .map(|&gp| {
                let gr = gp / self.radix;
                let far = self.far_router(gp);
                self.intra_hops(r, gr) + 1 + self.intra_hops(far, t)
            })
            .min()
            .unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kim_shapes_parse_and_are_checked() {
        assert_eq!(" 4, 8,4,33".parse::<KimShape>(), Ok(KimShape { p: 4, a: 8, h: 4, g: 33 }));
        assert_eq!(TopoSpec::from("4,8,4,33".parse::<KimShape>().unwrap()), TopoSpec::booksim_k4());
        for bad in ["4,8,4", "4,8,4,33,1", "4,8,x,33", "", "4,8,-4,33"] {
            assert!(matches!(bad.parse::<KimShape>(), Err(ParseError::Form { .. })), "{bad}");
        }
        let e = "4,8,1,40".parse::<KimShape>().unwrap_err();
        assert_eq!(e, ParseError::Topology(TopologyError::TooManyGroups { groups: 40, channels: 8, aries: false }));
        assert!(e.to_string().contains("at most 9 groups; add global links per router or routers per group"), "{e}");
        assert!(matches!("0,8,4,33".parse::<KimShape>(), Err(ParseError::Topology(TopologyError::OutOfRange { .. }))));
        // a number too large for any field: which it is, and the largest accepted
        assert_eq!(
            "4,8,4,99999999999999999999".parse::<KimShape>().unwrap_err().to_string(),
            "\"4,8,4,99999999999999999999\": g (groups) = 99999999999999999999 is out of range: the largest accepted is \
             33, with p,a,h = 4,8,4"
        );
        let e = " 4, 4294967296 ,4,33".parse::<KimShape>().unwrap_err().to_string();
        assert!(e.ends_with("a (routers per group) = 4294967296 is out of range: the largest accepted is 256"), "{e}");
        // g too large beside a p out of range: the p is what to fix first
        assert!(matches!(
            "0,8,4,99999999999999999999".parse::<KimShape>(),
            Err(ParseError::Topology(TopologyError::OutOfRange { name: "p (nodes per router)", .. }))
        ));
        // g limited by the nodes, not the links
        let e = "256,256,256,99999999999".parse::<KimShape>().unwrap_err().to_string();
        assert!(e.ends_with("the largest accepted is 16, with p,a,h = 256,256,256"), "{e}");
        assert!("256,256,256,16".parse::<KimShape>().is_ok() && "256,256,256,17".parse::<KimShape>().is_err());
        let e = "256,256,256,2000".parse::<KimShape>().unwrap_err();
        assert!(matches!(e, ParseError::Topology(TopologyError::TooLarge { .. })), "{e:?}");
        // what the numbers are, and which to make smaller
        assert_eq!(
            e.to_string(),
            "131072000 nodes (nodes per router x routers per group x groups) is more than the 1048576 the simulator \
             builds: give fewer groups, routers per group or nodes per router"
        );
    }

    #[test]
    fn kim_shapes_of_more_ports_than_memory_holds_are_refused() {
        // 1,048,576 nodes, within MAX_NODES, but 4,096 groups of 256 routers of 512 ports: 537 M
        // ports, which the simulator's state of 140 bytes a port made an abort (out of memory)
        // or 75 GB, not a message
        let e = "1,256,256,4096".parse::<KimShape>().unwrap_err();
        assert_eq!(e, ParseError::Topology(TopologyError::TooManyPorts { ports: 536_870_912, max: MAX_PORTS }));
        assert!(e.to_string().contains("536870912 router ports") && e.to_string().contains("give fewer groups"), "{e}");
        // the largest g named for a number too large is the one the ports allow, and it is accepted
        let e = "1,256,256,99999999999".parse::<KimShape>().unwrap_err().to_string();
        assert!(e.ends_with("the largest accepted is 64, with p,a,h = 1,256,256"), "{e}");
        assert!("1,256,256,64".parse::<KimShape>().is_ok() && "1,256,256,65".parse::<KimShape>().is_err());
        // every Aries network fits: the largest has 961 groups x 96 routers x 44 ports
        assert_eq!(TopoSpec::aries(961).check(), Ok(()));
        assert_eq!(TopoSpec::aries(961).radix(), 44);
        assert_eq!(TopoSpec::booksim_k4().radix(), Topology::new(TopoSpec::booksim_k4()).radix);
    }

    #[test]
    fn aries_shapes_are_checked() {
        assert_eq!(TopoSpec::aries(16).check(), Ok(()));
        let bad = TopoSpec::Aries { groups: 4, global_per_router: 11 };
        assert!(bad.check().unwrap_err().to_string().contains("global ports per router = 11 is outside 1..=10"));
        assert!(TopoSpec::aries(0).check().is_err());
        assert_eq!(
            TopoSpec::Aries { groups: 98, global_per_router: 1 }.check(),
            Err(TopologyError::TooManyGroups { groups: 98, channels: 96, aries: true })
        );
        // An Aries group's routers are fixed: only the global links per router can be added.
        let e = TopoSpec::Aries { groups: 98, global_per_router: 1 }.check().unwrap_err().to_string();
        assert!(e.contains("at most 97 groups; add global links per router (an Aries group has 96 routers)"), "{e}");
        // At the most global links there are, only fewer groups help.
        let e = TopoSpec::aries(962).check().unwrap_err().to_string();
        assert!(e.contains("at most 961 groups; an Aries router has at most 10 global links"), "{e}");
        assert!(e.ends_with("use fewer groups)") && !e.contains("add global links"), "{e}");
    }
}
