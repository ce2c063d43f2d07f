//! A path as the value of a pkg-config variable. Included by build.rs and by the crate's tests (a
//! build script's own tests are never run).

use std::path::Path;

/// `path` escaped so that `pkg-config --cflags --libs` hands it to the compiler as one word, read
/// back by the shell (`$(pkg-config ...)`, make's recipes): pkg-config itself parses blanks,
/// quotes, `#` and `\`, so those get a backslash; it escapes `&`, `;`, `|`, `*` and the like on
/// output by itself. `Err` names a character no escape carries: pkg-config prints `$`, `(` and
/// `)` bare, where the shell and make act on them, and the compiler splits `-Wl,-rpath,DIR` at `,`.
pub fn pc_value(path: &Path) -> Result<String, String> {
    let text = path.to_str().ok_or_else(|| "a byte that is not UTF-8".to_string())?;
    let mut value = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '$' | '(' | ')' | ',' => return Err(format!("'{c}'")),
            c if c.is_control() => return Err(format!("a control character ({:?})", c)),
            ' ' | '\'' | '"' | '#' | '\\' => value.extend(['\\', c]),
            c => value.push(c),
        }
    }
    Ok(value)
}
