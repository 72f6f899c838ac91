//! The runtime the synchronous callers' I/O runs on: the document engine's requests
//! (`docdb/engine.rs`), the PostgreSQL pool's waits and new connections and its listener
//! (`store/on_postgres.rs`, `store/notifications.rs`; a pooled connection's statements run on its
//! own runtime, on the waiting thread). The rolling
//! machine runs on a cron's thread and inside the store's transactions, where nothing can be
//! awaited; its requests go to this runtime, of the process's whole life, and the caller waits for
//! the answer. A runtime of its own rather than the server's: a test's single-threaded runtime
//! would never drive a request its only thread is blocked waiting for.

use std::sync::{Arc, OnceLock};

/// Why the bridge could not carry a request.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("the bridge runtime could not start")]
    Runtime(#[source] Arc<std::io::Error>),
    #[error("the bridge runtime dropped a request")]
    Dropped(#[from] std::sync::mpsc::RecvError),
}

fn bridge() -> Result<&'static tokio::runtime::Runtime, BridgeError> {
    static BRIDGE: OnceLock<Result<tokio::runtime::Runtime, Arc<std::io::Error>>> = OnceLock::new();
    BRIDGE
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("bridge")
                .enable_all()
                .build()
                .map_err(Arc::new)
        })
        .as_ref()
        .map_err(|e| BridgeError::Runtime(e.clone()))
}

/// Runs `work` on the bridge and waits for it (announced to tokio where the caller is one of its
/// workers, as the store's lock is).
pub fn wait<T: Send + 'static>(work: impl std::future::Future<Output = T> + Send + 'static) -> Result<T, BridgeError> {
    let bridge = bridge()?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    bridge.spawn(async move {
        let _ = tx.send(work.await);
    });
    Ok(blocking(|| rx.recv())?)
}

/// Runs `work` to its end on the calling thread, on a timer-only runtime of the thread's own
/// (made on first use): a wait that needs no socket of the bridge's (the store pool's, for a free
/// connection) then costs no hand-over to the bridge's threads and back. On a single-threaded
/// runtime's only thread, which cannot start another runtime, it goes to the bridge instead.
pub fn wait_here<T: Send + 'static>(
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, BridgeError> {
    thread_local! {
        static HERE: Result<tokio::runtime::Runtime, Arc<std::io::Error>> = tokio::runtime::Builder::new_current_thread().enable_time().build().map_err(Arc::new);
    }
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread => wait(work),
        _ => blocking(|| {
            HERE.with(|here| here.as_ref().map(|rt| rt.block_on(work)).map_err(|e| BridgeError::Runtime(e.clone())))
        }),
    }
}

/// Runs `work` on the bridge for as long as it takes (a listener); a bridge that cannot start is
/// logged, the work not run.
pub fn spawn(work: impl std::future::Future<Output = ()> + Send + 'static) {
    match bridge() {
        Ok(bridge) => {
            bridge.spawn(work);
        }
        Err(e) => tracing::error!("{}", crate::causes::chain(&e)),
    }
}

/// Runs blocking work off the async workers (the blocking pool) on a multi-threaded runtime; on a
/// single-threaded one (the tests', the simulator's) on the caller's thread: that runtime has no
/// other worker to keep free, and a pool thread would make the order of its tasks depend on the
/// host's scheduling.
pub async fn off_workers<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::spawn_blocking(f).await
        }
        _ => Ok(f()),
    }
}

/// Runs blocking work; on a multi-threaded tokio runtime it tells tokio first.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}
