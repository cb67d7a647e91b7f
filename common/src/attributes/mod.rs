//! RocketMQ 5.x attributes of topics (and, in 5.3.3, no attribute of
//! groups): the `+key=value,-key` text an admin sends, the table of known
//! attributes with their allowed values, and how a change applies to what
//! a topic has. The error texts are Java's (`AttributeParser`,
//! `AttributeUtil`, `EnumAttribute`, `LongRangeAttribute`), as a 5.x broker
//! answers them in the remark.

mod message_type;
mod parse;

pub use message_type::{TopicMessageType, MESSAGE_TYPE};
pub use parse::{alter, parse_to_map};

/// Why an attribute change is refused; the message is Java's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttributeError {
    /// An item with `=` whose key has no `+`.
    #[error("add/alter attribute format is wrong: {0}")]
    AddFormat(String),
    /// An item without `=` that has no `-`.
    #[error("delete attribute format is wrong: {0}")]
    DeleteFormat(String),
    /// An item with `=` and nothing after it (Java fails on the missing
    /// value with an index error).
    #[error("add/alter attribute has no value: {0}")]
    NoValue(String),
    /// The same item twice.
    #[error("key duplication: {0}")]
    Duplicate(String),
    /// A key that is empty or holds `+` or `-` once its sign is cut.
    #[error("kv string format wrong.")]
    KeyFormat,
    /// The same key twice (with different signs).
    #[error("alter duplication key. key: {0}")]
    AlterDuplicate(String),
    /// A `-key` while creating.
    #[error("only add attribute is supported while creating topic. key: {0}")]
    OnlyAddOnCreate(String),
    /// A `-key` for a key the topic does not have.
    #[error("attempt to delete a nonexistent key: {0}")]
    DeleteMissing(String),
    /// A key without a sign while updating.
    #[error("wrong format key: {0}")]
    NoSign(String),
    /// Not a known attribute.
    #[error("unsupported key: {0}")]
    Unsupported(String),
    /// Set when the topic was made, never changed afterwards.
    #[error("attempt to update an unchangeable attribute. key: {0}")]
    Unchangeable(String),
    /// An enum attribute's value outside its set.
    #[error("value is not in set: [{}]", .0.join(", "))]
    NotInSet(Vec<&'static str>),
    /// A long attribute's value outside its range.
    #[error("value is not in range({0}, {1})")]
    NotInRange(i64, i64),
    /// A long attribute's value that is not a number.
    #[error("For input string: \"{0}\"")]
    NotANumber(String),
}

/// What values an attribute takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One of these words.
    Enum(&'static [&'static str]),
    /// A whole number in `min..=max`.
    LongRange(i64, i64),
}

/// One known attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribute {
    /// Its key.
    pub name: &'static str,
    /// Whether an update may change or delete it once set.
    pub changeable: bool,
    /// Its values.
    pub kind: Kind,
    /// What a topic without it behaves as.
    pub default: &'static str,
}

impl Attribute {
    /// Checks `value`.
    pub fn verify(&self, value: &str) -> Result<(), AttributeError> {
        match self.kind {
            Kind::Enum(set) if set.contains(&value) => Ok(()),
            Kind::Enum(set) => Err(AttributeError::NotInSet(set.to_vec())),
            Kind::LongRange(min, max) => {
                let n: i64 = value
                    .parse()
                    .map_err(|_| AttributeError::NotANumber(value.to_owned()))?;
                if (min..=max).contains(&n) {
                    Ok(())
                } else {
                    Err(AttributeError::NotInRange(min, max))
                }
            }
        }
    }
}

/// `queue.type`.
pub const QUEUE_TYPE: &str = "queue.type";
/// `cleanup.policy`.
pub const CLEANUP_POLICY: &str = "cleanup.policy";
/// `reserve.time`.
pub const RESERVE_TIME: &str = "reserve.time";

/// RocketMQ 5.3.3's `TopicAttributes.ALL`.
pub const TOPIC_ATTRIBUTES: [Attribute; 4] = [
    Attribute {
        name: QUEUE_TYPE,
        changeable: false,
        kind: Kind::Enum(&["BatchCQ", "SimpleCQ"]),
        default: "SimpleCQ",
    },
    Attribute {
        name: CLEANUP_POLICY,
        changeable: false,
        kind: Kind::Enum(&["DELETE", "COMPACTION"]),
        default: "DELETE",
    },
    Attribute {
        name: MESSAGE_TYPE,
        changeable: true,
        kind: Kind::Enum(&[
            "UNSPECIFIED",
            "NORMAL",
            "FIFO",
            "DELAY",
            "TRANSACTION",
            "MIXED",
        ]),
        default: "NORMAL",
    },
    Attribute {
        name: RESERVE_TIME,
        changeable: true,
        kind: Kind::LongRange(-1, i64::MAX),
        default: "-1",
    },
];

/// RocketMQ 5.3.3's `SubscriptionGroupAttributes.ALL`: none, so every
/// group attribute is refused as unsupported.
pub const GROUP_ATTRIBUTES: [Attribute; 0] = [];
