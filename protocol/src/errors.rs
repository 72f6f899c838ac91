//! The error codes of the error body `{error, message}`: every code the server
//! answers with, in one place. The SDK passes them through to the caller as `code`.

/// Declares each code once: the constant, its doc comment, and its entry in `ALL` (the SDK's
/// own codes in `core::codes` are declared the same way: textual scope, `#[macro_use]` on the
/// modules, never `#[macro_export]`, which would put it at the root of whichever crate includes
/// these files).
macro_rules! codes {
    ($($(#[doc = $doc:literal])+ $name:ident = $text:literal;)+) => {
        $($(#[doc = $doc])+ pub const $name: &str = $text;)+
        /// Every code above (for documentation, the SDK's typed code union and the round-trip test).
        pub const ALL: &[&str] = &[$($name),+];
    };
}
codes! {
    /// 409: the cluster's `ROLLING_DB_MAX_OPEN` open handles are all in use.
    ALL_DBS_ACTIVE = "all_dbs_active";
    /// 400: a request the route cannot act on (a reserved id, a bad query, a bad first frame).
    BAD_REQUEST = "bad_request";
    /// 409: a user tried to delete their own account.
    CANNOT_DELETE_SELF = "cannot_delete_self";
    /// 409: a company with this id already exists.
    COMPANY_EXISTS = "company_exists";
    /// 409: a company still has users and cannot be deleted.
    COMPANY_NOT_EMPTY = "company_not_empty";
    /// 409: a document write lost against a newer revision.
    CONFLICT = "conflict";
    /// 404: the tenant's CORE database does not exist yet (not cut over: run the rotate).
    CORE_MISSING = "core_missing";
    /// 400: changing one's own password needs the current one.
    CURRENT_PASSWORD_REQUIRED = "current_password_required";
    /// 401: the refresh token is bound to its device's key and the refresh carried no valid proof from it.
    DEVICE_PROOF_REQUIRED = "device_proof_required";
    /// 409: `rollingDbDrop` cannot be on while `rollingDb` is off.
    DROP_REQUIRES_ROLLING_DB = "drop_requires_rolling_db";
    /// 409: a database of this name already exists.
    FILE_EXISTS = "file_exists";
    /// 403: the caller's roles do not allow this route.
    FORBIDDEN = "forbidden";
    /// 400: a database name outside CouchDB's rules.
    ILLEGAL_DATABASE_NAME = "illegal_database_name";
    /// 500: the server failed; the cause is in its log.
    INTERNAL = "internal";
    /// 400 or 422: the JSON body is not the shape the route takes.
    INVALID_BODY = "invalid_body";
    /// 401: the identity provider did not vouch for the credential (social login).
    INVALID_CREDENTIAL = "invalid_credential";
    /// 401: wrong username or password.
    INVALID_CREDENTIALS = "invalid_credentials";
    /// 401: the refresh token is unknown or its user is gone.
    INVALID_REFRESH_TOKEN = "invalid_refresh_token";
    /// 401: the bearer token (or the docdb headers) is not one this server signed.
    INVALID_TOKEN = "invalid_token";
    /// 400: the body is not JSON.
    MALFORMED_JSON = "malformed_json";
    /// 405: the route exists but not with this method.
    METHOD_NOT_ALLOWED = "method_not_allowed";
    /// 401: the route needs `Authorization: Bearer <token>`.
    MISSING_TOKEN = "missing_token";
    /// 409: the tenant has no catalogue database to cut over from.
    NO_CATALOGUE = "no_catalogue";
    /// 404: no such route or document.
    NOT_FOUND = "not_found";
    /// 413: the body is larger than the server takes.
    PAYLOAD_TOO_LARGE = "payload_too_large";
    /// 429: too many auth requests from this address; `Retry-After` says when to try again.
    RATE_LIMITED = "rate_limited";
    /// 401: the refresh token is past its expiry: log in again.
    REFRESH_TOKEN_EXPIRED = "refresh_token_expired";
    /// 401: a used refresh token replayed inside the grace window a second time.
    REFRESH_TOKEN_REPLAYED = "refresh_token_replayed";
    /// 401: a used refresh token presented again: the whole session is revoked (theft rule).
    REFRESH_TOKEN_REUSED = "refresh_token_reused";
    /// 401: the session was ended (logout, password change, revocation).
    REFRESH_TOKEN_REVOKED = "refresh_token_revoked";
    /// 409: a device of the tenant runs an SDK older than the cutover version.
    SDK_TOO_OLD = "sdk_too_old";
    /// 409 (preflight): the store is not at the last migration with the two-flag table.
    SCHEMA_BEHIND = "schema_behind";
    /// 409 (preflight): the cluster has no room for the prewarm (`ROLLING_DB_MAX_OPEN`).
    NO_HEADROOM = "no_headroom";
    /// 409 (preflight): the drop needs `CONFLICTS_ENABLED=true`.
    CONFLICTS_DISABLED = "conflicts_disabled";
    /// 409 (preflight): the drop needs backups (`BACKUP_ENABLED` not false).
    BACKUPS_DISABLED = "backups_disabled";
    /// 409 (preflight): not every day of the last `DROP_GREEN_DAYS` is archived with diff 0.
    RECONCILIATION_NOT_GREEN = "reconciliation_not_green";
    /// 401: the session the token or the docdb headers belong to has ended (logout, password or
    /// role change, a refresh token reused): log in again.
    SESSION_ENDED = "session_ended";
    /// 401: the access token is past its expiry: refresh it.
    TOKEN_EXPIRED = "token_expired";
    /// 404: no company with this id.
    UNKNOWN_COMPANY = "unknown_company";
    /// 404: no cron job of this name.
    UNKNOWN_CRON = "unknown_cron";
    /// 404: no device with this id.
    UNKNOWN_DEVICE = "unknown_device";
    /// 404: no cron run with this id.
    UNKNOWN_RUN = "unknown_run";
    /// 404: no sale with this id.
    UNKNOWN_SALE = "unknown_sale";
    /// 404: no rolling tenant with this id.
    UNKNOWN_TENANT = "unknown_tenant";
    /// 404: no user with this id.
    UNKNOWN_USER = "unknown_user";
    /// 415: the body must be sent as `application/json`.
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type";
    /// 409: a user with this username already exists.
    USERNAME_TAKEN = "username_taken";
    /// 501: the replication protocol needs a CouchDB-protocol engine (`DOCDB_URL`); the embedded
    /// document model serves documents and `_all_docs` only.
    DOCDB_ENGINE_REQUIRED = "docdb_engine_required";
    /// 502: the document engine behind the proxy did not answer.
    DOCDB_ENGINE_UNAVAILABLE = "docdb_engine_unavailable";
    /// 409: devices are routed to CORE: a re-warm must invalidate them too (`invalidate: true`).
    REWARM_NEEDS_INVALIDATION = "rewarm_needs_invalidation";
    /// 503: the relational store (PostgreSQL) does not answer; try again shortly.
    STORE_UNAVAILABLE = "store_unavailable";
    /// 429: too many failed sign-ins for this account, from anywhere; `Retry-After` says when.
    ACCOUNT_THROTTLED = "account_throttled";
    /// 429: the session already holds as many open `_changes` feeds as the server allows.
    TOO_MANY_FEEDS = "too_many_feeds";
    /// 431: the request's headers are larger than the server reads.
    HEADERS_TOO_LARGE = "headers_too_large";
    /// 409: CORE holds documents written since its warm; a re-warm needs `?confirm=` their count.
    CORE_EDITED = "core_edited";
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    #[test]
    fn every_error_code_is_snake_case_and_listed_once() {
        let mut seen = std::collections::BTreeSet::new();
        for code in super::ALL {
            assert!(code.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{code}");
            assert!(seen.insert(code), "{code} listed twice");
        }
    }
}
