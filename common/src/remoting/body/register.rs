//! The REGISTER_BROKER body in its two wire forms: JSON, and RocketMQ's
//! compressed form (header `compressed=true`, broker key
//! `compressedRegister`), which keeps a broker with tens of thousands of
//! topics far below the frame limit.
//!
//! Compressed form, as RocketMQ 4.x/5.x `RegisterBrokerBody.encode(true)`
//! writes it: one zlib stream holding, with every int a big-endian i32,
//! - length + `DataVersion` JSON;
//! - topic count, then per topic length + `TopicConfig.encode()`, the text
//!   `name readQueueNums writeQueueNums perm topicFilterType`, one space
//!   apart (5.x may append a sixth field, the attributes as JSON);
//! - length + filter server list JSON;
//! - 5.x only: count of static-topic mappings, each length + JSON (read and
//!   skipped here: static topics are not supported).
//!
//! The text form carries neither `topicSysFlag` nor `order`; both arrive as
//! their defaults, as with a Java NameServer. Written here with exactly the
//! five fields, which 4.x NameServers require and 5.x ones accept.

use std::io::{self, Read, Write};

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;

use serde::{Deserialize, Serialize};

use super::topic::{DataVersion, TopicConfig, TopicConfigSerializeWrapper};
use crate::json::JsonError;

/// Most bytes a compressed body may inflate to. A 20,000-topic table is
/// about 1 MiB inflated, so this allows over a million topics per broker
/// while bounding what a hostile body (a zlib bomb) can make the
/// NameServer allocate.
pub const MAX_INFLATED_BYTES: u64 = 64 * 1024 * 1024;

/// REGISTER_BROKER body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RegisterBrokerBody {
    /// The broker's topics.
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
    /// Filter servers (unused).
    pub filter_server_list: Vec<String>,
}

/// Why a REGISTER_BROKER body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The JSON form is not a `RegisterBrokerBody`.
    #[error("REGISTER_BROKER body is not a RegisterBrokerBody JSON: {0}")]
    Json(#[from] JsonError),
    /// The compressed form is cut short, not zlib, or too large.
    #[error("compressed REGISTER_BROKER body: {what}: {source}")]
    Inflate {
        /// The part being read.
        what: &'static str,
        /// The read error.
        #[source]
        source: io::Error,
    },
    /// A length or count in the compressed form is negative or larger than
    /// what remains.
    #[error("compressed REGISTER_BROKER body: {what} {value} is out of range")]
    Range {
        /// The field.
        what: &'static str,
        /// Its value.
        value: i64,
    },
    /// A JSON part of the compressed form does not parse.
    #[error("compressed REGISTER_BROKER body: {what} is not valid JSON: {source}")]
    PartJson {
        /// The part.
        what: &'static str,
        /// The parse error.
        #[source]
        source: JsonError,
    },
    /// A topic entry is not `name read write perm filter [attributes]`.
    #[error("compressed REGISTER_BROKER body: topic entry {entry:?} is malformed: {why}")]
    Topic {
        /// The entry (cut to 200 characters).
        entry: String,
        /// What is wrong.
        why: &'static str,
    },
}

/// The JSON form.
pub fn encode_json(body: &RegisterBrokerBody) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(body)
}

/// The compressed form (see the module documentation).
pub fn encode_compressed(body: &RegisterBrokerBody) -> io::Result<Vec<u8>> {
    let wrapper = &body.topic_config_serialize_wrapper;
    // Java deflates at BEST_COMPRESSION; any level inflates the same. The
    // fastest is several times quicker on a table of 100,000 topics, and
    // its body (about 3 bytes a topic) is still far below the frame limit.
    let mut z = ZlibEncoder::new(Vec::new(), Compression::fast());
    let version = serde_json::to_vec(&wrapper.data_version)?;
    put_bytes(&mut z, &version)?;
    put_len(&mut z, wrapper.topic_config_table.len())?;
    let mut line = String::new();
    for c in wrapper.topic_config_table.values() {
        line.clear();
        use std::fmt::Write as _;
        let _ = write!(
            line,
            "{} {} {} {} {}",
            c.topic_name, c.read_queue_nums, c.write_queue_nums, c.perm, c.topic_filter_type
        );
        put_bytes(&mut z, line.as_bytes())?;
    }
    put_bytes(&mut z, &serde_json::to_vec(&body.filter_server_list)?)?;
    // No static-topic mappings.
    put_len(&mut z, 0)?;
    z.finish()
}

fn put_len(w: &mut impl Write, n: usize) -> io::Result<()> {
    let n = i32::try_from(n).map_err(|_| io::Error::other("length exceeds i32"))?;
    w.write_all(&n.to_be_bytes())
}

fn put_bytes(w: &mut impl Write, b: &[u8]) -> io::Result<()> {
    put_len(w, b.len())?;
    w.write_all(b)
}

/// Reads a body in the form the `compressed` header names. An empty body
/// registers no topics.
pub fn decode(body: &[u8], compressed: bool) -> Result<RegisterBrokerBody, BodyError> {
    if body.is_empty() {
        return Ok(RegisterBrokerBody::default());
    }
    if !compressed {
        return Ok(crate::json::from_slice(body)?);
    }
    let mut r = Inflated {
        inner: ZlibDecoder::new(body).take(MAX_INFLATED_BYTES),
    };
    let mut out = RegisterBrokerBody::default();
    let version = r.bytes("data version")?;
    out.topic_config_serialize_wrapper.data_version =
        crate::json::from_slice::<DataVersion>(&version).map_err(|source| BodyError::PartJson {
            what: "data version",
            source,
        })?;
    let topics = r.count("topic count")?;
    for _ in 0..topics {
        let entry = r.bytes("topic entry")?;
        let config = parse_topic(&entry)?;
        out.topic_config_serialize_wrapper
            .topic_config_table
            .insert(config.topic_name.clone(), config);
    }
    let filters = r.bytes("filter server list")?;
    out.filter_server_list =
        crate::json::from_slice(&filters).map_err(|source| BodyError::PartJson {
            what: "filter server list",
            source,
        })?;
    // 4.x brokers end here; 5.x ones add the static-topic mappings.
    if let Some(mappings) = r.count_or_end("mapping count")? {
        for _ in 0..mappings {
            r.bytes("mapping")?;
        }
    }
    Ok(out)
}

/// The inflating reader, bounded by [`MAX_INFLATED_BYTES`].
struct Inflated<R> {
    inner: R,
}

impl<R: Read> Inflated<R> {
    fn int(&mut self, what: &'static str) -> Result<i32, BodyError> {
        let mut b = [0u8; 4];
        self.inner
            .read_exact(&mut b)
            .map_err(|source| BodyError::Inflate { what, source })?;
        Ok(i32::from_be_bytes(b))
    }

    fn count(&mut self, what: &'static str) -> Result<usize, BodyError> {
        let n = self.int(what)?;
        // A count cannot exceed the bytes left: each item takes at least 4.
        usize::try_from(n)
            .ok()
            .filter(|n| (*n as u64) <= MAX_INFLATED_BYTES / 4)
            .ok_or(BodyError::Range {
                what,
                value: i64::from(n),
            })
    }

    /// A count, or `None` if the stream ends cleanly where it would start.
    fn count_or_end(&mut self, what: &'static str) -> Result<Option<usize>, BodyError> {
        let mut first = [0u8; 1];
        let read = self
            .inner
            .read(&mut first)
            .map_err(|source| BodyError::Inflate { what, source })?;
        if read == 0 {
            return Ok(None);
        }
        let mut rest = [0u8; 3];
        self.inner
            .read_exact(&mut rest)
            .map_err(|source| BodyError::Inflate { what, source })?;
        let n = i32::from_be_bytes([first[0], rest[0], rest[1], rest[2]]);
        usize::try_from(n).map(Some).map_err(|_| BodyError::Range {
            what,
            value: i64::from(n),
        })
    }

    fn bytes(&mut self, what: &'static str) -> Result<Vec<u8>, BodyError> {
        let n = self.int(what)?;
        let n = u64::try_from(n)
            .ok()
            .filter(|n| *n <= MAX_INFLATED_BYTES)
            .ok_or(BodyError::Range {
                what,
                value: i64::from(n),
            })?;
        let mut buf = Vec::new();
        (&mut self.inner)
            .take(n)
            .read_to_end(&mut buf)
            .map_err(|source| BodyError::Inflate { what, source })?;
        if buf.len() as u64 != n {
            return Err(BodyError::Inflate {
                what,
                source: io::Error::new(io::ErrorKind::UnexpectedEof, "stream ends early"),
            });
        }
        Ok(buf)
    }
}

fn parse_topic(entry: &[u8]) -> Result<TopicConfig, BodyError> {
    let bad = |why| BodyError::Topic {
        entry: String::from_utf8_lossy(entry).chars().take(200).collect(),
        why,
    };
    let text = std::str::from_utf8(entry).map_err(|_| bad("not UTF-8"))?;
    // Java splits on every space; a sixth field (attributes JSON) is ignored.
    let mut fields = text.split(' ');
    let mut next = |why| fields.next().ok_or_else(|| bad(why));
    let name = next("no topic name")?;
    if name.is_empty() {
        return Err(bad("empty topic name"));
    }
    let mut int =
        |why| -> Result<i32, BodyError> { next(why)?.parse::<i32>().map_err(|_| bad(why)) };
    let read = int("readQueueNums is not a number")?;
    let write = int("writeQueueNums is not a number")?;
    let perm = int("perm is not a number")?;
    let filter = next("no topicFilterType")?;
    if !matches!(filter, "SINGLE_TAG" | "MULTI_TAG") {
        return Err(bad("topicFilterType is neither SINGLE_TAG nor MULTI_TAG"));
    }
    let mut config = TopicConfig::new(name, read);
    config.write_queue_nums = write;
    config.perm = perm;
    config.topic_filter_type = filter.to_owned();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(topics: usize) -> RegisterBrokerBody {
        RegisterBrokerBody {
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                topic_config_table: (0..topics)
                    .map(|i| {
                        let name = format!("scale-topic-{i:06}");
                        let mut c = TopicConfig::new(&name, 8);
                        c.perm = if i % 7 == 0 { 4 } else { 6 };
                        (name, c)
                    })
                    .collect(),
                data_version: DataVersion {
                    timestamp: 1_700_000_000_000,
                    counter: 42,
                    state_version: 0,
                },
            },
            filter_server_list: Vec::new(),
        }
    }

    #[test]
    fn compressed_round_trip_keeps_every_topic() {
        let b = body(500);
        let z = encode_compressed(&b).unwrap();
        assert_eq!(decode(&z, true).unwrap(), b);
        assert_eq!(decode(&encode_json(&b).unwrap(), false).unwrap(), b);
    }

    #[test]
    fn twenty_thousand_topics_fit_far_below_the_frame_limit() {
        let b = body(20_000);
        let json = encode_json(&b).unwrap();
        let z = encode_compressed(&b).unwrap();
        assert!(
            z.len() * 10 < json.len(),
            "json {} z {}",
            json.len(),
            z.len()
        );
        assert!(z.len() < crate::remoting::MAX_FRAME_BYTES / 16);
        assert_eq!(
            decode(&z, true)
                .unwrap()
                .topic_config_serialize_wrapper
                .topic_config_table
                .len(),
            20_000
        );
    }

    /// What a 4.x broker sends: five-field entries and no mapping count.
    #[test]
    fn reads_the_4x_form_and_5x_attributes() {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        put_bytes(&mut z, br#"{"timestamp":5,"counter":2,"stateVersion":0}"#).unwrap();
        put_len(&mut z, 2).unwrap();
        put_bytes(&mut z, b"A 4 4 6 SINGLE_TAG").unwrap();
        put_bytes(&mut z, br#"B 2 1 4 MULTI_TAG {"+message.type":"NORMAL"}"#).unwrap();
        put_bytes(&mut z, b"[]").unwrap();
        let z = z.finish().unwrap();
        let b = decode(&z, true).unwrap();
        let t = &b.topic_config_serialize_wrapper;
        assert_eq!(t.data_version.counter, 2);
        assert_eq!(t.topic_config_table["A"].read_queue_nums, 4);
        let bt = &t.topic_config_table["B"];
        assert_eq!((bt.write_queue_nums, bt.perm), (1, 4));
        assert_eq!(bt.topic_filter_type, "MULTI_TAG");
    }

    /// Flipped bytes in the zlib stream and in the inflated form: errors or
    /// a decoded body, never a panic.
    #[test]
    fn mutated_bodies_never_panic() {
        let b = body(40);
        let z = encode_compressed(&b).unwrap();
        let mut plain = Vec::new();
        ZlibDecoder::new(&z[..]).read_to_end(&mut plain).unwrap();
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2_000 {
            let mut zz = z.clone();
            let i = (next() % zz.len() as u64) as usize;
            zz[i] ^= 1 << (next() % 8);
            let _ = decode(&zz, true);
            let mut p = plain.clone();
            let i = (next() % p.len() as u64) as usize;
            p[i] = next() as u8;
            let mut again = ZlibEncoder::new(Vec::new(), Compression::fast());
            again.write_all(&p).unwrap();
            let _ = decode(&again.finish().unwrap(), true);
        }
    }

    #[test]
    fn bad_bodies_are_errors_that_say_what() {
        let good = encode_compressed(&body(3)).unwrap();
        // Every truncation fails cleanly (or, cut inside the trailing
        // optional mapping count, still decodes).
        for cut in 0..good.len() {
            let _ = decode(&good[..cut], true);
        }
        assert!(decode(b"not zlib at all", true).is_err());
        assert!(matches!(decode(b"{", false), Err(BodyError::Json(_))));

        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        put_bytes(&mut z, b"{}").unwrap();
        z.write_all(&(-1i32).to_be_bytes()).unwrap();
        let e = decode(&z.finish().unwrap(), true).unwrap_err();
        assert!(e.to_string().contains("topic count -1"), "{e}");

        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        put_bytes(&mut z, b"{}").unwrap();
        put_len(&mut z, 1).unwrap();
        put_bytes(&mut z, b"T x 4 6 SINGLE_TAG").unwrap();
        let e = decode(&z.finish().unwrap(), true).unwrap_err();
        assert!(e.to_string().contains("readQueueNums"), "{e}");

        // A claimed length beyond the inflate bound.
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(&i32::MAX.to_be_bytes()).unwrap();
        let e = decode(&z.finish().unwrap(), true).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
    }
}
