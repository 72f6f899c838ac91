// The types catch typos: a misspelt error code or action does not compile, `ErrorCode` is closed
// (a switch over it is exhaustive), and the app's own claims and actions are typed. Each
// `@ts-expect-error` line fails the compile if the error it expects goes away.
import init, {
  AuthManager,
  isSessionBrokerError,
  type AuthChangeEvent,
  type AuthSession,
  type ErrorCode,
  type Failure,
  type LoginResult,
  type Permission,
  type SessionResult,
  type SessionUser,
  type SignOutEvent,
} from "session-broker";

await init();
const auth = new AuthManager({ baseUrl: "https://api.example.com" });

const r = await auth.login({ username: "alice", password: "alice-pass" });
if (!r.success) {
  if (r.code === "invalid_credentials") console.info("wrong password");
  // @ts-expect-error a misspelt code is no ErrorCode
  if (r.code === "invalid_credentails") console.info("never");
  if (r.code === "unknown_code") console.info(r.serverCode?.toUpperCase());
}

/** Every code handled: adding a code to the lists breaks this switch's `never`. */
function describe(code: ErrorCode): string {
  switch (code) {
    case "network": case "timeout": case "http_error": case "bad_response": case "unknown_code":
    case "not_signed_in": case "session_expired": case "refresh_rejected": case "storage_unavailable": case "invalid_argument":
    case "permission_denied": case "realtime_refused": case "closed": case "connection_failed":
    case "not_initialized": case "signed_out": case "disposed":
      return "sdk";
    case "all_dbs_active": case "bad_request": case "cannot_delete_self": case "company_exists":
    case "company_not_empty": case "conflict": case "core_missing": case "current_password_required":
    case "device_proof_required": case "drop_requires_rolling_db": case "file_exists": case "forbidden":
    case "illegal_database_name": case "internal": case "invalid_body": case "invalid_credential":
    case "invalid_credentials": case "invalid_refresh_token": case "invalid_token": case "malformed_json":
    case "method_not_allowed": case "missing_token": case "no_catalogue": case "not_found":
    case "payload_too_large": case "rate_limited": case "refresh_token_expired":
    case "refresh_token_replayed": case "refresh_token_reused": case "refresh_token_revoked":
    case "sdk_too_old": case "schema_behind": case "no_headroom": case "conflicts_disabled":
    case "backups_disabled": case "reconciliation_not_green": case "session_ended": case "token_expired":
    case "unknown_company": case "unknown_cron": case "unknown_device": case "unknown_run":
    case "unknown_sale": case "unknown_tenant": case "unknown_user": case "unsupported_media_type":
    case "username_taken": case "docdb_engine_required": case "docdb_engine_unavailable":
    case "rewarm_needs_invalidation": case "store_unavailable": case "account_throttled":
    case "too_many_feeds": case "headers_too_large": case "core_edited":
      return "server";
    default: {
      const unhandled: never = code;
      return unhandled;
    }
  }
}
void describe;

// Actions: the SDK's (`Permission`) and, inferred from the `permissions` option, the app's own.
await auth.hasPermission("crons:run");
auth.requirePermission("users:delete");
// @ts-expect-error a misspelt action does not compile
auth.requirePermission("crons:rnu");
// @ts-expect-error nor is an action of nobody's map
await auth.hasPermission("orders:void");
const shop = new AuthManager({ baseUrl: "https://api.example.com", permissions: { "orders:void": ["manager"] } });
await shop.hasPermission("orders:void");
shop.requirePermission("catalog:write");
// @ts-expect-error still checked against both lists
shop.requirePermission("orders:viod");
const action: Permission = "rollingDb:read";
void action;

// The app's own claims on every user the manager hands out.
interface TillClaims { tillId: string }
const till = new AuthManager<TillClaims, "orders:void">({
  baseUrl: "https://api.example.com",
  permissions: { "orders:void": ["manager"] },
});
const user = till.getCurrentUser();
if (user) {
  const id: string = user.tillId + user.userId + user.companyId + user.roles.join();
  void id;
  // @ts-expect-error a claim the app did not declare
  user.tilId;
}
till.registerOnLogin((u) => u.tillId);
till.registerOnTokenRefresh(({ user }) => user.tillId);
const login: LoginResult<TillClaims> = await till.login({ username: "a", password: "b" });
if (login.success) console.info(login.user.tillId);
await till.hasPermission("orders:void");
// @ts-expect-error the manager without claims has no tillId
auth.getCurrentUser()?.tillId;

// The auth-state stream and the session.
till.onAuthStateChange((event: AuthChangeEvent, session: AuthSession<TillClaims> | null, detail) => {
  if (event === "SIGNED_OUT") console.info(session === null, detail.reason, detail.otherTab);
  // @ts-expect-error events are upper case
  if (event === "signed_in") return;
  if (session) console.info(session.user.tillId, session.expiresAt - Date.now(), session.accessToken.length);
});
const got: SessionResult<TillClaims> = await till.getSession();
if (got.session) console.info(got.session.user.tillId);
else console.info(got.error.code === "refresh_rejected", got.error.message);
const plain: SessionUser | null = auth.getCurrentUser();
void plain;

// Failures and sign-outs carry what changed.
auth.registerOnSignOut((e: SignOutEvent) => console.info(e.hadSession, e.reason));
const f: Failure = { success: false, error: "x", code: "unknown_code", status: 409, serverCode: "quota_exceeded" };
// @ts-expect-error ErrorCode is closed: an unknown string is not one
const g: Failure = { success: false, error: "x", code: "quota_exceeded", status: 409 };
void f;
void g;
try {
  auth.requirePermission("crons:run");
} catch (e) {
  if (isSessionBrokerError(e) && (e.code === "not_signed_in" || e.code === "session_expired")) console.info(e.message);
}
