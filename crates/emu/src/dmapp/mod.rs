//! DMAPP over the emulated NIC: the job of virtual PEs in this process (`job`), the segments every
//! PE has (`segment`), the RMA attributes of each thread (`attrs`) and the data calls (`ops`).
//! Their exports are in `crate::exports::dmapp`. Data really moves (memcpy, atomics) between PE
//! 0's memory and the other PEs' copies, and every message reaches the NIC counters like a uGNI
//! post, so the shim sees DMAPP traffic as on a Cray.

pub mod attrs;
pub mod job;
pub mod ops;
pub mod segment;
