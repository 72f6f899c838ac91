//! What every handler shares.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::auth::jwt::TokenKeys;
use crate::auth::secrets::SecretError;
use crate::clock::Clock;
use crate::docdb::{self, engine::Engine, DocDbError};
use crate::settings::Settings;
use crate::store::{OpenError, Store};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the document engine's HTTP client")]
    EngineClient(#[from] reqwest::Error),
    #[error(transparent)]
    Store(#[from] OpenError),
    #[error("the document cluster")]
    DocDb(#[from] DocDbError),
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error("the store")]
    Session(#[from] crate::store::sql::Error),
    /// Replicas share one store, so they must share one signing secret: a secret generated per
    /// replica would make each refuse the others' tokens.
    #[error("DATABASE_URL is set but JWT_SECRET is not: replicas of one store must sign with one secret (set JWT_SECRET, at least 16 characters, the same on every replica)")]
    SecretPerReplica,
}

/// Opens the store under the settings' `DATA_DIR` (or in memory), installs the document
/// cluster's catalogue beside it (checking `DB_PREFIX` against the one its databases were made
/// with), and seeds an empty one.
pub fn open_store(settings: &Settings, engine: Option<&Engine>, now_ms: i64) -> Result<Store, StartError> {
    let store = match &settings.database_url {
        Some(url) => Store::open_postgres(url, settings.database_pool_size)?,
        None => Store::open(settings.data_dir.as_deref())?,
    };
    // On PostgreSQL the lock is the store's advisory lock: replicas starting together install and
    // seed one after the other, and the first to find the store empty seeds it.
    {
        let conn = store.lock()?;
        docdb::install(&conn, settings.rolling_db_max_open)?;
        docdb::check_prefix(&conn, &settings.db_prefix)?;
        crate::seed::seed_if_empty(&docdb::Cluster::new(&conn, engine), settings, now_ms)?;
    }
    Ok(store)
}

/// Where the demo page, the built package and the page's vendored libraries (PouchDB, which
/// apps bring themselves: never part of the package) are served from, when given.
#[derive(Debug, Clone, Default)]
pub struct StaticDirs {
    pub www: Option<PathBuf>,
    pub pkg: Option<PathBuf>,
    pub vendor: Option<PathBuf>,
}

/// Requests per route ("POST /auth/refresh"), for tests that count them.
#[derive(Debug, Default)]
pub struct Stats(Mutex<BTreeMap<String, u64>>);

impl Stats {
    pub fn hit(&self, route: String) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()).entry(route).or_default() += 1;
    }

    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// When each cron is next due (server clock), as the scheduler set it.
#[derive(Debug, Default)]
pub struct Schedule(Mutex<BTreeMap<&'static str, i64>>);

impl Schedule {
    pub fn set(&self, cron: &'static str, at_ms: i64) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(cron, at_ms);
    }

    pub fn get(&self, cron: &str) -> Option<i64> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(cron).copied()
    }
}

/// Knobs only `MOCK_TEST_CONTROLS` exposes, and the checkpoints' hook (in-process tests only).
#[derive(Debug, Default)]
pub struct TestControls {
    step_delay_ms: AtomicU64,
    pub checkpoints: crate::rolling::checkpoints::Checkpoints,
}

impl TestControls {
    pub fn step_delay_ms(&self) -> u64 {
        self.step_delay_ms.load(Ordering::SeqCst)
    }

    pub fn set_step_delay_ms(&self, ms: u64) {
        self.step_delay_ms.store(ms, Ordering::SeqCst);
    }
}

#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub store: Arc<Store>,
    pub clock: Arc<Clock>,
    pub tokens: Arc<TokenKeys>,
    pub stats: Arc<Stats>,
    pub static_dirs: StaticDirs,
    /// Names this process in the cron locks it holds.
    pub instance_id: String,
    /// When this process started (wall clock): a scheduled cron that never succeeded is late
    /// once a day has passed since.
    pub started_at: std::time::SystemTime,
    pub schedule: Arc<Schedule>,
    pub test: Arc<TestControls>,
    /// The sync sockets open per tenant (`GET /realtime`), closed by an invalidation.
    pub tenant_sockets: Arc<crate::tenant_sockets::TenantSockets>,
    /// Password hashing and checking, off the async workers.
    pub hashing: Arc<crate::auth::passwords::Hashing>,
    /// The document engine behind the proxy (`DOCDB_URL`); `None`: the embedded model.
    pub engine: Option<crate::docdb::engine::Engine>,
    /// The changes hubs in front of the engine (`DOCDB_HUB`, on by default).
    pub changes_hubs: Option<Arc<crate::docdb::changes_hub::ChangesHubs>>,
    /// On PostgreSQL with `REPLICA_URL`: the replicas alive and the feeds shared with them.
    pub replicas: Option<Arc<crate::replicas::Replicas>>,
    /// What each session holds here that its end reaches: ended sessions, open feeds and sockets.
    pub sessions: crate::auth::sessions::Sessions,
}

/// On PostgreSQL this replica hears the others: the shared test clock, every session ended
/// (refused and cut here too) and every tenant invalidated, whichever replica did it, whose
/// sockets it closes here. A tenant whose invalidation this replica has already acted on is not
/// closed twice.
fn follow_replicas(
    url: &str,
    clock: &Arc<Clock>,
    sockets: &Arc<crate::tenant_sockets::TenantSockets>,
    sessions: crate::auth::sessions::Sessions,
) -> Result<(), StartError> {
    use crate::store::notifications::{follow, Handlers};
    let acted: std::sync::Mutex<HashMap<String, i64>> = std::sync::Mutex::default();
    let (sockets, clock, session_clock) = (sockets.clone(), clock.clone(), clock.clone());
    let session_ended = Box::new(move |session: &str, at: i64| sessions.end(&session_clock, session, at));
    let invalidated = Box::new(move |company_id: &str, at: i64| {
        let mut acted = acted.lock().unwrap_or_else(|p| p.into_inner());
        if acted.insert(company_id.to_owned(), at) != Some(at) {
            sockets.close_tenant(company_id);
        }
    });
    follow(
        url.to_owned(),
        Handlers {
            invalidated,
            clock: Box::new(move |version, offset| clock.apply_shared(version, offset)),
            session_ended,
        },
    );
    Ok(())
}

impl AppState {
    /// What the session rules issue credentials with.
    pub fn issuer(&self) -> crate::auth::issue::Issuer<'_> {
        crate::auth::issue::Issuer { tokens: &self.tokens, settings: &self.settings }
    }

    /// Sessions this process ended, once the transaction that ended them has committed: refused
    /// here at once; on PostgreSQL every replica also hears it from the store's notification.
    pub fn sessions_ended(&self, sessions: &[String]) {
        let now = self.clock.now_ms();
        for session in sessions {
            self.sessions.end(&self.clock, session, now);
        }
    }

    /// A tenant was invalidated by this process: its sockets close. On PostgreSQL every replica
    /// (this one too) closes them when the invalidation's notification reaches it.
    pub fn tenant_invalidated(&self, company_id: &str) {
        if self.settings.database_url.is_none() {
            self.tenant_sockets.close_tenant(company_id);
        }
    }

    /// Moves the test clock: this process's, or on PostgreSQL every replica's; kept in the store
    /// either way, so a restart (the demo's, or one after a restore) keeps the day.
    pub fn move_clock(&self, offset_ms: i64) -> Result<(), crate::store::sql::Error> {
        let version = self.store.transaction(|tx| crate::store::notifications::clock_moved(tx, offset_ms))?;
        self.clock.apply_shared(version, offset_ms);
        Ok(())
    }

    /// The document cluster over `conn`: the engine's documents when `DOCDB_URL` names one.
    pub fn cluster<'a>(&'a self, conn: &'a crate::store::sql::Connection<'a>) -> crate::docdb::Cluster<'a> {
        crate::docdb::Cluster::new(conn, self.engine.as_ref())
    }

    /// Opens the store under the settings' `DATA_DIR` (or in memory) and builds the state.
    pub fn new(mut settings: Settings, static_dirs: StaticDirs) -> Result<AppState, StartError> {
        if settings.backup_dir.is_none() {
            settings.backup_dir = Some(match &settings.data_dir {
                Some(data) => data.join("backups"),
                // An in-memory server's snapshots in a directory of its own (tests run many).
                None => std::env::temp_dir().join(crate::auth::secrets::random_id("mock-backups")),
            });
        }
        if settings.database_url.is_some() && settings.jwt_secret.is_none() {
            return Err(StartError::SecretPerReplica);
        }
        let clock = Arc::new(Clock::default());
        let engine = settings.docdb_url.clone().map(Engine::new).transpose()?;
        let store = open_store(&settings, engine.as_ref(), clock.now_ms())?;
        // The test clock where the data left it (moved before a restart, or by another replica).
        {
            use crate::store::sql::OptionalExtension;
            let kept = store
                .lock()?
                .query_row(crate::store::notifications::SHARED_CLOCK, [], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
                })
                .optional()?;
            if let Some((version, offset)) = kept {
                clock.apply_shared(version, offset);
            }
        }
        let tenant_sockets: Arc<crate::tenant_sockets::TenantSockets> = Arc::default();
        // The first server of a store marks its backup directory; a later one checks it shares it.
        if settings.backup_enabled {
            let dir = crate::rolling::RollingSettings::from(&settings).backup_dir;
            match store.transaction(|tx| crate::rolling::backup::unshared(tx, &dir)) {
                Ok(None) => {}
                Ok(Some(why)) => tracing::warn!("{why}"),
                Err(e) => tracing::warn!("the backup directory could not be checked: {}", crate::causes::chain(&e)),
            }
        }
        let sessions =
            crate::auth::sessions::Sessions { token_ttl_secs: settings.access_token_ttl_secs, ..Default::default() };
        for (session, at) in crate::store::refresh_tokens::ended(&store.lock()?)? {
            sessions.end(&clock, &session, at);
        }
        if let Some(url) = &settings.database_url {
            follow_replicas(url, &clock, &tenant_sockets, sessions.clone())?;
        }
        let secret =
            crate::auth::secrets::signing_secret(settings.jwt_secret.as_deref(), settings.data_dir.as_deref())?;
        let instance_id = crate::auth::secrets::random_id("proc");
        let (mut replicas, mut changes_hubs) = (None, None);
        if let (Some(engine), true) = (&engine, settings.docdb_hub) {
            use crate::replicas::{feeds::ReplicaFeeds, members::Members, owner::Member, Replicas};
            let tuning = crate::docdb::changes_hub::Tuning {
                linger: std::time::Duration::from_millis(settings.docdb_hub_linger_ms),
                max_bytes: settings.docdb_hub_index_bytes,
                ..Default::default()
            };
            let source: Arc<dyn crate::docdb::changes_hub::Source> =
                match (&settings.database_url, &settings.replica_url) {
                    (Some(database_url), Some(url)) => {
                        let me = Member { id: instance_id.clone(), url: url.clone() };
                        let shared = Arc::new(Replicas {
                            members: Members::join(database_url.clone(), me),
                            key: crate::replicas::feed_key(&secret),
                            counts: Arc::default(),
                        });
                        let feeds = ReplicaFeeds::new(engine.clone(), shared.clone());
                        replicas = Some(shared);
                        Arc::new(feeds)
                    }
                    _ => Arc::new(engine.clone()),
                };
            changes_hubs = Some(crate::docdb::changes_hub::ChangesHubs::new(source, tuning));
        }
        Ok(AppState {
            engine,
            changes_hubs,
            replicas,
            tokens: Arc::new(TokenKeys::new(&secret, settings.access_token_ttl_secs)),
            settings: Arc::new(settings),
            store: Arc::new(store),
            clock,
            stats: Arc::default(),
            static_dirs,
            instance_id,
            started_at: std::time::SystemTime::now(),
            schedule: Arc::default(),
            test: Arc::default(),
            tenant_sockets,
            hashing: Arc::default(),
            sessions,
        })
    }
}
