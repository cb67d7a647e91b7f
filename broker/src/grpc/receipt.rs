//! The receipt handle a gRPC client acks with: the broker's extraInfo of
//! the popped message (8 fields) followed by its CommitLog offset, space
//! separated (RocketMQ's `ReceiptHandle`: `ckOffset popTime invisibleTime
//! reviveQid topicType brokerName queueId queueOffset commitLogOffset`).

use rmq_common::pop::ExtraInfo;
use rmq_grpc::pb;

use super::status::Failure;

/// A decoded receipt handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReceiptHandle {
    pub info: ExtraInfo,
    pub queue_id: i32,
    pub queue_offset: i64,
    /// -1 when the handle has only the 8 extraInfo fields.
    pub commit_log_offset: i64,
    /// The handle as received, sent to the broker whole as the extraInfo.
    pub text: String,
}

impl ReceiptHandle {
    /// Reads a handle; INVALID_RECEIPT_HANDLE if it is not one.
    pub fn decode(text: &str) -> Result<Self, Failure> {
        let invalid = |why: String| {
            Failure::new(
                pb::Code::InvalidReceiptHandle,
                format!("receipt handle is not valid: {why}"),
            )
        };
        let info = ExtraInfo::parse(text).map_err(|e| invalid(e.to_string()))?;
        let fields: Vec<&str> = text.split(' ').collect();
        if fields.len() < 8 {
            return Err(invalid(format!("{} fields, 8 or 9 expected", fields.len())));
        }
        let number = |i: usize| -> Result<i64, Failure> {
            fields[i]
                .parse::<i64>()
                .map_err(|_| invalid(format!("field {i} ({:?}) is not a number", fields[i])))
        };
        let queue_id = i32::try_from(number(6)?).map_err(|_| invalid("queue id".into()))?;
        Ok(Self {
            info,
            queue_id,
            queue_offset: number(7)?,
            commit_log_offset: if fields.len() >= 9 { number(8)? } else { -1 },
            text: text.to_owned(),
        })
    }

    /// A handle for a message popped with `extra_info`, at `commit_log_offset`.
    pub fn encode(extra_info: &str, commit_log_offset: i64) -> String {
        format!("{extra_info} {commit_log_offset}")
    }

    /// When the message becomes visible again, ms.
    pub fn next_visible_ms(&self) -> i64 {
        self.info.pop_time.saturating_add(self.info.invisible_time)
    }

    /// INVALID_RECEIPT_HANDLE if the handle has expired at `now_ms` (the
    /// message may be in another consumer's hands by now).
    pub fn check_fresh(&self, now_ms: i64) -> Result<(), Failure> {
        if self.next_visible_ms() <= now_ms {
            return Err(Failure::new(
                pb::Code::InvalidReceiptHandle,
                "receipt handle is expired",
            ));
        }
        Ok(())
    }

    /// The topic the message was read from: `topic` or `group`'s retry
    /// topic for it.
    pub fn real_topic(&self, topic: &str, group: &str) -> String {
        self.info.retry.topic(topic, group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_nine_fields() {
        let h = ReceiptHandle::decode("5 1000 60000 0 1 broker-a 3 7 4096").unwrap();
        assert_eq!(
            (h.queue_id, h.queue_offset, h.commit_log_offset),
            (3, 7, 4096)
        );
        assert_eq!(h.next_visible_ms(), 61_000);
        assert_eq!(h.real_topic("T", "G"), "%RETRY%G_T");
        assert!(h.check_fresh(60_999).is_ok());
        assert_eq!(
            h.check_fresh(61_000).unwrap_err().code,
            pb::Code::InvalidReceiptHandle
        );
        let short = ReceiptHandle::decode("5 1000 60000 0 0 broker-a 3 7").unwrap();
        assert_eq!(short.commit_log_offset, -1);
        assert_eq!(short.real_topic("T", "G"), "T");
    }

    #[test]
    fn refuses_what_is_not_a_handle() {
        for bad in [
            "",
            "a b c",
            "5 1000 60000 0 0 broker-a x 7 1",
            "5 1000 60000 0 0 b 3",
        ] {
            let e = ReceiptHandle::decode(bad).unwrap_err();
            assert_eq!(e.code, pb::Code::InvalidReceiptHandle, "{bad}");
        }
    }
}
