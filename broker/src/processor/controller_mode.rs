//! Controller mode's requests to the broker: NOTIFY_BROKER_ROLE_CHANGED
//! from the controller after an election.

use std::sync::Arc;

use rmq_common::remoting::{RemotingCommand, ResponseCode};

use super::parts::Admin;
use super::{Handled, Refusal};
use crate::replicas::rpc::MasterInfo;

/// NOTIFY_BROKER_ROLE_CHANGED: handed to the manager, which acts on it
/// when its master epoch is newer than the broker's (as Java, the answer
/// is SUCCESS either way; the controller sends it oneway).
pub(crate) fn notify_role_changed(admin: &Arc<Admin>, req: &RemotingCommand) -> Handled {
    let Some(manager) = admin.replicas.get() else {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            "this broker is not in controller mode (enableControllerMode=false)",
        ));
    };
    let info = MasterInfo::from_answer(req)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, format!("bad role notice: {e}")))?;
    manager.notify(info);
    Ok(RemotingCommand::response(ResponseCode::Success, None))
}
