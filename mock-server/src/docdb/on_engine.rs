//! The engine adapter: documents in the CouchDB-protocol engine at `DOCDB_URL`, reached with its
//! admin credentials through the bridge (`engine::wait`). Only what CouchDB 3 and PouchDB Server
//! both serve: `PUT`/`GET`/`DELETE /{db}`, single documents, `_bulk_docs`, `_all_docs` with
//! `include_docs`, `_local/` documents. Revisions and `update_seq` are the engine's own.

use reqwest::Method;
use serde_json::{json, Map, Value};

use super::documents::{Counts, Documents, Write};
use super::engine::{wait, Engine};
use super::{strip_reserved, Doc, DocDbError, DocDbResult, RawDoc};

pub struct OnEngine<'e> {
    pub engine: &'e Engine,
}

/// A database name or document id as one path segment (CouchDB wants `/` in names as `%2F`).
fn segment(part: &str) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC.remove(b'_').remove(b'-').remove(b'.');
    percent_encoding::utf8_percent_encode(part, SET).to_string()
}

/// `_local/x` (or `x`) as the path of that local document.
fn local_path(db: &str, id: &str) -> String {
    format!("{}/_local/{}", segment(db), segment(id.strip_prefix("_local/").unwrap_or(id)))
}

/// CouchDB 3's `update_seq` is opaque text whose number before the first `-` is the sequence
/// (summed over shards); PouchDB Server's is that number.
fn seq_number(seq: &Value) -> u64 {
    match seq {
        Value::Number(n) => n.as_u64().unwrap_or(0),
        Value::String(s) => s.split('-').next().and_then(|n| n.parse().ok()).unwrap_or(0),
        _ => 0,
    }
}

/// The engine's refusal as text: its `error` and `reason`.
fn refusal(status: u16, body: &Value) -> String {
    format!(
        "the document engine answered {status}: {} ({})",
        body["error"].as_str().unwrap_or("?"),
        body["reason"].as_str().unwrap_or("")
    )
}

fn doc_from(db: &str, mut doc: Map<String, Value>) -> RawDoc {
    let id = doc.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let rev = doc.get("_rev").and_then(Value::as_str).unwrap_or_default().to_owned();
    doc = strip_reserved(doc);
    RawDoc { db: db.to_owned(), id, rev, body: Value::Object(doc).to_string() }
}

impl OnEngine<'_> {
    /// One request; the answer's status and JSON body (`Null` when it has none).
    fn call(&self, method: Method, path: &str, body: Option<Value>) -> DocDbResult<(u16, Value)> {
        // A read is sent again when its connection broke before the answer; a write only when
        // no connection was made (a step's write may have been done: the step fails instead).
        let replayable = matches!(method, Method::GET | Method::HEAD);
        let mut request = self.engine.bridged_request(method, path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let sent = self.engine.send_bridged(request, replayable);
        let answered = wait(async move {
            let response = sent.await?;
            let status = response.status().as_u16();
            let bytes = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
        })?;
        answered.map_err(DocDbError::EngineUnreachable)
    }

    fn fail(status: u16, body: &Value) -> DocDbError {
        DocDbError::Engine(refusal(status, body))
    }
}

impl Documents for OnEngine<'_> {
    fn create_db(&self, name: &str) -> DocDbResult<()> {
        match self.call(Method::PUT, &segment(name), None)? {
            // 412: it exists (a resumed step created it before).
            (201 | 202 | 412, _) => Ok(()),
            (400, _) => Err(DocDbError::IllegalName(name.to_owned())),
            (status, body) => Err(Self::fail(status, &body)),
        }
    }

    fn delete_db(&self, name: &str) -> DocDbResult<()> {
        match self.call(Method::DELETE, &segment(name), None)? {
            (200 | 202 | 404, _) => Ok(()),
            (status, body) => Err(Self::fail(status, &body)),
        }
    }

    fn counts(&self, name: &str) -> DocDbResult<Option<Counts>> {
        match self.call(Method::GET, &segment(name), None)? {
            (200, info) => Ok(Some(Counts {
                doc_count: info["doc_count"].as_u64().unwrap_or(0),
                update_seq: seq_number(&info["update_seq"]),
            })),
            (404, _) => Ok(None),
            (status, body) => Err(Self::fail(status, &body)),
        }
    }

    fn put(&self, db: &str, id: &str, body: Map<String, Value>, expected_rev: Option<&str>) -> DocDbResult<String> {
        let mut doc = strip_reserved(body);
        if let Some(rev) = expected_rev {
            doc.insert("_rev".into(), Value::String(rev.to_owned()));
        }
        match self.call(Method::PUT, &format!("{}/{}", segment(db), segment(id)), Some(Value::Object(doc)))? {
            (201 | 202, answer) => Ok(answer["rev"].as_str().unwrap_or_default().to_owned()),
            (409, _) => Err(DocDbError::Conflict(id.to_owned())),
            (404, _) => Err(DocDbError::Missing(db.to_owned())),
            (status, body) => Err(Self::fail(status, &body)),
        }
    }

    fn bulk_put(&self, db: &str, writes: Vec<Write>) -> DocDbResult<Vec<DocDbResult<String>>> {
        let ids: Vec<String> = writes.iter().map(|w| w.id.clone()).collect();
        let docs: Vec<Value> = writes
            .into_iter()
            .map(|w| {
                let mut doc = strip_reserved(w.body);
                doc.insert("_id".into(), Value::String(w.id));
                if let Some(rev) = w.rev {
                    doc.insert("_rev".into(), Value::String(rev));
                }
                Value::Object(doc)
            })
            .collect();
        let answers =
            match self.call(Method::POST, &format!("{}/_bulk_docs", segment(db)), Some(json!({ "docs": docs })))? {
                (201 | 202, Value::Array(answers)) if answers.len() == ids.len() => answers,
                (404, _) => return Err(DocDbError::Missing(db.to_owned())),
                (status, body) => return Err(Self::fail(status, &body)),
            };
        // Matched by id, not by position: PouchDB Server may answer a bulk write out of order.
        let mut by_id: std::collections::HashMap<String, Value> =
            answers.into_iter().map(|a| (a["id"].as_str().unwrap_or_default().to_owned(), a)).collect();
        Ok(ids
            .into_iter()
            .map(|id| {
                let a = by_id.remove(&id).unwrap_or(Value::Null);
                match (a["rev"].as_str(), a["error"].as_str()) {
                    (Some(rev), None) => Ok(rev.to_owned()),
                    (_, Some("conflict")) => Err(DocDbError::Conflict(id)),
                    _ => Err(DocDbError::Engine(format!("writing {id}: {}", refusal(201, &a)))),
                }
            })
            .collect())
    }

    fn get(&self, db: &str, id: &str) -> DocDbResult<Option<Doc>> {
        match self.call(Method::GET, &format!("{}/{}", segment(db), segment(id)), None)? {
            (200, Value::Object(doc)) => doc_from(db, doc).parse().map(Some),
            (404, _) => Ok(None),
            (status, body) => Err(Self::fail(status, &body)),
        }
    }

    fn all_docs(&self, db: &str) -> DocDbResult<Vec<RawDoc>> {
        let rows = match self.call(Method::GET, &format!("{}/_all_docs?include_docs=true", segment(db)), None)? {
            (200, mut answer) => answer["rows"].take(),
            (404, _) => return Err(DocDbError::Missing(db.to_owned())),
            (status, body) => return Err(Self::fail(status, &body)),
        };
        let Value::Array(rows) = rows else {
            return Err(DocDbError::Engine(format!("_all_docs of {db} answered no rows")));
        };
        Ok(rows
            .into_iter()
            .filter_map(|mut row| match row["doc"].take() {
                Value::Object(doc) if !row["id"].as_str().unwrap_or("").starts_with("_design/") => {
                    Some(doc_from(db, doc))
                }
                _ => None,
            })
            .collect())
    }

    fn put_local(&self, db: &str, id: &str, body: &Value) -> DocDbResult<()> {
        let path = local_path(db, id);
        let mut doc = body.as_object().cloned().unwrap_or_default();
        doc.remove("_id");
        // The engine keeps a revision for local documents too: an update names the current one.
        match self.call(Method::GET, &path, None)? {
            (200, current) => {
                doc.insert("_rev".into(), current["_rev"].clone());
            }
            (404, _) => {
                doc.remove("_rev");
            }
            (status, body) => return Err(Self::fail(status, &body)),
        }
        match self.call(Method::PUT, &path, Some(Value::Object(doc)))? {
            (200..=202, _) => Ok(()),
            (409, _) => Err(DocDbError::Conflict(id.to_owned())),
            (status, body) => Err(Self::fail(status, &body)),
        }
    }

    fn get_local(&self, db: &str, id: &str) -> DocDbResult<Option<Value>> {
        match self.call(Method::GET, &local_path(db, id), None)? {
            (200, Value::Object(mut doc)) => {
                doc.remove("_id");
                doc.remove("_rev");
                Ok(Some(Value::Object(doc)))
            }
            (404, _) => Ok(None),
            (status, body) => Err(Self::fail(status, &body)),
        }
    }

    /// An engine without a `_replicator` database has no replications to name it.
    fn replications_naming(&self, db: &str) -> DocDbResult<Vec<String>> {
        let rows = match self.call(Method::GET, "_replicator/_all_docs?include_docs=true", None)? {
            (200, mut answer) => answer["rows"].take(),
            (404, _) => return Ok(Vec::new()),
            (status, body) => return Err(Self::fail(status, &body)),
        };
        let rows = rows.as_array().cloned().unwrap_or_default();
        Ok(rows
            .iter()
            .filter(|row| ["source", "target"].iter().any(|end| super::documents::endpoint_names(&row["doc"][end], db)))
            .filter_map(|row| row["id"].as_str().map(str::to_owned))
            .collect())
    }

    fn restore(&self, db: &str, docs: Vec<Value>) -> DocDbResult<()> {
        match self.call(
            Method::POST,
            &format!("{}/_bulk_docs", segment(db)),
            Some(json!({ "docs": docs, "new_edits": false })),
        )? {
            // With new_edits false CouchDB answers only the documents it refused.
            (201 | 202, Value::Array(refused)) if refused.iter().all(|a| a.get("error").is_none()) => Ok(()),
            (404, _) => Err(DocDbError::Missing(db.to_owned())),
            (status, body) => Err(Self::fail(status, &body)),
        }
    }
}
