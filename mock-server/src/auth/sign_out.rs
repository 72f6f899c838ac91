//! A logout and its sign-out window. The first call ends the session's refresh at once and opens
//! the window: the access token and the document headers keep working for the sign-out's
//! handlers (a device status, a final replication) until a call with `complete` or
//! `SIGN_OUT_GRACE_SECS`, whichever comes first. With scope `others` the user's other sessions
//! end at once (as a deleted device's do) and this one goes on; with `global`, those and this
//! one; either needs a live session (its token may have expired, as for any logout; an ended or
//! signing-out session's is refused). A session bound to its device's key is logged out, in any
//! scope and by either call, only with that key's proof: a copy of its tokens cannot end it.

use protocol::{routes, JwtClaims, LogoutRequest, LogoutScope};

use crate::auth::errors::{AuthError, AuthResult};
use crate::auth::proofs;
use crate::settings::Settings;
use crate::store::devices;
use crate::store::refresh_tokens::{self, SessionState};
use crate::store::sql::Connection;

/// Applies `req` for the session of `claims`; answers the sessions whose credentials ended or
/// entered their window (this one unless the scope is `others`), for the caller to cut.
pub fn logout(
    tx: &Connection,
    settings: &Settings,
    nonce_key: &[u8],
    claims: &JwtClaims,
    req: &LogoutRequest,
    now_ms: i64,
) -> AuthResult<Vec<String>> {
    // Checked before anything ends, as a refresh's is: a refusal leaves every session as it was.
    let keys = match &claims.sid {
        Some(sid) => devices::keys_of_session(tx, sid)?,
        None => Vec::new(),
    };
    let proof = req.device_proof.as_ref();
    if keys.is_empty() {
        proofs::spend_unused(tx, nonce_key, proof, now_ms)?;
    } else if !proofs::proven(tx, nonce_key, &keys, proof, routes::LOGOUT, now_ms)? {
        return Err(AuthError::DeviceProofRequired);
    }
    let window_ms = i64::try_from(settings.sign_out_grace_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    let this = claims.sid.clone().filter(|_| req.scope != LogoutScope::Others);
    let mut ended = Vec::new();
    // The completion call ends nothing more: the first call ended the others.
    if req.scope != LogoutScope::Local && !req.complete {
        let live = match &claims.sid {
            Some(sid) => refresh_tokens::session_state(tx, sid, now_ms)? == SessionState::Live,
            None => false,
        };
        if !live {
            return Err(AuthError::SessionNotLive);
        }
        ended = refresh_tokens::sessions_of_user(tx, &claims.user_id, now_ms)?;
        ended.retain(|s| Some(s) != claims.sid.as_ref());
        refresh_tokens::end_now(tx, &ended, now_ms)?;
    }
    if req.scope == LogoutScope::Others {
        return Ok(ended);
    }
    match &this {
        Some(sid) if req.complete => refresh_tokens::signed_out(tx, sid, now_ms)?,
        Some(sid) => refresh_tokens::signing_out(tx, sid, now_ms, now_ms.saturating_add(window_ms))?,
        None => {}
    }
    if let Some(device_id) = &req.device_id {
        if devices::by_id(tx, device_id)?.is_some_and(|d| d.user_id == claims.user_id) {
            devices::set_online(tx, device_id, false, now_ms)?;
        }
    }
    ended.extend(this);
    Ok(ended)
}
