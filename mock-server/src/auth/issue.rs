//! A session's credentials: a refresh token in its family, an access token and the document
//! headers for the user's active company.

use protocol::AuthResponse;

use crate::auth::errors::AuthResult;
use crate::auth::jwt::TokenKeys;
use crate::auth::secrets::{docdb_headers, random_id, random_token, token_hash};
use crate::settings::Settings;
use crate::store::sql::Connection;
use crate::store::users::User;
use crate::store::{devices, refresh_tokens};

/// What issuing needs from the server: its keys and its lifetimes.
#[derive(Clone, Copy)]
pub struct Issuer<'a> {
    pub tokens: &'a TokenKeys,
    pub settings: &'a Settings,
}

impl Issuer<'_> {
    /// A new refresh token in `family` and an access token for the user's active company.
    pub fn issue(&self, tx: &Connection, user: &User, family: &str, now_ms: i64) -> AuthResult<AuthResponse> {
        let refresh = random_token();
        let ttl = self.settings.refresh_token_ttl_secs;
        refresh_tokens::insert(tx, &token_hash(&refresh), family, &user.id, now_ms + ttl as i64 * 1000, now_ms)?;
        let token = self.tokens.issue(&user.id, &user.company_id, &user.roles, family, now_ms.div_euclid(1000))?;
        Ok(AuthResponse {
            token,
            expires_in: self.tokens.access_ttl_secs,
            refresh_token: refresh,
            refresh_expires_in: ttl,
            docdb_headers: Some(docdb_headers(&self.tokens.docdb_key, &user.id, &user.company_id, &user.roles, family)),
        })
    }

    /// A new session (a new family: nothing another transaction touches) of `user`; on `device`
    /// (its `deviceInfo.id`) when that is a device the user registered, so that deleting the
    /// device ends the session.
    pub fn start(&self, tx: &Connection, user: &User, device: Option<&str>, now_ms: i64) -> AuthResult<AuthResponse> {
        let family = random_id("sess");
        if let Some(device) = device {
            if devices::by_id(tx, device)?.is_some_and(|d| d.user_id == user.id) {
                devices::link_session(tx, device, &family, now_ms)?;
            }
        }
        self.issue(tx, user, &family, now_ms)
    }
}
