//! zkr's exit codes, one table for every subcommand, and how an error becomes one.

use zkr_connection::ErrorKind;

/// The exit codes of zkr's own outcomes. A command run by `zkr lock` passes its own status
/// through instead (see [`Code::Status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// An error with no code of its own (a ZooKeeper answer such as `NoAuth`, an I/O error).
    Failure = 1,
    /// Bad arguments: an unknown option, a malformed path or duration, a path that cannot be
    /// used for the subcommand.
    Usage = 2,
    /// `zkr lock`: the lock was not acquired within `--timeout` (or is held, with `--try`).
    NotAcquired = 3,
    /// What the command held was lost (`zkr lock`: the lock, and the command was stopped).
    Lost = 4,
    /// The node does not exist.
    Absent = 5,
    /// ZooKeeper holds something else than asked for: `config set --if-version` found another
    /// version, or `id next` found a path laid out for another `--kind`.
    Conflict = 6,
    /// No ZooKeeper session within `--connect-timeout` (or `lock --timeout`), no ZooKeeper
    /// server at any host (every one refused, or is something else), or ZooKeeper stayed
    /// unreachable for longer than the retry policy allows.
    Unreachable = 7,
    /// `zkr status`: a quorum, but a server is down or not serving.
    Degraded = 8,
    /// `zkr status`: no quorum (no leader, or too few servers with it).
    NoQuorum = 9,
    /// `zkr lock`: the command was not found (as a shell says it).
    CommandNotFound = 127,
    /// `zkr lock`: the command exists but cannot be executed.
    CommandNotExecutable = 126,
}

impl Exit {
    /// The process exit code.
    pub(crate) fn code(self) -> i32 {
        self as i32
    }

    /// Is this a failure of zkr itself, which `--error-exit-code` replaces? The statuses of a
    /// command that could not be started (126, 127) are the command's, as in a shell.
    fn is_zkr_own(self) -> bool {
        !matches!(self, Exit::CommandNotFound | Exit::CommandNotExecutable)
    }
}

/// The exit-code table, for `--help` and the man page (the README has the same table).
pub(crate) const EXIT_TABLE: &str = "\
Exit codes (every subcommand):
  0    success (zkr lock: the command's own status, whatever it is)
  1    an error with no code of its own (for example NoAuth, an I/O error)
  2    usage: bad arguments, a malformed path or duration, a write under /zookeeper
       (ZooKeeper's own tree)
  3    lock: not acquired within --timeout, or held (--try)
  4    lost: the lock (or the session) was lost while the command ran (the command was
       stopped)
  5    absent: the node does not exist (lock-info, members, service list and elect
       --observe too: a typo is not an empty answer)
  6    conflict: --if-version (config set, set, rm, acl set) found another version;
       create: the node exists; rm: the node has children (-r deletes them); id next
       found a path laid out for another --kind; service register: another session
       holds the id; lock-info, elect --observe: the path holds another recipe, or
       children no lock or election layout explains
  7    cannot reach ZooKeeper within --connect-timeout (or lock --timeout); at once
       when every host refuses the connection or is no ZooKeeper server
  8    status: degraded (a quorum, but a server is down or not serving)
  9    status: no quorum
  126  lock: the command cannot be executed;  127: the command was not found
  128+N  zkr was stopped by signal N while it waited for the lock (130: Ctrl-C)
With -E N (--error-exit-code N), zkr exits N instead of every code from 1 to 9, so that a
command's own 3 or 4 is never taken for zkr's; the command's status, 126, 127 and 128+N are
left as they are, and stderr still says what happened.";

/// How a subcommand ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    /// Everything worked.
    Success,
    /// An exit status to pass through unchanged: a command's own, or 128+N after a signal.
    Status(i32),
    /// One of zkr's own outcomes, already reported on stderr.
    Exit(Exit),
}

/// A failure with its exit code, raised by the CLI itself (not acquired, absent, ...).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Failure {
    pub(crate) exit: Exit,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn error(exit: Exit, message: impl Into<String>) -> anyhow::Error {
        Failure { exit, message: message.into() }.into()
    }
}

/// The exit code for an error: a [`Failure`]'s own, or the library error's kind.
pub(crate) fn classify(error: &anyhow::Error) -> Exit {
    for cause in error.chain() {
        if let Some(failure) = cause.downcast_ref::<Failure>() {
            return failure.exit;
        }
        if cause.downcast_ref::<clap::Error>().is_some() {
            return Exit::Usage;
        }
        if let Some(kind) = kind_of(cause) {
            return exit_for(kind);
        }
    }
    Exit::Failure
}

/// The [`ErrorKind`] of a zkr error of any family, through the one classification every public
/// zkr error answers (`zkr_recipes::classify`).
fn kind_of(cause: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    zkr_recipes::classify(cause).map(|error| error.kind())
}

/// The exit code of an error kind: one table for every family.
fn exit_for(kind: ErrorKind) -> Exit {
    match kind {
        ErrorKind::Usage => Exit::Usage,
        ErrorKind::Unreachable => Exit::Unreachable,
        ErrorKind::Conflict => Exit::Conflict,
        ErrorKind::Absent => Exit::Absent,
        ErrorKind::Lost => Exit::Lost,
        _ => Exit::Failure,
    }
}

/// The error and its causes, `: `-separated, each said once: a cause whose text its parent
/// already includes (an error type that puts its source into its own message) is left out.
pub(crate) fn message(error: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if text.is_empty() || out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// The process exit code for an outcome, with `--error-exit-code` applied.
pub(crate) fn process_code(code: Code, error_exit_code: Option<u8>) -> i32 {
    match code {
        Code::Success => 0,
        Code::Status(status) => status,
        Code::Exit(exit) => match error_exit_code {
            Some(n) if exit.is_zkr_own() => i32::from(n),
            _ => exit.code(),
        },
    }
}

/// `-E N` / `--error-exit-code N` found in raw arguments (before `--`), for the usage errors
/// clap reports before anything is parsed.
pub(crate) fn scan_error_exit_code(args: impl IntoIterator<Item = std::ffi::OsString>) -> Option<u8> {
    let args: Vec<String> = args.into_iter().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let mut found = None;
    for (i, arg) in args.iter().enumerate() {
        let value = match arg.as_str() {
            "--" => break,
            "-E" | "--error-exit-code" => args.get(i + 1).map(String::as_str),
            _ => arg.strip_prefix("--error-exit-code=").or_else(|| arg.strip_prefix("-E")),
        };
        if let Some(n) = value.and_then(|v| v.parse::<u8>().ok()).filter(|n| *n > 0) {
            found = Some(n);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkr_connection::Error as ConnectionError;
    use zkr_recipes::config::ConfigError;
    use zkr_recipes::locks::LockError;
    use zkr_recipes::model::{ModelError, TemplateError};

    fn os(args: &[&str]) -> Vec<std::ffi::OsString> {
        args.iter().map(Into::into).collect()
    }

    /// An invalid path, made by the library (not by hand, so that new fields do not break it).
    fn invalid_path() -> ConnectionError {
        zkr_connection::path::validate_path("x").expect_err("a relative path is invalid")
    }

    #[test]
    fn a_cause_already_in_its_parents_message_is_said_once() {
        /// An error that puts its source into its own message, as `InvalidPath` once did.
        #[derive(Debug, thiserror::Error)]
        #[error("invalid path \"x\": {source}")]
        struct Repeats {
            source: zkr_connection::path::PathError,
        }
        let error = Repeats { source: zkr_connection::path::PathError::NotAbsolute };
        let error = anyhow::Error::new(error).context("reading x");
        let text = message(&error);
        assert_eq!(text.matches("must start with '/'").count(), 1, "{text}");
        assert!(text.starts_with("reading x: invalid path \"x\""), "{text}");
    }

    #[tokio::test]
    async fn library_errors_map_to_their_codes() {
        assert_eq!(classify(&ConfigError::from(invalid_path()).into()), Exit::Usage);
        assert_eq!(classify(&ConfigError::Connection(invalid_path()).into()), Exit::Usage);
        let gone = zkr_recipes::queues::QueueError::ItemGone { node: "/q/x".into() };
        assert_eq!(classify(&anyhow::Error::new(gone)), Exit::Absent, "every family maps through kind()");
        let zk = zkr_connection::ZkClient::builder("127.0.0.1:1").start().await.unwrap();
        let timeout = zk.wait_connected(std::time::Duration::from_millis(50)).await.unwrap_err();
        zk.close().await;
        assert_eq!(classify(&anyhow::Error::new(LockError::Connection(timeout))), Exit::Unreachable);
        let conflict = ConfigError::VersionConflict { path: "/x".into(), expected: 1 };
        assert_eq!(classify(&anyhow::Error::new(conflict).context("setting")), Exit::Conflict);
        assert_eq!(classify(&anyhow::anyhow!("something else")), Exit::Failure);
        // The family the hand-written list had missed.
        let template = TemplateError::Parameter { segment: "user-{id}".into() };
        let model = ModelError::InvalidTemplate { template: "/u/user-{id}".into(), source: template };
        assert_eq!(classify(&anyhow::Error::new(model).context("reading")), Exit::Usage);
    }

    #[test]
    fn error_exit_code_replaces_zkr_codes_only() {
        assert_eq!(process_code(Code::Exit(Exit::NotAcquired), Some(99)), 99);
        assert_eq!(process_code(Code::Exit(Exit::Usage), Some(99)), 99);
        assert_eq!(process_code(Code::Exit(Exit::CommandNotFound), Some(99)), 127);
        assert_eq!(process_code(Code::Status(3), Some(99)), 3);
        assert_eq!(process_code(Code::Success, Some(99)), 0);
        assert_eq!(process_code(Code::Exit(Exit::Lost), None), 4);
    }

    #[test]
    fn error_exit_code_is_found_before_the_command() {
        assert_eq!(scan_error_exit_code(os(&["zkr", "-E", "9", "lock"])), Some(9));
        assert_eq!(scan_error_exit_code(os(&["zkr", "lock", "-E9"])), Some(9));
        assert_eq!(scan_error_exit_code(os(&["zkr", "--error-exit-code=70", "x"])), Some(70));
        assert_eq!(scan_error_exit_code(os(&["zkr", "lock", "/x", "--", "cmd", "-E", "9"])), None);
        assert_eq!(scan_error_exit_code(os(&["zkr", "-E", "0"])), None);
    }
}
