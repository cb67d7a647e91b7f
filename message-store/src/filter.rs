//! Which messages a pull returns.

use std::collections::HashSet;
use std::sync::Arc;

use rmq_common::message::java_string_hash;
use rmq_common::message::record::RecordView;
use rmq_common::sql92::Sql92Filter;

/// Decides per consume-queue unit (by tagsCode) and per record.
pub trait MessageFilter: Send + Sync {
    /// Whether a unit with this tagsCode may match.
    fn matches_tags_code(&self, tags_code: i64) -> bool;
    /// Whether the record itself matches (after the unit matched).
    fn matches_record(&self, _record: &RecordView<'_>) -> bool {
        true
    }
}

/// A tag subscription: `*` (everything) or `TagA || TagB`, matched on the
/// tags' Java hash codes as RocketMQ's consume queue does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagFilter {
    codes: Option<HashSet<i64>>,
}

impl TagFilter {
    /// Matches every message.
    pub fn all() -> Self {
        Self { codes: None }
    }

    /// Parses a subscription expression (`*`, empty, or tags joined by `||`).
    pub fn parse(expression: &str) -> Self {
        let expr = expression.trim();
        if expr.is_empty() || expr == "*" {
            return Self::all();
        }
        let codes = expr
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| i64::from(java_string_hash(t)))
            .collect();
        Self { codes: Some(codes) }
    }

    /// Matches units whose tagsCode is one of `codes` (what clients send).
    pub fn from_codes(codes: impl IntoIterator<Item = i64>) -> Self {
        Self {
            codes: Some(codes.into_iter().collect()),
        }
    }
}

impl MessageFilter for TagFilter {
    fn matches_tags_code(&self, tags_code: i64) -> bool {
        self.codes.as_ref().is_none_or(|c| c.contains(&tags_code))
    }
}

/// A consumer's subscription: tags matched on the consume queue's tagsCode,
/// or an SQL92 expression over the message's properties. Neither backend
/// keeps a property bitmap in its units (RocketMQ's optional bloom filter),
/// so every unit may match an SQL92 filter and the record decides.
#[derive(Debug, Clone)]
pub enum SubscriptionFilter {
    /// `*` or `TagA || TagB`.
    Tag(TagFilter),
    /// An SQL92 expression (`enablePropertyFilter`).
    Sql92(Arc<Sql92Filter>),
}

impl MessageFilter for SubscriptionFilter {
    fn matches_tags_code(&self, tags_code: i64) -> bool {
        match self {
            Self::Tag(t) => t.matches_tags_code(tags_code),
            Self::Sql92(_) => true,
        }
    }

    fn matches_record(&self, record: &RecordView<'_>) -> bool {
        match self {
            Self::Tag(_) => true,
            Self::Sql92(f) => {
                let props = record.properties();
                f.matches(&|name| props.get(name))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_expressions() {
        assert!(TagFilter::parse("*").matches_tags_code(123));
        assert!(TagFilter::parse("").matches_tags_code(0));
        let f = TagFilter::parse("TagA || TagB");
        assert!(f.matches_tags_code(2_598_919));
        assert!(f.matches_tags_code(2_598_920));
        assert!(!f.matches_tags_code(0));
        assert_eq!(TagFilter::from_codes([1]), TagFilter::from_codes([1]));
    }
}
