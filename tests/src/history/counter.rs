//! The counter checker's history: increments of a `DistributedAtomicLong` as a sequential
//! specification ([`Counter`]). An increment that succeeded returned its post value, so it must
//! take effect exactly when the count goes from that value minus one to it; one whose outcome
//! the worker could not know (`CounterError::Indeterminate`, no answer in time, or its process
//! killed mid-increment) may add one at any time after its invocation, or never. The history
//! passes when some order of them explains every post value and keeps every increment that
//! returned before another was invoked ahead of it: no value handed out twice, none skipped
//! without an unknown outcome to fill it, and none behind one that had already returned.
//!
//! The history is checked whole: a success's post value leaves the tester one choice at each
//! step but for the unknown outcomes, so its search stays short.

use stateright::semantics::SequentialSpec;

use super::{check_segments, Nanos, Operation, Violation};

/// The count.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Counter {
    /// Its value.
    pub value: u64,
}

/// An increment: `Some(post)` when it succeeded with that post value, `None` when its outcome
/// is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Increment(pub Option<u64>);

/// What the specification says of an increment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CounterRet {
    /// It could have returned that here.
    Ok,
    /// It could not.
    Impossible,
}

impl SequentialSpec for Counter {
    type Op = Increment;
    type Ret = CounterRet;

    fn invoke(&mut self, op: &Increment) -> CounterRet {
        self.value += 1;
        match op.0 {
            Some(post) if post != self.value => CounterRet::Impossible,
            _ => CounterRet::Ok,
        }
    }
}

/// One increment of the history.
pub type CounterOperation = Operation<Increment, CounterRet>;

/// A success: post value `post`, invoked at `invoked`, returned at `returned`.
pub fn succeeded(process: usize, post: u64, invoked: Nanos, returned: Nanos) -> CounterOperation {
    Operation { process, op: Increment(Some(post)), invoked, returned: Some((returned, CounterRet::Ok)) }
}

/// An increment whose outcome is unknown, invoked at `invoked`.
pub fn unknown(process: usize, invoked: Nanos) -> CounterOperation {
    Operation { process, op: Increment(None), invoked, returned: None }
}

/// Checks `operations` from `initial`: the failing part, shrunk, if any.
pub fn check(initial: u64, operations: Vec<CounterOperation>) -> Option<Violation<Counter>> {
    check_segments(vec![(Counter { value: initial }, operations)]).pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increments_in_order_of_their_values_pass_and_a_gap_needs_an_unknown_outcome() {
        let history = vec![succeeded(0, 1, 0, 10), succeeded(1, 2, 5, 15), succeeded(0, 3, 20, 30)];
        assert!(check(0, history).is_none());
        // Value 3 skipped: only an unknown outcome invoked before 4's return can fill it.
        let gap = vec![succeeded(0, 1, 0, 10), succeeded(1, 2, 5, 15), succeeded(0, 4, 20, 30)];
        assert!(check(0, gap.clone()).is_some());
        let mut filled = gap.clone();
        filled.push(unknown(2, 16));
        assert!(check(0, filled).is_none());
        let mut too_late = gap;
        too_late.push(unknown(2, 31));
        assert!(check(0, too_late).is_some());
    }

    #[test]
    fn a_value_behind_one_already_returned_or_handed_out_twice_fails() {
        let behind = vec![succeeded(0, 1, 0, 5), succeeded(0, 2, 10, 20), succeeded(1, 3, 21, 25)];
        assert!(check(0, behind).is_none());
        let back = vec![succeeded(0, 1, 0, 5), succeeded(0, 3, 10, 20), succeeded(1, 2, 21, 25)];
        let violation = check(0, back).expect("a step back");
        // Shrunk to where it fails: 3 returned while 2 had not begun.
        assert!(violation.to_string().contains("Increment(Some(3))"), "{violation}");
        assert!(!violation.to_string().contains("Increment(Some(2))"), "{violation}");
        let twice = vec![succeeded(0, 1, 0, 10), succeeded(1, 1, 2, 12)];
        assert!(check(0, twice).is_some());
    }

    #[test]
    fn a_long_history_with_unknown_outcomes_is_checked_quickly() {
        // 3 workers, 1,000 increments, every 100th unknown and applied (its value unclaimed),
        // overlapping their neighbours: with the unknown outcomes tried first, this ran for
        // minutes.
        let mut history = Vec::new();
        for value in 1..=1000u64 {
            let (invoked, returned) = (value * 10, value * 10 + 25);
            let worker = (value % 3) as usize;
            history.push(if value % 100 == 0 {
                unknown(worker, invoked)
            } else {
                succeeded(worker, value, invoked, returned)
            });
        }
        assert!(check(0, history.clone()).is_none());
        // And one value handed out twice fails.
        history.push(succeeded(0, 999, 20_000, 20_010));
        assert!(check(0, history).is_some());
    }
}
