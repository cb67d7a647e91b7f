//! The HEART_BEAT body as clients send it, and CHECK_CLIENT_CONFIG's, which
//! carries one of its subscriptions. Enums arrive as names or ordinals;
//! missing sets and fields default.

use serde::{Deserialize, Deserializer, Serialize};

/// A client's heartbeat.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HeartbeatData {
    /// The client instance id (`ip@pid` and the like).
    #[serde(rename = "clientID")]
    pub client_id: String,
    /// Producer groups the client runs.
    pub producer_data_set: Vec<ProducerData>,
    /// Consumer groups the client runs.
    pub consumer_data_set: Vec<ConsumerData>,
    /// Heartbeat v2 (RocketMQ 5.x): a hash of the client's groups and
    /// subscriptions; 0 from a client that does not use v2.
    pub heartbeat_fingerprint: i32,
    /// Heartbeat v2: the consumers carry no subscriptions (they are
    /// unchanged since the full heartbeat of the same fingerprint).
    pub without_sub: bool,
}

/// One producer group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProducerData {
    /// Group name.
    pub group_name: String,
}

/// One consumer group and its subscriptions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerData {
    /// Group name.
    pub group_name: String,
    /// CONSUME_ACTIVELY / CONSUME_PASSIVELY (or 0 / 1).
    #[serde(deserialize_with = "name_or_ordinal")]
    pub consume_type: String,
    /// BROADCASTING / CLUSTERING (or 0 / 1).
    #[serde(deserialize_with = "name_or_ordinal")]
    pub message_model: String,
    /// Where a new group starts.
    #[serde(deserialize_with = "name_or_ordinal")]
    pub consume_from_where: String,
    /// Topics and expressions.
    pub subscription_data_set: Vec<SubscriptionData>,
}

/// One topic subscription.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionData {
    /// Topic.
    pub topic: String,
    /// Expression (`*`, `TagA || TagB`).
    pub sub_string: String,
    /// Tag hash codes the client computed (used when present).
    pub code_set: Vec<i64>,
    /// Version (a timestamp) of the subscription.
    pub sub_version: i64,
    /// TAG or SQL92.
    pub expression_type: Option<String>,
}

/// CHECK_CLIENT_CONFIG body (Java's `CheckClientRequestBody`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CheckClientBody {
    /// The client instance id.
    pub client_id: String,
    /// The consumer group.
    pub group: String,
    /// The subscription to check.
    pub subscription_data: Option<SubscriptionData>,
}

fn name_or_ordinal<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(match v {
        serde_json::Value::String(s) => s,
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_v2_fields_as_the_5x_client_sends_them() {
        let h: HeartbeatData = crate::json::from_str(
            r#"{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[]}],
                "heartbeatFingerprint":-1408871324,"producerDataSet":[],"withoutSub":true}"#,
        )
        .unwrap();
        assert_eq!(
            (h.heartbeat_fingerprint, h.without_sub),
            (-1_408_871_324, true)
        );
        let v1: HeartbeatData = crate::json::from_str(r#"{"clientID":"c"}"#).unwrap();
        assert_eq!((v1.heartbeat_fingerprint, v1.without_sub), (0, false));
    }

    #[test]
    fn accepts_names_ordinals_and_missing_sets() {
        let h: HeartbeatData = crate::json::from_str(
            r#"{"clientID":"c1","consumerDataSet":[{"groupName":"g","consumeType":"CONSUME_PASSIVELY",
                "messageModel":1,"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",
                "subscriptionDataSet":[{"topic":"T","subString":"TagA","subVersion":5}],"unitMode":false}],
                "producerDataSet":[{"groupName":"p"}]}"#,
        )
        .unwrap();
        assert_eq!(h.client_id, "c1");
        assert_eq!(h.consumer_data_set[0].message_model, "1");
        assert_eq!(
            h.consumer_data_set[0].subscription_data_set[0].sub_string,
            "TagA"
        );
        let h: HeartbeatData =
            crate::json::from_str(r#"{"clientID":"c2","consumerDataSet":[{"groupName":"g"}]}"#)
                .unwrap();
        assert!(h.consumer_data_set[0].subscription_data_set.is_empty());
        assert!(h.producer_data_set.is_empty());
    }
}
