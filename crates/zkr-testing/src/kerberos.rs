//! [`KerberosRealm`]: a throw-away MIT Kerberos realm, with its own KDC on a loopback port, for
//! tests of SASL GSSAPI against real servers ([`ServerOptions::kerberos`]).
//!
//! Nothing outside the realm's temporary directory is read or written: the tools are pointed at
//! it through `KRB5_CONFIG` and `KRB5_KDC_PROFILE`, never `/etc/krb5.conf`.
//!
//! [`ServerOptions::kerberos`]: crate::ServerOptions::kerberos

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The host part of the servers' principal, `zookeeper/localhost@REALM`: a Kerberos client
/// names the server by the host its connect string gives, so connect to `localhost:PORT`.
pub const SERVICE_HOST: &str = "localhost";

/// A Kerberos realm made for one test: a database, a KDC (`krb5kdc`) listening on a free
/// loopback port, a keytab for the ZooKeeper servers' principal `zookeeper/localhost@REALM`,
/// and client principals with keytabs and ticket caches on demand. The KDC stops when the realm
/// is dropped.
///
/// A client process finds the realm through `KRB5_CONFIG` ([`krb5_conf`](Self::krb5_conf)) and
/// its ticket through `KRB5CCNAME` ([`kinit`](Self::kinit)).
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_testing::Result<()> {
/// use zkr_testing::{KerberosRealm, ServerOptions, TestingServer};
///
/// let realm = KerberosRealm::start("ZKR.TEST")?;
/// let server = TestingServer::with_options(ServerOptions::default().kerberos(&realm)).await?;
/// let ticket_cache = realm.kinit("alice")?; // KRB5CCNAME for a client that is alice
/// let connect = format!("localhost:{}", server.port());
/// # let _ = (ticket_cache, connect); Ok(()) }
/// ```
#[derive(Debug)]
pub struct KerberosRealm {
    realm: String,
    dir: tempfile::TempDir,
    port: u16,
    kdc: parking_lot::Mutex<Option<Child>>,
}

impl KerberosRealm {
    /// Creates realm `realm` (for example `ZKR.TEST`) in a new temporary directory, with the
    /// servers' principal and keytab, and starts its KDC.
    ///
    /// # Errors
    /// [`Error::KerberosNotFound`] when the MIT tools are not installed; [`Error::Kerberos`]
    /// when one of them fails (with what it printed); [`Error::Io`].
    pub fn start(realm: &str) -> Result<Self> {
        for tool in ["krb5kdc", "kdb5_util", "kadmin.local", "kinit"] {
            if find_tool(tool).is_none() {
                return Err(Error::KerberosNotFound {
                    detail: format!("no `{tool}` in /usr/sbin or on PATH"),
                });
            }
        }
        let dir = tempfile::Builder::new()
            .prefix("zkr-realm-")
            .tempdir()
            .map_err(|e| Error::io("creating the realm's directory", e))?;
        let port = crate::process::free_port()?;
        let this = KerberosRealm { realm: realm.to_owned(), dir, port, kdc: parking_lot::Mutex::new(None) };
        this.write_config()?;
        let db = this.path("principal");
        let stash = this.path("stash");
        this.run("kdb5_util", &["-r", realm, "-d", &db, "-sf", &stash, "-P", "zkr-master", "create", "-s"])?;
        this.admin(&format!("addprinc -randkey {}", this.service_principal()))?;
        this.admin(&format!("ktadd -k {} {}", this.path("service.keytab"), this.service_principal()))?;
        this.start_kdc()?;
        Ok(this)
    }

    /// The realm's name.
    pub fn realm(&self) -> &str {
        &self.realm
    }

    /// The `krb5.conf` that points at this realm's KDC: `KRB5_CONFIG` for a client, and the
    /// servers' `java.security.krb5.conf`.
    pub fn krb5_conf(&self) -> PathBuf {
        self.dir.path().join("krb5.conf")
    }

    /// The servers' principal, `zookeeper/localhost@REALM`.
    pub fn service_principal(&self) -> String {
        format!("zookeeper/{SERVICE_HOST}@{}", self.realm)
    }

    /// The keytab of [`service_principal`](Self::service_principal).
    pub fn service_keytab(&self) -> PathBuf {
        self.dir.path().join("service.keytab")
    }

    /// Adds client principal `name@REALM` (once) and returns its keytab.
    ///
    /// # Errors
    /// [`Error::Kerberos`] when `kadmin.local` fails.
    pub fn principal(&self, name: &str) -> Result<PathBuf> {
        let keytab = self.dir.path().join(format!("{name}.keytab"));
        if !keytab.exists() {
            self.admin(&format!("addprinc -randkey {name}@{}", self.realm))?;
            self.admin(&format!("ktadd -k {} {name}@{}", keytab.display(), self.realm))?;
        }
        Ok(keytab)
    }

    /// Logs client `name` in (adding its principal when new) and returns its ticket cache:
    /// what `KRB5CCNAME` names for a client that is `name`.
    ///
    /// # Errors
    /// [`Error::Kerberos`] when `kinit` fails (for example, the KDC is stopped).
    pub fn kinit(&self, name: &str) -> Result<PathBuf> {
        let keytab = self.principal(name)?;
        let cache = self.dir.path().join(format!("{name}.ccache"));
        let principal = format!("{name}@{}", self.realm);
        let cache_name = format!("FILE:{}", cache.display());
        let keytab = keytab.display().to_string();
        self.run_with("kinit", &["-kt", &keytab, &principal], &[("KRB5CCNAME", &cache_name)])?;
        Ok(cache)
    }

    /// Stops the KDC (a realm whose KDC is unreachable); [`start_kdc`](Self::start_kdc) starts
    /// it again on the same port.
    pub fn stop_kdc(&self) {
        if let Some(mut kdc) = self.kdc.lock().take() {
            let _ = kdc.kill();
            let _ = kdc.wait();
        }
    }

    /// Starts the KDC unless it runs, and waits until it accepts connections.
    ///
    /// # Errors
    /// [`Error::Kerberos`] when it exits or does not listen within 10 s.
    pub fn start_kdc(&self) -> Result<()> {
        let mut kdc = self.kdc.lock();
        if kdc.is_some() {
            return Ok(());
        }
        let log = std::fs::File::create(self.dir.path().join("krb5kdc.out"))
            .map_err(|e| Error::io("creating the KDC's log", e))?;
        let stderr = log.try_clone().map_err(|e| Error::io("creating the KDC's log", e))?;
        let mut child = self
            .command("krb5kdc")
            .args(["-n", "-r", &self.realm])
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .map_err(|e| Error::io("starting krb5kdc", e))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(self.failed("krb5kdc", &status.to_string(), &self.log_tail("krb5kdc.out")));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return Err(self.failed("krb5kdc", "not listening after 10 s", &self.log_tail("kdc.log")));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        *kdc = Some(child);
        Ok(())
    }

    fn write_config(&self) -> Result<()> {
        let (realm, port, dir) = (&self.realm, self.port, self.dir.path().display());
        let krb5 = format!(
            "[libdefaults]\n  default_realm = {realm}\n  dns_lookup_kdc = false\n  dns_lookup_realm = false\n  \
             dns_canonicalize_hostname = false\n  rdns = false\n  udp_preference_limit = 1\n  \
             ticket_lifetime = 1h\n  renew_lifetime = 1d\n  forwardable = false\n\n\
             [realms]\n  {realm} = {{\n    kdc = 127.0.0.1:{port}\n  }}\n\n\
             [domain_realm]\n  {SERVICE_HOST} = {realm}\n"
        );
        let kdc = format!(
            "[kdcdefaults]\n  kdc_listen = 127.0.0.1:{port}\n  kdc_tcp_listen = 127.0.0.1:{port}\n\n\
             [realms]\n  {realm} = {{\n    database_name = {dir}/principal\n    key_stash_file = {dir}/stash\n    \
             acl_file = {dir}/kadm5.acl\n    max_life = 1h\n    max_renewable_life = 1d\n    \
             supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n  }}\n\n\
             [logging]\n  kdc = FILE:{dir}/kdc.log\n  default = FILE:{dir}/krb5-lib.log\n"
        );
        for (name, contents) in [("krb5.conf", krb5), ("kdc.conf", kdc), ("kadm5.acl", String::new())] {
            let path = self.dir.path().join(name);
            std::fs::write(&path, contents)
                .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        }
        Ok(())
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn command(&self, tool: &str) -> Command {
        let mut command = Command::new(find_tool(tool).unwrap_or_else(|| PathBuf::from(tool)));
        command
            .env("KRB5_CONFIG", self.krb5_conf())
            .env("KRB5_KDC_PROFILE", self.dir.path().join("kdc.conf"))
            .env_remove("KRB5CCNAME")
            .env_remove("KRB5_KTNAME")
            .env_remove("KRB5_CLIENT_KTNAME")
            .stdin(Stdio::null());
        command
    }

    fn admin(&self, query: &str) -> Result<()> {
        self.run("kadmin.local", &["-r", &self.realm, "-d", &self.path("principal"), "-q", query])
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<()> {
        self.run_with(tool, args, &[])
    }

    fn run_with(&self, tool: &str, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
        let output = self
            .command(tool)
            .args(args)
            .envs(env.iter().copied())
            .output()
            .map_err(|e| Error::io(format!("running {tool}"), e))?;
        if output.status.success() {
            return Ok(());
        }
        let printed =
            format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        Err(self.failed(tool, &output.status.to_string(), printed.trim()))
    }

    fn failed(&self, tool: &str, status: &str, output: &str) -> Error {
        Error::Kerberos { tool: tool.to_owned(), status: status.to_owned(), output: output.to_owned() }
    }

    fn log_tail(&self, name: &str) -> String {
        crate::process::log_tail(&self.dir.path().join(name), 20)
    }
}

impl Drop for KerberosRealm {
    fn drop(&mut self) {
        self.stop_kdc();
    }
}

/// `tool` in `/usr/sbin` (where Debian puts the KDC's tools, often not on a user's `PATH`) or
/// on `PATH`.
fn find_tool(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    ["/usr/sbin", "/sbin"]
        .iter()
        .map(PathBuf::from)
        .chain(std::env::split_paths(&path))
        .map(|dir| dir.join(tool))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What a server needs of a realm ([`ServerOptions::kerberos`](crate::ServerOptions::kerberos)).
#[derive(Debug, Clone)]
pub(crate) struct ServerKerberos {
    krb5_conf: PathBuf,
    keytab: PathBuf,
    principal: String,
}

impl ServerKerberos {
    pub(crate) fn of(realm: &KerberosRealm) -> Self {
        ServerKerberos {
            krb5_conf: realm.krb5_conf(),
            keytab: realm.service_keytab(),
            principal: realm.service_principal(),
        }
    }

    /// The `Krb5LoginModule` entry of the JAAS `Server` section. `isInitiator=false`: accepting
    /// needs only the keytab, so the server starts even while the KDC is down.
    pub(crate) fn login_module(&self) -> String {
        format!(
            "\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  keyTab=\"{}\"\n  \
             storeKey=true\n  useTicketCache=false\n  isInitiator=false\n  principal=\"{}\";",
            self.keytab.display(),
            self.principal
        )
    }

    /// The `zoo.cfg` lines: ACL ids are the principal's first part (`sasl:alice`).
    pub(crate) fn zoo_cfg(&self) -> String {
        "kerberos.removeHostFromPrincipal=true\nkerberos.removeRealmFromPrincipal=true\n".to_owned()
    }

    /// The JVM option that points the server at the realm.
    pub(crate) fn jvm_option(&self) -> String {
        format!("-Djava.security.krb5.conf={}", self.krb5_conf.display())
    }
}
