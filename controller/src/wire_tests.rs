#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use rmq_common::remoting::{RemotingCommand, ResponseCode};

use crate::ops::{Elected, MasterView, Trigger};
use crate::wire::{self, Request};

fn request(code: i32, ext: &[(&str, &str)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(code);
    for (k, v) in ext {
        r.put_ext(*k, *v);
    }
    r
}

#[test]
fn a_heartbeat_as_a_5_3_3_broker_sends_it() {
    let r = request(
        904,
        &[
            ("clusterName", "DefaultCluster"),
            ("brokerAddr", "127.0.0.1:30911"),
            ("brokerName", "broker-a"),
            ("brokerId", "2"),
            ("epoch", "3"),
            ("maxOffset", "4096"),
            ("confirmOffset", "4000"),
            ("heartbeatTimeoutMills", "10000"),
            ("electionPriority", "2147483647"),
        ],
    );
    let Request::Heartbeat { cluster, heartbeat } = wire::decode(&r).unwrap().unwrap() else {
        panic!("not a heartbeat");
    };
    assert_eq!(cluster, "DefaultCluster");
    assert_eq!(
        (heartbeat.broker_id, heartbeat.epoch, heartbeat.max_offset),
        (2, 3, 4096)
    );
    // Without a brokerId: Java's answer.
    let r = request(
        904,
        &[
            ("clusterName", "c"),
            ("brokerAddr", "a"),
            ("brokerName", "b"),
        ],
    );
    let e = wire::decode(&r).unwrap().unwrap_err();
    assert_eq!(e.code, ResponseCode::ControllerInvalidRequest);
    assert_eq!(e.remark, "Heart beat with empty brokerId");
    // Not a controller code.
    assert!(wire::decode(&request(10, &[])).is_none());
}

#[test]
fn elections_are_told_apart_by_id_and_designation() {
    let elect = |id: &str, designate: &str| {
        let r = request(
            1002,
            &[
                ("clusterName", "c"),
                ("brokerName", "b"),
                ("brokerId", id),
                ("designateElect", designate),
                ("invokeTime", "1"),
            ],
        );
        match wire::decode(&r).unwrap().unwrap() {
            Request::ElectMaster { trigger, .. } => trigger,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(elect("2", "false"), Trigger::Broker(2));
    assert_eq!(elect("3", "true"), Trigger::Designate(3));
    assert_eq!(elect("-1", "false"), Trigger::Controller);
    let missing = request(1002, &[("clusterName", "c"), ("brokerName", "b")]);
    let e = wire::decode(&missing).unwrap().unwrap_err();
    assert_eq!(e.code, ResponseCode::SystemError);
    assert!(e.remark.contains("brokerId"), "{}", e.remark);
}

#[test]
fn an_alter_request_carries_its_set_in_the_body() {
    let mut r = request(
        1001,
        &[
            ("brokerName", "b"),
            ("masterBrokerId", "1"),
            ("masterEpoch", "2"),
            ("invokeTime", "9"),
        ],
    );
    r.body = Some(br#"{"syncStateSet":[1,2],"syncStateSetEpoch":4}"#.to_vec().into());
    let Request::AlterSyncStateSet(a) = wire::decode(&r).unwrap().unwrap() else {
        panic!("not an alter");
    };
    assert_eq!(
        (a.master, a.master_epoch, a.sync_state_set_epoch),
        (1, 2, 4)
    );
    assert_eq!(a.sync_state_set, BTreeSet::from([1, 2]));
    r.body = Some(b"{not json".to_vec().into());
    assert_eq!(
        wire::decode(&r).unwrap().unwrap_err().code,
        ResponseCode::SystemError
    );
    // mqadmin getSyncStateSet without names: Java's SYSTEM_ERROR.
    let e = wire::decode(&request(1006, &[])).unwrap().unwrap_err();
    assert_eq!(e.remark, "not set any response code");
}

#[test]
fn an_election_answer_has_the_header_and_body_a_broker_reads() {
    let e = Elected {
        code: ResponseCode::Success,
        view: MasterView {
            master: Some(2),
            master_addr: Some("127.0.0.1:30921".into()),
            master_epoch: 3,
            sync_state_set: BTreeSet::from([2]),
            sync_state_set_epoch: 4,
        },
        members: Some(BTreeMap::from([
            (1, "127.0.0.1:30911".into()),
            (2, "127.0.0.1:30921".into()),
        ])),
    };
    let resp = wire::elected("DefaultCluster", "broker-a", &e);
    assert_eq!(resp.code, 0);
    let ext = resp.ext();
    assert_eq!(ext.get_str("masterBrokerId"), Some("2"));
    assert_eq!(ext.get_str("masterAddress"), Some("127.0.0.1:30921"));
    assert_eq!(ext.get_str("masterEpoch"), Some("3"));
    assert_eq!(ext.get_str("syncStateSetEpoch"), Some("4"));
    let body: serde_json::Value = serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["syncStateSet"], serde_json::json!([2]));
    assert_eq!(
        body["brokerMemberGroup"]["brokerAddrs"]["1"],
        "127.0.0.1:30911"
    );
    assert_eq!(body["brokerMemberGroup"]["cluster"], "DefaultCluster");
    // No master: no id or address in the header.
    let none = MasterView {
        master: None,
        master_addr: None,
        master_epoch: 3,
        sync_state_set: BTreeSet::new(),
        sync_state_set_epoch: 4,
    };
    let resp = wire::master_view("c", "b", &none);
    assert!(resp.ext().get_str("masterBrokerId").is_none());
    assert_eq!(resp.ext().get_str("masterEpoch"), Some("3"));
}
