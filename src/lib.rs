//! libaar.so: application-aware routing for Cray Aries jobs.
//!
//! Preloaded in front of libugni and libdmapp, it routes every adaptive uGNI post and DMAPP data
//! call with the decision engine and forwards it, exactly once, to the real function. The flow is
//! one way: intercept (`exports`, `ugni`, `dmapp`, `mpi`) → account (`tally`) → decide (`route`,
//! the decider in `state`, the engine) → forward → observe (`papi`).
//!
//! The modules form layers; each uses only modules of lower layers or, without a cycle, of its
//! own (a unit test checks the `crate::` paths of every module against this list):
//!
//! 1. primitives: `sys` (libc), `trylock` (the lock the library only ever tries, and the
//!    re-entry guard), `job` (rank and job ids), `diag` (stderr messages);
//! 2. per-concern state: `settings` (the `AAR_*` variables), `control` (the control word every
//!    post loads), `tally` (messages and bytes per routing), `trace` (the decision trace),
//!    `nics` (the NIC table for SMSG routing), `attributes` (DMAPP's routing attributes per
//!    thread), `papi` (the counters), `rows` (iterations and their record);
//! 3. process state: `state`, which declares every lock and the list the fork handlers hold;
//! 4. exit: `output`, the per-rank record and summary the exit handler writes;
//! 5. start-up: `init`, the only place that registers the exit and fork handlers;
//! 6. hooks: `iterations` (A/B boundaries), `mpi`, `route` (the routing step both APIs share),
//!    `ugni`, `dmapp`, `selfcheck` (for `aar doctor`);
//! 7. exports: `exports`, every symbol libaar.so exports.
//!
//! `unsafe` lives in the seams only: `ugni`, `dmapp`, `mpi`, `papi`, `sys`, `selfcheck` and `exports`;
//! in `trylock`, the one lock the decision path takes; and where the fork handlers give back
//! every lock of `state` (`init`).
#![deny(unsafe_op_in_unsafe_fn)]
// Unit tests do not export the C symbols (no_mangle is off under test), so most code is unused there.
#![cfg_attr(test, allow(dead_code))]

mod attributes;
mod control;
mod diag;
mod dmapp;
mod exports;
mod init;
mod iterations;
mod job;
mod mpi;
mod nics;
mod output;
mod papi;
mod route;
mod rows;
mod selfcheck;
mod settings;
mod state;
mod sys;
mod tally;
mod trace;
mod trylock;
mod ugni;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    /// The layers of the crate's doc, lowest first: the module names in backquotes on each
    /// numbered line and its continuation lines.
    fn layers() -> Vec<Vec<String>> {
        let doc = include_str!("lib.rs");
        let mut layers: Vec<Vec<String>> = Vec::new();
        for line in doc.lines().take_while(|l| l.starts_with("//!")) {
            let text = line.trim_start_matches("//!").trim_start();
            let numbered = text.split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok());
            if numbered {
                layers.push(Vec::new());
            } else if text.is_empty() || !line.starts_with("//!    ") {
                continue;
            }
            if let Some(layer) = layers.last_mut() {
                let quoted = text.split('`').skip(1).step_by(2);
                layer.extend(
                    quoted.filter(|m| m.chars().all(|c| c.is_ascii_lowercase() || c == '_')).map(str::to_string),
                );
            }
        }
        layers
    }

    /// Every module and the crate modules its code (not its unit tests) names.
    fn uses() -> BTreeMap<String, Vec<String>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut uses = BTreeMap::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let Some(module) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else { continue };
            if path.extension().is_none_or(|e| e != "rs") || module == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code: String = text
                .split("\n#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let mut named = Vec::new();
            for (i, _) in code.match_indices("crate::") {
                let rest = &code[i + "crate::".len()..];
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
            uses.insert(module, named);
        }
        uses
    }

    #[test]
    fn modules_use_only_their_own_or_lower_layers_and_form_no_cycle() {
        let layers = layers();
        assert_eq!(layers.len(), 7, "{layers:?}");
        let layer_of = |m: &str| layers.iter().position(|l| l.iter().any(|x| x == m));
        let uses = uses();
        for (module, named) in &uses {
            let own = layer_of(module).unwrap_or_else(|| panic!("the module {module} is in no layer of the doc"));
            for n in named {
                let Some(theirs) = layer_of(n) else { panic!("{module} names crate::{n}, which is in no layer") };
                assert!(theirs <= own, "{module} (layer {}) uses {n} of a higher layer ({})", own + 1, theirs + 1);
            }
        }
        for layer in &layers {
            for m in layer {
                assert!(uses.contains_key(m), "the doc lists {m}, which is not a module");
            }
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
}
