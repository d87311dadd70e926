//! Every public zkr error answers [`Classify`] (`kind()` and `is_ambiguous()`), found in any
//! error's chain of sources by [`classify`]. It names every family's error, so it sits above
//! them all: nothing in the crate imports it.

use zkr_connection::Classify;

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
