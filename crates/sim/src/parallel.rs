//! Independent runs (seeds, configurations, policies) in parallel on all cores, with a progress
//! bar on stderr that indicatif hides when stderr is not a terminal. Results keep input order, and
//! each run is deterministic, so the output does not depend on the number of threads.

use indicatif::{ProgressBar, ProgressStyle};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `f` on every item, each core taking the next item in input order as soon as it is free
/// (list scheduling): a caller that puts its longest runs first does not leave one core running
/// the longest run alone at the end, as a split of the list into halves could.
pub fn run_all<T: Sync, R: Send>(items: &[T], label: &str, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let pb = ProgressBar::new(items.len() as u64);
    pb.set_style(
        ProgressStyle::with_template("{msg} [{elapsed_precise}] {bar:40} {pos}/{len} runs (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(label.to_string());
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    rayon::broadcast(|_| loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(i) else { break };
        let r = f(item);
        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        pb.inc(1);
    });
    pb.finish_and_clear();
    results
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).expect("every item was run"))
        .collect()
}
