//! The site's `dmapp.h`, found and read at build time: build.rs includes this file, and
//! tests/build_script.rs tests it (a build script's own tests are never run).
//!
//! Where to look, in order: the path in `AAR_DMAPP_H`; else a `dmapp.h` in the `-I` folders of
//! `CRAY_DMAPP_INCLUDE_OPTS` or `CRAY_DMAPP_POST_COMPILE_OPTS`, which Cray's `cray-dmapp` module
//! sets. The header's `DMAPP_ROUTING_*` enumerators become the routing table libaar.so uses
//! unless `AAR_DMAPP_ROUTING` is set at run time.

use aar_abi::dmapp::{HeaderError, RoutingTable};
use std::path::{Path, PathBuf};

/// The variable that names the header itself.
pub const HEADER_VARIABLE: &str = "AAR_DMAPP_H";
/// The variables whose compiler options name the folders to search, in order.
pub const OPTION_VARIABLES: [&str; 2] = ["CRAY_DMAPP_INCLUDE_OPTS", "CRAY_DMAPP_POST_COMPILE_OPTS"];

/// The folders of the `-I` options in compiler options (`-I/a`, `-I /b`), in order.
pub fn include_dirs(options: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        let Some(rest) = w.strip_prefix("-I") else { continue };
        match rest {
            "" => dirs.extend(words.next().map(PathBuf::from)),
            dir => dirs.push(PathBuf::from(dir)),
        }
    }
    dirs
}

/// A header to read, and the variable that led to it.
#[derive(Debug, PartialEq, Eq)]
pub struct Located {
    pub path: PathBuf,
    pub variable: &'static str,
}

/// The site's `dmapp.h`, if any source names one (`AAR_DMAPP_H` is taken as given, even if it
/// names no file: reading it then says so).
pub fn locate(var: &dyn Fn(&str) -> Option<String>, is_file: &dyn Fn(&Path) -> bool) -> Option<Located> {
    if let Some(path) = var(HEADER_VARIABLE).filter(|p| !p.trim().is_empty()) {
        return Some(Located { path: PathBuf::from(path.trim()), variable: HEADER_VARIABLE });
    }
    OPTION_VARIABLES.into_iter().find_map(|variable| {
        let options = var(variable)?;
        let path = include_dirs(&options).into_iter().map(|d| d.join("dmapp.h")).find(|p| is_file(p))?;
        Some(Located { path, variable })
    })
}

/// What the build found: the table and its header, and the line the build prints.
#[derive(Debug, PartialEq, Eq)]
pub struct Discovery {
    pub table: Option<(RoutingTable, PathBuf)>,
    pub message: String,
}

/// Locate the header and read its table, saying what was found or why none is used.
pub fn discover(
    var: &dyn Fn(&str) -> Option<String>,
    is_file: &dyn Fn(&Path) -> bool,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Discovery {
    let assumed = format!(
        "libaar.so uses the assumed DMAPP routing table ({}) unless AAR_DMAPP_ROUTING gives one when it runs",
        RoutingTable::ASSUMED
    );
    let Some(Located { path, variable }) = locate(var, is_file) else {
        return Discovery {
            table: None,
            message: format!(
                "no site dmapp.h found ({HEADER_VARIABLE} is unset and no -I folder of {} or {} has one); {assumed}. \
                 On a Cray, load cray-dmapp before building, or set {HEADER_VARIABLE}=/path/to/dmapp.h.",
                OPTION_VARIABLES[0], OPTION_VARIABLES[1]
            ),
        };
    };
    let shown = path.display();
    // What to do instead: the table at run time, or another header at build time.
    let instead = format!(
        "Give the site's values in AAR_DMAPP_ROUTING when libaar.so runs (one NAME=VALUE for each \
         DMAPP_ROUTING_ name, separated by commas: IN_ORDER=...,ADAPTIVE_3=...), or point {HEADER_VARIABLE} at another dmapp.h"
    );
    let table = match read(&path) {
        Err(e) => Err(format!("cannot be read ({e})")),
        Ok(text) => RoutingTable::from_c_header(&text).map_err(|e| match enumerator_at_fault(&text, e) {
            Some((line, item)) => format!("gives no DMAPP routing table: at line {line}, `{item}`: {e}"),
            None => format!("gives no DMAPP routing table ({e})"),
        }),
    };
    match table {
        Ok(table) => Discovery {
            message: format!("DMAPP routing table from {shown} (found through {variable}): {table}"),
            table: Some((table, path)),
        },
        Err(why) => Discovery {
            table: None,
            message: format!("{shown} (found through {variable}) {why}; {assumed}. {instead}."),
        },
    }
}

/// Characters of an enumerator's text a message shows at most.
const SHOWN_CHARS: usize = 80;

/// The line (from 1) and text of the enumerator [`RoutingTable::from_c_header`] refused, for its
/// errors about one enumerator (a value it cannot evaluate, or above 255), which say where it
/// starts in `text`.
fn enumerator_at_fault(text: &str, error: HeaderError) -> Option<(usize, String)> {
    let (HeaderError::Unevaluable { at } | HeaderError::TooLarge { at }) = error else { return None };
    let entry = text.get(at..)?;
    let end = entry.find([',', '}']).unwrap_or(entry.len());
    let line = text[..at].matches('\n').count() + 1;
    // On one line (a build warning is one line), cut if long.
    let item = entry[..end].split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = match item.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &item[..cut]),
        None => item,
    };
    Some((line, shown))
}
