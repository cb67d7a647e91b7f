//! A serde `Deserializer` over a parsed JSON value that converts the way
//! fastjson's `TypeUtils.castTo*` does when it fills a Java field:
//!
//! - integers and floats from numbers, numeric strings (trimmed), booleans
//!   (1/0); `null`, `""` and `"null"` give 0;
//! - booleans from `true`/`false`, `"true"`/`"false"` (any case), numbers
//!   (only 1 is true, as `castToBoolean`), `"1"`/`"0"`, `"Y"`/`"N"`,
//!   `"T"`/`"F"`; `null` and `""` give false;
//! - strings from strings, numbers and booleans (their JSON spelling), and
//!   from objects or arrays (their JSON text);
//! - enums by name or by ordinal; options from `null` (none) or a value;
//! - sequences, maps and structs from `null` as empty (a Java `null`
//!   collection or object, which our types hold as empty or default), and
//!   from a string holding their JSON (how an object map key arrives);
//! - struct keys matched exactly, else as fastjson's smart match does
//!   (case-insensitive, ignoring `_` and `-`); unknown keys ignored.
//!
//! Errors carry the path of the field that failed.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde_json::{Map, Value};

use super::JsonError;

/// The lenient deserializer over one value.
pub(crate) struct Lenient(pub Value);

/// A whole number as read from any of the accepted forms.
enum Int {
    Signed(i64),
    Unsigned(u64),
}

impl Lenient {
    fn integer(self) -> Result<Int, JsonError> {
        match self.0 {
            Value::Number(n) => number_int(&n),
            Value::Bool(b) => Ok(Int::Signed(i64::from(b))),
            Value::Null => Ok(Int::Signed(0)),
            Value::String(s) => {
                let t = s.trim();
                if t.is_empty() || t == "null" {
                    return Ok(Int::Signed(0));
                }
                match super::parse::number_value(t) {
                    Some(Value::Number(n)) => number_int(&n),
                    _ => Err(JsonError::msg(format!("{s:?} is not a number"))),
                }
            }
            other => Err(JsonError::msg(format!(
                "expected a number, got {}",
                kind(&other)
            ))),
        }
    }

    fn float(self) -> Result<f64, JsonError> {
        match self.0 {
            Value::Number(n) => Ok(n.as_f64().unwrap_or(0.0)),
            Value::Bool(b) => Ok(f64::from(u8::from(b))),
            Value::Null => Ok(0.0),
            Value::String(s) => {
                let t = s.trim();
                if t.is_empty() || t == "null" {
                    return Ok(0.0);
                }
                t.parse()
                    .map_err(|_| JsonError::msg(format!("{s:?} is not a number")))
            }
            other => Err(JsonError::msg(format!(
                "expected a number, got {}",
                kind(&other)
            ))),
        }
    }

    fn boolean(self) -> Result<bool, JsonError> {
        match self.0 {
            Value::Bool(b) => Ok(b),
            Value::Null => Ok(false),
            Value::Number(n) => Ok(n.as_i64() == Some(1)),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "y" | "t" => Ok(true),
                "false" | "0" | "n" | "f" | "" | "null" => Ok(false),
                _ => Err(JsonError::msg(format!("{s:?} is not a boolean"))),
            },
            other => Err(JsonError::msg(format!(
                "expected a boolean, got {}",
                kind(&other)
            ))),
        }
    }

    /// A map or struct (`fields` names a struct's) from an object, from
    /// `null` (empty) or from a string holding an object's JSON.
    fn object<'de, V: Visitor<'de>>(
        self,
        fields: Option<&'static [&'static str]>,
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        match self.embedded()? {
            Value::Object(map) => visitor.visit_map(Fields::new(map, fields)),
            Value::Null => visitor.visit_map(Fields::new(Map::new(), None)),
            other => Err(JsonError::msg(format!(
                "expected an object, got {}",
                kind(&other)
            ))),
        }
    }

    /// The value, or the JSON a string holds when it is an object or array
    /// in text form (fastjson parses such a string for a bean or a
    /// collection).
    fn embedded(self) -> Result<Value, JsonError> {
        match self.0 {
            Value::String(s) if s.trim_start().starts_with(['{', '[']) => {
                super::parse::parse(s.as_bytes())
            }
            other => Ok(other),
        }
    }

    fn text(self) -> String {
        match self.0 {
            Value::String(s) => s,
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }
}

fn number_int(n: &serde_json::Number) -> Result<Int, JsonError> {
    if let Some(i) = n.as_i64() {
        Ok(Int::Signed(i))
    } else if let Some(u) = n.as_u64() {
        Ok(Int::Unsigned(u))
    } else {
        // Java's intValue()/longValue() of a decimal truncates toward zero.
        let f = n.as_f64().unwrap_or(0.0).trunc();
        if f >= i64::MIN as f64 && f <= i64::MAX as f64 {
            Ok(Int::Signed(f as i64))
        } else {
            Err(JsonError::msg(format!("{n} is out of the 64-bit range")))
        }
    }
}

/// What a value is, for messages ("a string", "an object", ...).
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

macro_rules! int_method {
    ($method:ident, $visit:ident, $ty:ty) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
            let v: $ty = match self.integer()? {
                Int::Signed(i) => <$ty>::try_from(i)
                    .map_err(|_| JsonError::msg(format!("{i} does not fit {}", stringify!($ty))))?,
                Int::Unsigned(u) => <$ty>::try_from(u)
                    .map_err(|_| JsonError::msg(format!("{u} does not fit {}", stringify!($ty))))?,
            };
            visitor.$visit(v)
        }
    };
}

impl<'de> de::Deserializer<'de> for Lenient {
    type Error = JsonError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(0.0))
                }
            }
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => visitor.visit_seq(Seq::new(items)),
            Value::Object(map) => visitor.visit_map(Fields::new(map, None)),
        }
    }

    int_method!(deserialize_i8, visit_i8, i8);
    int_method!(deserialize_i16, visit_i16, i16);
    int_method!(deserialize_i32, visit_i32, i32);
    int_method!(deserialize_i64, visit_i64, i64);
    int_method!(deserialize_u8, visit_u8, u8);
    int_method!(deserialize_u16, visit_u16, u16);
    int_method!(deserialize_u32, visit_u32, u32);
    int_method!(deserialize_u64, visit_u64, u64);

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        visitor.visit_f32(self.float()? as f32)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        visitor.visit_f64(self.float()?)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        visitor.visit_bool(self.boolean()?)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        let s = self.text();
        match s.chars().next() {
            Some(c) => visitor.visit_char(c),
            None => Err(JsonError::msg("expected a character, got an empty string")),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        visitor.visit_string(self.text())
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        visitor.visit_string(self.text())
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        match self.embedded()? {
            Value::Array(items) => visitor.visit_seq(Seq::new(items)),
            Value::Null => visitor.visit_seq(Seq::new(Vec::new())),
            other => Err(JsonError::msg(format!(
                "expected an array, got {}",
                kind(&other)
            ))),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        self.object(None, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        self.object(Some(fields), visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        match self.0 {
            Value::Object(map) if map.len() == 1 => {
                let Some((variant, value)) = map.into_iter().next() else {
                    return Err(JsonError::msg("expected an enum"));
                };
                visitor.visit_enum(Variant {
                    name: Value::String(variant),
                    value: Some(value),
                })
            }
            v @ (Value::String(_) | Value::Number(_)) => visitor.visit_enum(Variant {
                name: v,
                value: None,
            }),
            other => Err(JsonError::msg(format!(
                "expected an enum name or ordinal, got {}",
                kind(&other)
            ))),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        match self.0 {
            Value::Number(n) if n.is_u64() => visitor.visit_u64(n.as_u64().unwrap_or(0)),
            other => visitor.visit_string(Lenient(other).text()),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        visitor.visit_unit()
    }
}

impl<'de> IntoDeserializer<'de, JsonError> for Lenient {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// Array items, each error tagged with its index.
struct Seq {
    items: std::vec::IntoIter<Value>,
    index: usize,
}

impl Seq {
    fn new(items: Vec<Value>) -> Self {
        Self {
            items: items.into_iter(),
            index: 0,
        }
    }
}

impl<'de> de::SeqAccess<'de> for Seq {
    type Error = JsonError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, JsonError> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let i = self.index;
        self.index += 1;
        seed.deserialize(Lenient(item))
            .map(Some)
            .map_err(|e| e.within(format!("[{i}]")))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// Object entries, each error tagged with its key. For a struct, keys that
/// name no field are matched to one as fastjson's smart match does.
struct Fields {
    entries: serde_json::map::IntoIter,
    fields: Option<&'static [&'static str]>,
    pending: Option<(String, Value)>,
}

impl Fields {
    fn new(map: Map<String, Value>, fields: Option<&'static [&'static str]>) -> Self {
        Self {
            entries: map.into_iter(),
            fields,
            pending: None,
        }
    }

    fn field_name(&self, key: String) -> String {
        let Some(fields) = self.fields else {
            return key;
        };
        if fields.contains(&key.as_str()) {
            return key;
        }
        let wanted = smart(&key);
        fields
            .iter()
            .find(|f| smart(f) == wanted)
            .map_or(key, |f| (*f).to_owned())
    }
}

/// fastjson's smart-match form of a name: lower case, no `_` or `-`.
fn smart(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

impl<'de> de::MapAccess<'de> for Fields {
    type Error = JsonError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, JsonError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        let name = self.field_name(key);
        let k = seed
            .deserialize(Lenient(Value::String(name.clone())))
            .map_err(|e| e.within(format!("key {name:?}")))?;
        self.pending = Some((name, value));
        Ok(Some(k))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, JsonError> {
        let Some((name, value)) = self.pending.take() else {
            return Err(JsonError::msg("value asked for before its key"));
        };
        seed.deserialize(Lenient(value)).map_err(|e| e.within(name))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// An enum given as a name, an ordinal or a one-key object.
struct Variant {
    name: Value,
    value: Option<Value>,
}

impl<'de> de::EnumAccess<'de> for Variant {
    type Error = JsonError;
    type Variant = VariantValue;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, VariantValue), JsonError> {
        let v = seed.deserialize(Lenient(self.name))?;
        Ok((v, VariantValue(self.value)))
    }
}

struct VariantValue(Option<Value>);

impl<'de> de::VariantAccess<'de> for VariantValue {
    type Error = JsonError;

    fn unit_variant(self) -> Result<(), JsonError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, JsonError> {
        seed.deserialize(Lenient(self.0.unwrap_or(Value::Null)))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        de::Deserializer::deserialize_seq(Lenient(self.0.unwrap_or(Value::Null)), visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        de::Deserializer::deserialize_struct(
            Lenient(self.0.unwrap_or(Value::Null)),
            "",
            fields,
            visitor,
        )
    }
}
