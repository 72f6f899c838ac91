//! Extractors whose rejections are the contract's error body: JSON bodies and bearer tokens.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use session_broker::protocol::JwtClaims;

use crate::error::AppError;
use crate::state::AppState;

/// `axum::Json` with rejections mapped to `AppError`.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> AppError {
    match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => AppError::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => AppError::UnsupportedMediaType,
        _ => match rejection {
            JsonRejection::JsonSyntaxError(e) => AppError::BadRequest("malformed_json", format!("the body is not valid JSON: {}", e.body_text())),
            other => AppError::BadRequest("invalid_body", other.body_text()),
        },
    }
}

/// The caller, from a valid, unexpired `Authorization: Bearer <jwt>`.
pub struct AuthUser(pub JwtClaims);

/// The caller from a correctly signed token, expired or not (logout accepts it: revoking an
/// old session must not need a fresh one).
pub struct SignedUser(pub JwtClaims);

fn bearer(parts: &Parts) -> Result<&str, AppError> {
    let header = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .ok_or_else(|| AppError::Unauthorized("missing_token", "this route needs Authorization: Bearer <token>".into()))?;
    header
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| AppError::Unauthorized("invalid_token", "the Authorization header is not 'Bearer <token>'".into()))
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let token = bearer(parts)?;
        state.tokens.verify(token, state.clock.now_secs(), true).map(AuthUser)
    }
}

impl FromRequestParts<AppState> for SignedUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let token = bearer(parts)?;
        state.tokens.verify(token, state.clock.now_secs(), false).map(SignedUser)
    }
}

impl AuthUser {
    /// 403 unless the caller holds one of `roles`.
    pub fn require_any(&self, roles: &[&str]) -> Result<(), AppError> {
        if self.0.roles.iter().any(|r| roles.contains(&r.as_str())) {
            Ok(())
        } else {
            Err(AppError::Forbidden(format!("this needs the role {}", roles.join(" or "))))
        }
    }
}

/// The caller when an `Authorization` header is sent (and then it must be valid), else `None`.
pub struct MaybeAuthUser(pub Option<JwtClaims>);

impl FromRequestParts<AppState> for MaybeAuthUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        if parts.headers.contains_key(axum::http::header::AUTHORIZATION) {
            AuthUser::from_request_parts(parts, state).await.map(|AuthUser(c)| MaybeAuthUser(Some(c)))
        } else {
            Ok(MaybeAuthUser(None))
        }
    }
}
