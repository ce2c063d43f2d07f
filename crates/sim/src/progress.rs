//! How long a command of the simulator has been going, told on stderr: a bar redrawn in place on a
//! terminal; elsewhere (a batch job's log) one line a minute, nothing for a command shorter than
//! that. One run (`aar sim run`) and runs in parallel ([`crate::parallel::run_all`]) are told
//! alike.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Tells how far a command has come (`update`), and the time left at the pace so far.
pub struct Watcher {
    what: String,
    start: Instant,
    last_line: Instant,
    bar: Option<ProgressBar>,
}

impl Watcher {
    /// Lines elsewhere than on a terminal, one per this many seconds.
    const LINE_S: u64 = 60;
    /// Steps of the bar (it is drawn from the fraction done).
    const BAR_STEPS: u64 = 1000;

    /// `what` names the command in its lines (`sim run`).
    pub fn new(what: &str) -> Self {
        let now = Instant::now();
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(Some(Self::BAR_STEPS), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("aar: {prefix} [{elapsed_precise}] {bar:30} {msg}") {
                b.set_style(style.progress_chars("=> "));
            }
            b.set_prefix(what.to_string());
            b
        });
        Watcher { what: what.into(), start: now, last_line: now, bar }
    }

    /// Shows `status` (what is done of what, as the command counts it) and `done`, the fraction
    /// of the whole done: the bar on a terminal, else a line when a minute has passed since the
    /// last.
    pub fn update(&mut self, done: f64, status: &str) {
        let now = Instant::now();
        match &self.bar {
            Some(b) => {
                b.set_position((done.clamp(0.0, 1.0) * Self::BAR_STEPS as f64) as u64);
                b.set_message(self.status(done, status, now));
            }
            None => {
                if let Some(line) = self.line(done, status, now) {
                    eprintln!("{line}");
                }
            }
        }
    }

    /// The line to print at `now`, if a minute has passed since the last (or since the start).
    fn line(&mut self, done: f64, status: &str, now: Instant) -> Option<String> {
        if now.duration_since(self.last_line).as_secs() < Self::LINE_S {
            return None;
        }
        self.last_line = now;
        let after = Duration::from_secs(now.duration_since(self.start).as_secs());
        Some(format!("aar: {} after {}: {}", self.what, duration(after), self.status(done, status, now)))
    }

    /// `status` and, once some of the whole is done, the time left at the pace so far.
    fn status(&self, done: f64, status: &str, now: Instant) -> String {
        if done > 0.0 && done < 1.0 {
            let left = now.duration_since(self.start).as_secs_f64() * (1.0 - done) / done;
            format!("{status}, about {} left", duration(Duration::from_secs_f64(left)))
        } else {
            status.into()
        }
    }

    /// Clears the bar (a terminal keeps what the command prints after it).
    pub fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

/// A duration as a person reads it: `45 s`, `12 min`, `3.5 h`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 100.0 {
        format!("{s:.0} s")
    } else if s < 6000.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_a_minute_away_from_a_terminal_with_the_time_left() {
        let start = Instant::now();
        let mut w = Watcher { what: "sim run".into(), start, last_line: start, bar: None };
        let status = "2/10 iterations, 1234 packets, 45.60 us simulated";
        let at = |s| start + Duration::from_secs(s);
        assert_eq!(w.line(0.2, status, at(59)), None, "nothing in the first minute");
        assert_eq!(
            w.line(0.2, status, at(61)).as_deref(),
            Some("aar: sim run after 61 s: 2/10 iterations, 1234 packets, 45.60 us simulated, about 4 min left")
        );
        assert_eq!(w.line(0.2, status, at(62)), None, "then one a minute");
        assert!(w.line(0.2, status, at(121)).is_some());
        assert_eq!(w.status(0.0, "0/3 runs", at(121)), "0/3 runs", "no pace before anything is done");
        assert_eq!(w.status(1.0, "3/3 runs", at(121)), "3/3 runs", "nothing left");
    }
}
