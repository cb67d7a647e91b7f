//! Figures of another process (a broker measured from outside) and of this
//! one, from /proc (Linux; `None` elsewhere).

/// VmRSS of process `pid`, KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(
        &std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
        "VmRSS:",
    )
}

/// VmHWM (peak resident memory) of process `pid`, KiB.
pub fn hwm_kib(pid: u32) -> Option<u64> {
    status_kib(
        &std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
        "VmHWM:",
    )
}

/// RssAnon (resident anonymous memory: heap and stacks, not mapped
/// files) of process `pid`, KiB.
pub fn anon_kib(pid: u32) -> Option<u64> {
    status_kib(
        &std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
        "RssAnon:",
    )
}

/// Files process `pid` has open (entries of /proc/PID/fd).
pub fn open_fds(pid: u32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

/// Files process `pid` has open under `root` (a store's data files), and
/// every other descriptor (sockets, pipes, other files).
pub fn fds_under(pid: u32, root: &std::path::Path) -> Option<(u64, u64)> {
    let (mut under, mut other) = (0, 0);
    for e in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        match std::fs::read_link(e.path()) {
            Ok(target) if target.starts_with(root) => under += 1,
            // A descriptor closed since the listing counts nowhere.
            Err(_) => {}
            Ok(_) => other += 1,
        }
    }
    Some((under, other))
}

/// The `key` line (e.g. `VmRSS:`) of a /proc/PID/status text, KiB.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// utime + stime of process `pid`, seconds.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    rmq_broker::metrics::process::cpu_seconds_of(pid)
}

/// This process's soft limit on open files (`ulimit -n`).
pub fn open_files_limit() -> Option<u64> {
    soft_open_files(&std::fs::read_to_string("/proc/self/limits").ok()?)
}

/// The soft "Max open files" of a /proc/PID/limits text (`None` when
/// unlimited or absent).
fn soft_open_files(limits: &str) -> Option<u64> {
    limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_and_limits() {
        let status = "Name:\trmq-broker\nVmPeak:\t  999 kB\nVmHWM:\t   23456 kB\nVmRSS:\t   12345 kB\nRssAnon:\t    2345 kB\nThreads:\t9\n";
        assert_eq!(status_kib(status, "VmRSS:"), Some(12345));
        assert_eq!(status_kib(status, "VmHWM:"), Some(23456));
        assert_eq!(status_kib(status, "RssAnon:"), Some(2345));
        assert_eq!(status_kib("Name:\tx\n", "VmRSS:"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max processes             63431                63431                processes\n\
                      Max open files            20000                524288               files\n";
        assert_eq!(soft_open_files(limits), Some(20000));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(soft_open_files(unlimited), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        assert!(rss_kib(me).is_some_and(|k| k > 0));
        assert!(hwm_kib(me).is_some_and(|k| k >= rss_kib(me).unwrap_or(0) / 2));
        assert!(open_fds(me).is_some_and(|n| n >= 3));
        assert!(anon_kib(me).is_some_and(|k| k > 0));
        assert!(cpu_seconds(me).is_some());
        assert!(open_files_limit().is_some_and(|n| n > 0));
    }

    #[test]
    fn splits_descriptors_by_folder() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let (under, _) = fds_under(me, dir.path()).unwrap();
        let _f = std::fs::File::create(dir.path().join("held")).unwrap();
        let (more, other) = fds_under(me, dir.path()).unwrap();
        assert_eq!(more, under + 1);
        assert!(other >= 3, "stdin, stdout, stderr at least");
    }
}
