//! The JSON document `python -m semcheck.frontend export` writes (`python/SCHEMA.md`),
//! read with every field checked: a malformed document is an error naming the field.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use semcheck_model::{ErrorKind, ModelError};

/// The format this semcheck reads.
pub const FORMAT: &str = "semcheck-kernel 1";

/// The construct of a failure of the front end's own code (a semcheck bug, not the
/// script's error): its traceback is semcheck's, shown wherever the error is.
pub const INTERNAL_ERROR: &str = "internal error";
/// The construct of the error of a script that ran to its end without calling a kernel.
pub const NO_KERNEL: &str = "no kernel";

/// A source location of the document.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct LocDoc {
    /// The file.
    pub file: String,
    /// The 1-based line.
    pub line: u32,
    /// The function.
    #[serde(default)]
    pub function: Option<String>,
    /// The line's text.
    #[serde(default)]
    pub text: Option<String>,
    /// The whole statement, lines joined.
    #[serde(default)]
    pub code: Option<String>,
    /// The user frames that called it.
    #[serde(default)]
    pub stack: Vec<LocDoc>,
}

impl LocDoc {
    /// `psum.py:57`.
    pub fn short(&self) -> String {
        format!("{}:{}", self.file.rsplit(['/', '\\']).next().unwrap_or(&self.file), self.line)
    }
}

/// An error record.
#[derive(Clone, Debug, Deserialize)]
pub struct ErrorDoc {
    /// The construct (`semaphore_read`, `script error`, ...).
    pub construct: String,
    /// What is wrong.
    pub message: String,
    /// Where.
    #[serde(default)]
    pub loc: Option<LocDoc>,
    /// The script's traceback, for script errors.
    #[serde(default)]
    pub traceback: Option<String>,
}

impl ErrorDoc {
    /// `psum.py:57: semaphore_read: ...`; an internal error with the end of semcheck's
    /// traceback.
    pub fn describe(&self) -> String {
        let what = located(self.loc.as_ref(), &format!("{}: {}", self.construct, self.message));
        if self.construct == INTERNAL_ERROR {
            format!("{what}{}", self.traceback_tail())
        } else {
            what
        }
    }

    /// The last lines of the traceback, said to be semcheck's or the script's.
    fn traceback_tail(&self) -> String {
        let Some(tb) = &self.traceback else { return String::new() };
        let whose = if self.construct == INTERNAL_ERROR { "semcheck's" } else { "the script's" };
        let tail: Vec<&str> = tb.lines().rev().take(12).collect();
        let mut msg = format!("\n  {whose} traceback ends with:\n");
        for l in tail.iter().rev() {
            msg.push_str(&format!("    {l}\n"));
        }
        msg.trim_end().to_string()
    }
}

/// `what` at a location: `psum.py:57: what (called from psum.py:80)`, then the code.
fn located(loc: Option<&LocDoc>, what: &str) -> String {
    let at = loc.map(|l| format!("{}: ", l.short())).unwrap_or_default();
    let code = loc
        .and_then(|l| l.code.as_deref().or(l.text.as_deref()))
        .filter(|c| !c.is_empty())
        .map(|c| format!("\n    {c}"))
        .unwrap_or_default();
    let via = loc.and_then(|l| l.stack.first()).map(|c| format!(" (called from {})", c.short())).unwrap_or_default();
    format!("{at}{what}{via}{code}")
}

/// JAX's refusal to build a kernel.
#[derive(Clone, Debug, Deserialize)]
pub struct RefusalDoc {
    /// JAX's message.
    pub reason: String,
    /// The statement JAX refuses, when it is one (a load or store Mosaic cannot lower).
    #[serde(default)]
    pub loc: Option<LocDoc>,
}

impl RefusalDoc {
    /// `kernel.py:12: Cannot store scalars to VMEM`, then the code; the reason alone for a
    /// refusal of the whole kernel.
    pub fn describe(&self) -> String {
        located(self.loc.as_ref(), &self.reason)
    }
}

/// One kernel of the document; the body and declarations stay JSON until imported.
#[derive(Clone, Debug, Deserialize)]
pub struct KernelDoc {
    /// The kernel's name.
    pub name: String,
    /// `ok`, `unsupported` or `refused`.
    pub status: String,
    /// The kernel function's location.
    #[serde(default)]
    pub function: Option<LocDoc>,
    /// The unsupported constructs.
    #[serde(default)]
    pub errors: Vec<ErrorDoc>,
    /// JAX's refusal.
    #[serde(default)]
    pub refusal: Option<RefusalDoc>,
    /// Whether it talks to another device (or shares HBM between TensorCores).
    #[serde(default)]
    pub communicates: bool,
    /// The script's invocations of it.
    #[serde(default)]
    pub invocations: Option<u32>,
    /// Whether the script calls it outside every program of several kernels (so it is
    /// checked alone too); `true` in a document of an older front end.
    #[serde(default = "yes")]
    pub standalone: bool,
    /// The rest: mesh, grid, entry, buffers, semaphores, body.
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

/// Two arguments of a program's kernels that hold one value: argument `to.1` of the
/// program's step `to.0` is what argument `from.1` of the earlier step `from.0` holds (a
/// semaphore it hands out, a buffer it wrote, an array passed to both).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub struct LinkDoc {
    /// `(step, argument)` of the earlier kernel.
    pub from: (usize, usize),
    /// `(step, argument)` of the later kernel.
    pub to: (usize, usize),
}

/// A program of several kernels (`programs` of `python/SCHEMA.md`): kernels of one run of
/// the script that hand semaphores, and so DMAs in flight, from one to the next.
#[derive(Clone, Debug, Deserialize)]
pub struct ProgramDoc {
    /// Its name (the jitted functions that run it, `permute`, `begin+finish`).
    pub name: String,
    /// Its kernels, as indices into the document's `kernels`, in the order every device
    /// runs them (a kernel may run several times).
    pub kernels: Vec<usize>,
    /// The arguments that hold one value.
    #[serde(default)]
    pub links: Vec<LinkDoc>,
    /// The script's call of (the first of) its jitted functions.
    #[serde(default)]
    pub call: Option<LocDoc>,
    /// How many times the script ran it.
    #[serde(default)]
    pub invocations: Option<u32>,
    /// Why it cannot be checked (a semaphore it hands out reaches kernels whose runs are
    /// not static), or `None`.
    #[serde(default)]
    pub unsupported: Option<String>,
}

fn yes() -> bool {
    true
}

/// A document.
#[derive(Clone, Debug, Deserialize)]
pub struct Document {
    /// `semcheck-kernel 1`.
    pub format: String,
    /// The device count JAX saw.
    pub devices: usize,
    /// What wrote it (`producer` of `python/SCHEMA.md`).
    #[serde(default)]
    pub producer: Value,
    /// The script record.
    #[serde(default)]
    pub script: Value,
    /// The kernels.
    #[serde(default)]
    pub kernels: Vec<KernelDoc>,
    /// The programs of several kernels (none in a document of an older front end).
    #[serde(default)]
    pub programs: Vec<ProgramDoc>,
    /// Top-level errors.
    #[serde(default)]
    pub errors: Vec<ErrorDoc>,
    /// Warnings.
    #[serde(default)]
    pub warnings: Vec<Value>,
    /// The hash of every file a location names.
    #[serde(default)]
    pub files: BTreeMap<String, Option<String>>,
    /// The interpreter this process ran the export in, and why that one (`None` for a
    /// document read from a file).
    #[serde(skip)]
    pub interpreter: Option<(std::path::PathBuf, super::interpreter::Origin)>,
    /// The wall-clock seconds the export took (`None` for a document read from a file).
    #[serde(skip)]
    pub export_seconds: Option<f64>,
    /// The export's peak resident memory in bytes, when measured (the export server's).
    #[serde(skip)]
    pub export_peak_bytes: Option<u64>,
}

impl Document {
    /// Parses a document, checking its format tag.
    pub fn parse(text: &str, what: &str) -> Result<Document, ModelError> {
        let bad = |m: String| ModelError::new(ErrorKind::BadDeclaration, format!("{what}: {m}"));
        // The format first (a document of another format may not have this one's shape),
        // then the document, read straight from the text (through a `Value` it takes
        // several times as long: 2 MB for the fused reduce-scatter GMM at N = 8).
        #[derive(Deserialize)]
        struct Head {
            format: Option<Value>,
        }
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let head = serde_json::from_str::<Head>(text).ok().and_then(|h| h.format);
        match head.as_ref().and_then(Value::as_str) {
            Some(FORMAT) => {}
            Some(f) => return Err(bad(format!("format `{f}`, this semcheck reads `{FORMAT}`"))),
            None => return Err(bad(format!("no `format` key: not a document of `{FORMAT}`"))),
        }
        let doc: Document = serde_json::from_str(text).map_err(|e| bad(format!("malformed document: {e}")))?;
        for p in &doc.programs {
            if let Some(k) = p.kernels.iter().find(|&&k| k >= doc.kernels.len()) {
                return Err(bad(format!(
                    "malformed document: program {} names kernel {k}, which is not there",
                    p.name
                )));
            }
            for l in &p.links {
                if l.from.0 >= l.to.0 || l.to.0 >= p.kernels.len() {
                    return Err(bad(format!(
                        "malformed document: program {} links step {} to step {} (a link runs from an earlier step to a later one of its {} kernels)",
                        p.name,
                        l.from.0,
                        l.to.0,
                        p.kernels.len()
                    )));
                }
            }
        }
        Ok(doc)
    }

    /// The TPU chip the script was traced for (`SEMCHECK_TPU`), if any.
    pub fn tpu(&self) -> Option<String> {
        self.producer.get("tpu").and_then(Value::as_str).map(str::to_string)
    }

    /// The hash of the script when it was exported.
    pub fn script_sha256(&self) -> Option<String> {
        self.script.get("sha256").and_then(Value::as_str).map(str::to_string)
    }

    /// The arguments the script ran with (`sys.argv[1:]`).
    pub fn script_args(&self) -> Vec<String> {
        let args = self.script.get("argv").and_then(Value::as_array);
        args.map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
    }

    /// The script's path.
    pub fn script_file(&self) -> Option<String> {
        self.script.get("file").and_then(Value::as_str).map(str::to_string)
    }

    /// Whether the script ran to its end, without an error, and called no kernel (a
    /// helper module, or one that only defines kernels).
    pub fn calls_no_kernel(&self) -> bool {
        self.kernels.is_empty()
            && self.programs.is_empty()
            && !self.errors.is_empty()
            && self.errors.iter().all(|e| e.construct == NO_KERNEL)
    }

    /// The first top-level error as a model error (exit 2).
    pub fn check_errors(&self, what: &str) -> Result<(), ModelError> {
        let Some(e) = self.errors.first() else { return Ok(()) };
        let mut msg = format!("{what}: {}", e.describe());
        if e.construct != INTERNAL_ERROR {
            msg.push_str(&e.traceback_tail());
        }
        Err(ModelError::new(ErrorKind::Unsupported, msg.trim_end().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(construct: &str) -> ErrorDoc {
        ErrorDoc {
            construct: construct.to_string(),
            message: "what went wrong".to_string(),
            loc: Some(LocDoc { file: "/k/psum.py".to_string(), line: 57, ..LocDoc::default() }),
            traceback: Some(
                "Traceback (most recent call last):\n  File \"walker.py\", line 1\nZeroDivisionError".to_string(),
            ),
        }
    }

    #[test]
    fn an_internal_error_shows_semcheck_s_traceback_wherever_it_is() {
        let d = error(INTERNAL_ERROR).describe();
        assert!(d.starts_with("psum.py:57: internal error: what went wrong"), "{d}");
        assert!(d.contains("semcheck's traceback ends with:") && d.ends_with("ZeroDivisionError"), "{d}");
        let doc = Document {
            format: FORMAT.to_string(),
            devices: 2,
            producer: Value::Null,
            script: Value::Null,
            kernels: vec![],
            programs: vec![],
            errors: vec![error(INTERNAL_ERROR)],
            warnings: vec![],
            files: BTreeMap::new(),
            interpreter: None,
            export_seconds: None,
            export_peak_bytes: None,
        };
        let msg = doc.check_errors("k.py").unwrap_err().to_string();
        assert_eq!(msg.matches("traceback ends with").count(), 1, "{msg}");
    }

    #[test]
    fn a_script_error_shows_the_script_s_traceback_at_the_top_level_only() {
        let e = error("script error");
        assert!(!e.describe().contains("traceback"));
        let doc = Document {
            format: FORMAT.to_string(),
            devices: 2,
            producer: Value::Null,
            script: Value::Null,
            kernels: vec![],
            programs: vec![],
            errors: vec![e],
            warnings: vec![],
            files: BTreeMap::new(),
            interpreter: None,
            export_seconds: None,
            export_peak_bytes: None,
        };
        let msg = doc.check_errors("k.py").unwrap_err().to_string();
        assert!(msg.contains("the script's traceback ends with:"), "{msg}");
    }

    #[test]
    fn a_program_naming_a_missing_kernel_or_linking_backwards_is_malformed() {
        let doc = |programs: &str| {
            format!(
                r#"{{"format": "{FORMAT}", "devices": 2, "kernels": [{{"name": "a", "status": "ok"}}, {{"name": "b", "status": "ok"}}], "programs": [{programs}]}}"#
            )
        };
        let ok = doc(r#"{"name": "p", "kernels": [0, 1], "links": [{"from": [0, 3], "to": [1, 1]}]}"#);
        let parsed = Document::parse(&ok, "d.json").unwrap();
        assert_eq!(parsed.programs[0].links, vec![LinkDoc { from: (0, 3), to: (1, 1) }]);
        assert!(parsed.kernels.iter().all(|k| k.standalone), "absent: checked alone too");
        let missing = Document::parse(&doc(r#"{"name": "p", "kernels": [0, 2]}"#), "d.json").unwrap_err().to_string();
        assert!(missing.contains("program p names kernel 2, which is not there"), "{missing}");
        let backwards = doc(r#"{"name": "p", "kernels": [0, 1], "links": [{"from": [1, 0], "to": [0, 1]}]}"#);
        let e = Document::parse(&backwards, "d.json").unwrap_err().to_string();
        assert!(e.contains("links step 1 to step 0"), "{e}");
    }
}
