//! What fastjson writes that serde_json cannot: a map keyed by objects.
//! Java's broker serializes `Map<MessageQueue, V>` bodies (topic stats,
//! consume stats, reset offsets) with each key as a JSON object,
//! `{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}`, and the Java client
//! decodes exactly that, so this broker answers in the same form.

use serde::Serialize;

/// `{key:value,...}` with each key written as its own JSON (an object for a
/// struct key), in the order given.
pub fn object_keyed_map<K: Serialize, V: Serialize>(
    entries: impl IntoIterator<Item = (K, V)>,
) -> Result<String, serde_json::Error> {
    let mut out = String::from("{");
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(&k)?);
        out.push(':');
        out.push_str(&serde_json::to_string(&v)?);
    }
    out.push('}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Mq {
        broker_name: String,
        queue_id: i32,
        topic: String,
    }

    #[test]
    fn object_keys_are_written_and_read_back() {
        let mq = |q| Mq {
            broker_name: "b".into(),
            queue_id: q,
            topic: "T".into(),
        };
        let text = object_keyed_map([(mq(0), 5i64), (mq(1), 6)]).unwrap();
        assert_eq!(
            text,
            r#"{{"brokerName":"b","queueId":0,"topic":"T"}:5,{"brokerName":"b","queueId":1,"topic":"T"}:6}"#
        );
        let back: BTreeMap<Mq, i64> = crate::json::from_str(&text).unwrap();
        assert_eq!(back, BTreeMap::from([(mq(0), 5), (mq(1), 6)]));
        // A key sent as a string holding the object's JSON reads the same.
        let back: BTreeMap<Mq, i64> =
            crate::json::from_str(r#"{"{\"brokerName\":\"b\",\"queueId\":1,\"topic\":\"T\"}":6}"#)
                .unwrap();
        assert_eq!(back, BTreeMap::from([(mq(1), 6)]));
    }
}
