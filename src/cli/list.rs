//! `semcheck list`

use semcheck::protocols::{catalogue, MeshKind};
use serde_json::json;

use super::{emitln, EXIT_PROVED};

fn mesh(kind: MeshKind) -> &'static str {
    match kind {
        MeshKind::Ring => "ring (--devices N, N >= 2)",
        MeshKind::TensorCores => "2 TensorCores (--devices 2)",
    }
}

pub(crate) fn run(json: bool) -> Result<i32, semcheck::ModelError> {
    if json {
        let all: Vec<_> = catalogue()
            .iter()
            .map(|p| {
                let mutants: Vec<_> = p
                    .mutants
                    .iter()
                    .map(|m| {
                        json!({"name": m.name, "description": m.description, "repeat": m.repeat,
                            "expected": m.expected.iter().map(|r| r.name()).collect::<Vec<_>>(),
                            "manifests_from": m.manifests_from})
                    })
                    .collect();
                json!({"name": p.name, "description": p.description, "source": p.source,
                    "mesh": mesh(p.mesh_kind), "mutants": mutants})
            })
            .collect();
        super::output::emit_document(&super::output::document("list", serde_json::json!({"protocols": all})));
    } else {
        for p in catalogue() {
            emitln!("{:<18} {}", p.name, p.description);
            emitln!("{:<18} ({}; {})", "", p.source, mesh(p.mesh_kind));
            for m in p.mutants {
                emitln!("  --mutant {:<16} {}", m.name, m.description);
            }
        }
    }
    Ok(EXIT_PROVED)
}
