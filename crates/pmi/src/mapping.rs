//! Where the ranks of a job run: the value of the `PMI_process_mapping` KVS key, in the format
//! MPICH's hydra publishes, `(vector,(START,NODES,RANKS_PER_NODE),...)`. Each block puts
//! RANKS_PER_NODE consecutive ranks on each of the NODES nodes from START on; when the blocks hold
//! fewer ranks than the job, they repeat (hydra's round-robin placements). A clique is the set of
//! ranks of one node.

use std::fmt;
use std::str::FromStr;

/// `RANKS_PER_NODE` consecutive ranks on each of `nodes` nodes from `start_node` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The first node of the block.
    pub start_node: usize,
    /// How many nodes.
    pub nodes: usize,
    /// How many consecutive ranks on each.
    pub ranks_per_node: usize,
}

/// A job's placement of ranks on nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessMapping {
    blocks: Vec<Block>,
}

impl ProcessMapping {
    /// `size` ranks, `ranks_per_node` consecutive ranks per node, nodes 0, 1, ...: rank r on node
    /// r / ranks_per_node (a smaller last node when size is not a multiple). `None` when either
    /// is 0.
    pub fn block(size: usize, ranks_per_node: usize) -> Option<Self> {
        if size == 0 || ranks_per_node == 0 {
            return None;
        }
        let full = size / ranks_per_node;
        let rest = size % ranks_per_node;
        let mut blocks = Vec::new();
        if full > 0 {
            blocks.push(Block { start_node: 0, nodes: full, ranks_per_node });
        }
        if rest > 0 {
            blocks.push(Block { start_node: full, nodes: 1, ranks_per_node: rest });
        }
        Some(ProcessMapping { blocks })
    }

    /// The node of each of `size` ranks, in rank order. Only the first `size` places of the
    /// blocks are walked: a block may say it holds far more ranks than the job (or than memory
    /// holds), and a block that places none is passed over however many nodes it names.
    pub fn nodes(&self, size: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(size);
        // Parsing and `block` never make a mapping that holds no rank, so this ends.
        while out.len() < size {
            for b in self.blocks.iter().filter(|b| b.ranks_per_node > 0) {
                // Parsing refuses a block whose last node is past usize::MAX.
                for node in b.start_node..b.start_node + b.nodes {
                    if out.len() == size {
                        return out;
                    }
                    let n = b.ranks_per_node.min(size - out.len());
                    out.extend(std::iter::repeat_n(node, n));
                }
            }
        }
        out
    }

    /// The ranks on `rank`'s node (its clique), in rank order, in a job of `size` ranks.
    pub fn clique(&self, rank: usize, size: usize) -> Vec<usize> {
        clique(&self.nodes(size), rank)
    }
}

/// The ranks on `rank`'s node, in rank order, given the node of every rank.
pub fn clique(nodes: &[usize], rank: usize) -> Vec<usize> {
    match nodes.get(rank) {
        Some(&mine) => (0..nodes.len()).filter(|&r| nodes[r] == mine).collect(),
        None => Vec::new(),
    }
}

impl fmt::Display for ProcessMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(vector")?;
        for b in &self.blocks {
            write!(f, ",({},{},{})", b.start_node, b.nodes, b.ranks_per_node)?;
        }
        f.write_str(")")
    }
}

impl FromStr for ProcessMapping {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!("{} is not a process mapping (vector,(START,NODES,RANKS),...): {why}", crate::wire::quoted(s))
        };
        let body = s
            .trim()
            .strip_prefix("(vector")
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| bad("it must be (vector...)"))?;
        let mut blocks = Vec::new();
        for part in body.split(')') {
            let part = part.trim_start_matches(',').trim();
            if part.is_empty() {
                continue;
            }
            let inner = part.strip_prefix('(').ok_or_else(|| bad("a block must be (START,NODES,RANKS)"))?;
            let nums: Vec<usize> = inner
                .split(',')
                .map(|n| n.trim().parse::<usize>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad("a block holds a value that is not a number"))?;
            let [start_node, nodes, ranks_per_node] = nums[..] else {
                return Err(bad("a block must hold three numbers"));
            };
            if start_node.checked_add(nodes).is_none() {
                return Err(bad("a block's nodes run past the largest node number"));
            }
            blocks.push(Block { start_node, nodes, ranks_per_node });
        }
        if blocks.iter().all(|b| b.nodes == 0 || b.ranks_per_node == 0) {
            return Err(bad("it places no rank"));
        }
        Ok(ProcessMapping { blocks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_as_the_launcher_publishes_them() {
        assert_eq!(ProcessMapping::block(4, 2).unwrap().to_string(), "(vector,(0,2,2))");
        assert_eq!(ProcessMapping::block(5, 2).unwrap().to_string(), "(vector,(0,2,2),(2,1,1))");
        assert_eq!(ProcessMapping::block(1, 4).unwrap().to_string(), "(vector,(0,1,1))");
        assert_eq!(ProcessMapping::block(3, 1).unwrap().nodes(3), vec![0, 1, 2]);
        assert!(ProcessMapping::block(0, 1).is_none() && ProcessMapping::block(3, 0).is_none());
    }

    #[test]
    fn cliques_follow_the_blocks() {
        let m: ProcessMapping = "(vector,(0,2,2),(2,1,1))".parse().unwrap();
        assert_eq!(m.nodes(5), vec![0, 0, 1, 1, 2]);
        assert_eq!(m.clique(3, 5), vec![2, 3]);
        assert_eq!(m.clique(4, 5), vec![4]);
        assert_eq!(m.clique(9, 5), Vec::<usize>::new());
    }

    #[test]
    fn hydra_round_robin_repeats_the_blocks() {
        let m: ProcessMapping = "(vector,(0,2,1))".parse().unwrap();
        assert_eq!(m.nodes(4), vec![0, 1, 0, 1]);
        assert_eq!(m.clique(0, 4), vec![0, 2]);
    }

    /// A block that says it holds more ranks than memory could (a launcher's value, which a
    /// rank may also have put) costs what the job's ranks cost: where each block was walked
    /// whole, the first pushed 2^64-1 ranks and the process died when memory ran out.
    #[test]
    fn a_block_larger_than_the_job_is_walked_only_for_the_jobs_ranks() {
        let m: ProcessMapping =
            format!("(vector,(0,{max},0),(5,{big},{max}))", max = usize::MAX, big = usize::MAX - 5).parse().unwrap();
        assert_eq!(m.nodes(3), vec![5, 5, 5]);
        assert_eq!(m.clique(2, 3), vec![0, 1, 2]);
        // Nodes past the largest number would wrap to none: refused, where nodes() looped for ever.
        let e = format!("(vector,({max},2,1))", max = usize::MAX).parse::<ProcessMapping>().unwrap_err();
        assert!(e.ends_with("a block's nodes run past the largest node number"), "{e}");
        let m: ProcessMapping = format!("(vector,({},1,2))", usize::MAX - 1).parse().unwrap();
        assert_eq!(m.nodes(3), vec![usize::MAX - 1; 3]);
    }

    #[test]
    fn bad_mappings_are_refused() {
        for s in ["", "(vector)", "(vector,(0,1))", "(vector,(0,a,1))", "vector,(0,1,1)", "(vector,(0,0,1))"] {
            assert!(s.parse::<ProcessMapping>().is_err(), "{s}");
        }
        // A KVS value any rank may have put: quoted escaped and cut.
        let e = format!("(vector,(0,1,1))\u{1b}[2J{}", ",".repeat(100)).parse::<ProcessMapping>().unwrap_err();
        assert!(e.starts_with(&format!(r#""(vector,(0,1,1))\u{{1b}}[2J{}…" is not"#, ",".repeat(40))), "{e}");
    }
}
