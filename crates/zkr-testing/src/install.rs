//! Finding the ZooKeeper server jars of a release and a Java runtime.

use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::maven;
use crate::release::Release;

/// Debian's `zookeeper` package puts the server jar here; its manifest `Class-Path` names every
/// dependency, so this one entry is a complete class path.
const DEBIAN_ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// A logging backend for the server, so its warnings reach the log file instead of being dropped.
const DEBIAN_SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";
/// Netty jars the secure client port (`NettyServerCnxnFactory`, TLS) needs but the Debian
/// manifest's `Class-Path` leaves out; `libnetty-java`, a dependency of `zookeeper`, has them.
const DEBIAN_NETTY_EXTRAS: [&str; 2] =
    ["/usr/share/java/netty-codec.jar", "/usr/share/java/netty-resolver.jar"];

/// The server's class path from Maven Central: `mvn dependency:build-classpath` over this POM.
const SERVER_POM: (&str, &str) =
    ("zookeeper-server.pom.xml", include_str!("../maven/zookeeper-server.pom.xml"));

/// A located ZooKeeper server installation: the `java` binary, the class path and the release.
///
/// # Examples
///
/// ```no_run
/// let install = zkr_testing::Installation::detect()?;
/// println!("ZooKeeper {} with {}", install.release(), install.java().display());
/// # Ok::<(), zkr_testing::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Installation {
    java: PathBuf,
    classpath: String,
    release: Release,
}

static RESOLVED: Mutex<Vec<Installation>> = Mutex::new(Vec::new());

impl Installation {
    /// Finds the server a run asked for: `ZOOKEEPER_CLASSPATH` if set (a server of your own,
    /// reported as [`DEFAULT_RELEASE`](crate::DEFAULT_RELEASE) unless
    /// [`RELEASE_ENV`](crate::RELEASE_ENV) names it), else the release
    /// [`Release::from_env`] names; and `java` from `JAVA_HOME` or `PATH`.
    ///
    /// # Errors
    /// As [`for_release`](Self::for_release); [`Error::BadRelease`] for a malformed
    /// `ZKR_ZK_VERSION`.
    pub fn detect() -> Result<Self> {
        Self::for_release(&Release::from_env()?)
    }

    /// Finds `release`: Debian's jars for [`Release::debian`], else the release's class path
    /// from Maven Central, resolved with `mvn` on first use and cached (see the crate README).
    /// `ZOOKEEPER_CLASSPATH`, when set, wins over both.
    ///
    /// # Errors
    /// [`Error::ZooKeeperNotFound`] without Debian's package, [`Error::MavenResolve`] when
    /// `mvn` is missing or cannot resolve the release, [`Error::JavaNotFound`].
    pub fn for_release(release: &Release) -> Result<Self> {
        let mut resolved = RESOLVED.lock();
        if let Some(found) = resolved.iter().find(|i| &i.release == release) {
            return Ok(found.clone());
        }
        let classpath = match std::env::var("ZOOKEEPER_CLASSPATH") {
            Ok(cp) if !cp.trim().is_empty() => cp,
            _ if release.is_debian() => debian_classpath()?,
            _ => maven::Resolution {
                name: format!("zookeeper-{release}"),
                pom: SERVER_POM,
                properties: vec![("zk.version", release.version())],
            }
            .classpath()?,
        };
        let install = Installation { java: find_java()?, classpath, release: release.clone() };
        resolved.push(install.clone());
        Ok(install)
    }

    /// The `java` executable.
    pub fn java(&self) -> &Path {
        &self.java
    }

    /// The class path that contains `org.apache.zookeeper.server.*`.
    pub fn classpath(&self) -> &str {
        &self.classpath
    }

    /// The server release.
    pub fn release(&self) -> &Release {
        &self.release
    }
}

fn debian_classpath() -> Result<String> {
    if !Path::new(DEBIAN_ZOOKEEPER_JAR).is_file() {
        return Err(Error::ZooKeeperNotFound {
            detail: format!("ZKR_ZK_VERSION=debian and {DEBIAN_ZOOKEEPER_JAR} does not exist"),
        });
    }
    let mut cp = DEBIAN_ZOOKEEPER_JAR.to_string();
    for jar in std::iter::once(DEBIAN_SLF4J_SIMPLE).chain(DEBIAN_NETTY_EXTRAS) {
        if Path::new(jar).is_file() {
            cp.push(':');
            cp.push_str(jar);
        }
    }
    Ok(cp)
}

pub(crate) fn find_java() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let candidate = PathBuf::from(home).join("bin/java");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join("java");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(Error::JavaNotFound { detail: "no $JAVA_HOME/bin/java and no java on PATH".into() })
}
