//! The config checker's history: one writer raising a value (1, 2, 3, ..., each value written
//! again until a write of it succeeds) and subscribers reading it through their watches, as a
//! sequential specification ([`Register`]).
//!
//! ZooKeeper makes writes linearizable and reads sequentially consistent: a subscriber's read
//! may be behind the latest write, but never ahead of it and never behind what that subscriber
//! read before. So a read of `value` by subscriber `s` is possible exactly when `value` has been
//! written (the writer writes in order, so: when `value` is at most the highest value written)
//! and is at least the last value `s` read. A read is recorded at the moment its snapshot was
//! published (invoked and returned at once): the server answered it before then. A write whose
//! outcome the writer could not know may take effect at any time after its invocation, or never.
//! The history passes when some order of the operations that keeps real time explains every
//! read: no value seen before its write was invoked, and no subscriber's value going back.
//!
//! The tester keeps a copy of the remaining history at each step, so the history is cut at the
//! returns of successful writes ([`segments`]): there the highest value written is known (the
//! one that returned, the next not yet invoked) and so is each subscriber's last read.

use stateright::semantics::SequentialSpec;

use super::{check_segments, Nanos, Operation, Segment, Violation};

/// The value and what each subscriber last read of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Register {
    /// The highest value written (values are written in order: every one up to it was).
    pub highest: u64,
    /// Each subscriber's last read.
    pub seen: Vec<u64>,
}

/// An operation on the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegisterOp {
    /// The writer wrote this value.
    Write(u64),
    /// A subscriber read this value.
    Read {
        /// Which one.
        subscriber: usize,
        /// What it read.
        value: u64,
    },
}

/// What the specification says of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegisterRet {
    /// It could have returned that here.
    Ok,
    /// It could not.
    Impossible,
}

impl SequentialSpec for Register {
    type Op = RegisterOp;
    type Ret = RegisterRet;

    fn invoke(&mut self, op: &RegisterOp) -> RegisterRet {
        match *op {
            RegisterOp::Write(value) => {
                self.highest = self.highest.max(value);
                RegisterRet::Ok
            }
            RegisterOp::Read { subscriber, value } => match self.seen.get_mut(subscriber) {
                Some(seen) if *seen <= value && value <= self.highest => {
                    *seen = value;
                    RegisterRet::Ok
                }
                _ => RegisterRet::Impossible,
            },
        }
    }
}

/// One operation of the history.
pub type RegisterOperation = Operation<RegisterOp, RegisterRet>;

/// A write of `value` by `process`, invoked at `invoked`; `returned` is when it succeeded, or
/// `None` when its outcome is unknown.
pub fn write(process: usize, value: u64, invoked: Nanos, returned: Option<Nanos>) -> RegisterOperation {
    Operation {
        process,
        op: RegisterOp::Write(value),
        invoked,
        returned: returned.map(|at| (at, RegisterRet::Ok)),
    }
}

/// A read of `value` by subscriber `subscriber`, published at `at`.
pub fn read(subscriber: usize, value: u64, at: Nanos) -> RegisterOperation {
    Operation {
        process: subscriber,
        op: RegisterOp::Read { subscriber, value },
        invoked: at,
        returned: Some((at, RegisterRet::Ok)),
    }
}

/// Checks `operations` from `initial`: the failing part, shrunk, if any.
pub fn check(initial: Register, operations: Vec<RegisterOperation>) -> Option<Violation<Register>> {
    check_segments(segments(initial, operations)).into_iter().next()
}

/// How many successful writes a part of a history holds at least before it is cut.
const PART_WRITES: usize = 100;

/// `operations` cut into parts of at least [`PART_WRITES`] successful writes, each from the
/// register's state where it starts, at cuts that are exact: the parts pass exactly when the
/// whole does.
///
/// A cut is made at the return of a successful write: nothing else straddles it (the writer runs
/// one write at a time, and a read is a point), the highest value written there is that write's
/// (the next is not invoked yet), and each subscriber's last read is known. A write whose outcome
/// is unknown stays in the part it was invoked in: it is of a value at most the next success's,
/// so taking effect later could not raise the highest value or explain a read.
pub fn segments(initial: Register, mut operations: Vec<RegisterOperation>) -> Vec<Segment<Register>> {
    cut_every(initial, &mut operations, PART_WRITES)
}

/// [`segments`], cutting after at least `writes` successful writes.
fn cut_every(
    initial: Register,
    operations: &mut [RegisterOperation],
    writes: usize,
) -> Vec<Segment<Register>> {
    operations.sort_by_key(|o| o.invoked);
    let mut parts = Vec::new();
    let (mut state, mut part, mut successes) = (initial.clone(), Vec::new(), 0);
    let mut start = initial;
    let mut pending: Vec<RegisterOperation> = Vec::new();
    for o in operations.iter() {
        // Successful writes whose return comes before this invocation close the part there.
        pending.sort_by_key(|p| p.returned.as_ref().map(|(at, _)| *at));
        while pending.first().is_some_and(|p| p.returned.as_ref().is_some_and(|(at, _)| *at < o.invoked)) {
            let done = pending.remove(0);
            if let RegisterOp::Write(value) = done.op {
                state.highest = state.highest.max(value);
            }
            successes += 1;
            part.push(done);
            if successes >= writes && pending.is_empty() {
                parts.push((std::mem::replace(&mut start, state.clone()), std::mem::take(&mut part)));
                successes = 0;
            }
        }
        match o.op {
            RegisterOp::Write(_) if o.returned.is_some() => pending.push(o.clone()),
            RegisterOp::Read { subscriber, value } => {
                if let Some(seen) = state.seen.get_mut(subscriber) {
                    *seen = value;
                }
                part.push(o.clone());
            }
            RegisterOp::Write(_) => part.push(o.clone()),
        }
    }
    part.extend(pending);
    parts.push((start, part));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn initial() -> Register {
        Register { highest: 0, seen: vec![0, 0] }
    }

    /// Values 1..=n written one after another, each taking 10 ns, 10 ns apart.
    fn writes(n: u64) -> Vec<RegisterOperation> {
        (1..=n).map(|v| write(9, v, v * 20, Some(v * 20 + 10))).collect()
    }

    #[test]
    fn behind_but_in_order_passes() {
        let mut history = writes(5);
        // Subscriber 0 sees every value late, subscriber 1 skips some.
        history.extend([read(0, 0, 25), read(0, 1, 45), read(0, 3, 95), read(1, 2, 70), read(1, 5, 200)]);
        assert!(check(initial(), history).is_none());
    }

    #[test]
    fn a_value_going_back_or_seen_before_its_write_fails() {
        let mut back = writes(5);
        back.extend([read(0, 3, 95), read(0, 2, 120)]);
        assert!(check(initial(), back).is_some());
        // Value 4 is invoked at 80: a read of it published at 70 is from nowhere.
        let mut early = writes(5);
        early.push(read(1, 4, 70));
        assert!(check(initial(), early).is_some());
        // But a read published while its write runs (80..90) is possible.
        let mut during = writes(5);
        during.push(read(1, 4, 85));
        assert!(check(initial(), during).is_none());
    }

    #[test]
    fn an_unknown_write_may_explain_a_read_or_not() {
        // 3 was tried with no answer at 60, and written again at 80.
        let mut history: Vec<_> = writes(5).into_iter().filter(|o| o.op != RegisterOp::Write(3)).collect();
        history.push(write(9, 3, 60, None));
        history.push(write(9, 3, 75, Some(78)));
        history.push(read(0, 3, 70));
        assert!(check(initial(), history.clone()).is_none());
        // Without the unknown try, 3 was not written at 70.
        history.retain(|o| o.returned.is_some());
        assert!(check(initial(), history).is_some());
    }

    #[test]
    fn the_parts_pass_exactly_when_the_whole_does() {
        let mut history = writes(40);
        for (i, v) in (0..40u64).enumerate() {
            history.push(read(i % 2, v, v * 20 + 15));
        }
        let parts = cut_every(initial(), &mut history.clone(), 5);
        assert!(parts.len() >= 7, "{} parts", parts.len());
        assert!(check_segments(parts).is_empty());
        // A read going back across a cut fails in the part it is in.
        history.push(read(0, 1, 700));
        let parts = cut_every(initial(), &mut history.clone(), 5);
        let violations = check_segments(parts);
        assert_eq!(violations.len(), 1);
        assert!(violations[0].to_string().contains("Read { subscriber: 0, value: 1 }"), "{}", violations[0]);
        assert!(check(initial(), history).is_some());
    }
}
