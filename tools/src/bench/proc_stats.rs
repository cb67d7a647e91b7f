//! Figures of another process (a broker measured from outside) and of this
//! one, from /proc (Linux; `None` elsewhere).

/// VmRSS of process `pid`, KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    vm_rss_kib(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// The `VmRSS:` line of a /proc/PID/status text, KiB.
fn vm_rss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
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
        let status = "Name:\trmq-broker\nVmPeak:\t  999 kB\nVmRSS:\t   12345 kB\nThreads:\t9\n";
        assert_eq!(vm_rss_kib(status), Some(12345));
        assert_eq!(vm_rss_kib("Name:\tx\n"), None);
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
        assert!(cpu_seconds(me).is_some());
        assert!(open_files_limit().is_some_and(|n| n > 0));
    }
}
