//! One decoding layer for every JSON body the broker and the NameServer
//! read, as lenient as Java's broker is: Apache RocketMQ decodes bodies with
//! fastjson, and clients in other languages rely on what it accepts.
//!
//! [`from_slice`] accepts fastjson's syntax (single quotes, unquoted keys such
//! as `{0:"127.0.0.1:10911"}`, trailing commas; see [`parse`]) and converts
//! values the way fastjson fills a Java field (numbers as strings, strings as
//! numbers, booleans as `"true"`/`0`/`1`, `null` as the default, enums by
//! name or ordinal, field names matched case-insensitively; see the `de`
//! module). Absent fields take the type's serde default, which each body type
//! sets to Java's, and unknown fields are ignored. A refused body gets a
//! [`JsonError`] naming the field path and the reason.

mod de;
pub mod parse;
pub mod render;
pub mod write;

use serde::de::DeserializeOwned;

pub(crate) use de::kind;

/// Why a JSON body was refused: where (a field path such as
/// `consumerDataSet[0].subVersion`, or a byte position) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct JsonError {
    /// Field names and `[index]`es, innermost first.
    path: Vec<String>,
    /// Byte position of a syntax error.
    position: Option<usize>,
    /// What is wrong.
    reason: String,
}

impl JsonError {
    fn msg(reason: impl Into<String>) -> Self {
        Self {
            path: Vec::new(),
            position: None,
            reason: reason.into(),
        }
    }

    fn syntax(position: usize, reason: &str) -> Self {
        Self {
            path: Vec::new(),
            position: Some(position),
            reason: reason.to_owned(),
        }
    }

    /// The same error, one level further out.
    fn within(mut self, segment: String) -> Self {
        self.path.push(segment);
        self
    }

    /// The field path, outermost first (`a.b[2].c`); empty for the root.
    pub fn path(&self) -> String {
        let mut out = String::new();
        for seg in self.path.iter().rev() {
            if !out.is_empty() && !seg.starts_with('[') {
                out.push('.');
            }
            out.push_str(seg);
        }
        out
    }

    /// What is wrong, without the place.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    fn render(&self) -> String {
        match (self.position, self.path.is_empty()) {
            (Some(p), _) => format!("syntax error at byte {p}: {}", self.reason),
            (None, true) => self.reason.clone(),
            (None, false) => format!("field `{}`: {}", self.path(), self.reason),
        }
    }
}

impl serde::de::Error for JsonError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Self::msg(msg.to_string())
    }
}

/// Decodes a body the way Java's broker would (see the module docs).
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, JsonError> {
    from_value(parse::parse(bytes)?)
}

/// [`from_slice`] for text.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, JsonError> {
    from_slice(text.as_bytes())
}

/// Decodes an already parsed value leniently.
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, JsonError> {
    T::deserialize(de::Lenient(value))
}

#[cfg(test)]
mod tests;
