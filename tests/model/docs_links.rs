//! The documentation's relative links: every Markdown link in `README.md` and
//! `docs/*.md` that is not a URL must name a file or folder of the repository, and a link
//! with an `#anchor` into a Markdown file must name one of its headings, as GitHub
//! computes heading anchors. No network: links with a scheme (`https:`, `mailto:`) are
//! not followed.

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages whose links are checked: the README and every page of `docs/`.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// A line's fence marker (```` ``` ```` or `~~~`, up to three spaces in), if it opens or
/// closes a fenced code block: the marker's character and length.
fn fence(line: &str) -> Option<(char, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let c = rest.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let n = rest.chars().take_while(|&x| x == c).count();
    (n >= 3).then_some((c, n))
}

/// The lines of a Markdown text outside fenced code blocks, with their line numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        match (open, fence(line)) {
            (None, Some(f)) => open = Some(f),
            (Some((c, n)), Some((c2, n2))) if c == c2 && n2 >= n && line.trim().chars().all(|x| x == c) => open = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// The line without its inline code spans (a run of backticks up to the next run of the
/// same length), which hold no links.
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let n = chars[i..].iter().take_while(|&&c| c == '`').count();
        // The closing run: exactly n backticks.
        let mut j = i + n;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let m = chars[j..].iter().take_while(|&&c| c == '`').count();
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => i = j + n,
            None => {
                // No closing run: the backticks are literal.
                out.extend(std::iter::repeat_n('`', n));
                i += n;
            }
        }
    }
    out
}

/// The text of inline code spans kept, their backticks dropped (for heading text).
fn code_spans_as_text(line: &str) -> String {
    line.replace('`', "")
}

/// The destinations of the inline links and images (`[text](dest "title")`) of a line
/// without code spans, and of a reference definition (`[label]: dest`).
fn link_destinations(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let t = line.trim_start();
    if line.len() - t.len() <= 3 && t.starts_with('[') {
        if let Some(end) = t.find(']') {
            if end > 1 && t[end + 1..].starts_with(':') {
                if let Some(dest) = t[end + 2..].split_whitespace().next() {
                    out.push(dest.trim_start_matches('<').trim_end_matches('>').to_string());
                }
            }
        }
    }
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i + 1 < chars.len() {
        if chars[i] == ']' && chars[i + 1] == '(' {
            // The destination: up to the matching `)`, or `<...>`.
            let mut j = i + 2;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            let dest: String = if j < chars.len() && chars[j] == '<' {
                chars[j + 1..].iter().take_while(|&&c| c != '>').collect()
            } else {
                let mut depth = 0;
                let mut d = String::new();
                for &c in &chars[j..] {
                    match c {
                        '(' => depth += 1,
                        ')' if depth == 0 => break,
                        ')' => depth -= 1,
                        ' ' => break,
                        _ => {}
                    }
                    d.push(c);
                }
                d
            };
            out.push(dest);
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// `%XX` escapes decoded.
fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(hi * 16 + lo);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rendered text of a heading's Markdown: link and image text without their
/// destinations, code spans without backticks, no emphasis markers or HTML tags.
fn heading_text(raw: &str) -> String {
    let text = code_spans_as_text(raw);
    // [text](dest) and ![alt](dest) -> text
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == ']' && i + 1 < chars.len() && chars[i + 1] == '(' {
            let mut depth = 0;
            let mut j = i + 2;
            while j < chars.len() {
                match chars[j] {
                    '(' => depth += 1,
                    ')' if depth == 0 => break,
                    ')' => depth -= 1,
                    _ => {}
                }
                j += 1;
            }
            i = j + 1;
            continue;
        }
        if chars[i] == '[' || (chars[i] == '!' && i + 1 < chars.len() && chars[i + 1] == '[') {
            i += 1;
            continue;
        }
        if chars[i] == '<' {
            if let Some(end) = chars[i..].iter().position(|&c| c == '>') {
                let tag: String = chars[i + 1..i + end].iter().collect();
                if tag.starts_with('/') || tag.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
                    i += end + 1;
                    continue;
                }
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out.replace('*', "")
}

/// A heading's anchor as GitHub makes it: lower case, every character that is not a
/// letter, a digit, a space, `-` or `_` dropped, each space a `-`.
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a Markdown text: its headings' (ATX and setext; a repeated one gets
/// `-1`, `-2`, ... as GitHub numbers them) and HTML `id`/`name` anchors.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    let mut add = |s: String, out: &mut BTreeSet<String>| {
        let n = seen.entry(s.clone()).or_insert(0);
        let anchor = if *n == 0 { s.clone() } else { format!("{s}-{n}") };
        *n += 1;
        out.insert(anchor);
    };
    let lines = prose_lines(text);
    for (k, &(number, line)) in lines.iter().enumerate() {
        let t = line.trim_start_matches(' ');
        let indent = line.len() - t.len();
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if indent <= 3 && (1..=6).contains(&hashes) && (t.len() == hashes || t[hashes..].starts_with([' ', '\t'])) {
            let body = t[hashes..].trim();
            let body = body.trim_end_matches('#').trim_end();
            add(slug(&heading_text(body)), &mut out);
            continue;
        }
        // Setext: a line of `=` or `-` under a paragraph line (not a table or list line).
        let under = line.trim();
        if indent <= 3
            && !under.is_empty()
            && (under.chars().all(|c| c == '=') || under.chars().all(|c| c == '-'))
            && k > 0
        {
            let (prev_number, prev) = lines[k - 1];
            let p = prev.trim();
            let paragraph = !(p.is_empty() || p.starts_with(['|', '*', '-', '+', '>', '#']));
            if prev_number + 1 == number && paragraph {
                add(slug(&heading_text(p)), &mut out);
            }
        }
        for attr in ["id=\"", "name=\""] {
            let mut rest = line;
            while let Some(at) = rest.find(attr) {
                let after = &rest[at + attr.len()..];
                if let Some(end) = after.find('"') {
                    if line.contains("<a ") || line.contains("<a\t") || line.contains("<span ") {
                        out.insert(after[..end].to_string());
                    }
                    rest = &after[end..];
                } else {
                    break;
                }
            }
        }
    }
    out
}

/// `path` with `.` and `..` resolved, or `None` if it climbs out of the repository.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(p) => out.push(p),
            _ => return None,
        }
    }
    Some(out)
}

/// Every broken relative link of one page: `page:line: link: why`.
fn broken_links(page: &Path) -> Vec<String> {
    let root = repo();
    let text = std::fs::read_to_string(page).unwrap();
    let rel_page = page.strip_prefix(&root).unwrap().to_path_buf();
    let dir = rel_page.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut cache: HashMap<PathBuf, BTreeSet<String>> = HashMap::new();
    let mut out = Vec::new();
    for (number, line) in prose_lines(&text) {
        for dest in link_destinations(&without_code_spans(line)) {
            let where_ = format!("{}:{number}: ({dest})", rel_page.display());
            let has_scheme = dest.split_once(':').is_some_and(|(s, _)| {
                !s.is_empty()
                    && s.chars().next().unwrap().is_ascii_alphabetic()
                    && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            });
            if dest.is_empty() {
                out.push(format!("{where_}: an empty link"));
                continue;
            }
            if has_scheme || dest.starts_with("//") {
                continue;
            }
            let (path, fragment) = match dest.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (dest.as_str(), None),
            };
            let path = percent_decode(path);
            let target = if path.is_empty() {
                rel_page.clone()
            } else if let Some(abs) = path.strip_prefix('/') {
                PathBuf::from(abs)
            } else {
                dir.join(&path)
            };
            let Some(target) = normalise(&target) else {
                out.push(format!("{where_}: points outside the repository"));
                continue;
            };
            let full = root.join(&target);
            if !full.exists() {
                out.push(format!("{where_}: {} does not exist", target.display()));
                continue;
            }
            let Some(fragment) = fragment else { continue };
            if !full.is_file() || full.extension().is_none_or(|x| x != "md") {
                continue;
            }
            let fragment = percent_decode(fragment);
            let known =
                cache.entry(target.clone()).or_insert_with(|| anchors(&std::fs::read_to_string(&full).unwrap()));
            if !known.contains(&fragment) {
                out.push(format!(
                    "{where_}: {} has no heading with the anchor #{fragment} (its anchors: {})",
                    target.display(),
                    known.iter().map(|a| format!("#{a}")).collect::<Vec<_>>().join(" ")
                ));
            }
        }
    }
    out
}

#[test]
fn every_relative_link_of_the_readme_and_docs_names_a_file_and_heading_that_exist() {
    let pages = pages();
    assert!(pages.len() > 1, "docs/ has no pages: {pages:?}");
    let broken: Vec<String> = pages.iter().flat_map(|p| broken_links(p)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_are_computed_as_github_computes_them() {
    let text = "# Every ring size: `check --sizes`\n\
                ## Against JAX's own interpreter\n\
                ## What `check all` finds\n\
                ## Kernels that ask for the TPU's sizes\n\
                ## Agreement (measured)\n\
                ## Which synchronisation could go: `--sync-only`\n\
                ## A [linked](other.md) *heading* ##\n\
                ## Tests\n\
                ### Tests\n\
                ```sh\n\
                # not a heading\n\
                ```\n\
                Setext heading\n\
                ---\n";
    let got = anchors(text);
    for want in [
        "every-ring-size-check---sizes",
        "against-jaxs-own-interpreter",
        "what-check-all-finds",
        "kernels-that-ask-for-the-tpus-sizes",
        "agreement-measured",
        "which-synchronisation-could-go---sync-only",
        "a-linked-heading",
        "tests",
        "tests-1",
        "setext-heading",
    ] {
        assert!(got.contains(want), "{want} missing from {got:?}");
    }
    assert!(!got.contains("not-a-heading"), "{got:?}");
}

#[test]
fn links_are_found_outside_code_and_urls_are_not_followed() {
    assert_eq!(
        link_destinations(&without_code_spans("see [a](docs/a.md#x), `[b](nope.md)` and ![c](<img one.png> \"t\")")),
        ["docs/a.md#x", "img one.png"]
    );
    assert_eq!(link_destinations("[label]: ../BENCHMARKS.md"), ["../BENCHMARKS.md"]);
    assert_eq!(percent_decode("a%20b%2"), "a b%2");
    let lines = prose_lines("a [x](y.md)\n```\n[z](w.md)\n```\nb");
    assert_eq!(lines.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 5]);
}
