//! A sign-in: by password, the account's lock (`throttle`), the device's key, what a failure and a
//! success leave behind (the password check itself runs off the async workers, between [`gate`]
//! and [`failed`] or [`succeeded`]); by an identity provider's credential, the same device rule
//! (a session on a keyed device runs on it only when proven, and then ends with it).

use std::net::IpAddr;

use protocol::ops::audit as actions;
use protocol::routes::Call;
use protocol::{routes, DeviceProof, GoogleLoginRequest, LoginRequest};
use serde_json::{json, Value};

use crate::auth::errors::{AuthError, AuthResult};
use crate::auth::{proofs, throttle};
use crate::settings::Settings;
use crate::store::audit::{self, Actor};
use crate::store::sql::Connection;
use crate::store::users::User;
use crate::store::{devices, login_failures, users};

/// What is known of a sign-in before its password is checked.
pub struct Gate {
    /// The account named, if any.
    pub user: Option<User>,
    /// Whether failures of the account are on record (a success clears them).
    pub failed_before: bool,
    /// Until when the account is locked, unless the device is exempt.
    pub locked_until: Option<i64>,
    /// The session runs on the device named (registered by the user, and proven when keyed).
    pub on_device: bool,
    /// The device proved it holds its key.
    pub proved: bool,
}

impl Gate {
    /// Refused while the account is locked.
    pub fn open(&self, now_ms: i64) -> AuthResult<()> {
        match self.locked_until.filter(|until| *until > now_ms) {
            Some(until) => Err(AuthError::AccountThrottled { wait_ms: until - now_ms }),
            None => Ok(()),
        }
    }
}

/// Both are needed before anything is read.
pub fn credentials_given(req: &LoginRequest) -> AuthResult<()> {
    if req.username.is_empty() || req.password.is_empty() {
        return Err(AuthError::MissingCredentials);
    }
    Ok(())
}

/// What the device rule reads of a sign-in: the account, the device its `deviceInfo.id` names,
/// its proof and the route the proof was signed for.
pub struct SignIn<'a> {
    pub username: &'a str,
    pub device: Option<&'a str>,
    pub proof: Option<&'a DeviceProof>,
    pub route: Call,
}

impl<'a> SignIn<'a> {
    pub fn password(req: &'a LoginRequest) -> SignIn<'a> {
        let device = req.device_info.get("id").and_then(Value::as_str);
        SignIn { username: &req.username, device, proof: req.device_proof.as_ref(), route: routes::LOGIN }
    }

    /// `username`: whom the identity provider vouched for.
    pub fn google(req: &'a GoogleLoginRequest, username: &'a str) -> SignIn<'a> {
        let device = req.device_info.get("id").and_then(Value::as_str);
        SignIn { username, device, proof: req.device_proof.as_ref(), route: routes::LOGIN_GOOGLE }
    }
}

/// Reads the account, its failures and the device. A device of the user that proves it holds
/// its key, and has signed in with it before, is never locked out of its own account; its id
/// alone (which listings show) earns nothing, nor a key added with an access token alone.
pub fn gate(tx: &Connection, nonce_key: &[u8], req: &SignIn<'_>, now_ms: i64) -> AuthResult<Gate> {
    let (username, device, proof) = (req.username, req.device, req.proof);
    let user = users::by_username(tx, username)?;
    let (mut known, mut proved, mut exempt) = (false, false, false);
    if let (Some(u), Some(id)) = (&user, device) {
        known = devices::by_id(tx, id)?.is_some_and(|d| d.user_id == u.id);
        if let Some(key) = devices::key_of(tx, id)?.filter(|_| known) {
            proved = proofs::proven(tx, nonce_key, &[key], proof, req.route, now_ms)?;
            exempt = proved && devices::signed_in_with_key(tx, id)?;
            // The session runs on a keyed device (its refresh bound to the key) only when proven.
            known = proved;
        }
    }
    if !proved {
        proofs::spend_unused(tx, nonce_key, proof, now_ms)?;
    }
    let failures = login_failures::get(tx, username)?;
    Ok(Gate {
        user,
        failed_before: failures.is_some(),
        locked_until: failures.map(|(_, until)| until).filter(|_| !exempt),
        on_device: known,
        proved,
    })
}

/// Counts a failed sign-in of `username`; past the free failures it locks the account for a
/// while (`throttle`), which the audit log records.
pub fn failed(tx: &Connection, settings: &Settings, username: &str, ip: Option<IpAddr>, now_ms: i64) -> AuthResult<()> {
    let failures = login_failures::failed(tx, username, now_ms)?;
    let secs = throttle::lock_secs(failures, settings.auth_account_free_failures, settings.auth_account_lock_max_secs);
    if secs > 0 {
        let until = now_ms.saturating_add(i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX));
        login_failures::lock(tx, username, until)?;
        let company_id = users::by_username(tx, username)?.map(|u| u.record.company_id);
        let detail =
            json!({"username": username, "companyId": company_id, "failures": failures, "lockedForSecs": secs});
        audit::record(tx, &Actor { id: "anonymous".into(), ip }, actions::ACCOUNT_THROTTLED, detail, now_ms)?;
        tracing::warn!(failures, secs, "sign-ins of one account throttled");
    }
    Ok(())
}

/// A right password: the account's failures are forgotten, and a device that proved its key has
/// now signed in with it (which spares it the account's lock from then on).
pub fn succeeded(conn: &Connection, gate: &Gate, user: &User, device: Option<&str>, now_ms: i64) -> AuthResult<()> {
    if gate.failed_before {
        login_failures::clear(conn, &user.username)?;
    }
    if let Some(id) = device.filter(|_| gate.proved) {
        devices::mark_signed_in_with_key(conn, id, now_ms)?;
    }
    Ok(())
}
