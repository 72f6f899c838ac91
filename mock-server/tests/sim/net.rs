//! The network between each tab and the server: every request and every answer delayed as the
//! seed says, and, where a fault is armed, dropped before the server acts, dropped after it
//! acted, duplicated, slowed to the edge of the timeout or timed out (the request still arriving
//! late). The SDK's transport port runs over it, with the device key's proof made as the
//! browser's transport makes it (src/web/browser.js, `sbFetch` and `sbProof`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use p256::ecdsa::signature::Signer;
use serde_json::{json, Value};
use session_broker::core::ports::{HttpRequest, HttpResponse, LocalBoxFuture, Transport, TransportError};
use session_broker::protocol::routes;

use super::browser::{BrowserShared, KeyMode};
use super::env::{Env, SimClock};
use super::history::{Cause, Family, History};
use super::server::Answer;

/// Where an armed fault strikes: the next request of this kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sel {
    Any,
    Refresh,
    Nonce,
    Logout,
    Login,
    Losses,
    Docs,
}

impl Sel {
    fn matches(self, route: &str) -> bool {
        let path = route.split_once(' ').map_or(route, |(_, p)| p);
        match self {
            Sel::Any => true,
            Sel::Refresh => path == routes::REFRESH.path,
            Sel::Nonce => path == routes::DEVICE_NONCE.path,
            Sel::Logout => path == routes::LOGOUT.path,
            Sel::Login => path == routes::LOGIN.path || path == routes::LOGIN_GOOGLE.path,
            Sel::Losses => path == routes::DEVICE_LOSSES.path,
            Sel::Docs => path.starts_with("/docdb/"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Lost on the way: the server never sees it.
    DropBefore,
    /// The server acts; its answer is lost.
    DropAfter,
    /// The server gets it twice; the client one answer.
    Duplicate,
    /// Delivered just inside the timeout.
    Slow,
    /// The client gives up at its timeout; the request reaches the server after.
    Timeout,
}

/// A browser's link to the server.
#[derive(Default)]
pub struct Net {
    armed: RefCell<Vec<(Sel, Fault)>>,
    /// Offline until then (simulated ms).
    pub down_until: Cell<i64>,
    /// The document side (pushes) failing until then.
    pub docs_down_until: Cell<i64>,
}

impl Net {
    pub fn arm(&self, sel: Sel, fault: Fault) {
        self.armed.borrow_mut().push((sel, fault));
    }

    pub fn heal(&self) {
        self.armed.borrow_mut().clear();
        self.down_until.set(0);
        self.docs_down_until.set(0);
    }

    fn take(&self, route: &str) -> Option<Fault> {
        let mut armed = self.armed.borrow_mut();
        let at = armed.iter().position(|(sel, _)| sel.matches(route))?;
        Some(armed.remove(at).1)
    }
}

/// One request through the browser's link. `from_sdk`: the SDK sent it (the app's own and the
/// harness's requests go through the same link, unrecorded).
pub struct Exchange<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub bearer: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub tab: usize,
}

pub async fn exchange(env: &Rc<Env>, b: &Rc<BrowserShared>, x: Exchange<'_>) -> Result<Answer, TransportError> {
    let route_path = x.path.split('?').next().unwrap_or(x.path).to_owned();
    let route = format!("{} {route_path}", x.method);
    let now = env.now();
    let refresh = (route_path == routes::REFRESH.path)
        .then(|| x.body.as_deref().and_then(|s| serde_json::from_str::<Value>(s).ok()))
        .flatten()
        .and_then(|v| v["refreshToken"].as_str().map(str::to_owned));
    if let Some(token) = &refresh {
        let key = (b.id, token.clone());
        if env.hist.refresh_answered.borrow().contains(&key) {
            env.hist.violate(
                now,
                super::check::ONE_PRESENTATION,
                format!(
                    "browser {} tab {} sent a refresh token whose refresh it already had the answer to",
                    b.id, x.tab
                ),
            );
        }
        let closed = env.hist.closed.borrow();
        let live = |tab: &usize| !closed.contains(&(b.id, *tab));
        if env.hist.refresh_in_flight.borrow().get(&key).is_some_and(|tabs| tabs.iter().any(live)) {
            env.hist.violate(
                now,
                super::check::ONE_PRESENTATION,
                format!(
                    "browser {} tab {} sent a refresh token another of its requests was still presenting",
                    b.id, x.tab
                ),
            );
        }
        drop(closed);
        env.hist.refresh_in_flight.borrow_mut().entry(key).or_default().push(x.tab);
    }
    // The request stops being the browser's when it settles, or when its tab closes mid-way.
    let _in_flight = refresh.clone().map(|token| InFlight(env.clone(), (b.id, token), x.tab));
    let docs = route_path.starts_with("/docdb/");
    let down = b.net.down_until.get() > now || (docs && b.net.docs_down_until.get() > now);
    let fault = if down { Some(Fault::DropBefore) } else { b.net.take(&route) };
    let timeout = u64::from(env.config.timeout_ms);
    let (mut there, back) = (env.draw(env.config.max_latency_ms), env.draw(env.config.max_latency_ms));
    match fault {
        Some(Fault::Slow) => there = timeout.saturating_sub(back + 50),
        Some(Fault::Timeout) => there = timeout + env.draw(timeout),
        _ => {}
    }
    env.hist.note(now, format!("b{} t{} -> {route} {fault:?}", b.id, x.tab));
    let (envc, bc) = (env.clone(), b.clone());
    let (method, path, bearer, headers, body) = (x.method.to_owned(), x.path.to_owned(), x.bearer, x.headers, x.body);
    let presented = refresh.clone();
    let trip = tokio::task::spawn_local(async move {
        SimClock::sleep(there).await;
        if fault == Some(Fault::DropBefore) {
            return None;
        }
        let serve = || envc.server.handle(&method, &path, bearer.as_deref(), &headers, body.clone());
        let answer = serve().await;
        arrived(&envc, &bc, &route, bearer.as_deref(), body.as_deref(), &answer, presented.as_deref(), false);
        if fault == Some(Fault::Duplicate) {
            SimClock::sleep(envc.draw(envc.config.max_latency_ms)).await;
            let again = serve().await;
            arrived(&envc, &bc, &route, bearer.as_deref(), body.as_deref(), &again, None, true);
        }
        SimClock::sleep(back).await;
        (fault != Some(Fault::DropAfter)).then_some(answer)
    });
    let out = match tokio::time::timeout(std::time::Duration::from_millis(timeout), trip).await {
        Err(_) => Err(TransportError::Timeout),
        Ok(Ok(Some(answer))) => Ok(answer),
        Ok(_) => Err(TransportError::Network("the connection was lost".into())),
    };
    if let Some(token) = refresh {
        let key = (b.id, token);
        // An answer that spent the token (a refusal for want of a proof did not).
        if matches!(&out, Ok(a) if matches!(a.status, 200 | 400 | 401 | 403) && a.json()["error"] != "device_proof_required")
        {
            env.hist.refresh_answered.borrow_mut().insert(key);
        }
    }
    let told = out.as_ref().map_or_else(
        |e| e.message(),
        |a| {
            if a.status < 300 {
                a.status.to_string()
            } else {
                format!("{} {}", a.status, a.body.chars().take(160).collect::<String>())
            }
        },
    );
    env.hist.note(env.now(), format!("b{} t{} <- {told}", b.id, x.tab));
    out
}

/// A refresh token a browser's request is presenting now.
struct InFlight(Rc<Env>, (usize, String), usize);

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(tabs) = self.0.hist.refresh_in_flight.borrow_mut().get_mut(&self.1) {
            if let Some(at) = tabs.iter().position(|t| *t == self.2) {
                tabs.remove(at);
            }
        }
    }
}

/// What the server did with a request, as the invariants need it.
#[allow(clippy::too_many_arguments)] // one call site a delivery: what the server saw, in full
fn arrived(
    env: &Env,
    b: &BrowserShared,
    route: &str,
    bearer: Option<&str>,
    body: Option<&str>,
    answer: &Answer,
    presented: Option<&str>,
    duplicate: bool,
) {
    let h = &env.hist;
    let now = env.now();
    if answer.status >= 500 {
        h.violate(now, "the server never answers 500", format!("{route} answered {} {}", answer.status, answer.body));
    }
    if let Some(token) = presented {
        *h.refresh_presented.borrow_mut().entry(token.to_owned()).or_default() += 1;
    }
    let path = route.split_once(' ').map_or(route, |(_, p)| p);
    let ok = (200..300).contains(&answer.status);
    if ok && [routes::LOGIN.path, routes::LOGIN_GOOGLE.path, routes::REFRESH.path].contains(&path) {
        learn_session(h, b.id, now, &answer.json());
    }
    // (A network's duplicate comes with a proof already spent: its session is nobody's.)
    if ok && !duplicate && [routes::LOGIN.path, routes::LOGIN_GOOGLE.path].contains(&path) {
        bound_when_proven(env, b, body, &answer.json());
    }
    if ok && path == routes::LOGOUT.path {
        let sid = bearer.and_then(History::sid_of_jwt).unwrap_or_default();
        let user = bearer
            .and_then(|t| session_broker::core::token::Claims::decode(t).ok())
            .and_then(|c| c.user_id())
            .unwrap_or_default();
        let scope = body
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .and_then(|v| v["scope"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "local".into());
        h.causes.borrow_mut().push(Cause::Logout { sid, user, scope, browser: b.id });
    }
}

/// A sign-in (a password's or Google's) that proved the key of a device its user registered with
/// that key runs on the device: its session is bound to the key (a copy cannot refresh it).
fn bound_when_proven(env: &Env, b: &BrowserShared, body: Option<&str>, answer: &Value) {
    let request: Value = body.and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
    let (Some(device), true) = (request["deviceInfo"]["id"].as_str(), request.get("deviceProof").is_some()) else {
        return;
    };
    let Some(claims) = answer["token"].as_str().and_then(|t| session_broker::core::token::Claims::decode(t).ok())
    else {
        return;
    };
    let held = b.key.pair.borrow().as_ref().map(super::browser::KeyStore::public_hex);
    let owner = env.server.device(device).map(|d| d.0);
    let registered = env.server.device_key(device);
    if owner.is_none() || owner != claims.user_id() || registered.is_none() || registered != held {
        return;
    }
    let sid = claims.sid().unwrap_or_default();
    if env.server.bound_keys(&sid).is_empty() {
        env.hist.violate(
            env.now(),
            super::check::PROVEN_BOUND,
            format!("session {sid} signed in with a proof of device {device}'s key is not bound to it"),
        );
    } else {
        env.hist.reach("proven sign-ins bound to the device's key");
    }
}

/// A session's tokens in an answer: its family, and its refresh token's.
pub fn learn_session(h: &History, browser: usize, now: i64, answer: &Value) {
    let (Some(token), Some(refresh)) = (answer["token"].as_str(), answer["refreshToken"].as_str()) else { return };
    let Ok(claims) = session_broker::core::token::Claims::decode(token) else { return };
    let Some(sid) = claims.sid() else { return };
    h.refresh_of.borrow_mut().insert(refresh.to_owned(), sid.clone());
    h.families.borrow_mut().entry(sid).or_insert(Family {
        user: claims.user_id().unwrap_or_default(),
        browser,
        began_at: now,
        ended: false,
    });
}

/// The SDK's transport in one tab.
pub struct SimTransport {
    pub env: Rc<Env>,
    pub browser: Rc<BrowserShared>,
    pub tab: usize,
}

const BASE: &str = "http://sim";

impl Transport for SimTransport {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        let (env, b, tab) = (self.env.clone(), self.browser.clone(), self.tab);
        Box::pin(async move {
            let path = request.url.strip_prefix(BASE).unwrap_or(&request.url).to_owned();
            let mut body = request.body;
            if let Some((nonce_url, route)) = request.prove {
                if let Some(proof) = prove(&env, &b, tab, &nonce_url, &route, request.keyed).await? {
                    let mut v: Value = body.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or(json!({}));
                    v["deviceProof"] = proof;
                    body = Some(v.to_string());
                }
            }
            let x = Exchange {
                method: request.method.as_str(),
                path: &path,
                bearer: request.bearer,
                headers: vec![],
                body,
                tab,
            };
            let a = exchange(&env, &b, x).await?;
            Ok(HttpResponse { status: a.status, body: a.body, retry_after: a.retry_after })
        })
    }
}

/// The proof of the browser's key for `route`, as `sbProof` makes it: none where no key is kept;
/// a failure (as the network's) where the nonce cannot be had, or the key store fails on a
/// device known to be keyed.
async fn prove(
    env: &Rc<Env>,
    b: &Rc<BrowserShared>,
    tab: usize,
    nonce_url: &str,
    route: &str,
    keyed: bool,
) -> Result<Option<Value>, TransportError> {
    let key = match b.key.mode.get() {
        // A key store that cannot be read fails a request of a device known to be keyed; any
        // other goes unproven (a browser where IndexedDB never opens keeps no key).
        KeyMode::Failing | KeyMode::Unavailable if keyed => {
            return Err(TransportError::Network("the key store failed".into()))
        }
        KeyMode::Failing | KeyMode::Unavailable => None,
        KeyMode::Ok => b.key.pair.borrow().clone(),
    };
    let Some(key) = key else { return Ok(None) };
    let path = nonce_url.strip_prefix(BASE).unwrap_or(nonce_url);
    let x = Exchange { method: "POST", path, bearer: None, headers: vec![], body: Some("{}".into()), tab };
    let a = exchange(env, b, x).await?;
    let nonce = (a.status == 200).then(|| a.json()["nonce"].as_str().map(str::to_owned)).flatten();
    let Some(nonce) = nonce else {
        return Err(TransportError::Network(format!("the device nonce route answered HTTP {}", a.status)));
    };
    let (method, path) = route.split_once(' ').unwrap_or(("POST", route));
    let signature: p256::ecdsa::Signature = key.sign(protocol::device_proof_message(method, path, &nonce).as_bytes());
    Ok(Some(json!({"nonce": nonce, "signature": hex::encode(signature.to_bytes())})))
}
