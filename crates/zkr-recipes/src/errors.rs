//! What every family's error shares: bad input from the connection layer becomes the family's
//! `InvalidArgument`, and every error answers [`Classify`] (`kind()` and `is_ambiguous()`),
//! found in any error's chain by [`classify`].

use zkr_connection::{Classify, ErrorKind};

/// The first error in `error` and its chain of sources that is one of zkr's public errors (any
/// family's, `zkr-connection`'s included): what a program that holds only a
/// `dyn std::error::Error` (an `anyhow::Error`, a `Box<dyn Error>`) classifies by. The `zkr` CLI
/// picks its exit codes by it.
///
/// # Examples
///
/// ```
/// use zkr_recipes::{classify, ErrorKind};
///
/// let error: Box<dyn std::error::Error> = Box::new(zkr_connection::Error::Closed);
/// assert_eq!(classify(error.as_ref()).map(|e| e.kind()), Some(ErrorKind::Closed));
/// let other: Box<dyn std::error::Error> = "not zkr's".into();
/// assert!(classify(other.as_ref()).is_none());
/// ```
pub fn classify<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Classify> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(classified) = as_classify(error) {
            return Some(classified);
        }
        cause = error.source();
    }
    None
}

/// `error` as a public zkr error, if it is one: every public error type, one line each
/// (docs/check's `every_public_error_is_classified` fails on one missing here).
fn as_classify<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Classify> {
    macro_rules! first {
        ($($family:ty),* $(,)?) => {
            $(if let Some(e) = error.downcast_ref::<$family>() {
                return Some(e);
            })*
        };
    }
    first!(
        zkr_connection::Error,
        zkr_connection::path::PathError,
        crate::barriers::BarrierError,
        crate::codec::CodecError,
        crate::config::ConfigError,
        crate::counters::CounterError,
        crate::discovery::DiscoveryError,
        crate::id::IdError,
        crate::locks::LockError,
        crate::model::ModelError,
        crate::model::TemplateError,
        crate::nodes::NodeError,
        crate::partition::PartitionError,
        crate::queues::QueueError,
    );
    None
}

impl Classify for crate::codec::CodecError {
    /// Always [`ErrorKind::Corrupt`]: the bytes are not a value of the codec's format.
    fn kind(&self) -> ErrorKind {
        ErrorKind::Corrupt
    }

    /// Never: a codec writes nothing.
    fn is_ambiguous(&self) -> bool {
        false
    }
}

impl Classify for crate::model::TemplateError {
    /// Always [`ErrorKind::Usage`]: the template does not parse; nothing was sent.
    fn kind(&self) -> ErrorKind {
        ErrorKind::Usage
    }

    /// Never: nothing was sent.
    fn is_ambiguous(&self) -> bool {
        false
    }
}

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
