#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use serde::{Deserialize, Serialize};

use super::render::{render, Schema};
use super::{from_str, parse::parse, JsonError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Sample {
    #[serde(rename = "clientID")]
    client_id: String,
    count: i32,
    big: i64,
    ratio: f64,
    flag: bool,
    name: Option<String>,
    addrs: BTreeMap<i64, String>,
    items: Vec<Item>,
    kind: Kind,
}

impl Default for Sample {
    fn default() -> Self {
        Self {
            client_id: String::new(),
            count: 16,
            big: 0,
            ratio: 0.0,
            flag: false,
            name: None,
            addrs: BTreeMap::new(),
            items: Vec::new(),
            kind: Kind::Clustering,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Item {
    topic: String,
    queue_id: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Kind {
    Broadcasting,
    Clustering,
}

#[test]
fn numbers_strings_and_booleans_convert_as_fastjson_does() {
    let s: Sample = from_str(
        r#"{"clientID":123,"count":"7","big":" -9 ","ratio":"1.5","flag":"true",
            "name":42,"kind":"BROADCASTING"}"#,
    )
    .unwrap();
    assert_eq!(s.client_id, "123");
    assert_eq!(s.count, 7);
    assert_eq!(s.big, -9);
    assert_eq!(s.ratio, 1.5);
    assert!(s.flag);
    assert_eq!(s.name.as_deref(), Some("42"));
    assert_eq!(s.kind, Kind::Broadcasting);
    for (text, want) in [
        ("1", true),
        ("0", false),
        ("2", false),
        ("\"1\"", true),
        ("\"0\"", false),
        ("'TRUE'", true),
        ("\"False\"", false),
        ("\"Y\"", true),
        ("null", false),
        ("\"\"", false),
    ] {
        let s: Sample = from_str(&format!("{{\"flag\":{text}}}")).unwrap();
        assert_eq!(s.flag, want, "{text}");
    }
}

#[test]
fn fastjson_syntax_is_accepted() {
    let s: Sample = from_str(
        "{clientID:'c1', addrs:{0:\"127.0.0.1:10911\",1:'127.0.0.1:10912',},
          items:[{topic:'T',queueId:3},], count:5L, kind:0}",
    )
    .unwrap();
    assert_eq!(s.client_id, "c1");
    assert_eq!(s.addrs[&0], "127.0.0.1:10911");
    assert_eq!(s.addrs[&1], "127.0.0.1:10912");
    assert_eq!(
        s.items,
        vec![Item {
            topic: "T".into(),
            queue_id: 3
        }]
    );
    assert_eq!(s.count, 5);
    assert_eq!(s.kind, Kind::Broadcasting, "ordinal 0");
}

#[test]
fn absent_null_and_unknown_fields() {
    let s: Sample = from_str(r#"{"unknown":{"a":[1,2]},"items":null,"name":null}"#).unwrap();
    assert_eq!(s, Sample::default());
    let s: Sample = from_str(r#"{"items":[{"topic":"T","extra":true}]}"#).unwrap();
    assert_eq!(s.items[0].topic, "T");
    assert_eq!(s.items[0].queue_id, 0);
}

#[test]
fn field_names_match_as_fastjson_smart_match() {
    let s: Sample = from_str(r#"{"clientId":"a","QUEUE":1,"items":[{"queue_id":4}]}"#).unwrap();
    assert_eq!(s.client_id, "a");
    assert_eq!(s.items[0].queue_id, 4);
}

#[test]
fn refusals_name_the_field_and_the_reason() {
    let e: JsonError =
        from_str::<Sample>(r#"{"items":[{"queueId":1},{"queueId":"x1"}]}"#).unwrap_err();
    assert_eq!(e.path(), "items[1].queueId");
    assert_eq!(
        e.to_string(),
        "field `items[1].queueId`: \"x1\" is not a number"
    );
    let e = from_str::<Sample>(r#"{"count":3000000000}"#).unwrap_err();
    assert_eq!(e.path(), "count");
    assert!(e.reason().contains("does not fit i32"), "{e}");
    let e = from_str::<Sample>(r#"{"kind":"NEITHER"}"#).unwrap_err();
    assert_eq!(e.path(), "kind");
    let e = from_str::<Sample>(r#"{"items":{"a":1}}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "field `items`: expected an array, got an object"
    );
    let e = from_str::<Sample>(r#"{"count":1"#).unwrap_err();
    assert!(e.to_string().starts_with("syntax error at byte 10"), "{e}");
}

#[test]
fn syntax_edge_cases() {
    assert_eq!(parse(b" {} ").unwrap(), serde_json::json!({}));
    assert_eq!(
        parse(br#"['a\'b', "\u00e9\ud83d\ude00", "\x41"]"#).unwrap(),
        serde_json::json!(["a'b", "é😀", "A"])
    );
    assert_eq!(
        parse(b"[18446744073709551615, -1, 1e3, 2.5F]").unwrap(),
        serde_json::json!([18_446_744_073_709_551_615u64, -1, 1000.0, 2.5])
    );
    assert!(parse(b"{} x").is_err());
    assert!(parse(b"[1 2]").is_err());
    assert!(parse(b"{\"a\" 1}").is_err());
    assert!(parse(b"\"open").is_err());
    assert!(parse(b"nope").is_err());
    // Invalid UTF-8 is read with replacement characters, as Java does.
    assert_eq!(
        parse(b"\"a\xffb\"").unwrap(),
        serde_json::json!("a\u{fffd}b")
    );
    let deep = "[".repeat(super::parse::MAX_DEPTH + 1);
    let e = parse(deep.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("nested deeper"), "{e}");
}

#[test]
fn maps_keyed_by_numbers_and_maps_of_maps() {
    let m: HashMap<String, BTreeMap<i32, i64>> = from_str("{'t@g':{0:5,'1':\"6\"}}").unwrap();
    assert_eq!(m["t@g"][&0], 5);
    assert_eq!(m["t@g"][&1], 6);
}

fn sample_schema() -> Schema {
    Schema {
        maps: vec!["addrs"],
        maps_of_maps: vec![],
        value_maps: vec![],
        defaults: vec![
            ("", serde_json::to_value(Sample::default()).unwrap()),
            ("items", serde_json::to_value(Item::default()).unwrap()),
        ],
    }
}

fn arb_sample() -> impl Strategy<Value = Sample> {
    let text = prop_oneof![
        "[a-zA-Z0-9 '\"\\\\]{0,8}",
        "-?[0-9]{1,5}",
        Just(String::new())
    ];
    (
        text.clone(),
        any::<i32>(),
        any::<i64>(),
        any::<bool>(),
        proptest::option::of(text.clone()),
        proptest::collection::btree_map(any::<i64>(), text.clone(), 0..3),
        proptest::collection::vec((text, any::<i32>()), 0..3),
        any::<bool>(),
        -1000i32..1000,
    )
        .prop_map(
            |(client_id, count, big, flag, name, addrs, items, b, r)| Sample {
                client_id,
                count,
                big,
                ratio: f64::from(r) / 4.0,
                flag,
                name,
                addrs,
                items: items
                    .into_iter()
                    .map(|(topic, queue_id)| Item { topic, queue_id })
                    .collect(),
                kind: if b {
                    Kind::Broadcasting
                } else {
                    Kind::Clustering
                },
            },
        )
}

proptest! {
    #[test]
    fn every_rendering_decodes_to_the_same_value(s in arb_sample(), seed in any::<u64>()) {
        let canonical = serde_json::to_value(&s).unwrap();
        let mut state = seed;
        let mut pick = move |n: u32| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as u32) % n.max(1)
        };
        let text = render(&canonical, &sample_schema(), &mut pick);
        let back: Sample = from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(back, s, "{}", text);
    }
}
