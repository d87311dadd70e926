//! kazoo's `SetPartitioner`, which Curator lacks: the members of a party split a set of items
//! (partitions, shards, tenants) among themselves. Each member gets the items kazoo's default
//! partition function gives it (items and member identifiers sorted; member `i` of `n` takes
//! items `i, i + n, i + 2n, ...`), holds a lock on each item while it works on it, and hears
//! when the party changes, so that it can let its items go and take its new share.
//!
//! No item is ever held by two members at once: an item is a member's only while it holds the
//! item's lock. A new share is taken only after the party has been still for the time
//! boundary, so a rolling restart does not reshuffle the set at every step.
//!
//! The nodes are kazoo's, so Python and Rust members share one set: members are ephemeral
//! `<path>/party/<uuid hex>-<identifier>` nodes (kazoo's `ShallowParty`), and the item locks are
//! kazoo `Lock`s at `<path>/locks/<item>`.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::partition::PartitionError> {
//! use zkr_recipes::partition::SetPartitioner;
//!
//! let items = ["tenant-a", "tenant-b", "tenant-c", "tenant-d"];
//! let partitioner = SetPartitioner::builder(&zk, "/work/tenants", items).start().await?;
//! loop {
//!     let set = partitioner.acquire().await?;
//!     println!("working on {:?}", set.items());
//!     set.changed().await; // the party changed, or a lock was lost: let go and rebalance
//!     set.release().await;
//! }
//! # }
//! ```

mod partitioner;

pub use partitioner::{PartitionSet, SetPartitioner, SetPartitionerBuilder};

/// What went wrong with a set partitioner.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum PartitionError {
    /// A bad path, item or identifier: nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The member's party node could not be created.
    #[error(transparent)]
    Node(#[from] crate::nodes::NodeError),
    /// An item's lock failed.
    #[error(transparent)]
    Lock(#[from] crate::locks::LockError),
    /// A ZooKeeper operation failed, or the manager was closed.
    #[error(transparent)]
    Connection(zkr_connection::Error),
}

crate::errors::from_connection!(PartitionError);

impl zkr_connection::Classify for PartitionError {
    /// What the error means to the caller ([`ErrorKind`](zkr_connection::ErrorKind)), as for every family.
    fn kind(&self) -> zkr_connection::ErrorKind {
        match self {
            PartitionError::Connection(e) => e.kind(),
            PartitionError::Node(e) => e.kind(),
            PartitionError::Lock(e) => e.kind(),
            PartitionError::InvalidArgument(_) => zkr_connection::ErrorKind::Usage,
        }
    }

    /// Might the failed write have been applied all the same
    /// ([`zkr_connection::Error::is_ambiguous`](zkr_connection::Classify::is_ambiguous))?
    fn is_ambiguous(&self) -> bool {
        match self {
            PartitionError::Connection(e) => e.is_ambiguous(),
            PartitionError::Node(e) => e.is_ambiguous(),
            PartitionError::Lock(e) => e.is_ambiguous(),
            PartitionError::InvalidArgument(_) => false,
        }
    }
}

/// kazoo's partition function: the items `identifier` gets among `members`, or none when it is
/// not one of them.
///
/// # Examples
///
/// ```
/// use zkr_recipes::partition::share;
///
/// let items = ["a", "b", "c", "d", "e"].map(String::from);
/// let members = ["w2", "w1"].map(String::from);
/// assert_eq!(share("w1", &members, &items), ["a", "c", "e"]);
/// assert_eq!(share("w2", &members, &items), ["b", "d"]);
/// ```
pub fn share(identifier: &str, members: &[String], items: &[String]) -> Vec<String> {
    let mut members: Vec<&String> = members.iter().collect();
    members.sort();
    let Some(me) = members.iter().position(|m| *m == identifier) else { return Vec::new() };
    let mut items: Vec<&String> = items.iter().collect();
    items.sort();
    items.into_iter().skip(me).step_by(members.len()).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::share;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_item_goes_to_exactly_one_member(
            items in proptest::collection::btree_set("[a-z]{1,6}", 0..40),
            members in proptest::collection::btree_set("[a-z]{1,6}", 1..8),
        ) {
            let items: Vec<String> = items.into_iter().collect();
            let members: Vec<String> = members.into_iter().collect();
            let mut seen: Vec<String> = members.iter().flat_map(|m| share(m, &members, &items)).collect();
            seen.sort();
            prop_assert_eq!(&seen, &items);
            let sizes: Vec<usize> = members.iter().map(|m| share(m, &members, &items).len()).collect();
            prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "balanced: {:?}", sizes);
        }
    }

    #[test]
    fn a_stranger_gets_nothing() {
        assert!(share("x", &["a".into()], &["i".into()]).is_empty());
    }
}
