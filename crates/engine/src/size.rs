//! Sizes in bytes as users write them: `AAR_THRESHOLD`, message sizes of simulator workloads
//! and sweeps, background traffic. One parser for all of them.

use core::fmt;
use core::str::FromStr;

/// A number of bytes, written as digits with an optional binary suffix: `4096`, `4K`, `4k`,
/// `4KB`, `4KiB`, `1M`, `2 MiB`, `1G`, `1T`, `1P` (K = 1024). At most 2^50 bytes (1 PiB), so that
/// sums of a few sizes never overflow; what uses a size may bound it further and says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// The largest size accepted.
    pub const MAX: u64 = 1 << 50;
}

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        // A leading `+`, as every whole-number setting takes it (Rust's integer parsing does).
        let v = text.trim();
        let v = v.strip_prefix('+').unwrap_or(v);
        let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
        let (digits, suffix) = v.split_at(split);
        // What messages show of the text: its first 40 characters.
        let shown = || v.chars().take(40).collect::<String>().escape_debug().to_string();
        let bad = || {
            format!(
                "\"{}\" is not a size in bytes: a whole number, optionally followed by B, K, M, G, T or P (K = 1024; \
                 KB and KiB too), e.g. 4096, 64K, 1MiB",
                shown()
            )
        };
        if digits.is_empty() {
            return Err(bad());
        }
        let too_large = || format!("{} is more than 1P (1 PiB), the largest size", shown());
        let scale: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            "p" | "pb" | "pib" => 1 << 50,
            _ => return Err(bad()),
        };
        // Only ASCII digits here: the one way `parse` fails is a number beyond 64 bits, which
        // is too large, not "not a whole number".
        let n: u64 = digits.parse().map_err(|_| too_large())?;
        match n.checked_mul(scale) {
            Some(b) if b <= Self::MAX => Ok(Self(b)),
            _ => Err(too_large()),
        }
    }
}

impl fmt::Display for ByteSize {
    /// The shortest exact form: `64K`, `1M`, `1000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        match b {
            0 => f.write_str("0"),
            _ if b.is_multiple_of(1 << 50) => write!(f, "{}P", b >> 50),
            _ if b.is_multiple_of(1 << 40) => write!(f, "{}T", b >> 40),
            _ if b.is_multiple_of(1 << 30) => write!(f, "{}G", b >> 30),
            _ if b.is_multiple_of(1 << 20) => write!(f, "{}M", b >> 20),
            _ if b.is_multiple_of(1 << 10) => write!(f, "{}K", b >> 10),
            _ => write!(f, "{b}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Option<u64> {
        t.parse::<ByteSize>().ok().map(|b| b.0)
    }

    #[test]
    fn sizes() {
        for (t, b) in [
            ("0", 0),
            ("4096", 4096),
            ("4k", 4096),
            ("4K", 4096),
            ("4KB", 4096),
            ("4KiB", 4096),
            ("1M", 1 << 20),
            ("2 MiB", 2 << 20),
            ("1g", 1 << 30),
            ("64B", 64),
            (" 8 ", 8),
            ("1048576G", 1 << 50),
            ("4 TB", 4 << 40),
            ("1t", 1 << 40),
            ("1P", 1 << 50),
            ("1PiB", 1 << 50),
            ("+4096", 4096),
            (" +64K", 64 << 10),
        ] {
            assert_eq!(parse(t), Some(b), "{t}");
        }
        for bad in [
            "",
            "k",
            "+",
            "++4",
            "+-4",
            "-4",
            "4.5",
            "4x",
            "0x10",
            "1E",
            "2P",
            "1025T",
            "18446744073709551615k",
            "1048577G",
            "é",
            "4Ké",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        let e = "1E".parse::<ByteSize>().unwrap_err();
        assert!(e.contains("\"1E\" is not a size in bytes") && e.contains("B, K, M, G, T or P"), "{e}");
        let e = "2P".parse::<ByteSize>().unwrap_err();
        assert!(e.contains("2P is more than 1P (1 PiB)"), "{e}");
        // A whole number too long for 64 bits is too large, not "not a whole number".
        for huge in ["18446744073709551616", "99999999999999999999999K"] {
            let e = huge.parse::<ByteSize>().unwrap_err();
            assert!(e.contains(&format!("{huge} is more than 1P (1 PiB)")), "{e}");
        }
        // Of a long text, the first 40 characters.
        let e = "9".repeat(1000).parse::<ByteSize>().unwrap_err();
        assert!(e.starts_with(&format!("{} is more than 1P", "9".repeat(40))), "{e}");
    }

    #[test]
    fn display_round_trips() {
        for b in [0u64, 1, 64, 1000, 4096, 65536, 1 << 20, 3 << 30, 4097, 5 << 40, 1 << 50] {
            let shown = ByteSize(b).to_string();
            assert_eq!(parse(&shown), Some(b), "{shown}");
        }
    }
}
