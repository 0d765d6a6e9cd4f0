//! The Python front end: Pallas kernels read from files, through JAX's own tracer.
//!
//! `semcheck check kernel.py --devices N` runs `python -m semcheck.frontend export` (the
//! package in `python/`, carried by this binary; see [`env`](mod@env)) once per mesh size, reads
//! the JSON document it prints ([`document`](mod@document), `python/SCHEMA.md`), imports each kernel
//! into the IR ([`import`]) and compiles it against its specification ([`spec`]).
//! A `.json` target is such a document, read as is (the Python API checks kernels this
//! way).
//!
//! Exports are cached per process by (file, N): `check` then `trace` of the same kernel
//! runs the script once.

pub mod document;
pub mod env;
pub mod import;
pub mod interpreter;
pub mod program;
pub mod server;
pub mod spec;

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use semcheck_model::{compile, ErrorKind, ModelError, Program};

use document::{Document, KernelDoc, ProgramDoc};
use server::Waited;

/// The documents this process exported or read, by (file, device count): a case asks for
/// its document several times (its kernel, its prefetched values, its script arguments).
type Exports = Mutex<HashMap<(PathBuf, usize), Arc<Document>>>;

fn cache() -> &'static Exports {
    static CACHE: OnceLock<Exports> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Whether a target names an exported document rather than a script.
pub fn is_document(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// Reads an exported document (a `.json` target).
pub fn read_document(path: &Path) -> Result<Document, ModelError> {
    // Not a FIFO or a device: reading one could block or never end.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(ModelError::new(
            ErrorKind::UnknownName,
            format!("the kernel document {} is not a regular file", path.display()),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        ModelError::new(ErrorKind::UnknownName, format!("cannot read the kernel document {}: {e}", path.display()))
    })?;
    Document::parse(&text, &path.display().to_string())
}

/// The document of `path` at `devices` devices: the `.json` itself, or the script's
/// export (either read once per process).
pub fn document(path: &Path, devices: usize) -> Result<Arc<Document>, ModelError> {
    document_unless(path, devices, &|| false)
}

/// [`document()`], unless `stopped` says to stop (asked every few milliseconds while the
/// export runs): then the export is ended, whatever its script started with it, and the
/// error is of kind [`ErrorKind::Stopped`]. A command that checks case after case stops
/// one case's export at that case's budget and goes on with the next.
pub fn document_unless(path: &Path, devices: usize, stopped: &dyn Fn() -> bool) -> Result<Arc<Document>, ModelError> {
    let key = (path.to_path_buf(), devices);
    if let Some(doc) = cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(doc.clone());
    }
    let doc = Arc::new(if is_document(path) {
        let doc = read_document(path)?;
        if doc.devices != devices {
            return Err(ModelError::new(
                ErrorKind::UnknownName,
                format!("{} was exported for {} devices, not {devices}", path.display(), doc.devices),
            ));
        }
        doc
    } else {
        let started = pending().lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
        match started {
            Some(job) => finish_export(job, stopped)?,
            None => finish_export(start_export(path, devices)?, stopped)?,
        }
    });
    cache().lock().unwrap_or_else(|e| e.into_inner()).insert(key, doc.clone());
    Ok(doc)
}

/// The document of `path` at `devices` devices if this process has read it (a lookup
/// after the check never runs a script again: an export that failed or was stopped
/// stays so).
fn read_already(path: &Path, devices: usize) -> Option<Arc<Document>> {
    cache().lock().unwrap_or_else(|e| e.into_inner()).get(&(path.to_path_buf(), devices)).cloned()
}

/// Says a note on stderr, once per process: a script's warning, or a note on one of its
/// kernels, is the same at every size (a note that names the size differs by it).
fn note_once(note: &str) {
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.iter().any(|s| s == note) {
        eprintln!("semcheck: note: {note}");
        said.push(note.to_string());
    }
}

/// The TPU chip every export traces for, overriding `SEMCHECK_TPU` (a replay sets the
/// one its trace file records).
fn tpu_override() -> &'static Mutex<Option<String>> {
    static TPU: OnceLock<Mutex<Option<String>>> = OnceLock::new();
    TPU.get_or_init(|| Mutex::new(None))
}

/// Makes every later export of this process trace for `chip` (as `SEMCHECK_TPU=chip`).
pub fn trace_for_tpu(chip: &str) {
    *tpu_override().lock().unwrap_or_else(|e| e.into_inner()) = Some(chip.to_string());
}

/// The arguments every export gives its script (`sys.argv[1:]`), after `--` on the
/// command line; none by default.
static SCRIPT_ARGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Makes every later export of this process run its script with `args` as its arguments
/// (`python kernel.py ARGS...`).
pub fn run_scripts_with(args: &[String]) {
    *SCRIPT_ARGS.lock().unwrap_or_else(|e| e.into_inner()) = args.to_vec();
}

/// The arguments this process's exports give their scripts ([`run_scripts_with`]).
pub fn script_args() -> Vec<String> {
    SCRIPT_ARGS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Whether every export runs its script in JAX's TPU interpret mode first, to read the
/// integers its kernels copy into SMEM with that run's values (`--interpret-values`).
static INTERPRET_VALUES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every later export of this process record the values its kernels copy into SMEM
/// in JAX's TPU interpret mode (as `SEMCHECK_INTERPRET_VALUES=1`).
pub fn interpret_values() {
    INTERPRET_VALUES.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether this process's exports run their scripts in JAX's TPU interpret mode first
/// (`--interpret-values`).
pub fn interpreting_values() -> bool {
    INTERPRET_VALUES.load(std::sync::atomic::Ordering::Relaxed)
}

/// This process's folder of export files (`<cache>/exports/run-<pid>-<tag>`), made on
/// first use and removed at exit ([`crate::cleanup`]); the first use also removes the
/// folders and files of runs that were killed outright.
fn run_dir() -> Result<&'static Path, ModelError> {
    static RUN: OnceLock<Result<crate::cleanup::TempDir, String>> = OnceLock::new();
    let made = RUN.get_or_init(|| {
        let exports = env::cache_dir().map_err(|e| e.to_string())?.join("exports");
        crate::cleanup::sweep(&exports, "run-");
        crate::cleanup::sweep_orphan_files(&exports, "");
        crate::cleanup::TempDir::create(&exports, "run-")
            .map_err(|e| format!("cannot create a folder for exports in {}: {e}", exports.display()))
    });
    match made {
        Ok(dir) => Ok(dir.path()),
        Err(e) => Err(ModelError::new(ErrorKind::Environment, e.clone())),
    }
}

/// The path to give the exporter for `path`: a relative path that starts with `-` would
/// read as an option, so it gets a `./`.
fn as_argument(path: &Path) -> PathBuf {
    if path.is_relative() && path.as_os_str().as_encoded_bytes().starts_with(b"-") {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}

/// An export under way: its files, and who is writing them.
pub(crate) struct Job {
    path: PathBuf,
    devices: usize,
    out: PathBuf,
    err_path: PathBuf,
    py: env::PythonEnv,
    pythonpath: std::ffi::OsString,
    tpu: Option<String>,
    interpret: bool,
    args: Vec<String>,
    start: Instant,
    request: Option<server::Request>,
}

/// Why `path`, which is not a regular file, cannot be checked: a folder's kernel files
/// are named one by one (`kernels/*.py`), a device or a pipe is not a script, a missing
/// file is missing.
pub fn not_a_kernel_file(path: &Path) -> String {
    if path.is_dir() {
        let glob = path.join("*.py");
        format!("{} is a folder: name its kernel files (`semcheck check {}`)", path.display(), glob.display())
    } else if path.exists() {
        format!(
            "{} is not a regular file (a device, a pipe or a socket): a kernel file is a Python script",
            path.display()
        )
    } else {
        format!("no kernel file {}", path.display())
    }
}

/// Starts exporting `path` at `devices` devices: through the export server
/// ([`server`]), or, when that is off or cannot take it, later in [`finish_export`].
fn start_export(path: &Path, devices: usize) -> Result<Job, ModelError> {
    if !path.is_file() {
        return Err(ModelError::new(ErrorKind::UnknownName, not_a_kernel_file(path)));
    }
    let py = env::python_env()?;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = run_dir()?.join(format!("{n}-{devices}.json"));
    let mut pythonpath = py.package_root.clone().into_os_string();
    if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        pythonpath.push(":");
        pythonpath.push(old);
    }
    let err_path = out.with_extension("stderr");
    let tpu = tpu_override().lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut job = Job {
        path: as_argument(path),
        devices,
        out,
        err_path,
        py,
        pythonpath,
        tpu,
        interpret: interpreting_values(),
        args: script_args(),
        start: Instant::now(),
        request: None,
    };
    if server::enabled() {
        job.request = server::submit(&job);
    }
    Ok(job)
}

/// The folder of the persistent cache of XLA executables the exporter's scripts compile
/// (their own computations on the CPU: a second run of a script, or a computation that is
/// the same at another size, loads them instead of compiling; the values are the same),
/// for `SEMCHECK_XLA_CACHE`: `<cache>/xla`, unless the variable is set already (empty:
/// no cache), then the exporter reads it as it is.
/// The folder is pruned, once per process, to its newest 256 MiB when it holds more than
/// 512 MiB (JAX's own bound needs a package the environment may lack).
pub(crate) fn xla_cache() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        if std::env::var_os("SEMCHECK_XLA_CACHE").is_some() {
            return None;
        }
        let dir = env::cache_dir().ok()?.join("xla");
        crate::cleanup::prune_oldest(&dir, 512 << 20, 256 << 20);
        Some(dir)
    })
    .clone()
}

/// Runs the exporter on a script in a process of its own, in a process group of its own
/// ([`crate::children`]): whatever the script leaves running when it ends is killed, and
/// all of it when semcheck ends.
fn export_in_process(job: &Job, stopped: &dyn Fn() -> bool) -> Result<Option<ExitStatus>, ModelError> {
    let err_file = std::fs::File::create(&job.err_path).map_err(|e| {
        ModelError::new(ErrorKind::Environment, format!("cannot create {}: {e}", job.err_path.display()))
    })?;
    let mut cmd = Command::new(&job.py.python);
    if let Some(chip) = &job.tpu {
        cmd.env("SEMCHECK_TPU", chip);
    }
    if let Some(dir) = xla_cache() {
        cmd.env("SEMCHECK_XLA_CACHE", dir);
    }
    if job.interpret {
        cmd.env("SEMCHECK_INTERPRET_VALUES", "1");
    }
    // Mosaic's TPU lowering cross-check (a third of a large kernel's export) only serves the
    // front end's own tests, which compare its refusals with Mosaic's.
    cmd.args(["-m", "semcheck.frontend", "export", "--no-lower"])
        .arg(&job.path)
        .args(["--devices", &job.devices.to_string(), "--out"])
        .arg(&job.out)
        .arg("--")
        .args(&job.args)
        .env("PYTHONPATH", &job.pythonpath)
        // A script that calls the Python API's `check` at its top level must not start
        // checks of its own from inside this export (the API refuses in its children).
        .env("SEMCHECK_API_CHILD", "1")
        .env(env::EXPORTING, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file);
    crate::children::spawn(&mut cmd)
        .and_then(|mut child| crate::children::wait_unless(&mut child, stopped))
        .map_err(|e| ModelError::new(ErrorKind::Environment, format!("cannot run {}: {e}", job.py.python.display())))
}

/// Waits for an export [`start_export`] started (or runs it now) and reads its document;
/// an error of kind [`ErrorKind::Stopped`] when `stopped` ends the wait.
fn finish_export(mut job: Job, stopped: &dyn Fn() -> bool) -> Result<Document, ModelError> {
    let path = job.path.clone();
    let wait = |r: server::Request| r.wait_unless(stopped);
    let mut waited = job.request.take().map_or(Waited::ServerGone, wait);
    if matches!(waited, Waited::ServerGone) && server::enabled() {
        // The server ended before this export did (it went idle as the request came, or
        // was killed): once more through a new one.
        waited = server::submit(&job).map_or(Waited::ServerGone, wait);
    }
    let (status, seconds, peak) = match waited {
        Waited::Ended(e) => (Ok(Some(e.status)), e.seconds, Some(e.max_rss_bytes)),
        Waited::Stopped => (Ok(None), 0.0, None),
        Waited::ServerGone => {
            let start = Instant::now();
            (export_in_process(&job, stopped), start.elapsed().as_secs_f64(), None)
        }
    };
    tracing::info!(
        "exported {} at N = {} in {seconds:.2} s ({:.2} s since it was asked for)",
        path.display(),
        job.devices,
        job.start.elapsed().as_secs_f64()
    );
    let text = std::fs::read_to_string(&job.out);
    let _ = std::fs::remove_file(&job.out);
    let stderr = crate::children::read_tail(&job.err_path);
    let _ = std::fs::remove_file(&job.err_path);
    let Some(status) = status? else {
        return Err(ModelError::new(
            ErrorKind::Stopped,
            format!("the export of {} at N = {} was stopped", path.display(), job.devices),
        ));
    };
    let text = text.map_err(|_| failed_export(&path, &job.py, status, &stderr))?;
    let mut doc = Document::parse(&text, &format!("the export of {}", path.display()))?;
    doc.interpreter = Some((job.py.python.clone(), job.py.origin));
    doc.export_seconds = Some(seconds);
    doc.export_peak_bytes = peak;
    Ok(doc)
}

/// Starts the exports of `path` at each of `sizes` that this process has not exported
/// yet, so that they run in parallel on the export server while the caller reads the
/// first ([`document()`] then waits for each). Nothing when `path` is a document, or the
/// server is off.
pub fn prefetch(path: &Path, sizes: &[usize]) {
    if is_document(path) || !server::enabled() {
        return;
    }
    for &n in sizes {
        let key = (path.to_path_buf(), n);
        if cache().lock().unwrap_or_else(|e| e.into_inner()).contains_key(&key) {
            continue;
        }
        let mut pending = pending().lock().unwrap_or_else(|e| e.into_inner());
        if pending.contains_key(&key) {
            continue;
        }
        match start_export(path, n) {
            Ok(job) => {
                pending.insert(key, job);
            }
            Err(_) => return, // `document` reports it
        }
    }
}

/// The exports [`prefetch`] started and no one has read yet.
fn pending() -> &'static Mutex<HashMap<(PathBuf, usize), Job>> {
    static PENDING: OnceLock<Mutex<HashMap<(PathBuf, usize), Job>>> = OnceLock::new();
    PENDING.get_or_init(Default::default)
}

/// Why an export wrote no document, in words a person can act on: how the process ended
/// (`killed by signal 11 (SIGSEGV)`; an exit without an error, as `os._exit` does), the
/// end of its stderr, and the fix when the interpreter cannot import JAX.
fn failed_export(path: &Path, py: &env::PythonEnv, status: ExitStatus, stderr: &str) -> ModelError {
    let tail: Vec<&str> = stderr.lines().rev().filter(|l| !l.trim().is_empty()).take(15).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    let how = crate::children::describe(status);
    let mut msg = if status.signal().is_some() {
        format!("the Python front end was {how} while it ran {}: nothing was read", path.display())
    } else if tail.is_empty() || status.success() {
        format!(
            "{} ended ({how}) without reporting its kernels: the script ended the process itself (os._exit, or a signal handler) before the front end could write what it found; nothing was read",
            path.display()
        )
    } else {
        format!("the Python front end failed on {} ({how})", path.display())
    };
    if !tail.is_empty() {
        msg.push_str(&format!(":\n  {}", tail.join("\n  ")));
    }
    if stderr.contains("No module named 'jax'") || stderr.contains("No module named jax") {
        msg.push_str(&match py.origin {
            // The environment's own folder (`<dir>/bin/python`), never the cache around it.
            interpreter::Origin::Managed => match py.python.parent().and_then(Path::parent) {
                Some(dir) => {
                    format!("\n  semcheck's managed environment is broken; fix: `rm -rf {}` and re-run", dir.display())
                }
                None => "\n  semcheck's managed environment is broken".to_string(),
            },
            _ => format!(
                "\n  {} cannot import jax; fix: `{} -m pip install '{}'`",
                py.python.display(),
                py.python.display(),
                interpreter::supported_requirement()
            ),
        });
    }
    ModelError::new(ErrorKind::Environment, msg)
}

/// What a check of a kernel file covers: one kernel, or a program of several kernels
/// (kernels that hand semaphores, and so DMAs in flight, from one to the next).
#[derive(Clone, Copy, Debug)]
pub enum Target<'d> {
    /// A kernel checked alone.
    Kernel(&'d KernelDoc),
    /// A program of several kernels, checked as one protocol per device.
    Program(&'d ProgramDoc),
}

impl<'d> Target<'d> {
    /// Its name (`--kernel NAME` picks it).
    pub fn name(&self) -> &'d str {
        match self {
            Target::Kernel(k) => &k.name,
            Target::Program(p) => &p.name,
        }
    }

    /// The document's records of its kernels, in the order they run (a kernel alone: itself).
    pub fn kernels(&self, doc: &'d Document) -> Vec<&'d KernelDoc> {
        match self {
            Target::Kernel(k) => vec![*k],
            Target::Program(p) => p.kernels.iter().map(|&k| &doc.kernels[k]).collect(),
        }
    }
}

/// What a check of a document covers by default: its programs of several kernels, and
/// the kernels the script calls outside every program that communicate or that the front
/// end could not read whole (whether they communicate is unknown, and the check must say
/// why it cannot check them).
pub fn default_targets(doc: &Document) -> Vec<Target<'_>> {
    let programs = doc.programs.iter().map(Target::Program);
    let kernels =
        doc.kernels.iter().filter(|k| k.standalone && (k.communicates || k.status != "ok")).map(Target::Kernel);
    programs.chain(kernels).collect()
}

/// The kernels of a document a check covers by default, by name: see [`default_targets`].
pub fn default_kernels(doc: &Document) -> Vec<String> {
    default_targets(doc).iter().map(|t| t.name().to_string()).collect()
}

/// The kernel or program named `name` (a program first), or the one to check when `name`
/// is `None`.
pub fn choose<'d>(doc: &'d Document, path: &Path, name: Option<&str>) -> Result<Target<'d>, ModelError> {
    let mut all: Vec<String> = doc
        .programs
        .iter()
        .map(|p| {
            let names: Vec<&str> = p.kernels.iter().map(|&k| doc.kernels[k].name.as_str()).collect();
            format!("{} (program: {})", p.name, names.join(", "))
        })
        .collect();
    all.extend(doc.kernels.iter().map(|k| match (k.status.as_str(), k.communicates) {
        ("ok", true) => k.name.clone(),
        ("ok", false) => format!("{} (does not communicate)", k.name),
        (status, _) => format!("{} ({status})", k.name),
    }));
    if let Some(n) = name {
        if let Some(p) = doc.programs.iter().find(|p| p.name == n) {
            return Ok(Target::Program(p));
        }
        return doc.kernels.iter().find(|k| k.name == n).map(Target::Kernel).ok_or_else(|| {
            ModelError::new(
                ErrorKind::UnknownName,
                format!("{} has no kernel `{n}`; its kernels: {}", path.display(), all.join(", ")),
            )
        });
    }
    match default_targets(doc).as_slice() {
        [one] => Ok(*one),
        [] => Err(ModelError::new(
            ErrorKind::Unsupported,
            format!(
                "no kernel of {} communicates (remote DMA, remote signal, barrier semaphore): nothing to check; its kernels: {}; name one with --kernel to check it anyway",
                path.display(),
                all.join(", ")
            ),
        )),
        many => Err(ModelError::new(
            ErrorKind::UnknownName,
            format!(
                "{} has several communicating kernels; pick one with --kernel: {}",
                path.display(),
                many.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// The kernel record, imported (status checked: unsupported and refused kernels are
/// errors that name the construct, its line, and JAX's reason; notes about it printed).
fn import_kernel(k: &KernelDoc, path: &Path) -> Result<import::Imported, ModelError> {
    match k.status.as_str() {
        "ok" => {}
        "unsupported" => {
            let what = match k.errors.as_slice() {
                [one] => format!("unsupported construct: {}", one.describe()),
                all => format!(
                    "{} unsupported constructs{}:{}",
                    all.len(),
                    tally(all.iter().map(|e| e.construct.as_str())),
                    all.iter().enumerate().map(|(i, e)| format!("\n  {}. {}", i + 1, e.describe())).collect::<String>()
                ),
            };
            let why =
                k.rest.get("prefetch").and_then(prefetch_note).map(|n| format!("\n  note: {n}")).unwrap_or_default();
            return Err(ModelError::new(
                ErrorKind::Unsupported,
                format!("kernel {} of {}: {what}{why}", k.name, path.display()),
            ));
        }
        "refused" => {
            let reason = k.refusal.as_ref().map_or("no reason given".to_string(), |r| r.describe());
            return Err(ModelError::new(
                ErrorKind::JaxRefuses,
                format!("kernel {} of {}: JAX refuses to build it: {reason}", k.name, path.display()),
            ));
        }
        other => {
            return Err(ModelError::new(
                ErrorKind::BadDeclaration,
                format!("kernel {}: unknown status `{other}` in the document", k.name),
            ))
        }
    }
    if let Some(ignored) = k.rest.get("ignored").and_then(|v| v.as_array()) {
        for i in ignored {
            let what = i.get("construct").and_then(|c| c.as_str()).unwrap_or("?");
            let at = i
                .get("loc")
                .and_then(|l| serde_json::from_value::<document::LocDoc>(l.clone()).ok())
                .map(|l| format!(" at {}", l.short()))
                .unwrap_or_default();
            // A construct read only because what it gives never reaches the protocol says why.
            let why = i.get("why").and_then(|w| w.as_str()).unwrap_or("only prints or times");
            note_once(&format!("{}: kernel {}: `{what}`{at}: {why}; not modelled", path.display(), k.name));
        }
    }
    if let Some(note) = k.rest.get("prefetch").and_then(prefetch_note) {
        note_once(&format!("{}: kernel {}: {note}", path.display(), k.name));
    }
    import::import(k)
}

/// The imported kernel, or a program of several kernels merged into one kernel of
/// launches ([`program::merge`]).
pub fn kernel(doc: &Document, path: &Path, name: Option<&str>) -> Result<import::Imported, ModelError> {
    doc.check_errors(&path.display().to_string())?;
    let target = choose(doc, path, name)?;
    if let Target::Program(p) = target {
        if let Some(why) = &p.unsupported {
            let at = p.call.as_ref().map(|l| format!(" (called at {})", l.short())).unwrap_or_default();
            return Err(ModelError::new(
                ErrorKind::Unsupported,
                format!("unsupported construct: program {}{at}: {why}; the program is not checked", p.name),
            ));
        }
    }
    let steps = target.kernels(doc);
    // Each kernel once: its errors and notes.
    let mut imported: Vec<(usize, import::Imported)> = Vec::new();
    for (i, k) in steps.iter().enumerate() {
        match steps[..i].iter().position(|e| std::ptr::eq(*e, *k)) {
            Some(j) => {
                let again = imported.iter().find(|(s, _)| *s == j).expect("imported before").1.clone();
                imported.push((i, again));
            }
            None => {
                let one = import_kernel(k, path).map_err(|e| match target {
                    Target::Program(p) => e.context(format!("program {}", p.name)),
                    Target::Kernel(_) => e,
                })?;
                imported.push((i, one));
            }
        }
    }
    for w in &doc.warnings {
        if let Some(m) = w.get("message").and_then(|m| m.as_str()) {
            note_once(&format!("{}: {m}", path.display()));
        }
    }
    let imported = match target {
        Target::Kernel(k) => {
            if let Some(note) = passed_semaphores_note(doc, k) {
                note_once(&format!("{}: kernel {}: {note}", path.display(), k.name));
            }
            let one = imported.pop().expect("one kernel").1;
            if one.kernel.implicit_entry_barrier() != one.implicit_entry_barrier {
                return Err(ModelError::new(
                    ErrorKind::BadDeclaration,
                    format!(
                        "kernel {}: the front end and the checker disagree on JAX's implicit entry barrier ({} vs {}); this is a semcheck bug",
                        k.name,
                        one.implicit_entry_barrier,
                        one.kernel.implicit_entry_barrier()
                    ),
                ));
            }
            one
        }
        Target::Program(p) => program::merge(p, &steps, imported.into_iter().map(|(_, k)| k).collect())?,
    };
    Ok(imported)
}

/// For a kernel checked alone that takes or hands out semaphores (`pltpu.SEMAPHORE`-space
/// operands): what that means for its verdict, and the program to check instead, if any.
fn passed_semaphores_note(doc: &Document, k: &KernelDoc) -> Option<String> {
    let passed: Vec<&str> = k
        .rest
        .get("semaphores")?
        .as_array()?
        .iter()
        .filter(|s| s.get("role").and_then(|r| r.as_str()).is_some_and(|r| r != "scratch"))
        .filter_map(|s| s.get("name").and_then(|n| n.as_str()))
        .collect();
    if passed.is_empty() {
        return None;
    }
    let index = doc.kernels.iter().position(|d| std::ptr::eq(d, k))?;
    let programs: Vec<&str> =
        doc.programs.iter().filter(|p| p.kernels.contains(&index)).map(|p| p.name.as_str()).collect();
    let instead = match programs.as_slice() {
        [] => String::new(),
        names => format!("; the program it belongs to is checked with --kernel {}", names.join(" or --kernel ")),
    };
    Some(format!(
        "it takes or hands out semaphores ({}) that other kernels wait on or signal; checked alone, a semaphore it hands out is a leak and one it takes starts at 0{instead}",
        passed.join(", ")
    ))
}

/// The compiled program of a kernel of a file: imported, then compiled against the
/// lock-step reference or the named one.
pub fn program(
    path: &Path,
    name: Option<&str>,
    expect: Option<&str>,
    devices: usize,
    repeat: u32,
) -> Result<Program, ModelError> {
    let doc = document(path, devices)?;
    let imported = kernel(&doc, path, name)?;
    if imported.mesh.num_devices() != devices {
        note_once(&format!(
            "{}: kernel {} runs on its own {} mesh ({}), not on the devices JAX was given",
            path.display(),
            imported.kernel.name,
            imported.mesh_kind,
            imported.mesh
        ));
    }
    match expect {
        Some(reference) => {
            let spec = spec::reference_spec(reference, &imported.kernel, &imported.mesh)?;
            compile(&imported.kernel, &imported.mesh, &spec, repeat)
        }
        None => {
            let (program, note) = spec::lockstep_program(&imported.kernel, &imported.mesh, repeat)?;
            if let Some(n) = note {
                let what = if imported.kernel.is_program() { "program" } else { "kernel" };
                note_once(&format!("{}: {what} {}: {n}", path.display(), imported.kernel.name));
            }
            Ok(program)
        }
    }
}

/// ` (13 run-time data, 10 reshape ref transform, 2 bitcast ref transform)`: how many of
/// each construct, most frequent first (empty when all are one construct).
fn tally<'a>(constructs: impl Iterator<Item = &'a str>) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for c in constructs {
        match counts.iter_mut().find(|(d, _)| *d == c) {
            Some(slot) => slot.1 += 1,
            None => counts.push((c, 1)),
        }
    }
    if counts.len() < 2 {
        return String::new();
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    let parts: Vec<String> = counts.iter().map(|(c, n)| format!("{n} {c}")).collect();
    format!(" ({})", parts.join(", "))
}

/// What a kernel's record says of its scalar-prefetch operands: the values it was read
/// with (the verdict covers those only), or why they are unknown.
fn prefetch_note(p: &serde_json::Value) -> Option<String> {
    if let Some(e) = p.get("error").and_then(|e| e.as_str()) {
        return Some(format!("the values of its scalar-prefetch and SMEM operands are unknown: {e}"));
    }
    let recorded = recorded_note(p);
    let Some(operands) = p.get("operands").and_then(|o| o.as_array()) else {
        return recorded;
    };
    let described: Vec<String> = operands
        .iter()
        .map(|o| {
            let name = o.get("name").and_then(|n| n.as_str()).unwrap_or("?");
            // An input the kernel copies into SMEM (an index window) says so.
            let name = match (o.get("copied").and_then(|c| c.as_bool()), o.get("space").and_then(|c| c.as_str())) {
                (Some(true), _) => format!("`{name}` (copied into SMEM or VMEM)"),
                (_, Some("vmem")) => format!("`{name}` (in VMEM)"),
                _ => format!("`{name}`"),
            };
            let per: Vec<(String, String)> = o
                .get("values")
                .and_then(|v| v.as_array())
                .map(|all| all.iter().map(|d| (short_json(d.get("device")), short_json(d.get("values")))).collect())
                .unwrap_or_default();
            let first = per.first().map(|(_, v)| v.clone()).unwrap_or_default();
            if per.iter().all(|(_, v)| *v == first) {
                format!("{name} = {first} on every device")
            } else {
                let each: Vec<String> = per.iter().map(|(d, v)| format!("d{d}: {v}")).collect();
                format!("{name} = {}", each.join(", "))
            }
        })
        .collect();
    // One of several sets of values the script passes (routings): which.
    let set = p
        .get("set")
        .and_then(|s| {
            let name = s.get("name").and_then(|n| n.as_str()).map(|n| format!(", `{n}`")).unwrap_or_default();
            Some(format!(" (routing {} of the {} the script passes{name})", s.get("index")?, s.get("of")?))
        })
        .unwrap_or_default();
    let known = format!(
        "read with the values the script passes to its scalar-prefetch and SMEM operands and integer inputs ({}); the verdict covers these values only{set}",
        described.join("; ")
    );
    Some(match recorded {
        Some(r) => format!("{known}; {r}"),
        None => known,
    })
}

/// What a kernel's record says of the values its copies into SMEM carried when the script
/// ran in JAX's TPU interpret mode (`--interpret-values`), if it read any.
fn recorded_note(p: &serde_json::Value) -> Option<String> {
    let error = p.get("interpret_error").and_then(|e| e.as_str());
    let Some(recorded) = p.get("recorded").and_then(|r| r.as_array()) else {
        return error.map(|e| format!("--interpret-values: {e}; no copy of this kernel into SMEM was recorded"));
    };
    let names: Vec<String> =
        recorded.iter().map(|r| format!("`{}`", r.get("name").and_then(|n| n.as_str()).unwrap_or("?"))).collect();
    let stopped = error.map(|e| format!(" ({e}; the copies recorded until then are used)")).unwrap_or_default();
    Some(format!(
        "the integers it copies into SMEM from {} are read with the values they carried when the script ran with its kernels in JAX's TPU interpret mode{stopped}: the verdict covers that run's values (every schedule's when it finds no race; docs/kernel-files.md)",
        names.join(", ")
    ))
}

/// A short rendering of a JSON value (an array of numbers, a device's coordinates).
fn short_json(v: Option<&serde_json::Value>) -> String {
    let text = match v {
        Some(serde_json::Value::Array(a)) if a.len() == 1 && a[0].is_number() => a[0].to_string(),
        Some(v) => v.to_string(),
        None => "?".into(),
    };
    let text = text.replace(',', ", ");
    if text.chars().count() > 60 {
        format!("{}...]", text.chars().take(56).collect::<String>())
    } else {
        text
    }
}

/// What the kernel's record says of its scalar-prefetch operands (the `prefetch` of
/// `python/SCHEMA.md`), if it has any.
pub fn kernel_prefetch(path: &Path, devices: usize, name: Option<&str>) -> Option<serde_json::Value> {
    let doc = read_already(path, devices)?;
    match choose(&doc, path, name).ok()? {
        Target::Kernel(k) => k.rest.get("prefetch").cloned(),
        Target::Program(_) => None,
    }
}

/// Where a kernel of a file is defined: `(file, line, function)`.
pub fn kernel_location(path: &Path, devices: usize, name: Option<&str>) -> Option<(String, u32, String)> {
    let doc = read_already(path, devices)?;
    // A program: where its first kernel is defined.
    let target = choose(&doc, path, name).ok()?;
    let k = *target.kernels(&doc).first()?;
    let f = k.function.as_ref()?;
    Some((f.file.clone(), f.line, f.function.clone().unwrap_or_else(|| k.name.clone())))
}

/// The name of the kernel (or program) `name` picks, or of the one checked when `name` is
/// `None`, in the document of `path` at `devices` if it was already read (else `None`;
/// nothing runs): what names a case of a file that could not be checked.
pub fn chosen_name(path: &Path, devices: usize, name: Option<&str>) -> Option<String> {
    let doc = read_already(path, devices)?;
    choose(&doc, path, name).ok().map(|t| t.name().to_string())
}

/// Which interpreter and JAX read a kernel file at `devices` (the `frontend` of a case's
/// JSON): `{python, origin, jax, jaxlib}`; `origin` is `document` for an exported document
/// read from a file.
pub fn frontend_json(path: &Path, devices: usize) -> Option<serde_json::Value> {
    let doc = document(path, devices).ok()?;
    let producer = |key: &str| doc.producer.get(key).and_then(serde_json::Value::as_str).map(str::to_string);
    let (python, origin) = match &doc.interpreter {
        Some((python, origin)) => (Some(python.display().to_string()), serde_json::json!(origin)),
        None => (producer("python"), serde_json::json!("document")),
    };
    Some(serde_json::json!({"python": python, "origin": origin, "jax": producer("jax"), "jaxlib": producer("jaxlib")}))
}

/// What this process's export of `path` at `devices` cost: its wall-clock seconds and,
/// when the export server measured it, its peak resident memory in bytes (`None` for a
/// document read from a file, or one not exported).
pub fn export_cost(path: &Path, devices: usize) -> Option<(Option<f64>, Option<u64>)> {
    if is_document(path) {
        return None;
    }
    let key = (path.to_path_buf(), devices);
    let cache = cache().lock().unwrap_or_else(|e| e.into_inner());
    let doc = cache.get(&key)?;
    Some((doc.export_seconds, doc.export_peak_bytes))
}

/// The hash of the script a document was exported from (for trace files).
pub fn script_sha256(path: &Path, devices: usize) -> Option<String> {
    document(path, devices).ok()?.script_sha256()
}

/// The arguments a kernel file's script ran with at `devices` (those its document records).
pub fn script_args_of(path: &Path, devices: usize) -> Option<Vec<String>> {
    Some(document(path, devices).ok()?.script_args())
}

/// The TPU chip a kernel file was traced for at `devices` (`SEMCHECK_TPU`), if any.
pub fn script_tpu(path: &Path, devices: usize) -> Option<String> {
    document(path, devices).ok()?.tpu()
}
