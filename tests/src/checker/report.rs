//! What one schedule of the mutual-exclusion checker found.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::history::{now, Nanos};

/// What one schedule found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The schedule's name.
    pub schedule: String,
    /// Locks acquired.
    pub acquisitions: usize,
    /// Of them, by the peer library's workers ([`CheckOptions::peers`](super::CheckOptions::peers)).
    pub peer_acquisitions: usize,
    /// The peer library's acquires that came back more than 3 s after their timeout: its
    /// deadline, not zkr's (kazoo's `Lock.acquire(timeout)` checks its deadline between
    /// attempts, and a request in flight waits for its connection), so not in `hung`.
    pub peer_late: usize,
    /// Critical sections whose write was applied.
    pub commits: usize,
    /// Critical sections whose write was refused (the lock was gone).
    pub aborts: usize,
    /// Critical sections whose write got no answer.
    pub unknown: usize,
    /// Acquires that timed out (a bounded wait, not a failure).
    pub timeouts: usize,
    /// Acquires that failed with an error (during faults).
    pub acquire_errors: usize,
    /// Acquire futures dropped on purpose.
    pub cancelled: usize,
    /// Faults injected.
    pub faults: usize,
    /// Lost updates (counter value below its version), records that disagree with the counter
    /// node, and failing parts of the history.
    pub violations: usize,
    /// Operations in the checked history, and the segments it was checked in.
    pub history: (usize, usize),
    /// Lock nodes left behind.
    pub leaked_nodes: usize,
    /// Acquires without an answer in time, and workers that did not stop.
    pub hung: usize,
    /// Per fault: from injection to the next committed critical section.
    pub recoveries: Vec<Duration>,
    /// Faults after which nothing committed within the recovery bound.
    pub unrecovered: usize,
    /// What went wrong, for the test's failure message.
    pub notes: Vec<String>,
    /// The command that runs the schedule again ([`Schedule::replay`]).
    pub replay: String,
}

impl Report {
    /// The nearest-rank 99th percentile of the recovery times.
    pub fn recovery_p99(&self) -> Option<Duration> {
        let mut sorted = self.recoveries.clone();
        sorted.sort_unstable();
        let rank = (0.99 * sorted.len() as f64).ceil() as usize;
        sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
    }

    /// Did it pass: no violation, no leak, nothing hung, every fault recovered, some work done?
    pub fn passed(&self) -> bool {
        self.violations == 0
            && self.leaked_nodes == 0
            && self.hung == 0
            && self.unrecovered == 0
            && self.commits > 0
    }

    /// The markdown table header for [`row`](Self::row).
    pub fn header() -> String {
        "| schedule | acquisitions | commits | refused / unknown writes | faults | cancelled | history: operations / segments | violations | leaked nodes | hung acquires | p99 recovery |\n\
         |---|---|---|---|---|---|---|---|---|---|---|"
            .to_owned()
    }

    /// One markdown table row.
    pub fn row(&self) -> String {
        let p99 = self.recovery_p99().map_or_else(|| "-".to_owned(), |d| format!("{} ms", d.as_millis()));
        format!(
            "| {} | {} | {} | {} / {} | {} | {} | {} / {} | {} | {} | {} | {} |",
            self.schedule,
            self.acquisitions,
            self.commits,
            self.aborts,
            self.unknown,
            self.faults,
            self.cancelled,
            self.history.0,
            self.history.1,
            self.violations,
            self.leaked_nodes,
            self.hung_cell(),
            p99
        )
    }

    /// zkr's hung acquires, and the peer's late ones beside them.
    fn hung_cell(&self) -> String {
        match self.peer_late {
            0 => self.hung.to_string(),
            late => format!("{} (+{late} of the peer's, late)", self.hung),
        }
    }
}

/// The workers' lines as they came (and the checker's faults), to print beside a failing part
/// of the history: what each process said around it, in its own words.
#[derive(Debug, Default)]
pub(crate) struct Transcript {
    lines: Vec<(Nanos, Option<usize>, String)>,
}

impl Transcript {
    /// The lines shown beside one failing part, at most: its last ones.
    const SHOWN: usize = 40;
    /// How far before and after the part a line is shown (lines arrive after their own times).
    const MARGIN: Nanos = 1_000_000_000;

    /// `line` from process `process` (`None`: the checker), now.
    pub(crate) fn push(&mut self, process: Option<usize>, line: &str) {
        self.lines.push((now(), process, line.to_owned()));
    }

    /// The lines of `processes` and the checker's from `from` to `to`, each way widened by a
    /// second, the last [`SHOWN`](Self::SHOWN), with times in ms from `from`.
    pub(crate) fn around(&self, processes: &BTreeSet<usize>, from: Nanos, to: Nanos) -> String {
        let (start, end) = (from.saturating_sub(Self::MARGIN), to.saturating_add(Self::MARGIN));
        let shown: Vec<_> = self
            .lines
            .iter()
            .filter(|(at, process, _)| {
                (start..=end).contains(at) && process.is_none_or(|p| processes.contains(&p))
            })
            .collect();
        let skip = shown.len().saturating_sub(Self::SHOWN);
        let mut text = format!(
            "what the workers said around it ({} lines, the last {}):\n",
            shown.len(),
            shown.len() - skip
        );
        for (at, process, line) in &shown[skip..] {
            let ms = (*at as f64 - from as f64) / 1e6;
            let who = process.map_or_else(|| "checker".to_owned(), |p| format!("worker {p}"));
            text.push_str(&format!("  {ms:>10.3} ms  {who}: {line}\n"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_shows_the_parts_processes_and_the_checker_around_it() {
        let mut transcript = Transcript::default();
        let from = now();
        transcript.push(Some(0), "ACQUIRED 1 2");
        transcript.push(Some(1), "ACQUIRED 3 4");
        transcript.push(None, "fault ServerPause");
        transcript.push(Some(0), "ABORT 5 NoNodeError");
        let text = transcript.around(&BTreeSet::from([0]), from, now());
        assert!(
            text.contains("worker 0: ACQUIRED 1 2") && text.contains("worker 0: ABORT 5 NoNodeError"),
            "{text}"
        );
        assert!(text.contains("checker: fault ServerPause"), "{text}");
        assert!(!text.contains("worker 1"), "{text}");
        assert!(text.starts_with("what the workers said around it (3 lines, the last 3)"), "{text}");
        for i in 0..50 {
            transcript.push(Some(0), &format!("READ {i}"));
        }
        let text = transcript.around(&BTreeSet::from([0]), from, now());
        assert!(
            text.contains("(53 lines, the last 40)")
                && text.contains("READ 49")
                && !text.contains("ACQUIRED"),
            "{text}"
        );
    }
}
