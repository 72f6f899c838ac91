//! JWT decoding on the client (no signature check: the server verifies, the client only reads
//! its own claims) and the expiry rules with their one-minute safety margin.

use serde_json::{Map, Value};

/// `isTokenExpired()` and `isAboutToExpire()` treat a token as gone this long before its expiry.
pub const EXPIRY_MARGIN_MS: i64 = 60_000;

/// The decoded payload of a JWT, every claim kept as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Claims(Map<String, Value>);

/// Why a string is not a readable JWT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// Not three dot-separated parts.
    NotAJwt,
    /// The payload is not base64url-encoded JSON.
    BadEncoding,
    /// The payload is not a JSON object.
    NotAnObject,
}

impl TokenError {
    /// The `Display` text (called directly: no `to_string` instance per error type).
    pub fn message(&self) -> &'static str {
        match self {
            TokenError::NotAJwt => "not a JWT (expected three dot-separated parts)",
            TokenError::BadEncoding => "JWT payload is not base64url-encoded JSON",
            TokenError::NotAnObject => "JWT payload is not a JSON object",
        }
    }
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl Claims {
    /// Decodes a JWT's payload (no signature check: that is the server's job).
    pub fn decode(jwt: &str) -> Result<Claims, TokenError> {
        let mut parts = jwt.split('.');
        let (Some(header), Some(payload), Some(_sig), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::NotAJwt);
        };
        if header.is_empty() || payload.is_empty() {
            return Err(TokenError::NotAJwt);
        }
        let bytes = super::codec::decode_base64url(payload).ok_or(TokenError::BadEncoding)?;
        let text = std::str::from_utf8(&bytes).map_err(|_| TokenError::BadEncoding)?;
        match super::json::parse(text).ok_or(TokenError::BadEncoding)? {
            Value::Object(map) => Ok(Claims(map)),
            _ => Err(TokenError::NotAnObject),
        }
    }

    /// The claims as a JSON object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The claims as a JSON value (a copy).
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }

    fn text(&self, claim: &str) -> Option<String> {
        match self.0.get(claim)? {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            number @ Value::Number(_) => Some(super::json::stringify(number)),
            _ => None,
        }
    }

    /// The `companyId` claim.
    pub fn company_id(&self) -> Option<String> {
        self.text("companyId")
    }

    /// The session (refresh family) id, where the issuer sets one: a refresh keeps it.
    pub fn sid(&self) -> Option<String> {
        self.text("sid")
    }

    /// The `userId` claim, or `sub`.
    pub fn user_id(&self) -> Option<String> {
        self.text("userId").or_else(|| self.text("sub"))
    }

    /// The `roles` claim; anything that is not a string is ignored.
    pub fn roles(&self) -> Vec<String> {
        match self.0.get("roles") {
            Some(Value::Array(items)) => items.iter().filter_map(|r| r.as_str().map(str::to_owned)).collect(),
            _ => Vec::new(),
        }
    }

    /// `exp` in milliseconds.
    pub fn expires_at_ms(&self) -> Option<i64> {
        self.0.get("exp")?.as_f64().map(|s| (s * 1000.0) as i64)
    }
}

/// The expiry rules as instants, for a reader that compares with its own clock (the read cache of
/// the package's entry module): expired from `expired_from` on, about to expire in
/// `[expired_from, expires_at)`.
/// No known expiry is `-∞` for both: always expired, never about to expire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpiryWindow {
    /// `expiresAt − margin`.
    pub expired_from: f64,
    /// `expiresAt`.
    pub expires_at: f64,
}

impl ExpiryWindow {
    /// The window of a token expiring at `expires_at_ms` (`None`: unknown).
    pub fn new(expires_at_ms: Option<i64>) -> Self {
        match expires_at_ms {
            Some(at) => {
                ExpiryWindow { expired_from: at.saturating_sub(EXPIRY_MARGIN_MS) as f64, expires_at: at as f64 }
            }
            None => ExpiryWindow { expired_from: f64::NEG_INFINITY, expires_at: f64::NEG_INFINITY },
        }
    }

    /// `now ≥ expiresAt − margin`, or no expiry known.
    pub fn expired(&self, now_ms: i64) -> bool {
        now_ms as f64 >= self.expired_from
    }

    /// `expiresAt − margin ≤ now < expiresAt`.
    pub fn about_to_expire(&self, now_ms: i64) -> bool {
        self.expired(now_ms) && (now_ms as f64) < self.expires_at
    }
}

/// True when there is no expiry known, or `now ≥ expiresAt − margin`.
pub fn is_expired(expires_at_ms: Option<i64>, now_ms: i64) -> bool {
    ExpiryWindow::new(expires_at_ms).expired(now_ms)
}

/// True inside the margin: `expiresAt − margin ≤ now < expiresAt`.
pub fn is_about_to_expire(expires_at_ms: Option<i64>, now_ms: i64) -> bool {
    ExpiryWindow::new(expires_at_ms).about_to_expire(now_ms)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn encode_for_test(claims: &Value) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{header}.{payload}.c2lnbmF0dXJl")
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
    use base64::Engine;
    use serde_json::json;

    #[test]
    fn decodes_claims_and_reads_roles_company_user() {
        let jwt =
            encode_for_test(&json!({"sub":"u1","userId":"u1","companyId":"acme","roles":["cashier", 7],"exp": 100}));
        let c = Claims::decode(&jwt).unwrap();
        assert_eq!(c.company_id().as_deref(), Some("acme"));
        assert_eq!(c.user_id().as_deref(), Some("u1"));
        assert_eq!(c.roles(), vec!["cashier".to_string()]);
        assert_eq!(c.expires_at_ms(), Some(100_000));
    }

    #[test]
    fn rejects_what_is_not_a_jwt() {
        assert_eq!(Claims::decode("abc"), Err(TokenError::NotAJwt));
        assert_eq!(Claims::decode("a.b.c.d"), Err(TokenError::NotAJwt));
        assert_eq!(Claims::decode("a.!!!.c"), Err(TokenError::BadEncoding));
        let arr = format!("x.{}.y", URL_SAFE_NO_PAD.encode("[1]"));
        assert_eq!(Claims::decode(&arr), Err(TokenError::NotAnObject));
    }

    #[test]
    fn padded_payload_is_accepted() {
        let payload = URL_SAFE.encode(r#"{"companyId":"x"}"#);
        assert!(payload.ends_with('='));
        assert!(Claims::decode(&format!("h.{payload}.s")).is_ok());
    }

    #[test]
    fn roles_are_empty_without_claim() {
        let c = Claims::decode(&encode_for_test(&json!({"roles": "admin"}))).unwrap();
        assert!(c.roles().is_empty());
    }

    #[test]
    fn expiry_margin_is_one_minute() {
        let at = 1_000_000;
        assert!(!is_expired(Some(at), at - 60_001));
        assert!(is_expired(Some(at), at - 60_000));
        assert!(is_expired(None, 0));
        assert!(!is_about_to_expire(Some(at), at - 60_001));
        assert!(is_about_to_expire(Some(at), at - 60_000));
        assert!(is_about_to_expire(Some(at), at - 1));
        assert!(!is_about_to_expire(Some(at), at));
        assert!(!is_about_to_expire(None, 0));
    }
}
