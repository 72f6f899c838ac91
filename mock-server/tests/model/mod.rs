//! A reference model of the rollout's rules, written apart from the server (pure Rust, no I/O, no
//! server code): tenants with their flags, CORE, day databases and latest invalidation; browsers
//! with the SDK they run, their session and what their local data has obeyed; and what the server
//! must answer at each step. `tests/rollout_histories.rs` drives the real server through generated
//! histories and holds every answer to this model's. Each rule is stated in docs/refinements.md.
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
    /// A re-warm's, sending the devices back to the legacy catalogue.
    Rewarm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalidation {
    pub at: i64,
    pub reason: Reason,
    pub routing: Routing,
}

#[derive(Debug, Clone, Default)]
pub struct Tenant {
    pub rolling: bool,
    pub core_exists: bool,
    /// A rotate ran since `rollingDb` was last turned on (true before any enable: nothing stale).
    pub rotated_since_enable: bool,
    pub days: BTreeSet<NaiveDate>,
    pub invalidation: Option<Invalidation>,
    /// Destructive-reset alarms raised and not cleared: the devices (browser, user) they name.
    pub alarms: BTreeSet<(usize, usize)>,
    /// Day-database-missing alarms raised and not cleared: the days a CORE-routed device found
    /// without their day database.
    pub missing_days: BTreeSet<NaiveDate>,
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
    /// Orders refused by the server, kept on the device and reported unpushed.
    pub unpushed: Vec<u64>,
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
    /// An operator turns `rollingDb` on or off (off is the rollback).
    SetRolling {
        tenant: usize,
        on: bool,
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
/// databases.
pub type Alarms = (BTreeSet<(usize, usize)>, BTreeSet<String>);

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
        t.days.insert(today);
        t.days.insert(today.succ_opt().expect("a day after today"));
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
                }
                t.rolling = on;
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
            Op::Handshake { .. }
            | Op::StaleHandshake { .. }
            | Op::StaleCall { .. }
            | Op::WriteOrder { .. }
            | Op::StaleWrite { .. } => {
                unreachable!("a handshake answers: use Model::handshake")
            }
        }
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
            let dynamic = match self.tenants[tenant].days.range(..=today).next_back() {
                Some(&d) => self.day_db(tenant, d),
                None => self.legacy_db(tenant),
            };
            if !self.tenants[tenant].days.contains(&today) {
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

    /// An order written by `browser` to the database its last `ready` named: that database, and
    /// whether the server takes it (day databases and the legacy one take a device's writes, CORE
    /// only a catalogue writer's: a manager's). `None`: nowhere to write yet. A refused order
    /// stays on the device, reported unpushed.
    pub fn write_order(&mut self, browser: usize, order: u64) -> Option<(String, bool)> {
        let s = self.browsers[browser].session?;
        let db = self.browsers[browser].dynamic.clone()?;
        let manager = USERS[s.user].0 == "bob";
        let accepted = db != self.core_db(s.tenant) || manager;
        if !accepted {
            self.browsers[browser].unpushed.push(order);
        }
        Some((db, accepted))
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
                (self.tenants[t].alarms.clone(), days)
            })
            .collect()
    }
}
