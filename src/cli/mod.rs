//! Command-line parsing and dispatch.

mod all;
mod args;
mod bench;
mod bench_files;
mod bench_sizes;
mod check;
mod doctor;
mod engines;
mod interpret;
mod list;
mod mutate;
mod output;
mod replay;
mod replay_kernel;
mod report;
mod sarif;
mod semantics;
mod shown;
mod shuttle;
mod simulate;
mod sizes;
mod stress;
mod supervise;
mod target;
mod trace;
mod watch;

use std::io::Write;

use clap::Parser;

pub(crate) use args::{Cli, Command};

/// Exit code: proved (or, for `check all`, every expectation met).
pub(crate) const EXIT_PROVED: i32 = 0;
/// Exit code: a violation was found (or `check all` failed an expectation).
pub(crate) const EXIT_VIOLATION: i32 = 1;
/// Exit code: bad usage or bad input.
pub(crate) const EXIT_USAGE: i32 = 2;
/// Exit code: a budget stopped the exploration.
pub(crate) const EXIT_INCOMPLETE: i32 = 3;

/// Whether stdout's reader went away (a broken pipe): nothing more is written to it.
static STDOUT_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes to stdout. When its reader went away (`semcheck check ... | head -1`), the rest
/// of the output is dropped and the command goes on to its own exit code (a violation
/// still exits 1: with `set -o pipefail`, CI sees it), never a panic on the broken pipe.
pub(crate) fn emit(text: &str) {
    use std::sync::atomic::Ordering;
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            STDOUT_GONE.store(true, Ordering::Relaxed);
            return;
        }
        eprintln!("semcheck: error: cannot write the output: {e}");
        std::process::exit(EXIT_USAGE);
    }
}

/// `emit` with `format!` arguments and a newline.
macro_rules! emitln {
    ($($arg:tt)*) => {
        $crate::cli::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use emitln;

/// Parses the arguments, runs the command and returns the exit code.
pub(crate) fn run() -> i32 {
    // `args_os`: an argument that is not UTF-8 is clap's to refuse, not a panic here.
    let raw: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    // With machine output asked for, every error is also a document on stdout.
    let machine = output::requested_format(&raw);
    let command = output::requested_command(&raw);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_PROVED };
            let _ = e.print();
            if code == EXIT_USAGE {
                // clap's message up to its usage block: the first line, and the lines
                // under it that name what it means (`the following required arguments
                // were not provided: <TARGET>`).
                let text = e.render().to_string();
                let message: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
                let message = message.join(" ");
                let message = message.trim_start_matches("error: ");
                output::emit_error(machine, &command, if message.is_empty() { "bad usage" } else { message });
            }
            return code;
        }
    };
    if let Err(e) = apply_script_args(&cli.command) {
        return failed(machine, &command, &e);
    }
    init_logging();
    watch::start(limits(&cli.command));
    let result = match cli.command {
        Command::List { json } => list::run(json),
        Command::Doctor(args) => doctor::run(&args),
        Command::Schema => {
            emit(output::SCHEMA);
            Ok(EXIT_PROVED)
        }
        Command::Supervise(args) => supervise::run(&args),
        Command::Semantics { json } => semantics::run(json),
        Command::Bench(args) => bench::run(&args),
        Command::Trace(args) => trace::run(&args),
        Command::Simulate(args) => simulate::run(&args),
        Command::Replay(args) => {
            return replay::run(&args).unwrap_or_else(|e| {
                watch::watch().idle();
                failed(machine, &command, &e)
            })
        }
        Command::Stress(args) => stress::run(&args),
        Command::Engines(args) => engines::run(&args),
        Command::Mutate(args) => mutate::run(&args),
        Command::Check(args) => shuttle::validate(&args).and_then(|()| {
            if !args.more_files.is_empty() && args.sizes.is_some() {
                Err(usage("--sizes takes one protocol or kernel file; give one file with it"))
            } else if args.case.target == "all" && !args.more_files.is_empty() {
                Err(usage("`check all` checks the catalogue; kernel files are checked with `check FILE...`"))
            } else if args.case.target == "all" && args.sizes.is_some() {
                Err(usage("`check all` chooses its own sizes; --sizes takes one protocol or kernel file"))
            } else if args.case.target == "all" {
                all::run(&args)
            } else {
                check::run(&args)
            }
        }),
    };
    watch::watch().idle();
    match result {
        Ok(code) => code,
        Err(e) => failed(machine, &command, &e),
    }
}

/// Says the error that ends `command` (on stderr, and as a document on stdout when
/// machine output was asked for): exit 2.
fn failed(machine: Option<output::OutputFormat>, command: &str, e: &dyn std::fmt::Display) -> i32 {
    eprintln!("semcheck: error: {e}");
    output::emit_error(machine, command, &e.to_string());
    EXIT_USAGE
}

/// Gives the arguments after `--` to every export of the command ([`args::ScriptArgs`]).
fn apply_script_args(command: &Command) -> Result<(), semcheck::ModelError> {
    match command {
        Command::Check(a) => a.script.apply(&a.case.target),
        Command::Trace(a) => a.script.apply(&a.case.target),
        Command::Simulate(a) => a.script.apply(&a.case.target),
        Command::Stress(a) => a.script.apply(&a.case.target),
        Command::Mutate(a) => a.script.apply(&a.case.target),
        _ => Ok(()),
    }
}

/// An error of the command line (bad usage: exit 2).
pub(crate) fn usage(msg: impl Into<String>) -> semcheck::ModelError {
    semcheck::ModelError::new(semcheck::ErrorKind::UnknownName, msg)
}

/// After a panic (its message already on stderr): semcheck's own error, said as such, with
/// an error document on stdout when machine output was asked for; the exit code.
pub(crate) fn panicked() -> i32 {
    let raw: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let message = "internal error: semcheck itself failed (the panic above): a bug in semcheck; please report it \
                   with the command that caused it";
    eprintln!("semcheck: {message}");
    output::emit_error(output::requested_format(&raw), &output::requested_command(&raw), message);
    EXIT_USAGE
}

/// The budgets the watchdog enforces for a command: the command's own, or the default
/// memory budget (commands with per-case budgets of their own, like `check all` and
/// `mutate`, keep those).
fn limits(command: &Command) -> watch::Limits {
    let default = watch::Limits { seconds: None, memory_bytes: Some(args::DEFAULT_MEMORY_MIB << 20) };
    match command {
        Command::Check(a) if a.case.target == "all" => {
            watch::Limits { seconds: None, memory_bytes: Some(a.explore.budget.memory_bytes()) }
        }
        Command::Check(a) => a.explore.budget.limits(),
        Command::Trace(a) => a.budget.limits(),
        Command::Simulate(a) => a.budget.limits(),
        Command::Stress(a) => a.budget.limits(),
        Command::Replay(a) => a.budget.limits(),
        Command::Supervise(a) => a.budget.limits(),
        Command::List { .. }
        | Command::Semantics { .. }
        | Command::Doctor(_)
        | Command::Schema
        | Command::Bench(_)
        | Command::Engines(_)
        | Command::Mutate(_) => default,
    }
}

/// `RUST_LOG=semcheck=debug` shows exploration progress, `trace` every event.
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(colour).with_writer(std::io::stderr).try_init();
}
