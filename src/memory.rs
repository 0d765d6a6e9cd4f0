//! Resident memory, read from Linux's `/proc/PID/status`: what the memory budgets and the
//! benchmark's peak-memory column measure. Elsewhere (no `/proc`) every reading is `None`.

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

#[cfg(test)]
mod tests {
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
