//! The audit log: who did what, when, from which address. Written in the same transaction as the
//! change it records, so an entry exists exactly when the change does.

use std::net::IpAddr;

use crate::store::sql::{params, Connection, Dialect, OptionalExtension};
use protocol::records::AuditEntry;
use protocol::JwtClaims;
use serde_json::{Map, Value};

/// Who acted: a user id (or `cron:<name>` for a scheduled run) and the peer address, if known.
#[derive(Debug, Clone, PartialEq)]
pub struct Actor {
    pub id: String,
    pub ip: Option<IpAddr>,
}

impl Actor {
    pub fn user(claims: &JwtClaims, ip: Option<IpAddr>) -> Actor {
        Actor { id: claims.user_id.clone(), ip }
    }

    pub fn system(name: &str) -> Actor {
        Actor { id: ["system:", name].concat(), ip: None }
    }
}

/// Records `action` with `detail` (an object; `companyId` in it scopes the entry to a tenant).
pub fn record(
    conn: &Connection,
    actor: &Actor,
    action: &str,
    detail: Value,
    now_ms: i64,
) -> crate::store::sql::Result<()> {
    let mut detail = match detail {
        Value::Object(map) => map,
        other => Map::from_iter([("value".to_owned(), other)]),
    };
    detail.insert("ip".into(), actor.ip.map_or(Value::Null, |ip| Value::String(ip.to_string())));
    conn.execute_later(
        "INSERT INTO audit_log (at, actor, action, detail) VALUES (?1, ?2, ?3, ?4)",
        params![now_ms, actor.id, action, Value::Object(detail).to_string()],
    )
}

/// [`record`], answering the entry's id: for an entry that sums up what follows and is written
/// again as it does ([`rewrite`]).
pub fn record_returning_id(
    conn: &Connection,
    actor: &Actor,
    action: &str,
    detail: Map<String, Value>,
    now_ms: i64,
) -> crate::store::sql::Result<i64> {
    conn.query_row(
        "INSERT INTO audit_log (at, actor, action, detail) VALUES (?1, ?2, ?3, ?4) RETURNING id",
        params![now_ms, actor.id, action, Value::Object(with_ip(detail, actor)).to_string()],
        |r| r.get(0),
    )
}

/// The detail of entry `id`, if it reads as an object.
pub fn detail_of(conn: &Connection, id: i64) -> crate::store::sql::Result<Option<Map<String, Value>>> {
    let text: Option<String> =
        conn.query_row("SELECT detail FROM audit_log WHERE id = ?1", [id], |r| r.get(0)).optional()?;
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

/// Entry `id`'s detail written again (a summary entry's totals), with the latest actor's address.
pub fn rewrite(conn: &Connection, id: i64, actor: &Actor, detail: Map<String, Value>) -> crate::store::sql::Result<()> {
    conn.execute(
        "UPDATE audit_log SET detail = ?2 WHERE id = ?1",
        params![id, Value::Object(with_ip(detail, actor)).to_string()],
    )?;
    Ok(())
}

fn with_ip(mut detail: Map<String, Value>, actor: &Actor) -> Map<String, Value> {
    detail.insert("ip".into(), actor.ip.map_or(Value::Null, |ip| Value::String(ip.to_string())));
    detail
}

/// Newest first: at most `limit` entries older than entry `before`, of one tenant or all.
pub fn list(
    conn: &Connection,
    company_id: Option<&str>,
    before: Option<i64>,
    limit: u32,
) -> crate::store::sql::Result<Vec<AuditEntry>> {
    let company = match conn.dialect() {
        Dialect::Sqlite => "json_extract(detail, '$.companyId')",
        Dialect::Postgres => "(detail::jsonb ->> 'companyId')",
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT id, at, actor, action, detail FROM audit_log
         WHERE (CAST(?1 AS TEXT) IS NULL OR {company} = CAST(?1 AS TEXT)) AND (CAST(?2 AS BIGINT) IS NULL OR id < CAST(?2 AS BIGINT))
         ORDER BY id DESC LIMIT ?3"
    ))?;
    let rows = stmt.query_map(params![company_id, before, limit], |r| {
        let detail: String = r.get(4)?;
        // An entry whose detail no longer reads is still listed, its text kept under `unreadable`.
        let detail = serde_json::from_str::<Map<String, Value>>(&detail)
            .unwrap_or_else(|_| Map::from_iter([("unreadable".to_owned(), Value::String(detail))]));
        let ip = detail.get("ip").and_then(Value::as_str).map(str::to_owned);
        Ok(AuditEntry { id: r.get(0)?, at: r.get(1)?, actor: r.get(2)?, action: r.get(3)?, ip, detail })
    })?;
    rows.collect()
}
