//! Server-side assignment bodies (RocketMQ 5.x): QUERY_ASSIGNMENT's request
//! and answer, and SET_MESSAGE_REQUEST_MODE's request, which is also one
//! entry of the broker's `config/messageRequestMode.json`.

use serde::{Deserialize, Serialize};

use super::consumer::MessageQueue;

/// How a consumer reads a queue the broker assigned it (Java's
/// `MessageRequestMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum MessageRequestMode {
    /// PULL_MESSAGE by queue offset (the default).
    #[default]
    Pull,
    /// POP_MESSAGE and ACK_MESSAGE.
    Pop,
}

impl MessageRequestMode {
    /// The Java name (`PULL`, `POP`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Pull => "PULL",
            Self::Pop => "POP",
        }
    }
}

/// SET_MESSAGE_REQUEST_MODE's body (Java's `SetMessageRequestModeRequestBody`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SetMessageRequestModeBody {
    /// The topic.
    pub topic: String,
    /// The consumer group.
    pub consumer_group: String,
    /// PULL or POP.
    pub mode: MessageRequestMode,
    /// In POP mode, how many following clients' queues each client also
    /// pops (≤ 0: every client pops every queue).
    pub pop_share_queue_num: i32,
}

/// QUERY_ASSIGNMENT's body (Java's `QueryAssignmentRequestBody`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueryAssignmentBody {
    /// The topic (a group's retry topic too).
    pub topic: String,
    /// The consumer group.
    pub consumer_group: String,
    /// The asking client's id.
    pub client_id: String,
    /// The allocation strategy's name (`AVG`, `AVG_BY_CIRCLE`).
    pub strategy_name: String,
    /// `CLUSTERING` or `BROADCASTING`.
    pub message_model: String,
}

/// One assigned queue and how to read it (Java's `MessageQueueAssignment`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueueAssignment {
    /// The queue; queue id -1 in POP mode means "any queue of the topic".
    pub message_queue: MessageQueue,
    /// PULL or POP.
    pub mode: MessageRequestMode,
}

/// QUERY_ASSIGNMENT's answer (Java's `QueryAssignmentResponseBody`): no
/// set (`None`, the field absent) when the assignment could not be
/// computed, so the client keeps what it has; an empty set when it should
/// drop every queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueryAssignmentAnswer {
    /// The client's queues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_queue_assignments: Option<Vec<MessageQueueAssignment>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_bodies_decode_and_answers_encode_as_java_does() {
        let set: SetMessageRequestModeBody = crate::json::from_str(
            r#"{"consumerGroup":"G","mode":"POP","popShareQueueNum":2,"topic":"T"}"#,
        )
        .unwrap();
        assert_eq!(set.mode, MessageRequestMode::Pop);
        assert_eq!(set.pop_share_queue_num, 2);
        let q: QueryAssignmentBody = crate::json::from_str(
            r#"{"clientId":"c","consumerGroup":"G","messageModel":"CLUSTERING","strategyName":"AVG","topic":"T"}"#,
        )
        .unwrap();
        assert_eq!(
            (q.strategy_name.as_str(), q.message_model.as_str()),
            ("AVG", "CLUSTERING")
        );
        let none = serde_json::to_string(&QueryAssignmentAnswer::default()).unwrap();
        assert_eq!(none, "{}");
        let one = QueryAssignmentAnswer {
            message_queue_assignments: Some(vec![MessageQueueAssignment {
                message_queue: MessageQueue {
                    topic: "T".into(),
                    broker_name: "b".into(),
                    queue_id: -1,
                },
                mode: MessageRequestMode::Pop,
            }]),
        };
        assert_eq!(
            serde_json::to_string(&one).unwrap(),
            r#"{"messageQueueAssignments":[{"messageQueue":{"topic":"T","brokerName":"b","queueId":-1},"mode":"POP"}]}"#
        );
    }
}
