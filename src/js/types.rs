//! TypeScript shapes, declared once; the methods refer to them by name.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** Options of `new AuthManager(...)`. */
export interface AuthManagerOptions {
  /** Absolute http(s) URL of the backend, e.g. "http://127.0.0.1:8080". */
  baseUrl: string;
  /** Path of the refresh route. Default "/auth/refresh". */
  refreshPath?: string;
  /** Merged into the device description sent at login and registration. */
  deviceInfo?: Record<string, unknown>;
  /** action → roles, merged over the default map. */
  permissions?: Record<string, string[]>;
  /** Per-request timeout. Default 15000. */
  timeoutMs?: number;
}

export interface Credentials {
  username: string;
  password: string;
}

export interface RegisterCredentials {
  username: string;
  password: string;
  companyId?: string;
  roles?: string[];
  [field: string]: unknown;
}

/** The decoded access JWT: every claim as issued. */
export interface JwtClaims {
  sub?: string;
  userId?: string;
  companyId?: string;
  roles?: string[];
  iat?: number;
  exp?: number;
  [claim: string]: unknown;
}

export interface User {
  id: string;
  username: string;
  companyId: string;
  companies: string[];
  roles: string[];
}

export interface Company {
  id: string;
  [detail: string]: unknown;
}

export type LoginResult =
  | { success: true; user: JwtClaims }
  /** `status` 0: the server could not be reached. */
  | { success: false; error: string; status: number };

export interface CallResult<T = unknown> {
  success: boolean;
  data?: T;
  error?: string;
  status?: number;
}

export type RegisterDeviceResult =
  | { success: true; deviceId: string }
  | { success: false; error: string; status?: number };

export interface DeviceStatus {
  isOnline: boolean;
}

export interface DeviceInfo {
  id?: string;
  sdkVersion: string;
  platform: "web";
  [field: string]: unknown;
}

export type SignOutReason = "logout" | "login" | "company-change" | "refresh-rejected";

export interface SignOutEvent {
  reason: SignOutReason;
}

export interface TokenRefreshEvent {
  user: JwtClaims;
  roles: string[];
  companyChanged: boolean;
}

export type Unsubscribe = () => void;

export interface DestroyResult {
  destroyed: string[];
  failed: string[];
}

export type TokenKind = "Auth" | "Refresh";
export type HeaderKind = "Remote" | "Local";

export type SessionBrokerErrorCode =
  | "FORBIDDEN" | "INVALID_ARGUMENT" | "STORAGE_UNAVAILABLE" | "NOT_SIGNED_IN" | "REALTIME_REFUSED" | "CLOSED";

export interface SyncSessionOptions {
  /** Default: the AuthManager's baseUrl with ws(s):// and /realtime. */
  url?: string;
}

export type SyncState = "idle" | "connecting" | "ready" | "closed";

/** The server's `ready`: where this device's catalogue (static) and day data (dynamic) live. */
export interface ReadyPayload {
  companyId: string;
  database: "core" | "legacy";
  staticDb: string;
  dynamicDb: string;
  invalidatedAt: number | null;
}

export interface InvalidateLocalPayload {
  companyId: string;
  invalidatedAt: number;
  reason: string;
}

export interface BootstrappedEvent {
  database: "core" | "legacy";
  db: string;
  docCount: number;
}

export interface RealtimeError {
  code: string;
  message: string;
}

export interface SyncEventMap {
  ready: ReadyPayload;
  "invalidate-local": InvalidateLocalPayload;
  bootstrapped: BootstrappedEvent;
  error: RealtimeError;
  state: SyncState;
}

export interface SyncSession {
  /** Subscribes to an event; returns the unsubscribe function. */
  on<K extends keyof SyncEventMap>(event: K, handler: (payload: SyncEventMap[K]) => void | Promise<void>): Unsubscribe;
}

/** Every error the SDK throws or rejects with. */
export interface SessionBrokerError extends Error {
  name: "SessionBrokerError";
  code: SessionBrokerErrorCode;
}
"#;
