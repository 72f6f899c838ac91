//! The package's TypeScript declarations (the `.d.ts` section of `src/js/types.rs`) hold, between
//! their generated markers, exactly what the Rust types declare: the protocol's enums as ts-rs
//! writes them and the error-code unions from the code lists. `make types` writes the block
//! (`WRITE_TYPES=1`); this test fails on any difference, so a wire change cannot leave the
//! package's types behind. The same goes for the package's `codes.js` and its declarations: the
//! error codes as values, for code that compares a failure's `code` by name.

use std::path::PathBuf;

const BEGIN: &str = "/* Generated from the Rust types by `make types`; do not edit by hand. */\n";
const END: &str = "/* End of the generated declarations. */\n";

fn types_rs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../src/js/types.rs")
}

fn generated() -> String {
    let mut decls = protocol::typescript::declarations();
    decls.push(format!(
        "/** The SDK's own codes, when the server gave none. */\n{}",
        protocol::typescript::union("SdkErrorCode", session_broker::core::codes::ALL)
    ));
    decls.iter().map(|d| format!("{d}\n")).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_package_declares_what_the_rust_types_generate() {
    let path = types_rs();
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find(BEGIN).expect("the generated block's first marker in src/js/types.rs") + BEGIN.len();
    let end = start + text[start..].find(END).expect("the generated block's last marker");
    let want = generated();
    if std::env::var_os("WRITE_TYPES").is_some() {
        std::fs::write(&path, [&text[..start], &want, &text[end..]].concat()).unwrap();
        return;
    }
    assert!(
        text[start..end] == want,
        "src/js/types.rs's generated block differs from the Rust types: run `make types`.\n--- in the file:\n{}\n--- generated:\n{want}",
        &text[start..end]
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
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../pkg-template");
    let head = "// Generated from the Rust code lists by `make types`; do not edit by hand.\n";
    let doc = "/** Every error code a `SessionBrokerError` or a failed call's `code` may carry, by name. */\n";
    let js: String = all_codes().iter().map(|c| format!("  {}: \"{c}\",\n", c.to_ascii_uppercase())).collect();
    let ts: String = all_codes().iter().map(|c| format!("  readonly {}: \"{c}\";\n", c.to_ascii_uppercase())).collect();
    [
        (dir.join("codes.js"), format!("{head}{doc}export const ErrorCodes = Object.freeze({{\n{js}}});\n")),
        (dir.join("codes.d.ts"), format!("{head}{doc}export declare const ErrorCodes: {{\n{ts}}};\n")),
    ]
}

#[test]
fn the_package_exports_every_code_the_rust_lists_hold() {
    for (path, want) in codes_files() {
        if std::env::var_os("WRITE_TYPES").is_some() {
            std::fs::write(&path, &want).unwrap();
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
