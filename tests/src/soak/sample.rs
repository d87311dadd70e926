//! What the soak samples every 10 s, and how it judges the samples: a process's resident
//! memory, live heap, open files, sockets and live tasks, and whether its memory grew after the
//! warm-up.

use std::time::Duration;

/// One sample of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    /// Seconds since the soak started.
    pub at: u64,
    /// Resident memory (`VmRSS`), KiB.
    pub rss_kib: u64,
    /// Open file descriptors.
    pub fds: u64,
    /// Of which sockets.
    pub sockets: u64,
    /// Live tokio tasks (the process's runtime; `None` for a process that does not report them).
    pub tasks: Option<u64>,
    /// Live heap, KiB: bytes allocated and not freed, as a counting allocator sees them (`None`
    /// for a process without one).
    pub heap_kib: Option<u64>,
}

impl Sample {
    /// The calling process now, `at` seconds into the soak, with its runtime's live tasks.
    pub fn of_this_process(at: u64) -> Sample {
        let (fds, sockets) = open_files("self");
        let tasks = tokio::runtime::Handle::try_current().ok().map(|h| h.metrics().num_alive_tasks() as u64);
        Sample { at, rss_kib: rss_kib("self"), fds, sockets, tasks, heap_kib: heap_kib() }
    }

    /// The line a resident prints (`sample <at> <rss> <fds> <sockets> <tasks> <heap>`, `-`
    /// for what it does not know).
    pub fn to_line(&self) -> String {
        let known = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
        let (tasks, heap) = (known(self.tasks), known(self.heap_kib));
        format!("sample {} {} {} {} {tasks} {heap}", self.at, self.rss_kib, self.fds, self.sockets)
    }

    /// Parses [`to_line`](Self::to_line)'s output.
    pub fn from_line(line: &str) -> Option<Sample> {
        let mut fields = line.strip_prefix("sample ")?.split(' ');
        let mut next = || fields.next().and_then(|f| f.parse::<u64>().ok());
        let (at, rss_kib, fds, sockets) = (next()?, next()?, next()?, next()?);
        let (tasks, heap_kib) = (next(), next());
        Some(Sample { at, rss_kib, fds, sockets, tasks, heap_kib })
    }
}

/// This process's live heap now, KiB: bytes allocated and not freed, as
/// `stats_alloc::INSTRUMENTED_SYSTEM` counts them; `None` when the process does not allocate
/// through it (its binary must make it the global allocator:
/// `#[global_allocator] static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;`). A leak
/// grows it; the allocator keeping freed memory (RSS) does not. `stats_alloc` counts a
/// reallocation's growth in `bytes_allocated` and its shrinking in `bytes_deallocated` already
/// (`bytes_reallocated` is their net, again): added once more, every vector that grew and was
/// freed would count forever.
pub fn heap_kib() -> Option<u64> {
    let s = stats_alloc::INSTRUMENTED_SYSTEM.stats();
    if s.bytes_allocated == 0 {
        return None;
    }
    let live = s.bytes_allocated as i128 - s.bytes_deallocated as i128;
    Some(u64::try_from(live / 1024).unwrap_or(0))
}

/// `VmRSS` of `/proc/<pid>/status` (`pid` may be `self`), KiB; 0 when unreadable.
pub fn rss_kib(pid: &str) -> u64 {
    zkr_testing::proc_status_kib(pid, "VmRSS").unwrap_or(0)
}

/// Open descriptors of `/proc/<pid>/fd`, and how many of them are sockets.
pub fn open_files(pid: &str) -> (u64, u64) {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return (0, 0) };
    let (mut fds, mut sockets) = (0, 0);
    for entry in entries.flatten() {
        fds += 1;
        let target = std::fs::read_link(entry.path()).unwrap_or_default();
        if target.to_string_lossy().starts_with("socket:") {
            sockets += 1;
        }
    }
    (fds, sockets)
}

/// How a memory series of a run was judged: the least-squares line through the samples after
/// the warm-up, and what it grew by over that span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    /// The warm-up's end, seconds.
    pub from: u64,
    /// The last sample, seconds.
    pub to: u64,
    /// The value at the warm-up's end (the first sample at or after it), KiB.
    pub at_warm: u64,
    /// The value of the last sample, KiB.
    pub at_end: u64,
    /// The fitted line's slope, KiB per minute.
    pub slope_kib_per_min: f64,
    /// The fitted line's rise over `from..to`, KiB.
    pub fitted_rise_kib: f64,
}

impl Growth {
    /// Flat: the fitted rise over the span is at most `bound` of the value at the warm-up's end
    /// (a leak of a few bytes per operation at the soak's rate shows as a steady slope; the
    /// allocator's steps up and down do not move a line fitted through hundreds of samples far).
    pub fn is_flat(&self, bound: f64) -> bool {
        self.fitted_rise_kib <= bound * self.at_warm as f64
    }
}

/// The growth of the series `(at, KiB)` after `warm_up` (`None` with fewer than 3 samples
/// after it).
pub fn growth(series: &[(u64, u64)], warm_up: Duration) -> Option<Growth> {
    let from = warm_up.as_secs();
    let after: Vec<Point> =
        series.iter().filter(|(at, _)| *at >= from).map(|&(at, kib)| Point { at, kib }).collect();
    if after.len() < 3 {
        return None;
    }
    let n = after.len() as f64;
    let mean_t = after.iter().map(|s| s.at as f64).sum::<f64>() / n;
    let mean_r = after.iter().map(|s| s.kib as f64).sum::<f64>() / n;
    let (mut cov, mut var) = (0.0, 0.0);
    for s in &after {
        let dt = s.at as f64 - mean_t;
        cov += dt * (s.kib as f64 - mean_r);
        var += dt * dt;
    }
    let slope = if var > 0.0 { cov / var } else { 0.0 };
    let (first, last) = (after[0], after[after.len() - 1]);
    Some(Growth {
        from: first.at,
        to: last.at,
        at_warm: first.kib,
        at_end: last.kib,
        slope_kib_per_min: slope * 60.0,
        fitted_rise_kib: slope * (last.at - first.at) as f64,
    })
}

/// One sample of a series.
#[derive(Debug, Clone, Copy)]
struct Point {
    at: u64,
    kib: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(rss: impl Fn(u64) -> u64) -> Vec<(u64, u64)> {
        (0..360).map(|i| (i * 10, rss(i * 10))).collect()
    }

    #[test]
    fn a_steady_leak_is_not_flat_and_noise_and_a_step_in_the_warm_up_are() {
        let warm = Duration::from_secs(300);
        // 10 MiB at the warm-up's end, a KiB every 10 s after it: 330 KiB, 3.2%.
        let leak = growth(&samples(|t| 10_240 + t.saturating_sub(300) / 10), warm).unwrap();
        assert!((leak.slope_kib_per_min - 6.0).abs() < 0.01, "{leak:?}");
        assert!(!leak.is_flat(0.02) && leak.is_flat(0.05), "{leak:?}");
        // The allocator's noise: up and down by 2 MiB every other sample; a step in the warm-up.
        let noisy = growth(&samples(|t| if t < 200 { 5_000 } else { 10_240 + (t / 10 % 2) * 2_048 }), warm);
        let noisy = noisy.unwrap();
        assert!(noisy.is_flat(0.02), "{noisy:?}");
        assert_eq!((noisy.from, noisy.to), (300, 3590));
    }

    #[test]
    fn a_sample_line_round_trips_and_a_bad_one_is_refused() {
        let s =
            Sample { at: 70, rss_kib: 12_345, fds: 17, sockets: 4, tasks: Some(31), heap_kib: Some(2_048) };
        assert_eq!(Sample::from_line(&s.to_line()), Some(s));
        let unknown = Sample { tasks: None, heap_kib: None, ..s };
        assert_eq!(Sample::from_line(&unknown.to_line()), Some(unknown));
        assert_eq!(Sample::from_line(&format!("{} ops 7", s.to_line())), Some(s));
        assert_eq!(Sample::from_line("sample 1 2 x 4 5"), None);
        assert_eq!(Sample::from_line("DONE 4"), None);
        assert!(growth(&samples(|_| 1)[..2], Duration::ZERO).is_none());
    }

    #[test]
    fn this_process_has_memory_and_open_files() {
        let s = Sample::of_this_process(0);
        assert!(s.rss_kib > 0 && s.fds >= 3, "{s:?}");
        assert_eq!(s.tasks, None, "no runtime here");
    }
}
