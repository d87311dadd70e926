//! A `zookeeper-client` handle together with the task that serves its connection, which the
//! manager owns: a session it gives up can then never send again.
//!
//! `zookeeper-client` runs each connection in a task of its own and offers no way to stop it
//! but dropping every handle, which sends what is queued first. A request issued while the
//! connection was down waits in that queue: should the manager give the session up and the
//! old task reconnect later to a server that still knows the session (a restarted one), the
//! request would be applied after every newer one. So the manager spawns that task itself
//! (through `spawns`, the crate `zookeeper-client` spawns with) and *freezes* it when it gives
//! the session up: the task is never polled again, so nothing queued is sent. It thaws once the
//! session is known dead on the server ([`bury`]): it then reconnects, hears that the session
//! expired, and fails its queued requests and watchers the way an expiry always does. (It is
//! not dropped: `zookeeper-client` panics in a watcher whose task went away.)

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::task::AtomicWaker;
use parking_lot::Mutex;
use zookeeper_client::{Client, SessionInfo};

use crate::session::supervisor::Shared;

/// A handle and the task serving its connection.
pub(crate) struct Served {
    pub(crate) client: Client,
    pub(crate) task: Freeze,
}

impl Served {
    /// The handle alone: its task goes on as `zookeeper-client` runs it (a probe's, a closer's).
    pub(crate) fn into_client(self) -> Client {
        self.client
    }
}

/// Stops and resumes the polling of the tasks one connect spawned.
#[derive(Clone, Default)]
pub(crate) struct Freeze(Arc<FreezeState>);

#[derive(Default)]
struct FreezeState {
    frozen: AtomicBool,
    waker: AtomicWaker,
}

impl Freeze {
    /// From now on the task is not polled: it sends and receives nothing.
    pub(crate) fn freeze(&self) {
        self.0.frozen.store(true, Ordering::SeqCst);
    }

    /// The task runs again.
    pub(crate) fn thaw(&self) {
        self.0.frozen.store(false, Ordering::SeqCst);
        self.0.waker.wake();
    }

    fn is_frozen(&self) -> bool {
        self.0.frozen.load(Ordering::SeqCst)
    }
}

/// A task's future that does nothing while frozen.
struct Freezable {
    inner: Pin<Box<dyn Future<Output = ()> + Send>>,
    freeze: Freeze,
}

impl Future for Freezable {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.freeze.is_frozen() {
            self.freeze.0.waker.register(cx.waker());
            // Thawed between the look and the registration: run now.
            if self.freeze.is_frozen() {
                return Poll::Pending;
            }
        }
        self.inner.as_mut().poll(cx)
    }
}

/// The spawner in force while a connect is polled: spawns on tokio, freezable.
struct Capture {
    freeze: Freeze,
    runtime: tokio::runtime::Handle,
    spawned: Mutex<usize>,
}

impl spawns_core::Spawn for Capture {
    fn spawn(&self, task: spawns_core::Task) {
        *self.spawned.lock() += 1;
        let inner = Box::into_pin(task.future);
        self.runtime.spawn(Freezable { inner, freeze: self.freeze.clone() });
    }
}

pin_project_lite::pin_project! {
    /// `inner`, polled with [`Capture`] as the spawner.
    struct Scoped<'a, F> {
        #[pin]
        inner: F,
        capture: &'a Capture,
    }
}

impl<F: Future> Future for Scoped<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _scope = spawns_core::enter(*this.capture);
        this.inner.poll(cx)
    }
}

/// Runs `connecting` (a `zookeeper-client` connect) so that the task serving the connection
/// it makes can be frozen.
pub(crate) async fn served(
    connecting: impl Future<Output = Result<Client, zookeeper_client::Error>>,
) -> Result<Served, zookeeper_client::Error> {
    let capture = Capture {
        freeze: Freeze::default(),
        runtime: tokio::runtime::Handle::current(),
        spawned: Mutex::new(0),
    };
    let client = Scoped { inner: connecting, capture: &capture }.await?;
    if *capture.spawned.lock() == 0 {
        // zookeeper-client spawns its connection's task while connecting: a release that
        // stopped would leave the manager unable to silence a given-up session.
        return Err(zookeeper_client::Error::UnexpectedError(
            "zookeeper-client spawned no connection task for zkr to own".into(),
        ));
    }
    Ok(Served { client, task: capture.freeze })
}

/// Ends the given-up `session` on the server (unless it `ended` already, as its handle saw)
/// and then thaws its frozen `tasks`: they reconnect, hear that the session is gone, and fail
/// what they hold. Tries until the session is known dead, for as long as the manager is open
/// and `linger` after, in all (a try under way when the time is up is dropped): a session that
/// cannot be reached by then stays frozen, never sending again.
pub(crate) async fn bury(
    shared: Arc<Shared>,
    session: SessionInfo,
    ended: bool,
    tasks: Vec<Freeze>,
    linger: Duration,
) {
    let closed_and_lingered = async {
        shared.cancel.cancelled().await;
        tokio::time::sleep(linger).await;
    };
    let ended = ended
        || tokio::select! {
            ended = end_on_server(&shared, session) => ended,
            () = closed_and_lingered => {
                tracing::debug!("a given-up session stays frozen: no server could be reached to end it");
                false
            }
        };
    if ended {
        tasks.iter().for_each(Freeze::thaw);
    }
}

/// Closes `session` on the server from a connection of its own; `true` once it is gone there
/// (closed now, or expired already). Tries until it is.
async fn end_on_server(shared: &Shared, session: SessionInfo) -> bool {
    let mut delay = Duration::from_millis(20);
    loop {
        match shared.dial(shared.connector().with_session(session.clone())).await {
            Ok(closer) => {
                let closer = closer.into_client();
                let mut states = closer.state_watcher();
                // The last handle dropped: it sends closeSession.
                drop(closer);
                let ended = async { while !states.changed().await.is_terminated() {} };
                if tokio::time::timeout(shared.config.connection_timeout, ended).await.is_ok() {
                    return true;
                }
            }
            Err(zookeeper_client::Error::SessionExpired) => return true,
            Err(e) => tracing::debug!(error = %e, "ending a given-up session on the server failed"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}
