//! The error codes of the contract's error body `{error, message}`: every code the server
//! answers with, in one place. The SDK passes them through to the caller as `code`.

pub const ALL_DBS_ACTIVE: &str = "all_dbs_active";
pub const BAD_REQUEST: &str = "bad_request";
pub const CANNOT_DELETE_SELF: &str = "cannot_delete_self";
pub const COMPANY_EXISTS: &str = "company_exists";
pub const COMPANY_NOT_EMPTY: &str = "company_not_empty";
pub const CONFLICT: &str = "conflict";
pub const CORE_MISSING: &str = "core_missing";
pub const CURRENT_PASSWORD_REQUIRED: &str = "current_password_required";
pub const DROP_REQUIRES_ROLLING_DB: &str = "drop_requires_rolling_db";
pub const FILE_EXISTS: &str = "file_exists";
pub const FORBIDDEN: &str = "forbidden";
pub const ILLEGAL_DATABASE_NAME: &str = "illegal_database_name";
pub const INTERNAL: &str = "internal";
pub const INVALID_BODY: &str = "invalid_body";
pub const INVALID_CREDENTIAL: &str = "invalid_credential";
pub const INVALID_CREDENTIALS: &str = "invalid_credentials";
pub const INVALID_REFRESH_TOKEN: &str = "invalid_refresh_token";
pub const INVALID_TOKEN: &str = "invalid_token";
pub const MALFORMED_JSON: &str = "malformed_json";
pub const METHOD_NOT_ALLOWED: &str = "method_not_allowed";
pub const MISSING_TOKEN: &str = "missing_token";
pub const NO_CATALOGUE: &str = "no_catalogue";
pub const NOT_FOUND: &str = "not_found";
pub const PAYLOAD_TOO_LARGE: &str = "payload_too_large";
pub const RATE_LIMITED: &str = "rate_limited";
pub const REFRESH_TOKEN_EXPIRED: &str = "refresh_token_expired";
pub const REFRESH_TOKEN_REPLAYED: &str = "refresh_token_replayed";
pub const REFRESH_TOKEN_REUSED: &str = "refresh_token_reused";
pub const REFRESH_TOKEN_REVOKED: &str = "refresh_token_revoked";
pub const SDK_TOO_OLD: &str = "sdk_too_old";
pub const SESSION_ENDED: &str = "session_ended";
pub const TOKEN_EXPIRED: &str = "token_expired";
pub const UNKNOWN_COMPANY: &str = "unknown_company";
pub const UNKNOWN_CRON: &str = "unknown_cron";
pub const UNKNOWN_DEVICE: &str = "unknown_device";
pub const UNKNOWN_RUN: &str = "unknown_run";
pub const UNKNOWN_SALE: &str = "unknown_sale";
pub const UNKNOWN_TENANT: &str = "unknown_tenant";
pub const UNKNOWN_USER: &str = "unknown_user";
pub const UNSUPPORTED_MEDIA_TYPE: &str = "unsupported_media_type";
pub const USERNAME_TAKEN: &str = "username_taken";

/// Every code above (for documentation and the round-trip test).
pub const ALL: &[&str] = &[ALL_DBS_ACTIVE, BAD_REQUEST, CANNOT_DELETE_SELF, COMPANY_EXISTS, COMPANY_NOT_EMPTY, CONFLICT, CORE_MISSING, CURRENT_PASSWORD_REQUIRED, DROP_REQUIRES_ROLLING_DB, FILE_EXISTS, FORBIDDEN, ILLEGAL_DATABASE_NAME, INTERNAL, INVALID_BODY, INVALID_CREDENTIAL, INVALID_CREDENTIALS, INVALID_REFRESH_TOKEN, INVALID_TOKEN, MALFORMED_JSON, METHOD_NOT_ALLOWED, MISSING_TOKEN, NO_CATALOGUE, NOT_FOUND, PAYLOAD_TOO_LARGE, RATE_LIMITED, REFRESH_TOKEN_EXPIRED, REFRESH_TOKEN_REPLAYED, REFRESH_TOKEN_REUSED, REFRESH_TOKEN_REVOKED, SDK_TOO_OLD, SESSION_ENDED, TOKEN_EXPIRED, UNKNOWN_COMPANY, UNKNOWN_CRON, UNKNOWN_DEVICE, UNKNOWN_RUN, UNKNOWN_SALE, UNKNOWN_TENANT, UNKNOWN_USER, UNSUPPORTED_MEDIA_TYPE, USERNAME_TAKEN];
