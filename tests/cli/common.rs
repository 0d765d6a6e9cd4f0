//! Helpers shared by the integration tests that drive the `semcheck` binary.

use std::process::Command;

/// Runs the `semcheck` binary with `args`: (exit code, stdout, stderr).
pub fn semcheck(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_semcheck")).args(args).output().expect("run semcheck");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}
