//! HS256 access tokens through the jsonwebtoken crate. Expiry is checked against the server
//! clock (which tests move), not the system clock.

use jsonwebtoken::{decode, encode, errors::ErrorKind, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use protocol::JwtClaims;

/// Why a token could not be issued or was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    #[error("signing an access token")]
    Sign(#[source] jsonwebtoken::errors::Error),
    #[error("{0}")]
    Invalid(&'static str),
    #[error("the access token has expired; refresh it")]
    Expired,
}

pub struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// Signs the document-database headers (derived from the secret for that use only).
    pub docdb_key: Vec<u8>,
    pub access_ttl_secs: u64,
}

impl TokenKeys {
    pub fn new(secret: &str, access_ttl_secs: u64) -> Self {
        TokenKeys {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            docdb_key: crate::auth::secrets::docdb_key(secret),
            access_ttl_secs,
        }
    }

    pub fn issue(
        &self,
        user_id: &str,
        company_id: &str,
        roles: &[String],
        session_id: &str,
        now_secs: i64,
    ) -> Result<String, JwtError> {
        let claims = JwtClaims {
            sub: user_id.to_owned(),
            user_id: user_id.to_owned(),
            company_id: company_id.to_owned(),
            roles: roles.to_vec(),
            iat: now_secs,
            exp: now_secs + self.access_ttl_secs as i64,
            sid: Some(session_id.to_owned()),
            jti: Some(crate::auth::secrets::random_id("jwt")),
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).map_err(JwtError::Sign)
    }

    /// Checks signature and shape; with `check_expiry`, also `exp` against `now_secs`.
    pub fn verify(&self, token: &str, now_secs: i64, check_expiry: bool) -> Result<JwtClaims, JwtError> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_exp = false;
        validation.required_spec_claims.clear();
        let claims = decode::<JwtClaims>(token, &self.decoding, &validation)
            .map_err(|e| {
                let why = match e.kind() {
                    ErrorKind::InvalidSignature => "the token's signature is not ours",
                    ErrorKind::Json(_) | ErrorKind::MissingRequiredClaim(_) => {
                        "the token lacks the claims this server issues"
                    }
                    _ => "the token is not a valid JWT",
                };
                JwtError::Invalid(why)
            })?
            .claims;
        if check_expiry && claims.exp <= now_secs {
            return Err(JwtError::Expired);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_then_verify_and_expiry_on_the_server_clock() {
        let keys = TokenKeys::new("0123456789abcdef-secret", 900);
        let t = keys.issue("u1", "acme", &["cashier".into()], "s1", 1_000).unwrap();
        assert_ne!(t, keys.issue("u1", "acme", &["cashier".into()], "s1", 1_000).unwrap(), "unique per token");
        let c = keys.verify(&t, 1_000, true).unwrap();
        assert_eq!((c.company_id.as_str(), c.exp, c.sid.as_deref()), ("acme", 1_900, Some("s1")));
        assert!(matches!(keys.verify(&t, 1_900, true), Err(JwtError::Expired)));
        assert!(keys.verify(&t, 99_999, false).is_ok());
        let other = TokenKeys::new("another-secret-of-16+", 900);
        assert!(matches!(other.verify(&t, 1_000, true), Err(JwtError::Invalid(_))));
        assert!(matches!(keys.verify("a.b.c", 0, true), Err(JwtError::Invalid(_))));
    }
}
