//! The platform's text codecs the core reads and writes with: JSON text ⇄ `serde_json::Value`,
//! and base64url (a JWT's payload). Natively they are serde_json's and the base64 crate's; in the
//! browser the web adapter installs the browser's own `JSON` and `atob` ([`install`]), so the
//! wasm module carries no JSON parser or printer, no base64 decoder and none of their error
//! formatting (docs/performance.md, the package's size).

use std::sync::OnceLock;

use serde_json::Value;

/// One platform's codecs.
#[derive(Clone, Copy)]
pub struct Codec {
    /// Parses JSON text; `None` when it is not JSON.
    pub parse: fn(&str) -> Option<Value>,
    /// Writes JSON text.
    pub stringify: fn(&Value) -> String,
    /// Decodes base64url, padded or not; `None` for anything else (the standard alphabet's `+`
    /// and `/` included).
    pub base64url: fn(&str) -> Option<Vec<u8>>,
}

static CODEC: OnceLock<Codec> = OnceLock::new();

/// Installs the platform's codecs (the browser's); the first one installed stays.
pub fn install(codec: Codec) {
    let _ = CODEC.set(codec);
}

/// serde_json's and the base64 crate's, the native default; never linked into the wasm module.
#[cfg(not(target_arch = "wasm32"))]
fn fallback() -> Codec {
    use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
    use base64::Engine;
    Codec {
        parse: |text| serde_json::from_str(text).ok(),
        stringify: |value| value.to_string(),
        // Issuers differ on padding; accept both forms.
        base64url: |text| URL_SAFE_NO_PAD.decode(text).or_else(|_| URL_SAFE.decode(text)).ok(),
    }
}

/// Without installed codecs the module can read nothing (the facade installs them first).
#[cfg(target_arch = "wasm32")]
fn fallback() -> Codec {
    Codec { parse: |_| None, stringify: |_| String::from("null"), base64url: |_| None }
}

/// The installed codecs, or the platform's default.
pub fn codec() -> Codec {
    CODEC.get().copied().unwrap_or_else(fallback)
}

/// Decodes base64url, padded or not.
pub fn decode_base64url(text: &str) -> Option<Vec<u8>> {
    (codec().base64url)(text)
}

/// The decimal text of an unsigned number (an HTTP status, a close code, milliseconds): every
/// one goes through u64's `to_string`, so the module carries one formatting instance, not one
/// per integer type.
pub fn decimal(n: impl Into<u64>) -> String {
    n.into().to_string()
}
