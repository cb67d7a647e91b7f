//! RocketMQ 5.x topic attributes on the admin and send paths: the
//! `attributes` of UPDATE_AND_CREATE_TOPIC(_LIST) applied to what a topic
//! has, and a send refused when its message's type is not the one its
//! topic declares in `message.type`.

use std::collections::BTreeMap;

use rmq_common::attributes::{
    alter, parse_to_map, TopicMessageType, MESSAGE_TYPE, RESERVE_TIME, TOPIC_ATTRIBUTES,
};
use rmq_common::constants::{DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX};
use rmq_common::message::Properties;
use rmq_common::remoting::body::TopicConfig;
use rmq_common::remoting::ResponseCode;

use super::Refusal;

/// The attributes a topic has after `changes` (signed keys, as parsed or
/// as a list body carries them), given what it has now (`None`: it is
/// new). Refused as a 5.3.3 broker refuses: MIXED (this broker has no
/// `enableMixedMessageType`) with INVALID_PARAMETER, `reserve.time` (no
/// tiered store) and every rule of `AttributeUtil` with SYSTEM_ERROR.
pub(crate) fn apply(
    current: Option<&TopicConfig>,
    changes: &[(String, String)],
) -> Result<BTreeMap<String, String>, Refusal> {
    let plus_type = format!("+{MESSAGE_TYPE}");
    if changes
        .iter()
        .any(|(k, v)| *k == plus_type && v == TopicMessageType::Mixed.as_str())
    {
        return Err(Refusal::new(
            ResponseCode::InvalidParameter,
            "MIXED message type is not supported.",
        ));
    }
    if changes
        .iter()
        .any(|(k, _)| k.get(1..) == Some(RESERVE_TIME))
    {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            "Update topic reserveTime not supported",
        ));
    }
    let empty = BTreeMap::new();
    let now = current.map_or(&empty, |c| &c.attributes);
    alter(current.is_none(), &TOPIC_ATTRIBUTES, now, changes)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))
}

/// The `attributes` header text of UPDATE_AND_CREATE_TOPIC as items.
pub(crate) fn parse(text: Option<&str>) -> Result<Vec<(String, String)>, Refusal> {
    parse_to_map(text.unwrap_or_default())
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))
}

/// A send's check: a topic that declares `message.type` (retry and
/// dead-letter topics excepted) takes only messages of that type, MIXED
/// any; refused with MESSAGE_ILLEGAL and the 5.x proxy's remark. A topic
/// without the attribute (every 4.x topic) takes every message, so 4.x
/// delayed, transactional and ordered sends keep working.
pub(crate) fn check_send(topic: &TopicConfig, properties: &Properties) -> Result<(), Refusal> {
    let Some(expected) = TopicMessageType::of_topic(&topic.attributes) else {
        return Ok(());
    };
    if topic.topic_name.starts_with(RETRY_GROUP_TOPIC_PREFIX)
        || topic.topic_name.starts_with(DLQ_GROUP_TOPIC_PREFIX)
    {
        return Ok(());
    }
    let actual = TopicMessageType::of_message(properties);
    if expected.accepts(actual) {
        return Ok(());
    }
    Err(Refusal::new(
        ResponseCode::MessageIllegal,
        format!(
            "TopicMessageType validate failed, the expected type is {expected}, but actual type is {actual}"
        ),
    ))
}
