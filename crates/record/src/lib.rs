//! One record format for real jobs and for the simulator, so `aar report` reads both with the
//! same code.
//!
//! Each rank writes one file of JSON Lines: a [`Header`] on the first line, then one
//! [`Iteration`] per line, appended as iterations end. Lines are complete JSON objects, so a file
//! cut short (a job killed at its time limit) still yields every row before the cut, and a
//! reader needs memory for one line at a time. The format is versioned by the header's `format`
//! field ([`FORMAT`]); a reader refuses other formats with a message that names them.

use serde::{Deserialize, Serialize};
use std::io::BufRead;

/// The format (and version) of an iteration record.
pub const FORMAT: &str = "aar-iterations/1";

/// Where a record comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A process running with libaar.so preloaded.
    Job,
    /// A rank of `aar sim`.
    Sim,
}

/// What the iteration times are measured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// CLOCK_MONOTONIC of the rank's node, in ns.
    Monotonic,
    /// The simulator's clock, in ns.
    Simulated,
}

/// First line of a record: who wrote it and how its rows are to be read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT`].
    pub format: String,
    pub source: Source,
    /// Ranks with the same experiment belong to one run and are compared iteration by
    /// iteration: the job and step id for jobs, the scenario for the simulator.
    pub experiment: String,
    pub rank: u32,
    /// Ranks in the run, when known.
    #[serde(default)]
    pub nranks: Option<u32>,
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub pid: Option<u32>,
    pub clock: Clock,
    /// The policies alternated, in schedule order (one entry when there is no A/B experiment).
    pub policies: Vec<String>,
    /// How iterations map to policies: `round-robin`, `shuffled:SEED`, or `single`.
    pub order: String,
    /// What marks iterations: `markers` (the C API), `MPI_Barrier:N` and the like, or `sim`.
    pub boundary: String,
    /// Names of the per-routing-mode columns of every row's `messages` and `bytes`.
    pub modes: Vec<String>,
    /// Version of the program that wrote the record.
    pub version: String,
    #[serde(default)]
    pub git_revision: Option<String>,
    #[serde(default)]
    pub command_line: Vec<String>,
}

/// One iteration of one rank.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    /// Iteration index: the same on every rank of the experiment for the same iteration.
    pub i: u64,
    /// Policy in force during the iteration (one of the header's `policies`).
    pub policy: String,
    /// A label the application or the simulator gave the iteration, e.g. `isolated` or
    /// `congested` in GPCNeT-style runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Messages per routing mode, in the order of the header's `modes`.
    pub messages: Vec<u64>,
    /// Bytes per routing mode, in the order of the header's `modes`.
    pub bytes: Vec<u64>,
    /// Threshold crossings decided during the iteration.
    pub decisions: u64,
    /// Switches between the two sides of the decision during the iteration.
    pub switches: u64,
    /// Mean request–response latency (µs) of the counter windows read during the iteration.
    #[serde(default)]
    pub latency_us: Option<f64>,
    /// Mean stall ratio (stalled cycles per request flit) of those windows.
    #[serde(default)]
    pub stall_ratio: Option<f64>,
}

impl Iteration {
    /// Duration in ns (0 for a row whose end precedes its start).
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// Keep file names to characters that are safe in any folder and in a shell.
fn safe(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect()
}

/// Base name of a job's per-rank files: job, rank and pid, so that ranks and forked children
/// never collide.
pub fn base_name(job: Option<&str>, rank: Option<u32>, pid: u32) -> String {
    let job = safe(job.unwrap_or("nojob"));
    let rank = rank.map_or_else(|| "norank".to_string(), |r| r.to_string());
    format!("aar.{job}.{rank}.{pid}")
}

/// The per-rank summary record (`aar-record`, written at exit).
pub fn summary_file_name(job: Option<&str>, rank: Option<u32>, pid: u32) -> String {
    format!("{}.json", base_name(job, rank, pid))
}

/// The per-rank iteration record ([`FORMAT`], streamed while the job runs).
pub fn iterations_file_name(job: Option<&str>, rank: Option<u32>, pid: u32) -> String {
    format!("{}{ITERATIONS_SUFFIX}", base_name(job, rank, pid))
}

/// How iteration records are recognised in a folder.
pub const ITERATIONS_SUFFIX: &str = ".iterations.jsonl";

/// Why a line or a file could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line number; 0 for the file as a whole.
    pub line: u64,
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            f.write_str(&self.what)
        } else {
            write!(f, "line {}: {}", self.line, self.what)
        }
    }
}

/// Longest line a reader accepts: a row is a few hundred bytes; anything far longer is not a
/// record (and must not make the reader hold a whole foreign file in memory).
pub const MAX_LINE: usize = 1 << 20;

/// Reads one record line by line, holding one line in memory.
pub struct Reader<R> {
    input: R,
    line_no: u64,
    buf: Vec<u8>,
    header: Header,
}

/// Read one line of at most [`MAX_LINE`] bytes into `buf`; `Ok(false)` at the end of input.
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> Result<bool, String> {
    buf.clear();
    loop {
        let available = input.fill_buf().map_err(|e| format!("cannot be read ({e})"))?;
        if available.is_empty() {
            return Ok(!buf.is_empty());
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(n) => (n + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + take > MAX_LINE + 1 {
            return Err(format!("has a line longer than {MAX_LINE} bytes: not an aar record"));
        }
        buf.extend_from_slice(&available[..take]);
        input.consume(take);
        if done {
            return Ok(true);
        }
    }
}

impl<R: BufRead> Reader<R> {
    /// Read and check the header.
    pub fn new(mut input: R) -> Result<Self, Problem> {
        let mut buf = Vec::new();
        let whole = |what: String| Problem { line: 0, what };
        if !read_line(&mut input, &mut buf).map_err(whole)? {
            return Err(whole("is empty".into()));
        }
        let value: serde_json::Value = serde_json::from_slice(&buf)
            .map_err(|_| whole(format!("does not start with a JSON header line: not an {FORMAT} record")))?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => {
                return Err(whole(format!(
                    "is in format \"{}\", which this aar reads not ({FORMAT} only)",
                    other.escape_debug()
                )))
            }
            None => return Err(whole(format!("has no \"format\" in its first line: not an {FORMAT} record"))),
        }
        let header: Header = serde_json::from_value(value).map_err(|e| whole(format!("has a bad header ({e})")))?;
        Ok(Self { input, line_no: 1, buf, header })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next row: `None` at the end, `Some(Err)` for a line that is not a row (the caller
    /// may skip it and go on; a cut last line is reported as truncated).
    pub fn next_row(&mut self) -> Option<Result<Iteration, Problem>> {
        loop {
            self.line_no += 1;
            match read_line(&mut self.input, &mut self.buf) {
                Ok(false) => return None,
                Ok(true) => {}
                Err(what) => return Some(Err(Problem { line: self.line_no, what })),
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let complete = self.buf.last() == Some(&b'\n');
            let columns = self.header.modes.len();
            return Some(match serde_json::from_slice::<Iteration>(&self.buf) {
                Ok(row) if row.messages.len() != columns || row.bytes.len() != columns => Err(Problem {
                    line: self.line_no,
                    what: format!("has {} mode columns where the header names {columns}", row.messages.len()),
                }),
                Ok(row) if row.end_ns < row.start_ns => {
                    Err(Problem { line: self.line_no, what: "ends before it starts".into() })
                }
                Ok(row) => Ok(row),
                Err(_) if !complete => {
                    Err(Problem { line: self.line_no, what: "is cut short (the writer was stopped)".into() })
                }
                Err(e) => Err(Problem { line: self.line_no, what: format!("is not an iteration row ({e})") }),
            });
        }
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Iteration, Problem>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_row()
    }
}

/// Append `value` as one JSON line to `out`.
pub fn write_line<T: Serialize>(out: &mut Vec<u8>, value: &T) -> Result<(), serde_json::Error> {
    serde_json::to_writer(&mut *out, value)?;
    out.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            format: FORMAT.into(),
            source: Source::Job,
            experiment: "42.0".into(),
            rank: 3,
            nranks: Some(4),
            host: Some("nid00012".into()),
            pid: Some(99),
            clock: Clock::Monotonic,
            policies: vec!["ADAPTIVE0".into(), "ADAPTIVE3".into()],
            order: "round-robin".into(),
            boundary: "markers".into(),
            modes: vec!["ADAPTIVE0".into(), "ADAPTIVE3".into()],
            version: "0.1.0".into(),
            git_revision: None,
            command_line: vec!["./app".into()],
        }
    }

    fn row(i: u64) -> Iteration {
        Iteration {
            i,
            policy: if i.is_multiple_of(2) { "ADAPTIVE0" } else { "ADAPTIVE3" }.into(),
            start_ns: 1000 * i,
            end_ns: 1000 * i + 500,
            messages: vec![1, 2],
            bytes: vec![64, 128],
            ..Default::default()
        }
    }

    #[test]
    fn round_trip_and_cut_last_line() {
        let mut out = Vec::new();
        write_line(&mut out, &header()).unwrap();
        for i in 0..3 {
            write_line(&mut out, &row(i)).unwrap();
        }
        let full = out.len();
        write_line(&mut out, &row(3)).unwrap();
        out.truncate(full + 10);
        let mut r = Reader::new(&out[..]).unwrap();
        assert_eq!(r.header(), &header());
        let rows: Vec<_> = r.by_ref().collect();
        assert_eq!(rows.len(), 4);
        assert_eq!(
            rows[..3].iter().map(|r| r.clone().unwrap()).collect::<Vec<_>>(),
            (0..3).map(row).collect::<Vec<_>>()
        );
        assert!(rows[3].as_ref().unwrap_err().what.contains("cut short"));
    }

    #[test]
    fn foreign_and_hostile_input() {
        assert!(Reader::new(&b""[..]).err().unwrap().what.contains("empty"));
        assert!(Reader::new(&b"\x00\x01binary"[..]).err().unwrap().what.contains("JSON header"));
        assert!(Reader::new(&br#"{"format":"aar-iterations/9"}"#[..]).err().unwrap().what.contains("aar-iterations/9"));
        let long = vec![b'x'; MAX_LINE + 10];
        assert!(Reader::new(&long[..]).err().unwrap().what.contains("longer"));
        let mut out = Vec::new();
        write_line(&mut out, &header()).unwrap();
        out.extend_from_slice(b"{\"i\":1}\n");
        out.extend_from_slice(br#"{"i":2,"policy":"x","start_ns":5,"end_ns":1,"messages":[0,0],"bytes":[0,0],"decisions":0,"switches":0}"#);
        out.push(b'\n');
        out.extend_from_slice(
            br#"{"i":3,"policy":"x","start_ns":0,"end_ns":1,"messages":[0],"bytes":[0],"decisions":0,"switches":0}"#,
        );
        out.push(b'\n');
        let problems: Vec<_> = Reader::new(&out[..]).unwrap().map(|r| r.unwrap_err()).collect();
        assert_eq!(problems.len(), 3);
        assert!(problems[0].what.contains("not an iteration row"));
        assert!(problems[1].what.contains("ends before"));
        assert!(problems[2].what.contains("mode columns"));
    }

    #[test]
    fn names() {
        assert_eq!(summary_file_name(Some("123.sdb"), Some(7), 42), "aar.123.sdb.7.42.json");
        assert_eq!(iterations_file_name(None, None, 1), "aar.nojob.norank.1.iterations.jsonl");
        assert_eq!(base_name(Some("../../etc/x"), Some(0), 1), "aar..._.._etc_x.0.1");
    }
}
