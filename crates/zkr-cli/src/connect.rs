//! The connection options of the subcommands that talk to ZooKeeper, and argument parsers
//! they share.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use zkr_connection::{
    ConnectionStateErrorPolicy, StandardConnectionStateErrorPolicy, ZkClient, ZkClientBuilder,
};

/// How to reach ZooKeeper: global options, given before the subcommand or after its name
/// (`zkr --connect zk1:2181 lock /x -- cmd` or `zkr lock --connect zk1:2181 /x -- cmd`), as
/// etcdctl, kubectl and consul users write them. `server` and `demo` run their own ZooKeeper
/// and ignore them.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Connection")]
pub(crate) struct ConnectArgs {
    /// ZooKeeper hosts, `host[:port][,host[:port]...][/chroot]` (port 2181 when none is given).
    /// zkr gives up at once (exit 7) when every host refuses the connection or is no ZooKeeper
    /// server.
    #[arg(long = "connect", env = "ZK_CONNECT", default_value = "127.0.0.1:2181", global = true)]
    pub(crate) connect: String,
    /// A namespace: every path is relative to /NAMESPACE.
    #[arg(long, global = true)]
    pub(crate) namespace: Option<String>,
    /// Session timeout (for example 10s, 1m).
    #[arg(long, default_value = "30s", value_parser = parse_duration, global = true)]
    pub(crate) session_timeout: Duration,
    /// How long to wait for a first session before giving up (exit 7); `lock --timeout` bounds
    /// it too.
    #[arg(long, default_value = "15s", value_parser = parse_positive_duration, global = true)]
    pub(crate) connect_timeout: Duration,
    /// Digest auth, `digest:USER:PASS`.
    #[arg(long, env = "ZKR_AUTH", global = true, hide_env_values = true)]
    pub(crate) auth: Option<String>,
    #[command(flatten)]
    pub(crate) secure: SecureArgs,
}

/// TLS and SASL: how a secured ensemble is reached. Every flag has an environment variable, so
/// that a password or a key path stays out of `ps` and shell history.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Security")]
pub(crate) struct SecureArgs {
    /// Connect over TLS, trusting the certificate authority in this PEM file (the servers'
    /// `secureClientPort`).
    #[arg(long, env = "ZKR_TLS_CA", value_name = "PEM_FILE", global = true)]
    tls_ca: Option<PathBuf>,
    /// A client certificate (PEM file) for servers that ask for one (`ssl.clientAuth=need`);
    /// needs --tls-key and --tls-ca.
    #[arg(long, env = "ZKR_TLS_CERT", value_name = "PEM_FILE", requires = "tls_key", global = true)]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM file).
    #[arg(long, env = "ZKR_TLS_KEY", value_name = "PEM_FILE", requires = "tls_cert", global = true)]
    tls_key: Option<PathBuf>,
    /// SASL: `digest-md5` (with --sasl-user and ZKR_SASL_PASSWORD) or `gssapi` (Kerberos, with
    /// the ticket `kinit` left in the credential cache, or KRB5CCNAME's).
    #[arg(long, env = "ZKR_SASL", value_enum, global = true)]
    sasl: Option<SaslMechanism>,
    /// The SASL DIGEST-MD5 user (the server's JAAS `user_<name>`).
    #[arg(long, env = "ZKR_SASL_USER", global = true)]
    sasl_user: Option<String>,
    /// The SASL DIGEST-MD5 password; prefer the environment variable (a command line shows in
    /// `ps`).
    #[arg(long, env = "ZKR_SASL_PASSWORD", global = true, hide_env_values = true)]
    sasl_password: Option<String>,
    /// Kerberos: the service part of the servers' principal (`zookeeper/<host>@REALM`).
    #[arg(long, env = "ZKR_SASL_SERVICE", default_value = "zookeeper", global = true)]
    sasl_service: String,
    /// Kerberos: the host part of the servers' principal; defaults to each server's host as
    /// the connect string names it.
    #[arg(long, env = "ZKR_SASL_HOST", global = true)]
    sasl_host: Option<String>,
}

/// A SASL mechanism of `--sasl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SaslMechanism {
    /// DIGEST-MD5: a user and password from the server's JAAS configuration.
    #[value(name = "digest-md5")]
    DigestMd5,
    /// GSSAPI: Kerberos.
    Gssapi,
}

impl SecureArgs {
    /// Applies the TLS and SASL flags to `builder`.
    fn apply(&self, mut builder: ZkClientBuilder) -> anyhow::Result<ZkClientBuilder> {
        if let Some(ca) = &self.tls_ca {
            builder = builder.tls_trusting(read_pem(ca, "--tls-ca")?);
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            if self.tls_ca.is_none() {
                return Err(usage(
                    "--tls-cert needs --tls-ca (the authority that signed the servers' certificates)",
                ));
            }
            builder = builder.tls_identity(read_pem(cert, "--tls-cert")?, read_pem(key, "--tls-key")?);
        }
        match self.sasl {
            None if self.sasl_user.is_some() => Err(usage("--sasl-user needs --sasl digest-md5")),
            None => Ok(builder),
            Some(SaslMechanism::DigestMd5) => {
                let (Some(user), Some(password)) = (&self.sasl_user, &self.sasl_password) else {
                    return Err(usage(
                        "--sasl digest-md5 needs --sasl-user and ZKR_SASL_PASSWORD (or --sasl-password)",
                    ));
                };
                Ok(builder.sasl_digest_md5(user, password))
            }
            Some(SaslMechanism::Gssapi) => self.kerberos(builder),
        }
    }

    #[cfg(feature = "kerberos")]
    fn kerberos(&self, builder: ZkClientBuilder) -> anyhow::Result<ZkClientBuilder> {
        Ok(builder.sasl_gssapi_principal(&self.sasl_service, self.sasl_host.as_deref()))
    }

    #[cfg(not(feature = "kerberos"))]
    fn kerberos(&self, _builder: ZkClientBuilder) -> anyhow::Result<ZkClientBuilder> {
        let _ = (&self.sasl_service, &self.sasl_host);
        Err(usage(
            "this zkr was built without Kerberos: build it with `cargo install zkr-cli --features kerberos` \
             (needs the system's GSSAPI library: Debian's libkrb5-dev, libclang-dev and pkg-config)",
        ))
    }
}

fn read_pem(path: &std::path::Path, flag: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).map_err(|e| usage(&format!("{flag} {}: {e}", path.display())))
}

fn usage(message: &str) -> anyhow::Error {
    crate::exit::Failure::error(crate::exit::Exit::Usage, message.to_owned())
}

/// Parses `10s`, `500ms`, `2m`, `1h 30m`.
pub(crate) fn parse_duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value)
        .map_err(|e| format!("{value:?} is not a duration (like 10s or 500ms): {e}"))
}

/// As [`parse_duration`], refusing zero.
pub(crate) fn parse_positive_duration(value: &str) -> Result<Duration, String> {
    match parse_duration(value)? {
        d if d.is_zero() => Err(format!("{value:?} must be above zero")),
        d => Ok(d),
    }
}

/// A ZooKeeper path argument, checked before anything connects (a bad one is a usage error).
pub(crate) fn parse_path(value: &str) -> Result<String, String> {
    zkr_connection::path::check_path(value).map_err(|e| format!("{value:?}: {e}"))?;
    Ok(value.to_owned())
}

impl ConnectArgs {
    /// Connects with the standard error policy, waiting at most `--connect-timeout`.
    pub(crate) async fn connect(&self) -> anyhow::Result<ZkClient> {
        self.connect_with(StandardConnectionStateErrorPolicy, None).await
    }

    /// Connects with `policy` (what counts as losing a lock), waiting for the first session at
    /// most `--connect-timeout` or `limit`, whichever is shorter.
    pub(crate) async fn connect_with(
        &self,
        policy: impl ConnectionStateErrorPolicy + 'static,
        limit: Option<Duration>,
    ) -> anyhow::Result<ZkClient> {
        let mut builder = ZkClient::builder(&self.connect)
            .session_timeout(self.session_timeout)
            .connection_timeout(self.connect_timeout)
            .error_policy(policy);
        if let Some(ns) = &self.namespace {
            builder = builder.namespace(ns);
        }
        builder = self.secure.apply(builder)?;
        if let Some(auth) = &self.auth {
            let (scheme, credentials) = auth.split_once(':').ok_or_else(|| bad_auth("digest:USER:PASS"))?;
            if scheme != "digest" {
                return Err(bad_auth(&format!("the digest scheme, not {scheme:?}")));
            }
            builder = builder.auth("digest", credentials.as_bytes());
        }
        let zk = builder.start().await?;
        let wait = limit.map_or(self.connect_timeout, |l| l.min(self.connect_timeout));
        // Every host refusing (or not ZooKeeper) is the answer: no use waiting it out.
        if let Err(e) = zk.wait_connected_or_refused(wait).await {
            zk.close().await;
            return Err(e).with_context(|| format!("connecting to ZooKeeper at {}", self.connect));
        }
        Ok(zk)
    }
}

fn bad_auth(wanted: &str) -> anyhow::Error {
    usage(&format!("--auth takes {wanted}"))
}
