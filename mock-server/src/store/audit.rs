//! The audit log: who did what, when, from which address. Written in the same transaction as the
//! change it records, so an entry exists exactly when the change does.

use std::net::IpAddr;

use crate::store::sql::{params, Connection, Dialect};
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
