//! `libpmi.so.0`: the PMI-1 interface (with Cray's `PMI_Allgather` and clique calls) that uGNI
//! programs use to find their job, spoken over the simple PMI-1 wire protocol on the socket a
//! launcher passes in `PMI_FD`. The same library works under `aar run` and under MPICH's
//! `mpiexec.hydra`.
//!
//! - [`wire`]: the line format, one parser for both sides (`aar run` serves it).
//! - [`mapping`]: `PMI_process_mapping`, where the ranks run, hence the cliques.
//! - `client`: the process's one PMI session, behind one mutex.
//! - [`exports`]: every C symbol, in one file.
#![allow(non_snake_case)]

mod client;
pub mod exports;
pub mod mapping;
pub mod wire;

pub use client::{
    PMI_ERR_INIT, PMI_ERR_INVALID_ARG, PMI_ERR_INVALID_KEY, PMI_ERR_INVALID_LENGTH, PMI_ERR_INVALID_VAL, PMI_FAIL,
    PMI_SUCCESS,
};
