//! `AAR_OUTPUT_RANKS` as libaar.so shows it, once it has taken it: in a summary record's
//! `settings.output_ranks` and in its self-check's settings (`aar doctor`), ranks and inclusive
//! ranges separated by commas, e.g. `0:63,128`. libaar.so's own parser (`RankSet` in the
//! library's settings) judges what users write and refuses what is bad; this reads its output,
//! which the CLI cannot link, to know which ranks write records.

use std::str::FromStr;

/// The ranks that write records: inclusive ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputRanks(Vec<(u32, u32)>);

impl OutputRanks {
    /// Whether `rank` writes records.
    pub fn contains(&self, rank: u32) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&rank))
    }

    /// The ranks of `0..n` that write records, each once, in order.
    pub fn ranks_below(&self, n: u32) -> impl Iterator<Item = u32> {
        self.merged_below(n).into_iter().flat_map(|(lo, hi)| lo..=hi)
    }

    /// How many of the ranks `0..n` write records.
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

impl FromStr for OutputRanks {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let rank = |t: &str| t.trim().parse::<u32>().map_err(|_| format!("\"{}\" is not a rank", t.escape_debug()));
        text.split(',')
            .map(|item| {
                let (lo, hi) = item.split_once(':').unwrap_or((item, item));
                let (lo, hi) = (rank(lo)?, rank(hi)?);
                if lo > hi {
                    return Err(format!("the range {lo}:{hi} runs backwards"));
                }
                Ok((lo, hi))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libaar_s_form_and_counts_each_rank_once() {
        let r: OutputRanks = "0:63,128,60:70".parse().unwrap();
        assert!(r.contains(0) && r.contains(70) && r.contains(128) && !r.contains(71));
        assert_eq!(r.count_below(1000), 72);
        assert_eq!(r.count_below(100), 71);
        assert_eq!(r.count_below(10), 10);
        assert_eq!(
            r.ranks_below(130).filter(|&x| x >= 62).collect::<Vec<_>>(),
            [62, 63, 64, 65, 66, 67, 68, 69, 70, 128]
        );
        assert_eq!("0:4294967295".parse::<OutputRanks>().unwrap().count_below(u32::MAX), u32::MAX);
        assert!("5:1".parse::<OutputRanks>().is_err() && "x".parse::<OutputRanks>().is_err());
    }
}
