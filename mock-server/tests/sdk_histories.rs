//! Generated histories in which the SDK's own core is the device: two browsers of two tabs, each
//! tab a `Session` of the `session-broker` crate (with its `SyncSession` for the realtime
//! handshake) on native ports written here, against the real server in process: an in-memory
//! `localStorage` per browser (its other tab follows each change, as a `storage` event makes it), a
//! clock that reads the server's test clock, HTTP through reqwest (a network that can drop),
//! WebSockets through tungstenite, and local databases in memory (a till of orders tracked with
//! `pushTo: "dynamic"`, pushed to the server's document routes when the SDK asks for its final
//! push, and the bootstrapped catalogue).
//!
//! Steps: logins (the same user, another of the tenant, another tenant), company changes, logouts
//! (online, unfinished, offline, global, others), an operator ending a user's sessions, access and
//! refresh tokens running out through the clock (across midnight, month and year ends), device
//! registrations, handshakes, orders written, `destroyAllLocalDatabases()`, local data lost, the
//! device's storage wiped, reloads, the app going on in the other tab, `rollingDb` on and off,
//! rotates and invalidations by an operator through the admin routes.
//!
//! After every step the SDK's answers and the server's equal the reference model's
//! (`tests/model`, `model/device.rs` for the device's side): signed in or not, as whom and in
//! which company, `getToken()` null once the session is gone; every session's credentials
//! (access token, document headers) work until its sign-out completes or its window runs out,
//! never after; handshakes answer the model's routing (CORE only after a rotate since the latest
//! enable, only the session's own tenant's databases) and invalidations; an alarm is raised
//! exactly when the device lost local data unasked; every order written is on the server, in its
//! tenant's database, or still on the device, or was destroyed with the SDK reporting it.
//!
//! A failing case shrinks and prints its steps (`SdkOp`s, replayable with `replay` below).
//! `SDK_HISTORY_CASES` and `HISTORY_STEPS` run more (`make soak`); `PROPTEST_RNG_SEED` replays a run.

mod common;
mod model;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use common::histories::{self, env_number, int_of, reached, str_of};
use common::Server;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use mock_server::settings::Settings;
use model::device::{Pushed, Refreshed, SdkHandshake, SdkModel, SignOut};
use model::{HandshakeAnswer, Reason, Routing, TENANTS, USERS};
use proptest::prelude::*;
use reqwest::StatusCode;
use serde_json::{json, Map, Value};
use session_broker::core::keys;
use session_broker::core::ports::{
    Clock, DestroyError, DeviceKey, HttpRequest, HttpResponse, LocalBoxFuture, LocalDatabases, LockError, LockGuard,
    Method, PushPlan, PushReport, RefreshLock, Reporter, SocketError, Storage, StorageError, Transport, TransportError,
};
use session_broker::core::session::{Ports, Session, SessionConfig};
use session_broker::core::sync_session::{Incoming, Socket, SyncFailure, SyncPorts, SyncSession};
use session_broker::protocol::LogoutScope;
use tokio_tungstenite::tungstenite::Message;

/// Where a history's clock starts: an ordinary morning, before midnight at a month's, a year's and
/// a leap February's end.
const STARTS: [&str; 4] =
    ["2026-11-26T09:30:00Z", "2026-12-31T22:10:00Z", "2027-01-31T23:20:00Z", "2028-02-28T21:45:00Z"];
/// The browsers: the model's first two, whose SDK has the cutover switch as this core does (its
/// version is the crate's; the model's third browser runs an older SDK, which the core cannot be).
const BROWSERS: usize = 2;
/// The till's name in every browser.
const TILL: &str = "till";

/// The rules the SDK's histories must reach, each at least once a run.
const REACHED_NAMES: [&str; 15] = [
    "handshakes routed to CORE",
    "invalidations obeyed by the SDK",
    "destructive-reset alarms raised",
    "refreshes refused (the session ended elsewhere)",
    "refreshes refused (the refresh token expired)",
    "credentials refused after their session ended",
    "credentials used inside a sign-out window",
    "company changes",
    "orders pushed by the SDK's final push",
    "orders reported unpushed at a logout",
    "orders destroyed unpushed, and reported",
    "handshakes refused (the session ended elsewhere)",
    "day databases found missing (alarmed)",
    "getToken() null once the session was gone",
    "device losses reported to the server (alarmed)",
];

/// One step of a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SdkOp {
    Login {
        browser: usize,
        user: usize,
    },
    Logout {
        browser: usize,
        how: SignOut,
    },
    /// `logout({scope: "others"})`.
    LogoutOthers {
        browser: usize,
    },
    /// A sys_admin resets the user's password (to the same one): the server ends their sessions.
    OperatorReset {
        user: usize,
    },
    Register {
        browser: usize,
    },
    Handshake {
        browser: usize,
    },
    WriteOrder {
        browser: usize,
    },
    SwitchCompany {
        browser: usize,
        tenant: usize,
    },
    DestroyAll {
        browser: usize,
    },
    /// The local databases and `lastInvalidation` vanish; the session stays.
    LoseLocalData {
        browser: usize,
    },
    /// Everything the browser stored is gone, and its tabs reload.
    WipeStorage {
        browser: usize,
    },
    Reload {
        browser: usize,
    },
    /// The app goes on in the browser's other tab (which followed every change through storage).
    SwitchTab {
        browser: usize,
    },
    /// `getToken()`, then every recent credential of the browser tried on the server.
    Probe {
        browser: usize,
    },
    SetRolling {
        tenant: usize,
        on: bool,
    },
    Rotate,
    Invalidate {
        tenant: usize,
    },
    Advance {
        secs: i64,
    },
}

fn op() -> impl Strategy<Value = SdkOp> {
    let browser = 0..BROWSERS;
    let tenant = 0..TENANTS.len();
    let user = 0..USERS.len();
    let how = prop_oneof![
        3 => Just(SignOut::Online),
        1 => Just(SignOut::Unfinished),
        1 => Just(SignOut::Offline),
        1 => Just(SignOut::Global),
    ];
    prop_oneof![
        4 => (browser.clone(), user.clone()).prop_map(|(browser, user)| SdkOp::Login { browser, user }),
        2 => (browser.clone(), how).prop_map(|(browser, how)| SdkOp::Logout { browser, how }),
        1 => browser.clone().prop_map(|browser| SdkOp::LogoutOthers { browser }),
        1 => user.prop_map(|user| SdkOp::OperatorReset { user }),
        2 => browser.clone().prop_map(|browser| SdkOp::Register { browser }),
        6 => browser.clone().prop_map(|browser| SdkOp::Handshake { browser }),
        5 => browser.clone().prop_map(|browser| SdkOp::WriteOrder { browser }),
        2 => (browser.clone(), tenant.clone()).prop_map(|(browser, tenant)| SdkOp::SwitchCompany { browser, tenant }),
        1 => browser.clone().prop_map(|browser| SdkOp::DestroyAll { browser }),
        2 => browser.clone().prop_map(|browser| SdkOp::LoseLocalData { browser }),
        1 => browser.clone().prop_map(|browser| SdkOp::WipeStorage { browser }),
        1 => browser.clone().prop_map(|browser| SdkOp::Reload { browser }),
        2 => browser.clone().prop_map(|browser| SdkOp::SwitchTab { browser }),
        4 => browser.prop_map(|browser| SdkOp::Probe { browser }),
        2 => (tenant.clone(), any::<bool>()).prop_map(|(tenant, on)| SdkOp::SetRolling { tenant, on }),
        2 => Just(SdkOp::Rotate),
        1 => tenant.prop_map(|tenant| SdkOp::Invalidate { tenant }),
        // Inside the access token's lifetime, across its refresh margin, past it; then the rest.
        4 => histories::advance(vec![(30i64..600).boxed(), (600i64..1_200).boxed(), (1_200i64..86_400).boxed()])
            .prop_map(|secs| SdkOp::Advance { secs }),
    ]
}

// ---- The native ports ----

/// A browser's `localStorage`.
#[derive(Default)]
struct MemoryStorage(RefCell<BTreeMap<String, String>>);

impl Storage for MemoryStorage {
    fn get(&self, key: &str) -> Option<String> {
        self.0.borrow().get(key).cloned()
    }
    fn set(&self, key: &str, value: &str) -> Result<(), StorageError> {
        self.0.borrow_mut().insert(key.into(), value.into());
        Ok(())
    }
    fn remove(&self, key: &str) {
        self.0.borrow_mut().remove(key);
    }
    fn keys(&self) -> Vec<String> {
        self.0.borrow().keys().cloned().collect()
    }
}

/// Reads the server's clock (held still, moved by the history); sleeps in real time.
struct ServerClock(Arc<mock_server::clock::Clock>);

impl Clock for ServerClock {
    fn now_ms(&self) -> i64 {
        self.0.now_ms()
    }
    fn sleep(&self, ms: u32) -> LocalBoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(Duration::from_millis(ms.into())))
    }
}

/// One tab per browser: the lock is always free.
struct OneTabLock;
struct Held;
impl LockGuard for Held {}

impl RefreshLock for OneTabLock {
    fn acquire(&self, _wait_ms: u32) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        Box::pin(async { Ok(Box::new(Held) as Box<dyn LockGuard>) })
    }
    fn steal(&self) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        self.acquire(0)
    }
}

/// No key kept: sessions are unbound, as in a browser without WebCrypto.
struct NoKey;

impl DeviceKey for NoKey {
    fn public_key(&self) -> LocalBoxFuture<'static, Option<String>> {
        Box::pin(async { None })
    }
}

#[derive(Default)]
struct Console(RefCell<Vec<String>>);

impl Reporter for Console {
    fn error(&self, message: &str) {
        self.0.borrow_mut().push(message.to_owned());
    }
}

/// The browser's network: up, or down after `budget` more requests.
#[derive(Default)]
struct Network {
    budget: Cell<Option<u32>>,
}

impl Network {
    fn admit(&self) -> bool {
        match self.budget.get() {
            None => true,
            Some(0) => false,
            Some(n) => {
                self.budget.set(Some(n - 1));
                true
            }
        }
    }
}

struct HttpTransport {
    client: reqwest::Client,
    net: Rc<Network>,
}

fn method(m: Method) -> reqwest::Method {
    reqwest::Method::from_bytes(m.as_str().as_bytes()).expect("the table's methods are HTTP tokens")
}

impl Transport for HttpTransport {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        if !self.net.admit() {
            return Box::pin(async { Err(TransportError::Network("offline".into())) });
        }
        let mut req = self.client.request(method(request.method), &request.url);
        if let Some(token) = &request.bearer {
            req = req.bearer_auth(token);
        }
        if let Some(body) = request.body {
            req = req.header("Content-Type", "application/json").body(body);
        }
        Box::pin(async move {
            let res = req.send().await.map_err(|e| TransportError::Network(e.to_string()))?;
            let status = res.status().as_u16();
            let body = res.text().await.map_err(|e| TransportError::Network(e.to_string()))?;
            Ok(HttpResponse { status, body, retry_after: 0 })
        })
    }
}

/// A local database: the till's orders (each with whether a push took it) or a catalogue.
#[derive(Default, Clone)]
struct LocalDb {
    orders: Vec<(u64, bool)>,
}

/// What the device's local databases did: the orders pushed (order, database, the headers'
/// company), the orders destroyed before any push took them.
#[derive(Default)]
struct DbLog {
    pushed: Vec<(u64, String, String)>,
    destroyed_unpushed: Vec<u64>,
}

/// The device's local databases, in memory; its final pushes go to the server's document routes.
struct Databases {
    dbs: RefCell<BTreeMap<String, LocalDb>>,
    log: RefCell<DbLog>,
    client: reqwest::Client,
    net: Rc<Network>,
}

/// The port over a browser's databases (every tab of it shares them).
struct DatabasesPort(Rc<Databases>);

impl LocalDatabases for DatabasesPort {
    fn destroy(&self, name: &str, _adapter: &str) -> LocalBoxFuture<'static, Result<(), DestroyError>> {
        if let Some(db) = self.0.dbs.borrow_mut().remove(name) {
            let lost = db.orders.iter().filter(|(_, pushed)| !pushed).map(|(o, _)| *o);
            self.0.log.borrow_mut().destroyed_unpushed.extend(lost);
        }
        Box::pin(async { Ok(()) })
    }

    fn push(&self, plans: Vec<PushPlan>, _bound_ms: u32) -> LocalBoxFuture<'static, PushReport> {
        let me = self.0.clone();
        Box::pin(async move {
            let mut report = PushReport::default();
            for plan in plans {
                let pending: Vec<u64> = me
                    .dbs
                    .borrow()
                    .get(&plan.name)
                    .map(|db| db.orders.iter().filter(|(_, p)| !p).map(|(o, _)| *o).collect())
                    .unwrap_or_default();
                let mut taken = 0usize;
                if let Some((url, headers)) = &plan.to {
                    for order in &pending {
                        if !me.net.admit() {
                            break;
                        }
                        let mut req = me.client.put(format!("{url}/order-{order}"));
                        for (k, v) in headers {
                            req = req.header(k, v.as_str().unwrap_or_default());
                        }
                        let body = json!({"type": "order", "status": "closed", "amountCents": 1250});
                        let ok = req.json(&body).send().await.is_ok_and(|r| r.status().is_success());
                        if !ok {
                            break;
                        }
                        taken += 1;
                        if let Some(db) = me.dbs.borrow_mut().get_mut(&plan.name) {
                            if let Some(o) = db.orders.iter_mut().find(|(o, _)| o == order) {
                                o.1 = true;
                            }
                        }
                        let db = url.rsplit('/').next().unwrap_or_default().to_owned();
                        let company = headers.get("X-Docdb-Company").and_then(Value::as_str).unwrap_or("").to_owned();
                        me.log.borrow_mut().pushed.push((*order, db, company));
                    }
                    report.pushed.insert(plan.name.clone(), taken.into());
                }
                let left = pending.len() - taken;
                if left > 0 {
                    report.unpushed.insert(plan.name.clone(), left.into());
                }
            }
            report
        })
    }
}

type WsStream = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

struct WsSocket {
    sink: Rc<tokio::sync::Mutex<SplitSink<WsStream, Message>>>,
    stream: Rc<tokio::sync::Mutex<SplitStream<WsStream>>>,
}

impl Socket for WsSocket {
    fn send(&self, text: String) -> LocalBoxFuture<'static, Result<(), SocketError>> {
        let sink = self.sink.clone();
        Box::pin(async move {
            sink.lock().await.send(Message::Text(text.into())).await.map_err(|e| SocketError(e.to_string()))
        })
    }
    fn recv(&self) -> LocalBoxFuture<'static, Incoming> {
        let stream = self.stream.clone();
        Box::pin(async move {
            loop {
                match stream.lock().await.next().await {
                    Some(Ok(Message::Text(t))) => return Incoming::Text(t.to_string()),
                    Some(Ok(Message::Close(frame))) => {
                        return Incoming::Closed(frame.map(|f| u16::from(f.code)).unwrap_or(1005))
                    }
                    Some(Ok(_)) => continue,
                    _ => return Incoming::Closed(1006),
                }
            }
        })
    }
    fn close(&self) {
        let sink = self.sink.clone();
        tokio::task::spawn_local(async move {
            let _ = sink.lock().await.close().await;
        });
    }
}

// ---- The fleet ----

/// A session's last credentials, as its browser stored them.
#[derive(Clone, Debug)]
struct Creds {
    access: String,
    headers: Map<String, Value>,
}

/// A page of a browser: the SDK's session and realtime session, and what their events said.
struct Tab {
    session: Session,
    sync: SyncSession,
    /// Sign-out and `invalidate-local` events, in order.
    events: Rc<RefCell<Vec<Value>>>,
}

struct Browser {
    storage: Rc<MemoryStorage>,
    net: Rc<Network>,
    dbs: Rc<Databases>,
    console: Rc<Console>,
    /// Two tabs of one origin: their storage, local databases and network are the browser's.
    tabs: [Tab; 2],
    /// The tab the app acts in.
    active: usize,
    /// Every session this browser held, by the model's number.
    creds: BTreeMap<u64, Creds>,
}

struct Fleet {
    server: Server,
    client: reqwest::Client,
    admin: (String, i64),
    browsers: Vec<Browser>,
    /// Users' ids, learnt from their tokens.
    user_ids: BTreeMap<usize, String>,
    /// Device id → (browser, user): whose device an alarm names.
    devices: BTreeMap<String, (usize, usize)>,
}

fn tab(server: &Server, client: &reqwest::Client, b: &Browser) -> Tab {
    tab_of(server, client, &b.storage, &b.net, &b.dbs, &b.console)
}

fn tab_of(
    server: &Server,
    client: &reqwest::Client,
    storage: &Rc<MemoryStorage>,
    net: &Rc<Network>,
    dbs: &Rc<Databases>,
    console: &Rc<Console>,
) -> Tab {
    let mut config = SessionConfig::new(&server.base).expect("the server's address");
    config.auto_refresh = false;
    let session = Session::new(
        config,
        Ports {
            storage: storage.clone(),
            transport: Rc::new(HttpTransport { client: client.clone(), net: net.clone() }),
            clock: Rc::new(ServerClock(server.state.clock.clone())),
            local_databases: Rc::new(DatabasesPort(dbs.clone())),
            reporter: console.clone(),
            lock: Rc::new(OneTabLock),
            device_key: Rc::new(NoKey),
        },
    );
    let (exists, write) = (dbs.clone(), dbs.clone());
    let ports = SyncPorts {
        connect: Rc::new(|url: &str| {
            let url = url.to_owned();
            Box::pin(async move {
                let (ws, _) = tokio_tungstenite::connect_async(url).await.map_err(|e| SocketError(e.to_string()))?;
                let (sink, stream) = ws.split();
                let socket = WsSocket {
                    sink: Rc::new(tokio::sync::Mutex::new(sink)),
                    stream: Rc::new(tokio::sync::Mutex::new(stream)),
                };
                Ok(Rc::new(socket) as Rc<dyn Socket>)
            })
        }),
        catalog_exists: Rc::new(move |name: &str| {
            let found = exists.dbs.borrow().contains_key(name);
            Box::pin(async move { found })
        }),
        catalog_write: Rc::new(move |name: &str, _docs: Vec<Value>| {
            write.dbs.borrow_mut().insert(name.to_owned(), LocalDb::default());
            Box::pin(async { Ok(()) })
        }),
        sleep: Rc::new(|ms| Box::pin(tokio::time::sleep(Duration::from_millis(ms.into())))),
        random: Rc::new(|| 0.5),
        spawn: Rc::new(|f| {
            tokio::task::spawn_local(f);
        }),
    };
    let url = format!("{}/realtime", server.base.replace("http://", "ws://"));
    let sync = SyncSession::new(session.clone(), url, ports);
    let events: Rc<RefCell<Vec<Value>>> = Rc::default();
    let (e1, e2) = (events.clone(), events.clone());
    session.hooks().sign_out.register(Rc::new(move |event: &Value| {
        e1.borrow_mut().push(event.clone());
        Box::pin(async { Ok(()) })
    }));
    sync.events().invalidate_local.register(Rc::new(move |event: &Value| {
        e2.borrow_mut().push(event.clone());
        Box::pin(async { Ok(()) })
    }));
    Tab { session, sync, events }
}

impl Browser {
    fn tab(&self) -> &Tab {
        &self.tabs[self.active]
    }
}

impl Fleet {
    async fn new(server: Server, start_ms: i64) -> Fleet {
        server.state.clock.freeze_at(start_ms);
        let admin = server.token("admin").await;
        let client = reqwest::Client::new();
        let browsers = (0..BROWSERS)
            .map(|_| {
                let (storage, net, console) = (Rc::default(), Rc::new(Network::default()), Rc::default());
                let dbs = Rc::new(Databases {
                    dbs: RefCell::default(),
                    log: RefCell::default(),
                    client: client.clone(),
                    net: Rc::clone(&net),
                });
                let tabs = [0, 1].map(|_| tab_of(&server, &client, &storage, &net, &dbs, &console));
                Browser { storage, net, dbs, console, tabs, active: 0, creds: BTreeMap::new() }
            })
            .collect();
        Fleet {
            server,
            client,
            admin: (admin, start_ms),
            browsers,
            user_ids: BTreeMap::new(),
            devices: BTreeMap::new(),
        }
    }

    /// A sys_admin's token, logged in again once the clock has moved past its lifetime.
    async fn admin(&mut self) -> String {
        let now = self.server.now();
        if now - self.admin.1 >= 10 * 60 * 1000 || now < self.admin.1 {
            self.admin = (self.server.token("admin").await, now);
        }
        self.admin.0.clone()
    }

    fn session(&self, b: usize) -> &Session {
        &self.browsers[b].tab().session
    }

    /// The events the step's SDK calls emitted.
    fn take_events(&self, b: usize) -> Vec<Value> {
        std::mem::take(&mut *self.browsers[b].tab().events.borrow_mut())
    }

    async fn step(&mut self, m: &mut SdkModel, op: SdkOp) -> Result<(), String> {
        let destroyed_before: Vec<usize> =
            self.browsers.iter().map(|b| b.dbs.log.borrow().destroyed_unpushed.len()).collect();
        let console_before: Vec<usize> = self.browsers.iter().map(|b| b.console.0.borrow().len()).collect();
        match op {
            SdkOp::Login { browser, user } => {
                let name = USERS[user].0;
                let (pushed, _) = m.login(browser, user);
                let r = self.session(browser).login(name, &format!("{name}-pass")).await;
                if !r.is_success() {
                    return Err(format!("the login failed: {r:?}"));
                }
                let id = self.session(browser).current_user().and_then(|u| u["userId"].as_str().map(str::to_owned));
                self.user_ids.insert(user, id.ok_or("a user without userId")?);
                self.till_reported(browser, "login", pushed)?;
            }
            SdkOp::Logout { browser, how } => {
                let scope = if how == SignOut::Global { LogoutScope::Global } else { LogoutScope::Local };
                let had = m.current(browser);
                let pushed = m.logout(browser, how);
                let net = &self.browsers[browser].net;
                net.budget.set(match how {
                    SignOut::Online | SignOut::Global => None,
                    SignOut::Unfinished => Some(1),
                    SignOut::Offline => Some(0),
                });
                self.session(browser).logout(scope).await;
                self.browsers[browser].net.budget.set(None);
                self.till_reported(browser, "logout", pushed)?;
                if pushed.left > 0 {
                    reached(9);
                }
                // At once: the credentials of the session signed out end with its completion, or
                // with its window (unfinished), or not at all (offline: the server never heard).
                if let Some(n) = had {
                    self.try_credentials(m, browser, n).await?;
                }
            }
            SdkOp::LogoutOthers { browser } => {
                let want = m.logout_others(browser);
                let r = self.session(browser).logout(LogoutScope::Others).await;
                if r.success != want {
                    return Err(format!("logout(others) answered {r:?}; the model says accepted={want}"));
                }
            }
            SdkOp::OperatorReset { user } => {
                let Some(id) = self.user_ids.get(&user).cloned() else { return Ok(()) };
                m.operator_reset(user);
                let admin = self.admin().await;
                let name = USERS[user].0;
                let a = self
                    .server
                    .patch(&format!("/users/{id}"), Some(&admin), json!({"password": format!("{name}-pass")}))
                    .await;
                if a.status != StatusCode::OK {
                    return Err(format!("the password reset answered {} {}", a.status, a.body));
                }
            }
            SdkOp::Register { browser } => {
                let want = m.register(browser);
                let r = self.session(browser).register_device().await;
                let ok = matches!(r, session_broker::core::results::DeviceResult::Success { .. });
                if ok != want {
                    return Err(format!("registerDevice answered {r:?}; the model says success={want}"));
                }
                self.note_device(m, browser);
            }
            SdkOp::Handshake { browser } => self.handshake(m, browser).await?,
            SdkOp::WriteOrder { browser } => {
                if let Some(order) = m.write_order(browser) {
                    let b = &self.browsers[browser];
                    b.dbs.dbs.borrow_mut().entry(TILL.into()).or_default().orders.push((order, false));
                    b.tab().session.track_local_database(TILL, "", "dynamic").map_err(|e| e.message())?;
                }
            }
            SdkOp::SwitchCompany { browser, tenant } => {
                let want = m.switch_company(browser, tenant);
                let body = json!({"companyId": TENANTS[tenant]}).to_string();
                let r = self.session(browser).call(Method::Post, "/auth/company", Some(body)).await;
                if r.success != matches!(want, Some((true, _))) {
                    return Err(format!("the company change answered {r:?}; the model says {want:?}"));
                }
                if let Some((true, Some(refreshed))) = want {
                    let ok = self.session(browser).refresh_authentication().await;
                    if ok != matches!(refreshed, Refreshed::Accepted { .. }) {
                        return Err(format!(
                            "the refresh after a company change answered {ok}; the model {refreshed:?}"
                        ));
                    }
                }
            }
            SdkOp::DestroyAll { browser } => {
                let (pushed, _) = m.destroy_all(browser);
                let r = self.session(browser).destroy_all_local_databases().await;
                let got = till_of(&r.to_value());
                if got != pushed {
                    return Err(format!("destroyAllLocalDatabases reported {got:?} of the till; the model {pushed:?}"));
                }
            }
            SdkOp::LoseLocalData { browser } => {
                m.lose_local_data(browser);
                let b = &self.browsers[browser];
                b.storage.remove(keys::LAST_INVALIDATION);
                b.dbs.dbs.borrow_mut().retain(|name, _| name == TILL);
            }
            SdkOp::WipeStorage { browser } => {
                m.wipe_storage(browser);
                let b = &mut self.browsers[browser];
                b.storage.0.borrow_mut().clear();
                b.dbs.dbs.borrow_mut().clear();
                for t in 0..2 {
                    b.tabs[t].sync.close();
                    b.tabs[t] = tab(&self.server, &self.client, b);
                }
                b.active = 0;
            }
            SdkOp::Reload { browser } => {
                m.reload(browser);
                let b = &mut self.browsers[browser];
                b.tabs[b.active].sync.close();
                b.tabs[b.active] = tab(&self.server, &self.client, b);
            }
            SdkOp::SwitchTab { browser } => {
                m.switch_tab(browser);
                let b = &mut self.browsers[browser];
                b.active = 1 - b.active;
            }
            SdkOp::Probe { browser } => self.probe(m, browser).await?,
            SdkOp::SetRolling { tenant, on } => {
                let admin = self.admin().await;
                let path = format!("/admin/rolling-db/flags/{}?force=true", TENANTS[tenant]);
                let a = self.server.patch(&path, Some(&admin), json!({"rollingDb": on})).await;
                if a.status != StatusCode::OK {
                    return Err(format!("the flag change answered {} {}", a.status, a.body));
                }
                m.m.apply(model::Op::SetRolling { tenant, on });
            }
            SdkOp::Rotate => {
                let admin = self.admin().await;
                let run = self.server.run_cron(&admin, "rolling-db-rotate").await;
                if run["status"] != "succeeded" {
                    return Err(format!("the rotate did not succeed: {run}"));
                }
                m.m.apply(model::Op::Rotate);
            }
            SdkOp::Invalidate { tenant } => {
                let admin = self.admin().await;
                let at = self.server.invalidate(&admin, TENANTS[tenant]).await;
                m.m.apply(model::Op::Invalidate { tenant });
                let want = m.m.tenants[tenant].invalidation.map(|i| i.at);
                if Some(at) != want {
                    return Err(format!("the invalidation is at {at}, the model says {want:?}"));
                }
            }
            SdkOp::Advance { secs } => {
                m.m.apply(model::Op::Advance { secs });
                self.server.state.clock.freeze_at(m.m.now_ms);
            }
        }
        self.check(m, destroyed_before, console_before).await
    }

    /// The till's part of the last event with a push report (the sign-out event of `reason`)
    /// equals the model's.
    fn till_reported(&self, browser: usize, reason: &str, want: Pushed) -> Result<(), String> {
        let events = self.take_events(browser);
        let event = events.iter().rev().find(|e| e["reason"] == reason);
        let got = event.map(till_of).unwrap_or_default();
        if got.left != want.left || (want.taken > 0 && got.taken != want.taken) {
            return Err(format!("the {reason} event reported {got:?} of the till ({events:?}); the model {want:?}"));
        }
        if want.taken > 0 {
            reached(8);
        }
        Ok(())
    }

    /// Records the device id the browser stores as its user's device.
    fn note_device(&mut self, m: &SdkModel, browser: usize) {
        if let (Some(id), Some(owner)) = (self.session(browser).device_id(), m.devices[browser].id_owner) {
            self.devices.insert(id, (browser, owner));
        }
    }

    async fn handshake(&mut self, m: &mut SdkModel, browser: usize) -> Result<(), String> {
        let alarms_before: usize = m.m.alarms().iter().map(|a| a.0.len()).sum();
        let missing_before: usize = m.m.alarms().iter().map(|a| a.1.len()).sum();
        let (want, pushed, _) = m.handshake(browser);
        let sync = self.browsers[browser].tab().sync.clone();
        let mut outcome = tokio::time::timeout(Duration::from_secs(10), sync.connect()).await;
        if let Ok(Err(SyncFailure::Closed)) = outcome {
            // The refresh `connect()` made first ended the session for its user or company (a
            // company change, a rejection), which closes the realtime session: the app connects
            // again.
            outcome = tokio::time::timeout(Duration::from_secs(10), sync.connect()).await;
        }
        sync.close();
        // Lets the supervisor see the close and retire.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        self.note_device(m, browser);
        let events = self.take_events(browser);
        let got = match outcome {
            Err(_) => return Err("the handshake never became ready".into()),
            Ok(Err(SyncFailure::NotSignedIn)) => SdkHandshake::NotSignedIn,
            Ok(Err(SyncFailure::Refused { .. })) => SdkHandshake::Refused,
            Ok(Err(SyncFailure::Closed)) => return Err("the handshake was closed before it was ready".into()),
            Ok(Ok(())) => {
                let invalidate = events.iter().find(|e| e.get("invalidatedAt").is_some());
                let routing = sync.routing().ok_or("ready without a routing")?;
                SdkHandshake::Ready(HandshakeAnswer::Ready {
                    invalidate: match invalidate {
                        Some(e) => Some((int_of(e, "invalidatedAt")?, Reason::of(&e["reason"])?)),
                        None => None,
                    },
                    company: str_of(&routing, "companyId")?,
                    routing: match routing["database"].as_str() {
                        Some("core") => Routing::Core,
                        Some("legacy") => Routing::Legacy,
                        other => return Err(format!("ready.database is {other:?}")),
                    },
                    static_db: str_of(&routing, "staticDb")?,
                    dynamic_db: str_of(&routing, "dynamicDb")?,
                    invalidated_at: routing["invalidatedAt"].as_i64(),
                })
            }
        };
        if got != want {
            return Err(format!("handshake: the SDK came to {got:?}, the model {want:?}"));
        }
        match &got {
            SdkHandshake::Refused => reached(11),
            SdkHandshake::Ready(answer @ HandshakeAnswer::Ready { invalidate, routing, .. }) => {
                if *routing == Routing::Core {
                    reached(0);
                }
                if invalidate.is_some() {
                    reached(1);
                    let event = events.iter().find(|e| e.get("invalidatedAt").is_some());
                    let reported = event.map(till_of).unwrap_or_default();
                    if reported.left != pushed.left || (pushed.taken > 0 && reported.taken != pushed.taken) {
                        return Err(format!(
                            "invalidate-local reported {reported:?} of the till; the model {pushed:?}"
                        ));
                    }
                    if pushed.taken > 0 {
                        reached(8);
                    }
                }
                held_rules(m, browser, answer)?;
            }
            _ => {}
        }
        if m.m.alarms().iter().map(|a| a.0.len()).sum::<usize>() > alarms_before {
            reached(2);
        }
        if m.m.alarms().iter().map(|a| a.1.len()).sum::<usize>() > missing_before {
            reached(12);
        }
        Ok(())
    }

    /// `getToken()` as the model says, then the browser's recent sessions' credentials tried on
    /// the server: each works exactly while the model says its session does.
    async fn probe(&mut self, m: &mut SdkModel, browser: usize) -> Result<(), String> {
        let had = m.current(browser);
        let (want, _) = m.get_token(browser);
        let got = self.session(browser).get_token().await;
        if got.is_some() != want.is_some() {
            return Err(format!("getToken() answered {got:?}; the model says a session: {want:?}"));
        }
        if had.is_some() && got.is_none() {
            reached(13);
        }
        self.record_creds(m);
        let recent: Vec<u64> = self.browsers[browser].creds.keys().rev().take(3).copied().collect();
        for n in recent {
            self.try_credentials(m, browser, n).await?;
        }
        Ok(())
    }

    /// Session `n`'s last credentials (as `browser` stored them) tried on the server: its access
    /// token on a Bearer call, its headers on a read of its tenant's catalogue; each works exactly
    /// when the model says.
    async fn try_credentials(&self, m: &SdkModel, browser: usize, n: u64) -> Result<(), String> {
        let Some(creds) = self.browsers[browser].creds.get(&n) else { return Ok(()) };
        let bearer = self.server.get("/users/me", Some(&creds.access)).await.status == StatusCode::OK;
        let company = creds.headers.get("X-Docdb-Company").and_then(Value::as_str).unwrap_or_default();
        let tenant = TENANTS.iter().position(|t| *t == company).ok_or("headers of no tenant")?;
        let mut req =
            self.client.get(format!("{}/docdb/{}/_all_docs?limit=1", self.server.base, m.m.legacy_db(tenant)));
        for (k, v) in &creds.headers {
            req = req.header(k, v.as_str().unwrap_or_default());
        }
        let headers = req.send().await.map(|r| r.status()).unwrap_or(StatusCode::BAD_GATEWAY) == StatusCode::OK;
        let (want_bearer, want_headers) = (m.bearer_works(n), m.headers_work(n));
        if (bearer, headers) != (want_bearer, want_headers) {
            return Err(format!(
                "session {n}'s token works: {bearer}, its headers: {headers}; the model says {want_bearer}, \
                 {want_headers} ({:?})",
                m.sessions.get(&n)
            ));
        }
        match m.sessions[&n].end {
            model::device::End::Window(_) if headers => reached(6),
            model::device::End::Ended if !headers => reached(5),
            _ => {}
        }
        Ok(())
    }

    /// Each browser's stored credentials, under the model's number of its session.
    fn record_creds(&mut self, m: &SdkModel) {
        for (b, browser) in self.browsers.iter_mut().enumerate() {
            let Some(n) = m.current(b) else { continue };
            let access = browser.storage.get(keys::AUTH);
            let headers = browser.tab().session.docdb_headers(keys::HeaderKind::Remote);
            if let (Some(access), Some(headers)) = (access, headers) {
                browser.creds.insert(n, Creds { access, headers });
            }
        }
    }

    /// What holds after every step: the SDK's answers, the device's data, the server's alarms.
    async fn check(
        &mut self,
        m: &mut SdkModel,
        destroyed_before: Vec<usize>,
        console_before: Vec<usize>,
    ) -> Result<(), String> {
        for r in m.refreshes.drain(..) {
            match r {
                Refreshed::Rejected { ended_elsewhere: true } => reached(3),
                Refreshed::Rejected { ended_elsewhere: false } => reached(4),
                Refreshed::Accepted { company_changed: true } => reached(7),
                Refreshed::Accepted { .. } => {}
            }
        }
        for browser in &self.browsers {
            // The other tab hears of this step's writes (its `storage` events) and follows.
            let other = &browser.tabs[1 - browser.active];
            other.session.follow().await;
            other.events.borrow_mut().clear();
        }
        for (b, browser) in self.browsers.iter().enumerate() {
            // Both tabs answer alike: storage is the truth.
            for tab in &browser.tabs {
                let s = &tab.session;
                let want = m.signed_in(b);
                let user = s.current_user();
                let got = user.as_ref().map(|u| (u["userId"].as_str().unwrap_or("").to_owned(), s.current_company()));
                match (want, got) {
                    (None, None) => {}
                    (Some((user, tenant)), Some((id, company))) => {
                        if self.user_ids.get(&user) != Some(&id) {
                            return Err(format!("browser {b} is signed in as {id}; the model says {}", USERS[user].0));
                        }
                        if company.as_ref().and_then(|c| c["id"].as_str()) != Some(TENANTS[tenant]) {
                            return Err(format!(
                                "browser {b}'s company is {company:?}; the model says {}",
                                TENANTS[tenant]
                            ));
                        }
                        if s.last_invalidation() != m.m.browsers[b].obeyed {
                            return Err(format!(
                                "browser {b} obeyed {:?}; the model says {:?}",
                                s.last_invalidation(),
                                m.m.browsers[b].obeyed
                            ));
                        }
                    }
                    (want, got) => {
                        return Err(format!("browser {b}: the SDK's session is {got:?}, the model's {want:?}"))
                    }
                }
            }
            let pending: Vec<u64> = browser
                .dbs
                .dbs
                .borrow()
                .get(TILL)
                .map(|db| db.orders.iter().filter(|(_, p)| !p).map(|(o, _)| *o).collect())
                .unwrap_or_default();
            if pending != m.pending(b) {
                return Err(format!(
                    "browser {b}'s till holds {pending:?} unpushed; the model says {:?}",
                    m.pending(b)
                ));
            }
            // Orders destroyed unpushed this step were reported on the console with their count.
            let lost = browser.dbs.log.borrow().destroyed_unpushed.len() - destroyed_before[b];
            if lost > 0 {
                reached(10);
                let said = format!("{lost} document(s) of \"{TILL}\" could not be pushed and were destroyed");
                if !browser.console.0.borrow()[console_before[b]..].iter().any(|l| l.contains(&said)) {
                    return Err(format!("{lost} orders destroyed unpushed on browser {b} and not reported"));
                }
            }
        }
        // The orders the server took, and the ones destroyed unpushed, are the model's.
        let mut pushed: Vec<(u64, usize, String)> = Vec::new();
        let mut destroyed: Vec<u64> = Vec::new();
        for browser in &self.browsers {
            let log = browser.dbs.log.borrow();
            for (order, db, company) in &log.pushed {
                let tenant = TENANTS.iter().position(|t| t == company).ok_or("pushed with headers of no tenant")?;
                pushed.push((*order, tenant, db.clone()));
            }
            destroyed.extend(&log.destroyed_unpushed);
        }
        let (mut want_pushed, mut want_destroyed) = (m.on_server.clone(), m.destroyed_unpushed.clone());
        pushed.sort();
        want_pushed.sort();
        destroyed.sort();
        want_destroyed.sort();
        if pushed != want_pushed {
            return Err(format!("the SDK pushed {pushed:?}; the model says {want_pushed:?}"));
        }
        if destroyed != want_destroyed {
            return Err(format!("destroyed unpushed: {destroyed:?}; the model says {want_destroyed:?}"));
        }
        self.record_creds(m);
        self.alarms_agree(m).await
    }

    /// The raised alarms the server shows operators equal the model's; the orders the devices
    /// reported lost are each counted once, never more than the model destroyed unpushed.
    async fn alarms_agree(&mut self, m: &SdkModel) -> Result<(), String> {
        let admin = self.admin().await;
        let fleet = self.server.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
        for t in fleet["tenants"].as_array().ok_or("tenants is a list")? {
            let Some(tenant) = TENANTS.iter().position(|name| t["companyId"] == *name) else { continue };
            let reported: u64 =
                t["deviceLosses"].as_object().map_or(0, |l| l.values().filter_map(|n| n.as_u64()).sum());
            let lost = m.lost_of.get(&tenant).copied().unwrap_or(0);
            if reported > lost {
                return Err(format!("{} reported {reported} orders lost; the model destroyed {lost}", TENANTS[tenant]));
            }
        }
        let cluster = self.server.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
        for (tenant, want) in m.m.alarms().iter().enumerate() {
            let told =
                histories::alarms_told(&cluster["attention"], TENANTS[tenant], |s| self.devices.get(s).copied())?;
            // No alarm where nothing was lost: only a tenant whose orders a device destroyed unpushed.
            if told.device_losses > 0 {
                if m.lost_of.get(&tenant).copied().unwrap_or(0) == 0 {
                    return Err(format!(
                        "{}: a device's loss alarmed, though the model destroyed nothing",
                        TENANTS[tenant]
                    ));
                }
                reached(14);
            }
            let got = (&told.resets, &told.missing, &told.regressed, &told.lost_days);
            if got != (&want.0, &want.1, &want.2, &want.3) {
                return Err(format!(
                    "{}'s alarms name {:?} and missing days {:?} (regressed {:?}, lost {:?}), the model says {want:?}",
                    TENANTS[tenant], got.0, got.1, got.2, got.3
                ));
            }
        }
        Ok(())
    }

    /// Every order the server took is in the database it was pushed to, and only its tenant's
    /// users can read it.
    async fn orders_kept(&self, m: &SdkModel) -> Result<(), String> {
        let mut readers = Vec::new();
        for name in ["alice", "bob"] {
            let login = self.server.login(name).await;
            readers.push(login["docdbHeaders"]["Remote"].as_object().ok_or("no docdb headers")?.clone());
        }
        for (order, tenant, db) in &m.on_server {
            if !db.contains(&format!("_{}_", TENANTS[*tenant])) {
                return Err(format!("order {order} of {} went to {db}", TENANTS[*tenant]));
            }
            for (reader, headers) in readers.iter().enumerate() {
                let mut req = self.client.get(format!("{}/docdb/{db}/order-{order}", self.server.base));
                for (k, v) in headers {
                    req = req.header(k, v.as_str().unwrap_or_default());
                }
                let status = req.send().await.map(|r| r.status()).unwrap_or(StatusCode::BAD_GATEWAY);
                if (status == StatusCode::OK) != (reader == *tenant) {
                    return Err(format!("order {order} in {db} read by {}'s user: {status}", TENANTS[reader]));
                }
            }
        }
        Ok(())
    }
}

/// What a push report (an event, a destroy report) says of the till.
fn till_of(v: &Value) -> Pushed {
    let n = |k: &str| v[k][TILL].as_u64().unwrap_or(0) as usize;
    Pushed { taken: n("pushed"), left: n("unpushed") }
}

/// The rules held whatever the model says: CORE only after a rotate since the latest enable, only
/// the session's own tenant's databases.
fn held_rules(m: &SdkModel, browser: usize, got: &HandshakeAnswer) -> Result<(), String> {
    let HandshakeAnswer::Ready { company, routing, static_db, dynamic_db, .. } = got else { return Ok(()) };
    let tenant = TENANTS.iter().position(|t| t == company).ok_or("ready names an unknown tenant")?;
    let (_, own) = m.signed_in(browser).ok_or("ready for a browser without a session")?;
    if tenant != own {
        return Err(format!("a session of {} was answered for {company}", TENANTS[own]));
    }
    let mark = format!("_{}_", TENANTS[tenant]);
    if !static_db.contains(&mark) || !dynamic_db.contains(&mark) {
        return Err(format!("{static_db} / {dynamic_db} is not {company}'s"));
    }
    let t = &m.m.tenants[tenant];
    if *routing == Routing::Core && !(t.rolling && t.rotated_since_enable) {
        return Err("routed to CORE without a rotate since the latest enable".into());
    }
    Ok(())
}

/// A history signs in more often than one address may (the rate limit is not its subject).
fn settings() -> Settings {
    Settings { test_controls: true, auth_rate_per_min: 1_000_000, auth_rate_burst: 1_000_000, ..Settings::default() }
}

/// Runs one history; the first step whose answer differs from the model's, with the reason.
fn replay(start: usize, ops: &[SdkOp]) -> Result<(), String> {
    // A runtime of its own (dropping it stops the history's server); the SDK's futures are not
    // Send, so the devices run on this thread, in a LocalSet, and the server on the workers.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    let settings = settings();
    let start_ms = chrono::DateTime::parse_from_rfc3339(STARTS[start]).unwrap().timestamp_millis();
    let mut m = SdkModel::new(&settings.db_prefix, start_ms);
    // Started outside the LocalSet: opening the store blocks, which tokio allows only there.
    let server = rt.block_on(common::spawn_with(settings));
    local.block_on(&rt, async {
        let mut fleet = Fleet::new(server, start_ms).await;
        for (i, op) in ops.iter().enumerate() {
            fleet.step(&mut m, *op).await.map_err(|e| format!("step {i} {op:?}: {e}"))?;
        }
        fleet.orders_kept(&m).await.map_err(|e| format!("after the last step: {e}"))
    })
}

#[test]
fn generated_sdk_histories_answer_as_the_model() {
    let cases = env_number("SDK_HISTORY_CASES", 32);
    let steps = env_number("HISTORY_STEPS", 200) as usize;
    histories::run(
        "SDK histories",
        53,
        cases,
        histories::history(STARTS.len(), op(), steps),
        &REACHED_NAMES,
        true,
        |(start, ops)| replay(start, &ops).map_err(|e| format!("{e}\nthe history (start {start}): {ops:?}")),
    );
}

/// A login of another tenant while the previous session lives: the till's orders go to their own
/// tenant's database with that session's headers, never with the incoming tenant's.
#[test]
fn another_tenants_login_pushes_the_till_with_the_previous_sessions_headers() {
    let (alice, bob) = (0, 2);
    let ops = [
        SdkOp::Login { browser: 0, user: alice },
        SdkOp::Handshake { browser: 0 },
        SdkOp::WriteOrder { browser: 0 },
        SdkOp::WriteOrder { browser: 0 },
        SdkOp::Login { browser: 0, user: bob },
        SdkOp::Probe { browser: 0 },
    ];
    replay(0, &ops).unwrap();
}
