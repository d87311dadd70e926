//! The commands that install what zkr-testing needs on Debian or Ubuntu, one home for each:
//! the errors that say what is missing name them, and so do the modules that look for it.

/// The command that installs everything zkr-testing needs on Debian or Ubuntu: Maven and a
/// Java runtime for the releases from Maven Central, and Debian's own server.
pub const INSTALL_COMMAND: &str = "apt-get install -y maven default-jre-headless zookeeper";

/// The Debian command that installs the KDC and its tools.
pub const KERBEROS_INSTALL_COMMAND: &str = "sudo apt-get install -y krb5-kdc krb5-admin-server krb5-user";

/// The command that installs what [`CuratorTool`](crate::peers::CuratorTool) needs on Debian or
/// Ubuntu.
pub const CURATOR_INSTALL_COMMAND: &str =
    "apt-get install -y libcurator-recipes-java libcurator-discovery-java default-jdk-headless";

/// The command that installs what [`KazooTool`](crate::peers::KazooTool) needs on Debian or
/// Ubuntu.
pub const KAZOO_INSTALL_COMMAND: &str = "apt-get install -y python3-kazoo";

/// The command that installs Maven, which resolves the releases from Maven Central.
pub const MAVEN_INSTALL_COMMAND: &str = "apt-get install -y maven";
