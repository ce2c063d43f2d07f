//! Atomic memory operations (`GNI_POST_AMO`, `GNI_POST_AMO_W_FLAG`): the `amo_cmd` values the
//! emulator performs, done with atomics on the remote word.

use std::sync::atomic::{AtomicU64, Ordering};

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

/// `gni_fma_cmd_type_t` → (operation, fetches the old value). The 32-bit-operand (`_S`) forms are
/// not emulated (None → GNI_RC_ILLEGAL_OP); cached (`_C`) forms behave like the plain ones.
pub fn decode_amo(cmd: u32) -> Option<(AmoOp, bool)> {
    if cmd & !0x1ff != 0 {
        return None;
    }
    let fetching = cmd & 0x100 == 0;
    let base = cmd & 0xff;
    let op = match base {
        0x08 | 0x18 => AmoOp::Add,
        0x09 | 0x19 => AmoOp::And,
        0x0a | 0x1a => AmoOp::Or,
        0x0b | 0x1b => AmoOp::Xor,
        0x0c | 0x1c => AmoOp::AndXor,
        0x0d | 0x1d => AmoOp::CSwap,
        0x40..=0x7f => match base & !0x20 {
            0x41 => AmoOp::And,
            0x43 => AmoOp::Or,
            0x45 => AmoOp::Xor,
            0x47 => AmoOp::Swap,
            0x49 => AmoOp::AndXor,
            0x4b => AmoOp::CSwap,
            0x51 => AmoOp::IMin,
            0x53 => AmoOp::IMax,
            0x55 => AmoOp::Add,
            0x59 => AmoOp::FpMin,
            0x5b => AmoOp::FpMax,
            0x5d => AmoOp::FpAdd,
            _ => return None,
        },
        _ => return None,
    };
    Some((op, fetching))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amo_commands_decode_and_apply() {
        let t = AtomicU64::new(10);
        let (op, fetch) = decode_amo(0x008).unwrap(); // FADD
        assert!(fetch);
        assert_eq!(apply_amo(&t, op, 5, 0), 10);
        let (op, fetch) = decode_amo(0x108).unwrap(); // ADD
        assert!(!fetch);
        apply_amo(&t, op, 1, 0);
        assert_eq!(t.load(Ordering::Relaxed), 16);
        let (op, _) = decode_amo(0x04b).unwrap(); // FCSWAP
        assert_eq!(apply_amo(&t, op, 16, 99), 16);
        assert_eq!(t.load(Ordering::Relaxed), 99);
        let (op, _) = decode_amo(0x14b).unwrap();
        apply_amo(&t, op, 1, 5); // comparand mismatch: unchanged
        assert_eq!(t.load(Ordering::Relaxed), 99);
        let (op, _) = decode_amo(0x069).unwrap(); // FAX cached
        apply_amo(&t, op, 0xf0, 0x0f);
        assert_eq!(t.load(Ordering::Relaxed), (99 & 0xf0) ^ 0x0f);
        let (op, _) = decode_amo(0x151).unwrap(); // IMIN
        apply_amo(&t, op, (-3i64) as u64, 0);
        assert_eq!(t.load(Ordering::Relaxed) as i64, -3);
        let (op, _) = decode_amo(0x15d).unwrap(); // FPADD
        t.store(1.5f64.to_bits(), Ordering::Relaxed);
        apply_amo(&t, op, 2.25f64.to_bits(), 0);
        assert_eq!(f64::from_bits(t.load(Ordering::Relaxed)), 3.75);
        assert!(decode_amo(0x354).is_none(), "32-bit operand forms are not emulated");
        assert!(decode_amo(0x0ff).is_none());
    }
}
