//! Apache Curator and kazoo as peer processes, for interop tests and side-by-side benchmarks.
//!
//! [`CuratorTool`] runs a small Java program against Curator (Debian's 5.4, or a release from
//! Maven Central such as 5.9.0: [`CuratorTool::for_release`], `ZKR_CURATOR_VERSION`) (`InterProcessMutex`,
//! `LeaderLatch`, `CuratorCache`, `DistributedAtomicLong`, `SharedCount`, curator-x-discovery's `ServiceDiscovery`); [`KazooTool`] runs
//! a Python script against kazoo's `Lock`. Both speak a line protocol on stdout (one line per
//! event, flushed at once) and take commands on stdin where noted. `<t_us>` is a `CLOCK_MONOTONIC` timestamp in microseconds (`System.nanoTime() / 1000`,
//! `time.monotonic_ns() // 1000`), comparable between peers on one machine.
//!
//! | Command (arguments after the name) | Tools | Output |
//! |---|---|---|
//! | `lock CONNECT PATH ROUNDS HOLD_MS` | both | per round `ACQUIRED <r> <t_us>`, `RELEASING <r> <t_us>` (holding `HOLD_MS` between); then `DONE` |
//! | `hold CONNECT PATH` | both | `HELD <own lock node path>`; on a stdin line `release` (or EOF) releases and prints `RELEASED` |
//! | `try CONNECT PATH TIMEOUT_MS` | both | `ACQUIRED` (then releases) or `NOT_ACQUIRED` |
//! | `bench-uncontended CONNECT PATH SECONDS` | Curator | `RESULT ops=N seconds=S p50_us=X p99_us=Y` (one acquire+release) |
//! | `bench-contended CONNECT PATH SESSIONS SECONDS` | Curator | `RESULT ...` (wait in acquire; one client and thread per session) |
//! | `bench-inprocess CONNECT PATH THREADS SECONDS` | Curator | `RESULT ...` (wait in acquire; one client, one mutex shared by the threads) |
//! | `bench-waiters CONNECT PATH N` | Curator | `QUEUED n=N rss_kb=K` once N threads wait behind the holder; `RESULT drained=N millis=M rss_kb=K` when all have had the lock |
//! | `bench-ids CONNECT PATH SECONDS` | Curator | `RESULT ...` (one `EPHEMERAL_SEQUENTIAL` create of `PATH/id-`) |
//! | `bench-leader-failover CONNECT PATH` | Curator | `LEADER <epoch_ms>` when its `LeaderLatch` (id: the process id) leads, `NOT_LEADER <epoch_ms>` when it stops; runs until stdin EOF |
//! | `config-subscribers CONNECT PATH N` | Curator | N sessions, each a single-node `CuratorCache`: `READY` once all are primed, then `SEEN <i> <value> <t_us>` whenever subscriber i holds a larger number; until stdin EOF |
//! | `cache-load CONNECT PATH REPS` | Curator | after 3 untimed warm-up loads, per load of PATH's tree by a new `CuratorCache`: `LOAD <rep> <micros> <nodes>` (`start()` until initialized); then `RESULT median_us=X nodes=N reps=R cpu_us_per_load=C` (the JVM's CPU time per timed load) |
//! | `cache-memory CONNECT PATH` | Curator | `RESULT nodes=N heap_before=B heap_after=A bytes_per_node=X`: used heap after `System.gc()` with a loaded cache minus before (approximate) |
//! | `cache-propagation CONNECT PATH CLIENTS N` | Curator | N caches of PATH over CLIENTS sessions: `READY` once all are initialized, then `SEEN <i> <value> <t_us>` per create or change (data a number) cache i applies; until stdin EOF |
//! | `group-member CONNECT PATH ID PAYLOAD` | Curator | a started `GroupMember`: `READY`, then for each line on stdin `MEMBERS <id=payload,...>` (sorted by id) from `getCurrentMembers()`; on stdin EOF closes it |
//! | `discovery-register CONNECT BASE NAME ID ADDRESS PORT [PAYLOAD_JSON [SSL_PORT]]` | Curator | registers a `DYNAMIC` `ServiceInstance` (uriSpec `{scheme}://{address}:{port}`, sslPort default PORT + 1, a JSON object payload or none): `READY <the JSON stored at BASE/NAME/ID>`; on stdin EOF unregisters, `DONE` |
//! | `discovery-list CONNECT BASE NAME` | Curator | `INSTANCE <id> <stored JSON>` per instance of `queryForInstances` (sorted by id), then `RESULT count=N` |
//! | `discovery-provider CONNECT BASE NAME N` | Curator | a round-robin `ServiceProvider`, `getInstance()` N times: `RESULT ids=<id,id,...>` (empty when none) |
//! | `discovery-watch CONNECT BASE NAME` | Curator | a `ServiceCache`: `READY`, then `INSTANCES <sorted ids, comma-separated>` at once and after every change; until stdin EOF |
//! | `atomic-long-add CONNECT PATH N` | Curator | a `DistributedAtomicLong` (lost races retried under `RetryNTimes(1000, 1)`): `READY`, then on a stdin line N `increment()`s and `RESULT post=<last post value> succeeded=<count> tries=<optimistic tries>` |
//! | `shared-count-watch CONNECT PATH` | Curator | a started `SharedCount` (seed 0): `COUNT <n>` at once and on every change; until stdin EOF |
//! | `shared-count-set CONNECT PATH VALUE` | Curator | a started `SharedCount` (seed 0), `setCount(VALUE)`: `RESULT count=<n>` |
//! | `checker-worker mutex\|leader CONNECT LOCK_PATH COUNTER_PATH ACQUIRE_MS SEED` | Curator | a worker of zkr's mutual-exclusion checker (`InterProcessMutex` or `LeaderLatch` turns, writes fenced by its own node): `zkr-mutex-worker`'s lines (`CheckerCommands.java`) |
//! | `checker-worker counter CONNECT PATH` | Curator | a worker of zkr's counter checker (`DistributedAtomicLong.increment()` until stdin closes, each resend declared as an increment that may have applied): `zkr-id-worker counter`'s lines (`CheckerCounter.java`) |
//!
//! Benchmarks run a one-second warm-up that is not counted; `rss_kb` is the peak resident set
//! (`VmHWM`). Exit status: 0 success, 1 error (message on stderr), 2 bad arguments, 3 the parent
//! process went away (peers never outlive the test binary that started them). Curator uses a
//! 60 s session and 15 s connection timeout, kazoo its 10 s session default; set
//! `ZKR_PEER_SESSION_MS` to change the session timeout of both.
//!
//! The discovery commands use `ServiceDiscoveryBuilder` with `JsonInstanceSerializer<Map>` in
//! its non-compatible mode (so `enabled` is stored too); Jackson stores the payload map with a
//! type property, `"payload":{"@class":"java.util.LinkedHashMap",...}`. `CuratorTool.java`'s
//! commands for caches, discovery, barriers and revocation, and counters live in
//! `CacheCommands.java`, `DiscoveryCommands.java`, `BarrierCommands.java` and `CounterCommands.java`.
//!
//! The two libraries' lock recipes do not see each other's lock nodes (Curator names them
//! `_c_<uuid>-lock-<seq>`, kazoo `<uuid>__lock__<seq>`), so a Curator and a kazoo client can
//! both hold "the same" lock: compare them side by side, not against each other.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f() -> zkr_testing::Result<()> {
//! use zkr_testing::peers::CuratorTool;
//!
//! let server = zkr_testing::shared_server().await?;
//! let cs = server.connect_string();
//! let curator = CuratorTool::locate()?;
//! let mut holder = curator.spawn(&["hold", &cs, "/locks/demo"])?;
//! holder.expect_line("HELD ").await?;
//! let mut contender = curator.spawn(&["try", &cs, "/locks/demo", "200"])?;
//! assert_eq!(contender.expect_line("").await?, "NOT_ACQUIRED");
//! holder.send_line("release").await?;
//! holder.expect_line("RELEASED").await?;
//! # Ok(()) }
//! ```

mod peer_process;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};

pub use peer_process::PeerProcess;

use crate::error::{Error, Result};

pub use crate::commands::{CURATOR_INSTALL_COMMAND, KAZOO_INSTALL_COMMAND};

/// The peer's Java sources (file name, text), compiled together; `CuratorTool` is the entry point.
const CURATOR_SOURCES: &[(&str, &str)] = &[
    ("CuratorTool.java", include_str!("../java/CuratorTool.java")),
    ("Peer.java", include_str!("../java/Peer.java")),
    ("CacheCommands.java", include_str!("../java/CacheCommands.java")),
    ("DiscoveryCommands.java", include_str!("../java/DiscoveryCommands.java")),
    ("BarrierCommands.java", include_str!("../java/BarrierCommands.java")),
    ("CounterCommands.java", include_str!("../java/CounterCommands.java")),
    ("QueueCommands.java", include_str!("../java/QueueCommands.java")),
    ("WideCommands.java", include_str!("../java/WideCommands.java")),
    ("CheckerCommands.java", include_str!("../java/CheckerCommands.java")),
    ("CheckerCounter.java", include_str!("../java/CheckerCounter.java")),
    ("CheckerQueue.java", include_str!("../java/CheckerQueue.java")),
    ("LockLoadCommands.java", include_str!("../java/LockLoadCommands.java")),
];
/// Sources compiled only against a Curator release from Maven Central: Debian packages no
/// curator-x-async (typed models, `ModeledFramework`).
const MAVEN_ONLY_SOURCES: &[(&str, &str)] =
    &[("ModeledCommands.java", include_str!("../java/ModeledCommands.java"))];
const KAZOO_SOURCE: &str = include_str!("../peers/kazoo_tool.py");
/// The checker workers `kazoo_tool.py` imports, written beside it.
const KAZOO_CHECKER_SOURCE: &str = include_str!("../peers/kazoo_checker.py");
/// Debian's jars (`libcurator-recipes-java`, `libcurator-discovery-java` and what they depend
/// on). curator-x-discovery needs Jackson (databind, core, annotations) and Guava at run time;
/// the manifests' `Class-Path` pull in the rest (slf4j-api, jute, netty, ...).
const CURATOR_JARS: [&str; 9] = [
    "/usr/share/java/curator-recipes.jar",
    "/usr/share/java/curator-framework.jar",
    "/usr/share/java/curator-client.jar",
    "/usr/share/java/curator-x-discovery.jar",
    "/usr/share/java/zookeeper.jar",
    "/usr/share/java/jackson-databind.jar",
    "/usr/share/java/jackson-core.jar",
    "/usr/share/java/jackson-annotations.jar",
    "/usr/share/java/guava.jar",
];
/// slf4j's no-op backend keeps Curator and the ZooKeeper client quiet.
const SLF4J_NOP: &str = "/usr/share/java/slf4j-nop.jar";
/// The interpreter that has Debian's `python3-kazoo` (a pyenv `python3` on `PATH` may not).
const PYTHON: &str = "/usr/bin/python3";

/// Apache Curator as a peer (Debian's 5.4 or a release from Maven Central): `CuratorTool.java` and its command files (embedded in this
/// crate), compiled once and run with the system's Curator jars. See the [module docs](self) for its commands.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_testing::Result<()> {
/// let server = zkr_testing::shared_server().await?;
/// let curator = zkr_testing::peers::CuratorTool::locate()?;
/// let mut bench = curator.spawn(&["bench-uncontended", &server.connect_string(), "/bench/a", "5"])?;
/// let line = bench.expect_line("RESULT").await?;
/// println!("{:?}", zkr_testing::peers::parse_result(&line));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CuratorTool {
    java: PathBuf,
    classpath: String,
    release: String,
}

/// The environment variable that picks the Curator [`CuratorTool::locate`] runs: `debian`
/// (Debian's 5.4, the default) or a version from Maven Central such as
/// [`CURATOR_MAVEN_RELEASE`].
pub const CURATOR_RELEASE_ENV: &str = "ZKR_CURATOR_VERSION";

/// The Curator from Maven Central the interop tests also run against (`scripts/compat.sh`).
pub const CURATOR_MAVEN_RELEASE: &str = "5.9.0";

/// The Curator POM: `mvn dependency:build-classpath` over it gives a release's class path.
const CURATOR_POM: (&str, &str) = ("curator.pom.xml", include_str!("../maven/curator.pom.xml"));

static CURATOR: Mutex<Vec<CuratorTool>> = Mutex::new(Vec::new());

impl CuratorTool {
    /// The Curator [`CURATOR_RELEASE_ENV`] names (Debian's when it is unset): see
    /// [`for_release`](Self::for_release).
    ///
    /// # Errors
    /// As [`for_release`](Self::for_release).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let curator = zkr_testing::peers::CuratorTool::locate()?;
    /// println!("Curator {}", curator.release());
    /// # Ok::<(), zkr_testing::Error>(())
    /// ```
    pub fn locate() -> Result<CuratorTool> {
        let release = std::env::var(CURATOR_RELEASE_ENV).ok().filter(|v| !v.trim().is_empty());
        Self::for_release(release.as_deref().unwrap_or("debian").trim())
    }

    /// Finds `java`, `javac` and the jars of Curator `release` (`debian`: Debian's
    /// `libcurator-*-java`, 5.4; a version such as `5.9.0`: from Maven Central, resolved with
    /// `mvn` on first use and cached as the server releases are), and compiles the peer's Java
    /// sources (`CuratorTool.java` and the command files next to it) against them unless a
    /// compiled copy is already cached.
    ///
    /// `java` is found as by [`Installation::detect`](crate::Installation::detect); `javac` in `$JAVA_HOME/bin`, next to
    /// that `java`, or on `PATH`. The classes are cached per process and on disk in
    /// `$TMPDIR/zkr-curator-tool-<hash>` (keyed by all sources, `javac` and class path, and
    /// private to this user), so only the first test binary pays for `javac`. That first call
    /// blocks for about a second; call it before timing anything.
    ///
    /// # Errors
    /// [`Error::JavaNotFound`]; [`Error::CuratorNotFound`] (naming
    /// [`CURATOR_INSTALL_COMMAND`]) without Debian's jars or `javac`; [`Error::MavenResolve`]
    /// for a release Maven cannot resolve; [`Error::PeerCompile`] if `javac` fails;
    /// [`Error::Io`] for file system errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let curator = zkr_testing::peers::CuratorTool::for_release("5.9.0")?;
    /// # Ok::<(), zkr_testing::Error>(())
    /// ```
    pub fn for_release(release: &str) -> Result<CuratorTool> {
        let mut cached = CURATOR.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tool) = cached.iter().find(|t| t.release == release) {
            return Ok(tool.clone());
        }
        let tool = Self::build(release)?;
        cached.push(tool.clone());
        Ok(tool)
    }

    /// The Curator release this peer runs (`debian` or a version).
    pub fn release(&self) -> &str {
        &self.release
    }

    fn build(release: &str) -> Result<CuratorTool> {
        let java = crate::install::find_java()?;
        let jars = if release == "debian" {
            for jar in CURATOR_JARS {
                if !Path::new(jar).is_file() {
                    return Err(Error::CuratorNotFound { detail: format!("{jar} does not exist") });
                }
            }
            let mut jars = CURATOR_JARS.join(":");
            if Path::new(SLF4J_NOP).is_file() {
                jars.push(':');
                jars.push_str(SLF4J_NOP);
            }
            jars
        } else {
            crate::maven::Resolution {
                name: format!("curator-{release}"),
                pom: CURATOR_POM,
                properties: vec![("curator.version", release.to_owned())],
            }
            .classpath()?
        };
        let javac = find_javac(&java)?;
        let sources = sources(release);
        let mut parts: Vec<&[u8]> = Vec::new();
        for (name, text) in &sources {
            parts.extend([name.as_bytes(), text.as_bytes()]);
        }
        parts.extend([javac.as_os_str().as_encoded_bytes(), jars.as_bytes()]);
        let key = crate::maven::fnv1a(&parts);
        let classes = materialize("zkr-curator-tool", key, "CuratorTool.class", |out| {
            compile(&javac, &jars, &sources, out)
        })?;
        let classpath = format!("{}:{jars}", classes.display());
        tracing::debug!(classes = %classes.display(), release, "CuratorTool ready");
        Ok(CuratorTool { java, classpath, release: release.to_owned() })
    }

    /// The `java` command that runs `CuratorTool` with `args` (a command and its arguments, see
    /// the [module docs](self)). Standard streams are inherited unless you set them; use
    /// [`spawn`](Self::spawn) to talk to it.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.java);
        cmd.args(crate::options::jvm_options_from_env())
            .arg("-cp")
            .arg(&self.classpath)
            .arg("CuratorTool")
            .args(args);
        cmd
    }

    /// Starts `CuratorTool` with `args` as a [`PeerProcess`]. Its process id is the JVM's (and
    /// the participant id of `bench-leader-failover`).
    ///
    /// # Errors
    /// [`Error::Io`] if the JVM cannot be started or no Tokio runtime is running. Bad
    /// arguments are reported by the tool itself: the first read fails with
    /// [`Error::PeerExited`] carrying its usage message.
    pub fn spawn(&self, args: &[&str]) -> Result<PeerProcess> {
        PeerProcess::spawn(peer_label("CuratorTool", args), self.command(args))
    }
}

/// The peer's sources for Curator `release`: the Maven-only ones too unless it is Debian's.
fn sources(release: &str) -> Vec<(&'static str, &'static str)> {
    let maven_only = if release == "debian" { &[][..] } else { MAVEN_ONLY_SOURCES };
    CURATOR_SOURCES.iter().chain(maven_only).copied().collect()
}

/// Compiles `sources` against `jars` into `out`.
fn compile(javac: &Path, jars: &str, sources: &[(&str, &str)], out: &Path) -> Result<()> {
    let sources: Vec<PathBuf> = sources
        .iter()
        .map(|(name, text)| {
            let source = out.join(name);
            std::fs::write(&source, text)
                .map_err(|e| Error::io(format!("writing {}", source.display()), e))?;
            Ok(source)
        })
        .collect::<Result<_>>()?;
    let output = Command::new(javac)
        .args(["-Xlint:none", "-encoding", "UTF-8", "-cp", jars, "-d"])
        .arg(out)
        .args(&sources)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io(format!("running {}", javac.display()), e))?;
    if output.status.success() {
        Ok(())
    } else {
        let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stdout));
        Err(Error::PeerCompile { status: output.status.to_string(), output: tail_lines(&text, 40) })
    }
}

/// kazoo (Python) as a peer: `kazoo_tool.py` (embedded in this crate) run by `/usr/bin/python3`.
/// It has the `lock`, `hold` and `try` commands of [`CuratorTool`], with the same output; see
/// the [module docs](self).
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_testing::Result<()> {
/// let server = zkr_testing::shared_server().await?;
/// let kazoo = zkr_testing::peers::KazooTool::locate()?;
/// let mut peer = kazoo.spawn(&["try", &server.connect_string(), "/locks/k", "200"])?;
/// assert_eq!(peer.expect_line("").await?, "ACQUIRED");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct KazooTool {
    script: PathBuf,
}

static KAZOO: Mutex<Option<KazooTool>> = Mutex::new(None);

impl KazooTool {
    /// Checks that `/usr/bin/python3` can `import kazoo` and writes the script to a per-user
    /// cache directory, `$TMPDIR/zkr-kazoo-tool-<hash>` (once per process).
    ///
    /// # Errors
    /// [`Error::KazooNotFound`] (naming [`KAZOO_INSTALL_COMMAND`]) without the interpreter or
    /// the module; [`Error::Io`] for file system errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let kazoo = zkr_testing::peers::KazooTool::locate()?;
    /// # Ok::<(), zkr_testing::Error>(())
    /// ```
    pub fn locate() -> Result<KazooTool> {
        let mut cached = KAZOO.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tool) = cached.as_ref() {
            return Ok(tool.clone());
        }
        let tool = Self::build()?;
        *cached = Some(tool.clone());
        Ok(tool)
    }

    fn build() -> Result<KazooTool> {
        if !Path::new(PYTHON).is_file() {
            return Err(Error::KazooNotFound { detail: format!("{PYTHON} does not exist") });
        }
        let output = Command::new(PYTHON)
            .args(["-c", "import kazoo"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::io(format!("running {PYTHON}"), e))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(Error::KazooNotFound {
                detail: format!("`{PYTHON} -c 'import kazoo'` failed: {}", tail_lines(&stderr, 1)),
            });
        }
        let key = crate::maven::fnv1a(&[KAZOO_SOURCE.as_bytes(), KAZOO_CHECKER_SOURCE.as_bytes()]);
        let dir = materialize("zkr-kazoo-tool", key, "kazoo_tool.py", |out| {
            for (name, text) in [("kazoo_checker.py", KAZOO_CHECKER_SOURCE), ("kazoo_tool.py", KAZOO_SOURCE)]
            {
                let file = out.join(name);
                std::fs::write(&file, text)
                    .map_err(|e| Error::io(format!("writing {}", file.display()), e))?;
            }
            Ok(())
        })?;
        Ok(KazooTool { script: dir.join("kazoo_tool.py") })
    }

    /// The `/usr/bin/python3` command that runs the script with `args` (a command and its
    /// arguments, see the [module docs](self)). Standard streams are inherited unless you set
    /// them; use [`spawn`](Self::spawn) to talk to it.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(PYTHON);
        cmd.arg("-u").arg(&self.script).args(args);
        cmd
    }

    /// Starts the script with `args` as a [`PeerProcess`].
    ///
    /// # Errors
    /// [`Error::Io`] if Python cannot be started or no Tokio runtime is running. Bad arguments
    /// are reported by the script itself: the first read fails with [`Error::PeerExited`].
    pub fn spawn(&self, args: &[&str]) -> Result<PeerProcess> {
        PeerProcess::spawn(peer_label("kazoo_tool", args), self.command(args))
    }
}

/// Parses the `key=value` fields of a `RESULT` (or `QUEUED`) line, in order; words without `=`
/// (such as the leading `RESULT`) are skipped.
///
/// # Examples
///
/// ```
/// let fields = zkr_testing::peers::parse_result("RESULT ops=10 seconds=1.000 p50_us=90 p99_us=400");
/// assert_eq!(fields[0], ("ops".to_string(), "10".to_string()));
/// assert_eq!(fields.len(), 4);
/// ```
pub fn parse_result(line: &str) -> Vec<(String, String)> {
    line.split_whitespace()
        .filter_map(|word| word.split_once('='))
        .filter(|(key, _)| !key.is_empty())
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

fn peer_label(tool: &str, args: &[&str]) -> String {
    match args.first() {
        Some(command) => format!("{tool} {command}"),
        None => tool.to_string(),
    }
}

/// `javac`: `$JAVA_HOME/bin/javac`, next to the (resolved) `java`, or on `PATH`.
fn find_javac(java: &Path) -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        candidates.push(PathBuf::from(home).join("bin/javac"));
    }
    if let Some(dir) = std::fs::canonicalize(java).ok().as_deref().and_then(Path::parent) {
        candidates.push(dir.join("javac"));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    candidates.extend(std::env::split_paths(&path).map(|dir| dir.join("javac")));
    candidates.into_iter().find(|c| c.is_file()).ok_or_else(|| Error::CuratorNotFound {
        detail: format!("no javac (a JDK) in $JAVA_HOME/bin, next to {}, or on PATH", java.display()),
    })
}

/// Returns `$TMPDIR/<prefix>-<key>`, creating it with `populate` unless a complete copy (one
/// that has `marker`) already exists. Builds in a private staging directory and renames it into
/// place, so concurrent test binaries never see a half-built directory. A cache directory that
/// is not ours (another user's, or writable by others) is never used: we build a private copy.
fn materialize(
    prefix: &str,
    key: u64,
    marker: &str,
    populate: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let tmp = std::env::temp_dir();
    let cache = tmp.join(format!("{prefix}-{key:016x}"));
    let staging = tempfile::Builder::new()
        .prefix(&format!("{prefix}-build-"))
        .tempdir_in(&tmp)
        .map_err(|e| Error::io(format!("creating a directory in {}", tmp.display()), e))?;
    let uid = staging
        .path()
        .metadata()
        .map_err(|e| Error::io(format!("reading {}", staging.path().display()), e))?
        .uid();
    let usable = |dir: &Path| trusted_dir(dir, uid) && dir.join(marker).is_file();
    if usable(&cache) {
        return Ok(cache);
    }
    let out = staging.path().join("out");
    std::fs::create_dir(&out).map_err(|e| Error::io(format!("creating {}", out.display()), e))?;
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Error::io(format!("restricting {}", out.display()), e))?;
    populate(&out)?;
    if std::fs::rename(&out, &cache).is_ok() || usable(&cache) {
        // Ours, or a complete copy another process renamed into place first.
        return Ok(cache);
    }
    tracing::warn!(cache = %cache.display(), "cache directory unusable; keeping a private copy");
    Ok(staging.keep().join("out"))
}

/// A real directory (not a symlink) owned by `uid` that nobody else can write to.
fn trusted_dir(dir: &Path, uid: u32) -> bool {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta.is_dir() && meta.uid() == uid && meta.mode() & 0o022 == 0,
        Err(_) => false,
    }
}

fn tail_lines(text: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(max_lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_result_reads_fields_in_order() {
        let fields = parse_result("RESULT ops=1234 seconds=1.000 p50_us=850 p99_us=4100");
        let expected = [("ops", "1234"), ("seconds", "1.000"), ("p50_us", "850"), ("p99_us", "4100")];
        assert_eq!(fields.len(), expected.len());
        for ((k, v), (ek, ev)) in fields.iter().zip(expected) {
            assert_eq!((k.as_str(), v.as_str()), (ek, ev));
        }
    }

    #[test]
    fn parse_result_skips_words_without_values() {
        let fields = parse_result("  QUEUED n=5  junk =x rss_kb=70000\n");
        assert_eq!(
            fields,
            vec![("n".to_string(), "5".to_string()), ("rss_kb".to_string(), "70000".to_string())]
        );
        assert!(parse_result("").is_empty());
        assert!(parse_result("DONE").is_empty());
    }

    #[test]
    fn peer_labels_name_the_command() {
        assert_eq!(peer_label("CuratorTool", &["hold", "x"]), "CuratorTool hold");
        assert_eq!(peer_label("kazoo_tool", &[]), "kazoo_tool");
    }

    #[test]
    fn tail_lines_keeps_the_last_lines() {
        assert_eq!(tail_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("a", 5), "a");
        assert_eq!(tail_lines("", 5), "");
    }
}
