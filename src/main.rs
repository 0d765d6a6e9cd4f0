//! The `semcheck` command line.

mod cli;

fn main() {
    std::process::exit(cli::run());
}
