//! The settings a client sends first on its telemetry stream, and what the
//! broker answers with: the proxy's producer retry policy and body limit,
//! and for a consumer its group's retry policy, FIFO flag and long-polling
//! limits (`GrpcClientSettingsManager`).

use rmq_common::remoting::body::SubscriptionGroupConfig;
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
        let c = policy.customized_retry_policy.clone().unwrap_or_default();
        let next: &[i64] = if c.next.is_empty() {
            &DEFAULT_NEXT_MS
        } else {
            &c.next
        };
        pb::retry_policy::Strategy::CustomizedBackoff(pb::CustomizedBackoff {
            next: next.iter().map(|ms| duration(*ms)).collect(),
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
}
