//! Fuzz target `hostile_client` (issue 15): a hostile client against a real
//! broker. Each input becomes one valid frame (a request code, known or not;
//! header fields that requests read, with troublesome values; maybe a body)
//! sent over one long-lived connection to an `rmq-broker` process started on
//! 127.0.0.1 port 0 with a fresh store. The target fails when:
//! - the request is not answered within [`ANSWER_TIMEOUT`], or the broker
//!   closes the connection or dies (a panic there ends the process);
//! - every [`CHECK_EVERY`] inputs: the broker's resident memory, its store
//!   or its CommitLog segments passed their bound, or a normal request on a
//!   new connection is not answered within [`NORMAL_TIMEOUT`].
//!
//! The broker is a child process (`broker_child.rs`: killed when the
//! fuzzer exits; `FUZZ_BROKER_BIN` names the binary). Its store and log are
//! `$TMPDIR/rmq-hostile-fuzz-<pid>` and `.log`: removed at a normal exit,
//! left for a look after a failure.

#![no_main]

use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Duration;

use libfuzzer_sys::arbitrary::{Result as ArbResult, Unstructured};
use rmq_common::fuzz_harness::{HOSTILE_FIELDS as FIELDS, HOSTILE_VALUES as VALUES};
use rmq_common::remoting::{RemotingCommand, RequestCode};

const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
const NORMAL_TIMEOUT: Duration = Duration::from_secs(1);
const CHECK_EVERY: u64 = 500;

#[path = "broker_child.rs"]
mod broker_child;

use broker_child::{connect, round_trip};

struct Target {
    broker: broker_child::BrokerChild,
    conn: TcpStream,
    opaque: i32,
    inputs: u64,
}

static TARGET: Mutex<Option<Target>> = Mutex::new(None);

fn start() -> Target {
    let broker = broker_child::start("hostile");
    let conn = connect(broker.remoting, ANSWER_TIMEOUT);
    Target {
        broker,
        conn,
        opaque: 0,
        inputs: 0,
    }
}

fn request_from(u: &mut Unstructured<'_>) -> ArbResult<RemotingCommand> {
    let code = if u.ratio(4, 5)? {
        u.choose(RequestCode::ALL)?.code()
    } else {
        u.arbitrary::<i32>()?
    };
    let mut req = RemotingCommand::request(code);
    for _ in 0..u.int_in_range(0..=8)? {
        let field = *u.choose(FIELDS)?;
        let value = match u.int_in_range(0..=3)? {
            0 | 1 => (*u.choose(VALUES)?).to_owned(),
            2 => u.arbitrary::<String>()?,
            _ => "T".repeat(u.int_in_range(0..=4000)?),
        };
        req.put_ext(field, value);
    }
    // A pull may be held for its suspend time (long polling): ask for an
    // answer now, the rest of its fields as generated.
    if code == RequestCode::PullMessage.code() || code == RequestCode::LitePullMessage.code() {
        req.put_ext("sysFlag", "0");
        req.put_ext("suspendTimeoutMillis", "0");
    }
    if u.ratio(1, 2)? {
        let body: Vec<u8> = match u.int_in_range(0..=2)? {
            0 => u.arbitrary()?,
            1 => format!(
                r#"{{"consumerDataSet":[{{"groupName":{:?},"subscriptionDataSet":[]}}],"producerDataSet":[],"clientID":"fz"}}"#,
                u.arbitrary::<String>()?
            )
            .into_bytes(),
            _ => format!(
                r#"{{"topicConfigList":[{{"topicName":{:?},"readQueueNums":{},"writeQueueNums":1,"perm":6}}]}}"#,
                u.arbitrary::<String>()?,
                u.arbitrary::<i32>()?
            )
            .into_bytes(),
        };
        req = req.with_body(body);
    }
    Ok(req)
}

fn check(t: &mut Target) {
    t.broker.check_bounds(t.inputs);
    let mut normal = connect(t.broker.remoting, NORMAL_TIMEOUT);
    let mut req = RemotingCommand::request(RequestCode::GetAllTopicConfig);
    req.opaque = 1;
    let answer = round_trip(&mut normal, &req, "a normal request");
    assert_eq!(
        answer.code, 0,
        "a normal request was refused: {:?}",
        answer.remark
    );
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(mut req) = request_from(&mut u) else {
        return;
    };
    let mut guard = TARGET.lock().unwrap_or_else(|p| p.into_inner());
    let t = guard.get_or_insert_with(start);
    t.opaque = t.opaque.wrapping_add(1);
    req.opaque = t.opaque;
    let what = format!("request code {}", req.code);
    t.broker.alive();
    round_trip(&mut t.conn, &req, &what);
    t.inputs += 1;
    if t.inputs.is_multiple_of(CHECK_EVERY) {
        check(t);
    }
});
