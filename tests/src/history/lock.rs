//! The mutual-exclusion checker's history: a mutex with fenced writes, as a sequential
//! specification ([`FencedLock`]), the workers' operations recorded as they report them
//! ([`LockHistory`]), and the cuts that split a long contended history into segments that each
//! start from a known state.
//!
//! **The specification.** One lock and one number. `Acquire(h)` succeeds only when nobody holds
//! the lock; `Release(h)` and `Lose(h)` end hold `h` (a hold is a worker's n-th acquisition: a
//! write is fenced by the lock node of its own hold, not of a later one). `Write(h, v)` is the
//! critical section's guarded write: applied when `h` holds the lock, refused otherwise.
//! `Read(h, v)` read `v`: the latest value if `h` holds the lock, anything otherwise (a holder
//! that lost the lock may read from a server cut off from the others). A hold whose holder was
//! told it lost the lock (its guarded write refused, its release answered `Lost`) ends with a
//! `Lose(h)` that may take effect anywhere from the acquire (its session may end before the
//! acquire's answer arrives) to the telling, or, once a guarded write of `h` was applied, from
//! that write's invocation (the hold lasted until the write took effect); a killed
//! holder's hold, or one whose release failed, ends at an unknown time. So the history passes
//! exactly when no two holds overlap unless the earlier holder was told it lost the lock, no
//! write was applied outside its hold, and every holder read the latest value.
//!
//! **The cuts.** Right after hold `h` read `v`, with no other operation of `h` running and no
//! release or loss of `h` begun, the state of any linearization is known: `h` holds the lock
//! (its acquire returned, nothing that could end it had begun) and the number is `v` (only the holder's writes apply, and `h`
//! has not written). A cut is taken there, and the operations of other holds running across it
//! go to one side: an acquire can only take effect after the cut (before it, its hold would have
//! to end before `h`'s acquire, yet it had not returned), so it moves into the next segment as if
//! invoked at the cut; a release, a loss or an applied write of another hold can only take effect
//! while that hold held the lock, so before the cut: it stays in the segment before, as if it
//! returned at the cut, and so does an unknown outcome (which may also never take effect). A loss
//! counts from its hold's acquire, which may run across cuts: it is first moved to the acquire's
//! segment, as if invoked at its start, and then placed by the same rules; a read
//! or a refused write of another hold is valid anywhere after the cut and changes nothing, so it
//! is left out. Each segment is checked from its cut's state. If every segment passes, their
//! orders joined (what was left out placed right after its cut) are an order of the whole history
//! that respects its real-time order; if the whole passes, so does every segment. Segments are
//! one or two holds long under contention, so the tester's search stays small.

use std::fmt;

use stateright::semantics::SequentialSpec;

use super::{check_segments, Nanos, Operation, Segment, Violation};

/// A hold: the `n`-th acquisition by worker `worker` (counted over the run, across restarts).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hold {
    /// The worker's number.
    pub worker: usize,
    /// Its acquisitions before this one.
    pub n: u32,
}

impl fmt::Debug for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "w{}#{}", self.worker, self.n)
    }
}

/// The mutex with fenced writes; see the [module](self).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FencedLock {
    /// Who holds the lock.
    pub holder: Option<Hold>,
    /// The number the critical sections write.
    pub value: u64,
}

/// What a worker did.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LockOp {
    /// Took the lock (only successful acquires are recorded: one that timed out, failed or was
    /// cancelled promised nothing and held nothing anyone saw).
    Acquire(Hold),
    /// Read the number in the critical section.
    Read(Hold, u64),
    /// The guarded write of the number.
    Write(Hold, u64),
    /// Released the lock.
    Release(Hold),
    /// The hold ended without a release: the session behind it ended.
    Lose(Hold),
}

/// What came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockRet {
    /// Done (or, for a read, consistent with the state).
    Ok,
    /// The guarded write was refused.
    Refused,
    /// The specification's answer when the operation cannot have happened in this state.
    Impossible,
}

impl SequentialSpec for FencedLock {
    type Op = LockOp;
    type Ret = LockRet;

    fn invoke(&mut self, op: &LockOp) -> LockRet {
        match *op {
            LockOp::Acquire(h) if self.holder.is_none() => {
                self.holder = Some(h);
                LockRet::Ok
            }
            LockOp::Read(h, v) if self.holder == Some(h) && self.value != v => LockRet::Impossible,
            LockOp::Read(..) => LockRet::Ok,
            LockOp::Write(h, v) if self.holder == Some(h) => {
                self.value = v;
                LockRet::Ok
            }
            LockOp::Write(..) => LockRet::Refused,
            LockOp::Release(h) | LockOp::Lose(h) if self.holder == Some(h) => {
                self.holder = None;
                LockRet::Ok
            }
            LockOp::Acquire(_) | LockOp::Release(_) | LockOp::Lose(_) => LockRet::Impossible,
        }
    }
}

impl LockOp {
    fn hold(&self) -> Hold {
        match *self {
            LockOp::Acquire(h)
            | LockOp::Read(h, _)
            | LockOp::Write(h, _)
            | LockOp::Release(h)
            | LockOp::Lose(h) => h,
        }
    }
}

/// How a guarded write was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Applied (`COMMIT`).
    Applied,
    /// Refused by the fence: the hold's own lock node was gone (`FENCED`).
    Fenced,
    /// Not applied, for another reason than the fence (`ABORT`: e.g. `SessionMoved` for a
    /// request that reached a server its session had left): it changed nothing and says
    /// nothing of the hold, which may go on.
    NotApplied,
    /// No answer (`UNKNOWN`): applied or not.
    Unknown,
}

/// One operation of the lock's history.
pub type LockOperation = Operation<LockOp, LockRet>;

/// A worker's hold in progress.
#[derive(Debug, Clone, Copy)]
struct Current {
    hold: Hold,
    /// When its acquire was invoked: the hold may end (its session expire) any time after the
    /// acquire took effect, even before the acquire returned.
    acquiring: Nanos,
    /// A write invoked and not answered yet: when, and the value.
    writing: Option<(Nanos, u64)>,
    /// When the last write of the hold that was applied was invoked: the hold lasted until it
    /// took effect, so it cannot have ended before then.
    held_at: Option<Nanos>,
    /// Its guarded write was refused: the holder was told then that the hold had ended, and its
    /// `Lose` is in the history already.
    told: bool,
}

impl Current {
    /// The earliest the hold may have ended.
    fn may_end_from(&self) -> Nanos {
        self.held_at.unwrap_or(self.acquiring)
    }
}

/// The history of one run, built from the workers' reports as they come.
#[derive(Debug, Default)]
pub struct LockHistory {
    operations: Vec<LockOperation>,
    holds: Vec<u32>,
    current: Vec<Option<Current>>,
}

impl LockHistory {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// The operations recorded so far.
    pub fn len(&self) -> usize {
        self.operations.len()
    }

    /// Nothing recorded yet?
    pub fn is_empty(&self) -> bool {
        self.operations.is_empty()
    }

    fn slot(&mut self, worker: usize) -> &mut Option<Current> {
        if self.current.len() <= worker {
            self.current.resize(worker + 1, None);
            self.holds.resize(worker + 1, 0);
        }
        &mut self.current[worker]
    }

    fn push(&mut self, worker: usize, op: LockOp, invoked: Nanos, returned: Option<(Nanos, LockRet)>) {
        self.operations.push(Operation { process: worker, op, invoked, returned });
    }

    /// `worker` acquired the lock: invoked at `invoked`, returned at `returned`.
    pub fn acquired(&mut self, worker: usize, invoked: Nanos, returned: Nanos) {
        // A hold still open means the worker went on without ending it: end it, unknown when.
        self.abandon(worker);
        let n = {
            self.slot(worker);
            let n = self.holds[worker];
            self.holds[worker] += 1;
            n
        };
        let hold = Hold { worker, n };
        *self.slot(worker) =
            Some(Current { hold, acquiring: invoked, writing: None, held_at: None, told: false });
        self.push(worker, LockOp::Acquire(hold), invoked, Some((returned, LockRet::Ok)));
    }

    /// `worker` read `value` in its critical section.
    pub fn read(&mut self, worker: usize, value: u64, invoked: Nanos, returned: Nanos) {
        if let Some(current) = *self.slot(worker) {
            self.push(worker, LockOp::Read(current.hold, value), invoked, Some((returned, LockRet::Ok)));
        }
    }

    /// `worker` is about to write `value`.
    pub fn writing(&mut self, worker: usize, value: u64, invoked: Nanos) {
        if let Some(current) = self.slot(worker) {
            current.writing = Some((invoked, value));
        }
    }

    /// `worker`'s write was answered: see [`Written`]. A refusal by the fence tells the holder
    /// that its hold had ended (the write checks the hold's own lock node): its `Lose` goes in
    /// now, from the acquire (or the last applied write) to the refusal, whatever its release
    /// says later; a release that then says it deleted the node contradicts the refusal, and
    /// stays in the history to fail it.
    pub fn wrote(&mut self, worker: usize, written: Written, returned: Nanos) {
        let Some(current) = self.slot(worker).as_mut() else { return };
        let (hold, Some((invoked, value))) = (current.hold, current.writing.take()) else { return };
        let ret = match written {
            Written::Applied => {
                current.held_at = Some(invoked);
                Some((returned, LockRet::Ok))
            }
            Written::Fenced => Some((returned, LockRet::Refused)),
            Written::Unknown => None,
            // Nothing changed, and nothing was said about the hold.
            Written::NotApplied => return,
        };
        let told = (written == Written::Fenced && !current.told).then(|| current.may_end_from());
        current.told |= told.is_some();
        self.push(worker, LockOp::Write(hold, value), invoked, ret);
        if let Some(from) = told {
            self.push(worker, LockOp::Lose(hold), from, Some((returned, LockRet::Ok)));
        }
    }

    /// `worker` released the lock.
    pub fn released(&mut self, worker: usize, invoked: Nanos, returned: Nanos) {
        if let Some(current) = self.slot(worker).take() {
            self.push(worker, LockOp::Release(current.hold), invoked, Some((returned, LockRet::Ok)));
        }
    }

    /// `worker` was told at `told` that it had lost the lock (its release answered `Lost`, or a
    /// leader's term ended by the latch's close or before it): the hold ended somewhere between
    /// its acquire (or its last applied write) and then, or by the refusal that told it first.
    pub fn lost(&mut self, worker: usize, told: Nanos) {
        match self.slot(worker).take() {
            Some(current) if !current.told => self.push(
                worker,
                LockOp::Lose(current.hold),
                current.may_end_from(),
                Some((told, LockRet::Ok)),
            ),
            _ => {}
        }
    }

    /// `worker`'s release failed without saying whether the lock was let go (invoked at
    /// `invoked`): the hold ends at an unknown time after that, or ended by the refusal that
    /// told it.
    pub fn release_failed(&mut self, worker: usize, invoked: Nanos) {
        match self.slot(worker).take() {
            Some(current) if !current.told => self.push(worker, LockOp::Release(current.hold), invoked, None),
            _ => {}
        }
    }

    /// `worker`'s process was killed (or stopped reporting): a write it had begun has an unknown
    /// outcome, and its hold ends at an unknown time after its acquire (unless a refusal ended
    /// it already).
    pub fn abandon(&mut self, worker: usize) {
        let Some(current) = self.slot(worker).take() else { return };
        if let Some((invoked, value)) = current.writing {
            self.push(worker, LockOp::Write(current.hold, value), invoked, None);
        }
        if !current.told {
            self.push(worker, LockOp::Lose(current.hold), current.may_end_from(), None);
        }
    }

    /// Ends every open hold ([`abandon`](Self::abandon)) and checks the history from a free lock
    /// and `initial_value`: the violations found, each its shortest failing part, and the number
    /// of segments checked.
    pub fn check(mut self, initial_value: u64) -> (Vec<Violation<FencedLock>>, usize) {
        for worker in 0..self.current.len() {
            self.abandon(worker);
        }
        let segments = segments(FencedLock { holder: None, value: initial_value }, self.operations);
        let count = segments.len();
        (check_segments(segments), count)
    }
}

/// Splits `operations` at the cuts described in the [module](self).
pub fn segments(
    initial: FencedLock,
    mut operations: Vec<LockOperation>,
) -> Vec<(FencedLock, Vec<LockOperation>)> {
    operations.sort_by_key(|o| o.invoked);
    let cuts = cuts(&operations);
    let mut segments: Vec<Segment<FencedLock>> = Vec::with_capacity(cuts.len() + 1);
    segments.push((initial, Vec::new()));
    for (_, state) in &cuts {
        segments.push((state.clone(), Vec::new()));
    }
    let cut_times: Vec<Nanos> = cuts.iter().map(|(at, _)| *at).collect();
    // Where each hold's acquire goes: the segment of its return.
    let acquires: std::collections::HashMap<Hold, usize> = operations
        .iter()
        .filter_map(|o| match (&o.op, &o.returned) {
            (LockOp::Acquire(hold), Some((returned, _))) => {
                Some((*hold, cut_times.partition_point(|cut| cut < returned)))
            }
            _ => None,
        })
        .collect();
    for mut o in operations {
        // The segment that ends at the first cut at or after the invocation.
        let mut first = cut_times.partition_point(|cut| *cut < o.invoked);
        if let LockOp::Lose(hold) = o.op {
            // A loss no earlier than its acquire's segment.
            match acquires.get(&hold) {
                Some(&segment) if first < segment => {
                    first = segment;
                    o.invoked = cut_times[segment - 1];
                }
                _ => {}
            }
        }
        let Some((returned, ret)) = o.returned.as_mut() else {
            segments[first].1.push(o);
            continue;
        };
        match cut_times.get(first) {
            Some(&cut) if *returned > cut => match (&o.op, *ret) {
                (LockOp::Acquire(_), _) => {
                    let index = cut_times.partition_point(|cut| *cut < *returned);
                    o.invoked = cut_times[index - 1];
                    segments[index].1.push(o);
                }
                (LockOp::Release(_) | LockOp::Lose(_) | LockOp::Write(..), LockRet::Ok) => {
                    *returned = cut;
                    segments[first].1.push(o);
                }
                _ => {}
            },
            _ => segments[first].1.push(o),
        }
    }
    segments
}

/// The cuts: when, and the state then.
fn cuts(operations: &[LockOperation]) -> Vec<(Nanos, FencedLock)> {
    let mut cuts = Vec::new();
    // Operations invoked since the last cut that may still be running, by index.
    let mut open: Vec<usize> = Vec::new();
    // Holds whose release or loss has been invoked.
    let mut ending: std::collections::HashSet<Hold> = std::collections::HashSet::new();
    let mut next = 0;
    let mut reads: Vec<(Nanos, usize)> = operations
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match (&o.op, &o.returned) {
            (LockOp::Read(..), Some((at, _))) => Some((*at, i)),
            _ => None,
        })
        .collect();
    reads.sort_unstable();
    for (at, read) in reads {
        while next < operations.len() && operations[next].invoked <= at {
            if let LockOp::Release(hold) | LockOp::Lose(hold) = operations[next].op {
                ending.insert(hold);
            }
            open.push(next);
            next += 1;
        }
        open.retain(|&i| operations[i].running_at(at));
        let LockOp::Read(hold, value) = operations[read].op else { continue };
        if !ending.contains(&hold) && open.iter().all(|&i| operations[i].op.hold() != hold) {
            // What runs across the cut stays open: it may run across a later one too, and a
            // cut at a read of its own hold must see it.
            cuts.push((at, FencedLock { holder: Some(hold), value }));
        }
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker's whole critical section from `t`: acquire (invoked at `waited_from`), read
    /// `value`, write `value + 1`, release; each step 10 ns.
    fn cycle(history: &mut LockHistory, worker: usize, waited_from: Nanos, t: Nanos, value: u64) {
        section(history, worker, waited_from, t, value);
        history.released(worker, t + 21, t + 30);
    }

    /// [`cycle`] up to the write's answer, the hold left open.
    fn section(history: &mut LockHistory, worker: usize, waited_from: Nanos, t: Nanos, value: u64) {
        history.acquired(worker, waited_from, t);
        history.read(worker, value, t + 1, t + 10);
        history.writing(worker, value + 1, t + 11);
        history.wrote(worker, Written::Applied, t + 20);
    }

    /// Holds one after another are cut into short segments, whether released or ended with a
    /// loss told after an applied write (a leader's term ended by a close: the loss cannot come
    /// before that write).
    #[test]
    fn contended_holds_one_after_another_pass_in_short_segments() {
        for lost in [false, true] {
            let mut history = LockHistory::new();
            for i in 0..3000u64 {
                // Three workers, each waiting from the end of its previous hold.
                let (worker, t) = ((i % 3) as usize, i * 40);
                let waited_from = (i.saturating_sub(3)) * 40 + 31;
                section(&mut history, worker, waited_from.min(t), t, i);
                match lost {
                    false => history.released(worker, t + 21, t + 30),
                    true => history.lost(worker, t + 30),
                }
            }
            let (violations, segments) = history.check(0);
            assert!(violations.is_empty(), "{}", violations[0]);
            assert!(segments >= 2999, "lost {lost}: {segments} segments");
        }
    }

    /// A hold told of its loss after its write was applied cannot have ended before the write:
    /// another holder acquiring before that write was invoked overlaps it.
    #[test]
    fn a_loss_after_an_applied_write_does_not_excuse_an_earlier_overlap() {
        let mut history = LockHistory::new();
        history.acquired(0, 0, 10);
        history.read(0, 0, 11, 20);
        // Worker 1 took the lock and read while worker 0 still held it (its write came after).
        history.acquired(1, 21, 25);
        history.read(1, 0, 26, 30);
        history.writing(0, 1, 31);
        history.wrote(0, Written::Applied, 40);
        history.lost(0, 50);
        history.writing(1, 1, 51);
        history.wrote(1, Written::Applied, 60);
        history.released(1, 61, 70);
        let (violations, _) = history.check(0);
        assert!(!violations.is_empty(), "two holds overlapped and both wrote");
    }

    #[test]
    fn overlapping_holds_whose_holders_were_not_told_fail() {
        let mut history = LockHistory::new();
        cycle(&mut history, 0, 0, 0, 0);
        // Worker 1 acquires while worker 2 holds, and neither hears of a loss.
        history.acquired(2, 35, 40);
        history.read(2, 1, 41, 50);
        history.acquired(1, 36, 55);
        history.read(1, 1, 56, 60);
        history.writing(1, 2, 61);
        history.wrote(1, Written::Applied, 70);
        history.released(1, 71, 80);
        history.writing(2, 2, 81);
        history.wrote(2, Written::Applied, 90);
        history.released(2, 91, 100);
        let (violations, _) = history.check(0);
        // The overlap, then worker 2's write and release in worker 1's hold.
        assert_eq!(violations.len(), 2);
        let text = violations[0].to_string();
        assert!(text.contains("Acquire(w1#0)"), "{text}");
    }

    #[test]
    fn a_holder_told_it_lost_the_lock_may_overlap_the_next_one() {
        let mut history = LockHistory::new();
        history.acquired(0, 0, 10);
        history.read(0, 0, 11, 20);
        // Its session expires; worker 1 takes the lock and writes.
        history.acquired(1, 5, 100);
        history.read(1, 0, 101, 110);
        history.writing(1, 1, 111);
        history.wrote(1, Written::Applied, 120);
        history.released(1, 121, 130);
        // Worker 0 writes late: refused by the fence, and its release says Lost.
        history.writing(0, 1, 140);
        history.wrote(0, Written::Fenced, 150);
        history.lost(0, 160);
        let (violations, _) = history.check(0);
        assert!(violations.is_empty(), "{}", violations[0]);

        // The same with the late write applied: a lost update.
        let mut unfenced = LockHistory::new();
        unfenced.acquired(0, 0, 10);
        unfenced.read(0, 0, 11, 20);
        unfenced.acquired(1, 5, 100);
        unfenced.read(1, 0, 101, 110);
        unfenced.writing(1, 1, 111);
        unfenced.wrote(1, Written::Applied, 120);
        unfenced.released(1, 121, 130);
        unfenced.writing(0, 1, 140);
        unfenced.wrote(0, Written::Applied, 150);
        unfenced.lost(0, 160);
        let (violations, _) = unfenced.check(0);
        // Found on both sides of the cut at worker 1's read: worker 1 acquired while worker 0
        // held (its write was applied later), and worker 0 wrote while worker 1 held.
        assert_eq!(violations.len(), 2, "{violations:?}");
    }

    /// The kazoo-mutex finding of the 3.5.10 soak (seed 8964657351498504425): a holder's
    /// guarded write was refused while the history held no end of its hold before it, and
    /// another worker had acquired after the holder's read (the cut). Two answers make that
    /// shape, and the history read both as one. A refusal by the fence (its lock node gone)
    /// tells the holder the hold had ended, whatever its release says after (here: failed, lost
    /// or never said): that passes. A write not applied for another reason (`SessionMoved`:
    /// its replay at ca46314 shows one, then a release that deleted the node) says nothing of
    /// the hold: it passes as the no-op it was. A release that says it deleted the node after
    /// the fence found it gone contradicts the fence, and fails.
    #[test]
    fn a_refused_write_ends_its_hold_only_when_the_fence_refused_it() {
        let peer_hold = |written: Written, release: &dyn Fn(&mut LockHistory)| {
            let mut history = LockHistory::new();
            history.acquired(0, 0, 10);
            history.read(0, 13, 11, 20);
            history.writing(0, 14, 140);
            history.wrote(0, written, 150);
            release(&mut history);
            // Worker 1 acquires after worker 0's read, before or after its refusal.
            history.acquired(1, 5, if written == Written::Fenced { 100 } else { 180 });
            history.read(1, 13, 181, 190);
            history.writing(1, 14, 191);
            history.wrote(1, Written::Applied, 200);
            history.released(1, 201, 210);
            history.check(13).0
        };
        let failed = |h: &mut LockHistory| h.release_failed(0, 160);
        let lost = |h: &mut LockHistory| h.lost(0, 170);
        let released = |h: &mut LockHistory| h.released(0, 160, 170);
        let never = |_: &mut LockHistory| {};
        type Release<'a> = &'a dyn Fn(&mut LockHistory);
        let fenced: [(&str, Release<'_>); 3] = [("failed", &failed), ("lost", &lost), ("never said", &never)];
        for (name, release) in fenced {
            let violations = peer_hold(Written::Fenced, release);
            assert!(violations.is_empty(), "fenced, release {name}: {}", violations[0]);
        }
        let violations = peer_hold(Written::NotApplied, &released);
        assert!(violations.is_empty(), "not applied, released: {}", violations[0]);
        let violations = peer_hold(Written::Fenced, &released);
        assert_eq!(violations.len(), 1, "a release deleted the node its fenced write found gone");
        assert!(violations[0].to_string().contains("Release(w0#0)"), "{}", violations[0]);
        // Not applied, the hold went on: worker 1's acquire before worker 0's release overlaps.
        let mut overlap = LockHistory::new();
        overlap.acquired(0, 0, 10);
        overlap.read(0, 13, 11, 20);
        overlap.writing(0, 14, 140);
        overlap.wrote(0, Written::NotApplied, 150);
        overlap.acquired(1, 5, 155);
        overlap.read(1, 13, 156, 158);
        overlap.released(0, 160, 170);
        overlap.released(1, 171, 180);
        assert!(!overlap.check(13).0.is_empty(), "a refusal for another reason excused an overlap");
    }

    #[test]
    fn a_stale_read_by_the_holder_fails_and_by_a_lost_holder_passes() {
        let mut history = LockHistory::new();
        cycle(&mut history, 0, 0, 0, 0);
        history.acquired(1, 31, 40);
        history.read(1, 0, 41, 50);
        history.released(1, 51, 60);
        let (violations, _) = history.check(0);
        assert_eq!(violations.len(), 1, "a holder read 0 after 1 was written and released");

        let mut history = LockHistory::new();
        cycle(&mut history, 0, 0, 0, 0);
        history.acquired(1, 31, 40);
        history.read(1, 0, 41, 50);
        history.writing(1, 1, 51);
        history.wrote(1, Written::Fenced, 60);
        history.lost(1, 70);
        // Told of its loss, worker 1 may have lost the lock before its read: a non-holder's
        // read, which a server cut off from the others may serve stale.
        let (violations, _) = history.check(0);
        assert!(violations.is_empty(), "{}", violations[0]);
    }

    #[test]
    fn a_loss_running_across_a_cut_still_blocks_a_cut_in_its_own_hold() {
        let mut history = LockHistory::new();
        // Worker 0 acquires; its session ends unseen; worker 1 takes the lock and reads at 25 (a
        // cut, with worker 0's loss running across it).
        history.acquired(0, 0, 10);
        history.acquired(1, 5, 20);
        history.read(1, 0, 21, 25);
        // Worker 0 reads a stale 0 after that cut, then its write is refused and it is told.
        history.read(0, 0, 30, 40);
        history.writing(1, 1, 41);
        history.wrote(1, Written::Applied, 45);
        history.released(1, 46, 48);
        history.writing(0, 1, 50);
        history.wrote(0, Written::Fenced, 60);
        history.lost(0, 100);
        let (violations, segments) = history.check(0);
        assert!(violations.is_empty(), "{}", violations[0]);
        // Worker 0's read at 40 is no cut: its hold's loss runs across it.
        assert_eq!(segments, 2);
    }

    #[test]
    fn a_killed_holder_and_an_unknown_write_end_at_an_unknown_time() {
        let mut history = LockHistory::new();
        history.acquired(0, 0, 10);
        history.read(0, 0, 11, 20);
        history.writing(0, 1, 21);
        history.abandon(0);
        // The write was applied before the session expired; the next holder sees it.
        history.acquired(1, 5, 3000);
        history.read(1, 1, 3001, 3010);
        history.writing(1, 2, 3011);
        history.wrote(1, Written::Applied, 3020);
        history.released(1, 3021, 3030);
        // Or not applied at all.
        history.acquired(2, 3031, 3040);
        history.read(2, 2, 3041, 3050);
        history.released(2, 3051, 3060);
        let (violations, segments) = history.check(0);
        assert!(violations.is_empty(), "{}", violations[0]);
        assert_eq!(segments, 3);

        let mut never = LockHistory::new();
        never.acquired(0, 0, 10);
        never.read(0, 0, 11, 20);
        never.writing(0, 1, 21);
        never.abandon(0);
        never.acquired(1, 5, 3000);
        never.read(1, 0, 3001, 3010);
        let (violations, _) = never.check(0);
        assert!(violations.is_empty(), "{}", violations[0]);
    }

    mod simulated {
        //! Histories of a correct fenced lock under random timing, expiries and unknown outcomes:
        //! they pass, and with one answer changed the segments fail exactly when the whole does.

        use proptest::prelude::*;

        use super::super::*;
        use crate::history::linearize;

        /// A worker's place in the simulation.
        #[derive(Clone, Copy, PartialEq)]
        enum Phase {
            Idle,
            /// Holding since the acquire took effect; has it read, and is its hold still real?
            Holding {
                read: Option<u64>,
                written: bool,
                real: bool,
            },
        }

        /// Drives a correct lock by `choices`: each step (a linearization point, 10 ns apart)
        /// one worker does its next operation, invoked up to 25 ns before and returning up to
        /// 25 ns after the point; the holder's session may end instead.
        fn simulate(choices: &[(u8, u8, u8)]) -> Vec<LockOperation> {
            let mut history = LockHistory::new();
            let (mut phases, mut last) = ([Phase::Idle; 3], [0u64; 3]);
            let (mut holder, mut value) = (None::<usize>, 0u64);
            for (step, &(who, early, late)) in choices.iter().enumerate() {
                let at = 100 + step as u64 * 10;
                let worker = usize::from(who % 4);
                if worker == 3 {
                    // The holder's session ends: the lock is free, the holder not told.
                    if let Some(h) = holder.take() {
                        if let Phase::Holding { real, .. } = &mut phases[h] {
                            *real = false;
                        }
                    }
                    continue;
                }
                if last[worker] > at {
                    // Still busy with its previous operation.
                    continue;
                }
                let invoked = last[worker].max(at - u64::from(early % 26));
                let returned = at + u64::from(late % 26);
                match phases[worker] {
                    Phase::Idle if holder.is_none() => {
                        holder = Some(worker);
                        history.acquired(worker, invoked, returned);
                        phases[worker] = Phase::Holding { read: None, written: false, real: true };
                    }
                    Phase::Idle => continue,
                    Phase::Holding { read: None, written, real } => {
                        // A lost holder may read anything (a stale server).
                        let seen = if real { value } else { u64::from(late % 3) };
                        history.read(worker, seen, invoked, returned);
                        phases[worker] = Phase::Holding { read: Some(seen), written, real };
                    }
                    Phase::Holding { read: Some(seen), written: false, real } => {
                        history.writing(worker, seen + 1, invoked);
                        // Sometimes nobody hears the answer; sometimes a holder's write is
                        // not applied for another reason than the fence (`SessionMoved`).
                        let answer = match (early % 5, real) {
                            (0, _) => Written::Unknown,
                            (1, true) => Written::NotApplied,
                            (_, true) => Written::Applied,
                            (_, false) => Written::Fenced,
                        };
                        if real && answer != Written::NotApplied {
                            value = seen + 1;
                        }
                        history.wrote(worker, answer, returned);
                        phases[worker] = Phase::Holding { read: Some(seen), written: true, real };
                    }
                    Phase::Holding { written: true, real, .. } => {
                        if real {
                            holder = None;
                            history.released(worker, invoked, returned);
                        } else {
                            history.lost(worker, returned);
                        }
                        phases[worker] = Phase::Idle;
                    }
                }
                last[worker] = returned + 1;
            }
            for worker in 0..3 {
                history.abandon(worker);
            }
            history.operations
        }

        fn passes_in_segments(operations: Vec<LockOperation>) -> bool {
            let initial = FencedLock { holder: None, value: 0 };
            segments(initial, operations).iter().all(|(state, part)| linearize(state, part).is_some())
        }

        fn choices() -> impl Strategy<Value = Vec<(u8, u8, u8)>> {
            proptest::collection::vec(any::<(u8, u8, u8)>(), 0..28)
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

            #[test]
            fn a_correct_lock_passes(choices in choices()) {
                let operations = simulate(&choices);
                let whole = linearize(&FencedLock { holder: None, value: 0 }, &operations).is_some();
                prop_assert!(whole, "{:#?}", operations);
                let split = segments(FencedLock { holder: None, value: 0 }, operations.clone());
                prop_assert!(passes_in_segments(operations), "{:#?}", split);
            }

            #[test]
            fn segments_fail_exactly_when_the_whole_does(choices in choices(), which in any::<usize>(), how in 0u8..3) {
                let mut operations = simulate(&choices);
                prop_assume!(!operations.is_empty());
                let index = which % operations.len();
                let o = &mut operations[index];
                match (&mut o.op, &mut o.returned, how) {
                    (LockOp::Read(_, v), _, _) | (LockOp::Write(_, v), _, 0) => *v += 1,
                    (_, Some((_, ret)), 1) => *ret = if *ret == LockRet::Ok { LockRet::Refused } else { LockRet::Ok },
                    (_, Some((at, _)), _) => *at = o.invoked,
                    (_, None, _) => o.returned = Some((o.invoked + 5, LockRet::Ok)),
                }
                let whole = linearize(&FencedLock { holder: None, value: 0 }, &operations).is_some();
                let split = segments(FencedLock { holder: None, value: 0 }, operations.clone());
                prop_assert_eq!(passes_in_segments(operations.clone()), whole, "{:#?}\n{:#?}", operations, split);
            }
        }
    }
}
