//! [`LockInternalsDriver`]: the policy half of a lock recipe (how contender nodes are named,
//! created and ordered, and who holds the lock), and the two drivers zkr ships.

use std::fmt;

use zkr_connection::Parents;
use zookeeper_client::CreateMode;

use super::error::LockError;
use crate::layouts::sequence_key;

/// What [`LockInternalsDriver::gets_the_lock`] decides: Curator's `PredicateResults`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PredicateResults {
    /// Do we hold the lock (one of the first `max_leases` contenders)?
    pub gets_the_lock: bool,
    /// When not: the contender to watch (the one `max_leases` places ahead of us).
    pub path_to_watch: Option<String>,
}

/// How a contender node is created: Curator's `createsTheLock`, as a description.
///
/// A description rather than a function so that [`LockInternals`](super::LockInternals) can
/// send the first children listing and the create back to back (one round trip for an
/// uncontended acquire) and find the node again by its `tag` after a lost reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContenderSpec {
    /// A prefix unique to this contender (it must contain a fresh UUID), by which the node is
    /// found again after a connection loss.
    pub tag: String,
    /// The rest of the node name; for sequential modes ZooKeeper appends the sequence.
    pub name: String,
    /// The create mode (Curator: `EPHEMERAL_SEQUENTIAL`; a persistent-lock driver overrides it).
    pub mode: CreateMode,
}

/// The policy of a lock recipe: Curator's `LockInternalsDriver` (and `LockInternalsSorter`).
///
/// [`LockInternals`](super::LockInternals) runs the algorithm (create a contender node, list
/// and sort the contenders, hold the lock or watch the node ahead, repeat); the driver decides
/// how nodes are named and created ([`contender`](Self::contender)), which children are
/// contenders and how they sort ([`fix_for_sorting`](Self::fix_for_sorting),
/// [`sort_children`](Self::sort_children)), and who holds the lock
/// ([`gets_the_lock`](Self::gets_the_lock)).
///
/// Children that are not contenders (for which `fix_for_sorting` returns `None`) are ignored,
/// so a node planted under a lock path cannot become the holder. (Curator sorts such children
/// by their full name and may treat them as holders: CURATOR-43.)
///
/// # Examples
///
/// A driver for persistent lock nodes (Curator's `testPersistentLock`), otherwise standard:
///
/// ```
/// use zkr_recipes::locks::{ContenderSpec, LockInternalsDriver, StandardLockInternalsDriver};
/// use zkr_connection::CreateMode;
///
/// #[derive(Debug, Default)]
/// struct PersistentLockDriver(StandardLockInternalsDriver);
///
/// impl LockInternalsDriver for PersistentLockDriver {
///     fn contender(&self, lock_name: &str) -> ContenderSpec {
///         ContenderSpec { mode: CreateMode::PersistentSequential, ..self.0.contender(lock_name) }
///     }
///     fn fix_for_sorting<'a>(&self, name: &'a str, lock_name: &str) -> Option<&'a str> {
///         self.0.fix_for_sorting(name, lock_name)
///     }
/// }
/// let spec = PersistentLockDriver::default().contender("lock-");
/// assert_eq!(spec.mode, CreateMode::PersistentSequential);
/// ```
pub trait LockInternalsDriver: Send + Sync + fmt::Debug + 'static {
    /// The lock name a mutex made with [`InterProcessMutex::with_driver`](super::InterProcessMutex::with_driver)
    /// gives its contender nodes (Curator's `lockName`): [`LOCK_NAME`](super::LOCK_NAME),
    /// `lock-`, by default; kazoo's `__lock__` for [`KazooLockDriver`].
    /// [`InterProcessMutex::with_lock_name`](super::InterProcessMutex::with_lock_name) picks
    /// another.
    fn lock_name(&self) -> &str {
        super::LOCK_NAME
    }

    /// How to create our contender node for a lock named `lock_name`.
    fn contender(&self, lock_name: &str) -> ContenderSpec;

    /// The part of a child's name that orders it (Curator's `fixForSorting`), or `None` when
    /// the child is not a contender of this lock.
    fn fix_for_sorting<'a>(&self, name: &'a str, lock_name: &str) -> Option<&'a str>;

    /// The contenders among `children`, in lock order. The default orders by the ZooKeeper
    /// sequence in the sort key, read as the unsigned 32-bit counter it is (see
    /// [`sequence_key`]), then by name.
    fn sort_children(&self, children: &[String], lock_name: &str) -> Vec<String> {
        let mut keyed: Vec<(u64, &String)> = children
            .iter()
            .filter_map(|c| self.fix_for_sorting(c, lock_name).and_then(sequence_key).map(|k| (k, c)))
            .collect();
        keyed.sort();
        keyed.into_iter().map(|(_, c)| c.clone()).collect()
    }

    /// How the lock's directory and its missing ancestors are made. Curator's recipes make
    /// them containers, which the server deletes once empty (the default); kazoo makes them
    /// persistent and checks its path once, so a kazoo-layout driver answers
    /// [`Parents::Persistent`]: a kazoo process sharing the lock never finds its directory
    /// gone.
    fn parents(&self) -> Parents {
        Parents::Containers
    }

    /// Does the deletion of the node we watch, when that node was the holder, mean that we now
    /// hold the lock? True for a queue where each contender watches the one just ahead (the
    /// default [`gets_the_lock`](Self::gets_the_lock)): [`LockInternals`](super::LockInternals)
    /// then takes the lock without listing again. A driver whose contenders watch some other
    /// node (the read side of a read-write lock watches the first writer), or whose queue can
    /// gain nodes ahead of waiting ones (a read-write lock's downgrade), returns `false`.
    fn head_release_grants(&self) -> bool {
        true
    }

    /// Do we hold the lock, and if not, whom do we watch? Curator's `getsTheLock`: we hold it
    /// when we are among the first `max_leases` contenders; otherwise we watch the contender
    /// `max_leases` places ahead of us.
    ///
    /// The answer must depend only on the contenders ahead of us, and lock order must follow
    /// creation order (the sequence), as in every ZooKeeper lock: a contender created after us
    /// that sorted ahead could take the lock while we hold it. [`LockInternals`](super::LockInternals)
    /// relies on this when it decides from a listing taken just before our node was created
    /// (it shows every older contender, and none created after ours).
    ///
    /// # Errors
    /// [`LockError::NotAContender`] when `our_node` is not among `sorted_children`.
    fn gets_the_lock(
        &self,
        sorted_children: &[String],
        our_node: &str,
        max_leases: usize,
    ) -> Result<PredicateResults, LockError> {
        let index = sorted_children
            .iter()
            .position(|c| c == our_node)
            .ok_or_else(|| LockError::NotAContender { node: our_node.to_string() })?;
        let max_leases = max_leases.max(1);
        if index < max_leases {
            Ok(PredicateResults { gets_the_lock: true, path_to_watch: None })
        } else {
            Ok(PredicateResults {
                gets_the_lock: false,
                path_to_watch: Some(sorted_children[index - max_leases].clone()),
            })
        }
    }
}

/// Curator's driver: protected ephemeral-sequential nodes `_c_<uuid>-<lock name><seq>`, ordered
/// by the sequence after the last occurrence of the lock name. Rust and Java processes that
/// use it (Curator's `InterProcessMutex`, `lock-`) contend for the same lock.
///
/// # Examples
///
/// ```
/// use zkr_recipes::locks::{LockInternalsDriver, StandardLockInternalsDriver};
///
/// let d = StandardLockInternalsDriver;
/// assert_eq!(d.fix_for_sorting("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007", "lock-"), Some("0000000007"));
/// assert_eq!(d.fix_for_sorting("planted", "lock-"), None);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct StandardLockInternalsDriver;

impl LockInternalsDriver for StandardLockInternalsDriver {
    fn contender(&self, lock_name: &str) -> ContenderSpec {
        ContenderSpec {
            tag: zkr_connection::protected::protected_prefix(&uuid::Uuid::new_v4()),
            name: lock_name.to_string(),
            mode: CreateMode::EphemeralSequential,
        }
    }

    fn fix_for_sorting<'a>(&self, name: &'a str, lock_name: &str) -> Option<&'a str> {
        let suffix = after_last(name, lock_name)?;
        sequence_key(suffix).map(|_| suffix)
    }
}

/// What follows the last `marker` in `name` (Java's `lastIndexOf`, as Curator's
/// `fixForSorting` looks), found by comparing bytes from the end: a contender's marker sits
/// just before its ten digits, so this takes a few comparisons where `str::rfind` would first
/// build a two-way searcher for the marker. A match of UTF-8 bytes starts and ends on character
/// boundaries. `None` for an empty marker.
fn after_last<'a>(name: &'a str, marker: &str) -> Option<&'a str> {
    if marker.is_empty() {
        return None;
    }
    let at = name.as_bytes().windows(marker.len()).rposition(|w| w == marker.as_bytes())?;
    name.get(at + marker.len()..)
}

/// kazoo's `Lock` naming: ephemeral-sequential `<uuid hex>__lock__<seq>` nodes, contenders
/// being every child named `...__lock__<seq>` or `...__rlock__<seq>`, ordered by the sequence.
/// A Rust service using this driver shares a lock with Python services using kazoo's `Lock` at
/// the same path. (kazoo and Curator do not see each other's nodes by default; pick the driver
/// of the peers you share the lock with.)
///
/// # Examples
///
/// ```
/// use zkr_recipes::locks::{KazooLockDriver, LockInternalsDriver};
///
/// let d = KazooLockDriver;
/// assert_eq!(d.fix_for_sorting("7c3c0f4a4d6d4b0c9ad3b0e1f2a3b4c5__lock__0000000003", "__lock__"), Some("0000000003"));
/// assert_eq!(d.fix_for_sorting("lease_holder", "__lock__"), None);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct KazooLockDriver;

impl KazooLockDriver {
    /// kazoo's `Lock._NODE_NAME`.
    pub const LOCK_NAME: &'static str = crate::layouts::KAZOO_LOCK_NAME;
    /// The names kazoo's exclusive lock treats as contenders (`_EXCLUDE_NAMES`).
    const CONTENDER_NAMES: [&'static str; 2] =
        [crate::layouts::KAZOO_LOCK_NAME, crate::layouts::KAZOO_READ_LOCK_NAME];
}

impl LockInternalsDriver for KazooLockDriver {
    fn lock_name(&self) -> &str {
        Self::LOCK_NAME
    }

    fn contender(&self, lock_name: &str) -> ContenderSpec {
        ContenderSpec {
            tag: uuid::Uuid::new_v4().simple().to_string(),
            name: lock_name.to_string(),
            mode: CreateMode::EphemeralSequential,
        }
    }

    /// Persistent, as kazoo's `ensure_path` makes them.
    fn parents(&self) -> Parents {
        Parents::Persistent
    }

    fn fix_for_sorting<'a>(&self, name: &'a str, _lock_name: &str) -> Option<&'a str> {
        // kazoo: `(?:__lock__|__rlock__)(-?\d{10})$`.
        Self::CONTENDER_NAMES.iter().find_map(|marker| {
            let suffix = after_last(name, marker)?;
            sequence_key(suffix).map(|_| suffix)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn name(seq: i32) -> String {
        format!("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-{}", zookeeper_client_sequence(seq))
    }

    /// How ZooKeeper formats a sequence: `%010d` of the signed 32-bit counter.
    fn zookeeper_client_sequence(seq: i32) -> String {
        format!("{seq:010}")
    }

    #[test]
    fn the_head_holds_and_the_rest_watch_their_predecessor() {
        let d = StandardLockInternalsDriver;
        let sorted = d.sort_children(&[name(3), name(1), name(2)], "lock-");
        assert_eq!(sorted, vec![name(1), name(2), name(3)]);
        assert!(d.gets_the_lock(&sorted, &name(1), 1).unwrap().gets_the_lock);
        let p = d.gets_the_lock(&sorted, &name(3), 1).unwrap();
        assert_eq!(p, PredicateResults { gets_the_lock: false, path_to_watch: Some(name(2)) });
        // Two leases: the second holds too; the third watches the first.
        assert!(d.gets_the_lock(&sorted, &name(2), 2).unwrap().gets_the_lock);
        assert_eq!(d.gets_the_lock(&sorted, &name(3), 2).unwrap().path_to_watch, Some(name(1)));
        assert!(matches!(d.gets_the_lock(&sorted, &name(9), 1), Err(LockError::NotAContender { .. })));
    }

    #[test]
    fn foreign_and_hostile_children_are_ignored() {
        let d = StandardLockInternalsDriver;
        let children = vec![
            "planted".to_string(),
            "lock-".to_string(),
            "lock-12".to_string(),
            "lock-000000000a".to_string(),
            "x-lock-0000000000-lock-".to_string(),
            name(5),
            "\u{0}lock-0000000000".to_string(),
        ];
        let sorted = d.sort_children(&children, "lock-");
        assert_eq!(sorted, vec!["\u{0}lock-0000000000".to_string(), name(5)]);
    }

    #[test]
    fn wrapped_sequences_sort_after_the_ones_before_the_wrap() {
        let d = StandardLockInternalsDriver;
        let sorted = d.sort_children(&[name(i32::MIN), name(i32::MAX), name(i32::MAX - 1)], "lock-");
        assert_eq!(sorted, vec![name(i32::MAX - 1), name(i32::MAX), name(i32::MIN)]);
    }

    #[test]
    fn kazoo_contenders_include_read_locks() {
        let d = KazooLockDriver;
        let children = vec![
            "aaaa__lock__0000000002".to_string(),
            "bbbb__rlock__0000000001".to_string(),
            "lease_holder".to_string(),
        ];
        assert_eq!(d.sort_children(&children, "__lock__"), vec![children[1].clone(), children[0].clone()]);
        let spec = d.contender("__lock__");
        assert_eq!(spec.tag.len(), 32);
    }

    proptest! {
        #[test]
        fn sorting_is_by_sequence_for_any_mix_of_names(seqs in prop::collection::hash_set(any::<i32>(), 0..40), junk in prop::collection::vec("\\PC{0,20}", 0..10)) {
            let d = StandardLockInternalsDriver;
            let mut children: Vec<String> = seqs.iter().map(|&s| name(s)).collect();
            children.extend(junk.iter().filter(|j| d.fix_for_sorting(j, "lock-").is_none()).cloned());
            let sorted = d.sort_children(&children, "lock-");
            let mut expected: Vec<i32> = seqs.iter().copied().collect();
            expected.sort_by_key(|&s| s as u32);
            prop_assert_eq!(sorted, expected.into_iter().map(name).collect::<Vec<_>>());
        }

        #[test]
        fn sequence_key_never_panics(s in "\\PC{0,16}") {
            let _ = sequence_key(&s);
        }

        #[test]
        fn sequence_key_takes_exactly_the_spelling_of_percent_010d(n in any::<i32>(), s in "[-+0-9]{0,12}") {
            let reference = |s: &str| {
                let value: i32 = s.parse().ok()?;
                (!s.starts_with('+') && format!("{value:010}") == s).then_some(u64::from(value as u32))
            };
            let spelled = format!("{n:010}");
            prop_assert_eq!(sequence_key(&spelled), Some(u64::from(n as u32)));
            prop_assert_eq!(sequence_key(&s), reference(&s));
            prop_assert_eq!(sequence_key("-000000000"), None);
        }

        #[test]
        fn gets_the_lock_watches_exactly_max_leases_ahead(n in 1usize..30, leases in 1usize..5, pick in 0usize..30) {
            let d = StandardLockInternalsDriver;
            let sorted: Vec<String> = (0..n as i32).map(name).collect();
            let ours = &sorted[pick % n];
            let p = d.gets_the_lock(&sorted, ours, leases).unwrap();
            let index = pick % n;
            prop_assert_eq!(p.gets_the_lock, index < leases);
            if index >= leases {
                prop_assert_eq!(p.path_to_watch.as_ref(), Some(&sorted[index - leases]));
            }
        }
    }
}
