//! `semcheck list`

use semcheck::protocols::catalogue;
use serde_json::json;

use super::EXIT_PROVED;

pub(crate) fn run(json: bool) -> Result<i32, semcheck::ModelError> {
    if json {
        let all: Vec<_> = catalogue()
            .iter()
            .map(|p| {
                let mutants: Vec<_> =
                    p.mutants.iter().map(|m| json!({"name": m.name, "description": m.description})).collect();
                json!({"name": p.name, "description": p.description, "mutants": mutants})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&all).expect("JSON of plain data"));
    } else {
        for p in catalogue() {
            println!("{:<18} {}", p.name, p.description);
            println!("{:<18} ({})", "", p.source);
            for m in p.mutants {
                println!("  --mutant {:<16} {}", m.name, m.description);
            }
        }
    }
    Ok(EXIT_PROVED)
}
