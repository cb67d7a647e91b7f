//! The NameServer's administration codes, answered as Java 4.9's
//! `DefaultRequestProcessor` answers them: the KV config (100-102, 219),
//! broker write permission (205, 327), topic lists (224, 304, 311-313),
//! its own settings (318, 319) and QUERY_DATA_VERSION (322).

use rmq_common::remoting::body::{DataVersion, TopicList};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use serde::Serialize;

use super::processor::{json_reply, NameServerHandler, Refusal, Reply};

/// `topicSysFlag` bit of a unit topic.
const FLAG_UNIT: i32 = 1;
/// `topicSysFlag` bit of a topic with unit subscriptions.
const FLAG_UNIT_SUB: i32 = 2;

/// A topic list with the broker to ask for more (304).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TopicListAt {
    #[serde(skip_serializing_if = "Option::is_none")]
    broker_addr: Option<String>,
    topic_list: Vec<String>,
}

impl NameServerHandler {
    /// Answers an administration code (anything but registration and
    /// routes); a code the NameServer does not serve is refused by name.
    pub(super) fn admin(&self, code: RequestCode, req: &RemotingCommand) -> Result<Reply, Refusal> {
        let ext = req.ext();
        match code {
            RequestCode::PutKvConfig => {
                let (ns, key) = (ext.req_str("namespace")?, ext.req_str("key")?);
                let value = ext.req_str("value")?;
                self.kv.put(ns, key, value).map_err(system_error)?;
                tracing::info!(namespace = ns, key, "KV config set");
                Ok(Reply::default())
            }
            RequestCode::GetKvConfig => {
                let (ns, key) = (ext.req_str("namespace")?, ext.req_str("key")?);
                let value = self.kv.get(ns, key).ok_or_else(|| {
                    Refusal::new(
                        ResponseCode::QueryNotFound,
                        format!("No config item, Namespace: {ns} Key: {key}"),
                    )
                })?;
                Ok(Reply {
                    body: None,
                    ext: vec![("value", value)],
                })
            }
            RequestCode::DeleteKvConfig => {
                let (ns, key) = (ext.req_str("namespace")?, ext.req_str("key")?);
                self.kv.delete(ns, key).map_err(system_error)?;
                tracing::info!(namespace = ns, key, "KV config deleted");
                Ok(Reply::default())
            }
            RequestCode::GetKvlistByNamespace => {
                let ns = ext.req_str("namespace")?;
                let table = self.kv.namespace(ns).ok_or_else(|| {
                    Refusal::new(
                        ResponseCode::QueryNotFound,
                        format!("No config item, Namespace: {ns}"),
                    )
                })?;
                json_reply(&serde_json::json!({ "table": table }))
            }
            RequestCode::WipeWritePermOfBroker | RequestCode::AddWritePermOfBroker => {
                let broker = ext.req_str("brokerName")?;
                let wipe = code == RequestCode::WipeWritePermOfBroker;
                let count = self.routes().change_write_perm(broker, wipe);
                tracing::warn!(
                    broker,
                    wipe,
                    topics = count,
                    "broker write permission changed"
                );
                let key = if wipe {
                    "wipeTopicCount"
                } else {
                    "addTopicCount"
                };
                Ok(Reply {
                    body: None,
                    ext: vec![(key, count.to_string())],
                })
            }
            RequestCode::GetTopicsByCluster => {
                let cluster = ext.req_str("cluster")?;
                json_reply(&TopicList {
                    topic_list: self.routes().topics_of_cluster(cluster),
                })
            }
            RequestCode::GetSystemTopicListFromNs => {
                let (topic_list, broker_addr) = self.routes().system_topics();
                json_reply(&TopicListAt {
                    broker_addr,
                    topic_list,
                })
            }
            RequestCode::GetUnitTopicList => self.flagged(|f| f & FLAG_UNIT != 0),
            RequestCode::GetHasUnitSubTopicList => self.flagged(|f| f & FLAG_UNIT_SUB != 0),
            RequestCode::GetHasUnitSubUnunitTopicList => {
                self.flagged(|f| f & FLAG_UNIT == 0 && f & FLAG_UNIT_SUB != 0)
            }
            RequestCode::GetNamesrvConfig => Ok(Reply {
                body: Some(self.config().text().into_bytes()),
                ext: Vec::new(),
            }),
            RequestCode::UpdateNamesrvConfig => {
                let body = String::from_utf8_lossy(req.body.as_deref().unwrap_or_default());
                self.config()
                    .update(&body)
                    .map_err(|r| Refusal::new(r.code, r.remark))?;
                tracing::info!(update = %body.trim(), "NameServer settings updated");
                Ok(Reply::default())
            }
            RequestCode::QueryDataVersion => {
                let addr = ext.req_str("brokerAddr")?;
                let version: DataVersion = rmq_common::json::from_slice(
                    req.body.as_deref().unwrap_or_default(),
                )
                .map_err(|e| {
                    Refusal::new(
                        ResponseCode::SystemError,
                        format!("QUERY_DATA_VERSION body is not a DataVersion: {e}"),
                    )
                })?;
                let (changed, known) =
                    self.routes()
                        .query_data_version(addr, &version, self.now_ms());
                let mut reply = match known {
                    Some(v) => json_reply(&v)?,
                    None => Reply::default(),
                };
                reply.ext.push(("changed", changed.to_string()));
                Ok(reply)
            }
            _ => Err(Refusal::new(
                ResponseCode::RequestCodeNotSupported,
                format!(
                    "request code {} {} is not served by the NameServer: {}",
                    req.code,
                    code.name(),
                    rmq_common::remoting::catalog::not_served_reason(req.code)
                        .unwrap_or("the broker serves it")
                ),
            )),
        }
    }

    fn flagged(&self, keep: impl Fn(i32) -> bool) -> Result<Reply, Refusal> {
        json_reply(&TopicList {
            topic_list: self.routes().topics_by_sys_flag(keep),
        })
    }
}

fn system_error(e: impl std::fmt::Display) -> Refusal {
    Refusal::new(ResponseCode::SystemError, e.to_string())
}
