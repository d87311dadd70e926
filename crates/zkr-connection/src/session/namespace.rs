//! [`ZkClient::using_namespace`]: Curator's `usingNamespace`, a view of the same client (the
//! same session, retry policy, listeners) under another namespace.

use std::sync::Arc;

use tokio::sync::watch;

use crate::error::Result;
use crate::path;
use crate::session::builder::validate_namespace;
use crate::session::client::{Session, ZkClient};
use crate::session::connect_string::split_chroot;
use crate::session::supervisor::ensure_namespace;

/// What a view changes: its namespace, and the manager's sessions re-rooted under it.
#[derive(Debug)]
pub(crate) struct View {
    pub(crate) namespace: Option<String>,
    pub(crate) sessions: watch::Receiver<Option<Session>>,
}

impl ZkClient {
    /// A view of this client under `namespace` (`None`: none, paths from the connect string's
    /// root), as Curator's `usingNamespace`: the same session, retry policy, ACL provider and
    /// connection states, only rooted elsewhere. Every recipe and call made through the view
    /// works under its namespace; its namespace node is created (persistent) when missing, on
    /// every session. Cheap: clone it freely; it keeps the manager running as any handle does.
    ///
    /// # Errors
    /// [`Error::InvalidSetting`](crate::Error::InvalidSetting) or
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad namespace (a leading slash,
    /// an empty one, a bad segment).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let billing = zk.using_namespace(Some("billing"))?;
    /// billing.create_node("/invoices").await?; // /billing/invoices on the server
    /// assert_eq!(billing.session().await?.id(), zk.session().await?.id());
    /// # Ok(()) }
    /// ```
    pub fn using_namespace(&self, namespace: Option<&str>) -> Result<ZkClient> {
        if let Some(ns) = namespace {
            validate_namespace(ns)?;
        }
        let chroot = split_chroot(self.connect_string().trim()).1;
        let root = match namespace {
            Some(ns) => path::join(if chroot.is_empty() { "/" } else { chroot }, ns),
            None if chroot.is_empty() => "/".to_owned(),
            None => chroot.to_owned(),
        };
        let (tx, sessions) = watch::channel(None);
        let base = self.shared.session.subscribe();
        let (namespace, acl) = (namespace.map(str::to_owned), self.shared.config.acl_provider.clone());
        tokio::spawn(follow(base, tx, root, chroot.to_owned(), namespace.clone(), acl));
        let mut view = self.clone();
        view.view = Some(Arc::new(View { namespace, sessions }));
        Ok(view)
    }
}

/// Publishes each of the manager's sessions re-rooted at `root`, once the namespace node
/// exists on it, until the view is gone.
async fn follow(
    mut base: watch::Receiver<Option<Session>>,
    tx: watch::Sender<Option<Session>>,
    root: String,
    chroot: String,
    namespace: Option<String>,
    acl: Arc<dyn crate::acl::AclProvider>,
) {
    loop {
        let current = base.borrow_and_update().clone();
        let rooted = match current {
            Some(session) => rooted(session, &root, &chroot, namespace.as_deref(), &*acl).await,
            None => None,
        };
        if tx.send(rooted).is_err() {
            return;
        }
        tokio::select! {
            changed = base.changed() => if changed.is_err() { return },
            () = tx.closed() => return,
        }
    }
}

/// `session` with its handle rooted at `root`, after creating the namespace node where
/// missing (a failure only logged: the view's calls say what is wrong).
async fn rooted(
    session: Session,
    root: &str,
    chroot: &str,
    namespace: Option<&str>,
    acl: &dyn crate::acl::AclProvider,
) -> Option<Session> {
    let at = |path: &str| session.client.raw().clone().chroot(path.to_owned()).ok();
    if let Some(ns) = namespace {
        let base = at(if chroot.is_empty() { "/" } else { chroot })?;
        if let Err(error) = ensure_namespace(&base, ns, acl).await {
            tracing::debug!(namespace = ns, %error, "namespace node not created");
        }
    }
    let client = at(root)?;
    Some(Session { client: session.client.with_raw(client), ..session })
}
