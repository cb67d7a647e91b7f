//! The JSON bodies that travel with the headers of [`super::header`]: what
//! brokers, the NameServer, clients and tools send each other. Every one
//! decodes through [`crate::json`], so it accepts what fastjson accepts.

pub mod assignment;
pub mod consumer;
pub mod group;
pub mod heartbeat;
pub mod register;
pub mod route;
pub mod topic;

pub use assignment::{
    MessageQueueAssignment, MessageRequestMode, QueryAssignmentAnswer, QueryAssignmentBody,
    SetMessageRequestModeBody,
};
pub use consumer::{
    ClientConnection, ConsumerConnection, LockBatchBody, MessageQueue, OffsetWrapper, TopicOffset,
};
pub use group::{
    CustomizedRetryPolicy, ExponentialRetryPolicy, GroupRetryPolicy, SimpleSubscriptionData,
    SubscriptionGroupConfig, SubscriptionGroupList,
};
pub use heartbeat::{CheckClientBody, ConsumerData, HeartbeatData, ProducerData, SubscriptionData};
pub use register::RegisterBrokerBody;
pub use route::{BrokerData, ClusterInfo, QueueData, TopicRouteData};
pub use topic::{
    CreateTopicList, DataVersion, TopicConfig, TopicConfigSerializeWrapper, TopicList,
    JAVA_DEFAULT_QUEUE_NUMS, PERM_READ, PERM_WRITE,
};
