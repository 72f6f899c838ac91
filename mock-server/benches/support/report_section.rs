//! A section of `bench/REPORT.md` that one bench writes and the others keep: the peers bench
//! writes the file whole at the end of `make bench`, the fleet bench its changes hub section
//! before it.

use std::path::Path;

/// The hub's memory, written by `fleet -- hub-memory`.
pub const HUB_MEMORY: &str = "## The changes hub's memory";
/// The fleet on PostgreSQL, written by `fleet` (sections `postgres`, `pg-*`, `replicas`).
pub const POSTGRES: &str = "## The fleet on PostgreSQL";
/// The sections the fleet bench writes, kept by the others.
#[allow(dead_code)]
pub const FLEET: [&str; 2] = [HUB_MEMORY, POSTGRES];

/// `report` without its section headed `heading` (to the next `## ` heading), and that section.
pub fn split(report: &str, heading: &str) -> (String, Option<String>) {
    let Some(start) =
        report.find(&format!("\n{heading}")).map(|i| i + 1).or_else(|| report.starts_with(heading).then_some(0))
    else {
        return (report.to_owned(), None);
    };
    let end = report[start + heading.len()..].find("\n## ").map_or(report.len(), |i| start + heading.len() + i + 1);
    let rest = format!("{}{}", &report[..start], &report[end..]);
    (rest, Some(report[start..end].to_owned()))
}

/// Writes `section` (its first line `heading`) into the report at `path`, in place of the one
/// there; at the end when there is none.
#[allow(dead_code)]
pub fn replace(path: &Path, heading: &str, section: &str) {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let (mut rest, _) = split(&old, heading);
    if !rest.is_empty() && !rest.ends_with("\n\n") {
        rest.push_str(if rest.ends_with('\n') { "\n" } else { "\n\n" });
    }
    rest.push_str(section);
    std::fs::write(path, rest).unwrap();
}
