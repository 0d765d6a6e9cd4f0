//! `semcheck doctor`: which Python interpreter and JAX will read kernel files, and why;
//! where semcheck keeps its cache. It only asks interpreters what they have: it creates
//! no environment and runs no kernel.

use clap::Args;
use semcheck::frontend::env::{self, Chosen};
use semcheck::frontend::interpreter::{self, Origin};
use semcheck::ModelError;
use serde_json::{json, Value};

use super::output::{document, emit_document};
use super::{emitln, EXIT_PROVED, EXIT_USAGE};

/// Arguments of `semcheck doctor`.
#[derive(Args, Debug)]
pub(crate) struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &DoctorArgs) -> Result<i32, ModelError> {
    let plan = env::plan();
    let cache = env::cache_dir();
    let managed = cache.as_ref().ok().map(|c| env::managed_dir(c));
    let managed_ready = managed.as_ref().is_some_and(|d| d.join(".complete").is_file());
    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "semcheck".into());
    // The managed environment, when it is the one and does not exist yet: the Python that
    // would create it, or why none can.
    let bootstrap = (matches!(plan.chosen, Chosen::Managed) && !managed_ready).then(env::bootstrap_python);
    let cannot_create = matches!(bootstrap, Some(Err(_)));
    let code = if matches!(plan.chosen, Chosen::Refused(_)) || cannot_create { EXIT_USAGE } else { EXIT_PROVED };
    if args.json {
        let interpreters: Vec<Value> = plan
            .considered
            .iter()
            .map(|(c, why)| {
                json!({
                    "origin": c.origin,
                    "python": c.python.display().to_string(),
                    "probe": c.probe.as_ref().ok(),
                    "usable": why.is_none(),
                    "why": why,
                })
            })
            .chain(matches!(plan.chosen, Chosen::Managed).then(|| {
                json!({
                    "origin": Origin::Managed,
                    "python": managed.as_ref().map(|d| d.join("bin").join("python").display().to_string()),
                    "usable": true,
                    "why": Value::Null,
                    "exists": managed_ready,
                    "jax": env::MANAGED_JAX,
                    "created_with": bootstrap.as_ref().and_then(|b| b.as_ref().ok()).map(|p| p.display().to_string()),
                })
            }))
            .collect();
        let chosen = match &plan.chosen {
            Chosen::Interpreter(c) => json!({"origin": c.origin, "python": c.python.display().to_string()}),
            Chosen::Managed => json!({
                "origin": Origin::Managed,
                "python": managed.as_ref().map(|d| d.join("bin").join("python").display().to_string()),
            }),
            Chosen::Refused(_) => Value::Null,
        };
        emit_document(&document(
            "doctor",
            json!({
                "exit_code": code,
                "binary": exe,
                "cache_dir": cache.as_ref().ok().map(|c| c.display().to_string()),
                "supported_jax": interpreter::supported_range(),
                "interpreters": interpreters,
                "chosen": chosen,
                "error": match (&plan.chosen, &bootstrap) {
                    (Chosen::Refused(why), _) | (_, Some(Err(why))) => json!({"message": why}),
                    _ => Value::Null,
                },
            }),
        ));
        return Ok(code);
    }
    emitln!("semcheck {} ({exe})", env!("CARGO_PKG_VERSION"));
    match &cache {
        Ok(c) => emitln!("cache: {}", c.display()),
        Err(e) => emitln!("cache: none: {e}"),
    }
    emitln!("supported JAX: {}", interpreter::supported_range());
    emitln!("interpreters considered for reading kernel files, in order:");
    for (i, (c, why)) in plan.considered.iter().enumerate() {
        emitln!("  {}. {}: {}", i + 1, c.origin.describe(), c.python.display());
        emitln!("     {}", c.summary());
        match why {
            None => emitln!("     usable"),
            // SEMCHECK_PYTHON is the only one considered: an error, not a step to the next.
            Some(why) if c.origin == Origin::Explicit => emitln!("     cannot be used: {why}"),
            Some(why) => emitln!("     passed over: {why}"),
        }
    }
    match interpreter::explicit() {
        None if plan.considered.is_empty() => emitln!(
            "  (none: SEMCHECK_PYTHON is not set, no Python program started semcheck, and no interpreter is next to this binary)"
        ),
        Some(None) => emitln!("  (none: SEMCHECK_PYTHON=managed asks for semcheck's managed environment)"),
        _ => {}
    }
    match &plan.chosen {
        Chosen::Interpreter(c) => {
            emitln!("kernel files will be read with {}: {}", c.origin.describe(), c.python.display());
            emitln!("  {}", c.summary());
        }
        Chosen::Managed => {
            let dir = managed.as_ref().map_or("?".to_string(), |d| d.display().to_string());
            emitln!("kernel files will be read with semcheck's managed environment: {dir}");
            if managed_ready {
                emitln!("  it exists (jax {})", env::MANAGED_JAX);
            } else if let Some(Err(why)) = &bootstrap {
                emitln!("  it does not exist yet, and cannot be created: {why}");
            } else {
                emitln!(
                    "  it does not exist yet: the first check of a kernel file creates it (jax {}, about 30 s and 650 MB; needs the package registry once)",
                    env::MANAGED_JAX
                );
                if let Some(Ok(python)) = &bootstrap {
                    emitln!("  with {}", python.display());
                }
            }
        }
        Chosen::Refused(why) => emitln!("kernel files cannot be read: {why}"),
    }
    Ok(code)
}
