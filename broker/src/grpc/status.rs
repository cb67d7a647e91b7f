//! The `Status` every answer carries: a code of `apache.rocketmq.v2.Code`
//! and a message, as Apache RocketMQ 5.3.3's proxy writes them
//! (`ResponseBuilder`). A failed call still answers with gRPC's OK and puts
//! its code in the response's `status`; only a malformed stream fails at
//! the gRPC level.

use rmq_common::remoting::ResponseCode;
use rmq_grpc::pb;

/// A call that ends with a non-OK `Status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub code: pb::Code,
    pub message: String,
}

impl Failure {
    pub fn new(code: pb::Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The broker's answer `code` (with its remark) as the proxy reports a
    /// failed remoting call. The proxy maps only four codes and answers
    /// INTERNAL_SERVER_ERROR for the rest; the ones it catches before the
    /// broker (a missing topic, a denied request) are mapped here to what
    /// it answers for them.
    pub fn remoting(code: i32, remark: Option<&str>) -> Self {
        let message = remark.map_or_else(|| code.to_string(), str::to_owned);
        Self::new(code_of_remoting(code), message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(pb::Code::InternalServerError, message)
    }

    pub fn status(&self) -> pb::Status {
        status(self.code, &self.message)
    }
}

/// A `Status` of `code` with `message`.
pub(crate) fn status(code: pb::Code, message: &str) -> pb::Status {
    pb::Status {
        code: code as i32,
        message: message.to_owned(),
    }
}

/// `OK` with the message "OK", as every successful answer carries.
pub(crate) fn ok() -> pb::Status {
    status(pb::Code::Ok, "OK")
}

/// The `Status` of a set of per-entry codes (send and ack results): the
/// one code if all agree, MULTIPLE_RESULTS if they differ.
pub(crate) fn of_entries(codes: &[pb::Code], empty: &str) -> pb::Status {
    match codes.split_first() {
        None => status(pb::Code::InternalServerError, empty),
        Some((first, rest)) if rest.iter().all(|c| c == first) => {
            status(*first, first.as_str_name())
        }
        Some(_) => status(pb::Code::MultipleResults, "MULTIPLE_RESULTS"),
    }
}

/// The name of a status code, for the metrics (`UNSPECIFIED` for a
/// missing or unknown one).
pub(crate) fn code_name(code: Option<i32>) -> &'static str {
    code.and_then(|c| pb::Code::try_from(c).ok())
        .unwrap_or(pb::Code::Unspecified)
        .as_str_name()
}

fn code_of_remoting(code: i32) -> pb::Code {
    match ResponseCode::from_i32(code) {
        Some(ResponseCode::Success) => pb::Code::Ok,
        Some(ResponseCode::SystemBusy) => pb::Code::TooManyRequests,
        Some(ResponseCode::RequestCodeNotSupported) => pb::Code::NotImplemented,
        Some(ResponseCode::SubscriptionGroupNotExist) => pb::Code::ConsumerGroupNotFound,
        Some(ResponseCode::TopicNotExist) => pb::Code::TopicNotFound,
        Some(ResponseCode::NoPermission) => pb::Code::Forbidden,
        _ => pb::Code::InternalServerError,
    }
}

/// Builds a response that carries only `status` (the answer to a call that
/// failed before it produced anything else).
pub(crate) trait WithStatus: Default {
    fn set_status(&mut self, status: pb::Status);

    fn status_code(&self) -> Option<i32>;

    fn failed(f: &Failure) -> Self {
        let mut r = Self::default();
        r.set_status(f.status());
        r
    }
}

macro_rules! with_status {
    ($($t:ident),* $(,)?) => {
        $(impl WithStatus for pb::$t {
            fn set_status(&mut self, status: pb::Status) {
                self.status = Some(status);
            }

            fn status_code(&self) -> Option<i32> {
                self.status.as_ref().map(|s| s.code)
            }
        })*
    };
}

with_status!(
    QueryRouteResponse,
    HeartbeatResponse,
    SendMessageResponse,
    QueryAssignmentResponse,
    AckMessageResponse,
    ForwardMessageToDeadLetterQueueResponse,
    UpdateOffsetResponse,
    GetOffsetResponse,
    QueryOffsetResponse,
    EndTransactionResponse,
    NotifyClientTerminationResponse,
    ChangeInvisibleDurationResponse,
    RecallMessageResponse,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_agree_or_are_multiple() {
        assert_eq!(
            of_entries(&[pb::Code::Ok, pb::Code::Ok], "").code,
            pb::Code::Ok as i32
        );
        assert_eq!(of_entries(&[pb::Code::Ok], "").message, "OK");
        let mixed = of_entries(&[pb::Code::Ok, pb::Code::InternalServerError], "");
        assert_eq!(mixed.code, pb::Code::MultipleResults as i32);
        assert_eq!(
            of_entries(&[], "empty").code,
            pb::Code::InternalServerError as i32
        );
    }

    #[test]
    fn remoting_codes_map_as_the_proxy_reports_them() {
        let f = Failure::remoting(ResponseCode::SystemBusy.into(), Some("busy"));
        assert_eq!(
            (f.code, f.message.as_str()),
            (pb::Code::TooManyRequests, "busy")
        );
        assert_eq!(
            Failure::remoting(1, None).code,
            pb::Code::InternalServerError
        );
        assert_eq!(Failure::remoting(1, None).message, "1");
        assert_eq!(
            Failure::remoting(ResponseCode::TopicNotExist.into(), None).code,
            pb::Code::TopicNotFound
        );
    }
}
