//! Every route of the server, one row each: the method, the path template (`{name}` standing for
//! one plain path segment, the server's router reads the same template), who may call it and,
//! for the rows the SDK wraps, the body it takes and what it answers.
//! The SDK fills the templates ([`fill`]); the mock server registers its handlers from the rows
//! and authorises every request by its row's [`Access`] in one layer; its route-agreement test
//! walks [`ROUTES`] against its router, so a path written on one side only cannot pass. The
//! package's TypeScript names each wrapper's answer by its row (`Answer<"CLUSTER">`), from the
//! types written here (`make types`).

// The access column is the server's; the SDK's module compiles the rows without it.
#[cfg(not(target_arch = "wasm32"))]
use super::permissions::*;
#[cfg(not(target_arch = "wasm32"))]
use Access::*;
// The types column is the package's TypeScript's alone.
#[cfg(feature = "ts")]
use super::{losses::*, records::*, views::*, OkBody, StatusRecorded};
use Method::*;

/// The HTTP methods of the routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
    /// Every method: the document proxy passes them on to the engine (the server's alone).
    #[cfg(not(target_arch = "wasm32"))]
    Any,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            #[cfg(not(target_arch = "wasm32"))]
            Method::Any => "*",
        }
    }
}

/// Who may call a route. The server checks it before the handler runs; what a caller then sees
/// (its own records, its company's) is the handler's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone: signing in and up, health, a device's nonce.
    Public,
    /// A live access token.
    Token,
    /// A session's access token, expired or not (ending a session must not need a fresh one).
    AnyToken,
    /// A live access token whose roles the permission map lets do this action.
    Action(&'static str),
    /// A live access token or the session's document headers (`X-Docdb-*`); the proxy decides
    /// per database what they open.
    Docdb,
    /// A live access token in the socket's first frame (`sdk:init`): a browser's WebSocket sends
    /// no header of its own.
    FirstFrame,
}

/// One route: its method, its path template and who may call it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The HTTP method.
    pub method: Method,
    /// The path, `{name}` for each id segment; a query is appended by the caller.
    pub path: &'static str,
    /// Who may call it: the server's to check, so not compiled into the SDK's module.
    #[cfg(not(target_arch = "wasm32"))]
    pub access: Access,
}

/// Declares each route once: the constant, its doc comment, and its entry in [`ROUTES`] (as the
/// error codes build their list). A row may end `, Body => Answer`: its types, for the package's
/// TypeScript only (the SDK's module compiles none of it).
macro_rules! calls {
    ($($(#[$meta:meta])+ $name:ident = $method:ident $path:literal, $access:expr
        $(, $body:ty)? $(=> $answer:ty)?;)+) => {
        $($(#[$meta])+ pub const $name: Call = Call {
            method: $method,
            path: $path,
            #[cfg(not(target_arch = "wasm32"))]
            access: $access,
        };)+
        /// Every route of the server, each with its row: what the server registers and
        /// authorises, and the route-agreement test's list.
        #[cfg(not(target_arch = "wasm32"))]
        pub const ROUTES: &[Call] = &[$($name),+];

        /// Each row that names its answer: the row's name and the answer's TypeScript name.
        #[cfg(feature = "ts")]
        pub fn answers() -> Vec<(&'static str, String)> {
            vec![$($((stringify!($name), <$answer as ts_rs::TS>::name()),)?)+]
        }

        /// Each row that names its request body: the row's name and the body's TypeScript name.
        #[cfg(feature = "ts")]
        pub fn bodies() -> Vec<(&'static str, String)> {
            vec![$($((stringify!($name), <$body as ts_rs::TS>::name()),)?)+]
        }
    };
}

calls! {
    /// `POST /auth`: log in with username and password.
    LOGIN = Post "/auth", Public;
    /// `POST /auth/google`: log in with a Google credential.
    LOGIN_GOOGLE = Post "/auth/google", Public;
    /// `POST /auth/refresh`: spend a refresh token (the SDK's `refreshPath` default).
    REFRESH = Post "/auth/refresh", Public;
    /// `POST /auth/register`: sign up.
    REGISTER = Post "/auth/register", Public => SignedUp;
    /// `POST /register-user`: a manager creates a user.
    CREATE_USER = Post "/register-user", Token => UserAnswer;
    /// `POST /auth/logout`.
    LOGOUT = Post "/auth/logout", AnyToken;
    /// `POST /auth/company`: a multi-company user picks the company its next refresh carries
    /// (the mock's; the SDK does not wrap it).
    SWITCH_COMPANY = Post "/auth/company", Token;
    /// `POST /auth/device-nonce`: a nonce for a device's proof of its key.
    DEVICE_NONCE = Post "/auth/device-nonce", Public;
    /// `POST /auth/connect`: register the device.
    CONNECT = Post "/auth/connect", Token;
    /// `PUT /auth/status`: the device's online status.
    STATUS = Put "/auth/status", Token => StatusRecorded;
    /// `GET /bootstrap?database=`: a catalogue snapshot.
    BOOTSTRAP = Get "/bootstrap", Token;
    /// `GET /realtime`: the WebSocket (the upgrade request).
    REALTIME = Get "/realtime", FirstFrame;
    /// `GET /health`.
    HEALTH = Get "/health", Public => HealthStatus;
    /// `GET /devices`.
    DEVICES = Get "/devices", Token => DeviceList;
    /// `POST /devices`.
    ADD_DEVICE = Post "/devices", Token => DeviceAnswer;
    /// `DELETE /devices/{id}`.
    DELETE_DEVICE = Delete "/devices/{id}", Token => OkBody;
    /// `POST /devices/losses`: a device reports local data it destroyed unpushed (the SDK's own).
    DEVICE_LOSSES = Post "/devices/losses", Token, LossReport => LossRecorded;
    /// `GET /admin/rolling-db/tenants/{id}/losses`: the tenant's unresolved loss reports, oldest
    /// first, for the operator to review (the console's; the SDK does not wrap it).
    TENANT_LOSSES = Get "/admin/rolling-db/tenants/{id}/losses", Action(ROLLING_DB_LOSSES) => TenantLosses;
    /// `POST /admin/rolling-db/tenants/{id}/losses/acknowledge`: the operator has dealt with the
    /// reports it names, of a tenant the rollback does not apply to (the console's).
    ACKNOWLEDGE_LOSSES = Post "/admin/rolling-db/tenants/{id}/losses/acknowledge", Action(ROLLING_DB_LOSSES),
        AcknowledgeLosses => LossesAcknowledged;
    /// `GET /companies`.
    COMPANIES = Get "/companies", Token => CompanyList;
    /// `GET /companies/{id}`.
    COMPANY = Get "/companies/{id}", Token => CompanyAnswer;
    /// `PATCH /companies/{id}`.
    UPDATE_COMPANY = Patch "/companies/{id}", Token, CompanyChanges => CompanyAnswer;
    /// `DELETE /companies/{id}`.
    DELETE_COMPANY = Delete "/companies/{id}", Action(COMPANIES_DELETE) => OkBody;
    /// `PATCH /companies/{company_id}/sales/{sale_id}/payment-reference`.
    PAYMENT_REFERENCE = Patch "/companies/{company_id}/sales/{sale_id}/payment-reference", Token,
        PaymentReference => SaleAnswer;
    /// `GET /users`.
    USERS = Get "/users", Token => UserList;
    /// `GET /users/me`.
    ME = Get "/users/me", Token => UserAnswer;
    /// `PATCH /users/{id}`.
    UPDATE_USER = Patch "/users/{id}", Token, UserChanges => UserAnswer;
    /// `DELETE /users/{id}`.
    DELETE_USER = Delete "/users/{id}", Action(USERS_DELETE) => OkBody;
    /// `GET /admin/rolling-db/cluster`.
    CLUSTER = Get "/admin/rolling-db/cluster", Action(ROLLING_DB_READ) => ClusterView;
    /// `GET /admin/rolling-db/tenants`.
    TENANTS = Get "/admin/rolling-db/tenants", Action(ROLLING_DB_READ) => TenantsView;
    /// `GET /admin/rolling-db/tenants/{id}/reconciliation`.
    RECONCILIATION = Get "/admin/rolling-db/tenants/{id}/reconciliation", Action(ROLLING_DB_READ) => Reconciliation;
    /// `GET /admin/rolling-db/tenants/{id}/cleanup-candidates`.
    CLEANUP_CANDIDATES = Get "/admin/rolling-db/tenants/{id}/cleanup-candidates", Action(ROLLING_DB_READ)
        => CleanupCandidates;
    /// `GET /admin/rolling-db/tenants/{id}/topology`.
    TOPOLOGY = Get "/admin/rolling-db/tenants/{id}/topology", Action(ROLLING_DB_READ) => Topology;
    /// `GET /admin/rolling-db/tenants/{id}/preflight`.
    PREFLIGHT = Get "/admin/rolling-db/tenants/{id}/preflight", Action(ROLLING_DB_FLAGS) => Preflight;
    /// `POST /admin/rolling-db/tenants/{id}/rewarm` (the console's; the SDK does not wrap it).
    REWARM = Post "/admin/rolling-db/tenants/{id}/rewarm", Action(ROLLING_DB_REWARM);
    /// `GET /admin/rolling-db/tenants/{id}/core-writes` (the console's, before a rollback; the SDK
    /// does not wrap it).
    CORE_WRITES = Get "/admin/rolling-db/tenants/{id}/core-writes", Action(ROLLING_DB_FLAGS);
    /// `POST /admin/rolling-db/tenants/{id}/days/{db}/release` (the console's; the SDK does not wrap it).
    RELEASE_DAY = Post "/admin/rolling-db/tenants/{id}/days/{db}/release", Action(ROLLING_DB_RELEASE);
    /// `PATCH /admin/rolling-db/flags/{id}` (`?force=true` to override the preflight).
    FLAGS = Patch "/admin/rolling-db/flags/{id}", Action(ROLLING_DB_FLAGS), FlagChanges => FlagsChanged;
    /// `GET /admin/crons`: whoever may start a cron is told which exist (their state needs
    /// `crons:read`, which the default map gives no role without `crons:run`).
    CRONS = Get "/admin/crons", Action(CRONS_RUN) => CronsView;
    /// `POST /admin/crons/{name}/run`.
    RUN_CRON = Post "/admin/crons/{name}/run", Action(CRONS_RUN) => CronRunStarted;
    /// `GET /admin/crons/runs/{run_id}`.
    CRON_RUN = Get "/admin/crons/runs/{run_id}", Action(CRONS_READ) => CronRun;
    /// `POST /admin/invalidate-clients/{id}`.
    INVALIDATE_CLIENTS = Post "/admin/invalidate-clients/{id}", Action(CLIENTS_INVALIDATE) => InvalidationResult;
    /// `GET /admin/audit`.
    AUDIT = Get "/admin/audit", Action(ROLLING_DB_READ) => AuditPage;
    #[cfg(not(target_arch = "wasm32"))]
    /// `/docdb/{db}`: a database, through the document proxy.
    DOCDB = Any "/docdb/{db}", Docdb;
    #[cfg(not(target_arch = "wasm32"))]
    /// `/docdb/{db}/` (the engine's own spelling of a database's root).
    DOCDB_SLASH = Any "/docdb/{db}/", Docdb;
    #[cfg(not(target_arch = "wasm32"))]
    /// `/docdb/{db}/…`: a database's documents, views and feeds, through the document proxy.
    DOCDB_WITHIN = Any "/docdb/{db}/{*rest}", Docdb;
}

/// The template with its `{…}` segments replaced by `ids`, in order (ids already checked to be
/// plain segments by the caller).
pub fn fill(template: &str, ids: &[&str]) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut ids = ids.iter();
    for (i, part) in template.split('{').enumerate() {
        match part.split_once('}') {
            Some((_, rest)) if i > 0 => {
                out.push_str(ids.next().copied().unwrap_or_default());
                out.push_str(rest);
            }
            _ => out.push_str(part),
        }
    }
    out
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_in_order() {
        assert_eq!(fill(PAYMENT_REFERENCE.path, &["acme", "s-1"]), "/companies/acme/sales/s-1/payment-reference");
        assert_eq!(fill(LOGIN.path, &[]), "/auth");
        assert_eq!(fill(RECONCILIATION.path, &["acme"]), "/admin/rolling-db/tenants/acme/reconciliation");
    }
}
