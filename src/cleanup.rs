//! Nothing left behind: the processes semcheck started are ended and its temporary folders
//! removed on every end of semcheck, and the temporary folders of a run that was killed
//! outright (`SIGKILL`, a power cut) are removed by the next run that can prove them stale.
//!
//! * [`install`] registers [`now`] with `atexit`, so it runs however the process exits:
//!   returning from `main`, `std::process::exit` (the watchdog's budget stop, a second
//!   Ctrl-C), or a panic of the main thread (which returns from `main` with code 101).
//!   `SIGINT`, `SIGTERM` and `SIGHUP` are turned into such an exit by the watchdog.
//! * [`TempDir`] is a temporary folder `<parent>/<prefix><pid>-<tag>` with a lock file
//!   `<parent>/<prefix><pid>-<tag>.lock` beside it, on which its process holds an
//!   exclusive `flock` from before the folder exists until it is removed or renamed into
//!   place. Dropped, or at exit, the folder and the lock file are removed.
//! * [`sweep`] removes the stale temporary folders under a parent. The rule: a folder is
//!   stale when its lock file exists and no process holds a lock on it (the kernel drops
//!   a process's locks when it dies, however it dies), or, for a folder without a lock
//!   file (made by an older semcheck), when no process with the pid in its name runs on
//!   this machine. A lock file without its folder is removed once unlocked and a minute
//!   old (younger, its process may not have locked it yet).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant, SystemTime};

/// Temporary paths of this process, removed at exit.
static LITTER: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Registers [`now`] to run when the process exits (once; later calls do nothing).
pub fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        extern "C" fn at_exit() {
            // Nothing may unwind out of an `extern "C"` function.
            let _ = std::panic::catch_unwind(now);
        }
        // SAFETY: registers a function that takes no argument and does not unwind.
        unsafe { libc::atexit(at_exit) };
    });
}

/// Kills the process groups semcheck started and removes its temporary folders; called at
/// exit (see [`install`]), and safe to call earlier.
pub fn now() {
    crate::children::kill_all();
    // Killed processes may still hold files in the folders for a moment: removal retries.
    // `try_lock` a few times: a thread stuck holding the lock must not hang the exit.
    for _ in 0..50 {
        let paths: Vec<PathBuf> = match LITTER.try_lock() {
            Ok(mut all) => all.drain(..).collect(),
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().drain(..).collect(),
            Err(std::sync::TryLockError::WouldBlock) => {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        };
        for path in paths {
            remove(&path);
        }
        return;
    }
}

/// Removes a file or a folder and everything under it, if it exists.
fn remove(path: &Path) {
    let start = Instant::now();
    loop {
        let done = match fs::symlink_metadata(path) {
            Err(_) => true,
            Ok(m) if m.is_dir() => fs::remove_dir_all(path).is_ok(),
            Ok(_) => fs::remove_file(path).is_ok(),
        };
        // A process being killed may create a file after the removal listed its folder.
        if done || start.elapsed() > Duration::from_millis(500) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn register(path: &Path) {
    install();
    LITTER.lock().unwrap_or_else(|e| e.into_inner()).push(path.to_path_buf());
}

fn unregister(path: &Path) {
    LITTER.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| p != path);
}

/// Tries to take an exclusive lock on `file` without waiting: `Ok(true)` when taken.
fn try_lock(file: &File) -> io::Result<bool> {
    // SAFETY: plain system call on a descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// A temporary folder of this process, locked while it lives (see the module docs).
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    lock_path: PathBuf,
    /// Held open: the lock lives as long as this descriptor.
    _lock: File,
}

impl TempDir {
    /// Creates `<parent>/<prefix><pid>-<tag>` (and its parent) with its lock held.
    pub fn create(parent: &Path, prefix: &str) -> io::Result<TempDir> {
        fs::create_dir_all(parent)?;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = crate::frontend::env::short_hash(&[&format!("{:?} {n}", SystemTime::now())]);
        let name = format!("{prefix}{}-{tag}", std::process::id());
        let path = parent.join(&name);
        let lock_path = parent.join(format!("{name}.lock"));
        // The lock is taken before the folder exists: a sweep that finds the folder
        // finds it locked while this process lives.
        let lock = OpenOptions::new().write(true).create_new(true).open(&lock_path)?;
        register(&lock_path);
        register(&path);
        // From here on, dropping `dir` removes what was made.
        let dir = TempDir { path, lock_path, _lock: lock };
        if !try_lock(&dir._lock)? {
            return Err(io::Error::other(format!("{} is locked by another process", dir.lock_path.display())));
        }
        fs::create_dir(&dir.path)?;
        Ok(dir)
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the folder to `to` (kept: no longer removed at exit). When `to` exists
    /// already (another process made it first), the folder is removed instead and `Err`
    /// says so.
    pub fn persist(self, to: &Path) -> io::Result<()> {
        let renamed = fs::rename(&self.path, to);
        if renamed.is_ok() {
            unregister(&self.path);
        }
        renamed
        // Dropped here: the lock file goes, and the folder too if it was not renamed.
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        remove(&self.path);
        unregister(&self.path);
        let _ = fs::remove_file(&self.lock_path);
        unregister(&self.lock_path);
    }
}

/// Whether a process with id `pid` runs on this machine (in this pid namespace).
fn pid_runs(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Whether the temporary folder `name` under `parent` (a `<prefix><pid>-<tag>` folder) is
/// stale, by the rule of the module docs.
fn is_stale(parent: &Path, name: &str, prefix: &str) -> bool {
    let lock_path = parent.join(format!("{name}.lock"));
    match OpenOptions::new().write(true).open(&lock_path) {
        Ok(lock) => try_lock(&lock).unwrap_or(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let pid = name[prefix.len()..].split('-').next().and_then(|p| p.parse::<i32>().ok());
            pid.is_some_and(|pid| !pid_runs(pid))
        }
        Err(_) => false,
    }
}

/// Removes the stale temporary folders `<parent>/<prefix>*` (see the module docs for the
/// rule) and their lock files; returns what it removed. Errors (a folder being removed by
/// another process meanwhile) are ignored.
pub fn sweep(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(parent) else { return removed };
    for entry in entries.filter_map(|e| e.ok()) {
        let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
        if !name.starts_with(prefix) {
            continue;
        }
        let path = entry.path();
        if let Some(base) = name.strip_suffix(".lock") {
            // A lock file whose folder is gone: its process died between the two.
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > Duration::from_secs(60)));
            if !parent.join(base).exists()
                && old
                && OpenOptions::new().write(true).open(&path).is_ok_and(|f| try_lock(&f).unwrap_or(false))
            {
                let _ = fs::remove_file(&path);
                removed.push(path);
            }
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) && is_stale(parent, &name, prefix) {
            let _ = fs::remove_dir_all(&path);
            let _ = fs::remove_file(parent.join(format!("{name}.lock")));
            removed.push(path);
        }
    }
    removed
}

/// Removes the files `<parent>/<prefix><pid>-*` and `<parent>/<prefix><pid>.*` (files of an
/// older semcheck: export files, `replay --interpret`'s plans) whose process no longer
/// runs; returns what it removed.
pub fn sweep_orphan_files(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(parent) else { return removed };
    for entry in entries.filter_map(|e| e.ok()) {
        let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
        let Some(rest) = name.strip_prefix(prefix) else { continue };
        let Some((pid, _)) = rest.split_once(['-', '.']) else { continue };
        let Ok(pid) = pid.parse::<i32>() else { continue };
        if entry.file_type().is_ok_and(|t| t.is_file()) && !pid_runs(pid) && fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// Deletes the oldest files (by modification time) directly in `dir` until the rest
/// hold at most `keep` bytes, when they hold more than `max` (so that a cache a
/// process adds to is pruned now and then, not at every start). A file another process
/// is reading stays readable; one deleted before it is read is a miss of that cache.
/// Returns the number of files deleted.
pub fn prune_oldest(dir: &Path, max: u64, keep: u64) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let m = e.metadata().ok().filter(|m| m.is_file())?;
            Some((m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    if total <= max {
        return 0;
    }
    files.sort();
    let mut removed = 0;
    for (_, len, path) in files {
        if total <= keep {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(len);
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_oldest_deletes_the_oldest_files_past_the_limit_only() {
        let dir = scratch("prune");
        for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
            let path = dir.join(name);
            fs::write(&path, vec![0u8; 100]).unwrap();
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + i as u64);
            fs::File::options().write(true).open(&path).unwrap().set_modified(t).unwrap();
        }
        assert_eq!(prune_oldest(&dir, 400, 200), 0, "at the limit: nothing");
        assert_eq!(prune_oldest(&dir, 399, 200), 2);
        let mut left: Vec<String> =
            fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["c", "d"], "the newest are kept");
        let _ = fs::remove_dir_all(&dir);
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("semcheck-cleanup-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_temporary_folder_is_locked_while_it_lives_and_gone_when_dropped() {
        let parent = scratch("live");
        let tmp = TempDir::create(&parent, ".x-").unwrap();
        fs::write(tmp.path().join("f"), "data").unwrap();
        assert!(sweep(&parent, ".x-").is_empty(), "a live folder is not stale");
        assert!(tmp.path().is_dir());
        let path = tmp.path().to_path_buf();
        drop(tmp);
        assert!(!path.exists());
        assert_eq!(fs::read_dir(&parent).unwrap().count(), 0, "the lock file went too");
        let tmp = TempDir::create(&parent, ".x-").unwrap();
        tmp.persist(&parent.join("final")).unwrap();
        assert!(parent.join("final").is_dir());
        assert_eq!(fs::read_dir(&parent).unwrap().count(), 1, "only the renamed folder is left");
        let _ = fs::remove_dir_all(&parent);
    }

    #[test]
    fn stale_folders_are_swept_and_live_ones_kept() {
        let parent = scratch("stale");
        // An unlocked lock file: its process died.
        fs::create_dir(parent.join(".x-1-dead")).unwrap();
        fs::write(parent.join(".x-1-dead.lock"), "").unwrap();
        // No lock file (an older semcheck), and no process with that pid.
        fs::create_dir(parent.join(".x-2147483646-old")).unwrap();
        // No lock file, and its pid runs (this process): kept.
        let mine = format!(".x-{}-mine", std::process::id());
        fs::create_dir(parent.join(&mine)).unwrap();
        // Locked by a live process: kept.
        fs::create_dir(parent.join(".x-1-held")).unwrap();
        let held = File::create(parent.join(".x-1-held.lock")).unwrap();
        assert!(try_lock(&held).unwrap());
        // Not ours at all.
        fs::create_dir(parent.join("python-abc")).unwrap();
        let mut removed = sweep(&parent, ".x-");
        removed.sort();
        assert_eq!(removed, vec![parent.join(".x-1-dead"), parent.join(".x-2147483646-old")]);
        assert!(parent.join(&mine).is_dir() && parent.join(".x-1-held").is_dir() && parent.join("python-abc").is_dir());
        assert!(!parent.join(".x-1-dead.lock").exists());
        drop(held);
        // Loose files of an older semcheck's exports: removed when their process is gone.
        fs::write(parent.join("2147483646-abc-2.json"), "").unwrap();
        let live = format!("{}-abc-2.json", std::process::id());
        fs::write(parent.join(&live), "").unwrap();
        assert_eq!(sweep_orphan_files(&parent, ""), vec![parent.join("2147483646-abc-2.json")]);
        assert!(parent.join(&live).exists());
        // An older `replay --interpret`'s plan and results, by prefix.
        fs::write(parent.join("plan-2147483646.json"), "").unwrap();
        fs::write(parent.join("plan-2147483646.lockstep.json"), "").unwrap();
        let live = format!("plan-{}.json", std::process::id());
        fs::write(parent.join(&live), "").unwrap();
        let mut removed = sweep_orphan_files(&parent, "plan-");
        removed.sort();
        assert_eq!(removed, vec![parent.join("plan-2147483646.json"), parent.join("plan-2147483646.lockstep.json")]);
        assert!(parent.join(&live).exists());
        let _ = fs::remove_dir_all(&parent);
    }
}
