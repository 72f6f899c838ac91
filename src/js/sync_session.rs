//! `SyncSession`: the JS face of `core::sync_session::SyncSession`.

use js_sys::{Function, Promise};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{object_arg, string_arg, to_js};
use super::errors::{error, invalid};
use super::hooks::subscribe;
use super::types::SyncSessionOptionsArg;
use super::AuthManager;
use crate::core::codes;
use crate::core::hooks::HookList;
use crate::core::sync_session::{SyncFailure, SyncSession as CoreSync};
use crate::core::url::realtime_url;

/// The device's realtime session: handshake, invalidation, routing and catalogue bootstrap.
#[wasm_bindgen]
pub struct SyncSession {
    inner: CoreSync,
}

fn failure_error(f: &SyncFailure) -> JsValue {
    let code = match f {
        SyncFailure::NotSignedIn => codes::NOT_SIGNED_IN,
        SyncFailure::Refused { .. } => codes::REALTIME_REFUSED,
        SyncFailure::Closed => codes::CLOSED,
    };
    error(code, &f.message())
}

#[wasm_bindgen]
impl SyncSession {
    /// `new SyncSession(auth, { url? })`; `url` defaults to `baseUrl` with `ws(s)://` and `/realtime`.
    #[wasm_bindgen(constructor)]
    pub fn new(auth: &AuthManager, options: Option<SyncSessionOptionsArg>) -> Result<SyncSession, JsValue> {
        // Optional in the `.d.ts` (`options?:`); whatever JS passes is checked below.
        let options: JsValue = options.map_or(JsValue::UNDEFINED, JsValue::from);
        let session = auth.session().clone();
        let url = if options.is_undefined() || options.is_null() {
            realtime_url(session.base_url())
        } else {
            match object_arg(&options, "SyncSession options")?.get("url") {
                None | Some(Value::Null) => realtime_url(session.base_url()),
                Some(Value::String(u)) if u.starts_with("ws://") || u.starts_with("wss://") => u.clone(),
                Some(_) => return Err(invalid("url must be a ws:// or wss:// URL")),
            }
        };
        Ok(SyncSession { inner: CoreSync::new(session, url, crate::web::sync_ports()) })
    }

    /// Resolves at the first `ready` (after any invalidation and bootstrap); keeps retrying
    /// while the server is unreachable; rejects when there is no session, when the server
    /// refuses it, or when `close()` comes first.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn connect(&self) -> Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            inner.connect().await.map(|_| JsValue::UNDEFINED).map_err(|f| failure_error(&f))
        })
    }

    /// Closes the socket; no reconnect.
    pub fn close(&self) {
        self.inner.close();
    }

    /// The last `ready` payload, or `null`.
    #[wasm_bindgen(js_name = getRouting, unchecked_return_type = "ReadyPayload | null")]
    pub fn get_routing(&self) -> JsValue {
        to_js(&self.inner.routing().unwrap_or(Value::Null))
    }

    #[wasm_bindgen(js_name = getState, unchecked_return_type = "SyncState")]
    /// `"idle"`, `"connecting"`, `"ready"` or `"closed"`.
    pub fn get_state(&self) -> String {
        self.inner.state().as_str().to_owned()
    }

    /// Typed in the `.d.ts` through `SyncEventMap`.
    #[wasm_bindgen(skip_typescript)]
    pub fn on(&self, event: JsValue, handler: JsValue) -> Result<Function, JsValue> {
        let name = string_arg(&event, "event")?;
        let handler = super::convert::function_arg(handler)?;
        let pick: fn(&CoreSync) -> &HookList = match name.as_str() {
            "ready" => |s| &s.events().ready,
            "invalidate-local" => |s| &s.events().invalidate_local,
            "bootstrapped" => |s| &s.events().bootstrapped,
            "error" => |s| &s.events().error,
            "state" => |s| &s.events().state,
            _ => {
                return Err(invalid(
                    ["unknown event \"", &name, "\" (ready, invalidate-local, bootstrapped, error, state)"].concat(),
                ))
            }
        };
        Ok(subscribe(self.inner.clone(), pick, handler))
    }
}
