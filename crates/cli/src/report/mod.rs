//! `aar report DIR...`: which routing policy is faster, and which is less noisy, from the
//! per-rank iteration records (aar-record, `aar-iterations/1`) of an A/B run: a job with
//! libaar.so (`AAR_AB=...`) or `aar sim run --out DIR`.
//!
//! - [`read`]: finds the files and streams their rows into per-iteration maxima and per-rank
//!   summaries (parallel, bounded memory, one warning per bad file);
//! - [`analysis`]: per-policy figures of the job's iteration times (the slowest rank's);
//! - `aar_stats`: the estimators and the test, and why (shared with the simulator's summaries);
//! - [`output`]: table, JSON and CSV; [`plot`]: SVG/PNG figure; [`html`]: one self-contained page;
//! - [`health`]: what the ranks' summary records say of how the policies ran; [`jobs`]: those
//!   records summed per job, for a run without iterations.
//!
//! Exit statuses (in `aar report --help`): [`EXIT_OK`], [`EXIT_FAILED`], [`EXIT_USAGE`].

mod analysis;
mod health;
mod html;
mod jobs;
mod output;
pub(crate) mod plot;
mod read;

use aar_engine::Seed;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
#[command(
    after_help = "Without iteration records, the summary records (aar.<job>[.<step>][.restart<N>].<rank>.<pid>.json) are summed per \
job (without a job id, per program): bytes per routing mode, decisions, counter reads; --json gives them as \"jobs\".\n\n\
Exit status: 0 report written; 1 nothing to report, or the report or --plot/--html could not be written (or \
asked, with --csv, of records without iterations); 2 bad arguments (an input that does not exist included): nothing \
read."
)]
pub struct ReportArgs {
    /// Folders (searched recursively for *.iterations.jsonl, else for summary records) or record files
    #[arg(required = true, value_name = "DIR|FILE")]
    inputs: Vec<PathBuf>,
    /// Print one JSON document instead of the table
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV instead of the table: one row per policy
    #[arg(long)]
    csv: bool,
    /// Draw box plots, CDFs and the iteration series into FILE.svg or FILE.png
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    plot: Option<PathBuf>,
    /// Write one self-contained HTML page with the tables and the plots
    #[arg(long, value_name = "FILE.html")]
    html: Option<PathBuf>,
    /// Leave out the first N iterations of each experiment (warm-up)
    #[arg(long, value_name = "N", default_value_t = 0, allow_negative_numbers = true)]
    skip: u64,
    /// Keep iterations that some ranks lack (their time is the slowest of the ranks that have them)
    #[arg(long)]
    keep_incomplete: bool,
    /// Bootstrap resamples for the confidence intervals of the ratio of medians and the QCD difference
    /// (100 to 10000000; the bootstrap's time grows with iterations × resamples)
    #[arg(long, value_name = "N", default_value_t = 10_000, allow_negative_numbers = true)]
    resamples: usize,
    /// Seed of the bootstrap, a whole number from 0 to 18446744073709551615 (the report is the
    /// same for the same seed)
    #[arg(long, value_name = "N", default_value = "1", allow_negative_numbers = true)]
    seed: Seed,
    /// Also report the experiments read as one: the same A/B experiment run in several jobs,
    /// their iterations one job after the other (those with the policies most of them have)
    #[arg(long)]
    pool: bool,
}

/// The report was written.
pub const EXIT_OK: i32 = 0;
/// No record had a usable iteration, or the report, `--plot` or `--html` could not be written.
pub const EXIT_FAILED: i32 = 1;
/// A bad argument (an option's value, an input that does not exist): nothing was read.
pub const EXIT_USAGE: i32 = 2;

/// A bad argument; the text completes `aar: ...` and the exit status is [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
enum ArgError {
    #[error("{flag} {}: the file name must end in {}: nothing read", .path.display(), dotted(.extensions))]
    Extension { flag: &'static str, path: PathBuf, extensions: &'static [&'static str] },
    #[error(
        "{flag} {}: folder {} does not exist: nothing read; create it first (mkdir -p {}) or name a file in a \
         folder that exists",
        .path.display(), folder(.path).display(), folder(.path).display()
    )]
    NoFolder { flag: &'static str, path: PathBuf },
    #[error(
        "{flag} {}: {} is a file, or goes through one, not a folder: nothing read; name a file in a folder",
        .path.display(), folder(.path).display()
    )]
    FileAsFolder { flag: &'static str, path: PathBuf },
    #[error(
        "{flag} {}: is a folder: nothing read; name a file in it, e.g. {}",
        .path.display(), .path.join(format!("report.{}", .extensions[0])).display()
    )]
    IsFolder { flag: &'static str, path: PathBuf, extensions: &'static [&'static str] },
    #[error("--resamples {0}: at least {MIN_RESAMPLES} and at most {MAX_RESAMPLES}")]
    Resamples(usize),
    #[error("{}: no such file or folder: nothing read; give the folder AAR_OUTPUT_DIR named, or record files", .0.display())]
    NoInput(PathBuf),
    #[error(
        "{}: a symbolic link to {}, which does not exist: nothing read; point the link at the record where it is \
         now (ln -sfn FILE {}), or give the record itself",
        .0.display(), .1.display(), .0.display()
    )]
    LinkToNothing(PathBuf, PathBuf),
    #[error(
        "{}: goes through a file as if it were a folder (a trailing / after a file's name, or a file where a \
         folder was meant): nothing read; give the file's name alone, or the folder AAR_OUTPUT_DIR named",
        .0.display()
    )]
    NotAFolder(PathBuf),
}

/// Fewer resamples than this give intervals that move from one seed to the next.
const MIN_RESAMPLES: usize = 100;
/// Each resample takes every policy's median again: a million takes about a second over a few
/// hundred iterations, and the time grows with both (the default, 10000, is the usual choice).
const MAX_RESAMPLES: usize = 10_000_000;

/// Why `--plot` or `--html` was not written; the text completes `aar: --plot FILE: ...`.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot be drawn ({0})")]
    Draw(Box<dyn std::error::Error + Send + Sync>),
    #[error(
        "{experiments} experiments would make a PNG figure of {width} × {height} pixels ({} MiB to draw; a PNG \
         figure draws at most {}): not written, the rest of the report written; draw them as SVG (--plot \
         FILE.svg, or the page of --html), or report fewer experiments at once (one job's folder)",
        (u64::from(*.width) * u64::from(*.height) * 3) >> 20,
        plot::MAX_PNG_EXPERIMENTS
    )]
    TooTall { experiments: usize, width: u32, height: u32 },
    #[error("cannot be encoded as PNG ({0})")]
    Png(#[from] png::EncodingError),
    #[error(
        "cannot be written ({0}): not written, a file of that name left as it was, the rest of the report \
         written; name a file in a folder you can write to, with room"
    )]
    Write(#[from] std::io::Error),
}

/// ".svg or .png"
fn dotted(extensions: &[&str]) -> String {
    extensions.iter().map(|e| format!(".{e}")).collect::<Vec<_>>().join(" or ")
}

/// The folder a file named `path` is in.
fn folder(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Whether opening failed on a loop of symbolic links (ELOOP), which the OS's message ("Too many
/// levels of symbolic links") does not make plain.
fn is_loop(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// "PATH -> a -> PATH": the symbolic links followed from `path`, each as it is written, until one
/// comes round again (a few at most; "..." after them when none has yet).
fn links_followed(path: &Path) -> String {
    let mut chain = vec![path.display().to_string()];
    // Each link's place as folder/name, so that a link back to `path` is seen as `path`.
    let mut at = folder(path).join(path.file_name().unwrap_or_default());
    let mut seen = vec![at.clone()];
    while let Ok(to) = std::fs::read_link(&at) {
        chain.push(to.display().to_string());
        at = folder(&at).join(to);
        if seen.contains(&at) || chain.len() > 6 {
            if !seen.contains(&at) {
                chain.push("...".into());
            }
            break;
        }
        seen.push(at.clone());
    }
    chain.join(" -> ")
}

/// Where `--plot` or `--html` is to be written must be a file name with one of `extensions`
/// in a folder that exists.
fn check_output(flag: &'static str, path: &Path, extensions: &'static [&'static str]) -> Result<(), ArgError> {
    let path_buf = || path.to_path_buf();
    let ext = path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase());
    if !ext.as_deref().is_some_and(|e| extensions.contains(&e)) {
        return Err(ArgError::Extension { flag, path: path_buf(), extensions });
    }
    // A folder that cannot be looked at for another reason (no permission) is for the writing to say.
    match std::fs::metadata(folder(path)).map_err(|e| e.kind()) {
        Err(std::io::ErrorKind::NotFound) => return Err(ArgError::NoFolder { flag, path: path_buf() }),
        Ok(m) if !m.is_dir() => return Err(ArgError::FileAsFolder { flag, path: path_buf() }),
        Err(std::io::ErrorKind::NotADirectory) => return Err(ArgError::FileAsFolder { flag, path: path_buf() }),
        _ => {}
    }
    if path.is_dir() {
        return Err(ArgError::IsFolder { flag, path: path_buf(), extensions });
    }
    Ok(())
}

fn check(args: &ReportArgs) -> Result<(), ArgError> {
    if let Some(p) = &args.plot {
        check_output("--plot", p, &["svg", "png"])?;
    }
    if let Some(p) = &args.html {
        check_output("--html", p, &["html", "htm"])?;
    }
    if !(MIN_RESAMPLES..=MAX_RESAMPLES).contains(&args.resamples) {
        return Err(ArgError::Resamples(args.resamples));
    }
    // A name that is not there is a typo, not a record to skip (one that is there but cannot be
    // read is said and skipped while reading). A link to nothing is not there either (said as one).
    // A file's name with a trailing / (tab completion of a folder, then a file) names nothing either.
    for p in &args.inputs {
        match std::fs::metadata(p).map_err(|e| e.kind()) {
            Err(std::io::ErrorKind::NotFound) => {
                return Err(match std::fs::read_link(p) {
                    Ok(target) => ArgError::LinkToNothing(p.clone(), target),
                    Err(_) => ArgError::NoInput(p.clone()),
                })
            }
            Err(std::io::ErrorKind::NotADirectory) => return Err(ArgError::NotAFolder(p.clone())),
            _ => {}
        }
    }
    Ok(())
}

/// Write `bytes` to `path` whole or not at all: into a new file beside it, renamed over it when
/// complete, so that a reader (a browser reloading the page) never sees half of it and a failed
/// write leaves the previous one.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    // Read and write for everyone the umask lets, as a file std::fs::write creates.
    let mut file = tempfile::Builder::new()
        .prefix(".aar-report")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(folder(path))
        // Its error names the temporary file, which the user never named: name the folder.
        .map_err(|e| {
            std::io::Error::new(e.kind(), format!("no file can be made in {}: {}", folder(path).display(), e.kind()))
        })?;
    file.write_all(bytes)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Without iteration records: the summary records summed per job (`None`: there are none
/// either). Tables and JSON only: without iterations there is nothing to plot or to compare.
fn report_jobs(args: &ReportArgs, mut warnings: Vec<String>) -> Option<i32> {
    let (jobs, found) = jobs::read(&args.inputs);
    for w in found {
        read::warn(&mut warnings, w);
    }
    if jobs.is_empty() {
        return None;
    }
    // CSV is one row per policy of an experiment: there is none to write.
    if !args.csv {
        let text = if args.json { jobs::json(&jobs, &warnings) } else { jobs::table(&jobs) };
        if !print(&text) {
            return Some(EXIT_FAILED);
        }
    }
    let flags = [("--csv", args.csv), ("--plot", args.plot.is_some()), ("--html", args.html.is_some())];
    let asked: Vec<&str> = flags.iter().filter(|(_, on)| *on).map(|(f, _)| *f).collect();
    if asked.is_empty() {
        return Some(EXIT_OK);
    }
    eprintln!("aar: {}: nothing written: {}", asked.join(", "), jobs::NO_ITERATIONS);
    Some(EXIT_FAILED)
}

pub fn run(args: ReportArgs) -> i32 {
    if let Err(e) = check(&args) {
        eprintln!("aar: {e}");
        return EXIT_USAGE;
    }
    let settings = analysis::Settings {
        skip: args.skip,
        keep_incomplete: args.keep_incomplete,
        resamples: args.resamples,
        seed: args.seed.0,
    };
    let data = read::read_all(&args.inputs, args.skip);
    if let Some(note) = analysis::slow_bootstrap(&data.experiments, &settings, args.pool) {
        eprintln!("aar: {note}");
    }
    let mut warnings = data.warnings;
    let mut experiments: Vec<_> =
        data.experiments.iter().filter_map(|e| analysis::analyse(e, &settings, &mut warnings)).collect();
    if args.pool {
        match analysis::pool(&data.experiments, &settings, &mut warnings) {
            Some(pooled) => experiments.push(pooled),
            None => read::warn(
                &mut warnings,
                "--pool: fewer than two experiments with the same policies have usable iterations: nothing pooled"
                    .into(),
            ),
        }
    }
    let inputs: Vec<String> = args.inputs.iter().map(|p| p.display().to_string()).collect();
    if experiments.is_empty() {
        if !data.experiments.is_empty() {
            // Iteration records were read, and none had a usable iteration (said above): the
            // summary records cannot stand in for the comparison asked for.
            eprintln!(
                "aar: nothing to report: the iteration records in {} have no usable iterations (see above)",
                inputs.join(" ")
            );
            return EXIT_FAILED;
        }
        if let Some(code) = report_jobs(&args, warnings) {
            return code;
        }
        eprintln!(
            "aar: nothing to report: no usable iteration or summary records in {}; give the folder AAR_OUTPUT_DIR \
             named in the job (where libaar.so wrote its aar.<job>...<rank>.<pid>.iterations.jsonl and .json records) \
             or aar sim run --out named, or such files",
            inputs.join(" ")
        );
        return EXIT_FAILED;
    }
    // Summary records that say why ranks have no rows are used (their warnings name those ranks):
    // only the others are left out.
    for s in &data.summaries_only {
        let input = s.input.display();
        let left = s.records - s.explaining;
        let used = match (s.explaining, left) {
            (_, 0) => continue,
            (0, _) => String::new(),
            (n, left) => format!(
                "{n} of its {} say why their ranks have no rows (above); the other {} ",
                aar_record::count(s.records as u64, "summary record", "summary records"),
                if left == 1 { "is".to_string() } else { format!("{left} are") },
            ),
        };
        read::warn(
            &mut warnings,
            format!(
                "{input}: summary records only, no iteration record: {used}left out of this report of the others' \
                 iterations (aar report {input} alone sums them per job)"
            ),
        );
    }
    let drawing = args.plot.is_some() || args.html.is_some();
    let text = !drawing
        || match plot::font() {
            Ok(()) => true,
            Err(w) => {
                read::warn(&mut warnings, w);
                false
            }
        };
    let report =
        analysis::Report { format: "aar-report/1", settings: analysis::settings_out(&settings), experiments, warnings };
    let mut code = EXIT_OK;
    let mut write = |flag: &str, path: &Path, bytes: Result<Vec<u8>, OutputError>| {
        if let Err(e) = bytes.and_then(|bytes| write_atomically(path, &bytes)) {
            eprintln!("aar: {flag} {}: {e}", path.display());
            code = EXIT_FAILED;
        }
    };
    if let Some(path) = &args.plot {
        write("--plot", path, plot::render(path, &report.experiments, text));
    }
    if let Some(path) = &args.html {
        write("--html", path, html::page(&report, &inputs, text).map(String::into_bytes));
    }
    let text_out = if args.json {
        output::json(&report)
    } else if args.csv {
        output::csv(&report)
    } else {
        output::table(&report)
    };
    if !print(&text_out) {
        code = EXIT_FAILED;
    }
    code
}

/// Print the report on stdout; `false`, said, when it could not be written.
fn print(text: &str) -> bool {
    crate::print(text).map_err(|e| eprintln!("aar: {e}")).is_ok()
}
