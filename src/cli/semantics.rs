//! `semcheck semantics`: every modelling choice a verdict rests on, its options, the
//! default, and what the seeds and JAX say about it (the table is
//! [`semcheck::model::semantics::CHOICES`]).

use semcheck::model::semantics::CHOICES;

use super::{emitln, EXIT_PROVED};

pub(crate) fn run(json: bool) -> Result<i32, semcheck::ModelError> {
    if json {
        super::output::emit_document(&super::output::document("semantics", serde_json::json!({"choices": CHOICES})));
        return Ok(EXIT_PROVED);
    }
    for (i, c) in CHOICES.iter().enumerate() {
        if i > 0 {
            emitln!("");
        }
        match c.flag {
            Some(flag) => emitln!("{} ({flag}, default {})", c.name, c.default),
            None => emitln!("{} (fixed: {})", c.name, c.default),
        }
        for (option, meaning) in c.options {
            emitln!("  {option:<14} {meaning}");
        }
        emitln!("  evidence:");
        for e in c.evidence {
            emitln!("  - {e}");
        }
    }
    Ok(EXIT_PROVED)
}
