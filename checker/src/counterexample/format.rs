//! The trace file format: versioned, line-oriented, human-readable and diffable.
//!
//! ```text
//! # comments and blank lines are ignored
//! semcheck-trace 1
//! protocol psum
//! mutant no-capacity
//! devices 2
//! repeat 1
//! engine explore strategy=bfs reduction=partial-order
//! minimized 31 -> 24 events
//! event d0 enter psum
//! event d1 (0) start remote_copy hbm_buf[0] -> d0 hbm_buf[1] (remote_send_sem, remote_recv_sem)
//! event dma [d1 (0) start remote_copy hbm_buf[0] -> d0 hbm_buf[1] (...)] received on d0: d0 remote_recv_sem 0 -> 4096
//! rule race
//! message race on d0 hbm_buf[0]: ...
//! ```
//!
//! The first line (after comments) is the format version. Header keys (`protocol` and
//! `devices` required; `mutant`, `repeat` (default 1), `engine`, `seed`, `minimized`
//! optional) come before the events, `rule` (required) and `message` after them. Events are
//! the stable names of [`Namer`](super::names::Namer): no pc, no index. Each key appears at
//! most once, except `event`. Control characters (other than tabs, and the `\r` of a CR-LF
//! line end) are rejected, so that every file that parses prints back the same.

use semcheck_model::Rule;

use super::error::{TraceError, TraceErrorKind};

/// The format version this semcheck writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The first key of every trace file.
const MAGIC: &str = "semcheck-trace";

/// The configuration a trace was found with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The protocol's name in the catalogue.
    pub protocol: String,
    /// The mutant, if any.
    pub mutant: Option<String>,
    /// Number of devices.
    pub devices: u16,
    /// Back-to-back invocations.
    pub repeat: u32,
    /// The engine and its configuration, free text (`explore strategy=bfs ...`).
    pub engine: Option<String>,
    /// The seed of a randomised engine, if any.
    pub seed: Option<u64>,
    /// Minimisation note, free text (`31 -> 24 events`).
    pub minimized: Option<String>,
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
    /// Line numbers of the header keys that name model objects, for error messages:
    /// `protocol`, `mutant`, `devices`, `repeat` (0 when absent).
    pub header_lines: [usize; 4],
    /// The events, by name.
    pub events: Vec<Line>,
    /// The broken rule, and its line.
    pub rule: (Rule, usize),
    /// The rule's message, as recorded.
    pub message: Option<String>,
}

fn syntax(line: usize, message: impl Into<String>) -> TraceError {
    TraceError::new(TraceErrorKind::Syntax, Some(line), message)
}

impl TraceFile {
    /// A trace file with these contents.
    pub fn new(header: Header, events: Vec<String>, rule: Rule, message: Option<String>) -> TraceFile {
        TraceFile {
            header,
            header_lines: [0; 4],
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
        out.push_str(&format!("protocol {}\n", h.protocol));
        if let Some(m) = &h.mutant {
            out.push_str(&format!("mutant {m}\n"));
        }
        out.push_str(&format!("devices {}\nrepeat {}\n", h.devices, h.repeat));
        if let Some(e) = &h.engine {
            out.push_str(&format!("engine {}\n", one_line(e)));
        }
        if let Some(s) = h.seed {
            out.push_str(&format!("seed {s}\n"));
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

    /// Parses the text of a trace file.
    pub fn parse(text: &str) -> Result<TraceFile, TraceError> {
        #[derive(PartialEq, PartialOrd)]
        enum Part {
            Start,
            Header,
            Events,
            End,
        }
        let mut part = Part::Start;
        let mut protocol = None;
        let mut mutant = None;
        let mut devices = None;
        let mut repeat = None;
        let mut engine = None;
        let mut seed = None;
        let mut minimized = None;
        let mut lines = [0usize; 4];
        let mut events = Vec::new();
        let mut rule = None;
        let mut message = None;
        let mut last = 0;
        let mut seed_line = 0;
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
                if rest.trim() != FORMAT_VERSION.to_string() {
                    return Err(syntax(
                        n,
                        format!(
                            "unsupported trace format version `{}` (this semcheck reads {FORMAT_VERSION})",
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
            let set = |slot: &mut Option<String>| -> Result<(), TraceError> {
                if slot.is_some() {
                    return Err(syntax(n, format!("`{key}` appears twice")));
                }
                *slot = Some(value()?);
                Ok(())
            };
            let header_key =
                matches!(key, "protocol" | "mutant" | "devices" | "repeat" | "engine" | "seed" | "minimized");
            if header_key && part != Part::Header {
                return Err(syntax(n, format!("header key `{key}` after the events")));
            }
            match key {
                "protocol" => {
                    set(&mut protocol)?;
                    lines[0] = n;
                }
                "mutant" => {
                    set(&mut mutant)?;
                    lines[1] = n;
                }
                "devices" => {
                    set(&mut devices)?;
                    lines[2] = n;
                }
                "repeat" => {
                    set(&mut repeat)?;
                    lines[3] = n;
                }
                "engine" => set(&mut engine)?,
                "seed" => {
                    set(&mut seed)?;
                    seed_line = n;
                }
                "minimized" => set(&mut minimized)?,
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
                    set(&mut message)?;
                }
                _ => return Err(syntax(n, format!("unknown key `{key}`"))),
            }
        }
        if part == Part::Start {
            return Err(syntax(last.max(1), format!("empty trace: expected `{MAGIC} {FORMAT_VERSION}`")));
        }
        let protocol = protocol.ok_or_else(|| syntax(last, "the header has no `protocol`"))?;
        let devices_text = devices.ok_or_else(|| syntax(last, "the header has no `devices`"))?;
        let devices = devices_text
            .parse::<u16>()
            .ok()
            .filter(|&d| d >= 1)
            .ok_or_else(|| syntax(lines[2], format!("`{devices_text}` is not a number of devices (1 to 65535)")))?;
        let repeat = match repeat {
            None => 1,
            Some(r) => r
                .parse::<u32>()
                .ok()
                .filter(|&r| (1..=64).contains(&r))
                .ok_or_else(|| syntax(lines[3], format!("`{r}` is not a repeat count (1 to 64)")))?,
        };
        let seed = match seed {
            None => None,
            Some(s) => Some(s.parse::<u64>().map_err(|_| syntax(seed_line, format!("`{s}` is not a seed (u64)")))?),
        };
        let rule = rule.ok_or_else(|| syntax(last, "the trace has no `rule` line"))?;
        Ok(TraceFile {
            header: Header { protocol, mutant, devices, repeat, engine, seed, minimized },
            header_lines: lines,
            events,
            rule,
            message,
        })
    }
}
