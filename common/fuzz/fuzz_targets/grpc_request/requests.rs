//! Structurally valid requests with hostile field values, built with
//! `arbitrary` from the input: prost decodes them, so the broker's
//! conversion and validation code runs. Names come from a list of system,
//! retry, empty and over-long ones; numbers from the edges of their types;
//! durations and timestamps negative, huge or just past a limit; enums
//! known and unknown; receipt handles of the right shape with odd fields,
//! or ones the broker handed out earlier.

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use rmq_grpc::pb;
use rmq_grpc::prost::Message as _;
use rmq_grpc::prost_types::{Duration, Timestamp};

/// Topic and group names: ones that exist or get created, then hostile.
const NAMES: &[&str] = &[
    "TopicA",
    "TopicA",
    "fz-fifo",
    "fz-delay",
    "fz-tx",
    "g1",
    "g1",
    "GID_fz",
    "",
    " ",
    "%RETRY%g1",
    "%DLQ%g1",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "SCHEDULE_TOPIC_XXXX",
    "rmq_sys_wheel_timer",
    "TBW102",
    "CID_RMQ_SYS_TRANS",
    "a|b",
    "topic with space",
    "中文",
    "\0",
    "T%g",
];

const NAMESPACES: &[&str] = &["", "", "", "ns", "%", "MQ_INST_1"];

/// Strings for ids, tags, keys, groups, trace contexts, property values.
const STRINGS: &[&str] = &[
    "",
    " ",
    "TagA",
    "a|b",
    "||",
    "*",
    "7F0000010001",
    "0A0B0C0D0E0F",
    "\u{1}\u{2}",
    "\n",
    "k1 k2",
    "TRAN_MSG",
    "true",
    "-1",
];

/// Property names: user ones, system ones, control characters.
const PROPERTY_NAMES: &[&str] = &[
    "a",
    "user-key",
    "TAGS",
    "KEYS",
    "UNIQ_KEY",
    "TRAN_MSG",
    "DELAY",
    "__STARTDELIVERTIME",
    "TIMER_DELIVER_MS",
    "REAL_TOPIC",
    "",
    "\u{1}",
    "a\u{2}b",
];

const I32S: &[i32] = &[0, 1, -1, 2, 31, 32, 33, 1024, i32::MAX, i32::MIN];
const I64S: &[i64] = &[0, 1, -1, 4096, i64::MAX, i64::MIN, 1 << 40];
const SECONDS: &[i64] = &[
    0,
    1,
    5,
    10,
    20,
    30,
    60,
    3600,
    43_200,
    43_201,
    86_400,
    -1,
    i64::MAX,
    i64::MIN,
];
const NANOS: &[i32] = &[0, 0, 1, 999_999_999, -1, 1_000_000_000, i32::MAX, i32::MIN];
/// The largest body the broker takes (`maxMessageSize`, 4 MiB): bodies
/// just past it are refused, not stored.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// What the target remembers between inputs: receipt handles and recall
/// handles the broker gave, message and transaction ids it answered.
#[derive(Default)]
pub struct Seen {
    pub receipt_handles: Vec<String>,
    pub recall_handles: Vec<String>,
    pub message_ids: Vec<String>,
    pub transaction_ids: Vec<String>,
}

const SEEN_CAP: usize = 64;

impl Seen {
    /// Remembers `v` in `list`, keeping the newest [`SEEN_CAP`].
    pub fn keep(list: &mut Vec<String>, v: String) {
        if v.is_empty() {
            return;
        }
        if list.len() >= SEEN_CAP {
            list.remove(0);
        }
        list.push(v);
    }
}

fn string(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=5)? {
        0..=2 => (*u.choose(STRINGS)?).to_owned(),
        3 => u.arbitrary()?,
        4 => "x".repeat(u.int_in_range(60..=70)?),
        _ => "y".repeat(u.int_in_range(0..=40_000)?),
    })
}

fn name(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=9)? {
        0..=6 => (*u.choose(NAMES)?).to_owned(),
        7 => u.arbitrary()?,
        8 => "T".repeat(*u.choose(&[126usize, 127, 128, 255, 256, 4096])?),
        _ => format!("fz-{}", u.int_in_range(0..=7)?),
    })
}

fn resource(u: &mut Unstructured<'_>) -> Result<Option<pb::Resource>> {
    if u.ratio(1, 10)? {
        return Ok(None);
    }
    Ok(Some(pb::Resource {
        resource_namespace: (*u.choose(NAMESPACES)?).to_owned(),
        name: name(u)?,
    }))
}

fn i32v(u: &mut Unstructured<'_>) -> Result<i32> {
    if u.ratio(1, 4)? {
        u.arbitrary()
    } else {
        Ok(*u.choose(I32S)?)
    }
}

fn i64v(u: &mut Unstructured<'_>) -> Result<i64> {
    if u.ratio(1, 4)? {
        u.arbitrary()
    } else {
        Ok(*u.choose(I64S)?)
    }
}

/// An enum value: known ones mostly, then past the end and negative.
fn enum_v(u: &mut Unstructured<'_>, known: i32) -> Result<i32> {
    Ok(match u.int_in_range(0..=5)? {
        0..=3 => u.int_in_range(0..=known - 1)?,
        4 => known + u.int_in_range(0..=3)?,
        _ => *u.choose(&[-1, i32::MAX, i32::MIN])?,
    })
}

fn duration(u: &mut Unstructured<'_>) -> Result<Option<Duration>> {
    if u.ratio(1, 6)? {
        return Ok(None);
    }
    Ok(Some(Duration {
        seconds: *u.choose(SECONDS)?,
        nanos: *u.choose(NANOS)?,
    }))
}

fn timestamp(u: &mut Unstructured<'_>) -> Result<Option<Timestamp>> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    if u.ratio(1, 6)? {
        return Ok(None);
    }
    let seconds = match u.int_in_range(0..=4)? {
        0 | 1 => now + *u.choose(&[0i64, 2, 60, 86_399, 86_401, 3 * 86_400, -60])?,
        2 => *u.choose(SECONDS)?,
        _ => u.arbitrary()?,
    };
    Ok(Some(Timestamp {
        seconds,
        nanos: *u.choose(NANOS)?,
    }))
}

/// A body; one just past the limit only when `big` (one per request).
fn body(u: &mut Unstructured<'_>, big: bool) -> Result<Vec<u8>> {
    Ok(match u.int_in_range(0..=15)? {
        0 => Vec::new(),
        1 if big => vec![b'b'; MAX_BODY + 1],
        2 => vec![b'b'; 64 * 1024],
        3 => vec![0x1f, 0x8b, 0x08, 0x00, 0xff],
        _ => {
            let n = u.int_in_range(0..=512)?;
            u.bytes(n.min(u.len()))?.to_vec()
        }
    })
}

fn properties(u: &mut Unstructured<'_>) -> Result<std::collections::HashMap<String, String>> {
    let mut m = std::collections::HashMap::new();
    match u.int_in_range(0..=9)? {
        // Past the proxy's 128 properties, or its 16 KiB of them.
        0 => {
            for i in 0..129 {
                m.insert(format!("p{i}"), "v".into());
            }
        }
        1 => {
            m.insert("big".into(), "v".repeat(16 * 1024 + 1));
        }
        _ => {
            for _ in 0..u.int_in_range(0..=4)? {
                let k = if u.ratio(3, 4)? {
                    (*u.choose(PROPERTY_NAMES)?).to_owned()
                } else {
                    u.arbitrary()?
                };
                m.insert(k, string(u)?);
            }
        }
    }
    Ok(m)
}

/// A receipt handle: one the broker gave, one of the right shape with odd
/// fields, or a string.
fn receipt_handle(u: &mut Unstructured<'_>, seen: &Seen) -> Result<String> {
    Ok(match u.int_in_range(0..=4)? {
        0 | 1 if !seen.receipt_handles.is_empty() => u.choose(&seen.receipt_handles)?.clone(),
        0..=2 => {
            let mut fields = Vec::with_capacity(9);
            for i in 0..u.int_in_range(7..=10)? {
                fields.push(match i {
                    5 => (*u.choose(&["broker-a", "", "x"])?).to_owned(),
                    4 => u.int_in_range(0..=2)?.to_string(),
                    _ => i64v(u)?.to_string(),
                });
            }
            fields.join(" ")
        }
        _ => string(u)?,
    })
}

fn pick_seen(u: &mut Unstructured<'_>, list: &[String]) -> Result<String> {
    if !list.is_empty() && u.ratio(1, 2)? {
        Ok(u.choose(list)?.clone())
    } else {
        string(u)
    }
}

fn filter(u: &mut Unstructured<'_>) -> Result<Option<pb::FilterExpression>> {
    if u.ratio(1, 5)? {
        return Ok(None);
    }
    let expression = match u.int_in_range(0..=4)? {
        0 => "a > 5 AND b = 'x'".to_owned(),
        1 => "(((".to_owned(),
        _ => string(u)?,
    };
    Ok(Some(pb::FilterExpression {
        r#type: enum_v(u, 3)?,
        expression,
    }))
}

fn message_queue(u: &mut Unstructured<'_>) -> Result<Option<pb::MessageQueue>> {
    if u.ratio(1, 10)? {
        return Ok(None);
    }
    Ok(Some(pb::MessageQueue {
        topic: resource(u)?,
        id: i32v(u)?,
        permission: enum_v(u, 5)?,
        broker: None,
        accept_message_types: vec![enum_v(u, 6)?],
    }))
}

fn endpoints(u: &mut Unstructured<'_>) -> Result<Option<pb::Endpoints>> {
    if u.ratio(1, 2)? {
        return Ok(None);
    }
    Ok(Some(pb::Endpoints {
        scheme: enum_v(u, 4)?,
        addresses: vec![pb::Address {
            host: string(u)?,
            port: i32v(u)?,
        }],
    }))
}

fn system_properties(u: &mut Unstructured<'_>) -> Result<pb::SystemProperties> {
    let opt = |u: &mut Unstructured<'_>| -> Result<Option<String>> {
        if u.ratio(1, 2)? {
            Ok(None)
        } else {
            string(u).map(Some)
        }
    };
    Ok(pb::SystemProperties {
        tag: opt(u)?,
        keys: (0..u.int_in_range(0..=3)?)
            .map(|_| string(u))
            .collect::<Result<_>>()?,
        message_id: if u.ratio(1, 3)? {
            string(u)?
        } else {
            format!("01{:030X}", u.arbitrary::<u128>()? >> 8)
        },
        body_digest: if u.ratio(1, 2)? {
            None
        } else {
            Some(pb::Digest {
                r#type: enum_v(u, 4)?,
                checksum: string(u)?,
            })
        },
        body_encoding: enum_v(u, 3)?,
        message_type: enum_v(u, 6)?,
        born_timestamp: timestamp(u)?,
        born_host: string(u)?,
        store_timestamp: timestamp(u)?,
        store_host: string(u)?,
        delivery_timestamp: if u.ratio(1, 2)? { None } else { timestamp(u)? },
        receipt_handle: opt(u)?,
        queue_id: i32v(u)?,
        queue_offset: Some(i64v(u)?),
        invisible_duration: duration(u)?,
        delivery_attempt: Some(i32v(u)?),
        message_group: if u.ratio(1, 2)? {
            None
        } else {
            Some(match u.int_in_range(0..=3)? {
                0 => "g".repeat(*u.choose(&[63usize, 64, 65])?),
                _ => string(u)?,
            })
        },
        trace_context: opt(u)?,
        orphaned_transaction_recovery_duration: if u.ratio(1, 2)? { None } else { duration(u)? },
        dead_letter_queue: None,
    })
}

fn message(u: &mut Unstructured<'_>, big: bool) -> Result<pb::Message> {
    Ok(pb::Message {
        topic: resource(u)?,
        user_properties: properties(u)?,
        system_properties: if u.ratio(1, 12)? {
            None
        } else {
            Some(system_properties(u)?)
        },
        body: body(u, big)?.into(),
    })
}

fn settings(u: &mut Unstructured<'_>) -> Result<pb::Settings> {
    let pub_sub = match u.int_in_range(0..=4)? {
        0 => None,
        1 | 2 => Some(pb::settings::PubSub::Publishing(pb::Publishing {
            topics: (0..u.int_in_range(0..=3)?)
                .map(|_| resource(u).map(Option::unwrap_or_default))
                .collect::<Result<_>>()?,
            max_body_size: i32v(u)?,
            validate_message_type: u.arbitrary()?,
        })),
        _ => Some(pb::settings::PubSub::Subscription(pb::Subscription {
            group: resource(u)?,
            subscriptions: (0..u.int_in_range(0..=3)?)
                .map(|_| {
                    Ok(pb::SubscriptionEntry {
                        topic: resource(u)?,
                        expression: filter(u)?,
                    })
                })
                .collect::<Result<_>>()?,
            fifo: u.arbitrary()?,
            receive_batch_size: Some(i32v(u)?),
            long_polling_timeout: duration(u)?,
        })),
    };
    let backoff = match u.int_in_range(0..=2)? {
        0 => None,
        1 => Some(pb::retry_policy::Strategy::ExponentialBackoff(
            pb::ExponentialBackoff {
                initial: duration(u)?,
                max: duration(u)?,
                multiplier: *u.choose(&[2.0f32, 0.0, -1.0, f32::NAN, f32::INFINITY])?,
            },
        )),
        _ => Some(pb::retry_policy::Strategy::CustomizedBackoff(
            pb::CustomizedBackoff {
                next: (0..u.int_in_range(0..=3)?)
                    .map(|_| duration(u).map(Option::unwrap_or_default))
                    .collect::<Result<_>>()?,
            },
        )),
    };
    Ok(pb::Settings {
        client_type: Some(enum_v(u, 5)?),
        access_point: endpoints(u)?,
        backoff_policy: Some(pb::RetryPolicy {
            max_attempts: i32v(u)?,
            strategy: backoff,
        }),
        request_timeout: duration(u)?,
        pub_sub,
        user_agent: Some(pb::Ua {
            language: enum_v(u, 12)?,
            version: (*u.choose(&["5.0.7", "5.0.2", "", "9"])?).to_owned(),
            platform: string(u)?,
            hostname: string(u)?,
        }),
        metric: None,
    })
}

fn telemetry(u: &mut Unstructured<'_>, seen: &Seen) -> Result<pb::TelemetryCommand> {
    use pb::telemetry_command::Command;
    let command = match u.int_in_range(0..=7)? {
        0..=3 => Some(Command::Settings(settings(u)?)),
        4 => Some(Command::ThreadStackTrace(pb::ThreadStackTrace {
            nonce: string(u)?,
            thread_stack_trace: Some(string(u)?),
        })),
        5 => Some(Command::VerifyMessageResult(pb::VerifyMessageResult {
            nonce: string(u)?,
        })),
        6 => Some(Command::RecoverOrphanedTransactionCommand(
            pb::RecoverOrphanedTransactionCommand {
                message: Some(message(u, false)?),
                transaction_id: pick_seen(u, &seen.transaction_ids)?,
            },
        )),
        _ => None,
    };
    Ok(pb::TelemetryCommand {
        status: if u.ratio(1, 3)? {
            Some(pb::Status {
                code: enum_v(u, 600)?,
                message: string(u)?,
            })
        } else {
            None
        },
        command,
    })
}

/// The messages of one call of `METHODS[method]` (several for Telemetry).
pub fn build(method: &str, u: &mut Unstructured<'_>, seen: &Seen) -> Result<Vec<Vec<u8>>> {
    let one = |m: &dyn Fn(&mut Unstructured<'_>) -> Result<Vec<u8>>, u: &mut Unstructured<'_>| {
        m(u).map(|b| vec![b])
    };
    match method {
        "QueryRoute" => one(
            &|u| {
                Ok(pb::QueryRouteRequest {
                    topic: resource(u)?,
                    endpoints: endpoints(u)?,
                }
                .encode_to_vec())
            },
            u,
        ),
        "Heartbeat" => one(
            &|u| {
                Ok(pb::HeartbeatRequest {
                    group: resource(u)?,
                    client_type: enum_v(u, 5)?,
                }
                .encode_to_vec())
            },
            u,
        ),
        "SendMessage" => {
            let n = *u.choose(&[1usize, 1, 1, 2, 3, 0, 33])?;
            let messages = (0..n).map(|i| message(u, i == 0)).collect::<Result<_>>()?;
            Ok(vec![pb::SendMessageRequest { messages }.encode_to_vec()])
        }
        "QueryAssignment" => one(
            &|u| {
                Ok(pb::QueryAssignmentRequest {
                    topic: resource(u)?,
                    group: resource(u)?,
                    endpoints: endpoints(u)?,
                }
                .encode_to_vec())
            },
            u,
        ),
        "ReceiveMessage" => one(
            &|u| {
                Ok(pb::ReceiveMessageRequest {
                    group: resource(u)?,
                    message_queue: message_queue(u)?,
                    filter_expression: filter(u)?,
                    batch_size: i32v(u)?,
                    invisible_duration: duration(u)?,
                    auto_renew: u.ratio(1, 4)?,
                    // Short mostly: the broker holds an empty receive for
                    // at least 5 s (its minimum), at most 20 s.
                    long_polling_timeout: if u.ratio(7, 8)? {
                        Some(Duration {
                            seconds: 0,
                            nanos: 1_000_000,
                        })
                    } else {
                        duration(u)?
                    },
                    attempt_id: if u.ratio(1, 2)? {
                        None
                    } else {
                        Some(string(u)?)
                    },
                }
                .encode_to_vec())
            },
            u,
        ),
        "AckMessage" => {
            let group = resource(u)?;
            let topic = resource(u)?;
            let mut entries = Vec::new();
            for _ in 0..*u.choose(&[1usize, 1, 2, 0, 40])? {
                entries.push(pb::AckMessageEntry {
                    message_id: pick_seen(u, &seen.message_ids)?,
                    receipt_handle: receipt_handle(u, seen)?,
                });
            }
            Ok(vec![pb::AckMessageRequest {
                group,
                topic,
                entries,
            }
            .encode_to_vec()])
        }
        "ForwardMessageToDeadLetterQueue" => Ok(vec![pb::ForwardMessageToDeadLetterQueueRequest {
            group: resource(u)?,
            topic: resource(u)?,
            receipt_handle: receipt_handle(u, seen)?,
            message_id: pick_seen(u, &seen.message_ids)?,
            delivery_attempt: i32v(u)?,
            max_delivery_attempts: i32v(u)?,
        }
        .encode_to_vec()]),
        "PullMessage" => one(
            &|u| {
                Ok(pb::PullMessageRequest {
                    group: resource(u)?,
                    message_queue: message_queue(u)?,
                    offset: i64v(u)?,
                    batch_size: i32v(u)?,
                    filter_expression: filter(u)?,
                    long_polling_timeout: duration(u)?,
                }
                .encode_to_vec())
            },
            u,
        ),
        "UpdateOffset" => one(
            &|u| {
                Ok(pb::UpdateOffsetRequest {
                    group: resource(u)?,
                    message_queue: message_queue(u)?,
                    offset: i64v(u)?,
                }
                .encode_to_vec())
            },
            u,
        ),
        "GetOffset" => one(
            &|u| {
                Ok(pb::GetOffsetRequest {
                    group: resource(u)?,
                    message_queue: message_queue(u)?,
                }
                .encode_to_vec())
            },
            u,
        ),
        "QueryOffset" => one(
            &|u| {
                Ok(pb::QueryOffsetRequest {
                    message_queue: message_queue(u)?,
                    query_offset_policy: enum_v(u, 3)?,
                    timestamp: timestamp(u)?,
                }
                .encode_to_vec())
            },
            u,
        ),
        "EndTransaction" => Ok(vec![pb::EndTransactionRequest {
            topic: resource(u)?,
            message_id: pick_seen(u, &seen.message_ids)?,
            transaction_id: pick_seen(u, &seen.transaction_ids)?,
            resolution: enum_v(u, 3)?,
            source: enum_v(u, 3)?,
            trace_context: string(u)?,
        }
        .encode_to_vec()]),
        "Telemetry" => {
            let n = u.int_in_range(1..=3)?;
            (0..n)
                .map(|_| telemetry(u, seen).map(|c| c.encode_to_vec()))
                .collect()
        }
        "NotifyClientTermination" => one(
            &|u| {
                Ok(pb::NotifyClientTerminationRequest {
                    group: resource(u)?,
                }
                .encode_to_vec())
            },
            u,
        ),
        "ChangeInvisibleDuration" => Ok(vec![pb::ChangeInvisibleDurationRequest {
            group: resource(u)?,
            topic: resource(u)?,
            receipt_handle: receipt_handle(u, seen)?,
            invisible_duration: duration(u)?,
            message_id: pick_seen(u, &seen.message_ids)?,
        }
        .encode_to_vec()]),
        "RecallMessage" => Ok(vec![pb::RecallMessageRequest {
            topic: resource(u)?,
            recall_handle: pick_seen(u, &seen.recall_handles)?,
        }
        .encode_to_vec()]),
        other => panic!("no builder for {other}"),
    }
}
