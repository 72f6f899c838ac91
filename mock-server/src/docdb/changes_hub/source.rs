//! Where a hub reads its database's changes: the engine, behind a small port so the hub's rules
//! are tested with a scripted source. The hub's own reads (its feed, a whole database's first
//! read) ask for every leaf revision and the document (`style=all_docs&include_docs=true`): the
//! hub writes each device's view from that. A device's catch-up asks in the device's own view,
//! the document only when the device asked for it, a page at a time.

use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use serde_json::Value;

use serde_json::value::RawValue;

use super::change::View;
use crate::docdb::engine::Engine;

#[derive(Debug, Clone, thiserror::Error)]
pub enum SourceError {
    /// The engine answered, with this status (404: the database is gone).
    #[error("the engine answered {0}")]
    Status(u16),
    #[error("the engine did not answer: {0}")]
    Unavailable(String),
}

/// A normal feed's page: each row's text, and `last_seq`.
#[derive(Debug, Default)]
pub struct Page {
    pub rows: Vec<Bytes>,
    pub last_seq: Value,
}

/// A normal `_changes` answer, its rows borrowed from the text.
#[derive(serde::Deserialize)]
struct Answer<'a> {
    #[serde(borrow)]
    results: Vec<&'a RawValue>,
    #[serde(default)]
    last_seq: Value,
}

impl Page {
    /// Reads a normal `_changes` answer; each row a slice of `body`, not a copy.
    pub fn read(body: Bytes) -> Result<Page, SourceError> {
        let answer: Answer = serde_json::from_slice(&body)
            .map_err(|e| SourceError::Unavailable(format!("a _changes answer the hub cannot read: {e}")))?;
        let rows = answer
            .results
            .iter()
            .map(|row| {
                let start = row.get().as_ptr() as usize - body.as_ptr() as usize;
                body.slice(start..start + row.get().len())
            })
            .collect();
        Ok(Page { rows, last_seq: answer.last_seq })
    }
}

pub trait Source: Send + Sync + 'static {
    /// The database's current sequence (`update_seq`).
    fn head(&self, db: &str) -> BoxFuture<'static, Result<Value, SourceError>>;
    /// A normal `_changes` since `since` in `view`: at most `limit` rows, of `doc_ids` only
    /// when given.
    fn page(
        &self,
        db: &str,
        since: &Value,
        limit: usize,
        doc_ids: Option<&HashSet<String>>,
        view: View,
    ) -> BoxFuture<'static, Result<Page, SourceError>>;
    /// A continuous `_changes` since `since`, as the bytes come.
    fn follow(
        &self,
        db: &str,
        since: &Value,
    ) -> BoxFuture<'static, Result<BoxStream<'static, Result<Bytes, SourceError>>, SourceError>>;
}

/// The engine's heartbeat on the hub's own feed: a feed silent for three of them is taken for
/// dead and opened again.
pub const UPSTREAM_HEARTBEAT: Duration = Duration::from_secs(10);

/// A sequence as a `since` parameter's text (CouchDB's are strings, PouchDB Server's numbers).
pub fn since_param(since: &Value) -> String {
    match since {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn since_text(since: &Value) -> String {
    percent_encoding::utf8_percent_encode(&since_param(since), percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn db_path(db: &str) -> String {
    percent_encoding::utf8_percent_encode(db, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn unavailable(e: reqwest::Error) -> SourceError {
    SourceError::Unavailable(e.to_string())
}

async fn json(
    sent: impl std::future::Future<Output = Result<reqwest::Response, reqwest::Error>>,
) -> Result<Value, SourceError> {
    let answer = sent.await.map_err(unavailable)?;
    if !answer.status().is_success() {
        return Err(SourceError::Status(answer.status().as_u16()));
    }
    answer.json().await.map_err(unavailable)
}

impl Source for Engine {
    fn head(&self, db: &str) -> BoxFuture<'static, Result<Value, SourceError>> {
        // Every read of the hub's is replayable: sent again on a fresh connection when its
        // pooled one was found dead.
        let sent = self.send(self.request(reqwest::Method::GET, &db_path(db)).timeout(Duration::from_secs(30)), true);
        Box::pin(async move {
            json(sent)
                .await?
                .get("update_seq")
                .cloned()
                .ok_or(SourceError::Unavailable("no update_seq in the database's info".into()))
        })
    }

    fn page(
        &self,
        db: &str,
        since: &Value,
        limit: usize,
        doc_ids: Option<&HashSet<String>>,
        view: View,
    ) -> BoxFuture<'static, Result<Page, SourceError>> {
        let style = if view.all_docs { "all_docs" } else { "main_only" };
        let mut path = format!("{}/_changes?style={style}&since={}&limit={limit}", db_path(db), since_text(since));
        if view.include_docs {
            path.push_str("&include_docs=true");
        }
        let request = match doc_ids {
            None => self.request(reqwest::Method::GET, &path),
            Some(ids) => self
                .request(reqwest::Method::POST, &format!("{path}&filter=_doc_ids"))
                .json(&serde_json::json!({ "doc_ids": ids })),
        };
        let sent = self.send(request.timeout(Duration::from_secs(120)), true);
        Box::pin(async move {
            let answer = sent.await.map_err(unavailable)?;
            if !answer.status().is_success() {
                return Err(SourceError::Status(answer.status().as_u16()));
            }
            Page::read(answer.bytes().await.map_err(unavailable)?)
        })
    }

    fn follow(
        &self,
        db: &str,
        since: &Value,
    ) -> BoxFuture<'static, Result<BoxStream<'static, Result<Bytes, SourceError>>, SourceError>> {
        let path = format!(
            "{}/_changes?feed=continuous&style=all_docs&include_docs=true&heartbeat={}&since={}",
            db_path(db),
            UPSTREAM_HEARTBEAT.as_millis(),
            since_text(since)
        );
        let sent = self.send(self.request(reqwest::Method::GET, &path), true);
        Box::pin(async move {
            let answer = sent.await.map_err(unavailable)?;
            if !answer.status().is_success() {
                return Err(SourceError::Status(answer.status().as_u16()));
            }
            Ok(answer.bytes_stream().map(|chunk| chunk.map_err(unavailable)).boxed())
        })
    }
}
