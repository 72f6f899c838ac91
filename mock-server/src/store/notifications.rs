//! What one replica tells the others through PostgreSQL (`LISTEN`/`NOTIFY`): a tenant
//! invalidated (every replica closes that tenant's sockets), sessions ended (every replica
//! refuses their access tokens and cuts their feeds), the test clock moved (every replica takes
//! the new offset). A notification is sent by the transaction that made the change and is
//! delivered when it commits, in commit order, to every replica listening, the sender included.
//! On SQLite (one process) there is nobody to tell and these are no-ops.

use std::time::Duration;

use tokio_postgres::{AsyncMessage, NoTls};

use super::sql::{Connection, Dialect, Result};

/// The channel of invalidations: payload `company_id <TAB> invalidated_at`.
pub const INVALIDATIONS: &str = "sb_invalidations";
/// The channel of the test clock: payload `version <TAB> offset_ms`.
pub const CLOCK: &str = "sb_clock";
/// The channel of ended sessions: payload `ended_at <TAB> session <TAB> session…`.
pub const SESSIONS_ENDED: &str = "sb_sessions_ended";
/// Sessions named in one notification (PostgreSQL's payload holds 8000 bytes).
const SESSIONS_A_NOTIFICATION: usize = 100;

/// Every ended session with when it ended (revoked refresh tokens are kept a day).
pub const ENDED_SESSIONS: &str =
    "SELECT family_id, MAX(revoked_at) FROM refresh_tokens WHERE revoked_at IS NOT NULL GROUP BY family_id";

/// The shared clock's row: `(version, offset_ms)`, none before the clock was first moved.
pub const SHARED_CLOCK: &str = "SELECT version, offset_ms FROM mock_clock WHERE id = 1";

/// Tells every replica that `company_id` was invalidated at `at` (when the caller commits).
pub fn invalidated(conn: &Connection, company_id: &str, at: i64) -> Result<()> {
    if conn.dialect() == Dialect::Postgres {
        conn.execute_later("SELECT pg_notify(?1, ?2)::text", [INVALIDATIONS, &format!("{company_id}\t{at}")])?;
    }
    Ok(())
}

/// Tells every replica that `sessions` ended at `at` (when the caller commits).
pub fn sessions_ended(conn: &Connection, at: i64, sessions: &[String]) -> Result<()> {
    if conn.dialect() == Dialect::Postgres {
        for some in sessions.chunks(SESSIONS_A_NOTIFICATION) {
            conn.execute_later(
                "SELECT pg_notify(?1, ?2)::text",
                [SESSIONS_ENDED, &format!("{at}\t{}", some.join("\t"))],
            )?;
        }
    }
    Ok(())
}

/// Records the test clock's offset with the data (a restarted server starts on it) and, on
/// PostgreSQL, tells every replica; answers its version (newer versions win, so a replica never
/// goes back to an offset it has seen replaced).
pub fn clock_moved(conn: &Connection, offset_ms: i64) -> Result<i64> {
    let version = conn.query_row(
        "INSERT INTO mock_clock (id, offset_ms, version) VALUES (1, ?1, 1)
         ON CONFLICT (id) DO UPDATE SET offset_ms = ?1, version = mock_clock.version + 1 RETURNING version",
        [offset_ms],
        |r| r.get::<_, i64>(0),
    )?;
    if conn.dialect() == Dialect::Postgres {
        conn.execute_later("SELECT pg_notify(?1, ?2)::text", [CLOCK, &format!("{version}\t{offset_ms}")])?;
    }
    Ok(version)
}

/// A handler of a tenant's invalidation (`company_id`, `invalidated_at`).
pub type OnInvalidated = Box<dyn Fn(&str, i64) + Send + Sync>;
/// A handler of the shared clock (`version`, `offset_ms`).
pub type OnClock = Box<dyn Fn(i64, i64) + Send + Sync>;
/// A handler of an ended session (`session`, `ended_at`).
pub type OnSessionEnded = Box<dyn Fn(&str, i64) + Send + Sync>;

/// What a replica does with what it hears.
pub struct Handlers {
    /// A tenant invalidated at a time (also called for every tenant at each (re)connection, so
    /// an invalidation made while this replica could not hear is not missed: compare and act).
    pub invalidated: OnInvalidated,
    /// The shared clock's `(version, offset_ms)`.
    pub clock: OnClock,
    /// A session ended (also called for every ended session at each (re)connection).
    pub session_ended: OnSessionEnded,
}

/// Listens on a connection of its own (the bridge runtime) for as long as the process lives,
/// reconnecting after a PostgreSQL restart.
pub fn follow(url: String, handlers: Handlers) {
    crate::bridge::spawn(async move {
        loop {
            if let Err(e) = listen(&url, &handlers).await {
                crate::recorded::connection_failed(crate::recorded::Upstream::Postgres);
                crate::recorded::retried(crate::recorded::Upstream::Postgres);
                tracing::warn!("listening for other replicas: {}; reconnecting", crate::causes::chain(&e));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });
}

/// Why the listener reconnects.
#[derive(Debug, thiserror::Error)]
enum ListenError {
    #[error("the store")]
    Store(#[from] tokio_postgres::Error),
    #[error("the store did not answer within {0:?}")]
    Silent(Duration),
}

/// How often a listening connection is asked whether it is alive (and how long it has to say so).
const ALIVE_EVERY: Duration = Duration::from_secs(5);

async fn listen(url: &str, handlers: &Handlers) -> std::result::Result<(), ListenError> {
    let (client, mut connection) = tokio::time::timeout(ALIVE_EVERY, tokio_postgres::connect(url, NoTls))
        .await
        .map_err(|_| ListenError::Silent(ALIVE_EVERY))??;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send((n.channel().to_owned(), n.payload().to_owned())).is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    });
    // The driver ends with the listener, however it ends (a silent connection's would not).
    let _ends = AbortOnDrop(driver.abort_handle());
    client.batch_execute(&format!("LISTEN {INVALIDATIONS}; LISTEN {CLOCK}; LISTEN {SESSIONS_ENDED}")).await?;
    // What happened while this replica was not listening (its start, an outage).
    for row in client.query(SHARED_CLOCK, &[]).await? {
        (handlers.clock)(row.get(0), row.get(1));
    }
    for row in client.query("SELECT company_id, invalidated_at FROM client_invalidations", &[]).await? {
        (handlers.invalidated)(row.get::<_, String>(0).as_str(), row.get(1));
    }
    for row in client.query(ENDED_SESSIONS, &[]).await? {
        (handlers.session_ended)(row.get::<_, String>(0).as_str(), row.get(1));
    }
    // A connection held silent by a partition never fails by itself: it is asked every
    // `ALIVE_EVERY` and given up when it does not answer, so nothing told meanwhile is missed
    // for long (the reconnection reads what happened).
    let mut alive = tokio::time::interval(ALIVE_EVERY);
    loop {
        let (channel, payload) = tokio::select! {
            told = rx.recv() => match told {
                Some(told) => told,
                None => break,
            },
            _ = alive.tick() => {
                tokio::time::timeout(ALIVE_EVERY, client.simple_query("SELECT 1"))
                    .await
                    .map_err(|_| ListenError::Silent(ALIVE_EVERY))??;
                continue;
            }
        };
        let Some((a, b)) = payload.split_once('\t') else { continue };
        match channel.as_str() {
            SESSIONS_ENDED => {
                if let Ok(at) = a.parse() {
                    b.split('\t').for_each(|session| (handlers.session_ended)(session, at));
                }
            }
            INVALIDATIONS => {
                if let Ok(at) = b.parse() {
                    (handlers.invalidated)(a, at);
                }
            }
            CLOCK => {
                if let (Ok(version), Ok(offset)) = (a.parse(), b.parse()) {
                    (handlers.clock)(version, offset);
                }
            }
            _ => {}
        }
    }
    match driver.await {
        Ok(Err(e)) => Err(e.into()),
        _ => Ok(()),
    }
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
