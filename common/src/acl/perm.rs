//! Permissions of plain ACL: DENY 1, ANY 2, PUB 4, SUB 8, as strings
//! `DENY`, `PUB`, `SUB`, `PUB|SUB` (or `SUB|PUB`).

/// A set of permission bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Perm(pub u8);

impl Perm {
    /// Nothing, whatever else is set.
    pub const DENY: Self = Self(1);
    /// Either PUB or SUB will do (a needed permission only).
    pub const ANY: Self = Self(2);
    /// Send to a topic.
    pub const PUB: Self = Self(4);
    /// Read a topic, or consume as a group.
    pub const SUB: Self = Self(8);

    /// A permission string of the file. Unknown strings are DENY, as in
    /// RocketMQ; the second value says the string was not one of them.
    pub fn parse(s: &str) -> (Self, bool) {
        match s.trim() {
            "PUB" => (Self::PUB, true),
            "SUB" => (Self::SUB, true),
            "PUB|SUB" | "SUB|PUB" => (Self(Self::PUB.0 | Self::SUB.0), true),
            "DENY" => (Self::DENY, true),
            _ => (Self::DENY, false),
        }
    }

    /// Whether owning `self` grants `needed` (RocketMQ's checkPermission:
    /// DENY wins; ANY wants PUB or SUB; otherwise any common bit).
    pub fn grants(self, needed: Self) -> bool {
        if self.0 & Self::DENY.0 != 0 {
            return false;
        }
        if needed.0 & Self::ANY.0 != 0 {
            return self.0 & (Self::PUB.0 | Self::SUB.0) != 0;
        }
        needed.0 & self.0 != 0
    }

    /// The permission's name as the file writes it.
    pub fn name(self) -> &'static str {
        match self.0 {
            4 => "PUB",
            8 => "SUB",
            12 => "PUB|SUB",
            2 => "ANY",
            _ => "DENY",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_grants_are_rocketmqs() {
        assert_eq!(Perm::parse(" PUB|SUB "), (Perm(12), true));
        assert_eq!(Perm::parse("SUB|PUB").0, Perm(12));
        assert_eq!(Perm::parse("ANY"), (Perm::DENY, false));
        assert!(Perm(12).grants(Perm::PUB) && Perm(12).grants(Perm::SUB));
        assert!(!Perm::SUB.grants(Perm::PUB));
        assert!(Perm::SUB.grants(Perm::ANY));
        assert!(!Perm::DENY.grants(Perm::ANY));
        assert!(!Perm(Perm::DENY.0 | Perm::PUB.0).grants(Perm::PUB));
    }
}
