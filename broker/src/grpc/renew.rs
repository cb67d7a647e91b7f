//! Automatic renewal of receipt handles, as Apache's proxy does it
//! (`DefaultReceiptHandleManager`): a message received with `auto_renew`
//! (what the 5.x SDKs' push consumers ask for) is remembered under its
//! client and group until the client acks it, changes its invisible time
//! or forwards it to the DLQ. Every `renewSchedulePeriodMillis` the held
//! handles that would turn visible within `renewAheadTimeMillis` are
//! renewed (CHANGE_MESSAGE_INVISIBLETIME for 1, 3, 5, 10, 30, then 60
//! minutes), so a slow listener is not handed its message twice. Past
//! `renewMaxTimeMillis` a message is let go after its group's next retry
//! delay; a client that went away has its messages made visible again
//! after `invisibleTimeMillisWhenClear`.
//!
//! The client acks with the handle it was given; the broker swaps in the
//! latest one (`take`), waiting for a renewal under way to finish first.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use parking_lot::Mutex;
use rmq_grpc::pb;

use super::ack;
use super::config::GrpcConfig;
use super::receipt::ReceiptHandle;
use super::service::Inner;
use super::settings::next_delay_ms;

/// The proxy's `RenewStrategyPolicy`: the invisible time of the n-th
/// renewal, the last one repeating.
const RENEW_MS: [i64; 6] = [60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000];
/// Renewals under way at once.
const RENEW_CONCURRENCY: usize = 16;

/// A client's messages of one group.
type GroupKey = (String, String);

/// One message: its id and where its handle points, as the proxy keys it
/// (message id, then broker, queue and offset).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct MessageKey {
    message_id: String,
    queue_id: i32,
    queue_offset: i64,
}

impl MessageKey {
    fn of(message_id: &str, handle: &ReceiptHandle) -> Self {
        Self {
            message_id: message_id.to_owned(),
            queue_id: handle.queue_id,
            queue_offset: handle.queue_offset,
        }
    }
}

/// A held message.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The topic the client received it from.
    pub topic: String,
    /// Its latest receipt handle.
    pub handle: String,
    /// When the client received it, ms.
    pub received_ms: i64,
    /// Its reconsume times when received.
    pub reconsume_times: i32,
    renew_times: usize,
    failures: u32,
}

impl Held {
    pub fn new(topic: String, handle: String, received_ms: i64, reconsume_times: i32) -> Self {
        Self {
            topic,
            handle,
            received_ms,
            reconsume_times,
            renew_times: 0,
            failures: 0,
        }
    }
}

/// What to do with a held message now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Not due yet.
    Wait,
    /// Renew it for this long, ms.
    Renew(i64),
    /// Held too long: visible again after this delay, ms, and forgotten.
    Release(i64),
    /// Renewals kept failing: forgotten.
    GiveUp,
}

/// The step for `held`, whose handle turns visible at `visible_ms`, at
/// `now_ms`; `retry_delay` is its group's next retry delay.
pub(crate) fn step(
    held: &Held,
    visible_ms: i64,
    now_ms: i64,
    cfg: &GrpcConfig,
    retry_delay: impl FnOnce(i32) -> i64,
) -> Step {
    if visible_ms - now_ms > cfg.renew_ahead_time_ms {
        return Step::Wait;
    }
    if held.failures >= cfg.max_renew_retry_times {
        return Step::GiveUp;
    }
    if now_ms - held.received_ms < cfg.renew_max_time_ms {
        Step::Renew(RENEW_MS[held.renew_times.min(RENEW_MS.len() - 1)])
    } else {
        Step::Release(retry_delay(held.reconsume_times))
    }
}

type Entry = Arc<tokio::sync::Mutex<Held>>;

/// The held messages of every client and group.
#[derive(Debug, Default)]
pub(crate) struct Renewals {
    groups: Mutex<HashMap<GroupKey, HashMap<MessageKey, Entry>>>,
    /// A pass is under way (passes never overlap).
    running: AtomicBool,
}

impl Renewals {
    /// Holds a message `client` received for `group`.
    pub fn add(&self, client: &str, group: &str, message_id: &str, held: Held) {
        let Ok(h) = ReceiptHandle::decode(&held.handle) else {
            return;
        };
        let key = MessageKey::of(message_id, &h);
        self.groups
            .lock()
            .entry((client.to_owned(), group.to_owned()))
            .or_default()
            .insert(key, Arc::new(tokio::sync::Mutex::new(held)));
    }

    /// Stops holding the message `handle` (as the client has it) names and
    /// returns its latest handle, once any renewal of it has finished;
    /// `None` if it is not held.
    pub async fn take(
        &self,
        client: &str,
        group: &str,
        message_id: &str,
        handle: &str,
    ) -> Option<String> {
        let h = ReceiptHandle::decode(handle).ok()?;
        let key = MessageKey::of(message_id, &h);
        let entry = {
            let mut groups = self.groups.lock();
            let gk = (client.to_owned(), group.to_owned());
            let held = groups.get_mut(&gk)?;
            let entry = held.remove(&key)?;
            if held.is_empty() {
                groups.remove(&gk);
            }
            entry
        };
        let held = entry.lock().await;
        Some(held.handle.clone())
    }

    /// How many messages are held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.groups.lock().values().map(HashMap::len).sum()
    }

    fn remove(&self, gk: &GroupKey, key: &MessageKey, entry: &Entry) {
        let mut groups = self.groups.lock();
        if let Some(held) = groups.get_mut(gk) {
            if held.get(key).is_some_and(|e| Arc::ptr_eq(e, entry)) {
                held.remove(key);
            }
            if held.is_empty() {
                groups.remove(gk);
            }
        }
    }

    /// Lets go of every message of the groups `gone` says left, each
    /// visible again after `invisibleTimeMillisWhenClear`.
    fn clear_where(&self, gone: impl Fn(&GroupKey) -> bool) -> Vec<(String, Entry)> {
        let mut groups = self.groups.lock();
        let keys: Vec<GroupKey> = groups.keys().filter(|k| gone(k)).cloned().collect();
        let mut out = Vec::new();
        for k in keys {
            if let Some(held) = groups.remove(&k) {
                out.extend(held.into_values().map(|e| (k.1.clone(), e)));
            }
        }
        out
    }

    fn all(&self) -> Vec<(GroupKey, MessageKey, Entry)> {
        let groups = self.groups.lock();
        groups
            .iter()
            .flat_map(|(gk, held)| {
                held.iter()
                    .map(move |(k, e)| (gk.clone(), k.clone(), Arc::clone(e)))
            })
            .collect()
    }
}

/// Lets go of every held message (the broker is stopping), each visible
/// again after `invisibleTimeMillisWhenClear`, as the proxy does when it
/// shuts down.
pub(crate) async fn release_all(inner: &Arc<Inner>) {
    let gone = inner.renewals.clear_where(|_| true);
    release(inner, gone).await;
}

async fn release(inner: &Arc<Inner>, gone: Vec<(String, Entry)>) {
    let ms = inner.ctx.settings.broker.grpc.invisible_time_when_clear_ms;
    futures::stream::iter(gone)
        .for_each_concurrent(RENEW_CONCURRENCY, |(group, entry)| async move {
            let held = entry.lock().await;
            let _ =
                ack::change_invisible_internal(inner, &group, &held.topic, &held.handle, ms).await;
        })
        .await;
}

/// One renewal pass at `now_ms`: the messages of clients gone are let go,
/// the due ones renewed. Passes never overlap; one still running when the
/// next is due is let finish.
pub(crate) async fn pass(inner: &Arc<Inner>, now_ms: i64) {
    let renewals = &inner.renewals;
    if renewals.running.swap(true, Ordering::AcqRel) {
        return;
    }
    let cfg = &inner.ctx.settings.broker.grpc;
    let online = |(client, group): &GroupKey| {
        inner.clients.contains(client)
            && inner
                .ctx
                .clients
                .consumer_ids(group)
                .iter()
                .any(|id| id == client)
    };
    release(inner, renewals.clear_where(|gk| !online(gk))).await;
    futures::stream::iter(renewals.all())
        .for_each_concurrent(RENEW_CONCURRENCY, |(gk, key, entry)| async move {
            let Ok(mut held) = entry.try_lock() else {
                return; // being taken or renewed
            };
            let Ok(h) = ReceiptHandle::decode(&held.handle) else {
                renewals.remove(&gk, &key, &entry);
                return;
            };
            let group = &gk.1;
            let step = step(&held, h.next_visible_ms(), now_ms, cfg, |times| {
                next_delay_ms(inner.ctx.groups.get(group).as_ref(), times)
            });
            match step {
                Step::Wait => {}
                Step::GiveUp => renewals.remove(&gk, &key, &entry),
                Step::Release(delay) => {
                    let _ = ack::change_invisible_internal(
                        inner,
                        group,
                        &held.topic,
                        &held.handle,
                        delay,
                    )
                    .await;
                    renewals.remove(&gk, &key, &entry);
                }
                Step::Renew(ms) => {
                    match ack::change_invisible_internal(
                        inner,
                        group,
                        &held.topic,
                        &held.handle,
                        ms,
                    )
                    .await
                    {
                        Ok(handle) => {
                            held.handle = handle;
                            held.renew_times += 1;
                            held.failures = 0;
                        }
                        // The proxy stops renewing a handle the broker
                        // calls invalid; anything else is tried again.
                        Err(f) if f.code == pb::Code::InvalidReceiptHandle => {
                            renewals.remove(&gk, &key, &entry)
                        }
                        Err(f) => {
                            held.failures += 1;
                            tracing::debug!(group = %group, error = %f.message, "renewal failed");
                        }
                    }
                }
            }
        })
        .await;
    renewals.running.store(false, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    const HANDLE: &str = "0 1000 60000 0 0 broker-a 0 5 42";

    fn held(received_ms: i64) -> Held {
        Held::new("T".into(), HANDLE.into(), received_ms, 2)
    }

    #[test]
    fn renews_ahead_then_lets_go_after_the_max_time() {
        let cfg = GrpcConfig::default();
        let delay = |times: i32| i64::from(times) * 1_000;
        let h = held(0);
        // Visible in 30 s: not yet; within 10 s: renewed for 1 minute.
        assert_eq!(step(&h, 30_000, 0, &cfg, delay), Step::Wait);
        assert_eq!(step(&h, 10_000, 0, &cfg, delay), Step::Renew(60_000));
        // Later renewals grow, the last length repeats.
        let mut h3 = h.clone();
        h3.renew_times = 2;
        assert_eq!(step(&h3, 0, 0, &cfg, delay), Step::Renew(300_000));
        h3.renew_times = 40;
        assert_eq!(step(&h3, 0, 0, &cfg, delay), Step::Renew(3_600_000));
        // Held for 3 h: released after the group's next retry delay.
        let now = cfg.renew_max_time_ms;
        assert_eq!(step(&h, now, now, &cfg, delay), Step::Release(2_000));
        // Three failed renewals: given up.
        let mut failing = h.clone();
        failing.failures = cfg.max_renew_retry_times;
        assert_eq!(step(&failing, 0, 0, &cfg, delay), Step::GiveUp);
    }

    #[tokio::test]
    async fn take_swaps_in_the_latest_handle_once() {
        let r = Renewals::default();
        r.add("c1", "G", "M1", held(0));
        assert_eq!(r.len(), 1);
        // Another client, group or message id does not match.
        assert_eq!(r.take("c2", "G", "M1", HANDLE).await, None);
        assert_eq!(r.take("c1", "H", "M1", HANDLE).await, None);
        assert_eq!(r.take("c1", "G", "M2", HANDLE).await, None);
        // A renewal changed the handle; the client's old one still finds it.
        let renewed = "0 1000 180000 0 0 broker-a 0 5 42";
        for (_, _, e) in r.all() {
            e.lock().await.handle = renewed.into();
        }
        assert_eq!(
            r.take("c1", "G", "M1", HANDLE).await.as_deref(),
            Some(renewed)
        );
        assert_eq!(r.take("c1", "G", "M1", HANDLE).await, None);
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn clearing_lets_go_of_a_gone_clients_groups_only() {
        let r = Renewals::default();
        r.add("c1", "G", "M1", held(0));
        r.add("c2", "G", "M2", held(0));
        let gone = r.clear_where(|(client, _)| client == "c1");
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].0, "G");
        assert_eq!(r.len(), 1);
    }
}
