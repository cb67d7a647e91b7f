//! The read path: pull statuses, tag filtering, offsets by time, query by key
//! and view by message id.

use rmq_common::config::CqBackend;
use rmq_common::constants::property;
use rmq_common::cq::Boundary;
use rmq_common::message::record::RecordView;
use rmq_store::{GetRequest, GetStatus, TagFilter};
use rmq_tests::{message, open_store, small_config, wait_dispatched, BACKENDS};

fn tagged(
    topic: &str,
    q: i32,
    body: &str,
    tag: &str,
    key: &str,
) -> rmq_common::message::MessageToStore {
    let mut m = message(topic, q, body);
    m.properties.insert(property::TAGS, tag);
    m.properties.insert(property::KEYS, format!("{key} shared"));
    m.properties.insert(
        property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        format!("UNIQ-{body}"),
    );
    m
}

fn statuses_and_filters(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&small_config(dir.path(), backend)).unwrap();
    let all = TagFilter::all();
    let r = store
        .get_message(&GetRequest::new("Nope", 0, 0, 32, &all))
        .unwrap();
    assert_eq!(r.status, GetStatus::NoMatchedLogicQueue);

    let mut ids = Vec::new();
    for i in 0..10 {
        let tag = if i % 2 == 0 { "TagA" } else { "TagB" };
        let r = store
            .put_message(&tagged("Read", 0, &format!("m{i}"), tag, &format!("k{i}")))
            .unwrap();
        ids.push(r.appended[0].clone());
    }
    wait_dispatched(&store);

    let r = store
        .get_message(&GetRequest::new("Read", 0, 0, 32, &all))
        .unwrap();
    assert_eq!(r.status, GetStatus::Found);
    assert_eq!(r.messages.len(), 10);
    assert_eq!(
        (r.next_begin_offset, r.min_offset, r.max_offset),
        (10, 0, 10)
    );

    // max_count and max_bytes bound a pull; next_begin_offset follows.
    let r = store
        .get_message(&GetRequest::new("Read", 0, 2, 3, &all))
        .unwrap();
    assert_eq!(r.queue_offsets, vec![2, 3, 4]);
    assert_eq!(r.next_begin_offset, 5);
    let one = ids[0].size as usize;
    let r = store
        .get_message(&GetRequest::new("Read", 0, 0, 32, &all).max_bytes(one + 1))
        .unwrap();
    assert_eq!(
        r.messages.len(),
        1,
        "byte limit, but always at least one message"
    );

    // Tag filter by Java hash code.
    let only_b = TagFilter::parse("TagB");
    let r = store
        .get_message(&GetRequest::new("Read", 0, 0, 32, &only_b))
        .unwrap();
    assert_eq!(r.queue_offsets, vec![1, 3, 5, 7, 9]);
    assert_eq!(r.next_begin_offset, 10);
    let none = TagFilter::parse("TagC");
    let r = store
        .get_message(&GetRequest::new("Read", 0, 0, 32, &none))
        .unwrap();
    assert_eq!(r.status, GetStatus::NoMatchedMessage);
    assert_eq!(r.next_begin_offset, 10, "filtered units are skipped");

    let r = store
        .get_message(&GetRequest::new("Read", 0, 10, 32, &all))
        .unwrap();
    assert_eq!(
        (r.status, r.next_begin_offset),
        (GetStatus::OffsetOverflowOne, 10)
    );
    let r = store
        .get_message(&GetRequest::new("Read", 0, 50, 32, &all))
        .unwrap();
    assert_eq!(r.status, GetStatus::OffsetOverflowBadly);
    assert_eq!(r.next_begin_offset, 0, "min is 0: go back to it");

    // Offsets by time: all records share at most a few store times.
    let first_ts = ids[0].store_timestamp;
    let last_ts = ids[9].store_timestamp;
    assert_eq!(
        store
            .offset_by_time("Read", 0, first_ts - 1, Boundary::Lower)
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .offset_by_time("Read", 0, last_ts + 1, Boundary::Lower)
            .unwrap(),
        10
    );
    assert_eq!(
        store
            .offset_by_time("Read", 0, first_ts - 1, Boundary::Upper)
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .offset_by_time("Read", 0, last_ts + 1, Boundary::Upper)
            .unwrap(),
        9
    );
    assert_eq!(
        store.earliest_message_time("Read", 0).unwrap(),
        Some(first_ts)
    );

    // Query by key and by UNIQ_KEY; another topic's key never leaks in.
    store
        .put_message(&tagged("Other", 0, "o1", "TagA", "k3"))
        .unwrap();
    wait_dispatched(&store);
    let found = store.query_by_key("Read", "k3", 32, 0, i64::MAX).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        RecordView::parse(found[0].bytes(), true).unwrap().body(),
        b"m3"
    );
    let found = store
        .query_by_key("Read", "UNIQ-m7", 32, 0, i64::MAX)
        .unwrap();
    assert_eq!(found.len(), 1);
    let found = store
        .query_by_key("Read", "shared", 4, 0, i64::MAX)
        .unwrap();
    assert_eq!(found.len(), 4, "max_num honoured");
    assert!(store
        .query_by_key("Read", "k99", 32, 0, i64::MAX)
        .unwrap()
        .is_empty());

    // View by offsetMsgId.
    let (_, sel) = store.message_by_id(&ids[4].msg_id).unwrap().unwrap();
    assert_eq!(RecordView::parse(sel.bytes(), true).unwrap().body(), b"m4");
    assert!(store.message_by_id("not-an-id").is_err());
    let bogus = rmq_common::message::encode_offset_msg_id(
        "127.0.0.1:1".parse().unwrap(),
        ids[4].phy_offset + 3,
    );
    assert!(
        store.message_by_id(&bogus).unwrap().is_none(),
        "an offset inside a record is not a message"
    );
}

#[test]
fn statuses_and_filters_all_backends() {
    for backend in BACKENDS {
        statuses_and_filters(backend);
    }
}
