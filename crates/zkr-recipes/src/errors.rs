//! What every family shares about errors: bad input from the connection layer becomes the
//! family's `InvalidArgument`, a recipe's node path gets one check, and a read of a node that
//! may be gone answers `None`. (Finding a zkr error in any chain of sources is `classify.rs`:
//! it names every family, so it sits above them.)

/// The text of a connection-layer usage error with its causes, each said once
/// (`invalid path "x": ...`), for a family's `InvalidArgument`.
pub(crate) fn usage_text(error: &zkr_connection::Error) -> String {
    if let zkr_connection::Error::InvalidArgument(what) = error {
        return (*what).to_owned();
    }
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(e) = cause {
        let more = e.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        cause = e.source();
    }
    text
}

/// The one path check of a recipe's node: a valid path below the root, outside the reserved
/// `/zookeeper` tree (unless a namespace or chroot moves it away).
pub(crate) fn check_node_path(zk: &zkr_connection::ZkClient, path: &str) -> zkr_connection::Result<()> {
    zkr_connection::path::validate_node_path(path)?;
    zk.validate_recipe_path(path)
}

/// Implements `From<zkr_connection::Error>` for a family's error: bad input (an invalid path,
/// data over the limit, a bad setting) is the family's `InvalidArgument`, the rest its
/// `Connection`.
macro_rules! from_connection {
    ($family:ident) => {
        impl From<zkr_connection::Error> for $family {
            fn from(error: zkr_connection::Error) -> Self {
                match zkr_connection::Classify::kind(&error) {
                    zkr_connection::ErrorKind::Usage => {
                        $family::InvalidArgument($crate::errors::usage_text(&error))
                    }
                    _ => $family::Connection(error),
                }
            }
        }
    };
}
pub(crate) use from_connection;

/// `Ok(None)` for ZooKeeper's `NoNode`: the answer to a read of a node that may be gone.
pub(crate) fn present<T>(
    read: Result<T, zookeeper_client::Error>,
) -> Result<Option<T>, zookeeper_client::Error> {
    match read {
        Err(zookeeper_client::Error::NoNode) => Ok(None),
        other => other.map(Some),
    }
}

/// A node's data and `Stat` under the manager's retry policy, `None` when it does not exist.
pub(crate) async fn read_node(
    zk: &zkr_connection::ZkClient,
    path: &str,
) -> zkr_connection::Result<Option<(Vec<u8>, zookeeper_client::Stat)>> {
    zk.retry(|s| async move { present(s.client().get_data(path).await) }).await
}
