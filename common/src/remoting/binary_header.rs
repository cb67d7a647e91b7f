//! The ROCKETMQ binary header (serialize type 1), big-endian:
//! `i16 code, u8 language, i16 version, i32 opaque, i32 flag,
//! i32 remark length + remark, i32 ext length + repeated
//! (i16 key length, key, i32 value length, value)`.
//!
//! Strings are UTF-8; invalid sequences are replaced, as Java's `new String`
//! does. A zero remark length means no remark; bytes after the ext map are
//! ignored, as Java ignores them.

use std::collections::BTreeMap;

use bytes::BufMut;

use super::command::{RemotingCommand, SerializeType};
use super::error::RemotingError;
use super::language::LanguageCode;

/// Bytes of the fixed part: code, language, version, opaque, flag and the two
/// length words.
pub(crate) const FIXED_LEN: usize = 2 + 1 + 2 + 4 + 4 + 4 + 4;

/// Appends the binary header of `cmd` to `out`.
pub(crate) fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) -> Result<(), RemotingError> {
    let code = i16_slot("code", i64::from(cmd.code))?;
    let version = i16_slot("version", i64::from(cmd.version))?;
    let remark = cmd.remark.as_deref().unwrap_or("").as_bytes();
    let mut ext_len: usize = 0;
    for (key, value) in &cmd.ext_fields {
        i16_slot("extFields key length", len_i64(key.len()))?;
        i32_slot("extFields value length", len_i64(value.len()))?;
        ext_len = ext_len.saturating_add(2 + key.len() + 4 + value.len());
    }
    let remark_len = i32_slot("remark length", len_i64(remark.len()))?;
    let ext_len_word = i32_slot("extFields length", len_i64(ext_len))?;

    out.reserve(FIXED_LEN + remark.len() + ext_len);
    out.put_i16(code);
    out.put_u8(cmd.language.code());
    out.put_i16(version);
    out.put_i32(cmd.opaque);
    out.put_i32(cmd.flag);
    out.put_i32(remark_len);
    out.put_slice(remark);
    out.put_i32(ext_len_word);
    for (key, value) in &cmd.ext_fields {
        // Both lengths were range-checked above.
        out.put_i16(key.len() as i16);
        out.put_slice(key.as_bytes());
        out.put_i32(value.len() as i32);
        out.put_slice(value.as_bytes());
    }
    Ok(())
}

/// Decodes a binary header; the body is left empty.
pub(crate) fn decode(header: &[u8]) -> Result<RemotingCommand, RemotingError> {
    let mut r = Reader { buf: header };
    let code = i32::from(r.i16("code")?);
    let language = LanguageCode::from_code(r.u8("language")?);
    let version = i32::from(r.i16("version")?);
    let opaque = r.i32("opaque")?;
    let flag = r.i32("flag")?;
    let remark_len = r.len_i32("remark length")?;
    let remark = if remark_len > 0 {
        Some(text(r.bytes("remark", remark_len)?))
    } else {
        None
    };
    let ext_len = r.len_i32("extFields length")?;
    let mut ext = Reader {
        buf: r.bytes("extFields", ext_len)?,
    };
    let mut ext_fields = BTreeMap::new();
    while !ext.buf.is_empty() {
        let key_len = ext.i16("extFields key length")?;
        let key_len = usize::try_from(key_len).map_err(|_| RemotingError::NegativeLength {
            field: "extFields key length",
            len: i64::from(key_len),
        })?;
        let key = text(ext.bytes("extFields key", key_len)?);
        let value_len = ext.len_i32("extFields value length")?;
        let value = text(ext.bytes("extFields value", value_len)?);
        ext_fields.insert(key, value);
    }
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        body: None,
        body_parts: Vec::new(),
        serialize_type: SerializeType::RocketMq,
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn len_i64(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}

fn i16_slot(field: &'static str, value: i64) -> Result<i16, RemotingError> {
    i16::try_from(value).map_err(|_| RemotingError::ValueOutOfRange {
        field,
        value,
        max: i64::from(i16::MAX),
    })
}

fn i32_slot(field: &'static str, value: i64) -> Result<i32, RemotingError> {
    i32::try_from(value).map_err(|_| RemotingError::ValueOutOfRange {
        field,
        value,
        max: i64::from(i32::MAX),
    })
}

/// A bounds-checked big-endian cursor over the header bytes.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], RemotingError> {
        if self.buf.len() < n {
            return Err(RemotingError::Truncated {
                field,
                needed: n,
                available: self.buf.len(),
            });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], RemotingError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(field, N)?);
        Ok(out)
    }

    fn u8(&mut self, field: &'static str) -> Result<u8, RemotingError> {
        Ok(self.array::<1>(field)?[0])
    }

    fn i16(&mut self, field: &'static str) -> Result<i16, RemotingError> {
        Ok(i16::from_be_bytes(self.array(field)?))
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, RemotingError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    /// An `i32` length word that must not be negative.
    fn len_i32(&mut self, field: &'static str) -> Result<usize, RemotingError> {
        let len = self.i32(field)?;
        usize::try_from(len).map_err(|_| RemotingError::NegativeLength {
            field,
            len: i64::from(len),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(code: i16, remark_len: i32, ext_len: i32) -> Vec<u8> {
        let mut h = Vec::new();
        h.put_i16(code);
        h.put_u8(0);
        h.put_i16(401);
        h.put_i32(5);
        h.put_i32(0);
        h.put_i32(remark_len);
        h.put_i32(ext_len);
        h
    }

    #[test]
    fn truncated_fixed_part_names_the_field() {
        let h = fixed(10, 0, 0);
        for cut in 0..h.len() {
            let err = decode(&h[..cut]).unwrap_err();
            assert!(
                matches!(err, RemotingError::Truncated { .. }),
                "cut {cut}: {err}"
            );
        }
        let err = decode(&h[..4]).unwrap_err();
        assert!(err.to_string().contains("`version`"), "{err}");
        assert!(decode(&h).is_ok());
    }

    #[test]
    fn remark_longer_than_header_is_truncated() {
        let mut h = fixed(10, 0, 0);
        h[13..17].copy_from_slice(&100i32.to_be_bytes());
        let err = decode(&h).unwrap_err();
        assert!(
            matches!(
                err,
                RemotingError::Truncated {
                    field: "remark",
                    needed: 100,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn negative_lengths_are_named() {
        let h = fixed(10, -1, 0);
        let err = decode(&h).unwrap_err();
        assert!(
            matches!(
                err,
                RemotingError::NegativeLength {
                    field: "remark length",
                    len: -1
                }
            ),
            "{err}"
        );
        let mut h = fixed(10, 0, 6);
        h.put_i16(-2);
        h.put_i32(0);
        let err = decode(&h).unwrap_err();
        assert!(
            matches!(
                err,
                RemotingError::NegativeLength {
                    field: "extFields key length",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn ext_entry_cut_short_is_truncated() {
        // ext map claims 7 bytes: key "k", then a value length with one byte missing.
        let mut h = fixed(10, 0, 6);
        h.put_i16(1);
        h.put_u8(b'k');
        h.put_slice(&[0, 0, 0]);
        let err = decode(&h).unwrap_err();
        assert!(
            matches!(
                err,
                RemotingError::Truncated {
                    field: "extFields value length",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn out_of_range_code_is_refused_not_truncated() {
        let cmd = RemotingCommand::request(200_050);
        let err = encode(&cmd, &mut Vec::new()).unwrap_err();
        assert!(
            matches!(
                err,
                RemotingError::ValueOutOfRange {
                    field: "code",
                    value: 200_050,
                    ..
                }
            ),
            "{err}"
        );
    }
}
