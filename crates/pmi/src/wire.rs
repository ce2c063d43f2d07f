//! The simple PMI-1 wire protocol, as MPICH's hydra speaks it: one message per line,
//! `cmd=NAME key=value key=value\n`. Both sides use this one parser: libpmi.so.0 (the client)
//! and `aar run` (the server).

use std::fmt;
use std::str::FromStr;

/// The longest KVS name, key and value `aar run` serves (`cmd=maxes`), as hydra's defaults.
pub const KVSNAME_MAX: usize = 256;
/// See [`KVSNAME_MAX`].
pub const KEYLEN_MAX: usize = 64;
/// See [`KVSNAME_MAX`].
pub const VALLEN_MAX: usize = 1024;

/// The longest line either side reads before its newline (64 KiB): a message is far shorter
/// ([`VALLEN_MAX`] and the rest), so a peer past it sends no PMI, and is refused instead of
/// buffered without end (`aar run` closes the rank's connection and ends the job, libpmi.so.0 fails
/// the call).
pub const MAX_LINE: usize = 64 * 1024;

/// The KVS key under which the launcher publishes where the ranks run (see [`crate::mapping`]).
pub const PROCESS_MAPPING_KEY: &str = "PMI_process_mapping";

/// The characters of a rank's (or a launcher's) text that a message quotes ([`quoted`]): enough
/// to recognise the word, never a flood.
pub const QUOTED_CHARS: usize = 60;

/// `text` as a message quotes text a peer sent ([`aar_record::quotes::quoted`]: escaped, cut to
/// [`QUOTED_CHARS`]): a line of the wire may hold 64 KiB of anything. The one quoting of peer
/// text, on both sides (the wire's [`ParseError`]s, `aar run`'s lines, libpmi.so.0's errors).
pub fn quoted(text: &str) -> String {
    aar_record::quotes::quoted(text, QUOTED_CHARS)
}

/// The KVS key of one chunk of one rank's part of libpmi.so.0's `PMI_Allgather` number `seq`
/// (every rank calls the collective in the same order, so the numbers agree).
pub fn allgather_key(seq: u64, rank: i32, chunk: usize) -> String {
    format!("{ALLGATHER_PREFIX}{seq}-{rank}-{chunk}")
}

/// The number of the `PMI_Allgather` whose key `key` is ([`allgather_key`]), if it is one.
pub fn allgather_seq(key: &str) -> Option<u64> {
    key.strip_prefix(ALLGATHER_PREFIX)?.split_once('-')?.0.parse().ok()
}

const ALLGATHER_PREFIX: &str = "aar-ag";

/// One protocol message: the command and its fields, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The value of `cmd=`.
    pub cmd: String,
    fields: Vec<(String, String)>,
}

/// A line that is not `cmd=NAME key=value ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

impl Message {
    /// A message with no fields.
    pub fn new(cmd: &str) -> Self {
        Message { cmd: cmd.to_owned(), fields: Vec::new() }
    }

    /// The message with one more field.
    pub fn with(mut self, key: &str, value: impl fmt::Display) -> Self {
        self.fields.push((key.to_owned(), value.to_string()));
        self
    }

    /// The value of field `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of field `key` as a number.
    pub fn get_int(&self, key: &str) -> Option<i64> {
        self.get(key)?.parse().ok()
    }

    /// The message as sent: the line with its newline.
    pub fn to_line(&self) -> String {
        format!("{self}\n")
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cmd={}", self.cmd)?;
        for (k, v) in &self.fields {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

impl FromStr for Message {
    type Err = ParseError;

    /// One line, with or without its newline. A field's value runs to the next space, so it may
    /// hold `=` (as hydra's `msg=` texts do) but never a space.
    fn from_str(line: &str) -> Result<Self, ParseError> {
        let mut words = line.trim_end_matches(['\n', '\r']).split(' ').filter(|w| !w.is_empty());
        let first = words.next().ok_or_else(|| ParseError("an empty line".into()))?;
        let cmd = first
            .strip_prefix("cmd=")
            .filter(|c| !c.is_empty())
            .ok_or_else(|| ParseError(format!("{} where cmd=NAME must come first", quoted(first))))?;
        let fields = words
            .map(|w| {
                w.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .ok_or_else(|| ParseError(format!("{} is not key=value", quoted(w))))
            })
            .collect::<Result<_, _>>()?;
        Ok(Message { cmd: cmd.to_owned(), fields })
    }
}

/// Why a key or value cannot travel in a message: the protocol has no escapes, so a space,
/// newline or `=` (in a key) would cut the line.
/// [`check_word`] for a name (a key, a KVS name): also not empty, which the wire would carry as
/// `key=` and no server can look up.
pub fn check_name(what: &str, s: &str, max: usize) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("{what} is empty; give it a name"));
    }
    check_word(what, s, max)
}

pub fn check_word(what: &str, s: &str, max: usize) -> Result<(), String> {
    if s.len() > max {
        return Err(format!("{what} is {} bytes long, the longest allowed is {max}", s.len()));
    }
    if s.contains([' ', '\n', '\r']) {
        return Err(format!(
            "{what} {} holds a space or a newline, which the PMI wire protocol cannot carry",
            quoted(s)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_must_not_be_empty() {
        assert_eq!(check_name("the key", "", 63), Err("the key is empty; give it a name".to_string()));
        assert_eq!(check_name("the key", "k", 63), Ok(()));
        assert!(check_name("the key", "a b", 63).is_err());
        assert_eq!(check_word("the value", "", 63), Ok(()), "a value may be empty");
    }

    #[test]
    fn a_line_round_trips() {
        let m = Message::new("put").with("kvsname", "aar-7").with("key", "k").with("value", "a=b");
        assert_eq!(m.to_line(), "cmd=put kvsname=aar-7 key=k value=a=b\n");
        assert_eq!(m.to_line().parse::<Message>().unwrap(), m);
        assert_eq!(m.get("value"), Some("a=b"));
    }

    #[test]
    fn bad_lines_are_refused() {
        assert!("".parse::<Message>().is_err());
        assert!("key=v".parse::<Message>().is_err());
        assert!("cmd=get novalue".parse::<Message>().is_err());
        assert_eq!("cmd=barrier_out\n".parse::<Message>().unwrap(), Message::new("barrier_out"));
    }

    /// A line may hold 64 KiB of anything: its word is quoted escaped and cut, in one short line.
    #[test]
    fn a_bad_lines_word_is_quoted_escaped_and_cut() {
        let e = "\u{1b}[2Jhello\rworld\"".parse::<Message>().unwrap_err().to_string();
        assert_eq!(e, r#""\u{1b}[2Jhello\rworld\"" where cmd=NAME must come first"#);
        let e = format!("cmd=put {}", "x".repeat(70_000)).parse::<Message>().unwrap_err().to_string();
        assert_eq!(e, format!("\"{}…\" is not key=value", "x".repeat(QUOTED_CHARS)));
        let e = format!("cmd=put é{}\u{7}", "é".repeat(QUOTED_CHARS - 2)).parse::<Message>().unwrap_err();
        assert_eq!(e.to_string(), format!("\"{}\\u{{7}}\" is not key=value", "é".repeat(QUOTED_CHARS - 1)));
        assert_eq!(quoted(""), "\"\"");
    }

    #[test]
    fn a_word_that_cannot_travel_is_quoted_escaped() {
        let e = check_word("the value", "a\rb\u{1b} c", 64).unwrap_err();
        assert_eq!(
            e,
            r#"the value "a\rb\u{1b} c" holds a space or a newline, which the PMI wire protocol cannot carry"#
        );
    }

    #[test]
    fn words_with_spaces_cannot_travel() {
        assert!(check_word("key", "a b", 64).is_err());
        assert!(check_word("key", &"k".repeat(65), 64).is_err());
        assert!(check_word("key", "ab", 64).is_ok());
    }
}
