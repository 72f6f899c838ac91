//! A device's `_changes` request answered by its database's hub: a normal feed at once from
//! the index; a longpoll or continuous feed by a task of its own that catches up from the engine
//! when the device is behind, joins the hub, and writes the body as the changes come.
//!
//! A catch-up reads the engine a page at a time (`Tuning::page` rows, in the device's own view:
//! the documents only when it asked for them) and writes each page out before it asks for the
//! next, so what it holds is a page and the few chunks waiting for the device, however far
//! behind the device is.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::change::{Change, Line, View};
use super::request::DEFAULT_HEARTBEAT;
use super::source::Page;
use super::{ChangesHubs, Feed, FeedRequest, Lease, Seq, Since};

/// Chunks written ahead of a device's reading (the rest waits in its hub buffer).
const OUT_CHUNKS: usize = 4;

/// About what one page of a catch-up may hold: after each page the next asks for as many rows
/// as fit, by the size of the rows so far (at most `Tuning::page`, at least one).
const PAGE_BYTES: usize = 256 * 1024;

/// A catch-up's first page with the documents asks for this many rows at most, before their
/// size is known.
pub(super) const FIRST_PAGE_WITH_DOCS: usize = 100;

/// Small pieces of an answer are gathered into chunks of about this size; a piece this large
/// goes as it is, never copied.
const GATHER: usize = 16 * 1024;

/// Counts a listening request for as long as it lives.
struct Listening(Arc<ChangesHubs>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.counters.listening.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Pieces gathered into chunks of about `GATHER` bytes: one chunk a few hundred rows rather than
/// one a row, and a document larger than that written from where it is held.
pub(super) struct Gathered<I> {
    pieces: I,
    waiting: Option<Bytes>,
}

pub(super) fn gathered<I: Iterator<Item = Bytes>>(pieces: I) -> Gathered<I> {
    Gathered { pieces, waiting: None }
}

impl<I: Iterator<Item = Bytes>> Iterator for Gathered<I> {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if let Some(big) = self.waiting.take() {
            return Some(big);
        }
        let mut buf = BytesMut::new();
        loop {
            match self.pieces.next() {
                None => return (!buf.is_empty()).then(|| buf.freeze()),
                Some(piece) if piece.len() >= GATHER => {
                    if buf.is_empty() {
                        return Some(piece);
                    }
                    self.waiting = Some(piece);
                    return Some(buf.freeze());
                }
                Some(piece) => {
                    buf.extend_from_slice(&piece);
                    if buf.len() >= GATHER {
                        return Some(buf.freeze());
                    }
                }
            }
        }
    }
}

/// A line's non-empty chunks.
fn chunks(line: Line) -> impl Iterator<Item = Bytes> {
    line.into_iter().filter(|b| !b.is_empty())
}

/// `{"results":[`, the rows separated by commas, then `last_seq`: a normal or longpoll answer,
/// as pieces.
fn results_open() -> Bytes {
    Bytes::from_static(b"{\"results\":[\n")
}

fn results_close(last_seq: &Value) -> Bytes {
    let mut end = b"],\n\"last_seq\":".to_vec();
    end.extend_from_slice(&serde_json::to_vec(last_seq).unwrap_or_default());
    end.extend_from_slice(b"}\n");
    Bytes::from(end)
}

/// A whole answer of held changes in `view`, written as it is read.
pub(super) fn results(changes: Vec<Arc<Change>>, view: View, last_seq: Value) -> BoxStream<'static, Bytes> {
    let rows = changes.into_iter().enumerate().flat_map(move |(i, c)| {
        let comma = if i > 0 { Bytes::from_static(b",") } else { Bytes::new() };
        std::iter::once(comma).chain(chunks(c.line(view)))
    });
    let pieces = std::iter::once(results_open())
        .chain(rows)
        .chain(std::iter::once_with(move || results_close(&last_seq)))
        .filter(|b| !b.is_empty());
    stream::iter(gathered(pieces)).boxed()
}

async fn send(out: &mpsc::Sender<Bytes>, bytes: Bytes) -> bool {
    out.send(bytes).await.is_ok()
}

/// Sends `pieces` gathered; `false` when the device is gone.
async fn send_all(out: &mpsc::Sender<Bytes>, pieces: impl Iterator<Item = Bytes>) -> bool {
    for chunk in gathered(pieces) {
        if !send(out, chunk).await {
            return false;
        }
    }
    true
}

/// A line to a device: one chunk when small (a copy of a few hundred bytes costs less than
/// three sends), else its chunks with the document shared.
async fn send_line(out: &mpsc::Sender<Bytes>, line: Line) -> bool {
    let len: usize = line.iter().map(Bytes::len).sum();
    if len <= 4096 && !line[1].is_empty() {
        return send(out, Bytes::from(line.concat())).await;
    }
    for chunk in chunks(line) {
        if !send(out, chunk).await {
            return false;
        }
    }
    true
}

/// How many rows the page after `page` asks for: as many as fit in `PAGE_BYTES` by the size of
/// its rows, at most `most`; `now` when it had none.
pub(super) fn next_page(page: &Page, now: usize, most: usize) -> usize {
    if page.rows.is_empty() {
        return now;
    }
    let row = page.rows.iter().map(Bytes::len).sum::<usize>() / page.rows.len() + 1;
    (PAGE_BYTES / row).clamp(1, most.max(1))
}

/// The sequence a page ends at: its `last_seq`, or its last row's when that one is unreadable.
fn page_end(page: &Page) -> Option<Seq> {
    #[derive(serde::Deserialize)]
    struct Row {
        seq: Value,
    }
    Seq::read(&page.last_seq).or_else(|| {
        let last: Row = serde_json::from_slice(page.rows.last()?).ok()?;
        Seq::read(&last.seq)
    })
}

impl ChangesHubs {
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
            drop(state);
            let last = held.last().map_or(since.raw, |c| c.seq.raw.clone());
            self.counters.served_from_index.fetch_add(1, Ordering::Relaxed);
            self.counters.answered.fetch_add(1, Ordering::Relaxed);
            return Some(results(held, request.view, last));
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
        // Rows of a longpoll's answer already written (its opening is out once there is one).
        let mut written = 0usize;
        let mut rows_a_page =
            if view.include_docs { self.tuning.page.min(FIRST_PAGE_WITH_DOCS) } else { self.tuning.page }.max(1);

        // Behind what the hub holds: catch up from the engine a page at a time, then join.
        let (held, mut joined) = loop {
            let base = hub.lock().index.base().clone();
            if written == 0 {
                if let Some(joined) = self.join(&hub, since.n, &request.doc_ids, limit) {
                    break joined;
                }
            }
            let asked = rows_a_page.min(limit - written);
            let Ok(page) = self.source.page(&hub.db, &since.raw, asked, request.doc_ids.as_deref(), view).await else {
                return;
            };
            let full = page.rows.len() >= asked;
            rows_a_page = next_page(&page, rows_a_page, self.tuning.page);
            if page.rows.is_empty() && written == 0 {
                // Nothing after `since` up to now: what the hub holds after its base follows.
                since = since.max(base);
                continue;
            }
            let end = page_end(&page);
            if longpoll {
                // One answer, its rows page after page, ended when the engine has no more or the
                // device's limit is reached.
                let first = written == 0;
                written += page.rows.len();
                let done = !full || written >= limit;
                let rows = page.rows.into_iter().enumerate().flat_map(|(i, row)| {
                    let comma = if i > 0 || !first { Bytes::from_static(b",") } else { Bytes::new() };
                    [comma, row, Bytes::from_static(b"\n")]
                });
                let open = first.then(results_open);
                let close = done.then(|| results_close(&page.last_seq));
                if !send_all(&out, open.into_iter().chain(rows).chain(close)).await || done {
                    return;
                }
            } else {
                let rows = page.rows.into_iter().flat_map(|row| [row, Bytes::from_static(b"\n")]);
                if !send_all(&out, rows).await {
                    return;
                }
            }
            match end {
                Some(end) if end > since => since = end,
                // A page that does not move on cannot be read past: the device's client comes
                // back and the engine answers it.
                _ => return,
            }
        };

        let heartbeat = request.heartbeat.unwrap_or(DEFAULT_HEARTBEAT);
        let mut deadline = request.timeout.map(|t| Instant::now() + t);
        if longpoll && !held.is_empty() {
            let last = held.last().map_or(Value::Null, |c| c.seq.raw.clone());
            let mut answer = results(held, view, last);
            while let Some(chunk) = answer.next().await {
                if !send(&out, chunk).await {
                    return;
                }
            }
            return;
        }
        for change in held {
            if !send_line(&out, change.line(view)).await {
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
                        let mut answer = results(vec![change.clone()], view, change.seq.raw.clone());
                        while let Some(chunk) = answer.next().await {
                            if !send(&out, chunk).await {
                                return;
                            }
                        }
                        return;
                    }
                    if !send_line(&out, change.line(view)).await {
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
                        Bytes::from(format!("{{\"results\":[],\n\"last_seq\":{}}}\n", echo))
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
