//! [`Release`]: which ZooKeeper server a test runs.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The environment variable that picks the server release for a whole run:
/// a version from [`RELEASES`] (or any other that Maven Central serves), or `debian`.
pub const RELEASE_ENV: &str = "ZKR_ZK_VERSION";

/// The release a server runs when neither [`ServerOptions::release`](crate::ServerOptions::release)
/// nor [`RELEASE_ENV`] says otherwise: the newest 3.9 that resolves from Maven Central.
pub const DEFAULT_RELEASE: &str = "3.9.5";

/// The releases zkr is tested on, oldest first: the newest of each line from 3.5 that
/// resolves from Maven Central (3.8.7's parent POM is not served, so 3.8.6), then Debian 12's
/// packaged 3.8.0 (`debian`).
pub const RELEASES: [&str; 6] = ["3.5.10", "3.6.4", "3.7.2", "3.8.6", "3.9.5", "debian"];

/// A ZooKeeper server release: one from Maven Central (resolved with `mvn` on first use, see
/// [`Installation::for_release`](crate::Installation::for_release)) or Debian's packaged server.
///
/// # Examples
///
/// ```
/// use zkr_testing::Release;
///
/// let release: Release = "3.6.4".parse()?;
/// assert!(release.at_least(3, 6));
/// assert!(!release.at_least(3, 7));
/// assert_eq!(Release::debian().to_string(), "debian");
/// # Ok::<(), zkr_testing::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Release {
    version: (u32, u32, u32),
    debian: bool,
}

impl Release {
    /// Debian's `zookeeper` package (3.8.0 in Debian 12), from `/usr/share/java`.
    pub fn debian() -> Self {
        Release { version: (3, 8, 0), debian: true }
    }

    /// The release named by [`RELEASE_ENV`], or [`DEFAULT_RELEASE`] when it is unset or empty.
    ///
    /// # Errors
    /// [`Error::BadRelease`] when the variable holds neither a version nor `debian`.
    pub fn from_env() -> Result<Self> {
        match std::env::var(RELEASE_ENV) {
            Ok(v) if !v.trim().is_empty() => v.trim().parse(),
            _ => DEFAULT_RELEASE.parse(),
        }
    }

    /// Whether this is Debian's packaged server.
    pub fn is_debian(&self) -> bool {
        self.debian
    }

    /// The version, `3.9.5` (`3.8.0` for Debian's).
    pub fn version(&self) -> String {
        let (a, b, c) = self.version;
        format!("{a}.{b}.{c}")
    }

    /// Whether this release is `major.minor` or newer: persistent watches, multi-reads and
    /// `getEphemerals` came with 3.6, `whoAmI` with 3.7.
    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.version.0, self.version.1) >= (major, minor)
    }

    /// Whether the server has ZOOKEEPER-4537 (a reply held for up to a ping interval on an
    /// ensemble): 3.6 to 3.6.3, 3.7 to 3.7.1 and 3.8.0.
    pub fn has_commit_processor_stall(&self) -> bool {
        matches!(self.version, (3, 6, 0..=3) | (3, 7, 0..=1) | (3, 8, 0))
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.debian {
            f.write_str("debian")
        } else {
            f.write_str(&self.version())
        }
    }
}

impl FromStr for Release {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        if s.eq_ignore_ascii_case("debian") {
            return Ok(Release::debian());
        }
        let bad = || Error::BadRelease { given: s.to_string() };
        let parts: Vec<u32> = s.split('.').map(|p| p.parse().map_err(|_| bad())).collect::<Result<_>>()?;
        match parts[..] {
            [3, b, c] if b >= 5 => Ok(Release { version: (3, b, c), debian: false }),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_and_print_back() {
        for name in RELEASES {
            assert_eq!(name.parse::<Release>().unwrap().to_string(), name);
        }
        for bad in ["", "3.9", "3.4.14", "4.0.0", "3.9.x", "latest", "3.9.5.1"] {
            assert!(matches!(bad.parse::<Release>(), Err(Error::BadRelease { .. })), "{bad}");
        }
        assert!(RELEASES.contains(&DEFAULT_RELEASE));
    }

    #[test]
    fn the_stall_is_on_the_releases_before_its_fix() {
        let stalls = |v: &str| v.parse::<Release>().unwrap().has_commit_processor_stall();
        assert!(stalls("debian") && stalls("3.6.3") && stalls("3.7.1") && stalls("3.8.0"));
        assert!(!stalls("3.5.10") && !stalls("3.6.4") && !stalls("3.7.2") && !stalls("3.8.1"));
        assert!(!stalls("3.9.0"));
    }
}
