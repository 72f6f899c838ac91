//! A crate's import graph read from its source, for the layer tests of the SDK
//! (`tests/layers.rs`) and of the mock server (`mock-server/tests/layers.rs`): every path named
//! from `crate::` or `super::`, `use` groups expanded, resolved to the module it lands in. A
//! parent module naming its own children (declaring them, re-exporting them) is not an import; a
//! child using its parent's items is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `rolling/flags.rs` → `rolling/flags`, `rolling/mod.rs` → `rolling`.
fn module_of(rel: &str) -> String {
    let m = rel.trim_end_matches(".rs");
    m.strip_suffix("/mod").unwrap_or(m).to_owned()
}

/// Every source file under `root`, by module.
pub fn sources(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    files(root, root, &mut out);
    out
}

fn files(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap();
            out.insert(module_of(&rel), text);
        }
    }
}

/// The code a build runs: comments and the unit tests' module (`#[cfg(…test…)]` then
/// `mod tests`) left out.
pub fn code(text: &str) -> String {
    let mut end = text.len();
    let mut from = 0;
    while let Some(at) = text[from..].find("\nmod tests").map(|i| i + from) {
        let attribute = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if text[attribute..at].starts_with("#[cfg(") && text[attribute..at].contains("test") {
            end = attribute;
            break;
        }
        from = at + 1;
    }
    let text = &text[..end];
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every path the code names from `crate::` or `super::`, as segments from the crate root, with
/// `use` groups (`crate::{a, b::{c, d}}`) expanded.
fn paths(module: &str, code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start).map(|i| i + from) {
            from = i + start.len();
            if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':') {
                continue;
            }
            let base: Vec<String> = if start == "crate::" {
                Vec::new()
            } else {
                // `super` of `a/b/c` (a file) is `a/b`; of `a/b` (a mod.rs, also a file) the same rule.
                let mut segs: Vec<String> = module.split('/').map(str::to_owned).collect();
                segs.pop();
                segs
            };
            expand(&code[from..], base, &mut out);
        }
    }
    out
}

/// Reads one path (or group) at the front of `rest`, pushing each full path onto `out`.
pub fn expand(rest: &str, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut s = rest;
    loop {
        if let Some(group) = s.strip_prefix('{') {
            let mut depth = 1;
            let mut end = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end = i;
                    break;
                }
            }
            let inner = &group[..end];
            let mut depth = 0;
            let mut part_start = 0;
            for (i, c) in inner.char_indices().chain(std::iter::once((inner.len(), ','))) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let part = inner[part_start..i].trim();
                        if !part.is_empty() && part != "self" {
                            expand(part, prefix.clone(), out);
                        }
                        part_start = i + 1;
                    }
                    _ => {}
                }
            }
            out.push(prefix);
            return;
        }
        let len = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
        if len == 0 {
            out.push(prefix);
            return;
        }
        prefix.push(s[..len].to_owned());
        s = &s[len..];
        match s.strip_prefix("::") {
            Some(next) => s = next,
            None => {
                out.push(prefix);
                return;
            }
        }
    }
}

/// The module a path lands in: its longest prefix that is a module of the crate.
fn resolve(path: &[String], modules: &BTreeSet<String>) -> Option<String> {
    (1..=path.len()).rev().map(|n| path[..n].join("/")).find(|m| modules.contains(m))
}

/// Each module of the crate whose sources are under `root`, with the modules it imports.
pub fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let sources = sources(root);
    let modules: BTreeSet<String> = sources.keys().cloned().collect();
    let mut edges = BTreeMap::new();
    for (module, text) in &sources {
        let mut deps = BTreeSet::new();
        for path in paths(module, &code(text)) {
            if let Some(dep) = resolve(&path, &modules) {
                let declares_own_child = dep.starts_with(&format!("{module}/")) || module == "lib" || module == "main";
                if dep != *module && !declares_own_child {
                    deps.insert(dep);
                }
            }
        }
        edges.insert(module.clone(), deps);
    }
    edges
}

/// Every import circle of `edges`, each printed whole (`a → b → a`).
pub fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    // Depth-first search; a grey node met again closes a circle, printed whole.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
        found: &mut Vec<String>,
    ) {
        state.insert(n.to_owned(), 1);
        stack.push(n.to_owned());
        for d in edges.get(n).into_iter().flatten() {
            match state.get(d.as_str()).copied().unwrap_or(0) {
                0 => visit(d, edges, state, stack, found),
                1 => {
                    let at = stack.iter().position(|s| s == d).unwrap();
                    found.push(format!("{} → {d}", stack[at..].join(" → ")));
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
    }
    let (mut state, mut found) = (BTreeMap::new(), Vec::new());
    for n in edges.keys() {
        if !state.contains_key(n.as_str()) {
            visit(n, edges, &mut state, &mut Vec::new(), &mut found);
        }
    }
    found
}

/// Every import of a module from a layer above its own (`layer` numbers a module, lowest first).
pub fn upward(edges: &BTreeMap<String, BTreeSet<String>>, layer: impl Fn(&str) -> usize) -> Vec<String> {
    let mut out = Vec::new();
    for (module, deps) in edges {
        for dep in deps {
            if layer(dep) > layer(module) {
                out.push(format!("{module} → {dep}"));
            }
        }
    }
    out
}

/// The row of `layers` (lowest first) that holds `module`'s top-level module.
pub fn layer(layers: &[&[&str]], module: &str) -> usize {
    let top = module.split('/').next().unwrap_or(module);
    layers
        .iter()
        .position(|row| row.contains(&top))
        .unwrap_or_else(|| panic!("module {top} is in no layer: add it to LAYERS"))
}
