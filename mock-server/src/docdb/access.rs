//! What the document proxy lets through to the engine: the CouchDB replication protocol on the
//! caller's own databases, and nothing else. Rules only (no HTTP types). Every proxied request
//! goes through `decide`, which answers exactly what the engine gets (path, query, body) or why
//! nothing is sent: the engine never reads a byte the rule did not judge.

use serde_json::Value;

use super::naming::SERVER_OWNED;
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
    /// `_bulk_docs`: every document's id in the body is checked too.
    BulkWrite,
}

impl Op {
    /// The class a request is counted under.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Checkpoint => "checkpoint",
            Op::Write => "write",
            Op::BulkWrite => "bulk_write",
        }
    }
}

/// Why a request is refused; the engine sees nothing of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 401: no session stands behind the request.
    Unauthenticated,
    /// 403: outside the caller's databases or outside the replication protocol.
    Forbidden(String),
    /// 400: a path, query or body that cannot be read one way only.
    Unreadable(String),
}

fn refuse<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal::Forbidden(why.into()))
}

fn unreadable<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal::Unreadable(why.into()))
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
    // `_local/day-manifest` and `_local%2Fday-manifest` name the same document.
    if !read && server_owned(&rest.join("/")) {
        return refuse(SERVER_OWNED_WRITE);
    }
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
        (_, id) if id.starts_with('_') => {
            refuse(format!("{id} is not part of the replication protocol the proxy serves"))
        }
        // A document (one segment) or one of its attachments (two).
        (1 | 2, _) if read => Ok(Op::Read),
        (1 | 2, _) if matches!(method, "PUT" | "DELETE") => Ok(Op::Write),
        _ => refuse(format!("{method} on this path is not part of the replication protocol the proxy serves")),
    }
}

const DESIGN_WRITE: &str = "design documents run code in the engine: they are not written through the proxy";

const SERVER_OWNED_WRITE: &str =
    "the server writes this document (the day manifest): devices read it, they never write it";

/// Whether `id` names a document only the server writes (checkpoints under other `_local` ids
/// are the devices' own).
fn server_owned(id: &str) -> bool {
    SERVER_OWNED.contains(&id)
}

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
        (_, Kind::Core) if !may_write_catalogue => {
            refuse("CORE holds the STATIC catalogue: only the roles allowed catalog:write change it")
        }
        _ => Ok(()),
    }
}

/// Who is asking, once their credentials were checked (`None`: no live session).
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    pub company_id: &'a str,
    /// Whether the caller's roles allow `catalog:write` (writes to CORE).
    pub may_write_catalogue: bool,
}

/// A request as the proxy received it.
#[derive(Debug, Clone, Copy)]
pub struct Incoming<'a> {
    pub method: &'a str,
    /// The path after `/docdb/`, exactly as received (still percent-encoded).
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub body: &'a [u8],
}

/// Exactly what the engine receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    pub op: Op,
    /// The database the request is on (decoded).
    pub db: String,
    /// Path and query from the checked segments and pairs, each encoded again: the engine reads
    /// the names the rule judged, whatever its own decoding.
    pub path: String,
    pub content_type: Option<String>,
    /// A JSON body as the rule parsed it, written again; an attachment's bytes as they came;
    /// nothing for GET, HEAD and DELETE.
    pub body: Vec<u8>,
    /// A `_changes` feed that stays open (continuous, longpoll, eventsource): counted per session.
    pub live_feed: bool,
    /// A `_changes` read (any feed): the changes hub may answer it.
    pub changes: bool,
    /// The query's pairs, decoded, as judged.
    pub query: Vec<(String, String)>,
}

/// What may be in a path segment or a query value unencoded: RFC 3986's unreserved characters.
const ENCODED: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn encode(part: &str) -> percent_encoding::PercentEncode<'_> {
    percent_encoding::utf8_percent_encode(part, ENCODED)
}

fn decode(part: &str, plus_is_space: bool) -> Result<String, Refusal> {
    let spaced;
    let part = if plus_is_space {
        spaced = part.replace('+', " ");
        spaced.as_str()
    } else {
        part
    };
    match percent_encoding::percent_decode_str(part).decode_utf8() {
        Ok(s) => Ok(s.into_owned()),
        Err(_) => unreadable("the path or query decodes to invalid UTF-8"),
    }
}

/// The query's pairs, decoded as CouchDB decodes them (`+` is a space), when every engine reads
/// them as the proxy does (`docdb::query`: a name given twice in any case, a known name in another
/// case, a value an engine would read as JSON are refused).
fn query_pairs(query: &str) -> Result<Vec<(String, String)>, Refusal> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        pairs.push((decode(name, true)?, decode(value, true)?));
    }
    crate::docdb::query::judge(&pairs).map_err(Refusal::Unreadable)?;
    Ok(pairs)
}

const LIVE_FEEDS: [&str; 3] = ["continuous", "longpoll", "eventsource"];

/// The one `_changes` filter the proxy forwards: `_doc_ids`, with the ids named (a `doc_ids`
/// parameter, or a POST body's list). PouchDB Server 4.2 ends its own process when a filter
/// fails on a normal or longpoll feed (a design document or a view that is not there, a
/// `_selector` or `_doc_ids` without what it filters by): one request would stop the engine for
/// every tenant. Replications filter by ids only.
fn changes_filter(pairs: &[(String, String)], method: &str, body: &[u8]) -> Result<(), Refusal> {
    let Some((_, filter)) = pairs.iter().find(|(n, _)| n == "filter") else { return Ok(()) };
    if filter != "_doc_ids" {
        return refuse(format!("filter={filter} is not served through the proxy: replications filter by _doc_ids"));
    }
    let in_query = pairs.iter().any(|(n, _)| n == "doc_ids");
    let in_body = method == "POST"
        && serde_json::from_slice::<Value>(body).is_ok_and(|b| {
            b.get("doc_ids").and_then(Value::as_array).is_some_and(|ids| ids.iter().all(Value::is_string))
        });
    if in_query == in_body {
        return unreadable("filter=_doc_ids names its ids once: in doc_ids, or in a POST body's doc_ids list");
    }
    Ok(())
}

/// A written document's id: none (the engine picks one), or a string naming no reserved document
/// (`_design/…` runs code in the engine; `_local/…` is written by its own route).
fn writable_id(doc: &Value, path_id: Option<&str>) -> Result<(), Refusal> {
    match (doc.get("_id"), path_id) {
        (None, _) => Ok(()),
        (Some(Value::String(id)), Some(path_id)) if id != path_id => {
            unreadable(format!("the body's _id {id:?} is not the path's {path_id:?}"))
        }
        (Some(Value::String(id)), _) if is_design(id) || id == "_design" => refuse(DESIGN_WRITE),
        (Some(Value::String(id)), _) if server_owned(id) => refuse(SERVER_OWNED_WRITE),
        (Some(Value::String(id)), None) if id.starts_with('_') => {
            refuse(format!("{id} is a reserved id: devices write documents only"))
        }
        (Some(Value::String(_)), _) => Ok(()),
        (Some(_), _) => unreadable("_id must be a string"),
    }
}

/// The most arrays and objects a written document may nest: a `_bulk_docs` body (two levels more)
/// within the body's own limit, so any document written one way can be replicated another.
pub const MAX_DOC_DEPTH: usize = crate::docdb::strict_json::MAX_DEPTH - 2;

/// How many arrays and objects `value` nests (a parsed body: at most `strict_json::MAX_DEPTH`).
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn shallow(doc: &Value) -> Result<(), Refusal> {
    if depth(doc) > MAX_DOC_DEPTH {
        return unreadable(format!("a document nested deeper than {MAX_DOC_DEPTH} levels"));
    }
    Ok(())
}

fn json_body(body: &[u8]) -> Result<Value, Refusal> {
    crate::docdb::strict_json::parse(body)
        .map_err(|e| Refusal::Unreadable(format!("the body is not JSON that reads one way only: {e}")))
}

/// Checks what a request writes into the engine and answers the body to send.
fn written(op: Op, method: &str, rest: &[String], incoming: &Incoming) -> Result<(Option<String>, Vec<u8>), Refusal> {
    const JSON: &str = "application/json";
    if matches!(method, "GET" | "HEAD" | "DELETE") {
        return Ok((None, Vec::new()));
    }
    // An attachment (`PUT db/doc/name`): opaque bytes, placed by the path the rule checked.
    if op == Op::Write && rest.len() == 2 {
        return Ok((incoming.content_type.map(str::to_owned), incoming.body.to_vec()));
    }
    let value = json_body(incoming.body)?;
    match op {
        Op::BulkWrite => {
            let Some(docs) = value.get("docs").and_then(Value::as_array) else {
                return unreadable("a _bulk_docs body is {\"docs\": [...]}");
            };
            for doc in docs {
                if !doc.is_object() {
                    return unreadable("every entry of docs is a document (an object)");
                }
                writable_id(doc, None)?;
                shallow(doc)?;
            }
        }
        Op::Write | Op::Checkpoint => {
            if !value.is_object() {
                return unreadable("a document is a JSON object");
            }
            // `PUT db/id` and `PUT db/_local/id` name the id in the path; `POST db` (and `db/`)
            // in the body.
            let path_id = match rest {
                [id] if !id.is_empty() => Some(id.clone()),
                [local, id] => Some(format!("{local}/{id}")),
                _ => None,
            };
            writable_id(&value, path_id.as_deref())?;
            shallow(&value)?;
        }
        Op::Read => {}
    }
    Ok((Some(JSON.to_owned()), serde_json::to_vec(&value).map_err(|e| Refusal::Unreadable(e.to_string()))?))
}

/// The proxy's rule, whole: `Ok` with exactly what to send to the engine, or the refusal.
/// `kind_of` names the caller's tenant's databases (`None` for any other name).
pub fn decide(
    incoming: &Incoming,
    caller: Option<Caller>,
    kind_of: impl Fn(&str) -> Option<Kind>,
) -> Result<Forward, Refusal> {
    let caller = caller.ok_or(Refusal::Unauthenticated)?;
    let (db_raw, rest_raw) = match incoming.path.split_once('/') {
        Some((db, rest)) => (db, Some(rest)),
        None => (incoming.path, None),
    };
    let db = decode(db_raw, false)?;
    let rest: Vec<String> =
        rest_raw.map(|r| r.split('/').map(|s| decode(s, false)).collect()).transpose()?.unwrap_or_default();
    let kind = kind_of(&db)
        .ok_or_else(|| Refusal::Forbidden(format!("{db} is not a database of tenant {}", caller.company_id)))?;
    let op = classify(incoming.method, &rest)?;
    allow(kind, op, caller.may_write_catalogue)?;
    let pairs = query_pairs(incoming.query.unwrap_or(""))?;
    let (content_type, body) = written(op, incoming.method, &rest, incoming)?;

    let mut path = encode(&db).to_string();
    if rest_raw.is_some() {
        // `_design/x` and `_local/x` stay two segments, as the engine routes them.
        let segments: Vec<String> = rest.iter().map(|s| encode(s).to_string()).collect();
        path = [path, segments.join("/")].join("/");
    }
    if !pairs.is_empty() {
        let query: Vec<String> = pairs.iter().map(|(n, v)| format!("{}={}", encode(n), encode(v))).collect();
        path = [path, query.join("&")].join("?");
    }
    let changes = op == Op::Read && rest.len() == 1 && rest[0] == "_changes";
    if changes {
        changes_filter(&pairs, incoming.method, &body)?;
    }
    let live_feed = changes && pairs.iter().any(|(n, v)| n == "feed" && LIVE_FEEDS.contains(&v.as_str()));
    Ok(Forward { op, db, path, content_type, body, live_feed, changes, query: pairs })
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

    fn acme(db: &str) -> Option<Kind> {
        crate::docdb::naming::TenantNames::new("dev", "acme", "main").kind_of(db)
    }

    fn cashier() -> Option<Caller<'static>> {
        Some(Caller { company_id: "acme", may_write_catalogue: false })
    }

    fn post(path: &str, body: &str) -> Result<Forward, Refusal> {
        decide(
            &Incoming {
                method: "POST",
                path,
                query: None,
                content_type: Some("application/json"),
                body: body.as_bytes(),
            },
            cashier(),
            acme,
        )
    }

    #[test]
    fn a_design_document_is_refused_by_every_write_route() {
        for (path, body) in [
            ("dev_acme_main_catalog", r#"{"_id":"_design/evil","views":{}}"#),
            ("dev_acme_main_catalog/", r#"{"_id":"_design/evil"}"#),
            ("dev_acme_main_catalog", r#"{"_id":"\u005fdesign/evil"}"#),
            ("dev_acme_main_catalog/_bulk_docs", r#"{"docs":[{"_id":"a"},{"_id":"_design/x"}]}"#),
            ("dev_acme_main_catalog/_bulk_docs", r#"{"new_edits":false,"docs":[{"_id":"_design/x","_rev":"1-a"}]}"#),
        ] {
            assert!(matches!(post(path, body), Err(Refusal::Forbidden(_))), "{path} {body}");
        }
        for (path, body) in [
            ("dev_acme_main_catalog", r#"{"_id":"a","_id":"_design/x"}"#),
            ("dev_acme_main_catalog/_bulk_docs", r#"{"docs":[{"_id":"a"}],"docs":[{"_id":"_design/x"}]}"#),
            ("dev_acme_main_catalog/_bulk_docs", r#"{"docs":[1]}"#),
            ("dev_acme_main_catalog", r#"{"_id":7}"#),
        ] {
            assert!(matches!(post(path, body), Err(Refusal::Unreadable(_))), "{path} {body}");
        }
    }

    fn send(method: &'static str, path: &str, query: Option<&str>, body: &str) -> Result<Forward, Refusal> {
        let incoming = Incoming { method, path, query, content_type: Some("application/json"), body: body.as_bytes() };
        decide(&incoming, Some(Caller { company_id: "acme", may_write_catalogue: true }), acme)
    }

    #[test]
    fn the_server_s_own_documents_are_refused_by_every_write_route_and_read_by_all() {
        let manifest = r#"{"_id":"_local/day-manifest","days":[]}"#;
        for (method, path, query, body) in [
            ("PUT", "dev_acme_main_core/_local/day-manifest", None, r#"{"days":[]}"#),
            ("PUT", "dev_acme_main_core/_local/day-manifest", Some("new_edits=false"), manifest),
            ("PUT", "dev_acme_main_core/_local%2Fday-manifest", None, r#"{"days":[]}"#),
            ("PUT", "dev_acme_main_core/%5Flocal/day%2Dmanifest", None, r#"{"days":[]}"#),
            ("DELETE", "dev_acme_main_core/_local/day-manifest", None, ""),
            ("PUT", "daily_dev_acme_main_20301231/_local/day-manifest", None, "{}"),
            ("POST", "dev_acme_main_core", None, manifest),
            ("POST", "dev_acme_main_core/_bulk_docs", None, &format!(r#"{{"docs":[{manifest}]}}"#)),
            (
                "POST",
                "dev_acme_main_core/_bulk_docs",
                None,
                r#"{"new_edits":false,"docs":[{"_id":"_local/day-manifest","_rev":"0-1"}]}"#,
            ),
        ] {
            assert!(matches!(send(method, path, query, body), Err(Refusal::Forbidden(_))), "{method} {path} {body}");
        }
        assert!(send("GET", "dev_acme_main_core/_local/day-manifest", None, "").is_ok());
        // A device's checkpoint, under its replication's id, stays its own to write.
        for path in ["dev_acme_main_core/_local/4f1e0a", "daily_dev_acme_main_20301231/_local/day-manifests"] {
            assert_eq!(send("PUT", path, None, r#"{"last_seq":3}"#).map(|f| f.op), Ok(Op::Checkpoint), "{path}");
        }
    }

    #[test]
    fn a_document_nested_deeper_than_the_limit_is_refused_by_every_write_route() {
        let doc =
            |levels: usize| format!(r#"{{"_id":"order-1","n":{}1{}}}"#, "[".repeat(levels - 1), "]".repeat(levels - 1));
        assert!(post("daily_dev_acme_main_20301231", &doc(MAX_DOC_DEPTH)).is_ok());
        assert!(
            post("daily_dev_acme_main_20301231/_bulk_docs", &format!(r#"{{"docs":[{}]}}"#, doc(MAX_DOC_DEPTH))).is_ok()
        );
        for (path, body) in [
            ("daily_dev_acme_main_20301231", doc(MAX_DOC_DEPTH + 1)),
            ("daily_dev_acme_main_20301231/_bulk_docs", format!(r#"{{"docs":[{}]}}"#, doc(MAX_DOC_DEPTH + 1))),
        ] {
            assert!(matches!(post(path, &body), Err(Refusal::Unreadable(_))), "{path}");
        }
    }

    #[test]
    fn changes_are_filtered_by_ids_named_once_or_not_at_all() {
        let changes = |method, query, body: &str| {
            decide(
                &Incoming {
                    method,
                    path: "dev_acme_main_catalog/_changes",
                    query: Some(query),
                    content_type: Some("application/json"),
                    body: body.as_bytes(),
                },
                cashier(),
                acme,
            )
        };
        assert!(changes("GET", "filter=_doc_ids&doc_ids=%5B%22a%22%5D", "").is_ok());
        assert!(changes("POST", "filter=_doc_ids&feed=longpoll", r#"{"doc_ids":["a"]}"#).is_ok());
        for (method, query, body) in [
            ("GET", "filter=_doc_ids", ""),
            ("GET", "filter=_doc_ids&feed=longpoll", ""),
            ("POST", "filter=_doc_ids", "{}"),
            ("POST", "filter=_doc_ids", r#"{"doc_ids":[1]}"#),
            ("POST", "filter=_doc_ids&doc_ids=%5B%22a%22%5D", r#"{"doc_ids":["a"]}"#),
        ] {
            assert!(matches!(changes(method, query, body), Err(Refusal::Unreadable(_))), "{method} {query} {body}");
        }
        for query in ["filter=app/by_type", "filter=_view&view=a/b", "filter=_selector", "filter=_design"] {
            assert!(matches!(changes("POST", query, r#"{"selector":{}}"#), Err(Refusal::Forbidden(_))), "{query}");
        }
    }

    #[test]
    fn what_is_forwarded_is_what_was_judged() {
        let f =
            post("dev_acme_main_catalog/_bulk_docs", "{ \"docs\" : [ {\"_id\":\"order:1\", \"n\": 1e2} ] }").unwrap();
        assert_eq!((f.op, f.path.as_str()), (Op::BulkWrite, "dev_acme_main_catalog/_bulk_docs"));
        assert_eq!(String::from_utf8(f.body).unwrap(), r#"{"docs":[{"_id":"order:1","n":100.0}]}"#);
        let get = |path, query| {
            decide(&Incoming { method: "GET", path, query, content_type: None, body: b"ignored" }, cashier(), acme)
        };
        let f = get("dev_acme_main_catalog/_design%2Fapp", None).unwrap();
        assert_eq!((f.path.as_str(), f.body.len()), ("dev_acme_main_catalog/_design%2Fapp", 0));
        let f = get(
            "dev_acme_main_catalog/_changes",
            Some("feed=longpoll&since=now&filter=_doc_ids&doc_ids=%5B%22a+b%22%5D"),
        )
        .unwrap();
        assert!(f.live_feed);
        assert_eq!(
            f.path,
            "dev_acme_main_catalog/_changes?feed=longpoll&since=now&filter=_doc_ids&doc_ids=%5B%22a%20b%22%5D"
        );
        assert!(!get("dev_acme_main_catalog/_changes", Some("feed=normal")).unwrap().live_feed);
        assert!(matches!(
            get("dev_acme_main_catalog/_changes", Some("feed=normal&feed=continuous")),
            Err(Refusal::Unreadable(_))
        ));
        assert_eq!(
            decide(
                &Incoming { method: "GET", path: "dev_acme_main_catalog", query: None, content_type: None, body: b"" },
                None,
                acme
            ),
            Err(Refusal::Unauthenticated)
        );
    }
}
