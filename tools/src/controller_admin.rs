//! `rmq-admin sync-state-set`: what a controller knows of each broker set
//! in controller mode — its master (id, address), the master epoch, the
//! SyncStateSet epoch, and every replica, in sync or not, alive or not.
//!
//! Asked as mqadmin's `getSyncStateSet` asks: CONTROLLER_GET_METADATA_INFO
//! of the controller given (any replica) for the leader, then
//! CONTROLLER_GET_SYNC_STATE_DATA of the leader (only it answers). With
//! no set named, the sets are the brokers the NameServer knows.

use std::fmt::Write as _;
use std::net::SocketAddr;

use rmq_client::{Connector, SdkError};
use rmq_common::remoting::body::ClusterInfo;
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_controller::wire::{BrokerReplicasInfo, ControllerCode, ReplicaIdentity, ReplicasInfo};

/// Why the broker sets could not be shown; each names the server asked.
#[derive(Debug, thiserror::Error)]
pub enum ControllerAdminError {
    /// The address is not `host:port` of a host that resolves.
    #[error("{what} address {addr:?} is not a reachable host:port")]
    BadAddress {
        /// Controller or NameServer.
        what: &'static str,
        /// The address.
        addr: String,
    },
    /// No connection, or no answer in time.
    #[error("{what} at {addr} is unreachable: {source}")]
    Unreachable {
        /// Controller or NameServer.
        what: &'static str,
        /// Its address.
        addr: String,
        /// The transport error.
        #[source]
        source: rmq_client::ClientError,
    },
    /// It answered with an error code.
    #[error("{what} at {addr} refused {request}: code {code} ({remark})")]
    Refused {
        /// Controller or NameServer.
        what: &'static str,
        /// Its address.
        addr: String,
        /// The request's name.
        request: &'static str,
        /// The response code.
        code: i32,
        /// Its remark.
        remark: String,
    },
    /// The answer could not be read.
    #[error("{what} at {addr} answered {request} with something unreadable: {reason}")]
    BadAnswer {
        /// Controller or NameServer.
        what: &'static str,
        /// Its address.
        addr: String,
        /// The request's name.
        request: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The controller group has no leader now.
    #[error("controller at {addr} knows no leader (is a majority of its group up?)")]
    NoLeader {
        /// The controller asked.
        addr: String,
    },
    /// No set named, and the NameServer knows none.
    #[error("no broker set to show: name one with --broker-name, or register brokers with the NameServer at {namesrv}")]
    NoSets {
        /// The NameServer asked.
        namesrv: SocketAddr,
    },
}

const CONTROLLER: &str = "controller";

/// Sends `req` to `addr` and returns the successful answer.
async fn ask(
    conn: &Connector,
    what: &'static str,
    addr: &str,
    request: &'static str,
    req: RemotingCommand,
) -> Result<RemotingCommand, ControllerAdminError> {
    let unreachable = |source| ControllerAdminError::Unreachable {
        what,
        addr: addr.to_owned(),
        source,
    };
    let resolved = tokio::net::lookup_host(addr)
        .await
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| ControllerAdminError::BadAddress {
            what,
            addr: addr.to_owned(),
        })?;
    let client = conn.connect(resolved).await.map_err(unreachable)?;
    let answer = rmq_client::call(&client, req).await;
    client.close().await;
    answer.map_err(|e| match e {
        SdkError::Client(source) => unreachable(source),
        SdkError::Refused { code, remark } => ControllerAdminError::Refused {
            what,
            addr: addr.to_owned(),
            request,
            code,
            remark,
        },
        SdkError::BadAnswer(reason) => ControllerAdminError::BadAnswer {
            what,
            addr: addr.to_owned(),
            request,
            reason,
        },
    })
}

/// The leader's id and address, from any replica.
async fn leader(
    conn: &Connector,
    controller: &str,
) -> Result<(String, String), ControllerAdminError> {
    let resp = ask(
        conn,
        CONTROLLER,
        controller,
        "CONTROLLER_GET_METADATA_INFO",
        RemotingCommand::request(ControllerCode::GetMetadataInfo as i32),
    )
    .await?;
    let field = |k: &str| resp.ext_fields.get(k).filter(|v| !v.is_empty()).cloned();
    match (
        field("controllerLeaderId"),
        field("controllerLeaderAddress"),
    ) {
        (Some(id), Some(addr)) => Ok((id, addr)),
        _ => Err(ControllerAdminError::NoLeader {
            addr: controller.to_owned(),
        }),
    }
}

/// The broker names the NameServer knows.
async fn namesrv_sets(
    conn: &Connector,
    namesrv: SocketAddr,
) -> Result<Vec<String>, ControllerAdminError> {
    const REQUEST: &str = "GET_BROKER_CLUSTER_INFO";
    let addr = namesrv.to_string();
    let resp = ask(
        conn,
        "NameServer",
        &addr,
        REQUEST,
        RemotingCommand::request(RequestCode::GetBrokerClusterInfo),
    )
    .await?;
    let info: ClusterInfo = rmq_common::json::from_slice(resp.body.as_deref().unwrap_or_default())
        .map_err(|e| ControllerAdminError::BadAnswer {
            what: "NameServer",
            addr,
            request: REQUEST,
            reason: e.to_string(),
        })?;
    Ok(info.broker_addr_table.into_keys().collect())
}

/// Every broker set in `names` (or, with none, the NameServer's) as the
/// controller group's leader sees it, as a table.
pub async fn sync_state_set(
    conn: &Connector,
    controller: &str,
    names: &[String],
    namesrv: SocketAddr,
) -> Result<String, ControllerAdminError> {
    const REQUEST: &str = "CONTROLLER_GET_SYNC_STATE_DATA";
    let (leader_id, leader_addr) = leader(conn, controller).await?;
    let names = if names.is_empty() {
        namesrv_sets(conn, namesrv).await?
    } else {
        names.to_vec()
    };
    if names.is_empty() {
        return Err(ControllerAdminError::NoSets { namesrv });
    }
    let body = serde_json::to_vec(&names).unwrap_or_default();
    let req = RemotingCommand::request(ControllerCode::GetSyncStateData as i32).with_body(body);
    let resp = ask(conn, CONTROLLER, &leader_addr, REQUEST, req).await?;
    let info: BrokerReplicasInfo =
        rmq_common::json::from_slice(resp.body.as_deref().unwrap_or_default()).map_err(|e| {
            ControllerAdminError::BadAnswer {
                what: CONTROLLER,
                addr: leader_addr.clone(),
                request: REQUEST,
                reason: e.to_string(),
            }
        })?;
    Ok(render(&leader_id, &leader_addr, &names, &info))
}

/// The table `sync-state-set` prints.
pub fn render(
    leader_id: &str,
    leader_addr: &str,
    names: &[String],
    info: &BrokerReplicasInfo,
) -> String {
    let mut out = format!("controller leader {leader_id} at {leader_addr}\n");
    for name in names {
        let Some(set) = info.replicas_info_table.get(name) else {
            let _ = writeln!(out, "\n{name}: not known to the controller");
            continue;
        };
        let _ = writeln!(
            out,
            "\n{:<24} {:>9} {:<22} {:>12} {:>16}",
            "BROKER SET", "MASTER ID", "MASTER ADDRESS", "MASTER EPOCH", "SYNC SET EPOCH"
        );
        let dash = || "-".to_owned();
        let _ = writeln!(
            out,
            "{name:<24} {:>9} {:<22} {:>12} {:>16}",
            set.master_broker_id.map_or_else(dash, |id| id.to_string()),
            set.master_address.clone().unwrap_or_else(dash),
            set.master_epoch,
            set.sync_state_set_epoch,
        );
        let _ = writeln!(
            out,
            "  {:>9} {:<22} {:<8} {:<6} ROLE",
            "BROKER ID", "ADDRESS", "IN SYNC", "ALIVE"
        );
        for (r, in_sync) in replicas(set) {
            let _ = writeln!(
                out,
                "  {:>9} {:<22} {:<8} {:<6} {}",
                r.broker_id,
                r.broker_address,
                yes_no(in_sync),
                yes_no(r.alive),
                if set.master_broker_id == Some(r.broker_id) {
                    "master"
                } else {
                    "slave"
                },
            );
        }
    }
    out
}

/// The set's replicas by id, each with whether it is in sync.
fn replicas(set: &ReplicasInfo) -> Vec<(&ReplicaIdentity, bool)> {
    let mut all: Vec<(&ReplicaIdentity, bool)> = set
        .in_sync_replicas
        .iter()
        .map(|r| (r, true))
        .chain(set.not_in_sync_replicas.iter().map(|r| (r, false)))
        .collect();
    all.sort_by_key(|(r, _)| r.broker_id);
    all
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_controller::wire::ReplicasInfo;

    fn replica(id: i64, alive: bool) -> ReplicaIdentity {
        ReplicaIdentity {
            alive,
            broker_address: format!("10.0.0.{id}:10911"),
            broker_id: id,
            broker_name: "a".into(),
        }
    }

    #[test]
    fn the_table_shows_master_epochs_and_each_replica() {
        let mut info = BrokerReplicasInfo::default();
        info.replicas_info_table.insert(
            "a".into(),
            ReplicasInfo {
                in_sync_replicas: vec![replica(2, true)],
                master_address: Some("10.0.0.2:10911".into()),
                master_broker_id: Some(2),
                master_epoch: 3,
                not_in_sync_replicas: vec![replica(1, false)],
                sync_state_set_epoch: 4,
            },
        );
        let names = ["a".to_owned(), "b".to_owned()];
        let text = render("n0", "127.0.0.1:9878", &names, &info);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "controller leader n0 at 127.0.0.1:9878");
        let row: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(row, ["a", "2", "10.0.0.2:10911", "3", "4"], "{text}");
        let first: Vec<&str> = lines[5].split_whitespace().collect();
        assert_eq!(
            first,
            ["1", "10.0.0.1:10911", "no", "no", "slave"],
            "{text}"
        );
        let second: Vec<&str> = lines[6].split_whitespace().collect();
        assert_eq!(
            second,
            ["2", "10.0.0.2:10911", "yes", "yes", "master"],
            "{text}"
        );
        assert!(text.contains("b: not known to the controller"), "{text}");
    }
}
