//! Login (password and Google), the cleanup that ends the previous user's or tenant's session
//! before a new one is written, and the writes of a session to storage.

use crate::core::json;
use crate::protocol::routes::{LOGIN, LOGIN_GOOGLE};
use serde_json::{Map, Value};

use super::{company_record, parse_auth_response, InputError, Phase, Session};
use crate::core::codes;
use crate::core::hooks::{cleanup_sign_out_event, SignOutReason};
use crate::core::keys::{self, HeaderKind, TokenKind};
use crate::core::ports::{HttpResponse, StorageError, TransportError};
use crate::core::results::{failure_of, transport_failure, LoginResult};
use crate::core::time::{expires_at, seconds_to_ms};
use crate::core::token::Claims;
use crate::protocol::losses::LossReason;
use crate::protocol::{AuthResponse, GoogleLoginRequest, LoginRequest};

impl Session {
    /// `POST /auth` with a username and password; on success the session is stored and the login handlers run.
    pub async fn login(&self, username: &str, password: &str) -> LoginResult {
        let asked = self.0.sign_outs.get();
        let body = json::stringify(&LoginRequest::body(username, password, self.device_info()));
        let response = self.send_proven(LOGIN, LOGIN.path, body, None).await;
        self.complete_login(response, Some(username), asked).await
    }

    /// `POST /auth/google` with an identity provider's credential; otherwise as [`Session::login`].
    pub async fn login_with_google(&self, credential: &str) -> LoginResult {
        let asked = self.0.sign_outs.get();
        let body = json::stringify(&GoogleLoginRequest::body(credential, self.device_info()));
        let response = self.send_proven(LOGIN_GOOGLE, LOGIN_GOOGLE.path, body, None).await;
        self.complete_login(response, None, asked).await
    }

    /// Validates the answer before anything local is touched; then cleanup, persist, handlers.
    /// `asked`: the sign-outs asked for when the login started (a `logout()` since is obeyed).
    async fn complete_login(
        &self,
        response: Result<HttpResponse, TransportError>,
        username: Option<&str>,
        asked: u32,
    ) -> LoginResult {
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                let (code, error) = transport_failure(&e);
                return LoginResult::failure(code, error, 0);
            }
        };
        if response.status != 200 {
            let (code, error) = failure_of(&response);
            return LoginResult::failure(&code, error, response.status);
        }
        let Some((auth, claims)) = parse_auth_response(&response.body) else {
            return LoginResult::failure(
                codes::BAD_RESPONSE,
                "The server accepted the login but its answer carried no valid token.",
                response.status,
            );
        };
        let logged_out = || self.0.sign_outs.get() != asked;
        if !logged_out() {
            // The previous session's pending work may be pushed in the cleanup: each database
            // with the headers of its own tenant's session, the new one's or the stored one's,
            // never another tenant's (see `push_headers`). The handlers' `docdbFetch` serves the
            // new session's headers when the data on the device is of the same tenant: the
            // stored session's, or, once that has ended, the one recorded with the data.
            let incoming = claims.company_id();
            let previous =
                self.stored_token().and_then(|(_, c)| c.company_id()).or_else(|| self.any_local_data_owner());
            let same_tenant = previous.is_some() && previous == incoming;
            if same_tenant {
                // Stored before the cleanup, so docdbFetch serves them to its handlers.
                let _ = self.write_headers(auth.docdb_headers.clone(), true);
            }
            let remote = auth.docdb_headers.as_ref().and_then(|h| h.remote.clone());
            let push_as = incoming.clone().zip(remote);
            self.end_previous_session(SignOutReason::Login, same_tenant, incoming, push_as).await;
        }
        if let Err(e) = self.persist(&auth, true) {
            return LoginResult::failure(
                StorageError::CODE,
                ["The session could not be stored in this browser: ", &e.0].concat(),
                response.status,
            );
        }
        if logged_out() {
            // logout() came while this login ran (its answer pending, or inside its cleanup): the
            // new session signs out at once, on the server too, before any login handler runs.
            self.sign_out(SignOutReason::Logout).await;
            return LoginResult::failure(codes::SIGNED_OUT, "logout() was called during the login.", response.status);
        }
        {
            let mut memory = self.0.memory.borrow_mut();
            memory.current_company = claims.company_id().map(|id| company_record(&id));
            memory.last_credentials = username.map(str::to_owned);
        }
        let user = claims.to_value();
        self.0.hooks.login.run(&user, self.hook_context()).await;
        self.announce(SignOutReason::Login.as_str(), false);
        // The device's losses kept for this tenant, now that a session of it is here.
        self.send_losses().await;
        LoginResult::Success { user }
    }

    /// The cleanup a login and a company change share. Deliberately aggressive: the previous
    /// user's (or tenant's) handlers and local data go before the new tokens are in use, so
    /// nothing of a previous tenant reaches the new one. The handlers (a final push of the previous
    /// session's work) are told whose headers `docdbFetch` serves them: `headers: "new"`, the new
    /// session's, stored first by a login of the same tenant; else `"previous"`. The SDK's own
    /// final push runs before them; after them, a last one right before the deletions takes what
    /// they wrote. `incoming`: the new session's tenant; `push_as`: a tenant and the Remote
    /// headers its data is pushed with beside the stored session's (see `push_headers`).
    pub(super) async fn end_previous_session(
        &self,
        reason: SignOutReason,
        new_headers: bool,
        incoming: Option<String>,
        push_as: Option<(String, Map<String, Value>)>,
    ) {
        self.0.memory.borrow_mut().incoming = incoming;
        let new = push_as.as_ref().map(|(tenant, headers)| (tenant.as_str(), headers));
        let had_session = self.stored_token().is_some();
        let mut event = cleanup_sign_out_event(reason, had_session, new_headers);
        self.run_sign_out_handlers(Phase::SigningOut(reason), &mut event, Some(new)).await;
        let why = match reason {
            SignOutReason::CompanyChange => LossReason::CompanyChange,
            _ => LossReason::Login,
        };
        self.destroy_tracked(new, Some(why)).await;
        // The caller stores the new session next, with nothing awaited in between.
        self.0.memory.borrow_mut().incoming = None;
        self.storage().remove(keys::LAST_INVALIDATION);
    }

    /// Sign-out handlers, then the session-end observers (the realtime session), as a state that
    /// re-entrant calls can see (see the module's re-entrancy rule); with `push` (the incoming
    /// session's tenant and headers, if any), the SDK's final push first, its report added to the
    /// event.
    pub(super) async fn run_sign_out_handlers(
        &self,
        phase: Phase,
        event: &mut Value,
        push: Option<Option<(&str, &Map<String, Value>)>>,
    ) {
        let before = self.0.phase.get();
        self.set_phase(phase);
        if let Some(new) = push {
            self.push_tracked(new).await.annotate(event);
        }
        self.0.hooks.sign_out.run(event, self.hook_context()).await;
        self.0.ended.run(event, self.hook_context()).await;
        self.set_phase(before);
    }

    /// Writes tokens and expiries; header sets are replaced at login and updated when present.
    pub(super) fn persist(&self, auth: &AuthResponse, replace_headers: bool) -> Result<(), StorageError> {
        let result = self.write_session(auth, replace_headers);
        if result.is_err() {
            // Never leave half a session behind.
            for key in keys::SESSION_KEYS {
                self.storage().remove(key);
            }
            self.adopt(None);
        } else {
            self.adopt(Some(auth.token.clone()));
        }
        self.notify_changed();
        result
    }

    fn write_session(&self, auth: &AuthResponse, replace_headers: bool) -> Result<(), StorageError> {
        let storage = self.storage();
        let now = self.now();
        storage.set(keys::AUTH, &auth.token)?;
        storage.set(keys::EXPIRES_AT_AUTH, &expires_at(now, seconds_to_ms(auth.expires_in)).to_string())?;
        storage.set(keys::REFRESH, &auth.refresh_token)?;
        storage.set(keys::EXPIRES_AT_REFRESH, &expires_at(now, seconds_to_ms(auth.refresh_expires_in)).to_string())?;
        self.write_headers(auth.docdb_headers.clone(), replace_headers)
    }

    /// Writes the header sets an answer carried; with `replace`, removes the ones it did not.
    pub(super) fn write_headers(
        &self,
        headers: Option<crate::protocol::DocdbHeaders>,
        replace: bool,
    ) -> Result<(), StorageError> {
        let headers = headers.unwrap_or_default();
        for (kind, set) in [(HeaderKind::Remote, headers.remote), (HeaderKind::Local, headers.local)] {
            match set {
                Some(set) => self.storage().set(kind.key(), &json::stringify(&Value::Object(set)))?,
                None if replace => self.storage().remove(kind.key()),
                None => {}
            }
        }
        Ok(())
    }

    /// Stores a token the app obtained itself (`kind` is `"Auth"` or `"Refresh"`).
    pub fn save_token(&self, kind: &str, token: &str, expires_in_seconds: f64) -> Result<(), InputError> {
        let kind = TokenKind::parse(kind).ok_or_else(|| InputError::UnknownTokenKind(kind.to_owned()))?;
        // A negative lifetime is allowed: it stores a token that has already expired.
        if !expires_in_seconds.is_finite() {
            return Err(InputError::BadDuration);
        }
        if kind == TokenKind::Auth {
            Claims::decode(token).map_err(|e| InputError::NotAJwt(e.message().into()))?;
        } else if token.trim().is_empty() {
            return Err(InputError::NotAJwt("a refresh token must not be empty".into()));
        }
        // `as` saturates a float, so 1e300 seconds becomes the far future, not an overflow.
        let at = expires_at(self.now(), (expires_in_seconds * 1000.0) as i64);
        self.storage().set(kind.key(), token).map_err(InputError::Storage)?;
        self.storage().set(kind.expires_at_key(), &at.to_string()).map_err(InputError::Storage)?;
        if kind == TokenKind::Auth {
            self.adopt(Some(token.to_owned()));
            self.notify_changed();
        }
        Ok(())
    }
}
