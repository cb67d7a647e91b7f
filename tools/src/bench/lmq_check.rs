//! The sample check of `rmq-bench lmq`: each sampled LMQ is pulled from
//! offset 0 of queue 0 and must hold exactly the messages sent to it, in
//! CommitLog order (the order the broker took their offsets in), each
//! carrying its position in that LMQ in `INNER_MULTI_QUEUE_OFFSET`.

use std::net::SocketAddr;

use anyhow::Context;
use rmq_client::{self as sdk, PullRequest, PullResult};
use rmq_common::constants::property;
use rmq_common::message::lmq::targets;

use super::lmq_plan::{self, Plan};

/// The consumer group the pulls name.
pub const CONSUMER_GROUP: &str = "LmqBenchConsumer";
/// Messages asked for per pull.
const PULL_BATCH: i32 = 32;
/// Connections that pull the sample.
const PULLERS: usize = 8;
/// Mismatches kept in the report (each names its LMQ).
const KEPT: usize = 20;

/// What the pulls found.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct SampleCheck {
    /// LMQs pulled.
    pub lmqs: u64,
    /// Messages pulled from them.
    pub messages: u64,
    /// LMQs that did not hold exactly what was sent to them.
    pub bad_lmqs: u64,
    /// The first mismatches, each naming its LMQ.
    pub mismatches: Vec<String>,
}

impl SampleCheck {
    /// Whether every sampled LMQ held exactly its messages.
    pub fn exact(&self) -> bool {
        self.bad_lmqs == 0 && self.lmqs > 0
    }
}

/// One pulled message: its index (from the body) or the body's start, its
/// CommitLog offset, and its offset in the LMQ pulled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Got {
    /// The message index its body names.
    pub index: Option<u64>,
    /// Whether the body is byte for byte the one sent.
    pub body_exact: bool,
    /// CommitLog offset.
    pub phys: i64,
    /// Its offset in this LMQ (from `INNER_MULTI_QUEUE_OFFSET`).
    pub lmq_offset: Option<i64>,
}

/// Pulls every LMQ of `sample` and compares it with `plan`; `phys` holds
/// each message's CommitLog offset as the send answered it.
pub async fn check(
    addr: SocketAddr,
    plan: Plan,
    prefix: &str,
    size: usize,
    sample: &[u64],
    phys: &[i64],
) -> anyhow::Result<SampleCheck> {
    let chunk = sample.len().div_ceil(PULLERS).max(1);
    let pullers = sample.chunks(chunk).map(|part| async move {
        let client = sdk::connect(addr).await?;
        let mut out = SampleCheck::default();
        for &j in part {
            let name = lmq_plan::lmq_name(prefix, j);
            let got = pull_all(&client, &name, size).await?;
            out.lmqs += 1;
            out.messages += got.len() as u64;
            let want = expected(plan, j, phys);
            if let Some(why) = compare(&want, &got) {
                out.bad_lmqs += 1;
                if out.mismatches.len() < KEPT {
                    out.mismatches.push(format!("{name}: {why}"));
                }
            }
        }
        anyhow::Ok(out)
    });
    let mut all = SampleCheck::default();
    for part in futures::future::try_join_all(pullers).await? {
        all.lmqs += part.lmqs;
        all.messages += part.messages;
        all.bad_lmqs += part.bad_lmqs;
        all.mismatches.extend(part.mismatches);
    }
    all.mismatches.truncate(KEPT);
    Ok(all)
}

/// The messages LMQ `j` must hold, in the order the broker appended them:
/// (index, CommitLog offset) by CommitLog offset.
pub fn expected(plan: Plan, j: u64, phys: &[i64]) -> Vec<(u64, i64)> {
    let mut want: Vec<(u64, i64)> = plan
        .members(j)
        .into_iter()
        .map(|i| (i, phys.get(i as usize).copied().unwrap_or(-1)))
        .collect();
    want.sort_by_key(|&(i, p)| (p, i));
    want
}

/// Why `got` is not `want`, or `None` when it is exactly it.
pub fn compare(want: &[(u64, i64)], got: &[Got]) -> Option<String> {
    for (pos, (w, g)) in want.iter().zip(got).enumerate() {
        let (i, phys) = *w;
        let held = match g.index {
            Some(x) => format!("m{x}"),
            None => "a body that names no message".to_owned(),
        };
        if g.index != Some(i) {
            return Some(format!("offset {pos} holds {held}, m{i} was sent there"));
        }
        if !g.body_exact {
            return Some(format!(
                "offset {pos} holds m{i} with a body other than the one sent"
            ));
        }
        if g.phys != phys {
            return Some(format!(
                "offset {pos} holds m{i} from CommitLog offset {}, the send answered {phys}",
                g.phys
            ));
        }
        if g.lmq_offset != Some(pos as i64) {
            return Some(format!(
                "offset {pos} holds m{i} whose INNER_MULTI_QUEUE_OFFSET gives {:?} for this LMQ",
                g.lmq_offset
            ));
        }
    }
    if got.len() != want.len() {
        return Some(format!(
            "holds {} messages, {} were sent to it",
            got.len(),
            want.len()
        ));
    }
    None
}

/// Pulls `lmq` (queue 0) from offset 0 until a pull finds nothing more.
async fn pull_all(
    client: &rmq_client::RemotingClient,
    lmq: &str,
    size: usize,
) -> anyhow::Result<Vec<Got>> {
    let mut got = Vec::new();
    let mut offset = 0;
    loop {
        let r = pull_once(client, lmq, offset, PULL_BATCH).await?;
        if r.messages.is_empty() || r.next_begin_offset <= offset {
            return Ok(got);
        }
        for (m, phys) in r.messages.iter().zip(&r.phy_offsets) {
            let index = lmq_plan::index_of(&m.body);
            got.push(Got {
                index,
                body_exact: index.is_some_and(|i| m.body == lmq_plan::body(i, size)),
                phys: *phys,
                lmq_offset: lmq_offset(m, lmq),
            });
        }
        offset = r.next_begin_offset;
    }
}

/// One pull of `lmq` queue 0 from `offset`.
pub async fn pull_once(
    client: &rmq_client::RemotingClient,
    lmq: &str,
    offset: i64,
    max_msgs: i32,
) -> anyhow::Result<PullResult> {
    let p = PullRequest {
        group: CONSUMER_GROUP.into(),
        topic: lmq.to_owned(),
        queue_id: 0,
        offset,
        max_msgs,
        subscription: Some("*".into()),
        suspend: None,
        commit_offset: None,
    };
    sdk::pull(client, &p)
        .await
        .with_context(|| format!("pulling {lmq} from offset {offset}"))
}

/// The offset a stored message took in `lmq`, from its two multi-dispatch
/// properties.
fn lmq_offset(m: &rmq_common::message::MessageToStore, lmq: &str) -> Option<i64> {
    let names = m.properties.get(property::INNER_MULTI_DISPATCH)?;
    let offsets = m.properties.get(property::INNER_MULTI_QUEUE_OFFSET)?;
    targets(names, offsets)
        .ok()?
        .into_iter()
        .find(|t| t.queue == lmq)
        .map(|t| t.offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn got(index: u64, phys: i64, lmq_offset: i64) -> Got {
        Got {
            index: Some(index),
            body_exact: true,
            phys,
            lmq_offset: Some(lmq_offset),
        }
    }

    #[test]
    fn expected_order_is_commitlog_order() {
        let plan = Plan::new(6, 2, 3).unwrap();
        // LMQ 0 holds units 0, 3, 6, 9: messages 0, 1, 3, 4.
        assert_eq!(plan.members(0), vec![0, 1, 3, 4]);
        // Concurrent producers stored message 1 before message 0.
        let phys = [500, 100, 900, 300, 700, 800];
        assert_eq!(
            expected(plan, 0, &phys),
            vec![(1, 100), (3, 300), (0, 500), (4, 700)]
        );
    }

    #[test]
    fn every_kind_of_mismatch_is_named() {
        let want = vec![(1, 100), (0, 500)];
        let good = vec![got(1, 100, 0), got(0, 500, 1)];
        assert_eq!(compare(&want, &good), None);
        let swapped = vec![got(0, 500, 0), got(1, 100, 1)];
        assert!(compare(&want, &swapped)
            .unwrap()
            .contains("offset 0 holds m0, m1 was sent there"));
        let short = vec![got(1, 100, 0)];
        assert!(compare(&want, &short)
            .unwrap()
            .contains("holds 1 messages, 2 were sent"));
        let long = vec![got(1, 100, 0), got(0, 500, 1), got(7, 900, 2)];
        assert!(compare(&want, &long).unwrap().contains("holds 3 messages"));
        let moved = vec![got(1, 100, 0), got(0, 501, 1)];
        assert!(compare(&want, &moved)
            .unwrap()
            .contains("CommitLog offset 501"));
        let wrong_offset = vec![got(1, 100, 0), got(0, 500, 5)];
        assert!(compare(&want, &wrong_offset)
            .unwrap()
            .contains("INNER_MULTI_QUEUE_OFFSET"));
        let mut bad_body = good.clone();
        bad_body[1].body_exact = false;
        assert!(compare(&want, &bad_body).unwrap().contains("body other"));
        let mut foreign = good;
        foreign[0].index = None;
        assert!(compare(&want, &foreign)
            .unwrap()
            .contains("names no message"));
    }
}
