//! The records the management, audit and sign-up routes answer with (devices, companies, users,
//! sales, audit entries), each in the envelope its route wraps it in. The server writes these; the
//! package's TypeScript declares them from here.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Declares envelope structs: a route's answer holding one named field.
macro_rules! envelopes {
    ($($(#[doc = $doc:literal])+ $name:ident { $field:ident: $ty:ty })+) => {$(
        $(#[doc = $doc])+
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[cfg_attr(feature = "ts", derive(ts_rs::TS))]
        pub struct $name {
            #[allow(missing_docs)]
            pub $field: $ty,
        }
    )+};
}

/// A registered device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Device {
    /// The device's id (`dev_…`).
    #[serde(rename = "deviceId")]
    pub id: String,
    /// The user it was registered by.
    pub user_id: String,
    /// The company it was registered in.
    pub company_id: String,
    /// The SDK version it reported; `null` when it reported none.
    pub sdk_version: Option<String>,
    /// Its last reported status.
    pub is_online: bool,
    /// When it was last seen (ms since the epoch).
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub last_seen_at: Option<i64>,
    /// The description it sent (`deviceInfo`).
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
    pub info: Value,
}

/// A company (a tenant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CompanyRecord {
    /// Its id.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// Its store code.
    pub store_code: String,
}

/// A user, as the management routes show it (never its password).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct User {
    /// Its id.
    pub id: String,
    /// Its sign-in name.
    pub username: String,
    /// Its active company: the one its next token carries.
    pub company_id: String,
    /// Every company it belongs to.
    pub companies: Vec<String>,
    /// Its roles.
    pub roles: Vec<String>,
}

/// A sale, with its payment reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Sale {
    /// Its id.
    pub id: String,
    /// Its company.
    pub company_id: String,
    /// Its amount, in cents.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub amount_cents: i64,
    /// The payment reference recorded; `null` before one is.
    pub payment_reference: Option<String>,
}

/// `POST /auth/register` (sign-up) and `POST /register-user` (a manager's or sys_admin's act):
/// the new user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NewUserRequest {
    /// 3 to 64 letters, digits or `. _ @ -`.
    pub username: String,
    /// At least 8 characters.
    pub password: String,
    /// Sign-up: the new company's id (default: from the user name); creating a user: the company
    /// (default: the caller's; another needs sys_admin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub company_id: Option<String>,
    /// Sign-up: the new company's display name (default: its id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub company_name: Option<String>,
    /// Creating a user: its roles (sys_admin only; default `cashier`). Refused at sign-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub roles: Option<Vec<String>>,
}

/// A new company as sign-up created it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NewCompany {
    /// Its id.
    pub id: String,
    /// Its display name.
    pub name: String,
}

/// What sign-up created: the user, manager of its new company.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SignedUp {
    /// The new user.
    pub user: User,
    /// Its new company.
    pub company: NewCompany,
}

/// One entry of the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AuditEntry {
    /// Its id, increasing: a page's last id is the next page's `before`.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub id: i64,
    /// When (ms since the epoch).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub at: i64,
    /// A user id, or `system:<cron>` for scheduled work.
    pub actor: String,
    /// What was done: `flags.change`, `flags.force`, `cron.run`, `clients.invalidate`, `user.create`,
    /// `user.roles`, `user.password`, `user.delete`, `company.sign_up`, `core.rewarm`, `day.release`.
    pub action: String,
    /// The address the act came from, when a person did it.
    pub ip: Option<String>,
    /// The act's particulars (its tenant as `companyId`, and what changed).
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
    pub detail: Map<String, Value>,
}

/// A page of the audit log, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AuditPage {
    /// The entries.
    pub entries: Vec<AuditEntry>,
    /// The next page's `before`; `null` on the last page.
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub next_before: Option<i64>,
}

/// `PATCH /companies/{id}`: the new name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CompanyChanges {
    /// A non-empty name of at most 100 characters.
    pub name: String,
}

/// `PATCH /users/{id}`: what changes, each part optional.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct UserChanges {
    /// The new password: at least 8 characters.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub password: Option<String>,
    /// Required with `password`, except when sys_admin resets another user's.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub current_password: Option<String>,
    /// sys_admin only. A password or role change ends every session of that user.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub roles: Option<Vec<String>>,
}

/// `PATCH /companies/{id}/sales/{saleId}/payment-reference`: the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PaymentReference {
    /// A non-empty reference of at most 64 characters.
    pub reference: String,
}

envelopes! {
    /// `GET /devices`: the caller's devices (a manager's: its company's).
    DeviceList { devices: Vec<Device> }
    /// A device just registered through `POST /devices`.
    DeviceAnswer { device: Device }
    /// `GET /companies`: the companies the caller belongs to (sys_admin: all).
    CompanyList { companies: Vec<CompanyRecord> }
    /// One company.
    CompanyAnswer { company: CompanyRecord }
    /// A sale after its payment reference changed.
    SaleAnswer { sale: Sale }
    /// `GET /users`: the users the caller manages.
    UserList { users: Vec<User> }
    /// One user.
    UserAnswer { user: User }
}
