//! The extraInfo of a popped message (what a receipt handle is built on),
//! and the offset-info strings a POP_MESSAGE answer carries so the client
//! can build one per message.
//!
//! extraInfo is space-separated: checkpoint offset, popTime, invisibleTime,
//! reviveQid, retry flag, brokerName, queueId, queue offset; rocketmq-proxy
//! appends the CommitLog offset. The broker reads the first six fields and
//! takes queueId and offset from the request header.

use std::fmt::Write as _;

use super::names::RetryFlag;

/// What a broker reads from an extraInfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraInfo {
    /// The checkpoint's start offset.
    pub ck_offset: i64,
    /// When the message was popped, ms.
    pub pop_time: i64,
    /// Its invisible time at that pop, ms.
    pub invisible_time: i64,
    /// The revive queue of its checkpoint (999: orderly).
    pub revive_qid: i32,
    /// Which topic it was read from.
    pub retry: RetryFlag,
    /// The broker that popped it.
    pub broker_name: String,
}

/// Why an extraInfo cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtraInfoError {
    /// Fewer than six fields.
    #[error("extraInfo {0:?} has {1} fields, at least 6 are needed (ckOffset popTime invisibleTime reviveQid retry brokerName)")]
    TooShort(String, usize),
    /// A field that must be a number is not.
    #[error("extraInfo {info:?}: field {index} ({name}) = {value:?} is not a number")]
    NotNumber {
        /// The whole extraInfo.
        info: String,
        /// Its index.
        index: usize,
        /// What it holds.
        name: &'static str,
        /// The text.
        value: String,
    },
}

const FIELD_NAMES: [&str; 4] = ["ckOffset", "popTime", "invisibleTime", "reviveQid"];

impl ExtraInfo {
    /// Reads an extraInfo (trailing fields are ignored).
    pub fn parse(info: &str) -> Result<Self, ExtraInfoError> {
        let fields: Vec<&str> = info.split(' ').collect();
        if fields.len() < 6 {
            return Err(ExtraInfoError::TooShort(info.to_owned(), fields.len()));
        }
        let number = |index: usize| -> Result<i64, ExtraInfoError> {
            fields[index]
                .trim()
                .parse::<i64>()
                .map_err(|_| ExtraInfoError::NotNumber {
                    info: info.to_owned(),
                    index,
                    name: FIELD_NAMES[index],
                    value: fields[index].to_owned(),
                })
        };
        let revive = number(3)?;
        Ok(Self {
            ck_offset: number(0)?,
            pop_time: number(1)?,
            invisible_time: number(2)?,
            revive_qid: i32::try_from(revive).map_err(|_| ExtraInfoError::NotNumber {
                info: info.to_owned(),
                index: 3,
                name: FIELD_NAMES[3],
                value: fields[3].to_owned(),
            })?,
            retry: RetryFlag::from_text(fields[4]),
            broker_name: fields[5].to_owned(),
        })
    }

    /// The eight-field form the Java client stores in `POP_CK`.
    pub fn with_queue(&self, queue_id: i32, offset: i64) -> String {
        format!(
            "{} {} {} {} {} {} {} {}",
            self.ck_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry.digit(),
            self.broker_name,
            queue_id,
            offset
        )
    }

    /// When the message becomes visible again, ms.
    pub fn revive_time(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }
}

/// The `startOffsetInfo`, `msgOffsetInfo` and `orderCountInfo` strings of
/// one POP_MESSAGE answer, one entry per queue read that returned messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetInfo {
    start: String,
    msgs: String,
    order: String,
}

impl OffsetInfo {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One queue's entry: the read's start offset and the offsets returned.
    pub fn add(&mut self, retry: RetryFlag, queue_id: i32, start: i64, offsets: &[i64]) {
        let flag = retry.digit();
        sep(&mut self.start);
        let _ = write!(self.start, "{flag} {queue_id} {start}");
        sep(&mut self.msgs);
        let _ = write!(self.msgs, "{flag} {queue_id} ");
        for (i, o) in offsets.iter().enumerate() {
            if i > 0 {
                self.msgs.push(',');
            }
            let _ = write!(self.msgs, "{o}");
        }
    }

    /// Orderly pops: how often each offset was delivered before, then the
    /// queue's smallest count.
    pub fn add_order_counts(&mut self, retry: RetryFlag, queue_id: i32, counts: &[(i64, i32)]) {
        let flag = retry.digit();
        let mut min = i32::MAX;
        for (offset, count) in counts {
            sep(&mut self.order);
            let _ = write!(self.order, "{flag} qo{queue_id}%{offset} {count}");
            min = min.min(*count);
        }
        if !counts.is_empty() {
            sep(&mut self.order);
            let _ = write!(self.order, "{flag} {queue_id} {min}");
        }
    }

    /// `startOffsetInfo`.
    pub fn start_offset_info(&self) -> &str {
        &self.start
    }

    /// `msgOffsetInfo`.
    pub fn msg_offset_info(&self) -> &str {
        &self.msgs
    }

    /// `orderCountInfo`.
    pub fn order_count_info(&self) -> &str {
        &self.order
    }

    /// No queue returned anything.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

fn sep(s: &mut String) {
    if !s.is_empty() {
        s.push(';');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_client_and_the_proxy_send() {
        let e = ExtraInfo::parse("5 1000 60000 3 0 broker-a 1 8").unwrap();
        assert_eq!(e.ck_offset, 5);
        assert_eq!(e.revive_time(), 61000);
        assert_eq!(e.revive_qid, 3);
        assert_eq!(e.retry, RetryFlag::Normal);
        assert_eq!(e.broker_name, "broker-a");
        assert_eq!(e.with_queue(1, 8), "5 1000 60000 3 0 broker-a 1 8");
        // The proxy's nine-field receipt handle.
        let p = ExtraInfo::parse("5 1000 60000 999 2 b 1 8 4096").unwrap();
        assert_eq!(p.retry, RetryFlag::RetryV2);
        assert_eq!(p.revive_qid, 999);
        let err = ExtraInfo::parse("5 1000").unwrap_err().to_string();
        assert!(err.contains("2 fields"), "{err}");
        let err = ExtraInfo::parse("5 x 60000 3 0 b").unwrap_err().to_string();
        assert!(err.contains("popTime"), "{err}");
    }

    #[test]
    fn info_strings_as_java_writes_them() {
        let mut i = OffsetInfo::new();
        i.add(RetryFlag::RetryV1, 0, 0, &[0]);
        i.add(RetryFlag::Normal, 1, 5, &[5, 8]);
        assert_eq!(i.start_offset_info(), "1 0 0;0 1 5");
        assert_eq!(i.msg_offset_info(), "1 0 0;0 1 5,8");
        i.add_order_counts(RetryFlag::Normal, 1, &[(5, 2), (8, 1)]);
        assert_eq!(i.order_count_info(), "0 qo1%5 2;0 qo1%8 1;0 1 1");
    }
}
