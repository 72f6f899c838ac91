//! Device routes: registration (`/auth/connect`), online status and loss reports.

use axum::extract::State;
use axum::{Json, Router};
use protocol::routes;
use protocol::{ConnectResponse, StatusRecorded, StatusRequest};
use serde_json::{Map, Value};

use crate::auth::device_keys;
use crate::auth::proofs;
use crate::auth::secrets::random_id;
use crate::error::{AppError, AppResult};
use crate::extract::{ApiJson, AuthUser};
use crate::rolling::losses::Reported;
use crate::routes::table::Rows;
use crate::state::AppState;
use crate::store::audit::Actor;
use crate::store::devices::{self, Device};
use protocol::errors as code;
use protocol::losses::{LossRecorded, LossReport};

pub fn router() -> Router<AppState> {
    Router::new().row(routes::CONNECT, connect).row(routes::STATUS, status).row(routes::DEVICE_LOSSES, losses)
}

/// The SDK version a device reports in its info, when it reports one.
pub fn sdk_version(info: &Map<String, Value>) -> AppResult<Option<String>> {
    match info.get("sdkVersion") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(v)) => Ok(Some(v.clone())),
        Some(_) => Err(AppError::bad_request("deviceInfo.sdkVersion must be a string")),
    }
}

/// Registers the device (or refreshes it when the id it sends is already this user's and, once
/// the device has a key, the key it sends is that one). `publicKey` (the hex of an uncompressed
/// P-256 point) is kept beside the device, not in its info: its sessions are bound to it and its
/// proofs spare it the sign-in throttle (`auth::device_keys`). A device keeps its first key: one
/// that comes with another key, or none, is registered as a new device.
async fn connect(
    State(state): State<AppState>,
    AuthUser(claims): AuthUser,
    ApiJson(mut info): ApiJson<Map<String, Value>>,
) -> AppResult<Json<ConnectResponse>> {
    let sdk_version = sdk_version(&info)?;
    let public_key = match info.remove("publicKey") {
        None | Some(Value::Null) => None,
        Some(Value::String(key)) if device_keys::parse_public_key(&key).is_some() => Some(key),
        Some(_) => return Err(AppError::bad_request("publicKey must be the hex of an uncompressed P-256 point")),
    };
    let now = state.clock.now_ms();
    let device_id = state.store.tx(|tx| {
        // A session bound to its device's key never takes another key: with one, an access token
        // (a stolen one, say) could make the session's refresh answer to a key of its own.
        if let (Some(sid), Some(key)) = (&claims.sid, &public_key) {
            let bound = devices::keys_of_session(tx, sid)?;
            if !bound.is_empty() && !bound.contains(key) {
                return Err(AppError::Forbidden(
                    "this session is bound to its device's key: a device with another key cannot join it; log in on that device".into(),
                ));
            }
        }
        let claimed = info.get("id").and_then(Value::as_str).map(str::to_owned);
        let id = match claimed {
            // Never take over another user's device id.
            Some(id)
                if devices::by_id(tx, &id)?.is_some_and(|d| d.user_id == claims.user_id)
                    && devices::key_of(tx, &id)?.is_none_or(|key| Some(&key) == public_key.as_ref()) =>
            {
                id
            }
            _ => random_id("dev"),
        };
        let device = Device {
            id: id.clone(),
            user_id: claims.user_id.clone(),
            company_id: claims.company_id.clone(),
            sdk_version,
            is_online: true,
            last_seen_at: Some(now),
            info: Value::Object(info.clone()),
        };
        devices::upsert(tx, &device, now)?;
        if let Some(key) = &public_key {
            devices::set_key(tx, &id, key)?;
        }
        // The session runs on this device from now on: deleting the device ends it.
        if let Some(sid) = &claims.sid {
            devices::link_session(tx, &id, sid, now)?;
        }
        Ok(id)
    })?;
    Ok(Json(ConnectResponse { device_id }))
}

/// Records the status on the named device, or on the one this user was last seen on in this
/// company; with no device registered yet there is nothing to record (`deviceId: null`).
async fn status(
    State(state): State<AppState>,
    AuthUser(claims): AuthUser,
    ApiJson(body): ApiJson<StatusRequest>,
) -> AppResult<Json<StatusRecorded>> {
    let now = state.clock.now_ms();
    let device_id = state.store.tx(|tx| {
        let id = match body.device_id {
            Some(id) => match devices::by_id(tx, &id)? {
                Some(d) if d.user_id == claims.user_id => Some(id),
                _ => return Err(AppError::NotFound(code::UNKNOWN_DEVICE, format!("no device {id:?} of this user"))),
            },
            None => devices::latest_for(tx, &claims.user_id, &claims.company_id)?,
        };
        if let Some(id) = &id {
            devices::set_online(tx, id, body.is_online, now)?;
        }
        Ok(id)
    })?;
    Ok(Json(StatusRecorded { ok: true, device_id, is_online: body.is_online }))
}

/// `POST /devices/losses`: a device reports local data it destroyed unpushed
/// (`rolling::losses`), with a session of the tenant it was lost in, on a device of that session's
/// user, proven by the device's key when the server holds one. Counted once per report id; a
/// refusal stores nothing. A shared transaction (`Store::shared_transaction`) holding the device's
/// key: a report never waits for, nor holds up, the logins, refreshes and handshakes of others.
async fn losses(
    State(state): State<AppState>,
    AuthUser(claims): AuthUser,
    ip: crate::extract::ClientIp,
    ApiJson(report): ApiJson<LossReport>,
) -> AppResult<Json<LossRecorded>> {
    if !LossReport::valid_id(&report.id) {
        return Err(AppError::bad_request("id: the report's id, 8 to 64 of A-Z a-z 0-9 _ -"));
    }
    let documents = report.documents().map_err(AppError::bad_request)?;
    if report.company_id != claims.company_id {
        return Err(AppError::Forbidden(
            "a loss is reported with a session of the tenant it was lost in: this session is another tenant's".into(),
        ));
    }
    let now = state.clock.now_ms();
    let actor = Actor::user(&claims, ip.0);
    let nonce_key = &state.tokens.docdb_key;
    // Refusals past the proof's check are answered after the commit: a proof shown is spent.
    let outcome = state.store.shared_tx(|tx| {
        crate::store::sql::lock_key(tx, &format!("device:{}", report.device_id))?;
        let ours = devices::by_id(tx, &report.device_id)?
            .is_some_and(|d| d.user_id == claims.user_id && d.company_id == claims.company_id);
        if !ours {
            return Err(AppError::Forbidden("the device is not this session's user's in this tenant".into()));
        }
        let proof = report.device_proof.as_ref();
        if let Some(key) = devices::key_of(tx, &report.device_id)? {
            if !proofs::proven(tx, nonce_key, &[key], proof, routes::DEVICE_LOSSES, now)? {
                proofs::spend_unused(tx, nonce_key, proof, now)?;
                return Ok(None);
            }
        } else {
            proofs::spend_unused(tx, nonce_key, proof, now)?;
        }
        Ok(Some(crate::rolling::losses::report(tx, &report, documents, &actor, now)?))
    })?;
    let recorded = match outcome {
        None => {
            return Err(AppError::Unauthorized(
                code::DEVICE_PROOF_REQUIRED,
                "this device has a key: its loss reports carry its proof (deviceProof, signed for POST /devices/losses)"
                    .into(),
            ))
        }
        Some(Reported::Recorded) => true,
        Some(Reported::Again) => false,
        Some(Reported::TooFast { retry_after_secs }) => {
            return Err(AppError::TooMany {
                code: code::RATE_LIMITED,
                message: format!(
                    "this device made {} loss reports in the last {} minutes: send this one again in {retry_after_secs} s",
                    crate::rolling::losses::REPORTS_PER_WINDOW,
                    crate::rolling::losses::REPORT_WINDOW_MS / 60_000
                ),
                retry_after_secs: Some(retry_after_secs),
            })
        }
        Some(Reported::PastTheDay { counted }) => {
            return Err(AppError::bad_request(format!(
                "this device's reports of the last 24 hours count {counted} documents: with this one's {documents} they would pass the {} a device reports in a day",
                protocol::losses::MAX_LOST_PER_DEVICE_DAY
            )))
        }
    };
    if recorded {
        tracing::warn!(tenant = %report.company_id, device = %report.device_id, documents, reason = report.reason.as_str(), "a device lost documents it could not push");
    }
    Ok(Json(LossRecorded { recorded }))
}
