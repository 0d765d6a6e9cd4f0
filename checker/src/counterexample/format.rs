//! The trace file format: versioned, line-oriented, human-readable and diffable; the one
//! counterexample format every engine writes and `semcheck replay` reads.
//!
//! ```text
//! # comments and blank lines are ignored
//! semcheck-trace 2
//! protocol psum
//! mutant no-capacity
//! devices 2
//! repeat 1
//! dma-order any
//! dma-landing whole
//! engine explore strategy=bfs reduction=partial-order
//! minimized 31 -> 24 events
//! event d0 enter psum
//! event d1 (0) start remote_copy hbm_buf[0] -> d0 hbm_buf[1] (remote_send_sem, remote_recv_sem)
//! event dma [d1 (0) start remote_copy hbm_buf[0] -> d0 hbm_buf[1] (...)] received on d0: d0 remote_recv_sem 0 -> 4096
//! rule race
//! message race on d0 hbm_buf[0]: ...
//! ```
//!
//! The first line (after comments) is the format version (version 1 files, which lack the
//! keys marked *2*, are read too). The header comes before the events:
//!
//! * the kernel: `protocol` (and `mutant`) for a catalogue case, or *2* `kernel-file`
//!   (a Python file; `kernel-name` picks one of its kernels, `kernel-expect` names the
//!   reference its outputs are checked against, `kernel-sha256` is the file's
//!   hash when the trace was written, so a replay can say that the source changed, and
//!   `kernel-tpu` the chip `SEMCHECK_TPU` named when it was traced, which a replay traces
//!   it for again, and `kernel-args` the script's own arguments, a JSON array of strings);
//!   the hash must be 64 hexadecimal digits and the chip a name of at most 32 letters,
//!   digits, `-`, `_` or `.`, as both reach the exporter's process (`semcheck replay` runs
//!   a kernel file only when its hash matches, and with no arguments but those its own
//!   command line gives, see its docs);
//! * `devices` (required, 1 to the model's 4096), `repeat` (default 1), *2* `dma-order`
//!   and `dma-landing` (default `any` and `whole`);
//! * optional: `engine`, `seed`, *2* `engine-schedule` (what replays the run on the engine
//!   that found it, e.g. shuttle's decisions), `minimized`.
//!
//! `rule` (required) and `message` come after the events. Events are the stable names of
//! [`Namer`](super::names::Namer): no pc, no index; there is at least one (every rule is
//! broken after an event), and each starts with a device of the mesh (`d1 ...`, or
//! `dma [d1 ...` for a DMA's event), so that a hand-damaged index is a syntax error, not a
//! counterexample that no longer reproduces. Each key appears at most once, except
//! `event`. A leading UTF-8 byte order mark is skipped. Control characters (other than tabs, and the `\r` of a CR-LF line end) are
//! rejected, so that every file that parses prints back the same.

use std::path::PathBuf;

use semcheck_model::mesh::MAX_DEVICES;
use semcheck_model::{Case, DmaLanding, DmaOrder, Rule, Semantics, Source};

use super::error::{TraceError, TraceErrorKind};

/// The format version this semcheck writes.
pub const FORMAT_VERSION: u32 = 2;

/// The versions this semcheck reads.
const READS: [u32; 2] = [1, 2];

/// The first key of every trace file.
const MAGIC: &str = "semcheck-trace";

/// What a trace is about and how it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The kernel, mesh size, repeat count and assumptions.
    pub case: Case,
    /// The hash of a Python kernel file when the trace was written.
    pub source_sha256: Option<String>,
    /// The TPU chip a Python kernel file was traced for (`SEMCHECK_TPU`), if any.
    pub tpu: Option<String>,
    /// The arguments the kernel file's script was run with (`sys.argv[1:]`).
    pub script_args: Vec<String>,
    /// The engine and its configuration, free text (`explore strategy=bfs ...`).
    pub engine: Option<String>,
    /// The seed of a randomised engine, if any.
    pub seed: Option<u64>,
    /// What replays the run on the engine that found it (free text, engine-specific).
    pub engine_schedule: Option<String>,
    /// Minimisation note, free text (`31 -> 24 events`).
    pub minimized: Option<String>,
}

impl Header {
    /// A header for `case` with nothing else recorded.
    pub fn new(case: Case) -> Header {
        Header {
            case,
            source_sha256: None,
            tpu: None,
            script_args: Vec::new(),
            engine: None,
            seed: None,
            engine_schedule: None,
            minimized: None,
        }
    }
}

/// The lines of the header keys that name model objects, for error messages (0 when
/// absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeaderLines {
    /// `protocol` or `kernel-file`.
    pub source: usize,
    /// `mutant` or `kernel-name`.
    pub variant: usize,
    /// `devices`.
    pub devices: usize,
    /// `repeat`.
    pub repeat: usize,
    /// `kernel-expect`.
    pub expect: usize,
}

/// One line of the file with its 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// The line number (1-based).
    pub number: usize,
    /// The text after the key.
    pub text: String,
}

/// A parsed trace file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceFile {
    /// The configuration.
    pub header: Header,
    /// Where the header keys that name model objects are, for error messages.
    pub header_lines: HeaderLines,
    /// The events, by name.
    pub events: Vec<Line>,
    /// The broken rule, and its line.
    pub rule: (Rule, usize),
    /// The rule's message, as recorded.
    pub message: Option<String>,
}

/// Checks that an event's name starts with a device of a mesh of `devices`: `d1 ...` for a
/// device's step, `dma [d1 ...` for a DMA's event (named by the step that started it), as
/// [`Namer`](super::names::Namer) names them; `Err` says what is wrong.
fn event_device(event: &str, devices: usize) -> Result<(), String> {
    let rest = event.strip_prefix("dma [").unwrap_or(event);
    let Some(digits) = rest.strip_prefix('d') else {
        return Err(format!(
            "`{}` is not an event: an event starts with its device (`d0 ...`) or with `dma [d0 ...`",
            short(event)
        ));
    };
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    let (number, after) = digits.split_at(end);
    if number.is_empty() || !(after.is_empty() || after.starts_with(' ')) {
        return Err(format!(
            "`{}` is not an event: an event starts with its device (`d0 ...`) or with `dma [d0 ...`",
            short(event)
        ));
    }
    match number.parse::<usize>() {
        Ok(d) if d < devices => Ok(()),
        _ => Err(format!(
            "the event names device d{} but the trace's mesh has {devices} device{} (d0 to d{})",
            short(number),
            if devices == 1 { "" } else { "s" },
            devices - 1
        )),
    }
}

/// At most 40 characters of `text`, for a message.
fn short(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

fn syntax(line: usize, message: impl Into<String>) -> TraceError {
    TraceError::new(TraceErrorKind::Syntax, Some(line), message)
}

impl TraceFile {
    /// A trace file with these contents.
    pub fn new(header: Header, events: Vec<String>, rule: Rule, message: Option<String>) -> TraceFile {
        TraceFile {
            header,
            header_lines: HeaderLines::default(),
            events: events.into_iter().map(|text| Line { number: 0, text }).collect(),
            rule: (rule, 0),
            message,
        }
    }

    /// The file's text. Every line of free text is kept on one line.
    pub fn to_text(&self) -> String {
        let one_line =
            |s: &str| s.chars().map(|c| if c.is_control() && c != '\t' { ' ' } else { c }).collect::<String>();
        let h = &self.header;
        let mut out = String::new();
        out.push_str("# semcheck counterexample: replay with `semcheck replay FILE`\n");
        out.push_str(&format!("{MAGIC} {FORMAT_VERSION}\n"));
        match &h.case.source {
            Source::Catalogue { protocol, mutant } => {
                out.push_str(&format!("protocol {protocol}\n"));
                if let Some(m) = mutant {
                    out.push_str(&format!("mutant {m}\n"));
                }
            }
            Source::Python { path, kernel, expect } => {
                out.push_str(&format!("kernel-file {}\n", one_line(&path.display().to_string())));
                if let Some(k) = kernel {
                    out.push_str(&format!("kernel-name {}\n", one_line(k)));
                }
                if let Some(e) = expect {
                    out.push_str(&format!("kernel-expect {}\n", one_line(e)));
                }
            }
            Source::Dsl { name } => out.push_str(&format!("dsl {}\n", one_line(name))),
        }
        if let Some(sha) = &h.source_sha256 {
            out.push_str(&format!("kernel-sha256 {sha}\n"));
        }
        if let Some(chip) = &h.tpu {
            out.push_str(&format!("kernel-tpu {}\n", one_line(chip)));
        }
        if !h.script_args.is_empty() {
            let args = serde_json::to_string(&h.script_args).expect("strings serialise");
            out.push_str(&format!("kernel-args {args}\n"));
        }
        out.push_str(&format!("devices {}\nrepeat {}\n", h.case.devices, h.case.repeat));
        let sem = &h.case.semantics;
        out.push_str(&format!("dma-order {}\ndma-landing {}\n", sem.dma_order.name(), sem.dma_landing.name()));
        if let Some(e) = &h.engine {
            out.push_str(&format!("engine {}\n", one_line(e)));
        }
        if let Some(s) = h.seed {
            out.push_str(&format!("seed {s}\n"));
        }
        if let Some(s) = &h.engine_schedule {
            out.push_str(&format!("engine-schedule {}\n", one_line(s)));
        }
        if let Some(m) = &h.minimized {
            out.push_str(&format!("minimized {}\n", one_line(m)));
        }
        for e in &self.events {
            out.push_str(&format!("event {}\n", one_line(&e.text)));
        }
        out.push_str(&format!("rule {}\n", self.rule.0));
        if let Some(m) = &self.message {
            out.push_str(&format!("message {}\n", one_line(m)));
        }
        out
    }

    /// Parses raw bytes, rejecting invalid UTF-8 with the line it is on.
    pub fn parse_bytes(bytes: &[u8]) -> Result<TraceFile, TraceError> {
        match std::str::from_utf8(bytes) {
            Ok(text) => TraceFile::parse(text),
            Err(e) => {
                let line = 1 + bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count();
                Err(syntax(line, "the line is not valid UTF-8"))
            }
        }
    }

    /// Parses the text of a trace file (a leading UTF-8 byte order mark, which some
    /// editors write, is skipped).
    pub fn parse(text: &str) -> Result<TraceFile, TraceError> {
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
        #[derive(PartialEq, PartialOrd)]
        enum Part {
            Start,
            Header,
            Events,
            End,
        }
        const HEADER_KEYS: [&str; 17] = [
            "protocol",
            "mutant",
            "kernel-file",
            "kernel-name",
            "kernel-expect",
            "kernel-sha256",
            "kernel-tpu",
            "kernel-args",
            "dsl",
            "devices",
            "repeat",
            "dma-order",
            "dma-landing",
            "engine",
            "seed",
            "engine-schedule",
            "minimized",
        ];
        let mut part = Part::Start;
        let mut values: [Option<(String, usize)>; 17] = Default::default();
        let mut events = Vec::new();
        let mut rule = None;
        let mut message = None;
        let mut last = 0;
        for (i, raw) in text.split('\n').enumerate() {
            let n = i + 1;
            last = n;
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            if let Some(c) = line.chars().find(|&c| c.is_control() && c != '\t') {
                return Err(syntax(n, format!("control character U+{:04X} in the line", c as u32)));
            }
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
            if part == Part::Start {
                if key != MAGIC {
                    return Err(syntax(n, format!("not a semcheck trace: expected `{MAGIC} {FORMAT_VERSION}` first")));
                }
                if !READS.iter().any(|v| rest.trim() == v.to_string()) {
                    return Err(syntax(
                        n,
                        format!(
                            "unsupported trace format version `{}` (this semcheck reads 1 and {FORMAT_VERSION})",
                            rest.trim()
                        ),
                    ));
                }
                part = Part::Header;
                continue;
            }
            let value = || -> Result<String, TraceError> {
                let v = rest.trim();
                if v.is_empty() {
                    Err(syntax(n, format!("`{key}` needs a value")))
                } else {
                    Ok(v.to_string())
                }
            };
            if let Some(k) = HEADER_KEYS.iter().position(|&h| h == key) {
                if part != Part::Header {
                    return Err(syntax(n, format!("header key `{key}` after the events")));
                }
                if values[k].is_some() {
                    return Err(syntax(n, format!("`{key}` appears twice")));
                }
                values[k] = Some((value()?, n));
                continue;
            }
            match key {
                "event" => {
                    if part > Part::Events {
                        return Err(syntax(n, "event after the rule"));
                    }
                    part = Part::Events;
                    events.push(Line { number: n, text: value()? });
                }
                "rule" => {
                    if part == Part::End {
                        return Err(syntax(n, "`rule` appears twice"));
                    }
                    part = Part::End;
                    let v = value()?;
                    let r = Rule::from_name(&v).ok_or_else(|| {
                        let names: Vec<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
                        syntax(n, format!("unknown rule `{v}`; the rules are: {}", names.join(", ")))
                    })?;
                    rule = Some((r, n));
                }
                "message" => {
                    if part != Part::End {
                        return Err(syntax(n, "`message` must follow `rule`"));
                    }
                    if message.is_some() {
                        return Err(syntax(n, "`message` appears twice"));
                    }
                    message = Some(value()?);
                }
                _ => return Err(syntax(n, format!("unknown key `{key}`"))),
            }
        }
        if part == Part::Start {
            return Err(syntax(last.max(1), format!("empty trace: expected `{MAGIC} {FORMAT_VERSION}`")));
        }
        let [protocol, mutant, file, kernel, expect, sha, tpu, args, dsl, devices, repeat, order, landing, engine, seed, schedule, minimized] =
            values;
        let line = |v: &Option<(String, usize)>| v.as_ref().map_or(0, |(_, l)| *l);
        let lines = HeaderLines {
            source: line(&protocol).max(line(&file)).max(line(&dsl)),
            variant: line(&mutant).max(line(&kernel)),
            devices: line(&devices),
            repeat: line(&repeat),
            expect: line(&expect),
        };
        let text = |v: Option<(String, usize)>| v.map(|(t, _)| t);
        let source = match (protocol, file, dsl) {
            (Some((p, _)), None, None) => Source::Catalogue { protocol: p, mutant: text(mutant) },
            (None, Some((f, _)), None) => {
                if let Some((_, l)) = mutant {
                    return Err(syntax(l, "`mutant` belongs to a catalogue `protocol`, not to a `kernel-file`"));
                }
                Source::Python { path: PathBuf::from(f), kernel: text(kernel), expect: text(expect) }
            }
            (None, None, Some((d, _))) => Source::Dsl { name: d },
            (None, None, None) => {
                return Err(syntax(last, "the header names no kernel: `protocol`, `kernel-file` or `dsl`"))
            }
            _ => return Err(syntax(lines.source, "the header names more than one kernel")),
        };
        // The fields that reach the exporter's process are plain data (a replay sets
        // `SEMCHECK_TPU` to the chip, and checks the file's hash before it runs it).
        if let Some((chip, l)) = &tpu {
            if chip.len() > 32 || !chip.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
                return Err(syntax(
                    *l,
                    format!("`{chip}` is not a TPU chip name (at most 32 letters, digits, `-`, `_`, `.`)"),
                ));
            }
        }
        let script_args = match &args {
            Some((_, l)) if !matches!(source, Source::Python { .. }) => {
                return Err(syntax(*l, "`kernel-args` belongs to a `kernel-file`"))
            }
            None => Vec::new(),
            Some((a, l)) => serde_json::from_str::<Vec<String>>(a)
                .ok()
                .filter(|args| args.iter().all(|a| !a.contains('\0')))
                .ok_or_else(|| syntax(*l, "`kernel-args` is not a JSON array of strings without NUL characters"))?,
        };
        if let Some((sha, l)) = &sha {
            if sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(syntax(*l, format!("`{sha}` is not a sha256 (64 hexadecimal digits)")));
            }
        }
        let (devices_text, devices_line) = devices.ok_or_else(|| syntax(last, "the header has no `devices`"))?;
        // The model's own limit, checked here so that a trace asking for more runs nothing
        // (a kernel file's script would be run with that many XLA host devices first).
        let devices =
            devices_text.parse::<usize>().ok().filter(|&d| (1..=MAX_DEVICES).contains(&d)).ok_or_else(|| {
                syntax(devices_line, format!("`{devices_text}` is not a number of devices in 1..={MAX_DEVICES}"))
            })?;
        // Every event happens on a device of the mesh: a hand-edited index is bad input,
        // not a counterexample that stopped reproducing.
        for event in &events {
            if let Err(why) = event_device(&event.text, devices) {
                return Err(syntax(event.number, why));
            }
        }
        let repeat = match repeat {
            None => 1,
            Some((r, l)) => r
                .parse::<u32>()
                .ok()
                .filter(|&r| (1..=64).contains(&r))
                .ok_or_else(|| syntax(l, format!("`{r}` is not a repeat count (1 to 64)")))?,
        };
        let mut semantics = Semantics::default();
        if let Some((o, l)) = order {
            semantics.dma_order = DmaOrder::from_name(&o)
                .ok_or_else(|| syntax(l, format!("unknown dma-order `{o}` (any or pair-fifo)")))?;
        }
        if let Some((o, l)) = landing {
            semantics.dma_landing = DmaLanding::from_name(&o)
                .ok_or_else(|| syntax(l, format!("unknown dma-landing `{o}` (whole or cells)")))?;
        }
        let seed = match seed {
            None => None,
            Some((s, l)) => Some(s.parse::<u64>().map_err(|_| syntax(l, format!("`{s}` is not a seed (u64)")))?),
        };
        let rule = rule.ok_or_else(|| syntax(last, "the trace has no `rule` line"))?;
        if events.is_empty() {
            // Every rule is broken by an event, and a deadlock needs each device's `enter`
            // first (the initial state always has one enabled): no trace semcheck writes
            // is without events.
            return Err(syntax(
                rule.1,
                "a counterexample trace has no events: every rule is broken after at least one",
            ));
        }
        Ok(TraceFile {
            header: Header {
                case: Case { source, devices, repeat, semantics },
                source_sha256: text(sha),
                tpu: text(tpu),
                script_args,
                engine: text(engine),
                seed,
                engine_schedule: text(schedule),
                minimized: text(minimized),
            },
            header_lines: lines,
            events,
            rule,
            message,
        })
    }
}
