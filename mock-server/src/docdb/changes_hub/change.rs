//! One change of a database as the hub holds it: the engine's row (every leaf revision and the
//! document) kept as the engine wrote it, in an allocation of its own, and written out in each of
//! the four views a device may ask for (`include_docs`, `style`). The two views without the
//! document are rendered once, when the change is taken in; a view with the document is those
//! bytes and the row's own document, shared, never copied per device. What it all costs is known
//! (`cost`), so the index is bounded in bytes.

use std::cmp::Ordering;
use std::ops::Range;

use bytes::{Bytes, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// What a change costs beside its bytes: the struct and its `Arc`, its entries in the index's two
/// maps and the allocator's rounding of its four allocations (measured on x86_64, rounded up).
const ENTRY_BYTES: usize = 320;

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

/// A row of the engine's `_changes`, its parts borrowed from the text.
#[derive(Deserialize)]
struct Row<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    seq: Option<Value>,
    #[serde(borrow, default)]
    changes: Option<&'a RawValue>,
    #[serde(borrow, default)]
    doc: Option<&'a RawValue>,
    #[serde(default)]
    deleted: Option<bool>,
    #[serde(borrow, default)]
    last_seq: Option<&'a RawValue>,
}

/// The winning revision of a document, as written.
#[derive(Deserialize)]
struct Rev<'a> {
    #[serde(borrow, rename = "_rev", default)]
    rev: Option<&'a RawValue>,
}

/// Where `part` (borrowed from `text`) lies in it.
fn range_in(text: &[u8], part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - text.as_ptr() as usize;
    start..start + part.len()
}

#[derive(Debug)]
pub struct Change {
    /// The document's id, read (for `doc_ids`).
    pub id: String,
    pub seq: Seq,
    /// The engine's row (`style=all_docs&include_docs=true`), as written.
    row: Bytes,
    /// Where the document is in `row`.
    doc: Range<usize>,
    /// The views without the document, each a line: the winning revision, every leaf.
    bare: [Bytes; 2],
}

/// A change written in one view: its chunks in order, empty ones to skip. The document is the
/// row's own bytes, shared.
pub type Line = [Bytes; 4];

impl Change {
    /// A line of the engine's feed (or a row of a normal one) read with
    /// `include_docs=true&style=all_docs`: a change, or `None` for a continuous feed's closing
    /// `last_seq`.
    pub fn read_line(line: &[u8]) -> Result<Option<Change>, String> {
        let row: Row = serde_json::from_slice(line).map_err(|e| e.to_string())?;
        if row.last_seq.is_some() && row.id.is_none() {
            return Ok(None);
        }
        let seq = row.seq.as_ref().and_then(Seq::read).ok_or("a change without a sequence the hub can order")?;
        let raw_id = row.id.ok_or("a change without an id")?;
        let id: String = serde_json::from_str(raw_id.get()).map_err(|_| "a change whose id is not a string")?;
        let leaves = row.changes.filter(|c| c.get().starts_with('[')).ok_or("a change without its revisions")?;
        let doc = row.doc.filter(|d| d.get().starts_with('{')).ok_or("a change without its document (include_docs)")?;
        let winner = serde_json::from_str::<Rev>(doc.get()).map_err(|e| e.to_string())?.rev;
        let deleted = row.deleted.unwrap_or(false);
        let bare = |changes: &[u8]| {
            let seq = serde_json::to_vec(&seq.raw).unwrap_or_default();
            let mut out = BytesMut::with_capacity(raw_id.get().len() + changes.len() + seq.len() + 48);
            out.extend_from_slice(b"{\"id\":");
            out.extend_from_slice(raw_id.get().as_bytes());
            out.extend_from_slice(b",\"changes\":");
            out.extend_from_slice(changes);
            if deleted {
                out.extend_from_slice(b",\"deleted\":true");
            }
            out.extend_from_slice(b",\"seq\":");
            out.extend_from_slice(&seq);
            out.extend_from_slice(b"}\n");
            out.freeze()
        };
        let main_only = match winner {
            Some(rev) => bare(format!("[{{\"rev\":{}}}]", rev.get()).as_bytes()),
            None => bare(leaves.get().as_bytes()),
        };
        let all_docs = bare(leaves.get().as_bytes());
        let doc = range_in(line, doc.get());
        // A copy of its own: a slice of the feed's buffer would keep the whole buffer alive.
        Ok(Some(Change { id, seq, row: Bytes::copy_from_slice(line), doc, bare: [main_only, all_docs] }))
    }

    /// A row of a normal feed read with `include_docs=true&style=all_docs`.
    pub fn read(row: &[u8]) -> Result<Change, String> {
        Change::read_line(row)?.ok_or_else(|| "a change without an id".to_owned())
    }

    /// The change as the engine writes it in `view`: one JSON object and a newline, the line of
    /// a continuous feed.
    pub fn line(&self, view: View) -> Line {
        let bare = &self.bare[usize::from(view.all_docs)];
        if !view.include_docs {
            return [bare.clone(), Bytes::new(), Bytes::new(), Bytes::new()];
        }
        // `{…,"seq":N` then `,"doc":{…}}` and the newline.
        [
            bare.slice(..bare.len() - 2),
            Bytes::from_static(b",\"doc\":"),
            self.row.slice(self.doc.clone()),
            Bytes::from_static(b"}\n"),
        ]
    }

    /// The bytes the change holds, and what holding it costs beside them.
    pub fn cost(&self) -> usize {
        let seq = match &self.seq.raw {
            Value::String(s) => s.len(),
            _ => 0,
        };
        ENTRY_BYTES + self.row.len() + self.bare.iter().map(Bytes::len).sum::<usize>() + 2 * self.id.len() + seq
    }
}

/// A line's chunks as one piece (tests, and answers built whole).
#[cfg(test)]
pub fn joined(line: &Line) -> Vec<u8> {
    line.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(row: Value) -> Result<Change, String> {
        Change::read(row.to_string().as_bytes())
    }

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
        let row = json!({"id": "a\"b", "seq": 4, "deleted": true, "changes": [{"rev": "2-x"}, {"rev": "1-y"}], "doc": {"_id": "a\"b", "_rev": "2-x", "_deleted": true, "n": 1.50}});
        let c = read(row.clone()).unwrap();
        let read = |v| serde_json::from_slice::<Value>(&joined(&c.line(v))).unwrap();
        assert_eq!(
            read(View::default()),
            json!({"id": "a\"b", "changes": [{"rev": "2-x"}], "deleted": true, "seq": 4})
        );
        assert_eq!(
            read(View { include_docs: false, all_docs: true })["changes"],
            json!([{"rev": "2-x"}, {"rev": "1-y"}])
        );
        assert_eq!(read(View { include_docs: true, all_docs: false })["doc"]["_rev"], "2-x");
        assert_eq!(read(View { include_docs: true, all_docs: true }), row);
        for v in [false, true] {
            let line = joined(&c.line(View { include_docs: v, all_docs: v }));
            assert!(line.ends_with(b"}\n") && !line[..line.len() - 1].contains(&b'\n'), "one line");
        }
        assert!(read_err(json!({"id": "a", "seq": 1, "changes": []})), "without its document");
        assert!(read_err(json!({"id": 3, "seq": 1, "changes": [], "doc": {}})), "an id that is not a string");
    }

    fn read_err(row: Value) -> bool {
        read(row).is_err()
    }

    #[test]
    fn the_document_is_written_as_the_engine_wrote_it_and_its_cost_counts_it() {
        let line = br#"{"seq":"7-g1AAA","id":"p","changes":[{"rev":"1-a"}],"doc":{"_id":"p","_rev":"1-a","price":1.50,"big":1e400}}"#;
        let c = Change::read(line).unwrap();
        let with_doc = joined(&c.line(View { include_docs: true, all_docs: false }));
        assert!(
            with_doc.windows(25).any(|w| w == br#""price":1.50,"big":1e400}"#),
            "{}",
            String::from_utf8_lossy(&with_doc)
        );
        assert!(c.cost() >= line.len() + ENTRY_BYTES);
        assert_eq!(c.seq.raw, json!("7-g1AAA"));
    }
}
