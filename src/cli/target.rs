//! From the command line's target (a protocol name or a kernel file), mutant, mesh sizes,
//! repeat count and assumptions to the [`Case`]s a command checks.

use super::usage;
use std::ops::RangeInclusive;
use std::path::PathBuf;

use semcheck::{Case, ErrorKind, ModelError, Source};

use super::args::CaseArgs;
use super::watch::{watch, Style};

/// What a kernel file's case does before its script runs, as a budget's stop report says it.
const PREPARING: &str =
    "preparing the Python front end (choosing its interpreter, and on first use making its environment)";

/// The mesh sizes of `--devices`: one size, a range `2-6` or a list `2,3,4`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Devices(pub(crate) Vec<usize>);

/// The largest mesh size accepted on the command line (the model's own limit).
const MAX_DEVICES: usize = semcheck::model::mesh::MAX_DEVICES;

/// Parses `--devices`.
pub(crate) fn parse_devices(s: &str) -> Result<Devices, String> {
    parse_size_list(s, 1..=MAX_DEVICES, "a number of devices").map(Devices)
}

/// Parses a list of sizes, in the order given: one size `N`, a range `A-B`, `A..B` or
/// `A..=B` (both ends included), or a list `A,B,C`; each within `bounds`, `what` naming
/// one in messages (`a ring size`).
pub(crate) fn parse_size_list(s: &str, bounds: RangeInclusive<usize>, what: &str) -> Result<Vec<usize>, String> {
    let one = |t: &str| -> Result<usize, String> {
        let t = t.trim();
        match t.parse() {
            Ok(n) if bounds.contains(&n) => Ok(n),
            _ => Err(format!("`{t}` is not {what} in {}..={}", bounds.start(), bounds.end())),
        }
    };
    match s.split_once("..").or_else(|| s.split_once('-')) {
        Some((a, b)) => {
            let (a, b) = (one(a)?, one(b.trim_start_matches('='))?);
            if a > b {
                return Err(format!("`{s}`: the range is empty ({a} > {b})"));
            }
            Ok((a..=b).collect())
        }
        None => {
            let mut v = s.split(',').map(one).collect::<Result<Vec<_>, _>>()?;
            v.dedup();
            Ok(v)
        }
    }
}

/// Whether the target names a kernel file (a script, or an exported `.json` document)
/// rather than a catalogue protocol.
pub(crate) fn is_file(target: &str) -> bool {
    target.ends_with(".py") || target.ends_with(".json") || target.contains('/') || target.contains('\\')
}

/// One case of a command, or why the case it stands for (the whole file at that size,
/// when its script fails there) could not be made.
pub(crate) type CaseResult = Result<Case, (Case, ModelError)>;

impl CaseArgs {
    /// The mesh sizes asked for, or `default` when `--devices` is absent (for an exported
    /// document: the device count it was exported for).
    pub(crate) fn sizes(&self, default: usize) -> Result<Vec<usize>, ModelError> {
        if let Some(d) = &self.devices {
            return Ok(d.0.clone());
        }
        let path = std::path::Path::new(&self.target);
        if is_file(&self.target) && semcheck::frontend::is_document(path) {
            return Ok(vec![semcheck::frontend::read_document(path)?.devices]);
        }
        Ok(vec![default])
    }

    /// The cases these arguments name, one per mesh size; `default_devices` applies when
    /// `--devices` is absent. Listing a kernel file's kernels runs its script, under the
    /// command's budgets and Ctrl-C (a partial report in `report`'s style if they end it).
    /// The first error, of the arguments or of any size, is the result.
    pub(crate) fn cases(&self, default_devices: usize, report: Style) -> Result<Vec<Case>, ModelError> {
        self.each_case(default_devices, report, false)?.into_iter().map(|c| c.map_err(|(_, e)| e)).collect()
    }

    /// [`CaseArgs::cases`], keeping going past a size whose kernel file cannot be read
    /// there (a script that fails at that N): its entry is the error, with the case it
    /// stands for. With `stoppable`, the budgets and Ctrl-C stop one size's export alone
    /// (its entry an error of kind `Stopped` saying how far it got) instead of ending the
    /// command. An error of the arguments themselves is the result.
    pub(crate) fn each_case(
        &self,
        default_devices: usize,
        report: Style,
        stoppable: bool,
    ) -> Result<Vec<CaseResult>, ModelError> {
        let source = if is_file(&self.target) {
            if self.mutant.is_some() {
                return Err(usage("--mutant names a catalogue mutant; a kernel file is checked as written"));
            }
            if let Some(e) = &self.expect {
                semcheck::frontend::spec::known_reference(e).map_err(|m| usage(format!("--expect {e}: {m}")))?;
            }
            if self.interpret_values {
                semcheck::frontend::interpret_values();
            }
            Source::Python {
                path: PathBuf::from(&self.target),
                kernel: self.kernel.clone(),
                expect: self.expect.clone(),
            }
        } else {
            if self.interpret_values {
                return Err(usage(
                    "--interpret-values runs a kernel file's script; a catalogue protocol has no values to record",
                ));
            }
            if self.kernel.is_some() {
                return Err(usage("--kernel picks a kernel of a Python file; a catalogue protocol has one kernel"));
            }
            if self.expect.is_some() {
                return Err(usage("--expect names the reference of a kernel file; a catalogue protocol has its own"));
            }
            // A folder is not a protocol: its kernel files are named one by one.
            let folder = std::path::Path::new(&self.target);
            if semcheck::protocols::find(&self.target).is_err() && folder.is_dir() {
                return Err(usage(semcheck::frontend::not_a_kernel_file(folder)));
            }
            Source::catalogue(&self.target, self.mutant.as_deref())
        };
        let semantics = self.semantics.semantics();
        let mut cases = Vec::new();
        let sizes = self.sizes(default_devices)?;
        if let Source::Python { path, .. } = &source {
            // Every size's export starts now, on the export server's cores (after the
            // interpreter is chosen and, on first use, the managed environment made: under
            // the budgets, and a stop meanwhile is reported under the file's name, in the
            // command's format).
            let w = watch();
            w.case(&path.display().to_string(), report);
            w.doing(PREPARING, false);
            semcheck::frontend::prefetch(path, &sizes);
            w.idle();
        }
        for n in sizes {
            let case = match &source {
                Source::Catalogue { protocol, mutant } => semcheck::catalogue_case(protocol, mutant.as_deref(), n)?,
                Source::Python { path, kernel: None, expect } => {
                    // One case per communicating kernel of the file (at this mesh size).
                    let w = watch();
                    w.case(&format!("{} N={n}", path.display()), report);
                    // With `stoppable`, a budget or Ctrl-C stops this size's export alone:
                    // the error says how far it got, and the other sizes (and files) are
                    // still checked. Else the watchdog ends the command.
                    let doc = if stoppable {
                        export_unless_stopped(path, n)
                    } else {
                        w.doing(EXPORTING, false);
                        semcheck::frontend::document(path, n)
                    };
                    w.idle();
                    let doc = match doc {
                        Ok(doc) => doc,
                        Err(e) => {
                            cases.push(Err((Case::new(source.clone(), n), e)));
                            continue;
                        }
                    };
                    let names: Vec<String> = semcheck::frontend::default_kernels(&doc);
                    if names.len() > 1 {
                        for name in names {
                            let src = Source::Python { path: path.clone(), kernel: Some(name), expect: expect.clone() };
                            cases.push(Ok(Case::new(src, n).repeat(self.repeat.unwrap_or(1)).semantics(semantics)));
                        }
                        continue;
                    }
                    Case::new(source.clone(), n)
                }
                other => Case::new(other.clone(), n),
            };
            let repeat = self.repeat.unwrap_or(case.repeat);
            cases.push(Ok(case.repeat(repeat).semantics(semantics)));
        }
        Ok(cases)
    }
}

/// What the watch says while a kernel file's script runs.
const EXPORTING: &str = "running the script to export its kernels";

/// The document of kernel file `path` at `devices` devices, its export stopped by the
/// current case's budget or Ctrl-C: then an error of kind `Stopped` saying how far it got
/// (the memory budget ends the command, as the watchdog does).
pub(crate) fn export_unless_stopped(
    path: &std::path::Path,
    devices: usize,
) -> Result<std::sync::Arc<semcheck::frontend::document::Document>, ModelError> {
    let w = watch();
    w.doing_export(EXPORTING);
    semcheck::frontend::document_unless(path, devices, &|| w.stop_requested()).map_err(|e| match e.kind() {
        ErrorKind::Stopped => ModelError::new(ErrorKind::Stopped, w.stopped_detail()),
        _ => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_take_a_size_a_range_or_a_list() {
        assert_eq!(parse_devices("3"), Ok(Devices(vec![3])));
        assert_eq!(parse_devices("2-5"), Ok(Devices(vec![2, 3, 4, 5])));
        assert_eq!(parse_devices("2,3,8"), Ok(Devices(vec![2, 3, 8])));
        assert!(parse_devices("5-2").is_err());
        assert!(parse_devices("0").is_err());
        assert!(parse_devices("two").is_err());
        assert!(parse_devices("4097").is_err());
    }
}
