use std::collections::BTreeMap;

use rmq_common::remoting::ExtFields;

use super::*;

const T: u64 = 1_700_000_000_000;

/// The header of a pop that took offset 0 of the V1 retry topic's queue 0
/// (sent under its real topic) and offsets 5 and 8 of queue 1, as the
/// broker writes it (the info strings are docs/pop-facts.md's example,
/// produced by RocketMQ 5.3.3's ExtraInfoUtil).
fn answer_header() -> PopMessageResponseHeader {
    let ext: BTreeMap<String, String> = [
        ("popTime", T.to_string()),
        ("invisibleTime", "60000".into()),
        ("reviveQid", "3".into()),
        ("restNum", "10".into()),
        ("startOffsetInfo", "1 0 0;0 1 5".into()),
        ("msgOffsetInfo", "1 0 0;0 1 5,8".into()),
        ("orderCountInfo", "".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    PopMessageResponseHeader::from_ext(&ExtFields::new(&ext)).unwrap()
}

fn msg(topic: &str, queue_id: i32) -> MessageToStore {
    MessageToStore::new(topic, queue_id, b"x".to_vec())
}

#[test]
fn header_reads_as_sent() {
    let h = answer_header();
    assert_eq!(h.pop_time, T as i64);
    assert_eq!((h.invisible_time, h.revive_qid, h.rest_num), (60000, 3, 10));
    assert_eq!(h.order_count_info, None, "blank reads as absent");
    assert_eq!(
        PopMessageResponseHeader::from_ext(&ExtFields::new(&h.to_ext())).unwrap(),
        h
    );
}

#[test]
fn extra_info_per_message_from_the_info_strings() {
    let h = answer_header();
    let msgs = [msg("%RETRY%G_T", 0), msg("T", 1), msg("T", 1)];
    let infos = extra_infos(&h, "broker-a", &msgs, &[0, 5, 8]).unwrap();
    assert_eq!(
        infos,
        [
            format!("0 {T} 60000 3 1 broker-a 0 0"),
            format!("5 {T} 60000 3 0 broker-a 1 5"),
            format!("5 {T} 60000 3 0 broker-a 1 8"),
        ]
    );
    // Acks go to the topic read: the retry topic for the first.
    let t = AckTarget::of(&infos[0], "T", "G").unwrap();
    assert_eq!(
        (t.topic.as_str(), t.queue_id, t.offset),
        ("%RETRY%G_T", 0, 0)
    );
    let t = AckTarget::of(&infos[2], "T", "G").unwrap();
    assert_eq!((t.topic.as_str(), t.queue_id, t.offset), ("T", 1, 8));
    assert_eq!(t.extra_info, infos[2]);
}

#[test]
fn a_pop_ck_property_is_kept() {
    // A retried message sent under its original topic carries its handle.
    let h = answer_header();
    let ck = format!("0 {T} 60000 3 1 broker-a 0 0");
    let mut retried = msg("T", 0);
    retried.properties.insert(POP_CK, ck.as_str());
    let infos = extra_infos(&h, "broker-a", &[retried, msg("T", 1)], &[0, 5]).unwrap();
    assert_eq!(infos[0], ck);
    assert_eq!(infos[1], format!("5 {T} 60000 3 0 broker-a 1 5"));
    let t = AckTarget::of(&infos[0], "T", "G").unwrap();
    assert_eq!((t.topic.as_str(), t.queue_id), ("%RETRY%G_T", 0));
}

#[test]
fn msg_offset_info_wins_over_the_record() {
    let h = answer_header();
    let infos = extra_infos(&h, "b", &[msg("T", 1)], &[6]).unwrap();
    assert_eq!(infos[0], format!("5 {T} 60000 3 0 b 1 5"));
}

#[test]
fn without_start_offset_info_the_first_offset_is_the_checkpoint() {
    let h = PopMessageResponseHeader {
        pop_time: 7,
        invisible_time: 100,
        revive_qid: 1,
        ..PopMessageResponseHeader::default()
    };
    let infos = extra_infos(&h, "b", &[msg("T", 2), msg("T", 2)], &[4, 9]).unwrap();
    assert_eq!(infos, ["4 7 100 1 0 b 2 4", "4 7 100 1 0 b 2 9"]);
}

#[test]
fn a_message_the_info_strings_do_not_name_is_an_error() {
    let h = answer_header();
    let e = extra_infos(&h, "b", &[msg("T", 2)], &[0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("0@2"), "{e}");
    let e = extra_infos(
        &h,
        "b",
        &[msg("T", 1), msg("T", 1), msg("T", 1)],
        &[5, 8, 9],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("#2 under 0@1"), "{e}");
    let mut bad = h.clone();
    bad.start_offset_info = Some("0 1".into());
    let e = extra_infos(&bad, "b", &[msg("T", 1)], &[5])
        .unwrap_err()
        .to_string();
    assert!(e.contains("not `flag queueId offset`"), "{e}");
    assert!(
        AckTarget::of("5 1 2 3 0 b 1", "T", "G").is_err(),
        "7 fields"
    );
}

#[test]
fn batch_ack_groups_per_pop_and_queue() {
    let infos = [
        format!("5 {T} 60000 3 0 b 1 5"),
        format!("5 {T} 60000 3 0 b 1 8"),
        format!("0 {T} 60000 3 1 b 0 0"),
    ];
    let refs: Vec<&str> = infos.iter().map(String::as_str).collect();
    let body = batch_ack_body("b", "G", "T", &refs).unwrap();
    assert_eq!(body.broker_name, "b");
    assert_eq!(body.acks.len(), 2);
    let normal = &body.acks[0];
    assert_eq!((normal.retry.as_str(), normal.queue_id), ("0", 1));
    assert_eq!(normal.offsets().unwrap(), vec![5, 8]);
    let retry = &body.acks[1];
    assert_eq!((retry.retry.as_str(), retry.start_offset), ("1", 0));
    assert_eq!(retry.offsets().unwrap(), vec![0]);
    assert_eq!((retry.topic.as_str(), retry.revive_queue_id), ("T", 3));
}
