//! The world of one run: the server, the browsers and their tabs, and the operators. A step of the
//! SDK starts in its tab and runs on while later steps start (tabs, the network and operators act
//! meanwhile); an operator's step is done when it returns.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{json, Value};
use session_broker::core::keys;
use session_broker::core::ports::Method;
use session_broker::protocol::LogoutScope;

use super::browser::{freeze_lock, BrowserShared, KeyMode};
use super::dbs::{Order, TILL};
use super::env::Env;
use super::history::Cause;
use super::net::learn_session;
use super::ops::{By, Op, Scope, BROWSERS, TABS, TENANTS, USERS};
use super::server::Answer;
use super::tab::Tab;

pub struct Browser {
    pub shared: Rc<BrowserShared>,
    pub tabs: Vec<Tab>,
    next_slot: usize,
}

/// A logout that completed in a tab: every tab of the browser must let go of the session.
#[derive(Debug, Clone)]
pub struct LogoutDone {
    pub b: usize,
    pub sid: String,
    pub started: i64,
    pub at: i64,
    /// The tabs that held the session when it completed (their slots).
    pub holders: Vec<usize>,
}

pub struct World {
    pub env: Rc<Env>,
    pub browsers: Vec<Option<Browser>>,
    pub logouts: Rc<RefCell<Vec<LogoutDone>>>,
    /// Users' ids and roles by name.
    pub users: BTreeMap<String, (String, Vec<String>)>,
    admin: Option<(String, i64)>,
    next_order: u64,
    /// Per browser: the session its storage held at the last check, and since when.
    pub seen_sid: Vec<Option<String>>,
    /// Per browser: the app asked for a change of session (a login, a logout, a company change,
    /// a wipe) since the last check, and how many such asks are running now.
    pub asked: Rc<RefCell<Vec<bool>>>,
    pub asking: Rc<RefCell<Vec<u32>>>,
    /// Tenants whose devices' loss reports may have been wiped with a browser's storage.
    pub reports_wiped: Vec<String>,
    /// The operators' record: per tenant, whether `rollingDb` is on and a rotate ran since.
    pub rolling: BTreeMap<String, (bool, bool)>,
    /// Tenants that were on `rollingDb` with a rotate since its enable at some point of the run.
    pub cored: std::collections::BTreeSet<String>,
}

impl World {
    pub async fn new(env: Rc<Env>) -> World {
        let mut w = World {
            env,
            browsers: (0..BROWSERS).map(|_| None).collect(),
            logouts: Rc::default(),
            users: BTreeMap::new(),
            admin: None,
            next_order: 1,
            seen_sid: vec![None; BROWSERS],
            asked: Rc::new(RefCell::new(vec![false; BROWSERS])),
            asking: Rc::new(RefCell::new(vec![0; BROWSERS])),
            reports_wiped: Vec::new(),
            rolling: BTreeMap::new(),
            cored: Default::default(),
        };
        for b in 0..2 {
            let mode = if w.env.chance(0.1) { KeyMode::Unavailable } else { KeyMode::Ok };
            w.browsers[b] = Some(w.open_browser(b, None, BTreeMap::new(), mode));
        }
        let admin = w.admin().await;
        let list = w.env.server.handle("GET", "/users", Some(&admin), &[], None).await.json();
        for u in list["users"].as_array().cloned().unwrap_or_default() {
            let roles = u["roles"].as_array().map(|r| r.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect());
            if let (Some(name), Some(id)) = (u["username"].as_str(), u["id"].as_str()) {
                w.users.insert(name.to_owned(), (id.to_owned(), roles.unwrap_or_default()));
            }
        }
        w
    }

    fn open_browser(
        &self,
        id: usize,
        copy_of: Option<usize>,
        truth: BTreeMap<String, String>,
        mode: KeyMode,
    ) -> Browser {
        let shared = BrowserShared::new(id, copy_of, truth, mode);
        let tabs = (0..TABS).map(|slot| Tab::open(&self.env, &shared, slot)).collect();
        Browser { shared, tabs, next_slot: TABS }
    }

    pub fn browser(&self, b: usize) -> Option<&Browser> {
        self.browsers[b].as_ref()
    }

    /// A sys_admin's token (a login of the operators' own, on a perfect link).
    pub async fn admin(&mut self) -> String {
        let now = self.env.now();
        if let Some((token, at)) = &self.admin {
            if now - at < 5 * 60 * 1000 {
                return token.clone();
            }
        }
        let token = self.sign_in("admin").await.unwrap_or_default();
        self.admin = Some((token.clone(), now));
        token
    }

    async fn sign_in(&self, name: &str) -> Option<String> {
        let body = json!({"username": name, "password": format!("{name}-pass"), "deviceInfo": {}}).to_string();
        let a = self.env.server.handle("POST", "/auth", None, &[], Some(body)).await;
        a.json()["token"].as_str().map(str::to_owned)
    }

    /// An operator's request, on a perfect link; its answer is checked for 500s.
    pub async fn operate(&mut self, method: &str, path: &str, body: Option<Value>) -> Answer {
        let admin = self.admin().await;
        self.as_user(&admin, method, path, body).await
    }

    async fn as_user(&self, token: &str, method: &str, path: &str, body: Option<Value>) -> Answer {
        let a = self.env.server.handle(method, path, Some(token), &[], body.map(|b| b.to_string())).await;
        if a.status >= 500 {
            self.env.hist.violate(
                self.env.now(),
                "the server never answers 500",
                format!("{method} {path} answered {} {}", a.status, a.body),
            );
        }
        self.env.hist.note(self.env.now(), format!("operator {method} {path} -> {}", a.status));
        a
    }

    fn tab(&self, b: usize, t: usize) -> Option<&Tab> {
        self.browsers[b].as_ref().map(|br| &br.tabs[t % br.tabs.len()])
    }

    fn ask(&self, b: usize) {
        self.asked.borrow_mut()[b] = true;
    }

    /// `work`, run in the tab as an ask of a change of session (see `asked`).
    fn spawn_asking(&self, b: usize, t: usize, work: impl std::future::Future<Output = ()> + 'static) {
        let Some(tab) = self.tab(b, t) else { return };
        self.asking.borrow_mut()[b] += 1;
        let (asked, asking) = (self.asked.clone(), self.asking.clone());
        // Counted down however the work ends (a reload aborts it).
        struct Done(usize, Rc<RefCell<Vec<bool>>>, Rc<RefCell<Vec<u32>>>);
        impl Drop for Done {
            fn drop(&mut self) {
                self.1.borrow_mut()[self.0] = true;
                self.2.borrow_mut()[self.0] -= 1;
            }
        }
        let done = Done(b, asked, asking);
        tab.spawn(async move {
            work.await;
            drop(done);
        });
    }

    /// Applies one step.
    pub async fn apply(&mut self, op: Op) {
        let env = self.env.clone();
        env.hist.note(env.now(), format!("step {op:?}"));
        match op {
            Op::Login { b, t, user } | Op::LoginGoogle { b, t, user } => {
                let Some(tab) = self.tab(b, t) else { return };
                let (s, name, env) = (tab.session.clone(), USERS[user].0, env.clone());
                let google = matches!(op, Op::LoginGoogle { .. });
                self.spawn_asking(b, t, async move {
                    let r = if google {
                        s.login_with_google(&format!("mock-google:{name}")).await
                    } else {
                        s.login(name, &format!("{name}-pass")).await
                    };
                    // Its outcome, not its tokens (random: the trace is compared across runs).
                    let r = r.to_value();
                    env.hist.note(env.now(), format!("b{b} login of {name}: {} {}", r["success"], r["code"]));
                });
            }
            Op::Register { b, t } => {
                let Some(tab) = self.tab(b, t) else { return };
                let (s, env, shared) =
                    (tab.session.clone(), env.clone(), self.browsers[b].as_ref().map(|x| x.shared.clone()));
                tab.spawn(async move {
                    s.register_device().await;
                    if let (Some(id), Some(shared)) = (s.device_id(), shared) {
                        env.devices.borrow_mut().insert(id, shared.id);
                    }
                });
            }
            Op::Refresh { b, t } => self.spawn_in(b, t, |s| async move {
                s.refresh_authentication().await;
            }),
            Op::GetToken { b, t } | Op::GetSession { b, t } => self.spawn_in(b, t, |s| async move {
                s.get_token().await;
            }),
            Op::Fetch { b, t } => self.spawn_in(b, t, |s| async move {
                let r = s.call(Method::Get, "/users/me", None).await;
                drop(r);
            }),
            Op::Logout { b, t, scope } => {
                let Some(tab) = self.tab(b, t) else { return };
                let (s, view, env, logouts) =
                    (tab.session.clone(), tab.view.clone(), env.clone(), self.logouts.clone());
                let shared = self.browsers[b].as_ref().map(|x| x.shared.clone()).expect("the tab's browser");
                let scope = match scope {
                    Scope::Local => LogoutScope::Local,
                    Scope::Others => LogoutScope::Others,
                    Scope::Global => LogoutScope::Global,
                };
                self.spawn_asking(b, t, async move {
                    let sid = view.borrow().get(keys::AUTH).and_then(|t| super::history::History::sid_of_jwt(t));
                    let started = env.now();
                    // The tabs that hold the session as the logout begins.
                    let holders: Vec<usize> = shared
                        .views
                        .borrow()
                        .iter()
                        .filter(|(_, (v, _))| {
                            v.borrow().get(keys::AUTH).and_then(|t| super::history::History::sid_of_jwt(t)) == sid
                        })
                        .map(|(slot, _)| *slot)
                        .collect();
                    s.logout(scope).await;
                    if scope != LogoutScope::Others {
                        if let Some(sid) = sid {
                            logouts.borrow_mut().push(LogoutDone { b, sid, started, at: env.now(), holders });
                        }
                    }
                });
            }
            Op::SwitchCompany { b, t, tenant } => {
                let Some(s) = self.tab(b, t).map(|tab| tab.session.clone()) else { return };
                self.spawn_asking(b, t, async move {
                    let body = json!({"companyId": TENANTS[tenant]}).to_string();
                    if s.call(Method::Post, "/auth/company", Some(body)).await.success {
                        s.refresh_authentication().await;
                    }
                })
            }
            Op::Connect { b, t } => {
                if let Some(tab) = self.tab(b, t) {
                    let sync = tab.sync.clone();
                    tab.spawn(async move {
                        let _ = sync.connect().await;
                    });
                }
            }
            Op::Disconnect { b, t } => {
                if let Some(tab) = self.tab(b, t) {
                    tab.sync.close();
                }
            }
            Op::WriteOrder { b, t } => {
                let Some(tab) = self.tab(b, t) else { return };
                let Some(company) = tab.session.current_company().and_then(|c| c["id"].as_str().map(str::to_owned))
                else {
                    return;
                };
                // The till writes for the session the browser holds: a tab whose view has not yet
                // heard of another tab's change waits for it (as an app does before it acts).
                let truth = self.browsers[b].as_ref().and_then(|br| br.shared.truth.borrow().get(keys::AUTH).cloned());
                if tab.view.borrow().get(keys::AUTH) != truth.as_ref() {
                    return;
                }
                if tab.session.track_local_database(TILL, "", "dynamic").is_err() {
                    return;
                }
                let br = self.browsers[b].as_ref().expect("the tab's browser");
                let order = Order { id: self.next_order, tenant: company, pushed: false };
                self.next_order += 1;
                br.shared.dbs.dbs.borrow_mut().entry(TILL.into()).or_default().push(order);
            }
            Op::DestroyAll { b, t } => {
                let Some(br) = self.browsers[b].as_ref() else { return };
                let dbs = br.shared.dbs.clone();
                self.spawn_in(b, t, |s| async move {
                    dbs.app_destroying.set(dbs.app_destroying.get() + 1);
                    s.destroy_all_local_databases().await;
                    dbs.app_destroying.set(dbs.app_destroying.get() - 1);
                })
            }
            Op::UpdateStatus { b, t } => self.spawn_in(b, t, |s| async move {
                s.update_device_status(true).await;
            }),
            Op::ListDevices { b, t } => self.spawn_in(b, t, |s| async move {
                s.call(Method::Get, "/devices", None).await;
            }),
            Op::Manage { b, t, which } => self.spawn_in(b, t, move |s| async move {
                let (method, path, body) = super::ops::MANAGE[which];
                let Some(company) = s.current_company().and_then(|c| c["id"].as_str().map(str::to_owned)) else {
                    return;
                };
                let method = match method {
                    "GET" => Method::Get,
                    "POST" => Method::Post,
                    _ => Method::Patch,
                };
                let body = body.map(|b| b.replace("{company}", &company));
                s.call(method, &path.replace("{company}", &company), body).await;
            }),
            Op::Reload { b, t } => self.replace_tab(b, t, false),
            Op::Freeze { b, t } => self.replace_tab(b, t, true),
            Op::Copy { from } => {
                let Some(src) = self.browsers[from].as_ref() else { return };
                let truth = src.shared.truth.borrow().clone();
                if let Some(old) = self.browsers[2].take() {
                    for tab in &old.tabs {
                        tab.stop(&old.shared);
                    }
                }
                // The browser it replaces is gone, and what was owed to its tabs with it.
                self.logouts.borrow_mut().retain(|l| l.b != 2);
                self.env.hist.refresh_answered.borrow_mut().retain(|(b, _)| *b != 2);
                self.env.hist.refresh_in_flight.borrow_mut().retain(|(b, _), _| *b != 2);
                self.env.hist.closed.borrow_mut().retain(|(b, _)| *b != 2);
                self.browsers[2] = Some(self.open_browser(2, Some(from), truth, KeyMode::Ok));
                self.seen_sid[2] = None;
            }
            Op::KeyMode { b, mode } => {
                if let Some(br) = self.browsers[b].as_ref() {
                    if br.shared.key.mode.get() != KeyMode::Unavailable {
                        br.shared.key.mode.set(mode);
                    }
                }
            }
            Op::KeyCleared { b } => {
                if let Some(br) = self.browsers[b].as_ref() {
                    br.shared.key.pair.borrow_mut().take();
                }
            }
            Op::StorageRefuses { b, writes } => {
                if let Some(br) = self.browsers[b].as_ref() {
                    br.shared.refuse_writes.set(writes);
                }
            }
            Op::WipeStorage { b } => {
                let Some(br) = self.browsers[b].as_ref() else { return };
                self.ask(b);
                let pending = br.shared.truth.borrow().keys().any(|k| k.ends_with("-losses"));
                if pending {
                    self.reports_wiped.extend(TENANTS.iter().map(|t| t.to_string()));
                }
                br.shared.truth.borrow_mut().clear();
                br.shared.dbs.dbs.borrow_mut().clear();
                for t in 0..TABS {
                    self.replace_tab(b, t, false);
                }
            }
            Op::Arm { b, sel, fault } => {
                if let Some(br) = self.browsers[b].as_ref() {
                    br.shared.net.arm(sel, fault);
                }
            }
            Op::Offline { b, ms } => {
                if let Some(br) = self.browsers[b].as_ref() {
                    br.shared.net.down_until.set(env.now() + ms as i64);
                }
            }
            Op::DocsDown { b, ms } => {
                if let Some(br) = self.browsers[b].as_ref() {
                    br.shared.net.docs_down_until.set(env.now() + ms as i64);
                }
            }
            Op::SetRolling { tenant, on } => {
                let path = format!("/admin/rolling-db/flags/{}?force=true", TENANTS[tenant]);
                let a = self.operate("PATCH", &path, Some(json!({"rollingDb": on}))).await;
                if a.status == 200 {
                    let entry = self.rolling.entry(TENANTS[tenant].into()).or_insert((false, false));
                    if entry.0 != on {
                        *entry = (on, false);
                    }
                }
            }
            Op::Rotate => {
                self.run_cron(mock_server::crons::ROTATE).await;
                for (tenant, entry) in self.rolling.iter_mut() {
                    entry.1 |= entry.0;
                    if entry.0 {
                        self.cored.insert(tenant.clone());
                    }
                }
            }
            Op::Archive => self.run_cron(mock_server::crons::ARCHIVE).await,
            Op::DropEval => self.run_cron(mock_server::crons::DROP_EVAL).await,
            Op::Backup => self.run_cron(mock_server::crons::BACKUP).await,
            Op::Invalidate { tenant } => {
                self.operate("POST", &format!("/admin/invalidate-clients/{}", TENANTS[tenant]), Some(json!({}))).await;
            }
            Op::Rewarm { tenant } => {
                self.operate("POST", &format!("/admin/rolling-db/tenants/{}/rewarm", TENANTS[tenant]), Some(json!({})))
                    .await;
            }
            Op::DeleteDevice { b, by } => self.delete_device(b, by).await,
            Op::PasswordReset { user } => {
                let name = USERS[user].0;
                let Some((id, _)) = self.users.get(name).cloned() else { return };
                let a = self
                    .operate("PATCH", &format!("/users/{id}"), Some(json!({"password": format!("{name}-pass")})))
                    .await;
                if a.status == 200 {
                    env.hist.causes.borrow_mut().push(Cause::UserReset { user: id });
                }
            }
            Op::AcknowledgeLosses { tenant } => {
                // The operator reads the open reports, then acknowledges exactly those.
                let list =
                    self.operate("GET", &format!("/admin/rolling-db/tenants/{}/losses", TENANTS[tenant]), None).await;
                let ids: Vec<Value> = list.json()["reports"]
                    .as_array()
                    .map(|r| r.iter().map(|x| x["reportId"].clone()).collect())
                    .unwrap_or_default();
                if ids.is_empty() {
                    return;
                }
                let path = format!("/admin/rolling-db/tenants/{}/losses/acknowledge", TENANTS[tenant]);
                let a = self.operate("POST", &path, Some(json!({"reportIds": ids}))).await;
                let rolling = self.rolling.get(TENANTS[tenant]).is_some_and(|r| r.0);
                let want = if rolling { 409 } else { 200 };
                if a.status != want {
                    env.hist.violate(
                        env.now(),
                        super::check::ACK_RULE,
                        format!(
                            "{}'s acknowledgement answered {} (rollingDb {rolling}): {}",
                            TENANTS[tenant], a.status, a.body
                        ),
                    );
                } else {
                    env.hist.reach(if rolling {
                        "acknowledgements refused on a rolling tenant"
                    } else {
                        "losses acknowledged"
                    });
                }
            }
            Op::LogoutElsewhere { user, scope } => {
                let name = USERS[user].0;
                let body = json!({"username": name, "password": format!("{name}-pass"), "deviceInfo": {}}).to_string();
                let a = env.server.handle("POST", "/auth", None, &[], Some(body)).await;
                learn_session(&env.hist, usize::MAX, env.now(), &a.json());
                let Some(token) = a.json()["token"].as_str().map(str::to_owned) else { return };
                let body = json!({"scope": scope.name()});
                let out = self.as_user(&token, "POST", "/auth/logout", Some(body)).await;
                if (200..300).contains(&out.status) {
                    let sid = super::history::History::sid_of_jwt(&token).unwrap_or_default();
                    let user = self.users.get(name).map(|u| u.0.clone()).unwrap_or_default();
                    env.hist.causes.borrow_mut().push(Cause::Logout {
                        sid,
                        user,
                        scope: scope.name().into(),
                        browser: usize::MAX,
                    });
                }
            }
            Op::Wait { ms } => super::env::SimClock::sleep(ms).await,
        }
    }

    fn spawn_in<F, Fut>(&self, b: usize, t: usize, work: F)
    where
        F: FnOnce(session_broker::core::session::Session) -> Fut,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        if let Some(tab) = self.tab(b, t) {
            tab.spawn(work(tab.session.clone()));
        }
    }

    /// The tab closes (reloads: a fresh page on the same storage) or freezes (its lock held for
    /// good; a fresh page takes its place).
    fn replace_tab(&mut self, b: usize, t: usize, frozen: bool) {
        let env = self.env.clone();
        let Some(br) = self.browsers[b].as_mut() else { return };
        let t = t % br.tabs.len();
        let slot = br.next_slot;
        br.next_slot += 1;
        if frozen {
            freeze_lock(&br.shared, br.tabs[t].slot);
        }
        br.tabs[t].stop(&br.shared);
        env.hist.closed.borrow_mut().insert((b, br.tabs[t].slot));
        br.tabs[t] = Tab::open(&env, &br.shared, slot);
    }

    async fn run_cron(&mut self, name: &str) {
        let Some(cron) = mock_server::crons::find(name) else { return };
        self.env.server.tick();
        let actor = mock_server::store::audit::Actor { id: "sim-operator".into(), ip: None };
        if let Err(e) = mock_server::crons::runner::run_here(&self.env.server.state, cron, &actor) {
            self.env.hist.violate(self.env.now(), "an operator's step runs", format!("{name}: {e}"));
        }
        self.env.hist.note(self.env.now(), format!("operator ran {name}"));
    }

    /// A device deleted by its user (through the SDK), a manager or sys_admin; the answer must
    /// be what the permission rule says.
    async fn delete_device(&mut self, b: usize, by: By) {
        let Some(br) = self.browsers[b].as_ref() else { return };
        let Some(device) = br.shared.truth.borrow().get(keys::DEVICE_ID).cloned() else { return };
        let owner_token = br.shared.truth.borrow().get(keys::AUTH).cloned();
        let path = format!("/devices/{device}");
        let token = match by {
            By::Owner => match owner_token {
                Some(t) => t,
                None => return,
            },
            By::Manager => self.sign_in("bob").await.unwrap_or_default(),
            By::Admin => self.admin().await,
        };
        let record = self.env.server.device(&device);
        let a = self.as_user(&token, "DELETE", &path, None).await;
        if (200..300).contains(&a.status) {
            let sessions = record.as_ref().map(|r| r.2.clone()).unwrap_or_default();
            self.env.hist.causes.borrow_mut().push(Cause::DeviceDeleted { device: device.clone(), sessions });
        }
        super::check::deletion_as_ruled(self, record, &token, a.status);
    }
}
