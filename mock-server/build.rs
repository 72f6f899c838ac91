//! Embeds the drizzle migrations: the journal's entries in order, each with its SQL file.

use std::{env, fs, path::Path};

fn main() {
    println!("cargo:rerun-if-changed=drizzle");
    let root = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("drizzle");
    let journal: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(root.join("meta/_journal.json")).expect("drizzle/meta/_journal.json is readable"),
    )
    .expect("the journal is JSON");
    let mut out =
        String::from("/// (tag, when, sql), in journal order.\npub static EMBEDDED: &[(&str, i64, &str)] = &[\n");
    for entry in journal["entries"].as_array().expect("journal has entries") {
        let tag = entry["tag"].as_str().expect("entry has a tag");
        let when = entry["when"].as_i64().expect("entry has a when");
        let sql = root.join(format!("{tag}.sql"));
        assert!(sql.exists(), "the journal names {tag} but {} is missing", sql.display());
        out.push_str(&format!("    ({tag:?}, {when}, include_str!({:?})),\n", sql.display().to_string()));
    }
    out.push_str("];\n");
    fs::write(Path::new(&env::var("OUT_DIR").unwrap()).join("migrations.rs"), out).unwrap();
}
