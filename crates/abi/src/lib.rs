//! The C interfaces aar sits between, as x86-64 LP64 data: uGNI's layouts, constants and function
//! types ([`ugni`], re-exported here), DMAPP's ([`dmapp`]), and the Aries NIC counter events read
//! through PAPI ([`counters`]).
//!
//! This crate is the one home of these facts. The shim (libaar.so) declares its interposed
//! functions and the real functions it forwards to with the types here, and the emulator
//! (libugni.so) checks at compile time that its definitions have exactly these types, so the two
//! cannot drift apart. Enums that cross the C boundary are plain integers, because a C caller may
//! pass any value and a Rust `enum` must never hold an undeclared one. `docs/abi.md` says where
//! each fact comes from and which ones are not established.
#![no_std]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

pub mod counters;
pub mod dmapp;
pub mod ugni;

pub use ugni::*;

/// The NIC address of the emulated machine's first node. Real Aries addresses come from the
/// system and nothing depends on their values; the emulated libugni.so numbers the NICs of one
/// process from this one, and `aar run` gives node n the address `FIRST_NIC_ADDR + n`
/// (`PMI_GNI_LOC_ADDR`), so the emulator, the launcher and their tests agree.
pub const FIRST_NIC_ADDR: u32 = 0x100;
