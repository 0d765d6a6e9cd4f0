//! `semcheck supervise -- PROGRAM ARGS...`: runs a program as semcheck runs a kernel
//! file's script, for the Python API, whose exports run in a Python child process of the
//! caller's (a test function's kernel, traced with its pickled arguments) rather than in
//! this binary's export server.
//!
//! The program runs in a process group of its own ([`semcheck::children::spawn`]), under
//! the command's time and memory budgets (the memory of the program and of every process
//! descended from it, one that left its group included), and is ended with everything it
//! started on every end of this process: its own end, a budget, `SIGINT`, `SIGTERM`,
//! `SIGHUP` ([`semcheck::cleanup`]). The exit status is the program's: its exit code, or,
//! when a signal killed it, the same signal, raised on this process once the cleanup is
//! done (without a core dump), so that the caller sees what it would have seen running
//! the program itself. A budget or an interruption stops it with exit 3 and one line on
//! stderr (`semcheck: PROGRAM: incomplete: stopped by ...`); so does the end of the
//! process that started it. The command is hidden from
//! `--help`: it is the Python API's, documented in `docs/safety.md`.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use clap::Args;
use semcheck::{ErrorKind, ModelError};

use super::args::BudgetArgs;
use super::watch::{self, Style};
use super::EXIT_INCOMPLETE;

/// Arguments of `semcheck supervise`.
#[derive(Args, Debug)]
pub(crate) struct SuperviseArgs {
    /// What the program does, as a stop report says it (`tracing run at N = 2`).
    #[arg(long, default_value = "running the program")]
    pub(crate) doing: String,
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, num_args = 1..)]
    pub(crate) program: Vec<OsString>,
}

pub(crate) fn run(args: &SuperviseArgs) -> Result<i32, ModelError> {
    let (program, rest) = args.program.split_first().expect("clap requires the program");
    end_with_the_caller()?;
    let name = std::path::Path::new(program).file_name().unwrap_or(program).to_string_lossy().into_owned();
    let w = watch::watch();
    w.case(&name, Style::Note);
    w.doing(&args.doing, false);
    let cannot = |e: std::io::Error| {
        ModelError::new(ErrorKind::Environment, format!("cannot run {}: {e}", std::path::Path::new(program).display()))
    };
    let mut child = semcheck::children::spawn(Command::new(program).args(rest)).map_err(cannot)?;
    let status = semcheck::children::wait(&mut child);
    w.idle();
    let status = match status {
        Ok(status) => status,
        // Ended by the watchdog, which reports the stop and exits itself.
        Err(_) => return Ok(EXIT_INCOMPLETE),
    };
    match (status.code(), status.signal()) {
        (Some(code), _) => Ok(code),
        (None, Some(signal)) => {
            eprintln!("semcheck: {name} was {}", semcheck::children::describe(status));
            semcheck::cleanup::now();
            raise(signal);
            Ok(128 + signal)
        }
        (None, None) => Ok(EXIT_INCOMPLETE),
    }
}

/// Has this process get `SIGTERM`, handled like Ctrl-C, when the process that started it
/// ends (Linux's `PR_SET_PDEATHSIG`): a caller killed outright (a test session ended with
/// `SIGKILL`) does not leave the program running to the end of its budget. An error when
/// the caller is already gone.
fn end_with_the_caller() -> Result<(), ModelError> {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on this process.
    unsafe {
        let caller = libc::getppid();
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        if libc::getppid() != caller {
            return Err(ModelError::new(ErrorKind::Environment, "the process that started semcheck supervise ended"));
        }
    }
    Ok(())
}

/// Ends this process by `signal`, as the program it ran was ended (no core file is
/// written); returns only if the signal does not end it.
fn raise(signal: i32) {
    let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain system calls on this process; the handler is reset to the default so
    // that the signal ends it.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
}
