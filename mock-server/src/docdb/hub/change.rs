//! One change of a database as the hub holds it: read once from the engine's feed (every leaf
//! revision and the document), written out in each of the four views a device may ask for
//! (`include_docs`, `style`), each view rendered at most once however many devices read it.

use std::cmp::Ordering;
use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::{json, Map, Value};

/// A sequence value exactly as the engine wrote it, with the number the hub orders it by: an
/// integer (PouchDB Server) or the leading number of an opaque string (`"12-g1AAAA…"`, CouchDB 3,
/// where it is the sum of the shards' sequences and grows with every change).
#[derive(Debug, Clone)]
pub struct Seq {
    pub n: u64,
    pub raw: Value,
}

impl Seq {
    pub fn read(raw: &Value) -> Option<Seq> {
        let n = match raw {
            Value::Number(n) => n.as_u64()?,
            Value::String(s) => {
                let digits = s.split_once('-').map_or(s.as_str(), |(n, _)| n);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                digits.parse().ok()?
            }
            _ => return None,
        };
        Some(Seq { n, raw: raw.clone() })
    }

    pub fn zero() -> Seq {
        Seq { n: 0, raw: json!(0) }
    }
}

impl PartialEq for Seq {
    fn eq(&self, other: &Seq) -> bool {
        self.n == other.n
    }
}

impl Eq for Seq {}

impl PartialOrd for Seq {
    fn partial_cmp(&self, other: &Seq) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Seq {
    fn cmp(&self, other: &Seq) -> Ordering {
        self.n.cmp(&other.n)
    }
}

/// What a device asked to see of each change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct View {
    pub include_docs: bool,
    /// `style=all_docs`: every leaf revision; otherwise the winning one only.
    pub all_docs: bool,
}

impl View {
    fn slot(self) -> usize {
        usize::from(self.include_docs) * 2 + usize::from(self.all_docs)
    }
}

#[derive(Debug)]
pub struct Change {
    pub id: String,
    pub seq: Seq,
    deleted: bool,
    /// `changes` as the engine listed it with `style=all_docs`.
    leaves: Value,
    /// The document at its winning revision (`include_docs=true`).
    doc: Value,
    rendered: [OnceLock<Bytes>; 4],
}

impl Change {
    /// A row of the engine's `_changes` read with `include_docs=true&style=all_docs`.
    pub fn read(row: Value) -> Result<Change, String> {
        let Value::Object(mut row) = row else { return Err("a change is an object".into()) };
        let seq = row.get("seq").and_then(Seq::read).ok_or("a change without a sequence the hub can order")?;
        let Some(Value::String(id)) = row.remove("id") else { return Err("a change without an id".into()) };
        let leaves = row.remove("changes").filter(Value::is_array).ok_or("a change without its revisions")?;
        let doc = row.remove("doc").filter(Value::is_object).ok_or("a change without its document (include_docs)")?;
        let deleted = row.get("deleted").and_then(Value::as_bool).unwrap_or(false);
        Ok(Change { id, seq, deleted, leaves, doc, rendered: Default::default() })
    }

    /// A line of the engine's continuous feed: a change, or `None` for its closing `last_seq`.
    pub fn read_line(line: &[u8]) -> Result<Option<Change>, String> {
        let row: Value = serde_json::from_slice(line).map_err(|e| e.to_string())?;
        if row.get("last_seq").is_some() && row.get("id").is_none() {
            return Ok(None);
        }
        Change::read(row).map(Some)
    }

    /// The change as the engine writes it in `view`: one JSON object and a newline, the line of
    /// a continuous feed.
    pub fn line(&self, view: View) -> Bytes {
        self.rendered[view.slot()]
            .get_or_init(|| {
                let mut out = Map::new();
                out.insert("id".into(), Value::String(self.id.clone()));
                let changes = match (view.all_docs, self.doc.get("_rev")) {
                    (false, Some(rev)) => json!([{ "rev": rev }]),
                    _ => self.leaves.clone(),
                };
                out.insert("changes".into(), changes);
                if view.include_docs {
                    out.insert("doc".into(), self.doc.clone());
                }
                if self.deleted {
                    out.insert("deleted".into(), Value::Bool(true));
                }
                out.insert("seq".into(), self.seq.raw.clone());
                let mut line = serde_json::to_vec(&out).unwrap_or_default();
                line.push(b'\n');
                Bytes::from(line)
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_order_by_their_number_and_keep_their_text() {
        let opaque = Seq::read(&json!("12-g1AAAAB3eJzLYWBgYMpgTmHgz8tPSTV0MDQy1zMAQsMcoEQiQ1L9")).unwrap();
        assert_eq!(opaque.n, 12);
        assert_eq!(opaque.raw, json!("12-g1AAAAB3eJzLYWBgYMpgTmHgz8tPSTV0MDQy1zMAQsMcoEQiQ1L9"));
        assert!(Seq::read(&json!(7)).unwrap() < opaque);
        for unreadable in [json!("abc"), json!("-3"), json!(-1), json!(1.5), json!(null), json!("")] {
            assert!(Seq::read(&unreadable).is_none(), "{unreadable}");
        }
    }

    #[test]
    fn a_row_two_levels_deeper_than_any_document_the_proxy_writes_is_read() {
        let deepest = crate::docdb::access::MAX_DOC_DEPTH + 2;
        let list = format!("{}1{}", "[".repeat(deepest - 1), "]".repeat(deepest - 1));
        let line =
            format!(r#"{{"id":"a","seq":1,"changes":[{{"rev":"1-x"}}],"doc":{{"_id":"a","_rev":"1-x","n":{list}}}}}"#);
        assert_eq!(Change::read_line(line.as_bytes()).unwrap().map(|c| c.id), Some("a".to_owned()));
        assert!(Change::read_line(br#"{"last_seq":3}"#).unwrap().is_none());
    }

    #[test]
    fn each_view_is_the_engines() {
        let row = json!({"id": "a", "seq": 4, "deleted": true, "changes": [{"rev": "2-x"}, {"rev": "1-y"}], "doc": {"_id": "a", "_rev": "2-x", "_deleted": true}});
        let c = Change::read(row).unwrap();
        let read = |v| serde_json::from_slice::<Value>(&c.line(v)).unwrap();
        assert_eq!(read(View::default()), json!({"id": "a", "changes": [{"rev": "2-x"}], "deleted": true, "seq": 4}));
        assert_eq!(
            read(View { include_docs: false, all_docs: true })["changes"],
            json!([{"rev": "2-x"}, {"rev": "1-y"}])
        );
        assert_eq!(read(View { include_docs: true, all_docs: false })["doc"]["_rev"], "2-x");
        assert!(Change::read(json!({"id": "a", "seq": 1, "changes": []})).is_err(), "without its document");
    }
}
