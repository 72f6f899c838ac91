//! Companies (tenants) and their sales.

use crate::store::sql::{params, Connection, OptionalExtension};
pub use protocol::records::{CompanyRecord as Company, Sale};

const SELECT: &str = "SELECT id, name, store_code FROM companies";

fn from_row(r: &crate::store::sql::Row) -> crate::store::sql::Result<Company> {
    Ok(Company { id: r.get(0)?, name: r.get(1)?, store_code: r.get(2)? })
}

pub fn all(conn: &Connection) -> crate::store::sql::Result<Vec<Company>> {
    let mut stmt = conn.prepare(&format!("{SELECT} ORDER BY id"))?;
    let rows = stmt.query_map([], from_row)?;
    rows.collect()
}

pub fn get(conn: &Connection, id: &str) -> crate::store::sql::Result<Option<Company>> {
    conn.query_row(&format!("{SELECT} WHERE id = ?1"), [id], from_row).optional()
}

pub fn rename(conn: &Connection, id: &str, name: &str) -> crate::store::sql::Result<()> {
    conn.execute("UPDATE companies SET name = ?2 WHERE id = ?1", params![id, name]).map(|_| ())
}

/// What still refers to the company: members, devices, databases.
pub fn references(conn: &Connection, id: &str) -> crate::store::sql::Result<i64> {
    let count = |sql: &str| conn.query_row(sql, [id], |r| r.get::<_, i64>(0));
    Ok(count("SELECT COUNT(*) FROM user_companies WHERE company_id = ?1")?
        + count("SELECT COUNT(*) FROM devices WHERE company_id = ?1")?
        + count("SELECT COUNT(*) FROM docdb_databases WHERE company_id = ?1")?)
}

pub fn delete(conn: &Connection, id: &str) -> crate::store::sql::Result<usize> {
    for table in
        ["company_feature_flags", "client_invalidations", "day_databases", "conflict_reviews", "sales", "orders"]
    {
        conn.execute(&format!("DELETE FROM {table} WHERE company_id = ?1"), [id])?;
    }
    conn.execute("DELETE FROM companies WHERE id = ?1", [id])
}

pub fn sale(conn: &Connection, company_id: &str, sale_id: &str) -> crate::store::sql::Result<Option<Sale>> {
    conn.query_row(
        "SELECT id, company_id, amount_cents, payment_reference FROM sales WHERE company_id = ?1 AND id = ?2",
        params![company_id, sale_id],
        |r| Ok(Sale { id: r.get(0)?, company_id: r.get(1)?, amount_cents: r.get(2)?, payment_reference: r.get(3)? }),
    )
    .optional()
}

pub fn set_payment_reference(
    conn: &Connection,
    company_id: &str,
    sale_id: &str,
    reference: &str,
) -> crate::store::sql::Result<usize> {
    conn.execute(
        "UPDATE sales SET payment_reference = ?3 WHERE company_id = ?1 AND id = ?2",
        params![company_id, sale_id, reference],
    )
}
