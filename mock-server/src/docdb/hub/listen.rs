//! A device's `_changes` request answered by its database's hub: a normal feed at once from
//! the index; a longpoll or continuous feed by a task of its own that catches up from the engine
//! when the device is behind, joins the hub, and writes the body as the changes come.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::request::DEFAULT_HEARTBEAT;
use super::{results_body, Change, Feed, FeedRequest, Hubs, Lease, Seq, Since};

/// Bytes written ahead of a device's reading (the rest waits in its hub buffer).
const OUT_CHUNKS: usize = 4;

/// Counts a listening request for as long as it lives.
struct Listening(Arc<Hubs>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.counters.listening.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn send(out: &mpsc::Sender<Bytes>, bytes: Bytes) -> bool {
    out.send(bytes).await.is_ok()
}

fn read_rows(rows: Vec<Value>) -> Option<Vec<Change>> {
    rows.into_iter()
        .map(Change::read)
        .collect::<Result<_, _>>()
        .map_err(|e| tracing::warn!("changes hub: a catch-up row: {e}"))
        .ok()
}

impl Hubs {
    /// Answers `request` on `db` from its hub, the body as it comes. `None`: the hub cannot (its
    /// engine feed did not open, or a normal feed from before what it holds), and the request
    /// goes to the engine as it is. `whole`: the database is read whole (CORE).
    pub async fn serve(
        self: &Arc<Self>,
        db: &str,
        whole: bool,
        request: FeedRequest,
    ) -> Option<BoxStream<'static, Bytes>> {
        let lease = self.lease(db, whole);
        if !Self::ready(&lease).await {
            return None;
        }
        // `now` is the head when the request came, not when a listening task runs.
        let since = match &request.since {
            Since::Now => lease.hub.lock().index.head().clone(),
            Since::At(seq) => seq.clone(),
        };
        if request.feed == Feed::Normal {
            let state = lease.hub.lock();
            if !state.index.covers(since.n) {
                return None;
            }
            let held = state.index.after(since.n, &request.doc_ids, request.limit.unwrap_or(usize::MAX));
            let last = held.last().map_or(since.raw, |c| c.seq.raw.clone());
            let lines: Vec<Bytes> = held.iter().map(|c| c.line(request.view)).collect();
            self.counters.served_from_index.fetch_add(1, Ordering::Relaxed);
            self.counters.answered.fetch_add(1, Ordering::Relaxed);
            return Some(stream::once(async move { results_body(&lines, &last) }).boxed());
        }
        let (out, body) = mpsc::channel(OUT_CHUNKS);
        self.counters.listening.fetch_add(1, Ordering::Relaxed);
        self.counters.answered.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(self.clone().listen(lease, request, since, out));
        Some(stream::unfold(body, |mut body| async move { body.recv().await.map(|b| (b, body)) }).boxed())
    }

    async fn listen(self: Arc<Self>, lease: Lease, request: FeedRequest, mut since: Seq, out: mpsc::Sender<Bytes>) {
        let _listening = Listening(self.clone());
        let hub = lease.hub.clone();
        let view = request.view;
        let longpoll = request.feed == Feed::Longpoll;
        let limit = if longpoll { request.limit.unwrap_or(usize::MAX) } else { usize::MAX };
        // What a longpoll that times out answers: the `since` it was given.
        let echo = since.raw.clone();

        // Behind what the hub holds: catch up from the engine, then join.
        let (held, mut joined) = loop {
            let base = hub.lock().index.base().clone();
            if let Some(joined) = self.join(&hub, since.n, &request.doc_ids, limit) {
                break joined;
            }
            let page = if longpoll { request.limit } else { Some(self.tuning.page) };
            let Ok((rows, last)) = self.source.page(&hub.db, &since.raw, page, request.doc_ids.as_deref()).await else {
                return;
            };
            let Some(changes) = read_rows(rows) else { return };
            let Some(newest) = changes.last().map(|c| c.seq.clone()) else {
                // Nothing after `since` up to now: what the hub holds after its base follows.
                since = since.max(base);
                continue;
            };
            if longpoll {
                let lines: Vec<Bytes> = changes.iter().map(|c| c.line(view)).collect();
                send(&out, results_body(&lines, &last)).await;
                return;
            }
            for change in &changes {
                if !send(&out, change.line(view)).await {
                    return;
                }
            }
            since = Seq::read(&last).unwrap_or(newest).max(since);
        };

        let heartbeat = request.heartbeat.unwrap_or(DEFAULT_HEARTBEAT);
        let mut deadline = request.timeout.map(|t| Instant::now() + t);
        if longpoll && !held.is_empty() {
            let lines: Vec<Bytes> = held.iter().map(|c| c.line(view)).collect();
            let last = held.last().map_or(Value::Null, |c| c.seq.raw.clone());
            send(&out, results_body(&lines, &last)).await;
            return;
        }
        for change in held {
            if !send(&out, change.line(view)).await {
                return;
            }
            since = change.seq.clone();
        }
        loop {
            let timed_out = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                change = joined.rx.recv() => {
                    // Closed: the hub ended or found the device too slow; its client comes back.
                    let Some(change) = change else { return };
                    if change.seq <= since {
                        continue;
                    }
                    if longpoll {
                        send(&out, results_body(&[change.line(view)], &change.seq.raw)).await;
                        return;
                    }
                    if !send(&out, change.line(view)).await {
                        return;
                    }
                    since = change.seq.clone();
                    deadline = request.timeout.map(|t| Instant::now() + t);
                }
                () = tokio::time::sleep(heartbeat) => {
                    if !send(&out, Bytes::from_static(b"\n")).await {
                        return;
                    }
                }
                () = timed_out => {
                    let end = if longpoll {
                        results_body(&[], &echo)
                    } else {
                        Bytes::from(format!("{{\"last_seq\":{}}}\n", since.raw))
                    };
                    send(&out, end).await;
                    return;
                }
                () = out.closed() => return,
            }
        }
    }
}
