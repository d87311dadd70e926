//! One ZooKeeper JVM as a child process, in its own process group, that cannot outlive us.
//!
//! The JVM is started by a tiny `sh` wrapper whose standard input is a pipe from this process.
//! When this process exits for any reason (including `SIGKILL` or a panic that aborts), the pipe
//! closes, the wrapper's `cat` sees end-of-file, and the wrapper kills the JVM and removes the
//! data directory it was given. Normal control (stop, kill, pause) signals the whole group.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::error::{Error, Result};
use crate::install::Installation;

/// The wrapper: run the JVM in the background; a guard subshell waits for our stdin to close
/// (we died) and then kills the JVM and removes the orphaned data directory
/// (`$ZKR_ORPHAN_CLEANUP`, when set). The wrapper itself exits with the JVM's status, so a
/// server that dies on its own (a port taken, a bad config) is seen as exited at once. (A
/// background list's stdin is /dev/null unless redirected explicitly, hence descriptor 3.)
const WRAPPER: &str = r#"
exec 3<&0
"$@" </dev/null 3<&- &
jvm=$!
(
  cat <&3 >/dev/null
  kill -9 "$jvm" 2>/dev/null
  if [ -n "$ZKR_ORPHAN_CLEANUP" ]; then sleep 0.2; rm -rf "$ZKR_ORPHAN_CLEANUP"; fi
) &
wait "$jvm"
"#;

/// A running server process group.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Child,
    // Held only so that the pipe closes when we go away; see the module docs.
    _lifeline: ChildStdin,
    pgid: Pid,
    server: u32,
}

pub(crate) struct SpawnSpec<'a> {
    pub(crate) install: &'a Installation,
    pub(crate) server: u32,
    pub(crate) config: &'a Path,
    pub(crate) log: &'a Path,
    pub(crate) cleanup_on_orphan: &'a Path,
    pub(crate) jvm_options: &'a [String],
    pub(crate) main_class: &'static str,
    /// The network namespace to run in (`ip netns exec`, which execs: the process is the same).
    pub(crate) netns: Option<&'a str>,
}

impl ServerProcess {
    pub(crate) fn spawn(spec: SpawnSpec<'_>) -> Result<Self> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(spec.log)
            .map_err(|e| Error::io(format!("opening server log {}", spec.log.display()), e))?;
        let log_err = log.try_clone().map_err(|e| Error::io("duplicating log handle", e))?;
        let mut cmd = match spec.netns {
            Some(ns) => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", ns, "sh"]);
                cmd
            }
            None => Command::new("sh"),
        };
        cmd.arg("-c")
            .arg(WRAPPER)
            .arg("zkr-zookeeper")
            .arg(spec.install.java())
            .args(spec.jvm_options)
            .arg("-cp")
            .arg(spec.install.classpath())
            .arg(spec.main_class)
            .arg(spec.config)
            .env("ZKR_ORPHAN_CLEANUP", spec.cleanup_on_orphan)
            .stdin(Stdio::piped())
            .stdout(log)
            .stderr(log_err)
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| Error::io("spawning the ZooKeeper server (sh + java)", e))?;
        let lifeline = child.stdin.take().expect("stdin was piped");
        let pgid = Pid::from_raw(child.id() as i32);
        tracing::debug!(server = spec.server, pgid = pgid.as_raw(), "spawned ZooKeeper server");
        Ok(ServerProcess { child, _lifeline: lifeline, pgid, server: spec.server })
    }

    /// Has the process exited? Returns its status if so.
    pub(crate) fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown ({e})")),
        }
    }

    pub(crate) fn signal(&self, signal: Signal) -> Result<()> {
        killpg(self.pgid, signal).map_err(|source| Error::Signal {
            server: self.server,
            signal: signal.as_str(),
            source,
        })
    }

    /// Kills the whole group and reaps the wrapper.
    pub(crate) fn kill(self) {
        drop(self);
    }

    /// SIGKILL to the group, reap the wrapper, and wait (at most 5 s) until every process of
    /// the group is gone: the JVM is the wrapper's child and takes a moment to exit.
    fn kill_group(&mut self) {
        let _ = killpg(self.pgid, Signal::SIGKILL);
        let _ = self.child.wait();
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_has_live_process(self.pgid.as_raw()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Does any process of group `pgid` still run? Zombies do not count: once the wrapper is gone,
/// the JVM's zombie belongs to PID 1, which may take a while to reap it, and a zombie holds no
/// port, file or memory.
fn group_has_live_process(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { return false };
        // "pid (comm) state ppid pgrp ...": comm may contain spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return false };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|f| f.parse::<i32>().ok());
        pgrp == Some(pgid) && state != Some("Z") && state != Some("X")
    })
}

/// Picks a free loopback port below the kernel's ephemeral range, so that the port is not
/// handed to an outgoing connection between our check and the server's bind (a start that
/// still loses a race is retried by the caller). Falls back to a kernel-chosen port.
pub(crate) fn free_port() -> Result<u16> {
    use std::hash::{BuildHasher, Hasher};
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse::<u16>().ok()))
        .unwrap_or(32768);
    if low > 12000 {
        let span = u64::from(low - 11000);
        for attempt in 0u64..64 {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(attempt);
            hasher.write_u32(std::process::id());
            let port = 10000 + (hasher.finish() % span) as u16;
            if std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
                return Ok(port);
            }
        }
    }
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| Error::io("binding a free loopback port", e))?;
    let port = listener.local_addr().map_err(|e| Error::io("reading a bound port", e))?.port();
    Ok(port)
}

/// Waits until `port` can be bound again (with `SO_REUSEADDR`, as ZooKeeper binds it), so a
/// restart on the same port does not race the dying JVM.
pub(crate) fn wait_port_released(port: u16, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    let addr: SocketAddr = (Ipv4Addr::LOCALHOST, port).into();
    loop {
        let free = (|| -> std::io::Result<()> {
            let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
            socket.set_reuse_address(true)?;
            socket.bind(&addr.into())?;
            Ok(())
        })()
        .is_ok();
        if free || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The last `max_lines` lines of a log file, for error messages.
pub(crate) fn log_tail(path: &Path, max_lines: usize) -> String {
    let Ok(mut file) = File::open(path) else { return String::from("(no log)") };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(max_lines)..].join("\n")
}

/// Paths of one member's files inside a root directory.
#[derive(Debug, Clone)]
pub(crate) struct MemberPaths {
    pub(crate) data: PathBuf,
    pub(crate) config: PathBuf,
    pub(crate) log: PathBuf,
}

impl MemberPaths {
    pub(crate) fn new(root: &Path, server: u32) -> Result<Self> {
        let dir = root.join(format!("server-{server}"));
        let data = dir.join("data");
        std::fs::create_dir_all(&data).map_err(|e| Error::io(format!("creating {}", data.display()), e))?;
        Ok(MemberPaths { config: dir.join("zoo.cfg"), log: dir.join("server.log"), data })
    }
}
