//! The broker's role now. Without controller mode it is `brokerRole` and
//! `brokerId` from broker.conf for the process's life; in controller mode
//! the controller decides it and it changes at runtime (master <-> slave),
//! so everything that acts by role reads it here, not from the settings.

use std::collections::BTreeSet;

use tokio::sync::watch;

use crate::ha::BrokerRole;

/// One moment's role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    /// Master (sync or async) or slave.
    pub role: BrokerRole,
    /// The id the NameServers see: 0 on a master, else the slave's id.
    pub broker_id: i64,
    /// In controller mode, the id the controller gave this broker (-1
    /// before it has one, and without controller mode).
    pub controller_id: i64,
    /// In controller mode: the master epoch this role belongs to (0
    /// before the controller names a master, and without controller mode).
    pub master_epoch: i32,
    /// In controller mode, before the controller has named a master: the
    /// broker takes no writes (RocketMQ's fenced state).
    pub fenced: bool,
    /// In controller mode, on the master: the SyncStateSet (controller
    /// ids) and its epoch, as the controller last accepted them.
    pub sync_state_set: BTreeSet<i64>,
    /// Its epoch.
    pub sync_state_set_epoch: i32,
    /// The master's client address, when this is a slave that knows it.
    pub master_addr: Option<String>,
}

impl Role {
    /// A role fixed by broker.conf.
    pub fn configured(role: BrokerRole, broker_id: i64) -> Self {
        Self {
            role,
            broker_id,
            controller_id: -1,
            master_epoch: 0,
            fenced: false,
            sync_state_set: BTreeSet::new(),
            sync_state_set_epoch: 0,
            master_addr: None,
        }
    }

    /// Whether this is a slave.
    pub fn is_slave(&self) -> bool {
        self.role == BrokerRole::Slave
    }
}

/// The role, readable by everyone and watched by those that act on a change.
#[derive(Debug)]
pub struct RoleState(watch::Sender<Role>);

impl RoleState {
    /// Starts at `role`.
    pub fn new(role: Role) -> Self {
        Self(watch::Sender::new(role))
    }

    /// The role now (a copy).
    pub fn now(&self) -> Role {
        self.0.borrow().clone()
    }

    /// Master, sync master or slave, now.
    pub fn broker_role(&self) -> BrokerRole {
        self.0.borrow().role
    }

    /// Whether this is a slave now.
    pub fn is_slave(&self) -> bool {
        self.0.borrow().is_slave()
    }

    /// The id the NameServers see now.
    pub fn broker_id(&self) -> i64 {
        self.0.borrow().broker_id
    }

    /// Replaces the role (watchers wake if it changed).
    pub fn set(&self, role: Role) {
        self.0.send_if_modified(|old| {
            let changed = *old != role;
            *old = role;
            changed
        });
    }

    /// Changes part of it.
    pub fn update(&self, f: impl FnOnce(&mut Role)) {
        self.0.send_if_modified(|old| {
            let before = old.clone();
            f(old);
            *old != before
        });
    }

    /// Wakes on every change.
    pub fn subscribe(&self) -> watch::Receiver<Role> {
        self.0.subscribe()
    }
}
