//! Companies (tenants) and their sales.

use super::{exec, query_row};
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Company {
    pub id: String,
    pub name: String,
    pub store_code: String,
}

const SELECT: &str = "SELECT id, name, store_code FROM companies";

fn from_row(r: &rusqlite::Row) -> rusqlite::Result<Company> {
    Ok(Company { id: r.get(0)?, name: r.get(1)?, store_code: r.get(2)? })
}

pub fn all(conn: &Connection) -> rusqlite::Result<Vec<Company>> {
    let mut stmt = conn.prepare(&format!("{SELECT} ORDER BY id"))?;
    let rows = stmt.query_map([], from_row)?;
    rows.collect()
}

pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<Company>> {
    query_row(conn, &format!("{SELECT} WHERE id = ?1"), [id], from_row).optional()
}

pub fn rename(conn: &Connection, id: &str, name: &str) -> rusqlite::Result<()> {
    exec(conn, "UPDATE companies SET name = ?2 WHERE id = ?1", params![id, name]).map(|_| ())
}

/// What still refers to the company: members, devices, databases.
pub fn references(conn: &Connection, id: &str) -> rusqlite::Result<i64> {
    let count = |sql: &str| query_row(conn, sql, [id], |r| r.get::<_, i64>(0));
    Ok(count("SELECT COUNT(*) FROM user_companies WHERE company_id = ?1")?
        + count("SELECT COUNT(*) FROM devices WHERE company_id = ?1")?
        + count("SELECT COUNT(*) FROM docdb_databases WHERE company_id = ?1")?)
}

pub fn delete(conn: &Connection, id: &str) -> rusqlite::Result<usize> {
    for table in ["company_feature_flags", "client_invalidations", "day_databases", "conflict_reviews", "sales", "orders"] {
        exec(conn, &format!("DELETE FROM {table} WHERE company_id = ?1"), [id])?;
    }
    exec(conn, "DELETE FROM companies WHERE id = ?1", [id])
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sale {
    pub id: String,
    pub company_id: String,
    pub amount_cents: i64,
    pub payment_reference: Option<String>,
}

pub fn sale(conn: &Connection, company_id: &str, sale_id: &str) -> rusqlite::Result<Option<Sale>> {
    query_row(conn, "SELECT id, company_id, amount_cents, payment_reference FROM sales WHERE company_id = ?1 AND id = ?2", params![company_id, sale_id], |r| {
        Ok(Sale { id: r.get(0)?, company_id: r.get(1)?, amount_cents: r.get(2)?, payment_reference: r.get(3)? })
    })
    .optional()
}

pub fn set_payment_reference(conn: &Connection, company_id: &str, sale_id: &str, reference: &str) -> rusqlite::Result<usize> {
    exec(conn, "UPDATE sales SET payment_reference = ?3 WHERE company_id = ?1 AND id = ?2", params![company_id, sale_id, reference])
}
