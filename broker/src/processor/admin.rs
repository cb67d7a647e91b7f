//! UPDATE_AND_CREATE_TOPIC(_LIST), GET_ALL_TOPIC_CONFIG, GET_BROKER_CONFIG,
//! DELETE_TOPIC_IN_BROKER, DELETE_EXPIRED_COMMITLOG,
//! CLEAN_EXPIRED_CONSUMEQUEUE, CLEAN_UNUSED_TOPIC,
//! GET_SYSTEM_TOPIC_LIST_FROM_BROKER and RESUME_CHECK_HALF_MESSAGE.

use std::sync::Arc;

use rmq_common::remoting::header::{
    CreateTopicRequestHeader, DeleteTopicRequestHeader, ResumeCheckHalfRequestHeader,
};
use rmq_common::remoting::{RemotingCommand, ResponseCode};

use super::parts::Admin;
use super::{blocking, json_success, success, topic_attributes, validate, Handled, Refusal};
use rmq_common::remoting::body::{CreateTopicList, TopicConfig, PERM_READ, PERM_WRITE};

/// DELETE_EXPIRED_COMMITLOG: one clean pass now (expired segments go
/// whatever the hour); the body is the pass's report as JSON.
pub(crate) async fn delete_expired(admin: &Arc<Admin>) -> Handled {
    let store = Arc::clone(&admin.store);
    let report = tokio::task::spawn_blocking(move || {
        store.clean_pass(rmq_store::clean::CleanTrigger::Operator)
    })
    .await
    .map_err(|e| {
        Refusal::new(
            ResponseCode::SystemError,
            format!("clean pass stopped: {e}"),
        )
    })?
    .map_err(|e| Refusal::new(ResponseCode::SystemError, format!("clean pass failed: {e}")))?;
    tracing::info!(
        deleted = report.deleted,
        min_offset = report.min_offset,
        end = ?report.end,
        "clean pass requested by an operator"
    );
    json_success(&report)
}

/// Topics that are the broker's own and never in the topic table.
const BROKER_TOPICS: [&str; 5] = [
    rmq_common::constants::SCHEDULE_TOPIC,
    rmq_common::constants::TRANS_HALF_TOPIC,
    rmq_common::constants::TRANS_OP_HALF_TOPIC,
    rmq_common::constants::TRANS_CHECK_MAX_TIME_TOPIC,
    rmq_common::constants::CHECKPOINT_TOPIC,
];

/// GET_SYSTEM_TOPIC_LIST_FROM_BROKER: RocketMQ's system topics, the
/// cluster and broker names, and the cluster's reply topic.
pub(crate) fn system_topics(admin: &Admin) -> Handled {
    let b = &admin.settings.broker;
    let mut list: Vec<String> = rmq_common::names::SYSTEM_TOPICS
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
    list.push(b.broker_cluster_name.clone());
    list.push(b.broker_name.clone());
    list.push(super::reply::reply_topic(&b.broker_cluster_name));
    json_success(&rmq_common::remoting::body::TopicList { topic_list: list })
}

/// CLEAN_UNUSED_TOPIC: the consume queues of topics no longer in the
/// table go (their CommitLog records stay until retention).
pub(crate) async fn clean_unused_topic(admin: &Arc<Admin>) -> Handled {
    let admin2 = Arc::clone(admin);
    let gone = blocking(move || {
        admin2
            .store
            .clean_unused_topics(|t| BROKER_TOPICS.contains(&t) || admin2.topics.get(t).is_some())
    })
    .await??;
    for topic in &gone {
        admin.items.remove_topic(topic);
    }
    tracing::info!(?gone, "unused topics' consume queues removed");
    Ok(success())
}

/// RESUME_CHECK_HALF_MESSAGE: a copy of the half message `msgId` names is
/// appended to the half topic with its check count at 0, so the check
/// service asks its producer again from the start.
pub(crate) async fn resume_check_half(
    admin: &Arc<Admin>,
    h: ResumeCheckHalfRequestHeader,
) -> Handled {
    use rmq_common::constants::property;
    use rmq_common::constants::TRANS_HALF_TOPIC;
    use rmq_common::message::record::RecordView;
    let msg_id = h.msg_id;
    let failed = |why: String| {
        Refusal::new(
            ResponseCode::SystemError,
            format!("Exception was thrown when putting message back to {TRANS_HALF_TOPIC}: {why}"),
        )
    };
    let (_, offset) = rmq_common::message::msg_id::decode_offset_msg_id(&msg_id)
        .map_err(|e| failed(format!("msgId {msg_id:?}: {e}")))?;
    let store = Arc::clone(&admin.store);
    let store_host = admin.store_host;
    blocking(move || -> Result<(), Refusal> {
        let record = store
            .record_at(offset)
            .ok_or_else(|| failed(format!("no message at CommitLog offset {offset}")))?;
        let view = RecordView::parse(record.bytes(), false).map_err(|e| failed(e.to_string()))?;
        if view.topic() != TRANS_HALF_TOPIC {
            return Err(failed(format!(
                "the message at offset {offset} is in {}, not a half message",
                view.topic()
            )));
        }
        let mut copy = view.to_message();
        copy.properties
            .insert(property::TRANSACTION_CHECK_TIMES, "0".to_owned());
        copy.topic = TRANS_HALF_TOPIC.to_owned();
        copy.queue_id = 0;
        copy.store_host = store_host;
        store
            .put_message(&copy)
            .map_err(|e| failed(e.to_string()))?;
        Ok(())
    })
    .await??;
    tracing::info!(msg_id, "half message put back for checking from the start");
    Ok(success())
}

/// DELETE_TOPIC_IN_BROKER: the topic leaves the table (and the
/// NameServers' routes of this broker: the registrar sends them
/// DELETE_TOPIC_IN_NAMESRV naming it), its consume queues are
/// removed on either backend, and every group's offsets of it are dropped.
pub(crate) async fn delete_topic(admin: &Arc<Admin>, h: DeleteTopicRequestHeader) -> Handled {
    let topic = h.topic;
    validate::managed_topic(&topic)?;
    let admin2 = Arc::clone(admin);
    let t = topic.clone();
    blocking(move || -> Result<(), Refusal> {
        admin2.topics.delete(&t)?;
        admin2.store.delete_topic(&t)?;
        admin2.offsets.remove_topic(&t);
        admin2.items.remove_topic(&t);
        Ok(())
    })
    .await??;
    admin.topics_changed.notify_one();
    tracing::info!(topic, "topic deleted");
    Ok(success())
}

/// CLEAN_EXPIRED_CONSUMEQUEUE: min offsets follow the CommitLog's, and the
/// consume queues whose messages all expired go (RocketMQ's
/// `cleanExpiredConsumerQueue`); live topics keep theirs, and topics
/// missing from the table are CLEAN_UNUSED_TOPIC's business.
pub(crate) async fn clean_expired_cq(admin: &Arc<Admin>) -> Handled {
    let store = Arc::clone(&admin.store);
    let gone = blocking(move || store.clean_expired_queues()).await??;
    tracing::info!(?gone, "expired consume queues cleaned");
    Ok(success())
}

/// UPDATE_AND_CREATE_TOPIC. A create waits until the table is on disk, off
/// the async workers.
pub(crate) async fn create_topic(admin: &Arc<Admin>, h: CreateTopicRequestHeader) -> Handled {
    let started = std::time::Instant::now();
    let name = h.topic;
    validate::managed_topic(&name)?;
    let read = validate::queue_nums(
        "readQueueNums",
        h.read_queue_nums
            .unwrap_or(admin.settings.broker.default_topic_queue_nums),
    )?;
    let write = validate::queue_nums("writeQueueNums", h.write_queue_nums.unwrap_or(read))?;
    let changes = topic_attributes::parse(h.attributes.as_deref())?;
    let attributes = topic_attributes::apply(admin.topics.get(&name).as_ref(), &changes)?;
    let config = TopicConfig {
        topic_name: name.clone(),
        read_queue_nums: read,
        write_queue_nums: write,
        perm: validate::perm(h.perm.unwrap_or(PERM_READ | PERM_WRITE))?,
        topic_filter_type: h
            .topic_filter_type
            .unwrap_or_else(|| "SINGLE_TAG".to_owned()),
        topic_sys_flag: h.topic_sys_flag.unwrap_or(0),
        order: h.order.unwrap_or(false),
        attributes,
    };
    let topics = Arc::clone(&admin.topics);
    let stored = blocking(move || topics.upsert(config)).await?;
    admin.rocketmq.topic_created(&name, stored.is_ok(), started);
    stored.map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    tracing::info!(topic = name, read, write, "topic created or updated");
    admin.topics_registered().await;
    Ok(success())
}

/// UPDATE_AND_CREATE_TOPIC_LIST: all or nothing.
pub(crate) async fn create_topics(admin: &Arc<Admin>, req: &RemotingCommand) -> Handled {
    let started = std::time::Instant::now();
    let list: CreateTopicList =
        rmq_common::json::from_slice(req.body.as_deref().unwrap_or_default()).map_err(|e| {
            Refusal::new(
                ResponseCode::SystemError,
                format!("UPDATE_AND_CREATE_TOPIC_LIST body is not a topicConfigList JSON: {e}"),
            )
        })?;
    let mut list = list;
    for t in &mut list.topic_config_list {
        validate::managed_topic(&t.topic_name)?;
        validate::queue_nums("readQueueNums", t.read_queue_nums)?;
        validate::queue_nums("writeQueueNums", t.write_queue_nums)?;
        validate::perm(t.perm)?;
        // The body's attributes carry signed keys, as the header's do.
        let changes: Vec<(String, String)> =
            std::mem::take(&mut t.attributes).into_iter().collect();
        t.attributes = topic_attributes::apply(admin.topics.get(&t.topic_name).as_ref(), &changes)?;
    }
    let count = list.topic_config_list.len();
    // RocketMQ labels the list's one observation with its names joined
    // by ';', which is a system topic's name only for a list of one.
    let names = list
        .topic_config_list
        .iter()
        .map(|t| t.topic_name.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let topics = Arc::clone(&admin.topics);
    let stored = blocking(move || topics.upsert_many(list.topic_config_list)).await?;
    admin
        .rocketmq
        .topic_created(&names, stored.is_ok(), started);
    stored.map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    tracing::info!(count, "topics created or updated from a list");
    admin.topics_registered().await;
    Ok(success())
}

/// GET_ALL_TOPIC_CONFIG.
pub(crate) fn all_topics(admin: &Admin) -> Handled {
    json_success(&admin.topics.table())
}

/// GET_BROKER_CONFIG: as RocketMQ, the settings as `key=value` lines, with
/// what UPDATE_BROKER_CONFIG changed since the start.
pub(crate) fn broker_config(admin: &Admin) -> Handled {
    let mut lines = std::collections::BTreeMap::new();
    for value in [
        serde_json::to_value(&admin.settings.broker),
        serde_json::to_value(&admin.settings.store),
    ] {
        let value = value.map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
        if let serde_json::Value::Object(map) = value {
            for (k, v) in map {
                let v = match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                lines.insert(k, v);
            }
        }
    }
    lines.extend(
        admin
            .runtime
            .pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v)),
    );
    // Where the HA port and the CommitLog are, also when left to default.
    lines.insert("brokerIP2".into(), admin.settings.broker.ha_ip().to_owned());
    lines.insert(
        "storePathCommitLog".into(),
        admin.settings.store.commit_log_dir().display().to_string(),
    );
    // The backends in use, which a runtime flip may have changed.
    lines.insert(
        "consumeQueueStore".into(),
        admin.store.serving_backend().to_string(),
    );
    lines.insert(
        "shadowConsumeQueueStore".into(),
        admin
            .store
            .shadow_consume_queue()
            .map_or(String::new(), |c| c.backend().to_string()),
    );
    let text: Vec<String> = lines.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Ok(success().with_body(text.join("\n").into_bytes()))
}
