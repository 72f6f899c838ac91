//! HTTP calls made with the session: anonymous, authorised (a fresh token first), and the
//! management and operations routes.

use crate::protocol::routes::{Call, CREATE_USER, DEVICE_NONCE, LOGOUT, REGISTER};
use serde_json::Value;

use super::Session;
use crate::core::calls::{Route, Segment};
use crate::core::codes;
use crate::core::json;
use crate::core::keys;
use crate::core::ports::{HttpRequest, HttpResponse, LocalBoxFuture, Method, TransportError};
use crate::core::results::CallResult;
use crate::core::url;

impl Session {
    pub(super) fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        bearer: Option<String>,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        // A logout carries the device's proof as a sign-in does (whichever call sends it): a
        // session bound to the device's key is logged out only with it.
        if path == LOGOUT.path {
            return self.send_proven(LOGOUT, path, body.unwrap_or_default(), bearer);
        }
        let request = HttpRequest {
            method,
            url: url::join(&self.0.config.base_url, path),
            bearer,
            body,
            prove: None,
            keyed: false,
        };
        self.0.ports.transport.send(request)
    }

    /// `body` for `route`, sent to `path` (with `bearer` when given), with a proof of the device's
    /// key where this browser keeps one (`HttpRequest::prove`: the transport proves only with a
    /// key, made by the first registration; signed for the protocol's route wherever `path` sends
    /// it), required when the device is known to be keyed (`HttpRequest::keyed`). Asked whether
    /// or not a device id is stored yet: a refresh racing the registration that binds its session
    /// to the key must carry the proof. Not `async`: the transport's own future.
    pub(super) fn send_proven(
        &self,
        route: Call,
        path: &str,
        body: String,
        bearer: Option<String>,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        let base = &self.0.config.base_url;
        let device = self.device_id();
        let keyed = device.is_some() && self.storage().get(keys::DEVICE_KEYED) == device;
        let prove = Some((url::join(base, DEVICE_NONCE.path), [route.method.as_str(), " ", route.path].concat()));
        let request =
            HttpRequest { method: route.method, url: url::join(base, path), bearer, body: Some(body), prove, keyed };
        self.0.ports.transport.send(request)
    }

    /// A call that needs the session: no token → a failure and no request.
    pub(super) async fn authorized(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        hold_refreshes: bool,
    ) -> Result<HttpResponse, CallResult> {
        if self.stored_token().is_none() {
            return Err(CallResult::failure(codes::NOT_SIGNED_IN, "Not signed in: log in before making this call.", 0));
        }
        let Some(token) = self.get_token().await else {
            return Err(CallResult::failure(
                codes::SESSION_EXPIRED,
                "The session expired and could not be refreshed: log in again.",
                401,
            ));
        };
        // Under the refresh lock, taken once the token is fresh (a refresh under it would wait on
        // itself), when the request changes what a refresh must carry (a registration's key).
        let _held = if hold_refreshes { self.acquire_refresh_lock().await } else { None };
        self.send(method, path, body, Some(token)).await.map_err(|e| CallResult::from_transport_error(&e))
    }

    /// An authenticated JSON call resolving to `{success, data?, error?, status?}`.
    pub async fn call(&self, method: Method, path: &str, body: Option<String>) -> CallResult {
        match self.authorized(method, path, body, false).await {
            Ok(response) => CallResult::from_response(&response),
            Err(failure) => failure,
        }
    }

    /// A call open to anonymous users; the token goes along when there is a session.
    async fn call_optional_auth(&self, method: Method, path: &str, body: Option<String>) -> CallResult {
        let bearer = if self.stored_token().is_some() { self.get_token().await } else { None };
        match self.send(method, path, body, bearer).await {
            Ok(response) => CallResult::from_response(&response),
            Err(e) => CallResult::from_transport_error(&e),
        }
    }

    /// Sends a management or operations call; a fetched current company is cached.
    pub async fn send_route(&self, route: Route) -> CallResult {
        let body = route.body.map(|b| json::stringify(&b));
        if route.needs_session {
            self.call(route.method, &route.path, body).await
        } else {
            self.call_optional_auth(route.method, &route.path, body).await
        }
    }

    /// Keeps what `GET /companies/{id}` answered for the current company, for
    /// `getCurrentCompany()`; another company's answer is only passed on.
    pub fn keep_company_details(&self, id: &Segment, answer: &CallResult) {
        if !answer.success {
            return;
        }
        let current = self.stored_token().and_then(|(_, c)| c.company_id());
        if current.as_deref() == Some(id.as_str()) {
            if let Some(Value::Object(details)) = answer.data.as_ref().and_then(|d| d.get("company")) {
                self.cache_company_details(details);
            }
        }
    }

    /// `POST /auth/register`: signs up (creates the user and their company).
    pub async fn register_user(&self, credentials: &Value) -> CallResult {
        self.call_optional_auth(REGISTER.method, REGISTER.path, Some(json::stringify(credentials))).await
    }

    /// `POST /register-user`: a manager creates a user in their company.
    pub async fn create_user(&self, credentials: &Value) -> CallResult {
        self.call_optional_auth(CREATE_USER.method, CREATE_USER.path, Some(json::stringify(credentials))).await
    }
}
