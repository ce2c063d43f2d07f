//! The job's time limit: `--time LIMIT` in srun's formats, or `MPIEXEC_TIMEOUT` in seconds (as
//! MPICH's hydra and Open MPI's mpirun read it); none by default.

use std::time::Duration;

/// The environment variable hydra's and Open MPI's mpiexec take a time limit from, in seconds.
pub const ENV: &str = "MPIEXEC_TIMEOUT";

/// A time limit and where it came from, as the expiry message names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeLimit {
    pub limit: Duration,
    /// `--time 0:30` or `MPIEXEC_TIMEOUT=30`.
    pub from: String,
}

impl std::str::FromStr for TimeLimit {
    type Err = String;

    /// A `--time` value, as srun reads it: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS,
    /// DAYS-HOURS, DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS; 0, UNLIMITED or INFINITE for
    /// none (a limit of zero).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "\"{s}\" is no time limit: give MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS or \
                 DAYS-HOURS[:MINUTES[:SECONDS]] (as srun --time), or 0 for none"
            )
        };
        let from = format!("--time {s}");
        if s.eq_ignore_ascii_case("unlimited") || s.eq_ignore_ascii_case("infinite") {
            return Ok(TimeLimit { limit: Duration::ZERO, from });
        }
        let num = |f: &str| -> Result<u64, String> {
            if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            f.parse::<u64>().map_err(|_| bad())
        };
        let (days, rest) = match s.split_once('-') {
            Some((d, rest)) => (Some(num(d)?), rest),
            None => (None, s),
        };
        let f: Vec<u64> = rest.split(':').map(num).collect::<Result<_, _>>()?;
        let (h, m, sec) = match (days, f.as_slice()) {
            (None, [m]) => (0, *m, 0),
            (None, [m, s]) => (0, *m, *s),
            (None, [h, m, s]) | (Some(_), [h, m, s]) => (*h, *m, *s),
            (Some(_), [h]) => (*h, 0, 0),
            (Some(_), [h, m]) => (*h, *m, 0),
            _ => return Err(bad()),
        };
        let secs = days
            .unwrap_or(0)
            .checked_mul(86_400)
            .and_then(|d| h.checked_mul(3600).and_then(|h| d.checked_add(h)))
            .and_then(|t| m.checked_mul(60).and_then(|m| t.checked_add(m)))
            .and_then(|t| t.checked_add(sec))
            .ok_or_else(bad)?;
        Ok(TimeLimit { limit: Duration::from_secs(secs), from })
    }
}

/// The job's time limit: `--time` if given (0 for none), else `MPIEXEC_TIMEOUT` (whole seconds,
/// 0 or empty for none); a bad `MPIEXEC_TIMEOUT` is an error that names it.
pub fn choose(option: Option<TimeLimit>, env: Option<&str>) -> Result<Option<TimeLimit>, String> {
    if let Some(given) = option {
        return Ok(Some(given).filter(|l| !l.limit.is_zero()));
    }
    let Some(v) = env.map(str::trim).filter(|v| !v.is_empty()) else { return Ok(None) };
    match v.parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(secs) => Ok(Some(TimeLimit { limit: Duration::from_secs(secs), from: format!("{ENV}={v}") })),
        Err(_) => Err(format!(
            "{ENV}=\"{v}\" is not a whole number of seconds; no job was started. Set it in seconds (e.g. \
             {ENV}=600 for 10 minutes), or unset it and give --time (e.g. --time 10:00)."
        )),
    }
}

/// A duration as srun shows a limit: [DAYS-]HOURS:MINUTES:SECONDS.
pub fn show(d: Duration) -> String {
    let s = d.as_secs();
    let (days, h, m, s) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if days > 0 {
        format!("{days}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h}:{m:02}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srun_formats_are_read() {
        let secs = |s: &str| s.parse::<TimeLimit>().map(|l| l.limit.as_secs());
        assert_eq!(secs("5"), Ok(300));
        assert_eq!(secs("0:30"), Ok(30));
        assert_eq!(secs("1:02:03"), Ok(3723));
        assert_eq!(secs("2-3"), Ok(2 * 86_400 + 3 * 3600));
        assert_eq!(secs("2-3:04"), Ok(2 * 86_400 + 3 * 3600 + 240));
        assert_eq!(secs("2-3:04:05"), Ok(2 * 86_400 + 3 * 3600 + 245));
        assert_eq!(secs("0"), Ok(0));
        assert_eq!(secs("UNLIMITED"), Ok(0));
        for bad in ["", "x", "1:2:3:4", "-1", "1m", "1.5", "1-", "1-2:3:4:5", ":30", "99999999999999999999"] {
            assert!(bad.parse::<TimeLimit>().is_err_and(|e| e.contains("srun --time")), "{bad:?}");
        }
    }

    #[test]
    fn the_option_wins_over_the_environment() {
        let limit = |opt: Option<&str>, env| {
            choose(opt.map(|o| o.parse().unwrap()), env).map(|l| l.map(|l| (l.limit.as_secs(), l.from)))
        };
        assert_eq!(limit(None, None), Ok(None));
        assert_eq!(limit(None, Some("30")), Ok(Some((30, "MPIEXEC_TIMEOUT=30".into()))));
        assert_eq!(limit(None, Some("0")), Ok(None));
        assert_eq!(limit(Some("1"), Some("30")), Ok(Some((60, "--time 1".into()))));
        assert_eq!(limit(Some("0"), Some("30")), Ok(None));
        assert!(limit(None, Some("10m")).is_err_and(|e| e.contains("MPIEXEC_TIMEOUT=\"10m\"")));
    }

    #[test]
    fn limits_are_shown_as_srun_shows_them() {
        assert_eq!(show(Duration::from_secs(1)), "0:00:01");
        assert_eq!(show(Duration::from_secs(3723)), "1:02:03");
        assert_eq!(show(Duration::from_secs(86_400 + 61)), "1-00:01:01");
    }
}
