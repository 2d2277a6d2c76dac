//! The agent's source keeps the shape docs/architecture.md draws: its layers call one way (the
//! runtime drives the engines, the engines use the shared probe machinery, every layer may use
//! the FFI layer, none names a layer above it), no engine names another engine, process-wide
//! statics are few and each says why it is one, and no source file is long.
//!
//! The module graph is read from the source: every `crate::`, `super::` and `self::` path and
//! every item of a `use` list, resolved from the module the file (or the inline `mod` block) is,
//! to the longest module it names. `tools/module_cycles.py` draws the same graph.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// At most this many process-wide statics (docs/architecture.md, "Layers and state").
const MAX_STATICS: usize = 40;
/// Source files longer than this are split.
const MAX_LINES: usize = 800;

/// The layers, bottom up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    Ffi,
    Probe,
    Engine,
    Runtime,
}

/// A module's place: its layer and, for an engine's modules, the engine (its folder).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    layer: Layer,
    engine: Option<String>,
}

struct File {
    path: PathBuf,
    module: Vec<String>,
    raw: String,
    code: String,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn files() -> Vec<File> {
    let mut out = Vec::new();
    let mut dirs = vec![src()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src()).unwrap().with_extension("");
                let mut module: Vec<String> = rel
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect();
                if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                    module.pop();
                }
                let raw = std::fs::read_to_string(&path).unwrap();
                let code = strip(&raw);
                out.push(File {
                    path,
                    module,
                    raw,
                    code,
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// `src` with comments, strings and char literals blanked (spaces, newlines kept, a string
/// keeps its quotes), so that only code is searched for paths and offsets stay those of `src`.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut blank = |from: usize, to: usize, keep_ends: bool| {
        let to = to.min(b.len());
        for (k, c) in out.iter_mut().enumerate().take(to).skip(from) {
            let end = keep_ends && (k == from || k + 1 == to);
            if !end && *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |k: usize| b[k].is_ascii_alphanumeric() || b[k] == b'_';
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            blank(start, i, false);
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            blank(start, i, false);
        } else if (b[i] == b'r' || b[i..].starts_with(b"br"))
            && (i == 0 || !ident(i - 1))
            && raw_string_start(&b[i..]).is_some()
        {
            let (skip, hashes) = raw_string_start(&b[i..]).unwrap();
            i += skip;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while i < b.len() && !b[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
            blank(start, i, false);
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            blank(start, i, true);
        } else if b[i] == b'\'' && char_literal(&b[i..]).is_some() {
            i += char_literal(&b[i..]).unwrap();
            blank(start, i, true);
        } else {
            i += 1;
        }
    }
    // Only ASCII bytes were replaced, by ASCII spaces: still UTF-8 wherever it was.
    String::from_utf8_lossy(&out).into_owned()
}

/// `r"`, `r#"`, `br"`...: the bytes up to the quote and the number of `#`.
fn raw_string_start(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = if b.starts_with(b"br") { 2 } else { 1 };
    let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
    i += hashes;
    (b.get(i) == Some(&b'"')).then_some((i + 1, hashes))
}

/// The length of a char literal at the start of `b` (`'a'`, `'\n'`, `'\u{7f}'`), not a
/// lifetime.
fn char_literal(b: &[u8]) -> Option<usize> {
    match b.get(1)? {
        b'\\' => Some(3 + b.get(3..)?.iter().position(|&c| c == b'\'')? + 1),
        _ => {
            let len = std::str::from_utf8(&b[1..b.len().min(5)])
                .ok()
                .or_else(|| std::str::from_utf8(&b[1..2]).ok())?
                .chars()
                .next()?
                .len_utf8();
            (b.get(1 + len) == Some(&b'\'')).then_some(len + 2)
        }
    }
}

/// The end of the block whose `{` is at `open`.
fn block_end(code: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// Every occurrence of keyword `word` as a whole word.
fn words<'a>(code: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(word).map(|(i, _)| i).filter(move |&i| {
        let b = code.as_bytes();
        let before = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let end = i + word.len();
        let after = end >= b.len() || !(b[end].is_ascii_alphanumeric() || b[end] == b'_');
        before && after
    })
}

fn ident_at(code: &str, at: usize) -> &str {
    let rest = &code[at..];
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..len]
}

fn skip_space(code: &str, at: usize) -> usize {
    at + code[at..].len() - code[at..].trim_start().len()
}

/// Inline `mod name { .. }` blocks of a file: (start, end, module path).
fn inline_modules(file: &File) -> Vec<(usize, usize, Vec<String>)> {
    let mut out = Vec::new();
    for at in words(&file.code, "mod") {
        let name_at = skip_space(&file.code, at + 3);
        let name = ident_at(&file.code, name_at);
        let after = skip_space(&file.code, name_at + name.len());
        if !name.is_empty() && file.code[after..].starts_with('{') {
            let mut module = file.module.clone();
            module.push(name.to_owned());
            out.push((at, block_end(&file.code, after), module));
        }
    }
    out
}

/// The paths a file names, with their offsets: `crate::..`, `super::..`, `self::..` paths and
/// the items of `use` lists rooted at one of them.
fn named_paths(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for root in ["crate", "super", "self"] {
        // A root inside a path (`super::super`) is part of the path found at its start.
        for at in words(code, root).filter(|&at| !code[..at].ends_with("::")) {
            let mut end = at + root.len();
            let mut path = root.to_owned();
            while code[end..].starts_with("::") {
                let next = end + 2;
                if code[next..].starts_with('{') {
                    let close = block_end(code, next);
                    for item in expand(&code[next + 1..close - 1]) {
                        out.push((at, format!("{path}::{item}")));
                    }
                    break;
                }
                let name = ident_at(code, next);
                if name.is_empty() {
                    break;
                }
                path = format!("{path}::{name}");
                end = next + name.len();
            }
            if !path.contains("::") {
                continue;
            }
            out.push((at, path));
        }
    }
    out
}

/// The paths of a `use` list's body (`a, b::{c, d}, e as f`), relative to the list.
fn expand(body: &str) -> Vec<String> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in body
        .char_indices()
        .chain(std::iter::once((body.len(), ',')))
    {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                let item = body[start..i].trim();
                start = i + 1;
                if item.is_empty() {
                    continue;
                }
                match item.split_once("::{") {
                    Some((head, rest)) => {
                        let rest = rest.strip_suffix('}').unwrap_or(rest);
                        items.extend(expand(rest).into_iter().map(|p| format!("{head}::{p}")));
                    }
                    None => items.push(item.split(" as ").next().unwrap().trim().to_owned()),
                }
            }
            _ => {}
        }
    }
    items
}

/// The module `path` names from module `here`: the longest known module it begins with.
fn resolve(path: &str, here: &[String], known: &BTreeSet<Vec<String>>) -> Vec<String> {
    let mut parts = path.split("::").peekable();
    let mut base: Vec<String> = match parts.peek() {
        Some(&"crate") => {
            parts.next();
            Vec::new()
        }
        _ => here.to_vec(),
    };
    while let Some(&p) = parts.peek() {
        match p {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => break,
        }
        parts.next();
    }
    for p in parts {
        let mut next = base.clone();
        next.push(p.to_owned());
        if !known.contains(&next) {
            break;
        }
        base = next;
    }
    base
}

/// Where a module sits; `None` for the crate root (which wires the layers) and the unit tests'
/// helpers (`testing`).
fn place(module: &[String]) -> Option<Place> {
    let layer = match module.first().map(String::as_str)? {
        "ffi" => Layer::Ffi,
        "probe" => Layer::Probe,
        "engine" => Layer::Engine,
        "runtime" => Layer::Runtime,
        "testing" => return None,
        other => panic!("module {other} is in no layer: add it to one (docs/architecture.md)"),
    };
    // An engine is a folder of `engine/`; the files directly in `engine/` are the registry.
    let engine = match (layer, module.get(1)) {
        (Layer::Engine, Some(name)) if src().join("engine").join(name).is_dir() => {
            Some(name.clone())
        }
        _ => None,
    };
    Some(Place { layer, engine })
}

#[test]
fn layers_call_one_way_and_engines_stay_apart() {
    let files = files();
    let mut known: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    for f in &files {
        known.extend(inline_modules(f).into_iter().map(|m| m.2));
    }
    let mut wrong = Vec::new();
    for f in &files {
        let blocks = inline_modules(f);
        for (at, path) in named_paths(&f.code) {
            let here = blocks
                .iter()
                .filter(|(start, end, _)| (*start..*end).contains(&at))
                .max_by_key(|(start, _, _)| *start)
                .map_or(&f.module, |b| &b.2);
            let (Some(from), Some(to)) = (place(here), place(&resolve(&path, here, &known))) else {
                continue;
            };
            let why = if to.layer > from.layer {
                "runs up a layer"
            } else if from.engine.is_some() && to.engine.is_some() && from.engine != to.engine {
                "is one engine naming another"
            } else {
                continue;
            };
            let line = f.raw[..at].matches('\n').count() + 1;
            let file = f.path.strip_prefix(src()).unwrap().display();
            wrong.push(format!("src/{file}:{line}: `{path}` {why}"));
        }
    }
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports against the layers (docs/architecture.md):\n{}",
        wrong.join("\n")
    );
}

/// A graph with an upward path is caught: the checker itself works on this crate's shapes.
#[test]
fn an_upward_import_and_an_engine_naming_another_are_found() {
    let known: BTreeSet<Vec<String>> = [
        vec!["engine"],
        vec!["engine", "cpu"],
        vec!["engine", "cpu", "adaptive"],
        vec!["runtime"],
        vec!["runtime", "session"],
        vec!["probe"],
        vec!["probe", "ring"],
    ]
    .into_iter()
    .map(|m| m.into_iter().map(str::to_owned).collect())
    .collect();
    let here: Vec<String> = vec!["engine".into(), "cpu".into(), "adaptive".into()];
    let code = strip(
        "use crate::{probe::ring::Ring, runtime::session};\n\
         use super::super::count::Count; // crate::runtime in a comment\n\
         let s = \"crate::runtime::x\"; let c = 'x';",
    );
    let named: Vec<Vec<String>> = named_paths(&code)
        .into_iter()
        .map(|(_, p)| resolve(&p, &here, &known))
        .collect();
    let show: Vec<String> = named.iter().map(|m| m.join("::")).collect();
    assert_eq!(show, ["probe::ring", "runtime::session", "engine"]);
    assert_eq!(place(&named[1]).unwrap().layer, Layer::Runtime);
    assert_eq!(
        place(&["engine".into(), "cpu".into()])
            .unwrap()
            .engine
            .as_deref(),
        Some("cpu")
    );
    assert_eq!(
        place(&["engine".into(), "needs".into()]).unwrap().engine,
        None
    );
}

/// Process-wide statics: `static` items outside `thread_local!` and `extern` blocks.
fn statics(f: &File) -> Vec<(usize, String)> {
    let mut excluded = Vec::new();
    for at in f.code.match_indices("thread_local!").map(|(i, _)| i) {
        let open = at + f.code[at..].find('{').unwrap();
        excluded.push(at..block_end(&f.code, open));
    }
    for at in words(&f.code, "extern") {
        let rest = f.code[at..].trim_start_matches("extern").trim_start();
        let rest = rest.trim_start_matches("\"\"").trim_start();
        if rest.starts_with('{') {
            let open = at + f.code[at..].find('{').unwrap();
            excluded.push(at..block_end(&f.code, open));
        }
    }
    words(&f.code, "static")
        // `'static` is a lifetime.
        .filter(|&at| at == 0 || f.code.as_bytes()[at - 1] != b'\'')
        .filter(|at| !excluded.iter().any(|r| r.contains(at)))
        .filter_map(|at| {
            let name_at = skip_space(&f.code, at + "static".len());
            let name = ident_at(&f.code, name_at);
            let name = if name == "mut" {
                ident_at(&f.code, skip_space(&f.code, name_at + 3))
            } else {
                name
            };
            // `&'static`, `T: 'static` are lifetimes, not items.
            let item = name.chars().next().is_some_and(|c| c.is_ascii_uppercase());
            item.then(|| (at, name.to_owned()))
        })
        .collect()
}

#[test]
fn few_process_wide_statics_each_saying_why() {
    let mut all = Vec::new();
    let mut silent = Vec::new();
    for f in files() {
        for (at, name) in statics(&f) {
            let line = f.raw[..at].matches('\n').count();
            let file = f.path.strip_prefix(src()).unwrap().display().to_string();
            // The lines above the item, attributes skipped, must be a comment.
            let lines: Vec<&str> = f.raw.lines().take(line).collect();
            let above = lines.iter().rev().find(|l| !l.trim().starts_with("#["));
            if !above.is_some_and(|l| l.trim().starts_with("//")) {
                silent.push(format!("src/{file}:{}: {name}", line + 1));
            }
            all.push(format!("src/{file}:{}: {name}", line + 1));
        }
    }
    assert!(
        silent.is_empty(),
        "statics without a comment saying why they are process-wide:\n{}",
        silent.join("\n")
    );
    assert!(
        all.len() <= MAX_STATICS,
        "{} process-wide statics (at most {MAX_STATICS}): session state goes in the session \
         object\n{}",
        all.len(),
        all.join("\n")
    );
}

#[test]
fn no_source_file_is_long() {
    let long: Vec<String> = files()
        .iter()
        .filter(|f| f.raw.lines().count() > MAX_LINES)
        .map(|f| format!("{}: {} lines", f.path.display(), f.raw.lines().count()))
        .collect();
    assert!(
        long.is_empty(),
        "split these (at most {MAX_LINES} lines):\n{}",
        long.join("\n")
    );
}
