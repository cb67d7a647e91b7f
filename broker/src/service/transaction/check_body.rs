//! The body of a CHECK_TRANSACTION_STATE: the half record as the producer
//! must see it, under its real topic and queue (REAL_TOPIC, REAL_QID), as
//! RocketMQ sends it. Its queue and CommitLog offsets stay the half's, which
//! the producer's END_TRANSACTION echoes. A producer behind the 5.x proxy
//! needs the real topic: the proxy files the pending check under the
//! message's topic and producer group, and the gRPC client answers under
//! the topic it was shown.

use rmq_common::constants::property;
use rmq_common::message::record::{encode_record, RecordHeader, RecordView};

/// The check body for the stored half `record`; `None` when the record does
/// not parse or cannot be encoded again. A half without (usable) REAL_TOPIC
/// or REAL_QID keeps its stored topic or queue.
pub fn check_body(record: &[u8]) -> Option<Vec<u8>> {
    let view = RecordView::parse(record, false).ok()?;
    let mut msg = view.to_message();
    if let Some(topic) = msg
        .properties
        .get(property::REAL_TOPIC)
        .filter(|t| !t.is_empty())
    {
        msg.topic = topic.to_owned();
    }
    if let Some(queue) = msg
        .properties
        .get(property::REAL_QUEUE_ID)
        .and_then(|q| q.parse::<i32>().ok())
    {
        msg.queue_id = queue;
    }
    let header = RecordHeader {
        queue_offset: view.queue_offset(),
        physical_offset: view.physical_offset(),
        store_timestamp: view.store_timestamp(),
    };
    encode_record(&msg, header).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_common::constants::TRANS_HALF_TOPIC;
    use rmq_common::message::MessageToStore;

    use crate::service::transaction::half_message;

    fn stored_half() -> Vec<u8> {
        let mut m = MessageToStore::new("OrderTopic", 3, "the body");
        m.properties
            .insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "U1");
        m.properties.insert(property::PRODUCER_GROUP, "PG");
        let header = RecordHeader {
            queue_offset: 41,
            physical_offset: 8192,
            store_timestamp: 1_700_000_000_000,
        };
        encode_record(&half_message(m), header).unwrap()
    }

    #[test]
    fn the_real_topic_and_queue_and_the_half_offsets() {
        let half = stored_half();
        assert_eq!(
            RecordView::parse(&half, true).unwrap().topic(),
            TRANS_HALF_TOPIC
        );
        let body = check_body(&half).unwrap();
        let v = RecordView::parse(&body, true).unwrap();
        assert_eq!((v.topic(), v.queue_id()), ("OrderTopic", 3));
        assert_eq!((v.queue_offset(), v.physical_offset()), (41, 8192));
        assert_eq!(v.store_timestamp(), 1_700_000_000_000);
        assert_eq!(v.body(), b"the body");
        assert_eq!(v.property(property::PRODUCER_GROUP).as_deref(), Some("PG"));
        assert_eq!(
            v.property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                .as_deref(),
            Some("U1")
        );
    }

    #[test]
    fn without_real_topic_the_stored_one_and_garbage_is_none() {
        let m = MessageToStore::new(TRANS_HALF_TOPIC, 0, "x");
        let header = RecordHeader {
            queue_offset: 1,
            physical_offset: 2,
            store_timestamp: 3,
        };
        let body = check_body(&encode_record(&m, header).unwrap()).unwrap();
        assert_eq!(
            RecordView::parse(&body, true).unwrap().topic(),
            TRANS_HALF_TOPIC
        );
        assert_eq!(check_body(b"not a record"), None);
    }
}
