//! libaar.so: application-aware routing for Cray Aries jobs.
//!
//! Preloaded in front of libugni, it routes every adaptive post with the decision engine and
//! forwards it, exactly once, to the real function. The flow is one way:
//! intercept ([`exports`], [`ugni`], [`mpi`]) → account ([`stats`]) → decide ([`runtime`], the
//! engine) → forward → observe ([`papi`]). Iterations and A/B experiments: [`iterations`].
//! Output: [`output`] (per-rank record, summary), [`trace`] (decision trace), [`diag`] (stderr
//! messages and logging).
//!
//! `unsafe` lives in the seams only: [`ugni`], [`mpi`], [`papi`], [`sys`] and [`exports`], and in
//! [`trylock`], the one lock the decision path takes.
#![deny(unsafe_op_in_unsafe_fn)]
// Unit tests do not export the C symbols (no_mangle is off under test), so most code is unused there.
#![cfg_attr(test, allow(dead_code))]

pub mod control;
mod diag;
mod exports;
mod fork;
mod iterations;
mod mpi;
mod output;
mod papi;
mod runtime;
mod selfcheck;
mod settings;
mod stats;
mod sys;
mod trace;
mod trylock;
mod ugni;
