//! The `semcheck` command line.

mod cli;

fn main() {
    // What the processes semcheck starts leave behind stays within reach (a library user
    // decides this for its own process).
    semcheck::children::become_subreaper();
    // A panic is a bug of semcheck's: reported as its own error (exit 2, and an error
    // document where one was asked for), never Rust's exit 101.
    let code = std::panic::catch_unwind(cli::run).unwrap_or_else(|_| cli::panicked());
    std::process::exit(code);
}
