//! A page of a browser: the SDK's `Session` and `SyncSession` on the simulated ports, what their
//! events told, and the tasks it runs (aborted when the tab reloads, freezes or closes).

use std::cell::RefCell;
use std::rc::Rc;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use session_broker::core::ports::{LocalBoxFuture, SocketError, StorageError};
use session_broker::core::session::{AuthEvent, Ports, Session, SessionConfig};
use session_broker::core::sync_session::{Incoming, Socket, SyncPorts, SyncSession};
use tokio::io::DuplexStream;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::browser::{deliver_storage_events, BrowserShared, Console, Map, TabKey, TabLock, TabStorage};
use super::dbs::DatabasesPort;
use super::env::{Env, SimClock};
use super::net::SimTransport;

pub struct Tab {
    /// Its number in the browser (a reloaded tab gets a new one).
    pub slot: usize,
    pub session: Session,
    pub sync: SyncSession,
    pub view: Rc<RefCell<Map>>,
    /// The auth-state stream: (when, event, why).
    pub told: Rc<RefCell<Vec<(i64, AuthEvent, String)>>>,
    /// The sign-out handlers' events: (when, reason).
    pub sign_outs: Rc<RefCell<Vec<(i64, String)>>>,
    /// What the platform runs for it (storage events, the realtime supervisor, following).
    pub tasks: Rc<RefCell<Vec<JoinHandle<()>>>>,
    /// The app's operations in it.
    pub ops: RefCell<Vec<JoinHandle<()>>>,
}

impl Tab {
    pub fn open(env: &Rc<Env>, b: &Rc<BrowserShared>, slot: usize) -> Tab {
        let view = Rc::new(RefCell::new(b.truth.borrow().clone()));
        let seen: super::browser::Seen = Rc::new(RefCell::new((b.writes.get(), Default::default())));
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        b.views.borrow_mut().insert(slot, (view.clone(), tx));
        let mut config = SessionConfig::new("http://sim").expect("the simulator's base URL");
        config.auto_refresh = false;
        config.timeout_ms = env.config.timeout_ms;
        let session = Session::new(
            config,
            Ports {
                storage: Rc::new(TabStorage {
                    env: env.clone(),
                    b: b.clone(),
                    tab: slot,
                    view: view.clone(),
                    seen: seen.clone(),
                }),
                transport: Rc::new(SimTransport { env: env.clone(), browser: b.clone(), tab: slot }),
                clock: Rc::new(env.clock.clone()),
                local_databases: Rc::new(DatabasesPort { env: env.clone(), b: Rc::downgrade(b), tab: slot }),
                reporter: Rc::new(Console(b.clone())),
                lock: Rc::new(TabLock { b: b.clone(), tab: slot }),
                device_key: Rc::new(TabKey { env: env.clone(), b: b.clone() }),
            },
        );
        let tasks: Rc<RefCell<Vec<JoinHandle<()>>>> = Rc::default();
        let sync = SyncSession::new(session.clone(), "ws://sim/realtime".into(), sync_ports(env, b, &tasks));
        let told: Rc<RefCell<Vec<(i64, AuthEvent, String)>>> = Rc::default();
        let (t, clock) = (told.clone(), env.clock.clone());
        session.set_listener(Some(Rc::new(move |event, why: &str, _other| {
            t.borrow_mut().push((clock.now(), event, why.to_owned()));
        })));
        let sign_outs: Rc<RefCell<Vec<(i64, String)>>> = Rc::default();
        let (s, clock) = (sign_outs.clone(), env.clock.clone());
        session.hooks().sign_out.register(Rc::new(move |event: &Value| {
            s.borrow_mut().push((clock.now(), event["reason"].as_str().unwrap_or_default().to_owned()));
            Box::pin(async { Ok(()) })
        }));
        let (follower, spawned) = (session.downgrade(), tasks.clone());
        let follow: Rc<dyn Fn()> = Rc::new(move || {
            if let Some(session) = follower.upgrade() {
                spawned.borrow_mut().push(tokio::task::spawn_local(async move { session.follow().await }));
            }
        });
        let drainer =
            tokio::task::spawn_local(deliver_storage_events(view.clone(), seen, rx, env.clock.clone(), follow));
        tasks.borrow_mut().push(drainer);
        Tab { slot, session, sync, view, told, sign_outs, tasks, ops: RefCell::default() }
    }

    /// Runs `work` as this tab's, concurrently with the rest of the run.
    pub fn spawn(&self, work: impl std::future::Future<Output = ()> + 'static) {
        let mut ops = self.ops.borrow_mut();
        ops.retain(|t| !t.is_finished());
        ops.push(tokio::task::spawn_local(work));
    }

    /// The tab is gone (closed, reloaded or frozen): everything it ran stops where it is.
    pub fn stop(&self, b: &BrowserShared) {
        self.sync.close();
        for task in self.tasks.borrow_mut().drain(..).chain(self.ops.borrow_mut().drain(..)) {
            task.abort();
        }
        b.views.borrow_mut().remove(&self.slot);
    }

    pub fn busy(&self) -> bool {
        self.ops.borrow().iter().any(|t| !t.is_finished())
    }
}

fn sync_ports(env: &Rc<Env>, b: &Rc<BrowserShared>, tasks: &Rc<RefCell<Vec<JoinHandle<()>>>>) -> SyncPorts {
    let (e, bc) = (env.clone(), b.clone());
    let (exists, write) = (b.clone(), b.clone());
    let rng = env.clone();
    let spawned = tasks.clone();
    SyncPorts {
        connect: Rc::new(move |url: &str| {
            let (env, b) = (e.clone(), bc.clone());
            let path = url.strip_prefix("ws://sim").unwrap_or(url).to_owned();
            Box::pin(async move {
                SimClock::sleep(env.draw(env.config.max_latency_ms)).await;
                if b.net.down_until.get() > env.now() {
                    return Err(SocketError("offline".into()));
                }
                let ws = env.server.socket(&path).await.map_err(SocketError)?;
                let (sink, stream) = ws.split();
                let socket = SimSocket {
                    env: env.clone(),
                    b: b.clone(),
                    sink: Rc::new(tokio::sync::Mutex::new(sink)),
                    stream: Rc::new(tokio::sync::Mutex::new(stream)),
                };
                Ok(Rc::new(socket) as Rc<dyn Socket>)
            })
        }),
        catalog_exists: Rc::new(move |name: &str| {
            let found = exists.dbs.dbs.borrow().contains_key(name);
            Box::pin(async move { found })
        }),
        catalog_write: Rc::new(move |name: &str, _docs: Vec<Value>| {
            write.dbs.dbs.borrow_mut().entry(name.to_owned()).or_default();
            Box::pin(async { Ok::<(), StorageError>(()) })
        }),
        sleep: Rc::new(|ms| Box::pin(SimClock::sleep(ms.into()))),
        random: Rc::new(move || rng.draw(1_000_000) as f64 / 1_000_001.0),
        spawn: Rc::new(move |f| {
            spawned.borrow_mut().push(tokio::task::spawn_local(f));
        }),
    }
}

type Ws = WebSocketStream<DuplexStream>;

struct SimSocket {
    env: Rc<Env>,
    b: Rc<BrowserShared>,
    sink: Rc<tokio::sync::Mutex<SplitSink<Ws, Message>>>,
    stream: Rc<tokio::sync::Mutex<SplitStream<Ws>>>,
}

impl Socket for SimSocket {
    fn send(&self, text: String) -> LocalBoxFuture<'static, Result<(), SocketError>> {
        let (sink, env, b) = (self.sink.clone(), self.env.clone(), self.b.clone());
        Box::pin(async move {
            SimClock::sleep(env.draw(env.config.max_latency_ms)).await;
            if b.net.down_until.get() > env.now() {
                return Err(SocketError("offline".into()));
            }
            env.server.tick();
            sink.lock().await.send(Message::Text(text.into())).await.map_err(|e| SocketError(e.to_string()))
        })
    }

    fn recv(&self) -> LocalBoxFuture<'static, Incoming> {
        let (stream, env, b) = (self.stream.clone(), self.env.clone(), self.b.clone());
        Box::pin(async move {
            loop {
                let next = stream.lock().await.next().await;
                // A browser gone offline loses its socket.
                if b.net.down_until.get() > env.now() {
                    return Incoming::Closed(1006);
                }
                match next {
                    Some(Ok(Message::Text(t))) => {
                        SimClock::sleep(env.draw(env.config.max_latency_ms)).await;
                        return Incoming::Text(t.to_string());
                    }
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
