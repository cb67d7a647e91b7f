//! A topic's `message.type` and a message's type, as RocketMQ 5.x's
//! `TopicMessageType` names and derives them.

use std::collections::BTreeMap;

use crate::message::Properties;

/// `message.type`.
pub const MESSAGE_TYPE: &str = "message.type";

/// Java's `TopicMessageType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicMessageType {
    /// `UNSPECIFIED`: no send matches it.
    Unspecified,
    /// `NORMAL`.
    Normal,
    /// `FIFO`: messages with a sharding key.
    Fifo,
    /// `DELAY`: delay-level or timer messages.
    Delay,
    /// `TRANSACTION`: half messages.
    Transaction,
    /// `MIXED`: any type.
    Mixed,
}

impl TopicMessageType {
    /// The value as the attribute holds it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "UNSPECIFIED",
            Self::Normal => "NORMAL",
            Self::Fifo => "FIFO",
            Self::Delay => "DELAY",
            Self::Transaction => "TRANSACTION",
            Self::Mixed => "MIXED",
        }
    }

    /// The type an attribute value names; `None` for any other word.
    pub fn parse(value: &str) -> Option<Self> {
        [
            Self::Unspecified,
            Self::Normal,
            Self::Fifo,
            Self::Delay,
            Self::Transaction,
            Self::Mixed,
        ]
        .into_iter()
        .find(|t| t.as_str() == value)
    }

    /// A topic's declared type: its `message.type` attribute, `None` when
    /// it has none (a topic made without attributes, as every 4.x topic:
    /// Java reads it as NORMAL).
    pub fn of_topic(attributes: &BTreeMap<String, String>) -> Option<Self> {
        attributes
            .get(MESSAGE_TYPE)
            .map(|v| Self::parse(v).unwrap_or(Self::Unspecified))
    }

    /// A message's type from its properties, in the order of the 5.x
    /// proxy's check (`TopicMessageType.parseFromMessageProperty`): a half
    /// message (`TRAN_MSG` exactly "true"), then a delay level or timer
    /// property, then a sharding key (FIFO), else NORMAL.
    pub fn of_message(properties: &Properties) -> Self {
        if properties.get("TRAN_MSG") == Some("true") {
            Self::Transaction
        } else if [
            "DELAY",
            "TIMER_DELIVER_MS",
            "TIMER_DELAY_SEC",
            "TIMER_DELAY_MS",
        ]
        .iter()
        .any(|k| properties.get(k).is_some())
        {
            Self::Delay
        } else if properties.get("__SHARDINGKEY").is_some() {
            Self::Fifo
        } else {
            Self::Normal
        }
    }

    /// Whether a topic of this type takes a message of type `message`
    /// (the proxy's check: MIXED takes all; UNSPECIFIED none).
    pub fn accepts(self, message: Self) -> bool {
        self == Self::Mixed || (self != Self::Unspecified && self == message)
    }
}

impl std::fmt::Display for TopicMessageType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Properties {
        let mut p = Properties::default();
        for (k, v) in pairs {
            p.insert(*k, *v);
        }
        p
    }

    #[test]
    fn a_message_type_in_the_proxy_order() {
        use TopicMessageType as T;
        assert_eq!(T::of_message(&props(&[])), T::Normal);
        assert_eq!(
            T::of_message(&props(&[("TRAN_MSG", "true"), ("DELAY", "3")])),
            T::Transaction
        );
        assert_eq!(T::of_message(&props(&[("TRAN_MSG", "TRUE")])), T::Normal);
        assert_eq!(
            T::of_message(&props(&[("TIMER_DELAY_SEC", "5"), ("__SHARDINGKEY", "k")])),
            T::Delay
        );
        assert_eq!(T::of_message(&props(&[("__SHARDINGKEY", "k")])), T::Fifo);
        assert!(T::Mixed.accepts(T::Delay));
        assert!(!T::Unspecified.accepts(T::Normal));
        assert!(T::Fifo.accepts(T::Fifo) && !T::Fifo.accepts(T::Normal));
        let attrs = [(MESSAGE_TYPE.to_owned(), "FIFO".to_owned())]
            .into_iter()
            .collect();
        assert_eq!(T::of_topic(&attrs), Some(T::Fifo));
        assert_eq!(T::of_topic(&BTreeMap::new()), None);
    }
}
