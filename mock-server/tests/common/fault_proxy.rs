//! A TCP proxy in front of one hop of the fleet (a replica's engine, its PostgreSQL, another
//! replica), its faults switched while the test runs, after Toxiproxy: latency, bandwidth, idle
//! connections closed or forgotten, a reset in the middle of an answer, a cut after so many
//! bytes, a black hole that accepts and never answers, and down (connections refused). It listens
//! on a free 127.0.0.1 port and forwards only to 127.0.0.1; it ends with the test when dropped.
//!
//! A fault applies to the bytes that cross it from the moment it is set, on the connections
//! already open as on new ones: a partition set while a feed is open stalls that feed.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

/// The faults in force (the default: none, a plain relay).
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Each chunk is delivered this much later.
    pub latency: Duration,
    /// At most this many bytes a second each way (`None`: as fast as they come).
    pub bytes_per_sec: Option<u64>,
    /// A connection idle this long is closed on both sides, as an L4 relay or a server's
    /// keep-alive timeout does.
    pub idle_close: Option<Duration>,
    /// A connection idle this long is forgotten without a word (a load balancer's or a NAT's
    /// idle timeout): the next bytes from either side get a reset, and are not delivered.
    pub idle_forget: Option<Duration>,
    /// A connection is closed on both sides this long after it opened, busy or not (a pooler's
    /// or a balancer's most a connection may live).
    pub lifetime: Option<Duration>,
    /// The answer (upstream to client) is reset after this many of its bytes on a connection.
    pub reset_answer_after: Option<usize>,
    /// A connection is closed on both sides once this many bytes crossed it (either way).
    pub cut_after: Option<usize>,
    /// Nothing crosses (connections are accepted, their bytes held forever): a partition.
    pub black_hole: bool,
    /// Connections are refused (nothing listens) and those open are reset.
    pub down: bool,
}

struct Shared {
    upstream: Mutex<Option<SocketAddr>>,
    faults: watch::Sender<Faults>,
    /// Connections accepted so far.
    accepted: AtomicUsize,
    /// Connections reset or closed by a fault so far.
    broken: AtomicUsize,
    /// Whether the port is bound (false while down).
    listening: watch::Sender<bool>,
}

pub struct FaultProxy {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultProxy {
    /// A proxy to `upstream` (`None`: set later with [`FaultProxy::to`], for a replica whose
    /// port is known only once it listens; a connection before then is closed at once).
    pub async fn start(upstream: Option<SocketAddr>) -> FaultProxy {
        if let Some(up) = upstream {
            assert!(up.ip().is_loopback(), "the fault proxy forwards to 127.0.0.1 only");
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream),
            faults: watch::channel(Faults::default()).0,
            accepted: AtomicUsize::new(0),
            broken: AtomicUsize::new(0),
            listening: watch::channel(true).0,
        });
        let task = tokio::spawn(serve(listener, addr, shared.clone()));
        FaultProxy { addr, shared, task }
    }

    /// A proxy to `127.0.0.1:port`.
    pub async fn to_port(port: u16) -> FaultProxy {
        FaultProxy::start(Some(SocketAddr::from(([127, 0, 0, 1], port)))).await
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Forwards to `upstream` from now on.
    pub fn to(&self, upstream: SocketAddr) {
        assert!(upstream.ip().is_loopback(), "the fault proxy forwards to 127.0.0.1 only");
        *self.shared.upstream.lock().unwrap() = Some(upstream);
    }

    /// Sets the faults in force.
    pub fn set(&self, faults: Faults) {
        self.shared.faults.send_replace(faults);
    }

    /// No fault any more.
    pub fn heal(&self) {
        self.set(Faults::default());
    }

    /// Resolves once the port is bound (again, after down was lifted).
    pub async fn listening(&self) {
        let _ = self.shared.listening.subscribe().wait_for(|l| *l).await;
    }

    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Connections a fault closed or reset so far.
    pub fn broken(&self) -> usize {
        self.shared.broken.load(Ordering::SeqCst)
    }
}

/// Accepts while up; while down the port is closed (a connection is refused) and bound again
/// when it comes back up.
async fn serve(listener: TcpListener, addr: SocketAddr, shared: Arc<Shared>) {
    let mut faults = shared.faults.subscribe();
    let mut listener = Some(listener);
    loop {
        if faults.borrow_and_update().down {
            listener = None;
            shared.listening.send_replace(false);
            if faults.changed().await.is_err() {
                return;
            }
            continue;
        }
        let bound = match listener.take() {
            Some(l) => l,
            None => match rebind(addr).await {
                Some(l) => {
                    shared.listening.send_replace(true);
                    l
                }
                None => return,
            },
        };
        tokio::select! {
            accepted = bound.accept() => {
                if let Ok((client, _)) = accepted {
                    shared.accepted.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(relay(client, shared.clone()));
                }
                listener = Some(bound);
            }
            changed = faults.changed() => {
                if changed.is_err() {
                    return;
                }
                listener = Some(bound);
            }
        }
    }
}

/// The same port again (another socket may hold it a moment: a bounded wait).
async fn rebind(addr: SocketAddr) -> Option<TcpListener> {
    for _ in 0..50 {
        let socket = TcpSocket::new_v4().ok()?;
        socket.set_reuseaddr(true).ok()?;
        if socket.bind(addr).is_ok() {
            if let Ok(l) = socket.listen(128) {
                return Some(l);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the fault proxy could not listen on {addr} again");
}

/// Closes `stream` with a reset rather than a FIN.
fn reset(stream: TcpStream) {
    let _ = stream.set_zero_linger();
    drop(stream);
}

/// What a connection's two pumps share.
struct Conn {
    opened: Instant,
    /// When a byte last crossed, either way.
    last: Mutex<Instant>,
    /// Bytes that crossed, both ways.
    crossed: AtomicUsize,
}

enum End {
    /// One side closed: the other is closed too (a FIN).
    Closed,
    /// A fault resets both sides.
    Reset,
}

async fn relay(client: TcpStream, shared: Arc<Shared>) {
    let mut faults = shared.faults.subscribe();
    let upstream = *shared.upstream.lock().unwrap();
    let held = faults.borrow_and_update().clone();
    let Some(upstream) = upstream.filter(|_| !held.down) else { return reset(client) };
    let Ok(server) = TcpStream::connect(upstream).await else { return reset(client) };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let conn = Conn { opened: Instant::now(), last: Mutex::new(Instant::now()), crossed: AtomicUsize::new(0) };
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let end = {
        let up = pump(&mut client_read, &mut server_write, &conn, &shared, false);
        let down = pump(&mut server_read, &mut client_write, &conn, &shared, true);
        let idle = watch_idle(&conn, &shared);
        tokio::select! {
            e = up => e,
            e = down => e,
            e = idle => e,
        }
    };
    let client = client_read.reunite(client_write).unwrap();
    let server = server_read.reunite(server_write).unwrap();
    match end {
        End::Closed => {}
        End::Reset => {
            shared.broken.fetch_add(1, Ordering::SeqCst);
            reset(client);
            reset(server);
        }
    }
}

/// Resolves when the connection is to be closed for being idle (`idle_close`) or old
/// (`lifetime`), or reset because the proxy went down.
async fn watch_idle(conn: &Conn, shared: &Shared) -> End {
    let mut faults = shared.faults.subscribe();
    loop {
        let now = faults.borrow_and_update().clone();
        if now.down {
            return End::Reset;
        }
        let idle_for = conn.last.lock().unwrap().elapsed();
        let lived = conn.opened.elapsed();
        let left = |limit: Option<Duration>, spent: Duration| limit.map(|l| l.saturating_sub(spent));
        let wait = [left(now.idle_close, idle_for), left(now.lifetime, lived)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(Duration::from_secs(3600));
        if wait.is_zero() {
            shared.broken.fetch_add(1, Ordering::SeqCst);
            return End::Closed;
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            changed = faults.changed() => if changed.is_err() { return End::Closed },
        }
    }
}

/// Copies one way under the faults in force; `answer` for upstream to client.
async fn pump(
    from: &mut tokio::net::tcp::OwnedReadHalf,
    to: &mut tokio::net::tcp::OwnedWriteHalf,
    conn: &Conn,
    shared: &Shared,
    answer: bool,
) -> End {
    let faults = shared.faults.subscribe();
    let mut buf = vec![0u8; 16 * 1024];
    let mut answered = 0usize;
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                // A partition holds the close too: the far side learns of it after the heal.
                if faults.borrow().black_hole {
                    hold_while_black_hole(shared).await;
                }
                return End::Closed;
            }
            Ok(n) => n,
        };
        let now = faults.borrow().clone();
        {
            let mut last = conn.last.lock().unwrap();
            if now.idle_forget.is_some_and(|limit| last.elapsed() >= limit) {
                // The flow was forgotten while idle: these bytes meet a reset.
                return End::Reset;
            }
            *last = Instant::now();
        }
        if now.black_hole {
            // Held until the fault is lifted, then delivered, as TCP retransmits a partition's
            // packets once it heals; meanwhile the connection is open and silent.
            hold_while_black_hole(shared).await;
        }
        let mut chunk = &buf[..n];
        if answer {
            if let Some(limit) = now.reset_answer_after {
                if answered + chunk.len() > limit {
                    let _ = to.write_all(&chunk[..limit.saturating_sub(answered)]).await;
                    return End::Reset;
                }
            }
            answered += chunk.len();
        }
        let crossed = conn.crossed.fetch_add(chunk.len(), Ordering::SeqCst);
        if let Some(limit) = now.cut_after {
            if crossed + chunk.len() >= limit {
                chunk = &chunk[..limit.saturating_sub(crossed)];
                let _ = to.write_all(chunk).await;
                shared.broken.fetch_add(1, Ordering::SeqCst);
                return End::Closed;
            }
        }
        if !now.latency.is_zero() {
            tokio::time::sleep(now.latency).await;
        }
        if let Some(rate) = now.bytes_per_sec.filter(|r| *r > 0) {
            tokio::time::sleep(Duration::from_secs_f64(chunk.len() as f64 / rate as f64)).await;
        }
        if to.write_all(chunk).await.is_err() {
            return End::Closed;
        }
    }
}

async fn hold_while_black_hole(shared: &Shared) {
    let mut faults = shared.faults.subscribe();
    let _ = faults.wait_for(|f| !f.black_hole).await;
}
