//! The pure part of the snowflake generator: turning clock readings into IDs that never go
//! backwards, whatever the clock does. No I/O, so it is tested with a scripted clock.

use super::layout::SnowflakeLayout;

/// What the sequencer answers for one clock reading (milliseconds since the layout's epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// An ID.
    Id(u64),
    /// Ask again once the clock reads at least this.
    WaitUntil(u64),
    /// The clock is this many milliseconds behind the last issued timestamp, more than the
    /// generator waits out.
    ClockBack(u64),
    /// The next timestamp is past the recorded watermark.
    Watermark,
    /// The next timestamp does not fit the layout.
    Exhausted,
}

/// Issues `(timestamp, sequence)` pairs strictly increasing.
///
/// When a millisecond's sequences run out it borrows the next millisecond at once (as Baidu's
/// `CachedUidGenerator` borrows seconds) while it is at most `max_lead` ahead of the clock;
/// further ahead it asks the caller to wait. A clock that steps back by up to `max_lead` is
/// absorbed the same way; up to `max_backward` it is waited out; beyond that it is refused.
#[derive(Debug, Clone)]
pub(crate) struct Sequencer {
    layout: SnowflakeLayout,
    worker_id: u64,
    last_ts: u64,
    sequence: u64,
    /// No timestamp above this may be issued (the watermark recorded in ZooKeeper).
    watermark: u64,
    max_lead: u64,
    max_backward: u64,
}

impl Sequencer {
    /// A sequencer that issues timestamps strictly after `after` and at most `watermark`.
    pub(crate) fn new(
        layout: SnowflakeLayout,
        worker_id: u64,
        after: u64,
        watermark: u64,
        max_lead: u64,
        max_backward: u64,
    ) -> Self {
        let sequence = layout.max_sequence();
        Sequencer { layout, worker_id, last_ts: after, sequence, watermark, max_lead, max_backward }
    }

    pub(crate) fn worker_id(&self) -> u64 {
        self.worker_id
    }

    pub(crate) fn last_ts(&self) -> u64 {
        self.last_ts
    }

    pub(crate) fn watermark(&self) -> u64 {
        self.watermark
    }

    pub(crate) fn set_watermark(&mut self, watermark: u64) {
        self.watermark = self.watermark.max(watermark);
    }

    /// Moves to another worker ID, whose IDs must come strictly after `after`; the watermark
    /// is the new worker's.
    pub(crate) fn switch_worker(&mut self, worker_id: u64, after: u64, watermark: u64) {
        if worker_id != self.worker_id || after > self.last_ts {
            self.worker_id = worker_id;
            if after >= self.last_ts {
                self.last_ts = after;
                self.sequence = self.layout.max_sequence();
            }
        }
        self.watermark = watermark;
    }

    /// The ID for clock reading `now`, or what to do instead.
    pub(crate) fn next(&mut self, now: u64) -> Step {
        let (ts, sequence) = if now > self.last_ts {
            (now, 0)
        } else if self.sequence < self.layout.max_sequence() {
            (self.last_ts, self.sequence + 1)
        } else {
            (self.last_ts + 1, 0)
        };
        if ts > now.saturating_add(self.max_lead) {
            let behind = self.last_ts.saturating_sub(now);
            if behind > self.max_backward {
                return Step::ClockBack(behind);
            }
            return Step::WaitUntil(ts - self.max_lead);
        }
        if ts > self.watermark {
            return Step::Watermark;
        }
        match self.layout.compose_offset(ts, self.worker_id, sequence) {
            Some(id) => {
                self.last_ts = ts;
                self.sequence = sequence;
                Step::Id(id)
            }
            None => Step::Exhausted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn small() -> SnowflakeLayout {
        // 4 IDs per millisecond, to make borrowing visible.
        SnowflakeLayout::new(std::time::UNIX_EPOCH, 40, 4, 2).unwrap()
    }

    fn ids(seq: &mut Sequencer, now: u64, n: usize) -> Vec<Step> {
        (0..n).map(|_| seq.next(now)).collect()
    }

    #[test]
    fn starts_strictly_after_the_recorded_timestamp() {
        let mut s = Sequencer::new(small(), 1, 100, u64::MAX, 2, 50);
        let l = small();
        // The clock reads 100: the record says 100 may be used up, so 101 is borrowed.
        assert_eq!(s.next(100), Step::Id(l.compose_offset(101, 1, 0).unwrap()));
        assert_eq!(s.next(105), Step::Id(l.compose_offset(105, 1, 0).unwrap()));
    }

    #[test]
    fn borrows_up_to_max_lead_then_waits() {
        let l = small();
        let mut s = Sequencer::new(l, 3, 0, u64::MAX, 2, 50);
        let steps = ids(&mut s, 10, 12);
        let expected: Vec<Step> =
            (0..12).map(|i| Step::Id(l.compose_offset(10 + i / 4, 3, i % 4).unwrap())).collect();
        assert_eq!(steps, expected);
        // 12 IDs used 10, 11 and 12; 13 would lead the clock by 3 > 2.
        assert_eq!(s.next(10), Step::WaitUntil(11));
        assert_eq!(s.next(11), Step::Id(l.compose_offset(13, 3, 0).unwrap()));
    }

    #[test]
    fn a_clock_stepping_back_is_absorbed_waited_out_or_refused() {
        let l = small();
        let mut s = Sequencer::new(l, 0, 0, u64::MAX, 2, 50);
        assert!(matches!(s.next(1000), Step::Id(_)));
        // Back 2 ms: within the lead, keeps going from 1000.
        assert_eq!(s.next(998), Step::Id(l.compose_offset(1000, 0, 1).unwrap()));
        // Back 30 ms: waits until the clock is within the lead again.
        assert_eq!(s.next(970), Step::WaitUntil(998));
        // Back 60 ms: refused.
        assert_eq!(s.next(940), Step::ClockBack(60));
        // And once the clock is back, it continues above every earlier ID.
        assert_eq!(s.next(1001), Step::Id(l.compose_offset(1001, 0, 0).unwrap()));
    }

    #[test]
    fn stops_at_the_watermark() {
        let l = small();
        let mut s = Sequencer::new(l, 0, 0, 10, 2, 50);
        assert!(matches!(s.next(10), Step::Id(_)));
        assert_eq!(s.next(11), Step::Watermark);
        s.set_watermark(20);
        assert_eq!(s.next(11), Step::Id(l.compose_offset(11, 0, 0).unwrap()));
    }

    #[test]
    fn switching_worker_continues_after_the_new_record() {
        let l = small();
        let mut s = Sequencer::new(l, 0, 0, u64::MAX, 2, 50);
        assert!(matches!(s.next(10), Step::Id(_)));
        s.switch_worker(7, 20, u64::MAX);
        assert_eq!(s.worker_id(), 7);
        assert_eq!(s.next(21), Step::Id(l.compose_offset(21, 7, 0).unwrap()));
    }

    #[test]
    fn exhausted_past_the_layout() {
        let l = SnowflakeLayout::new(std::time::UNIX_EPOCH, 3, 4, 2).unwrap();
        let mut s = Sequencer::new(l, 0, 0, u64::MAX, 2, 50);
        assert!(matches!(s.next(7), Step::Id(_)));
        assert_eq!(s.next(8), Step::Exhausted);
    }

    proptest! {
        /// Whatever the clock does (jumps, steps back, stands still), issued IDs strictly
        /// increase and never exceed the watermark or lead the clock by more than max_lead.
        #[test]
        fn ids_strictly_increase(deltas in proptest::collection::vec(-80i64..80, 1..400)) {
            let l = small();
            let mut s = Sequencer::new(l, 2, 500, 5000, 3, 40);
            let mut now: i64 = 500;
            let mut last: Option<u64> = None;
            for d in deltas {
                now = (now + d).max(0);
                if let Step::Id(id) = s.next(now as u64) {
                    prop_assert!(last.is_none_or(|x| id > x));
                    let parts = l.decompose(id);
                    prop_assert!(parts.timestamp_ms <= now as u64 + 3);
                    prop_assert!(parts.timestamp_ms > 500 && parts.timestamp_ms <= 5000);
                    prop_assert_eq!(parts.worker_id, 2);
                    last = Some(id);
                }
            }
        }
    }
}
