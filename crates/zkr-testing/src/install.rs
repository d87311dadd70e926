//! Finding the ZooKeeper server jars and a Java runtime.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The command that installs everything zkr-testing needs on Debian or Ubuntu.
pub const INSTALL_COMMAND: &str = "apt-get install -y zookeeper default-jre-headless";

/// Debian's `zookeeper` package puts the server jar here; its manifest `Class-Path` names every
/// dependency, so this one entry is a complete class path.
const DEBIAN_ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// A logging backend for the server, so its warnings reach the log file instead of being dropped.
const DEBIAN_SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";
/// Netty jars the secure client port (`NettyServerCnxnFactory`, TLS) needs but the Debian
/// manifest's `Class-Path` leaves out; `libnetty-java`, a dependency of `zookeeper`, has them.
const DEBIAN_NETTY_EXTRAS: [&str; 2] =
    ["/usr/share/java/netty-codec.jar", "/usr/share/java/netty-resolver.jar"];

/// A located ZooKeeper server installation: the `java` binary and the class path.
///
/// # Examples
///
/// ```no_run
/// let install = zkr_testing::Installation::detect()?;
/// println!("java: {}", install.java().display());
/// # Ok::<(), zkr_testing::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Installation {
    java: PathBuf,
    classpath: String,
}

impl Installation {
    /// Finds the server: `ZOOKEEPER_CLASSPATH` if set, else Debian's jars; and `java` from
    /// `JAVA_HOME` or `PATH`.
    ///
    /// # Errors
    /// [`Error::ZooKeeperNotFound`] or [`Error::JavaNotFound`], each naming [`INSTALL_COMMAND`].
    pub fn detect() -> Result<Self> {
        let classpath = match std::env::var("ZOOKEEPER_CLASSPATH") {
            Ok(cp) if !cp.trim().is_empty() => cp,
            _ => {
                if !Path::new(DEBIAN_ZOOKEEPER_JAR).is_file() {
                    return Err(Error::ZooKeeperNotFound {
                        detail: format!(
                            "ZOOKEEPER_CLASSPATH is unset and {DEBIAN_ZOOKEEPER_JAR} does not exist"
                        ),
                    });
                }
                let mut cp = DEBIAN_ZOOKEEPER_JAR.to_string();
                for jar in std::iter::once(DEBIAN_SLF4J_SIMPLE).chain(DEBIAN_NETTY_EXTRAS) {
                    if Path::new(jar).is_file() {
                        cp.push(':');
                        cp.push_str(jar);
                    }
                }
                cp
            }
        };
        let java = find_java()?;
        Ok(Installation { java, classpath })
    }

    /// The `java` executable.
    pub fn java(&self) -> &Path {
        &self.java
    }

    /// The class path that contains `org.apache.zookeeper.server.*`.
    pub fn classpath(&self) -> &str {
        &self.classpath
    }
}

fn find_java() -> Result<PathBuf> {
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
