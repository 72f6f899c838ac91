//! Why a session rule refused: each cause names its wire code where it renders (`error.rs`).

use crate::auth::jwt::JwtError;
use crate::store::sql;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("username and password are required")]
    MissingCredentials,
    #[error("wrong user name or password")]
    InvalidCredentials,
    /// The account's failed sign-ins locked it for `wait_ms` more.
    #[error(
        "too many failed sign-ins for this account; try again in {} s, or sign in on a device you used before",
        wait_secs(*.wait_ms)
    )]
    AccountThrottled { wait_ms: i64 },
    #[error("unknown refresh token")]
    UnknownRefreshToken,
    #[error("the user no longer exists")]
    UserGone,
    #[error("this session has ended; log in again")]
    RefreshTokenRevoked,
    #[error("the refresh token has expired; log in again")]
    RefreshTokenExpired,
    #[error("this session is bound to its device's key: a refresh needs a valid proof from that device")]
    DeviceProofRequired,
    #[error("this refresh token was already used; the whole session is revoked")]
    RefreshTokenReused,
    #[error("this refresh token was already used and replayed once; use the newest refresh token")]
    RefreshTokenReplayed,
    /// A logout that ends the user's other sessions, asked by a session that is not live.
    #[error("ending the user's other sessions needs a live session; log in again")]
    SessionNotLive,
    #[error(transparent)]
    Token(#[from] JwtError),
    #[error(transparent)]
    Store(#[from] sql::Error),
}

/// Whole seconds to wait, rounded up, at least one (what `Retry-After` says).
pub fn wait_secs(wait_ms: i64) -> u64 {
    u64::try_from(wait_ms.saturating_add(999) / 1000).unwrap_or(1).max(1)
}

pub type AuthResult<T> = Result<T, AuthError>;
