//! `semcheck bench`: the performance table. Each case runs in its own `semcheck check`
//! process, so the peak memory reported is that case's own peak resident set size.

use std::process::Command;

use semcheck::protocols::{catalogue, MeshKind};
use semcheck::ModelError;
use serde_json::Value;

use super::args::BenchArgs;
use super::{emitln, EXIT_PROVED};

pub(crate) fn run(args: &BenchArgs) -> Result<i32, ModelError> {
    let exe = std::env::current_exe().map_err(|e| {
        ModelError::new(semcheck::model::ErrorKind::UnknownName, format!("cannot find the semcheck binary: {e}"))
    })?;
    if let Some(name) = &args.protocol {
        semcheck::protocols::find(name)?;
    }
    if args.mutate {
        return super::mutate::bench(args, &exe);
    }
    if let Some(sizes) = &args.sizes {
        return super::bench_sizes::run(args, &sizes.0, &exe);
    }
    let reduction = if args.no_reduction { "none" } else { "por" };
    let table = !args.json;
    if table {
        emitln!(
            "{:<18} {:>2} {:<11} {:>10} {:>11} {:>8} {:>10}   (reduction: {reduction}, budget {} s per case)",
            "protocol",
            "N",
            "verdict",
            "states",
            "transitions",
            "seconds",
            "peak MiB",
            args.max_seconds
        );
    }
    let mut rows = Vec::new();
    for p in catalogue() {
        if args.protocol.as_deref().is_some_and(|name| name != p.name) {
            continue;
        }
        let sizes: Vec<u16> = match p.mesh_kind {
            MeshKind::Ring => (2..=args.max_devices).collect(),
            MeshKind::TensorCores => vec![2],
        };
        for n in sizes {
            let out = Command::new(&exe)
                .args(["check", p.name, "--json", "--reduction", reduction])
                .args(["--devices", &n.to_string(), "--max-seconds", &args.max_seconds.to_string()])
                .output()
                .map_err(|e| {
                    ModelError::new(semcheck::model::ErrorKind::UnknownName, format!("cannot run a case: {e}"))
                })?;
            let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
                ModelError::new(
                    semcheck::model::ErrorKind::UnknownName,
                    format!("case {} N={n} printed no report ({e}): {}", p.name, String::from_utf8_lossy(&out.stderr)),
                )
            })?;
            let mib = v["peak_rss_bytes"].as_u64().map_or("?".to_string(), |b| format!("{:.1}", b as f64 / 1048576.0));
            if table {
                emitln!(
                    "{:<18} {:>2} {:<11} {:>10} {:>11} {:>8.2} {:>10}",
                    p.name,
                    n,
                    v["verdict"].as_str().unwrap_or("?"),
                    v["states"].as_u64().unwrap_or(0),
                    v["transitions"].as_u64().unwrap_or(0),
                    v["seconds"].as_f64().unwrap_or(f64::NAN),
                    mib
                );
            }
            let stop = v["verdict"] != "proved";
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
