//! Routing modes and the `dlvr_mode` field of a uGNI post descriptor.

use aar_abi::{
    GNI_DLVMODE_ADAPTIVE0, GNI_DLVMODE_ADAPTIVE1, GNI_DLVMODE_ADAPTIVE2, GNI_DLVMODE_ADAPTIVE3,
    GNI_DLVMODE_ROUTING_MASK,
};

/// The adaptive routing modes of Aries, the only ones the library ever chooses.
/// Ordered by bias towards minimal paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum RoutingMode {
    /// No bias: spreads packets over non-minimal paths.
    #[cfg_attr(feature = "serde", serde(rename = "ADAPTIVE0"))]
    Adaptive0,
    /// Bias towards minimal that grows as the packet nears its destination (Cray's default in
    /// MPI_Alltoall).
    #[cfg_attr(feature = "serde", serde(rename = "ADAPTIVE1"))]
    Adaptive1,
    /// Low bias towards minimal paths.
    #[cfg_attr(feature = "serde", serde(rename = "ADAPTIVE2"))]
    Adaptive2,
    /// High bias towards minimal paths ("High Bias" in the paper).
    #[cfg_attr(feature = "serde", serde(rename = "ADAPTIVE3"))]
    Adaptive3,
}

/// The low byte of `dlvr_mode` selects the routing; the bits above it are flags
/// (e.g. `GNI_DLVMODE_ORDERED_TAIL` 0x100) that are always preserved.
pub const ROUTING_BITS: u16 = GNI_DLVMODE_ROUTING_MASK;

impl RoutingMode {
    /// Every mode, in order of bias (and of [`RoutingMode::index`]).
    pub const ALL: [RoutingMode; 4] = [Self::Adaptive0, Self::Adaptive1, Self::Adaptive2, Self::Adaptive3];

    /// The `GNI_DLVMODE_ADAPTIVEn` value.
    pub const fn dlvr_bits(self) -> u16 {
        match self {
            Self::Adaptive0 => GNI_DLVMODE_ADAPTIVE0,
            Self::Adaptive1 => GNI_DLVMODE_ADAPTIVE1,
            Self::Adaptive2 => GNI_DLVMODE_ADAPTIVE2,
            Self::Adaptive3 => GNI_DLVMODE_ADAPTIVE3,
        }
    }

    /// uGNI's spelling, used in traces, records and messages.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Adaptive0 => "ADAPTIVE0",
            Self::Adaptive1 => "ADAPTIVE1",
            Self::Adaptive2 => "ADAPTIVE2",
            Self::Adaptive3 => "ADAPTIVE3",
        }
    }

    /// Position in [`RoutingMode::ALL`], for per-mode tables.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The adaptive mode a raw routing byte encodes, if it is one.
    pub const fn from_routing_bits(bits: u16) -> Option<Self> {
        match bits & ROUTING_BITS {
            GNI_DLVMODE_ADAPTIVE0 => Some(Self::Adaptive0),
            GNI_DLVMODE_ADAPTIVE1 => Some(Self::Adaptive1),
            GNI_DLVMODE_ADAPTIVE2 => Some(Self::Adaptive2),
            GNI_DLVMODE_ADAPTIVE3 => Some(Self::Adaptive3),
            _ => None,
        }
    }
}

impl core::str::FromStr for RoutingMode {
    type Err = String;

    /// Accepts the spellings users already know: uGNI's `ADAPTIVE3`, Cray MPICH's `ADAPTIVE_3`
    /// (`MPICH_GNI_ROUTING_MODE`), with or without the `GNI_DLVMODE_` prefix, any case.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("\"{}\" is not an adaptive routing mode", text.trim().escape_debug());
        // Bytes, not string slices: arbitrary input must never be cut inside a UTF-8 character.
        let b = text.trim().as_bytes();
        let b = match b.split_at_checked(12) {
            Some((prefix, rest)) if prefix.eq_ignore_ascii_case(b"GNI_DLVMODE_") => rest,
            _ => b,
        };
        let (name, digit) = b.split_last().map(|(d, name)| (name, *d)).ok_or_else(bad)?;
        if !name.eq_ignore_ascii_case(b"ADAPTIVE") && !name.eq_ignore_ascii_case(b"ADAPTIVE_") {
            return Err(bad());
        }
        match digit {
            b'0' => Ok(Self::Adaptive0),
            b'1' => Ok(Self::Adaptive1),
            b'2' => Ok(Self::Adaptive2),
            b'3' => Ok(Self::Adaptive3),
            _ => Err(bad()),
        }
    }
}

impl core::fmt::Display for RoutingMode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// The adaptive mode the caller asked for, or `None` when the caller asked for a non-adaptive
/// routing (IN_ORDER, MIN_HASH, NMIN_HASH, NO_ADAPT...), which carries an ordering or
/// determinism guarantee and must never be changed.
pub const fn requested_mode(dlvr_mode: u16) -> Option<RoutingMode> {
    RoutingMode::from_routing_bits(dlvr_mode)
}

/// `dlvr_mode` with its routing byte replaced by `mode` and every flag bit kept.
pub const fn with_mode(dlvr_mode: u16, mode: RoutingMode) -> u16 {
    (dlvr_mode & !ROUTING_BITS) | mode.dlvr_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_parse() {
        for (text, mode) in [
            ("ADAPTIVE3", RoutingMode::Adaptive3),
            ("ADAPTIVE_3", RoutingMode::Adaptive3),
            ("adaptive_0", RoutingMode::Adaptive0),
            ("GNI_DLVMODE_ADAPTIVE1", RoutingMode::Adaptive1),
            (" Adaptive2 ", RoutingMode::Adaptive2),
        ] {
            assert_eq!(text.parse::<RoutingMode>().ok(), Some(mode), "{text}");
        }
        for bad in [
            "",
            "ADAPTIVE",
            "ADAPTIVE4",
            "ADAPTIVE_",
            "IN_ORDER",
            "MIN_HASH",
            "3",
            "ADAPTIVE__3",
            "ADAPTIVE33",
            "é",
            "ADAPTIVEé",
            "GNI_DLVMODEé3",
            "éééééééééééé3",
        ] {
            assert_eq!(bad.parse::<RoutingMode>().ok(), None, "{bad}");
        }
    }

    #[test]
    fn names_round_trip() {
        for m in RoutingMode::ALL {
            assert_eq!(m.name().parse::<RoutingMode>().ok(), Some(m));
            assert_eq!(RoutingMode::from_routing_bits(m.dlvr_bits()), Some(m));
            assert_eq!(RoutingMode::ALL[m.index()], m);
        }
    }

    #[test]
    fn non_adaptive_requests_are_recognised() {
        for raw in [0x0003u16, 0x0008, 0x0010, 0x0001, 0x0002, 0x0004, 0x0060, 0x00a0, 0x0103] {
            assert_eq!(requested_mode(raw), None, "{raw:#x}");
        }
        assert_eq!(requested_mode(0x0100), Some(RoutingMode::Adaptive0), "ORDERED_TAIL is a flag");
        assert_eq!(requested_mode(0x0180), Some(RoutingMode::Adaptive3));
    }

    #[test]
    fn rewriting_keeps_flag_bits() {
        assert_eq!(with_mode(0x0100, RoutingMode::Adaptive3), 0x0180);
        assert_eq!(with_mode(0xff80, RoutingMode::Adaptive0), 0xff00);
        assert_eq!(with_mode(0x0020, RoutingMode::Adaptive2), 0x0040);
    }
}
