//! NOTIFY_BROKER_ROLE_CHANGED (1008): after a successful election the
//! leader tells every alive member of the set the new master, oneway, on
//! the member's client address (facts 3.11, 7.5). One sender per address
//! at a time; a notification waiting for it is replaced by one of a newer
//! master epoch (RocketMQ's `NotifyService`), and one of an older or equal
//! epoch is dropped. Failures are only logged: a broker also learns its
//! role from its own GET_REPLICA_INFO polls.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmq_client::{Connector, RemotingClient};
use rmq_common::remoting::{RemotingCommand, RequestCode};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::ops::Elected;
use crate::wire::SyncStateSetBody;

/// Longest a notification may take to connect and be queued (Java's
/// oneway timeout).
pub const NOTIFY_TIMEOUT: Duration = Duration::from_secs(3);

/// The request telling a broker its set's new master: header
/// `masterAddress`, `masterEpoch`, `syncStateSetEpoch`, `masterBrokerId`;
/// body the SyncStateSet. `None` when the election named no master.
pub fn role_changed(e: &Elected) -> Option<RemotingCommand> {
    let master = e.view.master?;
    let mut req = RemotingCommand::request(RequestCode::NotifyBrokerRoleChanged.code());
    if let Some(addr) = &e.view.master_addr {
        req.put_ext("masterAddress", addr);
    }
    req.put_ext("masterEpoch", e.view.master_epoch);
    req.put_ext("syncStateSetEpoch", e.view.sync_state_set_epoch);
    req.put_ext("masterBrokerId", master);
    let body = SyncStateSetBody {
        sync_state_set: e.view.sync_state_set.clone(),
        sync_state_set_epoch: e.view.sync_state_set_epoch,
    };
    // Serializing a set of ids and a number cannot fail.
    Some(req.with_body(serde_json::to_vec(&body).unwrap_or_default()))
}

#[derive(Debug, Default)]
struct Slot {
    /// The next notification for the address: (master epoch, request).
    next: Option<(i32, RemotingCommand)>,
    /// A sender task runs for the address.
    sending: bool,
}

/// Sends the notifications.
pub struct RoleNotifier {
    connector: Connector,
    slots: parking_lot::Mutex<HashMap<String, Slot>>,
    clients: tokio::sync::Mutex<HashMap<String, Arc<RemotingClient>>>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl std::fmt::Debug for RoleNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleNotifier")
            .field("pending", &self.slots.lock().len())
            .finish_non_exhaustive()
    }
}

impl RoleNotifier {
    /// A notifier whose senders are tracked by `tracker` and stop at `cancel`.
    pub fn new(cancel: CancellationToken, tracker: TaskTracker) -> Self {
        Self {
            connector: Connector::new(),
            slots: parking_lot::Mutex::new(HashMap::new()),
            clients: tokio::sync::Mutex::new(HashMap::new()),
            cancel,
            tracker,
        }
    }

    /// Queues `req` (of master epoch `epoch`) for `addr`.
    pub fn notify(self: &Arc<Self>, addr: &str, epoch: i32, req: RemotingCommand) {
        let mut slots = self.slots.lock();
        let slot = slots.entry(addr.to_owned()).or_default();
        if slot.next.as_ref().is_some_and(|(e, _)| *e >= epoch) {
            return;
        }
        slot.next = Some((epoch, req));
        if slot.sending {
            return;
        }
        slot.sending = true;
        let (me, addr) = (Arc::clone(self), addr.to_owned());
        self.tracker.spawn(async move {
            tokio::select! {
                biased;
                () = me.cancel.cancelled() => {}
                () = me.drain(&addr) => {}
            }
        });
    }

    /// Sends what is queued for `addr` until nothing is.
    async fn drain(&self, addr: &str) {
        loop {
            let next = {
                let mut slots = self.slots.lock();
                let Some(slot) = slots.get_mut(addr) else {
                    return;
                };
                match slot.next.take() {
                    Some(n) => n,
                    None => {
                        slots.remove(addr);
                        return;
                    }
                }
            };
            let (epoch, req) = next;
            match tokio::time::timeout(NOTIFY_TIMEOUT, self.send(addr, req)).await {
                Ok(Ok(())) => {
                    tracing::info!(
                        broker = addr,
                        master_epoch = epoch,
                        "broker told of its set's new master"
                    );
                }
                Ok(Err(e)) => {
                    tracing::warn!(broker = addr, master_epoch = epoch, error = %e, "role change notification failed");
                }
                Err(_) => {
                    tracing::warn!(
                        broker = addr,
                        master_epoch = epoch,
                        "role change notification timed out after {NOTIFY_TIMEOUT:?}"
                    );
                }
            }
        }
    }

    async fn send(&self, addr: &str, req: RemotingCommand) -> Result<(), String> {
        let client = {
            let mut clients = self.clients.lock().await;
            match clients.get(addr).filter(|c| !c.is_closed()) {
                Some(c) => Arc::clone(c),
                None => {
                    let to = tokio::net::lookup_host(addr)
                        .await
                        .map_err(|e| format!("resolving {addr}: {e}"))?
                        .next()
                        .ok_or_else(|| format!("{addr} resolves to no address"))?;
                    let c = Arc::new(
                        self.connector
                            .connect(to)
                            .await
                            .map_err(|e| e.to_string())?,
                    );
                    clients.insert(addr.to_owned(), Arc::clone(&c));
                    c
                }
            }
        };
        client.invoke_oneway(req).await.map_err(|e| e.to_string())
    }
}

impl crate::server::ControllerService {
    /// After a successful election of set `broker_name`, with
    /// `notifyBrokerRoleChanged` on: queues the notification for every
    /// member of the set alive now.
    pub(super) fn after_election(&self, broker_name: &str, e: &Elected) {
        if e.code != rmq_common::remoting::ResponseCode::Success
            || !self.runtime.notify_broker_role_changed()
        {
            return;
        }
        let (Some(req), Some(members)) = (role_changed(e), e.members.as_ref()) else {
            return;
        };
        let now_ms = self.now_ms();
        let alive: Vec<&String> = {
            let live = self.live.lock();
            members
                .iter()
                .filter(|(id, _)| live.alive(broker_name, **id, now_ms))
                .map(|(_, addr)| addr)
                .collect()
        };
        for addr in alive {
            self.notifier.notify(addr, e.view.master_epoch, req.clone());
        }
    }
}
