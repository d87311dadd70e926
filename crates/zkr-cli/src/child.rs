//! The command `zkr lock` and `zkr service register` run: starting it with their environment,
//! passing signals on, stopping it, and its exit status as a shell reports it.

use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::exit::{Exit, Failure};

/// A started command and its process ID.
#[derive(Debug)]
pub(crate) struct Child {
    pub(crate) process: tokio::process::Child,
    pid: Option<Pid>,
}

impl Child {
    /// Starts `command` with `env` added to its environment. A command that is not found fails
    /// with [`Exit::CommandNotFound`] (127), one that cannot be executed with
    /// [`Exit::CommandNotExecutable`] (126), as a shell reports them.
    pub(crate) fn spawn(command: &[String], env: &[(&str, String)]) -> anyhow::Result<Child> {
        let (program, args) =
            command.split_first().ok_or_else(|| Failure::error(Exit::Usage, "no command"))?;
        let started =
            tokio::process::Command::new(program).args(args).envs(env.iter().map(|(k, v)| (k, v))).spawn();
        match started {
            Ok(process) => {
                let pid = process.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
                Ok(Child { process, pid })
            }
            Err(e) => {
                let exit = match e.kind() {
                    std::io::ErrorKind::NotFound => Exit::CommandNotFound,
                    std::io::ErrorKind::PermissionDenied => Exit::CommandNotExecutable,
                    _ => Exit::Failure,
                };
                Err(Failure::error(exit, format!("cannot run {program:?}: {e}")))
            }
        }
    }

    /// Sends `signal` to the command (if it still runs).
    pub(crate) fn forward(&self, signal: Signal) {
        if let Some(pid) = self.pid {
            let _ = kill(pid, signal);
        }
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub(crate) async fn stop(&mut self, grace: Duration) {
        self.forward(Signal::SIGTERM);
        if tokio::time::timeout(grace, self.process.wait()).await.is_err() {
            let _ = self.process.kill().await;
        }
    }
}

/// The status a shell reports: the exit code, or 128+N after signal N.
pub(crate) fn shell_status(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}
