//! Unit and property tests of the protected create's pure parts.

use super::*;
use proptest::prelude::*;

#[test]
fn a_listing_of_another_incarnation_of_the_directory_proves_nothing() {
    // The interleaving of issue 16 item 11: the directory had one child created and
    // deleted (the proof expects sequence 1); it is deleted and recreated, a foreign node
    // takes sequence 0 there, and ours gets 1.
    let listed = Stat { czxid: 10, ..Parent { creates: 1, children: 0 }.stat() };
    let recreated = Stat { czxid: 20, ..Parent { creates: 2, children: 2 }.stat() };
    assert!(listing_precedes(&listed, 1), "the sequence alone is fooled");
    assert!(!listing_is_complete(&listed, 1, &recreated));
    let same = Stat { czxid: 10, ..Parent { creates: 2, children: 1 }.stat() };
    assert!(listing_is_complete(&listed, 1, &same));
}

#[test]
fn prefix_is_curators() {
    let id = Uuid::parse_str("53345f98-9423-4e0c-a7b5-9f819e3ec2e1").unwrap();
    assert_eq!(protected_prefix(&id), "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-");
    assert_eq!(protected_prefix(&id).len(), 40);
}

#[test]
fn sequences_parse_including_negative_wraps() {
    assert_eq!(parse_sequence("_c_x-lock-0000000007", "_c_x-lock-"), Some(7));
    assert_eq!(parse_sequence("_c_x-lock--2147483648", "_c_x-lock-"), Some(-2147483648));
    assert_eq!(parse_sequence("_c_y-lock-1", "_c_x-lock-"), None);
}

/// A parent as ZooKeeper keeps it: the count of child creates (which names the next
/// sequential child) and the children; its `Stat` reports `cversion` as creates plus deletes
/// (DataNode.copyStat), in 32-bit arithmetic.
#[derive(Debug, Clone, Copy)]
struct Parent {
    creates: i32,
    children: i32,
}

impl Parent {
    fn stat(self) -> Stat {
        Stat {
            czxid: 1,
            mzxid: 1,
            pzxid: 1,
            ctime: 0,
            mtime: 0,
            version: 0,
            cversion: self.creates.wrapping_mul(2).wrapping_sub(self.children),
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 0,
            num_children: self.children,
        }
    }

    /// The sequence number the next sequential create gets, as the client parses it.
    fn next_sequence(self) -> i64 {
        i64::from(self.creates)
    }

    fn apply(&mut self, create: bool) {
        if create {
            self.creates = self.creates.wrapping_add(1);
            self.children += 1;
        } else if self.children > 0 {
            self.children -= 1;
        }
    }
}

#[test]
fn a_listing_right_before_the_create_is_complete() {
    let mut parent = Parent { creates: 0, children: 0 };
    assert!(listing_precedes(&parent.stat(), 0));
    parent.apply(true);
    parent.apply(false);
    // The server's figures of the integration test: cversion 2, no children, next is 1.
    assert_eq!(parent.stat().cversion, 2);
    assert!(listing_precedes(&parent.stat(), 1));
    let listed = parent.stat();
    parent.apply(true);
    assert!(!listing_precedes(&listed, parent.next_sequence()));
}

#[test]
fn the_check_survives_the_counter_wrapping() {
    let mut parent = Parent { creates: i32::MAX, children: 3 };
    assert!(listing_precedes(&parent.stat(), parent.next_sequence()));
    parent.apply(true);
    assert_eq!(parent.next_sequence(), -2147483648);
    assert!(listing_precedes(&parent.stat(), parent.next_sequence()));
    let listed = parent.stat();
    parent.apply(false);
    assert!(listing_precedes(&listed, parent.next_sequence()));
    parent.apply(true);
    assert!(!listing_precedes(&listed, parent.next_sequence()));
}

proptest! {
    /// Deletes between the listing and the create keep it usable (it only lists some gone
    /// nodes too); any create in between (up to a billion) makes it refused.
    #[test]
    fn only_a_create_in_between_spoils_the_listing(
        creates in any::<i32>(),
        children in 0..10_000i32,
        history in proptest::collection::vec(any::<bool>(), 0..50),
        later in prop_oneof![Just(0u32), 1..1_000_000_000u32],
    ) {
        let mut parent = Parent { creates, children };
        for &create in &history {
            parent.apply(create);
        }
        let listed = parent.stat();
        for &create in &history {
            if !create {
                parent.apply(false);
            }
        }
        for _ in 0..later.min(64) {
            parent.apply(true);
        }
        if later > 64 {
            parent.creates = parent.creates.wrapping_add((later - 64) as i32);
        }
        prop_assert_eq!(listing_precedes(&listed, parent.next_sequence()), later == 0);
    }

    #[test]
    fn protected_names_never_panic(name in "\\PC{0,60}") {
        let _ = is_protected_name(&name);
        let _ = normalize(&name);
    }
}
