//! Curator's queue wire formats: the item framing of `ItemSerializer` and the node names of the
//! priority, delay and id queues. Pure functions, property-tested.
//!
//! Framing (big-endian, as Java's `DataOutputStream`): the version int `0x00010001`, then per
//! item the opcode byte `0x01`, a length int and the item's bytes, then the opcode `0x02`.

use crate::layouts::sequence_key;

/// `ItemSerializer.VERSION`.
const VERSION: u32 = 0x0001_0001;
/// `ItemSerializer.ITEM_OPCODE`.
const ITEM: u8 = 0x01;
/// `ItemSerializer.EOF_OPCODE`.
const EOF: u8 = 0x02;
/// The separator of the delay and id queues' names (`'|'`).
const SEPARATOR: char = '|';

/// The bytes of one queue node holding `items` (already serialized), in Curator's framing.
pub(crate) fn encode(items: &[Vec<u8>]) -> Vec<u8> {
    let len = 5 + items.iter().map(|i| 5 + i.len()).sum::<usize>();
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&VERSION.to_be_bytes());
    for item in items {
        out.push(ITEM);
        out.extend_from_slice(&(item.len() as u32).to_be_bytes());
        out.extend_from_slice(item);
    }
    out.push(EOF);
    out
}

/// The items of one queue node, or what is wrong with its bytes.
pub(crate) fn decode(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut rest = data;
    let version = take_u32(&mut rest).ok_or("shorter than the version")?;
    if version != VERSION {
        return Err(format!("version {version:#x}; expected {VERSION:#x}"));
    }
    let mut items = Vec::new();
    loop {
        let (&opcode, tail) = rest.split_first().ok_or("no end-of-items opcode")?;
        rest = tail;
        match opcode {
            EOF => return Ok(items),
            ITEM => {
                let len = take_u32(&mut rest).ok_or("an item without its length")?;
                let len = usize::try_from(len)
                    .ok()
                    .filter(|l| *l <= i32::MAX as usize)
                    .ok_or("a negative length")?;
                if rest.len() < len {
                    return Err(format!("an item of {len} bytes with {} left", rest.len()));
                }
                let (item, tail) = rest.split_at(len);
                items.push(item.to_vec());
                rest = tail;
            }
            other => return Err(format!("opcode {other:#x}; expected {ITEM:#x} or {EOF:#x}")),
        }
    }
}

fn take_u32(rest: &mut &[u8]) -> Option<u32> {
    let (head, tail) = rest.split_first_chunk::<4>()?;
    *rest = tail;
    Some(u32::from_be_bytes(*head))
}

/// Curator's `DistributedPriorityQueue.priorityToString`: `1` for a priority of 0 or more, `0`
/// for a negative one, then the 32 bits in 8 upper-case hex digits, so names sort by priority.
pub(crate) fn priority_name(priority: i32) -> String {
    format!("{}{:08X}", if priority >= 0 { '1' } else { '0' }, priority as u32)
}

/// The priority in a priority queue's node name (`queue-` + 9 characters + the sequence).
pub(crate) fn parse_priority(name: &str, prefix: &str) -> Option<i32> {
    let digits = name.strip_prefix(prefix)?.get(1..9)?;
    u32::from_str_radix(digits, 16).ok().map(|p| p as i32)
}

/// Curator's `DistributedDelayQueue.epochToString`: `|<epoch ms in at least 8 hex digits>|`.
pub(crate) fn delay_name(until_epoch_ms: u64) -> String {
    format!("{SEPARATOR}{until_epoch_ms:08X}{SEPARATOR}")
}

/// Curator's `getEpoch`: the hex between the last two separators; 0 (due now) when missing.
pub(crate) fn parse_delay(name: &str) -> u64 {
    let Some(last) = name.rfind(SEPARATOR) else { return 0 };
    let Some(first) = name[..last].rfind(SEPARATOR) else { return 0 };
    if first == 0 || last <= first + 1 {
        return 0;
    }
    u64::from_str_radix(&name[first + 1..last], 16).unwrap_or(0)
}

/// Curator's `DistributedIdQueue.fixId`: `/` and `|` become `_`.
pub(crate) fn fix_id(id: &str) -> String {
    id.replace(['/', SEPARATOR], "_")
}

/// `|<fixed id>|`, the id part of an id queue's node name.
pub(crate) fn id_name(id: &str) -> String {
    format!("{SEPARATOR}{}{SEPARATOR}", fix_id(id))
}

/// Curator's `parseId`: the id between the first two separators and the name without it (the
/// sort key); `None` for a name without an id.
pub(crate) fn parse_id(name: &str) -> Option<(&str, String)> {
    let first = name.find(SEPARATOR)?;
    let second = first + 1 + name[first + 1..].find(SEPARATOR)?;
    Some((&name[first + 1..second], format!("{}{}", &name[..first], &name[second + 1..])))
}

/// A queue node's name (starting with `prefix`) split into what comes before its ZooKeeper
/// sequence and the sequence's order key ([`sequence_key`]: the 32-bit counter read as
/// unsigned, so that names created after it wraps past 2147483647 order after the ones
/// before); the whole name and `None` without a sequence. Queue order is this pair's order.
///
/// ZooKeeper prints the counter as `%010d`: ten characters, eleven from -1000000000 down, whose
/// sign reads like the prefix's own `-`. Where the sequence starts is known from the layout:
/// after the last `|` (delay and id queues), else after the prefix and, in a priority queue,
/// its nine-character priority.
pub(crate) fn split_sequence<'a>(name: &'a str, prefix: &str) -> (&'a str, Option<u64>) {
    let width = match name.strip_prefix(prefix).map(str::len) {
        _ if name.contains(SEPARATOR) => name.len() - name.rfind(SEPARATOR).map_or(0, |at| at + 1),
        Some(11 | 20) => 11,
        _ => 10,
    };
    match name.len().checked_sub(width).and_then(|at| Some((at, sequence_key(name.get(at..)?)?))) {
        Some((at, key)) => (&name[..at], Some(key)),
        None => (name, None),
    }
}

/// The order key of a queue node's trailing sequence (see [`split_sequence`]); `None`
/// without one.
pub(crate) fn sequence(name: &str, prefix: &str) -> Option<u64> {
    split_sequence(name, prefix).1
}

/// Was the name's sequence given after the counter wrapped (it prints negative)? Such names
/// sort before the others as strings, though they come after them.
pub(crate) fn is_wrapped(name: &str, prefix: &str) -> bool {
    sequence(name, prefix).is_some_and(|key| key > i32::MAX as u64)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn one_item_is_framed_byte_for_byte_as_curator_does() {
        let framed = encode(&[b"hi".to_vec()]);
        assert_eq!(framed, [0, 1, 0, 1, 1, 0, 0, 0, 2, b'h', b'i', 2]);
        assert_eq!(encode(&[]), [0, 1, 0, 1, 2]);
        assert_eq!(encode(&[Vec::new()]), [0, 1, 0, 1, 1, 0, 0, 0, 0, 2]);
    }

    #[test]
    fn bad_framing_is_an_error_not_a_panic() {
        assert!(decode(b"").is_err());
        assert!(decode(&[0, 1, 0, 2, 2]).unwrap_err().contains("version"));
        assert!(decode(&[0, 1, 0, 1]).unwrap_err().contains("end-of-items"));
        assert!(decode(&[0, 1, 0, 1, 7]).unwrap_err().contains("opcode"));
        assert!(decode(&[0, 1, 0, 1, 1, 0, 0, 0, 9, 1, 2]).unwrap_err().contains("9 bytes"));
        assert!(decode(&[0, 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 2]).unwrap_err().contains("negative"));
    }

    #[test]
    fn names_match_curators_encodings() {
        assert_eq!(priority_name(0), "100000000");
        assert_eq!(priority_name(10), "10000000A");
        assert_eq!(priority_name(-1), "0FFFFFFFF");
        assert_eq!(delay_name(0x1234), "|00001234|");
        assert_eq!(parse_delay("queue-|18C5A2B3F00|0000000001"), 0x18C5A2B3F00);
        assert_eq!(parse_delay("queue-0000000001"), 0);
        assert_eq!(id_name("a/b|c"), "|a_b_c|");
        let (id, cleaned) = parse_id("queue-|job-7|0000000003").unwrap();
        assert_eq!((id, cleaned.as_str()), ("job-7", "queue-0000000003"));
        assert_eq!(sequence("queue-0000000042", "queue-"), Some(42));
        assert_eq!(sequence("qn--000000001", "qn-"), Some(u64::from(u32::MAX)));
        assert_eq!(sequence("x", "qn-"), None);
    }

    #[test]
    fn names_after_the_32_bit_wrap_order_after_the_ones_before() {
        let names = [
            "queue-2147483646",
            "queue-2147483647",
            "queue--2147483648",
            "queue--2147483647",
            "queue--000000001",
        ];
        let key = |name| split_sequence(name, "queue-");
        assert!(names.windows(2).all(|w| key(w[0]) < key(w[1])), "{names:?}");
        assert_eq!(key("queue--2147483648"), ("queue-", Some(1 << 31)));
        assert_eq!(key("queue-2147483647"), ("queue-", Some(i32::MAX as u64)));
        assert!(is_wrapped("queue--000000001", "queue-") && !is_wrapped("queue-2147483647", "queue-"));
        // A priority queue's priority comes first, then the sequence.
        let (a, b) = (key("queue-100000000-2147483647"), key("queue-1000000010000000005"));
        assert_eq!(a, ("queue-100000000", Some(1 << 31 | 1)));
        assert!(a < b);
        // Delay and id queues: after the last separator.
        assert_eq!(key("queue-|18C5A2B3F00|-2147483648"), ("queue-|18C5A2B3F00|", Some(1 << 31)));
    }

    proptest! {
        #[test]
        fn the_first_name_in_string_order_tells_whether_any_is_wrapped(seqs in prop::collection::vec(any::<i32>(), 1..50)) {
            // What a take relies on to avoid looking at every name (`Core::ready`).
            let mut names: Vec<String> = seqs.iter().map(|s| format!("queue-{s:010}")).collect();
            names.sort();
            let any = names.iter().any(|n| is_wrapped(n, "queue-"));
            prop_assert_eq!(is_wrapped(&names[0], "queue-"), any);
        }

        #[test]
        fn framing_round_trips(items in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8)) {
            prop_assert_eq!(decode(&encode(&items)).unwrap(), items);
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&data);
        }

        #[test]
        fn priority_names_sort_as_priorities_and_round_trip(a in any::<i32>(), b in any::<i32>()) {
            let (na, nb) = (priority_name(a), priority_name(b));
            prop_assert_eq!(a.cmp(&b), na.cmp(&nb));
            prop_assert_eq!(parse_priority(&format!("queue-{na}0000000001"), "queue-"), Some(a));
        }

        #[test]
        fn delay_names_round_trip(epoch in 1u64..(1 << 52), seq in 0u32..i32::MAX as u32) {
            let name = format!("queue-{}{seq:010}", delay_name(epoch));
            prop_assert_eq!(parse_delay(&name), epoch);
            prop_assert_eq!(sequence(&name, "queue-"), Some(u64::from(seq)));
        }

        #[test]
        fn ids_round_trip_once_fixed(id in "[a-zA-Z0-9/|_.-]{1,20}") {
            let name = format!("queue-{}0000000005", id_name(&id));
            let fixed = fix_id(&id);
            let (parsed, cleaned) = parse_id(&name).unwrap();
            prop_assert_eq!(parsed, fixed.as_str());
            prop_assert_eq!(cleaned, "queue-0000000005");
        }
    }
}
