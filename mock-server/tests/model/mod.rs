//! A reference model of the rollout's rules, written apart from the server (pure Rust, no I/O, no
//! server code): tenants with their flags, CORE, day databases and latest invalidation; browsers
//! with the SDK they run, their session and what their local data has obeyed; and what the server
//! must answer at each step; the day databases' lifecycle (archive, backup, drop, restore, release)
//! and where every order written on a device is. `tests/rollout_histories.rs` drives the real
//! server through generated histories and holds every answer to this model's. Each rule is stated
//! in docs/refinements.md.
#![allow(dead_code)]

pub mod device;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, NaiveDate};

pub mod races;

/// The tenants a history touches (the demo's first two).
pub const TENANTS: [&str; 2] = ["acme", "globex"];
/// The users a history logs in, with the tenants they work for (the first is active at the
/// start): one of each tenant, and one who works for both.
pub const USERS: [(&str, &[usize]); 3] = [("alice", &[0]), ("carol", &[0, 1]), ("bob", &[1])];
/// The browsers of a history: two run an SDK with the cutover switch, one an older SDK.
pub const BROWSER_SDKS: [&str; 3] = ["1.4.17", "1.5.0", "1.3.9"];
const ACCESS_TTL_SECS: i64 = 900;
/// How long a logout that was never completed keeps the session's credentials working.
const SIGN_OUT_WINDOW_MS: i64 = 120 * 1000;
const REFRESH_TTL_MS: i64 = 30 * 24 * 3600 * 1000;
const STORE_CODE: &str = "main";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routing {
    Legacy,
    Core,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The legacy behaviour: one a day for a tenant without `rollingDb`.
    Daily,
    /// The first rotate that routes the tenant to CORE.
    Cutover,
    /// An operator's.
    Operator,
    /// A re-warm's: CORE is gone, the devices go to the legacy catalogue.
    Rewarm,
}

impl Reason {
    /// An `invalidate-local` frame's reason, as the server writes it.
    pub fn of(v: &serde_json::Value) -> Result<Reason, String> {
        match v.as_str() {
            Some("invalidate_daily") => Ok(Reason::Daily),
            Some("rolling-db-cutover") => Ok(Reason::Cutover),
            Some("operator") => Ok(Reason::Operator),
            Some("rewarm") => Ok(Reason::Rewarm),
            other => Err(format!("an invalidation reason the model does not know: {other:?}")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalidation {
    pub at: i64,
    pub reason: Reason,
    pub routing: Routing,
}

/// Where a day database is in its lifecycle (DRAINED passes within one archive run here: the
/// histories write no open order, so what is drained is archived and reconciled at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayStatus {
    Prewarmed,
    Active,
    Archived,
    Dropped,
}

impl DayStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DayStatus::Prewarmed => "PREWARMED",
            DayStatus::Active => "ACTIVE",
            DayStatus::Archived => "ARCHIVED",
            DayStatus::Dropped => "DROPPED",
        }
    }
}

/// A day database of a tenant.
#[derive(Debug, Clone)]
pub struct Day {
    pub status: DayStatus,
    /// The orders it holds (once dropped: what it held, which its snapshot keeps).
    pub orders: BTreeSet<u64>,
    /// The orders the archive took from it: copies in `…_archive`, rows in the relational store.
    pub archived: BTreeSet<u64>,
    /// Rows the archive took and the relational store lost since (the fault a history injects).
    pub rows_lost: BTreeSet<u64>,
    /// A snapshot holds exactly what it holds now.
    pub backed_up: bool,
    /// Restored, and not released since: no drop takes it.
    pub held: bool,
}

impl Day {
    fn new(status: DayStatus) -> Day {
        Day {
            status,
            orders: BTreeSet::new(),
            archived: BTreeSet::new(),
            rows_lost: BTreeSet::new(),
            backed_up: false,
            held: false,
        }
    }

    /// Its archive holds exactly what it holds (the reconciliation's diff 0).
    fn reconciled(&self) -> bool {
        self.status == DayStatus::Archived && self.orders == self.archived && self.rows_lost.is_empty()
    }
}

/// Days a day database is kept before a drop may take it.
pub const TTL_DAYS: i64 = 30;

#[derive(Debug, Clone, Default)]
pub struct Tenant {
    pub rolling: bool,
    /// `rollingDbDrop`: never on without `rollingDb`.
    pub rolling_drop: bool,
    pub core_exists: bool,
    /// A rotate ran since `rollingDb` was last turned on (true before any enable: nothing stale).
    pub rotated_since_enable: bool,
    pub days: BTreeMap<NaiveDate, Day>,
    /// Orders in the legacy database and in CORE.
    pub legacy_orders: BTreeSet<u64>,
    pub core_orders: BTreeSet<u64>,
    pub invalidation: Option<Invalidation>,
    /// Destructive-reset alarms raised and not cleared: the devices (browser, user) they name.
    pub alarms: BTreeSet<(usize, usize)>,
    /// Day-database-missing alarms raised and not cleared: the days a CORE-routed device found
    /// without their day database.
    pub missing_days: BTreeSet<NaiveDate>,
    /// Reconciliation-regressed alarms raised and not cleared: archived days that lost what their
    /// archive took.
    pub regressed: BTreeSet<NaiveDate>,
    /// Archived-day-lost alarms raised and not cleared: days a rolled-back tenant's archive run
    /// still found lost (their restore asked for, never a rollback).
    pub lost_days: BTreeSet<NaiveDate>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session {
    /// The model's own number for it: a login makes a new one.
    pub number: u64,
    pub user: usize,
    pub tenant: usize,
    /// The access token was issued at this second; it is refused from `issued + ttl` on.
    pub access_issued_secs: i64,
    pub refresh_until_ms: i64,
}

#[derive(Debug, Clone, Default)]
pub struct Browser {
    pub session: Option<Session>,
    /// The session it signed out of last with the server's knowledge (its token is kept to try it
    /// again), and until when its sign-out window is open (`None`: the sign-out completed).
    pub ended: Option<(Session, Option<i64>)>,
    /// The users who registered this browser as their device.
    pub registered: BTreeSet<usize>,
    /// The invalidation its local data obeyed (`lastInvalidation`), if any.
    pub obeyed: Option<i64>,
    /// Its local data was lost though nothing asked for it (no invalidation, no login).
    pub lost_unasked: bool,
    /// The database its orders go to: the `dynamicDb` of the last `ready` it was answered in
    /// this session and tenant.
    pub dynamic: Option<String>,
    /// Orders refused by the server, or left on the device when its local data was dropped as
    /// asked (a login, a logout, a company change, an invalidation): reported unpushed.
    pub unpushed: Vec<u64>,
    /// Orders written offline, each for the database its last `ready` named: pushed later.
    pub pending: Vec<(u64, String)>,
    /// Orders that were only on the device when its local data vanished unasked.
    pub lost_orders: Vec<u64>,
    /// Per user registered here: the session (and tenant) in which the server saw this device
    /// holding an obeyed invalidation. Only then can the server tell that data went missing.
    pub witnessed: BTreeMap<usize, (u64, usize)>,
}

/// One step of a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `user` logs in on `browser` (whoever was signed in there is replaced: the SDK's login
    /// cleanup drops the local data and what it obeyed).
    Login {
        browser: usize,
        user: usize,
    },
    Logout {
        browser: usize,
        how: LogoutKind,
    },
    /// The signed-in user registers this browser as a device.
    Register {
        browser: usize,
    },
    /// The browser's realtime handshake (refreshing its access token first when it expired).
    Handshake {
        browser: usize,
    },
    /// A handshake with the token of the session this browser signed out of.
    StaleHandshake {
        browser: usize,
    },
    /// A Bearer call (`PUT /auth/status`, as a sign-out handler makes) with that token.
    StaleCall {
        browser: usize,
    },
    /// The browser's local data and its `lastInvalidation` vanish (a wiped store, a bug): its
    /// session stays.
    LoseLocalData {
        browser: usize,
    },
    /// The signed-in user makes `tenant` the active one (refused unless they work for it); the
    /// browser refreshes at once, as the SDK's company change does.
    SwitchCompany {
        browser: usize,
        tenant: usize,
    },
    /// The browser writes an order to the database its last `ready` named for its writes.
    WriteOrder {
        browser: usize,
    },
    /// An order written with the document headers of the session this browser signed out of.
    StaleWrite {
        browser: usize,
    },
    /// An operator turns `rollingDb` on or off (off is the rollback; on again, the re-enable).
    SetRolling {
        tenant: usize,
        on: bool,
    },
    /// The runbook's rollback: `rollingDb` off, then the tenant's clients invalidated.
    Rollback {
        tenant: usize,
    },
    /// An operator turns `rollingDbDrop` on or off (refused on without `rollingDb`).
    SetDrop {
        tenant: usize,
        on: bool,
    },
    /// The device writes an order while offline, for the database its last `ready` named.
    WriteOffline {
        browser: usize,
    },
    /// The device is back online and pushes what it wrote offline, however late.
    Push {
        browser: usize,
    },
    /// The archive cron runs (03:00).
    Archive,
    /// The backup cron runs (03:30).
    Backup,
    /// The drop evaluation runs (04:00).
    DropEval,
    /// A night: the clock moves to the next 03:00 (UTC, the server's clock), the archive, the
    /// backup and the drop evaluation run, then at 05:00 the rotate.
    Night,
    /// An operator restores the tenant's oldest dropped day from its snapshot.
    Restore {
        tenant: usize,
    },
    /// A sys_admin releases the tenant's oldest held day (or, holding none, tries its oldest day).
    Release {
        tenant: usize,
    },
    /// A sys_admin re-warms the tenant's CORE, invalidating its devices or not.
    Rewarm {
        tenant: usize,
        invalidate: bool,
    },
    /// A row the archive took from the tenant's oldest archived day vanishes from the relational
    /// store (a fault: the loss a reconciliation must catch).
    LoseArchivedRow {
        tenant: usize,
    },
    /// The rotate cron runs.
    Rotate,
    /// An operator invalidates the tenant's devices.
    Invalidate {
        tenant: usize,
    },
    /// The clock moves on.
    Advance {
        secs: i64,
    },
}

/// How a sign-out reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogoutKind {
    /// The logout, then its completion once the handlers and the final push are done.
    Online,
    /// The logout, never completed (the tab closed during the final push).
    Unfinished,
    /// Offline: the server never heard of it (the SDK forgot the tokens).
    Offline,
}

/// A tenant's open alarms: the devices (browser, user) of destructive resets, the missing days'
/// databases, the regressed days' databases, the days' databases lost after the rollback.
pub type Alarms = (BTreeSet<(usize, usize)>, BTreeSet<String>, BTreeSet<String>, BTreeSet<String>);

/// What a re-warm answers: the time of its invalidation (`None`: not asked), or the refusal's code.
pub type RewarmAnswer = Result<Option<i64>, &'static str>;

/// What an archive run did, for the histories' coverage: days archived, orders taken late into
/// days archived before, regressions raised.
#[derive(Debug, Clone, Copy, Default)]
pub struct ArchiveRun {
    pub archived: usize,
    pub late: usize,
    pub regressed: usize,
    /// Losses found on a rolled-back tenant, alarmed for the restore.
    pub lost: usize,
}

/// What the server must answer to a handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandshakeAnswer {
    /// Refused: no live session behind the token.
    Refused,
    Ready {
        /// The `invalidate-local` sent first, if any: (its time, its reason).
        invalidate: Option<(i64, Reason)>,
        company: String,
        routing: Routing,
        static_db: String,
        dynamic_db: String,
        invalidated_at: Option<i64>,
    },
}

#[derive(Debug, Clone)]
pub struct Model {
    /// The environment's prefix of every database name.
    pub prefix: String,
    pub now_ms: i64,
    pub tenants: Vec<Tenant>,
    pub browsers: Vec<Browser>,
    /// Each user's active tenant: what their next login or refresh carries.
    pub active: Vec<usize>,
    next_session: u64,
    /// Orders written so far: each has the number it was written under, from 0.
    pub next_order: u64,
    /// Orders in CORE when a re-warm dropped it: kept in its snapshot.
    pub in_rewarm_snapshots: BTreeSet<u64>,
}

pub fn day(ms: i64) -> NaiveDate {
    DateTime::from_timestamp_millis(ms).expect("a time the model keeps in range").date_naive()
}

/// Whether an SDK version has the cutover switch (1.4.17 or later).
pub fn has_cutover_switch(version: &str) -> bool {
    let parts: Vec<u64> = version.split('.').map(|p| p.parse().unwrap_or(0)).collect();
    parts >= vec![1, 4, 17]
}

impl Model {
    pub fn new(prefix: &str, now_ms: i64) -> Self {
        Model {
            prefix: prefix.to_owned(),
            now_ms,
            tenants: TENANTS.iter().map(|_| Tenant { rotated_since_enable: true, ..Tenant::default() }).collect(),
            browsers: BROWSER_SDKS.iter().map(|_| Browser::default()).collect(),
            active: USERS.iter().map(|(_, tenants)| tenants[0]).collect(),
            next_session: 0,
            next_order: 0,
            in_rewarm_snapshots: BTreeSet::new(),
        }
    }

    fn names(&self, tenant: usize) -> String {
        format!("{}_{}_{STORE_CODE}", self.prefix, TENANTS[tenant])
    }

    pub fn core_db(&self, tenant: usize) -> String {
        format!("{}_core", self.names(tenant))
    }

    pub fn legacy_db(&self, tenant: usize) -> String {
        format!("{}_catalog", self.names(tenant))
    }

    pub fn day_db(&self, tenant: usize, d: NaiveDate) -> String {
        format!("daily_{}_{}", self.names(tenant), d.format("%Y%m%d"))
    }

    pub fn archive_db(&self, tenant: usize) -> String {
        format!("{}_archive", self.names(tenant))
    }

    /// Where a CORE-routed device writes on `today`: the newest day database up to today still
    /// PREWARMED or ACTIVE (today's once a rotate made it).
    fn routed_day(&self, tenant: usize, today: NaiveDate) -> Option<NaiveDate> {
        self.tenants[tenant]
            .days
            .range(..=today)
            .rev()
            .find(|(_, d)| matches!(d.status, DayStatus::Prewarmed | DayStatus::Active))
            .map(|(d, _)| *d)
    }

    /// Where the tenant's catalogue lives: CORE only when `rollingDb` is on, a rotate has run since
    /// it was turned on, and CORE exists.
    pub fn routing(&self, tenant: usize) -> Routing {
        let t = &self.tenants[tenant];
        if t.rolling && t.rotated_since_enable && t.core_exists {
            Routing::Core
        } else {
            Routing::Legacy
        }
    }

    /// A new invalidation of the tenant: never earlier than the one it replaces.
    fn invalidate(&mut self, tenant: usize, reason: Reason, routing: Routing) {
        let t = &mut self.tenants[tenant];
        let at = match t.invalidation {
            Some(prev) if prev.at >= self.now_ms => prev.at + 1,
            _ => self.now_ms,
        };
        t.invalidation = Some(Invalidation { at, reason, routing });
    }

    /// A rolling tenant's rotate: CORE, today's and tomorrow's day databases, the cutover the
    /// first time it routes to CORE. Answers whether it invalidated.
    fn rotate_tenant(&mut self, tenant: usize) -> bool {
        let today = day(self.now_ms);
        let t = &mut self.tenants[tenant];
        t.core_exists = true;
        t.rotated_since_enable = true;
        let d = t.days.entry(today).or_insert_with(|| Day::new(DayStatus::Active));
        if d.status == DayStatus::Prewarmed {
            d.status = DayStatus::Active;
        }
        t.days.entry(today.succ_opt().expect("a day after today")).or_insert_with(|| Day::new(DayStatus::Prewarmed));
        // Today's day database exists: the alarm of its absence is over.
        t.missing_days.clear();
        let cutover = t.invalidation.is_none_or(|i| i.routing != Routing::Core);
        if cutover {
            self.invalidate(tenant, Reason::Cutover, Routing::Core);
        }
        cutover
    }

    /// A legacy tenant's invalidation of the day, unless it had it today.
    fn invalidate_daily(&mut self, tenant: usize) {
        let today = day(self.now_ms);
        let due = self.tenants[tenant].invalidation.is_none_or(|i| !(i.reason == Reason::Daily && day(i.at) == today));
        if due {
            self.invalidate(tenant, Reason::Daily, Routing::Legacy);
        }
    }

    fn live_session(&self, browser: usize) -> Option<Session> {
        self.browsers[browser].session.filter(|s| s.refresh_until_ms > self.now_ms)
    }

    /// Applies a step that answers nothing but success.
    pub fn apply(&mut self, op: Op) {
        match op {
            Op::Login { browser, user } => {
                let number = self.next_session;
                self.next_session += 1;
                // The session it replaces is not signed out (its token lives on elsewhere).
                let b = &mut self.browsers[browser];
                b.session = Some(Session {
                    number,
                    user,
                    tenant: self.active[user],
                    access_issued_secs: self.now_ms.div_euclid(1000),
                    refresh_until_ms: self.now_ms + REFRESH_TTL_MS,
                });
                // The login's cleanup: local data and what it obeyed are gone, as asked.
                b.obeyed = None;
                b.dynamic = None;
                b.lost_unasked = false;
                b.drop_local_data();
            }
            Op::Logout { browser, how } => {
                let now = self.now_ms;
                let b = &mut self.browsers[browser];
                if let Some(s) = b.session.take() {
                    b.ended = match how {
                        LogoutKind::Online => Some((s, None)),
                        LogoutKind::Unfinished => Some((s, Some(now + SIGN_OUT_WINDOW_MS))),
                        LogoutKind::Offline => None,
                    };
                }
                b.obeyed = None;
                b.dynamic = None;
                b.lost_unasked = false;
                b.drop_local_data();
            }
            Op::Register { browser } => {
                if let Some(s) = self.live_session(browser) {
                    self.browsers[browser].registered.insert(s.user);
                }
            }
            Op::LoseLocalData { browser } => {
                let b = &mut self.browsers[browser];
                if b.obeyed.is_some() {
                    b.lost_unasked = true;
                }
                b.obeyed = None;
                let lost = b.pending.drain(..).map(|(n, _)| n);
                b.lost_orders.extend(lost);
            }
            Op::SetRolling { tenant, on } => {
                let t = &mut self.tenants[tenant];
                if on && !t.rolling {
                    // A CORE left from before is stale until a rotate catches it up.
                    t.rotated_since_enable = false;
                }
                if !on && t.rolling {
                    // The rollback clears the tenant's alarms.
                    t.alarms.clear();
                    t.missing_days.clear();
                    t.regressed.clear();
                    t.lost_days.clear();
                }
                t.rolling = on;
                // Turning rollingDb off clears rollingDbDrop with it.
                t.rolling_drop &= on;
            }
            Op::Rotate => {
                for tenant in 0..self.tenants.len() {
                    if self.tenants[tenant].rolling {
                        self.rotate_tenant(tenant);
                    } else {
                        self.invalidate_daily(tenant);
                    }
                }
            }
            Op::Invalidate { tenant } => {
                let routing = self.routing(tenant);
                self.invalidate(tenant, Reason::Operator, routing);
            }
            Op::Advance { secs } => self.now_ms += secs * 1000,
            Op::SwitchCompany { browser, tenant } => {
                if let Some(s) = self.browsers[browser].session {
                    if USERS[s.user].1.contains(&tenant) && self.active[s.user] != tenant {
                        self.active[s.user] = tenant;
                        // Every device of hers drops its data at its next refresh, as asked: what
                        // the server saw them obey before can no longer tell a loss.
                        for b in &mut self.browsers {
                            b.witnessed.remove(&s.user);
                        }
                    }
                }
            }
            Op::Rollback { tenant } => {
                self.apply(Op::SetRolling { tenant, on: false });
                self.apply(Op::Invalidate { tenant });
            }
            Op::WriteOffline { browser } => {
                let b = &self.browsers[browser];
                if let (Some(_), Some(db)) = (b.session, b.dynamic.clone()) {
                    let n = self.next_order;
                    self.next_order += 1;
                    self.browsers[browser].pending.push((n, db));
                }
            }
            Op::Archive => {
                self.archive();
            }
            Op::Backup => {
                for t in &mut self.tenants {
                    for d in t.days.values_mut().filter(|d| d.status != DayStatus::Dropped) {
                        d.backed_up = true;
                    }
                }
            }
            Op::DropEval => {
                self.drop_eval();
            }
            Op::Night => {
                unreachable!("a night is its steps: Model::night_steps")
            }
            Op::Handshake { .. }
            | Op::StaleHandshake { .. }
            | Op::StaleCall { .. }
            | Op::WriteOrder { .. }
            | Op::StaleWrite { .. }
            | Op::SetDrop { .. }
            | Op::Push { .. }
            | Op::Restore { .. }
            | Op::Release { .. }
            | Op::Rewarm { .. }
            | Op::LoseArchivedRow { .. } => {
                unreachable!("a step that answers: use its own method")
            }
        }
    }

    /// A night's steps from now: to the next 03:00, the archive, the backup, the drop evaluation,
    /// two hours on, the rotate.
    pub fn night_steps(&self) -> [Op; 6] {
        let next = day(self.now_ms).succ_opt().expect("a day after today");
        let three = next.and_hms_opt(3, 0, 0).expect("03:00").and_utc().timestamp_millis();
        let secs = (three - self.now_ms).div_euclid(1000).max(1);
        [Op::Advance { secs }, Op::Archive, Op::Backup, Op::DropEval, Op::Advance { secs: 7_200 }, Op::Rotate]
    }

    /// Whether the browser's access token must be refreshed before its next call, and whether that
    /// refresh is accepted. A refused refresh signs the browser out.
    pub fn needs_refresh(&self, browser: usize) -> Option<bool> {
        let s = self.browsers[browser].session?;
        (self.now_ms.div_euclid(1000) >= s.access_issued_secs + ACCESS_TTL_SECS)
            .then_some(s.refresh_until_ms > self.now_ms)
    }

    /// Whether the signed-in user of `browser` may make `tenant` active (`None`: nobody is).
    pub fn may_switch(&self, browser: usize, tenant: usize) -> Option<bool> {
        let s = self.browsers[browser].session?;
        Some(USERS[s.user].1.contains(&tenant))
    }

    pub fn refreshed(&mut self, browser: usize, accepted: bool) {
        let now = self.now_ms;
        let b = &mut self.browsers[browser];
        if accepted {
            if let Some(s) = b.session.as_mut() {
                s.access_issued_secs = now.div_euclid(1000);
                s.refresh_until_ms = now + REFRESH_TTL_MS;
                // The refresh carries the user's active tenant; on a change the SDK's cleanup
                // drops the local data and what it obeyed, as asked.
                let active = self.active[s.user];
                if s.tenant != active {
                    s.tenant = active;
                    b.obeyed = None;
                    b.dynamic = None;
                    b.lost_unasked = false;
                    b.drop_local_data();
                }
            }
        } else {
            // The SDK forgets the session; the server ended it by itself.
            self.apply(Op::Logout { browser, how: LogoutKind::Offline });
        }
    }

    /// The handshake of `browser` with its live session's token (or, `stale`, the token of the
    /// session it signed out of): the answer, and the device's obedience after it.
    pub fn handshake(&mut self, browser: usize, stale: bool) -> HandshakeAnswer {
        let session = if stale { None } else { self.browsers[browser].session };
        let Some(s) = session else {
            return HandshakeAnswer::Refused;
        };
        let tenant = s.tenant;
        let b = &self.browsers[browser];
        let registered = b.registered.contains(&s.user);
        let reported = b.obeyed;
        let latest = self.tenants[tenant].invalidation;
        let invalidate = latest.filter(|i| reported.is_none_or(|seen| i.at > seen));
        // An alarm exactly when a registered device the server had seen holding an obeyed
        // invalidation in this session comes back having lost it, unasked.
        if registered && b.lost_unasked && b.witnessed.get(&s.user) == Some(&(s.number, tenant)) {
            self.tenants[tenant].alarms.insert((browser, s.user));
        }
        let core = has_cutover_switch(BROWSER_SDKS[browser]) && self.routing(tenant) == Routing::Core;
        let (routing, static_db, dynamic_db) = if core {
            // Today's day database, or while no rotate has created it, the newest day up to today
            // (the legacy database when there is none), with an alarm telling operators to rotate.
            let today = day(self.now_ms);
            let dynamic = match self.routed_day(tenant, today) {
                Some(d) => self.day_db(tenant, d),
                None => self.legacy_db(tenant),
            };
            if dynamic != self.day_db(tenant, today) {
                self.tenants[tenant].missing_days.insert(today);
            }
            (Routing::Core, self.core_db(tenant), dynamic)
        } else {
            (Routing::Legacy, self.legacy_db(tenant), self.legacy_db(tenant))
        };
        let b = &mut self.browsers[browser];
        b.dynamic = Some(dynamic_db.clone());
        if let Some(i) = invalidate {
            // The device obeys: drops its local data and remembers the invalidation.
            b.obeyed = Some(i.at);
            b.lost_unasked = false;
            b.drop_local_data();
        }
        if registered && b.obeyed.is_some() {
            b.witnessed.insert(s.user, (s.number, tenant));
        }
        HandshakeAnswer::Ready {
            invalidate: invalidate.map(|i| (i.at, i.reason)),
            company: TENANTS[tenant].to_owned(),
            routing,
            static_db,
            dynamic_db,
            invalidated_at: latest.map(|i| i.at),
        }
    }

    /// Whether a Bearer call with the token of the session `browser` signed out of is accepted
    /// (`None`: there is no such token). A session's credentials work until its sign-out
    /// completes or its window runs out, and never after; the token's own expiry still holds.
    pub fn stale_call_accepted(&self, browser: usize) -> Option<bool> {
        let (s, window) = self.browsers[browser].ended?;
        let unexpired = self.now_ms.div_euclid(1000) < s.access_issued_secs + ACCESS_TTL_SECS;
        Some(unexpired && window.is_some_and(|until| self.now_ms < until))
    }

    /// An order written by `browser` to the database its last `ready` named: its number, that
    /// database, and whether the server takes it. `None`: nowhere to write yet. A refused order
    /// stays on the device, reported unpushed.
    pub fn write_order(&mut self, browser: usize) -> Option<(u64, String, bool)> {
        self.browsers[browser].session?;
        let db = self.browsers[browser].dynamic.clone()?;
        let n = self.next_order;
        self.next_order += 1;
        let accepted = self.put_order(browser, n, &db);
        Some((n, db, accepted))
    }

    /// The device's push of what it wrote offline, in order: (number, database, taken).
    pub fn push(&mut self, browser: usize) -> Vec<(u64, String, bool)> {
        if self.browsers[browser].session.is_none() {
            return Vec::new();
        }
        let pending = std::mem::take(&mut self.browsers[browser].pending);
        pending.into_iter().map(|(n, db)| (n, db.clone(), self.put_order(browser, n, &db))).collect()
    }

    /// Order `n` written by the signed-in device to `db`, its tenant's: day databases that exist
    /// (whatever their status) and the legacy one take a device's writes, CORE only a catalogue
    /// writer's (a manager's). A refused order is reported unpushed.
    fn put_order(&mut self, browser: usize, n: u64, db: &str) -> bool {
        let s = self.browsers[browser].session.expect("a signed-in device writes");
        let t = s.tenant;
        let manager = USERS[s.user].0 == "bob";
        let day = self.tenants[t].days.keys().copied().find(|d| self.day_db(t, *d) == db);
        let (legacy, core) = (self.legacy_db(t), self.core_db(t));
        let tenant = &mut self.tenants[t];
        let accepted = match day {
            Some(d) => {
                let day = tenant.days.get_mut(&d).expect("found above");
                let live = day.status != DayStatus::Dropped;
                if live {
                    day.orders.insert(n);
                    day.backed_up = false;
                }
                live
            }
            None if db == legacy => tenant.legacy_orders.insert(n),
            None if db == core && manager && tenant.core_exists => tenant.core_orders.insert(n),
            None => false,
        };
        if !accepted {
            self.browsers[browser].unpushed.push(n);
        }
        accepted
    }

    /// The archive run: every tenant's past day databases that no device is routed to (a
    /// CORE-routed device's day while today's is missing) are drained, archived and reconciled;
    /// then every archived day is checked against what its archive took (a loss raises the
    /// reconciliation-regressed alarm) and what it received since (late writes) is taken too.
    pub fn archive(&mut self) -> ArchiveRun {
        let today = day(self.now_ms);
        let mut run = ArchiveRun::default();
        for tenant in 0..self.tenants.len() {
            let routed = match self.routing(tenant) {
                Routing::Core => self.routed_day(tenant, today).filter(|d| *d != today),
                Routing::Legacy => None,
            };
            let t = &mut self.tenants[tenant];
            for (d, day) in t.days.range_mut(..today) {
                if matches!(day.status, DayStatus::Prewarmed | DayStatus::Active) && Some(*d) != routed {
                    day.status = DayStatus::Archived;
                    day.archived = day.orders.clone();
                    run.archived += 1;
                }
            }
            for (d, day) in t.days.iter_mut().filter(|(_, day)| day.status == DayStatus::Archived) {
                let lost = !day.rows_lost.is_empty() || !day.archived.is_subset(&day.orders);
                // A rolling tenant is told to roll back; one rolled back already, to restore the
                // day; a day found whole again is no longer lost.
                if lost && t.rolling && t.regressed.insert(*d) {
                    run.regressed += 1;
                }
                if lost && !t.rolling && t.lost_days.insert(*d) {
                    run.lost += 1;
                }
                if !lost {
                    t.lost_days.remove(d);
                }
                run.late += day.orders.difference(&day.archived).count();
                day.archived.extend(day.orders.iter().copied());
            }
        }
        run
    }

    /// The drop evaluation: for tenants with `rollingDbDrop`, each day database drained, archived,
    /// reconciled now, backed up by a current snapshot, not held, and older than the TTL is
    /// dropped. Answers the days dropped.
    pub fn drop_eval(&mut self) -> Vec<(usize, NaiveDate)> {
        let today = day(self.now_ms);
        let mut dropped = Vec::new();
        for (tenant, t) in self.tenants.iter_mut().enumerate().filter(|(_, t)| t.rolling_drop) {
            for (d, day) in &mut t.days {
                if day.reconciled() && day.backed_up && !day.held && (today - *d).num_days() > TTL_DAYS {
                    day.status = DayStatus::Dropped;
                    dropped.push((tenant, *d));
                }
            }
        }
        dropped
    }

    /// Whether `rollingDbDrop` may be set so (never on without `rollingDb`); applies it.
    pub fn set_drop(&mut self, tenant: usize, on: bool) -> bool {
        let t = &mut self.tenants[tenant];
        if on && !t.rolling {
            return false;
        }
        t.rolling_drop = on;
        true
    }

    /// The restore of the tenant's oldest dropped day: ARCHIVED again with what it held at its
    /// drop (its newest snapshot, current again), held until released.
    pub fn restore(&mut self, tenant: usize) -> Option<NaiveDate> {
        let (d, day) = self.tenants[tenant].days.iter_mut().find(|(_, d)| d.status == DayStatus::Dropped)?;
        day.status = DayStatus::Archived;
        day.held = true;
        day.backed_up = true;
        Some(*d)
    }

    /// The release the step tries: the tenant's oldest held day, or holding none its oldest day;
    /// and whether it is released (it was held).
    pub fn release(&mut self, tenant: usize) -> Option<(NaiveDate, bool)> {
        let days = &mut self.tenants[tenant].days;
        let d = days.iter().find(|(_, d)| d.held).or_else(|| days.iter().next()).map(|(d, _)| *d)?;
        let day = days.get_mut(&d).expect("found above");
        let held = std::mem::replace(&mut day.held, false);
        Some((d, held))
    }

    /// The re-warm: refused without CORE (`core_missing`) and, while devices are routed to CORE,
    /// without invalidating them (`rewarm_needs_invalidation`); otherwise CORE goes (its orders
    /// with it, into the re-warm's snapshot) and, if asked, the devices are invalidated to the
    /// legacy catalogue. The next rotate warms CORE again and cuts them over.
    pub fn rewarm(&mut self, tenant: usize, invalidate: bool) -> RewarmAnswer {
        if !self.tenants[tenant].core_exists {
            return Err("core_missing");
        }
        if self.routing(tenant) == Routing::Core && !invalidate {
            return Err("rewarm_needs_invalidation");
        }
        let t = &mut self.tenants[tenant];
        t.core_exists = false;
        let kept = std::mem::take(&mut t.core_orders);
        self.in_rewarm_snapshots.extend(kept);
        if !invalidate {
            return Ok(None);
        }
        self.invalidate(tenant, Reason::Rewarm, Routing::Legacy);
        Ok(self.tenants[tenant].invalidation.map(|i| i.at))
    }

    /// How many documents of CORE a re-warm would lose (written there since its warm).
    pub fn core_written(&self, tenant: usize) -> usize {
        self.tenants[tenant].core_orders.len()
    }

    /// The fault: the relational store loses the row of the lowest order the archive took from
    /// the tenant's oldest archived day that still has one.
    pub fn lose_archived_row(&mut self, tenant: usize) -> Option<(NaiveDate, u64)> {
        let (d, day) = self.tenants[tenant]
            .days
            .iter_mut()
            .find(|(_, d)| d.status == DayStatus::Archived && d.archived.difference(&d.rows_lost).next().is_some())?;
        let n = *day.archived.difference(&day.rows_lost).next().expect("found above");
        day.rows_lost.insert(n);
        Some((*d, n))
    }

    /// Every database that holds the histories' orders, with the ids it must hold: the day
    /// databases not dropped, the legacy databases and CORE, and each tenant's archive
    /// (`{day database}:{order}`). Any other database holds none.
    pub fn placement(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let ids = |orders: &BTreeSet<u64>| orders.iter().map(|n| order_id(*n)).collect::<BTreeSet<_>>();
        for (tenant, t) in self.tenants.iter().enumerate() {
            out.entry(self.legacy_db(tenant)).or_default().extend(ids(&t.legacy_orders));
            out.entry(self.core_db(tenant)).or_default().extend(ids(&t.core_orders));
            for (d, day) in &t.days {
                let db = self.day_db(tenant, *d);
                if day.status != DayStatus::Dropped {
                    out.entry(db.clone()).or_default().extend(ids(&day.orders));
                }
                out.entry(self.archive_db(tenant))
                    .or_default()
                    .extend(day.archived.iter().map(|n| format!("{db}:{}", order_id(*n))));
            }
        }
        out.retain(|_, ids| !ids.is_empty());
        out
    }

    /// The relational store's order rows: `({day database}:{order}, tenant)`.
    pub fn rows(&self) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        for (tenant, t) in self.tenants.iter().enumerate() {
            for (d, day) in &t.days {
                for n in day.archived.difference(&day.rows_lost) {
                    out.insert((format!("{}:{}", self.day_db(tenant, *d), order_id(*n)), TENANTS[tenant].to_owned()));
                }
            }
        }
        out
    }

    /// The tenant's day databases as the server lists them: (name, status, held).
    pub fn days(&self, tenant: usize) -> Vec<(String, &'static str, bool)> {
        self.tenants[tenant]
            .days
            .iter()
            .map(|(d, day)| (self.day_db(tenant, *d), day.status.as_str(), day.held))
            .collect()
    }

    /// Every order written on a device is on the server (in its database, or in the archive once
    /// its day is dropped), reported unpushed, waiting on the device to be pushed, or was lost with
    /// the device's local data; never two of these, never none.
    pub fn orders_accounted(&self) -> Result<(), String> {
        let mut seen: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
        let mut note = |orders: &mut dyn Iterator<Item = u64>, what: &'static str| {
            for n in orders {
                seen.entry(n).or_default().push(what);
            }
        };
        for t in &self.tenants {
            note(&mut t.legacy_orders.iter().copied(), "legacy");
            note(&mut t.core_orders.iter().copied(), "core");
            for day in t.days.values() {
                let place = if day.status == DayStatus::Dropped { &day.archived } else { &day.orders };
                note(&mut place.iter().copied(), "day or archive");
            }
        }
        note(&mut self.in_rewarm_snapshots.iter().copied(), "a re-warm's snapshot");
        for b in &self.browsers {
            note(&mut b.unpushed.iter().copied(), "unpushed");
            note(&mut b.pending.iter().map(|(n, _)| *n), "pending");
            note(&mut b.lost_orders.iter().copied(), "lost");
        }
        for n in 0..self.next_order {
            match seen.get(&n).map(Vec::as_slice) {
                Some([_]) => {}
                other => return Err(format!("order {n} is in {other:?}")),
            }
        }
        Ok(())
    }

    /// Whether the document headers of the session `browser` signed out of still write: inside
    /// its sign-out window only (headers have no lifetime of their own). `None`: no such session.
    pub fn stale_write_accepted(&self, browser: usize) -> Option<bool> {
        let (_, window) = self.browsers[browser].ended?;
        Some(window.is_some_and(|until| self.now_ms < until))
    }

    /// The alarms raised and not cleared, per tenant: the devices (browser, user) destructive
    /// resets name, and the day databases found missing.
    pub fn alarms(&self) -> Vec<Alarms> {
        (0..self.tenants.len())
            .map(|t| {
                let days = self.tenants[t].missing_days.iter().map(|d| self.day_db(t, *d)).collect();
                let regressed = self.tenants[t].regressed.iter().map(|d| self.day_db(t, *d)).collect();
                let lost = self.tenants[t].lost_days.iter().map(|d| self.day_db(t, *d)).collect();
                (self.tenants[t].alarms.clone(), days, regressed, lost)
            })
            .collect()
    }
}

/// The document id of order `n`.
pub fn order_id(n: u64) -> String {
    format!("order-{n}")
}

impl Browser {
    /// Its local data is dropped as asked: what it wrote offline and never pushed is reported
    /// unpushed.
    fn drop_local_data(&mut self) {
        let left = self.pending.drain(..).map(|(n, _)| n);
        self.unpushed.extend(left);
    }
}
