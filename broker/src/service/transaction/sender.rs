//! Sends check-backs to the producers a broker knows from their heartbeats.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rmq_common::remoting::{CheckTransactionStateRequestHeader, RemotingCommand, RequestCode};

use super::CheckSender;
use crate::clients::ClientManager;

/// Picks one live connection of the half's producer group, in turn, so the
/// checks of a group spread over its producers (and reach another one when
/// the sender of the half has gone). Each check names this broker (`bname`).
#[derive(Debug)]
pub struct ProducerCheckSender {
    clients: Arc<ClientManager>,
    broker_name: String,
    next: AtomicUsize,
}

impl ProducerCheckSender {
    /// Over the broker's client table, for the broker `broker_name`.
    pub fn new(clients: Arc<ClientManager>, broker_name: &str) -> Self {
        Self {
            clients,
            broker_name: broker_name.to_owned(),
            next: AtomicUsize::new(0),
        }
    }
}

impl CheckSender for ProducerCheckSender {
    fn send_check(
        &self,
        group: &str,
        header: &CheckTransactionStateRequestHeader,
        body: Vec<u8>,
    ) -> bool {
        let conns = self.clients.producer_connections(group);
        if conns.is_empty() {
            return false;
        }
        let header = CheckTransactionStateRequestHeader {
            broker_name: Some(self.broker_name.clone()),
            ..header.clone()
        };
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for i in 0..conns.len() {
            let conn = &conns[(start + i) % conns.len()];
            let mut cmd = RemotingCommand::request(RequestCode::CheckTransactionState)
                .with_ext_fields(header.to_ext())
                .with_body(body.clone());
            cmd.mark_oneway();
            if conn.send(cmd) {
                return true;
            }
        }
        false
    }
}
