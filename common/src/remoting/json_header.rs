//! The JSON header (serialize type 0), as Java's fastjson writes it.
//!
//! Decoding is lenient the way real clients need: `language` as a name or an
//! integer, integers as JSON numbers or numeric strings, `extFields` values as
//! strings, numbers or booleans (stored as strings), unknown keys ignored.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::command::{RemotingCommand, SerializeType};
use super::error::RemotingError;
use super::language::LanguageCode;
use crate::json::kind;

/// The header as written: keys in fastjson's (alphabetical) order, `remark`
/// and an empty `extFields` left out as Java leaves out nulls.
#[derive(Serialize)]
struct JsonHeaderOut<'a> {
    code: i32,
    #[serde(rename = "extFields", skip_serializing_if = "is_empty_map")]
    ext_fields: &'a BTreeMap<String, String>,
    flag: i32,
    language: &'static str,
    opaque: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    remark: Option<&'a str>,
    #[serde(rename = "serializeTypeCurrentRPC")]
    serialize_type_current_rpc: &'static str,
    version: i32,
}

fn is_empty_map(map: &&BTreeMap<String, String>) -> bool {
    map.is_empty()
}

/// Appends the JSON header of `cmd` to `out`.
pub(crate) fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) -> Result<(), RemotingError> {
    let header = JsonHeaderOut {
        code: cmd.code,
        ext_fields: &cmd.ext_fields,
        flag: cmd.flag,
        language: cmd.language.name(),
        opaque: cmd.opaque,
        remark: cmd.remark.as_deref(),
        serialize_type_current_rpc: SerializeType::Json.name(),
        version: cmd.version,
    };
    serde_json::to_writer(out, &header).map_err(|source| RemotingError::JsonEncode { source })
}

/// Decodes a JSON header; the body is left empty.
pub(crate) fn decode(header: &[u8]) -> Result<RemotingCommand, RemotingError> {
    match super::json_header_fast::decode(header) {
        Some(cmd) => Ok(cmd),
        None => decode_general(header),
    }
}

/// Decodes any header the lenient way, through a `serde_json::Value` tree,
/// with an error naming the field that is wrong.
pub(crate) fn decode_general(header: &[u8]) -> Result<RemotingCommand, RemotingError> {
    // Strict JSON first (what every client writes, and the fast path);
    // fastjson's looser syntax (single quotes, unquoted keys) second.
    let value: Value = match serde_json::from_slice(header) {
        Ok(v) => v,
        Err(source) => {
            crate::json::parse::parse(header).map_err(|_| RemotingError::Json { source })?
        }
    };
    let Value::Object(obj) = value else {
        return Err(RemotingError::InvalidJsonField {
            field: "<header>",
            reason: format!("expected a JSON object, got {}", kind(&value)),
        });
    };
    let code = int_field(&obj, "code")?.ok_or(RemotingError::MissingField("code"))?;
    let language = match obj.get("language") {
        None | Some(Value::Null) => LanguageCode::Java,
        Some(Value::String(name)) => LanguageCode::from_name(name),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|v| u8::try_from(v).ok())
            .map_or(LanguageCode::Other, LanguageCode::from_code),
        Some(other) => {
            return Err(RemotingError::InvalidJsonField {
                field: "language",
                reason: format!("expected a name or an integer, got {}", kind(other)),
            })
        }
    };
    let remark = match obj.get("remark") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other @ (Value::Number(_) | Value::Bool(_))) => Some(other.to_string()),
        Some(other) => {
            return Err(RemotingError::InvalidJsonField {
                field: "remark",
                reason: format!("expected a string, got {}", kind(other)),
            })
        }
    };
    let ext_fields = match obj.get("extFields") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(map)) => ext_map(map),
        Some(other) => {
            return Err(RemotingError::InvalidJsonField {
                field: "extFields",
                reason: format!("expected an object, got {}", kind(other)),
            })
        }
    };
    Ok(RemotingCommand {
        code,
        language,
        version: int_field(&obj, "version")?.unwrap_or(0),
        opaque: int_field(&obj, "opaque")?.unwrap_or(0),
        flag: int_field(&obj, "flag")?.unwrap_or(0),
        remark,
        ext_fields,
        body: None,
        body_parts: Vec::new(),
        serialize_type: SerializeType::Json,
    })
}

/// `extFields` values as strings: numbers in their JSON spelling, booleans as
/// `"true"`/`"false"`, nested values as compact JSON text, nulls dropped.
fn ext_map(map: &Map<String, Value>) -> BTreeMap<String, String> {
    map.iter()
        .filter_map(|(key, value)| {
            let text = match value {
                Value::Null => return None,
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some((key.clone(), text))
        })
        .collect()
}

/// An `i32` header field given as a JSON integer or a numeric string.
fn int_field(obj: &Map<String, Value>, field: &'static str) -> Result<Option<i32>, RemotingError> {
    let invalid = |reason: String| RemotingError::InvalidJsonField { field, reason };
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|v| i32::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| invalid(format!("{n} is not a 32-bit integer"))),
        Some(Value::String(s)) => s
            .trim()
            .parse::<i32>()
            .map(Some)
            .map_err(|e| invalid(format!("{s:?} is not a 32-bit integer: {e}"))),
        Some(other) => Err(invalid(format!("expected an integer, got {}", kind(other)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext_fields_numbers_and_booleans_become_strings() {
        let json = br#"{"code":"10","language":9,"opaque":3,"flag":0,
            "extFields":{"queueId":3,"unitMode":false,"batch":true,"bornTimestamp":1700000000123,
                         "topic":"T","nothing":null,"nested":{"a":1}},
            "remark":null,"serializeTypeCurrentRPC":"JSON","suspended":false,"unknown":[1]}"#;
        let cmd = decode(json).unwrap();
        assert_eq!(cmd.code, 10);
        assert_eq!(cmd.language, LanguageCode::Go);
        assert_eq!(cmd.opaque, 3);
        assert_eq!(cmd.version, 0);
        assert_eq!(cmd.remark, None);
        let ext = &cmd.ext_fields;
        assert_eq!(ext["queueId"], "3");
        assert_eq!(ext["unitMode"], "false");
        assert_eq!(ext["batch"], "true");
        assert_eq!(ext["bornTimestamp"], "1700000000123");
        assert_eq!(ext["topic"], "T");
        assert_eq!(ext["nested"], r#"{"a":1}"#);
        assert!(!ext.contains_key("nothing"));
    }

    #[test]
    fn language_name_is_case_insensitive_and_unknown_is_other() {
        let cmd = decode(br#"{"code":34,"language":"cpp"}"#).unwrap();
        assert_eq!(cmd.language, LanguageCode::Cpp);
        let cmd = decode(br#"{"code":34,"language":"KOTLIN"}"#).unwrap();
        assert_eq!(cmd.language, LanguageCode::Other);
        let cmd = decode(br#"{"code":34,"language":400}"#).unwrap();
        assert_eq!(cmd.language, LanguageCode::Other);
        let cmd = decode(br#"{"code":34}"#).unwrap();
        assert_eq!(cmd.language, LanguageCode::Java);
    }

    #[test]
    fn named_errors() {
        let err = decode(b"{\"code\":").unwrap_err();
        assert!(matches!(err, RemotingError::Json { .. }), "{err}");
        let err = decode(b"[1,2]").unwrap_err();
        assert!(
            matches!(
                err,
                RemotingError::InvalidJsonField {
                    field: "<header>",
                    ..
                }
            ),
            "{err}"
        );
        let err = decode(br#"{"opaque":1}"#).unwrap_err();
        assert!(matches!(err, RemotingError::MissingField("code")), "{err}");
        let err = decode(br#"{"code":"ten"}"#).unwrap_err();
        assert!(
            matches!(err, RemotingError::InvalidJsonField { field: "code", .. }),
            "{err}"
        );
        let err = decode(br#"{"code":1,"opaque":4294967296}"#).unwrap_err();
        assert!(
            matches!(
                err,
                RemotingError::InvalidJsonField {
                    field: "opaque",
                    ..
                }
            ),
            "{err}"
        );
        let err = decode(br#"{"code":1,"extFields":[1]}"#).unwrap_err();
        assert!(
            matches!(
                err,
                RemotingError::InvalidJsonField {
                    field: "extFields",
                    ..
                }
            ),
            "{err}"
        );
        let err = decode(br#"{"code":1,"language":true}"#).unwrap_err();
        assert!(
            matches!(
                err,
                RemotingError::InvalidJsonField {
                    field: "language",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("language"), "{err}");
    }
}
