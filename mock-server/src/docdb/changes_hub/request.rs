//! Which `_changes` requests the hub serves, read from the query (and a `_doc_ids` POST body):
//! `feed` normal, longpoll or continuous; `since` (a sequence, `now`); `include_docs`; `style`;
//! `filter=_doc_ids` with `doc_ids`; `limit` (not on a continuous feed, where engines disagree);
//! `heartbeat`; `timeout`. Anything else (another filter, `conflicts`, `attachments`,
//! `descending`, `seq_interval`, `eventsource`, a sequence the hub cannot order) is `None`: the
//! request goes to the engine as it did before the hub.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::change::{Seq, View};
use super::index::DocIds;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    Normal,
    Longpoll,
    Continuous,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// From the database's current sequence.
    Now,
    At(Seq),
}

#[derive(Debug, Clone)]
pub struct FeedRequest {
    pub feed: Feed,
    pub since: Since,
    pub view: View,
    pub doc_ids: DocIds,
    pub limit: Option<usize>,
    pub heartbeat: Option<Duration>,
    pub timeout: Option<Duration>,
}

/// The engine's heartbeat when a live feed names none (PouchDB Server's; a proxy or a load
/// balancer in between closes a feed that says nothing for long).
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(6);

fn flag(value: &str) -> Option<bool> {
    match value {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

fn millis(value: &str) -> Option<Duration> {
    value.parse::<u64>().ok().map(Duration::from_millis)
}

/// `since` as given: `now`, a number, or an engine's sequence text.
fn since(value: &str) -> Option<Since> {
    if value == "now" {
        return Some(Since::Now);
    }
    let raw = match value.parse::<u64>() {
        Ok(n) => Value::from(n),
        Err(_) => Value::String(value.to_owned()),
    };
    Seq::read(&raw).map(Since::At)
}

fn doc_ids(value: &Value) -> Option<Arc<HashSet<String>>> {
    let ids = value.as_array()?.iter().map(|id| id.as_str().map(str::to_owned)).collect::<Option<HashSet<_>>>()?;
    Some(Arc::new(ids))
}

impl FeedRequest {
    /// The request, when the hub serves it. `pairs`: the decoded query; `body`: a POST's body.
    pub fn read(method: &str, pairs: &[(String, String)], body: &[u8]) -> Option<FeedRequest> {
        let mut request = FeedRequest {
            feed: Feed::Normal,
            since: Since::At(Seq::zero()),
            view: View::default(),
            doc_ids: None,
            limit: None,
            heartbeat: None,
            timeout: None,
        };
        let (mut filter, mut ids) = (None, None);
        for (name, value) in pairs {
            match name.as_str() {
                "feed" => {
                    request.feed = match value.as_str() {
                        "normal" => Feed::Normal,
                        "longpoll" => Feed::Longpoll,
                        "continuous" => Feed::Continuous,
                        _ => return None,
                    }
                }
                "since" => request.since = since(value)?,
                "include_docs" => request.view.include_docs = flag(value)?,
                "style" => {
                    request.view.all_docs = match value.as_str() {
                        "all_docs" => true,
                        "main_only" => false,
                        _ => return None,
                    }
                }
                "filter" => filter = Some(value.as_str()),
                "doc_ids" => ids = Some(doc_ids(&serde_json::from_str(value).ok()?)?),
                // The engine reads `limit=0` as 1.
                "limit" => request.limit = Some(value.parse::<usize>().ok()?.max(1)),
                "heartbeat" => {
                    request.heartbeat = if value == "true" { Some(DEFAULT_HEARTBEAT) } else { Some(millis(value)?) }
                }
                "timeout" => request.timeout = Some(millis(value)?),
                _ => return None,
            }
        }
        match method {
            "GET" => {}
            "POST" if filter == Some("_doc_ids") => {
                let body: Value = serde_json::from_slice(body).ok()?;
                let object = body.as_object()?;
                if object.len() != 1 || ids.is_some() {
                    return None;
                }
                ids = Some(doc_ids(object.get("doc_ids")?)?);
            }
            _ => return None,
        }
        match (filter, ids) {
            (None, None) => {}
            (Some("_doc_ids"), Some(ids)) => request.doc_ids = Some(ids),
            _ => return None,
        }
        if request.feed == Feed::Continuous && request.limit.is_some() {
            return None;
        }
        Some(request)
    }

    pub fn live(&self) -> bool {
        self.feed != Feed::Normal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(method: &str, query: &str, body: &str) -> Option<FeedRequest> {
        let pairs: Vec<(String, String)> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').map(|(n, v)| (n.to_owned(), v.to_owned())).unwrap())
            .collect();
        FeedRequest::read(method, &pairs, body.as_bytes())
    }

    #[test]
    fn what_pouchdb_sends_is_served() {
        let r = read("GET", "style=all_docs&feed=longpoll&heartbeat=10000&since=0&limit=100", "").unwrap();
        assert_eq!(
            (r.feed, r.view.all_docs, r.limit, r.heartbeat),
            (Feed::Longpoll, true, Some(100), Some(Duration::from_secs(10)))
        );
        let r = read("POST", "style=all_docs&filter=_doc_ids&feed=longpoll&since=12-g1AAA", r#"{"doc_ids":["a","b"]}"#)
            .unwrap();
        assert_eq!(r.doc_ids.unwrap().len(), 2);
        assert_eq!(r.since, Since::At(Seq::read(&Value::from("12-g1AAA")).unwrap()));
        let r = read("GET", "feed=continuous&since=now&include_docs=true&filter=_doc_ids&doc_ids=[\"x\"]", "").unwrap();
        assert_eq!((r.since, r.view.include_docs), (Since::Now, true));
        assert_eq!(read("GET", "limit=0", "").unwrap().limit, Some(1));
    }

    #[test]
    fn the_rest_goes_to_the_engine() {
        for (method, query, body) in [
            ("GET", "feed=eventsource", ""),
            ("GET", "filter=app/by_type", ""),
            ("GET", "conflicts=true", ""),
            ("GET", "seq_interval=100", ""),
            ("GET", "since=abc", ""),
            ("GET", "feed=continuous&limit=5", ""),
            ("GET", "doc_ids=[\"a\"]", ""),
            ("GET", "filter=_doc_ids", ""),
            ("POST", "filter=_selector", r#"{"selector":{}}"#),
            ("POST", "filter=_doc_ids", r#"{"doc_ids":["a"],"x":1}"#),
            ("POST", "filter=_doc_ids", r#"{"doc_ids":[1]}"#),
            ("POST", "", "{}"),
            ("GET", "limit=-1", ""),
        ] {
            assert!(read(method, query, body).is_none(), "{method} {query} {body}");
        }
    }
}
