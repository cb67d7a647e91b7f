//! Plain ACL as RocketMQ 4.9 defines it (`aclEnable=true`): every request
//! names an account (`AccessKey`) and carries the signature its client hook
//! computed over the request (`rmq_common::acl`); the account's permissions
//! on the topics and groups the request touches, and the administration
//! codes, are checked in RocketMQ's order. Refusals answer NO_PERMISSION
//! with a remark naming the request code, the account and the resource,
//! never a secret. The file (`aclFile`, plain_acl.yml) is read again when it
//! changes (`aclReloadInterval`); a file that cannot be used keeps the
//! previous one in force, with an error line.

pub mod edit;

/// The file's format (plain_acl.yml), address patterns, permissions, what
/// each request code needs, and the check itself.
pub use rmq_common::acl::{address, perm, plain, resources, Denied};

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::{Mutex, RwLock};
use tokio_util::sync::CancellationToken;

use plain::AclTable;

/// The ACL in force, and the file it comes from.
#[derive(Debug)]
pub struct Acl {
    file: PathBuf,
    table: RwLock<Arc<AclTable>>,
    /// Modification time of the file last read (None: it was missing).
    seen: Mutex<Option<SystemTime>>,
    /// Held by the administration codes' edits, one at a time.
    edits: Mutex<()>,
}

impl Acl {
    /// Reads `file`; a missing file is an empty one (nobody gets in but the
    /// white-listed). An unusable file is an error naming the problem.
    pub fn open(file: &Path) -> Result<Self, String> {
        let (table, seen) = read(file)?;
        Ok(Self {
            file: file.to_path_buf(),
            table: RwLock::new(Arc::new(table)),
            seen: Mutex::new(seen),
            edits: Mutex::new(()),
        })
    }

    /// The file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The table in force.
    pub fn table(&self) -> Arc<AclTable> {
        Arc::clone(&self.table.read())
    }

    /// Puts `table` (just written to the file) in force.
    fn put_in_force(&self, table: AclTable) {
        *self.table.write() = Arc::new(table);
        *self.seen.lock() = modified(&self.file);
    }

    /// Reads the file again if its modification time changed; true if a
    /// new table is in force. On an error the old table stays.
    pub fn reload_if_changed(&self) -> Result<bool, String> {
        let now = modified(&self.file);
        if now == *self.seen.lock() {
            return Ok(false);
        }
        // Seen either way: a broken file is reported once, not every pass.
        *self.seen.lock() = now;
        let (table, _) = read(&self.file)?;
        *self.table.write() = Arc::new(table);
        Ok(true)
    }

    /// Checks a request of `code` from `peer`, with its extFields and body,
    /// against the table in force (see [`AclTable::check`]).
    pub fn check(
        &self,
        code: i32,
        peer: IpAddr,
        ext: &BTreeMap<String, String>,
        body: Option<&[u8]>,
    ) -> Result<(), Denied> {
        self.table().check(code, peer, ext, body)
    }

    /// Checks a request signed outside its extFields (see
    /// [`AclTable::check_signed`]).
    pub fn check_signed(
        &self,
        code: i32,
        peer: IpAddr,
        access_key: Option<&str>,
        signed: &dyn Fn(&str) -> bool,
        ext: &BTreeMap<String, String>,
        body: Option<&[u8]>,
    ) -> Result<(), Denied> {
        self.table()
            .check_signed(code, peer, access_key, signed, ext, body)
    }
}

fn modified(file: &Path) -> Option<SystemTime> {
    std::fs::metadata(file).and_then(|m| m.modified()).ok()
}

fn read(file: &Path) -> Result<(AclTable, Option<SystemTime>), String> {
    let seen = modified(file);
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!(file = %file.display(), "ACL file missing: only white-listed addresses get in");
            String::new()
        }
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let table = AclTable::parse(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    for p in &table.unknown_perms {
        tracing::warn!(file = %file.display(), perm = %p, "ACL permission string is none of DENY, PUB, SUB, PUB|SUB: taken as DENY");
    }
    Ok((table, seen))
}

/// Re-reads the file every `every` until `cancel`, logging what changed.
pub async fn watch(acl: Arc<Acl>, every: Duration, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        match acl.reload_if_changed() {
            Ok(true) => tracing::info!(
                file = %acl.file().display(),
                accounts = acl.table().accounts.len(),
                "ACL file reloaded"
            ),
            Ok(false) => {}
            Err(e) => {
                tracing::error!(error = %e, "ACL file not reloaded; the previous one stays in force")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_common::acl as sig;

    const FILE: &str = "
globalWhiteRemoteAddresses: [10.9.9.*]
accounts:
  - accessKey: RocketMQ
    secretKey: '12345678'
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB]
    groupPerms: [groupA=DENY]
  - accessKey: adminKey1
    secretKey: adminSecret
    admin: true
  - accessKey: trusted1
    secretKey: trustedSecret
    whiteRemoteAddress: 127.0.0.2
";

    fn acl() -> (tempfile::TempDir, Acl) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("plain_acl.yml");
        std::fs::write(&f, FILE).unwrap();
        let acl = Acl::open(&f).unwrap();
        (dir, acl)
    }

    fn signed(pairs: &[(&str, &str)], ak: &str, sk: &str) -> BTreeMap<String, String> {
        let mut e: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        sig::sign_request(&mut e, None, ak, sk);
        e
    }

    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn checks_follow_rocketmqs_order() {
        let (_d, acl) = acl();
        let send = |topic: &str, ak: &str, sk: &str| {
            acl.check(
                310,
                LOCAL,
                &signed(&[("a", "p"), ("b", topic)], ak, sk),
                None,
            )
        };
        assert_eq!(send("topicB", "RocketMQ", "12345678"), Ok(()));
        let e = send("topicA", "RocketMQ", "12345678").unwrap_err().0;
        assert!(
            e.contains("310") && e.contains("RocketMQ") && e.contains("topic topicA"),
            "{e}"
        );
        assert!(!e.contains("12345678"), "no secret in {e}");
        assert!(send("topicC", "RocketMQ", "12345678").is_err(), "SUB only");
        assert!(
            send("other", "RocketMQ", "12345678").is_err(),
            "default DENY"
        );
        assert!(send("topicB", "RocketMQ", "wrongone")
            .unwrap_err()
            .0
            .contains("signature"));
        assert!(send("topicB", "nobody12", "12345678")
            .unwrap_err()
            .0
            .contains("no account"));
        let unsigned = acl.check(310, LOCAL, &BTreeMap::new(), None).unwrap_err().0;
        assert!(unsigned.contains("unsigned"), "{unsigned}");
        // Groups: listed DENY, default SUB.
        let pull = |g: &str| {
            acl.check(
                11,
                LOCAL,
                &signed(
                    &[("topic", "topicC"), ("consumerGroup", g)],
                    "RocketMQ",
                    "12345678",
                ),
                None,
            )
        };
        assert_eq!(pull("groupZ"), Ok(()));
        assert!(pull("groupA").unwrap_err().0.contains("group groupA"));
        // Admin codes.
        let create =
            |ak: &str, sk: &str| acl.check(17, LOCAL, &signed(&[("topic", "x")], ak, sk), None);
        assert!(create("RocketMQ", "12345678")
            .unwrap_err()
            .0
            .contains("admin"));
        assert_eq!(create("adminKey1", "adminSecret"), Ok(()));
        // An admin with no lists may do everything.
        assert_eq!(
            acl.check(
                310,
                LOCAL,
                &signed(&[("b", "anything")], "adminKey1", "adminSecret"),
                None
            ),
            Ok(())
        );
        // White lists: the account's skips the signature; the global one skips all.
        let mut e = signed(&[("b", "topicA")], "trusted1", "not-its-secret");
        assert_eq!(
            acl.check(310, "127.0.0.2".parse().unwrap(), &e, None),
            Ok(())
        );
        assert!(acl.check(310, LOCAL, &e, None).is_err());
        e.clear();
        assert_eq!(acl.check(17, "10.9.9.4".parse().unwrap(), &e, None), Ok(()));
    }

    #[test]
    fn a_changed_file_is_taken_and_a_broken_one_is_not() {
        let (_d, acl) = acl();
        assert!(!acl.reload_if_changed().unwrap());
        let f = acl.file().to_path_buf();
        let later = |text: &str, secs: u64| {
            std::fs::write(&f, text).unwrap();
            // Make the change visible whatever the file system's time grain.
            let t = std::time::SystemTime::now() + Duration::from_secs(secs);
            std::fs::File::options()
                .write(true)
                .open(&f)
                .unwrap()
                .set_modified(t)
                .unwrap();
        };
        later(
            "accounts:\n  - {accessKey: newcomer, secretKey: newSecret}\n",
            5,
        );
        assert!(acl.reload_if_changed().unwrap());
        assert!(acl.table().accounts.contains_key("newcomer"));
        assert!(!acl.table().accounts.contains_key("RocketMQ"));
        later("accounts: [", 10);
        assert!(acl.reload_if_changed().is_err());
        assert!(
            acl.table().accounts.contains_key("newcomer"),
            "the old table stays"
        );
        assert!(!acl.reload_if_changed().unwrap(), "reported once");
    }
}
