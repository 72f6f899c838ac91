//! The SDK's `localStorage` keys (docs/sdk.md, "Storage keys") and defensive readers: a corrupt value (not a
//! number, not JSON, not a JWT) is treated as absent and removed, never a crash.

use serde_json::{Map, Value};

use super::json;
use super::ports::{Storage, StorageError};
use super::token::Claims;

/// Every SDK key starts with this (the storage listener's filter).
pub const TOKEN_PREFIX: &str = "serviceProxyToken";
/// The access token.
pub const AUTH: &str = "serviceProxyToken-Auth";
/// The refresh token.
pub const REFRESH: &str = "serviceProxyToken-Refresh";
/// When the access token expires (ms since the epoch).
pub const EXPIRES_AT_AUTH: &str = "serviceProxyToken-expiresAt-Auth";
/// When the refresh token expires (ms since the epoch).
pub const EXPIRES_AT_REFRESH: &str = "serviceProxyToken-expiresAt-Refresh";
/// The docdb headers for the remote databases (JSON).
pub const HEADERS_REMOTE: &str = "X-Docdb-Headers-Remote";
/// The docdb headers for the local databases (JSON).
pub const HEADERS_LOCAL: &str = "X-Docdb-Headers-Local";
/// The device id from `/auth/connect`.
pub const DEVICE_ID: &str = "serviceProxyToken-deviceId";
/// The id of the device registered with this browser's key (its public half went with the
/// registration): while it is the stored device's id, the device is known to be keyed, and a proof
/// that cannot be made fails the request rather than sending it unproven.
pub const DEVICE_KEYED: &str = "serviceProxyToken-deviceKeyed";
/// The local databases to destroy at sign-out (JSON list).
pub const LOCAL_DATABASES: &str = "serviceProxyToken-localDatabases";
/// The last `invalidatedAt` (ms) this device obeyed.
pub const LAST_INVALIDATION: &str = "serviceProxyToken-lastInvalidation";
/// The device's loss reports not yet taken by the server (JSON array of report bodies).
pub const LOSSES: &str = "serviceProxyToken-losses";
/// The earliest time (ms) the loss reports may be sent again, as the server's last 429 asked.
pub const LOSSES_RETRY_AT: &str = "serviceProxyToken-lossesRetryAt";
/// A tracked local database's line of the ledger: this prefix and its name (a JSON object: whose
/// the data is, how to open it, where its writes go; see `session::local_databases`).
pub const LOCAL_DATABASE_PREFIX: &str = "serviceProxyToken-localDatabase:";
/// The refresh lease, only where the browser has no Web Locks, and only while a tab refreshes.
pub const REFRESH_LOCK: &str = "serviceProxyToken-refreshLock";

/// What sign-out removes. `deviceId`, `localDatabases`, the ledger's lines and `lastInvalidation`
/// outlive the session.
pub const SESSION_KEYS: [&str; 6] = [AUTH, REFRESH, EXPIRES_AT_AUTH, EXPIRES_AT_REFRESH, HEADERS_REMOTE, HEADERS_LOCAL];

/// Which header set: the remote document database or the device's local one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderKind {
    /// `X-Docdb-Headers-Remote`.
    Remote,
    /// `X-Docdb-Headers-Local`.
    Local,
}

impl HeaderKind {
    /// The storage key.
    pub fn key(self) -> &'static str {
        match self {
            HeaderKind::Remote => HEADERS_REMOTE,
            HeaderKind::Local => HEADERS_LOCAL,
        }
    }

    /// `"Remote"` or `"Local"`.
    pub fn parse(s: &str) -> Option<HeaderKind> {
        match s {
            "Remote" => Some(HeaderKind::Remote),
            "Local" => Some(HeaderKind::Local),
            _ => None,
        }
    }
}

/// Which token: `saveToken("Auth" | "Refresh", …)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// The access token.
    Auth,
    /// The refresh token.
    Refresh,
}

impl TokenKind {
    /// `"Auth"` or `"Refresh"`.
    pub fn parse(s: &str) -> Option<TokenKind> {
        match s {
            "Auth" => Some(TokenKind::Auth),
            "Refresh" => Some(TokenKind::Refresh),
            _ => None,
        }
    }

    /// The token's storage key.
    pub fn key(self) -> &'static str {
        match self {
            TokenKind::Auth => AUTH,
            TokenKind::Refresh => REFRESH,
        }
    }

    /// The key of the token's expiry.
    pub fn expires_at_key(self) -> &'static str {
        match self {
            TokenKind::Auth => EXPIRES_AT_AUTH,
            TokenKind::Refresh => EXPIRES_AT_REFRESH,
        }
    }
}

/// Reads `key`, removing it when `parse` rejects it.
/// A stored value parsed by `parse`; a value that does not parse is corrupt and removed.
pub fn read_valid<T>(storage: &dyn Storage, key: &str, parse: impl FnOnce(&str) -> Option<T>) -> Option<T> {
    let raw = storage.get(key)?;
    let parsed = parse(&raw);
    if parsed.is_none() {
        storage.remove(key);
    }
    parsed
}

/// The access JWT with its claims, when the stored value decodes as one.
pub fn read_jwt(storage: &dyn Storage, key: &str) -> Option<(String, Claims)> {
    read_valid(storage, key, |raw| Claims::decode(raw).ok().map(|c| (raw.to_owned(), c)))
}

/// An opaque token (the refresh token): any non-blank string.
pub fn read_opaque(storage: &dyn Storage, key: &str) -> Option<String> {
    read_valid(storage, key, |raw| (!raw.trim().is_empty()).then(|| raw.to_owned()))
}

/// Milliseconds since the epoch: an integer, as the SDK writes it (a float parser would cost the
/// wasm module more than all the rest of this file).
pub fn read_ms(storage: &dyn Storage, key: &str) -> Option<i64> {
    read_valid(storage, key, |raw| raw.trim().parse::<i64>().ok())
}

/// A header set: a JSON object of header name → string value.
pub fn read_headers(storage: &dyn Storage, kind: HeaderKind) -> Option<Map<String, Value>> {
    read_valid(storage, kind.key(), |raw| json::string_map(&json::parse(raw)?))
}

/// A JSON array of strings (the tracked local database names).
pub fn read_string_list(storage: &dyn Storage, key: &str) -> Vec<String> {
    read_valid(storage, key, |raw| json::string_list(&json::parse(raw)?)).unwrap_or_default()
}

/// Writes a JSON list of strings.
pub fn write_string_list(storage: &dyn Storage, key: &str, items: &[String]) -> Result<(), StorageError> {
    if items.is_empty() {
        storage.remove(key);
        return Ok(());
    }
    storage.set(key, &json::stringify(&Value::from(items.to_vec())))
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::fakes::MemoryStorage;

    #[test]
    fn corrupt_values_are_absent_and_removed() {
        let s = MemoryStorage::default();
        s.set(AUTH, "not-a-jwt").unwrap();
        s.set(EXPIRES_AT_AUTH, "soon").unwrap();
        s.set(HEADERS_REMOTE, "{oops").unwrap();
        s.set(LOCAL_DATABASES, "{\"a\":1}").unwrap();
        s.set(REFRESH, "   ").unwrap();
        assert!(read_jwt(&s, AUTH).is_none());
        assert!(read_ms(&s, EXPIRES_AT_AUTH).is_none());
        assert!(read_headers(&s, HeaderKind::Remote).is_none());
        assert!(read_string_list(&s, LOCAL_DATABASES).is_empty());
        assert!(read_opaque(&s, REFRESH).is_none());
        for k in [AUTH, EXPIRES_AT_AUTH, HEADERS_REMOTE, LOCAL_DATABASES, REFRESH] {
            assert_eq!(s.get(k), None, "{k} should have been removed");
        }
    }

    #[test]
    fn valid_values_are_read() {
        let s = MemoryStorage::default();
        s.set(EXPIRES_AT_AUTH, "1700000000000").unwrap();
        s.set(HEADERS_LOCAL, r#"{"X-A":"1"}"#).unwrap();
        assert_eq!(read_ms(&s, EXPIRES_AT_AUTH), Some(1_700_000_000_000));
        assert_eq!(read_headers(&s, HeaderKind::Local).unwrap()["X-A"], "1");
    }

    #[test]
    fn every_key_shares_the_prefix_except_the_header_sets() {
        for k in [
            AUTH,
            REFRESH,
            EXPIRES_AT_AUTH,
            EXPIRES_AT_REFRESH,
            DEVICE_ID,
            DEVICE_KEYED,
            LOCAL_DATABASES,
            LOCAL_DATABASE_PREFIX,
            LAST_INVALIDATION,
            LOSSES_RETRY_AT,
            REFRESH_LOCK,
        ] {
            assert!(k.starts_with(TOKEN_PREFIX));
        }
    }
}
