//! `semcheck bench --files [FILE,...]`: where the time of checking a kernel file goes.
//! Each (file, N) runs as its own `semcheck check FILE --devices N --json` process (a new
//! export server included, so every row pays Python's and JAX's imports once, as a user's
//! command does), and each of its kernels is one row: the export's seconds (the script
//! traced and walked, from the server's fork to the document), the compile's, the
//! exploration's, the re-checks' under other hardware assumptions, the whole process's
//! wall-clock seconds, the states and the peak memory of the checker and of the export.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use semcheck::ModelError;
use serde_json::{json, Value};

use super::args::BenchArgs;
use super::{emitln, EXIT_PROVED};

/// The kernel files `--files` times when it names none, from the repository's root: the
/// seed psum as a file (the yardstick) and the largest public kernels
/// (`docs/public-kernels.md`).
pub(crate) const PUBLIC: [&str; 7] = [
    "protocols/pallas/psum.py",
    "python/external/tpu_inference_gmm_fused_rs.py",
    "python/external/tokamax_gmm_fused_rs.py",
    "python/external/tokamax_fused_ep_moe.py",
    "python/external/tokamax_fused_moe_decode.py",
    "python/external/tpu_inference_rpa_cp_ring.py",
    "python/external/ejkernel_reduce_scatter_matmul.py",
];

fn error(message: String) -> ModelError {
    ModelError::new(semcheck::model::ErrorKind::UnknownName, message)
}

/// Seconds, or `-` when a field is absent.
fn secs(v: &Value) -> String {
    v.as_f64().map_or("-".to_string(), |s| format!("{s:.2}"))
}

/// Bytes as MiB, or `-`.
fn mib(v: &Value) -> String {
    v.as_u64().map_or("-".to_string(), |b| format!("{:.0}", b as f64 / 1048576.0))
}

pub(crate) fn run(args: &BenchArgs, files: &[PathBuf], exe: &Path) -> Result<i32, ModelError> {
    let files: Vec<PathBuf> =
        if files.is_empty() { PUBLIC.iter().map(PathBuf::from).collect() } else { files.to_vec() };
    if let Some(missing) = files.iter().find(|f| !f.is_file()) {
        return Err(error(format!(
            "no kernel file {} (bench --files alone times the public kernels: run it from the repository's root)",
            missing.display()
        )));
    }
    let sizes = args.file_devices.as_ref().map_or_else(|| vec![2, 4, 8], |d| d.0.clone());
    let table = !args.json;
    if table {
        emitln!(
            "(budget {} s per check; export: the script traced and read, from the export server's fork; wall: \
             the whole `check` process, the server's start included)",
            args.max_seconds
        );
        emitln!(
            "{:<34} {:>3} {:<10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8}",
            "kernel",
            "N",
            "verdict",
            "export s",
            "compile",
            "explore",
            "recheck",
            "wall s",
            "states",
            "peak MiB",
            "exp. MiB"
        );
    }
    let mut rows = Vec::new();
    for file in &files {
        for &n in &sizes {
            let start = Instant::now();
            let mut command = Command::new(exe);
            command.arg("check").arg(file).args([
                "--json",
                "--devices",
                &n.to_string(),
                "--max-seconds",
                &args.max_seconds.to_string(),
            ]);
            if let Some(m) = args.max_memory_mib {
                command.args(["--max-memory-mib", &m.to_string()]);
            }
            let out = semcheck::children::semcheck_output(&mut command)
                .map_err(|e| error(format!("cannot run a case: {e}")))?;
            let wall = start.elapsed().as_secs_f64();
            let doc: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
                error(format!(
                    "{} N={n} printed no report ({e}): {}",
                    file.display(),
                    String::from_utf8_lossy(&out.stderr)
                ))
            })?;
            let peak = doc["summary"]["peak_rss_bytes"].clone();
            let cases = match doc["cases"].as_array() {
                Some(all) => all.clone(),
                None => vec![doc.clone()],
            };
            for c in cases {
                let name = c["kernel"].as_str().unwrap_or("?");
                let short: String = name.chars().take(34).collect();
                let row = json!({
                    "file": file,
                    "kernel": name,
                    "devices": n,
                    "verdict": c["verdict"],
                    "export_seconds": c["export_seconds"],
                    "compile_seconds": c["compile_seconds"],
                    "explore_seconds": c["seconds"],
                    "recheck_seconds": c["recheck_seconds"],
                    "wall_seconds": wall,
                    "states": c["states"],
                    "peak_rss_bytes": peak,
                    "export_peak_rss_bytes": c["export_peak_rss_bytes"],
                });
                if table {
                    emitln!(
                        "{:<34} {:>3} {:<10} {:>8} {:>8} {:>8} {:>8} {:>8.2} {:>8} {:>9} {:>8}",
                        short,
                        n,
                        c["verdict"].as_str().unwrap_or("?"),
                        secs(&c["export_seconds"]),
                        secs(&c["compile_seconds"]),
                        secs(&c["seconds"]),
                        secs(&c["recheck_seconds"]),
                        wall,
                        c["states"].as_u64().map_or("-".to_string(), |s| s.to_string()),
                        mib(&peak),
                        mib(&c["export_peak_rss_bytes"])
                    );
                }
                rows.push(row);
            }
        }
    }
    if args.json {
        super::output::emit_document(&super::output::document("bench", json!({"rows": rows})));
    }
    Ok(EXIT_PROVED)
}
