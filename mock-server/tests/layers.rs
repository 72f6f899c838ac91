//! The mock server's layers, checked on the source: every module imports only from its own layer
//! or below, and no two files import each other, however far round.

#[path = "../../tests/support/import_graph.rs"]
mod import_graph;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use import_graph::{circles, code, expand, sources, upward};

/// Lowest first. A module may import from its own row and the rows above it in this list.
const LAYERS: [&[&str]; 10] = [
    &["bridge", "causes", "clock", "realtime", "recorded"],
    &["store"],
    &["docdb"],
    &["settings"],
    &["auth"],
    &["rolling", "seed"],
    &["state"],
    &["crons"],
    &["error", "extract", "rate_limit"],
    &["routes", "app", "lib", "main", "metrics"],
];

fn layer(module: &str) -> usize {
    import_graph::layer(&LAYERS, module)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    import_graph::graph(&root())
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let upward = upward(&graph(), layer);
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn no_import_circles() {
    let found = circles(&graph());
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn no_http_type_below_the_http_edge() {
    let sources = sources(&root());
    let edge = layer("error");
    let mut found = Vec::new();
    for (module, text) in &sources {
        if layer(module) < edge {
            for http in ["axum::", "AppError", "StatusCode"] {
                if code(text).contains(http) {
                    found.push(format!("{module}: {http}"));
                }
            }
        }
    }
    assert!(found.is_empty(), "HTTP types below routes/ and the edge: {found:?}");
}

#[test]
fn the_reader_finds_what_it_checks() {
    // The checks above prove nothing if the reader misses imports: these are known to exist.
    let edges = graph();
    for (from, to) in [
        ("routes/admin", "rolling/flags"),
        ("rolling/rotate", "docdb"),
        ("crons/runs", "crons/cluster_lock"),
        ("rolling/archive", "rolling/days"),
    ] {
        assert!(edges[from].contains(to), "{from} → {to} not seen: {:?}", edges[from]);
    }
    let mut out = Vec::new();
    expand("{a, b::{c, d}, e::f}", vec![], &mut out);
    assert!(
        out.contains(&vec!["b".to_owned(), "d".to_owned()]) && out.contains(&vec!["e".to_owned(), "f".to_owned()]),
        "{out:?}"
    );
}
