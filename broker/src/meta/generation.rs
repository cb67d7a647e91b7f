//! Where a change stands in a table's history, shared by the journal that
//! records changes and the persister that writes tables behind them.

/// A change's place in a table's history; on disk once the table's file
/// has been written at this generation or a later one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Generation(pub(super) u64);

impl Generation {
    /// The generation numbered `n` (tests).
    #[cfg(test)]
    pub(crate) fn at(n: u64) -> Self {
        Self(n)
    }
}
