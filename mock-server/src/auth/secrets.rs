//! Password hashes, opaque refresh tokens and the document-database HMAC header sets.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};
use session_broker::protocol::{DocdbHeaders, HeaderSet};

/// A salted SHA-256 (the user name salts it): enough for a mock that never sees real passwords.
pub fn password_hash(username: &str, password: &str) -> String {
    hex::encode(Sha256::digest(format!("session-broker:{username}:{password}")))
}

/// 32 random bytes, hex: the refresh token the client holds.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

pub fn random_id(prefix: &str) -> String {
    let mut bytes = [0u8; 8];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}-{}", hex::encode(bytes))
}

/// What the store keeps instead of the refresh token itself.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

fn sign(secret: &str, message: &str) -> String {
    // HMAC accepts keys of any length; this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// The header sets that authorise replication against the remote and the local document database.
pub fn docdb_headers(secret: &str, user_id: &str, company_id: &str, roles: &[String]) -> DocdbHeaders {
    let set = |scope: &str| -> HeaderSet {
        let mut h = HeaderSet::new();
        h.insert("X-Docdb-User".into(), user_id.into());
        h.insert("X-Docdb-Company".into(), company_id.into());
        h.insert("X-Docdb-Roles".into(), roles.join(",").into());
        h.insert("X-Docdb-Token".into(), sign(secret, &format!("{scope}:{company_id}:{user_id}")).into());
        h
    };
    DocdbHeaders { remote: Some(set("remote")), local: Some(set("local")) }
}
