//! QueryRoute and QueryAssignment. The route comes from the NameServer
//! (GET_ROUTEINFO_BY_TOPIC), so a client sees every broker of the topic;
//! each broker's endpoint is its host with this broker's gRPC port (the
//! proxy's local mode assumes the same), and this broker's own entries
//! carry the address its gRPC server is bound to. With no NameServer
//! answering, the route is this broker's own topic table.
//! Queues are listed as the proxy lists them (read-only, write-only, then
//! read-write ids), each with the message types the topic accepts.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use rmq_common::attributes::TopicMessageType;
use rmq_common::remoting::body::{BrokerData, QueueData, TopicRouteData, PERM_READ, PERM_WRITE};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_grpc::pb;

use super::send::topic_type;
use super::service::Inner;
use super::status::{self, Failure};

const NAMESRV_TIMEOUT: Duration = Duration::from_secs(3);

/// The route of `topic`: from a NameServer, else from the local table.
async fn route_data(inner: &Inner, topic: &str) -> Result<TopicRouteData, Failure> {
    for addr in &inner.namesrv {
        match ask_namesrv(inner, *addr, topic).await {
            Ok(Some(route)) => return Ok(route),
            Ok(None) => {
                return Err(Failure::new(
                    pb::Code::TopicNotFound,
                    format!("No topic route info in name server for the topic: {topic}"),
                ))
            }
            Err(e) => {
                tracing::debug!(namesrv = %addr, error = %e, "gRPC route: NameServer did not answer")
            }
        }
    }
    let config = inner.ctx.topics.get(topic).ok_or_else(|| {
        Failure::new(
            pb::Code::TopicNotFound,
            format!("No topic route info in name server for the topic: {topic}"),
        )
    })?;
    let name = inner.ctx.settings.broker.broker_name.clone();
    Ok(TopicRouteData {
        broker_datas: vec![BrokerData {
            cluster: inner.ctx.settings.broker.broker_cluster_name.clone(),
            broker_name: name.clone(),
            broker_addrs: BTreeMap::from([(
                inner.ctx.role.broker_id(),
                inner.endpoint.to_string(),
            )]),
            ..Default::default()
        }],
        queue_datas: vec![QueueData {
            broker_name: name,
            read_queue_nums: config.read_queue_nums,
            write_queue_nums: config.write_queue_nums,
            perm: config.perm,
            topic_sys_flag: config.topic_sys_flag,
        }],
        ..Default::default()
    })
}

/// `Ok(None)`: the NameServer has no route for the topic.
async fn ask_namesrv(
    inner: &Inner,
    addr: SocketAddr,
    topic: &str,
) -> Result<Option<TopicRouteData>, String> {
    let client = inner
        .ctx
        .connector
        .connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let mut req = RemotingCommand::request(RequestCode::GetRouteInfoByTopic);
    req.put_ext("topic", topic);
    let resp = client
        .invoke(req, NAMESRV_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    if resp.code == i32::from(ResponseCode::TopicNotExist) {
        return Ok(None);
    }
    if resp.code != i32::from(ResponseCode::Success) {
        return Err(format!("code {} {:?}", resp.code, resp.remark));
    }
    rmq_common::json::from_slice(resp.body.as_deref().unwrap_or_default())
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Each broker of the route, by name and id, with its gRPC endpoint.
fn brokers(inner: &Inner, route: &TopicRouteData) -> BTreeMap<String, BTreeMap<i64, pb::Broker>> {
    let own = &inner.ctx.settings.broker.broker_name;
    let mut out: BTreeMap<String, BTreeMap<i64, pb::Broker>> = BTreeMap::new();
    for b in &route.broker_datas {
        for (id, addr) in &b.broker_addrs {
            let endpoint = if &b.broker_name == own && *id == inner.ctx.role.broker_id() {
                inner.endpoint
            } else {
                match addr.parse::<SocketAddr>() {
                    Ok(a) => SocketAddr::new(a.ip(), inner.endpoint.port()),
                    Err(_) => continue,
                }
            };
            let broker = pb::Broker {
                name: b.broker_name.clone(),
                id: i32::try_from(*id).unwrap_or(i32::MAX),
                endpoints: Some(endpoints(endpoint)),
            };
            out.entry(b.broker_name.clone())
                .or_default()
                .insert(*id, broker);
        }
    }
    out
}

pub(crate) fn endpoints(addr: SocketAddr) -> pb::Endpoints {
    let scheme = if addr.is_ipv4() {
        pb::AddressScheme::IPv4
    } else {
        pb::AddressScheme::IPv6
    };
    pb::Endpoints {
        scheme: scheme as i32,
        addresses: vec![pb::Address {
            host: addr.ip().to_string(),
            port: i32::from(addr.port()),
        }],
    }
}

fn permission(perm: i32) -> pb::Permission {
    match (perm & PERM_READ != 0, perm & PERM_WRITE != 0) {
        (true, true) => pb::Permission::ReadWrite,
        (true, false) => pb::Permission::Read,
        (false, true) => pb::Permission::Write,
        (false, false) => pb::Permission::None,
    }
}

fn accepted(t: TopicMessageType) -> Vec<i32> {
    let one = |m: pb::MessageType| vec![m as i32];
    match t {
        TopicMessageType::Normal => one(pb::MessageType::Normal),
        TopicMessageType::Fifo => one(pb::MessageType::Fifo),
        TopicMessageType::Delay => one(pb::MessageType::Delay),
        TopicMessageType::Transaction => one(pb::MessageType::Transaction),
        TopicMessageType::Mixed => [
            pb::MessageType::Normal,
            pb::MessageType::Fifo,
            pb::MessageType::Delay,
            pb::MessageType::Transaction,
        ]
        .iter()
        .map(|m| *m as i32)
        .collect(),
        _ => one(pb::MessageType::Unspecified),
    }
}

/// The queues of one broker's `QueueData`, as the proxy lists them.
fn queues(
    q: &QueueData,
    topic: &pb::Resource,
    types: &[i32],
    broker: &pb::Broker,
) -> Vec<pb::MessageQueue> {
    let (readable, writable) = (q.perm & PERM_READ != 0, q.perm & PERM_WRITE != 0);
    let (r, w, rw, n) = match (readable, writable) {
        (true, true) => {
            let rw = q.write_queue_nums.min(q.read_queue_nums);
            (q.read_queue_nums - rw, q.write_queue_nums - rw, rw, 0)
        }
        (false, true) => (0, q.write_queue_nums, 0, 0),
        (true, false) => (q.read_queue_nums, 0, 0, 0),
        (false, false) => (0, 0, 0, q.write_queue_nums.max(q.read_queue_nums).max(1)),
    };
    let mut out = Vec::new();
    let mut id = 0;
    for (count, perm) in [
        (r, pb::Permission::Read),
        (w, pb::Permission::Write),
        (rw, pb::Permission::ReadWrite),
        (n, pb::Permission::None),
    ] {
        for _ in 0..count.max(0) {
            out.push(pb::MessageQueue {
                topic: Some(topic.clone()),
                id,
                permission: perm as i32,
                broker: Some(broker.clone()),
                accept_message_types: types.to_vec(),
            });
            id += 1;
        }
    }
    out
}

pub(crate) async fn query_route(
    inner: &Inner,
    req: pb::QueryRouteRequest,
) -> Result<pb::QueryRouteResponse, Failure> {
    let topic_res = req.topic.unwrap_or_default();
    let topic = inner.check_topic(&topic_res)?;
    let route = route_data(inner, &topic).await?;
    let brokers = brokers(inner, &route);
    let types = accepted(
        inner
            .ctx
            .topics
            .get(&topic)
            .as_ref()
            .map_or(TopicMessageType::Normal, topic_type),
    );
    let mut message_queues = Vec::new();
    for q in &route.queue_datas {
        let Some(by_id) = brokers.get(&q.broker_name) else {
            break;
        };
        for broker in by_id.values() {
            message_queues.extend(queues(q, &topic_res, &types, broker));
        }
    }
    Ok(pb::QueryRouteResponse {
        status: Some(status::ok()),
        message_queues,
    })
}

pub(crate) async fn query_assignment(
    inner: &Inner,
    req: pb::QueryAssignmentRequest,
) -> Result<pb::QueryAssignmentResponse, Failure> {
    let topic_res = req.topic.unwrap_or_default();
    let topic = inner.check_topic(&topic_res)?;
    let group = inner.check_group(&req.group.unwrap_or_default())?;
    let route = route_data(inner, &topic).await?;
    let brokers = brokers(inner, &route);
    let fifo = inner
        .ctx
        .groups
        .get(&group)
        .is_some_and(|g| g.consume_message_orderly);
    let mut assignments = Vec::new();
    for q in &route.queue_datas {
        if q.perm & PERM_READ == 0 || q.read_queue_nums <= 0 {
            continue;
        }
        let Some(master) = brokers.get(&q.broker_name).and_then(|b| b.get(&0)) else {
            continue;
        };
        let ids: Vec<i32> = if fifo {
            (0..q.read_queue_nums).collect()
        } else {
            vec![-1]
        };
        for id in ids {
            assignments.push(pb::Assignment {
                message_queue: Some(pb::MessageQueue {
                    topic: Some(topic_res.clone()),
                    id,
                    permission: permission(q.perm) as i32,
                    broker: Some(master.clone()),
                    accept_message_types: Vec::new(),
                }),
            });
        }
    }
    if assignments.is_empty() {
        return Err(Failure::new(pb::Code::Forbidden, "no readable queue"));
    }
    Ok(pb::QueryAssignmentResponse {
        status: Some(status::ok()),
        assignments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker() -> pb::Broker {
        pb::Broker {
            name: "b".into(),
            id: 0,
            endpoints: None,
        }
    }

    #[test]
    fn queues_are_listed_as_the_proxy_lists_them() {
        let topic = pb::Resource::default();
        let q = QueueData {
            read_queue_nums: 4,
            write_queue_nums: 2,
            perm: 6,
            ..Default::default()
        };
        let got: Vec<(i32, i32)> = queues(&q, &topic, &[], &broker())
            .iter()
            .map(|m| (m.id, m.permission))
            .collect();
        let (r, rw) = (
            pb::Permission::Read as i32,
            pb::Permission::ReadWrite as i32,
        );
        assert_eq!(got, vec![(0, r), (1, r), (2, rw), (3, rw)]);
        let closed = QueueData {
            read_queue_nums: 2,
            write_queue_nums: 3,
            perm: 0,
            ..Default::default()
        };
        assert_eq!(queues(&closed, &topic, &[], &broker()).len(), 3);
    }

    #[test]
    fn permissions() {
        assert_eq!(permission(6), pb::Permission::ReadWrite);
        assert_eq!(permission(4), pb::Permission::Read);
        assert_eq!(permission(2), pb::Permission::Write);
        assert_eq!(permission(0), pb::Permission::None);
    }
}
