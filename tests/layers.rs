//! The SDK's layers, checked on the source: the platform-free `core` at the bottom (below it only
//! the protocol crate's sources, which name nothing of the SDK: they build alone as a crate, on
//! serde), the browser adapters (`web`) above it, the `#[wasm_bindgen]` facade (`js`) above both.
//! No module imports from a layer above its own, and no two files import each other, however far
//! round. A JS snippet (`#[wasm_bindgen(module = "/src/…")]`) belongs to the layer of its
//! directory: the browser adapters' JS is `src/web/browser.js`, so `web` loads nothing of `js`.
#![cfg(not(target_arch = "wasm32"))]

#[path = "support/import_graph.rs"]
mod import_graph;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use import_graph::{circles, upward};

/// Lowest first. A module may import from its own row and the rows below it.
const LAYERS: [&[&str]; 3] = [&["core"], &["web"], &["js", "lib"]];

fn layer(module: &str) -> usize {
    import_graph::layer(&LAYERS, module)
}

fn sdk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn protocol() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol")
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    import_graph::graph(&sdk())
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let upward = upward(&graph(), layer);
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

/// Each module with the JS snippets it loads, by path under `src/` (`web/browser.js`).
fn snippets() -> BTreeMap<String, BTreeSet<String>> {
    const AT: &str = "module = \"/src/";
    let mut edges = BTreeMap::new();
    for (module, text) in import_graph::sources(&sdk()) {
        let code = import_graph::code(&text);
        let loads: BTreeSet<String> =
            code.split(AT).skip(1).filter_map(|rest| rest.split_once('"')).map(|(path, _)| path.to_owned()).collect();
        edges.insert(module, loads);
    }
    edges
}

#[test]
fn no_module_loads_js_from_a_layer_above_its_own() {
    let edges = snippets();
    for path in edges.values().flatten() {
        assert!(sdk().join(path).is_file(), "src/{path} is loaded but is no file");
    }
    let upward = upward(&edges, layer);
    assert!(upward.is_empty(), "JS loaded from a layer above:\n{}", upward.join("\n"));
}

#[test]
fn no_import_circles_in_the_sdk_or_the_protocol() {
    for (what, edges) in [("the SDK", graph()), ("the protocol crate", import_graph::graph(&protocol().join("src")))] {
        let found = circles(&edges);
        assert!(found.is_empty(), "import circles in {what}:\n{}", found.join("\n"));
    }
}

#[test]
fn the_protocol_crate_builds_on_serde_alone() {
    let manifest = std::fs::read_to_string(protocol().join("Cargo.toml")).unwrap();
    let deps = manifest.split("[dependencies]").nth(1).unwrap().split("\n[").next().unwrap();
    let entries: Vec<(&str, &str)> =
        deps.lines().filter_map(|l| l.split_once('=')).map(|(name, rest)| (name.trim(), rest)).collect();
    let names: Vec<&str> = entries.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["serde", "serde_json", "ts-rs"], "the protocol crate's dependencies");
    // ts-rs writes the TypeScript, only for the check of the package's declarations.
    assert!(entries[2].1.contains("optional = true"), "ts-rs is behind the `ts` feature");
    let version = manifest.lines().find_map(|l| l.strip_prefix("version = ")).unwrap().trim_matches('"');
    assert_eq!(version, env!("CARGO_PKG_VERSION"), "the protocol crate's version (its SDK_VERSION) is the SDK's");
}

#[test]
fn the_reader_finds_what_it_checks() {
    // The checks above prove nothing if the reader misses imports: these are known to exist.
    let edges = graph();
    for (from, to) in
        [("js/auth_manager", "core/session"), ("web/storage", "core/ports"), ("core/session", "core/token")]
    {
        assert!(edges.get(from).is_some_and(|deps| deps.contains(to)), "{from} → {to} not seen: {:?}", edges.get(from));
    }
    let loads = snippets();
    for (from, to) in [("web/storage", "web/browser.js"), ("js/errors", "js/error_class.js")] {
        assert!(
            loads.get(from).is_some_and(|js| js.contains(to)),
            "{from} loading {to} not seen: {:?}",
            loads.get(from)
        );
    }
}
