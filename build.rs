//! Embeds the Python package (`python/semcheck`, the front end and the API) in the binary,
//! so that a `semcheck` built or installed anywhere runs the front end that matches it
//! (`src/frontend/env.rs` writes it out under the cache directory).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "__pycache__") {
                python_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "py" || e == "typed") {
            out.push(path);
        }
    }
}

/// `SUPPORTED: ... = ((0, 8, 1), (0, 12))` of `_jaxrange.py`: the oldest release
/// (major, minor, patch) and the newest minor line (major, minor).
fn supported_range(compat: &str) -> ((u32, u32, u32), (u32, u32)) {
    let line = compat.lines().find(|l| l.starts_with("SUPPORTED")).expect("_jaxrange.py states SUPPORTED");
    let value = line.split('=').nth(1).expect("SUPPORTED = ...");
    let numbers: Vec<u32> = value
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("a version number"))
        .collect();
    match numbers.as_slice() {
        [a, b, c, d, e] => ((*a, *b, *c), (*d, *e)),
        _ => panic!("_jaxrange.py: SUPPORTED is not ((major, minor, patch), (major, minor)): {line}"),
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let python = root.join("python");
    let package = python.join("semcheck");
    println!("cargo:rerun-if-changed={}", package.display());
    println!("cargo:rerun-if-changed={}", python.join("requirements.txt").display());
    let mut files = Vec::new();
    python_files(&package, &mut files);
    let mut code = String::from("/// The Python package's files: (path under the package root, text).\npub const PACKAGE: &[(&str, &str)] = &[\n");
    for f in &files {
        let rel = f.strip_prefix(&python).expect("under python/").to_string_lossy().replace('\\', "/");
        writeln!(code, "    ({rel:?}, include_str!({:?})),", f.display().to_string()).expect("writing to a String");
    }
    code.push_str("];\n");
    // The supported JAX range is stated once, in the front end; the binary reads it from there.
    let compat = std::fs::read_to_string(package.join("_jaxrange.py")).expect("_jaxrange.py");
    let (oldest, newest) = supported_range(&compat);
    writeln!(code, "/// The oldest JAX release the front end reads (`SUPPORTED` of `_jaxrange.py`).")
        .expect("writing to a String");
    writeln!(code, "pub const OLDEST_JAX: (u32, u32, u32) = ({}, {}, {});", oldest.0, oldest.1, oldest.2)
        .expect("writing to a String");
    writeln!(
        code,
        "/// The newest JAX minor line the front end reads, every release of it (`SUPPORTED` of `_jaxrange.py`)."
    )
    .expect("writing to a String");
    writeln!(code, "pub const NEWEST_JAX: (u32, u32) = ({}, {});", newest.0, newest.1).expect("writing to a String");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("python_package.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
