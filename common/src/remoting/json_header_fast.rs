//! The fast path of the JSON header decoder: straight from the bytes into the
//! command's fields, without the intermediate `serde_json::Value` tree.
//!
//! It handles what clients send every time (the fields Java's
//! `RemotingCommand` writes; integers as numbers or numeric strings,
//! `language` as a name or a code, `extFields` values as strings, integers,
//! booleans or nulls) and gives up on anything else (another field, a float,
//! a nested value, a duplicate field, fastjson's looser syntax): the general
//! decoder in `json_header` then decides, with its own errors. Where it
//! answers, it answers exactly as the general decoder would.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::command::{RemotingCommand, SerializeType};
use super::language::LanguageCode;

/// Decodes `header`, or `None` when the general decoder must look at it.
pub(crate) fn decode(header: &[u8]) -> Option<RemotingCommand> {
    // A derived struct would also take a JSON array of its fields in order;
    // the header must be an object.
    if header.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let h: Header = serde_json::from_slice(header).ok()?;
    Some(RemotingCommand {
        code: h.code?.0,
        language: h.language.map_or(LanguageCode::Java, |l| l.0),
        version: h.version.map_or(0, |v| v.0),
        opaque: h.opaque.map_or(0, |v| v.0),
        flag: h.flag.map_or(0, |v| v.0),
        remark: h.remark.map(|r| r.0),
        ext_fields: h.ext_fields.map(|e| e.0).unwrap_or_default(),
        body: None,
        body_parts: Vec::new(),
        serialize_type: SerializeType::Json,
    })
}

/// The fields the command takes, and the one other field clients send. Any
/// other field sends the header to the general decoder: skipping a value
/// unread would accept what its parser refuses (a number out of range, a
/// value nested past its recursion limit). Every field's visitor refuses
/// arrays and objects (`extFields` but one level), so nothing nests deeper
/// than `extFields` here. A JSON null is `None`, as there.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    code: Option<Int>,
    language: Option<Lang>,
    version: Option<Int>,
    opaque: Option<Int>,
    flag: Option<Int>,
    remark: Option<Text>,
    #[serde(rename = "extFields")]
    ext_fields: Option<Ext>,
    /// Read (so that it is checked as a scalar) but not used: the frame's
    /// header word says how the header is serialized.
    #[serde(rename = "serializeTypeCurrentRPC")]
    #[allow(dead_code)]
    serialize_type_current_rpc: Option<Text>,
}

/// Refuses any other JSON kind, so the general decoder reports it.
fn refuse<E: de::Error>(what: &str) -> E {
    E::custom(format_args!("left to the general decoder: {what}"))
}

/// An `i32` given as an integer or a numeric string (blanks trimmed).
struct Int(i32);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Int;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a 32-bit integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
                i32::try_from(v)
                    .map(Int)
                    .map_err(|_| refuse("out of range"))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
                i32::try_from(v)
                    .map(Int)
                    .map_err(|_| refuse("out of range"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Int, E> {
                v.trim()
                    .parse()
                    .map(Int)
                    .map_err(|_| refuse("not a number"))
            }
        }
        d.deserialize_any(V)
    }
}

/// `language` as a name (any case) or a code; an unknown one is `Other`.
struct Lang(LanguageCode);

impl<'de> Deserialize<'de> for Lang {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Lang;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a language name or code")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Lang, E> {
                Ok(Lang(LanguageCode::from_name(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Lang, E> {
                Ok(Lang(
                    u8::try_from(v).map_or(LanguageCode::Other, LanguageCode::from_code),
                ))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Lang, E> {
                // Only negative integers come here.
                Ok(Lang(LanguageCode::Other))
            }
        }
        d.deserialize_any(V)
    }
}

/// `remark`: a string, or an integer or boolean in its JSON spelling.
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarText).and_then(|t| match t {
            Some(t) => Ok(Text(t)),
            None => Err(refuse("null inside a value")),
        })
    }
}

/// A scalar as the text the general decoder stores: strings as they are,
/// integers and booleans in their JSON spelling, null as `None`.
struct ScalarText;

impl Visitor<'_> for ScalarText {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, integer, boolean or null")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// One `extFields` value (`None`: a null, which is dropped).
struct ExtValue(Option<String>);

impl<'de> Deserialize<'de> for ExtValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarText).map(ExtValue)
    }
}

/// `extFields` as the string map; a repeated key keeps its last value.
struct Ext(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for Ext {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ext;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ext, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    match map.next_value::<ExtValue>()?.0 {
                        Some(text) => {
                            out.insert(key, text);
                        }
                        None => {
                            // A null drops the key, even one given before.
                            out.remove(&key);
                        }
                    }
                }
                Ok(Ext(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::decode;
    use crate::remoting::json_header::decode_general;

    /// Headers real clients send, and odd ones: wherever the fast path
    /// answers, its answer is the general decoder's.
    const HEADERS: &[&str] = &[
        r#"{"code":10,"extFields":{"topic":"T","queueId":"3","bornTimestamp":"1700000000123","flag":"0","properties":"KEYS\u0001k\u0002"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":399}"#,
        r#"{"code":"10","language":9,"opaque":3,"flag":0,"extFields":{"queueId":3,"unitMode":false,"batch":true,"bornTimestamp":1700000000123,"topic":"T","nothing":null},"remark":null,"serializeTypeCurrentRPC":"JSON","suspended":false,"unknown":[1]}"#,
        r#"{"code":34,"language":"cpp"}"#,
        r#"{"code":34,"language":"KOTLIN"}"#,
        r#"{"code":34,"language":400}"#,
        r#"{"code":34,"language":-1}"#,
        r#"{"code":34}"#,
        r#"  {"code":" 12 ","remark":5,"opaque":true}"#,
        r#"{"code":1,"remark":true,"flag":"1"}"#,
        r#"{"code":1,"extFields":{"a":"1","a":null}}"#,
        r#"{"code":1,"extFields":{"a":null,"a":"2"}}"#,
        r#"{"code":1,"code":2}"#,
        r#"{"code":1.5}"#,
        r#"{"code":1,"extFields":{"n":{"a":1}}}"#,
        r#"{"code":1,"extFields":{"f":1.25}}"#,
        r#"{"code":1,"extFields":[1]}"#,
        r#"{"code":1,"opaque":4294967296}"#,
        r#"{"code":1,"language":true}"#,
        r#"{"code":"ten"}"#,
        r#"{"opaque":1}"#,
        r#"[10,"JAVA",0,1,0,null,{}]"#,
        r#"{code:10,'language':'JAVA'}"#,
        r#"{"code":"#,
        // Found by the fuzzer: an unknown field holding a number beyond f64.
        r#"{"code":0,"lcF0\t00000\t002-IIIIIII.000\t00;-<<<<<<<<<<<<<<<<<<E<<<nguage":2e339}"#,
        r#"{"code":0,"serializeTypeCurrentRPC":2e339}"#,
        r#"{"code":0,"extFields":{"a":2e339}}"#,
        r#"{"code":0,"remark":1e400}"#,
    ];

    /// A JSON scalar a header field might hold.
    fn leaf() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value;
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-1000i64..1000).prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[ a-zA-Z0-9_\\-]{0,8}".prop_map(Value::from),
            "[ ]?-?[0-9]{1,12}[ ]?".prop_map(Value::from),
            prop_oneof![Just("JAVA"), Just("cpp"), Just("GO"), Just("KOTLIN")]
                .prop_map(Value::from),
        ]
    }

    /// Mostly scalars, sometimes nested a little.
    fn any_value() -> impl Strategy<Value = serde_json::Value> {
        let nested = leaf().prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(serde_json::Value::Array),
                prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        });
        prop_oneof![8 => leaf(), 1 => nested]
    }

    const FIELDS: &[&str] = &[
        "language",
        "version",
        "opaque",
        "flag",
        "remark",
        "extFields",
        "serializeTypeCurrentRPC",
        "other",
    ];

    proptest! {
        #[test]
        fn random_headers_answer_as_the_general_decoder(
            code in prop_oneof![
                (0i64..500).prop_map(serde_json::Value::from),
                "[ ]?[0-9]{1,3}[ ]?".prop_map(serde_json::Value::from),
                any_value(),
            ],
            fields in prop::collection::vec((prop::sample::select(FIELDS), any_value()), 0..3),
            ext in prop::collection::btree_map("[a-zA-Z]{1,6}", any_value(), 0..6),
        ) {
            let mut obj = serde_json::Map::new();
            obj.insert("code".into(), code);
            for (k, v) in fields {
                obj.insert(k.to_owned(), v);
            }
            if !obj.contains_key("extFields") {
                obj.insert("extFields".into(), serde_json::Value::Object(ext.into_iter().collect()));
            }
            let h = serde_json::to_vec(&serde_json::Value::Object(obj)).unwrap();
            if let Some(fast) = decode(&h) {
                match decode_general(&h) {
                    Ok(general) => prop_assert_eq!(fast, general),
                    Err(e) => prop_assert!(false, "the fast path took what the general one refuses: {}", e),
                }
            }
        }
    }

    #[test]
    fn deep_unknown_fields_answer_as_the_general_decoder() {
        for depth in [10, 127, 128, 129, 200, 5000] {
            let h = format!(
                r#"{{"code":1,"deep":{}{},"extFields":{{"a":"b"}}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            );
            let general = decode_general(h.as_bytes());
            if let Some(fast) = decode(h.as_bytes()) {
                match general {
                    Ok(general) => assert_eq!(fast, general, "depth {depth}"),
                    Err(e) => panic!(
                        "depth {depth}: the fast path took what the general one refuses: {e}"
                    ),
                }
            }
        }
    }

    #[test]
    fn answers_as_the_general_decoder_or_not_at_all() {
        let mut answered = 0;
        for h in HEADERS {
            if let Some(fast) = decode(h.as_bytes()) {
                answered += 1;
                match decode_general(h.as_bytes()) {
                    Ok(general) => assert_eq!(fast, general, "{h}"),
                    Err(e) => {
                        panic!("the fast path took {h}, which the general decoder refuses: {e}")
                    }
                }
            }
        }
        // The everyday headers take the fast path.
        assert!(answered >= 8, "only {answered} headers took the fast path");
        assert!(decode(HEADERS[0].as_bytes()).is_some());
        // Fields no client is known to send go the general way.
        assert!(decode(HEADERS[1].as_bytes()).is_none());
    }
}
