//! The relational archive: a day database's orders and sales as rows of `orders` and `sales`
//! (after a drop, "orders and sales are complete from the relational store"). A
//! row's id is `{source_db}:{document id}`, so an archive run again, or resumed after a crash,
//! updates the rows it wrote instead of doubling them. Where each row came from (the database
//! and the revision copied) is kept in a table of the server's own, `docdb_archived_rows`: the
//! application's `orders` and `sales` keep exactly the columns they always had.

use crate::store::sql::{params, Connection, OptionalExtension};

/// Which table: the document type it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Orders,
    Sales,
}

impl Table {
    pub const ALL: [Table; 2] = [Table::Orders, Table::Sales];

    /// The document `type` whose documents land in this table.
    pub fn doc_type(self) -> &'static str {
        match self {
            Table::Orders => "order",
            Table::Sales => "sale",
        }
    }

    /// Its table's name (also the `kind` of its rows in `docdb_archived_rows`).
    fn name(self) -> &'static str {
        match self {
            Table::Orders => "orders",
            Table::Sales => "sales",
        }
    }
}

/// An order document, as the table keeps it.
pub struct OrderRow<'a> {
    pub doc_id: &'a str,
    pub rev: &'a str,
    pub status: &'a str,
    pub total_cents: i64,
    pub created_at: i64,
}

/// A sale document, as the table keeps it (`order_doc_id`: the order it pays, by document id).
pub struct SaleRow<'a> {
    pub doc_id: &'a str,
    pub rev: &'a str,
    pub order_doc_id: Option<&'a str>,
    pub amount_cents: i64,
    pub created_at: i64,
}

pub fn row_id(source_db: &str, doc_id: &str) -> String {
    format!("{source_db}:{doc_id}")
}

/// Records where the row `id` of `table` came from.
fn source(conn: &Connection, table: Table, id: &str, source_db: &str, rev: &str) -> crate::store::sql::Result<()> {
    conn.execute(
        "INSERT INTO docdb_archived_rows (id, kind, source_db, source_rev) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(id) DO UPDATE SET source_rev = excluded.source_rev",
        params![id, table.name(), source_db, rev],
    )
    .map(drop)
}

pub fn put_order(
    conn: &Connection,
    company_id: &str,
    source_db: &str,
    row: &OrderRow,
) -> crate::store::sql::Result<()> {
    let id = row_id(source_db, row.doc_id);
    conn.execute(
        "INSERT INTO orders (id, company_id, status, total_cents, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(id) DO UPDATE SET status = excluded.status, total_cents = excluded.total_cents",
        params![id, company_id, row.status, row.total_cents, row.created_at],
    )?;
    source(conn, Table::Orders, &id, source_db, row.rev)
}

/// A sale's `order_id` names the order's row when that order was archived from the same day
/// (orders are written first); a sale of an order kept elsewhere keeps none.
pub fn put_sale(conn: &Connection, company_id: &str, source_db: &str, row: &SaleRow) -> crate::store::sql::Result<()> {
    let order_id = match row.order_doc_id {
        Some(order) => conn
            .query_row("SELECT id FROM orders WHERE id = ?1", [row_id(source_db, order)], |r| r.get::<_, String>(0))
            .optional()?,
        None => None,
    };
    let id = row_id(source_db, row.doc_id);
    conn.execute(
        "INSERT INTO sales (id, company_id, order_id, amount_cents, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(id) DO UPDATE SET order_id = excluded.order_id, amount_cents = excluded.amount_cents",
        params![id, company_id, order_id, row.amount_cents, row.created_at],
    )?;
    source(conn, Table::Sales, &id, source_db, row.rev)
}

/// `(document id, revision)` of every row archived from `source_db`, by id.
pub fn revisions(conn: &Connection, table: Table, source_db: &str) -> crate::store::sql::Result<Vec<(String, String)>> {
    // A row counts only while it is in its table (the source record alone proves nothing).
    let sql = format!("SELECT a.id, a.source_rev FROM docdb_archived_rows a JOIN {0} t ON t.id = a.id WHERE a.kind = '{0}' AND a.source_db = ?1 ORDER BY a.id", table.name());
    let prefix = row_id(source_db, "");
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map([source_db], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    rows.map(|r| r.map(|(id, rev)| (id.strip_prefix(&prefix).unwrap_or(&id).to_owned(), rev))).collect()
}

/// Every row the archive took from `source_db`, as its source record keeps it (the record outlives
/// the row): `(document id, revision, whether the row is still in its table)`. What the relational
/// archive must hold, whatever has happened to the rows since.
pub fn recorded(conn: &Connection, source_db: &str) -> crate::store::sql::Result<Vec<(String, String, bool)>> {
    let mut stmt = conn.prepare(
        "SELECT a.id, a.source_rev, CASE WHEN o.id IS NOT NULL OR s.id IS NOT NULL THEN 1 ELSE 0 END FROM docdb_archived_rows a
         LEFT JOIN orders o ON a.kind = 'orders' AND o.id = a.id LEFT JOIN sales s ON a.kind = 'sales' AND s.id = a.id
         WHERE a.source_db = ?1 ORDER BY a.id",
    )?;
    let prefix = row_id(source_db, "");
    let rows = stmt
        .query_map([source_db], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)? != 0)))?;
    rows.map(|r| r.map(|(id, rev, present)| (id.strip_prefix(&prefix).unwrap_or(&id).to_owned(), rev, present)))
        .collect()
}

/// How many rows of each table came from `source_db`: `(orders, sales)`.
pub fn counts(conn: &Connection, source_db: &str) -> crate::store::sql::Result<(u64, u64)> {
    conn.query_row(
        "SELECT (SELECT COUNT(*) FROM docdb_archived_rows a JOIN orders t ON t.id = a.id WHERE a.kind = 'orders' AND a.source_db = ?1),
                (SELECT COUNT(*) FROM docdb_archived_rows a JOIN sales t ON t.id = a.id WHERE a.kind = 'sales' AND a.source_db = ?1)",
        [source_db],
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
    )
}
