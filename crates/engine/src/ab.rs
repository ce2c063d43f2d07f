//! A/B experiments: which policy is in force in which iteration.
//!
//! Every rank must use the same policy in the same iteration without communicating, so the
//! schedule is a pure function of the iteration index: round-robin, or a randomized block design
//! (each block of k iterations holds each of the k policies once, in an order drawn from the
//! seed and the block number), which avoids aliasing with periodic behaviour of the application
//! or the machine.

use crate::engine::Policy;
use core::fmt;
use core::str::FromStr;

/// Most policies one experiment alternates.
pub const MAX_POLICIES: usize = 8;

/// How iterations are assigned to policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbOrder {
    /// Iteration i uses policy i mod k.
    RoundRobin,
    /// Randomized blocks of k iterations, each a permutation drawn from this seed.
    Shuffled(u64),
}

/// Seed of `shuffled` when none is given: fixed, so that every rank of a job agrees.
pub const DEFAULT_SEED: u64 = 1;

/// A seed as written: a whole number from 0 to 2^64 − 1 (`shuffled:SEED`, `aar sim --seed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seed(pub u64);

impl FromStr for Seed {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        text.trim().parse::<u64>().map(Seed).map_err(|_| {
            format!("\"{}\" is not a seed: a seed is a whole number from 0 to {}", text.escape_debug(), u64::MAX)
        })
    }
}

impl FromStr for AbOrder {
    type Err = String;
    /// `round-robin` (or `rr`), `shuffled`, `shuffled:SEED`; blanks around the colon are allowed,
    /// as around the commas of a policy list.
    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let (name, seed) = match t.split_once(':') {
            Some((n, s)) => (n.trim_end(), Some(s)),
            None => (t, None),
        };
        match (name.to_ascii_lowercase().as_str(), seed) {
            ("round-robin" | "roundrobin" | "rr", None) => Ok(Self::RoundRobin),
            ("shuffled" | "shuffle", None) => Ok(Self::Shuffled(DEFAULT_SEED)),
            ("shuffled" | "shuffle", Some(s)) => s.parse::<Seed>().map(|s| Self::Shuffled(s.0)),
            _ => Err("expected round-robin, shuffled or shuffled:SEED".into()),
        }
    }
}

impl fmt::Display for AbOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RoundRobin => f.write_str("round-robin"),
            Self::Shuffled(seed) => write!(f, "shuffled:{seed}"),
        }
    }
}

/// The policies of an A/B experiment and their order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbSchedule {
    policies: Vec<Policy>,
    order: AbOrder,
}

/// A comma-separated list of 2 or more different policy names (`auto`, `steady`, `off`,
/// `ADAPTIVE0`..`3`: at most the 7 there are, within [`MAX_POLICIES`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyList(pub Vec<Policy>);

impl FromStr for PolicyList {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let mut policies = Vec::new();
        for name in text.split(',') {
            policies.push(name.parse::<Policy>()?);
        }
        if policies.len() < 2 {
            return Err("needs at least two policies".into());
        }
        // Repeats first: there are only 7 policies, so a longer list always repeats one, and
        // the name repeated says more than a count.
        if let Some(p) = policies.iter().enumerate().find_map(|(i, p)| policies[..i].contains(p).then_some(p)) {
            return Err(format!("names {} twice", p.name()));
        }
        if policies.len() > MAX_POLICIES {
            return Err(format!("has more than {MAX_POLICIES} policies"));
        }
        Ok(Self(policies))
    }
}

/// splitmix64: a tiny, well-mixed generator; the same sequence on every rank and platform.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl AbSchedule {
    /// `policies` must hold 1 to [`MAX_POLICIES`] entries (a [`PolicyList`] does).
    pub fn new(policies: Vec<Policy>, order: AbOrder) -> Self {
        assert!(!policies.is_empty() && policies.len() <= MAX_POLICIES, "1 to {MAX_POLICIES} policies");
        Self { policies, order }
    }

    /// The policies, in the order users gave them.
    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    /// How iterations map to policies.
    pub fn order(&self) -> AbOrder {
        self.order
    }

    /// Index into [`AbSchedule::policies`] of the policy of iteration `i`.
    pub fn index_at(&self, i: u64) -> usize {
        let k = self.policies.len();
        let slot = (i % k as u64) as usize;
        match self.order {
            AbOrder::RoundRobin => slot,
            AbOrder::Shuffled(seed) => {
                // Fisher–Yates over k ≤ MAX_POLICIES entries, drawn from (seed, block).
                let mut perm = [0usize; MAX_POLICIES];
                for (j, p) in perm.iter_mut().enumerate().take(k) {
                    *p = j;
                }
                let mut state = seed ^ (i / k as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
                for j in (1..k).rev() {
                    let r = (splitmix64(&mut state) % (j as u64 + 1)) as usize;
                    perm.swap(j, r);
                }
                perm[slot]
            }
        }
    }

    /// The policy of iteration `i`.
    pub fn policy_at(&self, i: u64) -> Policy {
        self.policies[self.index_at(i)]
    }
}

impl fmt::Display for PolicyList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(p.name())?;
        }
        Ok(())
    }
}

#[cfg(feature = "serde")]
mod serde_impls {
    //! Settings show these types as the strings users write.
    use super::{AbOrder, PolicyList};

    macro_rules! as_string {
        ($($t:ty),*) => {$(
            impl serde::Serialize for $t {
                fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    s.collect_str(self)
                }
            }
        )*};
    }
    as_string!(AbOrder, PolicyList);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RoutingMode::*;

    #[test]
    fn parse_lists_and_orders() {
        let l: PolicyList = "auto, ADAPTIVE_0,adaptive3,off".parse().unwrap();
        assert_eq!(l.0, [Policy::Auto, Policy::Fixed(Adaptive0), Policy::Fixed(Adaptive3), Policy::Off]);
        for bad in ["", "auto", "auto,fast", "auto,auto", "a,b,c,d,e,f,g,h,i", "auto,"] {
            assert!(bad.parse::<PolicyList>().is_err(), "{bad}");
        }
        // Every policy, then one again: the repeat is named, not a count of more than 8.
        let all = "auto,steady,off,ADAPTIVE0,ADAPTIVE1,ADAPTIVE2,ADAPTIVE3";
        assert_eq!(all.parse::<PolicyList>().map(|l| l.0.len()), Ok(7));
        assert_eq!(format!("{all},paper,off").parse::<PolicyList>(), Err("names auto twice".to_string()));
        assert_eq!("rr".parse::<AbOrder>(), Ok(AbOrder::RoundRobin));
        assert_eq!("shuffled".parse::<AbOrder>(), Ok(AbOrder::Shuffled(DEFAULT_SEED)));
        assert_eq!("Shuffled:42".parse::<AbOrder>(), Ok(AbOrder::Shuffled(42)));
        assert_eq!(" shuffled : 7 ".parse::<AbOrder>(), Ok(AbOrder::Shuffled(7)));
        for bad in ["", "random", "shuffled:x", "shuffled:-1", "rr:3"] {
            assert!(bad.parse::<AbOrder>().is_err(), "{bad}");
        }
        for bad in ["-1", "x", "", "18446744073709551616", "1.5"] {
            let e = bad.parse::<Seed>().unwrap_err();
            assert!(e.contains(&format!("\"{bad}\" is not a seed")) && e.contains("0 to 18446744073709551615"), "{e}");
        }
        assert_eq!(" 18446744073709551615".parse::<Seed>(), Ok(Seed(u64::MAX)));
        assert_eq!(AbOrder::Shuffled(7).to_string().parse::<AbOrder>(), Ok(AbOrder::Shuffled(7)));
        assert_eq!(l.to_string(), "auto,ADAPTIVE0,ADAPTIVE3,off");
    }

    #[test]
    fn round_robin_cycles() {
        let s = AbSchedule::new(vec![Policy::Auto, Policy::Off, Policy::Fixed(Adaptive3)], AbOrder::RoundRobin);
        let got: Vec<usize> = (0..7).map(|i| s.index_at(i)).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn shuffled_blocks_hold_every_policy_once_and_differ_between_blocks() {
        // Seed 9 shows all six orders by block 8; more blocks cost Miri seconds and say no more.
        const BLOCKS: u64 = 40;
        let s = AbSchedule::new(vec![Policy::Auto, Policy::Off, Policy::Fixed(Adaptive0)], AbOrder::Shuffled(9));
        let mut orders = std::collections::HashSet::new();
        for block in 0..BLOCKS {
            let mut got: Vec<usize> = (0..3).map(|j| s.index_at(block * 3 + j)).collect();
            orders.insert(got.clone());
            got.sort();
            assert_eq!(got, [0, 1, 2], "block {block}");
        }
        assert_eq!(orders.len(), 6, "all 3! orders appear over {BLOCKS} blocks");
        let again = AbSchedule::new(s.policies().to_vec(), AbOrder::Shuffled(9));
        assert!((0..BLOCKS * 3).all(|i| again.index_at(i) == s.index_at(i)), "a pure function of (seed, i)");
        let other = AbSchedule::new(s.policies().to_vec(), AbOrder::Shuffled(10));
        assert!((0..BLOCKS * 3).any(|i| other.index_at(i) != s.index_at(i)), "the seed matters");
    }
}
