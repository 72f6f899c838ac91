//! A refresh: the token is rotated, a reuse past the grace window revokes its whole family, and
//! a session bound to its device's key needs that key's proof.

use protocol::{routes, AuthResponse, RefreshRequest};

use crate::auth::errors::{AuthError, AuthResult};
use crate::auth::issue::Issuer;
use crate::auth::proofs;
use crate::auth::secrets::token_hash;
use crate::store::refresh_tokens;
use crate::store::sql::Connection;

/// What a refresh that was not refused outright did. A reuse answers an error, yet its family's
/// revocation must commit: the rule decides inside the transaction, the caller answers outside.
pub enum Outcome {
    Issued(AuthResponse),
    /// The family that was revoked for it.
    Reused(String),
    /// A second replay inside the grace window: refused, the family kept.
    Replayed,
}

/// Rotates `req`'s refresh token.
pub fn rotate(tx: &Connection, issuer: Issuer<'_>, req: &RefreshRequest, now_ms: i64) -> AuthResult<Outcome> {
    let hash = token_hash(&req.refresh_token);
    let nonce_key = &issuer.tokens.docdb_key;
    // The token's family is this transaction's alone from here; the token is read under its lock.
    refresh_tokens::lock_family_of(tx, &hash)?;
    let rt = refresh_tokens::find(tx, &hash)?.ok_or(AuthError::UnknownRefreshToken)?;
    if rt.revoked_at.is_some() {
        return Err(AuthError::RefreshTokenRevoked);
    }
    if rt.expires_at <= now_ms {
        return Err(AuthError::RefreshTokenExpired);
    }
    // A session on a device with a key is bound to it: its refresh token, copied elsewhere, is
    // refused, and refused before the reuse rule, so a copy cannot end the session either.
    let keys = &rt.session_keys;
    if keys.is_empty() {
        proofs::spend_unused(tx, nonce_key, req.device_proof.as_ref(), now_ms)?;
    } else if !proofs::proven(tx, nonce_key, keys, req.device_proof.as_ref(), routes::REFRESH, now_ms)? {
        return Err(AuthError::DeviceProofRequired);
    }
    if let Some(used_at) = rt.used_at {
        let grace_ms = i64::try_from(issuer.settings.refresh_reuse_grace_secs).unwrap_or(i64::MAX).saturating_mul(1000);
        if grace_ms == 0 || now_ms.saturating_sub(used_at) > grace_ms {
            refresh_tokens::revoke_family(tx, &rt.family_id, now_ms)?;
            tracing::warn!(family = %rt.family_id, "refresh token reused after the grace window: family revoked");
            return Ok(Outcome::Reused(rt.family_id));
        }
        // Inside the window a racing tab gets one successor, a replaying thief no more.
        if !refresh_tokens::first_replay(tx, &hash, now_ms, grace_ms)? {
            return Ok(Outcome::Replayed);
        }
    }
    refresh_tokens::mark_used(tx, &hash, now_ms)?;
    let user = rt.holder.ok_or(AuthError::UserGone)?;
    issuer.issue(tx, &user, &rt.family_id, now_ms).map(Outcome::Issued)
}
