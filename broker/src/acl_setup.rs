//! The ACL at start-up: the file opened and watched (`aclEnable`), and what
//! the broker signs its own requests with.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Settings;
use crate::error::BrokerError;

/// What the broker signs its own requests with (registrations, HA and
/// admin calls to its peers): `innerClientAuthenticationCredentials`, or,
/// when that is not set and `acl` is on, the first admin account of the
/// ACL file (by access key), so a broker turned to ACL as 4.9 users do
/// (`aclEnable=true` and a plain_acl.yml with an admin) registers with its
/// own embedded NameServer, which checks the same file.
pub(crate) fn own_credentials(
    settings: &Settings,
    acl: Option<&rmq_remoting::acl::Acl>,
) -> Result<Option<rmq_common::acl::Credentials>, BrokerError> {
    if let Some(c) = settings.broker.inner_credentials()? {
        return Ok(Some(c));
    }
    let Some(acl) = acl else {
        return Ok(None);
    };
    let table = acl.table();
    let admin = table
        .accounts
        .values()
        .filter(|a| a.admin)
        .min_by(|a, b| a.access_key.cmp(&b.access_key));
    match admin {
        Some(a) => {
            tracing::info!(access_key = %a.access_key,
                "innerClientAuthenticationCredentials not set: the broker signs its own requests with the ACL file's admin account");
            Ok(Some(rmq_common::acl::Credentials::new(
                a.access_key.clone(),
                a.secret_key.clone(),
            )))
        }
        None => Ok(None),
    }
}

/// Reads the ACL file when `aclEnable` and keeps it current until
/// `cancel`; the broker and its embedded NameServer share it.
pub(crate) fn open_acl(
    settings: &Settings,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> Result<Option<Arc<rmq_remoting::acl::Acl>>, BrokerError> {
    if !settings.broker.acl_enable {
        return Ok(None);
    }
    let file = std::path::Path::new(&settings.broker.acl_file);
    let acl = Arc::new(rmq_remoting::acl::Acl::open(file).map_err(BrokerError::Acl)?);
    tracker.spawn(rmq_remoting::acl::watch(
        Arc::clone(&acl),
        Duration::from_millis(settings.broker.acl_reload_interval_ms.max(1)),
        cancel.clone(),
    ));
    tracing::info!(file = %file.display(), accounts = acl.table().accounts.len(), "ACL enabled");
    Ok(Some(acl))
}
