//! [`proc_status_kib`]: one memory field of a process's `/proc/<pid>/status`, for benchmarks
//! and the soak.

/// A field of `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`, ...); `pid` may be `self`.
/// `None` when the file or the field cannot be read (not Linux, the process is gone).
///
/// # Examples
///
/// ```
/// if let Some(rss) = zkr_testing::proc_status_kib("self", "VmRSS") {
///     assert!(rss > 0);
/// }
/// assert_eq!(zkr_testing::proc_status_kib("self", "NoSuchField"), None);
/// ```
pub fn proc_status_kib(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::proc_status_kib;

    #[test]
    fn reads_this_process_and_refuses_what_is_not_there() {
        if std::path::Path::new("/proc/self/status").exists() {
            let (rss, peak) =
                (proc_status_kib("self", "VmRSS").unwrap(), proc_status_kib("self", "VmHWM").unwrap());
            assert!(rss > 0 && peak >= rss, "rss {rss}, peak {peak}");
        }
        // A prefix of a field is not the field.
        assert_eq!(proc_status_kib("self", "VmRS"), None);
        assert_eq!(proc_status_kib("no-such-process", "VmRSS"), None);
    }
}
