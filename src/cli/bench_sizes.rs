//! `semcheck bench --sizes 8,16,64,256`: the window method (`check --sizes`) against exact
//! exploration, per ring catalogue case and size. Each measurement runs in its own
//! `semcheck check` process, so its time includes compiling the kernel at that size and
//! its peak memory is its own.

use std::path::Path;
use std::process::Command;

use semcheck::protocols::{catalogue, MeshKind, Protocol};
use semcheck::{ErrorKind, ModelError};
use serde_json::{json, Value};

use super::args::BenchArgs;
use super::{emitln, EXIT_PROVED};

/// The ring cases measured: every catalogue variant at its repeat count, and the correct
/// kernel also at the repeat count of its mutants that need more than one invocation
/// (`guarded_shift --repeat 2` is the double barrier the single-barrier mutant breaks).
fn cases(only: Option<&str>) -> Vec<(&'static str, Option<&'static str>, u32)> {
    let mut out = Vec::new();
    for p in catalogue().iter().filter(|p| p.mesh_kind == MeshKind::Ring) {
        if only.is_some_and(|name| name != p.name) {
            continue;
        }
        out.push((p.name, None, Protocol::default_repeat(None)));
        let mut repeats: Vec<u32> = p.mutants.iter().map(|m| Protocol::default_repeat(Some(m))).collect();
        repeats.sort_unstable();
        repeats.dedup();
        for r in repeats.into_iter().filter(|&r| r != Protocol::default_repeat(None)) {
            out.push((p.name, None, r));
        }
        for m in p.mutants {
            out.push((p.name, Some(m.name), Protocol::default_repeat(Some(m))));
        }
    }
    out
}

fn run_json(exe: &Path, args: &[String]) -> Result<Value, ModelError> {
    let out = semcheck::children::semcheck_output(Command::new(exe).args(args))
        .map_err(|e| ModelError::new(ErrorKind::UnknownName, format!("cannot run a case: {e}")))?;
    serde_json::from_slice(&out.stdout).map(super::output::only_case).map_err(|e| {
        ModelError::new(
            ErrorKind::UnknownName,
            format!("`semcheck {}` printed no report ({e}): {}", args.join(" "), String::from_utf8_lossy(&out.stderr)),
        )
    })
}

fn mib(v: &Value) -> String {
    v["peak_rss_bytes"].as_u64().map_or("?".to_string(), |b| format!("{:.0}", b as f64 / 1048576.0))
}

pub(crate) fn run(args: &BenchArgs, sizes: &[usize], exe: &Path) -> Result<i32, ModelError> {
    let table = !args.json;
    if table {
        emitln!(
            "{:<32} {:>3} | {:<10} {:>9} {:>7} | {:<10} {:>2} {:>3} {:>9} {:>8} {:>7} {:>5}   (exact budget {} s)",
            "case",
            "N",
            "exact",
            "states",
            "seconds",
            "window",
            "K",
            "cls",
            "w-states",
            "run-ev",
            "seconds",
            "MiB",
            args.max_seconds
        );
    }
    let mut rows = Vec::new();
    for (protocol, mutant, repeat) in cases(args.protocol.as_deref()) {
        let label = format!("{protocol}{} r{repeat}", mutant.map_or(String::new(), |m| format!("/{m}")));
        let mut base = vec![protocol.to_string(), "--repeat".into(), repeat.to_string(), "--json".into()];
        if let Some(m) = mutant {
            base.extend(["--mutant".into(), m.to_string()]);
        }
        let mut exact_cheap = true;
        for &n in sizes {
            let exact = if exact_cheap {
                let mut a = vec!["check".to_string()];
                a.extend(base.iter().cloned());
                a.extend(["--devices".into(), n.to_string(), "--max-seconds".into(), args.max_seconds.to_string()]);
                let v = run_json(exe, &a)?;
                exact_cheap = v["verdict"] != "incomplete";
                Some(v)
            } else {
                None
            };
            let mut a = vec!["check".to_string()];
            a.extend(base.iter().cloned());
            a.extend(["--sizes".into(), n.to_string(), "--exact-max-states".into(), "0".into()]);
            let w = run_json(exe, &a)?;
            let size = &w["report"]["sizes"][0];
            if table {
                let (ev, es, et) = match &exact {
                    Some(v) => (
                        v["verdict"].as_str().unwrap_or("?").to_string(),
                        v["states"].as_u64().unwrap_or(0).to_string(),
                        format!("{:.2}", v["seconds"].as_f64().unwrap_or(f64::NAN)),
                    ),
                    None => ("-".to_string(), "-".to_string(), "-".to_string()),
                };
                let opt = |k: &str| size[k].as_u64().map_or("-".to_string(), |x| x.to_string());
                emitln!(
                    "{:<32} {:>3} | {:<10} {:>9} {:>7} | {:<10} {:>2} {:>3} {:>9} {:>8} {:>7.2} {:>5}",
                    label,
                    n,
                    ev,
                    es,
                    et,
                    size["verdict"].as_str().unwrap_or("?"),
                    opt("radius"),
                    opt("classes"),
                    size["window_stats"]["states"].as_u64().map_or("-".to_string(), |x| x.to_string()),
                    opt("run_events"),
                    size["seconds"].as_f64().unwrap_or(f64::NAN),
                    mib(&w)
                );
            }
            rows.push(json!({
                "protocol": protocol,
                "mutant": mutant,
                "repeat": repeat,
                "devices": n,
                "exact": exact,
                "window": size,
                "window_peak_rss_bytes": w["peak_rss_bytes"],
            }));
        }
    }
    if args.json {
        super::output::emit_document(&super::output::document("bench", json!({"rows": rows})));
    }
    Ok(EXIT_PROVED)
}
