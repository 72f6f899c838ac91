//! The store's port: the few things the record modules ask of a SQL database (run a statement,
//! read rows, run a batch), over plain values, so that one text of each statement serves every
//! adapter. SQLite (rusqlite, the embedded default) is one adapter; PostgreSQL (`DATABASE_URL`,
//! `on_postgres.rs`'s pool) the other. Statements are written with SQLite's `?N` placeholders and
//! the dialect both share; PostgreSQL's adapter numbers them `$N`. Where the dialects differ (a
//! catalogue query, say) the caller asks [`Connection::dialect`].
//!
//! The shape follows rusqlite's (`execute`, `query_row`, `prepare(..).query_map`, `optional()`),
//! which the record modules were written against, so the port cost them an import, not a rewrite.

/// Which SQL the connection speaks, for the few statements that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// One SQL value, as both adapters carry it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

/// A store failure, with its cause.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `query_row` found no row (`optional()` turns it into `None`).
    #[error("the query returned no rows")]
    NoRows,
    /// A column holds another type than the reader asked for.
    #[error("column {column}: expected {expected}, found {found:?}")]
    Type { column: usize, expected: &'static str, found: Value },
    #[error("column {0} is not in the row")]
    NoColumn(usize),
    /// A column's text that does not read as what it stores (JSON, a status name).
    #[error("column {column} does not read back")]
    Decode { column: usize, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("SQLite")]
    Sqlite(#[from] rusqlite::Error),
    #[error("PostgreSQL")]
    Postgres(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The connection to PostgreSQL could not be had (the pool, or the server down).
    #[error("the PostgreSQL store is unavailable")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// Whether the store could not be reached (as opposed to refusing a statement).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable(_))
    }
}

crate::equal_when_told!(Error);

pub type Result<T> = std::result::Result<T, Error>;

/// A connection (or a transaction on one): what every record module takes as `&Connection`.
pub trait Conn {
    /// Runs one statement; answers the rows it changed.
    fn run(&self, sql: &str, params: &[Value]) -> Result<usize>;
    /// Runs one query; answers its rows.
    fn fetch(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>>;
    /// Runs statements separated by `;`, without parameters.
    fn batch(&self, sql: &str) -> Result<()>;
    /// Runs a statement whose answer the caller does not need. Inside a transaction an adapter
    /// may send it with the next statement (one round trip for both), so its failure may be
    /// answered there instead: the transaction fails either way.
    fn run_later(&self, sql: &str, params: &[Value]) -> Result<()> {
        self.run(sql, params).map(|_| ())
    }
    /// [`Conn::batch`], sent as [`Conn::run_later`] sends.
    fn batch_later(&self, sql: &str) -> Result<()> {
        self.batch(sql)
    }
    fn dialect(&self) -> Dialect;
}

/// What the record modules name: any adapter's connection (`&Connection` in a signature).
pub type Connection<'a> = dyn Conn + 'a;

/// A holder of a connection (the store's lock, a document cluster) is one itself, so it passes
/// where `&Connection` is asked for.
#[macro_export]
macro_rules! holds_a_connection {
    ($t:ty) => {
        impl $crate::store::sql::Conn for $t {
            fn run(&self, sql: &str, params: &[$crate::store::sql::Value]) -> $crate::store::sql::Result<usize> {
                (**self).run(sql, params)
            }

            fn fetch(
                &self,
                sql: &str,
                params: &[$crate::store::sql::Value],
            ) -> $crate::store::sql::Result<Vec<$crate::store::sql::Row>> {
                (**self).fetch(sql, params)
            }

            fn batch(&self, sql: &str) -> $crate::store::sql::Result<()> {
                (**self).batch(sql)
            }

            fn run_later(&self, sql: &str, params: &[$crate::store::sql::Value]) -> $crate::store::sql::Result<()> {
                (**self).run_later(sql, params)
            }

            fn batch_later(&self, sql: &str) -> $crate::store::sql::Result<()> {
                (**self).batch_later(sql)
            }

            fn dialect(&self) -> $crate::store::sql::Dialect {
                (**self).dialect()
            }
        }
    };
}

/// One row, its values in column order.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Value>);

impl Row {
    /// The value of column `i`, as `T` (rusqlite's `get`, whose turbofish `get::<_, T>` it keeps).
    pub fn get<I: RowIndex, T: FromValue>(&self, i: I) -> Result<T> {
        let i = i.index();
        let v = self.0.get(i).ok_or(Error::NoColumn(i))?;
        T::from_value(v).ok_or_else(|| Error::Type {
            column: i,
            expected: std::any::type_name::<T>(),
            found: v.clone(),
        })
    }

    /// Column `i`'s text read as a name by `parse` (an enum's wire name); a name `parse` does not
    /// know is a decode error naming `what`, never guessed.
    pub fn get_named<T>(&self, i: usize, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T> {
        let raw: String = self.get(i)?;
        parse(&raw).ok_or_else(|| Error::Decode { column: i, source: format!("unknown {what} {raw:?}").into() })
    }
}

/// A column's position (rusqlite's name for it; only positions are used here).
pub trait RowIndex {
    fn index(self) -> usize;
}

impl RowIndex for usize {
    fn index(self) -> usize {
        self
    }
}

impl dyn Conn + '_ {
    pub fn execute<P: Params>(&self, sql: &str, params: P) -> Result<usize> {
        self.run(sql, &params.values())
    }

    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        self.batch(sql)
    }

    /// [`Conn::run_later`]: a write whose count nobody reads.
    pub fn execute_later<P: Params>(&self, sql: &str, params: P) -> Result<()> {
        self.run_later(sql, &params.values())
    }

    /// The first row through `f`; [`Error::NoRows`] when there is none.
    pub fn query_row<T, P: Params>(&self, sql: &str, params: P, f: impl FnOnce(&Row) -> Result<T>) -> Result<T> {
        let rows = self.fetch(sql, &params.values())?;
        f(rows.first().ok_or(Error::NoRows)?)
    }

    /// A statement to run with [`Statement::query_map`] (a name kept from rusqlite: nothing is
    /// prepared ahead; the adapters cache their prepared statements themselves).
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>> {
        Ok(Statement { conn: self, sql: sql.to_owned() })
    }

    /// Every row through `f`.
    pub fn query_map<T, P: Params>(&self, sql: &str, params: P, f: impl FnMut(&Row) -> Result<T>) -> Result<Vec<T>> {
        self.fetch(sql, &params.values())?.iter().map(f).collect()
    }
}

/// `?1, ?2, …, ?n`: the placeholders of an `IN (…)` list.
pub fn in_list(n: usize) -> String {
    (1..=n).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ")
}

/// Holds `key` until the transaction ends: two shared transactions (`Store::shared_transaction`)
/// on the same key run one after the other. On SQLite every transaction is alone already.
pub fn lock_key(conn: &Connection, key: &str) -> Result<()> {
    lock_keys_where(conn, "?1", "", [key])
}

/// [`lock_key`] for the keys an SQL expression `key` names over the rows of `from` (`FROM …
/// WHERE …`): read and locked in one statement, sent with the next.
pub fn lock_keys_where<P: Params>(conn: &Connection, key: &str, from: &str, params: P) -> Result<()> {
    if conn.dialect() == Dialect::Postgres {
        conn.execute_later(&format!("SELECT pg_advisory_xact_lock(1, hashtext({key}))::text {from}"), params)?;
    }
    Ok(())
}

/// A statement of [`Connection::prepare`].
pub struct Statement<'s> {
    conn: &'s Connection<'s>,
    sql: String,
}

impl Statement<'_> {
    /// Every row through `f`, each as a `Result` (rusqlite's shape: collect them).
    pub fn query_map<T, P: Params>(
        &mut self,
        params: P,
        f: impl FnMut(&Row) -> Result<T>,
    ) -> Result<std::vec::IntoIter<Result<T>>> {
        Ok(self.conn.fetch(&self.sql, &params.values())?.iter().map(f).collect::<Vec<_>>().into_iter())
    }

    pub fn query_row<T, P: Params>(&mut self, params: P, f: impl FnOnce(&Row) -> Result<T>) -> Result<T> {
        self.conn.query_row(&self.sql, params, f)
    }
}

/// `optional()`: no row is `None`, not an error.
pub trait OptionalExtension<T> {
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(Error::NoRows) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A statement's parameters: `[]`, `[a]`, `[a, b]` of one type, or `params![…]` of any.
pub trait Params {
    fn values(self) -> Vec<Value>;
}

impl Params for [&dyn ToValue; 0] {
    fn values(self) -> Vec<Value> {
        Vec::new()
    }
}

impl Params for &[&dyn ToValue] {
    fn values(self) -> Vec<Value> {
        self.iter().map(|v| v.to_value()).collect()
    }
}

macro_rules! array_params {
    ($($n:literal)+) => {$(
        impl<T: ToValue> Params for [T; $n] {
            fn values(self) -> Vec<Value> {
                self.iter().map(ToValue::to_value).collect()
            }
        }
    )+};
}
array_params!(1 2 3 4 5 6 7 8);

/// `params![a, b, …]`: parameters of different types.
#[macro_export]
macro_rules! sql_params {
    () => { &[] as &[&dyn $crate::store::sql::ToValue] };
    ($($v:expr),+ $(,)?) => { &[$(&$v as &dyn $crate::store::sql::ToValue),+] as &[&dyn $crate::store::sql::ToValue] };
}
pub use crate::sql_params as params;

/// A Rust value as a SQL value.
pub trait ToValue {
    fn to_value(&self) -> Value;
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_owned())
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Int(*self as i64)
    }
}

impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::Real(*self)
    }
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

macro_rules! int_values {
    ($($t:ty)+) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                // Saturating: no count or time the store keeps comes near i64::MAX.
                Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
            }
        }
        impl FromValue for $t {
            fn from_value(v: &Value) -> Option<Self> {
                match v {
                    Value::Int(i) => <$t>::try_from(*i).ok(),
                    _ => None,
                }
            }
        }
    )+};
}
int_values!(i64 i32 u32 u64 usize u16 u8);

/// A SQL value as a Rust value; `None` when it is of another type.
pub trait FromValue: Sized {
    fn from_value(v: &Value) -> Option<Self>;
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
}

impl FromValue for String {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl FromValue for bool {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i != 0),
            _ => None,
        }
    }
}

impl FromValue for f64 {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Real(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl FromValue for Value {
    fn from_value(v: &Value) -> Option<Self> {
        Some(v.clone())
    }
}

// ----- the SQLite adapter ----------------------------------------------------------------------

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(*i),
            Value::Real(f) => ValueRef::Real(*f),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

fn sqlite_rows(conn: &rusqlite::Connection, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let width = stmt.column_count();
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(width);
        for i in 0..width {
            use rusqlite::types::ValueRef;
            values.push(match row.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(i) => Value::Int(i),
                ValueRef::Real(f) => Value::Real(f),
                ValueRef::Text(t) | ValueRef::Blob(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
            });
        }
        out.push(Row(values));
    }
    Ok(out)
}

impl Conn for rusqlite::Connection {
    fn run(&self, sql: &str, params: &[Value]) -> Result<usize> {
        Ok(self.prepare_cached(sql)?.execute(rusqlite::params_from_iter(params))?)
    }

    fn fetch(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        sqlite_rows(self, sql, params)
    }

    fn batch(&self, sql: &str) -> Result<()> {
        Ok(self.execute_batch(sql)?)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_go_in_and_come_back_as_they_were() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let conn: &Connection = &c;
        conn.execute_batch("CREATE TABLE t (a INTEGER, b TEXT, c REAL)").unwrap();
        conn.execute("INSERT INTO t VALUES (?1, ?2, ?3)", params![7i64, "x", 1.5f64]).unwrap();
        conn.execute("INSERT INTO t VALUES (?1, ?2, NULL)", params![None::<i64>, Some("y")]).unwrap();
        let rows: Vec<(Option<i64>, String)> = conn
            .prepare("SELECT a, b FROM t ORDER BY b")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(rows, [(Some(7), "x".to_owned()), (None, "y".to_owned())]);
        assert_eq!(conn.query_row("SELECT c FROM t WHERE a = ?1", [7], |r| r.get::<_, f64>(0)).unwrap(), 1.5);
        assert_eq!(
            conn.query_row("SELECT a FROM t WHERE a = 99", [], |r| r.get::<_, i64>(0)).optional().unwrap(),
            None
        );
        assert!(matches!(
            conn.query_row("SELECT b FROM t", [], |r| r.get::<_, i64>(0)),
            Err(Error::Type { column: 0, .. })
        ));
    }
}
