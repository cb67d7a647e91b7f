//! The telemetry stream and what rides on it. A client's first command is
//! its settings: the broker registers it (a heartbeat on its connection:
//! producer groups named after its topics, or its consumer group with its
//! subscriptions) and answers with the settings it is to use. Requests the
//! broker sends the client's connection come out of its outbox (which the
//! client's stream holds while it is open; they wait there meanwhile) and go
//! down the stream: a transaction check-back as RecoverOrphanedTransaction, a
//! running-info request with jstack as PrintThreadStackTrace, a
//! consume-directly request as VerifyMessage; the client's answers to the
//! last two come back up the stream and are handed to the broker as the
//! answers to its requests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rmq_common::message::record::RecordView;
use rmq_common::message::tags_code;
use rmq_common::remoting::body::{ConsumerData, HeartbeatData, ProducerData, SubscriptionData};
use rmq_common::remoting::{
    CheckTransactionStateRequestHeader, RemotingCommand, RequestCode, ResponseCode,
};
use rmq_grpc::pb;
use rmq_remoting::{Outbox, RequestHandler};
use tonic::Streaming;

use super::agent;
use super::clients::{GrpcClient, Relayed, TelemetrySink};
use super::convert::message_of_record;
use super::service::{Caller, Inner};
use super::settings;
use super::status::{self, Failure};

static NONCE: AtomicU64 = AtomicU64::new(1);

fn nonce() -> String {
    format!(
        "{:x}-{:x}",
        rmq_common::time::now_ms(),
        NONCE.fetch_add(1, Ordering::Relaxed)
    )
}

/// The heartbeat that registers a client with `s` in the client tables.
fn heartbeat(client: &GrpcClient, s: &pb::Settings) -> Option<RemotingCommand> {
    let mut hb = HeartbeatData {
        client_id: client.id.clone(),
        ..Default::default()
    };
    match &s.pub_sub {
        Some(pb::settings::PubSub::Publishing(p)) => {
            hb.producer_data_set = p
                .topics
                .iter()
                .map(|t| ProducerData {
                    group_name: t.name.clone(),
                })
                .collect();
        }
        Some(pb::settings::PubSub::Subscription(sub)) => {
            let consume_type = if s.client_type() == pb::ClientType::PushConsumer {
                "CONSUME_PASSIVELY"
            } else {
                "CONSUME_ACTIVELY"
            };
            let now = rmq_common::time::now_ms();
            hb.consumer_data_set = vec![ConsumerData {
                group_name: sub.group.as_ref()?.name.clone(),
                consume_type: consume_type.into(),
                message_model: "CLUSTERING".into(),
                consume_from_where: "CONSUME_FROM_LAST_OFFSET".into(),
                subscription_data_set: sub
                    .subscriptions
                    .iter()
                    .map(|e| subscription(e, now))
                    .collect(),
            }];
        }
        None => return None,
    }
    let body = serde_json::to_vec(&hb).ok()?;
    let mut cmd = RemotingCommand::request(RequestCode::HeartBeat).with_body(body);
    // Registered with its own language and version, as the proxy does.
    let ua = s.user_agent.as_ref();
    cmd.language = agent::language(ua, &client.language);
    cmd.version = agent::version(ua, &client.version);
    Some(cmd)
}

fn subscription(e: &pb::SubscriptionEntry, now: i64) -> SubscriptionData {
    let f = e.expression.clone().unwrap_or_default();
    let sql = f.r#type() == pb::FilterType::Sql;
    let sub_string = if f.expression.trim().is_empty() {
        "*".to_owned()
    } else {
        f.expression.clone()
    };
    let code_set = if sql || sub_string == "*" {
        Vec::new()
    } else {
        sub_string
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| tags_code(Some(t)))
            .collect()
    };
    SubscriptionData {
        topic: e.topic.as_ref().map(|t| t.name.clone()).unwrap_or_default(),
        sub_string,
        code_set,
        sub_version: now,
        expression_type: Some(if sql { "SQL92" } else { "TAG" }.into()),
    }
}

/// Registers `client` with its settings (a heartbeat on its connection).
pub(crate) async fn register(
    inner: &Inner,
    caller: &Caller,
    s: &pb::Settings,
) -> Result<(), Failure> {
    match &s.pub_sub {
        Some(pb::settings::PubSub::Publishing(p)) => {
            for t in &p.topics {
                inner.check_topic(t)?;
            }
        }
        Some(pb::settings::PubSub::Subscription(sub)) => {
            inner.check_group(&sub.group.clone().unwrap_or_default())?;
        }
        None => {}
    }
    let Some(cmd) = heartbeat(&caller.client, s) else {
        return Err(Failure::new(
            pb::Code::UnrecognizedClientType,
            "there is no publishing or subscription data in settings",
        ));
    };
    let resp = inner.call(caller, cmd).await?;
    if resp.code != i32::from(ResponseCode::Success) {
        return Err(Failure::remoting(resp.code, resp.remark.as_deref()));
    }
    Ok(())
}

/// The settings the broker answers `s` with.
fn merged(inner: &Inner, s: pb::Settings) -> pb::Settings {
    match settings::group_of(&s).map(str::to_owned) {
        Some(group) => {
            let config = inner.ctx.groups.get(&group).unwrap_or_default();
            settings::consumer(s, &config)
        }
        None => settings::producer(s, inner.limits.max_body_bytes as i32),
    }
}

/// Serves one telemetry stream until the client closes it or the broker
/// stops.
pub(crate) async fn serve(
    inner: Arc<Inner>,
    caller: Caller,
    mut inbound: Streaming<pb::TelemetryCommand>,
    sink: TelemetrySink,
) {
    let client = Arc::clone(&caller.client);
    // The stream carries what the broker sends the client's connection
    // too (no task of its own per client: 10,000 idle clients would hold
    // 10,000 of them); it hands the outbox back when it ends.
    let mut outbox = client.take_outbox();
    loop {
        let next = tokio::select! {
            biased;
            _ = inner.cancel.cancelled() => break,
            _ = client.gone.cancelled() => break,
            relayed = next_relayed(&mut outbox) => {
                match relayed {
                    Some(cmd) => relay(&inner, &client, cmd),
                    None => outbox = None,
                }
                continue;
            }
            next = inbound.message() => next,
        };
        let cmd = match next {
            Ok(Some(cmd)) => cmd,
            Ok(None) | Err(_) => break,
        };
        client.conn.touch();
        match cmd.command {
            Some(pb::telemetry_command::Command::Settings(s)) => {
                if s.pub_sub.is_none() {
                    let _ = sink
                        .send(Box::new(Err(tonic::Status::invalid_argument(
                            "there is no publishing or subscription data in settings",
                        ))))
                        .await;
                    break;
                }
                let answer = match register(&inner, &caller, &s).await {
                    Ok(()) => {
                        let m = merged(&inner, s);
                        client.set_settings(m.clone());
                        client.set_sink(sink.clone());
                        pb::TelemetryCommand {
                            status: Some(status::ok()),
                            command: Some(pb::telemetry_command::Command::Settings(m)),
                        }
                    }
                    Err(f) => pb::TelemetryCommand {
                        status: Some(f.status()),
                        command: None,
                    },
                };
                if sink.send(Box::new(Ok(answer))).await.is_err() {
                    break;
                }
            }
            Some(pb::telemetry_command::Command::ThreadStackTrace(t)) => {
                let body = serde_json::json!({
                    "jstack": t.thread_stack_trace.unwrap_or_default(),
                    "properties": {},
                    "subscriptionSet": [],
                    "mqTable": {},
                    "statusTable": {},
                });
                answer_relayed(&inner, &client, &t.nonce, cmd.status.as_ref(), body);
            }
            Some(pb::telemetry_command::Command::VerifyMessageResult(v)) => {
                let result = match cmd.status.as_ref().map(|s| s.code) {
                    Some(c) if c == pb::Code::Ok as i32 => "CR_SUCCESS",
                    Some(c) if c == pb::Code::FailedToConsumeMessage as i32 => "CR_LATER",
                    _ => "CR_RETURN_NULL",
                };
                let body = serde_json::json!({
                    "order": false,
                    "autoCommit": true,
                    "consumeResult": result,
                    "remark": "from gRPC client",
                    "spentTimeMills": 0,
                });
                answer_relayed(&inner, &client, &v.nonce, None, body);
            }
            _ => {}
        }
    }
    client.clear_sink(&sink);
    if let Some(o) = outbox {
        client.return_outbox(o);
    }
}

/// Hands the client's answer to a relayed request to the broker.
fn answer_relayed(
    inner: &Inner,
    client: &Arc<GrpcClient>,
    nonce: &str,
    status: Option<&pb::Status>,
    body: serde_json::Value,
) {
    let Some(r) = client.take_relayed(nonce) else {
        return;
    };
    let ok = status.is_none_or(|s| s.code == pb::Code::Ok as i32);
    let mut resp = if ok {
        RemotingCommand::response(ResponseCode::Success, None)
            .with_body(serde_json::to_vec(&body).unwrap_or_default())
    } else if status.is_some_and(|s| s.code == pb::Code::VerifyFifoMessageUnsupported as i32) {
        RemotingCommand::response(
            ResponseCode::NoPermission,
            Some("forbidden to verify message".into()),
        )
    } else {
        RemotingCommand::response(
            ResponseCode::SystemError,
            Some("verify message failed".into()),
        )
    };
    resp.opaque = r.opaque;
    resp.mark_response();
    inner.handler.response(&client.conn, resp);
}

/// The next request the broker sent the client's connection; never, when
/// this stream does not hold the outbox.
async fn next_relayed(outbox: &mut Option<Outbox>) -> Option<RemotingCommand> {
    match outbox {
        Some(o) => o.recv().await,
        None => std::future::pending().await,
    }
}

fn relay(inner: &Inner, client: &Arc<GrpcClient>, cmd: RemotingCommand) {
    let now = rmq_common::time::now_ms();
    let record = cmd
        .body
        .as_deref()
        .and_then(|b| RecordView::parse(b, false).ok());
    let command = match RequestCode::from_i32(cmd.code) {
        Some(RequestCode::CheckTransactionState) => {
            let (Ok(h), Some(view)) = (
                CheckTransactionStateRequestHeader::from_ext(&cmd.ext()),
                record,
            ) else {
                tracing::warn!(client = %client.id, "transaction check-back without a header or a message; not relayed");
                return;
            };
            let (group, half, command) = super::transaction::recover(&h, &view, now);
            inner
                .transactions
                .remember(&group, &command.transaction_id, half);
            pb::telemetry_command::Command::RecoverOrphanedTransactionCommand(command)
        }
        Some(RequestCode::GetConsumerRunningInfo) => {
            let jstack = cmd.ext().get_str("jstackEnable") == Some("true");
            if !jstack {
                let mut resp = RemotingCommand::response(
                    ResponseCode::SystemError,
                    Some("a gRPC client reports only its thread stacks (jstackEnable)".into()),
                );
                resp.opaque = cmd.opaque;
                resp.mark_response();
                inner.handler.response(&client.conn, resp);
                return;
            }
            let n = nonce();
            client.relay(n.clone(), Relayed { opaque: cmd.opaque });
            pb::telemetry_command::Command::PrintThreadStackTraceCommand(
                pb::PrintThreadStackTraceCommand { nonce: n },
            )
        }
        Some(RequestCode::ConsumeMessageDirectly) => {
            let Some(view) = record else { return };
            let topic = view.topic().to_owned();
            let n = nonce();
            client.relay(n.clone(), Relayed { opaque: cmd.opaque });
            pb::telemetry_command::Command::VerifyMessageCommand(pb::VerifyMessageCommand {
                nonce: n,
                message: Some(message_of_record(&view, &topic, None, now)),
            })
        }
        _ => return,
    };
    let sent = client.tell(pb::TelemetryCommand {
        status: None,
        command: Some(command),
    });
    if !sent {
        tracing::debug!(client = %client.id, code = cmd.code, "gRPC client has no telemetry stream; request not relayed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_carry_tag_codes() {
        let e = pb::SubscriptionEntry {
            topic: Some(pb::Resource {
                resource_namespace: String::new(),
                name: "T".into(),
            }),
            expression: Some(pb::FilterExpression {
                r#type: pb::FilterType::Tag as i32,
                expression: "A || B".into(),
            }),
        };
        let s = subscription(&e, 7);
        assert_eq!(s.code_set, vec![tags_code(Some("A")), tags_code(Some("B"))]);
        assert_eq!(s.expression_type.as_deref(), Some("TAG"));
        let all = pb::SubscriptionEntry {
            expression: None,
            ..e
        };
        assert_eq!(subscription(&all, 7).sub_string, "*");
    }
}
