//! Renders a JSON value the many ways real clients and fastjson write the
//! same thing, for property tests of [`super::from_slice`]: numbers as
//! strings, numeric strings as numbers, booleans as `"true"`/`1`/`"0"`,
//! single-quoted and unquoted keys (`{0:"a"}`), absent fields that hold
//! their default, unknown fields, trailing commas and odd whitespace.
//!
//! Every variation must decode to the same value as the canonical JSON.
//! Which objects are structs (where fields may be dropped or added) and
//! which are maps (whose keys are data) is told by a [`Schema`].

use serde_json::{Map, Value};

/// What the renderer must know of a body type.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// Fields whose value is a map keyed by data (e.g. `topicConfigTable`);
    /// the map's values are structs.
    pub maps: Vec<&'static str>,
    /// Fields whose value is a map of maps (e.g. `offsetTable`).
    pub maps_of_maps: Vec<&'static str>,
    /// Fields whose value is a map of plain values (e.g. a topic's
    /// `attributes`): every key is data, so no unknown field is added.
    pub value_maps: Vec<&'static str>,
    /// The serialized default of each struct, by the field its objects
    /// appear under (the array or map field for elements; `""` for the
    /// root). A field equal to its default may be left out.
    pub defaults: Vec<(&'static str, Value)>,
}

/// A source of choices: `pick(n)` returns a number below `n`.
pub trait Choices {
    /// A number in `0..n` (`n` >= 1).
    fn pick(&mut self, n: u32) -> u32;
}

impl<F: FnMut(u32) -> u32> Choices for F {
    fn pick(&mut self, n: u32) -> u32 {
        self(n) % n.max(1)
    }
}

/// Where an object sits, for the schema.
#[derive(Clone, Copy)]
enum Place<'a> {
    /// A struct that appears under this field.
    Struct(&'a str),
    /// A map whose values are structs appearing under this field.
    Map(&'a str),
    /// A map whose values are maps.
    MapOfMaps(&'a str),
    /// A map whose values are plain values.
    Values(&'a str),
}

/// One random rendering of `value` (the canonical JSON of a body).
pub fn render(value: &Value, schema: &Schema, c: &mut dyn Choices) -> String {
    let mut out = String::new();
    write(value, Place::Struct(""), schema, c, &mut out);
    out
}

fn ws(c: &mut dyn Choices, out: &mut String) {
    match c.pick(6) {
        0 => out.push(' '),
        1 => out.push_str("\n\t"),
        _ => {}
    }
}

fn write<'a>(
    v: &'a Value,
    place: Place<'a>,
    schema: &Schema,
    c: &mut dyn Choices,
    out: &mut String,
) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => write_bool(*b, c, out),
        Value::Number(n) => match c.pick(3) {
            0 => quoted(&n.to_string(), c, out),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(s, c, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ws(c, out);
                write(item, element_place(place), schema, c, out);
            }
            trailing_comma(!items.is_empty(), c, out);
            out.push(']');
        }
        Value::Object(map) => write_object(map, place, schema, c, out),
    }
}

/// Array elements are structs named by the array's field.
fn element_place(place: Place<'_>) -> Place<'_> {
    match place {
        Place::Struct(f) | Place::Map(f) | Place::MapOfMaps(f) | Place::Values(f) => {
            Place::Struct(f)
        }
    }
}

fn write_object<'a>(
    map: &'a Map<String, Value>,
    place: Place<'a>,
    schema: &Schema,
    c: &mut dyn Choices,
    out: &mut String,
) {
    let default = match place {
        Place::Struct(f) => schema
            .defaults
            .iter()
            .find(|(name, _)| *name == f)
            .and_then(|(_, d)| d.as_object()),
        _ => None,
    };
    out.push('{');
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
    };
    for (key, value) in map {
        let is_default = default.is_some_and(|d| d.get(key) == Some(value));
        if is_default && c.pick(2) == 0 {
            continue;
        }
        sep(out);
        ws(c, out);
        write_key(key, c, out);
        out.push(':');
        ws(c, out);
        let inner = match place {
            Place::Struct(_) if schema.maps_of_maps.contains(&key.as_str()) => {
                Place::MapOfMaps(key.as_str())
            }
            Place::Struct(_) if schema.maps.contains(&key.as_str()) => Place::Map(key.as_str()),
            Place::Struct(_) if schema.value_maps.contains(&key.as_str()) => {
                Place::Values(key.as_str())
            }
            Place::Struct(_) => Place::Struct(key.as_str()),
            Place::Map(f) | Place::Values(f) => Place::Struct(f),
            Place::MapOfMaps(f) => Place::Map(f),
        };
        write(value, inner, schema, c, out);
    }
    if matches!(place, Place::Struct(_)) && c.pick(3) == 0 {
        sep(out);
        let n = c.pick(1000);
        out.push_str(&format!("\"unknownField{n}\":"));
        match c.pick(3) {
            0 => out.push_str(&format!("{{\"x\":[{n},'y']}}")),
            1 => out.push_str("null"),
            _ => out.push_str(&n.to_string()),
        }
    }
    trailing_comma(!map.is_empty(), c, out);
    out.push('}');
}

fn trailing_comma(non_empty: bool, c: &mut dyn Choices, out: &mut String) {
    if non_empty && c.pick(8) == 0 {
        out.push(',');
    }
}

fn write_key(key: &str, c: &mut dyn Choices, out: &mut String) {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
    match c.pick(3) {
        0 if bare => out.push_str(key),
        1 => single_quoted(key, out),
        _ => out.push_str(&Value::String(key.to_owned()).to_string()),
    }
}

fn write_bool(b: bool, c: &mut dyn Choices, out: &mut String) {
    let text = match (c.pick(5), b) {
        (0, true) => "\"true\"",
        (0, false) => "\"false\"",
        (1, true) => "1",
        (1, false) => "0",
        (2, true) => "'1'",
        (2, false) => "'0'",
        (3, true) => "\"TRUE\"",
        (3, false) => "\"False\"",
        (_, true) => "true",
        (_, false) => "false",
    };
    out.push_str(text);
}

fn write_string(s: &str, c: &mut dyn Choices, out: &mut String) {
    // A string that is a number in its canonical spelling may go bare.
    let numeric = s.parse::<i64>().is_ok_and(|n| n.to_string() == s);
    if numeric && c.pick(2) == 0 {
        out.push_str(s);
    } else {
        quoted(s, c, out);
    }
}

fn quoted(s: &str, c: &mut dyn Choices, out: &mut String) {
    if c.pick(2) == 0 {
        single_quoted(s, out);
    } else {
        out.push_str(&Value::String(s.to_owned()).to_string());
    }
}

fn single_quoted(s: &str, out: &mut String) {
    out.push('\'');
    for ch in s.chars() {
        match ch {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
}
