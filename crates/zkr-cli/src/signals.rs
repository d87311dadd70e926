//! SIGINT and SIGTERM, registered once at start so that neither hits its default action (which
//! would end zkr without stopping or forwarding anything).

use nix::sys::signal::Signal;
use tokio::signal::unix::{signal, SignalKind};

/// The two stop signals a user or a service manager sends.
#[derive(Debug)]
pub(crate) struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    /// Starts listening for SIGINT and SIGTERM.
    pub(crate) fn listen() -> std::io::Result<Self> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// The next SIGINT or SIGTERM.
    ///
    /// # Cancel safety
    /// Cancel safe: a signal that arrives meanwhile is kept for the next call.
    pub(crate) async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.interrupt.recv() => Signal::SIGINT,
            _ = self.terminate.recv() => Signal::SIGTERM,
        }
    }
}

/// The status a shell reports for a process ended by `signal`.
pub(crate) fn status_after(signal: Signal) -> i32 {
    128 + signal as i32
}
