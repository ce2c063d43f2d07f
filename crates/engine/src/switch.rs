//! Booleans as users write them: the shim's `AAR_*` switches and the emulator's settings read
//! them with this one parser.

use core::str::FromStr;

/// A boolean as users write it: `1/0, true/false, yes/no, on/off`, any case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch(pub bool);

impl FromStr for Switch {
    type Err = String;
    fn from_str(v: &str) -> Result<Self, String> {
        match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(Self(true)),
            "0" | "false" | "no" | "off" => Ok(Self(false)),
            _ => Err("expected 1/0, true/false, yes/no or on/off".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        for (t, b) in
            [("1", true), ("ON", true), (" yes ", true), ("True", true), ("0", false), ("off", false), ("No", false)]
        {
            assert_eq!(t.parse::<Switch>(), Ok(Switch(b)), "{t}");
        }
        for bad in ["", "2", "y", "enable", "é"] {
            assert!(bad.parse::<Switch>().is_err(), "{bad}");
        }
    }
}
