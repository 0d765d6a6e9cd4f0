//! `--format html`: one self-contained page, loaded in a real headless Chromium: its script
//! runs without errors, draws every event in its device's lane, highlights exactly the
//! explanation's events and shows the semaphores and DMAs of the selected step.
//!
//! Chromium is required: without it the test fails and says how to install it (CI installs
//! it in `.ci/run`); `SEMCHECK_SKIP_BROWSER=1` skips it, saying so.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{document, semcheck, temp_dir};

/// The Chromium binary: `SEMCHECK_CHROMIUM`, else `chromium` or `chromium-browser` on PATH.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SEMCHECK_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n))).find(|p| p.is_file())
}

/// The DOM of `page` after its script ran, as headless Chromium dumps it.
fn dom(page: &Path) -> Option<String> {
    let Some(browser) = chromium() else {
        if std::env::var("SEMCHECK_SKIP_BROWSER").is_ok_and(|v| v == "1") {
            eprintln!("SKIPPED: no Chromium, and SEMCHECK_SKIP_BROWSER=1");
            return None;
        }
        panic!(
            "the HTML rendering is tested in headless Chromium, which is not installed: \
             `apt-get install -y chromium` (or SEMCHECK_CHROMIUM=/path/to/chromium; \
             SEMCHECK_SKIP_BROWSER=1 skips this test)"
        );
    };
    let name = page.file_stem().unwrap().to_string_lossy();
    let profile = temp_dir(&format!("chromium-{name}"));
    let out = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", browser.display()));
    drop(profile);
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The text of the element with this id (first text only).
fn text_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let open = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id} in the page:\n{dom}"));
    let start = open + dom[open..].find('>').unwrap() + 1;
    let end = start + dom[start..].find('<').unwrap();
    &dom[start..end]
}

/// The `data-index` of every lane row whose event cell is highlighted.
fn highlighted_rows(dom: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for row in dom.split("<tr data-index=\"").skip(1) {
        let index: u64 = row[..row.find('"').unwrap()].parse().unwrap();
        let row = &row[..row.find("</tr>").unwrap()];
        if row.contains("class=\"event core") {
            out.push(index);
        }
    }
    out
}

/// Writes `semcheck ARGS --format html` to a file, checks it is self-contained, and returns
/// the page's DOM after its script ran.
fn page(args: &[&str], name: &str) -> Option<String> {
    let (code, html, err) = semcheck(&[args, &["--format", "html"]].concat());
    assert_eq!(code, 1, "{err}");
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    for outside in ["<link", " src=", "http://", "https://", "@import", "url("] {
        assert!(!html.contains(outside), "the page must not fetch anything (`{outside}`)");
    }
    let dir = temp_dir(&format!("html-{name}"));
    let path = dir.join(format!("{name}.html"));
    std::fs::write(&path, &html).unwrap();
    dom(&path)
}

#[test]
fn the_html_page_loads_in_chromium_and_highlights_the_explanation() {
    let args = ["trace", "psum", "--mutant", "no-capacity", "--devices", "2"];
    let (_, json, _) = semcheck(&[&args[..], &["--format", "json"]].concat());
    let cex = document(&json)["counterexample"].clone();
    let events = cex["events"].as_array().unwrap().len();
    let explained: Vec<u64> = cex["violation"]["explanation"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["role"] != "summary")
        .map(|p| p["index"].as_u64().unwrap())
        .collect();
    assert!(explained.len() >= 3, "{cex}");

    let Some(dom) = page(&args, "trace") else { return };
    assert_eq!(text_of(&dom, "errors"), "", "the script reported errors");
    assert!(dom.contains("data-state=\"ready\""), "the script did not finish:\n{dom}");
    assert_eq!(text_of(&dom, "status"), format!("ready: {events} events, {} highlighted", explained.len()));
    // Every event is a row, and exactly the explanation's are highlighted.
    assert_eq!(dom.matches("<tr data-index=\"").count(), events);
    assert_eq!(highlighted_rows(&dom), explained);
    assert!(dom.contains("class=\"event core read breaks\""), "the breaking read is marked");
    assert!(dom.contains("class=\"event core satisfied-by wrong\""), "the wrong increment is marked");
    // Each event names its source line on hover.
    assert!(dom.contains("title=\"psum.rs:"), "{dom}");
    // The selected step (the breaking event) with its semaphores and the DMAs in flight.
    assert!(dom.contains(&format!("data-selected=\"{events}\"")), "{dom}");
    assert!(dom.contains("id=\"semaphores\"") && dom.contains("<td>remote_recv_sem</td>"), "{dom}");
    assert!(dom.contains("DMAs in flight (3)"), "{dom}");
    assert!(
        dom.contains("start remote_copy x_ref -&gt; d0 hbm_buf[0] (remote_send_sem, remote_recv_sem): sent"),
        "{dom}"
    );
}

#[test]
fn replay_writes_the_same_page() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("counterexamples/guarded_shift--single-barrier.trace");
    let Some(dom) = page(&["replay", path.to_str().unwrap()], "replay") else { return };
    assert_eq!(text_of(&dom, "errors"), "");
    assert!(text_of(&dom, "status").starts_with("ready: 27 events, "), "{}", text_of(&dom, "status"));
    assert!(dom.contains("class=\"event core re-enter\""), "the re-entry is part of the story");
    assert!(dom.contains("<th>d4</th>"), "a lane per device");
}

#[test]
fn check_ends_a_violation_with_the_command_that_draws_it_for_that_case() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/psum--no-capacity.py");
    let (code, out, err) =
        semcheck(&["check", file, "--devices", "2", "--repeat", "2", "--dma-landing", "cells", "--expect", "psum"]);
    assert_eq!(code, 1, "{err}");
    let command = out.lines().find_map(|l| l.strip_prefix("  drawn as a page: ")).unwrap_or_else(|| panic!("{out}"));
    let words: Vec<&str> = command.split_whitespace().collect();
    let [run @ .., "--format", "html", ">", "counterexample.html"] = words.as_slice() else { panic!("{command}") };
    assert_eq!(run[..2], ["semcheck", "trace"], "{command}");
    // The command draws this case: the same kernel, size, repeat count and assumptions.
    let (code, page, err) = semcheck(&[&run[1..], &["--format", "html"]].concat());
    assert_eq!(code, 1, "{command}: {err}");
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    let title = format!("<title>semcheck: {file} (expect psum) N=2 repeat 2 (dma-order=any dma-landing=cells)</title>");
    assert!(page.contains(&title), "{command}\n{}", &page[..page.len().min(400)]);
}

/// The JSON the page carries, as it sits in its `<script type="application/json">`.
fn embedded_data(html: &str) -> &str {
    let open = "<script type=\"application/json\" id=\"data\">";
    let start = html.find(open).unwrap_or_else(|| panic!("no data element:\n{html}")) + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    &html[start..end]
}

#[test]
fn a_statement_that_looks_like_markup_stays_text_and_the_page_still_loads() {
    // A statement line of the counterexample holding what would end the data's script
    // element, open a comment in it or start a character reference.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(repo.join("protocols/pallas/psum--no-capacity.py")).unwrap();
    let markup = r#"_x = "<!--<script></script>&amp;""#;
    let edited = source.replacen("    local.start()\n", &format!("    local.start(); {markup}\n"), 1);
    assert_ne!(edited, source, "psum--no-capacity.py has no `local.start()` line any more");
    let dir = temp_dir("html-markup");
    let kernel = dir.join("markup.py");
    std::fs::write(&kernel, edited).unwrap();
    let args = ["trace", kernel.to_str().unwrap(), "--devices", "2"];
    let (code, html, err) = semcheck(&[&args[..], &["--format", "html"]].concat());
    assert_eq!(code, 1, "{err}");
    let data = embedded_data(&html);
    assert!(!data.contains(['<', '>', '&']), "markup characters are escaped in the data: {data}");
    let data: serde_json::Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("the data is not JSON: {e}"));
    let codes: Vec<&str> = data["events"].as_array().unwrap().iter().filter_map(|e| e["code"].as_str()).collect();
    assert!(codes.iter().any(|c| c.contains(markup)), "the statement's text, unchanged: {codes:?}");

    let Some(dom) = page(&args, "markup") else { return };
    assert_eq!(text_of(&dom, "errors"), "", "the script reported errors");
    assert!(text_of(&dom, "status").starts_with("ready: "), "{}", text_of(&dom, "status"));
}

#[test]
fn the_header_names_the_rule_once() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/split_ppermute--wrong-semaphore.py");
    let Some(dom) = page(&["trace", file, "--devices", "2"], "deadlock") else { return };
    let violation = text_of(&dom, "violation");
    assert!(violation.starts_with("deadlock: `d0 "), "{violation}");
    assert!(!violation.contains("deadlock: deadlock"), "{violation}");
}
