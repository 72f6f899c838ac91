//! The one error type of the server; every failure renders the error body
//! `{ "error": "<snake_case_code>", "message": "<human text>" }`. An internal error keeps its
//! cause: the response carries it (as an extension) to the logging middleware, which writes it
//! with its source chain; the client gets the error body and no internals.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use protocol::errors as code;
use protocol::ErrorBody;

/// What went wrong inside, with its source chain.
#[derive(Debug, Clone)]
pub struct Cause(pub Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause(Arc::new(e))
    }

    /// A cause that is a sentence, not an error value (a broken invariant).
    pub fn msg(message: impl Into<String>) -> Cause {
        #[derive(Debug)]
        struct Message(String);
        impl std::fmt::Display for Message {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl std::error::Error for Message {}
        Cause::new(Message(message.into()))
    }

    /// `error: source: source's source…`, for the log.
    pub fn chain(&self) -> String {
        crate::causes::chain(&*self.0)
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.chain() == other.chain()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum AppError {
    /// 400: the request is malformed or breaks a rule.
    BadRequest(&'static str, String),
    /// 401: missing, invalid or expired token, or bad credentials.
    Unauthorized(&'static str, String),
    /// 403: a valid token without the role.
    Forbidden(String),
    /// 404: unknown id or route.
    NotFound(&'static str, String),
    /// 405
    MethodNotAllowed,
    /// 409: the request conflicts with the current state.
    Conflict(&'static str, String),
    /// 409: a flag refused by its preflight; the body lists every failing check.
    Refused { code: &'static str, message: String, checks: serde_json::Value },
    /// 413
    PayloadTooLarge,
    /// 415
    UnsupportedMediaType,
    /// 501: the embedded document model cannot serve this (the replication protocol).
    EngineRequired(String),
    /// 502: the document engine did not answer the proxy.
    EngineUnavailable(String),
    /// 429: too many of something (sign-ins from one address, failed sign-ins of one account,
    /// open feeds of one session); `Retry-After` when a wait is known.
    TooMany { code: &'static str, message: String, retry_after_secs: Option<u64> },
    /// 431: the request's headers are larger than the server reads.
    HeadersTooLarge,
    /// 500: a bug or a broken store; the cause goes to the log, not to the client.
    Internal(Cause),
    /// 503: the store (PostgreSQL) does not answer; the cause goes to the log.
    StoreUnavailable(Cause),
}

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        AppError::BadRequest(code::BAD_REQUEST, message.into())
    }

    /// The whole story, for a log or a cron run's log (the client gets `body()`).
    pub fn describe(&self) -> String {
        match self {
            AppError::Internal(cause) | AppError::StoreUnavailable(cause) => cause.chain(),
            other => other.body().message,
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::BadRequest(..) => StatusCode::BAD_REQUEST,
            AppError::Unauthorized(..) => StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::NotFound(..) => StatusCode::NOT_FOUND,
            AppError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            AppError::Conflict(..) | AppError::Refused { .. } => StatusCode::CONFLICT,
            AppError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            AppError::EngineRequired(_) => StatusCode::NOT_IMPLEMENTED,
            AppError::EngineUnavailable(_) => StatusCode::BAD_GATEWAY,
            AppError::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
            AppError::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            AppError::StoreUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    pub fn body(&self) -> ErrorBody {
        self.coded_body().1
    }

    /// The body, with its code as the constant it is (for the metrics' label).
    fn coded_body(&self) -> (&'static str, ErrorBody) {
        let (code, message) = self.code_and_message();
        let checks = match self {
            AppError::Refused { checks, .. } => Some(checks.clone()),
            _ => None,
        };
        (code, ErrorBody { error: code.to_owned(), message, checks })
    }

    fn code_and_message(&self) -> (&'static str, String) {
        match self {
            AppError::BadRequest(c, m)
            | AppError::Unauthorized(c, m)
            | AppError::NotFound(c, m)
            | AppError::Conflict(c, m) => (c, m.clone()),
            AppError::TooMany { code, message, .. } => (code, message.clone()),
            AppError::Forbidden(m) => (code::FORBIDDEN, m.clone()),
            AppError::EngineRequired(m) => (code::DOCDB_ENGINE_REQUIRED, m.clone()),
            AppError::EngineUnavailable(m) => (code::DOCDB_ENGINE_UNAVAILABLE, m.clone()),
            AppError::Refused { code, message, .. } => (code, message.clone()),
            AppError::MethodNotAllowed => (code::METHOD_NOT_ALLOWED, "this route does not accept that method".into()),
            AppError::PayloadTooLarge => {
                (code::PAYLOAD_TOO_LARGE, "the request body is larger than the server accepts".into())
            }
            AppError::UnsupportedMediaType => {
                (code::UNSUPPORTED_MEDIA_TYPE, "send the body as JSON with Content-Type: application/json".into())
            }
            AppError::HeadersTooLarge => {
                (code::HEADERS_TOO_LARGE, "the request's headers are larger than the server reads (16 KiB)".into())
            }
            AppError::Internal(_) => (code::INTERNAL, "the server failed; see its log".into()),
            AppError::StoreUnavailable(_) => {
                (code::STORE_UNAVAILABLE, "the server's database does not answer; try again shortly".into())
            }
        }
    }
}

/// The error code an answer carried, for the metrics (a response extension, never sent).
#[derive(Debug, Clone, Copy)]
pub struct ErrorCode(pub &'static str);

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let (code, body) = self.coded_body();
        let mut response = (self.status(), Json(body)).into_response();
        response.extensions_mut().insert(ErrorCode(code));
        match self {
            // Logged by `log_internal_errors`, where every request's outcome is seen.
            AppError::Internal(cause) | AppError::StoreUnavailable(cause) => {
                response.extensions_mut().insert(cause);
            }
            AppError::TooMany { retry_after_secs: Some(secs), .. } => {
                response.headers_mut().insert(axum::http::header::RETRY_AFTER, secs.into());
            }
            // The rest of the body was never read, so the connection cannot carry another
            // request: say so, or a client may reuse it from its pool and lose that request to
            // the close (hyper's IncompleteMessage).
            AppError::PayloadTooLarge => {
                response
                    .headers_mut()
                    .insert(axum::http::header::CONNECTION, axum::http::HeaderValue::from_static("close"));
            }
            _ => {}
        }
        response
    }
}

/// Middleware: writes each internal error's cause, with its source chain, to the log.
pub async fn log_internal_errors(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let response = next.run(request).await;
    if let Some(cause) = response.extensions().get::<Cause>() {
        tracing::error!(%method, %path, status = response.status().as_u16(), "{}", cause.chain());
    }
    response
}

impl crate::store::Store {
    /// [`Store::transaction`](crate::store::Store::transaction) in the routes' error type.
    pub fn tx<T>(&self, f: impl FnOnce(&crate::store::sql::Connection) -> AppResult<T>) -> AppResult<T> {
        self.transaction(f)
    }

    /// [`Store::shared_transaction`](crate::store::Store::shared_transaction) in the routes' error type.
    pub fn shared_tx<T>(&self, f: impl FnOnce(&crate::store::sql::Connection) -> AppResult<T>) -> AppResult<T> {
        self.shared_transaction(f)
    }
}

impl From<crate::store::sql::Error> for AppError {
    fn from(e: crate::store::sql::Error) -> Self {
        crate::store::StoreError(e).into()
    }
}

/// Blocking work that panicked or was cancelled (a password check, say).
impl From<tokio::task::JoinError> for AppError {
    fn from(e: tokio::task::JoinError) -> Self {
        AppError::Internal(Cause::new(e))
    }
}

impl From<crate::store::StoreError> for AppError {
    fn from(e: crate::store::StoreError) -> Self {
        store_failure(e.0.is_unavailable(), e)
    }
}

/// The store's failure as the client is told it: 503 while the store does not answer (a
/// client may retry), 500 for anything else; the cause goes to the log either way.
fn store_failure(unavailable: bool, e: impl std::error::Error + Send + Sync + 'static) -> AppError {
    if unavailable {
        AppError::StoreUnavailable(Cause::new(e))
    } else {
        AppError::Internal(Cause::new(e))
    }
}

impl From<crate::rolling::RollingError> for AppError {
    fn from(e: crate::rolling::RollingError) -> Self {
        use crate::docdb::DocDbError;
        use crate::rolling::RollingError as R;
        let message = e.to_string();
        match &e {
            R::UnknownTenant(_) => AppError::NotFound(code::UNKNOWN_TENANT, message),
            R::DropRequiresRollingDb => AppError::Conflict(code::DROP_REQUIRES_ROLLING_DB, message),
            R::PreflightFailed(checks) => AppError::Refused {
                code: checks.first().map_or(code::CONFLICT, |c| c.code),
                message,
                checks: serde_json::to_value(checks).unwrap_or_default(),
            },
            R::NothingToChange | R::BadAcknowledgement(_) => AppError::bad_request(message),
            R::RollbackAnswersLosses(_) => AppError::Conflict(code::CONFLICT, message),
            R::NoCatalogue(_) => AppError::Conflict(code::NO_CATALOGUE, message),
            R::UnknownDayDatabase(_) => AppError::NotFound(code::NOT_FOUND, message),
            R::BackupsUnshared(_) => AppError::Conflict(code::CONFLICT, message),
            R::NoCore(_) => AppError::NotFound(code::CORE_MISSING, message),
            R::RewarmNeedsInvalidation(_) => AppError::Conflict(code::REWARM_NEEDS_INVALIDATION, message),
            R::CoreEdited { count, ids, .. } => AppError::Refused {
                code: code::CORE_EDITED,
                message,
                checks: serde_json::json!({"count": count, "ids": ids}),
            },
            R::DocDb(DocDbError::AllDbsActive { .. }) => AppError::Conflict(code::ALL_DBS_ACTIVE, message),
            R::DocDb(DocDbError::Conflict(_)) => AppError::Conflict(code::CONFLICT, message),
            R::DocDb(DocDbError::Exists(_)) => AppError::Conflict(code::FILE_EXISTS, message),
            R::DocDb(DocDbError::Missing(_)) => AppError::NotFound(code::NOT_FOUND, message),
            R::DocDb(DocDbError::IllegalName(_)) => AppError::BadRequest(code::ILLEGAL_DATABASE_NAME, message),
            // The engine's failure is the operator's to see: the message carries its causes.
            R::DocDb(DocDbError::Engine(_) | DocDbError::EngineUnreachable(_) | DocDbError::Bridge(_)) => {
                AppError::EngineUnavailable(crate::causes::chain(&e))
            }
            // The server's own failure: the whole error goes to the log, with its causes.
            R::Store(crate::store::StoreError(s)) | R::DocDb(DocDbError::Store(crate::store::StoreError(s))) => {
                store_failure(s.is_unavailable(), e)
            }
            R::Backup(_)
            | R::DocDb(DocDbError::Corrupt(_) | DocDbError::CorruptJson { .. } | DocDbError::PrefixChanged { .. }) => {
                AppError::Internal(Cause::new(e))
            }
        }
    }
}

impl From<crate::auth::errors::AuthError> for AppError {
    fn from(e: crate::auth::errors::AuthError) -> Self {
        use crate::auth::errors::{wait_secs, AuthError as A};
        let message = e.to_string();
        match e {
            A::MissingCredentials => AppError::bad_request(message),
            A::InvalidCredentials => AppError::Unauthorized(code::INVALID_CREDENTIALS, message),
            A::AccountThrottled { wait_ms } => {
                AppError::TooMany { code: code::ACCOUNT_THROTTLED, message, retry_after_secs: Some(wait_secs(wait_ms)) }
            }
            A::UnknownRefreshToken | A::UserGone => AppError::Unauthorized(code::INVALID_REFRESH_TOKEN, message),
            A::RefreshTokenRevoked => AppError::Unauthorized(code::REFRESH_TOKEN_REVOKED, message),
            A::RefreshTokenExpired => AppError::Unauthorized(code::REFRESH_TOKEN_EXPIRED, message),
            A::DeviceProofRequired => AppError::Unauthorized(code::DEVICE_PROOF_REQUIRED, message),
            A::RefreshTokenReused => AppError::Unauthorized(code::REFRESH_TOKEN_REUSED, message),
            A::RefreshTokenReplayed => AppError::Unauthorized(code::REFRESH_TOKEN_REPLAYED, message),
            A::SessionNotLive => AppError::Unauthorized(code::SESSION_ENDED, message),
            A::Token(e) => e.into(),
            A::Store(e) => e.into(),
        }
    }
}

impl From<crate::auth::jwt::JwtError> for AppError {
    fn from(e: crate::auth::jwt::JwtError) -> Self {
        use crate::auth::jwt::JwtError;
        match e {
            JwtError::Invalid(why) => AppError::Unauthorized(code::INVALID_TOKEN, why.into()),
            JwtError::Expired => AppError::Unauthorized(code::TOKEN_EXPIRED, e.to_string()),
            JwtError::Sign(_) => AppError::Internal(Cause::new(e)),
        }
    }
}

impl From<crate::docdb::DocDbError> for AppError {
    fn from(e: crate::docdb::DocDbError) -> Self {
        crate::rolling::RollingError::from(e).into()
    }
}

impl From<serde_json::Error> for AppError {
    fn from(e: serde_json::Error) -> Self {
        AppError::Internal(Cause::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_internal_error_keeps_its_source_for_the_log_and_tells_the_client_nothing() {
        let store = crate::store::StoreError(crate::store::sql::Error::NoRows);
        let e = AppError::from(store);
        assert_eq!(e.describe(), "the relational store failed: the query returned no rows", "the cause, told once");
        assert_eq!(e.body().error, "internal");
        assert!(!e.body().message.contains("Query"));
        let response = e.into_response();
        assert!(response.extensions().get::<Cause>().is_some(), "carried to the logging middleware");
    }
}
