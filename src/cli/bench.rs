//! `semcheck bench`: the performance table. Each case runs in its own `semcheck check`
//! process, so the peak memory reported is that case's own peak resident set size. Each
//! row after a protocol's first shows the growth factor of the states (and of the
//! seconds) from the previous ring size.

use std::process::Command;

use semcheck::protocols::{catalogue, MeshKind};
use semcheck::ModelError;
use serde_json::{json, Value};

use super::args::{BenchArgs, SymmetryArg};
use super::{emitln, EXIT_PROVED};

fn error(message: String) -> ModelError {
    ModelError::new(semcheck::model::ErrorKind::UnknownName, message)
}

/// `states(N) / states(N-1)` as `x3.52`, when both ran to the end.
fn growth(now: &Value, before: Option<&Value>, key: &str) -> Option<f64> {
    let before = before?;
    if before["devices"].as_u64()? + 1 != now["devices"].as_u64()? || before["verdict"] != "proved" {
        return None;
    }
    let (a, b) = (before[key].as_f64()?, now[key].as_f64()?);
    (a > 0.0).then(|| b / a)
}

pub(crate) fn run(args: &BenchArgs) -> Result<i32, ModelError> {
    let exe = std::env::current_exe().map_err(|e| error(format!("cannot find the semcheck binary: {e}")))?;
    if let Some(name) = &args.protocol {
        semcheck::protocols::find(name)?;
    }
    if args.mutate {
        return super::mutate::bench(args, &exe);
    }
    let reduction = if args.no_reduction { "none" } else { "por" };
    let symmetry = match args.symmetry {
        Some(SymmetryArg::Off) => "off",
        _ => "auto",
    };
    let threads = args.threads.map_or("auto".to_string(), |t| t.to_string());
    let memory = args.max_memory_mib.unwrap_or(super::args::DEFAULT_MEMORY_MIB);
    let table = !args.json;
    if table {
        emitln!(
            "(reduction: {reduction}, symmetry: {symmetry}, threads: {threads}; budget {} s and {memory} MiB per case; \
             growth: states and seconds over the row N-1)",
            args.max_seconds
        );
        emitln!(
            "{:<18} {:>3} {:<11} {:>11} {:>11} {:>9} {:>9} {:>8} {:>8}",
            "protocol",
            "N",
            "verdict",
            "states",
            "transitions",
            "seconds",
            "peak MiB",
            "growth",
            "(time)"
        );
    }
    let mut rows: Vec<Value> = Vec::new();
    for p in catalogue() {
        if args.protocol.as_deref().is_some_and(|name| name != p.name) {
            continue;
        }
        let sizes: Vec<u16> = match p.mesh_kind {
            MeshKind::Ring => (args.min_devices..=args.max_devices).collect(),
            MeshKind::TensorCores => vec![2],
        };
        let mut previous: Option<Value> = None;
        for n in sizes {
            let mut command = Command::new(&exe);
            command
                .args(["check", p.name, "--json", "--reduction", reduction, "--symmetry", symmetry])
                .args(["--devices", &n.to_string(), "--max-seconds", &args.max_seconds.to_string()])
                .args(["--max-memory-mib", &memory.to_string()]);
            if let Some(t) = args.threads {
                command.args(["--threads", &t.to_string()]);
            }
            let out = command.output().map_err(|e| error(format!("cannot run a case: {e}")))?;
            let mut v: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
                error(format!(
                    "case {} N={n} printed no report ({e}): {}",
                    p.name,
                    String::from_utf8_lossy(&out.stderr)
                ))
            })?;
            v["devices"] = json!(n);
            v["protocol"] = json!(p.name);
            let states = growth(&v, previous.as_ref(), "states");
            let seconds = growth(&v, previous.as_ref(), "seconds");
            v["growth_states"] = json!(states);
            v["growth_seconds"] = json!(seconds);
            if table {
                let mib =
                    v["peak_rss_bytes"].as_u64().map_or("?".to_string(), |b| format!("{:.1}", b as f64 / 1048576.0));
                let factor = |f: Option<f64>| f.map_or(String::new(), |f| format!("x{f:.2}"));
                emitln!(
                    "{:<18} {:>3} {:<11} {:>11} {:>11} {:>9.2} {:>9} {:>8} {:>8}",
                    p.name,
                    n,
                    v["verdict"].as_str().unwrap_or("?"),
                    v["states"].as_u64().unwrap_or(0),
                    v["transitions"].as_u64().unwrap_or(0),
                    v["seconds"].as_f64().unwrap_or(f64::NAN),
                    mib,
                    factor(states),
                    factor(seconds)
                );
            }
            let stop = v["verdict"] != "proved";
            previous = Some(v.clone());
            rows.push(v);
            if stop {
                break;
            }
        }
    }
    if args.json {
        emitln!("{}", serde_json::to_string_pretty(&rows).expect("JSON of plain data"));
    }
    Ok(EXIT_PROVED)
}

/// The peak resident set size of this process (Linux `VmHWM`), if known.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
