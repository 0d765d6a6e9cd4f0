//! # semcheck
//!
//! A model checker for the semaphore and remote-DMA protocols that TPU collective kernels
//! (Pallas) are built from. semcheck takes a protocol, explores every interleaving of
//! devices and DMA completions, and either **proves** it correct for a mesh size or
//! returns the **shortest schedule that breaks it**.
//!
//! This crate is a thin façade over the workspace:
//!
//! * [`model`]: the semantics (mesh, kernel IR, DSL, symbolic values, step function, the
//!   [`Case`] a check is about);
//! * [`protocols`]: the seed collectives and their mutants;
//! * [`checker`]: the engines (the exhaustive explorer, the threaded runtime) and
//!   counterexamples.
//!
//! `checker` and `protocols` both sit on `model` only; this crate joins them: [`program`]
//! turns a [`Case`] into the compiled [`model::Program`] every engine interprets.
//!
//! Checking from your own `cargo test`:
//!
//! ```
//! use semcheck::{Case, Source, Verdict};
//!
//! let case = semcheck::catalogue_case("all_gather", Some("shared-recv-sem"), 3).unwrap();
//! let outcome = semcheck::check(&case).unwrap();
//! let Verdict::Violation(cex) = &outcome.verdict else { panic!("expected a violation") };
//! println!("{}", cex.violation);
//! let program = semcheck::program(&case).unwrap();
//! let found = semcheck::checker::counterexample::counterexample(&program, cex, true).unwrap();
//! for name in &found.run.names {
//!     println!("  {name}");
//! }
//! # let _ = Source::catalogue("psum", None);
//! ```

pub mod assumptions;
pub mod children;
pub mod cleanup;
pub mod corpus;
pub mod coverage;
pub mod frontend;
pub mod memory;
pub mod mutate;
pub mod sizes;

pub use semcheck_checker as checker;
pub use semcheck_model as model;
pub use semcheck_protocols as protocols;

use semcheck_checker::counterexample::{TraceError, TraceErrorKind, TraceFile};

pub use semcheck_checker::{explore, Config, Outcome, Verdict};
pub use semcheck_model::{Case, ErrorKind, ModelError, Program, Rule, Semantics, Source};

/// A catalogue case on `devices` devices, with the repeat count its mutant needs to
/// manifest (`single-barrier` runs twice) and the default assumptions.
pub fn catalogue_case(protocol: &str, mutant: Option<&str>, devices: usize) -> Result<Case, ModelError> {
    let p = semcheck_protocols::find(protocol)?;
    let m = p.variant(mutant)?;
    p.mesh(devices)?;
    Ok(Case::new(Source::catalogue(protocol, mutant), devices).repeat(semcheck_protocols::Protocol::default_repeat(m)))
}

/// The compiled program of a case, under the case's assumptions.
pub fn program(case: &Case) -> Result<Program, ModelError> {
    let program = match &case.source {
        Source::Catalogue { protocol, mutant } => {
            let p = semcheck_protocols::find(protocol)?;
            let m = p.variant(mutant.as_deref())?;
            p.program(case.devices, m, case.repeat)?
        }
        Source::Python { path, kernel, expect } => {
            frontend::program(path, kernel.as_deref(), expect.as_deref(), case.devices, case.repeat)?
        }
        Source::Dsl { name } => {
            return Err(ModelError::new(
                ErrorKind::UnknownName,
                format!("the DSL kernel `{name}` lives in its caller's code: compile it there (model::compile)"),
            ))
        }
    };
    program.with_semantics(case.semantics)
}

/// The compiled program of a catalogue protocol (or mutant) on `devices` devices, with
/// `repeat` invocations and the default assumptions: shorthand for [`catalogue_case`] and
/// [`program`].
pub fn catalogue_program(
    protocol: &str,
    mutant: Option<&str>,
    devices: usize,
    repeat: u32,
) -> Result<Program, ModelError> {
    program(&catalogue_case(protocol, mutant, devices)?.repeat(repeat))
}

/// The program a trace file is about, with an error that names the header line at fault
/// (the protocol or file, the mutant, the device count). For a trace of a kernel file this
/// runs the script the trace names, as it names it: `semcheck replay` first checks that it
/// may (the trace's folder, its hash; `docs/safety.md`).
pub fn trace_program(file: &TraceFile) -> Result<Program, TraceError> {
    check_trace_names(file)?;
    let lines = &file.header_lines;
    let at = |line: usize, e: ModelError| TraceError::new(TraceErrorKind::Model, Some(line), e.to_string());
    let case = &file.header.case;
    if let Source::Catalogue { protocol, mutant } = &case.source {
        let p = semcheck_protocols::find(protocol).map_err(|e| at(lines.source, e))?;
        p.variant(mutant.as_deref()).map_err(|e| at(lines.variant, e))?;
        p.mesh(case.devices).map_err(|e| at(lines.devices, e))?;
    }
    program(case).map_err(|e| match e.to_string().strip_prefix("--expect ") {
        // The reference does not fit the kernel (found once the script ran): the trace's
        // `kernel-expect` line, in the trace's words.
        Some(rest) if lines.expect > 0 => {
            TraceError::new(TraceErrorKind::Model, Some(lines.expect), format!("kernel-expect {rest}"))
        }
        _ => at(lines.source, e),
    })
}

/// Checks what a trace names by a name that can be checked without running anything: its
/// `kernel-expect` must be a reference semcheck knows
/// ([`frontend::spec::known_reference`]). `semcheck replay` calls it before it runs a kernel
/// file's script, and [`trace_program`] before it makes the program; the error names the
/// line.
pub fn check_trace_names(file: &TraceFile) -> Result<(), TraceError> {
    if let Source::Python { expect: Some(e), .. } = &file.header.case.source {
        frontend::spec::known_reference(e).map_err(|m| {
            TraceError::new(TraceErrorKind::Model, Some(file.header_lines.expect), format!("kernel-expect {e}: {m}"))
        })?;
    }
    Ok(())
}

/// The hash of a Python case's kernel file as it is now (`None` for other sources).
pub fn source_sha256(case: &Case) -> Option<String> {
    match &case.source {
        Source::Python { path, .. } => frontend::script_sha256(path, case.devices),
        _ => None,
    }
}

/// The TPU chip a Python case's kernel file is traced for (`SEMCHECK_TPU`; `None` for
/// other sources and when unset).
pub fn source_tpu(case: &Case) -> Option<String> {
    match &case.source {
        Source::Python { path, .. } => frontend::script_tpu(path, case.devices),
        _ => None,
    }
}

/// A sentence saying that the kernel file of a trace changed since the trace was written
/// (its hash differs), or `None` when it did not or the trace is not about a file.
pub fn source_changed(file: &TraceFile) -> Option<String> {
    let recorded = file.header.source_sha256.as_ref()?;
    let Source::Python { path, .. } = &file.header.case.source else { return None };
    match source_sha256(&file.header.case) {
        Some(now) if &now == recorded => None,
        Some(now) => Some(format!(
            "{} changed since this trace was written (sha256 {} then, {} now): events that name its lines may no longer replay",
            path.display(),
            &recorded[..recorded.len().min(12)],
            &now[..now.len().min(12)]
        )),
        None => Some(format!("{} cannot be read again to compare it with the trace", path.display())),
    }
}

/// Checks a case with the exhaustive explorer's default configuration (BFS,
/// partial-order reduction, no budget).
pub fn check(case: &Case) -> Result<Outcome, ModelError> {
    Ok(explore(&program(case)?, &Config::default()))
}
