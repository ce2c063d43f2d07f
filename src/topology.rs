//! Where each node sits in the Dragonfly: NIC address -> (group, router), for the per-destination
//! state of the routing policy. The library cannot ask the network, so the table comes from a file:
//! `AAR_TOPOLOGY`, else, under `aar run`, the table the launcher writes for the emulated job
//! (`AAR_EMU_JOB_DIR/topology`). Without one, every destination is of one class, and the library
//! says so once. A uGNI post's destination is its endpoint's NIC (`endpoints`); a DMAPP call's is
//! its PE's node, whose NID Cray's PMI gives (`dmapp::pe_class`).
//!
//! The file (one parser, [`Topology`]'s `FromStr`) holds one node per line, in either form:
//! - `NIC GROUP ROUTER`: three whole numbers, each decimal or `0x` hexadecimal, the form a site
//!   writes from its own records;
//! - a line of `xtprocadmin` output, `NID (HEX) NODENAME TYPE ...`, e.g.
//!   `20 0x14 c0-0c0s5n0 compute up batch`: the NIC address is taken to be the NID (checked
//!   against this node's `/proc/cray_xt`, [`Topology::check_names`]), and the place
//!   comes from the node name `c<column>-<row>c<chassis>s<slot>n<node>`: one router per slot of a
//!   chassis (an Aries blade), one group per two neighbouring cabinets of a row (columns 2k and
//!   2k+1, as an XC40 group of 6 chassis is built). Group and router numbers are then dense ids
//!   in the order they appear sorted (groups after those of the `NIC GROUP ROUTER` lines, so that
//!   the two forms never share a group): only equality between them means anything. The `(HEX)`
//!   field must be the NID.
//!
//! Blank lines, lines starting with `#` and the `NID` header are skipped; a NIC address listed
//! twice is an error naming both lines, and a file that lists no node is an error too. The file
//! must be a regular one, of UTF-8 text, of at most 64 MiB (`TABLE_LIMIT`).

use crate::{diag, endpoints};
use aar_engine::{DestinationClass, Policy};
use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// A node's place: its group and its router (Aries: its blade).
pub use aar_engine::NodeLocation as Location;

/// NIC address -> location, for the nodes a file lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    nodes: BTreeMap<u32, Location>,
    /// The node names of the `xtprocadmin` lines, by NID (their key in `nodes`).
    named: BTreeMap<u32, String>,
}

/// What a Cray XC node says of itself in `/proc/cray_xt`: its NID and its node name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrayXt {
    pub nid: u32,
    pub cname: Option<String>,
}

impl CrayXt {
    /// This node's files (`AAR_EMU_CRAY_XT`, the emulator's stand-in, else `/proc/cray_xt`);
    /// `None` off a Cray XC node.
    pub fn read() -> Option<CrayXt> {
        let dir = crate::sys::emulator_folder("AAR_EMU_CRAY_XT").unwrap_or_else(|| "/proc/cray_xt".into());
        let read = |name: &str| aar_record::text_file::read(&dir.join(name), 4096).ok();
        let nid = read("nid")?.trim().parse().ok()?;
        let cname = read("cname").map(|c| c.trim().to_string());
        Some(CrayXt { nid, cname: cname.filter(|c| !c.is_empty()) })
    }
}

/// Dense ids for `keys`, in their sorted order.
fn dense<K: Ord>(keys: impl Iterator<Item = K>) -> BTreeMap<K, u32> {
    let mut keys: Vec<K> = keys.collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter().zip(0..).collect()
}

/// A node name `c<column>-<row>c<chassis>s<slot>n<node>` as (row, column, chassis, slot).
fn cname(name: &str) -> Option<(u32, u32, u32, u32)> {
    let rest = name.strip_prefix('c')?;
    let (col, rest) = rest.split_once('-')?;
    let (row, rest) = rest.split_once('c')?;
    let (chassis, rest) = rest.split_once('s')?;
    let (slot, node) = rest.split_once('n')?;
    node.parse::<u32>().ok()?;
    Some((row.parse().ok()?, col.parse().ok()?, chassis.parse().ok()?, slot.parse().ok()?))
}

/// A whole number of a node table or of Cray's job environment (a NIC address, a group, a
/// router): decimal, or hexadecimal after `0x`, from 0 to 4294967295.
pub fn whole_number(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// How [`whole_number`]s are written, for messages.
const WHOLE_NUMBERS: &str = "whole numbers from 0 to 4294967295, decimal or 0x hexadecimal";

impl FromStr for Topology {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        // A byte-order mark, as some editors start a file with, is not part of the first line.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut explicit = BTreeMap::new();
        // xtprocadmin lines: NIC -> (node name, group key, router key), numbered densely at the end.
        let mut named = BTreeMap::new();
        // The line each NIC address is listed on, to name both lines of one listed twice.
        let mut listed: BTreeMap<u32, usize> = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with("NID") {
                continue;
            }
            let bad = |why: &str| format!("line {}: {why}: {:?}", i + 1, line.chars().take(80).collect::<String>());
            let fields: Vec<&str> = line.split_whitespace().collect();
            let nic = fields
                .first()
                .and_then(|f| whole_number(f))
                .ok_or_else(|| bad(&format!("the first field is not a NIC address ({WHOLE_NUMBERS})")))?;
            if let Some(first) = listed.insert(nic, i + 1) {
                return Err(bad(&format!("NIC address {nic:#x} is listed twice (first on line {first})")));
            }
            if let Some((row, col, chassis, slot)) = fields.get(2).and_then(|n| cname(n)) {
                if whole_number(fields[1]) != Some(nic) {
                    return Err(bad(&format!(
                        "its (HEX) field {} is not its NID {nic} ({nic:#x}): not a line of xtprocadmin's NID (HEX) \
                         NODENAME ...",
                        fields[1]
                    )));
                }
                named.insert(nic, (fields[2].to_string(), (row, col / 2), (row, col, chassis, slot)));
            } else if let [_, group, router] = fields[..] {
                let (Some(group), Some(router)) = (whole_number(group), whole_number(router)) else {
                    return Err(bad(&format!("group and router must be {WHOLE_NUMBERS}")));
                };
                explicit.insert(nic, Location { group, router });
            } else {
                return Err(bad("expected NIC GROUP ROUTER, or xtprocadmin's NID (HEX) NODENAME ..."));
            }
        }
        // The xtprocadmin lines' groups are numbered after the NIC GROUP ROUTER lines' (whose
        // numbers are the site's own, not comparable with cabinets): a node of one form is never
        // in the same group as a node of the other.
        let groups = dense(named.values().map(|(_, g, _)| *g));
        let routers = dense(named.values().map(|(_, _, r)| *r));
        let first_group = match explicit.iter().max_by_key(|(_, l)| l.group) {
            Some((nic, last)) if !named.is_empty() => last
                .group
                .checked_add(1)
                .filter(|first| first.checked_add(groups.len() as u32 - 1).is_some())
                .ok_or_else(|| {
                    format!(
                        "line {}: group {} leaves no number for the groups of the xtprocadmin lines, which come \
                             after those of the NIC GROUP ROUTER lines: number the groups from 0",
                        listed[nic], last.group
                    )
                })?,
            _ => 0,
        };
        let mut nodes = explicit;
        nodes.extend(
            named
                .iter()
                .map(|(&nic, (_, g, r))| (nic, Location { group: first_group + groups[g], router: routers[r] })),
        );
        if nodes.is_empty() {
            return Err("no node is listed".into());
        }
        Ok(Self { nodes, named: named.into_iter().map(|(nic, (name, _, _))| (nic, name)).collect() })
    }
}

impl Topology {
    /// The place of the node with this NIC address, if the table lists it.
    pub fn location(&self, nic: u32) -> Option<Location> {
        self.nodes.get(&nic).copied()
    }

    /// Nodes listed (after the checks).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes listed by xtprocadmin lines (after the checks).
    pub fn named_len(&self) -> usize {
        self.named.len()
    }

    /// Check the `xtprocadmin` lines against what this node says of itself (`here`: its
    /// `/proc/cray_xt`; `nic`: its NIC address). Those lines name nodes by NID, which the table
    /// takes to be the NIC address: if this node's NID is not its NIC address, or the table gives
    /// its NID another node name, they would put destinations in the wrong classes. Then they
    /// are left out, and the error says why. Nothing to check without such lines or off a Cray XC
    /// node.
    pub fn check_names(&mut self, here: Option<&CrayXt>, nic: Option<u32>) -> Result<(), String> {
        let Some(here) = here.filter(|_| !self.named.is_empty()) else { return Ok(()) };
        let why = match (nic, self.named.get(&here.nid), here.cname.as_deref()) {
            (Some(nic), _, _) if nic != here.nid => format!(
                "this node's NID is {} (/proc/cray_xt/nid) but its NIC address is {nic:#x} (PMI_GNI_LOC_ADDR), \
                 so the NIDs of its xtprocadmin lines are not the NIC addresses posts go to",
                here.nid
            ),
            (_, Some(listed), Some(cname)) if listed != cname => format!(
                "it lists NID {} as {listed} but this node is {cname} (/proc/cray_xt/cname): its xtprocadmin \
                 lines are not this machine's",
                here.nid
            ),
            _ => return Ok(()),
        };
        let named = std::mem::take(&mut self.named);
        self.nodes.retain(|nic, _| !named.contains_key(nic));
        Err(why)
    }
}

/// The largest node table read: xtprocadmin's lines are under 100 bytes, so this is more than a
/// million nodes.
const TABLE_LIMIT: u64 = 64 << 20;

/// The table this process uses, and what the one message about it says.
static TABLE: OnceLock<Option<Topology>> = OnceLock::new();
/// Where [`TABLE`] came from, as messages name it (`AAR_TOPOLOGY="<path>"`).
static TABLE_NAME: OnceLock<String> = OnceLock::new();
static NO_TABLE_SAID: AtomicBool = AtomicBool::new(false);

/// A node table as read: where it came from, what of it is usable, and the one warning it
/// earns, if any.
pub struct Read {
    /// `AAR_TOPOLOGY`, or the emulated job's table.
    pub from: &'static str,
    pub path: std::path::PathBuf,
    /// How messages name it: `AAR_TOPOLOGY="<path>"`.
    pub name: String,
    /// `None`: nothing of it is usable.
    pub table: Option<Topology>,
    /// The node's own account (`/proc/cray_xt`), which the xtprocadmin lines were checked against.
    pub node: Option<CrayXt>,
    pub warning: Option<String>,
}

impl Read {
    /// The table named by `AAR_TOPOLOGY` (`variable`), else the emulated job's; `None` when no
    /// table is named. Read, parsed and checked against this node, as [`load`] does at
    /// initialisation and `aar doctor` does before a job.
    pub fn named(variable: Option<&str>) -> Option<Read> {
        let (path, from) = match variable {
            Some(p) => (std::path::PathBuf::from(p), "AAR_TOPOLOGY"),
            None => {
                let dir = crate::sys::emulator_folder("AAR_EMU_JOB_DIR")?;
                (dir.join("topology"), "the emulated job's topology")
            }
        };
        let shown = path.display().to_string();
        let shown = shown.escape_debug();
        let name = format!("{from}=\"{shown}\"");
        let node = CrayXt::read();
        let parsed = aar_record::text_file::read(&path, TABLE_LIMIT)
            .map_err(|e| e.to_string())
            .and_then(|t| t.parse::<Topology>());
        let (table, warning) = match parsed {
            Ok(mut t) => match t.check_names(node.as_ref(), local_nic_address()) {
                Ok(()) => (Some(t), None),
                Err(why) => {
                    let kept = if t.nodes.is_empty() {
                        "every destination is treated alike (one class)".to_string()
                    } else {
                        format!("only its {} NIC GROUP ROUTER lines are used", t.nodes.len())
                    };
                    let warning = format!(
                        "{name}: {why}. Its xtprocadmin lines are left out: {kept}. Give this machine's \
                         table, with lines of NIC GROUP ROUTER keyed by the NIC addresses PMI_GNI_LOC_ADDR gives."
                    );
                    ((!t.nodes.is_empty()).then_some(t), Some(warning))
                }
            },
            Err(why) => (
                None,
                Some(format!(
                    "{name} is not a usable node table ({why}); every destination is treated alike \
                     (one class). Give a file of NIC GROUP ROUTER lines or xtprocadmin output."
                )),
            ),
        };
        Some(Read { from, path, name, table, node, warning })
    }
}

/// Load the table (once, at initialisation): `AAR_TOPOLOGY`'s file, else the emulated job's.
/// A file that cannot be read or parsed, or whose xtprocadmin lines this node contradicts, gets
/// one warning naming it.
pub fn load(variable: Option<&str>) -> Option<&'static Topology> {
    TABLE
        .get_or_init(|| {
            let read = Read::named(variable)?;
            let _ = TABLE_NAME.set(read.name);
            if let Some(w) = &read.warning {
                NO_TABLE_SAID.store(true, Ordering::Relaxed);
                diag::warn(w);
            }
            read.table
        })
        .as_ref()
}

/// The table [`load`] loaded, if any.
pub fn table() -> Option<&'static Topology> {
    TABLE.get().and_then(Option::as_ref)
}

/// The (group, router) of the node with NIC address `nic`; `None` when no table is loaded or it
/// does not list that node. The first time there is no table at all, the library says so once.
pub fn location_of(nic: u32) -> Option<Location> {
    match table() {
        Some(t) => t.location(nic),
        None => {
            no_table();
            None
        }
    }
}

/// The loaded table as messages name it.
fn table_name() -> &'static str {
    TABLE_NAME.get().map_or("", String::as_str)
}

/// No table at all, where a destination's place is asked: said once.
fn no_table() {
    if !NO_TABLE_SAID.swap(true, Ordering::Relaxed) {
        diag::warn(
            "no node table (AAR_TOPOLOGY is unset): every destination is treated alike (one class). \
             Set AAR_TOPOLOGY to a file of NIC GROUP ROUTER lines or xtprocadmin output.",
        );
    }
}

/// The NIC address the launcher gave this node (`PMI_GNI_LOC_ADDR`; the first of a `:`-separated
/// list).
pub fn local_nic_address() -> Option<u32> {
    let v = std::env::var("PMI_GNI_LOC_ADDR").ok()?;
    whole_number(v.split(':').next()?.trim())
}

/// This node's place, found once.
static HERE: OnceLock<Option<Location>> = OnceLock::new();
static HERE_SAID: AtomicBool = AtomicBool::new(false);
static UNLISTED_SAID: AtomicBool = AtomicBool::new(false);
static UNREMEMBERED_SAID: AtomicBool = AtomicBool::new(false);

/// This node's place; a table that cannot give it is said once (every class is then unknown).
/// The place is found inside the once-cell, the saying outside it: a write to a stderr whose
/// reader has stalled must not hold up the other threads' posts, which wait for the cell (and a
/// fork child would wait for good on a cell its parent's thread was filling).
pub fn here() -> Option<Location> {
    let place = *HERE.get_or_init(|| local_nic_address().and_then(|nic| table()?.location(nic)));
    if place.is_none() && !HERE_SAID.load(Ordering::Relaxed) && !HERE_SAID.swap(true, Ordering::Relaxed) {
        cannot_place_here();
    }
    place
}

#[cold]
#[inline(never)]
fn cannot_place_here() {
    if table().is_none() {
        // Without PMI_GNI_LOC_ADDR no place was asked for, but the missing table is still why.
        no_table();
        return;
    }
    let why = match local_nic_address() {
        Some(nic) => format!(
            "it does not list this node (NIC address {nic:#x}, PMI_GNI_LOC_ADDR; the table is {})",
            table_name()
        ),
        None => match std::env::var_os("PMI_GNI_LOC_ADDR").filter(|v| !v.is_empty()) {
            Some(v) => format!(
                "PMI_GNI_LOC_ADDR=\"{}\" is not a NIC address (the first of a :-separated list: \
                 {WHOLE_NUMBERS}), so this node's NIC address is unknown",
                v.to_string_lossy().escape_debug()
            ),
            None => "PMI_GNI_LOC_ADDR is unset, so this node's NIC address is unknown".to_string(),
        },
    };
    diag::warn(&format!(
        "the node table cannot place this node: {why}; every destination is treated alike (one class). \
         Give a table that lists every node of the job, and run under Cray's PMI (or aar run), which sets \
         PMI_GNI_LOC_ADDR."
    ));
}

/// A destination the table does not list: said once, for the first such NIC address.
#[cold]
#[inline(never)]
pub fn unlisted(nic: u32) {
    // A load first: posts keep coming this way once said, and a swap is a locked instruction.
    if table().is_some() && !UNLISTED_SAID.load(Ordering::Relaxed) && !UNLISTED_SAID.swap(true, Ordering::Relaxed) {
        diag::warn(&format!(
            "the node table does not list NIC address {nic:#x}, a destination of this process's messages (the table \
             is {}): messages to nodes it does not list are of no class (unknown). Give a table that lists every node \
             of the job.",
            table_name()
        ));
    }
}

/// A post on an endpoint without a remembered destination, in a process whose endpoint table
/// had no room for some binds: said once.
#[cold]
#[inline(never)]
fn unremembered() {
    let forgotten = endpoints::forgotten();
    if forgotten > 0 && !UNREMEMBERED_SAID.load(Ordering::Relaxed) && !UNREMEMBERED_SAID.swap(true, Ordering::Relaxed) {
        diag::warn(&format!(
            "this process bound more uGNI endpoints at once than libaar.so keeps destinations for (up to {}; \
             {forgotten} binds so far found no room): messages on those endpoints are of no class (unknown), as \
             without a node table. Nothing else is affected.",
            endpoints::SLOTS
        ));
    }
}

/// Where a post on endpoint `ep` goes from and to: (this node's place, its destination's place),
/// for the routing policy's destination class; `None` (class unknown) when there is no table,
/// the table lacks either node (said once), or the library did not see the endpoint's
/// `GNI_EpBind`. No lock, no allocation.
#[inline]
pub fn post_places(ep: usize) -> Option<(Location, Location)> {
    let here = here()?;
    let Some(nic) = endpoints::remote_nic(ep) else {
        unremembered();
        return None;
    };
    match location_of(nic) {
        Some(there) => Some((here, there)),
        None => {
            unlisted(nic);
            None
        }
    }
}

/// The destination class of a post on endpoint `ep`, for the policies that keep state per class
/// (`steady`); the others see one class, and never make the library look a destination up (the
/// table itself is loaded at start-up under every policy, for the record's node location).
#[inline]
pub fn destination_class(policy: Policy, ep: usize) -> DestinationClass {
    match policy {
        Policy::Steady => {
            post_places(ep).map_or(DestinationClass::Unknown, |(from, to)| DestinationClass::between(from, to))
        }
        Policy::Auto | Policy::Fixed(_) | Policy::Off => DestinationClass::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_lines_give_their_places() {
        let t: Topology = "# nic group router\n0x100 0 0\n257 0 1\n\n0x200 3 7\n".parse().unwrap();
        assert_eq!(t.location(0x100), Some(Location { group: 0, router: 0 }));
        assert_eq!(t.location(0x101), Some(Location { group: 0, router: 1 }));
        assert_eq!(t.location(0x200), Some(Location { group: 3, router: 7 }));
        assert_eq!(t.location(0x300), None);
    }

    #[test]
    fn xtprocadmin_output_groups_cabinet_pairs_and_blades() {
        let text = "NID    (HEX)    NODENAME     TYPE    STATUS        MODE\n\
                    20     0x14   c0-0c0s5n0  compute      up       batch\n\
                    21     0x15   c0-0c0s5n1  compute      up       batch\n\
                    30     0x1e   c1-0c2s0n0  compute      up       batch\n\
                    40     0x28   c2-0c0s5n0  compute      up       batch\n";
        let t: Topology = text.parse().unwrap();
        let (a, b, c, d) =
            (t.location(20).unwrap(), t.location(21).unwrap(), t.location(30).unwrap(), t.location(40).unwrap());
        assert_eq!(a, b, "two nodes of one blade share the router");
        assert_eq!(a.group, c.group, "cabinets c0-0 and c1-0 form one group");
        assert_ne!(a.router, c.router);
        assert_ne!(a.group, d.group, "c2-0 starts the next group");
        assert_ne!(a.router, d.router, "the same slot in another group is another router");
    }

    /// The xtprocadmin lines are checked against what the node says of itself; the NIC lines
    /// need no check and stay.
    #[test]
    fn xtprocadmin_lines_are_checked_against_the_node() {
        let text = "20 0x14 c0-0c0s5n0 compute up batch\n21 0x15 c0-0c0s5n1 compute up batch\n0x100 4 9\n";
        let table: Topology = text.parse().unwrap();
        let node = |nid: u32, cname: &str| CrayXt { nid, cname: Some(cname.to_string()) };
        for (here, nic) in [
            (Some(node(20, "c0-0c0s5n0")), Some(20)),
            (Some(node(20, "c0-0c0s5n0")), None),
            (Some(CrayXt { nid: 21, cname: None }), Some(21)),
            (None, Some(0x100)),
        ] {
            let mut t = table.clone();
            assert_eq!(t.check_names(here.as_ref(), nic), Ok(()), "{here:?} {nic:?}");
            assert_eq!(t, table);
        }
        for (here, nic, want) in [
            (node(20, "c0-0c0s5n0"), Some(0x100), "NID is 20 (/proc/cray_xt/nid) but its NIC address is 0x100"),
            (node(20, "c3-0c1s2n0"), Some(20), "lists NID 20 as c0-0c0s5n0 but this node is c3-0c1s2n0"),
        ] {
            let mut t = table.clone();
            let why = t.check_names(Some(&here), nic).unwrap_err();
            assert!(why.contains(want), "{why}");
            assert_eq!((t.location(20), t.location(21)), (None, None), "the xtprocadmin lines are left out");
            assert_eq!(t.location(0x100), Some(Location { group: 4, router: 9 }));
        }
        // A table of NIC lines only is keyed by NIC address: nothing to check.
        let mut nics: Topology = "0x100 4 9\n".parse().unwrap();
        assert_eq!(nics.check_names(Some(&node(7, "c0-0c0s0n0")), Some(0x100)), Ok(()));
    }

    #[test]
    fn bad_tables_say_which_line() {
        for (text, want) in [
            ("0x100 0\n", "line 1"),
            ("0x100 0 0\nzz 1 1\n", "line 2: the first field is not a NIC address (whole numbers from 0 to"),
            ("0x100000000 0 0\n", "line 1: the first field is not a NIC address (whole numbers from 0 to 4294967295"),
            ("0x100 0 0\n\n0x100 1 1\n", "line 3: NIC address 0x100 is listed twice (first on line 1)"),
            ("1 0x1 c0-0c0s0n0 compute\n1 2 3\n", "line 2: NIC address 0x1 is listed twice (first on line 1)"),
            ("1 0x1 c0-0c0s0n0 compute\n1 0x1 c2-0c0s0n0 compute\n", "line 2: NIC address 0x1 is listed twice"),
            ("20 0x15 c0-0c0s5n0 compute up batch\n", "line 1: its (HEX) field 0x15 is not its NID 20 (0x14)"),
            ("20 twenty c0-0c0s5n0 compute up batch\n", "line 1: its (HEX) field twenty is not its NID 20"),
            ("12 0xc notaname compute up\n", "expected NIC GROUP ROUTER"),
            ("# nothing\n", "no node"),
            ("", "no node"),
            ("5 a b\n", "line 1: group and router must be whole numbers from 0 to 4294967295, decimal or 0x"),
            ("5 -1 0\n", "group and router must be whole numbers"),
            ("5 0 4294967296\n", "group and router must be whole numbers"),
            ("5 1 0\n6 4294967295 0\n7 0x7 c0-0c0s0n0 compute\n", "line 2: group 4294967295 leaves no number"),
        ] {
            let e = text.parse::<Topology>().unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    /// Every number of a NIC GROUP ROUTER line may be written in hexadecimal, as NIC addresses
    /// are; a byte-order mark (an editor's) before the first line is not part of it.
    #[test]
    fn numbers_are_decimal_or_hexadecimal() {
        let t: Topology = "\u{feff}0x100 0x2 0x11\n257 2 17\n0X102 0Xa 0\n".parse().unwrap();
        assert_eq!(t.location(0x100), Some(Location { group: 2, router: 17 }));
        assert_eq!(t.location(0x101), t.location(0x100));
        assert_eq!(t.location(0x102), Some(Location { group: 10, router: 0 }));
    }

    /// The groups of xtprocadmin lines are numbered apart from those of NIC GROUP ROUTER lines: a
    /// site's group 0 is not the first cabinet pair of the machine.
    #[test]
    fn the_two_forms_never_share_a_group() {
        let t: Topology = "0x100 0 0\n0x103 2 0\n257 0x101 c2-0c0s5n0 compute up batch\n258 0x102 c2-0c0s5n1 compute\n"
            .parse()
            .unwrap();
        let (a, b, c) = (t.location(0x101).unwrap(), t.location(0x102).unwrap(), t.location(0x100).unwrap());
        assert_eq!(a, b, "one blade");
        assert_eq!(a.group, 3, "after the NIC lines' groups 0 and 2");
        assert_ne!(a.group, c.group);
    }

    mod hostile {
        //! Node tables a site may hand over by mistake (a truncated file, another tool's output, a
        //! binary): the parser, which runs inside the host program's first post, never panics and
        //! says which line it stopped at; and what it accepts places every node as its line says.

        use super::*;
        use proptest::prelude::*;
        use std::collections::BTreeSet;

        /// Pieces of the two line forms, their edges and garbage.
        const PIECES: &[&str] = &[
            "0",
            "1",
            "0x100",
            "0X1f",
            "0x",
            "0xg",
            "4294967295",
            "4294967296",
            "-1",
            "+1",
            "1e3",
            "NID",
            "(HEX)",
            "#",
            "c0-0c0s0n0",
            "c1-0c2s15n3",
            "c0-0c0s0n",
            "c-0c0s0n0",
            "c0-c0s0n0",
            "c99999999999-0c0s0n0",
            "c0-0c0s0n0x",
            "compute",
            "up",
            "batch",
            "é",
            "ß\u{0}",
            "\t",
            "\r",
            "\u{1b}[0m",
            "\u{feff}",
            "  ",
        ];

        fn line() -> impl Strategy<Value = String> {
            prop_oneof![
                prop::collection::vec(prop::sample::select(PIECES), 0..7).prop_map(|p| p.join(" ")),
                "\\PC{0,40}",
                any::<Vec<u8>>().prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            ]
        }

        proptest! {
            #![proptest_config(aar_testkit::proptest_config(2000))]

            #[test]
            fn any_text_parses_or_names_its_line(lines in prop::collection::vec(line(), 0..12)) {
                let text = lines.join("\n");
                match text.parse::<Topology>() {
                    Ok(t) => prop_assert!(!t.nodes.is_empty()),
                    Err(e) => {
                        let n = text.lines().count();
                        let named = e.strip_prefix("line ").and_then(|r| r.split_once(':')).and_then(|(k, _)| k.parse::<usize>().ok());
                        prop_assert!(e == "no node is listed" || named.is_some_and(|k| (1..=n).contains(&k)), "{e}");
                        // The quoted line is cut at 80 characters, each escaped to at most 10.
                        prop_assert!(e.len() < 1000, "{} bytes", e.len());
                    }
                }
            }

            #[test]
            fn explicit_tables_place_each_node_as_listed(
                nodes in prop::collection::btree_map(any::<u32>(), (any::<u32>(), any::<u32>()), 1..40),
                hex in any::<bool>(),
            ) {
                let text: String = nodes
                    .iter()
                    .map(|(nic, (g, r))| if hex { format!("{nic:#x}\t{g}  {r}\n") } else { format!(" {nic} {g} {r}\n") })
                    .collect();
                let t: Topology = text.parse().map_err(TestCaseError::fail)?;
                for (nic, (group, router)) in &nodes {
                    prop_assert_eq!(t.location(*nic), Some(Location { group: *group, router: *router }));
                }
            }

            #[test]
            fn xtprocadmin_places_by_blade_and_cabinet_pair(
                names in prop::collection::btree_set((0u32..3, 0u32..6, 0u32..3, 0u32..16, 0u32..4), 1..40),
            ) {
                let names: Vec<_> = names.into_iter().collect();
                let mut text = String::from("NID    (HEX)    NODENAME     TYPE    STATUS        MODE\n");
                for (nid, (row, col, chassis, slot, node)) in names.iter().enumerate() {
                    text += &format!("{nid} {nid:#x} c{col}-{row}c{chassis}s{slot}n{node} compute up batch\n");
                }
                let t: Topology = text.parse().map_err(TestCaseError::fail)?;
                let at = |i: usize| t.location(i as u32).unwrap();
                for (i, a) in names.iter().enumerate() {
                    for (j, b) in names.iter().enumerate() {
                        let same_group = (a.0, a.1 / 2) == (b.0, b.1 / 2);
                        let same_router = (a.0, a.1, a.2, a.3) == (b.0, b.1, b.2, b.3);
                        prop_assert_eq!(at(i).group == at(j).group, same_group, "{:?} {:?}", a, b);
                        prop_assert_eq!(at(i).router == at(j).router, same_router, "{:?} {:?}", a, b);
                    }
                }
                let groups: BTreeSet<u32> = (0..names.len()).map(|i| at(i).group).collect();
                prop_assert_eq!(groups.iter().copied().max().map_or(0, |g| g + 1) as usize, groups.len(), "dense ids");
            }
        }
    }
}
