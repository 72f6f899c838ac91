//! Extractors whose rejections are the error body (`{error, message}`): JSON bodies and bearer tokens.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use protocol::JwtClaims;
use serde::de::DeserializeOwned;

use crate::error::AppError;
use crate::state::AppState;
use protocol::errors as code;

/// `axum::Json` with rejections mapped to `AppError`, for a body that must be a JSON object: every
/// route's body type is a struct, and serde would read a struct from an array too (`[true]` as
/// its first field), so anything but an object is refused before it is read.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(req.headers()) {
            return Err(AppError::UnsupportedMediaType);
        }
        let bytes = match axum::body::Bytes::from_request(req, state).await {
            Ok(bytes) => bytes,
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(AppError::PayloadTooLarge)
            }
            Err(rejection) => return Err(AppError::BadRequest(code::INVALID_BODY, rejection.body_text())),
        };
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first.is_some_and(|b| *b != b'{') && serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok() {
            return Err(AppError::BadRequest(code::INVALID_BODY, "send a JSON object".into()));
        }
        match axum::Json::<T>::from_bytes(&bytes) {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

/// `Content-Type: application/json` or `application/<something>+json`, as `axum::Json` asks.
fn json_content_type(headers: &axum::http::HeaderMap) -> bool {
    let Some(value) = headers.get(axum::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match essence.split_once('/') {
        Some(("application", subtype)) => subtype == "json" || subtype.ends_with("+json"),
        _ => false,
    }
}

fn json_rejection(rejection: JsonRejection) -> AppError {
    match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => AppError::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => AppError::UnsupportedMediaType,
        _ => match rejection {
            JsonRejection::JsonSyntaxError(e) => {
                AppError::BadRequest(code::MALFORMED_JSON, format!("the body is not valid JSON: {}", e.body_text()))
            }
            other => AppError::BadRequest(code::INVALID_BODY, other.body_text()),
        },
    }
}

/// The caller, from a valid, unexpired `Authorization: Bearer <jwt>`.
pub struct AuthUser(pub JwtClaims);

/// An access token that passed `verify_access`.
pub struct Access {
    pub claims: JwtClaims,
    /// Its session has logged out and is inside its sign-out window: it may finish its work (the
    /// sign-out handlers' calls, a final replication), not open live feeds or sockets.
    pub signing_out: bool,
}

/// The one check of an access token, wherever one is presented (Bearer on any route, the
/// realtime handshake): signed by this server, unexpired, and naming a session that has not
/// ended (`auth::sessions::access`: a live session's request costs no store read), or whose
/// logout's sign-out window is still open, as the session's document headers are.
pub fn verify_access(state: &AppState, token: &str) -> Result<Access, AppError> {
    let now = state.clock.now_secs();
    let claims = state.tokens.verify(token, now, true)?;
    let Some(sid) = claims.sid.as_deref() else {
        return Err(AppError::Unauthorized(code::INVALID_TOKEN, "the token names no session".into()));
    };
    use crate::store::refresh_tokens::{session_state, SessionState};
    let in_store =
        || -> Result<SessionState, AppError> { Ok(session_state(&state.store.lock()?, sid, state.clock.now_ms())?) };
    match crate::auth::sessions::access(&state.sessions.ended, sid, now, in_store)? {
        SessionState::Live => Ok(Access { claims, signing_out: false }),
        SessionState::SigningOut => Ok(Access { claims, signing_out: true }),
        SessionState::Ended => Err(AppError::Unauthorized(
            code::SESSION_ENDED,
            "the session this token belongs to has ended; log in again".into(),
        )),
    }
}

/// The caller from a correctly signed token, expired or not (logout accepts it: revoking an
/// old session must not need a fresh one).
pub struct SignedUser(pub JwtClaims);

/// A token the routes' authorisation (`routes::table`) checked: `live`, by `verify_access`;
/// else signed, expired or not. The handler's extractor takes it instead of checking again.
#[derive(Clone)]
pub struct Verified {
    pub claims: JwtClaims,
    pub live: bool,
}

pub fn bearer(parts: &Parts) -> Result<&str, AppError> {
    let header = parts.headers.get(axum::http::header::AUTHORIZATION).ok_or_else(|| {
        AppError::Unauthorized(code::MISSING_TOKEN, "this route needs Authorization: Bearer <token>".into())
    })?;
    header
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            AppError::Unauthorized(code::INVALID_TOKEN, "the Authorization header is not 'Bearer <token>'".into())
        })
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        if let Some(Verified { claims, live: true }) = parts.extensions.get::<Verified>() {
            return Ok(AuthUser(claims.clone()));
        }
        Ok(AuthUser(verify_access(state, bearer(parts)?)?.claims))
    }
}

impl FromRequestParts<AppState> for SignedUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        if let Some(Verified { claims, .. }) = parts.extensions.get::<Verified>() {
            return Ok(SignedUser(claims.clone()));
        }
        let token = bearer(parts)?;
        Ok(SignedUser(state.tokens.verify(token, state.clock.now_secs(), false)?))
    }
}

/// The peer's address, when the server was started with connection info (the binary is; an
/// in-process test server may not be). Never a header: `X-Forwarded-For` is the client's word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientIp(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientIp(parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>().map(|c| c.0.ip())))
    }
}

impl AuthUser {
    pub fn has(&self, role: &str) -> bool {
        self.0.roles.iter().any(|r| r == role)
    }

    /// Whether the SDK's default permission map lets the caller's roles do `action`.
    pub fn may(&self, action: &str) -> bool {
        protocol::permissions::PermissionMap::default().allows(action, &self.0.roles)
    }

    /// 403 unless the caller holds one of `roles`.
    pub fn require_any(&self, roles: &[&str]) -> Result<(), AppError> {
        if self.0.roles.iter().any(|r| roles.contains(&r.as_str())) {
            Ok(())
        } else {
            Err(AppError::Forbidden(format!("this needs the role {}", roles.join(" or "))))
        }
    }
}

/// The caller of a document-database route: a Bearer token, or the document-database header set
/// issued with the session (`X-Docdb-*`). Either stops working when its session ends: the token
/// by `verify_access`, the headers (which do not expire by themselves) by the store; both keep
/// working through a logout's sign-out window (for the device's final replication).
pub struct DocdbUser {
    pub company_id: String,
    pub roles: Vec<String>,
    /// The session the credential belongs to (its open feeds are counted and cut by it).
    pub session_id: String,
    /// The session is signing out: it may finish its replication, not open live feeds.
    pub signing_out: bool,
    /// When the credential's access ends by itself (server clock, ms): the Bearer token's expiry;
    /// `None` for the headers, whose session's expiry is read when a live feed needs it.
    pub access_until_ms: Option<i64>,
    /// The tenant's database names, read in the same visit to the store as the session's state
    /// (the document proxy needs both on every request); `None` when not read.
    pub names: Option<crate::docdb::naming::TenantNames>,
}

impl FromRequestParts<AppState> for DocdbUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        if parts.headers.contains_key(axum::http::header::AUTHORIZATION) || !parts.headers.contains_key("x-docdb-token")
        {
            let Access { claims, signing_out } = verify_access(state, bearer(parts)?)?;
            // `verify_access` refused a token without a session.
            let session_id = claims.sid.unwrap_or_default();
            return Ok(DocdbUser {
                company_id: claims.company_id,
                roles: claims.roles,
                session_id,
                signing_out,
                access_until_ms: Some(claims.exp.saturating_mul(1000)),
                names: None,
            });
        }
        let get = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let caller = crate::auth::secrets::verify_docdb_headers(&state.tokens.docdb_key, get)
            .ok_or_else(|| AppError::Unauthorized(code::INVALID_TOKEN, "the X-Docdb-* headers are not ours".into()))?;
        use crate::store::refresh_tokens::{session_state, SessionState};
        let conn = state.store.lock()?;
        let signing_out = match session_state(&conn, &caller.session_id, state.clock.now_ms())? {
            SessionState::Live => false,
            SessionState::SigningOut => true,
            SessionState::Ended => {
                return Err(AppError::Unauthorized(
                    code::SESSION_ENDED,
                    "the session these headers belong to has ended; log in again".into(),
                ))
            }
        };
        // A tenant that cannot be read here is read (and its error answered) by the route.
        let names =
            crate::rolling::tenants::get(&conn, &caller.company_id).ok().map(|t| t.names(&state.settings.db_prefix));
        drop(conn);
        Ok(DocdbUser {
            company_id: caller.company_id,
            roles: caller.roles,
            session_id: caller.session_id,
            signing_out,
            access_until_ms: None,
            names,
        })
    }
}

/// A number from the query string (read as text, so a malformed one gets the error
/// body rather than axum's rejection).
pub fn query_number<T: std::str::FromStr>(value: Option<&str>, name: &str) -> Result<Option<T>, AppError> {
    value
        .map(|v| v.parse().map_err(|_| AppError::bad_request(format!("{name} must be a whole number, got {v:?}"))))
        .transpose()
}
