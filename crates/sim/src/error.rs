//! What can be wrong with what a user gives the simulator: the text of an input (a command-line
//! option of `aar sim`, a key of the emulator's `AAR_EMU_SIM`) or an experiment that cannot run
//! as described. The messages say what was given and what is accepted; the caller adds which
//! option or key it was. A text is quoted as `escape_debug` writes it, so that a `"` or a control
//! character inside it cannot end its quote or break the message.

/// A text that is not a valid simulator input (returned by the `FromStr` of the input's type).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// A name that is none of the accepted ones.
    #[error("unknown {what} \"{}\": use {accepted}", text.escape_debug())]
    Unknown { what: &'static str, text: String, accepted: &'static str },
    /// A size in bytes that does not parse; the engine's `ByteSize` says why.
    #[error("bad size: {0}")]
    Size(String),
    /// A size of 0 where something must be sent.
    #[error("{what} of 0 bytes sends nothing: use a size above 0 (e.g. 4K)")]
    ZeroSize { what: &'static str },
    /// A load that is not a fraction of the injection bandwidth: 0, or from `Load::MIN` to 1.
    #[error(
        "\"{}\" is not a load: LOAD in [0, 1] is the fraction of a NIC's injection bandwidth (e.g. 0.3); above 0, \
         at least 0.000001",
        .0.escape_debug()
    )]
    Load(String),
    /// A form with a missing or an extra field.
    #[error("\"{}\" does not have the form {form}", text.escape_debug())]
    Form { text: String, form: &'static str },
    /// A whole number of a list past the largest its field takes, and past any integer type:
    /// `name` names the field, `max` says the largest it takes.
    #[error(
        "\"{}\": {name} = {} is out of range: the largest accepted is {max}",
        text.escape_debug(),
        number.escape_debug()
    )]
    TooLarge { text: String, name: &'static str, number: String, max: String },
    /// A packed placement of the right form whose groups cannot each get a router.
    #[error(
        "\"{}\" spreads {routers} routers over {groups} groups: every group of a packed placement holds at \
         least one of its routers, so GROUPS must be 1 or more and ROUTERS at least GROUPS (e.g. packed:257:6)",
        text.escape_debug()
    )]
    PackedShape { text: String, routers: u32, groups: u32 },
    /// A message too large to simulate packet by packet.
    #[error(
        "{workload} messages of {bytes} bytes are {packets} packets each, and the simulator moves every packet: \
         at most {max} bytes ({max_packets} packets) per message; use a smaller SIZE"
    )]
    MessageTooLarge { workload: String, bytes: u64, packets: u64, max: u64, max_packets: u64 },
    /// A size given to a workload that has none.
    #[error("{workload} takes no size: write {workload} alone")]
    NoSize { workload: &'static str },
    /// A number of ranks per node outside its range.
    #[error("\"{}\" is not a number of ranks per node: use a whole number from 1 to {max}", text.escape_debug())]
    RanksPerNode { text: String, max: u32 },
    /// A topology that cannot be built.
    #[error(transparent)]
    Topology(#[from] TopologyError),
}

/// The most global links an Aries group has.
const ARIES_MAX_CHANNELS: u32 =
    crate::topology::ARIES_ROWS * crate::topology::ARIES_COLS * crate::topology::ARIES_MAX_GLOBAL_PER_ROUTER;

/// A Dragonfly whose shape the simulator cannot build.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TopologyError {
    /// One dimension outside its range.
    #[error("{name} = {value} is outside {min}..={max}")]
    OutOfRange { name: &'static str, value: u64, min: u64, max: u64 },
    /// More groups than the global links can join pairwise.
    #[error(
        "{groups} groups cannot all be linked: a group has {channels} global links and needs one to each other \
         group (at most {} groups; {})",
        channels + 1,
        match aries {
            true if *channels >= ARIES_MAX_CHANNELS => {
                "an Aries router has at most 10 global links and its group 96 routers: use fewer groups"
            }
            true => "add global links per router (an Aries group has 96 routers)",
            false => "add global links per router or routers per group",
        }
    )]
    TooManyGroups { groups: u32, channels: u32, aries: bool },
    /// A network larger than the simulator is meant for.
    #[error(
        "{nodes} nodes (nodes per router x routers per group x groups) is more than the {max} the simulator builds: \
         give fewer groups, routers per group or nodes per router"
    )]
    TooLarge { nodes: u64, max: u64 },
    /// A network whose routers have more ports than the simulator builds (each takes memory:
    /// [`crate::topology::MAX_PORTS`]).
    #[error(
        "{ports} router ports (routers per group x groups x ports per router: nodes per router + routers per \
         group - 1 + global links per router) is more than the {max} the simulator builds: give fewer groups, \
         routers per group, nodes per router or global links per router"
    )]
    TooManyPorts { ports: u64, max: u64 },
}

/// An experiment that cannot run as described.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// More ranks than the placement has nodes for; `larger` names what holds more
    /// ([`crate::workload::Placement::larger`]).
    #[error(
        "placement {placement} holds at most {} (one rank per node), not {ranks}: give at most {}, or \
         {larger}",
        aar_record::count(*max, "node", "nodes"),
        aar_record::count(*max, "rank", "ranks")
    )]
    PlacementFull { placement: &'static str, ranks: u32, max: u32, larger: &'static str },
    /// A packed placement the machine or the job cannot fill.
    #[error(
        "placement packed:{routers}:{groups} needs {groups} of the machine's {machine_groups} groups, at most \
         {routers_per_group} routers per group and at least one node of the job per router (nodes: {nodes}): \
         name fewer routers, or give the job more nodes"
    )]
    Packed { routers: u32, groups: u32, nodes: u32, machine_groups: u32, routers_per_group: u32 },
    /// More ranks than the placement's nodes hold at `ranks_per_node` ranks each; `larger` names
    /// what holds more nodes, as for [`SpecError::PlacementFull`]. More ranks per node is said only
    /// below the most a node holds.
    #[error(
        "placement {placement} holds at most {}, and {ranks} ranks at {ranks_per_node} per node need {}: \
         use fewer ranks, {}{larger}",
        aar_record::count(*max, "node", "nodes"),
        ranks / ranks_per_node,
        if *ranks_per_node < crate::experiment::RanksPerNode::MAX { "more ranks per node, or " } else { "or " }
    )]
    NodesFull { placement: &'static str, ranks: u32, ranks_per_node: u32, max: u32, larger: &'static str },
    /// Ranks that do not fill whole nodes, or a number of ranks per node outside its range.
    #[error(
        "{ranks} ranks do not fill nodes of {ranks_per_node} ranks: the ranks per node must be 1 to {max} and divide \
         the ranks (every node of the job holds as many ranks)"
    )]
    RanksPerNode { ranks: u32, ranks_per_node: u32, max: u32 },
    /// Nodes given rank by rank that are not a node of the machine per rank, at most
    /// `ranks_per_node` ranks on one node.
    #[error(
        "the job's nodes must be {ranks} nodes below {nodes}, one per rank, at most {ranks_per_node} ranks on one \
         node: {given} given"
    )]
    RankNodes { ranks: u32, given: usize, nodes: u32, ranks_per_node: u32 },
    /// Ranks spread over the groups of a network that has only one.
    #[error(
        "placement across-groups puts consecutive ranks in different groups, and the network has {groups} group: \
         give it 2 or more groups, or use placement same-group (or scattered) for a job inside one group"
    )]
    AcrossOneGroup { groups: u32 },
    /// Worst-case traffic (each group's nodes send to the next group's) on a network of one
    /// group: it would be traffic inside the group under another name. `traffic` says which
    /// (a background, `aar sim synth`'s pattern).
    #[error(
        "{traffic} sends from each group to the next, and the network has {groups} group: give it 2 or more \
         groups, or use uniform traffic"
    )]
    WorstCaseOneGroup { traffic: String, groups: u32 },
    /// Uniform random traffic on a network of one node: every node sends to another one.
    #[error(
        "{traffic} sends from every node to another one, and the network has {nodes} node: give it 2 or more nodes"
    )]
    UniformOneNode { traffic: String, nodes: u64 },
    /// Worst-case background kept to the measured job's groups, of a job inside one group: the
    /// background has no next group to send to, and would run as uniform traffic in the group.
    #[error(
        "background {background} sends from each group to the next, and kept to the measured job's groups it has \
         only group {group} of the {groups}: give the background the whole machine, the job 2 or more groups, or \
         give a uniform background"
    )]
    WorstCaseJobGroup { background: String, group: u32, groups: u32 },
    /// A background that sends nothing with so few background nodes (see
    /// `Background::min_nodes`).
    #[error(
        "background {background} needs {min} or more background nodes ({why}), and {nodes} would send nothing: \
         give {min} or more background nodes, or no background (none)"
    )]
    TooFewBackgroundNodes { background: String, nodes: u32, min: u32, why: &'static str },
    /// A background with enough background nodes asked for, but fewer free nodes in its scope
    /// than it needs to send anything: the nodes the measured job leaves in its groups
    /// (`job_groups`, when the background is kept to them) or in the whole machine.
    #[error(
        "background {background} needs {min} or more background nodes ({why}), but {}: it would send nothing; {}",
        match job_groups {
            Some(1) => format!("it is kept to the measured job's group, where only {free} nodes are free"),
            Some(g) => format!("it is kept to the measured job's {g} groups, where only {free} nodes are free"),
            None => format!("only {free} nodes of the machine are free of the measured job"),
        },
        if job_groups.is_some() {
            "give the background the whole machine, a network with more nodes per group, or no background (none)"
        } else {
            "give a larger network, fewer ranks, or no background (none)"
        }
    )]
    BackgroundOutOfReach { background: String, min: u32, why: &'static str, free: u32, job_groups: Option<u32> },
    /// A job of fewer than two ranks has nothing to send.
    #[error("a job needs at least 2 ranks, not {0}")]
    TooFewRanks(u32),
    /// No policy, or more than an A/B experiment alternates.
    #[error("at most {max} policies alternate, and at least one: not {given}")]
    Arms { given: usize, max: usize },
    /// One policy given twice: its iterations would be split between two arms of one name.
    #[error(
        "{policy} is given more than once (under this name or another of its names): an A/B experiment alternates \
         distinct policies, so give each once"
    )]
    DuplicateArm { policy: String },
    /// A policy that no measured iteration runs (fewer iterations than policies, or a shuffled
    /// block cut by the warm-up): it would have no sample, and its row no time.
    #[error(
        "policy {policy} runs in none of the {iterations} measured iterations (after {warmup} warm-up) in this \
         order, so it would have no time to show: give at least {needed} iterations"
    )]
    UnmeasuredArm { policy: String, iterations: u32, warmup: u32, needed: u32 },
    /// The network's topology.
    #[error(transparent)]
    Topology(#[from] TopologyError),
}

#[cfg(test)]
mod tests {
    use crate::experiment::{Background, Load, RanksPerNode};
    use crate::workload::Placement;

    /// Every text a message quotes is quoted as `escape_debug` writes it: a `"`, a line break or
    /// a terminal escape inside an option's or a key's value cannot end the quote or break the line.
    #[test]
    fn quoted_texts_are_escaped() {
        let said = [
            "diag\"onal\n".parse::<Placement>().unwrap_err().to_string(),
            "packed:x\u{1b}[2J".parse::<Placement>().unwrap_err().to_string(),
            "\tpacked:5:6\n".parse::<Placement>().unwrap_err().to_string(),
            "2\"".parse::<Load>().unwrap_err().to_string(),
            "storm\"".parse::<Background>().unwrap_err().to_string(),
            "x\"\r".parse::<RanksPerNode>().unwrap_err().to_string(),
        ];
        for (said, quoted) in said.iter().zip([
            r#""diag\"onal\n""#,
            r#""packed:x\u{1b}[2J""#,
            r#""\tpacked:5:6\n""#,
            r#""2\"""#,
            r#""storm\"""#,
            r#""x\"\r""#,
        ]) {
            assert!(said.contains(quoted), "{said:?} does not quote {quoted}");
            assert!(!said.contains(char::is_control), "{said:?}");
        }
    }
}
