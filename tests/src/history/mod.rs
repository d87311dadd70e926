//! Histories of operations on real servers, checked for linearizability (issue 46).
//!
//! A fault checker records every operation its workers ran as an [`Operation`]: what was asked,
//! when it was invoked and when it returned (on the machine's monotonic clock, which every
//! process on it shares), and what came back; an operation whose outcome is unknown (no answer,
//! or its process was killed) has no return: it may have taken effect at any time after its
//! invocation, or never. [`linearize`] asks `stateright`'s [`LinearizabilityTester`] whether
//! some order of the operations, one at a time from an initial state of a sequential
//! specification ([`SequentialSpec`]), explains every answer while keeping every operation that
//! returned before another was invoked ahead of it.
//!
//! The tester's search is exponential in the worst case and its memory quadratic in the
//! history's length, so a checker cuts its history into segments at moments where the
//! specification's state is known (see [`lock`]) and checks each from that state. A segment that
//! fails is shrunk to its shortest failing prefix in time ([`shortest_failing_prefix`]: a prefix
//! of a linearizable history is linearizable, operations still running at its end counted as
//! unknown) and printed by [`Violation`]'s `Display`.

pub mod counter;
pub mod lock;
pub mod register;

use std::fmt::{self, Debug, Display};

use stateright::semantics::{ConsistencyTester as _, LinearizabilityTester, SequentialSpec};

/// A time on the machine's monotonic clock, in nanoseconds: comparable across processes.
pub type Nanos = u64;

/// Now, on the clock every process of this machine shares (`CLOCK_MONOTONIC`).
pub fn now() -> Nanos {
    let time = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap_or_else(|_| {
        // Linux always has this clock; a failure here would make every time in a history wrong.
        unreachable!("CLOCK_MONOTONIC is always available on Linux")
    });
    (time.tv_sec() as u64).saturating_mul(1_000_000_000).saturating_add(time.tv_nsec() as u64)
}

/// One operation of a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation<Op, Ret> {
    /// Who ran it (a worker's number), for the printed trace.
    pub process: usize,
    /// What was asked.
    pub op: Op,
    /// When it was invoked (before its request was sent).
    pub invoked: Nanos,
    /// When it returned (after its answer came) and what it returned; `None` when the outcome
    /// is unknown.
    pub returned: Option<(Nanos, Ret)>,
}

impl<Op, Ret> Operation<Op, Ret> {
    /// Was it running at `at`: invoked by then and not returned by then?
    pub fn running_at(&self, at: Nanos) -> bool {
        self.invoked <= at && self.returned.as_ref().is_none_or(|(returned, _)| *returned > at)
    }
}

/// A failing part of a history: from `initial`, no order of `operations` explains their answers.
#[derive(Debug, Clone)]
pub struct Violation<S: SequentialSpec> {
    /// The specification's state at the start of the part.
    pub initial: S,
    /// The part, as recorded (its shortest failing prefix in time).
    pub operations: Vec<Operation<S::Op, S::Ret>>,
}

impl<S> Display for Violation<S>
where
    S: SequentialSpec + Debug,
    S::Op: Debug,
    S::Ret: Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "from {:?}, no order of these operations explains their answers:", self.initial)?;
        let start = self.operations.iter().map(|o| o.invoked).min().unwrap_or(0);
        let ms = |t: Nanos| (t - start) as f64 / 1e6;
        let mut operations: Vec<_> = self.operations.iter().collect();
        operations.sort_by_key(|o| o.invoked);
        for o in operations {
            match &o.returned {
                Some((at, ret)) => writeln!(
                    f,
                    "  {:>10.3} .. {:>10.3} ms  worker {}  {:?} -> {:?}",
                    ms(o.invoked),
                    ms(*at),
                    o.process,
                    o.op,
                    ret
                )?,
                None => writeln!(
                    f,
                    "  {:>10.3} .. no answer     worker {}  {:?}",
                    ms(o.invoked),
                    o.process,
                    o.op
                )?,
            }
        }
        Ok(())
    }
}

/// The first lane of the unknown outcomes: above any lane of the answered operations.
const UNKNOWN_LANES: usize = usize::MAX / 2;

/// Feeds `operations` to a [`LinearizabilityTester`] from `initial` and returns the order it
/// found, or `None` when none exists.
///
/// The tester wants each thread's operations one after another; operations overlap freely
/// here, so each goes to a lane that is free when it is invoked. Lanes only say what ran one
/// after another, which the times say already. An unknown outcome gets a lane of its own, after
/// every other in the tester's order and in the order of invocation: the tester tries the
/// answered operations first and the unknown ones last, earliest first, which keeps its search
/// short when an unknown outcome fills a gap (trying them first, it tried every order of them at
/// every step: a counter's history of 2,285 increments with 12 unknown outcomes ran for minutes).
/// At equal times an invocation counts as before a return: the two are taken as overlapping.
/// Deep histories recurse deeply: run this on a thread with a large stack ([`on_large_stack`]).
pub fn linearize<S>(initial: &S, operations: &[Operation<S::Op, S::Ret>]) -> Option<Vec<(S::Op, S::Ret)>>
where
    S: SequentialSpec + Clone,
    S::Op: Clone + Debug,
    S::Ret: Clone + Debug + PartialEq,
{
    // (time, 0 = invoke / 1 = return, index)
    let mut events: Vec<(Nanos, u8, usize)> = Vec::with_capacity(operations.len() * 2);
    for (index, o) in operations.iter().enumerate() {
        events.push((o.invoked, 0, index));
        if let Some((at, _)) = &o.returned {
            events.push(((*at).max(o.invoked), 1, index));
        }
    }
    events.sort_unstable();
    let mut tester = LinearizabilityTester::new(initial.clone());
    let mut lane_busy: Vec<bool> = Vec::new();
    let mut lane_of = vec![0usize; operations.len()];
    let mut unknown_lanes = UNKNOWN_LANES;
    for (_, kind, index) in events {
        let o = &operations[index];
        let fed = if kind == 0 && o.returned.is_none() {
            unknown_lanes += 1;
            tester.on_invoke(unknown_lanes, o.op.clone()).map(|_| ())
        } else if kind == 0 {
            let lane = lane_busy.iter().position(|busy| !busy).unwrap_or_else(|| {
                lane_busy.push(false);
                lane_busy.len() - 1
            });
            lane_busy[lane] = true;
            lane_of[index] = lane;
            tester.on_invoke(lane, o.op.clone()).map(|_| ())
        } else {
            let lane = lane_of[index];
            lane_busy[lane] = false;
            let ret = o.returned.as_ref().map(|(_, ret)| ret.clone())?;
            tester.on_return(lane, ret).map(|_| ())
        };
        // Only a lane fed out of order fails here, which the lanes above rule out.
        fed.ok()?;
    }
    tester.serialized_history()
}

/// The shortest prefix in time of a failing `operations` that still fails: the operations
/// invoked by some time, those that had not returned by then counted as unknown.
pub fn shortest_failing_prefix<S>(
    initial: &S,
    operations: &[Operation<S::Op, S::Ret>],
) -> Vec<Operation<S::Op, S::Ret>>
where
    S: SequentialSpec + Clone,
    S::Op: Clone + Debug,
    S::Ret: Clone + Debug + PartialEq,
{
    let prefix = |at: Nanos| -> Vec<Operation<S::Op, S::Ret>> {
        operations
            .iter()
            .filter(|o| o.invoked <= at)
            .map(|o| Operation {
                returned: o.returned.clone().filter(|(returned, _)| *returned <= at),
                ..o.clone()
            })
            .collect()
    };
    let mut times: Vec<Nanos> = operations
        .iter()
        .flat_map(|o| std::iter::once(o.invoked).chain(o.returned.as_ref().map(|(at, _)| *at)))
        .collect();
    times.sort_unstable();
    times.dedup();
    // Linearizability is prefix-closed: the prefixes pass up to some time and fail from it on.
    let first_failing = times.partition_point(|at| linearize(initial, &prefix(*at)).is_some());
    match times.get(first_failing) {
        Some(at) => prefix(*at),
        None => operations.to_vec(),
    }
}

/// A part of a history and the specification's state at its start.
pub type Segment<S> = (S, Vec<Operation<<S as SequentialSpec>::Op, <S as SequentialSpec>::Ret>>);

/// Checks each segment; the failing ones, shrunk.
pub fn check_segments<S>(segments: Vec<Segment<S>>) -> Vec<Violation<S>>
where
    S: SequentialSpec + Clone + Send + 'static,
    S::Op: Clone + Debug + Send,
    S::Ret: Clone + Debug + PartialEq + Send,
{
    on_large_stack(move || {
        segments
            .into_iter()
            .filter(|(initial, operations)| linearize(initial, operations).is_none())
            .map(|(initial, operations)| {
                let operations = shortest_failing_prefix(&initial, &operations);
                Violation { initial, operations }
            })
            .collect()
    })
}

/// Runs `work` on a thread with a 1 GiB stack (address space, touched only as deep as used):
/// the tester recurses once per operation of a segment.
pub fn on_large_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let thread = std::thread::Builder::new().name("history-check".to_owned()).stack_size(1 << 30).spawn(work);
    match thread.map(std::thread::JoinHandle::join) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => panic!("starting the history checker's thread: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register of one number: writes set it, reads return it.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Register(u64);

    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    enum RegisterOp {
        Write(u64),
        Read,
    }

    impl SequentialSpec for Register {
        type Op = RegisterOp;
        type Ret = Option<u64>;
        fn invoke(&mut self, op: &RegisterOp) -> Option<u64> {
            match op {
                RegisterOp::Write(v) => {
                    self.0 = *v;
                    None
                }
                RegisterOp::Read => Some(self.0),
            }
        }
    }

    fn op(
        process: usize,
        op: RegisterOp,
        invoked: Nanos,
        returned: Option<(Nanos, Option<u64>)>,
    ) -> Operation<RegisterOp, Option<u64>> {
        Operation { process, op, invoked, returned }
    }

    #[test]
    fn overlapping_operations_may_take_effect_in_either_order() {
        let history = [
            op(0, RegisterOp::Write(1), 0, Some((10, None))),
            op(1, RegisterOp::Read, 1, Some((5, Some(0)))),
            op(2, RegisterOp::Read, 2, Some((6, Some(1)))),
        ];
        assert!(linearize(&Register(0), &history).is_some());
    }

    #[test]
    fn a_read_after_a_write_returned_must_see_it() {
        let history = [
            op(0, RegisterOp::Write(1), 0, Some((10, None))),
            op(1, RegisterOp::Read, 11, Some((12, Some(0)))),
        ];
        assert!(linearize(&Register(0), &history).is_none());
        // Touching at one time is overlapping, not after.
        let touching = [
            op(0, RegisterOp::Write(1), 0, Some((10, None))),
            op(1, RegisterOp::Read, 10, Some((12, Some(0)))),
        ];
        assert!(linearize(&Register(0), &touching).is_some());
    }

    #[test]
    fn an_unknown_outcome_may_apply_late_or_never() {
        let late = [
            op(0, RegisterOp::Write(1), 0, None),
            op(1, RegisterOp::Read, 5, Some((6, Some(0)))),
            op(1, RegisterOp::Read, 7, Some((8, Some(1)))),
        ];
        assert!(linearize(&Register(0), &late).is_some());
        let never = [op(0, RegisterOp::Write(1), 0, None), op(1, RegisterOp::Read, 5, Some((6, Some(0))))];
        assert!(linearize(&Register(0), &never).is_some());
        // But not undone once seen.
        let undone = [
            op(0, RegisterOp::Write(1), 0, None),
            op(1, RegisterOp::Read, 5, Some((6, Some(1)))),
            op(1, RegisterOp::Read, 7, Some((8, Some(0)))),
        ];
        assert!(linearize(&Register(0), &undone).is_none());
    }

    #[test]
    fn a_violation_is_shrunk_to_where_it_starts_and_printed() {
        let mut history: Vec<_> =
            (0..20u64).map(|i| op(0, RegisterOp::Write(i), i * 10, Some((i * 10 + 5, None)))).collect();
        history.push(op(1, RegisterOp::Read, 52, Some((53, Some(3)))));
        let violations = check_segments(vec![(Register(0), history)]);
        assert_eq!(violations.len(), 1);
        let shrunk = &violations[0].operations;
        // Write(5) began at 50 and the read returned 3 at 53: nothing after 53 is needed.
        assert!(shrunk.iter().all(|o| o.invoked <= 53), "{shrunk:?}");
        assert!(linearize(&Register(0), shrunk).is_none());
        let text = violations[0].to_string();
        assert!(text.contains("worker 1  Read -> Some(3)"), "{text}");
        assert!(text.starts_with("from Register(0)"), "{text}");
    }
}
