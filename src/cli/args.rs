//! The command-line grammar.

use clap::{Args, Parser, Subcommand, ValueEnum};
use semcheck::checker::{Budget, Config, Reduction, Strategy};

/// semcheck: prove a Pallas collective's semaphore protocol correct, or show the shortest
/// schedule that breaks it.
#[derive(Parser, Debug)]
#[command(name = "semcheck", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// List the protocols and their mutants.
    List {
        /// Print JSON: an array of {name, description, mutants: [{name, description}]}.
        #[arg(long)]
        json: bool,
    },
    /// Check a protocol (or `all`: every protocol and mutant).
    Check(CheckArgs),
    /// Find, minimise and render a counterexample (`--format trace` writes a trace file).
    Trace(super::trace::TraceArgs),
    /// Replay a trace file against the current model (exit 1: rule reproduced, 2: bad file).
    Replay(super::replay::ReplayArgs),
    /// Run a protocol in the seed's lock-step schedule and print its traversal tables.
    Simulate(super::simulate::SimulateArgs),
    /// Run a protocol many times on OS threads with real f32 data (sampled; proves nothing).
    Stress(super::stress::StressArgs),
    /// Run every corpus case on every engine and print where they agree.
    Engines(super::engines::EnginesArgs),
    /// Print the performance table: states, transitions, seconds and peak memory per
    /// protocol and mesh size.
    Bench(BenchArgs),
}

/// Arguments of `semcheck bench`.
#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    /// Only this protocol.
    #[arg(long)]
    pub(crate) protocol: Option<String>,
    /// Largest ring size.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(2..=64))]
    pub(crate) max_devices: u16,
    /// Time budget per case; the first case over it ends that protocol's rows.
    #[arg(long, default_value_t = 60.0, value_parser = positive_seconds)]
    pub(crate) max_seconds: f64,
    /// Explore without partial-order reduction.
    #[arg(long)]
    pub(crate) no_reduction: bool,
    /// Also print the rows as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Exploration order on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum StrategyArg {
    /// Breadth-first (shortest counterexample).
    Bfs,
    /// Depth-first.
    Dfs,
}

/// Reduction on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum ReductionArg {
    /// Partial-order reduction.
    Por,
    /// No reduction.
    None,
}

/// Which case a command works on: a protocol, optionally one of its mutants, a mesh size
/// and a repeat count.
#[derive(Args, Debug)]
pub(crate) struct CaseArgs {
    /// Protocol name (see `semcheck list`); `check` also takes `all`.
    pub(crate) protocol: String,
    /// This mutant instead of the correct protocol.
    #[arg(long)]
    pub(crate) mutant: Option<String>,
    /// Number of devices (ring size; the TensorCore protocols need 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub(crate) devices: u16,
    /// Back-to-back invocations of the kernel (default: 1, or the mutant's own need).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) repeat: Option<u32>,
}

/// Arguments of `semcheck check`.
#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    /// The protocol (or `all`), mutant, mesh size and repeat count.
    #[command(flatten)]
    pub(crate) case: CaseArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Exploration order.
    #[arg(long, value_enum, default_value_t = StrategyArg::Bfs)]
    pub(crate) strategy: StrategyArg,
    /// State-space reduction.
    #[arg(long, value_enum, default_value_t = ReductionArg::Por)]
    pub(crate) reduction: ReductionArg,
    /// Stop (verdict incomplete) after this many distinct states.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_states: Option<u64>,
    /// Stop (verdict incomplete) after this many seconds.
    #[arg(long, value_parser = positive_seconds)]
    pub(crate) max_seconds: Option<f64>,
    /// Stop (verdict incomplete) when the explorer's tables reach this many MiB.
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_memory_mib: u64,
    /// The engine and its options.
    #[command(flatten)]
    pub(crate) engine: super::shuttle::EngineArgs,
}

fn positive_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("`{s}` must be a positive number of seconds"))
    }
}

impl CheckArgs {
    /// The explorer configuration these arguments ask for.
    pub(crate) fn config(&self) -> Config {
        Config {
            strategy: match self.strategy {
                StrategyArg::Bfs => Strategy::Bfs,
                StrategyArg::Dfs => Strategy::Dfs,
            },
            reduction: match self.reduction {
                ReductionArg::Por => Reduction::PartialOrder,
                ReductionArg::None => Reduction::None,
            },
            budget: Budget {
                max_states: self.max_states,
                max_seconds: self.max_seconds,
                max_memory_bytes: Some(self.max_memory_mib << 20),
            },
        }
    }
}
