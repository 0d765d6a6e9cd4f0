//! The command-line grammar.

use clap::{Args, Parser, Subcommand, ValueEnum};
use semcheck::checker::{Budget, Config, Reduction, Strategy, Symmetry, Threads};
use semcheck::model::{DmaLanding, DmaOrder, Semantics};

const EXIT_CODES: &str = "\
Exit codes:
  0  proved (for `check all`: every expectation met)
  1  a rule is broken (a violation; for `replay`: the recorded rule reproduced)
  2  bad usage, bad input, or a construct semcheck does not support
  3  incomplete: a budget, a sampled engine or a bound stopped it; nothing is proved
  4  `replay` only: the trace no longer reproduces (an event is not possible any more, or
     the run breaks no rule or another one): the kernel or the model changed";

const MUTATE_EXIT_CODES: &str = "\
Exit codes (the original kernel's verdict, which the mutants are measured against):
  0  the kernel is proved at every size
  1  the kernel itself breaks a rule
  2  bad usage or bad input
  3  the kernel itself was not proved within the per-mutant budget";

/// semcheck: prove a Pallas collective's semaphore protocol correct, or show the shortest
/// schedule that breaks it.
#[derive(Parser, Debug)]
#[command(name = "semcheck", version, about, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// List the protocols and their mutants.
    List {
        /// Print JSON: an array of {name, description, source, mesh, mutants: [...]}.
        #[arg(long)]
        json: bool,
    },
    /// Print every modelling choice, its options, the default, and what the seeds and JAX
    /// say about it.
    Semantics {
        /// Print JSON: an array of {name, flag, options, default, evidence}.
        #[arg(long)]
        json: bool,
    },
    /// Check a protocol or Pallas kernel files (or `all`: every protocol and mutant).
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Find, minimise and render a counterexample (`--format trace` writes a trace file).
    #[command(after_help = EXIT_CODES)]
    Trace(super::trace::TraceArgs),
    /// Replay a trace file (`-` for stdin) against the current model.
    #[command(after_help = EXIT_CODES)]
    Replay(super::replay::ReplayArgs),
    /// Run a protocol in the seed's lock-step schedule and print its traversal tables.
    Simulate(super::simulate::SimulateArgs),
    /// Run a protocol many times on OS threads with real f32 data (sampled; proves nothing).
    Stress(super::stress::StressArgs),
    /// Run every corpus case on every engine and print where they agree.
    Engines(super::engines::EnginesArgs),
    /// Check every single-edit mutant of a kernel (kill matrix), or with --sync-only which
    /// waits and signals can be deleted and stay proved.
    #[command(after_help = MUTATE_EXIT_CODES)]
    Mutate(super::mutate::MutateArgs),
    /// Say which Python interpreter and JAX will read kernel files, and why (creates
    /// nothing, runs no kernel).
    Doctor(super::doctor::DoctorArgs),
    /// Print the JSON Schema (2020-12) of every document `--json` and `--format json`
    /// print (their `schema_version` 1): `semcheck schema > semcheck-output-v1.schema.json`.
    Schema,
    /// Print the performance table: states, transitions, seconds and peak memory per
    /// protocol and mesh size.
    Bench(BenchArgs),
    /// Run a program as a kernel file's script is run: in a process group of its own,
    /// under the budgets, ended with everything it started (the Python API's exports).
    #[command(hide = true)]
    Supervise(super::supervise::SuperviseArgs),
}

/// Arguments of `semcheck bench`.
#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    /// Only this protocol.
    #[arg(long)]
    pub(crate) protocol: Option<String>,
    /// Smallest ring size.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(2..=512))]
    pub(crate) min_devices: u16,
    /// Largest ring size.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u16).range(2..=512))]
    pub(crate) max_devices: u16,
    /// Time budget per case; the first case over it ends that protocol's rows.
    #[arg(long, default_value_t = 60.0, value_parser = positive_seconds)]
    pub(crate) max_seconds: f64,
    /// Memory budget per case (resident memory of its process, and of its Python exporter
    /// for a kernel file) [default: 8192].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_MEMORY_MIB))]
    pub(crate) max_memory_mib: Option<u64>,
    /// Explore without partial-order reduction.
    #[arg(long)]
    pub(crate) no_reduction: bool,
    /// Rotation symmetry reduction [default: auto].
    #[arg(long, value_enum)]
    pub(crate) symmetry: Option<SymmetryArg>,
    /// Exploring threads per case [default: one per core].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) threads: Option<u16>,
    /// Print the rows as JSON instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Time `semcheck mutate` instead: every protocol's kill matrix at N = 3 (N = 2 on
    /// TensorCores), on every core.
    #[arg(long)]
    pub(crate) mutate: bool,
    /// The states of every correct kernel under each combination of the hardware
    /// assumptions (`--dma-order`, `--dma-landing`): what each assumption costs.
    #[arg(long, conflicts_with = "mutate")]
    pub(crate) semantics: bool,
    /// Time `check --sizes` instead, at these ring sizes (`8,16,64,256`): the window
    /// method against exact exploration (within --max-seconds) on every ring catalogue
    /// case.
    #[arg(long, value_parser = super::sizes::parse_sizes, conflicts_with_all = ["mutate", "semantics", "no_reduction", "max_devices"])]
    pub(crate) sizes: Option<super::sizes::SizeRange>,
    /// Time kernel files instead (given: these; alone: the seed psum.py and the public
    /// kernels of python/external/, from the repository's root): where each check's time
    /// goes (export, compile, exploration, re-checks) and its memory, at the sizes of
    /// --file-devices.
    #[arg(long, num_args = 0.., value_delimiter = ',', conflicts_with_all = ["mutate", "semantics", "sizes", "protocol"])]
    pub(crate) files: Option<Vec<std::path::PathBuf>>,
    /// The mesh sizes of --files (`2,4,8`, `2-4`) [default: 2,4,8].
    #[arg(long, requires = "files", value_parser = super::target::parse_devices)]
    pub(crate) file_devices: Option<super::target::Devices>,
}

/// Exploration order on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum StrategyArg {
    /// Breadth-first (shortest counterexample).
    Bfs,
    /// Depth-first.
    Dfs,
}

impl StrategyArg {
    /// The explorer's strategy.
    pub(crate) fn strategy(self) -> Strategy {
        match self {
            StrategyArg::Bfs => Strategy::Bfs,
            StrategyArg::Dfs => Strategy::Dfs,
        }
    }
}

/// Reduction on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReductionArg {
    /// Partial-order reduction.
    Por,
    /// No reduction.
    None,
}

/// Symmetry reduction on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum SymmetryArg {
    /// One state per orbit of the ring's rotations, when the compiled per-device programs
    /// are rotations of each other (otherwise every state, and the report says why).
    Auto,
    /// Every state as it is.
    Off,
}

impl SymmetryArg {
    /// The explorer's symmetry mode.
    pub(crate) fn symmetry(self) -> Symmetry {
        match self {
            SymmetryArg::Auto => Symmetry::Auto,
            SymmetryArg::Off => Symmetry::Off,
        }
    }
}

/// `--dma-order` on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum DmaOrderArg {
    /// Any DMA may land before any other (the default).
    Any,
    /// DMAs between one pair of devices land in the order they were started.
    PairFifo,
}

/// `--dma-landing` on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum DmaLandingArg {
    /// A copy lands all at once (the default).
    Whole,
    /// A copy lands cell by cell, in any order, each cell adding its bytes.
    Cells,
}

/// The hardware assumptions of a check (`semcheck semantics` explains them).
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct SemanticsArgs {
    /// DMA delivery order between a pair of devices.
    #[arg(long, value_enum, default_value_t = DmaOrderArg::Any)]
    pub(crate) dma_order: DmaOrderArg,
    /// How a copy of several cells lands.
    #[arg(long, value_enum, default_value_t = DmaLandingArg::Whole)]
    pub(crate) dma_landing: DmaLandingArg,
}

impl SemanticsArgs {
    /// The model's assumptions.
    pub(crate) fn semantics(&self) -> Semantics {
        Semantics {
            dma_order: match self.dma_order {
                DmaOrderArg::Any => DmaOrder::Any,
                DmaOrderArg::PairFifo => DmaOrder::PairFifo,
            },
            dma_landing: match self.dma_landing {
                DmaLandingArg::Whole => DmaLanding::Whole,
                DmaLandingArg::Cells => DmaLanding::Cells,
            },
        }
    }
}

/// Which cases a command works on: a catalogue protocol (optionally a mutant) or a Pallas
/// kernel file, mesh sizes, a repeat count and the hardware assumptions.
#[derive(Args, Debug, Clone)]
pub(crate) struct CaseArgs {
    /// A protocol name (see `semcheck list`) or a Pallas kernel file (`kernel.py`).
    pub(crate) target: String,
    /// This mutant of the protocol instead of the correct one.
    #[arg(long)]
    pub(crate) mutant: Option<String>,
    /// The kernel to check when the file has several (its function name).
    #[arg(long)]
    pub(crate) kernel: Option<String>,
    /// For a kernel file: the collective its outputs must compute (all_gather, psum,
    /// psum_scatter, ppermute) [default: what it computes in the lock-step schedule].
    #[arg(long)]
    pub(crate) expect: Option<String>,
    /// Mesh sizes: `3`, `2-6` or `2,3,4` [default: 2].
    #[arg(long, value_parser = super::target::parse_devices)]
    pub(crate) devices: Option<super::target::Devices>,
    /// For a kernel file: run the script once with its kernels in JAX's TPU interpret mode
    /// on the CPU first, and read the integers its kernels compute and copy into SMEM
    /// (routing tables, offsets, counts) with the values that run copied; the verdict
    /// covers those values (docs/kernel-files.md).
    #[arg(long)]
    pub(crate) interpret_values: bool,
    /// Back-to-back invocations of the kernel (default: 1, or the mutant's own need).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) repeat: Option<u32>,
    /// The hardware assumptions.
    #[command(flatten)]
    pub(crate) semantics: SemanticsArgs,
}

/// What follows `--` on the command line: the kernel file's script's own arguments.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct ScriptArgs {
    /// Arguments for a kernel file's script, after `--` (its `sys.argv[1:]`, as with
    /// `python kernel.py ARGS`): `semcheck check bench.py --devices 2 -- --size 1024`.
    #[arg(last = true, value_name = "SCRIPT_ARGS")]
    pub(crate) args: Vec<String>,
}

impl ScriptArgs {
    /// Makes every export of this command run its script with these arguments; an error
    /// when there are some and `target` runs no script (a catalogue protocol, a kernel
    /// document).
    pub(crate) fn apply(&self, target: &str) -> Result<(), semcheck::ModelError> {
        if !self.args.is_empty() && !super::target::is_file(target) {
            return Err(super::usage(format!(
                "the arguments after `--` go to a kernel file's script; `{target}` is a catalogue protocol"
            )));
        }
        if !self.args.is_empty() && semcheck::frontend::is_document(std::path::Path::new(target)) {
            return Err(super::usage(format!(
                "the arguments after `--` go to a kernel file's script; {target} is an exported document, which runs none"
            )));
        }
        semcheck::frontend::run_scripts_with(&self.args);
        Ok(())
    }
}

/// The explorer's options.
#[derive(Args, Debug)]
pub(crate) struct ExploreArgs {
    /// Exploration order [explorer; default: bfs].
    #[arg(long, value_enum)]
    pub(crate) strategy: Option<StrategyArg>,
    /// State-space reduction [explorer; default: por].
    #[arg(long, value_enum)]
    pub(crate) reduction: Option<ReductionArg>,
    /// Rotation symmetry reduction [explorer; default: auto].
    #[arg(long, value_enum)]
    pub(crate) symmetry: Option<SymmetryArg>,
    /// Exploring threads [explorer; default: one per core]; the verdict, counts and
    /// counterexample are the same for every number.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) threads: Option<u16>,
    /// Stop (verdict incomplete) after this many distinct states [explorer].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_states: Option<u64>,
    /// Time and memory budgets.
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
}

/// The budgets every command that compiles a kernel honours, from compiling on.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct BudgetArgs {
    /// Stop (verdict incomplete, exit 3) this many seconds after a case started, compiling
    /// included.
    #[arg(long, value_parser = positive_seconds)]
    pub(crate) max_seconds: Option<f64>,
    /// Stop (verdict incomplete, exit 3) when the resident memory (semcheck's and that of
    /// the Python process running a kernel file's script), or the explorer's tables, reach
    /// this many MiB [default: 8192].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_MEMORY_MIB))]
    pub(crate) max_memory_mib: Option<u64>,
}

impl BudgetArgs {
    /// The memory budget in bytes (the default when none is given).
    pub(crate) fn memory_bytes(&self) -> u64 {
        self.max_memory_mib.unwrap_or(DEFAULT_MEMORY_MIB) << 20
    }

    /// The limits the watchdog enforces.
    pub(crate) fn limits(&self) -> super::watch::Limits {
        super::watch::Limits { seconds: self.max_seconds, memory_bytes: Some(self.memory_bytes()) }
    }
}

/// The largest memory budget accepted (16 TiB), so that MiB -> bytes cannot overflow.
const MAX_MEMORY_MIB: u64 = 1 << 24;

/// The default memory budget.
pub(crate) const DEFAULT_MEMORY_MIB: u64 = 8192;

impl ExploreArgs {
    /// The explorer configuration these arguments ask for.
    pub(crate) fn config(&self) -> Config {
        Config {
            strategy: self.strategy.unwrap_or(StrategyArg::Bfs).strategy(),
            reduction: match self.reduction.unwrap_or(ReductionArg::Por) {
                ReductionArg::Por => Reduction::PartialOrder,
                ReductionArg::None => Reduction::None,
            },
            symmetry: self.symmetry.unwrap_or(SymmetryArg::Auto).symmetry(),
            threads: self.threads.map_or(Threads::Auto, Threads::Exactly),
            budget: Budget {
                max_states: self.max_states,
                max_seconds: self.budget.max_seconds,
                max_memory_bytes: Some(self.budget.memory_bytes()),
            },
        }
    }

    /// The explorer-only options given, by flag name.
    pub(crate) fn explorer_only(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if self.strategy.is_some() {
            given.push("--strategy");
        }
        if self.reduction.is_some() {
            given.push("--reduction");
        }
        if self.symmetry.is_some() {
            given.push("--symmetry");
        }
        if self.threads.is_some() {
            given.push("--threads");
        }
        if self.max_states.is_some() {
            given.push("--max-states");
        }
        given
    }
}

/// Arguments of `semcheck check`.
#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    /// The protocol or kernel file (or `all`), mutant, mesh sizes, repeat count.
    #[command(flatten)]
    pub(crate) case: CaseArgs,
    /// More kernel files, checked as the first is (`semcheck check kernels/*.py`): one
    /// report and one exit code for all of them.
    #[arg(value_name = "MORE_FILES")]
    pub(crate) more_files: Vec<String>,
    /// Text, JSON or SARIF.
    #[command(flatten)]
    pub(crate) output: super::output::OutputArgs,
    /// The explorer's options.
    #[command(flatten)]
    pub(crate) explore: ExploreArgs,
    /// The engine and its options.
    #[command(flatten)]
    pub(crate) engine: super::shuttle::EngineArgs,
    /// With a violation, print every event of the (minimised) schedule, not only the
    /// events that explain it.
    #[arg(long)]
    pub(crate) schedule: bool,
    /// Every ring size of a range (`2..256`, `5,8,64`): exact exploration where it is
    /// cheap, the window method above (docs/sizes.md).
    #[arg(long, value_parser = super::sizes::parse_sizes, conflicts_with = "devices")]
    pub(crate) sizes: Option<super::sizes::SizeRange>,
    /// With --sizes: the largest window radius tried [default: 2].
    #[arg(long, requires = "sizes", value_parser = clap::value_parser!(u16).range(1..=16))]
    pub(crate) window_radius: Option<u16>,
    /// With --sizes: exact exploration decides a size while it needs at most this many
    /// states (0: never) [default: 20000, and 10 s].
    #[arg(long, requires = "sizes")]
    pub(crate) exact_max_states: Option<u64>,
    /// The kernel file's script's own arguments, after `--`.
    #[command(flatten)]
    pub(crate) script: ScriptArgs,
}

/// Parses a positive, finite number of seconds.
pub(crate) fn positive_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("`{s}` must be a positive, finite number of seconds (at most about 1.8e308)"))
    }
}
