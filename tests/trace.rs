//! The decision trace (`AAR_TRACE`) against what it may meet in a job: a pattern of any length or
//! characters, a write that fails on a rank other than 0, a fork child under a pattern whose `%p`
//! is a literal one. Real processes under the real libaar.so and the emulator.

mod common;
use common::*;

/// A pattern of 100,000 characters (the environment allows 128 KiB) or with a line break in it
/// is said on one line of bounded length: the value and the path quoted, escaped and cut, as
/// every warning about a variable quotes it. Said whole, the 100 KB pattern made a message of
/// 200 KB (pattern and path), and a line break in the path split the message in two.
#[test]
fn a_trace_pattern_of_any_length_or_characters_is_said_on_one_short_line() {
    for (test, name, cause) in [
        ("trace-huge-pattern", "y".repeat(100_000), "File name too long"),
        ("trace-newline-pattern", "a\nb/t.jsonl".to_string(), "No such file or directory"),
    ] {
        let launch = Launch::driver(test, "fma 64 3 0");
        let pattern = launch.dir.join(&name).display().to_string();
        let r = launch.env("AAR_TRACE", &pattern).env("AAR_SUMMARY", "0").run();
        r.assert_ok();
        let head = |s: &str| s.chars().take(2000).collect::<String>();
        assert_eq!(r.stderr.lines().count(), 1, "{test}: one line on stderr: {}", head(&r.stderr));
        let line = r.stderr.lines().next().unwrap();
        assert!(line.len() < 1024, "{test}: {} bytes: {}", line.len(), head(line));
        assert!(line.starts_with("aar: AAR_TRACE=\""), "{test}: {line}");
        assert!(line.contains(cause) && line.contains("no decision trace is written"), "{test}: {line}");
        assert_eq!(r.dlvr_modes("GNI_PostFma"), [AD3; 3], "{test}: routing continues without the trace");
    }
}
