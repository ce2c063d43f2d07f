//! Messages that quote values on one line: a value a message quotes, escaped and cut
//! ([`quoted`]: libaar.so's warnings, libpmi.so.0's and `aar run`'s), and a message whose quoted
//! values are cut after it is made ([`shortened`]: libaar.so's warnings about `AAR_*` variables,
//! the emulator's about `AAR_EMU_*` ones).

/// The characters of an environment variable's value that a warning about it quotes ([`shown`]).
pub const VALUE_CHARS: usize = 80;

/// An environment variable's value as a warning about it quotes it: [`quoted`] to [`VALUE_CHARS`].
pub fn shown(value: &str) -> String {
    quoted(value, VALUE_CHARS)
}

/// `text` as a message quotes it: in `"…"`, every control or invisible character (a terminal's
/// escape sequence, a carriage return) and every `"` escaped as `escape_debug` writes it
/// (`\u{1b}`, `\r`, `\"`), so that the quote can neither drive a terminal nor break the message's
/// line nor end early, and cut to its first `max_chars` characters and `…`, so that the part
/// shown is not taken for the whole and a long value is not a flood.
pub fn quoted(text: &str, max_chars: usize) -> String {
    let cut = text.char_indices().nth(max_chars).map_or(text.len(), |(i, _)| i);
    let more = if cut < text.len() { "…" } else { "" };
    format!("\"{}{more}\"", text[..cut].escape_debug())
}

/// A message as a warning says it, one line whatever the values it quotes: every control or
/// invisible character escaped as `escape_debug` writes it (`\n`, `\u{1b}`), so that nothing
/// breaks the line, moves the cursor or reorders the text, and each quoted value (`"…"`, which may
/// be a whole long variable) cut to its first `max_chars` characters and `…`, so that a long value
/// is not said whole: the rest of the message, its example included, is kept whole.
///
/// The messages quote values as `escape_debug` writes them, so a `"` inside a value (`\"`) does
/// not end its quote. An escape sequence (`\"`, `\n`, `\u{1b}`) is kept or left out whole, and
/// counts as the characters it shows but its `\`: `\"` and `\n` as the one they stand for, `\u{1b}`
/// as five, so that a value of invisible characters is not shown at ten times the bound.
pub fn shortened(message: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(message.len().min(1024));
    // In a quote: the characters it has had so far (those past `max_chars` left out).
    let mut quote: Option<usize> = None;
    let mut rest = message;
    while let Some(c) = rest.chars().next() {
        let len = if quote.is_some() && c == '\\' { escape_len(rest) } else { c.len_utf8() };
        let (character, after) = rest.split_at(len);
        rest = after;
        match (quote, c) {
            (None, '"') => {
                quote = Some(0);
                out.push(c);
            }
            (Some(n), '"') => {
                if n > max_chars {
                    out.push('…');
                }
                quote = None;
                out.push(c);
            }
            (Some(n), _) => {
                let n = n + (character.chars().count() - usize::from(len > 1 && c == '\\'));
                if n <= max_chars {
                    escaped(&mut out, character);
                }
                quote = Some(n);
            }
            (None, _) => escaped(&mut out, character),
        }
    }
    if quote.is_some_and(|n| n > max_chars) {
        out.push('…');
    }
    out
}

/// `text` escaped as `escape_debug` escapes a character, but for `\`, `'` and `"`, which the
/// message wrote as it means them.
fn escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\\' | '\'' | '"' => out.push(c),
            _ => out.extend(c.escape_debug()),
        }
    }
}

/// The bytes of the escape sequence `text` begins with: its `\` and the character after it, and
/// of a `\u{1b}` the hex digits and the braces too.
fn escape_len(text: &str) -> usize {
    match text[1..].chars().next() {
        None => 1,
        Some('u') if text[2..].starts_with('{') => {
            let end = 3 + text[3..].bytes().take_while(u8::is_ascii_hexdigit).count();
            end + usize::from(text[end..].starts_with('}'))
        }
        Some(c) => 1 + c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use super::{quoted, shortened};

    #[test]
    fn a_quoted_value_is_escaped_and_cut_to_its_bound() {
        assert_eq!(quoted("", 4), r#""""#);
        assert_eq!(quoted("abcd", 4), r#""abcd""#, "one at the bound is whole");
        assert_eq!(quoted("abcde", 4), r#""abcd…""#);
        assert_eq!(quoted("a\"b\u{1b}[2J\r", 40), r#""a\"b\u{1b}[2J\r""#);
        assert_eq!(quoted("λσµéx", 4), r#""λσµé…""#, "characters, not bytes");
    }

    #[test]
    fn a_quote_longer_than_the_bound_is_cut_and_closed() {
        assert_eq!(shortened(r#"the value "abcdef" is bad"#, 4), r#"the value "abcd…" is bad"#);
        assert_eq!(
            shortened(r#"the value "abcd" is bad"#, 4),
            r#"the value "abcd" is bad"#,
            "one at the bound is whole"
        );
        assert_eq!(shortened(r#""" is empty"#, 0), r#""" is empty"#);
        assert_eq!(shortened(r#""a" is bad"#, 0), r#""…" is bad"#);
        // A quote the message does not close is cut all the same, and said to be.
        assert_eq!(shortened(r#"ends in "abcdef"#, 4), r#"ends in "abcd…"#);
        assert_eq!(shortened(r#"ends in "abcd"#, 4), r#"ends in "abcd"#);
    }

    #[test]
    fn an_escape_sequence_is_one_character_kept_or_left_out_whole() {
        let escapes = format!(r#""{}" is bad"#, r"\\".repeat(30));
        assert_eq!(shortened(&escapes, 40), escapes, "an escape counts as one character");
        let escapes = format!(r#""{}" is bad"#, r"\\".repeat(50));
        assert_eq!(shortened(&escapes, 40), format!(r#""{}…" is bad"#, r"\\".repeat(40)));
        // Straddling the cut: left out whole, a `\u{…}` with its digits and braces, which count.
        assert_eq!(shortened(r#""ab\ncd" is bad"#, 2), r#""ab…" is bad"#);
        assert_eq!(shortened(r#""ab\ncd" is bad"#, 3), r#""ab\n…" is bad"#);
        assert_eq!(shortened(r#""ab\u{1b}[2J" is bad"#, 3), r#""ab…" is bad"#);
        assert_eq!(shortened(r#""ab\u{1b}[2J" is bad"#, 6), r#""ab…" is bad"#);
        assert_eq!(shortened(r#""ab\u{1b}[2J" is bad"#, 7), r#""ab\u{1b}…" is bad"#);
        assert_eq!(shortened(r#""ab\u{1b}[2J" is bad"#, 10), r#""ab\u{1b}[2J" is bad"#);
        let invisible = format!(r#""{}" is bad"#, r"\u{10ffff}".repeat(100));
        assert_eq!(shortened(&invisible, 40), format!(r#""{}…" is bad"#, r"\u{10ffff}".repeat(4)));
        // A sequence left out ends the quote's characters: a shorter one after it is not shown.
        assert_eq!(shortened(r#""a\u{1b}b" is bad"#, 2), r#""a…" is bad"#);
    }

    #[test]
    fn an_escaped_quote_does_not_end_its_quote() {
        assert_eq!(shortened(r#"the seed "a\"b" is bad"#, 40), r#"the seed "a\"b" is bad"#);
        assert_eq!(shortened(r#"the seed "a\"bcd" is bad"#, 2), r#"the seed "a\"…" is bad"#);
        assert_eq!(shortened(r#"the seed "ab\"cd" is "ok""#, 2), r#"the seed "ab…" is "ok""#);
    }

    #[test]
    fn each_quote_of_a_message_is_cut_on_its_own() {
        let message = r#"AAR_EMU_SIM="nodes=123456": nodes="123456" is not a count, e.g. "nodes=8""#;
        assert_eq!(
            shortened(message, 4),
            r#"AAR_EMU_SIM="node…": nodes="1234…" is not a count, e.g. "node…""#,
            "the text between quotes is whole"
        );
        assert_eq!(shortened(message, 200), message);
    }

    #[test]
    fn a_message_without_quotes_is_kept_and_its_control_characters_escaped() {
        let message = "AAR_EMU_LOG=/tmp/x: cannot open (No such file or directory); posts are not logged";
        assert_eq!(shortened(message, 0), message);
        assert_eq!(
            shortened("AAR_EMU_LOG=/tmp/a\nb\u{1b}[2J\u{202e}: it's bad", 0),
            r"AAR_EMU_LOG=/tmp/a\nb\u{1b}[2J\u{202e}: it's bad"
        );
        // In a quote too: a character the message did not escape cannot break the line.
        assert_eq!(shortened("\"a\tb\rc\" is bad", 40), r#""a\tb\rc" is bad"#);
    }

    #[test]
    fn multi_byte_characters_count_as_one() {
        assert_eq!(shortened(r#""λσµé…x" is bad"#, 5), r#""λσµé……" is bad"#);
        assert_eq!(shortened(r#""λσµé…" is bad"#, 5), r#""λσµé…" is bad"#);
        assert_eq!(shortened("\"日本語のテキスト\" and ünïcödé", 3), "\"日本語…\" and ünïcödé");
    }
}
