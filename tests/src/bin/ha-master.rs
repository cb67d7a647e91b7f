//! Child process for the replication crash test: a SYNC_MASTER broker under
//! SYNC_FLUSH on fixed ports, registered with a given NameServer, running
//! until killed. Prints `READY` once it serves.
//!
//! Usage: `ha-master <root> <file|rocksdb> <listen port> <ha port> <namesrv>`

use anyhow::{bail, Context};
use rmq_broker::broker::Broker;
use rmq_broker::ha::BrokerRole;
use rmq_common::config::CqBackend;
use rmq_common::FlushDiskType;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, root, backend, port, ha_port, namesrv] = args.as_slice() else {
        bail!("usage: ha-master <root> <file|rocksdb> <listen port> <ha port> <namesrv>");
    };
    let backend = match backend.as_str() {
        "file" => CqBackend::File,
        "rocksdb" => CqBackend::Rocksdb,
        other => bail!("unknown backend {other}"),
    };
    let mut s = rmq_tests::broker_settings(std::path::Path::new(root), backend);
    s.store.flush_disk_type = FlushDiskType::SyncFlush;
    s.broker.broker_role = BrokerRole::SyncMaster;
    s.broker.listen_port = port.parse().context("listen port")?;
    s.broker.ha_listen_port = ha_port.parse().context("ha port")?;
    s.broker.ha_send_heartbeat_interval_ms = 200;
    s.broker.namesrv_listen_port = -1;
    s.broker.namesrv_addr = namesrv.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let _broker = Broker::start(s).await.context("start")?;
        println!("READY");
        std::future::pending::<anyhow::Result<()>>().await
    })
}
