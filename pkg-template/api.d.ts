// The package's API declarations written by hand: the shapes the methods take and answer, the
// error class, and what the entry module (session_broker.js) adds to the generated classes. The
// classes' own methods are declared from the Rust doc comments by wasm-bindgen (bindings.d.ts);
// the types the Rust types generate are in protocol.d.ts (`make types`). session_broker.d.ts,
// the package's declarations, re-exports all three.
import type { InvalidateLocal, NewUserRequest, Permission, Ready, SdkErrorCode, ServerErrorCode } from "./protocol.js";
import { AuthManager as GeneratedAuthManager } from "./bindings.js";

/** Options of `new AuthManager(...)`; `Actions`: the app's own actions, the keys of `permissions`. */
export interface AuthManagerOptions<Actions extends string = string> {
  /** Absolute http(s) URL of the backend, e.g. "http://127.0.0.1:8080" (or a `URL`). */
  baseUrl: string | URL;
  /** Path of the refresh route. Default "/auth/refresh". */
  refreshPath?: string;
  /** Merged into the device description sent at login and registration. */
  deviceInfo?: Record<string, unknown>;
  /** action → roles, merged over the default map; its keys join the actions `hasPermission` takes. */
  permissions?: Record<Actions, string[]>;
  /** Per-request timeout. Default 15000. */
  timeoutMs?: number;
  /** Per hook handler: one still running after this is reported and the sequence goes on. Default 10000. */
  hookTimeoutMs?: number;
  /** Refresh shortly before expiry (one tab for all), re-checked on visibilitychange and online. Default true. */
  autoRefresh?: boolean;
}

export interface Credentials {
  username: string;
  password: string;
}

/** `registerUser`'s and `createUser`'s argument: the new user (sent as it is given). */
export interface RegisterCredentials extends NewUserRequest {
  [field: string]: unknown;
}

/** The decoded access JWT: every claim as issued (`SessionUser` types the ones the SDK relies on). */
export interface JwtClaims {
  sub?: string;
  userId?: string;
  companyId?: string;
  roles?: string[];
  iat?: number;
  exp?: number;
  [claim: string]: unknown;
}

/** The signed-in user, from the access token's claims: `AuthManager<Claims>` adds the app's own. */
export interface SessionUser {
  userId: string;
  companyId: string;
  roles: string[];
  sub?: string;
  iat?: number;
  exp?: number;
}

export interface Company {
  id: string;
  [detail: string]: unknown;
}

/** Why a call failed, for people (`error`) and for programs (`code`); `status` 0: no HTTP answer. */
export interface Failure {
  success: false;
  error: string;
  code: ErrorCode;
  status: number;
  /** The server's code as sent, when this SDK does not know it (`code` is then `"unknown_code"`). */
  serverCode?: string;
  /** Absent: `const { data } = r` gives `T | undefined` until `r.success` is checked. */
  data?: undefined;
}

export type LoginResult<C = {}> = { success: true; user: SessionUser & C } | Failure;

/** Narrow on `success`: `if (r.success) r.data` is `T`; otherwise `r.code` says why. */
export type CallResult<T = unknown> = { success: true; data: T; status: number } | Failure;

export type RegisterDeviceResult = { success: true; deviceId: string | null } | Failure;

export interface DeviceStatus {
  isOnline: boolean;
}

export interface DeviceInfo {
  id?: string;
  sdkVersion: string;
  platform: "web";
  [field: string]: unknown;
}

export type SignOutReason = "logout" | "login" | "company-change" | "refresh-rejected" | "device-unproven";

export interface SignOutEvent {
  reason: SignOutReason;
  /** False when nobody was signed in (a first login's cleanup on a fresh browser). */
  hadSession: boolean;
  /** Present and true when another tab of this origin ended the session (its sign-out, a login or a company change there). */
  otherTab?: true;
  /**
   * In a login's or a company change's cleanup (this tab): whose headers `docdbFetch` serves the
   * handler for a final push of the previous session's work. `"new"`: the new session's (a login
   * into the same tenant); `"previous"`: the previous session's own (another tenant's login, which
   * never lends its headers, or a company change). During `logout()` they are the session's own.
   */
  headers?: "new" | "previous";
  /** The SDK's own final push (databases tracked with `pushTo`), when it tried one or left work. */
  pushed?: Record<string, number>;
  /** Documents it could not push (see `PushCounts`). */
  unpushed?: Record<string, number>;
}

export interface TokenRefreshEvent<C = {}> {
  user: SessionUser & C;
  roles: string[];
  companyChanged: boolean;
}

export type Unsubscribe = () => void;

/** What `onAuthStateChange` tells, in every tab, once storage holds it. */
export type AuthChangeEvent = "INITIAL_SESSION" | "SIGNED_IN" | "TOKEN_REFRESHED" | "USER_UPDATED" | "SIGNED_OUT";

/** Why: `"stored"` (INITIAL_SESSION), `"login"`, `"refresh"`, `"roles-changed"` and
 *  `"company-change"` (USER_UPDATED), or the sign-out's reason. */
export type AuthChangeReason = "stored" | "refresh" | "roles-changed" | SignOutReason;

export interface AuthChangeDetail {
  reason: AuthChangeReason;
  /** Present when another tab of this origin made the change. */
  otherTab?: true;
}

/** A stored session (its access token is valid when `getSession()` answers it; `INITIAL_SESSION`
 *  tells the stored one as it is). */
export interface AuthSession<C extends object = {}> {
  accessToken: string;
  /** When the access token expires (ms since the epoch): the stored expiry. */
  expiresAt: number;
  user: SessionUser & C;
}

/** `onAuthStateChange`'s listener. */
export type AuthStateListener<C extends object = {}> =
  (event: AuthChangeEvent, session: AuthSession<C> | null, detail: AuthChangeDetail) => unknown;

/** Why `getSession()` has no session. `"network"`: the session is kept for a later try. */
export type SessionErrorCode =
  "not_signed_in" | "network" | "refresh_rejected" | "session_ended" | "device_proof_required";

export type SessionResult<C extends object = {}> =
  | { session: AuthSession<C>; error: null }
  | { session: null; error: { code: SessionErrorCode; message: string } };

/** Documents per database: what the SDK's final push sent, and what it could not. */
export interface PushCounts {
  /** Documents the server took, for every database a push was tried for. */
  pushed: Record<string, number>;
  /**
   * Documents written on the device and not known to be on the server (counted since this page's
   * last complete push). After `logout()` they stay on the device; after a destruction they are
   * gone, and logged.
   */
  unpushed: Record<string, number>;
}

export interface DestroyResult extends Partial<PushCounts> {
  destroyed: string[];
  failed: string[];
}

/** `trackLocalDatabase`'s options. */
export interface TrackOptions {
  /**
   * The database holds the device's writes: the SDK pushes it before it destroys it (a login's
   * cleanup, a company change, an invalidation, `destroyAllLocalDatabases()`) and at `logout()`,
   * with the headers `docdbFetch` serves then, each push bounded by `hookTimeoutMs`. `"dynamic"`:
   * the tenant's routed day database (the last realtime `ready`'s `dynamicDb`); or a database by
   * name. Only for a PouchDB instance.
   */
  pushTo?: "dynamic" | { database: string };
}

/** What `trackLocalDatabase` needs of a PouchDB instance (PouchDB's own type fits it). */
export interface LocalPouchDB {
  readonly name: string;
  readonly adapter?: string;
  destroy(): Promise<unknown>;
}

/** `logout()`'s argument: which sessions end. `"local"` (the default): this one (every tab of
 *  this browser); `"others"`: every other session of the user, this one goes on; `"global"`: all
 *  of them, this one too. */
export interface LogoutOptions {
  scope?: "local" | "others" | "global";
}

/** A `fetch` that sends the session's current `X-Docdb-*` headers (`AuthManager.docdbFetch`). */
export type DocdbFetch = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

export type TokenKind = "Auth" | "Refresh";
export type HeaderKind = "Remote" | "Local";

export interface SetFlagsOptions {
  /** Switch on though the flag's preflight fails (sys_admin only; audited with the checks it overrode). */
  force?: boolean;
}

export interface AuditQuery {
  companyId?: string;
  /** The previous page's `nextBefore`. */
  before?: number;
  /** 1–500, default 50. */
  limit?: number;
}

/**
 * A failure's `code`: one of the two lists (protocol.d.ts), a closed union (a `switch` over it can
 * be exhaustive). A code a newer server sends that this SDK does not know is `"unknown_code"`,
 * with the code as sent in `serverCode`.
 */
export type ErrorCode = SdkErrorCode | ServerErrorCode;

export interface SyncSessionOptions {
  /** Default: the AuthManager's baseUrl with ws(s):// and /realtime. */
  url?: string;
}

export type SyncState = "idle" | "connecting" | "ready" | "closed";

/** The server's `ready`: where this device's catalogue (static) and day data (dynamic) live. */
export type ReadyPayload = Ready;

/** With the SDK's final push (databases tracked with `pushTo`), run before the handlers. */
export interface InvalidateLocalPayload extends InvalidateLocal, Partial<PushCounts> {}

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

/**
 * The session broker (its methods: bindings.d.ts and the block below). `Claims`: the app's own
 * claims of the access token, typed on every user the manager hands out
 * (`new AuthManager<{ tillId: string }>(…)`). `Actions`: the app's own actions, inferred from the
 * constructor's `permissions` option; with `Claims` given, give them too
 * (`new AuthManager<{ tillId: string }, "orders:void">(…)`). `hasPermission` and
 * `requirePermission` take those and the SDK's (`Permission`), so a misspelt action does not
 * compile.
 */
export declare class AuthManager<Claims extends object = {}, Actions extends string = never> extends GeneratedAuthManager {
  constructor(options: AuthManagerOptions<Actions>);
  login(credentials: Credentials): Promise<LoginResult<Claims>>;
  loginWithGoogle(credential: string): Promise<LoginResult<Claims>>;
  getCurrentUser(): (SessionUser & Claims) | null;
  hasPermission(action: Permission | Actions): Promise<boolean>;
  requirePermission(action: Permission | Actions): void;
  registerOnLogin(handler: (user: SessionUser & Claims) => unknown): Unsubscribe;
  registerOnTokenRefresh(handler: (event: TokenRefreshEvent<Claims>) => unknown): Unsubscribe;
  /**
   * Calls `listener(event, session, detail)` at every change of the session, in every tab, once
   * storage holds it: `"INITIAL_SESSION"` first (in a microtask, with the stored session), then
   * `"SIGNED_IN"`, `"TOKEN_REFRESHED"`, `"USER_UPDATED"` (other roles or another company) and
   * `"SIGNED_OUT"` (after the session was cleared; never when nobody was signed in). `session`:
   * `{accessToken, expiresAt, user}` or `null`; `detail`: `{reason, otherTab?}`. Returns the
   * unsubscribe function.
   */
  onAuthStateChange(listener: AuthStateListener<Claims>): Unsubscribe;
  /**
   * The session with a valid access token (refreshed first when it expires within a minute), or
   * why there is none: `{session, error: null}` or `{session: null, error: {code, message}}`, `code`
   * `"not_signed_in"`, `"network"` (the server could not be reached: the session is kept),
   * `"session_ended"` (the server ended the session: signed out), `"refresh_rejected"` (the
   * server refused the refresh token: signed out) or `"device_proof_required"` (this browser cannot
   * prove the session's device: its copy was cleared, the session goes on elsewhere). Never rejects.
   */
  getSession(): Promise<SessionResult<Claims>>;
}

/** Every error the SDK throws or rejects with: `instanceof SessionBrokerError` works. */
export declare class SessionBrokerError extends Error {
  readonly name: "SessionBrokerError";
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, cause?: unknown);
}

/** Whether `value` is a SessionBrokerError. */
export declare function isSessionBrokerError(value: unknown): value is SessionBrokerError;

// Beside the generated classes' declarations: the read cache's methods, which the entry module
// adds to AuthManager, and SyncSession's `on` with each event's payload typed (its Rust export
// leaves the generated declaration out).
declare module "./bindings.js" {
  interface AuthManager {
    /** True without a token, or inside the one-minute margin before its expiry. */
    isTokenExpired(): boolean;
    /** True inside the one-minute margin, before the expiry itself. */
    isAboutToExpire(): boolean;
    /**
     * The app's own call to its backend, with `Authorization: Bearer <getToken()>` (refreshed first
     * when needed). A relative URL resolves against `baseUrl` ending in one `/` (`"users/me"` under
     * its path, `"/users/me"` from its origin's root); another origin, or an `Authorization` header
     * of the caller's, rejects with `invalid_argument`, nothing sent. A 401 refreshes once and,
     * refreshed, sends the request again (a rejected refresh signs out; the 401 is answered). When
     * `getToken()` answers `null` it sends nothing and answers a local 401 (`{error: "not_signed_in"}`).
     * What `new Request()` refuses (a URL carrying credentials, a malformed one) and a missing
     * `input` reject with `invalid_argument`, nothing sent.
     */
    fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
    /** Whether `getToken()` answers a token (refreshed first when needed); `checkIfLoggedIn()` only reads storage. */
    isAuthenticated(): Promise<boolean>;
    /** Whether `localStorage` holds an access token. */
    checkIfLoggedIn(): boolean;
    /** The access token, refreshed first when it expires within a minute (one refresh for every tab); `null` without a session (`getSession()` says why). Answers at once inside a sign-out handler. */
    getToken(): Promise<string | null>;
    /** The access token's claims, or `null`. */
    getCurrentUser(): SessionUser | null;
    /** The token's roles; `[]` without a token. */
    getCurrentRoles(): string[];
    /**
     * A `fetch` for a replication client (PouchDB's `fetch` option): each request carries the
     * `X-Docdb-*` headers of `kind` stored at that moment (a refresh, another tab's login or a
     * sign-out counts from the next request), and no cookies. With no session it answers a 401
     * `Response` itself and sends nothing. Throws `invalid_argument` for another `kind`.
     */
    docdbFetch(kind: HeaderKind): DocdbFetch;
  }

  interface SyncSession {
    /** Subscribes to an event; returns the unsubscribe function. */
    on<K extends keyof SyncEventMap>(event: K, handler: (payload: SyncEventMap[K]) => unknown): Unsubscribe;
  }
}
