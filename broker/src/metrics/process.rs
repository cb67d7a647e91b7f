//! This process's resource use, read from /proc (Linux; `None` elsewhere).

/// Clock ticks per second of the `utime`/`stime` fields of /proc/PID/stat:
/// the kernel's USER_HZ, which Linux fixes at 100 for user space.
const USER_HZ: f64 = 100.0;

/// Open descriptors, memory maps, resident memory and CPU time of this
/// process.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct ProcessStats {
    /// Entries in /proc/self/fd.
    pub open_files: Option<u64>,
    /// Lines in /proc/self/maps.
    pub memory_maps: Option<u64>,
    /// VmRSS, bytes.
    pub resident_bytes: Option<u64>,
    /// User plus system CPU time of every thread so far, seconds.
    pub cpu_seconds: Option<f64>,
}

impl ProcessStats {
    /// Reads the figures now.
    pub fn sample() -> Self {
        Self {
            open_files: std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|d| d.count() as u64),
            memory_maps: std::fs::read_to_string("/proc/self/maps")
                .ok()
                .map(|m| m.lines().count() as u64),
            resident_bytes: resident_bytes(),
            cpu_seconds: std::fs::read_to_string("/proc/self/stat")
                .ok()
                .and_then(|s| cpu_seconds(&s)),
        }
    }
}

/// utime + stime of process `pid` so far, seconds (a broker measured from
/// outside, as `rmq-bench meta` does).
pub fn cpu_seconds_of(pid: u32) -> Option<f64> {
    cpu_seconds(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// utime + stime of a /proc/PID/stat line, seconds. The command name (field
/// 2) is in parentheses and may hold spaces, so fields are counted after
/// the last `)`: state is field 3, utime field 14, stime field 15.
fn cpu_seconds(stat: &str) -> Option<f64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

/// VmRSS of this process from /proc/self/status, bytes.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        let s = ProcessStats::sample();
        assert!(s.open_files.is_some_and(|n| n >= 3));
        assert!(s.memory_maps.is_some_and(|n| n > 0));
        assert!(s.resident_bytes.is_some_and(|n| n > 0));
        assert!(s.cpu_seconds.is_some_and(|c| c >= 0.0));
    }

    #[test]
    fn cpu_time_comes_from_utime_and_stime() {
        // pid (comm with ") spaces") state ppid pgrp session tty tpgid flags
        // minflt cminflt majflt cmajflt utime stime cutime ...
        let line = "42 (rmq x) y) S 1 42 42 0 -1 4194560 10 0 0 0 250 50 7 7 20 0 9";
        assert_eq!(cpu_seconds(line), Some(3.0));
        assert_eq!(cpu_seconds("42 (rmq) S 1"), None);
        assert_eq!(cpu_seconds("no parenthesis"), None);
    }
}
