//! Message properties: `key\x01value\x02key\x01value\x02` as RocketMQ writes them.

use std::borrow::Cow;

/// Separates a name from its value.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Ends each name/value pair.
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// Why properties could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertiesError {
    /// A name or value contains one of the two separator characters.
    #[error("property {name:?} contains a separator character (\\x01 or \\x02)")]
    SeparatorInProperty {
        /// The offending property name.
        name: String,
    },
}

/// An ordered list of message properties. Order is kept as received so that
/// a decoded and re-encoded message is byte-identical; names are unique.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    pairs: Vec<(String, String)>,
}

impl Properties {
    /// No properties.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the wire form. Like Java's `string2messageProperties`, an item
    /// without a name/value separator is ignored, a trailing separator is
    /// accepted, and invalid UTF-8 is replaced rather than refused (the raw
    /// bytes stay in the CommitLog untouched).
    pub fn decode(bytes: &[u8]) -> Self {
        let text = String::from_utf8_lossy(bytes);
        let mut props = Self::new();
        for item in text.split(PROPERTY_SEPARATOR) {
            if let Some((name, value)) = item.split_once(NAME_VALUE_SEPARATOR) {
                if !name.is_empty() {
                    props.insert(name, value);
                }
            }
        }
        props
    }

    /// Looks a property up in the wire form without building the whole list.
    pub fn find_in<'a>(bytes: &'a [u8], name: &str) -> Option<Cow<'a, str>> {
        bytes
            .split(|b| *b == PROPERTY_SEPARATOR as u8)
            .find_map(|item| {
                let sep = item.iter().position(|b| *b == NAME_VALUE_SEPARATOR as u8)?;
                (&item[..sep] == name.as_bytes()).then(|| String::from_utf8_lossy(&item[sep + 1..]))
            })
    }

    /// The wire form, each pair followed by the property separator.
    pub fn encode(&self) -> Result<Vec<u8>, PropertiesError> {
        let mut out = Vec::with_capacity(self.encoded_len_hint());
        for (name, value) in &self.pairs {
            if has_separator(name) || has_separator(value) {
                return Err(PropertiesError::SeparatorInProperty { name: name.clone() });
            }
            out.extend_from_slice(name.as_bytes());
            out.push(NAME_VALUE_SEPARATOR as u8);
            out.extend_from_slice(value.as_bytes());
            out.push(PROPERTY_SEPARATOR as u8);
        }
        Ok(out)
    }

    fn encoded_len_hint(&self) -> usize {
        self.pairs.iter().map(|(n, v)| n.len() + v.len() + 2).sum()
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Sets `name`, replacing an earlier value in place.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        match self.pairs.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.pairs.push((name, value)),
        }
    }

    /// Removes `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<String> {
        let idx = self.pairs.iter().position(|(n, _)| n == name)?;
        Some(self.pairs.remove(idx).1)
    }

    /// The pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Number of properties.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The space-separated KEYS, if any.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.get(crate::constants::property::KEYS)
            .into_iter()
            .flat_map(|k| k.split(' '))
            .filter(|k| !k.is_empty())
    }
}

fn has_separator(s: &str) -> bool {
    s.contains([NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR])
}

impl<N: Into<String>, V: Into<String>> FromIterator<(N, V)> for Properties {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        let mut props = Self::new();
        for (n, v) in iter {
            props.insert(n, v);
        }
        props
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_order_and_trailing_separator() {
        let props: Properties = [("TAGS", "TagA"), ("KEYS", "k1 k2"), ("WAIT", "true")]
            .into_iter()
            .collect();
        let bytes = props.encode().unwrap_or_default();
        assert_eq!(
            bytes,
            b"TAGS\x01TagA\x02KEYS\x01k1 k2\x02WAIT\x01true\x02".to_vec()
        );
        assert_eq!(Properties::decode(&bytes), props);
        assert_eq!(props.keys().collect::<Vec<_>>(), vec!["k1", "k2"]);
    }

    #[test]
    fn decode_accepts_missing_trailing_separator_and_skips_junk() {
        let p = Properties::decode(b"A\x011\x02junk\x02\x02B\x01x\x01y");
        assert_eq!(p.get("A"), Some("1"));
        assert_eq!(p.get("B"), Some("x\u{1}y"));
        assert_eq!(p.len(), 2);
        assert!(Properties::decode(b"").is_empty());
    }

    #[test]
    fn find_in_reads_one_value() {
        let raw = b"TAGS\x01TagA\x02UNIQ_KEY\x01ABC\x02";
        assert_eq!(Properties::find_in(raw, "UNIQ_KEY").as_deref(), Some("ABC"));
        assert_eq!(Properties::find_in(raw, "TAG"), None);
        assert_eq!(Properties::find_in(b"", "TAGS"), None);
    }

    #[test]
    fn encode_refuses_separators() {
        let mut p = Properties::new();
        p.insert("K", "a\u{2}b");
        assert!(matches!(
            p.encode(),
            Err(PropertiesError::SeparatorInProperty { .. })
        ));
    }

    #[test]
    fn insert_replaces_and_remove_removes() {
        let mut p = Properties::new();
        p.insert("A", "1");
        p.insert("B", "2");
        p.insert("A", "3");
        assert_eq!(p.iter().collect::<Vec<_>>(), vec![("A", "3"), ("B", "2")]);
        assert_eq!(p.remove("A").as_deref(), Some("3"));
        assert_eq!(p.get("A"), None);
    }
}
