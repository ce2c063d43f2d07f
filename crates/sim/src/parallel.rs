//! Independent runs (seeds, configurations, policies) in parallel on all cores, with a progress
//! bar on stderr that indicatif hides when stderr is not a terminal. Results keep input order, and
//! each run is deterministic, so the output does not depend on the number of threads.

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

pub fn run_all<T: Sync, R: Send>(items: &[T], label: &str, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let pb = ProgressBar::new(items.len() as u64);
    pb.set_style(
        ProgressStyle::with_template("{msg} [{elapsed_precise}] {bar:40} {pos}/{len} runs (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(label.to_string());
    let out: Vec<R> = items
        .par_iter()
        .map(|it| {
            let r = f(it);
            pb.inc(1);
            r
        })
        .collect();
    pb.finish_and_clear();
    out
}
