//! [`PeerProcess`]: a peer child process and its line protocol.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::time::Instant;

use super::tail_lines;
use crate::error::{Error, Result};
use crate::timing::Timing;

/// How much of a peer's stderr goes into error messages.
const STDERR_TAIL_BYTES: u64 = 16 * 1024;
const STDERR_TAIL_LINES: usize = 30;

/// A running peer: a child process in its own process group with piped stdin and stdout, and
/// stderr kept for error messages. Dropping it kills the group (`SIGKILL`).
///
/// Every read is bounded by [`Timing::wait`] (scaled by `ZKR_TIMING_MULTIPLIER`); raise it with
/// [`set_line_timeout`](Self::set_line_timeout) for long benchmarks.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_testing::Result<()> {
/// let server = zkr_testing::shared_server().await?;
/// let curator = zkr_testing::peers::CuratorTool::locate()?;
/// let mut peer = curator.spawn(&["lock", &server.connect_string(), "/locks/l", "2", "10"])?;
/// while let Some(line) = peer.next_line().await? {
///     println!("{line}");
/// }
/// assert!(peer.wait().await?.success());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PeerProcess {
    label: String,
    child: Child,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    stdout_closed: bool,
    /// An anonymous file the child writes its stderr to; read with `pread` so that the shared
    /// file offset the child writes at is never moved.
    stderr: File,
    line_timeout: Duration,
    reaped: bool,
}

impl PeerProcess {
    /// Starts any command as a peer, e.g. one from [`CuratorTool::command`](super::CuratorTool::command) with an environment
    /// variable set. `label` names it in errors. Stdin and stdout are piped, stderr is kept, and
    /// the process gets its own process group.
    ///
    /// # Errors
    /// [`Error::Io`] if the command cannot be started or no Tokio runtime is running.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> zkr_testing::Result<()> {
    /// use zkr_testing::peers::{CuratorTool, PeerProcess};
    ///
    /// let server = zkr_testing::shared_server().await?;
    /// let mut cmd = CuratorTool::locate()?.command(&["bench-leader-failover", &server.connect_string(), "/l"]);
    /// cmd.env("ZKR_PEER_SESSION_MS", "2000");
    /// let mut leader = PeerProcess::spawn("CuratorTool bench-leader-failover", cmd)?;
    /// leader.expect_line("LEADER ").await?;
    /// # Ok(()) }
    /// ```
    pub fn spawn(label: impl Into<String>, mut cmd: Command) -> Result<PeerProcess> {
        let label = label.into();
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::io(
                format!("spawning {label}"),
                std::io::Error::other("a PeerProcess needs a Tokio runtime; spawn it from async code"),
            ));
        }
        let stderr = tempfile::tempfile().map_err(|e| Error::io("creating a file for peer stderr", e))?;
        let child_stderr = stderr.try_clone().map_err(|e| Error::io("duplicating a file handle", e))?;
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(child_stderr).process_group(0);
        let mut cmd = tokio::process::Command::from(cmd);
        cmd.kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| Error::io(format!("spawning {label}"), e))?;
        let pid = child.id().unwrap_or(0);
        let stdin = child.stdin.take();
        let Some(stdout) = child.stdout.take() else {
            return Err(Error::io(
                format!("spawning {label}"),
                std::io::Error::other("stdout was not piped"),
            ));
        };
        tracing::debug!(peer = %label, pid, "spawned peer");
        Ok(PeerProcess {
            label,
            child,
            pid,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            stdout_closed: false,
            stderr,
            line_timeout: Timing::from_env().wait(),
            reaped: false,
        })
    }

    /// The process id (also its process group id).
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Sets the bound for each [`next_line`](Self::next_line), [`expect_line`](Self::expect_line),
    /// [`send_line`](Self::send_line) and [`wait`](Self::wait) (default: [`Timing::wait`]).
    pub fn set_line_timeout(&mut self, timeout: Duration) {
        self.line_timeout = timeout;
    }

    /// The last lines the peer wrote to stderr (up to 16 KiB), for diagnostics.
    pub fn stderr_tail(&self) -> String {
        let len = self.stderr.metadata().map(|m| m.len()).unwrap_or(0);
        let start = len.saturating_sub(STDERR_TAIL_BYTES);
        let mut buf = vec![0; usize::try_from(len - start).unwrap_or(0)];
        let n = self.stderr.read_at(&mut buf, start).unwrap_or(0);
        buf.truncate(n);
        tail_lines(&String::from_utf8_lossy(&buf), STDERR_TAIL_LINES)
    }

    /// The next line of the peer's stdout (without the newline), or `None` once the peer has
    /// closed stdout and exited successfully.
    ///
    /// # Errors
    /// [`Error::PeerTimeout`] if no line comes within the line timeout; [`Error::PeerExited`]
    /// if the output ends and the peer exited with a failure status (bad arguments, no server);
    /// [`Error::Io`] if reading fails. Each carries the tail of the peer's stderr.
    ///
    /// # Cancel safety
    /// Cancel safe: no line is lost.
    pub async fn next_line(&mut self) -> Result<Option<String>> {
        let deadline = Instant::now() + self.line_timeout;
        self.read_line(deadline, "a line").await
    }

    /// Reads lines until one starts with `prefix` and returns it (`""` matches any line); lines
    /// before it are skipped. The whole search is bounded by the line timeout.
    ///
    /// # Errors
    /// [`Error::PeerExited`] if the peer's output ends first (whatever its exit status);
    /// otherwise as [`next_line`](Self::next_line).
    ///
    /// # Cancel safety
    /// Cancel safe: lines already skipped stay skipped, and the matching line is never lost.
    pub async fn expect_line(&mut self, prefix: &str) -> Result<String> {
        let deadline = Instant::now() + self.line_timeout;
        let what = format!("a line starting with {prefix:?}");
        loop {
            match self.read_line(deadline, &what).await? {
                Some(line) if line.starts_with(prefix) => return Ok(line),
                Some(_) => continue,
                None => {
                    let status = self.exit_status_text();
                    return Err(self.exited(status, &what));
                }
            }
        }
    }

    /// Writes `line` and a newline to the peer's stdin (e.g. `release` for `hold`).
    ///
    /// # Errors
    /// [`Error::Io`] if `line` contains a newline, stdin was closed, or the peer is gone;
    /// [`Error::PeerTimeout`] if the peer does not take the line within the line timeout.
    ///
    /// # Cancel safety
    /// Not cancel safe: part of the line may have been written.
    pub async fn send_line(&mut self, line: &str) -> Result<()> {
        let context = format!("writing to stdin of {}", self.label);
        if line.contains('\n') {
            let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, "the line contains a newline");
            return Err(Error::io(context, e));
        }
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Error::io(context, std::io::Error::other("stdin was closed")));
        };
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let write = async {
            stdin.write_all(&bytes).await?;
            stdin.flush().await
        };
        match tokio::time::timeout(self.line_timeout, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::io(context, e)),
            Err(_) => Err(self.timed_out(&format!("stdin to take {line:?}"))),
        }
    }

    /// Closes the peer's stdin: `hold` then releases and `bench-leader-failover` exits.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Closes stdin, reads (and discards) the rest of stdout, and waits for the peer to exit.
    ///
    /// # Errors
    /// [`Error::PeerTimeout`] if it does not exit within the line timeout (it is then killed);
    /// [`Error::Io`] if waiting fails.
    ///
    /// # Cancel safety
    /// Dropping the future kills the peer.
    pub async fn wait(mut self) -> Result<ExitStatus> {
        self.close_stdin();
        let deadline = Instant::now() + self.line_timeout;
        let drain = async {
            if !self.stdout_closed {
                while self.stdout.next_line().await?.is_some() {}
                self.stdout_closed = true;
            }
            self.child.wait().await
        };
        match tokio::time::timeout_at(deadline, drain).await {
            Ok(Ok(status)) => {
                self.reaped = true;
                Ok(status)
            }
            Ok(Err(e)) => Err(Error::io(format!("waiting for {}", self.label), e)),
            Err(_) => Err(self.timed_out("exit")),
        }
    }

    async fn read_line(&mut self, deadline: Instant, what: &str) -> Result<Option<String>> {
        if self.stdout_closed {
            return Ok(None);
        }
        match tokio::time::timeout_at(deadline, self.stdout.next_line()).await {
            Err(_) => Err(self.timed_out(what)),
            Ok(Err(e)) => Err(Error::io(format!("reading stdout of {}", self.label), e)),
            Ok(Ok(Some(line))) => Ok(Some(line)),
            Ok(Ok(None)) => {
                self.stdout_closed = true;
                // The output ended, so the peer is exiting: report a failure with its stderr.
                match tokio::time::timeout_at(deadline, self.child.wait()).await {
                    Err(_) => Err(self.timed_out("exit after closing stdout")),
                    Ok(Err(e)) => Err(Error::io(format!("waiting for {}", self.label), e)),
                    Ok(Ok(status)) => {
                        self.reaped = true;
                        if status.success() {
                            Ok(None)
                        } else {
                            Err(self.exited(status.to_string(), what))
                        }
                    }
                }
            }
        }
    }

    fn exit_status_text(&mut self) -> String {
        match self.child.try_wait() {
            Ok(Some(status)) => status.to_string(),
            Ok(None) => String::from("closed stdout, still running"),
            Err(e) => format!("unknown ({e})"),
        }
    }

    fn exited(&self, status: String, what: &str) -> Error {
        Error::PeerExited {
            peer: self.label.clone(),
            status,
            what: what.to_string(),
            stderr: self.stderr_tail(),
        }
    }

    fn timed_out(&self, what: &str) -> Error {
        Error::PeerTimeout {
            peer: self.label.clone(),
            timeout: self.line_timeout,
            what: what.to_string(),
            stderr: self.stderr_tail(),
        }
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        // After a reap the group is gone (our peers start no children) and its id may be reused.
        if !self.reaped {
            if let Ok(pgid) = i32::try_from(self.pid) {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
        }
        // `kill_on_drop` then has tokio reap the child.
    }
}
