//! The ACL administration codes (mqadmin updateAclConfig,
//! deleteAccessConfig, clusterAclConfigVersion, updateGlobalWhiteAddr,
//! getAccessConfigSubCommand): UPDATE_AND_CREATE_ACL_CONFIG 50,
//! DELETE_ACL_CONFIG 51, GET_BROKER_CLUSTER_ACL_INFO 52,
//! UPDATE_GLOBAL_WHITE_ADDRS_CONFIG 53, GET_BROKER_CLUSTER_ACL_CONFIG 54,
//! with RocketMQ's headers, bodies and failure codes (209, 210, 211). Only
//! an admin account reaches them (the ACL check before dispatch); with
//! `aclEnable=false` each is refused, naming the key.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmq_common::remoting::header::{
    DeleteAclRequestHeader, GlobalWhiteAddrsRequestHeader, UpdateAclRequestHeader,
};
use rmq_common::remoting::{HeaderError, ResponseCode};
use serde_yaml::Value;

use super::parts::AclAdmin;
use super::{blocking, json_success, success, Handled, Refusal};
use rmq_remoting::acl::edit::{version_of, AccountUpdate};
use rmq_remoting::acl::Acl;

fn acl(acl_admin: &AclAdmin, failed: ResponseCode) -> Result<Arc<Acl>, Refusal> {
    acl_admin.acl.clone().ok_or_else(|| {
        Refusal::new(
            failed,
            "ACL is not enabled on this broker (aclEnable=false)",
        )
    })
}

/// `accessKey`, required once ACL is known to be on (the remark a missing
/// header field gets).
fn access_key(v: Option<String>) -> Result<String, Refusal> {
    v.ok_or_else(|| HeaderError::Missing { field: "accessKey" }.into())
}

fn list(v: Option<&str>) -> Option<Vec<String>> {
    v.map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    })
}

/// UPDATE_AND_CREATE_ACL_CONFIG.
pub(crate) async fn update(acl_admin: &Arc<AclAdmin>, h: UpdateAclRequestHeader) -> Handled {
    const FAILED: ResponseCode = ResponseCode::UpdateAndCreateAclConfigFailed;
    let acl = acl(acl_admin, FAILED)?;
    let access_key = access_key(h.access_key.clone())?;
    let admin = h.admin()?.unwrap_or(false);
    let u = AccountUpdate {
        access_key,
        secret_key: h.secret_key.unwrap_or_default(),
        white_remote_address: h.white_remote_address,
        admin,
        default_topic_perm: h.default_topic_perm,
        default_group_perm: h.default_group_perm,
        topic_perms: list(h.topic_perms.as_deref()),
        group_perms: list(h.group_perms.as_deref()),
    };
    let ak = u.access_key.clone();
    blocking(move || acl.update_account(&u))
        .await?
        .map_err(|e| {
            Refusal::new(
                FAILED,
                format!("The accesskey[{ak}] corresponding to accessConfig has been updated failed: {e}"),
            )
        })?;
    Ok(success())
}

/// DELETE_ACL_CONFIG.
pub(crate) async fn delete(acl_admin: &Arc<AclAdmin>, h: DeleteAclRequestHeader) -> Handled {
    const FAILED: ResponseCode = ResponseCode::DeleteAclConfigFailed;
    let acl = acl(acl_admin, FAILED)?;
    let ak = access_key(h.access_key)?;
    let key = ak.clone();
    let deleted = blocking(move || acl.delete_account(&key)).await?;
    match deleted {
        Ok(true) => Ok(success()),
        Ok(false) => Err(Refusal::new(
            FAILED,
            format!("The accesskey[{ak}] corresponding to accessConfig has been deleted failed."),
        )),
        Err(e) => Err(Refusal::new(
            FAILED,
            format!(
                "The accesskey[{ak}] corresponding to accessConfig has been deleted failed: {e}"
            ),
        )),
    }
}

/// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (`aclFileFullPath`, if given, must be
/// this broker's ACL file).
pub(crate) async fn global_white(
    acl_admin: &Arc<AclAdmin>,
    h: GlobalWhiteAddrsRequestHeader,
) -> Handled {
    const FAILED: ResponseCode = ResponseCode::UpdateGlobalWhiteAddrsConfigFailed;
    let acl = acl(acl_admin, FAILED)?;
    // Empty clears the list (a required field would refuse it as missing).
    let raw = h.global_white_addrs.as_deref().ok_or_else(|| {
        Refusal::new(
            ResponseCode::SystemError,
            "the custom field <globalWhiteAddrs> is null",
        )
    })?;
    let addrs = list(Some(raw)).unwrap_or_default();
    if let Some(path) = h.acl_file_full_path.as_deref().filter(|p| !p.is_empty()) {
        if std::path::Path::new(path) != acl.file() {
            return Err(Refusal::new(
                FAILED,
                format!(
                    "aclFileFullPath {path} is not this broker's ACL file ({})",
                    acl.file().display()
                ),
            ));
        }
    }
    let shown = addrs.join(",");
    blocking(move || acl.set_global_white(&addrs))
        .await?
        .map_err(|e| {
            Refusal::new(
                FAILED,
                format!("The globalWhiteAddresses[{shown}] has been updated failed: {e}"),
            )
        })?;
    Ok(success())
}

/// GET_BROKER_CLUSTER_ACL_INFO: the file's data version, in the response
/// header as RocketMQ's GetBrokerAclConfigResponseHeader.
pub(crate) async fn info(acl_admin: &Arc<AclAdmin>) -> Handled {
    let acl = acl(acl_admin, ResponseCode::SystemError)?;
    let doc = {
        let acl = Arc::clone(&acl);
        blocking(move || acl.document()).await?
    }
    .map_err(|e| Refusal::new(ResponseCode::SystemError, e))?;
    let v = version_of(&doc);
    let version = serde_json::to_string(&v).unwrap_or_default();
    let all = serde_json::to_string(&BTreeMap::from([(acl.file().display().to_string(), v)]))
        .unwrap_or_default();
    let mut resp = success();
    resp.put_ext("version", version);
    resp.put_ext("allAclFileVersion", all);
    resp.put_ext("brokerName", &acl_admin.broker_name);
    resp.put_ext("brokerAddr", acl_admin.store_host);
    resp.put_ext("clusterName", &acl_admin.cluster_name);
    Ok(resp)
}

/// GET_BROKER_CLUSTER_ACL_CONFIG: the white list and every account, secrets
/// included, as RocketMQ answers it (admin accounts only, here).
pub(crate) async fn config(acl_admin: &Arc<AclAdmin>) -> Handled {
    let acl = acl(acl_admin, ResponseCode::SystemError)?;
    let doc = blocking(move || acl.document())
        .await?
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e))?;
    let json = serde_json::to_value(Value::Mapping(doc))
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    let get = |k: &str| json.get(k).cloned().unwrap_or(serde_json::json!([]));
    json_success(&serde_json::json!({
        "globalWhiteAddrs": get("globalWhiteRemoteAddresses"),
        "plainAccessConfigs": get("accounts"),
    }))
}
