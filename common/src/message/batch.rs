//! The body of a batch send: repeated `i32 total, i32 magic, i32 bodyCRC,
//! i32 flag, i32 body length + body, i16 properties length + properties`.

/// One message of a batch body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchItem {
    /// User flag.
    pub flag: i32,
    /// Body bytes.
    pub body: Vec<u8>,
    /// Properties in wire form.
    pub properties: Vec<u8>,
}

/// Why a batch body is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// Fewer bytes than a field needs.
    #[error("batch message {index} truncated at byte {at}")]
    Truncated {
        /// Message number in the batch.
        index: usize,
        /// Byte position.
        at: usize,
    },
    /// The declared total disagrees with the fields.
    #[error("batch message {index}: total size {declared} disagrees with its fields ({computed})")]
    SizeMismatch {
        /// Message number.
        index: usize,
        /// TOTALSIZE as sent.
        declared: i64,
        /// What the fields add up to.
        computed: i64,
    },
    /// No message at all.
    #[error("batch body is empty")]
    Empty,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    index: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BatchError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or(BatchError::Truncated {
                index: self.index,
                at: self.pos,
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn i32(&mut self) -> Result<i32, BatchError> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(i32::from_be_bytes(a))
    }
    fn i16(&mut self) -> Result<i16, BatchError> {
        let mut a = [0u8; 2];
        a.copy_from_slice(self.take(2)?);
        Ok(i16::from_be_bytes(a))
    }
}

/// Splits a batch body into its messages.
pub fn decode_batch(body: &[u8]) -> Result<Vec<BatchItem>, BatchError> {
    let mut r = Reader {
        buf: body,
        pos: 0,
        index: 0,
    };
    let mut out = Vec::new();
    while r.pos < body.len() {
        let start = r.pos;
        let total = r.i32()?;
        let _magic = r.i32()?;
        let _crc = r.i32()?;
        let flag = r.i32()?;
        let body_len = r.i32()?;
        let body_len = usize::try_from(body_len).map_err(|_| BatchError::SizeMismatch {
            index: r.index,
            declared: i64::from(total),
            computed: i64::from(body_len),
        })?;
        let msg_body = r.take(body_len)?.to_vec();
        let props_len = usize::try_from(r.i16()?).map_err(|_| BatchError::Truncated {
            index: r.index,
            at: r.pos,
        })?;
        let properties = r.take(props_len)?.to_vec();
        let computed = (r.pos - start) as i64;
        if i64::from(total) != computed {
            return Err(BatchError::SizeMismatch {
                index: r.index,
                declared: i64::from(total),
                computed,
            });
        }
        out.push(BatchItem {
            flag,
            body: msg_body,
            properties,
        });
        r.index += 1;
    }
    if out.is_empty() {
        return Err(BatchError::Empty);
    }
    Ok(out)
}

/// Encodes messages as a batch body (what clients send).
pub fn encode_batch(items: &[BatchItem]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in items {
        let total = 4 + 4 + 4 + 4 + 4 + m.body.len() + 2 + m.properties.len();
        out.extend_from_slice(&(total as i32).to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes());
        out.extend_from_slice(&super::record::body_crc(&m.body).to_be_bytes());
        out.extend_from_slice(&m.flag.to_be_bytes());
        out.extend_from_slice(&(m.body.len() as i32).to_be_bytes());
        out.extend_from_slice(&m.body);
        out.extend_from_slice(&(m.properties.len() as i16).to_be_bytes());
        out.extend_from_slice(&m.properties);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let items = vec![
            BatchItem {
                flag: 1,
                body: b"a".to_vec(),
                properties: b"K\x01V\x02".to_vec(),
            },
            BatchItem {
                flag: 2,
                body: b"bb".to_vec(),
                properties: Vec::new(),
            },
        ];
        let enc = encode_batch(&items);
        assert_eq!(&enc[..4], &[0, 0, 0, 27]); // 20 fixed + 1 body + 2 + 4 properties
        assert_eq!(decode_batch(&enc).unwrap(), items);
        for cut in (1..enc.len()).filter(|c| *c != 27) {
            assert!(decode_batch(&enc[..cut]).is_err(), "cut {cut}");
        }
        // A cut at a message boundary is a shorter, valid batch.
        assert_eq!(decode_batch(&enc[..27]).unwrap(), items[..1].to_vec());
        assert_eq!(decode_batch(&[]), Err(BatchError::Empty));
        let mut bad = enc.clone();
        bad[3] = 99;
        assert!(matches!(
            decode_batch(&bad),
            Err(BatchError::SizeMismatch { .. })
        ));
    }

    proptest::proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = decode_batch(&bytes);
        }
    }
}
