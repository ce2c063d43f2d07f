//! Where a message goes, as far as routing is concerned: the destination's class relative to the
//! sender on a Dragonfly. The best routing mode differs between a destination on the same router,
//! one elsewhere in the sender's group (a minimal path of one or two local hops, rarely worth a
//! detour) and one in another group (minimal paths share few global links), so the `steady`
//! policy keeps its observations per class.

/// A node's place in a Dragonfly: its group and its router. Routers may be numbered per group
/// or machine-wide; [`DestinationClass::between`] compares the group first, so either works.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NodeLocation {
    /// Dragonfly group (on Aries: two cabinets, 96 routers).
    pub group: u32,
    /// Router (on Aries: one blade of 4 nodes).
    pub router: u32,
}

/// The destination of a message relative to its sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum DestinationClass {
    /// On the sender's router (the same blade): no network link at all.
    SameRouter,
    /// Another router of the sender's group: local links only.
    SameGroup,
    /// Another group: at least one global link.
    OtherGroup,
    /// No topology mapping is available (or the destination is not a NIC address it knows).
    Unknown,
}

impl DestinationClass {
    /// Every class, in the order of [`DestinationClass::index`].
    pub const ALL: [DestinationClass; 4] = [Self::SameRouter, Self::SameGroup, Self::OtherGroup, Self::Unknown];

    /// The class of a message from `from` to `to`.
    pub const fn between(from: NodeLocation, to: NodeLocation) -> DestinationClass {
        if from.group != to.group {
            Self::OtherGroup
        } else if from.router != to.router {
            Self::SameGroup
        } else {
            Self::SameRouter
        }
    }

    /// Position in [`DestinationClass::ALL`], for per-class tables.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The name records and traces use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::SameRouter => "same-router",
            Self::SameGroup => "same-group",
            Self::OtherGroup => "other-group",
            Self::Unknown => "unknown",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_by_hand() {
        let at = |group, router| NodeLocation { group, router };
        assert_eq!(DestinationClass::between(at(0, 3), at(0, 3)), DestinationClass::SameRouter);
        assert_eq!(DestinationClass::between(at(0, 3), at(0, 4)), DestinationClass::SameGroup);
        assert_eq!(DestinationClass::between(at(0, 3), at(1, 3)), DestinationClass::OtherGroup, "per-group numbers");
        assert_eq!(DestinationClass::between(at(2, 200), at(1, 100)), DestinationClass::OtherGroup);
        for c in DestinationClass::ALL {
            assert_eq!(DestinationClass::ALL[c.index()], c);
        }
    }
}
