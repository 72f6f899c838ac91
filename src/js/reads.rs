//! The synchronous reads' cache in the package's entry module (`pkg-template/session_broker.js`):
//! a call on an unchanged stored token compares one `localStorage.getItem` with the text it last
//! saw and answers from JS, without crossing into the module. The module computes what is cached
//! ([`Session::read_snapshot`]); the storage adapter says when it stops being true
//! (`web::storage`). The rules stay in the core.

use js_sys::{Array, Object};
use wasm_bindgen::prelude::*;

use super::auth_manager::{refused, AuthManager};
use super::convert::{string_arg, to_js};
use crate::core::keys;
use crate::core::session::{Refusal, Session};
use crate::web::codec::set;

/// The snapshot as the entry module reads it: `{key, expiresKey, token, expiredFrom, expiresAt, usable, user, roles}`.
fn snapshot(session: &Session) -> Object {
    let snap = session.read_snapshot();
    let out = Object::new();
    set(&out, "key", &JsValue::from_str(keys::AUTH));
    set(&out, "expiresKey", &JsValue::from_str(keys::EXPIRES_AT_AUTH));
    set(&out, "token", &snap.token.as_deref().map_or(JsValue::NULL, JsValue::from_str));
    set(&out, "expiredFrom", &JsValue::from_f64(snap.window.expired_from));
    set(&out, "expiresAt", &JsValue::from_f64(snap.window.expires_at));
    set(&out, "usable", &JsValue::from_bool(snap.token_usable));
    set(&out, "user", &snap.user.as_ref().map_or(JsValue::NULL, to_js));
    set(&out, "roles", &snap.roles.iter().map(|r| JsValue::from_str(r)).collect::<Array>());
    out
}

#[wasm_bindgen]
impl AuthManager {
    /// For the entry module's read cache only; with the token a request was `sent` with (for
    /// `auth.fetch`), the snapshot also says whether that request may go again with the stored
    /// token (`replay`: the core's rule, [`Session::may_replay`]).
    #[wasm_bindgen(js_name = __sbReads, skip_typescript)]
    pub fn reads_snapshot(&self, sent: JsValue) -> JsValue {
        let out = snapshot(self.session());
        if let Some(sent) = sent.as_string() {
            set(&out, "replay", &JsValue::from_bool(self.session().may_replay(&sent)));
        }
        out.into()
    }

    /// For the entry module's read cache only, on a token `getToken()` answers as it is:
    /// whether its roles allow `action`; throws for an action nobody knows (rejected by
    /// `hasPermission`, an async method).
    #[wasm_bindgen(js_name = __sbAllows, skip_typescript)]
    pub fn allows(&self, action: JsValue) -> Result<bool, JsValue> {
        let action = string_arg(&action, "action")?;
        // Not the expiry again: the cache judged the token valid, and a clock read here could
        // fall a millisecond later (hasPermission never rejects for an expiry).
        match self.session().judge_permission(&action, false) {
            Ok(()) => Ok(true),
            Err(Refusal::Denied | Refusal::NotSignedIn) => Ok(false),
            Err(r) => Err(refused(r, &action)),
        }
    }
}

/// The reads as Rust callers (the browser suites) make them. In the package the entry module's
/// cache answers the first five (methods of its `AuthManager`, declared in `pkg-template/api.d.ts`),
/// so they have no exports and the package carries no wrappers it never calls;
/// `getTrackedLocalDatabases` is exported as a JS array.
impl AuthManager {
    /// `getToken()`: the access token, refreshed first inside the margin, or `null` (the entry
    /// module's own is made from `__sbToken`).
    pub fn get_token(&self) -> js_sys::Promise {
        let answer = self.session().token_answer();
        super::convert::promise(async move {
            answer.outcome().await.token().map_or(serde_json::Value::Null, serde_json::Value::String)
        })
    }

    /// True without a token, or inside the one-minute margin before its expiry.
    pub fn is_token_expired(&self) -> bool {
        self.session().is_token_expired()
    }

    /// True inside the one-minute margin, before the expiry itself.
    pub fn is_about_to_expire(&self) -> bool {
        self.session().is_about_to_expire()
    }

    /// Whether `localStorage` holds an access token.
    pub fn check_if_logged_in(&self) -> bool {
        self.session().check_if_logged_in()
    }

    /// The access token's claims, or `null`.
    pub fn get_current_user(&self) -> JsValue {
        to_js(&self.session().current_user().unwrap_or(serde_json::Value::Null))
    }

    /// The token's roles; `[]` without a token.
    pub fn get_current_roles(&self) -> Vec<String> {
        self.session().current_roles()
    }

    /// The tracked local database names (`getTrackedLocalDatabases`, as Rust callers read it).
    pub fn get_tracked_local_databases(&self) -> Vec<String> {
        self.session().tracked_local_databases()
    }
}
