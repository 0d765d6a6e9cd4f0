//! `semcheck bench`: the performance table. Each case runs in its own `semcheck check`
//! process, so the peak memory reported is that case's own peak resident set size.

use std::process::Command;

use semcheck::model::{DmaLanding, DmaOrder};
use semcheck::protocols::{catalogue, MeshKind};
use semcheck::{ModelError, Semantics};
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
    // Every combination of the hardware assumptions with --semantics, else the default only.
    let combos: Vec<Semantics> = if args.semantics { SEMANTICS.to_vec() } else { vec![Semantics::default()] };
    if table && args.semantics {
        let heads: Vec<String> =
            combos.iter().map(|s| format!("{}/{}", s.dma_order.name(), s.dma_landing.name())).collect();
        emitln!(
            "states of the correct kernels under each assumption (reduction: {reduction}, budget {} s per case)",
            args.max_seconds
        );
        emitln!("{:<18} {:>2} {}", "protocol", "N", heads.iter().map(|h| format!("{h:>22}")).collect::<String>());
    } else if table {
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
            let mut cells = Vec::new();
            let mut stop = false;
            for &semantics in &combos {
                let v = case(&exe, p.name, n, reduction, args.max_seconds, semantics)?;
                let mib =
                    v["peak_rss_bytes"].as_u64().map_or("?".to_string(), |b| format!("{:.1}", b as f64 / 1048576.0));
                let verdict = v["verdict"].as_str().unwrap_or("?").to_string();
                let states = v["states"].as_u64().unwrap_or(0);
                if table && !args.semantics {
                    emitln!(
                        "{:<18} {:>2} {:<11} {:>10} {:>11} {:>8.2} {:>10}",
                        p.name,
                        n,
                        verdict,
                        states,
                        v["transitions"].as_u64().unwrap_or(0),
                        v["seconds"].as_f64().unwrap_or(f64::NAN),
                        mib
                    );
                }
                cells.push(if verdict == "proved" { states.to_string() } else { format!("{verdict} ({states})") });
                stop |= verdict != "proved";
                rows.push(v);
            }
            if table && args.semantics {
                emitln!("{:<18} {:>2} {}", p.name, n, cells.iter().map(|c| format!("{c:>22}")).collect::<String>());
            }
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

/// Every combination of the hardware assumptions, the default first.
const SEMANTICS: [Semantics; 4] = [
    Semantics { dma_order: DmaOrder::Any, dma_landing: DmaLanding::Whole },
    Semantics { dma_order: DmaOrder::PairFifo, dma_landing: DmaLanding::Whole },
    Semantics { dma_order: DmaOrder::Any, dma_landing: DmaLanding::Cells },
    Semantics { dma_order: DmaOrder::PairFifo, dma_landing: DmaLanding::Cells },
];

/// One case in its own `semcheck check --json` process: its report.
fn case(
    exe: &std::path::Path,
    protocol: &str,
    n: u16,
    reduction: &str,
    max_seconds: f64,
    semantics: Semantics,
) -> Result<Value, ModelError> {
    let out = Command::new(exe)
        .args(["check", protocol, "--json", "--reduction", reduction])
        .args(["--devices", &n.to_string(), "--max-seconds", &max_seconds.to_string()])
        .args(["--dma-order", semantics.dma_order.name(), "--dma-landing", semantics.dma_landing.name()])
        .output()
        .map_err(|e| ModelError::new(semcheck::model::ErrorKind::UnknownName, format!("cannot run a case: {e}")))?;
    serde_json::from_slice(&out.stdout).map_err(|e| {
        ModelError::new(
            semcheck::model::ErrorKind::UnknownName,
            format!("case {protocol} N={n} printed no report ({e}): {}", String::from_utf8_lossy(&out.stderr)),
        )
    })
}

/// The peak resident set size of this process (Linux `VmHWM`), if known.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
