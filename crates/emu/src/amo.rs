//! Atomic memory operations (`GNI_POST_AMO`, `GNI_POST_AMO_W_FLAG`): the `amo_cmd` values the
//! emulator performs, done with atomics on the remote word in this process, and on another rank's
//! memory as a read, the operation and a write under the owner's AMO lock (`crate::job`).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use aar_abi::*;

/// What an AMO does to the remote word.
#[derive(Clone, Copy)]
pub enum AmoOp {
    Add,
    And,
    Or,
    Xor,
    AndXor,
    CSwap,
    Swap,
    IMin,
    IMax,
    FpMin,
    FpMax,
    FpAdd,
}

/// The size of the remote word (and of the fetched result).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Width {
    /// Every first-generation command and the second-generation ones without `_S`.
    Bits64,
    /// The second-generation `_S`/`_SC` commands: 32-bit operands (the low half of each
    /// operand field), 4-byte remote word.
    Bits32,
}

impl Width {
    pub fn bytes(self) -> u64 {
        match self {
            Width::Bits64 => 8,
            Width::Bits32 => 4,
        }
    }
}

/// A decoded `amo_cmd`.
#[derive(Clone, Copy)]
pub struct Amo {
    pub op: AmoOp,
    /// The old value comes back to the initiator's `local_addr`.
    pub fetching: bool,
    pub width: Width,
}

/// `gni_fma_cmd_type_t` → what the emulator does, or None (GNI_RC_ILLEGAL_OP) for a value that
/// is no AMO command. Cached (`_C`, `_SC`) forms behave like the plain ones: the emulated NIC
/// has no AMO cache.
pub fn decode_amo(cmd: GniFmaCmdType) -> Option<Amo> {
    let fetching = cmd & AMO_CMD_NON_FETCHING == 0;
    let code = cmd & !AMO_CMD_NON_FETCHING;
    if code & AMO_CMD_OPERANDS_32 != 0 {
        // A 32-bit form (`_S`, `_SC`) is a second-generation code with the 64-bit bit cleared.
        let code = code & !AMO_CMD_OPERANDS_32;
        if code & AMO_CMD2_OPERANDS_64 != 0 {
            return None;
        }
        let op = second_generation(code | AMO_CMD2_OPERANDS_64)?;
        return Some(Amo { op, fetching, width: Width::Bits32 });
    }
    let op = first_generation(code).or_else(|| second_generation(code))?;
    Some(Amo { op, fetching, width: Width::Bits64 })
}

/// The operation of a first-generation command, cached or not.
fn first_generation(code: GniFmaCmdType) -> Option<AmoOp> {
    Some(match code & !AMO_CMD_CACHED {
        GNI_FMA_ATOMIC_FADD => AmoOp::Add,
        GNI_FMA_ATOMIC_FAND => AmoOp::And,
        GNI_FMA_ATOMIC_FOR => AmoOp::Or,
        GNI_FMA_ATOMIC_FXOR => AmoOp::Xor,
        GNI_FMA_ATOMIC_FAX => AmoOp::AndXor,
        GNI_FMA_ATOMIC_CSWAP => AmoOp::CSwap,
        _ => return None,
    })
}

/// The operation of a second-generation 64-bit command, cached or not.
fn second_generation(code: GniFmaCmdType) -> Option<AmoOp> {
    Some(match code & !AMO_CMD2_CACHED {
        GNI_FMA_ATOMIC2_FAND => AmoOp::And,
        GNI_FMA_ATOMIC2_FOR => AmoOp::Or,
        GNI_FMA_ATOMIC2_FXOR => AmoOp::Xor,
        GNI_FMA_ATOMIC2_FSWAP => AmoOp::Swap,
        GNI_FMA_ATOMIC2_FAX => AmoOp::AndXor,
        GNI_FMA_ATOMIC2_FCSWAP => AmoOp::CSwap,
        GNI_FMA_ATOMIC2_FIMIN => AmoOp::IMin,
        GNI_FMA_ATOMIC2_FIMAX => AmoOp::IMax,
        GNI_FMA_ATOMIC2_FIADD => AmoOp::Add,
        GNI_FMA_ATOMIC2_FFPMIN => AmoOp::FpMin,
        GNI_FMA_ATOMIC2_FFPMAX => AmoOp::FpMax,
        GNI_FMA_ATOMIC2_FFPADD => AmoOp::FpAdd,
        _ => return None,
    })
}

/// Performs the operation atomically and returns the previous value.
pub fn apply_amo(t: &AtomicU64, op: AmoOp, a: u64, b: u64) -> u64 {
    let update = |f: &dyn Fn(u64) -> u64| {
        t.fetch_update(Ordering::AcqRel, Ordering::Acquire, |x| Some(f(x))).unwrap_or_else(|x| x)
    };
    let fp = |x: u64, g: fn(f64, f64) -> f64| g(f64::from_bits(x), f64::from_bits(a)).to_bits();
    match op {
        AmoOp::Add => t.fetch_add(a, Ordering::AcqRel),
        AmoOp::And => t.fetch_and(a, Ordering::AcqRel),
        AmoOp::Or => t.fetch_or(a, Ordering::AcqRel),
        AmoOp::Xor => t.fetch_xor(a, Ordering::AcqRel),
        AmoOp::Swap => t.swap(a, Ordering::AcqRel),
        // Compare with the first operand, swap in the second.
        AmoOp::CSwap => t.compare_exchange(a, b, Ordering::AcqRel, Ordering::Acquire).unwrap_or_else(|x| x),
        AmoOp::AndXor => update(&|x| (x & a) ^ b),
        AmoOp::IMin => update(&|x| (x as i64).min(a as i64) as u64),
        AmoOp::IMax => update(&|x| (x as i64).max(a as i64) as u64),
        AmoOp::FpMin => update(&|x| fp(x, f64::min)),
        AmoOp::FpMax => update(&|x| fp(x, f64::max)),
        AmoOp::FpAdd => update(&|x| fp(x, |p, q| p + q)),
    }
}

/// [`apply_amo`] or [`apply_amo32`] on a copy of a word (its first `width` bytes of `bytes`, in
/// the machine's byte order), which it updates: the previous and the new value. For an AMO on
/// memory that only the caller's lock protects (another process's, read and written back).
pub fn apply_to_bytes(bytes: &mut [u8; 8], width: Width, op: AmoOp, a: u64, b: u64) -> (u64, u64) {
    match width {
        Width::Bits64 => {
            let word = AtomicU64::new(u64::from_ne_bytes(*bytes));
            let old = apply_amo(&word, op, a, b);
            let new = word.into_inner();
            *bytes = new.to_ne_bytes();
            (old, new)
        }
        Width::Bits32 => {
            let [b0, b1, b2, b3, ..] = *bytes;
            let word = AtomicU32::new(u32::from_ne_bytes([b0, b1, b2, b3]));
            let old = apply_amo32(&word, op, a, b);
            let new = word.into_inner();
            bytes[..4].copy_from_slice(&new.to_ne_bytes());
            (old as u64, new as u64)
        }
    }
}

/// [`apply_amo`] on a 32-bit word: the operands are the low halves of the operand fields, the
/// integer minimum and maximum are signed 32-bit, the floating-point ones single precision.
pub fn apply_amo32(t: &AtomicU32, op: AmoOp, a: u64, b: u64) -> u32 {
    let (a, b) = (a as u32, b as u32);
    let fp = |x: u32, g: fn(f32, f32) -> f32| g(f32::from_bits(x), f32::from_bits(a)).to_bits();
    let next = |x: u32| match op {
        AmoOp::Add => x.wrapping_add(a),
        AmoOp::And => x & a,
        AmoOp::Or => x | a,
        AmoOp::Xor => x ^ a,
        AmoOp::Swap => a,
        AmoOp::CSwap => {
            if x == a {
                b
            } else {
                x
            }
        }
        AmoOp::AndXor => (x & a) ^ b,
        AmoOp::IMin => (x as i32).min(a as i32) as u32,
        AmoOp::IMax => (x as i32).max(a as i32) as u32,
        AmoOp::FpMin => fp(x, f32::min),
        AmoOp::FpMax => fp(x, f32::max),
        AmoOp::FpAdd => fp(x, |p, q| p + q),
    };
    t.fetch_update(Ordering::AcqRel, Ordering::Acquire, |x| Some(next(x))).unwrap_or_else(|x| x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amo_commands_decode_and_apply() {
        let t = AtomicU64::new(10);
        let Amo { op, fetching, width } = decode_amo(0x008).unwrap(); // FADD
        assert!(fetching && width == Width::Bits64);
        assert_eq!(apply_amo(&t, op, 5, 0), 10);
        let Amo { op, fetching, .. } = decode_amo(0x108).unwrap(); // ADD
        assert!(!fetching);
        apply_amo(&t, op, 1, 0);
        assert_eq!(t.load(Ordering::Relaxed), 16);
        let Amo { op, .. } = decode_amo(0x04b).unwrap(); // FCSWAP
        assert_eq!(apply_amo(&t, op, 16, 99), 16);
        assert_eq!(t.load(Ordering::Relaxed), 99);
        let Amo { op, .. } = decode_amo(0x14b).unwrap();
        apply_amo(&t, op, 1, 5); // comparand mismatch: unchanged
        assert_eq!(t.load(Ordering::Relaxed), 99);
        let Amo { op, .. } = decode_amo(0x069).unwrap(); // FAX cached
        apply_amo(&t, op, 0xf0, 0x0f);
        assert_eq!(t.load(Ordering::Relaxed), (99 & 0xf0) ^ 0x0f);
        let Amo { op, .. } = decode_amo(0x151).unwrap(); // IMIN
        apply_amo(&t, op, (-3i64) as u64, 0);
        assert_eq!(t.load(Ordering::Relaxed) as i64, -3);
        let Amo { op, .. } = decode_amo(0x15d).unwrap(); // FPADD
        t.store(1.5f64.to_bits(), Ordering::Relaxed);
        apply_amo(&t, op, 2.25f64.to_bits(), 0);
        assert_eq!(f64::from_bits(t.load(Ordering::Relaxed)), 3.75);
        assert!(decode_amo(0x0ff).is_none());
        assert!(decode_amo(0x355).is_none(), "32-bit forms have bit 0 clear");
        assert!(decode_amo(0x400).is_none());
    }

    #[test]
    fn thirty_two_bit_commands_work_on_the_low_halves() {
        let t = AtomicU32::new(10);
        let Amo { op, fetching, width } = decode_amo(0x254).unwrap(); // FIADD_S
        assert!(fetching && width == Width::Bits32);
        assert_eq!(apply_amo32(&t, op, 0xffff_ffff_0000_0005, 0), 10, "the high half is ignored");
        assert_eq!(t.load(Ordering::Relaxed), 15);
        let Amo { op, fetching, .. } = decode_amo(0x370).unwrap(); // IMIN_SC
        assert!(!fetching);
        apply_amo32(&t, op, (-2i32) as u32 as u64, 0);
        assert_eq!(t.load(Ordering::Relaxed) as i32, -2);
        let Amo { op, .. } = decode_amo(0x24a).unwrap(); // FCSWAP_S
        assert_eq!(apply_amo32(&t, op, (-2i32) as u32 as u64, 7), (-2i32) as u32);
        assert_eq!(t.load(Ordering::Relaxed), 7);
        let Amo { op, .. } = decode_amo(0x35c).unwrap(); // FPADD_S
        t.store(1.5f32.to_bits(), Ordering::Relaxed);
        apply_amo32(&t, op, 2.25f32.to_bits() as u64, 0);
        assert_eq!(f32::from_bits(t.load(Ordering::Relaxed)), 3.75);
        let Amo { op, .. } = decode_amo(0x27a).unwrap(); // FFPMAX_SC
        apply_amo32(&t, op, 1.0f32.to_bits() as u64, 0);
        assert_eq!(f32::from_bits(t.load(Ordering::Relaxed)), 3.75);
    }
}
