//! [`LockLayout`]: whose recipe a lock directory's contenders belong to, read from their names.
//!
//! Two recipes of different layouts at one path do not see each other's contenders (each
//! orders only its own), so both hold at once: a kazoo `Lock` beside Curator's mutex, readers
//! of a read-write lock beside a plain mutex, a `LeaderLatch` beside a kazoo `Election`. zkr
//! refuses to join a directory that already holds another layout's contenders
//! ([`LockError::LayoutConflict`](super::LockError::LayoutConflict)); `zkr ui` and the CLI
//! name the layouts they find with the same classification.

use crate::layouts::{
    sequence_key, KAZOO_LOCK_NAME, KAZOO_READ_LOCK_NAME, LATCH_NAME, LOCK_NAME, READ_LOCK_NAME,
    SEMAPHORE_LEASES, SEMAPHORE_LOCKS, WRITE_LOCK_NAME,
};

/// A recipe layout, as its contender nodes' names show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LockLayout {
    /// Curator's `InterProcessMutex` (and `LeaderSelector`): `<prefix>lock-<seq>`.
    CuratorMutex,
    /// Curator's `InterProcessReadWriteLock`: `<prefix>__READ__<seq>`, `<prefix>__WRIT__<seq>`.
    CuratorReadWrite,
    /// Curator's `LeaderLatch`: `<prefix>latch-<seq>`.
    CuratorLatch,
    /// Curator's `InterProcessSemaphoreV2`: the `leases` and `locks` directories.
    CuratorSemaphore,
    /// kazoo's `Lock`, `ReadLock`, `WriteLock` and `Election`: `<uuid hex>__lock__<seq>`,
    /// `<uuid hex>__rlock__<seq>`.
    Kazoo,
}

impl LockLayout {
    /// The layout whose contender (or directory) `name` is, if zkr knows it.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::locks::LockLayout;
    ///
    /// assert_eq!(LockLayout::of("a1b2c3__lock__0000000004"), Some(LockLayout::Kazoo));
    /// assert_eq!(LockLayout::of("_c_0f5c-__READ__0000000001"), Some(LockLayout::CuratorReadWrite));
    /// assert_eq!(LockLayout::of("_c_0f5c-lock-0000000002"), Some(LockLayout::CuratorMutex));
    /// assert_eq!(LockLayout::of("notes.txt"), None);
    /// ```
    pub fn of(name: &str) -> Option<Self> {
        if name == SEMAPHORE_LEASES || name == SEMAPHORE_LOCKS {
            return Some(LockLayout::CuratorSemaphore);
        }
        const MARKERS: [(&str, LockLayout); 6] = [
            (KAZOO_READ_LOCK_NAME, LockLayout::Kazoo),
            (KAZOO_LOCK_NAME, LockLayout::Kazoo),
            (READ_LOCK_NAME, LockLayout::CuratorReadWrite),
            (WRITE_LOCK_NAME, LockLayout::CuratorReadWrite),
            (LATCH_NAME, LockLayout::CuratorLatch),
            (LOCK_NAME, LockLayout::CuratorMutex),
        ];
        MARKERS.into_iter().find_map(|(marker, layout)| {
            let at = name.rfind(marker)?;
            sequence_key(&name[at + marker.len()..]).map(|_| layout)
        })
    }

    /// The recipe, as a person would name it.
    pub fn describe(self) -> &'static str {
        match self {
            LockLayout::CuratorMutex => "Curator's InterProcessMutex layout (zkr lock)",
            LockLayout::CuratorReadWrite => "Curator's read-write lock layout (zkr lock -s / -x)",
            LockLayout::CuratorLatch => "Curator's LeaderLatch layout (zkr elect)",
            LockLayout::CuratorSemaphore => "Curator's semaphore layout (zkr lock -n)",
            LockLayout::Kazoo => "kazoo's Lock / Election layout",
        }
    }

    /// What shares a directory of this layout.
    pub fn to_share(self) -> &'static str {
        match self {
            LockLayout::CuratorMutex => "InterProcessMutex::new (zkr lock PATH)",
            LockLayout::CuratorReadWrite => "InterProcessReadWriteLock::new (zkr lock -s / -x PATH)",
            LockLayout::CuratorLatch => "LeaderLatch (zkr elect PATH)",
            LockLayout::CuratorSemaphore => "InterProcessSemaphoreV2 (zkr lock -n MAX PATH)",
            LockLayout::Kazoo => {
                "InterProcessMutex::kazoo, InterProcessReadWriteLock::kazoo or kazoo::Election (zkr lock and zkr elect \
                 use Curator's layouts: give them another path)"
            }
        }
    }
}

/// The first of `children` that belongs to a known layout but is not `ours` (a contender our
/// driver orders): another recipe's contender at our path.
pub(crate) fn foreign<'a>(
    children: impl IntoIterator<Item = &'a String>,
    ours: impl Fn(&str) -> bool,
) -> Option<LockLayout> {
    children.into_iter().filter(|child| !ours(child)).find_map(|child| LockLayout::of(child))
}

/// What the latest listing of a lock's directory showed of other layouts. Every listing the
/// lock internals make anyway (the one sent with a create, the shared listings, the children
/// view's) is looked at: no request is added for it.
#[derive(Debug, Default)]
pub(crate) struct LayoutCheck(parking_lot::Mutex<Option<LockLayout>>);

impl LayoutCheck {
    /// Looks at a listing of the directory, `ours` telling our driver's contenders.
    pub(crate) fn observe(&self, children: &[String], ours: impl Fn(&str) -> bool) {
        *self.0.lock() = foreign(children, ours);
    }

    /// [`LockError::LayoutConflict`](super::LockError::LayoutConflict) for the lock at `path`
    /// when the latest listing showed another layout's contender.
    pub(crate) fn conflict(&self, path: &str) -> Result<(), super::LockError> {
        match *self.0.lock() {
            Some(found) => Err(super::LockError::LayoutConflict { path: path.to_owned(), found }),
            None => Ok(()),
        }
    }
}

/// Is `name` a contender `driver` orders for `lock_name`, or a semaphore's directory (perhaps
/// an empty one left behind: the semaphore itself refuses a path with other contenders)?
pub(crate) fn is_ours<D: super::LockInternalsDriver>(driver: &D, lock_name: &str, name: &str) -> bool {
    driver.fix_for_sorting(name, lock_name).is_some()
        || LockLayout::of(name) == Some(LockLayout::CuratorSemaphore)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layout_is_told_by_its_names_and_nothing_else_is() {
        let cases = [
            ("_c_4f1d2a6e-7c5b-4e7a-9d3c-1b2a3c4d5e6f-lock-0000000003", Some(LockLayout::CuratorMutex)),
            ("_c_4f1d-__WRIT__0000000001", Some(LockLayout::CuratorReadWrite)),
            ("_c_4f1d-latch-0000000009", Some(LockLayout::CuratorLatch)),
            ("0a1b2c3d4e5f60718293a4b5c6d7e8f9__rlock__0000000002", Some(LockLayout::Kazoo)),
            ("0a1b__lock__-000000001", Some(LockLayout::Kazoo)),
            ("leases", Some(LockLayout::CuratorSemaphore)),
            ("lock-", None),
            ("lock-12", None),
            ("__lock__abc", None),
            ("ready", None),
        ];
        for (name, layout) in cases {
            assert_eq!(LockLayout::of(name), layout, "{name}");
        }
    }

    #[test]
    fn only_another_layouts_contenders_count_as_foreign() {
        let children: Vec<String> =
            ["_c_1-lock-0000000001", "notes", "x__lock__0000000002"].map(String::from).into();
        let curator = |c: &str| LockLayout::of(c) == Some(LockLayout::CuratorMutex);
        assert_eq!(foreign(&children, curator), Some(LockLayout::Kazoo));
        let anything = |_: &str| true;
        assert_eq!(foreign(&children, anything), None);
    }
}
