//! `SessionBrokerError`: a real JS `Error` with `name === "SessionBrokerError"` and a `code`.

use wasm_bindgen::JsValue;

/// The codes a `SessionBrokerError` carries (typed as `SessionBrokerErrorCode` in the `.d.ts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// The current roles do not allow the action.
    Forbidden,
    /// An argument is missing or of the wrong shape.
    InvalidArgument,
    /// The page has no `localStorage`.
    StorageUnavailable,
    /// The call needs a session.
    NotSignedIn,
    /// The realtime server refused the session.
    RealtimeRefused,
    /// The realtime session was closed.
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

/// A `SessionBrokerError`: a JS `Error` with that name and a `code`.
pub fn error(code: Code, message: &str) -> JsValue {
    let err = js_sys::Error::new(message);
    err.set_name("SessionBrokerError");
    // Setting a property on a fresh Error object cannot fail.
    let _ = js_sys::Reflect::set(&err, &"code".into(), &code.as_str().into());
    err.into()
}

/// A `SessionBrokerError` with code `INVALID_ARGUMENT`.
pub fn invalid(message: impl AsRef<str>) -> JsValue {
    error(Code::InvalidArgument, message.as_ref())
}

pub use crate::web::describe;
