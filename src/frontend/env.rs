//! The Python environment of the front end: created on first use under the user's cache
//! directory, never in the user's tree.
//!
//! * The interpreter: `SEMCHECK_PYTHON` if set (it must have `jax==0.10.2`), else a
//!   virtual environment at `<cache>/python-<hash>` built from `python/requirements.txt`
//!   (the hash is the requirements' own, so a change of pins makes a new environment),
//!   created once with `python3 -m venv` and `pip install -r`, with pip's progress on
//!   stderr.
//! * The package: this binary carries `semcheck_pallas`'s sources and writes them to
//!   `<cache>/pkg-<hash>` (keyed by the sources), put first on `PYTHONPATH`, so the front
//!   end always matches the checker that reads its output.
//! * `<cache>` is `SEMCHECK_CACHE_DIR`, else `$XDG_CACHE_HOME/semcheck`, else
//!   `~/.cache/semcheck`.
//!
//! Both directories are built under a temporary name and renamed into place, so
//! concurrent first uses (parallel tests) do not see half-made environments.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use semcheck_model::{ErrorKind, ModelError};

/// The pinned requirements of the front end's environment.
pub const REQUIREMENTS: &str = include_str!("../../python/requirements.txt");

/// The package's sources, by file name.
pub const PACKAGE: [(&str, &str); 21] = [
    ("__init__.py", include_str!("../../python/semcheck_pallas/__init__.py")),
    ("__main__.py", include_str!("../../python/semcheck_pallas/__main__.py")),
    ("_call.py", include_str!("../../python/semcheck_pallas/_call.py")),
    ("accesses.py", include_str!("../../python/semcheck_pallas/accesses.py")),
    ("api.py", include_str!("../../python/semcheck_pallas/api.py")),
    ("bindings.py", include_str!("../../python/semcheck_pallas/bindings.py")),
    ("blocks.py", include_str!("../../python/semcheck_pallas/blocks.py")),
    ("capture.py", include_str!("../../python/semcheck_pallas/capture.py")),
    ("cells.py", include_str!("../../python/semcheck_pallas/cells.py")),
    ("compute.py", include_str!("../../python/semcheck_pallas/compute.py")),
    ("control.py", include_str!("../../python/semcheck_pallas/control.py")),
    ("dataflow.py", include_str!("../../python/semcheck_pallas/dataflow.py")),
    ("errors.py", include_str!("../../python/semcheck_pallas/errors.py")),
    ("export.py", include_str!("../../python/semcheck_pallas/export.py")),
    ("exprs.py", include_str!("../../python/semcheck_pallas/exprs.py")),
    ("kernel.py", include_str!("../../python/semcheck_pallas/kernel.py")),
    ("location.py", include_str!("../../python/semcheck_pallas/location.py")),
    ("scalars.py", include_str!("../../python/semcheck_pallas/scalars.py")),
    ("vectors.py", include_str!("../../python/semcheck_pallas/vectors.py")),
    ("views.py", include_str!("../../python/semcheck_pallas/views.py")),
    ("walker.py", include_str!("../../python/semcheck_pallas/walker.py")),
];

/// The jax version the package is written against.
pub const JAX_VERSION: &str = "0.10.2";

/// A ready interpreter and the directory holding the package.
#[derive(Clone, Debug)]
pub struct PythonEnv {
    /// The interpreter.
    pub python: PathBuf,
    /// The directory to put first on `PYTHONPATH`.
    pub package_root: PathBuf,
}

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

/// The environment, created if needed (once per process: concurrent callers wait for it).
pub fn python_env() -> Result<PythonEnv, ModelError> {
    static CREATING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = CREATING.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache_dir()?;
    let package_root = package_dir(&cache)?;
    let python = match std::env::var_os("SEMCHECK_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => {
            let python = PathBuf::from(p);
            check_interpreter(&python).map_err(|e| {
                env_error(format!(
                    "SEMCHECK_PYTHON={} cannot run the front end: {e}. Fix: `{} -m pip install -r python/requirements.txt` (or unset SEMCHECK_PYTHON to let semcheck make its own environment)",
                    python.display(),
                    python.display()
                ))
            })?;
            python
        }
        None => venv(&cache)?,
    };
    Ok(PythonEnv { python, package_root })
}

/// Writes the package sources under `<cache>/pkg-<hash>` once.
fn package_dir(cache: &Path) -> Result<PathBuf, ModelError> {
    let texts: Vec<&str> = PACKAGE.iter().flat_map(|(n, t)| [*n, *t]).collect();
    let dir = cache.join(format!("pkg-{}", short_hash(&texts)));
    if dir.join("semcheck_pallas").join("__main__.py").is_file() {
        return Ok(dir);
    }
    let tmp = cache.join(format!(".pkg-{}-{}", std::process::id(), short_hash(&[&format!("{:?}", Instant::now())])));
    let write = || -> std::io::Result<()> {
        fs::create_dir_all(tmp.join("semcheck_pallas"))?;
        for (name, text) in PACKAGE {
            fs::write(tmp.join("semcheck_pallas").join(name), text)?;
        }
        Ok(())
    };
    write().map_err(|e| env_error(format!("cannot write the front end's package under {}: {e}", cache.display())))?;
    if fs::rename(&tmp, &dir).is_err() {
        let _ = fs::remove_dir_all(&tmp);
        if !dir.join("semcheck_pallas").is_dir() {
            return Err(env_error(format!("cannot create {}", dir.display())));
        }
    }
    Ok(dir)
}

/// Whether `python` runs and has the pinned jax.
fn check_interpreter(python: &Path) -> Result<(), String> {
    let out = Command::new(python)
        .args(["-c", "import jax, jaxlib; print(jax.__version__, jaxlib.__version__)"])
        .env("JAX_PLATFORMS", "cpu")
        .output()
        .map_err(|e| format!("cannot run it ({e})"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("it cannot import jax ({})", err.trim().lines().last().unwrap_or("no message")));
    }
    let versions = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if versions != format!("{JAX_VERSION} {JAX_VERSION}") {
        return Err(format!("it has jax/jaxlib {versions}, not {JAX_VERSION}"));
    }
    Ok(())
}

/// The cached virtual environment, created on first use.
fn venv(cache: &Path) -> Result<PathBuf, ModelError> {
    let dir = cache.join(format!("python-{}", short_hash(&[REQUIREMENTS])));
    let python = dir.join("bin").join("python");
    if dir.join(".complete").is_file() {
        return Ok(python);
    }
    let fix = format!("rm -rf {}", dir.display());
    let bootstrap =
        std::env::var_os("SEMCHECK_BOOTSTRAP_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from);
    fs::create_dir_all(cache).map_err(|e| env_error(format!("cannot create {}: {e}", cache.display())))?;
    let tmp = cache.join(format!(".python-{}-{}", std::process::id(), short_hash(&[&format!("{:?}", Instant::now())])));
    eprintln!(
        "semcheck: first use of the Python front end: creating its environment in {} (jax {JAX_VERSION}, about 30 s and 300 MB)",
        dir.display()
    );
    let start = Instant::now();
    let status = Command::new(&bootstrap).args(["-m", "venv"]).arg(&tmp).stdout(Stdio::null()).status();
    match status {
        Ok(s) if s.success() => {}
        Ok(_) => {
            let _ = fs::remove_dir_all(&tmp);
            return Err(env_error(format!(
                "`{} -m venv` failed; semcheck needs Python 3.10+ with venv. Fix: `apt-get install python3-venv` (or set SEMCHECK_PYTHON to an interpreter with jax=={JAX_VERSION})",
                bootstrap.display()
            )));
        }
        Err(e) => {
            return Err(env_error(format!(
                "cannot run `{}` ({e}); semcheck needs Python 3.10+ to read Pallas kernels. Fix: `apt-get install python3 python3-venv` (or set SEMCHECK_PYTHON)",
                bootstrap.display()
            )))
        }
    }
    let req = tmp.join("requirements.txt");
    fs::write(&req, REQUIREMENTS).map_err(|e| env_error(format!("cannot write {}: {e}", req.display())))?;
    eprintln!("semcheck: installing the pinned requirements (pip's progress follows)");
    let pip = Command::new(tmp.join("bin").join("python"))
        .args(["-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", "-r"])
        .arg(&req)
        .stdout(Stdio::from(std::io::stderr()))
        .status();
    if !matches!(pip, Ok(s) if s.success()) {
        let _ = fs::remove_dir_all(&tmp);
        return Err(env_error(format!(
            "pip could not install the front end's requirements (see above; network access to the Python package registry is needed once). Fix the cause, then re-run; if {} exists half-made: `{fix}`",
            dir.display()
        )));
    }
    check_interpreter(&tmp.join("bin").join("python"))
        .map_err(|e| env_error(format!("the new environment is broken: {e}. Fix: `{fix}` and re-run")))?;
    let _ = fs::write(tmp.join(".complete"), format!("{:.1} s\n", start.elapsed().as_secs_f64()));
    // Only `python -m` is run, so the environment works from its final path (scripts'
    // shebang lines, which name the temporary path, are never used).
    if fs::rename(&tmp, &dir).is_err() {
        let _ = fs::remove_dir_all(&tmp);
        if !dir.join(".complete").is_file() {
            return Err(env_error(format!("cannot move the new environment to {}. Fix: `{fix}`", dir.display())));
        }
    }
    eprintln!("semcheck: Python environment ready in {:.1} s", start.elapsed().as_secs_f64());
    Ok(python)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_embedded_package_is_every_module_of_the_python_package() {
        // A module left out of PACKAGE would be missing from the environment an installed
        // binary writes, and the front end would fail to import there.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/python/semcheck_pallas");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".py"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = super::PACKAGE.iter().map(|(name, _)| *name).collect();
        assert_eq!(embedded, on_disk);
    }
}
