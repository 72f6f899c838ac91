//! The sync session against fake sockets, catalogue and timer (docs/sdk.md, "Realtime: `SyncSession`", device side).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use futures::executor::LocalPool;
use futures::task::LocalSpawnExt;
use serde_json::{json, Value};

use crate::core::fakes::*;
use crate::core::hooks::SignOutReason;
use crate::core::keys;
use crate::core::ports::*;
use crate::core::session::{Ports, Session, SessionConfig};
use crate::core::sync_session::*;
use crate::core::token::encode_for_test;

#[derive(Default)]
struct FakeSocket {
    frames: RefCell<VecDeque<Incoming>>,
    waker: RefCell<Option<Waker>>,
    sent: RefCell<Vec<String>>,
    closed: Cell<bool>,
}

impl FakeSocket {
    fn push(&self, frame: Incoming) {
        self.frames.borrow_mut().push_back(frame);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
    fn text(&self, v: Value) {
        self.push(Incoming::Text(v.to_string()));
    }
}

struct Recv(Rc<FakeSocket>);

impl Future for Recv {
    type Output = Incoming;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Incoming> {
        if let Some(f) = self.0.frames.borrow_mut().pop_front() {
            return Poll::Ready(f);
        }
        if self.0.closed.get() {
            return Poll::Ready(Incoming::Closed(1000));
        }
        *self.0.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

struct SocketHandle(Rc<FakeSocket>);

impl Socket for SocketHandle {
    fn send(&self, text: String) -> LocalBoxFuture<'static, Result<(), SocketError>> {
        self.0.sent.borrow_mut().push(text);
        Box::pin(async { Ok(()) })
    }
    fn recv(&self) -> LocalBoxFuture<'static, Incoming> {
        Box::pin(Recv(self.0.clone()))
    }
    fn close(&self) {
        self.0.closed.set(true);
        if let Some(w) = self.0.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

struct World {
    pool: LocalPool,
    session: Session,
    sync: SyncSession,
    sockets: Rc<RefCell<VecDeque<Rc<FakeSocket>>>>,
    connects: Rc<Cell<u32>>,
    written: Rc<RefCell<Vec<(String, usize)>>>,
    catalogs: Rc<RefCell<Vec<String>>>,
    dbs: Rc<FakeLocalDatabases>,
    events: Rc<RefCell<Vec<String>>>,
    storage: Rc<MemoryStorage>,
}

fn jwt() -> String {
    encode_for_test(&json!({"userId": "u", "companyId": "acme", "roles": [], "exp": 4_000_000_000i64}))
}

fn world() -> World {
    let pool = LocalPool::new();
    let storage = Rc::new(MemoryStorage::default());
    let log: EventLog = Rc::default();
    let transport = Rc::new(FakeTransport::new(log.clone(), |req: &HttpRequest| {
        let body = if req.url.ends_with("/auth") {
            json!({"token": jwt(), "expiresIn": 900, "refreshToken": "r", "refreshExpiresIn": 9000})
        } else if req.url.ends_with("/auth/connect") {
            json!({"deviceId": "dev-1"})
        } else if let Some(db) = req.url.split("database=").nth(1) {
            let name = if db == "core" { "dev_acme_main_core" } else { "dev_acme_main_catalog" };
            json!({"database": db, "db": name, "updateSeq": 2, "docs": [{"_id": "a"}, {"_id": "b"}]})
        } else {
            json!({"ok": true})
        };
        Ok(HttpResponse { status: 200, body: body.to_string(), retry_after: 0 })
    }));
    let dbs = Rc::new(FakeLocalDatabases::default());
    let session = Session::new(
        SessionConfig::new("http://server.test").unwrap(),
        Ports {
            storage: storage.clone(),
            transport,
            clock: Rc::new(FakeClock(Cell::new(1_000))),
            local_databases: dbs.clone(),
            reporter: Rc::new(RecordingReporter::default()),
            lock: Rc::new(FakeLock::default()),
            device_key: Rc::new(FakeDeviceKey::default()),
        },
    );
    session.save_token("Auth", &jwt(), 3600.0).unwrap();
    let sockets: Rc<RefCell<VecDeque<Rc<FakeSocket>>>> = Rc::default();
    let connects = Rc::new(Cell::new(0));
    let written: Rc<RefCell<Vec<(String, usize)>>> = Rc::default();
    let catalogs: Rc<RefCell<Vec<String>>> = Rc::default();
    let spawner = pool.spawner();
    let (s, c, w, cat, cat2) = (sockets.clone(), connects.clone(), written.clone(), catalogs.clone(), catalogs.clone());
    let ports = SyncPorts {
        connect: Rc::new(move |_url: &str| {
            c.set(c.get() + 1);
            let next = s.borrow_mut().pop_front();
            Box::pin(async move {
                next.map(|f| Rc::new(SocketHandle(f)) as Rc<dyn Socket>).ok_or_else(|| SocketError("refused".into()))
            })
        }),
        catalog_exists: Rc::new(move |name: &str| {
            let found = cat.borrow().iter().any(|c| c == name);
            Box::pin(async move { found })
        }),
        catalog_write: Rc::new(move |name: &str, docs: Vec<Value>| {
            w.borrow_mut().push((name.to_owned(), docs.len()));
            cat2.borrow_mut().push(name.to_owned());
            Box::pin(async { Ok(()) })
        }),
        // Instant, but after 8 sleeps it never wakes: a retry loop stalls instead of spinning.
        sleep: {
            let slept = Rc::new(Cell::new(0u32));
            Rc::new(move |_ms| {
                slept.set(slept.get() + 1);
                if slept.get() > 8 {
                    Box::pin(futures::future::pending())
                } else {
                    Box::pin(async {})
                }
            })
        },
        random: Rc::new(|| 0.5),
        spawn: Rc::new(move |f| spawner.spawn_local(f).unwrap()),
    };
    let sync = SyncSession::new(session.clone(), "ws://server.test/realtime".into(), ports);
    let events: Rc<RefCell<Vec<String>>> = Rc::default();
    for name in ["ready", "invalidate-local", "bootstrapped", "error", "state"] {
        let log = events.clone();
        sync.events().by_name(name).unwrap().register(Rc::new(move |p: &Value| {
            log.borrow_mut().push(format!("{name} {p}"));
            Box::pin(async { Ok(()) })
        }));
    }
    World { pool, session, sync, sockets, connects, written, catalogs, dbs, events, storage }
}

fn ready(database: &str, static_db: &str, at: Option<i64>) -> Value {
    json!({"type": "ready", "payload": {"companyId": "acme", "database": database, "staticDb": static_db, "dynamicDb": static_db, "invalidatedAt": at}})
}

fn socket(w: &World) -> Rc<FakeSocket> {
    let s = Rc::new(FakeSocket::default());
    w.sockets.borrow_mut().push_back(s.clone());
    s
}

#[test]
fn first_ready_bootstraps_the_catalogue_and_resolves_connect() {
    let mut w = world();
    let s = socket(&w);
    s.text(ready("legacy", "dev_acme_main_catalog", None));
    let sync = w.sync.clone();
    let result = w.pool.run_until(async move { sync.connect().await });
    assert_eq!(result, Ok(()));
    let init: Value = serde_json::from_str(&s.sent.borrow()[0]).unwrap();
    assert_eq!(init["type"], "sdk:init");
    assert_eq!(init["payload"]["token"], jwt().as_str());
    assert_eq!(init["payload"]["deviceId"], "dev-1", "registered first");
    assert_eq!(init["payload"]["sdkVersion"], "1.4.17");
    assert_eq!(*w.written.borrow(), vec![("dev_acme_main_catalog".to_string(), 2)]);
    assert_eq!(w.session.tracked_local_databases(), vec!["dev_acme_main_catalog"]);
    assert_eq!(w.sync.state(), SyncState::Ready);
    assert_eq!(w.sync.routing().unwrap()["database"], "legacy");
    let ev = w.events.borrow().clone();
    assert_eq!(ev[0], "state \"connecting\"");
    assert!(ev[1].starts_with("bootstrapped ") && ev[1].contains("\"docCount\":2"), "{ev:?}");
    assert_eq!(ev[2], "state \"ready\"");
    assert!(ev[3].starts_with("ready "));
}

#[test]
fn an_invalidation_closes_reconnects_destroys_and_rebootstraps_from_core() {
    let mut w = world();
    let first = socket(&w);
    first.text(ready("legacy", "dev_acme_main_catalog", None));
    let sync = w.sync.clone();
    w.pool.run_until(async move { sync.connect().await }).unwrap();
    let second = socket(&w);
    second.text(json!({"type": "invalidate-local", "payload": {"companyId": "acme", "invalidatedAt": 5000, "reason": "rolling-db-cutover"}}));
    second.text(ready("core", "dev_acme_main_core", Some(5000)));
    first.push(Incoming::Closed(CLOSE_INVALIDATED));
    w.pool.run_until_stalled();
    assert_eq!(w.connects.get(), 2);
    assert_eq!(*w.dbs.destroyed.borrow(), vec!["dev_acme_main_catalog".to_string()]);
    assert_eq!(w.storage.get(keys::LAST_INVALIDATION).as_deref(), Some("5000"));
    assert_eq!(w.written.borrow().last().unwrap().0, "dev_acme_main_core");
    assert_eq!(w.session.tracked_local_databases(), vec!["dev_acme_main_core"]);
    assert_eq!(w.sync.routing().unwrap()["database"], "core");
    let init: Value = serde_json::from_str(&second.sent.borrow()[0]).unwrap();
    assert_eq!(init["payload"]["lastInvalidation"], Value::Null, "the first connect had obeyed none");
    // A third connection after the device obeyed: no invalidation, no second bootstrap.
    let third = socket(&w);
    third.text(ready("core", "dev_acme_main_core", Some(5000)));
    second.push(Incoming::Closed(1006));
    w.pool.run_until_stalled();
    let init: Value = serde_json::from_str(&third.sent.borrow()[0]).unwrap();
    assert_eq!(init["payload"]["lastInvalidation"], 5000);
    assert_eq!(w.written.borrow().len(), 2, "the catalogue is there: no re-bootstrap");
    assert_eq!(w.sync.state(), SyncState::Ready);
}

#[test]
fn an_invalidation_pushes_the_devices_writes_to_the_routed_day_database_before_destroying() {
    let mut w = world();
    w.storage.set(keys::HEADERS_REMOTE, r#"{"X-Docdb-Token":"live"}"#).unwrap();
    let first = socket(&w);
    first.text(json!({"type": "ready", "payload": {"companyId": "acme", "database": "legacy", "staticDb": "dev_acme_main_catalog", "dynamicDb": "dev_acme_main_20260101"}}));
    let sync = w.sync.clone();
    w.pool.run_until(async move { sync.connect().await }).unwrap();
    w.session.track_local_database("orders", "idb", "dynamic").unwrap();
    assert_eq!(
        w.session.ledger_entry("orders").dynamic_db,
        "dev_acme_main_20260101",
        "the routing of the last ready, recorded with the data"
    );
    w.dbs.pending.borrow_mut().insert("orders".into(), 3);
    let second = socket(&w);
    second.text(json!({"type": "invalidate-local", "payload": {"companyId": "acme", "invalidatedAt": 5000, "reason": "rolling-db-cutover"}}));
    second.text(ready("core", "dev_acme_main_core", Some(5000)));
    first.push(Incoming::Closed(CLOSE_INVALIDATED));
    w.pool.run_until_stalled();
    let invalidation = w.events.borrow().iter().find(|e| e.starts_with("invalidate-local")).cloned().unwrap();
    assert!(
        invalidation.contains(r#""pushed":{"orders":3},"reason":"rolling-db-cutover","unpushed":{}"#),
        "{invalidation}"
    );
    assert_eq!(w.dbs.pending.borrow().get("orders"), None, "taken by the push, then destroyed");
    assert!(w.dbs.destroyed.borrow().contains(&"orders".to_string()));
}

#[test]
fn a_refused_session_fails_connect_and_never_retries() {
    let mut w = world();
    let s = socket(&w);
    s.text(json!({"type": "error", "payload": {"code": "invalid_token", "message": "bad signature"}}));
    s.push(Incoming::Closed(CLOSE_UNAUTHORIZED));
    socket(&w);
    let sync = w.sync.clone();
    let result = w.pool.run_until(async move { sync.connect().await });
    assert_eq!(result, Err(SyncFailure::Refused { code: "invalid_token".into(), message: "bad signature".into() }));
    w.pool.run_until_stalled();
    assert_eq!(w.connects.get(), 1, "no retry storm");
    assert_eq!(w.sync.state(), SyncState::Closed);
    assert!(w.events.borrow().iter().any(|e| e.starts_with("error ") && e.contains("invalid_token")));
}

#[test]
fn transient_failures_retry_with_backoff_until_ready() {
    let mut w = world();
    // No socket queued: the first two connects are refused by the network.
    let sync = w.sync.clone();
    let mut pending = Box::pin(async move { sync.connect().await });
    assert!(w.pool.run_until(futures::future::poll_fn(|cx| Poll::Ready(pending.as_mut().poll(cx).is_pending()))));
    w.pool.run_until_stalled();
    assert_eq!(w.connects.get(), 9, "kept trying, once per backoff");
    assert_eq!(w.events.borrow().iter().filter(|e| e.contains("connection_failed")).count(), 9);
}

#[test]
fn sign_out_closes_the_session() {
    let mut w = world();
    let s = socket(&w);
    s.text(ready("legacy", "dev_acme_main_catalog", None));
    let sync = w.sync.clone();
    w.pool.run_until(async move { sync.connect().await }).unwrap();
    socket(&w);
    let session = w.session.clone();
    w.pool.run_until(async move { session.sign_out(SignOutReason::Logout).await });
    w.pool.run_until_stalled();
    assert!(s.closed.get());
    assert_eq!(w.sync.state(), SyncState::Closed);
    assert_eq!(w.connects.get(), 1, "no reconnect after sign-out");
}

#[test]
fn a_new_login_ends_the_previous_users_realtime_session() {
    let mut w = world();
    let s = socket(&w);
    s.text(ready("legacy", "dev_acme_main_catalog", None));
    let sync = w.sync.clone();
    w.pool.run_until(async move { sync.connect().await }).unwrap();
    let session = w.session.clone();
    assert!(w.pool.run_until(async move { session.login("bob", "pw").await }).is_success());
    w.pool.run_until_stalled();
    assert!(s.closed.get());
    assert_eq!(w.sync.state(), SyncState::Closed);
}

#[test]
fn without_a_session_connect_fails_at_once() {
    let mut w = world();
    w.storage.remove(keys::AUTH);
    let sync = w.sync.clone();
    assert_eq!(w.pool.run_until(async move { sync.connect().await }), Err(SyncFailure::NotSignedIn));
    assert_eq!(w.connects.get(), 0);
    let _ = &w.catalogs;
}

#[test]
fn backoff_grows_and_is_jittered_within_bounds() {
    assert_eq!(backoff_ms(0, 0.0), 250);
    assert_eq!(backoff_ms(0, 1.0), 500);
    assert_eq!(backoff_ms(3, 0.0), 2_000);
    assert_eq!(backoff_ms(20, 1.0), BACKOFF_MAX_MS);
    assert!(is_refusal(4401) && is_refusal(4400) && !is_refusal(4000) && !is_refusal(1006));
}

#[test]
fn after_an_invalidation_a_fleet_spreads_evenly_and_soon() {
    // 5,000 devices closed at once (one server wave in the worst case): their first reconnects
    // spread over 50–300 ms, about 200 in any 10 ms, where a dropped connection waits longer.
    let delays: Vec<u32> =
        (0..5_000).map(|i| reconnect_delay_ms(0, Some(CLOSE_INVALIDATED), i as f64 / 5_000.0)).collect();
    assert_eq!((delays.iter().min(), delays.iter().max()), (Some(&50), Some(&299)));
    let mut per_10ms = [0u32; 30];
    for d in &delays {
        per_10ms[(*d / 10) as usize] += 1;
    }
    assert!(per_10ms[5..30].iter().all(|n| (190..=210).contains(n)), "{per_10ms:?}");
    assert_eq!(reconnect_delay_ms(0, Some(1006), 0.0), backoff_ms(0, 0.0), "a dropped connection backs off as usual");
    assert_eq!(reconnect_delay_ms(2, Some(CLOSE_INVALIDATED), 0.5), backoff_ms(2, 0.5), "a failed reconnect backs off");
}

#[test]
fn a_bootstrap_answer_naming_another_database_is_refused_and_nothing_is_tracked() {
    let mut w = world();
    let s = socket(&w);
    // The server's ready names the app's own database as the static one; the bootstrap answer
    // names the tenant catalogue: they disagree, so nothing is written or tracked.
    s.text(ready("legacy", "my-app-own-db", None));
    let sync = w.sync.clone();
    w.pool
        .spawner()
        .spawn_local(async move {
            let _ = sync.connect().await;
        })
        .unwrap();
    w.pool.run_until_stalled();
    assert!(w.written.borrow().is_empty(), "{:?}", w.written.borrow());
    assert!(w.session.tracked_local_databases().is_empty());
    assert!(
        w.events.borrow().iter().any(|e| e.starts_with("error ") && e.contains("refused")),
        "{:?}",
        w.events.borrow()
    );
}

mod hostile_frames {
    use super::*;
    use proptest::prelude::*;

    fn frame() -> impl Strategy<Value = String> {
        let kind = prop_oneof![
            Just("ready".to_string()),
            Just("invalidate-local".to_string()),
            Just("error".to_string()),
            Just("sdk:init".to_string()),
            ".{0,12}"
        ];
        let scalar = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| json!(f)),
            ".{0,24}".prop_map(Value::from)
        ];
        let payload = proptest::collection::btree_map(
            prop_oneof![
                Just("staticDb".to_string()),
                Just("invalidatedAt".to_string()),
                Just("database".to_string()),
                Just("code".to_string()),
                ".{0,8}"
            ],
            scalar,
            0..5,
        );
        prop_oneof![(kind, payload).prop_map(|(k, p)| json!({"type": k, "payload": p}).to_string()), ".{0,64}",]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        /// Whatever the server sends, the realtime session neither panics nor tracks a database
        /// the bootstrap did not write.
        #[test]
        fn no_frame_panics(frames in proptest::collection::vec(frame(), 0..6)) {
            let mut w = world();
            let s = socket(&w);
            for f in frames {
                s.push(Incoming::Text(f));
            }
            s.push(Incoming::Closed(1006));
            let sync = w.sync.clone();
            w.pool.spawner().spawn_local(async move {
                let _ = sync.connect().await;
            }).unwrap();
            w.pool.run_until_stalled();
            let written: Vec<String> = w.written.borrow().iter().map(|(n, _)| n.clone()).collect();
            for tracked in w.session.tracked_local_databases() {
                prop_assert!(written.contains(&tracked), "{tracked} tracked but never written");
            }
        }
    }
}
