//! Independent runs (seeds, configurations, policies) in parallel on all cores, told on stderr as
//! one run is ([`Watcher`]: a bar on a terminal, else a line a minute). Results keep input order,
//! and each run is deterministic, so the output does not depend on the number of threads.

use crate::progress::Watcher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// Runs `f` on every item, each core taking the next item in input order as soon as it is free
/// (list scheduling): a caller that puts its longest runs first does not leave one core running
/// the longest run alone at the end, as a split of the list into halves could. `f` may tell the
/// fraction of its item done through its second argument (a run that does not counts as done
/// when it ends); the time left is estimated from the runs' fractions. `label` names the command
/// in what stderr is told (`sim sweep`).
pub fn run_all<T: Sync, R: Send>(items: &[T], label: &str, f: impl Fn(&T, &dyn Fn(f64)) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let ended = AtomicUsize::new(0);
    // the fraction of each item done, as f64 bits
    let parts: Vec<AtomicU64> = items.iter().map(|_| AtomicU64::new(0)).collect();
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        // The watcher is told from a thread of its own, once a second: a run can take longer than
        // the minute between two lines. It stops when `stop` is dropped, a panic of `f` included.
        let (stop, stopped) = mpsc::channel::<()>();
        let (parts, ended) = (&parts, &ended);
        scope.spawn(move || {
            let mut watcher = Watcher::new(label);
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(Duration::from_secs(1)) {
                let (done, status) = told(parts, ended.load(Ordering::Relaxed));
                watcher.update(done, &status);
            }
            watcher.finish();
        });
        rayon::broadcast(|_| loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let part = |x: f64| parts[i].store(x.clamp(0.0, 1.0).to_bits(), Ordering::Relaxed);
            let r = f(item, &part);
            *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            parts[i].store(1f64.to_bits(), Ordering::Relaxed);
            ended.fetch_add(1, Ordering::Relaxed);
        });
        drop(stop);
    });
    results
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).expect("every item was run"))
        .collect()
}

/// The fraction of the runs done (each run's own fraction, `parts` as f64 bits) and how many of
/// them have ended, as [`Watcher::update`] takes them.
fn told(parts: &[AtomicU64], ended: usize) -> (f64, String) {
    let done: f64 = parts.iter().map(|p| f64::from_bits(p.load(Ordering::Relaxed))).sum();
    (done / parts.len().max(1) as f64, format!("{ended}/{} runs", parts.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runs_done_count_the_fractions_of_the_runs_going_on() {
        let parts: Vec<AtomicU64> = [1.0, 0.5, 0.0, 0.5].iter().map(|x: &f64| AtomicU64::new(x.to_bits())).collect();
        assert_eq!(told(&parts, 1), (0.5, "1/4 runs".into()));
        assert_eq!(told(&[], 0), (0.0, "0/0 runs".into()));
    }

    #[test]
    fn a_run_that_panics_ends_the_runs_with_its_panic() {
        // the watcher's thread must stop too, or this would never return
        let r =
            std::panic::catch_unwind(|| run_all(&[1, 2, 3], "test", |&x, _| if x == 2 { panic!("two") } else { x }));
        assert!(r.is_err());
    }
}
