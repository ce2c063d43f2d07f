//! The simulator-backed NIC model (`AAR_EMU_SIM`): every transfer is injected into the
//! packet-level Dragonfly simulator (crates/sim) and the network, background traffic included,
//! runs until the transfer completes. The NIC counters and the clock come from the simulation;
//! data still moves as without it (crate::rma, crate::smsg): by memcpy inside the process, and
//! between the ranks of a job as crate::job moves it.
//!
//! `AAR_EMU_SIM="groups=2,placement=across-groups,nodes=2,background=uniform:0.3:4K,seed=1"`
//! (any subset of the keys, in any order; [`SimSetting`] reads the whole value, and a boolean
//! alone turns the simulator on with all defaults or off):
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `groups` | 2 | Aries-like groups (96 routers, 384 nodes each), 1 to 16 |
//! | `global-per-router` | 10 | global ports per router, 1 to 10 |
//! | `placement` | `across-groups` (`same-group` with `groups=1`) | `same-blade`, `same-group`, `across-groups`, `scattered`, `packed:ROUTERS:GROUPS` (the simulator's placements) |
//! | `nodes` | 2 | simulated nodes the process's NICs are placed on |
//! | `background` | `none` | `none`, `uniform:LOAD[:SIZE]`, `worst-case:LOAD[:SIZE]`, `congestors[:SIZE]`, `production[:LOAD[:SIZE]]` (the simulator's background jobs) |
//! | `background-nodes` | 32 | nodes generating the background traffic |
//! | `background-global` | 0 | 1: background nodes anywhere, not only in the groups of the process's nodes |
//! | `seed` | 1 | seed of the simulation (placement `scattered`, routing, background) |
//!
//! A key given twice, and combinations that cannot mean anything (across groups or worst-case
//! background on one group, worst-case background kept to the one group of the process's nodes,
//! a background with too few `background-nodes` to run), are refused like bad values; the
//! background's rules are the simulator's (`ExperimentSpec::check_background`). So is a background
//! heavier than [`MAX_BACKGROUND_LOAD`], the emulator's own limit on the host time a post takes.
//!
//! Node mapping: the placement gives `nodes` simulated nodes n_0, n_1, ... for ranks 0, 1, ...
//! (across-groups: n_i in group i mod groups). The NIC with address a (GNI_CdmAttach hands out
//! 0x100, 0x101, ... in attach order) sits on node n_((a - 0x100) mod nodes): with the default
//! `nodes=2`, the first NIC attached is on n_0, the second on n_1, a third shares n_0.
//!
//! Counters: the process is one rank; the five counters it publishes are the sums of the
//! simulated NIC counters over its `nodes` nodes (with one NIC per process, exactly that node's
//! counters; on Aries co-located ranks share them in the same way). Only the process's own
//! transfers run on those nodes (the background avoids them), so a post's counter deltas are its
//! source node's, plus the response stalls of its target when that is one of the process's
//! nodes too. In an `aar run` job a process is one rank of many, with one NIC address: it counts
//! the node of that address alone, the NIC whose counters its node's ranks share. The latency counter is in NIC cycles (800 MHz) in the simulator and is published
//! in the unit `AAR_EMU_LATENCY_UNIT` says.
//!
//! Time: the simulation starts by running the background for the simulator's lead time (5 µs),
//! then each transfer is injected at the current simulated time and the simulation runs until
//! its last response is back at the source NIC (local completion); the post returns then, with
//! the clock (`aar_emu_clock_ns`) at the completion time; a transfer that takes more than
//! [`MAX_TRANSFER_EVENTS`] simulated events is given up, and the default model times the rest of
//! the run. Host time between posts is not modelled: the clock only moves while a transfer is in
//! flight. A chained post runs its head and then each element, one after the other.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;

use aar_engine::{Seed, Switch};
use aar_sim::config::{Mode, NetConfig};
use aar_sim::error::{ParseError, SpecError};
use aar_sim::experiment::{Background, ExperimentSpec, DEFAULT_BACKGROUND_NODES};
use aar_sim::simulation::Simulation;
use aar_sim::topology::{TopoSpec, Topology};
use aar_sim::workload::{Placement, Workload};

use super::profile::{DefaultModel, NetworkProfile};
use super::{NicEffect, NicModel, NicTransfer};
use crate::{warn, FIRST_NIC_ADDR};

/// The whole value of `AAR_EMU_SIM`: the simulator off (the default model times the transfers),
/// or on, with the network it simulates.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum SimSetting {
    #[default]
    Off,
    On(SimSpec),
}

/// The simulated network an `AAR_EMU_SIM` value describes.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSpec {
    pub groups: u32,
    pub global_per_router: u32,
    pub placement: Placement,
    pub nodes: u32,
    pub background: Background,
    pub background_nodes: u32,
    pub background_global: bool,
    pub seed: u64,
}

impl Default for SimSpec {
    fn default() -> Self {
        SimSpec {
            groups: 2,
            global_per_router: 10,
            placement: Placement::AcrossGroups,
            nodes: 2,
            background: Background::None,
            background_nodes: DEFAULT_BACKGROUND_NODES,
            background_global: false,
            seed: 1,
        }
    }
}

/// The most background traffic the simulated network carries, in NICs' worth of injection
/// bandwidth (background nodes × LOAD, congestors counting 1 per node): the posting call runs
/// the whole network, and each NIC's worth of traffic costs about 4,000 simulated events (some
/// 0.3 ms of host time) per µs of simulated time, so that past this a post of a few KiB, or the
/// background's lead time, would take seconds of host time and a large transfer minutes.
pub const MAX_BACKGROUND_LOAD: f64 = 64.0;

/// Simulated time a single transfer may take before the simulation is declared stuck (a bug):
/// 1 s, a thousand times what a 16 MiB PUT takes at the NIC's injection rate.
const MAX_TRANSFER_NS: f64 = 1e9;

/// Simulated events a single transfer may take, background included, before the simulator gives
/// up on it: a few seconds of host time (some 10 million events a second), so that no post runs
/// for minutes. A 1 MiB PUT under the heaviest background accepted ([`MAX_BACKGROUND_LOAD`])
/// takes about 30 million, a 64 MiB PUT on a quiet network about 40 million.
pub const MAX_TRANSFER_EVENTS: u64 = 50_000_000;

/// Simulated time between two looks at a transfer's events: at the heaviest background, some
/// 300,000 events.
const EVENT_CHECK_NS: f64 = 1_000.0;

/// What is wrong with an `AAR_EMU_SIM` value: the first problem found.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SimSpecError {
    #[error("item \"{}\" is not key=value", .0.escape_debug())]
    NotKeyValue(String),
    #[error("unknown key \"{}\" (known: {known})", .0.escape_debug(), known = SimSpec::KEYS.join(", "))]
    UnknownKey(String),
    #[error("{key}=\"{}\" is not a whole number from {lo} to {hi}", value.escape_debug())]
    OutOfRange { key: String, value: String, lo: u64, hi: u64 },
    /// The seed's own message, which names the value and the range.
    #[error("seed: {0}")]
    Seed(String),
    /// The simulator's own message, which names the value and what is accepted.
    #[error("placement: {0}")]
    Placement(ParseError),
    /// The simulator's own message, which names the value and what is accepted.
    #[error("background: {0}")]
    Background(ParseError),
    #[error("background-global=\"{}\" is not {}", .0.escape_debug(), Switch::SPELLINGS)]
    BackgroundGlobal(String),
    /// The simulator's capacity check, which names the placement and its capacity.
    #[error("nodes={nodes} on {groups} group(s): {source}")]
    TooManyNodes { nodes: u32, groups: u32, source: SpecError },
    #[error("key \"{0}\" is given twice (give each key once)")]
    Repeated(String),
    #[error(
        "placement=across-groups with groups=1: there is no other group to place nodes in (give groups=2 or more, \
         or placement=same-group for nodes inside one group)"
    )]
    AcrossOneGroup,
    #[error(
        "background=\"{}\" with groups=1: worst-case traffic goes from each group to the next, and there is no \
         other group (give groups=2 or more, or background=uniform:LOAD)",
        .0.escape_debug()
    )]
    WorstCaseOneGroup(String),
    #[error(
        "background=\"{}\" with background-global=0 and the process's nodes all in group {}: worst-case traffic \
         goes from each group to the next, and the background is kept to that group (give background-global=1, \
         a placement over 2 or more groups, or background=uniform:LOAD)",
        .0.escape_debug(),
        .1
    )]
    WorstCaseNodesGroup(String, u32),
    #[error(
        "background=\"{}\" with background-nodes={nodes}: it needs {min} or more background nodes, \
         {why} (give background-nodes={min} or more, or background=none)",
        background.escape_debug()
    )]
    TooFewBackgroundNodes { background: String, nodes: u32, min: u32, why: &'static str },
    #[error(
        "background=\"{}\": it needs {min} or more background nodes, {why}, but only {free} nodes {} \
         (give {}a network with more nodes, fewer nodes, or background=none)",
        background.escape_debug(),
        if *job_groups { "of the process's groups are free of its nodes" } else { "are free of the process's nodes" },
        if *job_groups { "background-global=1, " } else { "" }
    )]
    BackgroundOutOfReach { background: String, min: u32, why: &'static str, free: u32, job_groups: bool },
    #[error(
        "background=\"{}\" on {nodes} background nodes is {offered} NICs' worth of traffic (LOAD times the nodes; \
         congestors count 1 per node), more than the {max} the emulator simulates inside the posting call, whose \
         host time grows with it (give at most {fit} background-nodes{})",
        background.escape_debug(),
        if *congestors { "" } else if *offered < f64::from(*nodes) { " at this LOAD, or a lower LOAD" } else { ", or a lower LOAD" },
        max = MAX_BACKGROUND_LOAD,
    )]
    BackgroundTooHeavy { background: String, nodes: u32, offered: f64, fit: u32, congestors: bool },
    /// Any other of the simulator's checks of the experiment, in its own words.
    #[error("{0}")]
    Experiment(SpecError),
}

impl SimSpec {
    pub const KEYS: [&'static str; 8] = [
        "groups",
        "global-per-router",
        "placement",
        "nodes",
        "background",
        "background-nodes",
        "background-global",
        "seed",
    ];

    /// Refuses keys that cannot mean anything together. With one group and no `placement`
    /// given, the default placement (across groups) becomes `same-group`.
    fn check_combination(&mut self, placement_given: bool, background_text: String) -> Result<(), SimSpecError> {
        if self.groups == 1 && self.placement == Placement::AcrossGroups {
            if placement_given {
                return Err(SimSpecError::AcrossOneGroup);
            }
            self.placement = Placement::SameGroup;
        }
        // The simulator's rule (worst case needs two groups; a background needs enough nodes to
        // send), said in the keys of AAR_EMU_SIM.
        self.experiment().check_background().map_err(|e| match e {
            SpecError::WorstCaseOneGroup { .. } => SimSpecError::WorstCaseOneGroup(background_text),
            SpecError::WorstCaseJobGroup { group, .. } => SimSpecError::WorstCaseNodesGroup(background_text, group),
            SpecError::TooFewBackgroundNodes { nodes, min, why, .. } => {
                SimSpecError::TooFewBackgroundNodes { background: background_text, nodes, min, why }
            }
            SpecError::BackgroundOutOfReach { min, why, free, job_groups, .. } => SimSpecError::BackgroundOutOfReach {
                background: background_text,
                min,
                why,
                free,
                job_groups: job_groups.is_some(),
            },
            other => SimSpecError::Experiment(other),
        })?;
        Ok(())
    }

    /// Refuses a background heavier than [`MAX_BACKGROUND_LOAD`] on the nodes it gets.
    fn check_background_load(&self, background_text: String) -> Result<(), SimSpecError> {
        let per_node = match self.background {
            Background::None => 0.0,
            Background::Uniform { load, .. }
            | Background::WorstCase { load, .. }
            | Background::Production { load, .. } => load,
            // Closed-loop jobs that send as fast as the network takes their messages.
            Background::Congestors { .. } => 1.0,
        };
        let nodes = self.experiment().background_nodes_used();
        let offered = f64::from(nodes) * per_node;
        if offered <= MAX_BACKGROUND_LOAD {
            return Ok(());
        }
        Err(SimSpecError::BackgroundTooHeavy {
            background: background_text,
            nodes,
            // As a person reads it: two decimals at most.
            offered: (offered * 100.0).round() / 100.0,
            fit: (MAX_BACKGROUND_LOAD / per_node).floor() as u32,
            congestors: matches!(self.background, Background::Congestors { .. }),
        })
    }

    fn topo(&self) -> TopoSpec {
        TopoSpec::Aries { groups: self.groups, global_per_router: self.global_per_router }
    }

    /// The simulator's experiment description of this network (no measured workload runs).
    pub fn experiment(&self) -> ExperimentSpec {
        let mut net = NetConfig::aries(self.groups);
        net.topo = self.topo();
        let mut e = ExperimentSpec::new(net, Workload::Barrier, self.nodes, self.placement);
        e.background = self.background.clone();
        e.background_nodes = self.background_nodes;
        e.background_local = !self.background_global;
        e.seed = self.seed;
        e
    }
}

impl FromStr for SimSetting {
    type Err = SimSpecError;

    /// Blanks, or a false boolean alone (`0`, `false`, `no`, `off`, any case): off. A true
    /// boolean alone (`1`, `true`, `yes`, `on`): on, with every default. Otherwise on, with
    /// `key=value,...`: any subset of [`SimSpec::KEYS`], each once, in any order, keys in any
    /// case and with `_` for `-`. The first problem is returned.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        match trimmed.parse::<Switch>() {
            _ if trimmed.is_empty() => Ok(SimSetting::Off),
            Ok(Switch(false)) => Ok(SimSetting::Off),
            Ok(Switch(true)) => Ok(SimSetting::On(SimSpec::default())),
            Err(_) => SimSpec::from_items(trimmed).map(SimSetting::On),
        }
    }
}

impl SimSpec {
    /// The `key=value,...` form of [`SimSetting`].
    fn from_items(text: &str) -> Result<SimSpec, SimSpecError> {
        let mut s = SimSpec::default();
        let mut given: Vec<String> = Vec::new();
        let mut background_text = String::new();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').ok_or_else(|| SimSpecError::NotKeyValue(item.to_string()))?;
            let typed = key.trim();
            let key = typed.replace('_', "-").to_ascii_lowercase();
            let value = value.trim();
            if given.contains(&key) {
                return Err(SimSpecError::Repeated(key));
            }
            given.push(key.clone());
            let number = |lo: u64, hi: u64| {
                value.parse::<u64>().ok().filter(|v| (lo..=hi).contains(v)).ok_or_else(|| SimSpecError::OutOfRange {
                    key: key.clone(),
                    value: value.to_string(),
                    lo,
                    hi,
                })
            };
            // The bounds fit in u32, so the narrowing casts below are exact.
            match key.as_str() {
                "groups" => s.groups = number(1, 16)? as u32,
                "global-per-router" => s.global_per_router = number(1, 10)? as u32,
                "placement" => s.placement = value.parse().map_err(SimSpecError::Placement)?,
                "nodes" => s.nodes = number(1, 1 << 16)? as u32,
                "background" => {
                    s.background = value.parse().map_err(SimSpecError::Background)?;
                    background_text = value.to_string();
                }
                "background-nodes" => s.background_nodes = number(0, 1 << 20)? as u32,
                "background-global" => {
                    s.background_global =
                        value.parse::<Switch>().map_err(|_| SimSpecError::BackgroundGlobal(value.to_string()))?.0
                }
                "seed" => s.seed = value.parse::<Seed>().map_err(SimSpecError::Seed)?.0,
                // As typed, so that the message names what the user wrote.
                _ => return Err(SimSpecError::UnknownKey(typed.to_string())),
            }
        }
        s.check_combination(given.iter().any(|k| k == "placement"), background_text.clone())?;
        let topo = Topology::new(s.topo());
        s.placement.check(&topo, s.nodes).map_err(|source| SimSpecError::TooManyNodes {
            nodes: s.nodes,
            groups: s.groups,
            source,
        })?;
        s.check_background_load(background_text)?;
        Ok(s)
    }
}

/// Why the simulation stopped during the run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
enum SimRunError {
    #[error("a {bytes}-byte transfer did not complete within {} ms of simulated time", MAX_TRANSFER_NS / 1e6)]
    Stuck { bytes: u64 },
    #[error(
        "the simulator gave up on a {bytes}-byte transfer after {events} simulated events ({simulated_us:.1} us of \
         simulated time, not yet complete), more than the {max} a post may take to keep it to a few seconds of host \
         time (give a lighter background, with fewer background-nodes or a lower LOAD, or post smaller transfers)"
    )]
    GaveUp { bytes: u64, events: u64, simulated_us: f64, max: u64 },
    #[error("the network simulator failed (internal error)")]
    Panicked,
}

/// The model: the simulated network and what the process has published of its counters.
pub struct SimModel {
    world: Simulation,
    /// Simulated node of each placement slot (NIC address a → slot (a - 0x100) mod len).
    nodes: Vec<u32>,
    /// The same nodes without repeats, whose counters are summed.
    counted: Vec<u32>,
    /// Counter sums already handed out: req_flits, req_stalled, rsp_latency (cycles),
    /// rsp_packets, rsp_stalled.
    last: [u64; 5],
    max_transfer_ticks: u64,
    /// [`MAX_TRANSFER_EVENTS`] (smaller in tests).
    max_transfer_events: u64,
    /// Set when the simulation failed: the default model takes over for the rest of the run.
    fallback: Option<DefaultModel>,
    profile: NetworkProfile,
}

impl SimModel {
    /// Builds the network and runs the background's lead time; None when the simulator failed
    /// (panicked). `profile` is kept for the default model, should the simulation fail later.
    /// `rank_nic`: in an `aar run` job, the rank's NIC address, whose node alone it counts.
    pub fn start(s: &SimSpec, profile: NetworkProfile, rank_nic: Option<u32>) -> Option<SimModel> {
        catch_unwind(|| SimModel::new(s, profile, rank_nic)).ok()
    }

    pub fn new(s: &SimSpec, profile: NetworkProfile, rank_nic: Option<u32>) -> SimModel {
        let e = s.experiment();
        let (mut world, nodes) = Simulation::build_external(&e);
        world.run_until(e.net.ns_to_ticks(e.background_lead_ns));
        let mut counted = nodes.clone();
        counted.sort_unstable();
        counted.dedup();
        let mut m = SimModel {
            max_transfer_ticks: e.net.ns_to_ticks(MAX_TRANSFER_NS),
            max_transfer_events: MAX_TRANSFER_EVENTS,
            world,
            nodes,
            counted,
            last: [0; 5],
            fallback: None,
            profile,
        };
        if let Some(addr) = rank_nic {
            m.counted = vec![m.node_of(addr)];
        }
        m
    }

    /// The simulated node of a NIC address.
    pub fn node_of(&self, nic_addr: u32) -> u32 {
        let slot = nic_addr.wrapping_sub(FIRST_NIC_ADDR) as usize % self.nodes.len();
        self.nodes[slot]
    }

    /// The placement's nodes, slot by slot.
    #[cfg(test)]
    pub fn nodes(&self) -> &[u32] {
        &self.nodes
    }

    fn sums(&self) -> [u64; 5] {
        let mut s = [0u64; 5];
        for &n in &self.counted {
            let c = self.world.net.counters(n);
            for (acc, v) in s.iter_mut().zip([c.req_flits, c.req_stalled, c.rsp_latency, c.rsp_packets, c.rsp_stalled])
            {
                *acc += v;
            }
        }
        s
    }

    fn simulate(&mut self, t: &NicTransfer) -> Result<NicEffect, SimRunError> {
        let (src, dst) = (self.node_of(t.src_nic), self.node_of(t.dst_nic));
        let id = self.world.post_external(src, dst, t.bytes, t.transfer, Mode::from_dlvr_mode(t.dlvr_mode));
        // In steps of EVENT_CHECK_NS, counting the events of each.
        let (start, first_event) = (self.world.net.now, self.world.net.totals.events);
        let limit = start.saturating_add(self.max_transfer_ticks);
        let step = self.world.net.cfg.ns_to_ticks(EVENT_CHECK_NS).max(1);
        let mut until = start;
        while !self.world.run_until_completed(id, until) {
            let events = self.world.net.totals.events - first_event;
            if events >= self.max_transfer_events {
                let simulated_us = self.world.net.cfg.ticks_to_ns(self.world.net.now - start) / 1e3;
                return Err(SimRunError::GaveUp {
                    bytes: t.bytes,
                    events,
                    simulated_us,
                    max: self.max_transfer_events,
                });
            }
            if until == limit {
                return Err(SimRunError::Stuck { bytes: t.bytes });
            }
            until = until.saturating_add(step).min(limit);
        }
        let now = self.sums();
        let d: [f64; 5] = std::array::from_fn(|i| now[i].saturating_sub(self.last[i]) as f64);
        self.last = now;
        Ok(NicEffect {
            req_flits: d[0],
            req_stalled_cycles: d[1],
            rsp_latency_us: 0.0,
            rsp_latency_cycles: d[2],
            rsp_packets: d[3],
            rsp_stalled_cycles: d[4],
        })
    }
}

impl NicModel for SimModel {
    fn on_transfer(&mut self, t: &NicTransfer) -> NicEffect {
        if let Some(f) = &mut self.fallback {
            return f.on_transfer(t);
        }
        let problem = match catch_unwind(AssertUnwindSafe(|| self.simulate(t))) {
            Ok(Ok(effect)) => return effect,
            Ok(Err(problem)) => problem,
            Err(_) => SimRunError::Panicked,
        };
        warn(&format!(
            "AAR_EMU_SIM: {problem}; the default timing model (AAR_EMU_NETWORK) takes over, and the clock stops"
        ));
        let mut f = DefaultModel { profile: self.profile };
        let effect = f.on_transfer(t);
        self.fallback = Some(f);
        effect
    }

    fn set_profile(&mut self, profile: NetworkProfile) {
        // Only used if the simulation fails; the simulated network has no profile.
        self.profile = profile;
        if let Some(f) = &mut self.fallback {
            f.profile = profile;
        }
    }

    fn clock_ns(&self) -> u64 {
        self.world.net.cfg.ticks_to_ns(self.world.net.now) as u64
    }

    fn stateful(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The network of a value that turns the simulator on.
    fn spec(text: &str) -> Result<SimSpec, SimSpecError> {
        match text.parse::<SimSetting>()? {
            SimSetting::On(s) => Ok(s),
            SimSetting::Off => panic!("{text:?} turns the simulator off"),
        }
    }

    #[test]
    fn specs_parse_with_defaults_and_both_spellings() {
        // README's spellings of on and off, in any case.
        for on in ["1", " on ", "True", "YES", "y"] {
            assert_eq!(on.parse(), Ok(SimSetting::On(SimSpec::default())), "{on}");
        }
        for off in ["", "  ", "0", " off ", "False", "NO", "N"] {
            assert_eq!(off.parse(), Ok(SimSetting::Off), "{off}");
        }
        for neither in ["2", "onn", "enabled"] {
            assert!(matches!(neither.parse::<SimSetting>(), Err(SimSpecError::NotKeyValue(_))), "{neither}");
        }
        let s =
            spec("groups=3, placement=same-group,background=uniform:0.3:4K,background_nodes=16,seed=7,nodes=4,global-per-router=3,background-global=yes")
                .unwrap();
        assert_eq!(s.groups, 3);
        assert_eq!(s.global_per_router, 3);
        assert_eq!(s.placement, Placement::SameGroup);
        assert_eq!(s.background, Background::Uniform { load: 0.3, bytes: 4096 });
        assert_eq!(s.background_nodes, 16);
        assert!(s.background_global);
        assert_eq!((s.nodes, s.seed), (4, 7));
        // The forms and bounds README's AAR_EMU_SIM table gives.
        for text in [
            "placement=packed:2:1",
            "Placement=packed:3:2,nodes=3",
            "background=production",
            "background=production:0.1:4K",
            "background=uniform:0.000001:1G",
            "background=congestors:1",
            "background-nodes=1048576",
            "groups=16,placement=scattered,nodes=6144",
            "placement=same-blade,nodes=4",
            "placement=same-group,nodes=96",
            "seed=18446744073709551615",
        ] {
            assert!(spec(text).is_ok(), "{text}: {:?}", spec(text));
        }
        // Beyond the bounds, and the placements' short names, which no document gives.
        for text in [
            "background-nodes=1048577",
            "placement=same-group,nodes=97",
            "background=uniform:0.3:1025M",
            "placement=blade",
            "placement=group",
            "placement=groups",
        ] {
            assert!(spec(text).is_err(), "{text}");
        }
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (text, needle) in [
            ("groups=0", "groups=\"0\""),
            ("groups=two", "groups=\"two\""),
            ("placement=diagonal", "placement: unknown placement \"diagonal\""),
            ("background=uniform", "background: \"uniform\""),
            ("background=uniform:2", "LOAD in [0, 1]"),
            ("background=storm:0.1", "unknown kind"),
            ("colour=red", "unknown key \"colour\""),
            ("Colour_Depth=3", "unknown key \"Colour_Depth\" (known: groups,"),
            ("groups", "not key=value"),
            ("placement=same-blade,nodes=5", "at most 4 nodes"),
            ("global-per-router=11", "global-per-router=\"11\""),
            ("groups=2,nodes=4,groups=3", "key \"groups\" is given twice"),
            ("background-global=maybe", "background-global=\"maybe\" is not 1/0, true/false, yes/no, y/n or on/off"),
            ("seed=-1", "seed: \"-1\" is not a seed: a seed is a whole number from 0 to 18446744073709551615"),
            ("groups=1,placement=across-groups", "placement=across-groups with groups=1: there is no other group"),
            ("placement=across-groups,groups=1", "give groups=2 or more, or placement=same-group"),
            ("groups=1,placement=same-group,background=worst-case:0.5", "background=\"worst-case:0.5\" with groups=1"),
            ("background=uniform:0.3,background-nodes=0", "background-nodes=0: it needs 1 or more background nodes"),
            ("background=congestors,background-nodes=5", "needs 6 or more background nodes"),
            ("background=production,background-nodes=1", "needs 2 or more background nodes"),
            // enough asked for, but the process's nodes take every node of the machine: background-global
            // would find no more
            (
                "groups=1,placement=scattered,nodes=384,background=uniform:0.3",
                "only 0 nodes are free of the process's nodes (give a network with more nodes,",
            ),
            (
                "groups=1,placement=scattered,nodes=381,background=congestors,background-global=1",
                "needs 6 or more background nodes, three congestor jobs of 2 or more, but only 3 nodes are free",
            ),
            (
                "groups=2,placement=same-group,background=worst-case:0.5",
                "background=\"worst-case:0.5\" with background-global=0 and the process's nodes all in group 0",
            ),
            // More background than MAX_BACKGROUND_LOAD, on the nodes it would get.
            (
                "groups=16,background=uniform:1,background-nodes=1048576,background-global=1",
                "background=\"uniform:1\" on 6142 background nodes is 6142 NICs' worth of traffic (LOAD times the \
                 nodes; congestors count 1 per node), more than the 64 the emulator simulates inside the posting \
                 call, whose host time grows with it (give at most 64 background-nodes, or a lower LOAD)",
            ),
            (
                "groups=1,background=uniform:0.3,background-nodes=1048576",
                "on 382 background nodes is 114.6 NICs' worth of traffic (LOAD times the nodes; congestors count 1 per \
                 node), more than the 64 the emulator simulates inside the posting call, whose host time grows with \
                 it (give at most 213 background-nodes at this LOAD, or a lower LOAD)",
            ),
            ("background=congestors,background-nodes=65", "is 65 NICs' worth of traffic"),
            ("background=congestors,background-nodes=65", "(give at most 64 background-nodes)"),
            ("background=production,background-nodes=321", "is 64.2 NICs' worth"),
        ] {
            let e = spec(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn combinations_that_mean_something_are_kept() {
        // One group and no placement given: the default placement stays inside the group.
        assert_eq!(spec("groups=1").unwrap().placement, Placement::SameGroup);
        assert_eq!(spec("groups=1,placement=scattered").unwrap().placement, Placement::Scattered);
        // No load, or no background, needs no background nodes.
        for text in [
            "background=uniform:0,background-nodes=0",
            "background=production:0,background-nodes=0",
            "background=none,background-nodes=0",
            "background=congestors,background-nodes=6",
            "background=worst-case:0.1,groups=2",
            "background=worst-case:0.1,placement=same-group,background-global=1",
            // A background at MAX_BACKGROUND_LOAD, or asking for more nodes than it gets.
            "background=uniform:1,background-nodes=64",
            "background=congestors,background-nodes=64",
            "background=production,background-nodes=320",
            "groups=1,background=uniform:0.1,background-nodes=1048576",
        ] {
            assert!(spec(text).is_ok(), "{text}");
        }
    }

    fn put(bytes: u64, mode: u16, src: u32, dst: u32) -> NicTransfer {
        NicTransfer { transfer: aar_engine::Transfer::Put, bytes, dlvr_mode: mode, src_nic: src, dst_nic: dst }
    }

    #[test]
    fn nics_map_to_placement_nodes_and_a_put_moves_the_clock_and_counters() {
        use aar_abi::GNI_DLVMODE_ADAPTIVE3;
        let spec = SimSpec { groups: 2, ..SimSpec::default() };
        let mut m = SimModel::new(&spec, NetworkProfile::default(), None);
        let npg = 384;
        let (first, second) = (FIRST_NIC_ADDR, FIRST_NIC_ADDR + 1);
        assert_eq!(m.nodes(), &[0, npg]);
        assert_eq!(m.node_of(first), 0);
        assert_eq!(m.node_of(second), npg);
        assert_eq!(m.node_of(FIRST_NIC_ADDR + 2), 0);
        let t0 = m.clock_ns();
        assert_eq!(t0, 5_000, "the clock starts after the background lead time");
        let e = m.on_transfer(&put(64, GNI_DLVMODE_ADAPTIVE3, first, second));
        assert_eq!((e.req_flits, e.rsp_packets), (5.0, 1.0));
        assert!(e.rsp_latency_cycles > 0.0 && e.rsp_latency_us == 0.0);
        let dt = m.clock_ns() - t0;
        // The response latency counter runs from injection to the response's arrival: the
        // whole transfer, within a cycle.
        let cycle_ns = aar_engine::model::NIC_CYCLE_US * 1e3;
        assert!((dt as f64 - e.rsp_latency_cycles * cycle_ns).abs() <= 2.0, "{dt} ns vs {e:?}");
        let e = m.on_transfer(&put(4096, GNI_DLVMODE_ADAPTIVE3, second, first));
        assert_eq!((e.req_flits, e.rsp_packets), (64.0 * 5.0, 64.0));
    }

    /// A transfer that needs more simulated events than a post may take is given up, with a
    /// message that says so and why, and the default model times the rest of the run.
    #[test]
    fn the_simulator_gives_up_a_transfer_past_its_events() {
        use aar_engine::model::Transfer;
        let spec = spec("groups=2,background=uniform:1,background-nodes=64").unwrap();
        let mut m = SimModel::new(&spec, NetworkProfile::default(), None);
        m.max_transfer_events = 1_000_000;
        let (first, second) = (FIRST_NIC_ADDR, FIRST_NIC_ADDR + 1);
        // Under the limit, as usual.
        assert!(m.simulate(&put(64, 0, first, second)).is_ok());
        let t0 = m.clock_ns();
        let problem = m.simulate(&put(1 << 20, 0, first, second)).unwrap_err().to_string();
        assert!(
            problem.starts_with("the simulator gave up on a 1048576-byte transfer after 1")
                && problem.contains(" simulated events (")
                && problem.contains(" us of simulated time, not yet complete), more than the 1000000 a post may take"),
            "{problem}"
        );
        assert!(m.clock_ns() > t0 && m.clock_ns() - t0 < 100_000, "{t0} {}", m.clock_ns());
        // Through the model: the default model's effect, and the clock stops.
        let mut m = SimModel::new(&spec, NetworkProfile::default(), None);
        m.max_transfer_events = 1_000_000;
        let big = NicTransfer { transfer: Transfer::Get, ..put(1 << 20, 0, first, second) };
        let want = DefaultModel { profile: NetworkProfile::default() }.on_transfer(&big);
        assert_eq!(m.on_transfer(&big), want);
        let stopped = m.clock_ns();
        assert_eq!(m.on_transfer(&put(64, 0, first, second)).rsp_latency_cycles, 0.0);
        assert_eq!(m.clock_ns(), stopped);
        assert!(m.fallback.is_some());
    }
}
