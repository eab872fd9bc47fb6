//! A session's taint: the highest label it has been shown (docs/spec.md §3.2).

use std::fmt;

use proto::DataClass;

/// The label of one tool result: how private it is and whether it came from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Label {
    pub class: DataClass,
    pub untrusted: bool,
}

impl Label {
    /// `(public, trusted)`: the label of nothing read yet.
    pub const PUBLIC: Self = Self::new(DataClass::Public, false);

    /// A label of `class`, trusted or not.
    pub const fn new(class: DataClass, untrusted: bool) -> Self {
        Self { class, untrusted }
    }

    /// The one join of two labels (docs/spec.md §3.2): the higher class, untrusted if either
    /// is. Every place a label floats up — the session's taint, the runner's floor, a box's
    /// float, a call's label — raises by this, so the untrusted bit travels wherever the
    /// class does.
    #[must_use]
    pub fn join(self, other: Label) -> Label {
        Label::new(
            self.class.max(other.class),
            self.untrusted || other.untrusted,
        )
    }

    /// Whether this label is at or below `other` in both parts: what it labels may go where
    /// `other` labels (no class above, nothing untrusted where `other` is trusted).
    pub fn within(self, other: Label) -> bool {
        self.class <= other.class && (!self.untrusted || other.untrusted)
    }

    /// This label with its class raised to at least `class`.
    #[must_use]
    pub fn at_least(self, class: DataClass) -> Label {
        Label::new(self.class.max(class), self.untrusted)
    }
}

impl fmt::Display for Label {
    /// `internal` or `internal, untrusted`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.untrusted {
            write!(f, "{}, untrusted", self.class)
        } else {
            write!(f, "{}", self.class)
        }
    }
}

/// A session's taint: `(class, untrusted)`, starting at `(public, false)`.
///
/// The fields are private so that nothing in a running gate can lower a taint by
/// accident: the only way up is [`Taint::absorb`], and there is no way down. (An operator's
/// reset makes a fresh session taint with [`Taint::default`]; a taint read back from disk
/// or given on the command line is made with [`Taint::new`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Taint {
    class: DataClass,
    untrusted: bool,
}

impl Taint {
    /// The taint of a fresh session: `(public, false)`.
    pub const CLEAN: Self = Self {
        class: DataClass::Public,
        untrusted: false,
    };

    /// A taint with these values: as stored on disk, or as an operator asks about it
    /// (`boxmaker check --taint`).
    pub const fn new(class: DataClass, untrusted: bool) -> Self {
        Self { class, untrusted }
    }

    /// The highest class the session has been shown.
    pub const fn class(self) -> DataClass {
        self.class
    }

    /// Whether the session has been shown anything untrusted.
    pub const fn untrusted(self) -> bool {
        self.untrusted
    }

    /// Raises the taint by what a result (or a failure's floor label) carried:
    /// `class := max(class, label.class)`, `untrusted |= label.untrusted`. Never lowers it.
    pub fn absorb(&mut self, label: Label) {
        let l = self.label().join(label);
        self.class = l.class;
        self.untrusted = l.untrusted;
    }

    /// The taint as a label (what every answer of the session is at least, for code that
    /// can read the whole session: docs/spec.md §3.4).
    pub const fn label(self) -> Label {
        Label::new(self.class, self.untrusted)
    }
}

impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.untrusted {
            write!(f, "{}, untrusted", self.class)
        } else {
            write!(f, "{}, trusted", self.class)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_taint_starts_public_and_trusted() {
        assert_eq!(Taint::default(), Taint::new(DataClass::Public, false));
        assert_eq!(Taint::CLEAN, Taint::default());
    }

    #[test]
    fn test_label_join_is_the_higher_class_and_untrusted_if_either_is() {
        let a = Label::new(DataClass::Confidential, false);
        let b = Label::new(DataClass::Public, true);
        assert_eq!(a.join(b), Label::new(DataClass::Confidential, true));
        assert_eq!(a.join(b), b.join(a));
        assert_eq!(Label::PUBLIC.join(a), a);
        assert!(Label::PUBLIC.within(a) && Label::PUBLIC.within(b));
        assert!(
            !b.within(a),
            "untrusted is not within a trusted label of any class"
        );
        assert!(!a.within(b), "confidential is not within public");
        assert!(a.within(a.join(b)) && b.within(a.join(b)));
    }

    #[test]
    fn test_taint_absorb_raises_and_never_lowers() {
        let mut t = Taint::default();
        t.absorb(Label::new(DataClass::Confidential, false));
        assert_eq!(t.class(), DataClass::Confidential);
        t.absorb(Label::new(DataClass::Public, true));
        assert_eq!(t.class(), DataClass::Confidential);
        assert!(t.untrusted());
        t.absorb(Label::new(DataClass::Internal, false));
        assert_eq!(t, Taint::new(DataClass::Confidential, true));
    }
}
