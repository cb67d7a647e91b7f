use super::*;
use crate::message::properties::Properties;

fn sample() -> MessageToStore {
    MessageToStore {
        topic: "T1".into(),
        queue_id: 3,
        flag: 7,
        body: b"hi".to_vec(),
        properties: [("K", "V")].into_iter().collect::<Properties>(),
        sys_flag: 0,
        born_timestamp: 0x0102_0304_0506_0708,
        born_host: "127.0.0.1:9000".parse().unwrap(),
        store_host: "10.0.0.1:10911".parse().unwrap(),
        reconsume_times: 2,
        prepared_transaction_offset: 0x99,
    }
}

const HEADER: RecordHeader = RecordHeader {
    queue_offset: 5,
    physical_offset: 0x1000,
    store_timestamp: 0x1112_1314_1516_1718,
};

/// The sample record written out by hand, field by field, from the layout table.
#[rustfmt::skip]
const GOLDEN: [u8; 99] = [
    0x00, 0x00, 0x00, 0x63,                         // TOTALSIZE 99
    0xDA, 0xA3, 0x20, 0xA7,                         // MAGICCODE
    0x58, 0x93, 0x2A, 0xAC,                         // BODYCRC crc32("hi") & 0x7FFFFFFF
    0x00, 0x00, 0x00, 0x03,                         // QUEUEID
    0x00, 0x00, 0x00, 0x07,                         // FLAG
    0, 0, 0, 0, 0, 0, 0, 5,                         // QUEUEOFFSET
    0, 0, 0, 0, 0, 0, 0x10, 0x00,                   // PHYSICALOFFSET
    0x00, 0x00, 0x00, 0x00,                         // SYSFLAG
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // BORNTIMESTAMP
    127, 0, 0, 1, 0x00, 0x00, 0x23, 0x28,           // BORNHOST 127.0.0.1:9000
    0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // STORETIMESTAMP
    10, 0, 0, 1, 0x00, 0x00, 0x2A, 0x9F,            // STOREHOST 10.0.0.1:10911
    0x00, 0x00, 0x00, 0x02,                         // RECONSUMETIMES
    0, 0, 0, 0, 0, 0, 0, 0x99,                      // PREPAREDTRANSACTIONOFFSET
    0x00, 0x00, 0x00, 0x02, b'h', b'i',             // BODY
    0x02, b'T', b'1',                               // TOPIC
    0x00, 0x04, b'K', 0x01, b'V', 0x02,             // PROPERTIES
];

#[test]
fn encode_matches_golden_bytes() {
    let bytes = encode_record(&sample(), HEADER).unwrap();
    assert_eq!(bytes.as_slice(), GOLDEN.as_slice());
}

#[test]
fn decode_golden_bytes() {
    let v = RecordView::parse(&GOLDEN, true).unwrap();
    assert_eq!(v.total_size(), 99);
    assert_eq!(v.queue_id(), 3);
    assert_eq!(v.flag(), 7);
    assert_eq!(v.header(), HEADER);
    assert_eq!(v.born_timestamp(), 0x0102_0304_0506_0708);
    assert_eq!(v.born_host(), "127.0.0.1:9000".parse().unwrap());
    assert_eq!(v.store_host(), "10.0.0.1:10911".parse().unwrap());
    assert_eq!(v.reconsume_times(), 2);
    assert_eq!(v.prepared_transaction_offset(), 0x99);
    assert_eq!(v.body(), b"hi");
    assert_eq!(v.topic(), "T1");
    assert_eq!(v.property("K").as_deref(), Some("V"));
    assert_eq!(v.to_message(), sample());
}

#[test]
fn ipv6_hosts_round_trip_and_set_sysflag() {
    let mut m = sample();
    m.born_host = "[2001:db8::1]:1234".parse().unwrap();
    m.store_host = "[::1]:10911".parse().unwrap();
    let bytes = encode_record(&m, HEADER).unwrap();
    assert_eq!(bytes.len(), 99 + 12 + 12);
    let v = RecordView::parse(&bytes, true).unwrap();
    assert_eq!(v.sys_flag(), sysflag::BORNHOST_V6 | sysflag::STOREHOST_V6);
    assert_eq!(v.header(), HEADER);
    let mut back = v.to_message();
    back.sys_flag = 0;
    assert_eq!(back, m);
    // Mixed: only the store host is IPv6.
    m.born_host = "1.2.3.4:5".parse().unwrap();
    let bytes = encode_record(&m, HEADER).unwrap();
    let v = RecordView::parse(&bytes, true).unwrap();
    assert_eq!(v.sys_flag(), sysflag::STOREHOST_V6);
    assert_eq!(v.store_timestamp(), HEADER.store_timestamp);
    assert_eq!(v.born_host(), m.born_host);
}

#[test]
fn patch_header_rewrites_positions() {
    let mut bytes = encode_record(
        &sample(),
        RecordHeader {
            queue_offset: 0,
            physical_offset: 0,
            store_timestamp: 0,
        },
    )
    .unwrap();
    patch_header(&mut bytes, HEADER);
    assert_eq!(bytes.as_slice(), GOLDEN.as_slice());
}

#[test]
fn crc_and_size_errors_are_named() {
    let mut bad = GOLDEN;
    bad[88] ^= 0x01; // first body byte
    assert!(matches!(
        RecordView::parse(&bad, true),
        Err(RecordError::CrcMismatch { .. })
    ));
    assert!(RecordView::parse(&bad, false).is_ok());

    let mut bad = GOLDEN;
    bad[3] = 0x64; // TOTALSIZE one too large
    assert!(matches!(
        RecordView::parse(&bad, true),
        Err(RecordError::Truncated { .. })
    ));
    let mut longer = bad.to_vec();
    longer.push(0);
    assert!(matches!(
        RecordView::parse(&longer, true),
        Err(RecordError::SizeMismatch { .. })
    ));

    let mut bad = GOLDEN;
    bad[84] = 0x7F; // body length runs past the record
    assert!(matches!(
        RecordView::parse(&bad, false),
        Err(RecordError::SizeMismatch { .. })
    ));

    let mut bad = GOLDEN;
    bad[4] = 0; // magic
    assert!(matches!(
        RecordView::parse(&bad, false),
        Err(RecordError::BadMagic { .. })
    ));

    for cut in 0..GOLDEN.len() {
        assert!(
            RecordView::parse(&GOLDEN[..cut], false).is_err(),
            "cut at {cut}"
        );
    }
}

#[test]
fn frames() {
    assert_eq!(
        peek_frame(&GOLDEN).unwrap(),
        Frame::Message { total_size: 99 }
    );
    assert_eq!(
        peek_frame(&encode_blank(4096)).unwrap(),
        Frame::Blank { total_size: 4096 }
    );
    assert_eq!(encode_blank(16), [0, 0, 0, 16, 0xCB, 0xD4, 0x31, 0x94]);
    assert_eq!(peek_frame(&[0u8; 8]).unwrap(), Frame::Empty);
    assert!(matches!(
        peek_frame(&[0u8; 4]),
        Err(RecordError::Truncated { .. })
    ));
    assert!(matches!(
        peek_frame(&[0, 0, 0, 1, 1, 2, 3, 4]),
        Err(RecordError::BadMagic { .. })
    ));
    assert!(matches!(
        peek_frame(&[0xFF, 0xFF, 0xFF, 0xFF, 0xDA, 0xA3, 0x20, 0xA7]),
        Err(RecordError::SizeMismatch { .. })
    ));
}

#[test]
fn encode_refuses_long_topic_and_properties() {
    let mut m = sample();
    m.topic = "t".repeat(128);
    assert!(matches!(
        encode_record(&m, HEADER),
        Err(RecordError::TopicTooLong { len: 128 })
    ));
    let mut m = sample();
    m.properties.insert("big", "x".repeat(40_000));
    assert!(matches!(
        encode_record(&m, HEADER),
        Err(RecordError::PropertiesTooLong { .. })
    ));
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_message_round_trips(
            topic in "[a-zA-Z0-9_%|-]{1,127}",
            queue_id in any::<i32>(),
            body in proptest::collection::vec(any::<u8>(), 0..2048),
            props in proptest::collection::vec(("[A-Z_]{1,12}", "[ -~]{0,40}"), 0..6),
            qo in any::<i64>(), po in any::<i64>(), ts in any::<i64>(),
            v6 in any::<bool>(),
        ) {
            let mut m = sample();
            m.topic = topic;
            m.queue_id = queue_id;
            m.body = body;
            m.properties = props.into_iter().collect();
            if v6 { m.store_host = "[::1]:1".parse().unwrap(); }
            let h = RecordHeader { queue_offset: qo, physical_offset: po, store_timestamp: ts };
            let bytes = encode_record(&m, h).unwrap();
            let v = RecordView::parse(&bytes, true).unwrap();
            prop_assert_eq!(v.header(), h);
            prop_assert_eq!(v.body(), m.body.as_slice());
            prop_assert_eq!(v.topic(), m.topic.as_str());
            prop_assert_eq!(v.properties(), m.properties.clone());
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = RecordView::parse(&bytes, true);
            let _ = peek_frame(&bytes);
        }
    }
}

#[test]
fn encoded_len_is_the_length_encode_produces() {
    let mut m = sample();
    let zero = RecordHeader {
        queue_offset: 0,
        physical_offset: 0,
        store_timestamp: 0,
    };
    assert_eq!(
        encoded_len(&m).unwrap(),
        encode_record(&m, zero).unwrap().len()
    );
    m.born_host = "[::1]:10911".parse().unwrap();
    m.properties.insert("REAL_TOPIC", "x".repeat(300));
    assert_eq!(
        encoded_len(&m).unwrap(),
        encode_record(&m, zero).unwrap().len()
    );
    m.topic = "t".repeat(300);
    assert!(encoded_len(&m).is_err());
}

#[test]
fn replaced_properties_equal_a_record_encoded_with_them() {
    let mut msg = sample();
    let mut bytes = encode_record(&msg, HEADER).unwrap();
    msg.properties.insert("INNER_MULTI_QUEUE_OFFSET", "12,,3");
    msg.properties.remove("K");
    let props = msg.properties.encode().unwrap();
    replace_properties(&mut bytes, &props).unwrap();
    assert_eq!(bytes, encode_record(&msg, HEADER).unwrap());
    let v = RecordView::parse(&bytes, true).unwrap();
    assert_eq!(
        v.property("INNER_MULTI_QUEUE_OFFSET").as_deref(),
        Some("12,,3")
    );
    assert_eq!(v.property("K"), None);
}
