//! The store's PostgreSQL adapter (`DATABASE_URL`): a pool (deadpool) of tokio-postgres
//! connections, each driven by a single-threaded runtime of its own on the thread that waits for
//! it, so the record modules stay the synchronous code they are on SQLite and a round trip wakes
//! no other thread (on a busy 2-core machine each hand-over between threads cost as much as
//! PostgreSQL's own work). Each transaction takes one cluster-wide advisory lock first: every
//! replica's writes are serialised as the embedded store's mutex serialises one process's, so the
//! rules (a lease, a handle count, a spent refresh token) hold across replicas without each being
//! rewritten for concurrent transactions.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::error::Error as StdError;

use deadpool::managed::{Manager, Metrics, Object, Pool, RecycleError, RecycleResult, Timeouts};
use futures_util::FutureExt;
use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use tokio_postgres::{Client, NoTls, Statement};

use super::sql::{Conn, Dialect, Error, Result, Row, Value};
use crate::bridge::{blocking, wait_here};

/// The advisory lock every transaction takes (any number, the same on every replica).
pub const STORE_LOCK: i64 = 0x5e55_10b7;

type BoxError = Box<dyn StdError + Sync + Send>;

/// How long one round trip (a pipeline of statements, the wait for the store's lock among them)
/// may wait for its answer: a connection held silent (a partition, a black hole) would hold its
/// request for ever. Far over what a transaction normally holds the lock for; a request waiting
/// longer behind a stuck one is refused (its device gave up after 15 s anyway).
pub const ROUND_TRIP: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a pooled connection may idle and still be used: under the idle timeouts of what
/// usually stands between (a cloud load balancer's 350 s, PgBouncer's 600 s).
pub const IDLE_MAX: std::time::Duration = std::time::Duration::from_secs(300);

/// The pool of one replica.
#[derive(Clone)]
pub struct PgPool {
    pool: Pool<Connector>,
}

impl PgPool {
    /// (connections in use, requests waiting for one, the pool's bound).
    pub fn usage(&self) -> (usize, usize, usize) {
        let status = self.pool.status();
        (status.size.saturating_sub(status.available), status.waiting, status.max_size)
    }

    /// A pool of at most `size` connections to `url`; nothing is connected until first used.
    pub fn new(url: &str, size: usize) -> Result<PgPool> {
        let config: tokio_postgres::Config =
            url.parse().map_err(|e: tokio_postgres::Error| Error::Postgres(Box::new(e)))?;
        let pool = Pool::builder(Connector { config })
            .max_size(size)
            .runtime(deadpool::Runtime::Tokio1)
            // A store that does not answer fails the request in a few seconds instead of hanging it.
            .wait_timeout(Some(std::time::Duration::from_secs(5)))
            .create_timeout(Some(std::time::Duration::from_secs(3)))
            .build()
            .map_err(|e| Error::Unavailable(Box::new(e)))?;
        Ok(PgPool { pool })
    }

    /// One connection of the pool, in autocommit.
    pub fn session(&self) -> Result<PgConn> {
        // A pooled connection PostgreSQL (or anything between) closed while it idled is let go
        // and another taken: each may be dead (a restart closes them all), then a new one is made.
        for _ in 0..=self.pool.status().max_size {
            if let Some(client) = alive(self.checkout()?) {
                return Ok(PgConn::new(client));
            }
        }
        Err(Error::Unavailable("every pooled connection was closed".into()))
    }

    fn checkout(&self) -> Result<Object<Connector>> {
        // An idle connection is taken here, its future ready at once (no timer, nothing to
        // await); waiting for one, or making one, is waited for on this thread too.
        if self.pool.status().available > 0 {
            if let Some(Ok(client)) = self.pool.timeout_get(&Timeouts::new()).now_or_never() {
                return Ok(client);
            }
        }
        let pool = self.pool.clone();
        wait_here(async move { pool.get().await })
            .map_err(|e| Error::Unavailable(Box::new(e)))?
            .map_err(|e| Error::Unavailable(Box::new(e)))
    }

    /// One connection in a transaction that holds the store's lock until it ends: alone
    /// (`shared` false, the rules' transactions) or beside other shared holders (`shared` true,
    /// the session routes', which lock what they touch by key, [`super::sql::lock_key`]).
    pub fn begin(&self, shared: bool) -> Result<PgConn> {
        let conn = self.session()?;
        let lock = if shared { "pg_advisory_xact_lock_shared" } else { "pg_advisory_xact_lock" };
        conn.open.set(true);
        // Sent with the transaction's first statement, as prepared statements (parsed once a
        // connection, not a text batch parsed each time).
        conn.later(Step::Run("BEGIN".into(), Vec::new()))?;
        conn.later(Step::Run(format!("SELECT {lock}({STORE_LOCK})::text"), Vec::new()))?;
        Ok(conn)
    }
}

/// `client`, unless its connection was closed while it idled. Its runtime runs only while a
/// statement is waited for, so a close PostgreSQL (or a relay) sent meanwhile is still unread:
/// the connection's task is let read it first, without a round trip. Let go when closed.
fn alive(mut client: Object<Connector>) -> Option<Object<Connector>> {
    client.run(|_, _| {
        Box::pin(async {
            // The driver is polled before a yielded task runs again; twice, so the connection's
            // task, woken by it, runs before this ends.
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
        })
    });
    if client.client.is_closed() {
        crate::recorded::connection_failed(crate::recorded::Upstream::Postgres);
        drop(Object::take(client));
        return None;
    }
    Some(client)
}

/// Makes the pool's connections: each with its runtime, its connection task spawned there.
struct Connector {
    config: tokio_postgres::Config,
}

/// A connection and the runtime that drives it, with the statements it has prepared.
struct Driven {
    runtime: Option<tokio::runtime::Runtime>,
    client: Client,
    prepared: HashMap<String, Statement>,
}

impl Driven {
    /// Runs `work` on this connection's runtime, on the calling thread.
    fn run<T: Send>(
        &mut self,
        work: impl for<'a> FnOnce(
            &'a Client,
            &'a mut HashMap<String, Statement>,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>,
    ) -> T {
        let runtime = self.runtime.as_ref().expect("a connection's runtime lives as long as it");
        let future = work(&self.client, &mut self.prepared);
        match tokio::runtime::Handle::try_current() {
            // A single-threaded runtime's only thread cannot start another runtime: a helper
            // thread waits instead (tests; the server's runtime is multi-threaded).
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread => {
                std::thread::scope(|s| s.spawn(|| runtime.block_on(future)).join())
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }
            _ => blocking(|| runtime.block_on(future)),
        }
    }
}

/// A runtime is dropped without waiting (the pool may let a connection go inside async code,
/// where a blocking drop is refused); its connection task ends with it and PostgreSQL sees the
/// socket close.
impl Drop for Driven {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Manager for Connector {
    type Type = Driven;
    type Error = Error;

    async fn create(&self) -> Result<Driven> {
        // Connected from a thread of its own: the socket belongs to the new runtime's reactor,
        // and no runtime may be started inside the pool's.
        let config = self.config.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let made = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::Unavailable(Box::new(e)))
                .and_then(|runtime| match runtime.block_on(config.connect(NoTls)) {
                    Ok((client, connection)) => {
                        runtime.spawn(connection);
                        Ok(Driven { runtime: Some(runtime), client, prepared: HashMap::new() })
                    }
                    Err(e) => {
                        runtime.shutdown_background();
                        crate::recorded::connection_failed(crate::recorded::Upstream::Postgres);
                        Err(Error::Unavailable(Box::new(e)))
                    }
                });
            let _ = tx.send(made);
        });
        rx.await.map_err(|e| Error::Unavailable(Box::new(e)))?
    }

    async fn recycle(&self, driven: &mut Driven, metrics: &Metrics) -> RecycleResult<Error> {
        if driven.client.is_closed() {
            return Err(RecycleError::message("the connection is closed"));
        }
        // A pooler or balancer between may have forgotten a connection idle this long without
        // a word: its next statement would fail though PostgreSQL is up. A new one is made.
        if metrics.last_used() > IDLE_MAX {
            return Err(RecycleError::message("the connection idled too long"));
        }
        Ok(())
    }
}

/// One pooled connection, lent to the synchronous record modules.
pub struct PgConn {
    /// `None` only once let go of ([`Drop`]).
    client: RefCell<Option<Object<Connector>>>,
    /// A transaction begun and not yet ended ([`PgConn::end`]).
    open: Cell<bool>,
    /// Statements of the open transaction not sent yet ([`Conn::run_later`]): they go in order
    /// with the next one, in one round trip.
    pending: RefCell<Vec<Step>>,
}

/// One statement to send.
enum Step {
    Run(String, Vec<Value>),
    Fetch(String, Vec<Value>),
    Batch(String),
}

/// What a step answers.
enum Answer {
    Count(usize),
    Rows(Vec<Row>),
    Done,
}

/// A connection dropped inside its transaction (a panic in the caller, a failed `COMMIT`) is not
/// handed back to the pool: it would carry the open transaction, and the store's advisory lock
/// with it, to its next user and stall every replica. It is closed instead, which makes
/// PostgreSQL roll the transaction back and release the lock.
impl Drop for PgConn {
    fn drop(&mut self) {
        if self.open.get() {
            if let Some(client) = self.client.get_mut().take() {
                drop(Object::take(client));
            }
        }
    }
}

impl PgConn {
    fn new(client: Object<Connector>) -> PgConn {
        PgConn { client: RefCell::new(Some(client)), open: Cell::new(false), pending: RefCell::new(Vec::new()) }
    }

    /// Ends the transaction `begin` opened (`COMMIT`, with the writes still pending, or
    /// `ROLLBACK`, which drops them unsent).
    pub fn end(&self, how: &str) -> Result<()> {
        if how != "COMMIT" {
            self.pending.borrow_mut().clear();
        }
        self.run(how, &[])?;
        self.open.set(false);
        Ok(())
    }

    /// Sends the pending steps and `last` in one pipeline on the bridge; answers `last`'s
    /// answer, or the first failure in order (a failed step aborts the transaction, so the
    /// steps after it fail too, for its reason).
    fn send(&self, last: Step) -> Result<Answer> {
        let mut steps = std::mem::take(&mut *self.pending.borrow_mut());
        steps.push(last);
        let mut client = self.client.borrow_mut();
        let driven = client
            .as_mut()
            .ok_or_else(|| Error::Unavailable("the connection was lost by an earlier statement".into()))?;
        let answered = driven.run(|client, prepared| {
            Box::pin(async move { tokio::time::timeout(ROUND_TRIP, pipeline(client, prepared, steps)).await })
        });
        answered.unwrap_or_else(|_| {
            // Held open and silent (a partition): let go, never handed to another request.
            // What it carried is unknown to this side; PostgreSQL rolls back an open
            // transaction when it sees the session end.
            if let Some(lost) = client.take() {
                drop(Object::take(lost));
            }
            crate::recorded::connection_failed(crate::recorded::Upstream::Postgres);
            Err(Error::Unavailable(format!("PostgreSQL did not answer within {ROUND_TRIP:?}").into()))
        })
    }

    /// Queues `step` inside a transaction; outside one it is sent now.
    fn later(&self, step: Step) -> Result<()> {
        if self.open.get() {
            self.pending.borrow_mut().push(step);
            Ok(())
        } else {
            self.send(step).map(|_| ())
        }
    }
}

/// The steps pipelined: each prepared first, in order (a cached statement costs no round trip),
/// then all sent at once. tokio-postgres sends a request when its future is first polled, and
/// `join_all` polls them in order, so PostgreSQL runs them in the order given.
fn refs(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

async fn pipeline(client: &Client, cache: &mut HashMap<String, Statement>, steps: Vec<Step>) -> Result<Answer> {
    let mut prepared = Vec::with_capacity(steps.len());
    for step in &steps {
        prepared.push(match step {
            Step::Run(sql, _) | Step::Fetch(sql, _) => Some(match cache.get(sql) {
                Some(statement) => statement.clone(),
                None => {
                    let statement = client.prepare(sql).await.map_err(classify)?;
                    cache.insert(sql.clone(), statement.clone());
                    statement
                }
            }),
            Step::Batch(_) => None,
        });
    }
    let steps = &steps;
    let answers = futures_util::future::join_all(steps.iter().zip(&prepared).map(|(step, statement)| async move {
        match (step, statement) {
            (Step::Run(_, params), Some(statement)) => {
                Ok(Answer::Count(client.execute(statement, &refs(params)).await.map_err(classify)? as usize))
            }
            (Step::Fetch(_, params), Some(statement)) => {
                let rows = client.query(statement, &refs(params)).await.map_err(classify)?;
                let rows = rows
                    .iter()
                    .map(|r| {
                        (0..r.len())
                            .map(|i| r.try_get::<_, Value>(i).map_err(classify))
                            .collect::<Result<Vec<_>>>()
                            .map(Row)
                    })
                    .collect::<Result<_>>()?;
                Ok(Answer::Rows(rows))
            }
            (Step::Batch(sql), _) => client.batch_execute(sql).await.map(|_| Answer::Done).map_err(classify),
            (_, None) => Err(Error::Postgres("a statement was not prepared".into())),
        }
    }))
    .await;
    let mut last = Answer::Done;
    for answer in answers {
        last = answer?;
    }
    Ok(last)
}

/// A statement with SQLite's `?N` placeholders numbered PostgreSQL's way (`$N`); quoted text is
/// left alone.
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted && chars.peek().is_some_and(char::is_ascii_digit) => out.push('$'),
            _ => out.push(c),
        }
    }
    out
}

/// A failure of PostgreSQL: the server gone (the connection closed or failing, SQLSTATE class 08,
/// an administrator's shutdown 57P) is [`Error::Unavailable`]; anything else (a refused
/// statement, a value that does not convert) is the statement's own failure.
fn classify(e: tokio_postgres::Error) -> Error {
    let io = StdError::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    let gone =
        e.is_closed() || io || e.code().is_some_and(|c| c.code().starts_with("08") || c.code().starts_with("57P"));
    if gone {
        crate::recorded::connection_failed(crate::recorded::Upstream::Postgres);
        Error::Unavailable(Box::new(e))
    } else {
        Error::Postgres(Box::new(e))
    }
}

impl Conn for PgConn {
    fn run(&self, sql: &str, params: &[Value]) -> Result<usize> {
        match self.send(Step::Run(numbered(sql), params.to_vec()))? {
            Answer::Count(n) => Ok(n),
            _ => Ok(0),
        }
    }

    fn fetch(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        match self.send(Step::Fetch(numbered(sql), params.to_vec()))? {
            Answer::Rows(rows) => Ok(rows),
            _ => Ok(Vec::new()),
        }
    }

    fn batch(&self, sql: &str) -> Result<()> {
        self.send(Step::Batch(sql.to_owned())).map(|_| ())
    }

    fn run_later(&self, sql: &str, params: &[Value]) -> Result<()> {
        self.later(Step::Run(numbered(sql), params.to_vec()))
    }

    fn batch_later(&self, sql: &str) -> Result<()> {
        self.later(Step::Batch(sql.to_owned()))
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }
}

impl ToSql for Value {
    /// Each value as the column's type: the store's integers go into `integer`, `bigint` or
    /// `boolean` columns alike, as SQLite takes them.
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> std::result::Result<IsNull, BoxError> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(i) => match *ty {
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT8 => i.to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                Type::FLOAT4 => (*i as f32).to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                _ => i.to_string().as_str().to_sql(ty, out),
            },
            Value::Real(f) => match *ty {
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                Type::FLOAT8 => f.to_sql(ty, out),
                _ => f.to_string().as_str().to_sql(ty, out),
            },
            Value::Text(s) => match *ty {
                Type::INT2 => s.parse::<i16>()?.to_sql(ty, out),
                Type::INT4 => s.parse::<i32>()?.to_sql(ty, out),
                Type::INT8 => s.parse::<i64>()?.to_sql(ty, out),
                _ => s.as_str().to_sql(ty, out),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Value {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> std::result::Result<Value, BoxError> {
        Ok(match *ty {
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::OID => Value::Int(u32::from_sql(ty, raw)?.into()),
            Type::BOOL => Value::Int(bool::from_sql(ty, raw)?.into()),
            Type::FLOAT4 => Value::Real(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::NUMERIC => numeric(raw)?,
            _ => Value::Text(String::from_utf8(raw.to_vec())?),
        })
    }

    fn from_sql_null(_: &Type) -> std::result::Result<Value, BoxError> {
        Ok(Value::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// PostgreSQL's binary `numeric` (what `SUM` of a `bigint` answers): base-10000 digits with a
/// weight; an integral value comes back as an integer, any other as a float.
fn numeric(raw: &[u8]) -> std::result::Result<Value, BoxError> {
    let word = |i: usize| -> std::result::Result<i16, BoxError> {
        Ok(i16::from_be_bytes(raw.get(i..i + 2).ok_or("a short numeric")?.try_into()?))
    };
    let (ndigits, weight, sign) = (word(0)? as usize, word(2)? as i32, word(4)? as u16);
    if sign == 0xC000 {
        return Ok(Value::Real(f64::NAN));
    }
    let mut value = 0f64;
    for i in 0..ndigits {
        value += f64::from(word(8 + 2 * i)?) * 10000f64.powi(weight - i as i32);
    }
    if sign == 0x4000 {
        value = -value;
    }
    Ok(if value.fract() == 0.0 && value.abs() < 9.0e15 { Value::Int(value as i64) } else { Value::Real(value) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_outside_quotes() {
        assert_eq!(numbered("SELECT ?1, '?2', ?12 WHERE a = ?3"), "SELECT $1, '?2', $12 WHERE a = $3");
        assert_eq!(numbered("SELECT 'it''s ?1', ?1"), "SELECT 'it''s ?1', $1");
    }
}
