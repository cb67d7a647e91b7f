//! Producer and consumer connections, grouped as RocketMQ's
//! ProducerManager / ConsumerManager keep them, and the queue locks of
//! orderly consumers.

mod calls;
mod locks;
mod manager;

pub use calls::{CallError, ClientCalls};
pub use locks::QueueLockManager;
pub use manager::{ClientKind, ClientManager, GroupChange};
