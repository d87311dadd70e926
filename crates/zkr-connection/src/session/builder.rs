//! [`ZkClientBuilder`]: settings for a [`ZkClient`](crate::ZkClient), validated in `build()`.
//! How they print, credentials redacted, is in `builder/debug.rs`.

mod debug;

use std::sync::Arc;
use std::time::Duration;

use crate::acl::{AclProvider, CreatorAllAclProvider, OpenAclProvider};
use crate::error::{Error, Result};
use crate::path;
use crate::retry::{ExponentialBackoffRetry, RetryPolicy};
use crate::session::client::ZkClient;
use crate::session::state::{ConnectionStateErrorPolicy, StandardConnectionStateErrorPolicy};

/// [`ZkClientBuilder::stall_nudge`]'s default.
const DEFAULT_STALL_NUDGE: Option<Duration> = Some(Duration::from_millis(500));

/// The validated settings a [`ZkClient`] runs with. Its `Debug` (in `builder/debug.rs`) prints
/// every field but the credentials.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) connect_string: String,
    pub(crate) session_timeout: Duration,
    pub(crate) connection_timeout: Duration,
    pub(crate) retry_policy: Arc<dyn RetryPolicy>,
    pub(crate) namespace: Option<String>,
    pub(crate) compression: bool,
    /// The most one node's gzip data may inflate to ([`ZkClientBuilder::max_decompressed_len`]).
    pub(crate) max_decompressed_len: usize,
    pub(crate) auth: Vec<(String, Vec<u8>)>,
    pub(crate) acl_provider: Arc<dyn AclProvider>,
    pub(crate) can_be_read_only: bool,
    pub(crate) error_policy: Arc<dyn ConnectionStateErrorPolicy>,
    /// After how long an outstanding request sent through the retry loop gets a nudge
    /// ([`ZkClientBuilder::stall_nudge`]).
    pub(crate) stall_nudge: Option<Duration>,
    /// Whether the ensemble tracker follows `/zookeeper/config` ([`ZkClientBuilder::ensemble_tracker`]).
    pub(crate) ensemble_tracker: bool,
    /// The `client` label of this manager's figures ([`ZkClientBuilder::name`]); empty until
    /// `build` gives it the process's next number.
    pub(crate) name: Arc<str>,
    /// Whether recipes label their size figures with their path ([`ZkClientBuilder::metrics_path_labels`]).
    pub(crate) metrics_path_labels: bool,
    /// SASL authentication for every session ([`ZkClientBuilder::sasl`]).
    #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
    pub(crate) sasl: Option<zookeeper_client::SaslOptions>,
    /// The servers' principal given to [`ZkClientBuilder::sasl_gssapi_principal`]: kept to
    /// name the cause when no Kerberos session comes.
    #[cfg(feature = "sasl-gssapi")]
    pub(crate) gssapi: Option<crate::session::kerberos::GssapiTarget>,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<zookeeper_client::TlsOptions>,
    /// The trusted CA (PEM) given to [`ZkClientBuilder::tls_trusting`]: kept to name the cause
    /// when the first TLS connection fails.
    #[cfg(feature = "tls")]
    pub(crate) tls_ca_pem: Option<String>,
    /// The client certificate and key (PEM) given to [`ZkClientBuilder::tls_identity`].
    #[cfg(feature = "tls")]
    pub(crate) tls_identity_pem: Option<(String, String)>,
}

/// Builds a [`ZkClient`]. Every setting has Curator's default; `build()` validates them all.
///
/// Its `Debug`, and the `Debug` of the [`ZkClient`] it builds and of every recipe holding one,
/// shows the settings with the credentials as `<redacted>`: the bytes of [`auth`](Self::auth)
/// entries (their schemes show), the [`sasl`](Self::sasl) options, the [`tls`](Self::tls)
/// options and the private key of [`tls_identity`](Self::tls_identity).
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_connection::Result<()> {
/// use std::time::Duration;
/// use zkr_connection::{retry::ExponentialBackoffRetry, ZkClient};
///
/// let zk = ZkClient::builder("zk1:2181,zk2:2181,zk3:2181/prod")
///     .session_timeout(Duration::from_secs(30))
///     .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(500), 5))
///     .namespace("billing")
///     .digest_auth("billing", "s3cret")
///     .creator_only_acl()
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `.start()` or `.connect()`"]
pub struct ZkClientBuilder {
    config: Config,
}

impl ZkClientBuilder {
    pub(crate) fn new(connect_string: impl Into<String>) -> Self {
        ZkClientBuilder {
            config: Config {
                connect_string: connect_string.into(),
                session_timeout: Duration::from_secs(60),
                connection_timeout: Duration::from_secs(15),
                retry_policy: Arc::new(ExponentialBackoffRetry::new(Duration::from_secs(1), 3)),
                namespace: None,
                auth: Vec::new(),
                acl_provider: Arc::new(OpenAclProvider),
                can_be_read_only: false,
                compression: false,
                max_decompressed_len: crate::compression::DEFAULT_MAX_DECOMPRESSED_LEN,
                error_policy: Arc::new(StandardConnectionStateErrorPolicy),
                stall_nudge: DEFAULT_STALL_NUDGE,
                ensemble_tracker: true,
                name: Arc::from(""),
                metrics_path_labels: false,
                #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
                sasl: None,
                #[cfg(feature = "sasl-gssapi")]
                gssapi: None,
                #[cfg(feature = "tls")]
                tls: None,
                #[cfg(feature = "tls")]
                tls_ca_pem: None,
                #[cfg(feature = "tls")]
                tls_identity_pem: None,
            },
        }
    }

    /// SASL authentication for every session the manager opens, the first and each one after
    /// an expiry: [`sasl_digest_md5`](Self::sasl_digest_md5),
    /// [`sasl_gssapi`](Self::sasl_gssapi), or zookeeper-client's own options. A server that
    /// refuses the credentials fails the connect (no session is made; the error names `AuthFailed`);
    /// nodes whose ACL names `sasl:<user>` are then this user's. (Curator: the JAAS `Client`
    /// section and `zookeeper.sasl.*` system properties.)
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_connection::zookeeper_client::SaslOptions;
    ///
    /// let builder = zkr_connection::ZkClient::builder("zk1:2181").sasl(SaslOptions::digest_md5("billing", "s3cret"));
    /// # let _ = builder;
    /// ```
    #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))))]
    pub fn sasl(mut self, options: impl Into<zookeeper_client::SaslOptions>) -> Self {
        self.config.sasl = Some(options.into());
        #[cfg(feature = "sasl-gssapi")]
        {
            self.config.gssapi = None;
        }
        self
    }

    /// SASL DIGEST-MD5 with a user and password, as a server's JAAS `Server` section lists
    /// them (`user_<name>="<password>"`, `DigestLoginModule`). See [`sasl`](Self::sasl).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = zkr_connection::ZkClient::builder("zk1:2181").sasl_digest_md5("billing", "s3cret");
    /// # let _ = builder;
    /// ```
    #[cfg(feature = "sasl-digest-md5")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sasl-digest-md5")))]
    pub fn sasl_digest_md5(self, user: &str, password: &str) -> Self {
        self.sasl(zookeeper_client::SaslOptions::digest_md5(user.to_owned(), password.to_owned()))
    }

    /// SASL GSSAPI (Kerberos) with the ticket the process's credential cache holds (`kinit`,
    /// or `KRB5CCNAME`; the realm from `/etc/krb5.conf` or `KRB5_CONFIG`), for the servers'
    /// principal `zookeeper/<server host>@REALM` as Kafka and Hadoop deployments name it. The
    /// host is each server's as the connect string names it: connect to the names the
    /// principals carry (`zk1.example.com`, not an IP address), or see
    /// [`sasl_gssapi_principal`](Self::sasl_gssapi_principal). When no session comes,
    /// [`connect`](Self::connect) repeats the login's first step to say why:
    /// [`Error::Sasl`] (no credentials, the KDC unreachable, no such principal).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = zkr_connection::ZkClient::builder("zk1.example.com:2181").sasl_gssapi();
    /// # let _ = builder;
    /// ```
    #[cfg(feature = "sasl-gssapi")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sasl-gssapi")))]
    pub fn sasl_gssapi(self) -> Self {
        self.sasl_gssapi_principal("zookeeper", None)
    }

    /// [`sasl_gssapi`](Self::sasl_gssapi) for servers whose principal is
    /// `<service>/<host>@REALM`: the Java client's `zookeeper.sasl.client.username` is
    /// `service`; `host` replaces each server's host (one principal for the whole ensemble).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = zkr_connection::ZkClient::builder("10.0.0.7:2181")
    ///     .sasl_gssapi_principal("zookeeper", Some("zk.example.com"));
    /// # let _ = builder;
    /// ```
    #[cfg(feature = "sasl-gssapi")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sasl-gssapi")))]
    pub fn sasl_gssapi_principal(mut self, service: &str, host: Option<&str>) -> Self {
        let target = crate::session::kerberos::GssapiTarget {
            service: service.to_owned(),
            host: host.map(str::to_owned),
        };
        self.config.sasl = Some(target.options());
        self.config.gssapi = Some(target);
        self
    }

    /// The ensemble tracker (Curator's `EnsembleTracker`, on by default as there): the manager
    /// follows `/zookeeper/config` and connects to the servers it lists, so that a client
    /// started with the old hosts keeps working after a reconfiguration replaced them. New
    /// sessions use the new list; a session whose connection drops while all its hosts have
    /// left the ensemble is re-attached on the new ones (same session: ephemeral nodes and locks
    /// survive). Servers whose configuration names no client addresses (a static
    /// `clientPort`, 3.4) leave the list as given. Turn it off to stay on the connect string's
    /// hosts, for example behind a proxy or a load balancer the configuration does not name.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = zkr_connection::ZkClient::builder("zk-vip.internal:2181").ensemble_tracker(false);
    /// # let _ = builder;
    /// ```
    pub fn ensemble_tracker(mut self, on: bool) -> Self {
        self.config.ensemble_tracker = on;
        self
    }

    /// The name of this manager in its metrics: the `client` label of every figure the
    /// connection manager records (`zkr_session_state`, `zkr_requests_total`, ...), so that two
    /// managers in one process do not overwrite each other's series. Without a name, managers
    /// are numbered in the order they are built: `"1"`, `"2"`, ... Keep names few and fixed
    /// (one per role, such as `"orders"`): each is a series of its own.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = zkr_connection::ZkClient::builder("zk1:2181").name("orders");
    /// # let _ = builder;
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.config.name = Arc::from(name.into());
        self
    }

    /// Whether the recipes built on this manager label their size figures with their path:
    /// `zkr_cache_nodes` (a cache's root) and `zkr_queue_items` (a queue's path). Off by
    /// default, as an application's paths can be many and each is a series of its own: the
    /// figures are then the process's totals. Turn it on when the caches and queues are few
    /// and fixed. (Elections are always labelled with their path: `zkr_leader`.)
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = zkr_connection::ZkClient::builder("zk1:2181").metrics_path_labels(true);
    /// # let _ = builder;
    /// ```
    pub fn metrics_path_labels(mut self, on: bool) -> Self {
        self.config.metrics_path_labels = on;
        self
    }

    /// A remedy for the server stall of ZooKeeper 3.6.0-3.6.3, 3.7.0-3.7.1 and 3.8.0
    /// ([ZOOKEEPER-4537](https://issues.apache.org/jira/browse/ZOOKEEPER-4537)): on an
    /// ensemble, a follower may hold a reply until the session's next packet arrives, which
    /// can be the next ping, seconds later. When an operation sent through the retry loop
    /// ([`ZkClient::retry`] and every recipe call built on it) has waited `after` for its
    /// reply and no reply at all came meanwhile, one cheap read (`exists /zookeeper`) goes out
    /// on the same session, and another every `after` while the stall lasts; one per `after`
    /// for the whole manager, however many operations wait. A watchdog per connection looks
    /// every `after / 2` (the operations only count themselves), so the nudge goes out between
    /// `after` and `1.5 * after` into the wait. `None` turns it off.
    ///
    /// On by default, after 500 ms: measured on Debian's 3.8.0 (`benches/src/bin/zk-stall.rs`,
    /// docs/reliability.md) with a timer per operation, every stall met ended within 16 ms of
    /// its nudge (12 of 12 at 500 ms; none over 213 ms at 200 ms), against stalls of up to
    /// 1.97 s without it (25 in 330,000 cycles), for 26 extra reads in 338,000 cycles. On a
    /// server without the bug a nudge goes out only when every reply is already 500 ms late.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let builder = zkr_connection::ZkClient::builder("zk1:2181").stall_nudge(Some(Duration::from_secs(1)));
    /// # let _ = builder;
    /// ```
    pub fn stall_nudge(mut self, after: Option<Duration>) -> Self {
        self.config.stall_nudge = after;
        self
    }

    /// The session timeout to ask the server for. Defaults to 60 s (Curator's default); the
    /// server clamps it to its `minSessionTimeout`..`maxSessionTimeout`.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.config.session_timeout = timeout;
        self
    }

    /// How long a connection attempt, and an operation waiting for a connection, may take.
    /// Defaults to 15 s (Curator's default).
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.config.connection_timeout = timeout;
        self
    }

    /// The retry policy of [`ZkClient::retry`] and every recipe. Defaults to
    /// `ExponentialBackoffRetry(1 s, 3)`.
    pub fn retry_policy(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.config.retry_policy = Arc::new(policy);
        self
    }

    /// A namespace (for example `"app"` or `"app/env"`, no leading slash): every path is
    /// relative to `/<namespace>`, which is created (persistent) when missing. Defaults to none.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.config.namespace = Some(namespace.into());
        self
    }

    /// Curator's `enableCompression()` with its default `GzipCompressionProvider`: the
    /// framework calls compress the data they write ([`create_node`](ZkClient::create_node),
    /// [`set_data`](ZkClient::set_data)) and decompress what they read
    /// ([`get_data`](ZkClient::get_data)) as gzip, the format Curator reads and writes. The
    /// recipes' helpers ([`create`](ZkClient::create), [`create_if_absent`](ZkClient::create_if_absent),
    /// [`create_with_ttl`](ZkClient::create_with_ttl)) and the recipes store data as given
    /// (`zkr_recipes::config::Gzip` and the caches' `compressed` flag read Curator's
    /// compressed values). Defaults to false.
    pub fn compression(mut self, enabled: bool) -> Self {
        self.config.compression = enabled;
        self
    }

    /// The most one node's gzip data may inflate to, in bytes, wherever this client
    /// decompresses: [`get_data`](ZkClient::get_data) with [`compression`](Self::compression)
    /// on, and the caches built on it. More is refused with [`Error::DecompressedTooLarge`]
    /// once `max` bytes are out, so a small node cannot inflate to gigabytes in memory (a gzip
    /// bomb). Defaults to [`DEFAULT_MAX_DECOMPRESSED_LEN`](crate::compression::DEFAULT_MAX_DECOMPRESSED_LEN)
    /// (16 MiB: sixteen times the most a node holds); must be above zero.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = zkr_connection::ZkClient::builder("zk1:2181").compression(true).max_decompressed_len(64 << 20);
    /// # let _ = builder;
    /// ```
    pub fn max_decompressed_len(mut self, max: usize) -> Self {
        self.config.max_decompressed_len = max;
        self
    }

    /// Adds an auth entry (`scheme`, bytes), applied to every session, including the ones built
    /// after an expiry. Defaults to none.
    pub fn auth(mut self, scheme: impl Into<String>, auth: impl Into<Vec<u8>>) -> Self {
        self.config.auth.push((scheme.into(), auth.into()));
        self
    }

    /// Adds a `digest` auth entry for `user:password`.
    pub fn digest_auth(self, user: &str, password: &str) -> Self {
        self.auth("digest", format!("{user}:{password}").into_bytes())
    }

    /// The ACL provider for created nodes. Defaults to [`OpenAclProvider`].
    pub fn acl_provider(mut self, provider: impl AclProvider + 'static) -> Self {
        self.config.acl_provider = Arc::new(provider);
        self
    }

    /// Creates every node creator-only ([`CreatorAllAclProvider`]); needs an auth entry.
    pub fn creator_only_acl(self) -> Self {
        self.acl_provider(CreatorAllAclProvider)
    }

    /// Allows read-only sessions on servers partitioned from the quorum (state
    /// [`ReadOnly`](crate::ConnectionState::ReadOnly)). Defaults to false.
    pub fn can_be_read_only(mut self, allowed: bool) -> Self {
        self.config.can_be_read_only = allowed;
        self
    }

    /// Which connection states recipes treat as losing a lock or leadership. Defaults to
    /// [`StandardConnectionStateErrorPolicy`] (Suspended and Lost).
    pub fn error_policy(mut self, policy: impl ConnectionStateErrorPolicy + 'static) -> Self {
        self.config.error_policy = Arc::new(policy);
        self
    }

    /// Connects over TLS with these options (every host uses TLS; there is no fallback to
    /// plain text). Prefer [`tls_trusting`](Self::tls_trusting) when a CA is all you need: it
    /// also names the cause when the first connection fails.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, options: zookeeper_client::TlsOptions) -> Self {
        self.config.tls = Some(options);
        self.config.tls_ca_pem = None;
        self.config.tls_identity_pem = None;
        self
    }

    /// With [`tls_trusting`](Self::tls_trusting): presents this client certificate and its
    /// private key (PEM) to servers that ask for one (mutual TLS, ZooKeeper's
    /// `ssl.clientAuth=need`; the server then knows the client as `x509:<subject>` in ACLs).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(ca_pem: &str, cert_pem: &str, key_pem: &str) -> zkr_connection::Result<()> {
    /// let zk = zkr_connection::ZkClient::builder("zk1.internal:2281")
    ///     .tls_trusting(ca_pem)
    ///     .tls_identity(cert_pem, key_pem)
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls_identity(mut self, cert_pem: impl Into<String>, key_pem: impl Into<String>) -> Self {
        self.config.tls_identity_pem = Some((cert_pem.into(), key_pem.into()));
        self
    }

    /// Connects over TLS, trusting the CA certificates in `ca_pem` (and no others); every host
    /// uses TLS, with no fallback to plain text. When no session can be established,
    /// [`connect`](Self::connect) repeats the handshake to say why: [`Error::Tls`] with, for
    /// example, rustls' `UnknownIssuer` or `NotValidForName`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(ca_pem: &str) -> zkr_connection::Result<()> {
    /// let zk = zkr_connection::ZkClient::builder("zk1.internal:2281,zk2.internal:2281")
    ///     .tls_trusting(ca_pem)
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls_trusting(mut self, ca_pem: impl Into<String>) -> Self {
        self.config.tls_ca_pem = Some(ca_pem.into());
        self.config.tls = None;
        self
    }

    /// Validates the settings and starts the manager, which connects in the background
    /// (Curator's `build()` then `start()`): the handle is there at once, and requests wait for
    /// a session. Use [`connect`](Self::connect) to also wait for the first session.
    ///
    /// # Errors
    /// [`Error::InvalidConnectString`], [`Error::InvalidSetting`] or [`Error::InvalidPath`] (a
    /// bad chroot or namespace); [`Error::InvalidSetting`] too when polled outside a tokio
    /// runtime (the manager is a task).
    ///
    /// # Cancel safety
    /// Cancel safe: it awaits nothing, so a future dropped before it is polled starts nothing.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> zkr_connection::Result<()> {
    /// let zk = zkr_connection::ZkClient::builder("zk1:2181,zk2:2181").name("orders").start().await?;
    /// zk.wait_connected(std::time::Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(self) -> Result<ZkClient> {
        self.launch()
    }

    /// [`start`](Self::start)'s work, for [`connect`](Self::connect) too.
    fn launch(mut self) -> Result<ZkClient> {
        validate(&self.config)?;
        if self.config.name.is_empty() {
            self.config.name = crate::session::telemetry::default_name();
        }
        crate::session::telemetry::build_info();
        #[cfg(feature = "tls")]
        let config = with_trusted_ca(self.config)?;
        #[cfg(not(feature = "tls"))]
        let config = self.config;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::InvalidSetting {
            setting: "runtime",
            reason: "a ZkClient must be built inside a tokio runtime".into(),
        })?;
        Ok(ZkClient::start(config, &runtime))
    }

    /// [`start`](Self::start), then waits up to the connection timeout for the first session.
    ///
    /// # Errors
    /// As [`start`](Self::start), and [`Error::ConnectTimeout`] (with the last connection error)
    /// when no session is established in time; instead [`Error::Tls`] or [`Error::Sasl`] when a
    /// TLS handshake or a Kerberos login of its own names the cause; [`Error::AuthFailed`] at
    /// once when the servers refuse the credentials.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future drops the manager, which stops connecting.
    pub async fn connect(self) -> Result<ZkClient> {
        let timeout = self.config.connection_timeout;
        let zk = self.launch()?;
        match zk.wait_connected(timeout).await {
            Ok(()) => Ok(zk),
            Err(error) => {
                zk.close().await;
                Err(error)
            }
        }
    }
}

/// Turns the PEMs of [`ZkClientBuilder::tls_trusting`] and [`ZkClientBuilder::tls_identity`]
/// into `zookeeper-client`'s TLS options.
#[cfg(feature = "tls")]
fn with_trusted_ca(mut config: Config) -> Result<Config> {
    if let Some(pem) = &config.tls_ca_pem {
        let options = zookeeper_client::TlsOptions::new().with_pem_ca(pem).map_err(|e| {
            Error::InvalidSetting { setting: "tls_trusting", reason: format!("the CA PEM is unusable: {e}") }
        })?;
        config.tls = Some(options);
    }
    if let Some((cert, key)) = &config.tls_identity_pem {
        let Some(options) = config.tls.take() else {
            return Err(Error::InvalidSetting {
                setting: "tls_identity",
                reason: "a client certificate needs tls_trusting (the CA that signed the servers')".into(),
            });
        };
        let options = options.with_pem_identity(cert, key).map_err(|e| Error::InvalidSetting {
            setting: "tls_identity",
            reason: format!("the client certificate or key PEM is unusable: {e}"),
        })?;
        config.tls = Some(options);
    }
    Ok(config)
}

fn validate(config: &Config) -> Result<()> {
    crate::session::connect_string::validate(&config.connect_string)?;
    if config.session_timeout.is_zero() || config.session_timeout > Duration::from_millis(i32::MAX as u64) {
        return Err(Error::InvalidSetting {
            setting: "session_timeout",
            reason: format!("{:?} is out of range", config.session_timeout),
        });
    }
    if config.connection_timeout.is_zero() {
        return Err(Error::InvalidSetting {
            setting: "connection_timeout",
            reason: "must be above zero".into(),
        });
    }
    if let Some(ns) = &config.namespace {
        validate_namespace(ns)?;
    }
    if config.max_decompressed_len == 0 {
        return Err(Error::InvalidSetting {
            setting: "max_decompressed_len",
            reason: "must be above zero".into(),
        });
    }
    for (scheme, _) in &config.auth {
        if scheme.is_empty() {
            return Err(Error::InvalidSetting { setting: "auth", reason: "empty scheme".into() });
        }
    }
    Ok(())
}

/// A namespace is a relative path: non-empty, no leading slash.
pub(crate) fn validate_namespace(ns: &str) -> Result<()> {
    if ns.is_empty() || ns.starts_with('/') {
        return Err(Error::InvalidSetting {
            setting: "namespace",
            reason: format!("{ns:?} must be non-empty and have no leading slash"),
        });
    }
    path::validate_path(&format!("/{ns}"))
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unusable_ca_pem_is_a_setting_error() {
        let built = ZkClientBuilder::new("127.0.0.1:2181").tls_trusting("not a certificate").start().await;
        assert!(
            matches!(built, Err(Error::InvalidSetting { setting: "tls_trusting", .. })),
            "{:?}",
            built.err()
        );
    }

    #[tokio::test]
    async fn a_client_certificate_needs_a_ca_and_a_usable_pem() {
        let alone = ZkClientBuilder::new("127.0.0.1:2181").tls_identity("cert", "key").start().await;
        assert!(
            matches!(alone, Err(Error::InvalidSetting { setting: "tls_identity", .. })),
            "{:?}",
            alone.err()
        );
        let dir = tempfile::tempdir().unwrap();
        let certs = zkr_testing::TestCertificates::for_loopback(dir.path()).unwrap();
        let garbled = ZkClientBuilder::new("127.0.0.1:2181")
            .tls_trusting(certs.ca_pem())
            .tls_identity("cert", "key")
            .start()
            .await;
        assert!(
            matches!(garbled, Err(Error::InvalidSetting { setting: "tls_identity", .. })),
            "{:?}",
            garbled.err()
        );
    }
}
