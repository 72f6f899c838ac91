//! Password hashes: Argon2id in the PHC string format, checked in constant time, with the same
//! work and the same answer for a user that does not exist (no enumeration by answer or by
//! time). The cost is deliberately low (4 MiB, one pass): this is a mock server that runs on
//! developers' machines and in test suites that log in hundreds of times; a production server
//! would use OWASP's floor (19 MiB, two passes) or more. The algorithm and salt are the real
//! thing, so a stolen store still has to be brute-forced per user.

use std::sync::OnceLock;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

fn argon2() -> Argon2<'static> {
    // Fixed, valid parameters: this cannot fail.
    let params = Params::new(4 * 1024, 1, 1, None).expect("valid Argon2 parameters");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// A fresh salted hash of `password`.
pub fn hash(password: &str) -> String {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    // A 16-byte salt encodes; hashing with fixed parameters cannot fail.
    let salt = SaltString::encode_b64(&salt).expect("a 16-byte salt encodes");
    argon2().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).unwrap_or_default()
}

/// Hashed once, verified against when the user does not exist, so that costs the same.
fn decoy() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| hash("no user has this password"))
}

/// What checking a password came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    Valid,
    /// Valid, but stored in the old unsalted format: store a new hash.
    ValidLegacy,
    Invalid,
}

impl Checked {
    pub fn ok(self) -> bool {
        self != Checked::Invalid
    }
}

/// Checks `password` against the user's stored hash (`None`: no such user).
pub fn check(stored: Option<&str>, username: &str, password: &str) -> Checked {
    let verify = |phc: &str| {
        PasswordHash::new(phc).is_ok_and(|parsed| argon2().verify_password(password.as_bytes(), &parsed).is_ok())
    };
    match stored {
        Some(phc) if phc.starts_with("$argon2") => {
            if verify(phc) {
                Checked::Valid
            } else {
                Checked::Invalid
            }
        }
        // Stores written before Argon2: SHA-256 of `session-broker:<user>:<password>`.
        Some(legacy) => {
            let _ = verify(decoy());
            let computed = hex::encode(Sha256::digest(format!("session-broker:{username}:{password}")));
            if bool::from(computed.as_bytes().ct_eq(legacy.as_bytes())) {
                Checked::ValidLegacy
            } else {
                Checked::Invalid
            }
        }
        None => {
            let _ = verify(decoy());
            Checked::Invalid
        }
    }
}

/// Password work off the async workers, at most one check per core at a time. A check is
/// milliseconds of CPU by design; on a worker it stalls every request queued behind it (a burst
/// of 50 logins held `/health` for hundreds of ms), and unbounded it would take a core per
/// caller and the memory of each (4 MiB).
pub struct Hashing {
    permits: tokio::sync::Semaphore,
}

impl Default for Hashing {
    fn default() -> Self {
        Hashing { permits: tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get())) }
    }
}

impl Hashing {
    /// Runs `work` (a hash or a check) on the blocking pool once a core is free (`bridge::off_workers`).
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        // The semaphore is never closed, so `acquire` cannot fail; without a permit the work runs anyway.
        let _permit = self.permits.acquire().await.ok();
        crate::bridge::off_workers(work).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_salted_argon2id_and_check_in_both_formats() {
        let (a, b) = (hash("alice-pass"), hash("alice-pass"));
        assert!(a.starts_with("$argon2id$v=19$m=4096,t=1,p=1$"), "{a}");
        assert_ne!(a, b, "salted");
        assert_eq!(check(Some(&a), "alice", "alice-pass"), Checked::Valid);
        assert_eq!(check(Some(&a), "alice", "wrong"), Checked::Invalid);
        assert_eq!(check(None, "ghost", "alice-pass"), Checked::Invalid);
        let legacy = hex::encode(Sha256::digest("session-broker:alice:alice-pass"));
        assert_eq!(check(Some(&legacy), "alice", "alice-pass"), Checked::ValidLegacy);
        assert_eq!(check(Some(&legacy), "alice", "nope"), Checked::Invalid);
    }
}
