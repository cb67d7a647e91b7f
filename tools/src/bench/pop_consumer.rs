//! The consumers of `rmq-bench pop`: each pops from every queue of one
//! topic on its own connection and acks what it got, except a chosen
//! fraction of first deliveries, which it leaves for the broker to revive.
//! One [`Tracker`] sees every message by the sequence number its body
//! starts with, and times each redelivery against the deadline
//! (popTime + invisibleTime) of the delivery left unacked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmq_client::pop::{self as sdk_pop, AckTarget, PopRequest, PoppedMessage};
use tokio::sync::Notify;

use super::latency::Latencies;

/// What the consumers do.
#[derive(Debug, Clone)]
pub struct ConsumeSpec {
    /// The broker.
    pub addr: std::net::SocketAddr,
    /// Its name (extraInfo field 5).
    pub broker_name: String,
    /// Topic and group.
    pub topic: String,
    /// Consumer group.
    pub group: String,
    /// maxMsgNums of each pop.
    pub batch: i32,
    /// invisibleTime of each pop.
    pub invisible: Duration,
    /// pollTime of each pop.
    pub poll: Duration,
    /// First deliveries left unacked, 0..1.
    pub unacked_fraction: f64,
    /// Ack with one BATCH_ACK_MESSAGE per pop instead of an ACK_MESSAGE
    /// per message.
    pub batch_ack: bool,
}

/// Whether the first delivery of `seq` is left unacked: a fixed spread
/// over the sequence (so over the queues), the same in every run.
pub fn left_unacked(seq: u64, fraction: f64) -> bool {
    let h = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    (h as f64) / ((1u64 << 53) as f64) < fraction
}

/// Counts of one run, shared by the consumers.
#[derive(Debug, Default)]
pub struct Counts {
    /// POP_MESSAGE requests answered with messages.
    pub pops_found: u64,
    /// POP_MESSAGE requests answered without.
    pub pops_empty: u64,
    /// Messages handed out, every delivery.
    pub popped: u64,
    /// Messages handed out before every message had been delivered once.
    pub popped_in_drain: u64,
    /// Messages delivered again after being left unacked.
    pub redelivered: u64,
    /// Messages delivered again though acked (an ack lost or late).
    pub duplicates: u64,
    /// Deliveries left unacked on purpose.
    pub left_unacked: u64,
    /// Acks answered SUCCESS (messages).
    pub acks: u64,
    /// Acks answered SUCCESS before the drain ended.
    pub acks_in_drain: u64,
    /// Messages acked at least once.
    pub acked_distinct: u64,
    /// Failed pops and acks.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
    /// Redelivery lag: receipt of the redelivery minus popTime +
    /// invisibleTime of the delivery left unacked, µs (clamped at 1).
    pub revive_lag: Latencies,
    /// Redeliveries received before their deadline.
    pub early: u64,
    /// Round trip of each POP_MESSAGE that found messages during the drain
    /// (no long-poll waits), µs.
    pub pop_latency: Latencies,
}

#[derive(Debug)]
struct State {
    counts: Counts,
    delivered: Vec<bool>,
    acked: Vec<bool>,
    delivered_once: u64,
    deadlines: HashMap<u64, i64>,
    drained_at: Option<Instant>,
}

/// What the consumers share.
#[derive(Debug)]
pub struct Tracker {
    state: Mutex<State>,
    /// Every message delivered once.
    pub drained: Notify,
    /// Every message acked.
    pub done: Notify,
    stop: AtomicBool,
}

impl Tracker {
    /// Nothing seen of `messages` yet.
    pub fn new(messages: u64) -> Self {
        let n = usize::try_from(messages).unwrap_or(usize::MAX);
        Self {
            state: Mutex::new(State {
                counts: Counts::default(),
                delivered: vec![false; n],
                acked: vec![false; n],
                delivered_once: 0,
                deadlines: HashMap::new(),
                drained_at: None,
            }),
            drained: Notify::new(),
            done: Notify::new(),
            stop: AtomicBool::new(false),
        }
    }

    /// Tells the consumers to stop after their current request.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// When every message had been delivered once.
    pub fn drained_at(&self) -> Option<Instant> {
        self.state.lock().drained_at
    }

    /// The counts so far.
    pub fn take_counts(&self) -> Counts {
        std::mem::take(&mut self.state.lock().counts)
    }

    fn error(&self, e: String) {
        let mut s = self.state.lock();
        s.counts.errors += 1;
        s.counts.first_error.get_or_insert(e);
    }

    /// Books one answer's messages; returns the ones to ack.
    fn received(&self, msgs: Vec<PoppedMessage>, deadline: i64, fraction: f64) -> Vec<Seen> {
        let now = rmq_common::time::now_ms();
        let mut s = self.state.lock();
        let s = &mut *s;
        let drained = s.drained_at.is_some();
        s.counts.popped += msgs.len() as u64;
        if !drained {
            s.counts.popped_in_drain += msgs.len() as u64;
        }
        let mut ack = Vec::with_capacity(msgs.len());
        for m in msgs {
            let Some(seq) = sequence(&m.message.body).filter(|q| *q < s.delivered.len() as u64)
            else {
                s.counts.errors += 1;
                s.counts
                    .first_error
                    .get_or_insert_with(|| "a message without a bench sequence number".into());
                continue;
            };
            let i = seq as usize;
            if !s.delivered[i] {
                s.delivered[i] = true;
                s.delivered_once += 1;
                if s.delivered_once == s.delivered.len() as u64 {
                    s.drained_at = Some(Instant::now());
                    self.drained.notify_one();
                }
                if left_unacked(seq, fraction) {
                    s.counts.left_unacked += 1;
                    s.deadlines.insert(seq, deadline);
                    continue;
                }
            } else if let Some(d) = s.deadlines.remove(&seq) {
                s.counts.redelivered += 1;
                let lag_ms = now - d;
                if lag_ms < 0 {
                    s.counts.early += 1;
                }
                s.counts
                    .revive_lag
                    .record(u64::try_from(lag_ms).unwrap_or(0).saturating_mul(1000));
            } else {
                s.counts.duplicates += 1;
            }
            ack.push(Seen { seq, m });
        }
        ack
    }

    /// Books acks that succeeded.
    fn acked(&self, seqs: &[u64]) {
        let mut s = self.state.lock();
        let s = &mut *s;
        s.counts.acks += seqs.len() as u64;
        if s.drained_at.is_none() {
            s.counts.acks_in_drain += seqs.len() as u64;
        }
        for seq in seqs {
            let i = *seq as usize;
            if !s.acked[i] {
                s.acked[i] = true;
                s.counts.acked_distinct += 1;
            }
        }
        if s.counts.acked_distinct == s.acked.len() as u64 {
            self.done.notify_one();
        }
    }
}

struct Seen {
    seq: u64,
    m: PoppedMessage,
}

/// The sequence number a bench body starts with.
pub fn sequence(body: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(body.get(..8)?.try_into().ok()?))
}

/// A body of `size` bytes (at least 8) starting with `seq`.
pub fn body(seq: u64, size: usize) -> Vec<u8> {
    let mut b = seq.to_le_bytes().to_vec();
    b.resize(size.max(8), b'p');
    b
}

/// Runs one consumer until the tracker says stop.
pub async fn consume(spec: Arc<ConsumeSpec>, tracker: Arc<Tracker>) {
    let client = match rmq_client::connect(spec.addr).await {
        Ok(c) => c,
        Err(e) => return tracker.error(format!("connect {}: {e}", spec.addr)),
    };
    let req = PopRequest {
        group: spec.group.clone(),
        topic: spec.topic.clone(),
        queue_id: -1,
        max_msgs: spec.batch,
        invisible_time_ms: spec.invisible.as_millis() as i64,
        poll_time_ms: spec.poll.as_millis() as i64,
        init_mode: 0,
        exp_type: None,
        exp: None,
        order: false,
        broker_name: spec.broker_name.clone(),
    };
    while !tracker.stop.load(Ordering::Relaxed) {
        let t0 = Instant::now();
        let r = match sdk_pop::pop(&client, &req).await {
            Ok(r) => r,
            Err(e) => {
                tracker.error(format!("pop: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if r.messages.is_empty() {
            tracker.state.lock().counts.pops_empty += 1;
            continue;
        }
        {
            let mut s = tracker.state.lock();
            s.counts.pops_found += 1;
            // After the drain most pops wait for revived messages.
            if s.drained_at.is_none() {
                s.counts.pop_latency.record(t0.elapsed().as_micros() as u64);
            }
        }
        let deadline = r.header.pop_time + r.header.invisible_time;
        let seen = tracker.received(r.messages, deadline, spec.unacked_fraction);
        if seen.is_empty() {
            continue;
        }
        ack_all(&client, &spec, &tracker, &seen).await;
    }
}

async fn ack_all(
    client: &rmq_client::RemotingClient,
    spec: &ConsumeSpec,
    tracker: &Tracker,
    seen: &[Seen],
) {
    if spec.batch_ack {
        let infos: Vec<&str> = seen.iter().map(|s| s.m.extra_info.as_str()).collect();
        match sdk_pop::batch_ack(client, &spec.broker_name, &spec.group, &spec.topic, &infos).await
        {
            Ok(()) => tracker.acked(&seen.iter().map(|s| s.seq).collect::<Vec<_>>()),
            Err(e) => tracker.error(format!("batch ack: {e}")),
        }
        return;
    }
    let acks = seen.iter().map(|s| async move {
        let t = AckTarget::of(&s.m.extra_info, &spec.topic, &spec.group)?;
        sdk_pop::ack(client, &spec.group, &t).await.map(|()| s.seq)
    });
    let mut ok = Vec::with_capacity(seen.len());
    for r in futures::future::join_all(acks).await {
        match r {
            Ok(seq) => ok.push(seq),
            Err(e) => tracker.error(format!("ack: {e}")),
        }
    }
    tracker.acked(&ok);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unacked_share_is_close_to_the_fraction() {
        let n = (0..100_000u64).filter(|s| left_unacked(*s, 0.01)).count();
        assert!((800..1200).contains(&n), "{n}");
        assert_eq!((0..1000u64).filter(|s| left_unacked(*s, 0.0)).count(), 0);
        assert_eq!((0..1000u64).filter(|s| left_unacked(*s, 1.0)).count(), 1000);
    }

    #[test]
    fn bodies_carry_their_sequence() {
        assert_eq!(sequence(&body(42, 100)), Some(42));
        assert_eq!(body(7, 2).len(), 8);
        assert_eq!(sequence(b"short"), None);
    }
}
