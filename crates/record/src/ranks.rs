//! `AAR_OUTPUT_RANKS`: the ranks that write records, as users write them (comma-separated ranks
//! and inclusive ranges, e.g. `0:63,128`) and as the records (the summary record's settings, the
//! iteration record's header) and the self-check show them once taken. One parser for libaar.so's
//! settings, `aar doctor` and `aar report`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Ranks and inclusive ranges of ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSet(Vec<(u32, u32)>);

/// Most items one [`RankSet`] holds (a few hundred bytes of settings, whatever the input).
pub const MAX_RANK_ITEMS: usize = 1024;

impl RankSet {
    /// Whether `rank` is in the set.
    pub fn contains(&self, rank: u32) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&rank))
    }

    /// The ranks of `0..n` in the set, each once, in order.
    pub fn ranks_below(&self, n: u32) -> impl Iterator<Item = u32> {
        self.merged_below(n).into_iter().flat_map(|(lo, hi)| lo..=hi)
    }

    /// How many of the ranks `0..n` are in the set.
    pub fn count_below(&self, n: u32) -> u32 {
        self.merged_below(n).iter().map(|&(lo, hi)| hi - lo + 1).sum()
    }

    /// The ranges cut to `0..n`, in order, without overlaps (ranges users write may overlap).
    fn merged_below(&self, n: u32) -> Vec<(u32, u32)> {
        let mut ranges: Vec<(u32, u32)> =
            self.0.iter().filter(|&&(lo, _)| lo < n).map(|&(lo, hi)| (lo, hi.min(n - 1))).collect();
        ranges.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        merged
    }
}

impl FromStr for RankSet {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let mut ranges = Vec::new();
        for item in text.split(',') {
            if ranges.len() == MAX_RANK_ITEMS {
                return Err(format!("more than {MAX_RANK_ITEMS} items"));
            }
            let rank =
                |t: &str| t.trim().parse::<u32>().map_err(|_| format!("\"{}\" is not a rank", t.trim().escape_debug()));
            let range = match item.split_once(':') {
                Some((lo, hi)) => (rank(lo)?, rank(hi)?),
                None => (rank(item)?, rank(item)?),
            };
            if range.0 > range.1 {
                return Err(format!("the range {}:{} runs backwards", range.0, range.1));
            }
            ranges.push(range);
        }
        Ok(Self(ranges))
    }
}

impl fmt::Display for RankSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &(lo, hi)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}:{hi}")?;
            }
        }
        Ok(())
    }
}

/// The ranks given, as the fewest ranges (`3,7:9` from 3, 7, 8, 9, in any order): how the report
/// names many ranks at once.
impl FromIterator<u32> for RankSet {
    fn from_iter<I: IntoIterator<Item = u32>>(ranks: I) -> Self {
        let mut ranks: Vec<u32> = ranks.into_iter().collect();
        ranks.sort_unstable();
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        for rank in ranks {
            match ranges.last_mut() {
                Some(last) if rank <= last.1.saturating_add(1) => last.1 = last.1.max(rank),
                _ => ranges.push((rank, rank)),
            }
        }
        Self(ranges)
    }
}

// Shown in records and the self-check as the text users write.
impl Serialize for RankSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

// Read back from records (the iteration record's header) with the parser users' text goes through.
impl<'de> Deserialize<'de> for RankSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_users_write_and_refuses_the_rest() {
        let r: RankSet = "5".parse().unwrap();
        assert!(r.contains(5) && !r.contains(4));
        let r: RankSet = "0:4294967295".parse().unwrap();
        assert!(r.contains(u32::MAX));
        for bad in ["", ",", "1,", "-1", "a", "1:2:3", "3:1", "1.5"] {
            assert!(bad.parse::<RankSet>().is_err(), "{bad}");
        }
        let many = vec!["1"; MAX_RANK_ITEMS + 1].join(",");
        assert!(many.parse::<RankSet>().is_err());
        let shown = " 0:63, 128,60:70".parse::<RankSet>().unwrap().to_string();
        assert_eq!(shown, "0:63,128,60:70");
        assert_eq!(shown.parse::<RankSet>().unwrap().to_string(), shown, "reads what it shows");
    }

    #[test]
    fn ranks_given_one_by_one_are_shown_as_ranges() {
        let r: RankSet = [9, 3, 8, 7, 7, 12, 0, u32::MAX].into_iter().collect();
        assert_eq!(r.to_string(), "0,3,7:9,12,4294967295");
        assert_eq!(r.to_string().parse::<RankSet>().unwrap(), r, "reads what it shows");
        assert_eq!(std::iter::empty().collect::<RankSet>().to_string(), "");
    }

    #[test]
    fn counts_each_rank_once() {
        let r: RankSet = "0:63,128,60:70".parse().unwrap();
        assert!(r.contains(0) && r.contains(70) && r.contains(128) && !r.contains(71));
        assert_eq!(r.count_below(1000), 72);
        assert_eq!(r.count_below(100), 71);
        assert_eq!(r.count_below(10), 10);
        assert_eq!(
            r.ranks_below(130).filter(|&x| x >= 62).collect::<Vec<_>>(),
            [62, 63, 64, 65, 66, 67, 68, 69, 70, 128]
        );
        assert_eq!("0:4294967295".parse::<RankSet>().unwrap().count_below(u32::MAX), u32::MAX);
    }
}
