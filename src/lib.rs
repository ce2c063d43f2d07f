//! libaar.so: application-aware routing for Cray Aries jobs.
//!
//! Preloaded in front of libugni and libdmapp, it routes every adaptive uGNI post and DMAPP data
//! call with the decision engine and forwards it, exactly once, to the real function. The flow is
//! one way: intercept (`exports`, `ugni`, `dmapp`, `mpi`) → account (`tally`) → decide (`route`,
//! the decider in `state`, the engine) → forward → observe (`papi`).
//!
//! The modules form layers; each uses only modules of lower layers or, without a cycle, of its
//! own (a unit test checks the `crate::` and `super::` paths of every module against this list):
//!
//! 1. primitives: `sys` (libc), `trylock` (the lock the library only ever tries, and the
//!    re-entry guard), `reserve` (the allocator: malloc, then a reserve of its own), `job` (rank
//!    and job ids), `diag` (stderr messages), `handles` (the lock-free tables keyed by C
//!    handles);
//! 2. per-concern state: `settings` (the `AAR_*` variables), `control` (the control word every
//!    post loads), `tally` (messages and bytes per routing), `trace` (the decision trace),
//!    `nics` (the NIC table for SMSG routing), `attributes` (DMAPP's routing attributes per
//!    thread), `papi` (the counters), `node` (the counter reading the ranks of a node share),
//!    `topology` (NIC address -> group and router), `endpoints` (each endpoint's NIC and remote NIC),
//!    `rows` (iterations and their record);
//! 3. process state: `state`, which declares every lock and the list the fork handlers hold;
//! 4. exit: `output`, the per-rank record and summary the exit handler writes;
//! 5. start-up: `init`, the only place that registers the exit and fork handlers;
//! 6. hooks: `iterations` (A/B boundaries), `mpi`, `route` (the routing step both APIs share),
//!    `ugni`, `dmapp`, `selfcheck` (for `aar doctor`);
//! 7. exports: `exports`, every symbol libaar.so exports.
//!
//! `unsafe` lives in the seams only: `ugni`, `dmapp`, `mpi`, `papi`, `sys`, `selfcheck` and `exports`,
//! and `node`, which views the shared segment `sys` maps as its struct of atomics; in `reserve`,
//! the allocator;
//! in `trylock`, the one lock the decision path takes; and where the fork handlers give back
//! every lock of `state` (`init`).
#![deny(unsafe_op_in_unsafe_fn)]
// Unit tests do not export the C symbols (no_mangle is off under test), so most code is unused there.
#![cfg_attr(test, allow(dead_code))]

mod attributes;
mod control;
mod diag;
mod dmapp;
mod endpoints;
mod exports;
mod handles;
mod init;
mod iterations;
mod job;
mod mpi;
mod nics;
mod node;
mod output;
mod papi;
mod reserve;
mod route;
mod rows;
mod selfcheck;
mod settings;
mod state;
mod sys;
mod tally;
mod topology;
mod trace;
mod trylock;
mod ugni;

#[cfg(test)]
mod tests {
    #[test]
    fn modules_use_only_their_own_or_lower_layers_and_form_no_cycle() {
        aar_testkit::layers::check(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), 7);
    }
}
