//! This process's resource use, read from /proc (Linux; `None` elsewhere).

/// Open descriptors, memory maps and resident memory of this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProcessStats {
    /// Entries in /proc/self/fd.
    pub open_files: Option<u64>,
    /// Lines in /proc/self/maps.
    pub memory_maps: Option<u64>,
    /// VmRSS, bytes.
    pub resident_bytes: Option<u64>,
}

impl ProcessStats {
    /// Reads the three figures now.
    pub fn sample() -> Self {
        Self {
            open_files: std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|d| d.count() as u64),
            memory_maps: std::fs::read_to_string("/proc/self/maps")
                .ok()
                .map(|m| m.lines().count() as u64),
            resident_bytes: resident_bytes(),
        }
    }
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
    }
}
