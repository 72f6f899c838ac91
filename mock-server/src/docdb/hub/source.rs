//! Where a hub reads its database's changes: the engine, behind a small port so the hub's rules
//! are tested with a scripted source. Every read asks for every leaf revision and the document
//! (`style=all_docs&include_docs=true`): the hub writes each device's view from that.

use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use serde_json::Value;

use crate::docdb::engine::Engine;

#[derive(Debug, Clone, thiserror::Error)]
pub enum SourceError {
    /// The engine answered, with this status (404: the database is gone).
    #[error("the engine answered {0}")]
    Status(u16),
    #[error("the engine did not answer: {0}")]
    Unavailable(String),
}

/// A normal feed's page: its rows and `last_seq`.
pub type Page = (Vec<Value>, Value);

pub trait Source: Send + Sync + 'static {
    /// The database's current sequence (`update_seq`).
    fn head(&self, db: &str) -> BoxFuture<'static, Result<Value, SourceError>>;
    /// A normal `_changes` since `since`: at most `limit` rows (all without), of `doc_ids` only
    /// when given.
    fn page(
        &self,
        db: &str,
        since: &Value,
        limit: Option<usize>,
        doc_ids: Option<&HashSet<String>>,
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

fn since_text(since: &Value) -> String {
    let text = match since {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    percent_encoding::utf8_percent_encode(&text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn db_path(db: &str) -> String {
    percent_encoding::utf8_percent_encode(db, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn unavailable(e: reqwest::Error) -> SourceError {
    SourceError::Unavailable(e.to_string())
}

async fn json(request: reqwest::RequestBuilder) -> Result<Value, SourceError> {
    let answer = request.send().await.map_err(unavailable)?;
    if !answer.status().is_success() {
        return Err(SourceError::Status(answer.status().as_u16()));
    }
    answer.json().await.map_err(unavailable)
}

impl Source for Engine {
    fn head(&self, db: &str) -> BoxFuture<'static, Result<Value, SourceError>> {
        let request = self.request(reqwest::Method::GET, &db_path(db)).timeout(Duration::from_secs(30));
        Box::pin(async move {
            json(request)
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
        limit: Option<usize>,
        doc_ids: Option<&HashSet<String>>,
    ) -> BoxFuture<'static, Result<Page, SourceError>> {
        let mut path = format!("{}/_changes?style=all_docs&include_docs=true&since={}", db_path(db), since_text(since));
        if let Some(limit) = limit {
            path.push_str(&format!("&limit={limit}"));
        }
        let request = match doc_ids {
            None => self.request(reqwest::Method::GET, &path),
            Some(ids) => self
                .request(reqwest::Method::POST, &format!("{path}&filter=_doc_ids"))
                .json(&serde_json::json!({ "doc_ids": ids })),
        };
        let request = request.timeout(Duration::from_secs(120));
        Box::pin(async move {
            let mut answer = json(request).await?;
            let rows = match answer.get_mut("results").map(Value::take) {
                Some(Value::Array(rows)) => rows,
                _ => return Err(SourceError::Unavailable("a _changes answer without results".into())),
            };
            Ok((rows, answer.get("last_seq").cloned().unwrap_or(Value::Null)))
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
        let request = self.request(reqwest::Method::GET, &path);
        Box::pin(async move {
            let answer = request.send().await.map_err(unavailable)?;
            if !answer.status().is_success() {
                return Err(SourceError::Status(answer.status().as_u16()));
            }
            Ok(answer.bytes_stream().map(|chunk| chunk.map_err(unavailable)).boxed())
        })
    }
}
