//! The check that a crate's modules form the layers its `lib.rs` doc lists: the shim and the
//! emulator each state their layers there, and a unit test of each calls [`check`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Checks the crate whose sources are in `src`: its `lib.rs` doc lists `expected` layers, lowest
/// first, as numbered lines (`1. name: ...`) whose backquoted lowercase words, on the line and its
/// indented continuation lines, are module names. Every top-level module (with its submodules,
/// but not the files of its unit tests) may name, through `crate::` or `super::` paths that reach
/// the crate root, only modules of its own or of lower layers and the root's own items; the root
/// names no module; every listed module exists and every module is listed; and no modules use each
/// other in a cycle. Panics with what is wrong.
pub fn check(src: &Path, expected: usize) {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let layers = layers(&lib);
    assert_eq!(layers.len(), expected, "the layers in lib.rs's doc: {layers:?}");
    let layer_of = |m: &str| layers.iter().position(|l| l.iter().any(|x| x == m));
    let mut uses = uses(src, &lib);
    let root = uses.remove("lib").unwrap_or_default();
    let is_module = |n: &String| uses.contains_key(n);
    assert!(!root.iter().any(is_module), "the crate root names modules: {root:?}");
    for (module, named) in &uses {
        let own = layer_of(module).unwrap_or_else(|| panic!("the module {module} is in no layer of the doc"));
        // What is not a module is an item of the crate root, below every layer.
        for n in named.iter().filter(|n| is_module(n)) {
            let Some(theirs) = layer_of(n) else { panic!("{module} names crate::{n}, which is in no layer") };
            assert!(theirs <= own, "{module} (layer {}) uses {n} of a higher layer ({})", own + 1, theirs + 1);
        }
    }
    for m in layers.iter().flatten() {
        assert!(uses.contains_key(m), "the doc lists {m}, which is not a module");
    }
    // No cycle: repeatedly remove the modules that use only removed ones.
    let mut left: BTreeMap<&str, Vec<&str>> =
        uses.iter().map(|(m, n)| (m.as_str(), n.iter().map(String::as_str).collect())).collect();
    while !left.is_empty() {
        let leaves: Vec<&str> =
            left.iter().filter(|(_, n)| n.iter().all(|x| !left.contains_key(x))).map(|(m, _)| *m).collect();
        assert!(!leaves.is_empty(), "these modules use each other in a cycle: {left:?}");
        for m in leaves {
            left.remove(m);
        }
    }
}

/// The layers of the doc, lowest first.
fn layers(lib: &str) -> Vec<Vec<String>> {
    let mut layers: Vec<Vec<String>> = Vec::new();
    for line in lib.lines().take_while(|l| l.starts_with("//!")) {
        let text = line.trim_start_matches("//!").trim_start();
        let numbered = text.split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok());
        if numbered {
            layers.push(Vec::new());
        } else if text.is_empty() || !line.starts_with("//!    ") {
            continue;
        }
        if let Some(layer) = layers.last_mut() {
            let quoted = text.split('`').skip(1).step_by(2);
            layer.extend(quoted.filter(|m| m.chars().all(|c| c.is_ascii_lowercase() || c == '_')).map(str::to_string));
        }
    }
    layers
}

/// The `.rs` files under `dir`, at any depth.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The code of a file without its comments and its inline unit tests.
fn code_of(text: &str) -> String {
    let code = text.split("\n#[cfg(test)]").next().unwrap_or_default();
    code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every top-level module declared in `lib` and the root ("lib"), each with the names its code
/// takes from the crate root: modules, or the root's own items. Files of modules that lib.rs does
/// not declare (a build script's sources) and files that their parent declares only under
/// `#[cfg(test)]` are not the crate's code.
fn uses(src: &Path, lib: &str) -> BTreeMap<String, Vec<String>> {
    let declared = |text: &str, name: &str| {
        let code = code_of(text);
        code.contains(&format!("mod {name};")) || code.contains(&format!("mod {name} {{"))
    };
    let mut uses: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in rust_files(src) {
        // src/a.rs, src/a/mod.rs and src/a/b.rs are all module a; `super::` taken as many times as
        // the file is deep leads to the crate root.
        let mut parts: Vec<String> = path
            .strip_prefix(src)
            .unwrap()
            .with_extension("")
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if parts.len() > 1 && parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        let module = parts[0].clone();
        if module != "lib" && !declared(lib, &module) {
            continue;
        }
        if parts.len() > 1 {
            // The parent is src/a.rs or src/a/mod.rs (and so on down).
            let parent = src.join(parts[..parts.len() - 1].join("/"));
            let parent_text = std::fs::read_to_string(parent.with_extension("rs"))
                .or_else(|_| std::fs::read_to_string(parent.join("mod.rs")))
                .unwrap_or_default();
            if !declared(&parent_text, parts.last().unwrap()) {
                continue;
            }
        }
        let to_root = "super::".repeat(parts.len());
        let code = code_of(&std::fs::read_to_string(&path).unwrap());
        let named = uses.entry(module.clone()).or_default();
        for prefix in ["crate::", to_root.as_str()] {
            for (i, _) in code.match_indices(prefix) {
                let rest = &code[i + prefix.len()..];
                // `crate::{a, b::C}` names a and b; `crate::a::...` names a.
                let names: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group.split('}').next().unwrap_or_default().split(',').collect(),
                    None => vec![rest],
                };
                for n in names {
                    let n: String = n.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    if !n.is_empty() && n != module && !named.contains(&n) {
                        named.push(n);
                    }
                }
            }
        }
    }
    uses
}
