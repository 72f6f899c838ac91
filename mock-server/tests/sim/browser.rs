//! A browser: its `localStorage` (one truth, and each tab's view of it, which learns the other
//! tabs' writes after a delay as a `storage` event does, and then follows), its refresh lock
//! (Web Locks: held until released, waiters served in order, taken over by `steal`), its key
//! store, its local databases and its console. The SDK's ports over them, per tab.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use session_broker::core::keys;
use session_broker::core::ports::{
    DeviceKey, LocalBoxFuture, LockError, LockGuard, RefreshLock, Reporter, Storage, StorageError,
};
use tokio::sync::oneshot;

use super::dbs::Databases;
use super::env::{Env, SimClock};
use super::net::Net;

pub type Map = BTreeMap<String, String>;
/// A `storage` event for a tab: when it is due, the key, its new value (`None`: removed) and the
/// write's place in the browser's order of writes.
pub type StorageEvent = (u64, String, Option<String>, u64);
/// A tab's record of the place of the write its view holds, key by key (and the place below which
/// it heard everything: the writes before it opened).
pub type Seen = Rc<RefCell<(u64, BTreeMap<String, u64>)>>;
/// A tab's view of storage, and where its `storage` events go.
pub type View = (Rc<RefCell<Map>>, tokio::sync::mpsc::UnboundedSender<StorageEvent>);

/// What the key store does when asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyMode {
    Ok,
    /// Every use fails (IndexedDB errors), the pair still stored.
    Failing,
    /// IndexedDB never opened in this browser: no key can be kept.
    Unavailable,
}

pub struct KeyStore {
    pub mode: Cell<KeyMode>,
    pub pair: RefCell<Option<p256::ecdsa::SigningKey>>,
}

impl KeyStore {
    pub fn public_hex(key: &p256::ecdsa::SigningKey) -> String {
        hex::encode(key.verifying_key().to_encoded_point(false).as_bytes())
    }
}

/// The refresh lock's state: who holds it (a grant number) and who waits.
#[derive(Default)]
pub struct LockState {
    holder: Option<(u64, usize)>,
    waiting: VecDeque<(u64, usize, oneshot::Sender<()>)>,
    next: u64,
    /// What the last refresh spent (the IndexedDB record every tab reads alike at once).
    spent: Option<String>,
    /// Tabs frozen while holding: their grants are never released.
    frozen: Vec<usize>,
}

pub struct BrowserShared {
    pub id: usize,
    /// Started from a copy of another browser's whole storage.
    pub copy_of: Option<usize>,
    pub truth: RefCell<Map>,
    /// Each tab slot's view, and where the `storage` events for it go.
    pub views: RefCell<BTreeMap<usize, View>>,
    /// The next writes `localStorage` refuses (quota).
    pub refuse_writes: Cell<u32>,
    /// When it last refused one.
    refused_at: Cell<Option<i64>>,
    pub lock: RefCell<LockState>,
    pub key: KeyStore,
    pub net: Net,
    pub dbs: Rc<Databases>,
    pub console: RefCell<Vec<String>>,
    /// When each tab's `storage` events are next due (kept in order per tab).
    last_due: RefCell<BTreeMap<usize, u64>>,
    /// The writes so far (their order).
    pub writes: Cell<u64>,
}

impl BrowserShared {
    pub fn new(id: usize, copy_of: Option<usize>, truth: Map, key_mode: KeyMode) -> Rc<BrowserShared> {
        Rc::new(BrowserShared {
            id,
            copy_of,
            truth: RefCell::new(truth),
            views: RefCell::default(),
            refuse_writes: Cell::new(0),
            refused_at: Cell::new(None),
            lock: RefCell::default(),
            key: KeyStore { mode: Cell::new(key_mode), pair: RefCell::new(None) },
            net: Net::default(),
            dbs: Rc::new(Databases::default()),
            console: RefCell::default(),
            last_due: RefCell::default(),
            writes: Cell::new(0),
        })
    }

    /// Whether `localStorage` refused a write at or after `since`.
    pub fn refused_since(&self, since: i64) -> bool {
        self.refused_at.get().is_some_and(|at| at >= since)
    }

    /// The stored access token's session, in the truth.
    pub fn sid(&self) -> Option<String> {
        self.truth.borrow().get(keys::AUTH).and_then(|t| super::history::History::sid_of_jwt(t))
    }
}

/// A tab's view of `localStorage`.
pub struct TabStorage {
    pub env: Rc<Env>,
    pub b: Rc<BrowserShared>,
    pub tab: usize,
    pub view: Rc<RefCell<Map>>,
    pub seen: Seen,
}

impl TabStorage {
    fn write(&self, key: &str, value: Option<&str>) {
        let seq = self.b.writes.get() + 1;
        self.b.writes.set(seq);
        self.seen.borrow_mut().1.insert(key.to_owned(), seq);
        match value {
            Some(v) => {
                self.b.truth.borrow_mut().insert(key.into(), v.into());
                self.view.borrow_mut().insert(key.into(), v.into());
            }
            None => {
                self.b.truth.borrow_mut().remove(key);
                self.view.borrow_mut().remove(key);
            }
        }
        let now = self.env.now() as u64;
        for (other, (_, events)) in self.b.views.borrow().iter() {
            if *other == self.tab {
                continue;
            }
            let mut dues = self.b.last_due.borrow_mut();
            let last = dues.entry(*other).or_default();
            let due = (now + self.env.draw(self.env.config.max_storage_delay_ms)).max(*last);
            *last = due;
            let _ = events.send((due, key.to_owned(), value.map(str::to_owned), seq));
        }
    }
}

impl Storage for TabStorage {
    fn get(&self, key: &str) -> Option<String> {
        self.view.borrow().get(key).cloned()
    }
    fn set(&self, key: &str, value: &str) -> Result<(), StorageError> {
        if self.b.refuse_writes.get() > 0 {
            self.b.refuse_writes.set(self.b.refuse_writes.get() - 1);
            self.b.refused_at.set(Some(self.env.now()));
            // The refused write loses a refresh's answer: the invariant on re-presenting its
            // token cannot hold the SDK to it.
            self.env.hist.refresh_answered.borrow_mut().retain(|(b, _)| *b != self.b.id);
            return Err(StorageError("QuotaExceededError: the quota has been exceeded".into()));
        }
        self.write(key, Some(value));
        Ok(())
    }
    fn remove(&self, key: &str) {
        self.write(key, None);
    }
    fn keys(&self) -> Vec<String> {
        self.view.borrow().keys().cloned().collect()
    }
}

/// The tab's refresh lock (the browser's, shared).
pub struct TabLock {
    pub b: Rc<BrowserShared>,
    pub tab: usize,
}

struct Grant {
    b: Rc<BrowserShared>,
    n: u64,
}

impl LockGuard for Grant {}

impl Drop for Grant {
    fn drop(&mut self) {
        release(&self.b, self.n);
    }
}

fn release(b: &Rc<BrowserShared>, n: u64) {
    let mut lock = b.lock.borrow_mut();
    let Some((held, tab)) = lock.holder else { return };
    if held != n || lock.frozen.contains(&tab) {
        return;
    }
    lock.holder = None;
    while let Some((next, tab, tx)) = lock.waiting.pop_front() {
        if tx.send(()).is_ok() {
            lock.holder = Some((next, tab));
            break;
        }
    }
}

impl TabLock {
    fn grant(&self, n: u64) -> Box<dyn LockGuard> {
        Box::new(Grant { b: self.b.clone(), n })
    }
}

impl RefreshLock for TabLock {
    fn acquire(&self, wait_ms: u32) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        let me = TabLock { b: self.b.clone(), tab: self.tab };
        Box::pin(async move {
            let (n, rx) = {
                let mut lock = me.b.lock.borrow_mut();
                lock.next += 1;
                let n = lock.next;
                if lock.holder.is_none() {
                    lock.holder = Some((n, me.tab));
                    (n, None)
                } else {
                    let (tx, rx) = oneshot::channel();
                    lock.waiting.push_back((n, me.tab, tx));
                    (n, Some(rx))
                }
            };
            if let Some(rx) = rx {
                match tokio::time::timeout(std::time::Duration::from_millis(wait_ms.into()), rx).await {
                    Ok(Ok(())) => {}
                    _ => {
                        let mut lock = me.b.lock.borrow_mut();
                        lock.waiting.retain(|(w, _, _)| *w != n);
                        // Granted in the same instant the wait ran out: give it back.
                        if lock.holder.map(|h| h.0) == Some(n) {
                            drop(lock);
                            release(&me.b, n);
                        }
                        return Err(LockError::TimedOut);
                    }
                }
            }
            Ok(me.grant(n))
        })
    }

    fn steal(&self) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        let mut lock = self.b.lock.borrow_mut();
        lock.next += 1;
        let n = lock.next;
        lock.holder = Some((n, self.tab));
        let guard = self.grant(n);
        Box::pin(async move { Ok(guard) })
    }

    fn spent(&self, write: Option<&str>) -> LocalBoxFuture<'static, Option<String>> {
        let mut lock = self.b.lock.borrow_mut();
        if let Some(tail) = write {
            lock.spent = Some(tail.to_owned());
        }
        let now = lock.spent.clone();
        Box::pin(async move { now })
    }
}

/// A tab frozen: its grant, if it holds the lock, is never released.
pub fn freeze_lock(b: &BrowserShared, tab: usize) {
    b.lock.borrow_mut().frozen.push(tab);
}

pub struct TabKey {
    pub env: Rc<Env>,
    pub b: Rc<BrowserShared>,
}

impl DeviceKey for TabKey {
    fn public_key(&self) -> LocalBoxFuture<'static, Option<String>> {
        let key = &self.b.key;
        let answer = match key.mode.get() {
            KeyMode::Ok => {
                let mut pair = key.pair.borrow_mut();
                if pair.is_none() {
                    *pair = std::iter::repeat_with(|| self.env.bytes())
                        .find_map(|bytes| p256::ecdsa::SigningKey::from_bytes(&bytes.into()).ok());
                }
                pair.as_ref().map(KeyStore::public_hex)
            }
            KeyMode::Failing | KeyMode::Unavailable => None,
        };
        Box::pin(async move { answer })
    }
}

pub struct Console(pub Rc<BrowserShared>);

impl Reporter for Console {
    fn error(&self, message: &str) {
        self.0.console.borrow_mut().push(message.to_owned());
    }
}

/// A `storage` event's delivery to a tab's view, in order, each at its due time; the tab's
/// session follows a change of the session's keys.
pub async fn deliver_storage_events(
    view: Rc<RefCell<Map>>,
    seen: Seen,
    mut events: tokio::sync::mpsc::UnboundedReceiver<StorageEvent>,
    clock: super::env::SimClock,
    follow: Rc<dyn Fn()>,
) {
    while let Some((due, key, value, seq)) = events.recv().await {
        let now = clock.now() as u64;
        if due > now {
            SimClock::sleep(due - now).await;
        }
        // A write older than what the view holds for the key (its own later write, or the
        // storage as it was when the tab opened) changes nothing: the browser's storage orders
        // the writes, and a tab's view converges to it.
        {
            let mut seen = seen.borrow_mut();
            let (floor, keys) = &mut *seen;
            if seq <= *floor || keys.get(&key).is_some_and(|s| seq <= *s) {
                continue;
            }
            keys.insert(key.clone(), seq);
        }
        match value {
            Some(v) => view.borrow_mut().insert(key.clone(), v),
            None => view.borrow_mut().remove(&key),
        };
        if key == keys::AUTH || key == keys::REFRESH {
            follow();
        }
    }
}
