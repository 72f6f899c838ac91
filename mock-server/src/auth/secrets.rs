//! The signing secret, opaque refresh tokens and the document-database HMAC header sets.

use std::path::Path;

use hmac::{Hmac, Mac};
use protocol::{DocdbHeaders, HeaderSet};
use rand::RngCore;
use sha2::{Digest, Sha256};

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

fn mac(key: &[u8], message: &str) -> Hmac<Sha256> {
    // HMAC accepts keys of any length; this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(message.as_bytes());
    mac
}

/// Why the kept signing secret could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("{} is too short to be a signing secret; delete it to have a new one generated", .0.display())]
    TooShort(std::path::PathBuf),
    #[error("the signing secret's file {}", .0.display())]
    Io(std::path::PathBuf, #[source] std::io::Error),
}

/// The file under `DATA_DIR` that keeps a generated signing secret across restarts.
pub const SECRET_FILE: &str = "jwt-secret";

/// The secret that signs access tokens: `JWT_SECRET` when set; otherwise one generated on first
/// start and kept in `DATA_DIR` (mode 0600), or, with no `DATA_DIR`, one for this process only.
/// Never a constant: a secret in the source is a secret every reader knows.
pub fn signing_secret(explicit: Option<&str>, data_dir: Option<&Path>) -> Result<String, SecretError> {
    if let Some(secret) = explicit {
        return Ok(secret.to_owned());
    }
    let Some(dir) = data_dir else {
        return Ok(random_token());
    };
    let path = dir.join(SECRET_FILE);
    match std::fs::read_to_string(&path) {
        Ok(kept) if kept.trim().len() >= 32 => return Ok(kept.trim().to_owned()),
        Ok(_) => return Err(SecretError::TooShort(path)),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(SecretError::Io(path, e)),
        Err(_) => {}
    }
    std::fs::create_dir_all(dir).map_err(|e| SecretError::Io(dir.to_owned(), e))?;
    let secret = random_token();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).map_err(|e| SecretError::Io(path.clone(), e))?;
    std::io::Write::write_all(&mut file, secret.as_bytes()).map_err(|e| SecretError::Io(path.clone(), e))?;
    Ok(secret)
}

/// The key of the document-database headers, derived from the signing secret for that one use,
/// so a header signature can never be replayed as (or computed from) anything else.
pub fn docdb_key(secret: &str) -> Vec<u8> {
    mac(secret.as_bytes(), "session-broker docdb-headers v1").finalize().into_bytes().to_vec()
}

fn docdb_message(scope: &str, company_id: &str, user_id: &str, session_id: &str, roles: &str) -> String {
    [scope, company_id, user_id, session_id, roles].join(":")
}

/// The header sets that authorise replication against the remote and the local document
/// database. They name the session (`X-Docdb-Session`), so they end with it.
pub fn docdb_headers(key: &[u8], user_id: &str, company_id: &str, roles: &[String], session_id: &str) -> DocdbHeaders {
    let roles = roles.join(",");
    let set = |scope: &str| -> HeaderSet {
        let mut h = HeaderSet::new();
        h.insert("X-Docdb-User".into(), user_id.into());
        h.insert("X-Docdb-Company".into(), company_id.into());
        h.insert("X-Docdb-Roles".into(), roles.clone().into());
        h.insert("X-Docdb-Session".into(), session_id.into());
        let signature =
            mac(key, &docdb_message(scope, company_id, user_id, session_id, &roles)).finalize().into_bytes();
        h.insert("X-Docdb-Token".into(), hex::encode(signature).into());
        h
    };
    DocdbHeaders { remote: Some(set("remote")), local: Some(set("local")) }
}

/// What a verified header set says: user, company, roles and session.
#[derive(Debug, Clone, PartialEq)]
pub struct DocdbCaller {
    pub user_id: String,
    pub company_id: String,
    pub roles: Vec<String>,
    pub session_id: String,
}

/// Checks a header set's signature (in constant time) for either scope.
pub fn verify_docdb_headers(key: &[u8], get: impl Fn(&str) -> Option<String>) -> Option<DocdbCaller> {
    let (user, company, roles, session, token) = (
        get("X-Docdb-User")?,
        get("X-Docdb-Company")?,
        get("X-Docdb-Roles")?,
        get("X-Docdb-Session")?,
        get("X-Docdb-Token")?,
    );
    let signature = hex::decode(token).ok()?;
    let valid = ["remote", "local"].iter().any(|scope| {
        mac(key, &docdb_message(scope, &company, &user, &session, &roles)).verify_slice(&signature).is_ok()
    });
    valid.then(|| DocdbCaller {
        user_id: user,
        company_id: company,
        roles: roles.split(',').filter(|r| !r.is_empty()).map(str::to_owned).collect(),
        session_id: session,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_secret_is_kept_private_and_reused() {
        let dir = std::env::temp_dir().join(random_id("secret-test"));
        let first = signing_secret(None, Some(&dir)).unwrap();
        assert!(first.len() >= 32);
        assert_eq!(signing_secret(None, Some(&dir)).unwrap(), first, "kept across restarts");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(SECRET_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_ne!(
            signing_secret(None, None).unwrap(),
            signing_secret(None, None).unwrap(),
            "per process without DATA_DIR"
        );
        assert_eq!(signing_secret(Some("explicit-secret-value"), Some(&dir)).unwrap(), "explicit-secret-value");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn docdb_headers_verify_only_with_their_key_and_unchanged() {
        let key = docdb_key("s3cret-s3cret-s3cret");
        let headers = docdb_headers(&key, "u1", "acme", &["cashier".into()], "sess-1");
        let remote = headers.remote.unwrap();
        let get = |h: &HeaderSet| {
            let h = h.clone();
            move |k: &str| h.get(k).and_then(|v| v.as_str()).map(str::to_owned)
        };
        let caller = verify_docdb_headers(&key, get(&remote)).unwrap();
        assert_eq!(
            (caller.company_id.as_str(), caller.session_id.as_str(), caller.roles.clone()),
            ("acme", "sess-1", vec!["cashier".to_string()])
        );
        assert!(verify_docdb_headers(&docdb_key("another-secret-value"), get(&remote)).is_none());
        let mut forged = remote.clone();
        forged.insert("X-Docdb-Roles".into(), "sys_admin".into());
        assert!(verify_docdb_headers(&key, get(&forged)).is_none());
    }
}
