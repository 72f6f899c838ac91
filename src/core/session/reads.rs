//! What the session answers without a network call: the stored token and its claims, the
//! expiry rules, the current user, company and roles, the permission checks. `localStorage` is
//! the truth (shared across tabs); these read it each time.

use std::rc::Rc;

use crate::core::hooks::SignOutReason;

use serde_json::{Map, Value};

use super::{company_record, Phase, Session};
use crate::core::codes;
use crate::core::keys::{self, HeaderKind};
use crate::core::token::{self, Claims, ExpiryWindow};

/// Why `requirePermission` throws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Neither an action the SDK knows nor one of the app's map (`invalid_argument`).
    UnknownAction,
    /// No session (`not_signed_in`).
    NotSignedIn,
    /// The token expired (`session_expired`).
    Expired,
    /// The roles do not allow it (`permission_denied`).
    Denied,
}

impl Refusal {
    /// The code thrown.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::UnknownAction => codes::INVALID_ARGUMENT,
            Refusal::NotSignedIn => codes::NOT_SIGNED_IN,
            Refusal::Expired => codes::SESSION_EXPIRED,
            Refusal::Denied => codes::PERMISSION_DENIED,
        }
    }
}

/// Everything the synchronous reads answer for one stored access token, for a cache in front of
/// the storage (the package entry module's): it stays true while the stored token's text is the
/// same and neither a write here, another tab's write nor a phase change ([`Storage::reads_changed`])
/// happened. The rules stay here; the cache only compares instants with its clock.
///
/// [`Storage::reads_changed`]: crate::core::ports::Storage::reads_changed
#[derive(Debug, Clone, PartialEq)]
pub struct ReadSnapshot {
    /// The stored access token, when it is a JWT (`checkIfLoggedIn()`).
    pub token: Option<String>,
    /// The expiry rules of that token (`isTokenExpired()`, `isAboutToExpire()`).
    pub window: ExpiryWindow,
    /// `getToken()` answers the token while it is not expired (no sign-out handlers of another
    /// kind than `logout`/`login` are running).
    pub token_usable: bool,
    /// Its claims (`getCurrentUser()`).
    pub user: Option<Value>,
    /// Its roles (`getCurrentRoles()`).
    pub roles: Vec<String>,
}

impl Session {
    /// The stored access JWT and its claims; `localStorage` is the truth, shared across tabs.
    /// Claims follow from the token's text alone, so the text is compared with the one decoded
    /// last and decoded again only when it changed (another tab, a refresh, the app itself):
    /// every synchronous check reads storage once and decodes nothing on a valid token.
    pub(super) fn stored_token(&self) -> Option<(String, Rc<Claims>)> {
        let found = keys::read_valid(self.storage(), keys::AUTH, |raw| match &*self.0.decoded.borrow() {
            Some((text, claims)) if text == raw => Some((text.clone(), claims.clone())),
            _ => Claims::decode(raw).ok().map(|c| (raw.to_owned(), Rc::new(c))),
        });
        if let Some(found) = &found {
            *self.0.decoded.borrow_mut() = Some(found.clone());
        }
        found
    }

    /// What the synchronous reads answer now (see [`ReadSnapshot`]).
    pub fn read_snapshot(&self) -> ReadSnapshot {
        let token_usable = self.token_usable();
        match self.stored_token() {
            Some((token, claims)) => ReadSnapshot {
                window: ExpiryWindow::new(self.expires_at_auth(&claims)),
                user: Some(claims.to_value()),
                roles: claims.roles(),
                token: Some(token),
                token_usable,
            },
            None => ReadSnapshot {
                token: None,
                window: ExpiryWindow::new(None),
                token_usable,
                user: None,
                roles: Vec::new(),
            },
        }
    }

    /// Whether the phase lets a valid token be handed out: idle, or during `logout()` or a
    /// login's cleanup (the ending session's last replication); not while another sign-out runs.
    pub(super) fn token_usable(&self) -> bool {
        matches!(self.0.phase.get(), Phase::Idle | Phase::SigningOut(SignOutReason::Logout | SignOutReason::Login))
    }

    pub(super) fn expires_at_auth(&self, claims: &Claims) -> Option<i64> {
        keys::read_ms(self.storage(), keys::EXPIRES_AT_AUTH).or_else(|| claims.expires_at_ms())
    }

    /// The stored access token is missing, unreadable or past `exp`.
    pub fn is_token_expired(&self) -> bool {
        self.stored_token().is_none_or(|(_, claims)| self.expired(&claims))
    }

    /// Expired, margin included, for a token already read.
    pub(super) fn expired(&self, claims: &Claims) -> bool {
        token::is_expired(self.expires_at_auth(claims), self.now())
    }

    /// The access token expires within the refresh margin.
    pub fn is_about_to_expire(&self) -> bool {
        match self.stored_token() {
            Some((_, claims)) => token::is_about_to_expire(self.expires_at_auth(&claims), self.now()),
            None => false,
        }
    }

    /// `localStorage` holds an access token that is a JWT (expired or not).
    pub fn check_if_logged_in(&self) -> bool {
        self.stored_token().is_some()
    }

    /// The stored token's claims, or `None` when logged out.
    pub fn current_user(&self) -> Option<Value> {
        self.stored_token().map(|(_, c)| c.to_value())
    }

    /// The stored token's roles (empty when logged out).
    pub fn current_roles(&self) -> Vec<String> {
        self.stored_token().map(|(_, c)| c.roles()).unwrap_or_default()
    }

    /// `{id}` from the JWT, plus details once fetched; the cache follows the token's company.
    pub fn current_company(&self) -> Option<Value> {
        let company_id = self.stored_token()?.1.company_id()?;
        let mut memory = self.0.memory.borrow_mut();
        let cached_matches = memory
            .current_company
            .as_ref()
            .is_some_and(|c| c.get("id").and_then(Value::as_str) == Some(company_id.as_str()));
        if !cached_matches {
            memory.current_company = Some(company_record(&company_id));
        }
        memory.current_company.clone().map(Value::Object)
    }

    /// Merges fetched details into the cached company (only when it is still the current one).
    pub fn cache_company_details(&self, details: &Map<String, Value>) {
        if let Some(Value::Object(mut company)) = self.current_company() {
            let id = company.get("id").cloned();
            company.extend(details.iter().map(|(k, v)| (k.clone(), v.clone())));
            if let Some(id) = id {
                company.insert("id".into(), id);
            }
            self.0.memory.borrow_mut().current_company = Some(company);
        }
    }

    /// The username of the last login, kept for the login form.
    pub fn last_username(&self) -> Option<String> {
        self.0.memory.borrow().last_credentials.clone()
    }

    /// The stored refresh token.
    pub fn refresh_token(&self) -> Option<String> {
        keys::read_opaque(self.storage(), keys::REFRESH)
    }

    /// The stored docdb headers of one kind.
    pub fn docdb_headers(&self, kind: HeaderKind) -> Option<Map<String, Value>> {
        keys::read_headers(self.storage(), kind)
    }

    /// Synchronous check against the stored token's roles (`requirePermission`).
    pub fn allows(&self, action: &str) -> bool {
        self.0.config.permissions.allows(action, &self.current_roles())
    }

    /// Whether `action` is one the SDK knows (`permissions::ALL`) or the app's own map names.
    pub fn knows_action(&self, action: &str) -> bool {
        crate::core::hashes::is_known_action(action) || self.0.config.permissions.names(action)
    }

    /// `requirePermission` (`expiry`: true): the stored token's roles judge a known `action` while
    /// the token is not expired (`isTokenExpired()`); an expired token's roles may be stale, and
    /// only `hasPermission()` refreshes first. Without `expiry`, the roles alone (for a caller
    /// that judged the expiry itself).
    pub fn judge_permission(&self, action: &str, expiry: bool) -> Result<(), Refusal> {
        if !self.knows_action(action) {
            return Err(Refusal::UnknownAction);
        }
        let (_, claims) = self.stored_token().ok_or(Refusal::NotSignedIn)?;
        if expiry && self.expired(&claims) {
            return Err(Refusal::Expired);
        }
        match self.0.config.permissions.allows(action, &claims.roles()) {
            true => Ok(()),
            false => Err(Refusal::Denied),
        }
    }

    /// Asynchronous check: a fresh token first, then its roles (`hasPermission`).
    pub async fn has_permission(&self, action: &str) -> bool {
        match self.get_token().await.and_then(|t| Claims::decode(&t).ok()) {
            Some(claims) => self.0.config.permissions.allows(action, &claims.roles()),
            None => false,
        }
    }
}
