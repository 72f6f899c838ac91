//! The demo seed (README: the demo's users), loaded into an empty store and by `POST /__mock/reset`.

use crate::store::sql::{params, Connection};

use crate::auth::passwords;
use crate::docdb::naming::TenantNames;
use crate::docdb::{self, engine::Engine, Cluster, DocDbResult};
use crate::settings::Settings;
use crate::store::Store;

pub const COMPANIES: [(&str, &str); 3] =
    [("acme", "Acme Corp"), ("globex", "Globex Corporation"), ("initech", "Initech")];

/// (username, password, role, companies: the first is the active one).
pub const USERS: [(&str, &str, &str, &[&str]); 5] = [
    ("admin", "admin-pass", "sys_admin", &["acme"]),
    ("keys", "keys-pass", "key_manager", &["acme"]),
    ("alice", "alice-pass", "cashier", &["acme"]),
    ("bob", "bob-pass", "manager", &["globex"]),
    ("carol", "carol-pass", "cashier", &["acme", "globex"]),
];

/// Tables the demo data and its reset own, children before parents: every table of the store but
/// the few the test below names as kept (it holds the schema's every table to one list or the other).
const TABLES: [&str; 34] = [
    "guard_device_loss_audits",
    "guard_device_losses",
    "guard_device_sessions",
    "guard_device_keys",
    "guard_keyed_sign_ins",
    "guard_device_nonces",
    "guard_refresh_replays",
    "guard_reconciliations",
    "guard_held_days",
    "guard_login_failures",
    "guard_signing_out",
    "guard_rolling_enables",
    "guard_alarms",
    "guard_device_marks",
    "guard_device_mark_sessions",
    "cron_locks",
    "cron_run_log",
    "cron_runs",
    "docdb_local_documents",
    "docdb_documents",
    "docdb_archived_rows",
    "docdb_databases",
    "conflict_reviews",
    "day_databases",
    "company_feature_flags",
    "client_invalidations",
    "audit_log",
    "refresh_tokens",
    "devices",
    "sales",
    "orders",
    "user_companies",
    "users",
    "companies",
];

pub fn seed_if_empty(conn: &Cluster, settings: &Settings, now_ms: i64) -> DocDbResult<()> {
    let companies: i64 = conn.query_row("SELECT COUNT(*) FROM companies", [], |r| r.get(0))?;
    if companies > 0 {
        return Ok(());
    }
    for (id, name) in COMPANIES {
        conn.execute(
            "INSERT INTO companies (id, name, created_at, store_code) VALUES (?1, ?2, ?3, 'main')",
            params![id, name, now_ms],
        )?;
    }
    for (username, password, role, companies) in USERS {
        let id = format!("user-{username}");
        let roles = serde_json::json!([role]).to_string();
        conn.execute(
            "INSERT INTO users (id, username, password_hash, roles, company_id, active_company_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
            params![id, username, passwords::hash(password), roles, companies[0], now_ms],
        )?;
        for company in companies {
            conn.execute("INSERT INTO user_companies (user_id, company_id) VALUES (?1, ?2)", params![id, company])?;
        }
    }
    for (id, _) in COMPANIES {
        seed_tenant(conn, settings, id, now_ms)?;
    }
    Ok(())
}

/// A new tenant as the demo's are: the company row, three open sales and its legacy catalogue.
pub fn create_tenant(conn: &Cluster, settings: &Settings, id: &str, name: &str, now_ms: i64) -> DocDbResult<()> {
    conn.execute(
        "INSERT INTO companies (id, name, created_at, store_code) VALUES (?1, ?2, ?3, 'main')",
        params![id, name, now_ms],
    )?;
    seed_tenant(conn, settings, id, now_ms)
}

fn seed_tenant(conn: &Cluster, settings: &Settings, id: &str, now_ms: i64) -> DocDbResult<()> {
    for (n, amount) in [(1, 450), (2, 1290), (3, 260)] {
        conn.execute(
            "INSERT INTO sales (id, company_id, amount_cents, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![format!("{id}-sale-{n}"), id, amount, now_ms],
        )?;
    }
    let names = TenantNames::new(&settings.db_prefix, id, "main");
    docdb::seed::seed_legacy(conn, &names, id, now_ms)
}

/// Deletes every database the catalogue lists from the document side: the engine's databases
/// go with the catalogue rows `clear` empties.
pub fn clear_documents(c: &Cluster) -> DocDbResult<()> {
    for db in docdb::names(c)? {
        c.docs().delete_db(&db)?;
    }
    Ok(())
}

pub fn clear(conn: &Connection) -> crate::store::sql::Result<()> {
    for table in TABLES {
        if crate::store::catalog::table_exists(conn, table)? {
            conn.execute(&format!("DELETE FROM {table}"), [])?;
        }
    }
    Ok(())
}

/// Back to the demo seed (`POST /__mock/reset`): every table emptied, migrations kept, seed loaded
/// again, in one transaction.
pub fn reset(store: &Store, settings: &Settings, engine: Option<&Engine>, now_ms: i64) -> DocDbResult<()> {
    store.transaction(|tx| {
        let cluster = Cluster::new(tx, engine);
        clear_documents(&cluster)?;
        clear(tx)?;
        seed_if_empty(&cluster, settings, now_ms)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tables a reset leaves as they are: what describes the store and its replicas, not the demo's
    /// data (the migrations applied, the cluster's bound and name prefix, the backup directory's
    /// marker, the live replicas' heartbeats) and the test clock, which the reset sets itself.
    const KEPT: [&str; 5] =
        ["__drizzle_migrations", "docdb_cluster", "mock_backup_marker", "mock_replicas", "mock_clock"];

    /// The tables a schema text creates.
    fn created(sql: &str) -> Vec<String> {
        sql.split("CREATE TABLE ")
            .skip(1)
            .filter_map(|rest| {
                let rest = rest.trim_start().trim_start_matches("IF NOT EXISTS ");
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                (!name.is_empty()).then_some(name)
            })
            .collect()
    }

    #[test]
    fn a_reset_empties_every_table_of_the_schema_but_those_it_keeps() {
        use crate::store::{journal, schema};
        let mut every: Vec<String> =
            journal::journal().iter().flat_map(|m| m.statements().flat_map(created).collect::<Vec<_>>()).collect();
        for text in [schema::CRONS, schema::GUARDS, schema::DOCDB, schema::POSTGRES] {
            every.extend(created(text));
        }
        // And what a running embedded store holds, whatever made it.
        let store = crate::store::test_connection(&[schema::CRONS, schema::GUARDS, schema::DOCDB].concat());
        let mut stmt =
            store.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").unwrap();
        every.extend(stmt.query_map([], |r| r.get::<_, String>(0)).unwrap().map(Result::unwrap));
        every.push("__drizzle_migrations".into());
        every.sort();
        every.dedup();
        let forgotten: Vec<&String> =
            every.iter().filter(|t| !TABLES.contains(&t.as_str()) && !KEPT.contains(&t.as_str())).collect();
        assert!(forgotten.is_empty(), "tables neither emptied by a reset nor kept on purpose: {forgotten:?}");
        let gone: Vec<&&str> = TABLES.iter().chain(&KEPT).filter(|t| !every.iter().any(|e| e == *t)).collect();
        assert!(gone.is_empty(), "listed tables the schema no longer has: {gone:?}");
        assert!(every.len() > 30 && every.contains(&"guard_device_losses".to_owned()), "{every:?}");
    }
}
