//! Helpers shared by the integration tests that drive the `semcheck` binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// An empty directory of this test process under the system's temporary directory,
/// removed with everything in it when the value is dropped (the test passing or failing).
pub fn temp_dir(name: &str) -> TestDir {
    let dir = std::env::temp_dir().join(format!("semcheck-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    TestDir(dir)
}

/// A test's temporary directory ([`temp_dir`]): a `Path` that removes itself when dropped.
pub struct TestDir(PathBuf);

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The repository's root (where the protocols, kernels and seeds are).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command that runs the `semcheck` binary under test.
pub fn semcheck_cmd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_semcheck"))
}

/// Whether `done` holds within 3 s (asked every 20 ms): for what follows a moment after
/// semcheck ends, such as the end of the processes it killed (a signal is delivered
/// asynchronously).
pub fn within_moments(done: impl Fn() -> bool) -> bool {
    let start = std::time::Instant::now();
    while !done() {
        if start.elapsed() >= std::time::Duration::from_secs(3) {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

/// Runs the `semcheck` binary with `args`: (exit code, stdout, stderr). A `--json` (or
/// `--format json`) output is checked against the JSON schema.
pub fn semcheck(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_semcheck")).args(args).output().expect("run semcheck");
    let stdout: String = String::from_utf8_lossy(&out.stdout).into();
    let json = args.contains(&"--json") || args.windows(2).any(|w| w == ["--format", "json"]);
    if json && !stdout.is_empty() {
        document(&stdout);
    }
    (out.status.code().unwrap_or(-1), stdout, String::from_utf8_lossy(&out.stderr).into())
}

/// The schema every `--json` document follows, as `semcheck schema` prints it (the
/// repository's `docs/schema/semcheck-output-v1.schema.json`, byte for byte).
fn schema() -> &'static jsonschema::Validator {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let out = semcheck_cmd().arg("schema").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "semcheck schema");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schema/semcheck-output-v1.schema.json");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            std::fs::read_to_string(path).unwrap(),
            "semcheck schema vs {path}"
        );
        let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
        jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("the schema itself is invalid: {e}"))
    })
}

/// A `--json` document: parsed, and checked against the schema (a test fails with every
/// place the document breaks it).
pub fn document(text: &str) -> Value {
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{text}"));
    let errors: Vec<String> = schema().iter_errors(&v).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "the document breaks the schema:\n{}\n{text}", errors.join("\n"));
    v
}

/// The one case of a `check`/`stress` document.
pub fn only_case(doc: &Value) -> &Value {
    let cases = doc["cases"].as_array().unwrap_or_else(|| panic!("no cases: {doc}"));
    assert_eq!(cases.len(), 1, "{doc}");
    &cases[0]
}
