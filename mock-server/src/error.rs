//! The one error type of the server; every failure renders the contract's body
//! `{ "error": "<snake_case_code>", "message": "<human text>" }`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use session_broker::protocol::errors as code;
use session_broker::protocol::ErrorBody;

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
    /// 413
    PayloadTooLarge,
    /// 415
    UnsupportedMediaType,
    /// 500: a bug or a broken store; details go to the log, not to the client.
    Internal(String),
}

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        AppError::BadRequest(code::BAD_REQUEST, message.into())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::BadRequest(..) => StatusCode::BAD_REQUEST,
            AppError::Unauthorized(..) => StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::NotFound(..) => StatusCode::NOT_FOUND,
            AppError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            AppError::Conflict(..) => StatusCode::CONFLICT,
            AppError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn body(&self) -> ErrorBody {
        let (code, message): (&str, String) = match self {
            AppError::BadRequest(c, m) | AppError::Unauthorized(c, m) | AppError::NotFound(c, m) | AppError::Conflict(c, m) => (c, m.clone()),
            AppError::Forbidden(m) => (code::FORBIDDEN, m.clone()),
            AppError::MethodNotAllowed => (code::METHOD_NOT_ALLOWED, "this route does not accept that method".into()),
            AppError::PayloadTooLarge => (code::PAYLOAD_TOO_LARGE, "the request body is larger than the server accepts".into()),
            AppError::UnsupportedMediaType => (code::UNSUPPORTED_MEDIA_TYPE, "send the body as JSON with Content-Type: application/json".into()),
            AppError::Internal(_) => (code::INTERNAL, "the server failed; see its log".into()),
        };
        ErrorBody { error: code.to_owned(), message }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        if let AppError::Internal(detail) = &self {
            tracing::error!("internal error: {detail}");
        }
        (self.status(), Json(self.body())).into_response()
    }
}

impl From<rusqlite::Error> for AppError {
    fn from(e: rusqlite::Error) -> Self {
        AppError::Internal(format!("store: {e}"))
    }
}

impl From<crate::rolling::RollingError> for AppError {
    fn from(e: crate::rolling::RollingError) -> Self {
        use crate::docdb::DocDbError;
        use crate::rolling::RollingError as R;
        let message = e.to_string();
        match e {
            R::UnknownTenant(_) => AppError::NotFound(code::UNKNOWN_TENANT, message),
            R::DropRequiresRollingDb => AppError::Conflict(code::DROP_REQUIRES_ROLLING_DB, message),
            R::SdkTooOld(_) => AppError::Conflict(code::SDK_TOO_OLD, message),
            R::NothingToChange => AppError::bad_request(message),
            R::NoCatalogue(_) => AppError::Conflict(code::NO_CATALOGUE, message),
            R::DocDb(DocDbError::AllDbsActive { .. }) => AppError::Conflict(code::ALL_DBS_ACTIVE, message),
            R::DocDb(DocDbError::Conflict(_)) => AppError::Conflict(code::CONFLICT, message),
            R::DocDb(DocDbError::Exists(_)) => AppError::Conflict(code::FILE_EXISTS, message),
            R::DocDb(DocDbError::Missing(_)) => AppError::NotFound(code::NOT_FOUND, message),
            R::DocDb(DocDbError::IllegalName(_)) => AppError::BadRequest(code::ILLEGAL_DATABASE_NAME, message),
            R::DocDb(DocDbError::Store(e)) | R::Store(e) => AppError::Internal(e),
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
        AppError::Internal(format!("json: {e}"))
    }
}
