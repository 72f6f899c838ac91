//! The package's TypeScript declarations (the `.d.ts` section of `src/js/types.rs`) hold, between
//! their generated markers, exactly what the Rust types declare: the protocol's enums as ts-rs
//! writes them and the error-code unions from the code lists. `make types` writes the block
//! (`WRITE_TYPES=1`); this test fails on any difference, so a wire change cannot leave the
//! package's types behind.

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
