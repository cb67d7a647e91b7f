//! `rmq-admin`: topics, consumer progress, message queries, cluster and
//! broker config, controller-mode broker sets over the remoting protocol.

use std::net::SocketAddr;

use clap::{Parser, Subcommand};
use rmq_tools::{admin, controller_admin, cq_admin};

/// Administer an rmq broker and NameServer.
#[derive(Debug, Parser)]
#[command(name = "rmq-admin", version)]
struct Args {
    /// Broker address.
    #[arg(long, default_value = "127.0.0.1:10911", global = true)]
    broker: SocketAddr,
    /// NameServer address.
    #[arg(long, default_value = "127.0.0.1:9876", global = true)]
    namesrv: SocketAddr,
    /// Connect with TLS (the server's certificate is taken as it is unless
    /// --tls-ca is given).
    #[arg(long, global = true)]
    tls: bool,
    /// CA the server's certificate must chain to (implies --tls).
    #[arg(long, global = true)]
    tls_ca: Option<std::path::PathBuf>,
    /// ACL access key to sign requests with (a broker with aclEnable).
    #[arg(long, env = "RMQ_ACCESS_KEY", global = true, requires = "secret_key")]
    access_key: Option<String>,
    /// ACL secret key (prefer the environment variable: arguments are
    /// visible to other users of the machine).
    #[arg(
        long,
        env = "RMQ_SECRET_KEY",
        global = true,
        hide_env_values = true,
        requires = "access_key"
    )]
    secret_key: Option<String>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Topics.
    #[command(subcommand)]
    Topic(TopicCmd),
    /// Consumer progress of a group on a topic, with per-queue lag.
    Progress {
        /// Consumer group.
        #[arg(long)]
        group: String,
        /// Topic.
        #[arg(long)]
        topic: String,
    },
    /// Messages by key (`--topic T --key K`) or by offsetMsgId (`--id ID`).
    Query {
        /// Topic (with --key).
        #[arg(long)]
        topic: Option<String>,
        /// Key.
        #[arg(long)]
        key: Option<String>,
        /// offsetMsgId.
        #[arg(long)]
        id: Option<String>,
    },
    /// Messages of one queue (e.g. a dead-letter queue `%DLQ%<group>`),
    /// read without committing anything.
    Read {
        /// Topic.
        #[arg(long)]
        topic: String,
        /// Queue id.
        #[arg(long, default_value_t = 0)]
        queue: i32,
        /// First queue offset.
        #[arg(long, default_value_t = 0)]
        offset: i64,
        /// Most messages to print.
        #[arg(long, default_value_t = 32)]
        count: i32,
    },
    /// Brokers registered with the NameServer.
    Cluster,
    /// The broker's effective configuration.
    Config,
    /// Run a CommitLog clean pass now (DELETE_EXPIRED_COMMITLOG): expired
    /// segments go whatever the hour.
    Clean,
    /// Controller mode: each broker set the controller knows — master id
    /// and address, master epoch, SyncStateSet epoch, and every replica
    /// in sync or not, alive or not (mqadmin getSyncStateSet).
    SyncStateSet {
        /// A controller replica (any: the leader is found from it).
        #[arg(long)]
        controller: String,
        /// A broker set to show (repeatable); without one, every set the
        /// NameServer (--namesrv) knows.
        #[arg(long = "broker-name")]
        broker_names: Vec<String>,
    },
    /// The consume-queue backends: the serving one and a shadow fed the
    /// same dispatch (compare, then migrate without a restart).
    #[command(subcommand)]
    Cq(CqCmd),
}

#[derive(Debug, Subcommand)]
enum CqCmd {
    /// Each backend's role, position and lag.
    Status,
    /// Compare the shadow with the serving backend queue by queue; exits
    /// with status 1 when they differ.
    Verify {
        /// Compare one unit in this many (1: every unit).
        #[arg(long, default_value_t = 1)]
        every: u64,
        /// Differences listed at most.
        #[arg(long, default_value_t = 20)]
        max_differences: u32,
    },
    /// Add a shadow backend, built from the CommitLog in the background.
    AddShadow {
        /// file or rocksdb.
        #[arg(long)]
        backend: String,
    },
    /// Make the shadow serve (and the serving backend the shadow).
    Serve {
        /// file or rocksdb: the current shadow.
        #[arg(long)]
        backend: String,
    },
    /// Stop the shadow and remove its files.
    DropShadow,
}

#[derive(Debug, Subcommand)]
enum TopicCmd {
    /// Create or update a topic.
    Create {
        /// Topic.
        #[arg(long)]
        topic: String,
        /// Read and write queues.
        #[arg(long, default_value_t = 8)]
        queues: i32,
        /// Permission bits (6 = read + write).
        #[arg(long, default_value_t = 6)]
        perm: i32,
    },
    /// Create or update COUNT topics PREFIX0..PREFIX<COUNT-1> in batches
    /// (UPDATE_AND_CREATE_TOPIC_LIST).
    CreateMany {
        /// Name prefix.
        #[arg(long)]
        prefix: String,
        /// How many.
        #[arg(long)]
        count: usize,
        /// Read and write queues of each.
        #[arg(long, default_value_t = 8)]
        queues: i32,
    },
    /// List topics.
    List,
    /// Per-queue min and max offsets.
    Status {
        /// Topic.
        #[arg(long)]
        topic: String,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let tls = (args.tls || args.tls_ca.is_some())
        .then(|| {
            rmq_client::TlsClient::new(&rmq_client::TlsClientOptions {
                trust_cert_path: args.tls_ca.clone(),
                ..Default::default()
            })
        })
        .transpose()?;
    let credentials = args
        .access_key
        .clone()
        .zip(args.secret_key.clone())
        .map(|(ak, sk)| rmq_common::acl::Credentials::new(ak, sk));
    let conn = &rmq_client::Connector::new()
        .with_tls(tls)
        .with_credentials(credentials);
    let out = match args.cmd {
        Cmd::Topic(TopicCmd::Create {
            topic,
            queues,
            perm,
        }) => admin::topic_create(conn, args.broker, &topic, queues, perm).await?,
        Cmd::Topic(TopicCmd::CreateMany {
            prefix,
            count,
            queues,
        }) => admin::topic_create_many(conn, args.broker, &prefix, count, queues).await?,
        Cmd::Topic(TopicCmd::List) => admin::topic_list(conn, args.broker).await?,
        Cmd::Topic(TopicCmd::Status { topic }) => {
            admin::topic_status(conn, args.broker, &topic).await?
        }
        Cmd::Progress { group, topic } => {
            admin::consumer_progress(conn, args.broker, &group, &topic).await?
        }
        Cmd::Query { id: Some(id), .. } => admin::query_id(conn, &id).await?,
        Cmd::Query {
            topic: Some(topic),
            key: Some(key),
            ..
        } => admin::query_key(conn, args.broker, &topic, &key).await?,
        Cmd::Query { .. } => anyhow::bail!("query needs --id, or --topic and --key"),
        Cmd::Read {
            topic,
            queue,
            offset,
            count,
        } => admin::read_queue(conn, args.broker, &topic, queue, offset, count).await?,
        Cmd::Cluster => admin::cluster_list(conn, args.namesrv).await?,
        Cmd::Clean => admin::clean(conn, args.broker).await?,
        Cmd::Config => admin::broker_config(conn, args.broker).await?,
        Cmd::Cq(CqCmd::Status) => cq_admin::status(conn, args.broker).await?,
        Cmd::Cq(CqCmd::Verify {
            every,
            max_differences,
        }) => {
            let report = cq_admin::verify_report(conn, args.broker, every, max_differences).await?;
            print!("{}", cq_admin::verify_text(&report));
            std::process::exit(if cq_admin::verify_equal(&report) {
                0
            } else {
                1
            });
        }
        Cmd::Cq(CqCmd::AddShadow { backend }) => {
            cq_admin::add_shadow(conn, args.broker, &backend).await?
        }
        Cmd::Cq(CqCmd::Serve { backend }) => cq_admin::serve(conn, args.broker, &backend).await?,
        Cmd::Cq(CqCmd::DropShadow) => cq_admin::drop_shadow(conn, args.broker).await?,
        Cmd::SyncStateSet {
            controller,
            broker_names,
        } => {
            controller_admin::sync_state_set(conn, &controller, &broker_names, args.namesrv).await?
        }
    };
    print!("{out}");
    Ok(())
}
