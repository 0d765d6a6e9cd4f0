//! The `semcheck` binary as a user runs it: every command's output and exit code, trace
//! files written and replayed, budgets and Ctrl-C, `mutate`, and kernels read from Python files (the front
//! end, including its pytest suite).
//!
//! One test executable for all of them: each executable links the whole crate graph, so
//! few executables build much faster than one per file.

mod assumptions;
mod budgets;
mod cli;
mod common;
mod engines_cli;
mod explanations;
mod frontend;
mod hostile;
mod html;
mod hygiene;
mod interpret;
mod mutate;
mod programs;
mod replay_after_fix;
mod replay_safety;
mod sarif;
mod script_args;
mod several_files;
mod sizes;
mod sizes_report;
mod traces;
