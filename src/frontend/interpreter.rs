//! Which Python interpreter reads a kernel file, and why.
//!
//! The front end traces kernels with JAX's own tracer, so the JAX it runs under matters:
//! a kernel written for the user's JAX should be read by the user's JAX. The candidates,
//! in order:
//!
//! 1. `SEMCHECK_PYTHON`: an interpreter the user named (or `managed`, for semcheck's own
//!    environment). It must have a supported JAX; if not, that is an error naming the range
//!    and the two ways out, never a silent switch.
//! 2. `SEMCHECK_HOST_PYTHON`: the interpreter of the Python program that started this
//!    binary (the package's API, its pytest plugin and `python -m semcheck` set it).
//! 3. The interpreter this binary was installed into (a `semcheck` wheel puts the binary
//!    next to its environment's `python`), when that environment has the `semcheck`
//!    package installed.
//! 4. semcheck's managed environment ([`env`](super::env)): a cached virtual environment
//!    with pinned JAX, created on first use.
//!
//! The first of 2 and 3 with a supported JAX is used; one without a JAX, or with one
//! outside the supported range, is passed over (and `semcheck doctor` says why).
//! Finding out costs one short Python start per candidate (`importlib.metadata`, JAX is not
//! imported).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Serialize;

pub use super::env::{NEWEST_JAX, OLDEST_JAX};

/// The supported JAX releases in words: `0.8.1 to 0.12.x`.
pub fn supported_range() -> String {
    let (a, b, c) = OLDEST_JAX;
    format!("{a}.{b}.{c} to {}.{}.x", NEWEST_JAX.0, NEWEST_JAX.1)
}

/// A pip requirement for a supported JAX: `jax>=0.8.1,<0.13`.
pub fn supported_requirement() -> String {
    let (a, b, c) = OLDEST_JAX;
    format!("jax>={a}.{b}.{c},<{}.{}", NEWEST_JAX.0, NEWEST_JAX.1 + 1)
}

/// Whether a JAX version string (`0.8.3`, `0.9.0.1`, `0.10.2rc1`) is in the supported range.
pub fn jax_supported(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.chars().take_while(char::is_ascii_digit).collect::<String>());
    let (Some(Ok(major)), Some(Ok(minor))) =
        (parts.next().map(|p| p.parse::<u32>()), parts.next().map(|p| p.parse::<u32>()))
    else {
        return false;
    };
    let patch = parts.next().and_then(|p| p.parse::<u32>().ok()).unwrap_or(0);
    (major, minor, patch) >= OLDEST_JAX && (major, minor) <= NEWEST_JAX
}

/// Where a candidate interpreter comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// `SEMCHECK_PYTHON`.
    Explicit,
    /// `SEMCHECK_HOST_PYTHON`: the Python program that started semcheck.
    Host,
    /// The environment this binary was installed into.
    Installed,
    /// semcheck's managed environment.
    Managed,
}

impl Origin {
    /// The origin in words.
    pub fn describe(self) -> &'static str {
        match self {
            Origin::Explicit => "the interpreter SEMCHECK_PYTHON names",
            Origin::Host => "the Python program that started semcheck (SEMCHECK_HOST_PYTHON)",
            Origin::Installed => "the environment semcheck is installed in",
            Origin::Managed => "semcheck's managed environment",
        }
    }
}

/// What an interpreter says of itself (without importing JAX).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Probe {
    /// `sys.version`'s first word.
    pub python: String,
    /// The installed `jax` distribution's version, if any.
    pub jax: Option<String>,
    /// The installed `jaxlib` distribution's version, if any.
    pub jaxlib: Option<String>,
    /// The installed `semcheck` distribution's version, if any.
    pub semcheck: Option<String>,
    /// The modules of [`UNDECLARED`] that cannot be found (looked up, not imported).
    #[serde(default)]
    pub missing: Vec<String>,
}

/// Modules a JAX release imports for Pallas TPU without declaring the distribution that
/// provides them: `(jax version, module, distribution)`. An interpreter with that JAX and
/// without the module cannot read a kernel (the script's `import
/// jax.experimental.pallas.tpu` fails), so it is passed over, saying what to install.
pub const UNDECLARED: &[(&str, &str, &str)] = &[
    // jax 0.9.2's pallas/mosaic/interpret/shared_memory.py: `from absl import logging`.
    ("0.9.2", "absl", "absl-py"),
];

/// One interpreter considered, and what was found.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    /// Where it comes from.
    pub origin: Origin,
    /// The interpreter.
    pub python: PathBuf,
    /// What it said of itself, or why it could not be asked.
    pub probe: Result<Probe, String>,
}

impl Candidate {
    /// Why this interpreter cannot read kernels (`None`: it can).
    pub fn unusable(&self) -> Option<String> {
        let probe = match &self.probe {
            Ok(p) => p,
            Err(e) => return Some(e.clone()),
        };
        if !python_supported(&probe.python) {
            return Some(format!(
                "it is Python {}; every supported JAX needs Python {} or newer",
                probe.python,
                min_python()
            ));
        }
        match (&probe.jax, &probe.jaxlib) {
            (None, _) => Some("it has no jax installed".into()),
            (Some(_), None) => Some("it has jax but no jaxlib installed".into()),
            (Some(jax), Some(_)) if !jax_supported(jax) => {
                Some(format!("it has jax {jax}, outside the supported {}", supported_range()))
            }
            (Some(jax), Some(_)) => UNDECLARED
                .iter()
                .find(|(version, module, _)| jax == version && probe.missing.iter().any(|m| m == module))
                .map(|(_, module, dist)| {
                    format!(
                        "it has jax {jax}, whose jax.experimental.pallas.tpu imports `{module}` without declaring \
                         it, and `{module}` is not installed (`pip install {dist}` into it)"
                    )
                }),
        }
    }

    /// `Python 3.11.7, jax 0.8.3, jaxlib 0.8.3`, or why the interpreter could not be asked.
    pub fn summary(&self) -> String {
        match &self.probe {
            Ok(p) => format!(
                "Python {}, jax {}, jaxlib {}",
                p.python,
                p.jax.as_deref().unwrap_or("(none)"),
                p.jaxlib.as_deref().unwrap_or("(none)")
            ),
            Err(e) => e.clone(),
        }
    }
}

/// Whether a Python of this version (`3.12.1`) can read kernels ([`MIN_PYTHON`] or newer).
pub fn python_supported(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= MIN_PYTHON
}

/// The oldest Python that reads kernels: every supported JAX (0.8.1 and later) needs 3.11.
pub const MIN_PYTHON: (u32, u32) = (3, 11);

/// [`MIN_PYTHON`] as people write it (`3.11`).
pub fn min_python() -> String {
    format!("{}.{}", MIN_PYTHON.0, MIN_PYTHON.1)
}

/// `name` found on PATH, as a shell would find it.
pub fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(name)).find(|p| p.is_file())
}

/// The Python code that describes an interpreter, without importing JAX; its arguments
/// are the modules to look up (without importing them).
const PROBE: &str = r#"
import json, sys
import importlib.metadata as m, importlib.util as u
def version(name):
    try:
        return m.version(name)
    except Exception:
        return None
def missing(name):
    try:
        return u.find_spec(name) is None
    except Exception:
        return True
print(json.dumps({"python": sys.version.split()[0], "jax": version("jax"), "jaxlib": version("jaxlib"),
                  "semcheck": version("semcheck"), "missing": [n for n in sys.argv[1:] if missing(n)]}))
"#;

/// The longest an interpreter may take to describe itself (a Python start, JAX not
/// imported: well under a second).
const PROBE_SECONDS: f64 = 30.0;

/// The most of its output an interpreter's description is read from.
const PROBE_OUTPUT_BYTES: u64 = 64 << 10;

/// Asks an interpreter what it has: in a process group of its own (ended with whatever
/// it starts), within 30 s, reading at most 64 KiB of what it prints.
pub fn probe(python: &Path) -> Result<Probe, String> {
    let mut child = crate::children::spawn(
        Command::new(python)
            .args(["-I", "-c", PROBE])
            .args(UNDECLARED.iter().map(|(_, module, _)| module))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .map_err(|e| format!("cannot run {} ({e})", python.display()))?;
    let (out, err) = (
        crate::children::read_in_background(child.stdout.take(), PROBE_OUTPUT_BYTES),
        crate::children::read_in_background(child.stderr.take(), PROBE_OUTPUT_BYTES),
    );
    let status = match crate::children::wait_for(&mut child, PROBE_SECONDS) {
        Ok(Some(status)) => status,
        Ok(None) => return Err(format!("{} did not describe itself within {PROBE_SECONDS:.0} s", python.display())),
        Err(e) => return Err(format!("{} was stopped while it described itself ({e})", python.display())),
    };
    // A process that left the group may still hold the pipes: what was read by now is all.
    let take = |rx: std::sync::mpsc::Receiver<Vec<u8>>| rx.recv_timeout(Duration::from_secs(1)).unwrap_or_default();
    let (out, err) = (take(out), take(err));
    if !status.success() {
        let err = String::from_utf8_lossy(&err);
        return Err(format!(
            "{} failed to start ({}; {})",
            python.display(),
            crate::children::describe(status),
            err.trim().lines().last().unwrap_or("no message")
        ));
    }
    serde_json::from_slice(&out).map_err(|e| format!("{} did not describe itself ({e})", python.display()))
}

/// `SEMCHECK_PYTHON`, when set: `Some(None)` for `managed`, else the path.
pub fn explicit() -> Option<Option<PathBuf>> {
    let v = std::env::var_os("SEMCHECK_PYTHON").filter(|p| !p.is_empty())?;
    Some(if v == "managed" { None } else { Some(PathBuf::from(v)) })
}

/// The interpreters to try before the managed environment, in order (`SEMCHECK_PYTHON`
/// apart): the host program's, then the one next to this binary.
pub fn candidates() -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    if let Some(host) = std::env::var_os("SEMCHECK_HOST_PYTHON").filter(|p| !p.is_empty()) {
        let python = PathBuf::from(host);
        out.push(Candidate { origin: Origin::Host, probe: probe(&python), python });
    }
    if let Some(python) = installed_into() {
        if !out.iter().any(|c| c.python == python) {
            let probe = probe(&python).and_then(|p| match &p.semcheck {
                Some(_) => Ok(p),
                None => Err(format!(
                    "{} is next to this binary but has no `semcheck` package installed, so the binary was not installed into it",
                    python.display()
                )),
            });
            out.push(Candidate { origin: Origin::Installed, python, probe });
        }
    }
    out
}

/// The interpreter next to this binary (`<env>/bin/python`), if there is one.
fn installed_into() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    ["python", "python3"].iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_supported_range_is_the_front_ends() {
        let compat = include_str!("../../python/semcheck/_jaxrange.py");
        let (a, b, c) = OLDEST_JAX;
        let stated = format!("= (({a}, {b}, {c}), ({}, {}))", NEWEST_JAX.0, NEWEST_JAX.1);
        assert!(compat.lines().any(|l| l.starts_with("SUPPORTED") && l.ends_with(&stated)), "{stated}");
        for (version, ok) in [
            ("0.8.0", false),
            ("0.8.1", true),
            ("0.8.3", true),
            ("0.9.0", true),
            ("0.9.0.1", true),
            ("0.10.2rc1", true),
            ("0.7.2", false),
            ("0.11.0", true),
            ("0.12.0.1", true),
            ("0.13.0", false),
            ("1.0.0", false),
            ("", false),
            ("jax", false),
        ] {
            assert_eq!(jax_supported(version), ok, "{version}");
        }
        assert_eq!(supported_requirement(), "jax>=0.8.1,<0.13");
        assert_eq!(supported_range(), "0.8.1 to 0.12.x");
    }

    #[test]
    fn a_jax_that_imports_an_undeclared_module_which_is_missing_is_passed_over_saying_what_to_install() {
        let candidate = |jax: &str, missing: &[&str]| Candidate {
            origin: Origin::Installed,
            python: PathBuf::from("/venv/bin/python"),
            probe: Ok(Probe {
                python: "3.11.7".into(),
                jax: Some(jax.into()),
                jaxlib: Some(jax.into()),
                semcheck: Some("0.1.0".into()),
                missing: missing.iter().map(|m| m.to_string()).collect(),
            }),
        };
        let why = candidate("0.9.2", &["absl"]).unusable().expect("jax 0.9.2 without absl cannot import pallas.tpu");
        assert!(why.contains("jax 0.9.2") && why.contains("`pip install absl-py` into it"), "{why}");
        assert_eq!(candidate("0.9.2", &[]).unusable(), None);
        assert_eq!(candidate("0.10.2", &["absl"]).unusable(), None);
    }

    #[test]
    fn the_probe_finds_the_modules_it_is_asked_about_without_importing_them() {
        let Some(python) = ["python3", "python"].iter().find_map(|p| super::on_path(p)) else { return };
        let probe = probe(&python).expect("the machine's Python describes itself");
        let missing: Vec<String> =
            UNDECLARED.iter().filter(|(_, m, _)| !has_module(&python, m)).map(|(_, m, _)| m.to_string()).collect();
        assert_eq!(probe.missing, missing, "{probe:?}");
    }

    fn has_module(python: &Path, module: &str) -> bool {
        Command::new(python).args(["-I", "-c", &format!("import {module}")]).output().is_ok_and(|o| o.status.success())
    }
}
