//! Booleans as users write them: the shim's `AAR_*` switches and the emulator's settings read
//! them with this one parser.

use core::str::FromStr;

/// A boolean as users write it: `1/0, true/false, yes/no, y/n, on/off`, any case (Cray's tools
/// and CMake write `Y`/`N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch(pub bool);

impl Switch {
    /// The spellings [`Switch`] takes, as messages list them.
    pub const SPELLINGS: &str = "1/0, true/false, yes/no, y/n or on/off";
}

impl FromStr for Switch {
    type Err = String;
    fn from_str(v: &str) -> Result<Self, String> {
        match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "y" | "on" => Ok(Self(true)),
            "0" | "false" | "no" | "n" | "off" => Ok(Self(false)),
            _ => Err(format!("expected {}", Self::SPELLINGS)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        for (t, b) in [
            ("1", true),
            ("ON", true),
            (" yes ", true),
            ("True", true),
            ("y", true),
            ("Y", true),
            ("0", false),
            ("off", false),
            ("No", false),
            ("n", false),
            (" N ", false),
        ] {
            assert_eq!(t.parse::<Switch>(), Ok(Switch(b)), "{t}");
        }
        for bad in ["", "2", "ye", "yy", "t", "f", "nope", "enable", "é"] {
            assert!(bad.parse::<Switch>().is_err(), "{bad}");
        }
    }
}
