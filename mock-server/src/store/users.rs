//! Users, their companies and their active company.

use crate::store::sql::{params, Connection, Row, ToValue};

/// A user as stored: what the routes show of it, and its password hash, which they never do.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub record: protocol::records::User,
    pub password_hash: String,
}

impl std::ops::Deref for User {
    type Target = protocol::records::User;
    fn deref(&self) -> &Self::Target {
        &self.record
    }
}

/// A user's columns ([`from_rows`] reads them), from `users u` joined [`COMPANIES`].
pub(crate) const COLUMNS: &str =
    "u.id, u.username, u.password_hash, u.roles, COALESCE(u.active_company_id, u.company_id), c.company_id";
/// A user's row once for each company (`LEFT JOIN`: a user of none too). Written after `users u`,
/// never nested in parentheses: SQLite would materialise the whole nested join for each lookup.
pub(crate) const COMPANIES: &str = "LEFT JOIN user_companies c ON c.user_id = u.id";

/// Users from their rows (each user's rows together, companies in order), in the rows' order;
/// [`COLUMNS`] start at column `at`, and a row without a user (an outer join's) is skipped.
pub(crate) fn from_rows(rows: &[Row], at: usize) -> crate::store::sql::Result<Vec<User>> {
    let mut users: Vec<User> = Vec::new();
    for row in rows {
        let Some(id) = row.get::<_, Option<String>>(at)? else { continue };
        let company: Option<String> = row.get(at + 5)?;
        if users.last().is_none_or(|u| u.id != id) {
            let roles: String = row.get(at + 3)?;
            let record = protocol::records::User {
                username: row.get(at + 1)?,
                // Corrupt roles are an error, not "no roles": a row that does not read back is reported.
                roles: serde_json::from_str(&roles)
                    .map_err(|e| crate::store::sql::Error::Decode { column: at + 3, source: Box::new(e) })?,
                company_id: row.get(at + 4)?,
                companies: Vec::new(),
                id,
            };
            users.push(User { record, password_hash: row.get(at + 2)? });
        }
        // Rows come ordered by company; another join beside it repeats a company on rows in a row.
        if let (Some(user), Some(company)) = (users.last_mut(), company) {
            if user.record.companies.last() != Some(&company) {
                user.record.companies.push(company);
            }
        }
    }
    Ok(users)
}

fn find(conn: &Connection, column: &str, value: &str) -> crate::store::sql::Result<Option<User>> {
    let rows = conn.fetch(
        &format!("SELECT {COLUMNS} FROM users u {COMPANIES} WHERE u.{column} = ?1 ORDER BY c.company_id"),
        &[value.to_value()],
    )?;
    Ok(from_rows(&rows, 0)?.pop())
}

pub fn by_username(conn: &Connection, username: &str) -> crate::store::sql::Result<Option<User>> {
    find(conn, "username", username)
}

pub fn by_id(conn: &Connection, id: &str) -> crate::store::sql::Result<Option<User>> {
    find(conn, "id", id)
}

pub fn insert(conn: &Connection, user: &User, now_ms: i64) -> crate::store::sql::Result<()> {
    conn.execute(
        "INSERT INTO users (id, username, password_hash, roles, company_id, active_company_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
        params![user.id, user.username, user.password_hash, serde_json::to_string(&user.roles).unwrap_or_else(|_| "[]".into()), user.company_id, now_ms],
    )?;
    for company in &user.companies {
        conn.execute("INSERT INTO user_companies (user_id, company_id) VALUES (?1, ?2)", params![user.id, company])?;
    }
    Ok(())
}

pub fn all(conn: &Connection) -> crate::store::sql::Result<Vec<User>> {
    from_rows(
        &conn.fetch(&format!("SELECT {COLUMNS} FROM users u {COMPANIES} ORDER BY u.username, c.company_id"), &[])?,
        0,
    )
}

/// Members of the company (by membership, not only by active company).
pub fn members(conn: &Connection, company_id: &str) -> crate::store::sql::Result<Vec<User>> {
    Ok(all(conn)?.into_iter().filter(|u| u.companies.iter().any(|c| c == company_id)).collect())
}

pub fn set_roles(conn: &Connection, user_id: &str, roles: &[String]) -> crate::store::sql::Result<()> {
    conn.execute(
        "UPDATE users SET roles = ?2 WHERE id = ?1",
        params![user_id, serde_json::to_string(roles).unwrap_or_else(|_| "[]".into())],
    )
    .map(|_| ())
}

pub fn set_password_hash(conn: &Connection, user_id: &str, hash: &str) -> crate::store::sql::Result<()> {
    conn.execute("UPDATE users SET password_hash = ?2 WHERE id = ?1", params![user_id, hash]).map(|_| ())
}

/// Removes the user with their memberships, devices and refresh tokens.
pub fn delete(conn: &Connection, user_id: &str) -> crate::store::sql::Result<usize> {
    for table in ["refresh_tokens", "devices", "user_companies"] {
        conn.execute(&format!("DELETE FROM {table} WHERE user_id = ?1"), [user_id])?;
    }
    conn.execute("DELETE FROM users WHERE id = ?1", [user_id])
}

pub fn set_active_company(conn: &Connection, user_id: &str, company_id: &str) -> crate::store::sql::Result<()> {
    conn.execute("UPDATE users SET active_company_id = ?2 WHERE id = ?1", params![user_id, company_id]).map(|_| ())
}

pub fn company_exists(conn: &Connection, company_id: &str) -> crate::store::sql::Result<bool> {
    conn.query_row("SELECT COUNT(*) FROM companies WHERE id = ?1", [company_id], |r| r.get::<_, i64>(0)).map(|n| n > 0)
}
