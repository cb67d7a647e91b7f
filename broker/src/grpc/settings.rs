//! The settings a client sends first on its telemetry stream, and what the
//! broker answers with: the proxy's producer retry policy and body limit,
//! and for a consumer its group's retry policy, FIFO flag and long-polling
//! limits (`GrpcClientSettingsManager`).

use rmq_common::remoting::body::{GroupRetryPolicy, SubscriptionGroupConfig};
use rmq_grpc::pb;

use super::convert::duration;

/// The proxy's `grpcClientProducerMaxAttempts` and backoff.
const PRODUCER_MAX_ATTEMPTS: i32 = 3;
const PRODUCER_BACKOFF_INITIAL_MS: i64 = 10;
const PRODUCER_BACKOFF_MAX_MS: i64 = 1000;
const PRODUCER_BACKOFF_MULTIPLIER: f32 = 2.0;
/// `grpcClientConsumerLongPollingBatchSize`.
pub(crate) const RECEIVE_BATCH_SIZE: i32 = 32;
/// `grpcClientConsumerMin/MaxLongPollingTimeoutMillis`.
pub(crate) const MIN_LONG_POLLING_MS: i64 = 5_000;
pub(crate) const MAX_LONG_POLLING_MS: i64 = 20_000;

/// Java's `CustomizedRetryPolicy` default: the 18 delay levels, 1 s to
/// 2 h (a client given an empty list fails to start).
const DEFAULT_NEXT_MS: [i64; 18] = [
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
    480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
];

/// The delay before a message of `group` is delivered again after its
/// `reconsume_times`-th failure, by the group's retry policy (Java's
/// `RetryPolicy.nextDelayDuration`); a group not made yet has the default
/// customized policy.
pub(crate) fn next_delay_ms(group: Option<&SubscriptionGroupConfig>, reconsume_times: i32) -> i64 {
    let times = reconsume_times.max(0);
    let Some(policy) = group.map(|g| &g.group_retry_policy) else {
        return customized_delay(&DEFAULT_NEXT_MS, times);
    };
    if policy.kind.eq_ignore_ascii_case("EXPONENTIAL") {
        let e = policy.exponential_retry_policy.clone().unwrap_or_default();
        let grown = (e.initial as f64) * (e.multiplier as f64).powi(times.min(32));
        return (grown as i64).min(e.max);
    }
    customized_delay(customized_next(policy), times)
}

/// The delays of a customized policy: the group's, or Java's default when
/// it lists none.
fn customized_next(policy: &GroupRetryPolicy) -> &[i64] {
    match &policy.customized_retry_policy {
        Some(c) if !c.next.is_empty() => &c.next,
        _ => &DEFAULT_NEXT_MS,
    }
}

/// `CustomizedRetryPolicy`: the first two delays are skipped (they belong
/// to the levels a send-back uses for its first retries).
fn customized_delay(next: &[i64], times: i32) -> i64 {
    let index = (times as usize).saturating_add(2).min(next.len() - 1);
    next[index]
}

/// What the broker answers a producer's settings with.
pub(crate) fn producer(mut s: pb::Settings, max_body: i32) -> pb::Settings {
    s.backoff_policy = Some(pb::RetryPolicy {
        max_attempts: PRODUCER_MAX_ATTEMPTS,
        strategy: Some(pb::retry_policy::Strategy::ExponentialBackoff(
            pb::ExponentialBackoff {
                initial: Some(duration(PRODUCER_BACKOFF_INITIAL_MS)),
                max: Some(duration(PRODUCER_BACKOFF_MAX_MS)),
                multiplier: PRODUCER_BACKOFF_MULTIPLIER,
            },
        )),
    });
    if let Some(pb::settings::PubSub::Publishing(p)) = &mut s.pub_sub {
        p.validate_message_type = true;
        p.max_body_size = max_body;
    }
    s.metric = Some(pb::Metric {
        on: false,
        endpoints: None,
    });
    s
}

/// What the broker answers a consumer's settings with, from its group's
/// config (the defaults of a group not made yet).
pub(crate) fn consumer(mut s: pb::Settings, group: &SubscriptionGroupConfig) -> pb::Settings {
    if let Some(pb::settings::PubSub::Subscription(sub)) = &mut s.pub_sub {
        sub.receive_batch_size = Some(RECEIVE_BATCH_SIZE);
        sub.long_polling_timeout = Some(duration(MAX_LONG_POLLING_MS));
        sub.fifo = Some(group.consume_message_orderly);
    }
    let policy = &group.group_retry_policy;
    let strategy = if policy.kind.eq_ignore_ascii_case("EXPONENTIAL") {
        let e = policy.exponential_retry_policy.clone().unwrap_or_default();
        pb::retry_policy::Strategy::ExponentialBackoff(pb::ExponentialBackoff {
            initial: Some(duration(e.initial)),
            max: Some(duration(e.max)),
            multiplier: e.multiplier as f32,
        })
    } else {
        pb::retry_policy::Strategy::CustomizedBackoff(pb::CustomizedBackoff {
            next: customized_next(policy)
                .iter()
                .map(|ms| duration(*ms))
                .collect(),
        })
    };
    s.backoff_policy = Some(pb::RetryPolicy {
        max_attempts: group.retry_max_times + 1,
        strategy: Some(strategy),
    });
    s.metric = Some(pb::Metric {
        on: false,
        endpoints: None,
    });
    s
}

/// The consumer group a client's settings name, if it is a consumer.
pub(crate) fn group_of(s: &pb::Settings) -> Option<&str> {
    match &s.pub_sub {
        Some(pb::settings::PubSub::Subscription(sub)) => {
            sub.group.as_ref().map(|g| g.name.as_str())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_settings_follow_the_group() {
        let s = pb::Settings {
            client_type: Some(pb::ClientType::SimpleConsumer as i32),
            pub_sub: Some(pb::settings::PubSub::Subscription(pb::Subscription {
                group: Some(pb::Resource {
                    resource_namespace: String::new(),
                    name: "G".into(),
                }),
                ..Default::default()
            })),
            ..Default::default()
        };
        let group = SubscriptionGroupConfig {
            consume_message_orderly: true,
            retry_max_times: 4,
            ..Default::default()
        };
        let out = consumer(s, &group);
        let policy = out.backoff_policy.as_ref().unwrap();
        assert_eq!(policy.max_attempts, 5);
        let Some(pb::retry_policy::Strategy::CustomizedBackoff(c)) = &policy.strategy else {
            panic!("not customized")
        };
        assert_eq!(c.next.len(), 18);
        let Some(pb::settings::PubSub::Subscription(sub)) = &out.pub_sub else {
            panic!("no subscription")
        };
        assert_eq!(sub.fifo, Some(true));
        assert_eq!(sub.receive_batch_size, Some(32));
        assert_eq!(group_of(&out), Some("G"));
    }

    #[test]
    fn retry_delays_as_java_computes_them() {
        // No group: the default levels from the third on (10 s, 30 s, ...),
        // the last (2 h) once past the end.
        assert_eq!(next_delay_ms(None, 0), 10_000);
        assert_eq!(next_delay_ms(None, -3), 10_000);
        assert_eq!(next_delay_ms(None, 1), 30_000);
        assert_eq!(next_delay_ms(None, 15), 7_200_000);
        assert_eq!(next_delay_ms(None, 99), 7_200_000);
        let mut g = SubscriptionGroupConfig::default();
        g.group_retry_policy.kind = "EXPONENTIAL".into();
        g.group_retry_policy.exponential_retry_policy =
            Some(rmq_common::remoting::body::ExponentialRetryPolicy {
                initial: 1_000,
                max: 60_000,
                multiplier: 3,
            });
        assert_eq!(next_delay_ms(Some(&g), 0), 1_000);
        assert_eq!(next_delay_ms(Some(&g), 2), 9_000);
        assert_eq!(next_delay_ms(Some(&g), 10), 60_000);
        assert_eq!(next_delay_ms(Some(&g), 1_000), 60_000);
        let mut c = SubscriptionGroupConfig::default();
        c.group_retry_policy.kind = "CUSTOMIZED".into();
        c.group_retry_policy.customized_retry_policy =
            Some(rmq_common::remoting::body::CustomizedRetryPolicy {
                next: vec![1, 2, 3, 4],
            });
        assert_eq!(next_delay_ms(Some(&c), 0), 3);
        assert_eq!(next_delay_ms(Some(&c), 1), 4);
        assert_eq!(next_delay_ms(Some(&c), 7), 4);
    }
}
