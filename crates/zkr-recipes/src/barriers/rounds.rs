//! What tells a double barrier's rounds apart in Curator's layout, which has no round number
//! (the model checker's windows 1, 4 and 5, docs/reliability.md): a `ready` made by zkr names
//! the members it counted, a member that passed marks its node with the czxid of the `ready` it
//! passed by, and the leaver that deletes a `ready` records its round in the barrier node's
//! data, if that data is empty or an earlier record. Curator writes its default data into
//! `ready` and its members and kazoo an identifier into its members; neither reads them, nor
//! the barrier node's data, so the formats stay shared, and nodes without zkr's words count as
//! before.

/// The first line of a `ready` that names its members; one name a line follows.
const NAMES: &str = "zkr double barrier: members\n";

/// The first line of the barrier node's data once a round has left (the leave record), before
/// that round's `ready`'s czxid; the members that `ready` named follow, one a line.
const LEFT: &str = "zkr double barrier: left ";

/// What a member that passed appends to its node's data, before the `ready`'s czxid.
const PASSED: &[u8] = b"\nzkr double barrier: passed ";

/// The data of a `ready` that counted `members`.
pub(super) fn ready_naming(members: &[String]) -> Vec<u8> {
    let mut data = NAMES.to_owned();
    data.push_str(&members.join("\n"));
    data.into_bytes()
}

/// The members a `ready`'s data names: `None` for a `ready` zkr did not make (Curator's
/// default data, kazoo's empty one).
pub(super) fn named(ready: &[u8]) -> Option<Vec<&str>> {
    let names = std::str::from_utf8(ready).ok()?.strip_prefix(NAMES)?;
    Some(names.split('\n').filter(|n| !n.is_empty()).collect())
}

/// The barrier node's data recording that the round of the `ready` of czxid `ready`, which
/// named `members`, has left (the model checker's window 1: a member of that round whose
/// session was being replaced while the others left passes by it when it comes back).
pub(super) fn record(ready: i64, members: &[&str]) -> Vec<u8> {
    let mut data = format!("{LEFT}{ready}\n");
    data.push_str(&members.join("\n"));
    data.into_bytes()
}

/// The round a barrier node's data records as left: that `ready`'s czxid and the members it
/// named; `None` for any other data (empty, or a user's).
pub(super) fn recorded(data: &[u8]) -> Option<(i64, Vec<&str>)> {
    let rest = std::str::from_utf8(data).ok()?.strip_prefix(LEFT)?;
    let (czxid, names) = rest.split_once('\n').unwrap_or((rest, ""));
    Some((czxid.parse().ok()?, names.split('\n').filter(|n| !n.is_empty()).collect()))
}

/// A member node's `data` marked as passed by the `ready` of czxid `ready` (an earlier mark
/// replaced).
pub(super) fn marked(data: &[u8], ready: i64) -> Vec<u8> {
    let mut data = unmarked(data).to_vec();
    data.extend_from_slice(PASSED);
    data.extend_from_slice(ready.to_string().as_bytes());
    data
}

/// The czxid of the `ready` a member's node says it passed by, if it is marked.
pub(super) fn passed(data: &[u8]) -> Option<i64> {
    let at = find_last(data, PASSED)?;
    std::str::from_utf8(&data[at + PASSED.len()..]).ok()?.parse().ok()
}

/// `data` without its mark.
fn unmarked(data: &[u8]) -> &[u8] {
    find_last(data, PASSED).map_or(data, |at| &data[..at])
}

fn find_last(data: &[u8], needle: &[u8]) -> Option<usize> {
    data.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn what_curator_and_kazoo_write_names_nobody_and_marks_nothing() {
        assert_eq!(named(b"127.0.1.1"), None, "Curator's default data");
        assert_eq!(named(b""), None, "kazoo's ready");
        assert_eq!(passed(b"127.0.1.1"), None);
        assert_eq!(passed(b"worker-1"), None, "kazoo's identifier");
    }

    #[test]
    fn a_ready_names_its_members_and_an_empty_quota_nobody() {
        let members = vec!["a1".to_owned(), "b2".to_owned()];
        assert_eq!(named(&ready_naming(&members)), Some(vec!["a1", "b2"]));
        assert_eq!(named(&ready_naming(&[])), Some(vec![]));
    }

    #[test]
    fn a_leave_record_gives_back_its_round_and_other_data_none() {
        let data = record(4_294_967_301, &["a1", "b2"]);
        assert_eq!(recorded(&data), Some((4_294_967_301, vec!["a1", "b2"])));
        assert_eq!(recorded(&record(7, &[])), Some((7, vec![])));
        assert_eq!(recorded(b""), None, "a barrier node made by Curator or kazoo");
        assert_eq!(recorded(b"zkr double barrier: left x\na1"), None);
        assert_eq!(recorded(b"a user's data"), None);
    }

    proptest! {
        /// A mark keeps what the member wrote (kazoo's identifier), and a new mark replaces
        /// the old one.
        #[test]
        fn a_mark_keeps_the_data_and_the_latest_czxid(
            data in proptest::collection::vec(any::<u8>(), 0..64),
            first in any::<i64>(),
            second in any::<i64>(),
        ) {
            let once = marked(&data, first);
            prop_assert_eq!(passed(&once), Some(first));
            let twice = marked(&once, second);
            prop_assert_eq!(passed(&twice), Some(second));
            prop_assert_eq!(unmarked(&twice), unmarked(&once));
            if find_last(&data, PASSED).is_none() {
                prop_assert_eq!(unmarked(&once), &data[..]);
            }
        }
    }
}
