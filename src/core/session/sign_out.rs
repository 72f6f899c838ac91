//! Sign-out: the server first (only with a token), then the handlers, then memory, then keys.
//! Never fails, never waits on itself, never waits forever on a handler. The server ends the
//! session's refresh at the first call but keeps its document headers working for the handlers (a
//! final replication); once they have run, a second call tells it so and the headers stop.

use crate::core::json;
use crate::protocol::routes::LOGOUT;
use crate::protocol::{LogoutRequest, LogoutScope};

use super::{Phase, Session};
use crate::core::codes;
use crate::core::hooks::{sign_out_event, SignOutReason};
use crate::core::keys;
use crate::core::results::CallResult;

impl Session {
    /// A sign-out already in progress is not run twice, nor waited for (a handler may be the
    /// caller): the second call returns at once.
    pub async fn sign_out(&self, reason: SignOutReason) {
        self.sign_out_scoped(reason, LogoutScope::Local).await;
    }

    /// `logout({scope})`: `local` and `global` sign this tab out (`global` ends the user's other
    /// sessions on the server too); `others` only asks the server and this session goes on.
    /// Answers the server's answer.
    /// A logout of a session bound to the device's key carries the key's proof; refused for want
    /// of it (`device_proof_required`), this browser holds a copy of a session that is not its
    /// own: it clears its copy alone, as a refresh refused so does.
    pub async fn logout(&self, scope: LogoutScope) -> CallResult {
        self.sign_out_scoped(SignOutReason::Logout, scope).await
    }

    async fn sign_out_scoped(&self, mut reason: SignOutReason, scope: LogoutScope) -> CallResult {
        let body = |complete| Some(json::stringify(&LogoutRequest::body(self.device_id(), complete, scope)));
        let mut answer = CallResult::failure(codes::NOT_SIGNED_IN, "Not signed in: log in before making this call.", 0);
        if scope == LogoutScope::Others {
            // The server call only, and this session goes on; unless refused for want of the
            // device's proof: signed out here alone then, as below (one state machine, not two).
            answer = self.call(LOGOUT.method, LOGOUT.path, body(false)).await;
            if !unproven(&answer) {
                return answer;
            }
            reason = SignOutReason::DeviceUnproven;
        }
        // Counted even when skipped: a login running its cleanup sees it and stores nothing.
        self.0.sign_outs.set(self.0.sign_outs.get().wrapping_add(1));
        if self.0.phase.get() != Phase::Idle {
            return CallResult::failure(codes::SIGNED_OUT, "A sign-out is already in progress.", 0);
        }
        self.set_phase(Phase::SigningOut(reason));
        let stored = self.stored_token();
        let token = stored.as_ref().map(|(token, _)| token.clone());
        // A browser that cannot prove the session's device holds a copy of a session that is
        // not its own: a logout sent with it would end the real device's session.
        let tell_server = reason != SignOutReason::DeviceUnproven;
        if let Some(token) = token.as_ref().filter(|_| tell_server) {
            answer = match self.send(LOGOUT.method, LOGOUT.path, body(false), Some(token.clone())).await {
                Ok(r) => CallResult::from_response(&r),
                Err(e) => CallResult::from_transport_error(&e),
            };
            if unproven(&answer) {
                // The server refused this browser's logout for want of the device's proof: a
                // copy, signed out here alone, with nothing more sent (no final push either).
                reason = SignOutReason::DeviceUnproven;
                self.set_phase(Phase::SigningOut(reason));
            } else if !answer.success {
                let why = answer.error.as_deref().unwrap_or_default();
                self.reporter().error(&["session-broker: the logout failed (", why, "); signing out locally"].concat());
            }
        }
        let told = answer.success;
        let mut event = sign_out_event(reason, token.is_some());
        if reason == SignOutReason::Logout {
            // The SDK's own final push, through the sign-out window (nothing is destroyed: what
            // it could not push stays on the device, reported in the event).
            self.push_tracked(None).await.annotate(&mut event);
        }
        self.0.hooks.sign_out.run(&event, self.hook_context()).await;
        if told {
            // The handlers have run: the session's document headers end now, not at the
            // server's bound (a failure here leaves them to that bound).
            let _ = self.send(LOGOUT.method, LOGOUT.path, body(true), token.clone()).await;
        }
        self.forget_session();
        // Only this session's keys: another tab's login while the handlers ran stored a new
        // session, which this sign-out must not end; another tab's refresh of this same session
        // stored its new tokens, which this sign-out ends (the server ended them with it).
        let ours = match (self.stored_token(), &stored) {
            (Some((now, now_claims)), Some((ended, claims))) => {
                now == *ended
                    || super::auth_state::classify(claims, &now_claims) == super::auth_state::Change::Refreshed
            }
            (None, None) => true,
            _ => false,
        };
        if ours {
            for key in keys::SESSION_KEYS {
                self.storage().remove(key);
            }
        }
        self.notify_changed();
        self.0.ended.run(&event, self.hook_context()).await;
        self.set_phase(Phase::Idle);
        self.announce(reason.as_str(), false);
        answer
    }

    /// Clears the in-memory session (token, lastCredentials, currentCompany).
    pub(super) fn forget_session(&self) {
        let mut memory = self.0.memory.borrow_mut();
        memory.token = None;
        memory.last_credentials = None;
        memory.current_company = None;
    }
}

/// The server refused the logout for want of the device's proof.
fn unproven(answer: &CallResult) -> bool {
    answer.code.as_deref() == Some(crate::protocol::errors::DEVICE_PROOF_REQUIRED)
}
