//! The mock server's layers, checked on the source: every module imports only from its own layer
//! or below, and no two files import each other, however far round.

#[path = "../../tests/support/import_graph.rs"]
mod import_graph;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use import_graph::{circles, code, expand, sources, upward};

/// Lowest first. A module may import from its own row and the rows above it in this list.
const LAYERS: [&[&str]; 11] = [
    &["bridge", "causes", "clock", "recorded", "tenant_sockets"],
    &["store"],
    &["docdb"],
    &["replicas"],
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

/// The protocol's files are compiled twice: as their own crate (the server's) and as a module of
/// the SDK (`#[path]` in its `lib.rs`). They read the same either way only while they name each
/// other with `super::` and keep their macros in textual scope: `crate::` or `$crate` would mean
/// another module in the SDK, and `#[macro_export]` would put a macro at the SDK's root.
#[test]
fn the_protocol_reads_the_same_as_a_crate_and_as_the_sdks_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../protocol/src");
    let files = sources(&root);
    assert!(files.contains_key("errors"), "{:?}", files.keys());
    let mut found = Vec::new();
    for (module, text) in &files {
        for (n, line) in code(text).lines().enumerate() {
            for word in ["crate::", "$crate", "macro_export"] {
                if line.contains(word) {
                    found.push(format!("{module} (line {} of its code): {word}", n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}
