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

/// What semcheck reads of a process's `/proc/PID/stat` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    /// The parent's pid (field 4).
    ppid: i32,
    /// The process group (field 5).
    group: i32,
    /// Whether it has ended and waits to be reaped (state `Z`, field 3).
    zombie: bool,
    /// When it started, in clock ticks since boot (field 22): with the pid, it names one
    /// process, not whichever process reuses its pid later.
    start: u64,
    /// Resident pages (field 24).
    rss_pages: u64,
}

/// Parses a `/proc/PID/stat` line (the command name, field 2, is in parentheses and may
/// hold spaces and parentheses).
fn parse_stat(stat: &str) -> Option<Stat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (3), ppid (4), pgrp (5), ..., starttime (22), ..., rss (24).
    Some(Stat {
        zombie: *fields.first()? == "Z",
        ppid: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        rss_pages: fields.get(21)?.parse().ok()?,
    })
}

/// The stat of process `pid`, if it runs (or waits to be reaped).
fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process of `/proc` with its stat.
fn all_processes() -> Vec<(i32, Stat)> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect()
}

/// The pids of `procs` descended from `root` (its children, theirs, and so on; not `root`).
fn descendants_in(procs: &[(i32, Stat)], root: i32) -> std::collections::HashSet<i32> {
    let mut children: std::collections::HashMap<i32, Vec<i32>> = std::collections::HashMap::new();
    for &(pid, s) in procs {
        children.entry(s.ppid).or_default().push(pid);
    }
    let mut found = std::collections::HashSet::new();
    let mut todo = vec![root];
    while let Some(parent) = todo.pop() {
        for &pid in children.get(&parent).into_iter().flatten() {
            if pid != root && found.insert(pid) {
                todo.push(pid);
            }
        }
    }
    found
}

/// The processes descended from this one that still run (zombies left out): with this
/// process a subreaper ([`crate::children`]), every process a child of it started, even
/// one that left its process group and whose parent has died, is among them.
pub fn running_descendants() -> Vec<i32> {
    let procs = all_processes();
    let tree = descendants_in(&procs, std::process::id() as i32);
    procs.iter().filter(|(pid, s)| !s.zombie && tree.contains(pid)).map(|&(pid, _)| pid).collect()
}

/// The children of this process, of any of its threads (empty where the kernel does not
/// list them).
pub fn own_children() -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|list| list.split_whitespace().filter_map(|p| p.parse::<i32>().ok()).collect::<Vec<_>>())
        .collect()
}

/// The children of this process that have ended and wait to be reaped.
pub fn ended_children() -> Vec<i32> {
    own_children().into_iter().filter(|&pid| stat(pid).is_some_and(|s| s.zombie)).collect()
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

/// Samples, often and cheaply, the resident memory of the processes semcheck answers for:
/// every process of the given process groups, and every process descended from semcheck
/// (one that left its group, a daemon, is reparented to semcheck, a subreaper, when its
/// parent dies), semcheck itself left out. A scan of all of `/proc` now and then (every
/// [`TreeSampler::FULL_SCAN`]), and in between only the processes found by the last sample
/// and the children their main threads (and semcheck's main thread) started: a process the
/// script starts is seen at once; one that another thread started, or that a group member
/// started before leaving the group, is found by the next full scan.
#[derive(Debug)]
pub struct TreeSampler {
    /// The processes the last sample found, by pid and start time.
    members: Vec<(i32, u64)>,
    scanned: Option<std::time::Instant>,
}

impl Default for TreeSampler {
    fn default() -> TreeSampler {
        TreeSampler::new()
    }
}

/// Why a process is looked at in a sample between full scans.
#[derive(Clone, Copy)]
enum Lead {
    /// The leader of one of the groups: counted when it still leads it.
    Leader,
    /// Found by the last sample: counted when it is still that process.
    Member(u64),
    /// A child of a counted process or of semcheck: counted.
    Child,
}

impl TreeSampler {
    /// A sampler that has sampled nothing yet.
    pub const fn new() -> TreeSampler {
        TreeSampler { members: Vec::new(), scanned: None }
    }

    /// How often all of `/proc` is scanned.
    pub const FULL_SCAN: std::time::Duration = std::time::Duration::from_millis(200);

    /// The resident memory, in bytes, of every process of `groups` and, with
    /// `descendants`, every process descended from this one (0 when none runs).
    pub fn resident_bytes(&mut self, groups: &[i32], descendants: bool) -> u64 {
        let me = std::process::id() as i32;
        let my_children = if descendants { children(me) } else { Vec::new() };
        if groups.is_empty() && my_children.is_empty() {
            // Nothing runs on semcheck's behalf (every process descended from it is a
            // child of its main thread's, or of a group's): no scan of `/proc` needed.
            self.members.clear();
            return 0;
        }
        let found: Vec<(i32, Stat)> = if self.scanned.is_none_or(|t| t.elapsed() >= Self::FULL_SCAN) {
            self.scanned = Some(std::time::Instant::now());
            let procs = all_processes();
            let tree = if descendants { descendants_in(&procs, me) } else { Default::default() };
            procs
                .into_iter()
                .filter(|(pid, s)| *pid != me && (groups.contains(&s.group) || tree.contains(pid)))
                .collect()
        } else {
            let mut todo: Vec<(i32, Lead)> = my_children.into_iter().map(|p| (p, Lead::Child)).collect();
            todo.extend(groups.iter().map(|&g| (g, Lead::Leader)));
            todo.extend(self.members.iter().map(|&(p, start)| (p, Lead::Member(start))));
            let mut found: Vec<(i32, Stat)> = Vec::new();
            let mut seen = std::collections::HashSet::from([me]);
            while let Some((pid, lead)) = todo.pop() {
                if seen.contains(&pid) {
                    continue;
                }
                let Some(s) = stat(pid) else { continue };
                let counted = match lead {
                    Lead::Leader => groups.contains(&s.group),
                    Lead::Member(start) => s.start == start,
                    Lead::Child => true,
                };
                if counted {
                    seen.insert(pid);
                    found.push((pid, s));
                    todo.extend(children(pid).into_iter().map(|p| (p, Lead::Child)));
                }
            }
            found
        };
        self.members = found.iter().map(|&(p, s)| (p, s.start)).collect();
        found.iter().map(|&(_, s)| s.rss_pages * page_size()).sum()
    }
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
    fn a_stat_line_gives_its_parent_group_start_and_resident_pages_whatever_the_name() {
        let stat = "4242 (py thon) (x)) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 5 123456 789 18446744073709551615";
        let parsed = super::parse_stat(stat).unwrap();
        assert_eq!(
            (parsed.ppid, parsed.group, parsed.start, parsed.rss_pages, parsed.zombie),
            (1, 4240, 5, 789, false)
        );
        assert!(super::parse_stat(&stat.replace(") S 1", ") Z 1")).unwrap().zombie);
        assert_eq!(super::parse_stat("garbage"), None);
    }

    #[test]
    fn a_child_and_the_process_it_left_behind_are_counted_and_are_descendants() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        // A child in a group of its own whose own child outlives it: with this process a
        // subreaper, the orphan is reparented here, and still counted.
        crate::children::become_subreaper();
        let dir = std::env::temp_dir().join(format!("semcheck-memory-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pid_file = dir.join("orphan.pid");
        let script = format!("(setsid sleep 30 & echo $! > {}) ; sleep 0.2", pid_file.display());
        let mut child = crate::children::spawn(std::process::Command::new("sh").args(["-c", &script])).unwrap();
        let leader = child.id() as i32;
        let mut sampler = super::TreeSampler::new();
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(sampler.resident_bytes(&[leader], true) > 0, "the group is counted (full scan)");
        assert!(sampler.resident_bytes(&[leader], true) > 0, "the group is counted (between full scans)");
        assert!(crate::children::wait(&mut child).unwrap().success());
        let orphan: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        assert!(super::running_descendants().contains(&orphan), "the orphan is reparented here");
        assert!(sampler.resident_bytes(&[], true) > 0, "the orphan is counted between full scans");
        std::thread::sleep(super::TreeSampler::FULL_SCAN);
        assert!(sampler.resident_bytes(&[], true) > 0, "the orphan is counted by a full scan");
        // SAFETY: plain system call on a process of our own.
        unsafe { libc::kill(orphan, libc::SIGKILL) };
        let _ = std::fs::remove_dir_all(&dir);
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
