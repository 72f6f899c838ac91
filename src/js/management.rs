//! `AuthManager`'s management calls (docs/sdk.md, management calls). Each resolves to `{success, data?, error?, status?}`.

use js_sys::Promise;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{object_arg, promise, string_arg};
use super::errors::invalid;
use super::AuthManager;
use crate::core::calls::Management;

impl AuthManager {
    fn manage(&self, call: Management) -> Result<Promise, JsValue> {
        // Refuse a bad id here, synchronously, rather than as a failed call.
        call.route().map_err(invalid)?;
        let session = self.session().clone();
        Ok(promise(async move { session.manage(call).await.to_value() }))
    }
}

fn object(value: &JsValue, what: &str) -> Result<Value, JsValue> {
    object_arg(value, what).map(Value::Object)
}

#[wasm_bindgen]
impl AuthManager {
    #[wasm_bindgen(js_name = addDevice, unchecked_return_type = "Promise<CallResult<DeviceAnswer>>")]
    /// `POST /devices`: registers a device description.
    pub fn add_device(
        &self,
        #[wasm_bindgen(js_name = deviceInfo, unchecked_param_type = "Record<string, unknown>")] device_info: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Management::AddDevice(object(&device_info, "deviceInfo")?))
    }

    #[wasm_bindgen(js_name = deleteDevice, unchecked_return_type = "Promise<CallResult<OkBody>>")]
    /// `DELETE /devices/:id`.
    pub fn delete_device(
        &self,
        #[wasm_bindgen(js_name = deviceId, unchecked_param_type = "string")] device_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Management::DeleteDevice(string_arg(&device_id, "deviceId")?))
    }

    #[wasm_bindgen(js_name = getDevices, unchecked_return_type = "Promise<CallResult<DeviceList>>")]
    /// `GET /devices`: the devices this user may see.
    pub fn get_devices(&self) -> Result<Promise, JsValue> {
        self.manage(Management::GetDevices)
    }

    #[wasm_bindgen(js_name = getCompanies, unchecked_return_type = "Promise<CallResult<CompanyList>>")]
    /// `GET /companies`: the companies this user may see.
    pub fn get_companies(&self) -> Result<Promise, JsValue> {
        self.manage(Management::GetCompanies)
    }

    /// Fetching the current company also caches its details for `getCurrentCompany()`.
    #[wasm_bindgen(js_name = getCompany, unchecked_return_type = "Promise<CallResult<CompanyAnswer>>")]
    pub fn get_company(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Management::GetCompany(string_arg(&company_id, "companyId")?))
    }

    #[wasm_bindgen(js_name = updateCompany, unchecked_return_type = "Promise<CallResult<CompanyAnswer>>")]
    /// `PATCH /companies/:id` (`{name}`).
    pub fn update_company(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CompanyChanges")] changes: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Management::UpdateCompany(string_arg(&company_id, "companyId")?, object(&changes, "changes")?))
    }

    #[wasm_bindgen(js_name = deleteCompany, unchecked_return_type = "Promise<CallResult<OkBody>>")]
    /// `DELETE /companies/:id` (sys_admin).
    pub fn delete_company(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Management::DeleteCompany(string_arg(&company_id, "companyId")?))
    }

    #[wasm_bindgen(js_name = updateUser, unchecked_return_type = "Promise<CallResult<UserAnswer>>")]
    /// `PATCH /users/:id`: a password (with `currentPassword`) or roles (sys_admin).
    pub fn update_user(
        &self,
        #[wasm_bindgen(js_name = userId, unchecked_param_type = "string")] user_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "UserChanges")] changes: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Management::UpdateUser(string_arg(&user_id, "userId")?, object(&changes, "changes")?))
    }

    #[wasm_bindgen(js_name = deleteUser, unchecked_return_type = "Promise<CallResult<OkBody>>")]
    /// `DELETE /users/:id` (sys_admin).
    pub fn delete_user(
        &self,
        #[wasm_bindgen(js_name = userId, unchecked_param_type = "string")] user_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Management::DeleteUser(string_arg(&user_id, "userId")?))
    }

    #[wasm_bindgen(js_name = listUsers, unchecked_return_type = "Promise<CallResult<UserList>>")]
    /// `GET /users`: the users this user may see.
    pub fn list_users(&self) -> Result<Promise, JsValue> {
        self.manage(Management::ListUsers)
    }

    #[wasm_bindgen(js_name = getMyUser, unchecked_return_type = "Promise<CallResult<UserAnswer>>")]
    /// `GET /users/me`.
    pub fn get_my_user(&self) -> Result<Promise, JsValue> {
        self.manage(Management::GetMyUser)
    }

    #[wasm_bindgen(js_name = updatePaymentReference, unchecked_return_type = "Promise<CallResult<SaleAnswer>>")]
    /// `PATCH /companies/:companyId/sales/:saleId/payment-reference` (`{reference}`).
    pub fn update_payment_reference(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
        #[wasm_bindgen(js_name = saleId, unchecked_param_type = "string")] sale_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PaymentReference")] data: JsValue,
    ) -> Result<Promise, JsValue> {
        self.manage(Management::UpdatePaymentReference {
            company_id: string_arg(&company_id, "companyId")?,
            sale_id: string_arg(&sale_id, "saleId")?,
            data: object(&data, "data")?,
        })
    }
}
