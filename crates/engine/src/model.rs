//! The flit/packet cost model of De Sensi et al. (SC'19, Eq. 1-4).
//!
//! A message of `f` request flits in `p` packets takes about
//! `T = rounds(p) * L + f * (s + 1) * cycle` where `L` is the mean request-response latency,
//! `s` the stall ratio (stalled cycles per request flit) and `cycle` the NIC clock period.
//! `rounds(p) = ceil((p - 1 + 512) / 1024)`: the number of round trips a message exposes when at
//! most 1,024 packets may be outstanding, rounded to the nearest batch and never below one. We use
//! this integer form (the reference library's) rather than the paper's continuous `(p + 512)/1024`,
//! because it is what produced the paper's measurements and it keeps small messages at one
//! full latency instead of half of one.

/// Bytes of payload one Aries request packet carries.
pub const PACKET_BYTES: u64 = 64;
/// Payload bytes per flit: a PUT packet is 1 header flit and 4 payload flits.
pub const FLIT_BYTES: u64 = 16;
/// Packets a NIC may have outstanding at once.
pub const MAX_OUTSTANDING_PACKETS: u64 = 1024;
/// The NIC clock: 800 MHz.
pub const NIC_CYCLE_US: f64 = 1.25e-3;

/// Which way the data of a message travels, which decides its request flits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Transfer {
    /// Data travels in the requests (PUT, AMO, CQ write, SMSG).
    Put,
    /// Requests are one flit each; the data comes back in the responses.
    Get,
}

impl Transfer {
    /// How a uGNI post of this type moves its data: GET posts bring it back in the responses,
    /// every other post (PUTs, AMOs, CQ writes) carries it in the requests.
    pub const fn of_post_type(post_type: aar_abi::GniPostType) -> Transfer {
        if aar_abi::post_type_is_get(post_type) {
            Transfer::Get
        } else {
            Transfer::Put
        }
    }
}

/// Unit of the cumulative latency counter, whose increment rate is programmable on Aries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum LatencyUnit {
    #[cfg_attr(feature = "serde", serde(rename = "us"))]
    /// Microseconds, as the paper and the reference library read it.
    Microseconds,
    #[cfg_attr(feature = "serde", serde(rename = "cycles"))]
    /// NIC clock cycles (800 MHz).
    Cycles,
}

impl LatencyUnit {
    /// A latency in this unit, in microseconds.
    #[inline]
    pub fn to_us(self, value: f64) -> f64 {
        match self {
            Self::Microseconds => value,
            Self::Cycles => value * NIC_CYCLE_US,
        }
    }
    /// The name `AAR_LATENCY_UNIT` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Microseconds => "us",
            Self::Cycles => "cycles",
        }
    }
}

impl core::str::FromStr for LatencyUnit {
    type Err = String;

    /// `us` (also `usec`, `microseconds`) or `cycles` (also `cycle`), any case: the names
    /// [`LatencyUnit::name`] gives and their long forms.
    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "us" | "usec" | "microseconds" => Ok(Self::Microseconds),
            "cycles" | "cycle" => Ok(Self::Cycles),
            _ => Err(format!("\"{}\" is not a latency unit (us or cycles)", text.trim().escape_debug())),
        }
    }
}

/// Packets of a message; a zero-byte post (a CQ write, a flag) still sends one.
#[inline]
pub const fn packets(bytes: u64) -> u64 {
    if bytes == 0 {
        1
    } else {
        bytes.div_ceil(PACKET_BYTES)
    }
}

/// Flits that carry `bytes` of payload (no header).
#[inline]
const fn payload_flits(bytes: u64) -> u64 {
    bytes.div_ceil(FLIT_BYTES)
}

/// Request flits of a message: for a PUT one header flit per packet plus one flit per 16 payload
/// bytes (5 per full packet); for a GET one flit per request packet. The sum over the message's
/// packets of [`packet_request_flits`].
#[inline]
pub const fn request_flits(bytes: u64, transfer: Transfer) -> u64 {
    match transfer {
        Transfer::Put => packets(bytes) + payload_flits(bytes),
        Transfer::Get => packets(bytes),
    }
}

/// Payload bytes of packet `seq` (from 0) of a message of `bytes`: [`PACKET_BYTES`] but for the
/// last packet, which carries the rest (nothing for a zero-byte post).
pub const fn packet_payload(bytes: u64, seq: u64) -> u64 {
    let rest = bytes.saturating_sub(seq.saturating_mul(PACKET_BYTES));
    if rest < PACKET_BYTES {
        rest
    } else {
        PACKET_BYTES
    }
}

/// Request flits of packet `seq` of a message, as the network carries it: for a PUT one header
/// flit and its payload flits, for a GET one flit.
pub const fn packet_request_flits(bytes: u64, seq: u64, transfer: Transfer) -> u64 {
    match transfer {
        Transfer::Put => 1 + payload_flits(packet_payload(bytes, seq)),
        Transfer::Get => 1,
    }
}

/// Response flits of packet `seq` of a message: a PUT is acknowledged by one flit, a GET's data
/// comes back in one header flit and the payload flits.
pub const fn packet_response_flits(bytes: u64, seq: u64, transfer: Transfer) -> u64 {
    match transfer {
        Transfer::Put => 1,
        Transfer::Get => 1 + payload_flits(packet_payload(bytes, seq)),
    }
}

/// Latency round trips a message of `p` packets exposes: `ceil((p - 1 + 512) / 1024)`.
#[inline]
pub const fn latency_rounds(p: u64) -> u64 {
    // Split so that no packet count can overflow: (p - 1) = q * 1024 + r.
    let before = if p == 0 { 0 } else { p - 1 };
    let (q, r) = (before / MAX_OUTSTANDING_PACKETS, before % MAX_OUTSTANDING_PACKETS);
    q + (r + MAX_OUTSTANDING_PACKETS / 2).div_ceil(MAX_OUTSTANDING_PACKETS)
}

/// What one counter window says about the network: mean latency per response (µs) and stall
/// ratio (stalled cycles per request flit). Both finite and non-negative by construction.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Window {
    /// Mean request-response latency, µs.
    pub latency_us: f64,
    /// Stalled NIC cycles per request flit.
    pub stall_ratio: f64,
}

/// Estimated time of a message in µs (Eq. 1).
#[inline]
pub fn message_time_us(flits: u64, packets: u64, w: Window) -> f64 {
    // The constants are loads from `.rodata`, lines that libaar.so's sends evict, but loads that
    // depend on nothing and overlap with the rest; built from immediates (`black_box`: a store
    // and a load in the arithmetic's chain) they cost libaar.so's read path 3 to 5 ns more.
    latency_rounds(packets) as f64 * w.latency_us + flits as f64 * (w.stall_ratio + 1.0) * NIC_CYCLE_US
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_units_round_trip_and_accept_long_forms() {
        for u in [LatencyUnit::Microseconds, LatencyUnit::Cycles] {
            assert_eq!(u.name().parse::<LatencyUnit>(), Ok(u));
        }
        assert_eq!(" USEC ".parse::<LatencyUnit>(), Ok(LatencyUnit::Microseconds));
        assert_eq!("Cycle".parse::<LatencyUnit>(), Ok(LatencyUnit::Cycles));
        for bad in ["", "ns", "u s", "cyclesé"] {
            assert!(bad.parse::<LatencyUnit>().is_err(), "{bad}");
        }
    }

    #[test]
    fn transfers_of_post_types() {
        use aar_abi::*;
        for t in [GNI_POST_RDMA_GET, GNI_POST_FMA_GET, GNI_POST_FMA_GET_W_FLAG] {
            assert_eq!(Transfer::of_post_type(t), Transfer::Get);
        }
        for t in [GNI_POST_RDMA_PUT, GNI_POST_FMA_PUT, GNI_POST_AMO, GNI_POST_CQWRITE, 0, 99] {
            assert_eq!(Transfer::of_post_type(t), Transfer::Put);
        }
    }

    #[test]
    fn packetization() {
        assert_eq!(packets(0), 1);
        assert_eq!(packets(1), 1);
        assert_eq!(packets(64), 1);
        assert_eq!(packets(65), 2);
        assert_eq!(packets(4 << 20), 65536);
        assert_eq!(request_flits(64, Transfer::Put), 5, "1 header + 4 payload flits");
        assert_eq!(request_flits(64 * 1024, Transfer::Put), 5 * 1024);
        assert_eq!(request_flits(8, Transfer::Put), 2);
        assert_eq!(request_flits(0, Transfer::Put), 1);
        assert_eq!(request_flits(64 * 1024, Transfer::Get), 1024);
        assert_eq!(request_flits(u64::MAX, Transfer::Get), u64::MAX.div_ceil(64));
    }

    #[test]
    fn packets_add_up_to_the_message() {
        // Not the 16,385 packets of 1 MiB under Miri, where they take 12 s: it looks for undefined
        // behaviour, which the size does not change.
        let sizes = [0, 1, 8, 15, 16, 17, 63, 64, 65, 1000, 4096, 4097, (1 << 20) + 40];
        for bytes in sizes.into_iter().filter(|&b| !cfg!(miri) || b < 1 << 20) {
            let p = packets(bytes);
            for transfer in [Transfer::Put, Transfer::Get] {
                let per_packet: u64 = (0..p).map(|seq| packet_request_flits(bytes, seq, transfer)).sum();
                assert_eq!(per_packet, request_flits(bytes, transfer), "{bytes} B {transfer:?}");
            }
            assert_eq!((0..p).map(|seq| packet_payload(bytes, seq)).sum::<u64>(), bytes);
        }
        // 1000 B: 15 full packets and one of 40 B (1 header + 3 payload flits)
        assert_eq!(packet_request_flits(1000, 15, Transfer::Put), 4);
        assert_eq!(packet_request_flits(1000, 0, Transfer::Put), 5);
        assert_eq!(packet_response_flits(1000, 0, Transfer::Put), 1);
        assert_eq!(packet_response_flits(1000, 15, Transfer::Get), 4);
        assert_eq!(packet_request_flits(0, 0, Transfer::Put), 1, "a zero-byte PUT is its header");
        assert_eq!(packet_payload(u64::MAX, u64::MAX), 0);
    }

    #[test]
    fn rounds_follow_the_reference_formula() {
        // ceil((p - 1 + 512) / 1024) by hand.
        for (p, r) in [(1, 1), (512, 1), (513, 1), (514, 2), (1024, 2), (1537, 2), (1538, 3), (65536, 65)] {
            assert_eq!(latency_rounds(p), r, "p = {p}");
        }
        assert_eq!(latency_rounds(0), 1);
        assert_eq!(latency_rounds(u64::MAX), (u64::MAX - 1) / 1024 + 2, "r = 1022 rounds up");
    }

    #[test]
    fn message_time_by_hand() {
        // 64 KiB PUT: p = 1024, f = 5120, rounds = 2; L = 2 us, s = 40 cycles per flit.
        let t = message_time_us(5120, 1024, Window { latency_us: 2.0, stall_ratio: 40.0 });
        assert!((t - (2.0 * 2.0 + 5120.0 * 41.0 * 1.25e-3)).abs() < 1e-9, "{t}");
        assert!((LatencyUnit::Cycles.to_us(800.0) - 1.0).abs() < 1e-12);
    }
}
