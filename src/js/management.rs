//! `AuthManager`'s management calls (docs/sdk.md, management calls). Each resolves to `{success, data?, error?, status?}`.

use js_sys::Promise;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{id_arg, object_arg, promise, send};
use super::AuthManager;
use crate::core::calls::Route;
use crate::protocol::routes::*;

impl AuthManager {
    // Ids are checked before this (`id_arg`): a bad one throws, synchronously, rather than
    // resolving to a failed call.
    fn manage(&self, route: Route) -> Result<Promise, JsValue> {
        Ok(send(self.session(), route))
    }
}

fn object(value: &JsValue, what: &str) -> Result<Value, JsValue> {
    object_arg(value, what).map(Value::Object)
}

#[wasm_bindgen]
impl AuthManager {
    #[wasm_bindgen(js_name = addDevice, unchecked_return_type = "Promise<CallResult<Answer<\"ADD_DEVICE\">>>")]
    /// `POST /devices`: registers a device description.
    pub fn add_device(
        &self,
        #[wasm_bindgen(js_name = deviceInfo, unchecked_param_type = "Record<string, unknown>")] device_info: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Route::to(ADD_DEVICE, &[], Some(object(&device_info, "deviceInfo")?)))
    }

    #[wasm_bindgen(js_name = deleteDevice, unchecked_return_type = "Promise<CallResult<Answer<\"DELETE_DEVICE\">>>")]
    /// `DELETE /devices/:id`.
    pub fn delete_device(
        &self,
        #[wasm_bindgen(js_name = deviceId, unchecked_param_type = "string")] device_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Route::to(DELETE_DEVICE, &[&id_arg(&device_id, "deviceId")?], None))
    }

    #[wasm_bindgen(js_name = getDevices, unchecked_return_type = "Promise<CallResult<Answer<\"DEVICES\">>>")]
    /// `GET /devices`: the devices this user may see.
    pub fn get_devices(&self) -> Result<Promise, JsValue> {
        self.manage(Route::to(DEVICES, &[], None))
    }

    #[wasm_bindgen(js_name = getCompanies, unchecked_return_type = "Promise<CallResult<Answer<\"COMPANIES\">>>")]
    /// `GET /companies`: the companies this user may see.
    pub fn get_companies(&self) -> Result<Promise, JsValue> {
        self.manage(Route::to(COMPANIES, &[], None))
    }

    /// `GET /companies/:id`. Fetching the current company also caches its details for `getCurrentCompany()`.
    #[wasm_bindgen(js_name = getCompany, unchecked_return_type = "Promise<CallResult<Answer<\"COMPANY\">>>")]
    pub fn get_company(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        let id = id_arg(&company_id, "companyId")?;
        let session = self.session().clone();
        Ok(promise(async move {
            let answer = session.send_route(Route::to(COMPANY, &[&id], None)).await;
            session.keep_company_details(&id, &answer);
            answer.to_value()
        }))
    }

    #[wasm_bindgen(js_name = updateCompany, unchecked_return_type = "Promise<CallResult<Answer<\"UPDATE_COMPANY\">>>")]
    /// `PATCH /companies/:id` (`{name}`).
    pub fn update_company(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "RequestBody<\"UPDATE_COMPANY\">")] changes: JsValue,
    ) -> Result<Promise, JsValue> {
        let id = id_arg(&company_id, "companyId")?;
        self.manage(Route::to(UPDATE_COMPANY, &[&id], Some(object(&changes, "changes")?)))
    }

    #[wasm_bindgen(js_name = deleteCompany, unchecked_return_type = "Promise<CallResult<Answer<\"DELETE_COMPANY\">>>")]
    /// `DELETE /companies/:id` (sys_admin).
    pub fn delete_company(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Route::to(DELETE_COMPANY, &[&id_arg(&company_id, "companyId")?], None))
    }

    #[wasm_bindgen(js_name = updateUser, unchecked_return_type = "Promise<CallResult<Answer<\"UPDATE_USER\">>>")]
    /// `PATCH /users/:id`: a password (with `currentPassword`) or roles (sys_admin).
    pub fn update_user(
        &self,
        #[wasm_bindgen(js_name = userId, unchecked_param_type = "string")] user_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "RequestBody<\"UPDATE_USER\">")] changes: JsValue,
    ) -> Result<Promise, JsValue> {
        let id = id_arg(&user_id, "userId")?;
        self.manage(Route::to(UPDATE_USER, &[&id], Some(object(&changes, "changes")?)))
    }

    #[wasm_bindgen(js_name = deleteUser, unchecked_return_type = "Promise<CallResult<Answer<\"DELETE_USER\">>>")]
    /// `DELETE /users/:id` (sys_admin).
    pub fn delete_user(
        &self,
        #[wasm_bindgen(js_name = userId, unchecked_param_type = "string")] user_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Route::to(DELETE_USER, &[&id_arg(&user_id, "userId")?], None))
    }

    #[wasm_bindgen(js_name = listUsers, unchecked_return_type = "Promise<CallResult<Answer<\"USERS\">>>")]
    /// `GET /users`: the users this user may see.
    pub fn list_users(&self) -> Result<Promise, JsValue> {
        self.manage(Route::to(USERS, &[], None))
    }

    #[wasm_bindgen(js_name = getMyUser, unchecked_return_type = "Promise<CallResult<Answer<\"ME\">>>")]
    /// `GET /users/me`.
    pub fn get_my_user(&self) -> Result<Promise, JsValue> {
        self.manage(Route::to(ME, &[], None))
    }

    #[wasm_bindgen(js_name = updatePaymentReference, unchecked_return_type = "Promise<CallResult<Answer<\"PAYMENT_REFERENCE\">>>")]
    /// `PATCH /companies/:companyId/sales/:saleId/payment-reference` (`{reference}`).
    pub fn update_payment_reference(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
        #[wasm_bindgen(js_name = saleId, unchecked_param_type = "string")] sale_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "RequestBody<\"PAYMENT_REFERENCE\">")] data: JsValue,
    ) -> Result<Promise, JsValue> {
        let ids = [id_arg(&company_id, "companyId")?, id_arg(&sale_id, "saleId")?];
        self.manage(Route::to(PAYMENT_REFERENCE, &[&ids[0], &ids[1]], Some(object(&data, "data")?)))
    }
}
