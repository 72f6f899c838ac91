//! Server settings, read from the environment (docs/server.md, settings).

use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct Settings {
    pub db_prefix: String,
    pub rolling_db_max_open: usize,
    pub conflicts_enabled: bool,
    pub auto_archive_enabled: bool,
    pub backup_enabled: bool,
    /// `BACKUP_DIR`: where the backup cron keeps its snapshots. Unset: `DATA_DIR/backups`, or
    /// without `DATA_DIR` a directory of its own under the system's temp dir (`AppState::new`).
    pub backup_dir: Option<PathBuf>,
    /// `JWT_SECRET`; unset, a random secret is generated and kept in `DATA_DIR` (see
    /// `auth::secrets::signing_secret`).
    pub jwt_secret: Option<String>,
    pub access_token_ttl_secs: u64,
    pub refresh_token_ttl_secs: u64,
    /// How long a spent refresh token may be presented once more (a second tab racing the
    /// first) before its reuse revokes the family; 0 = strict rotation.
    pub refresh_reuse_grace_secs: u64,
    /// Sign-in requests (`/auth*`, `/register-user`) per minute and address; 0 = no limit.
    pub auth_rate_per_min: u32,
    /// How many of them may come at once.
    pub auth_rate_burst: u32,
    /// Failed sign-ins of one account, from anywhere, before each further one locks it for a
    /// while (`AUTH_ACCOUNT_FREE_FAILURES`).
    pub auth_account_free_failures: u32,
    /// The longest such lock, in seconds (`AUTH_ACCOUNT_LOCK_MAX_SECS`): the most an attacker can
    /// keep the real user out (a device the user signed in on before is never locked out).
    pub auth_account_lock_max_secs: u64,
    /// `_changes` feeds one session may hold open through the proxy (`DOCDB_FEEDS_PER_SESSION`).
    pub docdb_feeds_per_session: usize,
    /// `DOCDB_HUB`: devices' `_changes` feeds are served from one engine feed per database
    /// (`docdb::changes_hub`); off, each is forwarded to the engine as its own feed.
    pub docdb_hub: bool,
    /// `DOCDB_HUB_LINGER_MS`: how long a hub keeps its engine feed after its last device left
    /// (a longpoll device is away between two of its requests).
    pub docdb_hub_linger_ms: u64,
    /// `DOCDB_HUB_INDEX_BYTES`: what the changes hubs of this replica hold of recent changes, all
    /// databases together; a device behind it catches up from the engine.
    pub docdb_hub_index_bytes: usize,
    /// `METRICS_LISTEN`: where `/metrics` is served, apart from the public listener (loopback,
    /// a free port, by default; `off`: not served).
    pub metrics_listen: Option<String>,
    /// `METRICS_TENANT_SERIES`: the most rolling tenants with series of their own (CORE's
    /// figures); the canaries of a rollout. Past it the rest are counted, not listed.
    pub metrics_tenant_series: usize,
    /// `LOG_FORMAT=json`: one JSON object a log line, for a log shipper; `text` otherwise.
    pub log_json: bool,
    /// How long a logged-out session's document headers keep working for its sign-out handlers
    /// (a final replication) when the SDK never reports the sign-out complete (`SIGN_OUT_GRACE_SECS`).
    pub sign_out_grace_secs: u64,
    /// An invalidated tenant's sockets close in waves of about this many (`INVALIDATION_WAVE_SIZE`).
    pub invalidation_wave_size: u64,
    /// Milliseconds between two waves (`INVALIDATION_WAVE_SPACING_MS`).
    pub invalidation_wave_spacing_ms: u64,
    /// Tenants a cron works on in one transaction (`CRON_BATCH_SIZE`); between two batches the
    /// store is handed to waiting requests.
    pub cron_batch_size: usize,
    /// Days of green reconciliation the drop flag needs (`DROP_GREEN_DAYS`).
    pub drop_green_days: u32,
    /// "Devices seen lately", for the SDK adoption check (`SDK_ADOPTION_DAYS`).
    pub sdk_adoption_days: u32,
    /// Where the SQLite file lives; `None` keeps the store in memory.
    pub data_dir: Option<PathBuf>,
    /// `DATABASE_URL`: the store on PostgreSQL (`postgres://…`), shared by every replica given
    /// the same URL; `None` keeps the embedded SQLite store.
    pub database_url: Option<String>,
    /// `DATABASE_POOL_SIZE`: connections one replica keeps to PostgreSQL (default two a core, at
    /// least 4: more backends than PostgreSQL has cores to run them only queue up inside it, and
    /// on a 2-core machine a pool of 16 a replica cost a third of the refresh throughput).
    pub database_pool_size: usize,
    /// `REPLICA_URL`: where the store's other replicas reach this one (`http://host:port`), to
    /// read the feeds of the tenants it owns; by default the listening address when that is a
    /// particular one. Without it on PostgreSQL this replica reads the engine's feeds itself.
    pub replica_url: Option<String>,
    pub test_controls: bool,
    /// `DOCDB_URL`: the CouchDB-protocol engine the document proxy forwards to; `None` keeps the
    /// embedded document model, which serves no replication protocol.
    pub docdb_url: Option<crate::docdb::engine::EngineUrl>,
    /// `DOCDB_CORS_ORIGINS`: the other origins whose pages may replicate through the proxy
    /// (credentialed CORS, so named, never `*`); `http://127.0.0.1:*` allows every port of a host.
    pub docdb_cors_origins: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            db_prefix: "dev".into(),
            rolling_db_max_open: 5000,
            conflicts_enabled: false,
            auto_archive_enabled: true,
            backup_enabled: true,
            backup_dir: None,
            jwt_secret: None,
            access_token_ttl_secs: 900,
            refresh_token_ttl_secs: 30 * 24 * 3600,
            refresh_reuse_grace_secs: 10,
            auth_rate_per_min: 600,
            auth_rate_burst: 60,
            auth_account_free_failures: 5,
            auth_account_lock_max_secs: 300,
            docdb_feeds_per_session: 8,
            docdb_hub: true,
            docdb_hub_linger_ms: 30_000,
            docdb_hub_index_bytes: crate::docdb::changes_hub::DEFAULT_MAX_BYTES,
            metrics_listen: Some("127.0.0.1:0".into()),
            metrics_tenant_series: 100,
            log_json: false,
            sign_out_grace_secs: 120,
            invalidation_wave_size: 500,
            invalidation_wave_spacing_ms: 150,
            cron_batch_size: 20,
            drop_green_days: 14,
            sdk_adoption_days: 7,
            data_dir: None,
            database_url: None,
            database_pool_size: std::thread::available_parallelism().map_or(4, |n| (2 * n.get()).max(4)),
            replica_url: None,
            test_controls: false,
            docdb_url: None,
            docdb_cors_origins: Vec::new(),
        }
    }
}

/// A setting that cannot be used, named; its value is never repeated (it may be a secret).
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{key}: {problem}")]
    Invalid { key: &'static str, problem: String },
    #[error("{key}")]
    Unreadable { key: &'static str, source: Box<dyn std::error::Error + Send + Sync> },
}

fn invalid(key: &'static str, problem: impl Into<String>) -> SettingsError {
    SettingsError::Invalid { key, problem: problem.into() }
}

/// Reads the boolean setting `key` into `slot` when it is set.
fn flag(get: &impl Fn(&str) -> Option<String>, key: &'static str, slot: &mut bool) -> Result<(), SettingsError> {
    if let Some(v) = get(key) {
        *slot = match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => true,
            "0" | "false" | "no" | "off" | "" => false,
            other => return Err(invalid(key, format!("expected a boolean, got {other:?}"))),
        };
    }
    Ok(())
}

/// Reads the number setting `key` into `slot` when it is set; a malformed value names it.
fn number<T: std::str::FromStr>(
    get: &impl Fn(&str) -> Option<String>,
    key: &'static str,
    slot: &mut T,
) -> Result<(), SettingsError>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    if let Some(v) = get(key) {
        *slot = v.trim().parse().map_err(|e| SettingsError::Unreadable { key, source: Box::new(e) })?;
    }
    Ok(())
}

impl Settings {
    /// How an invalidated tenant's sockets are closed.
    pub fn invalidation_waves(&self) -> crate::tenant_sockets::Waves {
        crate::tenant_sockets::Waves {
            size: self.invalidation_wave_size,
            spacing: std::time::Duration::from_millis(self.invalidation_wave_spacing_ms),
        }
    }

    /// Reads every setting; a malformed value is an error naming the variable.
    pub fn from_env() -> Result<Settings, SettingsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Settings, SettingsError> {
        let mut s = Settings::default();
        if let Some(v) = get("DB_PREFIX") {
            if v.is_empty() || !v.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
                return Err(invalid("DB_PREFIX", format!("lowercase letters, digits and _ only, got {v:?}")));
            }
            s.db_prefix = v;
        }
        number(&get, "ROLLING_DB_MAX_OPEN", &mut s.rolling_db_max_open)?;
        flag(&get, "CONFLICTS_ENABLED", &mut s.conflicts_enabled)?;
        flag(&get, "AUTO_ARCHIVE_ENABLED", &mut s.auto_archive_enabled)?;
        if let Some(v) = get("BACKUP_DIR").filter(|v| !v.is_empty()) {
            s.backup_dir = Some(PathBuf::from(v));
        }
        flag(&get, "BACKUP_ENABLED", &mut s.backup_enabled)?;
        if let Some(v) = get("JWT_SECRET") {
            if v.len() < 16 {
                return Err(invalid("JWT_SECRET", "must be at least 16 characters"));
            }
            s.jwt_secret = Some(v);
        }
        number(&get, "ACCESS_TOKEN_TTL_SECS", &mut s.access_token_ttl_secs)?;
        number(&get, "REFRESH_REUSE_GRACE_SECS", &mut s.refresh_reuse_grace_secs)?;
        number(&get, "AUTH_RATE_PER_MIN", &mut s.auth_rate_per_min)?;
        number(&get, "AUTH_RATE_BURST", &mut s.auth_rate_burst)?;
        number(&get, "AUTH_ACCOUNT_FREE_FAILURES", &mut s.auth_account_free_failures)?;
        number(&get, "AUTH_ACCOUNT_LOCK_MAX_SECS", &mut s.auth_account_lock_max_secs)?;
        number(&get, "DOCDB_FEEDS_PER_SESSION", &mut s.docdb_feeds_per_session)?;
        flag(&get, "DOCDB_HUB", &mut s.docdb_hub)?;
        number(&get, "DOCDB_HUB_LINGER_MS", &mut s.docdb_hub_linger_ms)?;
        number(&get, "DOCDB_HUB_INDEX_BYTES", &mut s.docdb_hub_index_bytes)?;
        match get("METRICS_LISTEN").as_deref().map(str::trim) {
            None | Some("") => {}
            Some("off") => s.metrics_listen = None,
            Some(addr) => s.metrics_listen = Some(addr.to_owned()),
        }
        number(&get, "METRICS_TENANT_SERIES", &mut s.metrics_tenant_series)?;
        match get("LOG_FORMAT").as_deref().map(str::trim) {
            None | Some("" | "text") => {}
            Some("json") => s.log_json = true,
            Some(other) => return Err(invalid("LOG_FORMAT", format!("text or json, got {other:?}"))),
        }
        number(&get, "SIGN_OUT_GRACE_SECS", &mut s.sign_out_grace_secs)?;
        if s.docdb_feeds_per_session == 0 {
            return Err(invalid("DOCDB_FEEDS_PER_SESSION", "must be at least 1"));
        }
        number(&get, "INVALIDATION_WAVE_SIZE", &mut s.invalidation_wave_size)?;
        number(&get, "INVALIDATION_WAVE_SPACING_MS", &mut s.invalidation_wave_spacing_ms)?;
        number(&get, "CRON_BATCH_SIZE", &mut s.cron_batch_size)?;
        number(&get, "DROP_GREEN_DAYS", &mut s.drop_green_days)?;
        number(&get, "SDK_ADOPTION_DAYS", &mut s.sdk_adoption_days)?;
        if s.cron_batch_size == 0 {
            return Err(invalid("CRON_BATCH_SIZE", "must be at least 1"));
        }
        if let Some(v) = get("DATABASE_URL").filter(|v| !v.is_empty()) {
            // The error never repeats the value: it holds the database's password.
            if !(v.starts_with("postgres://") || v.starts_with("postgresql://")) {
                return Err(invalid("DATABASE_URL", "a postgres:// URL"));
            }
            s.database_url = Some(v);
        }
        number(&get, "DATABASE_POOL_SIZE", &mut s.database_pool_size)?;
        if s.database_pool_size == 0 {
            return Err(invalid("DATABASE_POOL_SIZE", "must be at least 1"));
        }
        if let Some(v) = get("REPLICA_URL").filter(|v| !v.is_empty()) {
            if reqwest::Url::parse(&v).map_or(true, |u| u.scheme() != "http" || u.host_str().is_none()) {
                return Err(invalid("REPLICA_URL", "an http:// URL with a host"));
            }
            s.replica_url = Some(v);
        }
        if let Some(v) = get("DATA_DIR") {
            if !v.is_empty() {
                s.data_dir = Some(PathBuf::from(v));
            }
        }
        flag(&get, "MOCK_TEST_CONTROLS", &mut s.test_controls)?;
        if let Some(v) = get("DOCDB_URL").filter(|v| !v.is_empty()) {
            // The error never repeats the value: it may hold the engine's password.
            s.docdb_url = Some(
                crate::docdb::engine::EngineUrl::parse(&v)
                    .map_err(|e| SettingsError::Unreadable { key: "DOCDB_URL", source: Box::new(e) })?,
            );
        }
        if let Some(v) = get("DOCDB_CORS_ORIGINS") {
            s.docdb_cors_origins = v.split(',').map(str::trim).filter(|o| !o.is_empty()).map(str::to_owned).collect();
            if let Some(o) = s.docdb_cors_origins.iter().find(|o| !crate::docdb::cors::is_origin_pattern(o)) {
                return Err(invalid(
                    "DOCDB_CORS_ORIGINS",
                    format!("{o:?} is not an origin (scheme://host[:port], the port may be *)"),
                ));
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let s = Settings::from_lookup(|_| None).unwrap();
        assert_eq!((s.db_prefix.as_str(), s.rolling_db_max_open, s.access_token_ttl_secs), ("dev", 5000, 900));
        assert!(!s.conflicts_enabled && s.auto_archive_enabled && s.backup_enabled && !s.test_controls);
        let s = Settings::from_lookup(|k| match k {
            "DB_PREFIX" => Some("staging".into()),
            "MOCK_TEST_CONTROLS" => Some("1".into()),
            "ROLLING_DB_MAX_OPEN" => Some("12".into()),
            "REFRESH_REUSE_GRACE_SECS" => Some("0".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((s.db_prefix.as_str(), s.rolling_db_max_open, s.test_controls), ("staging", 12, true));
        assert_eq!(s.refresh_reuse_grace_secs, 0);
        let hub = |v: &str| Settings::from_lookup(|k| (k == "DOCDB_HUB_INDEX_BYTES").then(|| v.into()));
        assert_eq!(Settings::default().docdb_hub_index_bytes, 32 * 1024 * 1024);
        assert_eq!(hub("1048576").unwrap().docdb_hub_index_bytes, 1 << 20);
        assert!(hub("32MiB").unwrap_err().to_string().starts_with("DOCDB_HUB_INDEX_BYTES"));
    }

    #[test]
    fn malformed_values_name_the_variable() {
        let e = Settings::from_lookup(|k| (k == "ROLLING_DB_MAX_OPEN").then(|| "many".into())).unwrap_err();
        assert!(e.to_string().starts_with("ROLLING_DB_MAX_OPEN"));
        assert!(Settings::from_lookup(|k| (k == "DB_PREFIX").then(|| "Bad-Prefix".into())).is_err());
        assert!(Settings::from_lookup(|k| (k == "JWT_SECRET").then(|| "short".into())).is_err());
        let e =
            Settings::from_lookup(|k| (k == "DOCDB_URL").then(|| "https://admin:hunter2@engine/".into())).unwrap_err();
        let told = crate::causes::chain(&e);
        assert!(told.starts_with("DOCDB_URL: ") && !told.contains("hunter2"), "{told}");
        assert!(Settings::from_lookup(|k| (k == "DOCDB_CORS_ORIGINS").then(|| "http://a.test, *".into())).is_err());
    }

    #[test]
    fn the_engine_and_its_origins() {
        let s = Settings::from_lookup(|k| match k {
            "DOCDB_URL" => Some("http://admin:pw@127.0.0.1:5984/".into()),
            "DOCDB_CORS_ORIGINS" => Some("http://127.0.0.1:*, https://app.example.com".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(s.docdb_url.unwrap().root(), "http://127.0.0.1:5984/");
        assert_eq!(s.docdb_cors_origins, ["http://127.0.0.1:*", "https://app.example.com"]);
    }
}
