//! The invariants, checked after every step and at the end of a run. Each reads what the run
//! observed (the history, the browsers' storage and events) and the server's own record.

use std::collections::BTreeMap;

use mock_server::store::refresh_tokens::SessionState;
use serde_json::Value;
use session_broker::core::keys;
use session_broker::core::session::AuthEvent;

use super::browser::KeyStore;
use super::history::{Cause, History};
use super::world::World;

/// How long after a completed logout every tab of its browser has let go of the session and been
/// told: the slowest `storage` event, and the sign-out handlers' own bound.
pub const LOGOUT_BOUND_MS: i64 = 15_000;

pub const SESSION_ENDS: &str = "a session ends on the server only for a cause";
pub const ONE_PRESENTATION: &str = "one refresh token presented twice by a browser's tabs";
pub const LOGOUT_EVERYWHERE: &str = "a completed logout leaves no tab with the session";
pub const KEY_KEPT: &str = "the key's own browser is never signed out for want of a proof";
pub const NO_DROP: &str = "the SDK drops a live session only for a cause";
pub const LOSSES_ONCE: &str = "every document destroyed unpushed is counted once";
pub const ALARM_TRUE: &str = "an alarm is raised only for a loss that happened";
pub const PROVEN_BOUND: &str = "a sign-in proven by its device's key is bound to it";
pub const DATA_APART: &str = "a browser holds no local data of another tenant than its session's";
pub const ACK_RULE: &str = "an acknowledgement resolves what the operator read, never on a rolling tenant";
pub const DELETION_RULE: &str = "a device is deleted exactly by whom the rule allows";
pub const DEVICES_LISTED: &str = "every browser holding a session is listed by GET /devices and can be deleted";
pub const SETTLES: &str = "every operation settles";
pub const METRICS: &str = "/metrics always scrapes";
pub const CORE_ROUTING: &str = "CORE is routed to only after a rotate since the latest enable";
pub const OWN_TENANT: &str = "a realtime session is answered for its own tenant only";

/// After every step.
pub async fn after_step(w: &mut World) {
    tenants_data_apart(w);
    sessions_end_with_cause(w);
    logouts_reach_every_tab(w);
    key_browser_kept(w);
    no_drop_without_cause(w);
    handshakes_as_ruled(w);
}

/// The server's operator views, after every few steps and at the end.
pub async fn views(w: &mut World) {
    losses_never_overcounted(w, false).await;
    metrics_scrape(w).await;
    // The operators' other reads answer (500s are caught by `operate`).
    for path in ["/health", "/admin/audit?limit=20", "/admin/crons"] {
        w.operate("GET", path, None).await;
    }
    for tenant in super::ops::TENANTS {
        for view in ["preflight", "topology", "reconciliation", "cleanup-candidates", "core-writes"] {
            w.operate("GET", &format!("/admin/rolling-db/tenants/{tenant}/{view}"), None).await;
        }
    }
}

/// Once the browser's session has settled (no login, logout or company change running), its
/// local databases hold only its tenant's data: what another tenant's session left was pushed
/// and destroyed when the session changed.
fn tenants_data_apart(w: &World) {
    let env = &w.env;
    for (b, br) in w.browsers.iter().enumerate() {
        let Some(br) = br else { continue };
        let tenant = br
            .shared
            .truth
            .borrow()
            .get(keys::AUTH)
            .and_then(|t| session_broker::core::token::Claims::decode(t).ok().and_then(|c| c.company_id()));
        let Some(tenant) = tenant else { continue };
        if w.asking.borrow()[b] > 0
            || br.tabs.iter().any(|t| t.view.borrow().get(keys::AUTH) != br.shared.truth.borrow().get(keys::AUTH))
        {
            continue;
        }
        let dbs = br.shared.dbs.dbs.borrow();
        if let Some(order) = dbs.values().flatten().find(|o| o.tenant != tenant) {
            env.hist.violate(
                env.now(),
                DATA_APART,
                format!("browser {b}, signed in to {tenant}, still holds order {} of {}", order.id, order.tenant),
            );
        }
    }
}

fn sessions_end_with_cause(w: &World) {
    let env = &w.env;
    let h = &env.hist;
    let now = env.now();
    let sids: Vec<String> = h.families.borrow().iter().filter(|(_, f)| !f.ended).map(|(s, _)| s.clone()).collect();
    for sid in sids {
        if env.server.session_state(&sid) == SessionState::Live {
            continue;
        }
        let fam = {
            let mut families = h.families.borrow_mut();
            let f = families.get_mut(&sid).expect("listed above");
            f.ended = true;
            f.clone()
        };
        if !env.server.revoked(&sid) {
            h.reach("sessions that ran out");
            continue;
        }
        let keyed = |s: &str| !env.server.bound_keys(s).is_empty();
        let began_in = |s: &str| h.families.borrow().get(s).map(|f| f.browser);
        let causes = h.causes.borrow();
        let by_logout = causes.iter().any(|c| match c {
            Cause::Logout { sid: from, user, scope, browser } => {
                let covers = match scope.as_str() {
                    "others" => *user == fam.user && *from != sid,
                    "global" => *user == fam.user,
                    _ => *from == sid,
                };
                // A logout is its user's when sent from where the session runs: a keyed session
                // only from the browser it began in (a copy of the storage is not its user).
                let own = *browser == usize::MAX || began_in(from) == Some(*browser) || !keyed(from);
                covers && own
            }
            _ => false,
        });
        let by_operator = causes.iter().any(|c| match c {
            Cause::UserReset { user } => *user == fam.user,
            Cause::DeviceDeleted { sessions, .. } => sessions.contains(&sid),
            _ => false,
        });
        let reused = h
            .refresh_of
            .borrow()
            .iter()
            .filter(|(_, s)| **s == sid)
            .any(|(token, _)| h.refresh_presented.borrow().get(token).copied().unwrap_or(0) >= 2);
        if by_logout {
            h.reach("sessions ended by a logout");
        } else if by_operator {
            h.reach("sessions ended by an operator");
        } else if reused {
            h.reach("sessions ended by a refresh token presented twice");
        } else {
            let recent: Vec<String> = h.trace.borrow().iter().rev().take(12).rev().cloned().collect();
            h.violate(
                now,
                SESSION_ENDS,
                format!(
                    "session {sid} of {} (begun in browser {}) was ended with no logout of its user, no operator's \
                     step and no refresh token presented twice; recently: {recent:#?}",
                    fam.user, fam.browser
                ),
            );
        }
    }
}

fn logouts_reach_every_tab(w: &World) {
    let env = &w.env;
    let now = env.now();
    let due: Vec<_> = {
        let mut logouts = w.logouts.borrow_mut();
        let (due, later) = logouts.drain(..).partition(|l| now >= l.at + LOGOUT_BOUND_MS);
        *logouts = later;
        due
    };
    for l in due {
        let Some(br) = w.browser(l.b) else { continue };
        env.hist.reach("completed logouts followed by every tab");
        for tab in br.tabs.iter().filter(|t| l.holders.contains(&t.slot)) {
            if !told_signed_out(&tab.told.borrow(), l.started) {
                env.hist.violate(
                    now,
                    LOGOUT_EVERYWHERE,
                    format!(
                        "browser {} tab {} was never told SIGNED_OUT of session {} after a logout (told {:?})",
                        l.b,
                        tab.slot,
                        l.sid,
                        tab.told.borrow()
                    ),
                );
            }
            let view = tab.view.borrow();
            let holds_token = view.get(keys::AUTH).and_then(|t| History::sid_of_jwt(t)).as_deref() == Some(&l.sid);
            let holds_refresh =
                view.get(keys::REFRESH).and_then(|r| env.hist.refresh_of.borrow().get(r).cloned()).as_deref()
                    == Some(&l.sid);
            if holds_token || holds_refresh {
                env.hist.violate(
                    now,
                    LOGOUT_EVERYWHERE,
                    format!(
                        "browser {} tab {} still holds session {}'s {} {LOGOUT_BOUND_MS} ms after a logout completed",
                        l.b,
                        tab.slot,
                        l.sid,
                        if holds_token { "access token" } else { "refresh token" }
                    ),
                );
            }
        }
    }
}

fn key_browser_kept(w: &World) {
    let env = &w.env;
    for br in w.browsers.iter().flatten() {
        for tab in &br.tabs {
            let unproven: Vec<i64> = {
                let mut outs = tab.sign_outs.borrow_mut();
                let found = outs.iter().filter(|(_, r)| r == "device-unproven").map(|(at, _)| *at).collect();
                outs.clear();
                found
            };
            if unproven.is_empty() || br.shared.copy_of.is_some() {
                if !unproven.is_empty() {
                    env.hist.reach("copies signed out for want of a proof");
                }
                continue;
            }
            let Some(device) = br.shared.truth.borrow().get(keys::DEVICE_ID).cloned() else { continue };
            let held = br.shared.key.pair.borrow().as_ref().map(KeyStore::public_hex);
            if held.is_some() && held == env.server.device_key(&device) {
                env.hist.violate(
                    env.now(),
                    KEY_KEPT,
                    format!("browser {} (holding device {device}'s key) was signed out: device-unproven", br.shared.id),
                );
            }
        }
    }
}

fn no_drop_without_cause(w: &mut World) {
    let env = w.env.clone();
    for b in 0..w.browsers.len() {
        let now_sid = w.browser(b).and_then(|br| br.shared.sid());
        let asked = std::mem::take(&mut w.asked.borrow_mut()[b]) || w.asking.borrow()[b] > 0;
        let before = std::mem::replace(&mut w.seen_sid[b], now_sid.clone());
        let (Some(before), Some(br)) = (before, w.browser(b)) else { continue };
        if now_sid.as_ref() == Some(&before) || asked {
            continue;
        }
        let shared = &br.shared;
        let ended = env.server.session_state(&before) != SessionState::Live;
        let copy_of_keyed = shared.copy_of.is_some() && !env.server.bound_keys(&before).is_empty();
        let device = shared.truth.borrow().get(keys::DEVICE_ID).cloned();
        let key_lost = device.is_some_and(|d| {
            let held = shared.key.pair.borrow().as_ref().map(KeyStore::public_hex);
            env.server.device_key(&d).is_some_and(|k| Some(k) != held)
        });
        let began = env.hist.families.borrow().get(&before).map_or(0, |f| f.began_at);
        if ended || copy_of_keyed || key_lost || shared.refused_since(began) {
            env.hist.reach("sessions dropped by the SDK for a cause");
            continue;
        }
        let recent: Vec<String> = env.hist.trace.borrow().iter().rev().take(16).rev().cloned().collect();
        let told: Vec<_> =
            br.tabs.iter().map(|t| (t.slot, t.told.borrow().clone(), t.sign_outs.borrow().clone())).collect();
        env.hist.violate(
            env.now(),
            NO_DROP,
            format!(
                "browser {b} dropped session {before} (now {now_sid:?}), which lives on the server, unasked; its tabs were told \
                 {told:?}; recently: {recent:#?}"
            ),
        );
    }
}

/// A realtime session's `ready`: its own tenant's databases, CORE only after a rotate.
fn handshakes_as_ruled(w: &World) {
    let env = &w.env;
    for br in w.browsers.iter().flatten() {
        for tab in &br.tabs {
            let Some(routing) = tab.sync.routing() else { continue };
            let company = routing["companyId"].as_str().unwrap_or_default().to_owned();
            let own = tab.session.current_company().and_then(|c| c["id"].as_str().map(str::to_owned));
            if own.as_ref().is_some_and(|o| *o != company) && tab.sync.state().as_str() == "ready" {
                // A company change closes the realtime session; until its close lands the routing
                // may be the previous company's. Only a session that stays ready for another
                // tenant is wrong: judged when it settles (at the end).
                continue;
            }
            if routing["database"] == "core" {
                env.hist.reach("handshakes routed to CORE");
                // A routing is kept from its `ready` until the next handshake: judged against the
                // whole run (CORE never possible for the tenant), not the flags of now.
                if !w.cored.contains(&company) {
                    env.hist.violate(env.now(), CORE_ROUTING, format!("{company} routed to CORE: {routing}"));
                }
            }
        }
    }
}

/// What the devices reported lost never exceeds what they destroyed; at the end, once every
/// report could be sent, it equals it. No device-data-lost alarm without a loss.
pub async fn losses_never_overcounted(w: &mut World, exact: bool) {
    // What the SDKs destroyed unpushed on a registered device, by tenant; and of it, what a device
    // that can still prove itself has to report (a browser that lost the key its device registered
    // has nobody to report to).
    let mut destroyed: BTreeMap<String, u64> = BTreeMap::new();
    let mut provable = 0u64;
    for br in w.browsers.iter().flatten() {
        let held = br.shared.key.pair.borrow().as_ref().map(KeyStore::public_hex);
        for (order, device) in br.shared.dbs.destroyed_unpushed.borrow().iter() {
            let Some(id) = device else { continue };
            *destroyed.entry(order.tenant.clone()).or_default() += 1;
            if w.env.server.device_key(id).is_none_or(|k| Some(k) == held) {
                provable += 1;
            }
        }
    }
    // Counted over the tenants: a database holds one tenant's data as the SDK's ledger names its
    // owner, while a tab whose view of storage lags may write into it for the session before.
    let fleet = w.operate("GET", "/admin/rolling-db/tenants", None).await.json();
    let now = w.env.now();
    let mut reported = 0u64;
    for t in fleet["tenants"].as_array().cloned().unwrap_or_default() {
        reported += t["deviceLosses"].as_object().map_or(0, |l| l.values().filter_map(Value::as_u64).sum::<u64>());
    }
    let lost: u64 = destroyed.values().sum();
    if reported > lost {
        w.env.hist.violate(now, LOSSES_ONCE, format!("{reported} documents reported lost, {lost} destroyed"));
    } else if exact && reported < provable && w.reports_wiped.is_empty() {
        w.env.hist.violate(
            now,
            LOSSES_ONCE,
            format!("{provable} documents destroyed unpushed, {reported} counted once every device was online"),
        );
    }
    if reported > 0 {
        w.env.hist.reach("device losses counted by the server");
    }
    let cluster = w.operate("GET", "/admin/rolling-db/cluster", None).await.json();
    for t in cluster["attention"].as_array().cloned().unwrap_or_default() {
        let tenant = t["companyId"].as_str().unwrap_or_default();
        let alarmed = t["alarms"].as_array().is_some_and(|a| a.iter().any(|x| x["kind"] == "device-data-lost"));
        if alarmed && destroyed.get(tenant).copied().unwrap_or(0) == 0 {
            w.env.hist.violate(
                now,
                ALARM_TRUE,
                format!("{tenant} has a device-data-lost alarm; nothing was destroyed"),
            );
        }
    }
}

async fn metrics_scrape(w: &World) {
    use tower::ServiceExt;
    w.env.server.tick();
    let req = axum::http::Request::builder().uri("/metrics").body(axum::body::Body::empty()).expect("a request");
    let res = mock_server::metrics::router(w.env.server.state.clone()).oneshot(req).await.expect("infallible");
    if res.status() != 200 {
        let status = res.status();
        let body = axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap_or_default();
        w.env.hist.violate(
            w.env.now(),
            METRICS,
            format!("/metrics answered {status}: {}", String::from_utf8_lossy(&body)),
        );
    }
}

/// A deletion's answer against the rule: its own user (from any of their companies), sys_admin
/// (in any), or a manager of the device's company for a user holding no role above a manager's.
pub fn deletion_as_ruled(w: &World, device: Option<(String, String, Vec<String>)>, token: &str, status: u16) {
    let Some((owner, company, _)) = device else { return };
    let Ok(claims) = session_broker::core::token::Claims::decode(token) else { return };
    let roles = claims.roles();
    let admin = roles.iter().any(|r| r == "sys_admin");
    let target_roles = w.users.values().find(|(id, _)| *id == owner).map(|(_, r)| r.clone()).unwrap_or_default();
    let above = target_roles.iter().any(|r| r == "sys_admin" || r == "key_manager");
    let same_company = claims.company_id().as_deref() == Some(company.as_str());
    let own = claims.user_id().as_deref() == Some(owner.as_str());
    let manager = roles.iter().any(|r| r == "manager");
    let allowed = admin || own || (same_company && manager && !above);
    let live = w.env.server.session_state(&History::sid_of_jwt(token).unwrap_or_default()) == SessionState::Live;
    if !live {
        return;
    }
    let deleted = (200..300).contains(&status);
    if deleted != allowed {
        w.env.hist.violate(
            w.env.now(),
            DELETION_RULE,
            format!(
                "a deletion of {owner}'s device by roles {roles:?} answered {status}; the rule says allowed={allowed}"
            ),
        );
    } else {
        w.env.hist.reach(if deleted { "devices deleted" } else { "deletions refused" });
    }
}

/// The realtime sessions settled: each ready one is its session's tenant's.
pub fn settled_handshakes(w: &World) {
    let env = &w.env;
    for br in w.browsers.iter().flatten() {
        for tab in &br.tabs {
            if tab.sync.state().as_str() != "ready" {
                continue;
            }
            let Some(routing) = tab.sync.routing() else { continue };
            // The stored session's tenant, expired or not (a refresh may have failed to store).
            let own = tab
                .view
                .borrow()
                .get(keys::AUTH)
                .and_then(|t| session_broker::core::token::Claims::decode(t).ok())
                .and_then(|c| c.company_id());
            if own.as_deref() != routing["companyId"].as_str() {
                env.hist.violate(
                    env.now(),
                    OWN_TENANT,
                    format!(
                        "browser {} tab {} is ready for {} while signed in to {own:?}",
                        br.shared.id, tab.slot, routing["companyId"]
                    ),
                );
            }
        }
    }
}

/// Whether any of `told` says the session ended after `since`.
pub fn told_signed_out(told: &[(i64, AuthEvent, String)], since: i64) -> bool {
    told.iter().any(|(at, e, _)| *at >= since && *e == AuthEvent::SignedOut)
}
