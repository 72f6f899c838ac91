//! The device: its description (`deviceInfo`, always carrying this SDK's identity), its
//! registration (`/auth/connect`) and its online status.

use crate::protocol::routes::{CONNECT, STATUS};
use serde_json::{Map, Value};

use super::Session;
use crate::core::json;
use crate::core::keys;
use crate::core::results::{CallResult, DeviceResult};
use crate::protocol::{ConnectResponse, StatusRequest, SDK_VERSION};

impl Session {
    /// `sdkVersion` and `platform` always describe this SDK, whatever the caller merged in.
    pub(super) fn force_device_identity(&self) {
        let mut memory = self.0.memory.borrow_mut();
        memory.device_info.insert("sdkVersion".into(), Value::String(SDK_VERSION.into()));
        memory.device_info.insert("platform".into(), Value::String("web".into()));
    }

    /// The device info sent with every login and registration. Its id is the stored one: another
    /// tab may have registered the device since this one started, and the device is the origin's.
    pub fn device_info(&self) -> Map<String, Value> {
        let mut info = self.0.memory.borrow().device_info.clone();
        if let Some(id) = keys::read_opaque(self.storage(), keys::DEVICE_ID) {
            info.insert("id".into(), Value::String(id));
        }
        info
    }

    /// Merges `partial` into the device info (`updateDeviceInfo`).
    pub fn update_device_info(&self, partial: Map<String, Value>) {
        self.0.memory.borrow_mut().device_info.extend(partial);
        self.force_device_identity();
    }

    /// The device id `/auth/connect` returned, if registered: the stored one, else the one this
    /// tab kept when storage refused it (see `device_info`).
    pub fn device_id(&self) -> Option<String> {
        self.device_info().get("id").and_then(Value::as_str).map(str::to_owned)
    }

    /// `POST /auth/connect`: registers this device, with its key's public half when it keeps
    /// one. The answer may carry a `deviceId`; when it does, it is stored and becomes
    /// `deviceInfo.id` (and, registered with the key, the device known to be keyed:
    /// `keys::DEVICE_KEYED`), and when it does not, the registration still succeeded and the id
    /// stays as it was.
    pub async fn register_device(&self) -> DeviceResult {
        let mut info = self.device_info();
        let key = self.0.ports.device_key.public_key().await;
        let keyed = key.is_some();
        if let Some(key) = key {
            info.insert("publicKey".into(), Value::String(key));
        }
        let body = json::stringify(&Value::Object(info));
        // A registration with a key binds the session to it: it waits for a refresh of any tab
        // to end (one on the wire unproven would be refused once bound) and holds refreshes
        // back until it is stored.
        let response = match self.authorized(CONNECT.method, CONNECT.path, Some(body), true).await {
            Ok(r) => r,
            Err(failure) => return DeviceResult::Failure(failure),
        };
        if !(200..300).contains(&response.status) {
            return DeviceResult::Failure(CallResult::from_response(&response));
        }
        let Some(device_id) =
            json::parse(&response.body).and_then(|v| ConnectResponse::device_id_of(&v).map(str::to_owned))
        else {
            return DeviceResult::Success { device_id: self.device_id() };
        };
        if let Err(e) = self.storage().set(keys::DEVICE_ID, &device_id) {
            self.reporter().error(&["session-broker: could not store the device id: ", &e.0].concat());
        }
        if keyed {
            // The device is keyed from now on: its proofs are required. (Where storage refused
            // it, as it refused the id, the device is read as keyless: proven while its key
            // store answers, and only then.)
            let _ = self.storage().set(keys::DEVICE_KEYED, &device_id);
        }
        self.0.memory.borrow_mut().device_info.insert("id".into(), Value::String(device_id.clone()));
        DeviceResult::Success { device_id: Some(device_id) }
    }

    /// `POST /auth/status`: reports the device online or offline.
    pub async fn update_device_status(&self, is_online: bool) -> CallResult {
        self.call(STATUS.method, STATUS.path, Some(json::stringify(&StatusRequest::body(is_online)))).await
    }
}
