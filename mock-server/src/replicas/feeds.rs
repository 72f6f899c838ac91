//! Where a replica's hubs read each database's live changes: from the engine when this replica
//! owns the database's tenant, otherwise from the owner's hub (`FEED_PATH`), which answers as the
//! engine would. The engine then holds one feed a database, however many replicas there are, and
//! reads each write once. A hub's first read, a device's catch-up and the database's head are
//! short normal requests and still go to the engine.
//!
//! When the owner cannot be reached, refuses (it is stopping, or sees other replicas alive) or
//! does not begin to answer within `OWNER_SILENT`, the feed is read from the engine instead for
//! `FALLBACK_FOR`, the database then read twice: no device waits on another replica. A feed from
//! the owner silent for `OWNER_SILENT` (it sends a heartbeat every `OWNER_HEARTBEAT`) is taken for
//! cut by a partition and opened again.
//! A feed ends when its database's owner changes; the hub opens it again from the last sequence
//! it took in, so no change is missed or repeated.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use serde_json::Value;

use super::members::{Members, HEARTBEAT};
use super::Replicas;
use crate::docdb::changes_hub::{since_param, Page, Source, SourceError, View};
use crate::docdb::engine::Engine;

/// The owner's hub as another replica reads it: `GET FEED_PATH/{db}?since=…`, the continuous
/// feed of every leaf revision with its document, as the engine's own.
pub const FEED_PATH: &str = "/_replica/changes";
/// The header carrying `feed_key`.
pub const KEY_HEADER: &str = "x-replica-key";

/// Feeds held now, by where they read.
#[derive(Debug, Default)]
pub struct FeedCounts {
    /// Feeds of the engine itself.
    pub engine: AtomicU64,
    /// Feeds read from the owning replica.
    pub forwarded: AtomicU64,
    /// Times an owner could not be read and the engine was read instead.
    pub fallbacks: AtomicU64,
}

pub struct ReplicaFeeds {
    engine: Engine,
    replicas: Arc<Replicas>,
    http: reqwest::Client,
}

impl ReplicaFeeds {
    pub fn new(engine: Engine, replicas: Arc<Replicas>) -> ReplicaFeeds {
        // Pooled connections to the owners are let go before a relay between may close them.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .pool_idle_timeout(crate::docdb::engine::POOL_IDLE)
            .build()
            .unwrap_or_default();
        ReplicaFeeds { engine, replicas, http }
    }
}

/// How long an engine feed read in place of an unreachable owner lasts before the owner is asked
/// again (the hub goes on from the last change it took in): longer than a dead replica takes to
/// leave the others' lists, so the second try finds the new owner.
pub const FALLBACK_FOR: Duration = Duration::from_secs(6);

/// The heartbeat an owner sends on a feed it serves another replica, and how long that feed may
/// be silent before the reader takes it for cut (a partition between the replicas holds a
/// connection open and silent; the engine's own feed has a heartbeat of 10 s, too slow to leave
/// a device without changes for). An owner that has not begun to answer by then is not reached
/// either: the engine is read instead.
pub const OWNER_HEARTBEAT: Duration = HEARTBEAT;
const OWNER_SILENT: Duration = Duration::from_secs(3);

/// How many times an owner that does not take itself for the owner is asked (each after this
/// replica's list changed, or two heartbeats) before the engine is read instead.
const ASK_OWNER: usize = 3;

/// A feed counted in one of `FeedCounts` from its request (an engine may send nothing, not even
/// its headers, before its first heartbeat, and holds the feed all the while) until it is dropped.
struct Open(Arc<FeedCounts>, fn(&FeedCounts) -> &AtomicU64);

impl Open {
    fn new(counts: &Arc<FeedCounts>, which: fn(&FeedCounts) -> &AtomicU64) -> Open {
        which(counts).fetch_add(1, Ordering::Relaxed);
        Open(counts.clone(), which)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        (self.1)(&self.0).fetch_sub(1, Ordering::Relaxed);
    }
}

/// `stream`, ended (and logged) when nothing came for `OWNER_SILENT`: the hub opens it again.
fn ends_when_silent(
    stream: BoxStream<'static, Result<Bytes, SourceError>>,
    db: String,
) -> BoxStream<'static, Result<Bytes, SourceError>> {
    futures_util::stream::unfold(Some(stream), move |stream| {
        let db = db.clone();
        async move {
            let mut stream = stream?;
            match tokio::time::timeout(OWNER_SILENT, stream.next()).await {
                Ok(Some(chunk)) => Some((chunk, Some(stream))),
                Ok(None) => None,
                Err(_) => {
                    tracing::warn!(db = %db, "the owner's feed was silent for {OWNER_SILENT:?}; opening it again");
                    Some((Err(SourceError::Unavailable("the owner's feed went silent".into())), None))
                }
            }
        }
    })
    .boxed()
}

/// `stream`, counted by `open` while it lasts, ending when `key`'s owner is no longer `owner` or,
/// when given, at `until`.
fn held(
    stream: BoxStream<'static, Result<Bytes, SourceError>>,
    open: Open,
    members: Arc<Members>,
    key: String,
    owner: String,
    until: Option<tokio::time::Instant>,
) -> BoxStream<'static, Result<Bytes, SourceError>> {
    let moved = async move {
        match until {
            Some(at) => tokio::select! {
                () = members.moved(&key, &owner) => {}
                () = tokio::time::sleep_until(at) => {}
            },
            None => members.moved(&key, &owner).await,
        }
    };
    stream
        .map(move |chunk| {
            let _ = &open;
            chunk
        })
        .take_until(Box::pin(moved))
        .boxed()
}

impl Source for ReplicaFeeds {
    fn head(&self, db: &str) -> BoxFuture<'static, Result<Value, SourceError>> {
        self.engine.head(db)
    }

    fn page(
        &self,
        db: &str,
        since: &Value,
        limit: usize,
        doc_ids: Option<&HashSet<String>>,
        view: View,
    ) -> BoxFuture<'static, Result<Page, SourceError>> {
        self.engine.page(db, since, limit, doc_ids, view)
    }

    fn follow(
        &self,
        db: &str,
        since: &Value,
    ) -> BoxFuture<'static, Result<BoxStream<'static, Result<Bytes, SourceError>>, SourceError>> {
        let key = crate::docdb::naming::tenant_of(db).to_owned();
        let Replicas { members, key: feed_key, counts } = &*self.replicas;
        let from_engine = self.engine.follow(db, since);
        let (members, counts, http) = (members.clone(), counts.clone(), self.http.clone());
        let (feed_key, since, db) = (hex::encode(feed_key), since_param(since), db.to_owned());
        Box::pin(async move {
            // An owner decided before the replicas started with this one are heard would hand
            // the feed over a moment later: the engine would hold it twice meanwhile.
            members.settled().await;
            let mut refused = String::new();
            for _ in 0..ASK_OWNER {
                let owner = members.owner(&key);
                if owner.id == members.me().id {
                    let open = Open::new(&counts, |c| &c.engine);
                    let feed = from_engine.await?;
                    return Ok(held(feed, open, members, key, owner.id, None));
                }
                let url = format!(
                    "{}{FEED_PATH}/{}",
                    owner.url.trim_end_matches('/'),
                    percent_encoding::utf8_percent_encode(&db, percent_encoding::NON_ALPHANUMERIC)
                );
                let open = Open::new(&counts, |c| &c.forwarded);
                let request = http.get(url).query(&[("since", &since)]).header(KEY_HEADER, &feed_key);
                let changes = members.changes();
                let answered = match tokio::time::timeout(OWNER_SILENT, request.send()).await {
                    Ok(sent) => sent.map_err(|e| e.to_string()),
                    Err(_) => Err(format!("no answer within {OWNER_SILENT:?}")),
                };
                refused = match answered {
                    Ok(answer) if answer.status().is_success() => {
                        let feed = answer
                            .bytes_stream()
                            .map(|c| c.map_err(|e| SourceError::Unavailable(e.to_string())))
                            .boxed();
                        let feed = ends_when_silent(feed, db.clone());
                        return Ok(held(feed, open, members, key, owner.id, None));
                    }
                    // The owner does not take itself for the owner (a 409): the two lists differ for a
                    // heartbeat (a replica came or went). Asked again once this one's list
                    // changes, rather than reading the engine beside whichever becomes the owner.
                    Ok(answer) if answer.status().as_u16() == 409 => {
                        drop(open);
                        let mut changes = changes;
                        let _ = tokio::time::timeout(2 * HEARTBEAT, changes.changed()).await;
                        format!("answered {}", answer.status())
                    }
                    // Any other refusal (a replica sharing no feeds answers 404): the engine
                    // answers instead, and says 404 itself when the database is gone.
                    Ok(answer) => {
                        refused = format!("answered {}", answer.status());
                        break;
                    }
                    Err(e) => {
                        refused = e;
                        break;
                    }
                };
            }
            let owner = members.owner(&key);
            tracing::warn!(db = %db, owner = %owner.url, "the owner's feed: {refused}; reading the engine's");
            counts.fallbacks.fetch_add(1, Ordering::Relaxed);
            let open = Open::new(&counts, |c| &c.engine);
            let feed = from_engine.await?;
            let until = tokio::time::Instant::now() + FALLBACK_FOR;
            Ok(held(feed, open, members, key, owner.id, Some(until)))
        })
    }
}
