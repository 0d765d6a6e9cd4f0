//! `semcheck bench`: the performance table. Each case runs in its own `semcheck check`
//! process, so the peak memory reported is that case's own peak resident set size. Each
//! row after a protocol's first shows the growth factor of the states (and of the
//! seconds) from the previous ring size. With `--semantics`, one column of states per
//! combination of the hardware assumptions instead.

use super::watch::{style, watch};
use std::process::Command;

use semcheck::model::{DmaLanding, DmaOrder};
use semcheck::protocols::{catalogue, MeshKind};
use semcheck::{ModelError, Semantics};
use serde_json::{json, Value};

use super::args::{BenchArgs, SymmetryArg};
use super::{emitln, EXIT_PROVED};

fn error(message: String) -> ModelError {
    ModelError::new(semcheck::model::ErrorKind::UnknownName, message)
}

/// `now[key] / before[key]`, when `before` is the proved row of the ring one smaller.
fn growth(now: &Value, before: Option<&Value>, key: &str) -> Option<f64> {
    let before = before?;
    if before["devices"].as_u64()? + 1 != now["devices"].as_u64()? || before["verdict"] != "proved" {
        return None;
    }
    let (a, b) = (before[key].as_f64()?, now[key].as_f64()?);
    (a > 0.0).then(|| b / a)
}

/// The explorer options every case runs with.
struct Options {
    reduction: &'static str,
    symmetry: &'static str,
    threads: Option<u16>,
    max_seconds: f64,
    memory_mib: u64,
}

pub(crate) fn run(args: &BenchArgs) -> Result<i32, ModelError> {
    let exe = std::env::current_exe().map_err(|e| error(format!("cannot find the semcheck binary: {e}")))?;
    if let Some(name) = &args.protocol {
        semcheck::protocols::find(name)?;
    }
    // Each case runs in its own process; Ctrl-C (which reaches those too) ends the bench.
    watch().case("bench", style(args.json));
    watch().working("benchmarking, each case in its own process");
    watch().so_far("the rows printed before are complete");
    if args.mutate {
        return super::mutate::bench(args, &exe);
    }
    if let Some(sizes) = &args.sizes {
        return super::bench_sizes::run(args, &sizes.0, &exe);
    }
    if let Some(files) = &args.files {
        return super::bench_files::run(args, files, &exe);
    }
    let options = Options {
        reduction: if args.no_reduction { "none" } else { "por" },
        symmetry: match args.symmetry {
            Some(SymmetryArg::Off) => "off",
            _ => "auto",
        },
        threads: args.threads,
        max_seconds: args.max_seconds,
        memory_mib: args.max_memory_mib.unwrap_or(super::args::DEFAULT_MEMORY_MIB),
    };
    let table = !args.json;
    // Every combination of the hardware assumptions with --semantics, else the default only.
    let combos: Vec<Semantics> = if args.semantics { SEMANTICS.to_vec() } else { vec![Semantics::default()] };
    if table {
        emitln!(
            "(reduction: {}, symmetry: {}, threads: {}; budget {} s and {} MiB per case; \
             growth: states and seconds over the row N-1)",
            options.reduction,
            options.symmetry,
            options.threads.map_or("auto".to_string(), |t| t.to_string()),
            options.max_seconds,
            options.memory_mib
        );
    }
    if table && args.semantics {
        let heads: Vec<String> =
            combos.iter().map(|s| format!("{}/{}", s.dma_order.name(), s.dma_landing.name())).collect();
        emitln!("states of the correct kernels under each assumption");
        emitln!("{:<18} {:>3} {}", "protocol", "N", heads.iter().map(|h| format!("{h:>22}")).collect::<String>());
    } else if table {
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
            let mut cells = Vec::new();
            let mut stop = false;
            for &semantics in &combos {
                let mut v = case(&exe, p.name, n, &options, semantics)?;
                v["devices"] = json!(n);
                v["protocol"] = json!(p.name);
                let verdict = v["verdict"].as_str().unwrap_or("?").to_string();
                let states = v["states"].as_u64().unwrap_or(0);
                if !args.semantics {
                    let (grow, time) =
                        (growth(&v, previous.as_ref(), "states"), growth(&v, previous.as_ref(), "seconds"));
                    v["growth_states"] = json!(grow);
                    v["growth_seconds"] = json!(time);
                    previous = Some(v.clone());
                    if table {
                        let mib = v["peak_rss_bytes"]
                            .as_u64()
                            .map_or("?".to_string(), |b| format!("{:.1}", b as f64 / 1048576.0));
                        let factor = |f: Option<f64>| f.map_or(String::new(), |f| format!("x{f:.2}"));
                        emitln!(
                            "{:<18} {:>3} {:<11} {:>11} {:>11} {:>9.2} {:>9} {:>8} {:>8}",
                            p.name,
                            n,
                            verdict,
                            states,
                            v["transitions"].as_u64().unwrap_or(0),
                            v["seconds"].as_f64().unwrap_or(f64::NAN),
                            mib,
                            factor(grow),
                            factor(time)
                        );
                    }
                }
                cells.push(if verdict == "proved" { states.to_string() } else { format!("{verdict} ({states})") });
                stop |= verdict != "proved";
                rows.push(v);
            }
            if table && args.semantics {
                emitln!("{:<18} {:>3} {}", p.name, n, cells.iter().map(|c| format!("{c:>22}")).collect::<String>());
            }
            if stop {
                break;
            }
        }
    }
    if args.json {
        super::output::emit_document(&super::output::document("bench", json!({"rows": rows})));
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
fn case(exe: &std::path::Path, protocol: &str, n: u16, o: &Options, semantics: Semantics) -> Result<Value, ModelError> {
    let mut command = Command::new(exe);
    command
        .args(["check", protocol, "--json", "--reduction", o.reduction, "--symmetry", o.symmetry])
        .args(["--devices", &n.to_string(), "--max-seconds", &o.max_seconds.to_string()])
        .args(["--max-memory-mib", &o.memory_mib.to_string()])
        .args(["--dma-order", semantics.dma_order.name(), "--dma-landing", semantics.dma_landing.name()]);
    if let Some(t) = o.threads {
        command.args(["--threads", &t.to_string()]);
    }
    let out =
        semcheck::children::semcheck_output(&mut command).map_err(|e| error(format!("cannot run a case: {e}")))?;
    serde_json::from_slice(&out.stdout).map(super::output::only_case).map_err(|e| {
        error(format!("case {protocol} N={n} printed no report ({e}): {}", String::from_utf8_lossy(&out.stderr)))
    })
}
