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
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("python_package.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
