//! `getToken()` and the refresh: one flight per tab (concurrent callers share it), one refresh at
//! a time across the tabs of an origin (the refresh lock), and a commit guard.
//!
//! A tab that waited for the lock re-reads storage: when the refresh token changed meanwhile,
//! another tab refreshed (or signed out, or logged in) and this tab follows it instead of
//! spending the old refresh token, which a strict server would answer by revoking the family.
//! Storage alone cannot say so at once: a tab's view of `localStorage` learns another tab's
//! writes some time after that tab released the lock. So the lock also keeps a record of the last
//! token spent (`RefreshLock::spent`, IndexedDB in the browser, read alike by every tab), written
//! before the lock is released: a tab about to spend a token already spent waits for its view to
//! show the new one instead.
//! The commit guard is the stored refresh token itself: every sign-out, login, company change
//! and refresh replaces or removes it, so it serves as the session's epoch. An answer is written
//! only while the token it spent is still the stored one and no sign-out is running; otherwise
//! it is discarded, never written over the newer state.

use crate::core::json;
use futures_util::future::{ready, FutureExt, Shared};

use super::{parse_auth_response, Phase, Session};
use crate::core::codes;
use crate::core::hooks::{token_refresh_event, SignOutReason};
use crate::core::ports::{LocalBoxFuture, LockError, LockGuard};
use crate::core::results::{failure_message, failure_of};
use crate::core::token::Claims;
use crate::protocol::errors::{DEVICE_PROOF_REQUIRED, REFRESH_TOKEN_REVOKED, SESSION_ENDED};

/// One refresh, shared by every caller that joined it.
pub type Flight = Shared<LocalBoxFuture<'static, RefreshOutcome>>;

/// What `getToken()` answers ([`Session::token_answer`]).
pub enum TokenAnswer {
    /// At once.
    Now(Option<String>),
    /// The new token once the refresh lands (`None` when it failed).
    After(Flight),
}

/// What the lock records of a spent refresh token: enough to tell it, not the token.
fn tail(token: &str) -> &str {
    token.get(token.len().saturating_sub(16)..).unwrap_or(token)
}

/// A tab waits this much longer than one refresh for another tab's, then takes the lock over: a
/// holder that long is frozen or gone (the orphaned-lock case). One refresh is the unit under the
/// lock, whatever requests it makes: the device's nonce, then the refresh, each within the
/// request timeout, and the transport bounds the two together by twice that.
const LOCK_WAIT_MARGIN_MS: u32 = 5_000;
/// The requests one refresh makes at most (the nonce and the refresh).
const REQUESTS_A_REFRESH: u32 = 2;

/// What one refresh attempt came to; shared by every caller of the same flight.
#[derive(Debug, Clone, PartialEq)]
pub enum RefreshOutcome {
    /// The new access token.
    Refreshed(String),
    /// The server refused the refresh token (400/401/403) or none is stored: the session is over.
    /// `code`: `refresh_rejected`, `session_ended` (the server ended the session) or
    /// `not_signed_in` (nothing to refresh).
    Rejected(&'static str, String),
    /// Network, timeout, 5xx or an unreadable answer: the session is kept for the next try.
    Transient(String),
}

impl RefreshOutcome {
    /// The token a caller of `getToken()` gets from this outcome.
    pub fn token(self) -> Option<String> {
        match self {
            RefreshOutcome::Refreshed(token) => Some(token),
            RefreshOutcome::Rejected(..) | RefreshOutcome::Transient(_) => None,
        }
    }
}

/// What the part under the lock decided; hooks run after the lock and the flight are released.
enum Decided {
    Refreshed {
        token: String,
        claims: Claims,
        company_changed: bool,
        /// At a company change, the previous company.
        previous_company: Option<String>,
        /// At a company change, the new company's headers, written after its cleanup.
        new_headers: Option<crate::protocol::DocdbHeaders>,
    },
    Rejected(&'static str, String),
    /// The server wants a proof of the session's device this browser could not give: its copy of
    /// the session is useless here, yet the session is not over (nothing was spent).
    Unproven(String),
    Transient(String),
    /// Nothing to refresh with and no session: nothing to do.
    NoSession,
    /// Storage changed under the refresh (another tab, or a sign-out here): nothing was written.
    Superseded,
}

impl Session {
    /// The current JWT; refreshed first when expired (margin included). Answers at once while a
    /// sign-out runs (see the re-entrancy rule).
    pub async fn get_token(&self) -> Option<String> {
        match self.token_answer() {
            TokenAnswer::Now(token) => token,
            TokenAnswer::After(flight) => flight.await.token(),
        }
    }

    /// What `getToken()` answers, decided now: a token (or none) at once, or the refresh flight
    /// to wait for. Every caller that gets the same flight gets the same answer.
    pub fn token_answer(&self) -> TokenAnswer {
        if self.0.phase.get() != Phase::Idle {
            return TokenAnswer::Now(self.token_now());
        }
        let Some((token, claims)) = self.stored_token() else { return TokenAnswer::Now(None) };
        if !self.expired(&claims) {
            return TokenAnswer::Now(Some(token));
        }
        // Inside the token-refresh handlers: the token they were handed, never a second refresh.
        if self.0.refreshed.borrow().as_deref() == Some(token.as_str()) {
            return TokenAnswer::Now(Some(token));
        }
        TokenAnswer::After(self.refresh())
    }

    /// The token usable right now without a refresh: during `logout()` or a login's cleanup the
    /// still-valid token of the ending session; during any other sign-out, none.
    fn token_now(&self) -> Option<String> {
        if !self.token_usable() {
            return None;
        }
        self.stored_token().filter(|(_, claims)| !self.expired(claims)).map(|(token, _)| token)
    }

    /// Refreshes now, once across tabs; `true` when a new token is stored.
    pub async fn refresh_authentication(&self) -> bool {
        matches!(self.refresh().await, RefreshOutcome::Refreshed(_))
    }

    /// Joins the refresh in flight, or starts one: concurrent callers send one request.
    pub fn refresh(&self) -> Flight {
        if self.0.phase.get() != Phase::Idle {
            let refused: LocalBoxFuture<'static, RefreshOutcome> =
                Box::pin(ready(RefreshOutcome::Rejected(codes::NOT_SIGNED_IN, "a sign-out is in progress".into())));
            return refused.shared();
        }
        let mut slot = self.0.flight.borrow_mut();
        if let Some(flight) = slot.as_ref() {
            return flight.clone();
        }
        let session = self.clone();
        let attempt: LocalBoxFuture<'static, RefreshOutcome> = Box::pin(async move { session.run_flight().await });
        let flight = attempt.shared();
        *slot = Some(flight.clone());
        flight
    }

    async fn run_flight(&self) -> RefreshOutcome {
        let decided = self.refresh_under_lock().await;
        // Cleared before any hook runs: a hook's getToken() never joins the flight running it.
        self.0.flight.borrow_mut().take();
        match decided {
            Decided::Refreshed { token, claims, company_changed, previous_company, new_headers } => {
                if company_changed {
                    self.0.memory.borrow_mut().current_company = None;
                    // The previous company's work is pushed with its own headers (the session
                    // still lives; the new ones open only the new company's databases): the new
                    // ones are written after the cleanup.
                    // The stored token is already the new company's: the previous one's data
                    // is named with the headers still stored, its own.
                    let push_as = previous_company.zip(self.docdb_headers(crate::core::keys::HeaderKind::Remote));
                    self.end_previous_session(SignOutReason::CompanyChange, false, claims.company_id(), push_as).await;
                    if let Err(e) = self.write_headers(new_headers, false) {
                        self.reporter().error(
                            &["session-broker: the new company's document headers could not be stored: ", &e.0]
                                .concat(),
                        );
                    }
                }
                let event = token_refresh_event(claims.to_value(), claims.roles(), company_changed);
                *self.0.refreshed.borrow_mut() = Some(token.clone());
                self.0.hooks.token_refresh.run(&event, self.hook_context()).await;
                self.0.refreshed.borrow_mut().take();
                self.announce("refresh", false);
                RefreshOutcome::Refreshed(token)
            }
            Decided::Rejected(code, reason) => {
                self.sign_out(SignOutReason::RefreshRejected).await;
                RefreshOutcome::Rejected(code, reason)
            }
            Decided::Unproven(reason) => {
                self.sign_out(SignOutReason::DeviceUnproven).await;
                RefreshOutcome::Rejected(DEVICE_PROOF_REQUIRED, reason)
            }
            Decided::Transient(reason) => {
                self.reporter()
                    .error(&["session-broker: refresh failed, session kept for a later try: ", &reason].concat());
                RefreshOutcome::Transient(reason)
            }
            Decided::NoSession => RefreshOutcome::Rejected(codes::NOT_SIGNED_IN, "not signed in".into()),
            Decided::Superseded => {
                self.follow().await;
                match (self.token_now(), self.stored_token()) {
                    (Some(token), _) => RefreshOutcome::Refreshed(token),
                    (None, Some(_)) => {
                        RefreshOutcome::Transient("the session changed while refreshing; try again".into())
                    }
                    (None, None) => {
                        RefreshOutcome::Rejected(codes::NOT_SIGNED_IN, "the session ended while refreshing".into())
                    }
                }
            }
        }
    }

    async fn refresh_under_lock(&self) -> Decided {
        let seen = self.refresh_token();
        let _guard = self.acquire_refresh_lock().await;
        // Let storage changes from other tabs that arrived while this one waited land first.
        self.0.ports.clock.sleep(0).await;
        // Another tab may have spent `seen` already, its answer not yet in this tab's view of
        // `localStorage`: the lock's record of the last token spent says so, and this tab waits
        // for that answer (at most one request's time) instead of spending the token again.
        if let Some(seen) = &seen {
            if self.0.ports.lock.spent(None).await.as_deref() == Some(tail(seen)) {
                let mut waited = 0;
                while self.refresh_token().as_ref() == Some(seen) && waited < self.0.config.timeout_ms {
                    self.0.ports.clock.sleep(10).await;
                    waited += 10;
                }
                return Decided::Superseded;
            }
        }
        let Some(refresh_token) = self.refresh_token() else {
            return match (&seen, self.stored_token()) {
                (None, Some(_)) => Decided::Rejected(codes::REFRESH_REJECTED, "no refresh token is stored".into()),
                (None, None) => Decided::NoSession,
                (Some(_), _) => Decided::Superseded,
            };
        };
        if seen.as_deref() != Some(refresh_token.as_str()) {
            return Decided::Superseded;
        }
        let previous_company = self.stored_token().and_then(|(_, c)| c.company_id());
        let body = json::stringify(&crate::protocol::RefreshRequest::body(&refresh_token));
        let path = self.0.config.refresh_path.clone();
        let response = match self.send_proven(crate::protocol::routes::REFRESH, &path, body, None).await {
            Ok(r) => r,
            Err(e) => return Decided::Transient(e.message()),
        };
        // The commit guard (see the module's doc).
        if self.0.phase.get() != Phase::Idle || self.refresh_token().as_deref() != Some(refresh_token.as_str()) {
            return Decided::Superseded;
        }
        if matches!(response.status, 400 | 401 | 403) {
            let (code, reason) = failure_of(&response);
            // The session was ended on the server (a logout elsewhere, a revoked family, a
            // deleted user's sessions), as against a refresh token it does not take.
            let ended = code == SESSION_ENDED || code == REFRESH_TOKEN_REVOKED;
            let unproven = code == DEVICE_PROOF_REQUIRED;
            let code = if ended { SESSION_ENDED } else { codes::REFRESH_REJECTED };
            self.reporter().error(
                &[
                    "session-broker: refresh rejected (HTTP ",
                    &crate::core::codec::decimal(response.status),
                    "): ",
                    &reason,
                    "; signing out",
                ]
                .concat(),
            );
            if unproven {
                // This browser cannot prove the session's device: refused before the token was
                // looked at, so it is not spent, and no logout is sent (the copied token would
                // end the real device's session).
                return Decided::Unproven(reason);
            }
            // Recorded as spent too: a tab that waited for the lock with the same token follows
            // this sign-out instead of spending it again (and telling a sign-out of its own).
            self.0.ports.lock.spent(Some(tail(&refresh_token))).await;
            return Decided::Rejected(code, reason);
        }
        if response.status != 200 {
            return Decided::Transient(failure_message(&response));
        }
        let Some((auth, claims)) = parse_auth_response(&response.body) else {
            return Decided::Transient("the refresh answer carried no valid token".into());
        };
        let company_changed = previous_company.is_some() && claims.company_id() != previous_company;
        let mut auth = auth;
        let new_headers = if company_changed { auth.docdb_headers.take() } else { None };
        if let Err(e) = self.persist(&auth, false) {
            // The old token is spent and the new one could not be kept (`persist` left no half
            // session behind): the session is over here, signed out as such (its handlers and
            // observers, the realtime session, told), not left to look alive.
            self.0.ports.lock.spent(Some(tail(&refresh_token))).await;
            return Decided::Rejected(
                crate::core::ports::StorageError::CODE,
                ["the refreshed session could not be stored: ", &e.0].concat(),
            );
        }
        self.0.ports.lock.spent(Some(tail(&refresh_token))).await;
        let previous_company = if company_changed { previous_company } else { None };
        Decided::Refreshed { token: auth.token, claims, company_changed, previous_company, new_headers }
    }

    /// The cross-tab refresh lock, waited for at most one request's time plus a margin, then
    /// taken over. Where the platform's lock fails, the refresh goes ahead without it (reported):
    /// a lock must never be the reason a session cannot refresh.
    pub(super) async fn acquire_refresh_lock(&self) -> Option<Box<dyn LockGuard>> {
        let lock = &self.0.ports.lock;
        let wait = self.0.config.timeout_ms.saturating_mul(REQUESTS_A_REFRESH).saturating_add(LOCK_WAIT_MARGIN_MS);
        let result = match lock.acquire(wait).await {
            Err(LockError::TimedOut) => {
                self.reporter().error(
                    &[
                        "session-broker: another tab held the refresh lock for ",
                        &crate::core::codec::decimal(wait),
                        " ms; taking it over",
                    ]
                    .concat(),
                );
                lock.steal().await
            }
            other => other,
        };
        let why = match result {
            Ok(guard) => return Some(guard),
            Err(LockError::Unavailable(why)) => why,
            Err(LockError::TimedOut) => "it could not be taken over".into(),
        };
        self.reporter().error(&["session-broker: refreshing without the cross-tab lock: ", &why].concat());
        None
    }
}
