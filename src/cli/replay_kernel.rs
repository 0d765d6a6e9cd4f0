//! Which kernel file `semcheck replay` may run. A trace file is data: replaying a
//! downloaded one must not run a script its author chose. So the kernel file of a trace
//! (its `kernel-file` line) is run only when
//!
//! 1. it is found from the trace's own folder (a relative path is resolved against that
//!    folder, never against the current one), after following symbolic links, inside that
//!    folder or below it: a trace cannot name a script elsewhere on the machine, such as
//!    a module of the Python library, whose contents and hash are public and which would
//!    run as `__main__`;
//! 2. it is not part of a Python library found in that folder: no folder between the
//!    trace's folder and the file is hidden (its name starts with `.`: `.venv`, `.tox`),
//!    nor is named `site-packages`, `dist-packages` or `__pycache__`, and none of them,
//!    the trace's folder included, is a Python installation or environment (a folder
//!    holding `pyvenv.cfg`, `conda-meta` or `lib/python3.*`): a virtual environment made
//!    inside a checkout holds Python's library, with public contents and hashes, too;
//! 3. it is a regular file (not a FIFO or a device);
//! 4. its sha256 is the one the trace records (`kernel-sha256`): the very file the trace
//!    was written from.
//!
//! Otherwise replay refuses (exit 2) before running anything, naming the file and both
//! hashes, unless the user says which file to run: `--kernel FILE` (any regular file,
//! resolved against the current folder, as every path typed on the command line), or
//! `--allow-changed` (the file the trace names, at its place, whatever its hash: rules 1
//! to 3 still hold). A kernel document (`.json`) runs nothing and is only checked for
//! rule 1, and is never run by `--interpret` either (refused: it has no script).
//!
//! The other header fields that reach a process are plain data by the trace parser's own
//! checks: `devices` (a number, 1 to 4096, given to the script as `--devices`),
//! `kernel-tpu` (a chip name of at most 32 letters, digits, `-`, `_` or `.`, set as
//! `SEMCHECK_TPU`), `kernel-sha256` (64 hexadecimal digits). `kernel-name` and
//! `kernel-expect` only pick a kernel of the export and a reference specification, by
//! name. `kernel-args`, the arguments the script was run with, never reach it: the
//! script runs with the arguments after `--` on replay's own command line, and a trace
//! that records some is refused without them ([`script_args`]). Nothing else of a trace
//! reaches a process, a path or an environment variable.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use semcheck::checker::counterexample::TraceFile;
use semcheck::Source;
use sha2::{Digest, Sha256};

/// The kernel file a replay runs, and what to say about it.
#[derive(Debug)]
pub(crate) struct Chosen {
    /// The file, as an absolute path with links resolved.
    pub(crate) path: PathBuf,
    /// Its sha256 now.
    pub(crate) sha256: String,
    /// Notes to print after the first line (a hash that differs, by the user's leave).
    pub(crate) notes: Vec<String>,
}

/// What the user said about the kernel file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Leave<'a> {
    /// `--kernel FILE`.
    pub(crate) kernel: Option<&'a Path>,
    /// `--allow-changed`.
    pub(crate) allow_changed: bool,
}

/// Whether a replay may run the trace's script with `given` (the arguments after `--` on
/// its command line): refused when the trace records arguments and none are given (the
/// script would run another way than it was traced, with arguments the user did not
/// type); a note when the given ones differ from the trace's.
pub(crate) fn script_args(file: &TraceFile, given: &[String], name: &str) -> Result<Vec<String>, String> {
    let recorded = &file.header.script_args;
    if !given.is_empty() && !matches!(file.header.case.source, Source::Python { .. }) {
        return Err(format!("{name}: the arguments after `--` go to a kernel file's script; the trace has none"));
    }
    if recorded.as_slice() == given {
        return Ok(Vec::new());
    }
    let shown = super::trace::shell_words;
    if given.is_empty() {
        return Err(format!(
            "{name}: the trace's script was run with the arguments `{}`; replay gives a script only the arguments \
             its own command line gives: `semcheck replay {} -- {}`",
            shown(recorded),
            shown(&[name.to_string()]),
            shown(recorded)
        ));
    }
    Ok(vec![format!(
        "the trace's script was run with {}; it runs with `{}`",
        if recorded.is_empty() { "no arguments".to_string() } else { format!("the arguments `{}`", shown(recorded)) },
        shown(given)
    )])
}

/// ` with the arguments `a b`` for the line that says what a replay runs; empty for none.
pub(crate) fn with_args(args: &[String]) -> String {
    if args.is_empty() {
        return String::new();
    }
    format!(" with the arguments `{}`", super::trace::shell_words(args))
}

/// The sha256 of a file's bytes, in lowercase hexadecimal (read in pieces: any size).
pub(crate) fn sha256_of(path: &Path) -> io::Result<String> {
    let mut hasher = Sha256::new();
    io::copy(&mut fs::File::open(path)?, &mut hasher)?;
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The kernel file `file` (read from `trace`, `None` for stdin) may run, by the rules of the
/// module docs; `Ok(None)` for a trace of a catalogue protocol. `Err` is the message of a
/// refusal (exit 2): nothing has run.
pub(crate) fn choose(
    file: &TraceFile,
    trace: Option<&Path>,
    name: &str,
    leave: Leave<'_>,
) -> Result<Option<Chosen>, String> {
    let Source::Python { path: named, .. } = &file.header.case.source else {
        if leave.kernel.is_some() || leave.allow_changed {
            return Err(format!(
                "{name} is a trace of {}, not of a kernel file: --kernel and --allow-changed do not apply",
                file.header.case.source
            ));
        }
        return Ok(None);
    };
    let line = file.header_lines.source;
    let at = format!("{name}: line {line}");
    let recorded = file.header.source_sha256.as_deref().map(str::to_ascii_lowercase);
    if let Some(given) = leave.kernel {
        let path = regular_file(given).map_err(|e| format!("--kernel {}: {e}", given.display()))?;
        let sha256 = sha256_of(&path).map_err(|e| format!("--kernel {}: cannot read it: {e}", given.display()))?;
        let mut notes = Vec::new();
        match &recorded {
            Some(r) if *r == sha256 => {}
            Some(r) => notes.push(format!(
                "{} is not the file the trace was written from (sha256 {r} in the trace, {sha256} for this file): events that name its lines may no longer replay",
                path.display()
            )),
            None => notes.push("the trace records no kernel-sha256: it cannot show that this is its file".to_string()),
        }
        return Ok(Some(Chosen { path, sha256, notes }));
    }
    let Some(trace) = trace else {
        return Err(format!(
            "{at}: a trace read from stdin has no folder to find its kernel file `{}` in; replay runs nothing. Name the file to run with --kernel FILE",
            named.display()
        ));
    };
    let folder = match trace.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let folder = fs::canonicalize(&folder).map_err(|e| format!("{name}: cannot resolve its folder: {e}"))?;
    let candidate = folder.join(named);
    let found = match fs::canonicalize(&candidate) {
        Ok(p) => p,
        Err(e) => {
            let from_here = if named.is_relative() && Path::new(named).exists() {
                format!(
                    " (a file of that name exists from the current folder, but a trace's kernel file is read from the trace's folder; to run it: --kernel {})",
                    named.display()
                )
            } else {
                String::new()
            };
            return Err(format!(
                "{at}: the kernel file {} cannot be found from the trace's folder: {e}{from_here}; replay runs nothing. Name the file to run with --kernel FILE",
                candidate.display()
            ));
        }
    };
    if !found.starts_with(&folder) {
        return Err(format!(
            "{at}: the kernel file {} is outside the trace's folder {}: a trace may only name a kernel file in its own folder or below it, so that a trace from elsewhere cannot run another script of this machine; replay runs nothing. To run that file: --kernel {}",
            found.display(),
            folder.display(),
            found.display()
        ));
    }
    if let Some(why) = (!semcheck::frontend::is_document(&found)).then(|| in_python_library(&folder, &found)).flatten()
    {
        return Err(format!(
            "{at}: the kernel file {} is {why}: a trace may not name a script in a hidden folder, a folder of \
             installed packages or a Python installation, whose modules (Python's own library, installed \
             packages) have public contents and hashes; replay runs nothing. To run that file: --kernel {}",
            found.display(),
            found.display()
        ));
    }
    let path = regular_file(&found).map_err(|e| format!("{at}: {e}; replay runs nothing"))?;
    let sha256 = sha256_of(&path).map_err(|e| format!("{at}: cannot read {}: {e}", path.display()))?;
    if semcheck::frontend::is_document(&path) {
        // A kernel document is read, never run; its script's hash is compared later.
        return Ok(Some(Chosen { path, sha256, notes: Vec::new() }));
    }
    let mut notes = Vec::new();
    match &recorded {
        Some(r) if *r == sha256 => {}
        Some(r) if leave.allow_changed => notes.push(format!(
            "{} changed since this trace was written (sha256 {r} in the trace, {sha256} now); run by --allow-changed: events that name its lines may no longer replay",
            path.display()
        )),
        Some(r) => {
            return Err(format!(
                "{at}: {} changed since this trace was written (sha256 {r} in the trace, {sha256} now); replay runs nothing. Run it anyway with --allow-changed, or name the file to run with --kernel FILE",
                path.display()
            ))
        }
        None if leave.allow_changed => notes.push(format!(
            "the trace records no kernel-sha256: nothing shows that {} is its file; run by --allow-changed",
            path.display()
        )),
        None => {
            return Err(format!(
                "{at}: the trace records no kernel-sha256, so nothing shows that {} (sha256 {sha256}) is the file it was written from; replay runs nothing. Run it anyway with --allow-changed, or name the file with --kernel FILE",
                path.display()
            ))
        }
    }
    Ok(Some(Chosen { path, sha256, notes }))
}

/// Why `found` (a file inside the trace's folder `folder`, both with links resolved) is
/// part of a Python library rather than a kernel file of the user's, by rule 2 of the
/// module docs; `None` when it is not. Each folder from `folder` (included) down to the
/// file's own is looked at: below `folder`, its name must not start with `.` (`.venv`,
/// `.tox`, `.git`) nor be `site-packages`, `dist-packages` or `__pycache__`; and no such
/// folder may be a Python installation or environment: one holding `pyvenv.cfg` (a
/// virtual environment), `conda-meta` (a conda environment) or `lib/python3.11` (any
/// `lib/pythonX...` or `lib64/pythonX...`: an installation's library).
fn in_python_library(folder: &Path, found: &Path) -> Option<String> {
    use std::path::Component;
    let rel = found.strip_prefix(folder).ok()?;
    let parts: Vec<&std::ffi::OsStr> =
        rel.components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect();
    let mut dir = folder.to_path_buf();
    for (i, name) in std::iter::once(None).chain(parts.iter().take(parts.len().saturating_sub(1)).map(Some)).enumerate()
    {
        if let Some(name) = name {
            dir.push(name);
            let n = name.to_string_lossy();
            if n.starts_with('.') {
                return Some(format!("in the hidden folder {}", dir.display()));
            }
            if ["site-packages", "dist-packages", "__pycache__"].contains(&n.as_ref()) {
                return Some(format!("in {}, a folder of installed or compiled Python modules", dir.display()));
            }
        }
        if let Some(what) = python_installation(&dir) {
            let whose = if i == 0 { " (the trace's folder)" } else { "" };
            return Some(format!("in {}{whose}, {what}", dir.display()));
        }
    }
    None
}

/// What makes folder `dir` a Python installation or environment, if it is one: a
/// `pyvenv.cfg`, a `conda-meta` folder, or a `lib/pythonX...` (or `lib64/`) folder.
fn python_installation(dir: &Path) -> Option<String> {
    if dir.join("pyvenv.cfg").exists() {
        return Some("a Python virtual environment (it has pyvenv.cfg)".to_string());
    }
    if dir.join("conda-meta").is_dir() {
        return Some("a conda environment (it has conda-meta)".to_string());
    }
    for lib in ["lib", "lib64"] {
        let Ok(entries) = fs::read_dir(dir.join(lib)) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let version = name.strip_prefix("python").is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()));
            if version && entry.path().is_dir() {
                return Some(format!("a Python installation (it has {lib}/{name})"));
            }
        }
    }
    None
}

/// `path` with links resolved, when it is a regular file.
fn regular_file(path: &Path) -> Result<PathBuf, String> {
    let resolved = fs::canonicalize(path).map_err(|e| format!("cannot find {}: {e}", path.display()))?;
    let meta = fs::metadata(&resolved).map_err(|e| format!("cannot read {}: {e}", resolved.display()))?;
    if meta.is_file() {
        Ok(resolved)
    } else {
        Err(format!("{} is not a regular file", resolved.display()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_hash_is_python_hashlib_s() {
        let dir = std::env::temp_dir().join(format!("semcheck-sha-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("abc");
        std::fs::write(&f, "abc").unwrap();
        // hashlib.sha256(b"abc").hexdigest()
        assert_eq!(super::sha256_of(&f).unwrap(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
