//! Following other tabs. Tabs of one origin share `localStorage`; when another tab writes the
//! session, this tab's app must hear of it through its own handlers:
//! - a sign-out elsewhere: the sign-out handlers (`{reason: "logout", otherTab: true}`), memory
//!   cleared, the realtime session stopped;
//! - a login or company change elsewhere: the sign-out handlers first (`reason` `"login"` or
//!   `"company-change"`, `otherTab: true`), then the new session is adopted and the login
//!   handlers run;
//! - a refresh elsewhere: the new token is adopted quietly, with the token-refresh handlers.
//!
//! A refresh keeps the user and the session id (`sid`) of the token; a new login does not.

use std::cell::Cell;

use super::auth_state::{classify, Change};
use super::{company_record, Phase, Session};
use crate::core::hooks::{other_tab_sign_out_event, token_refresh_event, SignOutReason};
use crate::core::token::Claims;

/// Calls that arrive while one runs are folded into it: it looks again when it ends.
#[derive(Default)]
pub(super) struct FollowState {
    running: Cell<bool>,
    again: Cell<bool>,
}

impl Session {
    /// Brings this tab in line with what storage now holds (called on a `storage` event for the
    /// session keys, and by a refresh that found storage changed under it).
    pub async fn follow(&self) {
        if self.0.follow.running.replace(true) {
            self.0.follow.again.set(true);
            return;
        }
        loop {
            self.0.follow.again.set(false);
            self.follow_once().await;
            if !self.0.follow.again.get() {
                break;
            }
        }
        self.0.follow.running.set(false);
    }

    async fn follow_once(&self) {
        // This tab's own sign-out or cleanup is running: it decides.
        if self.0.phase.get() != Phase::Idle {
            return;
        }
        let stored = self.stored_token();
        let known = self.adopted();
        if stored.as_ref().map(|(t, _)| t) == known.as_ref() {
            return;
        }
        let known_claims = known.as_deref().and_then(|t| Claims::decode(t).ok());
        let Some((token, claims)) = stored else {
            self.forget_session();
            self.notify_changed();
            self.run_sign_out_handlers(
                Phase::EndedElsewhere,
                &mut other_tab_sign_out_event(SignOutReason::Logout),
                None,
            )
            .await;
            self.announce(SignOutReason::Logout.as_str(), true);
            return;
        };
        match known_claims.map(|k| classify(&k, &claims)) {
            Some(Change::Refreshed) => {
                self.adopt(Some(token.clone()));
                self.notify_changed();
                let event = token_refresh_event(claims.to_value(), claims.roles(), false);
                self.0.hooks.token_refresh.run(&event, self.hook_context()).await;
                self.announce("refresh", true);
            }
            Some(Change::NewSession(reason)) => {
                self.forget_session();
                self.run_sign_out_handlers(Phase::EndedElsewhere, &mut other_tab_sign_out_event(reason), None).await;
                self.adopt_new_session(token, &claims).await;
                self.announce(reason.as_str(), true);
            }
            None => {
                self.adopt_new_session(token, &claims).await;
                self.announce(SignOutReason::Login.as_str(), true);
            }
        }
    }

    async fn adopt_new_session(&self, token: String, claims: &Claims) {
        self.adopt(Some(token));
        self.0.memory.borrow_mut().current_company = claims.company_id().map(|id| company_record(&id));
        self.notify_changed();
        self.0.hooks.login.run(&claims.to_value(), self.hook_context()).await;
    }
}
