//! `SessionBrokerError`: a real JS `Error` with `name === "SessionBrokerError"` and a `code`.

use wasm_bindgen::JsValue;

/// The codes a `SessionBrokerError` carries (typed as `SessionBrokerErrorCode` in the `.d.ts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Forbidden,
    InvalidArgument,
    StorageUnavailable,
    NotSignedIn,
    RealtimeRefused,
    Closed,
}

impl Code {
    fn as_str(self) -> &'static str {
        match self {
            Code::Forbidden => "FORBIDDEN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::StorageUnavailable => "STORAGE_UNAVAILABLE",
            Code::NotSignedIn => "NOT_SIGNED_IN",
            Code::RealtimeRefused => "REALTIME_REFUSED",
            Code::Closed => "CLOSED",
        }
    }
}

pub fn error(code: Code, message: &str) -> JsValue {
    let err = js_sys::Error::new(message);
    err.set_name("SessionBrokerError");
    // Setting a property on a fresh Error object cannot fail.
    let _ = js_sys::Reflect::set(&err, &"code".into(), &code.as_str().into());
    err.into()
}

pub fn invalid(message: impl AsRef<str>) -> JsValue {
    error(Code::InvalidArgument, message.as_ref())
}

pub use crate::web::describe;
