// What the app tells a person for each failure code. The switch names every code the package
// declares, so a code added in a new version of session-broker fails `tsc` here until the app
// says what it means.
import type { ErrorCode } from "session-broker";

export function explain(code: ErrorCode, message: string): string {
  switch (code) {
    case "invalid_credentials":
      return "Wrong user name or password.";
    case "invalid_credential":
      return "Google did not vouch for that account.";
    case "account_throttled":
    case "rate_limited":
      return "Too many attempts: wait a little and try again.";
    case "network":
    case "timeout":
    case "connection_failed":
      return "The server cannot be reached. Check the connection and try again.";
    case "http_error":
    case "bad_response":
    case "internal":
    case "store_unavailable":
    case "docdb_engine_unavailable":
      return "The server is having trouble. Try again in a moment.";
    case "not_signed_in":
    case "signed_out":
    case "session_expired":
    case "refresh_rejected":
    case "session_ended":
    case "missing_token":
    case "invalid_token":
    case "token_expired":
    case "invalid_refresh_token":
    case "refresh_token_expired":
    case "refresh_token_replayed":
    case "refresh_token_reused":
    case "refresh_token_revoked":
    case "device_proof_required":
      return "Your session has ended: please log in again.";
    case "permission_denied":
    case "forbidden":
      return "Your roles do not allow this.";
    case "sdk_too_old":
      return "This app is out of date: reload the page.";
    case "storage_unavailable":
      return "This browser refuses to store the session (private mode, or storage full).";
    case "not_initialized":
    case "disposed":
    case "closed":
    case "realtime_refused":
    case "invalid_argument":
    case "bad_request":
    case "invalid_body":
    case "malformed_json":
    case "method_not_allowed":
    case "unsupported_media_type":
    case "payload_too_large":
    case "headers_too_large":
    case "illegal_database_name":
      return `The app made a request the SDK or the server refused: ${message}`;
    case "not_found":
    case "unknown_company":
    case "unknown_cron":
    case "unknown_device":
    case "unknown_run":
    case "unknown_sale":
    case "unknown_tenant":
    case "unknown_user":
      return "Not found: it may have been deleted.";
    case "username_taken":
    case "company_exists":
    case "company_not_empty":
    case "cannot_delete_self":
    case "current_password_required":
    case "conflict":
    case "all_dbs_active":
    case "core_missing":
    case "core_edited":
    case "drop_requires_rolling_db":
    case "file_exists":
    case "no_catalogue":
    case "schema_behind":
    case "no_headroom":
    case "conflicts_disabled":
    case "backups_disabled":
    case "reconciliation_not_green":
    case "docdb_engine_required":
    case "rewarm_needs_invalidation":
    case "too_many_feeds":
    // A code of a newer server than this SDK knows (the failure's `serverCode` has it as sent).
    case "unknown_code":
      return `The server refused: ${message}`;
    default:
      // Unreachable while every code is named above: `tsc` names the one a new version adds.
      return unnamed(code, message);
  }
}

/** Compiles only for a `never` code. At run time (a code in a newer server's error body, which
 *  `auth.fetch` hands over as sent) the server's own words. */
const unnamed = (_code: never, message: string) => message;
