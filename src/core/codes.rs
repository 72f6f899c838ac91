//! The SDK's own failure codes: what a result's `code` (or a thrown `SessionBrokerError`'s) says
//! when the server gave none. With the server's codes (`protocol::errors`) they form the one list
//! the `.d.ts` types as `ErrorCode`; no code is in both.

codes! {
    /// No answer: offline, DNS, a refused connection or CORS.
    NETWORK = "network";
    /// No answer within the request timeout.
    TIMEOUT = "timeout";
    /// An HTTP error status without the server's error body (a proxy's page, say).
    HTTP_ERROR = "http_error";
    /// A success status whose body the SDK cannot use (a login answer without a token).
    BAD_RESPONSE = "bad_response";
    /// The server sent a code this SDK does not know (a newer server): the code as sent is in
    /// the failure's `serverCode`.
    UNKNOWN_CODE = "unknown_code";
    /// The call needs a session and none is stored.
    NOT_SIGNED_IN = "not_signed_in";
    /// The access token expired and could not be refreshed.
    SESSION_EXPIRED = "session_expired";
    /// The server refused the refresh token: the session is over and was signed out here.
    REFRESH_REJECTED = "refresh_rejected";
    /// The page has no usable `localStorage` (or it refused a write).
    STORAGE_UNAVAILABLE = "storage_unavailable";
    /// An argument is missing or of the wrong shape (thrown, never sent).
    INVALID_ARGUMENT = "invalid_argument";
    /// The current roles do not allow the action (`requirePermission`).
    PERMISSION_DENIED = "permission_denied";
    /// The realtime server refused the session.
    REALTIME_REFUSED = "realtime_refused";
    /// The realtime session was closed before it was ready.
    CLOSED = "closed";
    /// A realtime connection attempt failed (the `error` event; the session retries with backoff).
    CONNECTION_FAILED = "connection_failed";
    /// The module was used before `await init()`.
    NOT_INITIALIZED = "not_initialized";
    /// `logout()` was called while the login ran: its new session was ended, nothing stored.
    SIGNED_OUT = "signed_out";
    /// The `AuthManager` was released (`free()`, `using`): create another.
    DISPOSED = "disposed";
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    #[test]
    fn the_sdk_codes_and_the_server_codes_are_one_list_without_overlap() {
        for code in super::ALL {
            assert!(code.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{code}");
            assert!(!crate::protocol::errors::ALL.contains(code), "{code} is a server code too");
        }
    }

    /// Every code the SDK emits comes from the list above: no code is written as a literal where
    /// a failure or an `error` event is made (the unions could not know it).
    #[test]
    fn no_code_is_written_outside_the_list() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut found = Vec::new();
        for sub in ["core", "core/session", "js", "web"] {
            for entry in std::fs::read_dir(format!("{dir}/{sub}")).unwrap().flatten() {
                let path = entry.path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if !name.ends_with(".rs") || name == "tests.rs" || name == "codes.rs" {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(all(test").next().unwrap();
                for needle in ["emit_error(\"", " error(\"", "(error(\"", "failure(\"", "(\"code\", \""] {
                    if code.contains(needle) {
                        found.push(format!("{sub}/{name}: {needle}"));
                    }
                }
            }
        }
        assert!(found.is_empty(), "codes written as literals: {found:?}");
    }
}
