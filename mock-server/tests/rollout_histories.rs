//! Generated histories of fleet life against the real server, every answer held to the reference
//! model in `tests/model`: logins (the same user, another of the tenant, another tenant), company
//! changes, logouts,
//! device registrations, handshakes of current and old SDKs (refreshing expired tokens, or signed
//! out when the refresh token expired), a session's token tried again after its sign-out, local
//! data lost unasked, `rollingDb` turned on and off, rollbacks, `rollingDbDrop`, rotates,
//! operators' invalidations, orders written online and offline (pushed late, into days archived
//! meanwhile), the archive, the backup and the drop evaluation, restores and releases of days,
//! re-warms, a row lost from the relational archive, and the clock moved by minutes, hours and
//! days across midnight, month and year ends.
//!
//! After every step the server's answers equal the model's, and these hold: a device is routed to
//! CORE only after a rotate that followed the latest enable, old SDKs stay on legacy, no answer
//! names another tenant's database; an alarm is raised exactly when a device lost local data that
//! no invalidation and no login asked it to drop, or an archived day lost what its archive took; a
//! signed-out session's token opens nothing; every database holds exactly the orders the model
//! places there (every order written on a device is in its database, in the archive once its day
//! is dropped, or reported unpushed, and none in another tenant's database), the relational store
//! exactly the archived rows; every day database has the model's status, and one is dropped only
//! when drained, archived, reconciled, backed up, not held and older than the TTL, with
//! `rollingDbDrop` on.
//!
//! A failing case shrinks and prints its steps (`Op`s, replayable with `replay` below).
//! `HISTORY_CASES` and `HISTORY_STEPS` run more (`make soak`); `PROPTEST_RNG_SEED` replays a run.

mod common;
mod model;

use std::collections::BTreeMap;

use common::histories::{self, env_number, int_of, reached, str_of};
use common::{ws, Server};
use mock_server::rolling::backup;
use mock_server::settings::Settings;
use model::{HandshakeAnswer, LogoutKind, Model, Op, Reason, Routing, BROWSER_SDKS, TENANTS, USERS};
use proptest::prelude::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// The rules the server's histories must reach, each at least once a run.
const REACHED_NAMES: [&str; 20] = [
    "handshakes routed to CORE",
    "old SDKs answered while their tenant routes to CORE",
    "invalidations obeyed",
    "destructive-reset alarms raised",
    "signed-out tokens refused",
    "refreshes refused (signed out)",
    "calls inside a sign-out window",
    "company changes",
    "orders taken",
    "day databases found missing (alarmed)",
    "days archived",
    "late orders into archived days taken by the archive",
    "reconciliation regressions alarmed",
    "days dropped",
    "days restored",
    "held days released",
    "re-warms",
    "rollbacks",
    "orders pushed late",
    "losses found after the rollback (restore alarmed)",
];

/// Where a history's clock starts: an ordinary morning, before midnight at a month's, a year's and
/// a leap February's end.
const STARTS: [&str; 4] =
    ["2026-11-26T09:30:00Z", "2026-12-31T22:10:00Z", "2027-01-31T23:20:00Z", "2028-02-28T21:45:00Z"];

fn op() -> impl Strategy<Value = Op> {
    let browser = 0..BROWSER_SDKS.len();
    let tenant = 0..TENANTS.len();
    prop_oneof![
        3 => (browser.clone(), 0..USERS.len()).prop_map(|(browser, user)| Op::Login { browser, user }),
        1 => (browser.clone(), prop_oneof![Just(LogoutKind::Online), Just(LogoutKind::Unfinished), Just(LogoutKind::Offline)])
            .prop_map(|(browser, how)| Op::Logout { browser, how }),
        2 => browser.clone().prop_map(|browser| Op::Register { browser }),
        6 => browser.clone().prop_map(|browser| Op::Handshake { browser }),
        1 => browser.clone().prop_map(|browser| Op::StaleHandshake { browser }),
        2 => browser.clone().prop_map(|browser| Op::StaleCall { browser }),
        2 => browser.clone().prop_map(|browser| Op::LoseLocalData { browser }),
        4 => browser.clone().prop_map(|browser| Op::WriteOrder { browser }),
        1 => browser.clone().prop_map(|browser| Op::StaleWrite { browser }),
        // On more often than off: rollbacks come as their own step too.
        2 => (tenant.clone(), prop::bool::weighted(0.75)).prop_map(|(tenant, on)| Op::SetRolling { tenant, on }),
        1 => tenant.clone().prop_map(|tenant| Op::Rollback { tenant }),
        1 => (tenant.clone(), prop::bool::weighted(0.75)).prop_map(|(tenant, on)| Op::SetDrop { tenant, on }),
        2 => browser.clone().prop_map(|browser| Op::WriteOffline { browser }),
        2 => browser.clone().prop_map(|browser| Op::Push { browser }),
        1 => Just(Op::Archive),
        1 => Just(Op::Backup),
        1 => Just(Op::DropEval),
        2 => Just(Op::Night),
        2 => tenant.clone().prop_map(|tenant| Op::Restore { tenant }),
        2 => tenant.clone().prop_map(|tenant| Op::Release { tenant }),
        1 => (tenant.clone(), any::<bool>()).prop_map(|(tenant, invalidate)| Op::Rewarm { tenant, invalidate }),
        1 => tenant.clone().prop_map(|tenant| Op::LoseArchivedRow { tenant }),
        1 => Just(Op::Rotate),
        1 => tenant.clone().prop_map(|tenant| Op::Invalidate { tenant }),
        2 => (browser, tenant.clone()).prop_map(|(browser, tenant)| Op::SwitchCompany { browser, tenant }),
        3 => histories::advance(vec![(60i64..3_600).boxed(), (3_600i64..86_400).boxed()])
            .prop_map(|secs| Op::Advance { secs }),
    ]
}

/// The real server of one history, and what the test holds for it: each browser's tokens and the
/// device ids the server gave.
struct Fleet {
    /// The server, or its replicas: each request goes to the next one.
    servers: Vec<Server>,
    next: std::cell::Cell<usize>,
    admin: (String, i64),
    /// Per browser: the credentials of its session, and those of the session it signed out of.
    tokens: Vec<Option<Creds>>,
    ended: Vec<Option<Creds>>,
    devices: BTreeMap<(usize, usize), String>,
    /// Writes tried with a signed-out session's headers (each under an id of its own).
    stale_writes: u64,
}

impl Fleet {
    async fn new(settings: &[Settings], start_ms: i64) -> Fleet {
        let mut servers = Vec::new();
        for s in settings {
            servers.push(common::spawn_with(s.clone()).await);
        }
        for s in &servers {
            s.state.clock.freeze_at(start_ms);
        }
        let admin = servers[0].token("admin").await;
        let n = BROWSER_SDKS.len();
        Fleet {
            servers,
            next: std::cell::Cell::new(0),
            admin: (admin, start_ms),
            tokens: vec![None; n],
            ended: vec![None; n],
            devices: BTreeMap::new(),
            stale_writes: 0,
        }
    }

    /// The server the next request goes to: replicas in turn, so one step's answer rests on
    /// what another replica wrote.
    fn s(&self) -> &Server {
        let i = self.next.get();
        self.next.set((i + 1) % self.servers.len());
        &self.servers[i]
    }

    /// Waits until every replica has heard (by the store's notifications) that the session of
    /// `token` ended: replicas converge when the notification arrives, which the histories do not
    /// race.
    async fn settle_ended(&self, token: &str) -> Result<(), String> {
        let sid = self.servers[0]
            .state
            .tokens
            .verify(token, 0, false)
            .map_err(|e| e.to_string())?
            .sid
            .ok_or("a token without a session")?;
        for _ in 0..500 {
            if self.servers.iter().all(|s| s.state.sessions.ended.contains(&sid, s.state.clock.now_secs())) {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        Err(format!("the replicas never all heard that session {sid} ended"))
    }

    /// A sys_admin's token, logged in again once the clock has moved past its lifetime.
    async fn admin(&mut self) -> String {
        let now = self.s().now();
        if now - self.admin.1 >= 10 * 60 * 1000 || now < self.admin.1 {
            self.admin = (self.s().token("admin").await, now);
        }
        self.admin.0.clone()
    }

    /// Refreshes `browser`'s access token when the model says it expired; a refused refresh signs
    /// the browser out, as the SDK does.
    async fn fresh_token(&mut self, m: &mut Model, browser: usize) -> Result<Option<String>, String> {
        if let Some(accepted) = m.needs_refresh(browser) {
            self.refresh(m, browser, accepted).await?;
        }
        Ok(self.tokens[browser].as_ref().map(|c| c.access.clone()))
    }

    /// The browser's refresh, which the model says is `accepted` or not.
    async fn refresh(&mut self, m: &mut Model, browser: usize, accepted: bool) -> Result<(), String> {
        let refresh = self.tokens[browser].as_ref().ok_or("no tokens for a live session")?.refresh.clone();
        let a = self.s().post("/auth/refresh", None, json!({"refreshToken": refresh})).await;
        if (a.status == StatusCode::OK) != accepted {
            return Err(format!("refresh answered {} {}, the model says accepted={accepted}", a.status, a.body));
        }
        m.refreshed(browser, accepted);
        if accepted {
            self.tokens[browser] = Some(Creds::of(&a.body)?);
        } else {
            reached(5);
            self.ended[browser] = self.tokens[browser].take();
        }
        Ok(())
    }

    /// One step, then what the server shows held to the model.
    async fn step(&mut self, m: &mut Model, op: Op) -> Result<(), String> {
        let before = m.alarms();
        self.act(m, op).await?;
        // Through the operators' view after the steps that raise or clear alarms.
        let view = m.alarms() != before;
        self.agree(m, view).await
    }

    async fn act(&mut self, m: &mut Model, op: Op) -> Result<(), String> {
        match op {
            Op::Login { browser, user } => {
                let (name, _) = USERS[user];
                let mut info = json!({});
                if let Some(id) = self.devices.get(&(browser, user)) {
                    info["id"] = json!(id);
                }
                let a = self
                    .s()
                    .post(
                        "/auth",
                        None,
                        json!({"username": name, "password": format!("{name}-pass"), "deviceInfo": info}),
                    )
                    .await;
                if a.status != StatusCode::OK {
                    return Err(format!("login answered {} {}", a.status, a.body));
                }
                self.tokens[browser] = Some(Creds::of(&a.body)?);
                m.apply(op);
            }
            Op::Logout { browser, how } => {
                if let Some(token) = self.fresh_token(m, browser).await? {
                    let calls: &[bool] = match how {
                        LogoutKind::Online => &[false, true],
                        LogoutKind::Unfinished => &[false],
                        LogoutKind::Offline => &[],
                    };
                    for complete in calls {
                        let a = self.s().post("/auth/logout", Some(&token), json!({"complete": complete})).await;
                        if a.status != StatusCode::OK {
                            return Err(format!("logout answered {} {}", a.status, a.body));
                        }
                    }
                    if how != LogoutKind::Offline {
                        self.settle_ended(&token).await?;
                    }
                    let creds = self.tokens[browser].take();
                    self.ended[browser] = creds.filter(|_| how != LogoutKind::Offline);
                }
                m.apply(op);
            }
            Op::Register { browser } => {
                if let Some(token) = self.fresh_token(m, browser).await? {
                    let user = m.browsers[browser].session.expect("a token is a session's").user;
                    let mut body = json!({"sdkVersion": BROWSER_SDKS[browser]});
                    if let Some(id) = self.devices.get(&(browser, user)) {
                        body["id"] = json!(id);
                    }
                    let a = self.s().post("/auth/connect", Some(&token), body).await;
                    let id = str_of(&a.body, "deviceId")?;
                    if let Some(known) = self.devices.insert((browser, user), id.clone()) {
                        if known != id {
                            return Err(format!("registering again gave another id: {known} then {id}"));
                        }
                    }
                }
                m.apply(op);
            }
            Op::Handshake { browser } => {
                let Some(token) = self.fresh_token(m, browser).await? else { return Ok(()) };
                let user = m.browsers[browser].session.expect("a token is a session's").user;
                let device = self.devices.get(&(browser, user)).cloned();
                let reported = m.browsers[browser].obeyed;
                let got = self.handshake(&token, device.as_deref(), browser, reported).await?;
                let alarms_before: usize = m.alarms().iter().map(|a| a.0.len()).sum();
                let missing_before: usize = m.alarms().iter().map(|a| a.1.len()).sum();
                let want = m.handshake(browser, false);
                if got != want {
                    return Err(format!("handshake: the server answered {got:?}, the model {want:?}"));
                }
                if let HandshakeAnswer::Ready { routing, invalidate, company, .. } = &got {
                    let tenant = TENANTS.iter().position(|t| t == company).unwrap_or_default();
                    match (routing, m.routing(tenant)) {
                        (Routing::Core, _) => reached(0),
                        (Routing::Legacy, Routing::Core) => reached(1),
                        _ => {}
                    }
                    if invalidate.is_some() {
                        reached(2);
                    }
                }
                if m.alarms().iter().map(|a| a.0.len()).sum::<usize>() > alarms_before {
                    reached(3);
                }
                if m.alarms().iter().map(|a| a.1.len()).sum::<usize>() > missing_before {
                    reached(9);
                }
                held_rules(m, browser, &got)?;
            }
            Op::StaleHandshake { browser } => {
                let Some(token) = self.ended[browser].as_ref().map(|c| c.access.clone()) else { return Ok(()) };
                let got = self.handshake(&token, None, browser, None).await?;
                if got != HandshakeAnswer::Refused {
                    return Err(format!("a signed-out session's token opened a handshake: {got:?}"));
                }
                reached(4);
            }
            Op::StaleCall { browser } => {
                let (Some(token), Some(want)) =
                    (self.ended[browser].as_ref().map(|c| c.access.clone()), m.stale_call_accepted(browser))
                else {
                    return Ok(());
                };
                let a =
                    self.s().call(Method::PUT, "/auth/status", Some(&token), Some(json!({"isOnline": false}))).await;
                if (a.status == StatusCode::OK) != want {
                    return Err(format!(
                        "a signed-out session's call answered {} {}; the model says accepted={want}",
                        a.status, a.body
                    ));
                }
                reached(if want { 6 } else { 4 });
            }
            Op::LoseLocalData { .. } => m.apply(op),
            Op::WriteOrder { browser } => {
                if self.fresh_token(m, browser).await?.is_none() {
                    return Ok(());
                }
                let Some((n, db, accepted)) = m.write_order(browser) else { return Ok(()) };
                self.put_order(browser, n, &db, accepted).await?;
            }
            Op::WriteOffline { .. } => m.apply(op),
            Op::Push { browser } => {
                if self.fresh_token(m, browser).await?.is_none() {
                    return Ok(());
                }
                let late = m.push(browser);
                if !late.is_empty() {
                    reached(18);
                }
                for (n, db, accepted) in late {
                    self.put_order(browser, n, &db, accepted).await?;
                }
            }
            Op::StaleWrite { browser } => {
                let (Some(creds), Some(want)) = (self.ended[browser].clone(), m.stale_write_accepted(browser)) else {
                    return Ok(());
                };
                // Any database of the session's tenant: the legacy one always exists.
                let tenant = TENANTS.iter().position(|t| Some(&json!(t)) == creds.headers.get("X-Docdb-Company"));
                let db = m.legacy_db(tenant.ok_or("headers without a known company")?);
                self.stale_writes += 1;
                let status = self.put_doc(&creds.headers, &db, &format!("late-{}", self.stale_writes)).await;
                if status.is_success() != want {
                    return Err(format!(
                        "a signed-out session's headers wrote with {status}; the model says accepted={want}"
                    ));
                }
            }
            Op::SwitchCompany { browser, tenant } => {
                let (Some(token), Some(allowed)) = (self.fresh_token(m, browser).await?, m.may_switch(browser, tenant))
                else {
                    return Ok(());
                };
                let a = self.s().post("/auth/company", Some(&token), json!({"companyId": TENANTS[tenant]})).await;
                if (a.status == StatusCode::OK) != allowed {
                    return Err(format!(
                        "the company change answered {} {}; the model says allowed={allowed}",
                        a.status, a.body
                    ));
                }
                m.apply(op);
                if allowed {
                    // The SDK's company change: a refresh at once (its session still lives).
                    self.refresh(m, browser, true).await?;
                    reached(7);
                }
            }
            Op::SetRolling { tenant, on } => {
                self.set_rolling(m, tenant, on).await?;
                m.apply(op);
            }
            Op::Rollback { tenant } => {
                self.set_rolling(m, tenant, false).await?;
                let admin = self.admin().await;
                let at = self.s().invalidate(&admin, TENANTS[tenant]).await;
                m.apply(op);
                let want = m.tenants[tenant].invalidation.map(|i| i.at);
                if Some(at) != want {
                    return Err(format!("the rollback's invalidation is at {at}, the model says {want:?}"));
                }
                reached(17);
            }
            Op::SetDrop { tenant, on } => {
                let admin = self.admin().await;
                let path = format!("/admin/rolling-db/flags/{}?force=true", TENANTS[tenant]);
                let a = self.s().patch(&path, Some(&admin), json!({"rollingDbDrop": on})).await;
                let want = m.set_drop(tenant, on);
                let refused = a.status == StatusCode::CONFLICT && a.body["error"] == "drop_requires_rolling_db";
                if (a.status == StatusCode::OK, refused) != (want, !want) {
                    return Err(format!(
                        "rollingDbDrop={on} answered {} {}; the model says accepted={want}",
                        a.status, a.body
                    ));
                }
            }
            Op::Archive => self.archive(m).await?,
            Op::Backup => self.cron(m, op, "rolling-db-backup").await?,
            Op::DropEval => self.drop_eval(m).await?,
            Op::Night => {
                for step in m.night_steps() {
                    Box::pin(self.act(m, step)).await?;
                }
            }
            Op::Restore { tenant } => {
                let Some(d) = m.restore(tenant) else { return Ok(()) };
                let db = m.day_db(tenant, d);
                let s = self.s();
                let dir = mock_server::rolling::RollingSettings::from(&*s.state.settings).backup_dir;
                let now = s.state.clock.now_ms();
                let prefix = s.state.settings.db_prefix.clone();
                let r = s
                    .state
                    .store
                    .transaction(|tx| backup::restore_audited(&s.state.cluster(tx), &dir, &prefix, &db, None, now))
                    .map_err(|e| format!("the restore of {db} failed: {e}"))?;
                if !r.held || r.company_id != TENANTS[tenant] {
                    return Err(format!("the restore of {db} answered {r:?}"));
                }
                reached(14);
            }
            Op::Release { tenant } => {
                let Some((d, held)) = m.release(tenant) else { return Ok(()) };
                let admin = self.admin().await;
                let path =
                    format!("/admin/rolling-db/tenants/{}/days/{}/release", TENANTS[tenant], m.day_db(tenant, d));
                let a = self.s().post(&path, Some(&admin), json!({})).await;
                let status = if held { StatusCode::OK } else { StatusCode::NOT_FOUND };
                if a.status != status {
                    return Err(format!("the release answered {} {}; the model says held={held}", a.status, a.body));
                }
                if held {
                    reached(15);
                }
            }
            Op::Rewarm { tenant, invalidate } => {
                let admin = self.admin().await;
                let path =
                    format!("/admin/rolling-db/tenants/{}/rewarm?confirm={}", TENANTS[tenant], m.core_written(tenant));
                let a = self.s().post(&path, Some(&admin), json!({"invalidate": invalidate})).await;
                let got = match a.status {
                    StatusCode::OK => Ok(a.body["invalidatedAt"].as_i64()),
                    _ => Err(a.body["error"].as_str().unwrap_or_default().to_owned()),
                };
                let want = m.rewarm(tenant, invalidate);
                if got.as_ref().map(|at| *at).map_err(String::as_str) != want {
                    return Err(format!("the re-warm answered {} {}; the model says {want:?}", a.status, a.body));
                }
                if want.is_ok() {
                    reached(16);
                }
            }
            Op::LoseArchivedRow { tenant } => {
                let Some((d, n)) = m.lose_archived_row(tenant) else { return Ok(()) };
                let id = format!("{}:{}", m.day_db(tenant, d), model::order_id(n));
                let conn = self.servers[0].state.store.lock().map_err(|e| e.to_string())?;
                let gone = conn.execute("DELETE FROM orders WHERE id = ?1", [&id]).map_err(|e| e.to_string())?;
                if gone != 1 {
                    return Err(format!("the relational store had no row {id} to lose"));
                }
            }
            Op::Rotate => self.cron(m, op, "rolling-db-rotate").await?,
            Op::Invalidate { tenant } => {
                let admin = self.admin().await;
                let at = self.s().invalidate(&admin, TENANTS[tenant]).await;
                m.apply(op);
                let want = m.tenants[tenant].invalidation.map(|i| i.at);
                if Some(at) != want {
                    return Err(format!("the invalidation is at {at}, the model says {want:?}"));
                }
            }
            Op::Advance { .. } => {
                m.apply(op);
                for s in &self.servers {
                    s.state.clock.freeze_at(m.now_ms);
                }
            }
        }
        Ok(())
    }

    /// What the server shows after a step equals the model's: the alarms, the day databases, where
    /// every order is.
    async fn agree(&mut self, m: &Model, view: bool) -> Result<(), String> {
        self.alarms_agree(m, view).await?;
        m.orders_accounted()?;
        self.store_agrees(m)
    }

    /// `rollingDb` set by an operator (forced on, as the histories are not about the preflight):
    /// the answer says what a rollback leaves in CORE, and only for a rollback.
    async fn set_rolling(&mut self, m: &Model, tenant: usize, on: bool) -> Result<(), String> {
        let admin = self.admin().await;
        let path = format!("/admin/rolling-db/flags/{}?force=true", TENANTS[tenant]);
        let a = self.s().patch(&path, Some(&admin), json!({"rollingDb": on})).await;
        if a.status != StatusCode::OK {
            return Err(format!("the flag change answered {} {}", a.status, a.body));
        }
        let rollback = m.tenants[tenant].rolling && !on;
        let left = &a.body["coreWrittenSinceWarm"];
        let want = if rollback { json!(m.core_written(tenant)) } else { Value::Null };
        if (if rollback { &left["count"] } else { left }) != &want {
            return Err(format!("the flag change left {left} in CORE; the model says {want}"));
        }
        Ok(())
    }

    /// The order `n` written by `browser` to `db`, which the model says the server takes or not.
    async fn put_order(&mut self, browser: usize, n: u64, db: &str, accepted: bool) -> Result<(), String> {
        let headers = self.tokens[browser].as_ref().ok_or("a live session's")?.headers.clone();
        let id = model::order_id(n);
        let status = self.put_doc(&headers, db, &id).await;
        if status.is_success() != accepted {
            return Err(format!("writing {id} to {db} answered {status}; the model says accepted={accepted}"));
        }
        if accepted {
            reached(8);
        }
        Ok(())
    }

    /// A cron run that must succeed, and its step in the model.
    async fn cron(&mut self, m: &mut Model, op: Op, cron: &str) -> Result<(), String> {
        self.run(cron).await?;
        m.apply(op);
        Ok(())
    }

    /// Runs `cron` on the next replica and waits for its end there (the sys_admin's token kept, the
    /// run followed closely: a history runs many).
    async fn run(&mut self, cron: &str) -> Result<(), String> {
        let admin = self.admin().await;
        let s = self.s();
        let started = s.post(&format!("/admin/crons/{cron}/run"), Some(&admin), json!({})).await;
        let id = str_of(&started.body, "runId")?;
        for _ in 0..5_000 {
            let run = s.get(&format!("/admin/crons/runs/{id}"), Some(&admin)).await.body;
            match run["status"].as_str() {
                Some("running") => tokio::time::sleep(std::time::Duration::from_millis(2)).await,
                Some("succeeded") => return Ok(()),
                _ => return Err(format!("{cron} did not succeed: {run}")),
            }
        }
        Err(format!("{cron} did not end"))
    }

    async fn archive(&mut self, m: &mut Model) -> Result<(), String> {
        self.run("rolling-db-archive").await?;
        let done = m.archive();
        for (what, counter) in [(done.archived, 10), (done.late, 11), (done.regressed, 12), (done.lost, 19)] {
            if what > 0 {
                reached(counter);
            }
        }
        Ok(())
    }

    /// The drop evaluation; besides the model's answer, every day it dropped had, just before, its
    /// three locks, a current snapshot, no hold and more than the TTL's age, with `rollingDbDrop` on.
    async fn drop_eval(&mut self, m: &mut Model) -> Result<(), String> {
        let mut before = BTreeMap::new();
        {
            let state = &self.servers[0].state;
            let conn = state.store.lock().map_err(|e| e.to_string())?;
            let cluster = state.cluster(&conn);
            let settings = mock_server::rolling::RollingSettings::from(&*state.settings);
            for (tenant, name) in TENANTS.iter().enumerate() {
                let t = mock_server::rolling::tenants::get(&conn, name).map_err(|e| e.to_string())?;
                let drop_on = mock_server::rolling::flags::get(&conn, name).map_err(|e| e.to_string())?.rolling_db_drop;
                let now = state.clock.now_ms();
                for c in mock_server::rolling::drop_eval::candidates(&cluster, &settings, &t, now)
                    .map_err(|e| e.to_string())?
                {
                    let locks = c.drained && c.archived && c.reconciled && c.backed_up;
                    before.insert(c.name, (tenant, drop_on && locks && !c.held && c.age_days > model::TTL_DAYS));
                }
            }
        }
        self.cron(m, Op::DropEval, "rolling-db-drop-eval").await?;
        let conn = self.servers[0].state.store.lock().map_err(|e| e.to_string())?;
        for (tenant, _) in TENANTS.iter().enumerate() {
            for d in mock_server::rolling::days::day_databases(&conn, TENANTS[tenant]).map_err(|e| e.to_string())? {
                let dropped_now = d.status.as_str() == "DROPPED" && before.contains_key(&d.name);
                if dropped_now {
                    if before.get(&d.name).is_none_or(|(_, may)| !may) {
                        return Err(format!("{} was dropped without its locks, its age or the flag", d.name));
                    }
                    reached(13);
                }
            }
        }
        Ok(())
    }

    /// The store and the document databases hold what the model says: each tenant's day databases
    /// with their statuses and holds; in every database exactly the orders the model places there
    /// (so none in another tenant's); in the relational store exactly the archived rows.
    fn store_agrees(&self, m: &Model) -> Result<(), String> {
        let state = &self.servers[0].state;
        let conn = state.store.lock().map_err(|e| e.to_string())?;
        let err = |e: &dyn std::fmt::Display| e.to_string();
        for (tenant, name) in TENANTS.iter().enumerate() {
            let got: Vec<(String, &str, bool)> = mock_server::rolling::days::day_databases(&conn, name)
                .map_err(|e| err(&e))?
                .into_iter()
                .map(|d| (d.name, d.status.as_str(), d.held))
                .collect();
            let want = m.days(tenant);
            if got != want {
                return Err(format!("{name}'s day databases are {got:?}, the model says {want:?}"));
            }
        }
        let cluster = state.cluster(&conn);
        let mut names: Vec<String> = Vec::new();
        {
            let mut stmt = conn.prepare("SELECT name FROM docdb_databases ORDER BY name").map_err(|e| err(&e))?;
            let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| err(&e))?;
            for r in rows {
                names.push(r.map_err(|e| err(&e))?);
            }
        }
        let want = m.placement();
        for db in names.iter().chain(want.keys().filter(|k| !names.contains(k))) {
            let exists = names.contains(db);
            let held: std::collections::BTreeSet<String> = match exists {
                true => mock_server::docdb::all_docs(&cluster, db)
                    .map_err(|e| err(&e))?
                    .into_iter()
                    .map(|d| d.id)
                    .filter(|id| id.starts_with("order-") || id.contains(":order-"))
                    .collect(),
                false => Default::default(),
            };
            let expected = want.get(db).cloned().unwrap_or_default();
            if held != expected {
                return Err(format!("{db} holds the orders {held:?}, the model says {expected:?} (exists: {exists})"));
            }
        }
        let mut rows = std::collections::BTreeSet::new();
        {
            let mut stmt = conn
                .prepare("SELECT id, company_id FROM orders WHERE id LIKE '%:order-%' ORDER BY id")
                .map_err(|e| err(&e))?;
            for r in
                stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).map_err(|e| err(&e))?
            {
                rows.insert(r.map_err(|e| err(&e))?);
            }
        }
        if rows != m.rows() {
            return Err(format!("the relational store's order rows are {rows:?}, the model says {:?}", m.rows()));
        }
        Ok(())
    }

    async fn put_doc(&self, headers: &serde_json::Map<String, Value>, db: &str, id: &str) -> StatusCode {
        // One replica for the whole request (each call of `s()` moves on to the next).
        let s = self.s();
        let mut req = s.client.put(format!("{}/docdb/{db}/{id}", s.base));
        for (k, v) in headers {
            req = req.header(k, v.as_str().unwrap_or_default());
        }
        let body = json!({"type": "order", "status": "closed", "amountCents": 1250});
        req.json(&body).send().await.map(|r| r.status()).unwrap_or(StatusCode::BAD_GATEWAY)
    }

    /// Every order where the model places it (its database, or the archive) is read there by its
    /// tenant's user, and refused to the other tenant's.
    async fn orders_kept(&self, m: &Model) -> Result<(), String> {
        let mut readers = Vec::new();
        for name in ["alice", "bob"] {
            let login = self.s().login(name).await;
            readers.push(login["docdbHeaders"]["Remote"].as_object().ok_or("no docdb headers")?.clone());
        }
        for (db, ids) in m.placement() {
            let tenant =
                TENANTS.iter().position(|t| db.contains(&format!("_{t}_"))).ok_or("a database of no tenant")?;
            for id in ids {
                for (reader, headers) in readers.iter().enumerate() {
                    let s = self.s();
                    let mut req = s.client.get(format!("{}/docdb/{db}/{id}", s.base));
                    for (k, v) in headers {
                        req = req.header(k, v.as_str().unwrap_or_default());
                    }
                    let status = req.send().await.map(|r| r.status()).unwrap_or(StatusCode::BAD_GATEWAY);
                    if (status == StatusCode::OK) != (reader == tenant) {
                        return Err(format!("{id} in {db} read by {}'s user: {status}", TENANTS[reader]));
                    }
                }
            }
        }
        Ok(())
    }

    async fn handshake(
        &self,
        token: &str,
        device: Option<&str>,
        browser: usize,
        reported: Option<i64>,
    ) -> Result<HandshakeAnswer, String> {
        let (_socket, frames) = ws::hello(self.s(), token, device, BROWSER_SDKS[browser], reported).await;
        let Some(ready) = frames.iter().find(|f| f["type"] == "ready") else {
            return Ok(HandshakeAnswer::Refused);
        };
        let invalidate = match frames.iter().find(|f| f["type"] == "invalidate-local") {
            Some(f) => Some((int_of(&f["payload"], "invalidatedAt")?, Reason::of(&f["payload"]["reason"])?)),
            None => None,
        };
        let p = &ready["payload"];
        Ok(HandshakeAnswer::Ready {
            invalidate,
            company: str_of(p, "companyId")?,
            routing: match p["database"].as_str() {
                Some("core") => Routing::Core,
                Some("legacy") => Routing::Legacy,
                other => return Err(format!("ready.database is {other:?}")),
            },
            static_db: str_of(p, "staticDb")?,
            dynamic_db: str_of(p, "dynamicDb")?,
            invalidated_at: p["invalidatedAt"].as_i64(),
        })
    }

    /// The raised alarms the server shows operators equal the model's.
    /// Read through the operators' cluster view (`view`), or from the store the view reads.
    async fn alarms_agree(&mut self, m: &Model, view: bool) -> Result<(), String> {
        let attention = match view {
            true => {
                let admin = self.admin().await;
                self.s().get("/admin/rolling-db/cluster", Some(&admin)).await.body["attention"].clone()
            }
            false => {
                let conn = self.servers[0].state.store.lock().map_err(|e| e.to_string())?;
                let mut out = Vec::new();
                for t in TENANTS {
                    let alarms = mock_server::rolling::alarms::open(&conn, t).map_err(|e| e.to_string())?;
                    let alarms: Vec<Value> =
                        alarms.iter().map(|a| json!({"kind": a.kind.as_str(), "subject": a.subject})).collect();
                    out.push(json!({"companyId": t, "alarms": alarms}));
                }
                Value::Array(out)
            }
        };
        let ids: BTreeMap<&String, &(usize, usize)> = self.devices.iter().map(|(k, v)| (v, k)).collect();
        for (tenant, want) in m.alarms().iter().enumerate() {
            let told = histories::alarms_told(&attention, TENANTS[tenant], |s| ids.get(&s.to_owned()).map(|d| **d))?;
            let (resets, missing, regressed, lost) = (told.resets, told.missing, told.regressed, told.lost_days);
            if told.device_losses > 0 {
                return Err(format!("{}: a device's loss, though no device here reports one", TENANTS[tenant]));
            }
            if (&resets, &missing, &regressed, &lost) != (&want.0, &want.1, &want.2, &want.3) {
                return Err(format!(
                    "{}'s alarms name {resets:?}, missing days {missing:?}, regressed days {regressed:?} and days lost after the rollback {lost:?}, the model says {want:?}",
                    TENANTS[tenant]
                ));
            }
        }
        Ok(())
    }
}

/// The rules held whatever the model says: CORE only after a rotate since the latest enable,
/// old SDKs on legacy, only the session's own tenant's databases.
fn held_rules(m: &Model, browser: usize, got: &HandshakeAnswer) -> Result<(), String> {
    let HandshakeAnswer::Ready { company, routing, static_db, dynamic_db, .. } = got else { return Ok(()) };
    let tenant = TENANTS.iter().position(|t| t == company).ok_or("ready names an unknown tenant")?;
    let session = m.browsers[browser].session.ok_or("ready for a browser without a session")?;
    if tenant != session.tenant {
        return Err(format!("a session of {} was answered for {company}", TENANTS[session.tenant]));
    }
    let own = format!("_{}_", TENANTS[tenant]);
    if !static_db.contains(&own) || !dynamic_db.contains(&own) {
        return Err(format!("{static_db} / {dynamic_db} is not {company}'s"));
    }
    if *routing == Routing::Core {
        let t = &m.tenants[tenant];
        if !model::has_cutover_switch(BROWSER_SDKS[browser]) || !t.rolling || !t.rotated_since_enable {
            return Err("routed to CORE without a rotate since the latest enable, or on an old SDK".into());
        }
    }
    Ok(())
}

/// What a login or refresh hands a browser.
#[derive(Clone)]
struct Creds {
    access: String,
    refresh: String,
    /// The document database's headers (`Remote`).
    headers: serde_json::Map<String, Value>,
}

impl Creds {
    fn of(answer: &Value) -> Result<Creds, String> {
        Ok(Creds {
            access: str_of(answer, "token")?,
            refresh: str_of(answer, "refreshToken")?,
            headers: answer["docdbHeaders"]["Remote"].as_object().ok_or("no docdb headers")?.clone(),
        })
    }
}

/// Runs one history; the first step whose answer differs from the model's, with the reason.
fn replay(settings: &[Settings], start: usize, ops: &[Op]) -> Result<(), String> {
    // A runtime of its own: dropping it stops the history's servers.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let outcome = rt.block_on(async {
        let start_ms = chrono::DateTime::parse_from_rfc3339(STARTS[start]).unwrap().timestamp_millis();
        let mut fleet = Fleet::new(settings, start_ms).await;
        let mut m = Model::new(&settings[0].db_prefix, start_ms);
        for (i, op) in ops.iter().enumerate() {
            fleet.step(&mut m, *op).await.map_err(|e| format!("step {i} {op:?}: {e}"))?;
        }
        fleet.orders_kept(&m).await.map_err(|e| format!("after the last step: {e}"))
    });
    drop(rt);
    if let Some(dir) = &settings[0].backup_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    outcome
}

/// Runs `cases` histories of up to `steps` steps, each on the servers `settings_for(case)` gives;
/// with `must_reach`, fails unless they reached every rule.
fn run_histories(cases: u32, steps: usize, must_reach: bool, settings_for: impl Fn(u32) -> Vec<Settings>) {
    let case = std::cell::Cell::new(0u32);
    histories::run(
        "histories",
        52,
        cases,
        histories::history(STARTS.len(), op(), steps),
        &REACHED_NAMES,
        must_reach,
        |(start, ops)| {
            case.set(case.get() + 1);
            replay(&settings_for(case.get()), start, &ops)
                .map_err(|e| format!("{e}\nthe history (start {}): {ops:?}", STARTS[start]))
        },
    );
}

/// A history's own snapshot directory, removed after it.
fn backups() -> std::path::PathBuf {
    std::env::temp_dir().join(mock_server::auth::secrets::random_id("history-backups"))
}

/// A history signs in more often than one address may (the rate limit is not its subject).
fn unthrottled(s: Settings) -> Settings {
    Settings { test_controls: true, auth_rate_per_min: 1_000_000, auth_rate_burst: 1_000_000, ..s }
}

#[test]
fn generated_histories_answer_as_the_model() {
    let cases = env_number("HISTORY_CASES", 64);
    let steps = env_number("HISTORY_STEPS", 200) as usize;
    run_histories(cases, steps, true, |_| {
        vec![unthrottled(Settings { backup_dir: Some(backups()), ..Settings::default() })]
    });
}

/// The same histories on the real parts: three replicas on one PostgreSQL database (a new one each
/// history), their documents on PouchDB Server (a database prefix of each history's own).
#[test]
fn generated_histories_on_replicas_postgres_and_pouchdb_server() {
    let cases = env_number("HISTORY_REPLICA_CASES", 8);
    let steps = env_number("HISTORY_STEPS", 200).min(120) as usize;
    let parts = RealParts::start();
    // Fewer, so not every rule is reached each run: the embedded histories answer for that.
    run_histories(cases, steps, false, |case| parts.replicas(&format!("history{case}"), &format!("h{case}")));
}

/// PostgreSQL and PouchDB Server, started for a test's histories.
struct RealParts {
    engine: common::engine::Engine,
    cluster: common::pg::Cluster,
    // Drives the engine's process; dropped last.
    _support: tokio::runtime::Runtime,
}

impl RealParts {
    fn start() -> RealParts {
        let support = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let engine = support.block_on(common::engine::Engine::start());
        RealParts { engine, cluster: common::pg::Cluster::start(), _support: support }
    }

    /// Three replicas on a new PostgreSQL database `db`, their documents on PouchDB Server under
    /// the prefix `prefix`, their snapshots in one directory (replicas share it).
    fn replicas(&self, db: &str, prefix: &str) -> Vec<Settings> {
        let engine_url =
            mock_server::docdb::engine::EngineUrl::parse(&self.engine.url_with_credentials()).expect("engine url");
        let replica = unthrottled(Settings {
            database_url: Some(self.cluster.migrated(db)),
            jwt_secret: Some("0123456789abcdef-histories".into()),
            docdb_url: Some(engine_url),
            db_prefix: prefix.to_owned(),
            backup_dir: Some(backups()),
            ..Settings::default()
        });
        vec![replica.clone(), replica.clone(), replica]
    }
}

/// The day's whole life on the real parts (three replicas on PostgreSQL, PouchDB Server): an
/// order pushed late into its archived day and archived, the days dropped past the TTL, one
/// restored from its snapshot on the engine, held through a drop evaluation, released and dropped
/// again; a re-warm, and the rollback.
#[test]
fn a_day_lifecycle_on_replicas_postgres_and_pouchdb_server() {
    let (alice, acme, browser) = (0, 0, 0);
    let ops = [
        Op::SetRolling { tenant: acme, on: true },
        Op::SetDrop { tenant: acme, on: true },
        Op::Rotate,
        Op::Login { browser, user: alice },
        Op::Register { browser },
        Op::Handshake { browser },
        Op::WriteOrder { browser },
        Op::WriteOffline { browser },
        Op::Night,
        Op::Push { browser },
        Op::Night,
        Op::Advance { secs: 31 * 86_400 },
        Op::Night,
        Op::Restore { tenant: acme },
        Op::DropEval,
        Op::Release { tenant: acme },
        Op::DropEval,
        Op::Rewarm { tenant: acme, invalidate: true },
        Op::Rollback { tenant: acme },
    ];
    let parts = RealParts::start();
    replay(&parts.replicas("lifecycle", "life"), 0, &ops).unwrap();
    // Each rule was met, not passed by.
    let counts = histories::take_reached();
    for rule in [11, 13, 14, 15, 16, 17] {
        assert!(
            counts.get(rule).is_some_and(|n| *n > 0),
            "the history never reached {}: {counts:?}",
            REACHED_NAMES[rule]
        );
    }
}

/// A multi-company user who goes to her other company and back in one session: both changes'
/// cleanups dropped her device's local data as asked, so nothing was lost unasked.
#[test]
fn a_company_change_and_back_is_no_destructive_reset() {
    let (carol, acme, globex) = (1, 0, 1);
    let ops = [
        Op::Login { browser: 0, user: carol },
        Op::Register { browser: 0 },
        Op::Invalidate { tenant: acme },
        Op::Handshake { browser: 0 },
        Op::SwitchCompany { browser: 0, tenant: globex },
        Op::SwitchCompany { browser: 0, tenant: acme },
        Op::Handshake { browser: 0 },
    ];
    replay(&[unthrottled(Settings::default())], 0, &ops).unwrap();
}

/// A device offline over a night: its order, written for the day its `ready` named, reaches the
/// server after that day was archived; the next night's archive takes it, and nobody is paged.
#[test]
fn an_order_pushed_after_its_day_was_archived_is_archived_without_an_alarm() {
    let (alice, acme, browser) = (0, 0, 0);
    let ops = [
        Op::SetRolling { tenant: acme, on: true },
        Op::Rotate,
        Op::Login { browser, user: alice },
        Op::Register { browser },
        Op::Handshake { browser },
        Op::WriteOffline { browser },
        Op::Night,
        Op::Push { browser },
        Op::Night,
    ];
    replay(&[unthrottled(Settings { backup_dir: Some(backups()), ..Settings::default() })], 0, &ops).unwrap();
    let late = histories::take_reached().get(11).copied().unwrap_or(0);
    assert!(late > 0, "the archive never took the late order");
}
