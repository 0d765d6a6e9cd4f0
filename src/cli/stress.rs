//! `semcheck stress`: the threaded runtime on OS threads with real `f32` data.

use clap::Args;
use semcheck::checker::runtime::stress::stress;
use semcheck::protocols::find;
use semcheck::ModelError;

use super::{EXIT_INCOMPLETE, EXIT_VIOLATION};

/// Arguments of `semcheck stress`.
#[derive(Args, Debug)]
pub(crate) struct StressArgs {
    /// Protocol name (see `semcheck list`).
    pub(crate) protocol: String,
    /// Run this mutant instead of the correct protocol.
    #[arg(long)]
    pub(crate) mutant: Option<String>,
    /// Number of devices (one OS thread each, plus one DMA engine thread each).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=512))]
    pub(crate) devices: u16,
    /// Number of runs, each with fresh random inputs.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub(crate) runs: u64,
    /// Back-to-back invocations per run (default: 1, or the mutant's own need).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) repeat: Option<u32>,
    /// Seed of the first run's inputs (run i uses seed + i).
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &StressArgs) -> Result<i32, ModelError> {
    let p = find(&args.protocol)?;
    let repeat = p.repeat_for(args.mutant.as_deref(), args.repeat)?;
    let program = p.program(args.devices as usize, args.mutant.as_deref(), repeat)?;
    let r = stress(&program, args.runs, args.seed);
    let broken: u64 = r.by_rule.iter().map(|(_, k)| k).sum::<u64>() + r.raced;
    if args.json {
        let out = serde_json::json!({
            "protocol": args.protocol, "mutant": args.mutant, "devices": args.devices, "repeat": repeat,
            "engine": "std", "verdict": if broken > 0 { "violation" } else { "incomplete" },
            "report": r,
        });
        println!("{}", serde_json::to_string_pretty(&out).expect("JSON of plain data"));
    } else {
        let mutant = args.mutant.as_deref().map_or(String::new(), |m| format!(" --mutant {m}"));
        println!(
            "{}{mutant}, {} devices, repeat {repeat}: {} runs on OS threads in {:.2} s",
            args.protocol, args.devices, r.runs, r.seconds
        );
        println!("  {} of {} runs mismatched the reference (wrong-result)", r.mismatched, r.runs);
        println!("  {} of {} runs had a racing access (race rule; the run went on)", r.raced, r.runs);
        for (rule, k) in &r.by_rule {
            if *k > 0 && *rule != semcheck::Rule::WrongResult {
                println!("  {k} runs broke {rule}");
            }
        }
        match &r.first {
            Some((seed, v)) => println!("  VIOLATION (first, inputs seed {seed}): {v}"),
            None => println!("  INCOMPLETE: no rule broken; real-thread runs sample schedules and prove nothing"),
        }
    }
    Ok(if broken > 0 { EXIT_VIOLATION } else { EXIT_INCOMPLETE })
}
