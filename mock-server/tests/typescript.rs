//! The package's generated TypeScript declarations (`pkg-template/protocol.d.ts`, beside the
//! hand-written `api.d.ts`) are exactly what the Rust types declare: the protocol's enums as ts-rs
//! writes them and the error-code unions from the code lists. `make types` writes the file whole
//! (`WRITE_TYPES=1`); this test fails on any difference, so a wire change cannot leave the
//! package's types behind. The same goes for the package's `codes.js` and its declarations: the
//! error codes as values, for code that compares a failure's `code` by name.

use std::collections::BTreeSet;
use std::path::PathBuf;

fn template(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../pkg-template").join(name)
}

/// `protocol.d.ts` as the Rust types make it.
fn generated() -> String {
    let mut decls = protocol::typescript::declarations();
    decls.push(format!(
        "/** The SDK's own codes, when the server gave none. */\n{}",
        protocol::typescript::union("SdkErrorCode", session_broker::core::codes::ALL)
    ));
    decls.push(format!(
        "/** Every action the SDK knows: `hasPermission` and `requirePermission` take these and the app's own. */\n{}",
        protocol::typescript::union("Permission", protocol::permissions::ALL)
    ));
    let head = "// Generated from the Rust types by `make types`; do not edit by hand.\n";
    [head.to_owned(), decls.iter().map(|d| format!("{d}\n")).collect::<Vec<_>>().join("\n")].concat()
}

/// Writes `text` to `path` in one step (a file beside it, renamed over it): the other tests of
/// this file read the declarations at the same time, and must never see one half written.
fn write_whole(path: &std::path::Path, text: &str) {
    let part = path.with_extension("part");
    std::fs::write(&part, text).unwrap();
    std::fs::rename(&part, path).unwrap();
}

#[test]
fn the_package_declares_what_the_rust_types_generate() {
    let path = template("protocol.d.ts");
    let want = generated();
    if std::env::var_os("WRITE_TYPES").is_some() {
        write_whole(&path, &want);
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        text == want,
        "{} differs from the Rust types: run `make types`.\n--- in the file:\n{text}\n--- generated:\n{want}",
        path.display()
    );
}

/// Every code a failure may carry, the SDK's then the server's, each once.
fn all_codes() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = Vec::new();
    for code in session_broker::core::codes::ALL.iter().chain(protocol::errors::ALL) {
        if !all.contains(code) {
            all.push(code);
        }
    }
    all
}

/// `codes.js` and `codes.d.ts` of the package, as the code lists make them.
fn codes_files() -> [(PathBuf, String); 2] {
    let head = "// Generated from the Rust code lists by `make types`; do not edit by hand.\n";
    let doc = "/** Every error code a `SessionBrokerError` or a failed call's `code` may carry, by name. */\n";
    let js: String = all_codes().iter().map(|c| format!("  {}: \"{c}\",\n", c.to_ascii_uppercase())).collect();
    let ts: String = all_codes().iter().map(|c| format!("  readonly {}: \"{c}\";\n", c.to_ascii_uppercase())).collect();
    [
        (template("codes.js"), format!("{head}{doc}export const ErrorCodes = Object.freeze({{\n{js}}});\n")),
        (template("codes.d.ts"), format!("{head}{doc}export declare const ErrorCodes: {{\n{ts}}};\n")),
    ]
}

#[test]
fn the_package_exports_every_code_the_rust_lists_hold() {
    for (path, want) in codes_files() {
        if std::env::var_os("WRITE_TYPES").is_some() {
            write_whole(&path, &want);
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            text == want,
            "{} differs from the code lists: run `make types`.\n--- generated:\n{want}",
            path.display()
        );
    }
}

/// The names `file` declares at its top level (`export type X`, `export interface X`, …).
fn declared(file: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(template(file)).unwrap();
    let heads = ["export type ", "export interface ", "export declare class ", "export declare function "];
    text.lines()
        .filter_map(|l| heads.iter().find_map(|h| l.strip_prefix(h)))
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
        .collect()
}

fn identifiers(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(str::to_owned)
}

/// The generated `.d.ts` (wasm-bindgen's, from the `#[wasm_bindgen]` annotations of `src/js/`)
/// imports, from each of the package's two declaration files, exactly the names its signatures
/// use: tsc would find one missing only in `make test-package`, after a release build.
#[test]
fn the_bindings_import_the_names_their_signatures_use() {
    let js = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../src/js");
    let mut used = BTreeSet::new();
    for entry in std::fs::read_dir(&js).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        for key in ["typescript_type = \"", "unchecked_return_type = \"", "unchecked_param_type = \""] {
            for rest in text.split(key).skip(1) {
                used.extend(identifiers(rest.split('"').next().unwrap()));
            }
        }
    }
    let types = std::fs::read_to_string(js.join("types.rs")).unwrap();
    for file in ["api", "protocol"] {
        let from = format!("}} from \"./{file}.js\";");
        let end = types.find(&from).unwrap_or_else(|| panic!("types.rs imports nothing from ./{file}.js"));
        let start = types[..end].rfind("import type {").unwrap() + "import type {".len();
        let imported: BTreeSet<String> = identifiers(&types[start..end]).collect();
        let want: BTreeSet<String> = used.intersection(&declared(&format!("{file}.d.ts"))).cloned().collect();
        assert_eq!(imported, want, "src/js/types.rs's import from ./{file}.js: the names the annotations use");
    }
}

/// Each declaration of `src/js/` that names a row of the route table (`Answer<"CLUSTER">`,
/// `RequestBody<"FLAGS">`) names one that types it, and a wrapper that builds its own route
/// (`Route::to(CLUSTER, …)`) sends the row its declaration names and no other: a wrapper's
/// TypeScript cannot disagree with the route it calls. tsc would find a missing row only in
/// `make test-package`, after a release build.
#[test]
fn the_wrappers_name_the_rows_they_send() {
    let answers: BTreeSet<&str> = protocol::routes::answers().into_iter().map(|(row, _)| row).collect();
    let bodies: BTreeSet<&str> = protocol::routes::bodies().into_iter().map(|(row, _)| row).collect();
    let declared = declared("protocol.d.ts");
    for (row, ty) in protocol::routes::answers().iter().chain(&protocol::routes::bodies()) {
        assert!(declared.contains(ty), "row {row}'s type {ty} is not declared: list it in protocol/src/typescript.rs");
    }
    let js = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../src/js");
    let mut named = 0;
    for entry in std::fs::read_dir(&js).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let file = entry.file_name().into_string().unwrap();
        // One wrapper a piece: its return type, then its parameters and body, up to the next one's.
        for wrapper in text.split("unchecked_return_type = \"").skip(1) {
            let rows_in = |of: &str| -> Vec<String> {
                wrapper.split(&format!("{of}<\\\"")).skip(1).map(|r| r.split('\\').next().unwrap().to_owned()).collect()
            };
            for row in rows_in("RequestBody") {
                assert!(
                    bodies.contains(row.as_str()),
                    "{file}: RequestBody<\"{row}\">: no row of that name types a body"
                );
            }
            let Some(row) = rows_in("Answer").into_iter().next() else { continue };
            named += 1;
            assert!(answers.contains(row.as_str()), "{file}: Answer<\"{row}\">: no row of that name types an answer");
            let sent: BTreeSet<String> = identifiers(wrapper.split_once('"').unwrap().1)
                .filter(|word| answers.contains(word.as_str()))
                .collect();
            assert!(
                sent.is_empty() || sent == BTreeSet::from([row.clone()]),
                "{file}: the wrapper declared to answer Answer<\"{row}\"> sends {sent:?}"
            );
        }
    }
    assert!(named >= 25, "only {named} wrappers name their row: is the split above still right?");
}
