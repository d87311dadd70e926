//! Class paths resolved from Maven Central: ZooKeeper server releases and Apache Curator.
//!
//! A class path is resolved once per machine by `mvn dependency:build-classpath` over a small
//! POM embedded in this crate (the jars land in Maven's local repository, `~/.m2`), and kept in
//! a file under the [cache directory](cache_dir), which later runs read back. A cached class
//! path whose jars are gone is resolved again. Resolutions are serialised across processes by
//! a file lock, so test binaries started at once do not race on the local repository.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::commands::MAVEN_INSTALL_COMMAND;
use crate::error::{Error, Result};

/// Where resolved class paths are kept: `$ZKR_CACHE_DIR`, else `$XDG_CACHE_HOME/zkr`, else
/// `~/.cache/zkr`, else `$TMPDIR/zkr-cache`.
pub(crate) fn cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("ZKR_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("zkr")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/zkr")))
        .unwrap_or_else(|| std::env::temp_dir().join("zkr-cache"))
}

/// One POM and the properties that pick what it resolves.
pub(crate) struct Resolution<'a> {
    /// The cache file's name, without extension (`zookeeper-3.9.5`).
    pub(crate) name: String,
    /// The POM's file name and text.
    pub(crate) pom: (&'a str, &'a str),
    /// `-D` properties (`zk.version=3.9.5`).
    pub(crate) properties: Vec<(&'a str, String)>,
}

impl Resolution<'_> {
    /// The class path, from the cache or resolved now (a few seconds; longer when the jars must
    /// be downloaded).
    pub(crate) fn classpath(&self) -> Result<String> {
        let dir = cache_dir();
        // Keyed by the POM too, so that a changed POM is resolved again.
        let key = fnv1a(&[self.pom.1.as_bytes()]);
        let file = dir.join(format!("{}-{key:016x}.classpath", self.name));
        if let Some(cp) = read_cached(&file) {
            return Ok(cp);
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        let lock_path = dir.join("maven.lock");
        let lock = File::create(&lock_path)
            .map_err(|e| Error::io(format!("creating {}", lock_path.display()), e))?;
        lock.lock().map_err(|e| Error::io(format!("locking {}", lock_path.display()), e))?;
        // Another process may have resolved it while we waited for the lock.
        if let Some(cp) = read_cached(&file) {
            return Ok(cp);
        }
        self.resolve(&dir, &file)?;
        read_cached(&file).ok_or_else(|| Error::MavenResolve {
            what: self.name.clone(),
            detail: format!("mvn succeeded but {} lists a jar that does not exist", file.display()),
        })
    }

    fn resolve(&self, dir: &Path, file: &Path) -> Result<()> {
        let pom = dir.join(self.pom.0);
        std::fs::write(&pom, self.pom.1).map_err(|e| Error::io(format!("writing {}", pom.display()), e))?;
        let partial = file.with_extension("partial");
        let mut cmd = Command::new("mvn");
        cmd.args(["-q", "-B", "-f"]).arg(&pom).arg("dependency:build-classpath");
        cmd.arg(format!("-Dmdep.outputFile={}", partial.display()));
        for (key, value) in &self.properties {
            cmd.arg(format!("-D{key}={value}"));
        }
        tracing::info!(what = %self.name, "resolving a class path with Maven");
        let output = cmd.stdin(Stdio::null()).output().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::MavenResolve {
                what: self.name.clone(),
                detail: format!("no `mvn` on PATH; install it with `{MAVEN_INSTALL_COMMAND}`"),
            },
            _ => Error::io("running mvn", e),
        })?;
        if !output.status.success() {
            let text = String::from_utf8_lossy(&output.stdout);
            let errors: Vec<&str> = text.lines().filter(|l| l.contains("ERROR")).take(3).collect();
            return Err(Error::MavenResolve {
                what: self.name.clone(),
                detail: format!("mvn exited with {}: {}", output.status, errors.join(" ")),
            });
        }
        std::fs::rename(&partial, file).map_err(|e| Error::io(format!("writing {}", file.display()), e))
    }
}

/// The cached class path, when the file exists and every jar it names does.
fn read_cached(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let cp = text.trim();
    let complete = !cp.is_empty() && std::env::split_paths(cp).all(|jar| jar.is_file());
    complete.then(|| cp.to_string())
}

/// 64-bit FNV-1a over the parts (with a separator), stable across Rust versions and processes.
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for part in parts {
        for &byte in part.iter().chain(std::iter::once(&0xff)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_is_stable_and_separates_parts() {
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(fnv1a(&[b"x"]), fnv1a(&[b"x"]));
    }

    #[test]
    fn a_cached_class_path_with_a_missing_jar_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let jar = dir.path().join("a.jar");
        std::fs::write(&jar, b"").unwrap();
        let file = dir.path().join("x.classpath");
        std::fs::write(&file, format!("{}\n", jar.display())).unwrap();
        assert_eq!(read_cached(&file).as_deref(), Some(jar.to_str().unwrap()));
        std::fs::write(&file, format!("{}:{}", jar.display(), dir.path().join("gone.jar").display()))
            .unwrap();
        assert_eq!(read_cached(&file), None);
        std::fs::write(&file, "").unwrap();
        assert_eq!(read_cached(&file), None);
    }
}
