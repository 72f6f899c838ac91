//! Sign-out: the server first (only with a token), then the handlers, then memory, then keys.
//! Never fails, never waits on itself, never waits forever on a handler. The server ends the
//! session's refresh at the first call but keeps its document headers working for the handlers (a
//! final replication); once they have run, a second call tells it so and the headers stop.

use crate::core::json;
use crate::protocol::routes::LOGOUT;

use super::{Phase, Session};
use crate::core::hooks::{sign_out_event, SignOutReason};
use crate::core::keys;
use crate::core::results::failure_message;

impl Session {
    /// A sign-out already in progress is not run twice, nor waited for (a handler may be the
    /// caller): the second call returns at once.
    pub async fn sign_out(&self, reason: SignOutReason) {
        // Counted even when skipped: a login running its cleanup sees it and stores nothing.
        self.0.sign_outs.set(self.0.sign_outs.get().wrapping_add(1));
        if self.0.phase.get() != Phase::Idle {
            return;
        }
        self.set_phase(Phase::SigningOut(reason));
        let token = self.stored_token().map(|(token, _)| token);
        let body = |complete| Some(json::stringify(&crate::protocol::LogoutRequest::body(self.device_id(), complete)));
        let mut told = false;
        if let Some(token) = &token {
            match self.send(LOGOUT.method, LOGOUT.path, body(false), Some(token.clone())).await {
                Ok(r) if (200..300).contains(&r.status) => told = true,
                Ok(r) => self
                    .reporter()
                    .error(&["session-broker: the server refused the logout: ", &failure_message(&r)].concat()),
                Err(e) => self.reporter().error(
                    &["session-broker: the logout call failed (", &e.message(), "); signing out locally"].concat(),
                ),
            }
        }
        let mut event = sign_out_event(reason);
        if reason == SignOutReason::Logout {
            // The SDK's own final push, through the sign-out window (nothing is destroyed: what
            // it could not push stays on the device, reported in the event).
            self.push_tracked(None).await.annotate(&mut event);
        }
        self.0.hooks.sign_out.run(&event, self.hook_context()).await;
        if told {
            // The handlers have run: the session's document headers end now, not at the
            // server's bound (a failure here leaves them to that bound).
            let _ = self.send(LOGOUT.method, LOGOUT.path, body(true), token).await;
        }
        self.forget_session();
        for key in keys::SESSION_KEYS {
            self.storage().remove(key);
        }
        self.notify_changed();
        self.0.ended.run(&event, self.hook_context()).await;
        self.set_phase(Phase::Idle);
    }

    /// Clears the in-memory session (token, lastCredentials, currentCompany).
    pub(super) fn forget_session(&self) {
        let mut memory = self.0.memory.borrow_mut();
        memory.token = None;
        memory.last_credentials = None;
        memory.current_company = None;
    }
}
