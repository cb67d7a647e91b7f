//! Headers of the ACL administration codes: UPDATE_AND_CREATE_ACL_CONFIG
//! (50), DELETE_ACL_CONFIG (51) and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53).
//! A broker without ACL refuses them before it asks for any field, so
//! `accessKey` is optional here and required by the handler.

use std::collections::BTreeMap;

use super::ext_header;
use crate::remoting::ext_fields::{ExtFields, HeaderError};

ext_header! {
    /// `PlainAccessConfig` as UPDATE_AND_CREATE_ACL_CONFIG sends it.
    pub struct UpdateAclRequestHeader {
        /// `accessKey` (required once ACL is known to be on).
        pub access_key: Option<String> = opt_string("accessKey"),
        /// `secretKey`, as sent.
        pub secret_key: Option<String> = raw("secretKey"),
        /// `whiteRemoteAddress`, as sent.
        pub white_remote_address: Option<String> = raw("whiteRemoteAddress"),
        /// `admin`, as sent: read with [`UpdateAclRequestHeader::admin`]
        /// once ACL is known to be on.
        pub admin: Option<String> = raw("admin"),
        /// `defaultTopicPerm`, as sent.
        pub default_topic_perm: Option<String> = raw("defaultTopicPerm"),
        /// `defaultGroupPerm`, as sent.
        pub default_group_perm: Option<String> = raw("defaultGroupPerm"),
        /// `topicPerms`: comma-separated, as sent.
        pub topic_perms: Option<String> = raw("topicPerms"),
        /// `groupPerms`: comma-separated, as sent.
        pub group_perms: Option<String> = raw("groupPerms"),
    }
}

impl UpdateAclRequestHeader {
    /// `admin` as a boolean (`true`/`false`/`1`/`0`), `None` when absent or
    /// blank.
    pub fn admin(&self) -> Result<Option<bool>, HeaderError> {
        let mut map = BTreeMap::new();
        if let Some(v) = &self.admin {
            map.insert("admin".to_owned(), v.clone());
        }
        ExtFields::new(&map).get_bool("admin")
    }
}

ext_header! {
    /// `DeleteAccessConfigRequestHeader`.
    pub struct DeleteAclRequestHeader {
        /// `accessKey` (required once ACL is known to be on).
        pub access_key: Option<String> = opt_string("accessKey"),
    }
}

ext_header! {
    /// `UpdateGlobalWhiteAddrsConfigRequestHeader`.
    pub struct GlobalWhiteAddrsRequestHeader {
        /// `globalWhiteAddrs`: comma-separated, as sent (empty clears).
        pub global_white_addrs: Option<String> = raw("globalWhiteAddrs"),
        /// `aclFileFullPath`, as sent.
        pub acl_file_full_path: Option<String> = raw("aclFileFullPath"),
    }
}
