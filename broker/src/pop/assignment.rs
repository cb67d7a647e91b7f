//! Server-side assignment (QUERY_ASSIGNMENT): which of a topic's queues a
//! client of a consumer group reads, and whether by PULL or POP. Pure
//! functions over sorted queue and client lists, as RocketMQ 5.3.3's
//! `QueryAssignmentProcessor` computes them (`AllocateMessageQueueAveragely`,
//! `AllocateMessageQueueAveragelyByCircle`, and its POP sharing).
//!
//! `None` means "no result": the client keeps what it has (Java answers
//! the set as null); `Some(empty)` means the client should drop every
//! queue.

use rmq_common::constants::RETRY_GROUP_TOPIC_PREFIX;
use rmq_common::remoting::body::{
    MessageQueue, MessageQueueAssignment, MessageRequestMode, SetMessageRequestModeBody,
};

/// How a group's queues are spread over its clients (`strategyName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `AVG`: consecutive runs, the first clients one queue more.
    Avg,
    /// `AVG_BY_CIRCLE`: queue i to client i mod n.
    AvgByCircle,
}

impl Strategy {
    /// The strategy a client names; `None` for any other name (Java
    /// registers only these two on the broker).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "AVG" => Some(Self::Avg),
            "AVG_BY_CIRCLE" => Some(Self::AvgByCircle),
            _ => None,
        }
    }

    /// `client`'s queues among `queues` shared by `clients` (both sorted).
    /// `None` when there is nothing to share or no client id (Java throws,
    /// and the broker answers no result); empty when `client` is not one
    /// of `clients`.
    pub fn allocate(
        self,
        client: &str,
        queues: &[MessageQueue],
        clients: &[String],
    ) -> Option<Vec<MessageQueue>> {
        if client.trim().is_empty() || queues.is_empty() || clients.is_empty() {
            return None;
        }
        let Some(index) = clients.iter().position(|c| c == client) else {
            return Some(Vec::new());
        };
        let (n, m) = (queues.len(), clients.len());
        let picked: Vec<MessageQueue> = match self {
            Self::Avg => {
                let rest = n % m;
                let size = if n <= m {
                    1
                } else if index < rest {
                    n / m + 1
                } else {
                    n / m
                };
                let start = if index < rest {
                    index * size
                } else {
                    index * size + rest
                };
                let count = size.min(n.saturating_sub(start));
                (0..count)
                    .map(|i| queues[(start + i) % n].clone())
                    .collect()
            }
            Self::AvgByCircle => (index..n)
                .filter(|i| i % m == index)
                .map(|i| queues[i].clone())
                .collect(),
        };
        Some(picked)
    }

    /// POP mode: with `share` ≤ 0 or at least every other client, every
    /// client pops every queue (queue id -1: any queue of the topic);
    /// otherwise each client pops its own queues and those of the `share`
    /// clients after it (in client order, wrapping); with more clients
    /// than queues, each client gets the one queue at its index.
    pub fn allocate_for_pop(
        self,
        client: &str,
        queues: &[MessageQueue],
        clients: &[String],
        share: i32,
    ) -> Option<Vec<MessageQueue>> {
        let share_all = share <= 0 || i64::from(share) >= clients.len() as i64 - 1;
        if share_all {
            return Some(
                queues
                    .iter()
                    .map(|q| MessageQueue {
                        queue_id: -1,
                        ..q.clone()
                    })
                    .collect(),
            );
        }
        if clients.len() > queues.len() {
            if client.trim().is_empty() || queues.is_empty() {
                return None;
            }
            return Some(match clients.iter().position(|c| c == client) {
                Some(i) => vec![queues[i % queues.len()].clone()],
                None => Vec::new(),
            });
        }
        let mut out = self.allocate(client, queues, clients)?;
        if let Some(mut index) = clients.iter().position(|c| c == client) {
            // `share` < clients - 1 here, so this stays small.
            for _ in 0..share {
                index = (index + 1) % clients.len();
                out.extend(self.allocate(&clients[index], queues, clients)?);
            }
        }
        Some(out)
    }
}

/// What a QUERY_ASSIGNMENT asks about, as the broker knows it.
#[derive(Debug, Clone)]
pub struct AssignmentInput<'a> {
    /// The asking client.
    pub client: &'a str,
    /// `strategyName`.
    pub strategy: &'a str,
    /// `CLUSTERING` or `BROADCASTING`.
    pub message_model: &'a str,
    /// The topic's queues (any order), `None` when the topic is unknown.
    pub queues: Option<Vec<MessageQueue>>,
    /// The group's online client ids (any order).
    pub clients: Vec<String>,
    /// The mode of (topic, group) ([`mode_for`]).
    pub mode: SetMessageRequestModeBody,
    /// `serverLoadBalancerEnable`.
    pub load_balance: bool,
}

/// The mode of (`topic`, `group`): the one set, else PULL for a retry
/// topic and `default_mode` (with `default_share` when POP) for others.
pub fn mode_for(
    set: Option<SetMessageRequestModeBody>,
    topic: &str,
    group: &str,
    default_mode: MessageRequestMode,
    default_share: i32,
) -> SetMessageRequestModeBody {
    set.unwrap_or_else(|| {
        let mode = if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
            MessageRequestMode::Pull
        } else {
            default_mode
        };
        SetMessageRequestModeBody {
            topic: topic.to_owned(),
            consumer_group: group.to_owned(),
            mode,
            pop_share_queue_num: if mode == MessageRequestMode::Pop {
                default_share
            } else {
                0
            },
        }
    })
}

/// The client's assignment; `None`: no result (unknown topic, strategy
/// or model, no client online).
pub fn assign(input: AssignmentInput<'_>) -> Option<Vec<MessageQueueAssignment>> {
    let mut queues = input.queues?;
    queues.sort();
    let picked = match input.message_model {
        "BROADCASTING" => queues,
        "CLUSTERING" if !input.load_balance => queues,
        "CLUSTERING" => {
            let strategy = Strategy::from_name(input.strategy)?;
            let mut clients = input.clients;
            clients.sort();
            match input.mode.mode {
                MessageRequestMode::Pop => strategy.allocate_for_pop(
                    input.client,
                    &queues,
                    &clients,
                    input.mode.pop_share_queue_num,
                )?,
                MessageRequestMode::Pull => strategy.allocate(input.client, &queues, &clients)?,
            }
        }
        _ => return None,
    };
    let mut out: Vec<MessageQueueAssignment> = picked
        .into_iter()
        .map(|message_queue| MessageQueueAssignment {
            message_queue,
            mode: input.mode.mode,
        })
        .collect();
    // Java answers a set.
    out.sort_by(|a, b| a.message_queue.cmp(&b.message_queue));
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(n: i32) -> Vec<MessageQueue> {
        (0..n)
            .map(|queue_id| MessageQueue {
                topic: "T".into(),
                broker_name: "b".into(),
                queue_id,
            })
            .collect()
    }

    fn clients(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("c{i}")).collect()
    }

    fn ids(qs: &[MessageQueue]) -> Vec<i32> {
        qs.iter().map(|q| q.queue_id).collect()
    }

    fn of(s: Strategy, client: &str, q: i32, c: usize) -> Vec<i32> {
        ids(&s.allocate(client, &queues(q), &clients(c)).unwrap())
    }

    #[test]
    fn avg_gives_consecutive_runs_the_first_clients_one_more() {
        // 8 queues over 3 clients: 3, 3, 2.
        assert_eq!(of(Strategy::Avg, "c0", 8, 3), vec![0, 1, 2]);
        assert_eq!(of(Strategy::Avg, "c1", 8, 3), vec![3, 4, 5]);
        assert_eq!(of(Strategy::Avg, "c2", 8, 3), vec![6, 7]);
        // Fewer queues than clients: the last clients get none.
        assert_eq!(of(Strategy::Avg, "c1", 2, 4), vec![1]);
        assert_eq!(of(Strategy::Avg, "c3", 2, 4), Vec::<i32>::new());
        assert_eq!(of(Strategy::Avg, "c0", 4, 1), vec![0, 1, 2, 3]);
    }

    #[test]
    fn avg_by_circle_deals_queues_round_the_clients() {
        assert_eq!(of(Strategy::AvgByCircle, "c0", 8, 3), vec![0, 3, 6]);
        assert_eq!(of(Strategy::AvgByCircle, "c1", 8, 3), vec![1, 4, 7]);
        assert_eq!(of(Strategy::AvgByCircle, "c2", 8, 3), vec![2, 5]);
        assert_eq!(of(Strategy::AvgByCircle, "c3", 2, 4), Vec::<i32>::new());
    }

    #[test]
    fn every_queue_goes_to_exactly_one_client() {
        for s in [Strategy::Avg, Strategy::AvgByCircle] {
            for q in 1..12 {
                for c in 1..6 {
                    let mut all: Vec<i32> =
                        (0..c).flat_map(|i| of(s, &format!("c{i}"), q, c)).collect();
                    all.sort_unstable();
                    assert_eq!(
                        all,
                        (0..q).collect::<Vec<_>>(),
                        "{s:?} {q} queues {c} clients"
                    );
                }
            }
        }
    }

    #[test]
    fn unknown_client_gets_nothing_and_nothing_to_share_is_no_result() {
        assert_eq!(of(Strategy::Avg, "stranger", 4, 2), Vec::<i32>::new());
        assert_eq!(Strategy::Avg.allocate("c0", &[], &clients(2)), None);
        assert_eq!(Strategy::Avg.allocate("c0", &queues(2), &[]), None);
        assert_eq!(Strategy::Avg.allocate(" ", &queues(2), &clients(2)), None);
        assert_eq!(Strategy::from_name("CONSISTENT_HASH"), None);
    }

    #[test]
    fn pop_share_all_hands_every_queue_as_any_queue() {
        for share in [-1, 0, 2, 5] {
            let got = Strategy::Avg
                .allocate_for_pop("c1", &queues(4), &clients(3), share)
                .unwrap();
            assert_eq!(ids(&got), vec![-1; 4], "share {share}");
        }
    }

    #[test]
    fn pop_share_adds_the_queues_of_the_next_clients() {
        // 8 queues, 4 clients (2 each), share 1: own and the next one's.
        let pop = |client: &str| {
            ids(&Strategy::Avg
                .allocate_for_pop(client, &queues(8), &clients(4), 1)
                .unwrap())
        };
        assert_eq!(pop("c0"), vec![0, 1, 2, 3]);
        assert_eq!(pop("c3"), vec![6, 7, 0, 1]);
        // More clients than queues: each its index's queue.
        let got = Strategy::Avg
            .allocate_for_pop("c4", &queues(3), &clients(6), 1)
            .unwrap();
        assert_eq!(ids(&got), vec![1]);
    }

    fn input<'a>(
        model: &'a str,
        strategy: &'a str,
        mode: MessageRequestMode,
    ) -> AssignmentInput<'a> {
        AssignmentInput {
            client: "c0",
            strategy,
            message_model: model,
            queues: Some(queues(4).into_iter().rev().collect()),
            clients: vec!["c1".into(), "c0".into()],
            mode: mode_for(None, "T", "G", mode, -1),
            load_balance: true,
        }
    }

    #[test]
    fn assign_sorts_its_inputs_and_follows_model_and_mode() {
        let got = assign(input("CLUSTERING", "AVG", MessageRequestMode::Pull)).unwrap();
        let q: Vec<(i32, MessageRequestMode)> = got
            .iter()
            .map(|a| (a.message_queue.queue_id, a.mode))
            .collect();
        assert_eq!(
            q,
            vec![(0, MessageRequestMode::Pull), (1, MessageRequestMode::Pull)]
        );
        let got = assign(input("CLUSTERING", "AVG", MessageRequestMode::Pop)).unwrap();
        let q: Vec<(i32, MessageRequestMode)> = got
            .iter()
            .map(|a| (a.message_queue.queue_id, a.mode))
            .collect();
        assert_eq!(q, vec![(-1, MessageRequestMode::Pop)], "deduplicated");
        let got = assign(input("BROADCASTING", "", MessageRequestMode::Pull)).unwrap();
        assert_eq!(got.len(), 4);
        let mut all = input("CLUSTERING", "AVG", MessageRequestMode::Pull);
        all.load_balance = false;
        assert_eq!(assign(all).unwrap().len(), 4);
        assert_eq!(
            assign(input("CLUSTERING", "NOPE", MessageRequestMode::Pull)),
            None
        );
        assert_eq!(
            assign(input("OTHER", "AVG", MessageRequestMode::Pull)),
            None
        );
        let mut unknown = input("CLUSTERING", "AVG", MessageRequestMode::Pull);
        unknown.queues = None;
        assert_eq!(assign(unknown), None);
        let mut nobody = input("CLUSTERING", "AVG", MessageRequestMode::Pull);
        nobody.clients.clear();
        assert_eq!(assign(nobody), None);
    }

    #[test]
    fn retry_topics_default_to_pull_and_pop_takes_the_default_share() {
        let m = mode_for(None, "%RETRY%G", "G", MessageRequestMode::Pop, 3);
        assert_eq!(
            (m.mode, m.pop_share_queue_num),
            (MessageRequestMode::Pull, 0)
        );
        let m = mode_for(None, "T", "G", MessageRequestMode::Pop, 3);
        assert_eq!(
            (m.mode, m.pop_share_queue_num),
            (MessageRequestMode::Pop, 3)
        );
        let set = SetMessageRequestModeBody {
            topic: "%RETRY%G".into(),
            consumer_group: "G".into(),
            mode: MessageRequestMode::Pop,
            pop_share_queue_num: 1,
        };
        assert_eq!(
            mode_for(
                Some(set.clone()),
                "%RETRY%G",
                "G",
                MessageRequestMode::Pull,
                0
            ),
            set
        );
    }
}
