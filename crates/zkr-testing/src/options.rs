//! Server settings shared by [`TestingServer`](crate::TestingServer) and
//! [`TestingCluster`](crate::TestingCluster).

use std::fmt::Write as _;
use std::time::Duration;

/// The environment variable whose options (separated by white space) are given to every JVM
/// that zkr-testing starts: servers, ensembles' members and Curator peers.
///
/// `make test` sets `-XX:TieredStopAtLevel=1` (scripts/run-tests.py): its JVMs live seconds,
/// and the optimizing compiler's work would not pay for itself in them. Benchmarks leave it
/// unset, so that their servers run as in production.
///
/// # Examples
///
/// ```
/// assert_eq!(zkr_testing::JVM_OPTIONS_ENV, "ZKR_JVM_OPTIONS");
/// ```
pub const JVM_OPTIONS_ENV: &str = "ZKR_JVM_OPTIONS";

/// The options of [`JVM_OPTIONS_ENV`], in order.
pub(crate) fn jvm_options_from_env() -> Vec<String> {
    std::env::var(JVM_OPTIONS_ENV).unwrap_or_default().split_whitespace().map(str::to_owned).collect()
}

/// Settings for test servers. The defaults are realistic (fsync on, default limits) except where
/// a test harness needs otherwise; each such change is listed here.
///
/// | setting | value | why |
/// |---|---|---|
/// | `tickTime` | 500 ms (ZooKeeper's sample config: 2000) | elections and session expiry in tests take a fraction of the time; the lowest session timeout becomes 1 s |
/// | `maxSessionTimeout` | 60 s (default would be 20 ticks = 10 s) | clients keep the session timeouts they ask for, as on a production ensemble with `tickTime=2000`|
/// | `forceSync` | `yes` (the default) | durability as in production; benchmarks measure the real write path |
/// | `preAllocSize` | 4 MiB (default 64 MiB) | smaller transaction-log preallocation; fewer bytes zeroed per start |
/// | `4lw.commands.whitelist` | `srvr,mntr,cons,stat,ruok,conf,wchs,wchc,dump,envi,crst,srst` | tests and benchmarks read server-side counters |
/// | `admin.enableServer` | `false` | no Jetty admin server, no fixed port 8080 |
/// | `clientPortAddress` | `127.0.0.1` | loopback only |
/// | `zookeeper.extendedTypesEnabled` | `true` | TTL nodes can be created |
/// | JVM | `-Xmx512m -XX:+UseSerialGC` | a 2-core machine runs several servers and the tests |
/// | JVM options | those of [`JVM_OPTIONS_ENV`] (none unless set) | `make test` runs its servers and Curator peers with the JIT's first tier only |
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_testing::Result<()> {
/// use std::time::Duration;
/// use zkr_testing::{ServerOptions, TestingServer};
///
/// let options = ServerOptions::default().container_check_interval(Duration::from_millis(100));
/// let server = TestingServer::with_options(options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "options do nothing until a server is started with them"]
pub struct ServerOptions {
    pub(crate) tick_time: Duration,
    pub(crate) max_session_timeout: Duration,
    pub(crate) container_check_interval: Option<Duration>,
    pub(crate) start_timeout: Duration,
    pub(crate) extra_config: Vec<(String, String)>,
    pub(crate) jvm_options: Vec<String>,
    pub(crate) secure: Option<crate::tls::TestCertificates>,
    pub(crate) ttl_nodes: bool,
    pub(crate) partitionable: bool,
    pub(crate) network_namespaces: bool,
    pub(crate) client_port: Option<u16>,
    pub(crate) release: Option<crate::Release>,
    pub(crate) sasl_users: Vec<(String, String)>,
    pub(crate) client_certificates_required: bool,
    pub(crate) kerberos: Option<crate::kerberos::ServerKerberos>,
    pub(crate) reconfigurable: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            tick_time: Duration::from_millis(500),
            max_session_timeout: Duration::from_secs(60),
            container_check_interval: None,
            start_timeout: crate::Timing::from_env().multiple(Duration::from_secs(60)),
            extra_config: Vec::new(),
            secure: None,
            jvm_options: Vec::new(),
            ttl_nodes: true,
            partitionable: false,
            network_namespaces: false,
            client_port: None,
            release: None,
            sasl_users: Vec::new(),
            client_certificates_required: false,
            kerberos: None,
            reconfigurable: false,
        }
    }
}

impl ServerOptions {
    /// The server's `tickTime`. Defaults to 500 ms. The smallest session timeout a client can
    /// get is two ticks.
    pub fn tick_time(mut self, tick: Duration) -> Self {
        self.tick_time = tick;
        self
    }

    /// The largest session timeout the server grants. Defaults to 60 s.
    pub fn max_session_timeout(mut self, timeout: Duration) -> Self {
        self.max_session_timeout = timeout;
        self
    }

    /// How often the server deletes empty container nodes (`znode.container.checkIntervalMs`).
    /// Defaults to the server's own default (60 s).
    pub fn container_check_interval(mut self, interval: Duration) -> Self {
        self.container_check_interval = Some(interval);
        self
    }

    /// How long a start or restart may take before it fails. Defaults to 60 s times the
    /// [`Timing`](crate::Timing) multiplier.
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Whether the server accepts TTL nodes (`zookeeper.extendedTypesEnabled`). Defaults to
    /// `true`; ZooKeeper's own default is `false`, which is what a test of the error a
    /// disabled server gives needs.
    pub fn ttl_nodes(mut self, enabled: bool) -> Self {
        self.ttl_nodes = enabled;
        self
    }

    /// For a [`TestingCluster`](crate::TestingCluster): every quorum and election link between
    /// two servers goes through a [`FaultProxy`](crate::FaultProxy) of the test's runtime, so
    /// that [`TestingCluster::isolate`](crate::TestingCluster::isolate) can cut a server off
    /// from the others while its clients stay connected to it (the partition Jepsen tested).
    /// Defaults to `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// let options = zkr_testing::ServerOptions::default().partitionable(true);
    /// # let _ = options;
    /// ```
    pub fn partitionable(mut self, partitionable: bool) -> Self {
        self.partitionable = partitionable;
        self
    }

    /// For a [`TestingCluster`](crate::TestingCluster): every server runs in a network
    /// namespace of its own (`10.a.b.N` on a bridge with the test's namespace, which reaches
    /// them there), so that [`TestingCluster::isolate`](crate::TestingCluster::isolate) cuts a
    /// server off from the others in the kernel: nftables rules in its namespace drop every
    /// packet between it and them, while its clients stay connected. A real partition: TCP
    /// sees silence and retransmits, as across a failed switch, where the proxies of
    /// [`partitionable`](Self::partitionable) stop relaying. Needs root, iproute2 and
    /// nftables; the namespaces and the bridge go when the cluster is dropped (or, after a
    /// crash, at the next cluster's start). Implies `partitionable`. Defaults to `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// let options = zkr_testing::ServerOptions::default().network_namespaces(true);
    /// # let _ = options;
    /// ```
    pub fn network_namespaces(mut self, namespaces: bool) -> Self {
        self.network_namespaces = namespaces;
        self
    }

    /// The client port: for a [`TestingServer`](crate::TestingServer), this port (2181 for a
    /// local development server whose address every snippet uses); for a
    /// [`TestingCluster`](crate::TestingCluster), the first server's, the others' following it.
    /// Defaults to a free port (what tests want: they run at once).
    ///
    /// # Examples
    ///
    /// ```
    /// let options = zkr_testing::ServerOptions::default().client_port(2181);
    /// # let _ = options;
    /// ```
    pub fn client_port(mut self, port: u16) -> Self {
        self.client_port = Some(port);
        self
    }

    /// The server release to run. Defaults to the run's ([`Release::from_env`](crate::Release::from_env):
    /// `ZKR_ZK_VERSION`, else [`DEFAULT_RELEASE`](crate::DEFAULT_RELEASE)).
    ///
    /// # Examples
    ///
    /// ```
    /// let options = zkr_testing::ServerOptions::default().release(zkr_testing::Release::debian());
    /// # let _ = options;
    /// ```
    pub fn release(mut self, release: crate::Release) -> Self {
        self.release = Some(release);
        self
    }

    /// Accepts SASL DIGEST-MD5 logins of `user` with `password` (a JAAS `Server` section with
    /// `DigestLoginModule`, and the `SASLAuthenticationProvider`); call once per user. A client
    /// that authenticates so is `sasl:<user>` in ACLs. Clients without SASL still connect.
    ///
    /// # Examples
    ///
    /// ```
    /// let options = zkr_testing::ServerOptions::default().sasl_digest_user("billing", "s3cret");
    /// # let _ = options;
    /// ```
    pub fn sasl_digest_user(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.sasl_users.push((user.into(), password.into()));
        self
    }

    /// Accepts SASL GSSAPI (Kerberos) logins from `realm`'s principals, as the servers'
    /// principal `zookeeper/localhost@REALM` with its keytab (a JAAS `Server` section with
    /// `Krb5LoginModule`). A client that authenticates as `alice@REALM` is `sasl:alice` in ACLs
    /// (`kerberos.removeRealmFromPrincipal`, as most deployments run it). Clients connect to
    /// `localhost:PORT`, the host of the servers' principal. Clients without SASL still connect.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let realm = zkr_testing::KerberosRealm::start("ZKR.TEST").unwrap();
    /// let options = zkr_testing::ServerOptions::default().kerberos(&realm);
    /// # let _ = options;
    /// ```
    pub fn kerberos(mut self, realm: &crate::KerberosRealm) -> Self {
        self.kerberos = Some(crate::kerberos::ServerKerberos::of(realm));
        self
    }

    /// A cluster whose ensemble can be changed while it runs (dynamic reconfiguration, 3.5+):
    /// `reconfigEnabled=true`, `standaloneEnabled=false`, and each `server.N` line with its
    /// client address, so that `/zookeeper/config` names the client ports. Any client may
    /// reconfigure (`skipACL=yes`: ACLs are not enforced, a test server only). See
    /// [`TestingCluster::add_servers`](crate::TestingCluster::add_servers).
    ///
    /// ```
    /// let options = zkr_testing::ServerOptions::default().reconfigurable();
    /// # let _ = options;
    /// ```
    pub fn reconfigurable(mut self) -> Self {
        self.reconfigurable = true;
        self
    }

    /// The JAAS `Server` section of the SASL logins these options accept, if any.
    pub(crate) fn jaas_config(&self) -> Option<String> {
        if self.sasl_users.is_empty() && self.kerberos.is_none() {
            return None;
        }
        let mut jaas = String::from("Server {");
        if !self.sasl_users.is_empty() {
            jaas.push_str("\n  org.apache.zookeeper.server.auth.DigestLoginModule required");
            for (user, password) in &self.sasl_users {
                let _ = write!(
                    jaas,
                    "\n  user_{user}=\"{}\"",
                    password.replace('\\', "\\\\").replace('"', "\\\"")
                );
            }
            jaas.push(';');
        }
        if let Some(kerberos) = &self.kerberos {
            jaas.push_str(&kerberos.login_module());
        }
        jaas.push_str("\n};\n");
        Some(jaas)
    }

    /// The installation of the release these options run.
    pub(crate) fn installation(&self) -> crate::Result<crate::Installation> {
        match &self.release {
            Some(release) => crate::Installation::for_release(release),
            None => crate::Installation::detect(),
        }
    }

    /// Adds a `key=value` line to `zoo.cfg` (later lines win over the defaults).
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_config.push((key.into(), value.into()));
        self
    }

    /// Adds a JVM option (for example a `-D` system property).
    pub fn jvm_option(mut self, option: impl Into<String>) -> Self {
        self.jvm_options.push(option.into());
        self
    }

    /// Also serves TLS on a second client port (`secureClientPort`, Netty), with `certs`'
    /// server certificate; clients are not asked for certificates (`ssl.clientAuth=none`). The
    /// plain port stays open for the harness's own checks.
    /// [`TestingServer::secure_connect_string`](crate::TestingServer::secure_connect_string)
    /// gives the address.
    pub fn secure_client(mut self, certs: &crate::tls::TestCertificates) -> Self {
        self.secure = Some(certs.clone());
        self
    }

    /// With [`secure_client`](Self::secure_client): the secure port asks every client for a
    /// certificate the authority signed (`ssl.clientAuth=need`, mutual TLS), such as
    /// [`TestCertificates::client_certificate`](crate::TestCertificates::client_certificate).
    ///
    /// ```
    /// let options = zkr_testing::ServerOptions::default().require_client_certificates();
    /// # let _ = options;
    /// ```
    pub fn require_client_certificates(mut self) -> Self {
        self.client_certificates_required = true;
        self
    }

    pub(crate) fn render_config(
        &self,
        data_dir: &std::path::Path,
        (host, client_port): (std::net::Ipv4Addr, u16),
        secure_port: Option<u16>,
        peers: &[Peer],
    ) -> String {
        let mut cfg = String::new();
        let tick = self.tick_time.as_millis().max(1);
        let _ = writeln!(cfg, "tickTime={tick}");
        let _ = writeln!(cfg, "initLimit=20");
        let _ = writeln!(cfg, "syncLimit=10");
        let _ = writeln!(cfg, "dataDir={}", data_dir.display());
        let _ = writeln!(cfg, "clientPort={client_port}");
        let _ = writeln!(cfg, "clientPortAddress={host}");
        let _ = writeln!(cfg, "minSessionTimeout={}", tick * 2);
        let _ = writeln!(cfg, "maxSessionTimeout={}", self.max_session_timeout.as_millis().max(tick * 2));
        let _ = writeln!(cfg, "maxClientCnxns=0");
        let _ = writeln!(cfg, "admin.enableServer=false");
        let _ = writeln!(
            cfg,
            "4lw.commands.whitelist=srvr,mntr,cons,stat,ruok,conf,wchs,wchc,dump,envi,crst,srst"
        );
        let _ = writeln!(cfg, "forceSync=yes");
        let _ = writeln!(cfg, "preAllocSize=4096");
        for peer in peers {
            let _ =
                write!(cfg, "server.{}={}:{}:{}", peer.id, peer.host, peer.quorum_port, peer.election_port);
            if self.reconfigurable {
                let _ = write!(cfg, ":participant;{}:{}", peer.host, peer.client_port);
            }
            cfg.push('\n');
        }
        if self.reconfigurable {
            cfg.push_str("reconfigEnabled=true\nstandaloneEnabled=false\nskipACL=yes\n");
        }
        if let (Some(certs), Some(port)) = (&self.secure, secure_port) {
            let _ = writeln!(cfg, "secureClientPort={port}");
            let _ = writeln!(cfg, "secureClientPortAddress={host}");
            let _ = writeln!(cfg, "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory");
            let _ = writeln!(cfg, "ssl.keyStore.location={}", certs.keystore().display());
            let _ = writeln!(cfg, "ssl.keyStore.type=PEM");
            let _ = writeln!(cfg, "ssl.trustStore.location={}", certs.truststore().display());
            let _ = writeln!(cfg, "ssl.trustStore.type=PEM");
            let client_auth = if self.client_certificates_required { "need" } else { "none" };
            let _ = writeln!(cfg, "ssl.clientAuth={client_auth}");
        }
        if let Some(kerberos) = &self.kerberos {
            cfg.push_str(&kerberos.zoo_cfg());
        }
        if !self.sasl_users.is_empty() || self.kerberos.is_some() {
            // Unknown zoo.cfg keys become `zookeeper.`-prefixed system properties.
            let _ = writeln!(
                cfg,
                "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
            );
        }
        for (k, v) in &self.extra_config {
            let _ = writeln!(cfg, "{k}={v}");
        }
        cfg
    }

    pub(crate) fn jvm_args(&self) -> Vec<String> {
        let mut args = vec![
            "-Xms32m".to_string(),
            "-Xmx512m".to_string(),
            "-XX:+UseSerialGC".to_string(),
            "-XX:-UsePerfData".to_string(),
            "-Djava.net.preferIPv4Stack=true".to_string(),
            format!("-Dzookeeper.extendedTypesEnabled={}", self.ttl_nodes),
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn".to_string(),
            "-Dorg.slf4j.simpleLogger.showDateTime=true".to_string(),
        ];
        args.extend(jvm_options_from_env());
        if let Some(interval) = self.container_check_interval {
            args.push(format!("-Dznode.container.checkIntervalMs={}", interval.as_millis().max(1)));
        }
        if let Some(kerberos) = &self.kerberos {
            args.push(kerberos.jvm_option());
        }
        args.extend(self.jvm_options.iter().cloned());
        args
    }
}

/// A quorum member's peer ports, for `server.N=` lines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer {
    pub(crate) id: u32,
    /// Where it listens: `127.0.0.1`, or its namespace's address.
    pub(crate) host: std::net::Ipv4Addr,
    pub(crate) client_port: u16,
    pub(crate) quorum_port: u16,
    pub(crate) election_port: u16,
}
