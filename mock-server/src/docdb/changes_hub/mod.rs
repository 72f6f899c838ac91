//! The changes hub: one feed of each database from the engine, however many devices listen.
//!
//! Every device running a live replication keeps a `_changes` request open. Forwarded one by
//! one, each is its own feed in the engine, which then does the fan-out once per device. Here a
//! database's live requests (and CORE's normal ones, the re-bootstrap peak) are served from a
//! `Hub`: one continuous feed of the database, read with every leaf revision and the document,
//! whose changes go to an `Index` (the latest change of each document) and to every listening
//! device, each in the view it asked for. The engine sees one feed per database: on one server
//! the hub's own, with replicas of a shared store the owning replica's (`crate::replicas`).
//!
//! What a device sees is what the engine would have answered it: the same changes in the same
//! order, the sequences as the engine wrote them. What the hubs of a replica hold is bounded in
//! bytes (`Tuning::max_bytes`, shared); a hub over it lets its own oldest changes go. A device
//! whose `since` is older than what the hub holds catches up from the engine first (normal feeds
//! in its own view, page by page), then joins. A device
//! that stops reading is closed once `listener_buffer` changes wait for it, and its client comes
//! back from its last sequence. When the engine's feed drops, it is opened again from the last
//! sequence the hub took in. A hub ends `linger` after its last device left (a longpoll device is
//! away between two requests) and with it the engine's feed.

mod change;
mod index;
mod listen;
mod request;
mod source;

pub use change::{Change, Seq, View};
pub use request::{Feed, FeedRequest, Since};
pub use source::{since_param, Page, Source, SourceError, UPSTREAM_HEARTBEAT};

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::BytesMut;
use futures_util::StreamExt;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use index::{wanted, DocIds, Index};

/// The first wait before an engine feed that brought nothing in is opened again, and the longest.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// What the hubs of a replica hold by default: 32 MiB, about 30,000 documents of 1 KiB, a small
/// share of a 2-core server's memory beside 5,000 devices' feeds (about 25 KiB each).
pub const DEFAULT_MAX_BYTES: usize = 32 * 1024 * 1024;

/// How the hubs behave; the defaults are the server's.
#[derive(Debug, Clone)]
pub struct Tuning {
    /// How long a hub and its engine feed stay after the last device left.
    pub linger: Duration,
    /// Bytes the indexes of all hubs hold together (`Change::cost`) before the one taking a
    /// change in lets its own oldest go.
    pub max_bytes: usize,
    /// Changes that may wait for one device before it is closed as too slow.
    pub listener_buffer: usize,
    /// The most rows a catch-up's page or a hub's first read asks the engine for at once (a
    /// catch-up asks for fewer when its rows are large: `listen::PAGE_BYTES`).
    pub page: usize,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning { linger: Duration::from_secs(30), max_bytes: DEFAULT_MAX_BYTES, listener_buffer: 1_000, page: 1_000 }
    }
}

/// What the hubs of this replica hold now, and what they did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HubCounts {
    /// Engine feeds held (one a database with devices listening or lingering).
    pub upstream_feeds: u64,
    /// Devices' `_changes` requests being answered by a hub.
    pub listening: u64,
    /// Devices closed for not reading.
    pub slow_closed: u64,
    /// Engine feeds opened again after they dropped.
    pub reconnects: u64,
    /// Rows of an engine feed the hub could not read, skipped (logged each time).
    pub unreadable_rows: u64,
    /// Normal `_changes` answered from what a hub held.
    pub served_from_index: u64,
    /// Devices' `_changes` requests a hub answered (all feeds).
    pub answered: u64,
    /// Bytes the hubs' indexes hold now (`Change::cost`), at most `Tuning::max_bytes`.
    pub held_bytes: u64,
}

#[derive(Default)]
struct Counters {
    upstream_feeds: AtomicU64,
    listening: AtomicU64,
    slow_closed: AtomicU64,
    reconnects: AtomicU64,
    unreadable_rows: AtomicU64,
    served_from_index: AtomicU64,
    answered: AtomicU64,
}

pub struct ChangesHubs {
    source: Arc<dyn Source>,
    tuning: Tuning,
    open: Mutex<HashMap<String, Arc<Hub>>>,
    counters: Counters,
    /// What every hub's index holds together.
    held: AtomicUsize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Starting,
    Ready,
    Ended,
}

struct Hub {
    db: String,
    state: Mutex<State>,
    phase: watch::Sender<Phase>,
    /// Requests using the hub; at 0 for `linger`, the hub ends.
    leases: AtomicUsize,
}

struct State {
    index: Index,
    listeners: HashMap<u64, Listener>,
    next_id: u64,
}

struct Listener {
    tx: mpsc::Sender<Arc<Change>>,
    doc_ids: DocIds,
}

/// A request's hold on a hub.
struct Lease {
    hub: Arc<Hub>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.hub.leases.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A device listening on a hub; it leaves when this is dropped.
struct Joined {
    hub: Arc<Hub>,
    id: u64,
    rx: mpsc::Receiver<Arc<Change>>,
}

impl Drop for Joined {
    fn drop(&mut self) {
        self.hub.lock().listeners.remove(&self.id);
    }
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ChangesHubs {
    pub fn new(source: Arc<dyn Source>, tuning: Tuning) -> Arc<ChangesHubs> {
        Arc::new(ChangesHubs {
            source,
            tuning,
            open: Mutex::default(),
            counters: Counters::default(),
            held: AtomicUsize::new(0),
        })
    }

    pub fn counts(&self) -> HubCounts {
        let c = &self.counters;
        let read = |a: &AtomicU64| a.load(Ordering::Relaxed);
        HubCounts {
            upstream_feeds: read(&c.upstream_feeds),
            listening: read(&c.listening),
            slow_closed: read(&c.slow_closed),
            reconnects: read(&c.reconnects),
            unreadable_rows: read(&c.unreadable_rows),
            served_from_index: read(&c.served_from_index),
            answered: read(&c.answered),
            held_bytes: self.held.load(Ordering::Relaxed) as u64,
        }
    }

    /// A lease on `db`'s hub, opening it (and its engine feed) when there is none. `whole`: the
    /// hub reads the database from its start and holds all of it (CORE); otherwise it holds what
    /// changes from now on.
    fn lease(self: &Arc<Self>, db: &str, whole: bool) -> Lease {
        let mut open = lock(&self.open);
        if let Some(hub) = open.get(db) {
            hub.leases.fetch_add(1, Ordering::SeqCst);
            return Lease { hub: hub.clone() };
        }
        let hub = Arc::new(Hub {
            db: db.to_owned(),
            state: Mutex::new(State { index: Index::new(Seq::zero()), listeners: HashMap::new(), next_id: 0 }),
            phase: watch::channel(Phase::Starting).0,
            leases: AtomicUsize::new(1),
        });
        open.insert(db.to_owned(), hub.clone());
        tokio::spawn(self.clone().run(hub.clone(), whole));
        Lease { hub }
    }

    /// Waits until the lease's hub has read what it starts from; `false` when it could not.
    async fn ready(lease: &Lease) -> bool {
        let mut phase = lease.hub.phase.subscribe();
        phase.wait_for(|p| *p != Phase::Starting).await.is_ok_and(|p| *p == Phase::Ready)
    }

    /// Ends `hub` when nobody has used it for `linger`; answers whether it ended.
    fn close_if_idle(&self, hub: &Arc<Hub>, idle_since: &mut Option<Instant>) -> bool {
        if hub.leases.load(Ordering::SeqCst) > 0 {
            *idle_since = None;
            return false;
        }
        let since = *idle_since.get_or_insert_with(Instant::now);
        if since.elapsed() < self.tuning.linger {
            return false;
        }
        let mut open = lock(&self.open);
        // A request may have taken a lease since: leases are taken under this lock.
        if hub.leases.load(Ordering::SeqCst) > 0 {
            *idle_since = None;
            return false;
        }
        if open.get(&hub.db).is_some_and(|h| Arc::ptr_eq(h, hub)) {
            open.remove(&hub.db);
        }
        true
    }

    fn end(&self, hub: &Arc<Hub>) {
        let mut open = lock(&self.open);
        if open.get(&hub.db).is_some_and(|h| Arc::ptr_eq(h, hub)) {
            open.remove(&hub.db);
        }
        drop(open);
        hub.phase.send_replace(Phase::Ended);
        let mut state = hub.lock();
        // Their senders dropped, the devices' feeds end and their clients come back.
        state.listeners.clear();
        let freed = state.index.let_go(usize::MAX);
        self.held.fetch_sub(freed, Ordering::SeqCst);
    }

    /// Takes `change` into the hub's index; when all the hubs hold more than `max_bytes`, this
    /// one lets its oldest changes go (the one busy taking changes in gives way, and a change
    /// larger than the whole budget is passed on, not held). `false`: not after the head.
    fn hold(&self, state: &mut State, change: Arc<Change>) -> bool {
        let before = state.index.bytes();
        if !state.index.take(change) {
            return false;
        }
        let after = state.index.bytes();
        let total = if after >= before {
            self.held.fetch_add(after - before, Ordering::SeqCst) + (after - before)
        } else {
            self.held.fetch_sub(before - after, Ordering::SeqCst) - (before - after)
        };
        if total > self.tuning.max_bytes {
            let freed = state.index.let_go(total - self.tuning.max_bytes);
            self.held.fetch_sub(freed, Ordering::SeqCst);
        }
        true
    }

    /// Reads what the hub starts from: all of the database (`whole`) or its current sequence.
    async fn start(&self, hub: &Hub, whole: bool) -> Result<(), SourceError> {
        if !whole {
            let head = self.source.head(&hub.db).await?;
            let head = Seq::read(&head)
                .ok_or_else(|| SourceError::Unavailable(format!("a sequence the hub cannot order: {head}")))?;
            hub.lock().index = Index::new(head);
            return Ok(());
        }
        let mut since = Seq::zero().raw;
        let everything = View { include_docs: true, all_docs: true };
        // Pages of about `listen::PAGE_BYTES`, as a catch-up reads: the documents' size is not
        // known before the first.
        let mut rows_a_page = self.tuning.page.clamp(1, listen::FIRST_PAGE_WITH_DOCS);
        loop {
            let page = self.source.page(&hub.db, &since, rows_a_page, None, everything).await?;
            let full = page.rows.len() >= rows_a_page;
            rows_a_page = listen::next_page(&page, rows_a_page, self.tuning.page);
            for row in &page.rows {
                let change = Change::read(row).map_err(SourceError::Unavailable)?;
                self.hold(&mut hub.lock(), Arc::new(change));
            }
            if !full || page.last_seq.is_null() {
                return Ok(());
            }
            since = page.last_seq;
        }
    }

    async fn run(self: Arc<Self>, hub: Arc<Hub>, whole: bool) {
        if let Err(e) = self.start(&hub, whole).await {
            tracing::warn!(db = %hub.db, "changes hub: the engine's feed did not open: {e}");
            self.end(&hub);
            return;
        }
        hub.phase.send_replace(Phase::Ready);
        self.counters.upstream_feeds.fetch_add(1, Ordering::Relaxed);
        self.follow(&hub).await;
        self.counters.upstream_feeds.fetch_sub(1, Ordering::Relaxed);
        self.end(&hub);
    }

    /// The engine's feed, opened again from the head whenever it drops (after a backoff that
    /// grows while no change comes in), until the hub is idle for `linger` or its database is
    /// gone.
    async fn follow(&self, hub: &Arc<Hub>) {
        let mut idle_since = None;
        let mut backoff = MIN_BACKOFF;
        // One clock for the whole life of the hub: a feed that never stops talking, or one that
        // drops as soon as it opens, must not keep the idle check from running.
        let mut tick =
            tokio::time::interval(self.tuning.linger.clamp(Duration::from_millis(20), Duration::from_secs(1)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut first = true;
        loop {
            if !first {
                self.counters.reconnects.fetch_add(1, Ordering::Relaxed);
            }
            first = false;
            let since = hub.lock().index.head().clone();
            // The engine may send nothing (not even its headers) before its first heartbeat.
            let mut opening = self.source.follow(&hub.db, &since.raw);
            let asked = Instant::now();
            let opened = loop {
                tokio::select! {
                    opened = &mut opening => break opened,
                    _ = tick.tick() => {
                        if self.close_if_idle(hub, &mut idle_since) {
                            return;
                        }
                        if asked.elapsed() > source::UPSTREAM_HEARTBEAT * 3 {
                            break Err(SourceError::Unavailable("the feed did not open".into()));
                        }
                    }
                }
            };
            match opened {
                Ok(mut feed) => {
                    // A feed that lasted ends for a reason of its own (its owner among replicas
                    // changed, say), not for an engine that drops every feed: no longer wait.
                    let opened_at = Instant::now();
                    let mut pending = BytesMut::new();
                    let mut last_heard = Instant::now();
                    loop {
                        tokio::select! {
                            chunk = feed.next() => match chunk {
                                Some(Ok(bytes)) => {
                                    last_heard = Instant::now();
                                    pending.extend_from_slice(&bytes);
                                    if !self.take_lines(hub, &mut pending) {
                                        break;
                                    }
                                }
                                _ => break,
                            },
                            _ = tick.tick() => {
                                if self.close_if_idle(hub, &mut idle_since) {
                                    return;
                                }
                                if last_heard.elapsed() > source::UPSTREAM_HEARTBEAT * 3 {
                                    break;
                                }
                            }
                        }
                    }
                    tracing::debug!(db = %hub.db, "changes hub: the engine's feed ended");
                    if opened_at.elapsed() >= MAX_BACKOFF {
                        backoff = MIN_BACKOFF;
                    }
                }
                Err(SourceError::Status(404)) => return,
                Err(e) => tracing::warn!(db = %hub.db, "changes hub: the engine's feed: {e}; again in {backoff:?}"),
            }
            // A feed that brought changes in is opened again at once; one that did not waits,
            // longer each time, so an engine that drops every feed is not asked again and again.
            if *hub.lock().index.head() > since {
                backoff = MIN_BACKOFF;
                continue;
            }
            let until = Instant::now() + backoff;
            while Instant::now() < until {
                tokio::select! {
                    () = tokio::time::sleep_until(until) => {}
                    _ = tick.tick() => {
                        if self.close_if_idle(hub, &mut idle_since) {
                            return;
                        }
                    }
                }
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Takes in every whole line of `pending`; `false` when the feed ended (its `last_seq` line)
    /// and must be opened again. A row the hub cannot read (a document nested deeper than its
    /// parser goes, say) is skipped, logged and counted: opening the feed again from the same
    /// place would only read it again, and hold back every change after it.
    fn take_lines(&self, hub: &Hub, pending: &mut BytesMut) -> bool {
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line = pending.split_to(end + 1);
            let line = line.trim_ascii();
            if line.is_empty() {
                continue;
            }
            match Change::read_line(line) {
                Ok(Some(change)) => self.fan_out(hub, Arc::new(change)),
                Ok(None) => return false,
                Err(e) => self.unreadable(hub, &e),
            }
        }
        true
    }

    fn unreadable(&self, hub: &Hub, why: &str) {
        self.counters.unreadable_rows.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(db = %hub.db, "changes hub: a row of the engine's feed it cannot read, skipped: {why}");
    }

    /// One change from the engine to the index and to every device listening for it; a device
    /// with `listener_buffer` changes waiting is closed.
    fn fan_out(&self, hub: &Hub, change: Arc<Change>) {
        let mut state = hub.lock();
        if !self.hold(&mut state, change.clone()) {
            return;
        }
        let mut slow = Vec::new();
        for (id, listener) in &state.listeners {
            if wanted(&listener.doc_ids, &change) && listener.tx.try_send(change.clone()).is_err() {
                slow.push(*id);
            }
        }
        for id in slow {
            state.listeners.remove(&id);
            self.counters.slow_closed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Registers a device listening after `since` when the hub holds everything after it; with
    /// the changes already held it wants (at most `limit`). `None`: `since` is older.
    /// On a hub that has ended (its database gone) the device is let go at once: its feed ends
    /// and its client comes back.
    fn join(&self, hub: &Arc<Hub>, since: u64, doc_ids: &DocIds, limit: usize) -> Option<(Vec<Arc<Change>>, Joined)> {
        let mut state = hub.lock();
        if !state.index.covers(since) {
            return None;
        }
        let held = state.index.after(since, doc_ids, limit);
        let (tx, rx) = mpsc::channel(self.tuning.listener_buffer.max(1));
        let id = state.next_id;
        state.next_id += 1;
        // `end` marks the hub ended before it clears the listeners under this lock.
        if *hub.phase.borrow() != Phase::Ended {
            state.listeners.insert(id, Listener { tx, doc_ids: doc_ids.clone() });
        }
        Some((held, Joined { hub: hub.clone(), id, rx }))
    }
}

#[cfg(test)]
mod tests;
