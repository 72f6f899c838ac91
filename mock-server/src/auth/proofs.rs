//! Whether a request's proof of its device's key is taken (`device_keys` checks the signature;
//! the store remembers the nonces spent).

use protocol::routes::Call;
use protocol::DeviceProof;

use crate::auth::device_keys;
use crate::store::devices;
use crate::store::sql::{self, Connection};

/// Whether `proof` is a proof for `route` by one of `keys`, over a fresh nonce of this server
/// never used before; the nonce is spent by it.
pub fn proven(
    tx: &Connection,
    nonce_key: &[u8],
    keys: &[String],
    proof: Option<&DeviceProof>,
    route: Call,
    now_ms: i64,
) -> sql::Result<bool> {
    let Some(proof) = proof else { return Ok(false) };
    if !device_keys::nonce_fresh(nonce_key, &proof.nonce, now_ms)
        || !keys.iter().any(|key| device_keys::signed_by(key, route.method.as_str(), route.path, proof))
    {
        return Ok(false);
    }
    devices::spend_nonce(tx, &proof.nonce, now_ms.saturating_add(device_keys::NONCE_TTL_MS), now_ms)
}

/// A proof that was presented but not taken is spent all the same: it is good for one request,
/// whatever that request was, so a proof sent on another user's sign-in or on an unbound
/// session's refresh cannot be kept for later.
pub fn spend_unused(tx: &Connection, nonce_key: &[u8], proof: Option<&DeviceProof>, now_ms: i64) -> sql::Result<()> {
    if let Some(proof) = proof.filter(|p| device_keys::nonce_fresh(nonce_key, &p.nonce, now_ms)) {
        devices::spend_nonce(tx, &proof.nonce, now_ms.saturating_add(device_keys::NONCE_TTL_MS), now_ms)?;
    }
    Ok(())
}
