//! Java `String.hashCode`, which RocketMQ uses for tagsCode and index keys.

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code
/// units with wrapping 32-bit arithmetic. Clients send the same values in their
/// subscriptions, so this must match Java bit for bit.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The consume-queue tagsCode of a message with this TAGS value: the Java hash
/// widened to i64; 0 when the message has no tag.
pub fn tags_code(tags: Option<&str>) -> i64 {
    match tags {
        Some(t) if !t.is_empty() => i64::from(java_string_hash(t)),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_java_values() {
        // "TagA", "hello" and "hello world" are well-known JVM outputs; the rest
        // follow from the definition over UTF-16 units.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("TagA"), 2_598_919);
        assert_eq!(java_string_hash("TagB"), 2_598_920);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        // Wraps past i32::MAX exactly like Java.
        assert_eq!(java_string_hash("hello world"), 1_794_106_052);
        assert_eq!(java_string_hash("TopicTest#KEY1"), -1_656_969_516);
        // Non-BMP characters hash as their two UTF-16 surrogates.
        assert_eq!(java_string_hash("\u{1F600}"), 1_772_899);
        assert_eq!(java_string_hash("é"), 233);
    }

    #[test]
    fn tags_code_of_missing_tag_is_zero() {
        assert_eq!(tags_code(None), 0);
        assert_eq!(tags_code(Some("")), 0);
        assert_eq!(tags_code(Some("TagA")), 2_598_919);
        assert_eq!(tags_code(Some("TopicTest#KEY1")), -1_656_969_516);
    }
}
