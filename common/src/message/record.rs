//! The CommitLog record in RocketMQ's V1 layout (big-endian). The same bytes
//! are what PULL_MESSAGE returns, so the broker can serve them as stored.
//!
//! | field | size |
//! |---|---|
//! | TOTALSIZE | i32, whole record |
//! | MAGICCODE | i32, [`MESSAGE_MAGIC_CODE`] |
//! | BODYCRC | i32, CRC32 of the body & 0x7FFFFFFF |
//! | QUEUEID, FLAG | i32, i32 |
//! | QUEUEOFFSET, PHYSICALOFFSET | i64, i64 |
//! | SYSFLAG | i32 |
//! | BORNTIMESTAMP | i64 |
//! | BORNHOST | 4-byte IPv4 + i32 port, or 16 + 4 with sysflag 0x10 |
//! | STORETIMESTAMP | i64 |
//! | STOREHOST | 4 + 4, or 16 + 4 with sysflag 0x20 |
//! | RECONSUMETIMES | i32 |
//! | PREPAREDTRANSACTIONOFFSET | i64 |
//! | BODY | i32 length + bytes |
//! | TOPIC | u8 length + bytes |
//! | PROPERTIES | i16 length + bytes |

use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::properties::Properties;
use super::sysflag;

/// Magic of a message record (`0xDAA320A7`).
pub const MESSAGE_MAGIC_CODE: i32 = 0xDAA3_20A7_u32 as i32;
/// Magic of the blank record that pads the end of a segment (`0xCBD43194`).
pub const BLANK_MAGIC_CODE: i32 = 0xCBD4_3194_u32 as i32;
/// A segment always keeps room for a blank record: i32 size + i32 magic.
pub const END_FILE_MIN_BLANK_LENGTH: usize = 8;
/// Longest topic the one-byte length field can carry (Java writes a signed byte).
pub const MAX_TOPIC_LEN: usize = 127;
/// Longest properties string the i16 length field can carry.
pub const MAX_PROPERTIES_LEN: usize = i16::MAX as usize;

/// Byte position of QUEUEOFFSET.
pub const QUEUE_OFFSET_POS: usize = 20;
/// Byte position of PHYSICALOFFSET.
pub const PHYSICAL_OFFSET_POS: usize = 28;
/// Byte position of SYSFLAG.
pub const SYS_FLAG_POS: usize = 36;
/// Byte position of BORNHOST.
pub const BORN_HOST_POS: usize = 48;
/// Fixed bytes of a record besides the two hosts, body, topic and properties.
const FIXED_LEN: usize = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 4 + 8 + 4 + 1 + 2;

/// Why bytes are not a valid record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Fewer bytes than the header or the declared size.
    #[error("record truncated: need {needed} bytes, have {available}")]
    Truncated {
        /// Bytes the record needs.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// The magic code is neither a message nor a blank.
    #[error("bad magic code {magic:#010x}")]
    BadMagic {
        /// The magic found.
        magic: i32,
    },
    /// TOTALSIZE disagrees with the lengths of the fields inside.
    #[error("total size {declared} disagrees with the fields, which add up to {computed}")]
    SizeMismatch {
        /// TOTALSIZE as written.
        declared: i64,
        /// The size the fields add up to.
        computed: i64,
    },
    /// The body does not match BODYCRC.
    #[error("body CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// BODYCRC as written.
        stored: i32,
        /// CRC of the body read.
        computed: i32,
    },
    /// The topic is not UTF-8.
    #[error("topic is not valid UTF-8")]
    TopicNotUtf8,
    /// The topic is longer than the one-byte length allows.
    #[error("topic is {len} bytes, at most {MAX_TOPIC_LEN}")]
    TopicTooLong {
        /// Its length.
        len: usize,
    },
    /// The properties are longer than the i16 length allows.
    #[error("properties are {len} bytes, at most {MAX_PROPERTIES_LEN}")]
    PropertiesTooLong {
        /// Their length.
        len: usize,
    },
    /// The topic or properties at the end of the record are not what a
    /// complete write leaves (a torn write zeroes a record's tail).
    #[error("record tail is incomplete: {detail}")]
    Incomplete {
        /// What was found.
        detail: &'static str,
    },
    /// A property could not be encoded.
    #[error(transparent)]
    Properties(#[from] super::PropertiesError),
}

/// A message as a producer hands it to the store, before it has a place in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageToStore {
    /// Target topic.
    pub topic: String,
    /// Target queue.
    pub queue_id: i32,
    /// Opaque user flag.
    pub flag: i32,
    /// Payload, stored as received (possibly compressed, see sysflag 0x1).
    pub body: Vec<u8>,
    /// User and system properties.
    pub properties: Properties,
    /// `MessageSysFlag` bits; the host bits are derived from the addresses.
    pub sys_flag: i32,
    /// When the producer created it, ms.
    pub born_timestamp: i64,
    /// The producer's address.
    pub born_host: SocketAddr,
    /// This broker's address, which goes into the offsetMsgId.
    pub store_host: SocketAddr,
    /// Times the message was consumed again.
    pub reconsume_times: i32,
    /// CommitLog offset of the half message a commit/rollback resolves.
    pub prepared_transaction_offset: i64,
}

impl MessageToStore {
    /// A plain message with IPv4 loopback hosts and no properties.
    pub fn new(topic: impl Into<String>, queue_id: i32, body: impl Into<Vec<u8>>) -> Self {
        let local = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
        Self {
            topic: topic.into(),
            queue_id,
            flag: 0,
            body: body.into(),
            properties: Properties::new(),
            sys_flag: 0,
            born_timestamp: 0,
            born_host: local,
            store_host: local,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        }
    }
}

/// Fields the store fills in when the record gets its place in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// QUEUEOFFSET.
    pub queue_offset: i64,
    /// PHYSICALOFFSET.
    pub physical_offset: i64,
    /// STORETIMESTAMP, ms.
    pub store_timestamp: i64,
}

fn host_len(addr: &SocketAddr) -> usize {
    match addr {
        SocketAddr::V4(_) => 8,
        SocketAddr::V6(_) => 20,
    }
}

fn put_host(out: &mut Vec<u8>, addr: &SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => out.extend_from_slice(&ip.octets()),
        IpAddr::V6(ip) => out.extend_from_slice(&ip.octets()),
    }
    out.extend_from_slice(&i32::from(addr.port()).to_be_bytes());
}

/// CRC of a body as RocketMQ stores it (`UtilAll.crc32`: CRC32 & 0x7FFFFFFF).
pub fn body_crc(body: &[u8]) -> i32 {
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

/// Byte position of STORETIMESTAMP for a record with these sysflag bits.
pub fn store_timestamp_pos(sys_flag: i32) -> usize {
    BORN_HOST_POS
        + if sys_flag & sysflag::BORNHOST_V6 != 0 {
            20
        } else {
            8
        }
}

/// The size of the record [`encode_record`] would make of `msg`, without
/// copying its body.
pub fn encoded_len(msg: &MessageToStore) -> Result<usize, RecordError> {
    let props = msg.properties.encode()?;
    if props.len() > MAX_PROPERTIES_LEN {
        return Err(RecordError::PropertiesTooLong { len: props.len() });
    }
    if msg.topic.len() > MAX_TOPIC_LEN {
        return Err(RecordError::TopicTooLong {
            len: msg.topic.len(),
        });
    }
    Ok(FIXED_LEN
        + host_len(&msg.born_host)
        + host_len(&msg.store_host)
        + msg.body.len()
        + msg.topic.len()
        + props.len())
}

/// Encodes `msg` into a complete record. The queue offset, physical offset
/// and store timestamp come from `header`; [`patch_header`] rewrites them in
/// place once the record's position is known.
pub fn encode_record(msg: &MessageToStore, header: RecordHeader) -> Result<Vec<u8>, RecordError> {
    let props = msg.properties.encode()?;
    if props.len() > MAX_PROPERTIES_LEN {
        return Err(RecordError::PropertiesTooLong { len: props.len() });
    }
    let topic = msg.topic.as_bytes();
    if topic.len() > MAX_TOPIC_LEN {
        return Err(RecordError::TopicTooLong { len: topic.len() });
    }
    let mut sys_flag = msg.sys_flag & !(sysflag::BORNHOST_V6 | sysflag::STOREHOST_V6);
    if msg.born_host.is_ipv6() {
        sys_flag |= sysflag::BORNHOST_V6;
    }
    if msg.store_host.is_ipv6() {
        sys_flag |= sysflag::STOREHOST_V6;
    }
    let total = FIXED_LEN
        + host_len(&msg.born_host)
        + host_len(&msg.store_host)
        + msg.body.len()
        + topic.len()
        + props.len();
    let total_i32 = i32::try_from(total).map_err(|_| RecordError::SizeMismatch {
        declared: i64::from(i32::MAX),
        computed: total as i64,
    })?;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&total_i32.to_be_bytes());
    out.extend_from_slice(&MESSAGE_MAGIC_CODE.to_be_bytes());
    out.extend_from_slice(&body_crc(&msg.body).to_be_bytes());
    out.extend_from_slice(&msg.queue_id.to_be_bytes());
    out.extend_from_slice(&msg.flag.to_be_bytes());
    out.extend_from_slice(&header.queue_offset.to_be_bytes());
    out.extend_from_slice(&header.physical_offset.to_be_bytes());
    out.extend_from_slice(&sys_flag.to_be_bytes());
    out.extend_from_slice(&msg.born_timestamp.to_be_bytes());
    put_host(&mut out, &msg.born_host);
    out.extend_from_slice(&header.store_timestamp.to_be_bytes());
    put_host(&mut out, &msg.store_host);
    out.extend_from_slice(&msg.reconsume_times.to_be_bytes());
    out.extend_from_slice(&msg.prepared_transaction_offset.to_be_bytes());
    // Fits: `total` fits in i32 and the body is part of it.
    out.extend_from_slice(&(msg.body.len() as i32).to_be_bytes());
    out.extend_from_slice(&msg.body);
    out.push(topic.len() as u8);
    out.extend_from_slice(topic);
    out.extend_from_slice(&(props.len() as i16).to_be_bytes());
    out.extend_from_slice(&props);
    debug_assert_eq!(out.len(), total);
    Ok(out)
}

/// Replaces the PROPERTIES of an encoded record with `props` (wire form),
/// fixing PROPERTIESLENGTH and TOTALSIZE; the rest of the record is kept
/// byte for byte. `record` must come from [`encode_record`].
pub fn replace_properties(record: &mut Vec<u8>, props: &[u8]) -> Result<(), RecordError> {
    if props.len() > MAX_PROPERTIES_LEN {
        return Err(RecordError::PropertiesTooLong { len: props.len() });
    }
    let props_start = RecordView::parse(record, false)?.props_start;
    let total = props_start + props.len();
    let total_i32 = i32::try_from(total).map_err(|_| RecordError::SizeMismatch {
        declared: i64::from(i32::MAX),
        computed: total as i64,
    })?;
    record.truncate(props_start - 2);
    // At most MAX_PROPERTIES_LEN, checked above.
    record.extend_from_slice(&(props.len() as i16).to_be_bytes());
    record.extend_from_slice(props);
    record[..4].copy_from_slice(&total_i32.to_be_bytes());
    Ok(())
}

/// Rewrites QUEUEOFFSET, PHYSICALOFFSET and STORETIMESTAMP of an encoded
/// record in place. `record` must come from [`encode_record`].
pub fn patch_header(record: &mut [u8], header: RecordHeader) {
    let sys_flag = read_i32(record, SYS_FLAG_POS);
    let ts = store_timestamp_pos(sys_flag);
    record[QUEUE_OFFSET_POS..QUEUE_OFFSET_POS + 8]
        .copy_from_slice(&header.queue_offset.to_be_bytes());
    record[PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8]
        .copy_from_slice(&header.physical_offset.to_be_bytes());
    record[ts..ts + 8].copy_from_slice(&header.store_timestamp.to_be_bytes());
}

fn read_i16(b: &[u8], pos: usize) -> i16 {
    let mut a = [0u8; 2];
    a.copy_from_slice(&b[pos..pos + 2]);
    i16::from_be_bytes(a)
}

fn read_i32(b: &[u8], pos: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[pos..pos + 4]);
    i32::from_be_bytes(a)
}

fn read_i64(b: &[u8], pos: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[pos..pos + 8]);
    i64::from_be_bytes(a)
}

fn read_host(b: &[u8], pos: usize, v6: bool) -> SocketAddr {
    let (ip, port_pos) = if v6 {
        let mut a = [0u8; 16];
        a.copy_from_slice(&b[pos..pos + 16]);
        (IpAddr::V6(Ipv6Addr::from(a)), pos + 16)
    } else {
        let mut a = [0u8; 4];
        a.copy_from_slice(&b[pos..pos + 4]);
        (IpAddr::V4(Ipv4Addr::from(a)), pos + 4)
    };
    // Ports are stored as i32; a value outside u16 cannot be a real port.
    SocketAddr::new(ip, u16::try_from(read_i32(b, port_pos)).unwrap_or(0))
}

/// What starts at a position of a CommitLog segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// A message record of this total size (not yet validated).
    Message {
        /// TOTALSIZE.
        total_size: usize,
    },
    /// The blank that pads the rest of a segment.
    Blank {
        /// Bytes to the end of the segment.
        total_size: usize,
    },
    /// Zeroes: nothing was ever written here.
    Empty,
}

/// Looks at the first 8 bytes at a log position. Anything that is neither a
/// message, a blank nor zeroes is [`RecordError::BadMagic`].
pub fn peek_frame(buf: &[u8]) -> Result<Frame, RecordError> {
    if buf.len() < END_FILE_MIN_BLANK_LENGTH {
        return Err(RecordError::Truncated {
            needed: END_FILE_MIN_BLANK_LENGTH,
            available: buf.len(),
        });
    }
    let size = read_i32(buf, 0);
    let magic = read_i32(buf, 4);
    let bad_size = || RecordError::SizeMismatch {
        declared: i64::from(size),
        computed: -1,
    };
    match magic {
        MESSAGE_MAGIC_CODE => {
            let total_size = usize::try_from(size).map_err(|_| bad_size())?;
            if total_size < FIXED_LEN + 16 {
                return Err(bad_size());
            }
            Ok(Frame::Message { total_size })
        }
        BLANK_MAGIC_CODE => {
            let total_size = usize::try_from(size).map_err(|_| bad_size())?;
            if total_size < END_FILE_MIN_BLANK_LENGTH {
                return Err(bad_size());
            }
            Ok(Frame::Blank { total_size })
        }
        0 if size == 0 => Ok(Frame::Empty),
        magic => Err(RecordError::BadMagic { magic }),
    }
}

/// A validated, borrowed view of one message record.
#[derive(Debug, Clone, Copy)]
pub struct RecordView<'a> {
    buf: &'a [u8],
    store_ts_pos: usize,
    store_host_pos: usize,
    tail_pos: usize,
    body_start: usize,
    body_len: usize,
    topic_start: usize,
    topic_len: usize,
    props_start: usize,
    props_len: usize,
}

impl<'a> RecordView<'a> {
    /// Parses the record at the start of `buf` (which may hold more after it),
    /// checking magic, that every length adds up to TOTALSIZE, that the topic
    /// is UTF-8, and the body CRC when `check_crc`.
    pub fn parse(buf: &'a [u8], check_crc: bool) -> Result<Self, RecordError> {
        let total = match peek_frame(buf)? {
            Frame::Message { total_size } => total_size,
            Frame::Blank { .. } => {
                return Err(RecordError::BadMagic {
                    magic: BLANK_MAGIC_CODE,
                })
            }
            Frame::Empty => return Err(RecordError::BadMagic { magic: 0 }),
        };
        if buf.len() < total {
            return Err(RecordError::Truncated {
                needed: total,
                available: buf.len(),
            });
        }
        let buf = &buf[..total];
        let sys_flag = read_i32(buf, SYS_FLAG_POS);
        let born_len = if sys_flag & sysflag::BORNHOST_V6 != 0 {
            20
        } else {
            8
        };
        let store_len = if sys_flag & sysflag::STOREHOST_V6 != 0 {
            20
        } else {
            8
        };
        let store_ts_pos = BORN_HOST_POS + born_len;
        let store_host_pos = store_ts_pos + 8;
        let tail_pos = store_host_pos + store_len;
        let body_len_pos = tail_pos + 12;
        let mismatch = |computed: usize| RecordError::SizeMismatch {
            declared: total as i64,
            computed: computed as i64,
        };
        if body_len_pos + 4 > total {
            return Err(mismatch(body_len_pos + 4));
        }
        let body_len = usize::try_from(read_i32(buf, body_len_pos)).map_err(|_| mismatch(0))?;
        let body_start = body_len_pos + 4;
        let topic_len_pos = body_start
            .checked_add(body_len)
            .filter(|p| *p < total)
            .ok_or_else(|| mismatch(body_start.saturating_add(body_len)))?;
        let topic_len = usize::from(buf[topic_len_pos]);
        let topic_start = topic_len_pos + 1;
        let props_len_pos = topic_start + topic_len;
        if props_len_pos + 2 > total {
            return Err(mismatch(props_len_pos + 2));
        }
        let props_len =
            usize::try_from(read_i16(buf, props_len_pos)).map_err(|_| mismatch(props_len_pos))?;
        let props_start = props_len_pos + 2;
        if props_start + props_len != total {
            return Err(mismatch(props_start + props_len));
        }
        if std::str::from_utf8(&buf[topic_start..props_len_pos]).is_err() {
            return Err(RecordError::TopicNotUtf8);
        }
        let view = Self {
            buf,
            store_ts_pos,
            store_host_pos,
            tail_pos,
            body_start,
            body_len,
            topic_start,
            topic_len,
            props_start,
            props_len,
        };
        if check_crc {
            let computed = body_crc(view.body());
            if computed != view.body_crc() {
                return Err(RecordError::CrcMismatch {
                    stored: view.body_crc(),
                    computed,
                });
            }
        }
        Ok(view)
    }

    /// The record's bytes, exactly TOTALSIZE long.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }
    /// TOTALSIZE.
    pub fn total_size(&self) -> usize {
        self.buf.len()
    }
    /// BODYCRC as stored.
    pub fn body_crc(&self) -> i32 {
        read_i32(self.buf, 8)
    }
    /// QUEUEID.
    pub fn queue_id(&self) -> i32 {
        read_i32(self.buf, 12)
    }
    /// FLAG.
    pub fn flag(&self) -> i32 {
        read_i32(self.buf, 16)
    }
    /// QUEUEOFFSET.
    pub fn queue_offset(&self) -> i64 {
        read_i64(self.buf, QUEUE_OFFSET_POS)
    }
    /// PHYSICALOFFSET.
    pub fn physical_offset(&self) -> i64 {
        read_i64(self.buf, PHYSICAL_OFFSET_POS)
    }
    /// SYSFLAG.
    pub fn sys_flag(&self) -> i32 {
        read_i32(self.buf, SYS_FLAG_POS)
    }
    /// BORNTIMESTAMP, ms.
    pub fn born_timestamp(&self) -> i64 {
        read_i64(self.buf, 40)
    }
    /// BORNHOST.
    pub fn born_host(&self) -> SocketAddr {
        read_host(
            self.buf,
            BORN_HOST_POS,
            self.sys_flag() & sysflag::BORNHOST_V6 != 0,
        )
    }
    /// STORETIMESTAMP, ms.
    pub fn store_timestamp(&self) -> i64 {
        read_i64(self.buf, self.store_ts_pos)
    }
    /// STOREHOST.
    pub fn store_host(&self) -> SocketAddr {
        read_host(
            self.buf,
            self.store_host_pos,
            self.sys_flag() & sysflag::STOREHOST_V6 != 0,
        )
    }
    /// RECONSUMETIMES.
    pub fn reconsume_times(&self) -> i32 {
        read_i32(self.buf, self.tail_pos)
    }
    /// PREPAREDTRANSACTIONOFFSET.
    pub fn prepared_transaction_offset(&self) -> i64 {
        read_i64(self.buf, self.tail_pos + 4)
    }
    /// BODY.
    pub fn body(&self) -> &'a [u8] {
        &self.buf[self.body_start..self.body_start + self.body_len]
    }
    /// TOPIC (checked to be UTF-8 by [`RecordView::parse`]).
    pub fn topic(&self) -> &'a str {
        std::str::from_utf8(&self.buf[self.topic_start..self.topic_start + self.topic_len])
            .unwrap_or_default()
    }
    /// PROPERTIES in wire form.
    pub fn properties_raw(&self) -> &'a [u8] {
        &self.buf[self.props_start..self.props_start + self.props_len]
    }
    /// PROPERTIES decoded.
    pub fn properties(&self) -> Properties {
        Properties::decode(self.properties_raw())
    }
    /// One property, without decoding the rest.
    pub fn property(&self, name: &str) -> Option<Cow<'a, str>> {
        Properties::find_in(self.properties_raw(), name)
    }
    /// The fields the store filled in.
    pub fn header(&self) -> RecordHeader {
        RecordHeader {
            queue_offset: self.queue_offset(),
            physical_offset: self.physical_offset(),
            store_timestamp: self.store_timestamp(),
        }
    }
    /// The producer-side message, owned.
    pub fn to_message(&self) -> MessageToStore {
        MessageToStore {
            topic: self.topic().to_owned(),
            queue_id: self.queue_id(),
            flag: self.flag(),
            body: self.body().to_vec(),
            properties: self.properties(),
            sys_flag: self.sys_flag(),
            born_timestamp: self.born_timestamp(),
            born_host: self.born_host(),
            store_host: self.store_host(),
            reconsume_times: self.reconsume_times(),
            prepared_transaction_offset: self.prepared_transaction_offset(),
        }
    }
}

/// Writes the blank record that pads `remaining` bytes at a segment's end.
pub fn encode_blank(remaining: usize) -> [u8; END_FILE_MIN_BLANK_LENGTH] {
    let mut out = [0u8; END_FILE_MIN_BLANK_LENGTH];
    // A segment is at most i32::MAX bytes (checked by the config).
    out[..4].copy_from_slice(&(remaining.min(i32::MAX as usize) as i32).to_be_bytes());
    out[4..].copy_from_slice(&BLANK_MAGIC_CODE.to_be_bytes());
    out
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
