//! The names the generated `.d.ts` (the classes wasm-bindgen declares from the doc comments) gives
//! its arguments and answers. They are declared in the package's `api.d.ts` (by hand) and
//! `protocol.d.ts` (by `make types`), in `pkg-template/`; this section imports them.

use wasm_bindgen::prelude::*;

// Exactly the names the `#[wasm_bindgen]` annotations of `src/js/` use, each from the file that
// declares it (mock-server/tests/typescript.rs checks the lists).
#[wasm_bindgen(typescript_custom_section)]
const TS_IMPORTS: &'static str = r#"
import type {
  AuditQuery, AuthManagerOptions, CallResult, Company, Credentials, DestroyResult, DeviceInfo, DeviceStatus,
  HeaderKind, LocalPouchDB, LoginResult, LogoutOptions, ReadyPayload, RegisterCredentials,
  RegisterDeviceResult, SessionUser, SetFlagsOptions, SignOutEvent, SyncSessionOptions, SyncState, TokenKind,
  TokenRefreshEvent, TrackOptions, Unsubscribe,
} from "./api.js";
import type { Answer, RequestBody } from "./protocol.js";
"#;

#[wasm_bindgen]
extern "C" {
    /// An optional options object typed by name, so the `.d.ts` reads `options?: SyncSessionOptions`.
    #[wasm_bindgen(typescript_type = "SyncSessionOptions")]
    pub type SyncSessionOptionsArg;
    /// `setFlags`'s optional third argument.
    #[wasm_bindgen(typescript_type = "SetFlagsOptions")]
    pub type SetFlagsOptionsArg;
    /// `logout`'s optional argument.
    #[wasm_bindgen(typescript_type = "LogoutOptions")]
    pub type LogoutOptionsArg;
    /// `trackLocalDatabase`'s optional second argument.
    #[wasm_bindgen(typescript_type = "TrackOptions")]
    pub type TrackOptionsArg;
    /// `auditLog`'s optional query.
    #[wasm_bindgen(typescript_type = "AuditQuery")]
    pub type AuditQueryArg;
}
