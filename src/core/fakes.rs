//! Fakes for every port, for the native tests. One shared event log records the order in which
//! the server, the storage, the handlers and the local databases were touched.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use super::ports::*;

pub type EventLog = Rc<RefCell<Vec<String>>>;

#[derive(Default)]
pub struct MemoryStorage {
    pub map: RefCell<BTreeMap<String, String>>,
    pub log: Option<EventLog>,
    /// How often the session said its reads changed without a write.
    pub reads_changed: Cell<u32>,
    /// Refuse every write, as a full `localStorage` does.
    pub refuse_writes: Cell<bool>,
}

impl Storage for MemoryStorage {
    fn get(&self, key: &str) -> Option<String> {
        self.map.borrow().get(key).cloned()
    }
    fn set(&self, key: &str, value: &str) -> Result<(), StorageError> {
        if self.refuse_writes.get() {
            return Err(StorageError("QuotaExceededError".into()));
        }
        self.map.borrow_mut().insert(key.into(), value.into());
        Ok(())
    }
    fn keys(&self) -> Vec<String> {
        self.map.borrow().keys().cloned().collect()
    }
    fn remove(&self, key: &str) {
        if self.map.borrow_mut().remove(key).is_some() {
            if let Some(log) = &self.log {
                log.borrow_mut().push(format!("remove {key}"));
            }
        }
    }
    fn reads_changed(&self) {
        self.reads_changed.set(self.reads_changed.get() + 1);
    }
}

/// One tab's view of an origin's `localStorage`, as a browser keeps one per renderer process: its
/// own writes show at once, another view's only after this one has been read `lag` more times
/// (they travel between processes; the release of a lock does not wait for them).
#[derive(Default)]
pub struct LaggingStorage {
    view: RefCell<BTreeMap<String, String>>,
    inbox: RefCell<Vec<(u32, String, Option<String>)>>,
    reads: Cell<u32>,
    peers: RefCell<Vec<std::rc::Weak<LaggingStorage>>>,
    lag: u32,
}

impl LaggingStorage {
    /// `n` views of one storage.
    pub fn views(n: usize, lag: u32) -> Vec<Rc<LaggingStorage>> {
        let views: Vec<Rc<LaggingStorage>> =
            (0..n).map(|_| Rc::new(LaggingStorage { lag, ..LaggingStorage::default() })).collect();
        for view in &views {
            *view.peers.borrow_mut() = views.iter().filter(|v| !Rc::ptr_eq(v, view)).map(Rc::downgrade).collect();
        }
        views
    }

    fn send(&self, key: &str, value: Option<&str>) {
        for peer in self.peers.borrow().iter().filter_map(std::rc::Weak::upgrade) {
            let due = peer.reads.get() + peer.lag;
            peer.inbox.borrow_mut().push((due, key.to_owned(), value.map(str::to_owned)));
        }
    }
}

impl Storage for LaggingStorage {
    fn get(&self, key: &str) -> Option<String> {
        self.reads.set(self.reads.get() + 1);
        let now = self.reads.get();
        let mut view = self.view.borrow_mut();
        self.inbox.borrow_mut().retain(|(due, k, v)| {
            if *due > now {
                return true;
            }
            match v {
                Some(v) => view.insert(k.clone(), v.clone()),
                None => view.remove(k),
            };
            false
        });
        view.get(key).cloned()
    }
    fn set(&self, key: &str, value: &str) -> Result<(), StorageError> {
        self.view.borrow_mut().insert(key.into(), value.into());
        self.send(key, Some(value));
        Ok(())
    }
    fn remove(&self, key: &str) {
        self.view.borrow_mut().remove(key);
        self.send(key, None);
    }
}

pub struct FakeClock(pub Cell<i64>);

impl FakeClock {
    pub fn at(now_ms: i64) -> FakeClock {
        FakeClock(Cell::new(now_ms))
    }
}

/// Polls a sleep takes per millisecond asked, at least one: far more than any fake request
/// (three polls), so "a handler past its time limit" is deterministic.
const POLLS_PER_SLEEP: u32 = 1000;

impl Clock for FakeClock {
    fn now_ms(&self) -> i64 {
        self.0.get()
    }
    fn sleep(&self, ms: u32) -> LocalBoxFuture<'static, ()> {
        Box::pin(Yield(if ms == 0 { 1 } else { POLLS_PER_SLEEP }))
    }
}

/// The device's key: none by default.
#[derive(Default)]
pub struct FakeDeviceKey {
    pub public: RefCell<Option<String>>,
}

impl DeviceKey for FakeDeviceKey {
    fn public_key(&self) -> LocalBoxFuture<'static, Option<String>> {
        Box::pin(std::future::ready(self.public.borrow().clone()))
    }
}

/// A refresh lock shared by the sessions of one test (its "tabs"); counts what it granted.
#[derive(Default, Clone)]
pub struct FakeLock {
    pub held: Rc<Cell<bool>>,
    pub granted: Rc<Cell<u32>>,
    /// Polls before a waiter gives up (`TimedOut`).
    pub patience: u32,
    /// The record of the last refresh token spent, when the lock keeps one.
    pub spent: Option<Rc<RefCell<Option<String>>>>,
    /// How long each waiter was prepared to wait (ms).
    pub waits: Rc<RefCell<Vec<u32>>>,
}

struct FakeGuard(Rc<Cell<bool>>);

impl LockGuard for FakeGuard {}

impl Drop for FakeGuard {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl RefreshLock for FakeLock {
    fn acquire(&self, wait_ms: u32) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        self.waits.borrow_mut().push(wait_ms);
        let me = self.clone();
        Box::pin(async move {
            let patience = if me.patience == 0 { u32::MAX } else { me.patience };
            for _ in 0..patience {
                if !me.held.replace(true) {
                    me.granted.set(me.granted.get() + 1);
                    return Ok(Box::new(FakeGuard(me.held.clone())) as Box<dyn LockGuard>);
                }
                Yield(1).await;
            }
            Err(LockError::TimedOut)
        })
    }
    fn steal(&self) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        self.held.set(true);
        self.granted.set(self.granted.get() + 1);
        let held = self.held.clone();
        Box::pin(async move { Ok(Box::new(FakeGuard(held)) as Box<dyn LockGuard>) })
    }
    fn spent(&self, write: Option<&str>) -> LocalBoxFuture<'static, Option<String>> {
        let record = self.spent.clone().unwrap_or_default();
        if let Some(tail) = write {
            *record.borrow_mut() = Some(tail.to_owned());
        }
        let read = record.borrow().clone();
        Box::pin(async move { read })
    }
}

type Responder = Box<dyn FnMut(&HttpRequest) -> Result<HttpResponse, TransportError>>;

/// Answers through a closure; each answer arrives after a few yields, so concurrent callers overlap.
pub struct FakeTransport {
    pub requests: RefCell<Vec<HttpRequest>>,
    pub responder: RefCell<Responder>,
    pub log: EventLog,
    /// Polls before an answer arrives (the network's latency, in polls).
    pub latency: u32,
}

impl FakeTransport {
    pub fn new(
        log: EventLog,
        responder: impl FnMut(&HttpRequest) -> Result<HttpResponse, TransportError> + 'static,
    ) -> FakeTransport {
        FakeTransport { requests: RefCell::default(), responder: RefCell::new(Box::new(responder)), log, latency: 3 }
    }
}

impl FakeTransport {
    /// The path of each request, without scheme and host.
    pub fn paths(&self) -> Vec<String> {
        let path = |url: &str| {
            url.split_once("//")
                .and_then(|(_, rest)| rest.split_once('/'))
                .map(|(_, p)| format!("/{p}"))
                .unwrap_or_default()
        };
        self.requests.borrow().iter().map(|r| path(&r.url)).collect()
    }
}

impl Transport for FakeTransport {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        let answer = (self.responder.borrow_mut())(&request);
        self.log.borrow_mut().push(format!("http {} {}", request.method.as_str(), request.url));
        self.requests.borrow_mut().push(request);
        let latency = self.latency;
        Box::pin(async move {
            Yield(latency).await;
            answer
        })
    }
}

/// Pending this many polls, then ready.
pub struct Yield(pub u32);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            Poll::Ready(())
        } else {
            self.0 -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Local databases: `pending` documents per database, taken by a push whose `X-Docdb-Token`
/// header is not in `refused` (a server that ended that session); a push with nothing pending
/// sends nothing (as the browser's, which reads the database's own mark first). Pushes are logged
/// as `push <name> -> <url> <token>`; `hook` runs at each push (a write made meanwhile).
#[derive(Default)]
pub struct FakeLocalDatabases {
    pub destroyed: RefCell<Vec<String>>,
    pub failing: RefCell<BTreeSet<String>>,
    pub log: Option<EventLog>,
    pub pending: RefCell<BTreeMap<String, u32>>,
    pub refused: RefCell<BTreeSet<String>>,
    /// The adapters the destroys were given.
    pub adapters: RefCell<Vec<String>>,
    /// Runs at every destroy, before it (an app that tracks again on PouchDB's `destroyed`).
    #[allow(clippy::type_complexity)]
    pub on_destroy: RefCell<Option<Rc<dyn Fn(&str)>>>,
}

impl LocalDatabases for FakeLocalDatabases {
    fn destroy(&self, name: &str, adapter: &str) -> LocalBoxFuture<'static, Result<(), DestroyError>> {
        self.adapters.borrow_mut().push(adapter.to_owned());
        let result = if self.failing.borrow().contains(name) {
            Err(DestroyError("blocked".into()))
        } else {
            self.destroyed.borrow_mut().push(name.to_owned());
            self.pending.borrow_mut().remove(name);
            if let Some(log) = &self.log {
                log.borrow_mut().push(format!("destroy {name}"));
            }
            Ok(())
        };
        let hook = self.on_destroy.borrow().clone();
        if let Some(hook) = hook {
            hook(name);
        }
        Box::pin(async move { result })
    }

    fn push(&self, plans: Vec<PushPlan>, _bound_ms: u32) -> LocalBoxFuture<'static, PushReport> {
        let mut report = PushReport::default();
        for plan in plans {
            let mut pending = self.pending.borrow_mut();
            let left = pending.get(&plan.name).copied().unwrap_or(0);
            let mut taken = false;
            if let Some((url, headers)) = &plan.to {
                let token = headers.get("X-Docdb-Token").and_then(|t| t.as_str()).unwrap_or("");
                if left > 0 {
                    if let Some(log) = &self.log {
                        log.borrow_mut().push(format!("push {} -> {url} {token}", plan.name));
                    }
                }
                taken = !self.refused.borrow().contains(token);
                report.pushed.insert(plan.name.clone(), if taken { left } else { 0 }.into());
            }
            if taken {
                pending.insert(plan.name.clone(), 0);
            } else if left > 0 {
                report.unpushed.insert(plan.name.clone(), left.into());
            }
        }
        Box::pin(async move { report })
    }
}

#[derive(Default)]
pub struct RecordingReporter(pub RefCell<Vec<String>>);

impl RecordingReporter {
    pub fn messages(&self) -> Vec<String> {
        self.0.borrow().clone()
    }
}

impl Reporter for RecordingReporter {
    fn error(&self, message: &str) {
        self.0.borrow_mut().push(message.to_owned());
    }
}
