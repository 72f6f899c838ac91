//! The hub against a scripted engine that keeps every write and answers `_changes` as CouchDB
//! does (each document once at its latest change, filtered, limited). Generated writes and
//! listeners: what each device reads through the hub is what the engine's normal feed since its
//! `since` holds at the end, with no change twice and none out of order.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::{BoxStream, StreamExt};
use proptest::prelude::*;
use serde_json::{json, Value};
use tokio::sync::watch;

use super::source::{Page, Source, SourceError};
use super::*;

#[derive(Default)]
struct Log {
    /// Every write: (seq, id, revision number, deleted).
    writes: Vec<(u64, String, u64, bool)>,
    /// The `since` each feed opened with.
    follows: Vec<Value>,
    /// Each normal feed asked for: its `since`, `limit`, view.
    pages: Vec<(u64, usize, View)>,
    /// Bytes of padding in the document a write wrote, by sequence (none when absent).
    pads: HashMap<u64, usize>,
}

/// The engine, scripted: writes go to a log; feeds read it.
struct Scripted {
    log: Mutex<Log>,
    head: watch::Sender<u64>,
    /// Bumped to drop every open feed (the engine restarting).
    cut: watch::Sender<u64>,
    /// The database was deleted: the engine answers 404.
    gone: std::sync::atomic::AtomicBool,
}

fn row(seq: u64, id: &str, rev: u64, deleted: bool, pad: usize) -> Value {
    let rev = format!("{rev}-{id}");
    let mut doc = json!({"_id": id, "_rev": rev});
    if pad > 0 {
        doc["pad"] = json!("x".repeat(pad));
    }
    let mut row = json!({"id": id, "seq": seq, "changes": [{"rev": rev}]});
    if deleted {
        doc["_deleted"] = json!(true);
        row["deleted"] = json!(true);
    }
    row["doc"] = doc;
    row
}

impl Scripted {
    fn new() -> Arc<Scripted> {
        Arc::new(Scripted {
            log: Mutex::default(),
            head: watch::channel(0).0,
            cut: watch::channel(0).0,
            gone: Default::default(),
        })
    }

    fn write(&self, id: &str, deleted: bool) -> u64 {
        self.write_padded(id, deleted, 0)
    }

    /// A write whose document holds `pad` bytes more.
    fn write_padded(&self, id: &str, deleted: bool, pad: usize) -> u64 {
        let mut log = self.log.lock().unwrap();
        let seq = log.writes.len() as u64 + 1;
        log.pads.insert(seq, pad);
        let rev = log.writes.iter().filter(|w| w.1 == id).count() as u64 + 1;
        log.writes.push((seq, id.to_owned(), rev, deleted));
        self.head.send_replace(seq);
        seq
    }

    /// The engine's normal feed since `since`.
    fn normal(&self, since: u64, doc_ids: Option<&HashSet<String>>, limit: Option<usize>) -> Vec<Value> {
        let log = self.log.lock().unwrap();
        let mut latest: BTreeMap<String, (u64, u64, bool)> = BTreeMap::new();
        for (seq, id, rev, deleted) in &log.writes {
            latest.insert(id.clone(), (*seq, *rev, *deleted));
        }
        let mut rows: Vec<(u64, Value)> = latest
            .into_iter()
            .filter(|(id, (seq, ..))| *seq > since && doc_ids.is_none_or(|ids| ids.contains(id)))
            .map(|(id, (seq, rev, del))| (seq, row(seq, &id, rev, del, log.pads.get(&seq).copied().unwrap_or(0))))
            .collect();
        rows.sort_by_key(|(seq, _)| *seq);
        rows.into_iter().map(|(_, r)| r).take(limit.unwrap_or(usize::MAX)).collect()
    }

    fn follows(&self) -> Vec<Value> {
        self.log.lock().unwrap().follows.clone()
    }

    fn pages(&self) -> Vec<(u64, usize, View)> {
        self.log.lock().unwrap().pages.clone()
    }
}

impl Source for Arc<Scripted> {
    fn head(&self, _db: &str) -> BoxFuture<'static, Result<Value, SourceError>> {
        let (head, gone) = (*self.head.borrow(), self.gone.load(std::sync::atomic::Ordering::SeqCst));
        Box::pin(async move {
            if gone {
                Err(SourceError::Status(404))
            } else {
                Ok(json!(head))
            }
        })
    }

    fn page(
        &self,
        _db: &str,
        since: &Value,
        limit: usize,
        doc_ids: Option<&HashSet<String>>,
        view: View,
    ) -> BoxFuture<'static, Result<Page, SourceError>> {
        self.log.lock().unwrap().pages.push((since.as_u64().unwrap(), limit, view));
        let rows = self.normal(since.as_u64().unwrap(), doc_ids, Some(limit));
        let last = rows.last().map_or(since.clone(), |r| r["seq"].clone());
        let rows = rows.iter().map(|r| Bytes::from(in_view(r, view).to_string())).collect();
        Box::pin(async move { Ok(Page { rows, last_seq: last }) })
    }

    fn follow(
        &self,
        _db: &str,
        since: &Value,
    ) -> BoxFuture<'static, Result<BoxStream<'static, Result<Bytes, SourceError>>, SourceError>> {
        let (engine, since) = (self.clone(), since.as_u64().unwrap());
        Box::pin(async move {
            if engine.gone.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(SourceError::Status(404));
            }
            let mut cut = engine.cut.subscribe();
            cut.mark_unchanged();
            // Counted once it can be cut.
            engine.log.lock().unwrap().follows.push(json!(since));
            let mut head = engine.head.subscribe();
            // The catch-up part as a normal feed, then every write as it happens.
            let first: Vec<Value> = engine.normal(since, None, None);
            let mut sent = first.last().map_or(since, |r| r["seq"].as_u64().unwrap());
            let feed = async_lines(first, move |tx| async move {
                loop {
                    // A cut connection delivers nothing more: the cut is looked at first, or a
                    // write made after it could still leave through this feed and the device
                    // see it before the hub has reconnected.
                    tokio::select! {
                        biased;
                        _ = cut.changed() => return,
                        changed = head.changed() => if changed.is_err() { return },
                    }
                    let now = *head.borrow_and_update();
                    let writes: Vec<_> = {
                        let log = engine.log.lock().unwrap();
                        log.writes
                            .iter()
                            .filter(|w| w.0 > sent && w.0 <= now)
                            .map(|w| (w.clone(), log.pads.get(&w.0).copied().unwrap_or(0)))
                            .collect()
                    };
                    for ((seq, id, rev, deleted), pad) in writes {
                        if tx.send(line(&row(seq, &id, rev, deleted, pad))).await.is_err() {
                            return;
                        }
                        sent = seq;
                    }
                }
            });
            Ok(feed)
        })
    }
}

fn line(row: &Value) -> Bytes {
    Bytes::from(format!("{row}\n"))
}

/// A byte stream: `first` as lines, then what `more` sends.
fn async_lines<F, Fut>(first: Vec<Value>, more: F) -> BoxStream<'static, Result<Bytes, SourceError>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Bytes>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(1024);
    for r in &first {
        tx.try_send(line(r)).unwrap();
    }
    tokio::spawn(more(tx));
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (Ok(b), rx)) }).boxed()
}

fn tuning() -> Tuning {
    Tuning { linger: Duration::from_millis(0), max_bytes: 1 << 20, listener_buffer: 1_000, page: 3 }
}

fn hubs(engine: &Arc<Scripted>, tuning: Tuning) -> Arc<ChangesHubs> {
    ChangesHubs::new(Arc::new(engine.clone()), tuning)
}

fn feed(feed: Feed, since: Since, view: View, doc_ids: Option<&[&str]>) -> FeedRequest {
    let doc_ids = doc_ids.map(|ids| Arc::new(ids.iter().map(|s| s.to_string()).collect::<HashSet<_>>()));
    FeedRequest { feed, since, view, doc_ids, limit: None, heartbeat: Some(Duration::from_secs(3600)), timeout: None }
}

fn at(n: u64) -> Since {
    Since::At(Seq::read(&json!(n)).unwrap())
}

/// Reads a continuous feed's rows (heartbeats skipped) into `into` until `until` holds.
async fn read_until(body: &mut BoxStream<'static, Bytes>, into: &mut Vec<Value>, until: impl Fn(&[Value]) -> bool) {
    let mut pending = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !until(into) {
            let chunk = body.next().await.expect("the feed stays open");
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                if line.trim_ascii().is_empty() {
                    continue;
                }
                into.push(serde_json::from_slice(&line).unwrap());
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the feed did not reach the end: {into:?}"));
}

async fn whole(body: BoxStream<'static, Bytes>) -> Value {
    let bytes: Vec<u8> =
        tokio::time::timeout(Duration::from_secs(10), body.collect::<Vec<Bytes>>()).await.unwrap().concat();
    serde_json::from_slice(&bytes).unwrap()
}

/// The rows a device received, each document at its last one (what it ends up knowing).
fn known(rows: &[Value]) -> Vec<Value> {
    let mut last: BTreeMap<String, Value> = BTreeMap::new();
    for r in rows {
        last.insert(r["id"].as_str().unwrap().to_owned(), r.clone());
    }
    let mut rows: Vec<Value> = last.into_values().collect();
    rows.sort_by_key(|r| r["seq"].as_u64());
    rows
}

fn in_view(row: &Value, view: View) -> Value {
    let mut row = row.clone();
    let obj = row.as_object_mut().unwrap();
    if !view.include_docs {
        obj.remove("doc");
    }
    row
}

fn increasing(rows: &[Value]) -> bool {
    rows.windows(2).all(|w| w[0]["seq"].as_u64() < w[1]["seq"].as_u64())
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[derive(Debug, Clone)]
struct Listener {
    /// A point among the first writes (0: from the start).
    since: usize,
    doc_ids: Option<Vec<usize>>,
    view: View,
}

fn listener() -> impl Strategy<Value = Listener> {
    (0usize..12, proptest::option::of(proptest::collection::vec(0usize..4, 1..3)), any::<bool>(), any::<bool>())
        .prop_map(|(since, doc_ids, include_docs, all_docs)| Listener {
            since,
            doc_ids,
            view: View { include_docs, all_docs },
        })
}

const DOCS: [&str; 4] = ["a", "b", "c", "d"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Continuous feeds through the hub under writes before and while they listen, a small index
    /// (some devices are behind it and catch up from the engine), small catch-up pages.
    #[test]
    fn every_device_reads_what_the_engine_holds(
        before in proptest::collection::vec((0usize..4, any::<bool>()), 1..12),
        during in proptest::collection::vec((0usize..4, any::<bool>()), 0..20),
        listeners in proptest::collection::vec(listener(), 1..5),
        whole in any::<bool>(),
        max_bytes in 0usize..3_000,
    ) {
        rt().block_on(async {
            let engine = Scripted::new();
            let hubs = hubs(&engine, Tuning { max_bytes, ..tuning() });
            for (doc, deleted) in &before {
                engine.write(DOCS[*doc], *deleted);
            }
            let mut open = Vec::new();
            for l in &listeners {
                let since = l.since.min(before.len()) as u64;
                // A device listening to some documents listens for the end too, so its read
                // knows where to stop.
                let ids: Option<Vec<&str>> = l.doc_ids.as_ref().map(|ids| ids.iter().map(|i| DOCS[*i]).chain(["zz-end"]).collect());
                let body = hubs.serve("db", whole, feed(Feed::Continuous, at(since), l.view, ids.as_deref())).await.expect("served");
                open.push((since, ids, l.view, body, Vec::new()));
            }
            for (i, (doc, deleted)) in during.iter().enumerate() {
                engine.write(DOCS[*doc], *deleted);
                if i % 3 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            let end = engine.write("zz-end", false);
            for (since, ids, view, body, rows) in &mut open {
                read_until(body, rows, |rows| rows.iter().any(|r| r["seq"].as_u64() == Some(end))).await;
                assert!(increasing(rows), "a change twice or out of order: {rows:?}");
                for r in rows.iter() {
                    assert_eq!(r.get("doc").is_some(), view.include_docs, "{r}");
                    assert_eq!(r["changes"].as_array().unwrap().len(), 1, "{r}");
                }
                let set: Option<HashSet<String>> = ids.as_ref().map(|ids| ids.iter().map(|s| s.to_string()).collect());
                let expected: Vec<Value> = engine.normal(*since, set.as_ref(), None).iter().map(|r| in_view(r, *view)).collect();
                assert_eq!(known(rows), expected, "since {since}, doc_ids {ids:?}");
            }
        });
    }
}

#[test]
fn one_engine_feed_however_many_listen_and_none_after_they_left() {
    rt().block_on(async {
        let engine = Scripted::new();
        let hubs = hubs(&engine, tuning());
        engine.write("a", false);
        let mut bodies = Vec::new();
        for _ in 0..50 {
            bodies.push(
                hubs.serve("db", false, feed(Feed::Continuous, Since::Now, View::default(), None)).await.unwrap(),
            );
        }
        engine.write("b", false);
        for body in &mut bodies {
            let mut rows = Vec::new();
            read_until(body, &mut rows, |rows| !rows.is_empty()).await;
            assert_eq!(rows[0]["id"], "b");
        }
        assert_eq!(engine.follows().len(), 1, "one feed of the engine");
        assert_eq!(hubs.counts().upstream_feeds, 1);
        assert_eq!(hubs.counts().listening, 50);
        drop(bodies);
        tokio::time::timeout(Duration::from_secs(5), async {
            while hubs.counts().upstream_feeds > 0 || hubs.counts().listening > 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the engine's feed closes when the last device left");
    });
}

#[test]
fn a_dropped_engine_feed_is_opened_again_from_the_last_change_without_a_gap() {
    rt().block_on(async {
        let engine = Scripted::new();
        let hubs = hubs(&engine, tuning());
        engine.write("a", false);
        let mut body = hubs.serve("db", false, feed(Feed::Continuous, at(0), View::default(), None)).await.unwrap();
        let mut rows = Vec::new();
        let mut delivered = Vec::new();
        for round in 0..5usize {
            let seq = engine.write(&format!("doc-{round}"), false);
            read_until(&mut body, &mut rows, |rows| rows.iter().any(|r| r["seq"].as_u64() == Some(seq))).await;
            delivered.push(seq);
            // The engine's feed of this round is open; then it drops.
            tokio::time::timeout(Duration::from_secs(5), async {
                while engine.follows().len() < round + 1 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            })
            .await
            .expect("the hub's feed opens");
            engine.cut.send_modify(|c| *c += 1);
            // Written while the feed is down.
            engine.write(&format!("gap-{round}"), false);
        }
        let end = engine.write("end", false);
        read_until(&mut body, &mut rows, |rows| rows.iter().any(|r| r["seq"].as_u64() == Some(end))).await;
        let seqs: Vec<u64> = rows.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, (1..=end).collect::<Vec<_>>(), "every change once, in order");
        let follows = engine.follows();
        assert_eq!(follows.len(), 6, "{follows:?}");
        assert_eq!(hubs.counts().reconnects, 5);
        // Each reopening asked from no earlier than the last change the hub delivered (from the
        // second round on, every change reached the device through the hub).
        for round in 1..5 {
            assert!(follows[round + 1].as_u64().unwrap() >= delivered[round], "{follows:?} {delivered:?}");
        }
    });
}

#[test]
fn a_device_that_does_not_read_is_closed_and_the_others_go_on() {
    rt().block_on(async {
        let engine = Scripted::new();
        let hubs = hubs(&engine, Tuning { listener_buffer: 4, ..tuning() });
        let stalled = hubs.serve("db", false, feed(Feed::Continuous, Since::Now, View::default(), None)).await.unwrap();
        let mut reading =
            hubs.serve("db", false, feed(Feed::Continuous, Since::Now, View::default(), None)).await.unwrap();
        let mut rows = Vec::new();
        let mut last = 0;
        for i in 0..40 {
            last = engine.write(&format!("doc-{i}"), false);
            read_until(&mut reading, &mut rows, |rows| rows.iter().any(|r| r["seq"].as_u64() == Some(last))).await;
        }
        assert_eq!(rows.len() as u64, last);
        assert_eq!(hubs.counts().slow_closed, 1);
        // What it had buffered, then the end of its feed: its client comes back from there.
        let stalled: Vec<Bytes> =
            tokio::time::timeout(Duration::from_secs(5), stalled.collect()).await.expect("the stalled feed ends");
        assert!(stalled.len() < 40);
    });
}

#[test]
fn longpoll_answers_at_once_or_with_the_first_change_or_at_its_timeout() {
    rt().block_on(async {
        let engine = Scripted::new();
        let hubs = hubs(&engine, tuning());
        for id in ["a", "b", "c"] {
            engine.write(id, false);
        }
        let limited = FeedRequest { limit: Some(2), ..feed(Feed::Longpoll, at(0), View::default(), None) };
        let answer = whole(hubs.serve("db", false, limited).await.unwrap()).await;
        assert_eq!(answer["results"].as_array().unwrap().len(), 2);
        assert_eq!(answer["last_seq"], 2);
        let waiting = hubs
            .serve(
                "db",
                false,
                feed(Feed::Longpoll, Since::Now, View { include_docs: true, all_docs: false }, Some(&["d"])),
            )
            .await
            .unwrap();
        engine.write("x", false);
        let d = engine.write("d", false);
        let answer = whole(waiting).await;
        assert_eq!(answer["results"].as_array().unwrap().len(), 1);
        assert_eq!((answer["results"][0]["doc"]["_id"].clone(), answer["last_seq"].clone()), (json!("d"), json!(d)));
        let timed = FeedRequest {
            timeout: Some(Duration::from_millis(50)),
            ..feed(Feed::Longpoll, at(d), View::default(), None)
        };
        assert_eq!(whole(hubs.serve("db", false, timed).await.unwrap()).await, json!({"results": [], "last_seq": d}));
    });
}

#[test]
fn a_whole_database_answers_normal_feeds_from_what_it_holds() {
    rt().block_on(async {
        let engine = Scripted::new();
        // Lingering, the one hub serves every request (at 0 each could open its own).
        let hubs = hubs(&engine, Tuning { linger: Duration::from_secs(60), ..tuning() });
        for id in ["a", "b", "a", "c", "d", "e", "f", "g"] {
            engine.write(id, false);
        }
        for since in [0, 2, 5, 8, 20] {
            let answer =
                whole(hubs.serve("core", true, feed(Feed::Normal, at(since), View::default(), None)).await.unwrap())
                    .await;
            let expected: Vec<Value> =
                engine.normal(since, None, None).iter().map(|r| in_view(r, View::default())).collect();
            assert_eq!(answer["results"].as_array().unwrap(), &expected, "since {since}");
            let last = expected.last().map_or(json!(since), |r| r["seq"].clone());
            assert_eq!(answer["last_seq"], last);
        }
        assert_eq!(hubs.counts().served_from_index, 5);
        // The hub opens its feed after it has read the database, beside the answers.
        tokio::time::timeout(Duration::from_secs(5), async {
            while engine.follows().is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the hub follows the database");
        assert_eq!(engine.follows(), [json!(8)], "one feed, from where the first read ended");
    });
}

#[test]
fn when_the_database_is_gone_its_devices_are_let_go_and_the_engine_answers_them() {
    rt().block_on(async {
        let engine = Scripted::new();
        let hubs = hubs(&engine, Tuning { linger: Duration::from_secs(60), ..tuning() });
        engine.write("a", false);
        let body = hubs.serve("db", false, feed(Feed::Continuous, Since::Now, View::default(), None)).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), async {
            while engine.follows().is_empty() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await
        .unwrap();
        engine.gone.store(true, std::sync::atomic::Ordering::SeqCst);
        engine.cut.send_modify(|c| *c += 1);
        let rest: Vec<Bytes> =
            tokio::time::timeout(Duration::from_secs(5), body.collect()).await.expect("the device's feed ends");
        assert!(rest.is_empty(), "{rest:?}");
        assert_eq!(hubs.counts().upstream_feeds, 0);
        // A device coming back is not the hub's: the engine answers it (404) as before the hub.
        assert!(hubs.serve("db", false, feed(Feed::Continuous, Since::Now, View::default(), None)).await.is_none());
    });
}

/// An engine whose feed ends as soon as it opens, every time.
#[derive(Default)]
struct Flapping {
    follows: std::sync::atomic::AtomicUsize,
}

/// Feeds opened past which the engine answers 404 (the hub then ends): a hub that asks again
/// without waiting ends the test instead of spinning.
const FLAPS: usize = 1_000;

impl Source for Arc<Flapping> {
    fn head(&self, _db: &str) -> BoxFuture<'static, Result<Value, SourceError>> {
        Box::pin(async { Ok(json!(0)) })
    }

    fn page(
        &self,
        _db: &str,
        since: &Value,
        _limit: usize,
        _doc_ids: Option<&HashSet<String>>,
        _view: View,
    ) -> BoxFuture<'static, Result<Page, SourceError>> {
        let since = since.clone();
        Box::pin(async move { Ok(Page { rows: Vec::new(), last_seq: since }) })
    }

    fn follow(
        &self,
        _db: &str,
        _since: &Value,
    ) -> BoxFuture<'static, Result<BoxStream<'static, Result<Bytes, SourceError>>, SourceError>> {
        let n = self.follows.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            if n >= FLAPS {
                return Err(SourceError::Status(404));
            }
            Ok(futures_util::stream::iter([Ok(Bytes::from_static(b"{\"last_seq\":0}\n"))]).boxed())
        })
    }
}

#[test]
fn an_engine_feed_that_ends_at_once_is_asked_again_ever_more_slowly_and_the_hub_still_ends() {
    // The clock is the runtime's own, paused: it moves only when every task waits.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    rt.block_on(async {
        let engine = Arc::new(Flapping::default());
        let hubs = ChangesHubs::new(Arc::new(engine.clone()), Tuning { linger: Duration::from_secs(2), ..tuning() });
        let body = hubs.serve("db", false, feed(Feed::Continuous, Since::Now, View::default(), None)).await.unwrap();
        tokio::time::sleep(Duration::from_secs(60)).await;
        // 100 ms doubling to 5 s: 7 openings in the first 6.3 s, then one every 5 s.
        let follows = engine.follows.load(std::sync::atomic::Ordering::SeqCst);
        assert!((15..=20).contains(&follows), "{follows} feeds opened in a minute");
        assert_eq!(hubs.counts().upstream_feeds, 1, "the hub goes on while a device listens");
        drop(body);
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(hubs.counts().upstream_feeds, 0, "the hub ended after its linger");
        assert!(engine.follows.load(std::sync::atomic::Ordering::SeqCst) < FLAPS);
    });
}

/// Waits until the hub has taken in the change at `seq` (its feed is a task of its own).
async fn taken(hubs: &ChangesHubs, db: &str, seq: u64) {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let head = lock(&hubs.open).get(db).map(|h| h.lock().index.head().n);
            if head.is_some_and(|h| h >= seq) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("the hub takes the change in");
}

#[test]
fn what_the_hubs_hold_stays_within_their_bytes_however_much_is_written() {
    rt().block_on(async {
        let engine = Scripted::new();
        let bound = 64 * 1024;
        let hubs = hubs(&engine, Tuning { max_bytes: bound, linger: Duration::from_secs(60), ..tuning() });
        let mut a = hubs.serve("a", false, feed(Feed::Continuous, Since::Now, View::default(), None)).await.unwrap();
        let mut b = hubs.serve("b", false, feed(Feed::Continuous, Since::Now, View::default(), None)).await.unwrap();
        let (mut rows_a, mut rows_b) = (Vec::new(), Vec::new());
        let mut most = 0;
        // 2 MiB of documents, 32 times the bound; the scripted engine is one database written
        // through both hubs' feeds.
        for i in 0..512 {
            let seq = engine.write_padded(&format!("doc-{i}"), false, 4096);
            taken(&hubs, "a", seq).await;
            taken(&hubs, "b", seq).await;
            let held = hubs.counts().held_bytes as usize;
            let counted: usize = lock(&hubs.open).values().map(|h| h.lock().index.bytes()).sum();
            assert_eq!(held, counted, "the shared count is what the indexes hold");
            most = most.max(held);
        }
        assert!(most <= bound, "held {most} bytes, bound {bound}");
        assert!(most > bound / 2, "the bound is used, not left empty: {most}");
        let last = engine.write("end", false);
        read_until(&mut a, &mut rows_a, |r| r.iter().any(|r| r["seq"].as_u64() == Some(last))).await;
        read_until(&mut b, &mut rows_b, |r| r.iter().any(|r| r["seq"].as_u64() == Some(last))).await;
        assert_eq!((rows_a.len(), rows_b.len()), (513, 513), "every device had every change");
    });
}

#[test]
fn a_change_larger_than_the_bound_is_passed_on_not_held() {
    rt().block_on(async {
        let engine = Scripted::new();
        let hubs = hubs(&engine, Tuning { max_bytes: 1024, ..tuning() });
        let mut body = hubs
            .serve("db", false, feed(Feed::Continuous, Since::Now, View { include_docs: true, all_docs: false }, None))
            .await
            .unwrap();
        let big = engine.write_padded("big", false, 100_000);
        let mut rows = Vec::new();
        read_until(&mut body, &mut rows, |r| !r.is_empty()).await;
        assert_eq!((rows[0]["doc"]["pad"].as_str().map(str::len), rows[0]["seq"].as_u64()), (Some(100_000), Some(big)));
        assert_eq!(hubs.counts().held_bytes, 0);
    });
}

#[test]
fn a_catch_up_is_read_in_pages_in_the_devices_view_and_asks_for_documents_only_when_the_device_does() {
    rt().block_on(async {
        let engine = Scripted::new();
        let hubs = hubs(&engine, Tuning { linger: Duration::from_secs(60), ..tuning() });
        for i in 0..20 {
            engine.write_padded(&format!("doc-{i}"), false, 100);
        }
        for view in [
            View::default(),
            View { include_docs: false, all_docs: true },
            View { include_docs: true, all_docs: false },
        ] {
            // The hub starts at the head: `since=0` is behind what it holds.
            let before = engine.pages().len();
            let answer = whole(hubs.serve("db", false, feed(Feed::Longpoll, at(0), view, None)).await.unwrap()).await;
            let expected: Vec<Value> = engine.normal(0, None, None).iter().map(|r| in_view(r, view)).collect();
            assert_eq!(answer, json!({"results": expected, "last_seq": 20}), "{view:?}");
            let asked = &engine.pages()[before..];
            // 3 rows a page: 7 pages for 20 rows, the last one short.
            assert_eq!(asked.len(), 7, "{asked:?}");
            for (i, (since, limit, v)) in asked.iter().enumerate() {
                assert_eq!((*since, *limit, *v), (3 * i as u64, 3, view), "{asked:?}");
            }
        }
        // A limit: pages up to it, the answer ending where the engine's would.
        let before = engine.pages().len();
        let limited = FeedRequest { limit: Some(7), ..feed(Feed::Longpoll, at(0), View::default(), None) };
        let answer = whole(hubs.serve("db", false, limited).await.unwrap()).await;
        assert_eq!(answer["results"].as_array().unwrap().len(), 7);
        assert_eq!(answer["last_seq"], 7);
        let limits: Vec<usize> = engine.pages()[before..].iter().map(|p| p.1).collect();
        assert_eq!(limits, [3, 3, 1]);
        // A continuous catch-up: pages too, then the device joins the hub.
        let before = engine.pages().len();
        let mut body = hubs.serve("db", false, feed(Feed::Continuous, at(0), View::default(), None)).await.unwrap();
        let mut rows = Vec::new();
        read_until(&mut body, &mut rows, |r| r.len() == 20).await;
        let more = engine.write("more", false);
        read_until(&mut body, &mut rows, |r| r.iter().any(|r| r["seq"].as_u64() == Some(more))).await;
        assert!(increasing(&rows) && rows.len() == 21, "{rows:?}");
        let asked = &engine.pages()[before..];
        assert!(asked.len() >= 7 && asked.iter().all(|p| p.1 == 3 && !p.2.include_docs), "{asked:?}");
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Longpoll answers through a hub holding little (most devices are behind it and read the
    /// engine page by page) are the engine's: the same rows, the same `last_seq`.
    #[test]
    fn a_longpoll_behind_the_index_is_answered_as_the_engine_answers(
        writes in proptest::collection::vec((0usize..4, any::<bool>()), 1..25),
        asks in proptest::collection::vec((0usize..25, proptest::option::of(1usize..8), listener()), 1..6),
        max_bytes in 0usize..3_000,
        page in 1usize..5,
    ) {
        rt().block_on(async {
            let engine = Scripted::new();
            let hubs = hubs(&engine, Tuning { max_bytes, page, linger: Duration::from_secs(60), ..tuning() });
            let _open = hubs.serve("db", false, feed(Feed::Continuous, Since::Now, View::default(), None)).await.unwrap();
            for (doc, deleted) in &writes {
                let seq = engine.write(DOCS[*doc], *deleted);
                taken(&hubs, "db", seq).await;
            }
            for (since, limit, l) in &asks {
                let since = (*since).min(writes.len() - 1) as u64;
                let ids: Option<Vec<&str>> = l.doc_ids.as_ref().map(|ids| ids.iter().map(|i| DOCS[*i]).collect());
                let set: Option<HashSet<String>> = ids.as_ref().map(|ids| ids.iter().map(|s| s.to_string()).collect());
                let expected: Vec<Value> = engine.normal(since, set.as_ref(), *limit).iter().map(|r| in_view(r, l.view)).collect();
                if expected.is_empty() {
                    continue;
                }
                let request = FeedRequest { limit: *limit, ..feed(Feed::Longpoll, at(since), l.view, ids.as_deref()) };
                let answer = whole(hubs.serve("db", false, request).await.unwrap()).await;
                let last = expected.last().unwrap()["seq"].clone();
                assert_eq!(answer, json!({"results": expected, "last_seq": last}), "since {since} limit {limit:?} {l:?}");
            }
        });
    }
}

#[test]
fn a_whole_databases_first_read_asks_for_pages_of_about_the_same_bytes() {
    rt().block_on(async {
        let engine = Scripted::new();
        let hubs = hubs(&engine, Tuning { page: 1_000, ..tuning() });
        for i in 0..130 {
            engine.write_padded(&format!("doc-{i}"), false, 30_000);
        }
        let body = hubs.serve("core", true, feed(Feed::Normal, at(129), View::default(), None)).await.unwrap();
        assert_eq!(whole(body).await["results"].as_array().unwrap().len(), 1);
        let limits: Vec<usize> = engine.pages().iter().map(|p| p.1).collect();
        // 100 rows before their size is known, then about 256 KiB of 30 KB rows.
        assert_eq!(limits, [100, 8, 8, 8, 8], "{limits:?}");
        assert!(engine.pages().iter().all(|p| p.2 == View { include_docs: true, all_docs: true }));
        assert!(hubs.counts().held_bytes <= 1 << 20);
    });
}
