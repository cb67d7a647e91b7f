//! Every JSON body the broker and the NameServer decode, re-encoded the ways
//! fastjson and clients in other languages write it (numbers as strings,
//! booleans as `"true"`/`1`, unquoted and single-quoted keys, fields left out
//! that hold Java's default, unknown fields), must decode to the same value
//! through `rmq_common::json`. Plus one regression test per body type with
//! every number sent as a string.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fmt::Debug;

use proptest::prelude::*;
use rmq_common::json::render::{render, Schema};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use rmq_common::remoting::body::{
    BrokerData, CheckClientBody, ClusterInfo, ConsumerData, CreateTopicList, DataVersion,
    HeartbeatData, LockBatchBody, MessageQueue, ProducerData, QueueData, RegisterBrokerBody,
    SubscriptionData, SubscriptionGroupConfig, TopicConfig, TopicConfigSerializeWrapper,
    TopicRouteData,
};

use crate::meta::offsets::OffsetsFile;
use crate::meta::topics::TopicsFile;
use crate::service::schedule::offsets::DelayOffsetFile;

fn dv<T: Serialize + Default>() -> Value {
    serde_json::to_value(T::default()).unwrap()
}

/// Renders `value` with the choices `seed` makes and decodes it back.
fn round_trip<T>(value: &T, schema: &Schema, seed: u64) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let canonical = serde_json::to_value(value).unwrap();
    let mut state = seed;
    let mut pick = move |n: u32| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as u32) % n.max(1)
    };
    let text = render(&canonical, schema, &mut pick);
    let back: T = rmq_common::json::from_str(&text)
        .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    prop_assert_eq!(&back, value, "{}", text);
    Ok(())
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z][A-Za-z0-9_%-]{0,12}",
        "[0-9]{1,6}",
        Just(String::new()),
        Just("true".to_owned()),
    ]
}

fn topic_config() -> impl Strategy<Value = TopicConfig> {
    (
        name(),
        0i32..64,
        0i32..64,
        0i32..8,
        prop_oneof![Just("SINGLE_TAG"), Just("MULTI_TAG")],
        any::<i32>(),
        any::<bool>(),
        prop_oneof![Just(None), Just(Some("FIFO")), Just(Some("NORMAL"))],
    )
        .prop_map(|(n, r, w, perm, filter, sys, order, kind)| TopicConfig {
            topic_name: n,
            read_queue_nums: r,
            write_queue_nums: w,
            perm,
            topic_filter_type: filter.to_owned(),
            topic_sys_flag: sys,
            order,
            attributes: kind
                .map(|k| ("message.type".to_owned(), k.to_owned()))
                .into_iter()
                .collect(),
        })
}

fn data_version() -> impl Strategy<Value = DataVersion> {
    (any::<i64>(), any::<i64>()).prop_map(|(timestamp, counter)| DataVersion {
        timestamp,
        counter,
        state_version: 0,
    })
}

fn register_body() -> impl Strategy<Value = RegisterBrokerBody> {
    (
        proptest::collection::vec(topic_config(), 0..4),
        data_version(),
        proptest::collection::vec(name(), 0..2),
    )
        .prop_map(
            |(topics, data_version, filter_server_list)| RegisterBrokerBody {
                topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                    topic_config_table: topics
                        .into_iter()
                        .map(|t| (t.topic_name.clone(), t))
                        .collect(),
                    data_version,
                },
                filter_server_list,
            },
        )
}

fn subscription() -> impl Strategy<Value = SubscriptionData> {
    (
        name(),
        name(),
        proptest::collection::vec(any::<i32>().prop_map(i64::from), 0..3),
        any::<i64>(),
        proptest::option::of(prop_oneof![
            Just("TAG".to_owned()),
            Just("SQL92".to_owned())
        ]),
    )
        .prop_map(
            |(topic, sub_string, code_set, sub_version, expression_type)| SubscriptionData {
                topic,
                sub_string,
                code_set,
                sub_version,
                expression_type,
            },
        )
}

fn group_config() -> impl Strategy<Value = SubscriptionGroupConfig> {
    (
        name(),
        any::<[bool; 4]>(),
        0i32..32,
        -1i32..32,
        any::<i64>(),
        any::<i64>(),
        (
            any::<bool>(),
            0i32..60,
            prop_oneof![Just(None), Just(Some(vec![1_000i64, 5_000]))],
        ),
    )
        .prop_map(
            |(group_name, b, retry_queue_nums, retry_max_times, broker_id, slow, five)| {
                let (orderly, timeout, next) = five;
                SubscriptionGroupConfig {
                    group_name,
                    consume_enable: b[0],
                    consume_from_min_enable: b[1],
                    consume_broadcast_enable: b[2],
                    retry_queue_nums,
                    retry_max_times,
                    broker_id,
                    which_broker_when_consume_slowly: slow,
                    notify_consumer_ids_changed_enable: b[3],
                    consume_message_orderly: orderly,
                    consume_timeout_minute: timeout,
                    group_retry_policy: rmq_common::remoting::body::GroupRetryPolicy {
                        customized_retry_policy: next
                            .clone()
                            .map(|next| rmq_common::remoting::body::CustomizedRetryPolicy { next }),
                        ..Default::default()
                    },
                    subscription_data_set: next.map(|_| {
                        vec![rmq_common::remoting::body::SimpleSubscriptionData {
                            topic: "T".into(),
                            expression_type: "TAG".into(),
                            expression: "*".into(),
                            version: 1,
                        }]
                    }),
                    ..SubscriptionGroupConfig::default()
                }
            },
        )
}

fn heartbeat() -> impl Strategy<Value = HeartbeatData> {
    let sub = subscription();
    let consumer = (
        name(),
        prop_oneof![
            Just("CONSUME_PASSIVELY"),
            Just("CONSUME_ACTIVELY"),
            Just("1")
        ],
        prop_oneof![Just("CLUSTERING"), Just("BROADCASTING"), Just("0")],
        prop_oneof![
            Just("CONSUME_FROM_LAST_OFFSET"),
            Just("CONSUME_FROM_FIRST_OFFSET")
        ],
        proptest::collection::vec(sub, 0..3),
    )
        .prop_map(|(group_name, ct, mm, cfw, subs)| ConsumerData {
            group_name,
            consume_type: ct.to_owned(),
            message_model: mm.to_owned(),
            consume_from_where: cfw.to_owned(),
            subscription_data_set: subs,
        });
    (
        name(),
        proptest::collection::vec(
            name().prop_map(|group_name| ProducerData { group_name }),
            0..3,
        ),
        proptest::collection::vec(consumer, 0..3),
    )
        .prop_map(
            |(client_id, producer_data_set, consumer_data_set)| HeartbeatData {
                client_id,
                producer_data_set,
                consumer_data_set,
                ..HeartbeatData::default()
            },
        )
}

fn message_queue() -> impl Strategy<Value = MessageQueue> {
    (name(), name(), any::<i32>()).prop_map(|(topic, broker_name, queue_id)| MessageQueue {
        topic,
        broker_name,
        queue_id,
    })
}

fn broker_data() -> impl Strategy<Value = BrokerData> {
    (
        name(),
        name(),
        proptest::collection::btree_map(0i64..4, "127\\.0\\.0\\.1:[0-9]{4,5}", 0..3),
        any::<bool>(),
    )
        .prop_map(
            |(cluster, broker_name, broker_addrs, enable_acting_master)| BrokerData {
                cluster,
                broker_name,
                broker_addrs,
                enable_acting_master,
            },
        )
}

fn queue_data() -> impl Strategy<Value = QueueData> {
    (name(), any::<i32>(), any::<i32>(), 0i32..8, any::<i32>()).prop_map(|(b, r, w, p, s)| {
        QueueData {
            broker_name: b,
            read_queue_nums: r,
            write_queue_nums: w,
            perm: p,
            topic_sys_flag: s,
        }
    })
}

fn topic_schema() -> Vec<(&'static str, Value)> {
    vec![
        ("topicConfigTable", dv::<TopicConfig>()),
        ("topicConfigList", dv::<TopicConfig>()),
        ("dataVersion", dv::<DataVersion>()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn heartbeat_body(v in heartbeat(), seed in any::<u64>()) {
        round_trip(&v, &Schema {
            defaults: vec![
                ("", dv::<HeartbeatData>()),
                ("producerDataSet", dv::<ProducerData>()),
                ("consumerDataSet", dv::<ConsumerData>()),
                ("subscriptionDataSet", dv::<SubscriptionData>()),
            ],
            ..Schema::default()
        }, seed)?;
    }

    #[test]
    fn subscription_group_body(v in group_config(), seed in any::<u64>()) {
        round_trip(&v, &Schema {
            value_maps: vec!["attributes"],
            defaults: vec![
                ("", dv::<SubscriptionGroupConfig>()),
                ("groupRetryPolicy", dv::<rmq_common::remoting::body::GroupRetryPolicy>()),
                ("customizedRetryPolicy", dv::<rmq_common::remoting::body::CustomizedRetryPolicy>()),
                ("subscriptionDataSet", dv::<rmq_common::remoting::body::SimpleSubscriptionData>()),
            ],
            ..Schema::default()
        }, seed)?;
    }

    #[test]
    fn check_client_body(client_id in name(), group in name(),
                         sub in proptest::option::of(subscription()), seed in any::<u64>()) {
        let v = CheckClientBody { client_id, group, subscription_data: sub };
        round_trip(&v, &Schema {
            defaults: vec![("", dv::<CheckClientBody>()), ("subscriptionData", dv::<SubscriptionData>())],
            ..Schema::default()
        }, seed)?;
    }

    #[test]
    fn lock_body(group in name(), client in name(),
                 mqs in proptest::collection::vec(message_queue(), 0..4), seed in any::<u64>()) {
        let v = LockBatchBody { consumer_group: group, client_id: client, mq_set: mqs };
        round_trip(&v, &Schema {
            defaults: vec![("", dv::<LockBatchBody>()), ("mqSet", dv::<MessageQueue>())],
            ..Schema::default()
        }, seed)?;
    }

    #[test]
    fn register_broker_body(v in register_body(), seed in any::<u64>()) {
        let mut defaults = topic_schema();
        defaults.push(("", dv::<RegisterBrokerBody>()));
        defaults.push(("topicConfigSerializeWrapper", dv::<TopicConfigSerializeWrapper>()));
        round_trip(&v, &Schema { maps: vec!["topicConfigTable"], value_maps: vec!["attributes"], defaults, ..Schema::default() }, seed)?;
    }

    #[test]
    fn create_topic_list_body(list in proptest::collection::vec(topic_config(), 0..4), seed in any::<u64>()) {
        let v = CreateTopicList { topic_config_list: list };
        round_trip(&v, &Schema { value_maps: vec!["attributes"], defaults: topic_schema(), ..Schema::default() }, seed)?;
    }

    #[test]
    fn topics_file(v in register_body(), seed in any::<u64>()) {
        let w = v.topic_config_serialize_wrapper;
        let file = TopicsFile {
            topic_config_table: w.topic_config_table,
            data_version: DataVersion { timestamp: w.data_version.timestamp, counter: w.data_version.counter, state_version: 0 },
        };
        round_trip(&file, &Schema { maps: vec!["topicConfigTable"], value_maps: vec!["attributes"], defaults: topic_schema(), ..Schema::default() }, seed)?;
    }

    #[test]
    fn route_data(brokers in proptest::collection::vec(broker_data(), 0..3),
                  queues in proptest::collection::vec(queue_data(), 0..3),
                  filters in proptest::collection::btree_map(name(), proptest::collection::vec(name(), 0..2), 0..2),
                  seed in any::<u64>()) {
        let v = TopicRouteData { broker_datas: brokers, filter_server_table: filters, queue_datas: queues };
        round_trip(&v, &Schema {
            maps: vec!["brokerAddrs", "filterServerTable"],
            defaults: vec![("brokerDatas", dv::<BrokerData>()), ("queueDatas", dv::<QueueData>())],
            ..Schema::default()
        }, seed)?;
    }

    #[test]
    fn cluster_info(brokers in proptest::collection::vec(broker_data(), 0..3), seed in any::<u64>()) {
        let mut v = ClusterInfo::default();
        for b in brokers {
            v.cluster_addr_table.entry(b.cluster.clone()).or_default().insert(b.broker_name.clone());
            v.broker_addr_table.insert(b.broker_name.clone(), b);
        }
        round_trip(&v, &Schema {
            maps: vec!["brokerAddrTable", "clusterAddrTable", "brokerAddrs"],
            defaults: vec![("brokerAddrTable", dv::<BrokerData>())],
            ..Schema::default()
        }, seed)?;
    }

    #[test]
    fn consumer_offsets_file(table in proptest::collection::btree_map(
            "[A-Za-z0-9%_]{1,8}@[A-Za-z0-9_]{1,8}",
            proptest::collection::btree_map(0i32..64, any::<i64>(), 0..4), 0..4),
        seed in any::<u64>()) {
        let v = OffsetsFile { offset_table: table, ..OffsetsFile::default() };
        round_trip(&v, &Schema { maps_of_maps: vec!["offsetTable"], ..Schema::default() }, seed)?;
    }

    #[test]
    fn delay_offsets_file(table in proptest::collection::btree_map(1i32..19, any::<i64>(), 0..5),
                          seed in any::<u64>()) {
        let v = DelayOffsetFile { offset_table: table };
        round_trip(&v, &Schema { maps: vec!["offsetTable"], ..Schema::default() }, seed)?;
    }
}

/// Decodes `text` as `T` and checks it equals `want`.
fn same<T: DeserializeOwned + PartialEq + Debug>(text: &str, want: &T) {
    let got: T = rmq_common::json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(&got, want, "{text}");
}

#[test]
fn heartbeat_with_numbers_as_strings() {
    same(
        r#"{"clientID":"10.0.0.1@1","consumerDataSet":[{"groupName":"g","consumeType":"CONSUME_PASSIVELY",
            "messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","unitMode":"false",
            "subscriptionDataSet":[{"topic":"T","subString":"*","codeSet":["1","-2"],"subVersion":"1700000000000",
            "classFilterMode":"0","expressionType":"TAG"}]}],"producerDataSet":[]}"#,
        &HeartbeatData {
            client_id: "10.0.0.1@1".into(),
            producer_data_set: vec![],
            consumer_data_set: vec![ConsumerData {
                group_name: "g".into(),
                consume_type: "CONSUME_PASSIVELY".into(),
                message_model: "CLUSTERING".into(),
                consume_from_where: "CONSUME_FROM_LAST_OFFSET".into(),
                subscription_data_set: vec![SubscriptionData {
                    topic: "T".into(),
                    sub_string: "*".into(),
                    code_set: vec![1, -2],
                    sub_version: 1_700_000_000_000,
                    expression_type: Some("TAG".into()),
                }],
            }],
            ..HeartbeatData::default()
        },
    );
}

#[test]
fn group_and_check_client_bodies_with_numbers_as_strings() {
    same(
        r#"{"groupName":"g","consumeEnable":"true","consumeFromMinEnable":"0","consumeBroadcastEnable":0,
            "retryQueueNums":"2","retryMaxTimes":"3","brokerId":"0","whichBrokerWhenConsumeSlowly":"1",
            "notifyConsumerIdsChangedEnable":"1"}"#,
        &SubscriptionGroupConfig {
            group_name: "g".into(),
            consume_enable: true,
            consume_from_min_enable: false,
            consume_broadcast_enable: false,
            retry_queue_nums: 2,
            retry_max_times: 3,
            broker_id: 0,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
            ..SubscriptionGroupConfig::default()
        },
    );
    same(
        r#"{"clientId":"c","group":"g","subscriptionData":{"topic":"T","subString":"a > 1",
            "expressionType":"SQL92","subVersion":"17","codeSet":[]}}"#,
        &CheckClientBody {
            client_id: "c".into(),
            group: "g".into(),
            subscription_data: Some(SubscriptionData {
                topic: "T".into(),
                sub_string: "a > 1".into(),
                code_set: vec![],
                sub_version: 17,
                expression_type: Some("SQL92".into()),
            }),
        },
    );
}

#[test]
fn lock_body_with_numbers_as_strings() {
    same(
        r#"{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":"3"}],"onlyThisBroker":"true"}"#,
        &LockBatchBody {
            consumer_group: "g".into(),
            client_id: "c".into(),
            mq_set: vec![MessageQueue {
                topic: "T".into(),
                broker_name: "b".into(),
                queue_id: 3,
            }],
        },
    );
}

const TOPIC_WITH_STRINGS: &str = r#"{"topicName":"T","readQueueNums":"4","writeQueueNums":"4","perm":"6",
    "topicFilterType":"SINGLE_TAG","topicSysFlag":"0","order":"false"}"#;

#[test]
fn register_body_and_topic_files_with_numbers_as_strings() {
    let t = TopicConfig::new("T", 4);
    let text = format!(
        r#"{{"topicConfigSerializeWrapper":{{"topicConfigTable":{{"T":{TOPIC_WITH_STRINGS}}},
            "dataVersion":{{"timestamp":"5","counter":"7"}}}},"filterServerList":[]}}"#
    );
    let mut want = RegisterBrokerBody::default();
    want.topic_config_serialize_wrapper
        .topic_config_table
        .insert("T".into(), t.clone());
    want.topic_config_serialize_wrapper.data_version = DataVersion {
        timestamp: 5,
        counter: 7,
        state_version: 0,
    };
    same(&text, &want);
    let file = format!(
        r#"{{"topicConfigTable":{{"T":{TOPIC_WITH_STRINGS}}},"dataVersion":{{"timestamp":"5","counter":"7"}}}}"#
    );
    same(
        &file,
        &TopicsFile {
            topic_config_table: BTreeMap::from([("T".into(), t.clone())]),
            data_version: DataVersion {
                timestamp: 5,
                counter: 7,
                state_version: 0,
            },
        },
    );
    same(
        &format!(r#"{{"topicConfigList":[{TOPIC_WITH_STRINGS}]}}"#),
        &CreateTopicList {
            topic_config_list: vec![t],
        },
    );
}

#[test]
fn route_and_cluster_with_numbers_as_strings() {
    let broker = BrokerData {
        cluster: "C".into(),
        broker_name: "b".into(),
        broker_addrs: BTreeMap::from([(0, "127.0.0.1:10911".into())]),
        enable_acting_master: false,
    };
    same(
        r#"{"brokerDatas":[{"cluster":"C","brokerName":"b","brokerAddrs":{0:"127.0.0.1:10911"}}],
            "queueDatas":[{"brokerName":"b","readQueueNums":"4","writeQueueNums":"4","perm":"6","topicSysFlag":"0"}]}"#,
        &TopicRouteData {
            broker_datas: vec![broker.clone()],
            filter_server_table: BTreeMap::new(),
            queue_datas: vec![QueueData {
                broker_name: "b".into(),
                read_queue_nums: 4,
                write_queue_nums: 4,
                perm: 6,
                topic_sys_flag: 0,
            }],
        },
    );
    same(
        r#"{"brokerAddrTable":{"b":{"cluster":"C","brokerName":"b","brokerAddrs":{"0":"127.0.0.1:10911"},"enableActingMaster":"0"}},
            "clusterAddrTable":{"C":["b"]}}"#,
        &ClusterInfo {
            broker_addr_table: BTreeMap::from([("b".into(), broker)]),
            cluster_addr_table: BTreeMap::from([("C".into(), ["b".to_owned()].into())]),
        },
    );
}

#[test]
fn offset_files_with_numbers_as_strings() {
    same(
        r#"{"offsetTable":{"T@g":{"0":"12","1":"-1"}}}"#,
        &OffsetsFile {
            offset_table: BTreeMap::from([("T@g".into(), BTreeMap::from([(0, 12), (1, -1)]))]),
            ..OffsetsFile::default()
        },
    );
    same(
        r#"{"offsetTable":{"1":"3",2:4}}"#,
        &DelayOffsetFile {
            offset_table: BTreeMap::from([(1, 3), (2, 4)]),
        },
    );
}

#[test]
fn a_refused_body_names_the_field() {
    let e = rmq_common::json::from_str::<HeartbeatData>(
        r#"{"consumerDataSet":[{"subscriptionDataSet":[{"subVersion":"soon"}]}]}"#,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "field `consumerDataSet[0].subscriptionDataSet[0].subVersion`: \"soon\" is not a number"
    );
}
