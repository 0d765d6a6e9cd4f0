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
    let page = page_size();
    scan_groups(groups).iter().map(|&(_, pages)| pages * page).sum()
}

/// The processes of `groups` and their resident pages, from a scan of all of `/proc`.
fn scan_groups(groups: &[i32]) -> Vec<(i32, u64)> {
    if groups.is_empty() {
        return Vec::new();
    }
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter_map(|pid| member(pid, groups).map(|pages| (pid, pages)))
        .collect()
}

/// The resident pages of process `pid` when its process group is one of `groups`.
fn member(pid: i32, groups: &[i32]) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (group, pages) = group_and_rss_pages(&stat)?;
    groups.contains(&group).then_some(pages)
}

/// The children of process `pid` that its main thread started
/// (`/proc/PID/task/PID/children`; empty where the kernel does not list them). Not every
/// thread's: an export process runs hundreds of XLA threads, and reading each one's list
/// every sample cost a tenth of the whole command's CPU (psum.py at `--sizes 2..64`); a
/// child another thread started is found by the next full scan.
fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|list| list.split_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

/// Samples the resident memory of process groups often and cheaply: a scan of all of
/// `/proc` now and then (every [`GroupSampler::FULL_SCAN`]), and in between only the
/// processes found by the last sample and the children their main threads started (a
/// process the script starts is seen at once; one whose parent has died, or that another
/// thread started, is found by the next full scan).
#[derive(Debug)]
pub struct GroupSampler {
    members: Vec<i32>,
    scanned: Option<std::time::Instant>,
}

impl Default for GroupSampler {
    fn default() -> GroupSampler {
        GroupSampler::new()
    }
}

impl GroupSampler {
    /// A sampler that has sampled nothing yet.
    pub const fn new() -> GroupSampler {
        GroupSampler { members: Vec::new(), scanned: None }
    }

    /// How often all of `/proc` is scanned.
    pub const FULL_SCAN: std::time::Duration = std::time::Duration::from_millis(200);

    /// The resident memory, in bytes, of every process of `groups` (0 when none runs).
    pub fn resident_bytes(&mut self, groups: &[i32]) -> u64 {
        let page = page_size();
        if groups.is_empty() {
            self.members.clear();
            return 0;
        }
        let found: Vec<(i32, u64)> = if self.scanned.is_none_or(|t| t.elapsed() >= Self::FULL_SCAN) {
            self.scanned = Some(std::time::Instant::now());
            scan_groups(groups)
        } else {
            let mut todo: Vec<i32> = self.members.iter().chain(groups).copied().collect();
            let mut found: Vec<(i32, u64)> = Vec::new();
            while let Some(pid) = todo.pop() {
                if found.iter().any(|&(p, _)| p == pid) {
                    continue;
                }
                if let Some(pages) = member(pid, groups) {
                    found.push((pid, pages));
                    todo.extend(children(pid));
                }
            }
            found
        };
        self.members = found.iter().map(|&(p, _)| p).collect();
        found.iter().map(|&(_, pages)| pages * page).sum()
    }
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
        // The sampler agrees with a full scan, from its first sample (a full scan) on.
        let mut sampler = super::GroupSampler::new();
        for _ in 0..3 {
            let sampled = sampler.resident_bytes(&[group]);
            assert!(sampled >= super::resident_bytes(None).unwrap() / 2, "{sampled}");
        }
        assert_eq!(sampler.resident_bytes(&[]), 0);
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
