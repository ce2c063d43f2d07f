//! What `aar sim` writes: per-rank records, reports and benchmark results, each to a temporary
//! file in its folder that is renamed when complete, and the tables it prints.

use aar_sim::experiment::{ExperimentResult, ExperimentSpec};
use aar_sim::record::RunConfig;
use aar_sim::validate::fmt_ns;
use aar_stats::summarize;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes `path` whole or not at all: the text goes to `NAME.XXXXXX.partial` beside it, which is
/// renamed to `path` once written (readable by others as `std::fs::write` would make it).
pub fn write_atomic(path: &Path, text: impl AsRef<[u8]>) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut prefix = path.file_name().unwrap_or_default().to_owned();
    prefix.push(".");
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".partial")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
    tmp.write_all(text.as_ref()).map_err(|e| format!("cannot write {}: {e}", tmp.path().display()))?;
    tmp.persist(path).map_err(|e| format!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

/// Checks, before any simulation, that the folder `dir` of `option` can take the records: it is
/// created if missing and a file can be made in it; a path that is something else is refused.
pub fn prepare_dir(option: &str, dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "{option} {shown}: not a folder: {option} names the folder the per-rank records go to (created if \
             missing); give a folder"
        ));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("{option} {shown}: cannot create the folder ({e}); give a folder you can write"))?;
    probe(option, dir)
}

/// Checks, before any work, that the file `path` of `option` can be written: not a folder, in a
/// folder that is created if missing and in which a file can be made. `example` is a file name
/// the message suggests for a folder. Refusing what is not a regular file matters: the file is
/// written beside it and renamed over it, which would replace `/dev/null` itself.
pub fn prepare_file(option: &str, path: &Path, example: &str) -> Result<(), String> {
    let shown = path.display();
    if path.is_dir() || path.file_name().is_none() {
        return Err(format!(
            "{option} {shown}: a folder, not a file: give a file name (e.g. {})",
            path.join(example).display()
        ));
    }
    if path.exists() && !path.is_file() {
        return Err(format!(
            "{option} {shown}: not a regular file, which a file renamed over it would replace: give a file name"
        ));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| {
        format!("{option} {shown}: cannot create the folder {} ({e}); give a path you can write", dir.display())
    })?;
    probe(option, dir)
}

/// Checks, before any work, that no two of the files a command writes (`(option, path)`, each
/// already passed by [`prepare_file`], whose folder therefore exists) are one file: the second
/// would be renamed over the first. Paths are compared as the rename sees them: the folder
/// resolved (`.`, `..` and links), then the file's name.
pub fn distinct_files(outputs: &[(&str, &Path)]) -> Result<(), String> {
    let resolved = |path: &Path| {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        (std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()), path.file_name().map(|n| n.to_owned()))
    };
    for (i, (first, a)) in outputs.iter().enumerate() {
        for (second, b) in &outputs[i + 1..] {
            if resolved(a) == resolved(b) {
                return Err(format!(
                    "{first} {} and {second} {}: the same file, which would hold only what is written last; give each \
                     its own file",
                    a.display(),
                    b.display()
                ));
            }
        }
    }
    Ok(())
}

/// Whether a file can be made in `dir` (the one made is removed at once).
fn probe(option: &str, dir: &Path) -> Result<(), String> {
    tempfile::Builder::new().prefix(".aar-probe.").tempfile_in(dir).map(drop).map_err(|e| {
        format!("{option} {}: cannot write in this folder ({e}); give a folder you can write", dir.display())
    })
}

/// Per rank of the run of `spec` that gave `r`: the iteration record (aar-iterations/1) and the
/// simulator's summary, each with the run's effective configuration.
pub fn write_records(dir: &Path, spec: &ExperimentSpec, r: &ExperimentResult) -> Result<(), String> {
    // As libaar.so writes it: an argument that is not UTF-8 (an --out folder's name) is written
    // lossily, where `std::env::args` would panic after the whole simulation had run.
    let command_line: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let config = RunConfig::of(spec, r);
    static SAID: AtomicBool = AtomicBool::new(false);
    if let Some(rec) = r.records.iter().find(|rec| dir.join(rec.iterations_file_name()).exists()) {
        // The experiment id names the scenario, not the policies or the iterations: an earlier
        // run of it with others would be lost without a word. Said once per command (a sweep).
        if !SAID.swap(true, Ordering::Relaxed) {
            eprintln!(
                "aar: {}: replacing records that an earlier run wrote there (first: experiment {}); give each run \
                 its own --out folder to keep both",
                dir.display(),
                rec.experiment
            );
        }
    }
    for rec in &r.records {
        write_atomic(&dir.join(rec.iterations_file_name()), rec.iterations_jsonl(&command_line, &config))?;
        write_atomic(&dir.join(rec.summary_file_name()), rec.summary_json(&config))?;
    }
    Ok(())
}

/// The cells of a row of iteration times: samples, median, 95% CI of the median (`range [a, b]`,
/// smallest to largest, where too few for one: it covers the median less often), QCD; `-` for a
/// policy without any (a run stopped before it was measured).
pub fn summary_cells(times: &[f64]) -> String {
    if times.is_empty() {
        return "0 | - | - | -".into();
    }
    let s = summarize(times);
    let ci = format!("[{}, {}]", fmt_ns(s.ci_lo), fmt_ns(s.ci_hi));
    let ci = if s.ci_is_range { format!("range {ci}") } else { ci };
    format!("{} | {} | {ci} | {:.4}", s.n, fmt_ns(s.median), s.qcd)
}
