//! The Python side of the front end: the package it runs and the interpreter it runs in.
//!
//! * The interpreter: chosen by [`super::interpreter`] (`SEMCHECK_PYTHON`, the
//!   Python program that started semcheck, the environment semcheck is installed in),
//!   else semcheck's managed environment: a virtual environment at `<cache>/python-<hash>`
//!   built from `python/requirements.txt` (the hash is the requirements' own, so a change
//!   of pins makes a new environment), created once with `python3 -m venv` and
//!   `pip install -r`, with pip's progress on stderr.
//! * The package: this binary carries the `semcheck` Python package (`build.rs`) and
//!   writes it to `<cache>/pkg-<hash>` (keyed by the sources), put first on `PYTHONPATH`,
//!   so the front end always matches the checker that reads its output.
//! * `<cache>` is `SEMCHECK_CACHE_DIR`, else `$XDG_CACHE_HOME/semcheck`, else
//!   `~/.cache/semcheck`.
//!
//! Both directories are built under a temporary name (`.python-<pid>-<tag>`,
//! `.pkg-<pid>-<tag>`, each locked while it is made: [`crate::cleanup::TempDir`]) and
//! renamed into place, so concurrent first uses (parallel tests) do not see half-made
//! environments. `python -m venv` and `pip` run in a process group of their own
//! ([`crate::children`]): ended with semcheck however it ends, with the temporary folder
//! removed. The first use of the cache by a process removes the temporary folders of runs
//! that were killed outright (the rule: [`crate::cleanup`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use semcheck_model::{ErrorKind, ModelError};

use crate::children;
use crate::cleanup::{self, TempDir};

use super::interpreter::{self, Candidate, Origin};

/// The pinned requirements of the managed environment.
pub const REQUIREMENTS: &str = include_str!("../../python/requirements.txt");

include!(concat!(env!("OUT_DIR"), "/python_package.rs"));

/// The jax version the managed environment pins.
pub const MANAGED_JAX: &str = "0.10.2";

/// A ready interpreter, the directory holding the package, and why this interpreter.
#[derive(Clone, Debug)]
pub struct PythonEnv {
    /// The interpreter.
    pub python: PathBuf,
    /// The directory to put first on `PYTHONPATH`.
    pub package_root: PathBuf,
    /// Where the interpreter comes from.
    pub origin: Origin,
    /// The interpreters passed over before this one, and why.
    pub passed_over: Vec<(Candidate, String)>,
}

/// Set in the environment of every Python process semcheck starts to read kernels (the
/// export, its server, `replay --interpret`'s runs): a semcheck the user's script starts
/// there refuses to read kernels itself (the script would run again inside it, without end).
pub const EXPORTING: &str = "SEMCHECK_EXPORTING";

fn env_error(msg: impl Into<String>) -> ModelError {
    ModelError::new(ErrorKind::Environment, msg)
}

/// A short, stable hash (FNV-1a, 64 bits) of some text, for directory names.
pub fn short_hash(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0u8]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// The cache directory (see the module docs).
pub fn cache_dir() -> Result<PathBuf, ModelError> {
    if let Some(d) = std::env::var_os("SEMCHECK_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("semcheck"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".cache").join("semcheck")),
        None => Err(env_error(
            "no cache directory for the Python front end: set SEMCHECK_CACHE_DIR (or HOME, or XDG_CACHE_HOME)",
        )),
    }
}

/// Which interpreter reads kernels, found without creating anything: every interpreter
/// considered with why it was passed over, and the one chosen.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The interpreters considered, in order, each with why it cannot read kernels
    /// (`None`: it can).
    pub considered: Vec<(Candidate, Option<String>)>,
    /// The choice.
    pub chosen: Chosen,
}

/// The interpreter a [`Plan`] chose.
#[derive(Clone, Debug)]
pub enum Chosen {
    /// An interpreter that exists and has a supported JAX.
    Interpreter(Candidate),
    /// semcheck's managed environment (created on first use).
    Managed,
    /// `SEMCHECK_PYTHON` names an interpreter that cannot read kernels: why, and what to do.
    Refused(String),
}

/// Decides which interpreter reads kernels (see the module docs); only asks interpreters
/// what they have, creates nothing.
pub fn plan() -> Plan {
    let mut considered = Vec::new();
    match interpreter::explicit() {
        Some(Some(python)) => {
            let candidate = Candidate { origin: Origin::Explicit, probe: interpreter::probe(&python), python };
            let why = candidate.unusable();
            let chosen = match &why {
                None => Chosen::Interpreter(candidate.clone()),
                Some(why) => Chosen::Refused(format!(
                    "SEMCHECK_PYTHON={} cannot read kernels: {why}. semcheck reads JAX {}. Either install a supported JAX there (`{} -m pip install '{}'`), or let semcheck use its own environment (unset SEMCHECK_PYTHON, or set SEMCHECK_PYTHON=managed)",
                    candidate.python.display(),
                    interpreter::supported_range(),
                    candidate.python.display(),
                    interpreter::supported_requirement(),
                )),
            };
            considered.push((candidate, why));
            return Plan { considered, chosen };
        }
        Some(None) => {}
        None => {
            for candidate in interpreter::candidates() {
                let why = candidate.unusable();
                let usable = why.is_none();
                considered.push((candidate.clone(), why));
                if usable {
                    return Plan { considered, chosen: Chosen::Interpreter(candidate) };
                }
            }
        }
    }
    Plan { considered, chosen: Chosen::Managed }
}

/// The interpreter to read kernels with, and the package directory (see the module docs);
/// the managed environment is created if it is the one chosen and does not exist yet.
pub fn python_env() -> Result<PythonEnv, ModelError> {
    if std::env::var_os(EXPORTING).is_some() {
        return Err(env_error(format!(
            "semcheck was started by a script that semcheck is running to read its kernels ({EXPORTING} is set): \
             it would run that script again, and so on; check the script from outside it"
        )));
    }
    static CREATING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = CREATING.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache_dir()?;
    sweep_stale(&cache);
    let package_root = package_dir(&cache)?;
    let plan = plan();
    let passed_over: Vec<(Candidate, String)> =
        plan.considered.into_iter().filter_map(|(c, why)| why.map(|w| (c, w))).collect();
    match plan.chosen {
        Chosen::Interpreter(c) => Ok(PythonEnv { python: c.python, package_root, origin: c.origin, passed_over }),
        Chosen::Refused(why) => Err(env_error(why)),
        Chosen::Managed => {
            static NOTED: std::sync::Once = std::sync::Once::new();
            NOTED.call_once(|| {
                for (c, why) in &passed_over {
                    eprintln!(
                        "semcheck: note: not reading kernels with {} ({}): {why}; using semcheck's managed environment (jax {MANAGED_JAX}) instead (`semcheck doctor` says more)",
                        c.origin.describe(),
                        c.python.display()
                    );
                }
            });
            let python = venv(&cache)?;
            Ok(PythonEnv { python, package_root, origin: Origin::Managed, passed_over })
        }
    }
}

/// The managed environment's directory (which may not exist yet).
pub fn managed_dir(cache: &Path) -> PathBuf {
    cache.join(format!("python-{}", short_hash(&[REQUIREMENTS])))
}

/// The package's directory under the cache (which may not exist yet).
fn package_path(cache: &Path) -> PathBuf {
    let texts: Vec<&str> = PACKAGE.iter().flat_map(|(n, t)| [*n, *t]).collect();
    cache.join(format!("pkg-{}", short_hash(&texts)))
}

/// Writes the package under `<cache>/pkg-<hash>` once.
fn package_dir(cache: &Path) -> Result<PathBuf, ModelError> {
    let dir = package_path(cache);
    if dir.join(".complete").is_file() {
        mark_used(&dir);
        return Ok(dir);
    }
    let tmp = TempDir::create(cache, ".pkg-")
        .map_err(|e| env_error(format!("cannot write the front end's package under {}: {e}", cache.display())))?;
    let write = || -> std::io::Result<()> {
        for (name, text) in PACKAGE {
            let path = tmp.path().join(name);
            fs::create_dir_all(path.parent().expect("a file under the package"))?;
            fs::write(path, text)?;
        }
        fs::write(tmp.path().join(".complete"), "")
    };
    write().map_err(|e| env_error(format!("cannot write the front end's package under {}: {e}", cache.display())))?;
    if tmp.persist(&dir).is_err() && !dir.join(".complete").is_file() {
        return Err(env_error(format!("cannot create {}", dir.display())));
    }
    Ok(dir)
}

/// Removes the temporary folders of runs that were killed while they made the package or
/// the managed environment (see [`crate::cleanup`] for the rule), and the packages and
/// managed environments no semcheck has used for [`UNUSED_FOR`] ([`retire_unused`]);
/// once per process.
fn sweep_stale(cache: &Path) {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        for prefix in [".python-", ".pkg-"] {
            for path in cleanup::sweep(cache, prefix) {
                tracing::info!("removed {}, left by a semcheck that was killed", path.display());
            }
        }
        for path in retire_unused(cache, &[&package_path(cache), &managed_dir(cache)], UNUSED_FOR) {
            tracing::info!("removed {}, unused for {} days", path.display(), UNUSED_FOR.as_secs() / DAY.as_secs());
        }
    });
}

/// One day.
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a package or managed environment of another semcheck version (another
/// `pkg-<hash>` or `python-<hash>`) stays in the cache unused.
const UNUSED_FOR: Duration = Duration::from_secs(30 * DAY.as_secs());

/// Whether the file at `path` was last modified longer than `age` ago (false when it
/// cannot be read).
fn older_than(path: &Path, age: Duration) -> bool {
    fs::metadata(path).and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|a| a > age))
}

/// Records that a package or managed environment is used: the time of its `.complete`
/// file, refreshed when it is older than a day (so not written at every run).
fn mark_used(dir: &Path) {
    let stamp = dir.join(".complete");
    if older_than(&stamp, DAY) {
        if let Ok(file) = fs::File::options().write(true).open(&stamp) {
            let _ = file.set_modified(SystemTime::now());
        }
    }
}

/// Removes the packages and managed environments under `cache` (`pkg-*`, `python-*`
/// folders with a `.complete` file) other than `keep` that were last used (see
/// [`mark_used`]) longer than `unused_for` ago; returns what it removed. Each is first
/// renamed into a locked temporary folder, so a killed removal is finished by a later
/// [`cleanup::sweep`] and no half-removed environment is ever found by its own name.
fn retire_unused(cache: &Path, keep: &[&Path], unused_for: Duration) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(cache) else { return removed };
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        let name = entry.file_name();
        let Some(prefix) = [".pkg-", ".python-"].into_iter().find(|p| name.to_string_lossy().starts_with(&p[1..]))
        else {
            continue;
        };
        let unused = older_than(&path.join(".complete"), unused_for);
        if !unused || keep.contains(&path.as_path()) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(tmp) = TempDir::create(cache, prefix) else { continue };
        if fs::rename(&path, tmp.path().join("retired")).is_ok() {
            removed.push(path);
        }
        // Dropped: the temporary folder goes, and what was renamed into it.
    }
    removed
}

/// Whether the new managed environment has its pinned jax.
fn check_managed(python: &Path) -> Result<(), String> {
    let probe = interpreter::probe(python)?;
    match (probe.jax.as_deref(), probe.jaxlib.as_deref()) {
        (Some(MANAGED_JAX), Some(MANAGED_JAX)) => Ok(()),
        (jax, jaxlib) => Err(format!(
            "it has jax {} and jaxlib {}, not {MANAGED_JAX}",
            jax.unwrap_or("(none)"),
            jaxlib.unwrap_or("(none)")
        )),
    }
}

/// The interpreters that may create the managed environment, in order of preference.
const BOOTSTRAP_NAMES: [&str; 5] = ["python3", "python3.14", "python3.13", "python3.12", "python3.11"];

/// The Python that creates the managed environment: `SEMCHECK_BOOTSTRAP_PYTHON`, else the
/// first of `python3`, `python3.14` ... `python3.11` on PATH that is Python 3.11 or newer
/// (jax [`MANAGED_JAX`] needs it). An error names what was found; an interpreter that
/// cannot be run at all is left for the environment's creation to report.
pub fn bootstrap_python() -> Result<PathBuf, String> {
    let min = interpreter::min_python();
    let fix = format!(
        "Fix: install Python {min} or newer (or set SEMCHECK_BOOTSTRAP_PYTHON to one, or SEMCHECK_PYTHON to \
         an interpreter with a supported jax)"
    );
    if let Some(given) = std::env::var_os("SEMCHECK_BOOTSTRAP_PYTHON") {
        let given = PathBuf::from(given);
        return match interpreter::probe(&given) {
            Ok(p) if !interpreter::python_supported(&p.python) => Err(format!(
                "SEMCHECK_BOOTSTRAP_PYTHON ({}) is Python {}: the managed environment (jax {MANAGED_JAX}) needs \
                 Python {min} or newer. {fix}",
                given.display(),
                p.python
            )),
            Ok(_) => Ok(given),
            Err(e) => Err(format!(
                "SEMCHECK_BOOTSTRAP_PYTHON ({}) cannot be used: {e}. Fix: set SEMCHECK_BOOTSTRAP_PYTHON to a Python \
                 {min} or newer, or unset it (or set SEMCHECK_PYTHON to an interpreter with a supported jax)",
                given.display()
            )),
        };
    }
    let mut seen = Vec::new();
    for name in BOOTSTRAP_NAMES {
        let Some(path) = interpreter::on_path(name) else { continue };
        match interpreter::probe(&path) {
            Ok(p) if interpreter::python_supported(&p.python) => return Ok(path),
            Ok(p) => seen.push(format!("{} is Python {}", path.display(), p.python)),
            Err(e) => seen.push(e),
        }
    }
    if seen.is_empty() {
        return Ok(PathBuf::from("python3"));
    }
    Err(format!(
        "creating the managed environment (jax {MANAGED_JAX}) needs Python {min} or newer, and PATH has \
         none ({}). {fix}",
        seen.join("; ")
    ))
}

/// The cached virtual environment, created on first use; a creation that failed is not
/// tried again by the same process (every kernel file and size would say and redo it).
fn venv(cache: &Path) -> Result<PathBuf, ModelError> {
    static FAILED: std::sync::OnceLock<ModelError> = std::sync::OnceLock::new();
    if let Some(e) = FAILED.get() {
        return Err(e.clone());
    }
    create_venv(cache).inspect_err(|e| {
        let _ = FAILED.set(e.clone());
    })
}

/// [`venv`]'s work: the environment, made if it does not exist.
fn create_venv(cache: &Path) -> Result<PathBuf, ModelError> {
    let dir = managed_dir(cache);
    let python = dir.join("bin").join("python");
    if dir.join(".complete").is_file() {
        mark_used(&dir);
        return Ok(python);
    }
    let fix = format!("rm -rf {}", dir.display());
    let bootstrap = bootstrap_python().map_err(env_error)?;
    fs::create_dir_all(cache).map_err(|e| env_error(format!("cannot create {}: {e}", cache.display())))?;
    let tmp = TempDir::create(cache, ".python-")
        .map_err(|e| env_error(format!("cannot create a temporary folder in {}: {e}", cache.display())))?;
    eprintln!(
        "semcheck: first use of the Python front end: creating its environment in {} (jax {MANAGED_JAX}, about 30 s and 650 MB)",
        dir.display()
    );
    let start = Instant::now();
    // Each step runs in a process group of its own, ended with semcheck however it ends;
    // `tmp` is removed on every path but the last rename.
    let status = children::status(Command::new(&bootstrap).args(["-m", "venv"]).arg(tmp.path()).stdout(Stdio::null()));
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            return Err(env_error(format!(
                "`{} -m venv` failed ({}); semcheck needs Python {}+ with venv. Fix: `apt-get install python3-venv` (or set SEMCHECK_PYTHON to an interpreter with a supported jax)",
                bootstrap.display(),
                children::describe(s),
                interpreter::min_python()
            )));
        }
        Err(e) => {
            return Err(env_error(format!(
                "cannot run `{}` ({e}); semcheck needs Python {}+ to read Pallas kernels. Fix: `apt-get install python3 python3-venv` (or set SEMCHECK_PYTHON)",
                bootstrap.display(),
                interpreter::min_python()
            )))
        }
    }
    let req = tmp.path().join("requirements.txt");
    fs::write(&req, REQUIREMENTS).map_err(|e| env_error(format!("cannot write {}: {e}", req.display())))?;
    eprintln!("semcheck: installing the pinned requirements (pip's progress follows)");
    let pip = children::status(
        Command::new(tmp.path().join("bin").join("python"))
            .args(["-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", "-r"])
            .arg(&req)
            .stdout(Stdio::from(std::io::stderr())),
    );
    if !matches!(pip, Ok(s) if s.success()) {
        return Err(env_error(format!(
            "pip could not install the front end's requirements (see above; network access to the Python package registry is needed once). Fix the cause, then re-run; if {} exists half-made: `{fix}`",
            dir.display()
        )));
    }
    check_managed(&tmp.path().join("bin").join("python")).map_err(|e| {
        env_error(format!("the new environment is broken: {e}; it was removed, and the next run makes it again"))
    })?;
    let _ = fs::write(tmp.path().join(".complete"), format!("{:.1} s\n", start.elapsed().as_secs_f64()));
    // Only `python -m` is run, so the environment works from its final path (scripts'
    // shebang lines, which name the temporary path, are never used).
    if tmp.persist(&dir).is_err() && !dir.join(".complete").is_file() {
        return Err(env_error(format!("cannot move the new environment to {}. Fix: `{fix}`", dir.display())));
    }
    eprintln!("semcheck: Python environment ready in {:.1} s", start.elapsed().as_secs_f64());
    Ok(python)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::time::{Duration, SystemTime};

    #[test]
    fn packages_and_environments_unused_for_the_limit_are_removed_and_the_rest_kept() {
        let cache = std::env::temp_dir().join(format!("semcheck-retire-{}", std::process::id()));
        let _ = fs::remove_dir_all(&cache);
        let month_ago = SystemTime::now() - Duration::from_secs(40 * 24 * 60 * 60);
        let make = |name: &str, complete: bool, time: SystemTime| {
            let dir = cache.join(name);
            fs::create_dir_all(dir.join("bin")).unwrap();
            let stamp = dir.join(if complete { ".complete" } else { "other" });
            fs::write(&stamp, "").unwrap();
            fs::File::options().write(true).open(&stamp).unwrap().set_modified(time).unwrap();
        };
        make("pkg-old", true, month_ago);
        make("python-old", true, month_ago);
        make("pkg-recent", true, SystemTime::now());
        make("pkg-current", true, month_ago);
        make("python-half-made", false, month_ago);
        make("external", true, month_ago);
        let current = cache.join("pkg-current");
        let mut removed = super::retire_unused(&cache, &[&current], Duration::from_secs(30 * 24 * 60 * 60));
        removed.sort();
        assert_eq!(removed, [cache.join("pkg-old"), cache.join("python-old")]);
        let mut left: Vec<String> =
            fs::read_dir(&cache).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["external", "pkg-current", "pkg-recent", "python-half-made"], "no temporary folder left");
        super::mark_used(&current);
        let stamp = fs::metadata(current.join(".complete")).unwrap().modified().unwrap();
        assert!(stamp.elapsed().unwrap() < Duration::from_secs(60 * 60), "a use refreshes an old stamp");
        let _ = fs::remove_dir_all(&cache);
    }

    #[test]
    fn the_embedded_package_is_every_module_of_the_python_package() {
        // A module left out would be missing from the package an installed binary writes.
        fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, root, out);
                } else if p.extension().is_some_and(|x| x == "py") {
                    out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/python"));
        let mut on_disk = Vec::new();
        walk(&root.join("semcheck"), root, &mut on_disk);
        on_disk.sort();
        let mut embedded: Vec<&str> =
            super::PACKAGE.iter().map(|(name, _)| *name).filter(|n| n.ends_with(".py")).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
        assert!(embedded.contains(&"semcheck/frontend/walker.py"), "{embedded:?}");
    }
}
