//! The auth-state stream (`onAuthStateChange`): one place where an app hears every change of the
//! session, in every tab, told *after* storage holds it (unlike the sign-out handlers, which run
//! while the ending session is still there).
//!
//! The stream keeps the session it last told its listeners of and, at each point where the
//! stored session may have changed (a login, a refresh, a sign-out, another tab's write), tells
//! them the difference: [`changes`] is the rule. So it never says "signed out" when nobody was
//! signed in (a first login on a fresh browser), and a change is told once however it came.

use std::rc::Rc;

use serde_json::Value;

use super::{RefreshOutcome, Session, TokenAnswer};
use crate::core::codes;
use crate::core::token::Claims;

/// What another tab did, or what this tab's stored session became, judged from the token known
/// before and the one stored now.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// The same user and session (`sid`): a refresh.
    Refreshed,
    /// Another user, session or company.
    NewSession(crate::core::hooks::SignOutReason),
}

/// A refresh keeps the user and the session id (`sid`, where the issuer sets one); a new login
/// does not; a company change keeps both and changes `companyId`.
pub(super) fn classify(known: &Claims, stored: &Claims) -> Change {
    use crate::core::hooks::SignOutReason;
    let same_sid = match (known.sid(), stored.sid()) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    if known.user_id() != stored.user_id() || !same_sid {
        Change::NewSession(SignOutReason::Login)
    } else if known.company_id() != stored.company_id() {
        Change::NewSession(SignOutReason::CompanyChange)
    } else {
        Change::Refreshed
    }
}

/// An event of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthEvent {
    /// A listener's first event: the session as the stream stands.
    InitialSession,
    /// A session began (this tab's login, or another tab's).
    SignedIn,
    /// The same user, session, company and roles with a new token.
    TokenRefreshed,
    /// The same user and session, with other roles or another company.
    UserUpdated,
    /// The session is gone from storage.
    SignedOut,
}

impl AuthEvent {
    /// The name a listener gets.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthEvent::InitialSession => "INITIAL_SESSION",
            AuthEvent::SignedIn => "SIGNED_IN",
            AuthEvent::TokenRefreshed => "TOKEN_REFRESHED",
            AuthEvent::UserUpdated => "USER_UPDATED",
            AuthEvent::SignedOut => "SIGNED_OUT",
        }
    }
}

/// The events from the session last told (`last`) to the one stored now (`now`), for two
/// different tokens, each with the reason it carries when the rule decides it (`None`: the
/// caller's reason). A `USER_UPDATED` says what changed: `"company-change"` or `"roles-changed"`.
pub fn changes(last: Option<&Claims>, now: Option<&Claims>) -> &'static [(AuthEvent, Option<&'static str>)] {
    use crate::core::hooks::SignOutReason;
    match (last, now) {
        (None, None) => &[],
        (Some(_), None) => &[(AuthEvent::SignedOut, None)],
        (None, Some(_)) => &[(AuthEvent::SignedIn, None)],
        (Some(last), Some(now)) => match classify(last, now) {
            Change::NewSession(SignOutReason::CompanyChange) => &[(AuthEvent::UserUpdated, Some("company-change"))],
            Change::NewSession(_) => &[(AuthEvent::SignedOut, None), (AuthEvent::SignedIn, None)],
            Change::Refreshed if last.roles() != now.roles() => &[(AuthEvent::UserUpdated, Some("roles-changed"))],
            Change::Refreshed => &[(AuthEvent::TokenRefreshed, None)],
        },
    }
}

/// A stored session: the token's text and claims.
pub(super) type Told = Option<(String, Rc<Claims>)>;

/// The stream's one listener (the entry module's, which tells the app's listeners with the
/// session as storage holds it): `(event, reason, other_tab)`. Called at once, never awaited: the
/// stream only tells, so it cannot hold a login, a refresh or a sign-out up.
pub type Listener = Rc<dyn Fn(AuthEvent, &str, bool)>;

impl Session {
    /// Whether a request sent with the token `sent` may go again with the one stored now: only
    /// when storage holds another token of the same session ([`classify`]: same user, `sid` and
    /// company), i.e. a refresh. `auth.fetch` asks before its one replay, so another user's login
    /// or a company change meanwhile never carries a request made for the session before.
    pub fn may_replay(&self, sent: &str) -> bool {
        match (Claims::decode(sent), self.stored_token()) {
            (Ok(sent_claims), Some((now, claims))) => {
                now != sent && classify(&sent_claims, &claims) == Change::Refreshed
            }
            _ => false,
        }
    }

    /// Tells the stream's listener how the stored session differs from the one it was last
    /// told of; nothing when it is the same token. `reason`: why it changed here (a
    /// [`crate::core::hooks::SignOutReason`]'s name, `"login"` or `"refresh"`).
    pub(super) fn announce(&self, reason: &str, other_tab: bool) {
        let now = self.stored_token();
        // Taken before the listener runs: whatever it does is told from here on.
        let last = std::mem::replace(&mut *self.0.announced.borrow_mut(), now.clone());
        let listener = self.0.listener.borrow().clone();
        let (Some(listener), false) = (listener, last.as_ref().map(|(t, _)| t) == now.as_ref().map(|(t, _)| t)) else {
            return;
        };
        for (event, why) in changes(last.as_ref().map(|(_, c)| &**c), now.as_ref().map(|(_, c)| &**c)) {
            listener(*event, why.unwrap_or(reason), other_tab);
        }
    }

    /// Sets (or removes) the stream's listener.
    pub fn set_listener(&self, listener: Option<Listener>) {
        *self.0.listener.borrow_mut() = listener;
    }
}

impl RefreshOutcome {
    /// What `getToken()` and `getSession()` are made from: the token, or `[code, message]`
    /// saying why there is none: `network` (the refresh found no server: the session is kept for
    /// a later try), `session_ended` (the server ended the session: a logout elsewhere, a
    /// revoked token) or `refresh_rejected` (it refused the refresh token otherwise), both
    /// signed out, or `not_signed_in`.
    pub fn answer(self) -> Value {
        let (code, message) = match self {
            RefreshOutcome::Refreshed(token) => return Value::String(token),
            RefreshOutcome::Rejected(code, message) => (code, message),
            RefreshOutcome::Transient(message) => (codes::NETWORK, message),
        };
        Value::Array(vec![code.into(), message.into()])
    }
}

impl TokenAnswer {
    /// The outcome when it is known now (`Err`: the refresh to wait for).
    pub fn ready(self) -> Result<RefreshOutcome, super::Flight> {
        match self {
            TokenAnswer::Now(Some(token)) => Ok(RefreshOutcome::Refreshed(token)),
            TokenAnswer::Now(None) => Ok(RefreshOutcome::Rejected(codes::NOT_SIGNED_IN, "Not signed in.".into())),
            TokenAnswer::After(flight) => Err(flight),
        }
    }

    /// The outcome: at once, or once the refresh lands.
    pub async fn outcome(self) -> RefreshOutcome {
        match self.ready() {
            Ok(outcome) => outcome,
            Err(flight) => flight.await,
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::hooks::SignOutReason;
    use crate::core::token::encode_for_test;
    use proptest::prelude::*;
    use serde_json::json;

    fn claims(user: &str, company: &str, sid: Option<&str>) -> Claims {
        let mut c = json!({"sub": user, "userId": user, "companyId": company});
        if let Some(sid) = sid {
            c["sid"] = json!(sid);
        }
        Claims::decode(&encode_for_test(&c)).unwrap()
    }

    #[test]
    fn a_refresh_keeps_user_company_and_session_id() {
        assert_eq!(classify(&claims("u", "acme", Some("s1")), &claims("u", "acme", Some("s1"))), Change::Refreshed);
        assert_eq!(classify(&claims("u", "acme", None), &claims("u", "acme", None)), Change::Refreshed);
        assert_eq!(
            classify(&claims("u", "acme", Some("s1")), &claims("u", "acme", Some("s2"))),
            Change::NewSession(SignOutReason::Login)
        );
        assert_eq!(
            classify(&claims("u", "acme", Some("s1")), &claims("v", "acme", Some("s1"))),
            Change::NewSession(SignOutReason::Login)
        );
        assert_eq!(
            classify(&claims("u", "acme", Some("s1")), &claims("u", "globex", Some("s1"))),
            Change::NewSession(SignOutReason::CompanyChange)
        );
    }

    /// A session as the model sees it: who, which session, which tenant, which roles.
    #[derive(Debug, Clone)]
    struct Seen {
        user: &'static str,
        sid: Option<&'static str>,
        company: &'static str,
        roles: Vec<&'static str>,
    }

    impl Seen {
        fn claims(&self) -> Claims {
            let mut c = json!({"sub": self.user, "userId": self.user, "companyId": self.company, "roles": self.roles});
            if let Some(sid) = self.sid {
                c["sid"] = json!(sid);
            }
            Claims::decode(&encode_for_test(&c)).unwrap()
        }
    }

    /// The stream's rule, written again from its documentation (docs/sdk.md, "The auth-state
    /// stream"): what a listener is told between two different stored tokens.
    fn model(last: Option<&Seen>, now: Option<&Seen>) -> Vec<(&'static str, Option<&'static str>)> {
        let Some(now) = now else { return if last.is_some() { vec![("SIGNED_OUT", None)] } else { vec![] } };
        let Some(last) = last else { return vec![("SIGNED_IN", None)] };
        let another_session = last.user != now.user || matches!((last.sid, now.sid), (Some(a), Some(b)) if a != b);
        if another_session {
            vec![("SIGNED_OUT", None), ("SIGNED_IN", None)]
        } else if last.company != now.company {
            vec![("USER_UPDATED", Some("company-change"))]
        } else if last.roles != now.roles {
            vec![("USER_UPDATED", Some("roles-changed"))]
        } else {
            vec![("TOKEN_REFRESHED", None)]
        }
    }

    fn seen() -> impl Strategy<Value = Seen> {
        let roles = prop::collection::vec(prop::sample::select(vec!["manager", "cashier", "sys_admin"]), 0..3);
        (
            prop::sample::select(vec!["alice", "bob"]),
            prop::option::of(prop::sample::select(vec!["s1", "s2"])),
            prop::sample::select(vec!["acme", "globex"]),
            roles,
        )
            .prop_map(|(user, sid, company, roles)| Seen { user, sid, company, roles })
    }

    proptest! {
        #[test]
        fn the_stream_tells_what_the_model_says(last in prop::option::of(seen()), now in prop::option::of(seen())) {
            let (last_claims, now_claims) = (last.as_ref().map(Seen::claims), now.as_ref().map(Seen::claims));
            let told: Vec<_> =
                changes(last_claims.as_ref(), now_claims.as_ref()).iter().map(|(e, why)| (e.as_str(), *why)).collect();
            prop_assert_eq!(told, model(last.as_ref(), now.as_ref()));
        }
    }
}
