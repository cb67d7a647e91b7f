//! Recall handles (RocketMQ 5.x `RecallMessageHandle`): the send answer of
//! a timer message carries `v1 <realTopic> <brokerName> <timestamp>
//! <uniqKey>` in URL-safe Base64 with padding; RECALL_MESSAGE hands it
//! back. `timestamp` is TIMER_OUT_MS + 1, so the delete marker it files
//! rounds down into the message's own slot.

use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;

/// A decoded recall handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallHandle {
    /// The message's real topic.
    pub topic: String,
    /// The broker that stored it.
    pub broker_name: String,
    /// TIMER_OUT_MS + 1, as sent (a non-number is kept and refused later).
    pub timestamp: String,
    /// The message's UNIQ_KEY.
    pub uniq_key: String,
}

/// The handle failed to decode (5.x: `recall handle is invalid`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("recall handle is invalid")]
pub struct InvalidHandle;

impl RecallHandle {
    /// The handle for a message filed at `timer_out_ms`.
    pub fn new(topic: &str, broker_name: &str, timer_out_ms: i64, uniq_key: &str) -> Self {
        Self {
            topic: topic.to_owned(),
            broker_name: broker_name.to_owned(),
            timestamp: (timer_out_ms + 1).to_string(),
            uniq_key: uniq_key.to_owned(),
        }
    }

    /// The string the send answer carries.
    pub fn encode(&self) -> String {
        let raw = format!(
            "v1 {} {} {} {}",
            self.topic, self.broker_name, self.timestamp, self.uniq_key
        );
        URL_SAFE.encode(raw)
    }

    /// Decodes a handle (padding optional; items past the fifth ignored).
    pub fn decode(handle: &str) -> Result<Self, InvalidHandle> {
        let handle = handle.trim_end_matches('=');
        if handle.is_empty() {
            return Err(InvalidHandle);
        }
        let raw = URL_SAFE_NO_PAD.decode(handle).map_err(|_| InvalidHandle)?;
        let text = String::from_utf8(raw).map_err(|_| InvalidHandle)?;
        let items: Vec<&str> = text.split(' ').collect();
        match items.as_slice() {
            ["v1", topic, broker, timestamp, uniq, ..] => Ok(Self {
                topic: (*topic).to_owned(),
                broker_name: (*broker).to_owned(),
                timestamp: (*timestamp).to_owned(),
                uniq_key: (*uniq).to_owned(),
            }),
            _ => Err(InvalidHandle),
        }
    }

    /// The timestamp as a number; -1 when it is not one (5.x's rule).
    pub fn timestamp_ms(&self) -> i64 {
        self.timestamp.parse().unwrap_or(-1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_5x_shape() {
        let h = RecallHandle::new("Orders", "broker-a", 1_750_000_000_000, "ABC");
        let s = h.encode();
        let raw = URL_SAFE.decode(&s).unwrap();
        assert_eq!(raw, b"v1 Orders broker-a 1750000000001 ABC");
        assert_eq!(RecallHandle::decode(&s), Ok(h.clone()));
        assert_eq!(RecallHandle::decode(s.trim_end_matches('=')), Ok(h));
    }

    #[test]
    fn bad_handles_are_invalid() {
        for bad in [
            "",
            "!!!",
            &URL_SAFE.encode("v2 a b 1 c"),
            &URL_SAFE.encode("v1 a b 1"),
        ] {
            assert_eq!(RecallHandle::decode(bad), Err(InvalidHandle), "{bad}");
        }
        let extra = URL_SAFE.encode("v1 a b x c d");
        let h = RecallHandle::decode(&extra).unwrap();
        assert_eq!(h.timestamp_ms(), -1);
    }
}
