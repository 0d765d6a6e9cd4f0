//! `semcheck stress`: the threaded runtime on OS threads with real `f32` data.

use clap::Args;
use semcheck::checker::runtime::stress::stress;
use semcheck::checker::EngineRun;
use semcheck::{ErrorKind, ModelError};

use super::args::{BudgetArgs, CaseArgs};
use super::report::Checked;
use super::watch::{style, watch};
use super::{emit, emitln};

/// Arguments of `semcheck stress`.
#[derive(Args, Debug)]
pub(crate) struct StressArgs {
    /// The protocol or kernel file, mutant, mesh size (default 4; one OS thread per
    /// device plus one DMA engine thread each, at most 512 devices), repeat count.
    #[command(flatten)]
    pub(crate) case: CaseArgs,
    /// Number of runs, each with fresh random inputs.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub(crate) runs: u64,
    /// Seed of the first run's inputs (run i uses seed + i).
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Time and memory budgets.
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
    /// The kernel file's script's own arguments, after `--`.
    #[command(flatten)]
    pub(crate) script: super::args::ScriptArgs,
}

/// The most devices a stress run starts threads for.
const MAX_STRESS_DEVICES: usize = 512;

pub(crate) fn run(args: &StressArgs) -> Result<i32, ModelError> {
    let cases = args.case.cases(4, style(args.json))?;
    let [case] = cases.as_slice() else {
        return Err(ModelError::new(ErrorKind::UnknownName, "stress runs one mesh size: give --devices N"));
    };
    if case.devices > MAX_STRESS_DEVICES {
        return Err(ModelError::new(
            ErrorKind::TooLarge,
            format!(
                "stress starts two OS threads per device; at most {MAX_STRESS_DEVICES} devices, not {}",
                case.devices
            ),
        ));
    }
    let w = watch();
    w.case(&case.to_string(), style(args.json));
    w.doing("compiling the kernel", false);
    let program = semcheck::program(case)?;
    w.doing(&format!("running {} stress runs on OS threads", args.runs), false);
    let outcome = stress(&program, args.runs, args.seed);
    w.idle();
    let code = outcome.verdict.exit_code();
    let tally = match &outcome.run {
        EngineRun::Stress { tally, .. } => tally.clone(),
        _ => unreachable!("stress reports a stress run"),
    };
    let checked = Checked::sampled(case.clone(), program, outcome);
    if args.json {
        let summary = serde_json::json!({
            "cases": 1,
            "seconds": checked.outcome.stats.seconds,
            "peak_rss_bytes": semcheck::memory::peak_resident_bytes(),
        });
        super::output::emit_document(&super::output::results("stress", code, vec![checked.json()], summary));
    } else {
        emit(&checked.text());
        let runs = args.runs;
        emitln!("  {} of {runs} runs mismatched the reference (wrong-result)", tally.mismatched);
        emitln!("  {} of {runs} runs had a racing access (race rule; the run went on)", tally.raced);
        for (rule, k) in &tally.by_rule {
            if *k > 0 && *rule != semcheck::Rule::WrongResult {
                emitln!("  {k} runs broke {rule}");
            }
        }
    }
    Ok(code)
}
