//! Resident memory, read from Linux's `/proc/PID/status` and `/proc/PID/stat`: what the
//! memory budgets and the benchmark's peak-memory column measure. Elsewhere (no `/proc`)
//! every reading is `None` (or 0 for process groups).

/// A `status` field in bytes (`VmRSS`, `VmHWM`) of process `pid`, or of this process.
fn status_bytes(pid: Option<u32>, field: &str) -> Option<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    let line = status.lines().find(|l| l.strip_prefix(field).is_some_and(|rest| rest.starts_with(':')))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The resident memory of process `pid` (`VmRSS`), or of this process.
pub fn resident_bytes(pid: Option<u32>) -> Option<u64> {
    status_bytes(pid, "VmRSS")
}

/// The peak resident memory of this process so far (`VmHWM`).
pub fn peak_resident_bytes() -> Option<u64> {
    status_bytes(None, "VmHWM")
}

/// The resident memory, in bytes, of every process whose process group is one of
/// `groups` (a scan of `/proc/*/stat`; 0 when none runs).
pub fn groups_resident_bytes(groups: &[i32]) -> u64 {
    if groups.is_empty() {
        return 0;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    let page = page_size();
    dir.filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|stat| group_and_rss_pages(&stat))
        .filter(|(group, _)| groups.contains(group))
        .map(|(_, pages)| pages * page)
        .sum()
}

/// The process group and the resident pages of a `/proc/PID/stat` line (fields 5 and
/// 24; the command name, field 2, is in parentheses and may hold spaces and parentheses).
fn group_and_rss_pages(stat: &str) -> Option<(i32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (3), ppid (4), pgrp (5), ..., rss (24).
    Some((fields.get(2)?.parse().ok()?, fields.get(21)?.parse().ok()?))
}

fn page_size() -> u64 {
    // SAFETY: `sysconf` has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_stat_line_gives_its_group_and_resident_pages_whatever_the_name() {
        let stat = "4242 (py thon) (x)) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 5 123456 789 18446744073709551615";
        assert_eq!(super::group_and_rss_pages(stat), Some((4240, 789)));
        assert_eq!(super::group_and_rss_pages("garbage"), None);
    }

    #[test]
    fn this_process_group_is_resident() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        // SAFETY: no preconditions.
        let group = unsafe { libc::getpgrp() };
        assert!(super::groups_resident_bytes(&[group]) >= super::resident_bytes(None).unwrap());
        assert_eq!(super::groups_resident_bytes(&[]), 0);
    }

    #[test]
    fn this_process_is_resident_and_its_peak_is_at_least_that() {
        if !std::path::Path::new("/proc/self/status").exists() {
            return;
        }
        let now = super::resident_bytes(None).unwrap();
        assert!(now > 0);
        assert!(super::peak_resident_bytes().unwrap() >= now);
        assert_eq!(super::resident_bytes(Some(u32::MAX)), None, "no such process");
    }
}
