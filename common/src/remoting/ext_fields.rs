//! A lenient, typed view of a command's `extFields`, the string map that
//! carries every custom header.
//!
//! Real clients send numbers with stray blanks, booleans as `"1"`/`"0"` or in
//! any case, and extra keys (`bname`, `AccessKey`, ...). Getters trim, accept
//! those spellings, ignore keys nobody asks for, and name the field when a
//! value is missing or unreadable. A blank value counts as absent.

use std::collections::BTreeMap;
use std::num::ParseIntError;

/// Why a custom header field could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// A required field is absent (or blank).
    #[error("missing required header field `{field}`")]
    Missing {
        /// The field name as sent on the wire.
        field: &'static str,
    },
    /// A field is not a decimal integer of the expected width.
    #[error("header field `{field}` = {value:?} is not a valid integer: {source}")]
    InvalidInt {
        /// The field name as sent on the wire.
        field: &'static str,
        /// The raw value.
        value: String,
        /// The parser's error.
        #[source]
        source: ParseIntError,
    },
    /// A field is not `true`/`false`/`1`/`0`.
    #[error("header field `{field}` = {value:?} is not a boolean (true/false/1/0)")]
    InvalidBool {
        /// The field name as sent on the wire.
        field: &'static str,
        /// The raw value.
        value: String,
    },
}

/// A borrowed view of `extFields` with lenient typed getters.
///
/// `get_*` return `Ok(None)` for an absent or blank field and an error for an
/// unreadable one; `req_*` also fail with [`HeaderError::Missing`].
#[derive(Debug, Clone, Copy)]
pub struct ExtFields<'a> {
    map: &'a BTreeMap<String, String>,
}

impl<'a> ExtFields<'a> {
    /// A view of `map`.
    pub fn new(map: &'a BTreeMap<String, String>) -> Self {
        Self { map }
    }

    /// Whether the field is present (even if blank).
    pub fn contains(&self, field: &str) -> bool {
        self.map.contains_key(field)
    }

    /// The raw value, untrimmed; `None` if absent.
    pub fn get_str(&self, field: &str) -> Option<&'a str> {
        self.map.get(field).map(String::as_str)
    }

    /// The raw value of a required field; blank counts as missing.
    pub fn req_str(&self, field: &'static str) -> Result<&'a str, HeaderError> {
        self.non_blank(field).ok_or(HeaderError::Missing { field })
    }

    /// An optional `i32`.
    pub fn get_i32(&self, field: &'static str) -> Result<Option<i32>, HeaderError> {
        self.non_blank(field)
            .map(|raw| parse_int(field, raw))
            .transpose()
    }

    /// A required `i32`.
    pub fn req_i32(&self, field: &'static str) -> Result<i32, HeaderError> {
        self.get_i32(field)?.ok_or(HeaderError::Missing { field })
    }

    /// An optional `i64`.
    pub fn get_i64(&self, field: &'static str) -> Result<Option<i64>, HeaderError> {
        self.non_blank(field)
            .map(|raw| parse_int(field, raw))
            .transpose()
    }

    /// A required `i64`.
    pub fn req_i64(&self, field: &'static str) -> Result<i64, HeaderError> {
        self.get_i64(field)?.ok_or(HeaderError::Missing { field })
    }

    /// An optional boolean: `true`/`false` in any case, or `1`/`0`.
    pub fn get_bool(&self, field: &'static str) -> Result<Option<bool>, HeaderError> {
        self.non_blank(field)
            .map(|raw| parse_bool(field, raw))
            .transpose()
    }

    /// A required boolean.
    pub fn req_bool(&self, field: &'static str) -> Result<bool, HeaderError> {
        self.get_bool(field)?.ok_or(HeaderError::Missing { field })
    }

    /// The trimmed value, `None` when absent or blank.
    fn non_blank(&self, field: &str) -> Option<&'a str> {
        self.get_str(field)
            .map(str::trim)
            .filter(|value| !value.is_empty())
    }
}

fn parse_int<T: std::str::FromStr<Err = ParseIntError>>(
    field: &'static str,
    raw: &str,
) -> Result<T, HeaderError> {
    // Java's Integer.parseInt accepts a leading '+', as does Rust's parser.
    raw.parse().map_err(|source| HeaderError::InvalidInt {
        field,
        value: raw.to_owned(),
        source,
    })
}

fn parse_bool(field: &'static str, raw: &str) -> Result<bool, HeaderError> {
    if raw.eq_ignore_ascii_case("true") || raw == "1" {
        Ok(true)
    } else if raw.eq_ignore_ascii_case("false") || raw == "0" {
        Ok(false)
    } else {
        Err(HeaderError::InvalidBool {
            field,
            value: raw.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn numbers_are_trimmed_and_errors_name_the_field() {
        let m = map(&[
            ("queueId", " 3 "),
            ("offset", "-1"),
            ("bad", "3x"),
            ("blank", "  "),
        ]);
        let ext = ExtFields::new(&m);
        assert_eq!(ext.req_i32("queueId"), Ok(3));
        assert_eq!(ext.req_i64("offset"), Ok(-1));
        assert_eq!(ext.get_i32("absent"), Ok(None));
        assert_eq!(ext.get_i32("blank"), Ok(None));
        let err = ext.req_i32("bad").unwrap_err();
        assert!(matches!(err, HeaderError::InvalidInt { field: "bad", .. }));
        assert!(err.to_string().contains("`bad`"), "{err}");
        let err = ext.req_i64("absent").unwrap_err();
        assert_eq!(err, HeaderError::Missing { field: "absent" });
        assert!(err.to_string().contains("`absent`"), "{err}");
        assert_eq!(
            ext.req_str("blank"),
            Err(HeaderError::Missing { field: "blank" })
        );
        assert_eq!(ext.get_str("blank"), Some("  "));
    }

    #[test]
    fn i32_overflow_is_an_error() {
        let m = map(&[("queueId", "2147483648")]);
        let ext = ExtFields::new(&m);
        assert!(matches!(
            ext.req_i32("queueId"),
            Err(HeaderError::InvalidInt { .. })
        ));
        assert_eq!(ext.req_i64("queueId"), Ok(2_147_483_648));
    }

    #[test]
    fn booleans_accept_words_and_digits() {
        let m = map(&[
            ("a", "TRUE"),
            ("b", "false"),
            ("c", "1"),
            ("d", "0"),
            ("e", "yes"),
            ("f", " True "),
        ]);
        let ext = ExtFields::new(&m);
        assert_eq!(ext.req_bool("a"), Ok(true));
        assert_eq!(ext.req_bool("b"), Ok(false));
        assert_eq!(ext.req_bool("c"), Ok(true));
        assert_eq!(ext.req_bool("d"), Ok(false));
        assert_eq!(ext.req_bool("f"), Ok(true));
        assert!(matches!(
            ext.req_bool("e"),
            Err(HeaderError::InvalidBool { field: "e", .. })
        ));
        assert_eq!(ext.get_bool("z"), Ok(None));
    }
}
