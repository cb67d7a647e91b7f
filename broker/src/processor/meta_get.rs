//! RocketMQ 5.x's one-entry reads of the metadata tables:
//! GET_TOPIC_CONFIG (351) and GET_SUBSCRIPTIONGROUP_CONFIG (352). The 5.x
//! proxy asks them of a broker for a topic's message type (its send check)
//! and a group's FIFO flag and retry limit.

use rmq_common::remoting::header::{GetGroupConfigRequestHeader, GetTopicConfigRequestHeader};
use rmq_common::remoting::ResponseCode;

use super::{json_success, Handled, Refusal};
use crate::meta::{SubscriptionGroupManager, TopicConfigManager};

/// GET_TOPIC_CONFIG: the topic's config as JSON (Java's
/// `TopicConfigAndQueueMapping`: the config's fields, and `mappingDetail`
/// only for a static topic asked with `lo`, which this broker never has,
/// so it is left out as fastjson leaves out a null).
pub(crate) fn topic_config(topics: &TopicConfigManager, h: GetTopicConfigRequestHeader) -> Handled {
    let config = topics.get(&h.topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("No topic in this broker. topic: {}", h.topic),
        )
    })?;
    json_success(&config)
}

/// GET_SUBSCRIPTIONGROUP_CONFIG: the group's config as JSON. An unknown
/// group is created with the defaults when `auto_create`
/// (`autoCreateSubscriptionGroup`), as Java's `findSubscriptionGroupConfig`
/// does; otherwise SUBSCRIPTION_GROUP_NOT_EXIST.
pub(crate) fn group_config(
    groups: &SubscriptionGroupManager,
    auto_create: bool,
    h: GetGroupConfigRequestHeader,
) -> Handled {
    let config = if auto_create {
        groups.get_or_create([h.group.as_str()]).pop()
    } else {
        groups.get(&h.group)
    };
    let config = config.ok_or_else(|| {
        Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            "No group in this broker",
        )
    })?;
    json_success(&config)
}
