//! What the document proxy lets through to the engine: the CouchDB replication protocol on the
//! caller's own databases, and nothing else. Rules only (no HTTP types): the route hands in the
//! method's name, the path's segments after the database (percent-decoded) and the database's
//! kind for the caller's tenant.

use super::Kind;

/// What a request does, once it is known to be part of the replication protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Database info, `_changes`, `_all_docs`, `_revs_diff`, `_bulk_get`, documents read.
    Read,
    /// A replication checkpoint (`_local/…`): kept by the engine, replicated nowhere.
    Checkpoint,
    /// A document written or deleted, one at a time.
    Write,
    /// `_bulk_docs`: the body's ids are checked too (`check_bulk`).
    BulkWrite,
}

/// Why a request is refused (the route answers 403 with this, and the engine sees nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

fn refuse<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(why.into()))
}

/// Reads that a replication sends as POST (their bodies are lists of ids or revisions).
const POST_READS: [&str; 4] = ["_revs_diff", "_bulk_get", "_all_docs", "_changes"];
/// The database endpoints the replication protocol reads with GET.
const GET_READS: [&str; 2] = ["_all_docs", "_changes"];

/// Classifies `method` on `/{db}/{rest…}` (`rest` empty for the database itself).
pub fn classify(method: &str, rest: &[String]) -> Result<Op, Refusal> {
    // A URL parser resolves `.` and `..` (and `%2E%2E`) on the way to the engine: `db/../_all_dbs`
    // would reach the engine's root. Empty segments (`a//b`) have no meaning in the protocol.
    let only_root = rest.len() == 1;
    if rest.iter().any(|s| s == "." || s == ".." || (s.is_empty() && !only_root)) {
        return refuse("a path with ., .. or empty segments is not part of the replication protocol");
    }
    let read = matches!(method, "GET" | "HEAD");
    let first = rest.first().map(String::as_str).unwrap_or("");
    match (rest.len(), first) {
        (0, _) | (1, "") if read => Ok(Op::Read),
        (0, _) | (1, "") if method == "POST" => Ok(Op::Write),
        (0, _) | (1, "") => refuse("databases are created and deleted by the rolling machine, never by a device"),
        (1, "_bulk_docs") if method == "POST" => Ok(Op::BulkWrite),
        (1, ep) if POST_READS.contains(&ep) && method == "POST" => Ok(Op::Read),
        (1, ep) if GET_READS.contains(&ep) && read => Ok(Op::Read),
        (2, "_local") if matches!(method, "GET" | "HEAD" | "PUT" | "DELETE") => Ok(Op::Checkpoint),
        (_, id) if is_design(id) || first == "_design" => {
            if read {
                Ok(Op::Read)
            } else {
                refuse(DESIGN_WRITE)
            }
        }
        (_, id) if id.starts_with('_') => refuse(format!("{id} is not part of the replication protocol the proxy serves")),
        // A document (one segment) or one of its attachments (two).
        (1 | 2, _) if read => Ok(Op::Read),
        (1 | 2, _) if matches!(method, "PUT" | "DELETE") => Ok(Op::Write),
        _ => refuse(format!("{method} on this path is not part of the replication protocol the proxy serves")),
    }
}

const DESIGN_WRITE: &str = "design documents run code in the engine: they are not written through the proxy";

fn is_design(id: &str) -> bool {
    id.starts_with("_design/")
}

/// Whether the caller may do `op` on a database of `kind`: archives are read-only, CORE (STATIC)
/// takes writes only from `may_write_catalogue` roles, day databases and the legacy database take
/// the tenant's devices' writes. Checkpoints go with reading: a pull writes its own.
pub fn allow(kind: Kind, op: Op, may_write_catalogue: bool) -> Result<(), Refusal> {
    match (op, kind) {
        (Op::Read | Op::Checkpoint, _) => Ok(()),
        (_, Kind::Archive) => refuse("archives are read-only"),
        (_, Kind::Core) if !may_write_catalogue => refuse("CORE holds the STATIC catalogue: only the roles allowed catalog:write change it"),
        _ => Ok(()),
    }
}

/// Refuses a `_bulk_docs` body that writes a design document, or is not `{docs: [...]}` at all.
pub fn check_bulk(body: &serde_json::Value) -> Result<(), Refusal> {
    let Some(docs) = body.get("docs").and_then(|d| d.as_array()) else {
        return refuse("a _bulk_docs body is {\"docs\": [...]}");
    };
    if docs.iter().any(|d| d.get("_id").and_then(|i| i.as_str()).is_some_and(|id| is_design(id) || id == "_design")) {
        return refuse(DESIGN_WRITE);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(path: &str) -> Vec<String> {
        if path.is_empty() {
            Vec::new()
        } else {
            path.split('/').map(str::to_owned).collect()
        }
    }

    #[test]
    fn the_replication_protocol_passes() {
        for (method, path, op) in [
            ("GET", "", Op::Read),
            ("HEAD", "", Op::Read),
            ("GET", "_changes", Op::Read),
            ("POST", "_changes", Op::Read),
            ("POST", "_revs_diff", Op::Read),
            ("POST", "_bulk_get", Op::Read),
            ("GET", "_all_docs", Op::Read),
            ("POST", "_all_docs", Op::Read),
            ("GET", "order-1", Op::Read),
            ("GET", "_local/abc", Op::Checkpoint),
            ("PUT", "_local/abc", Op::Checkpoint),
            ("POST", "_bulk_docs", Op::BulkWrite),
            ("PUT", "order-1", Op::Write),
            ("DELETE", "order-1", Op::Write),
            ("POST", "", Op::Write),
            ("GET", "_design/app", Op::Read),
        ] {
            assert_eq!(classify(method, &seg(path)), Ok(op), "{method} {path}");
        }
    }

    #[test]
    fn everything_else_is_refused() {
        for (method, path) in [
            ("PUT", ""),
            ("DELETE", ""),
            ("PUT", "_design/app"),
            ("DELETE", "_design/app"),
            ("PUT", "_security"),
            ("GET", "_security"),
            ("POST", "_compact"),
            ("POST", "_find"),
            ("POST", "_purge"),
            ("GET", "_bulk_docs"),
            ("COPY", "order-1"),
            ("PUT", "a/b/c"),
            ("GET", "../_all_dbs"),
            ("GET", "doc/.."),
            ("GET", "./x"),
            ("GET", "a//b"),
            ("GET", "doc/"),
        ] {
            assert!(classify(method, &seg(path)).is_err(), "{method} {path}");
        }
        // A design document's id percent-encoded into one segment is still a design document.
        assert!(classify("PUT", &["_design/app".to_owned()]).is_err());
    }

    #[test]
    fn writes_by_kind_and_role() {
        assert!(allow(Kind::Archive, Op::Write, true).is_err());
        assert!(allow(Kind::Archive, Op::BulkWrite, true).is_err());
        assert!(allow(Kind::Archive, Op::Checkpoint, false).is_ok());
        assert!(allow(Kind::Core, Op::Write, false).is_err());
        assert!(allow(Kind::Core, Op::Write, true).is_ok());
        assert!(allow(Kind::Day, Op::BulkWrite, false).is_ok());
        assert!(allow(Kind::Legacy, Op::Write, false).is_ok());
        assert!(allow(Kind::Core, Op::Read, false).is_ok());
    }

    #[test]
    fn a_bulk_write_of_a_design_document_is_seen() {
        let json = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        assert_eq!(check_bulk(&json(r#"{"docs":[{"_id":"a"},{"_id":"b"}]}"#)), Ok(()));
        assert_eq!(check_bulk(&json(r#"{"docs":[{"_id":"a"},{"_id":"_design/x"}]}"#)), Err(Refusal(DESIGN_WRITE.into())));
        assert!(check_bulk(&json(r#"[1]"#)).is_err());
    }
}
