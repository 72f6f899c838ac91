//! `RollingDbAdmin`: the operations routes (docs/server.md, operations) with the session's token. Each resolves
//! to `{success, data?, error?, status?}`; the server decides who may do what.

use js_sys::Promise;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{id_arg, object_arg, send};
use super::errors::invalid;
use super::types::{AuditQueryArg, SetFlagsOptionsArg};
use super::AuthManager;
use crate::core::calls::{segment, Route, Segment, CRON_ARCHIVE, CRON_DROP_EVAL, CRON_ROTATE};
use crate::core::codec::decimal;
use crate::core::session::Session;
use crate::protocol::routes::*;

/// The operator's console API: fleet, cluster, flags, crons, invalidation.
#[wasm_bindgen]
pub struct RollingDbAdmin {
    session: Session,
}

impl RollingDbAdmin {
    fn send(&self, route: Route) -> Result<Promise, JsValue> {
        Ok(send(&self.session, route))
    }
}

/// One of the crons the SDK names, as an id.
fn cron(name: &str) -> Result<Segment, JsValue> {
    segment("name", name).map_err(invalid)
}

#[wasm_bindgen]
impl RollingDbAdmin {
    #[wasm_bindgen(constructor)]
    /// An operator's console API on the session of `auth` (its token authorises each call).
    pub fn new(auth: &AuthManager) -> RollingDbAdmin {
        RollingDbAdmin { session: auth.session().clone() }
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<Answer<\"HEALTH\">>>")]
    /// `GET /health`: `{status, db}`; `db` is true on the two-flag schema.
    pub fn health(&self) -> Result<Promise, JsValue> {
        self.send(Route::public(HEALTH))
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<Answer<\"CLUSTER\">>>")]
    /// The document cluster: open databases against `maxDbsOpen`, each with its kind and status (sys_admin).
    pub fn cluster(&self) -> Result<Promise, JsValue> {
        self.send(Route::to(CLUSTER, &[], None))
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<Answer<\"TENANTS\">>>")]
    /// The fleet: every tenant's flags, CORE, day databases and device SDK versions (sys_admin).
    pub fn tenants(&self) -> Result<Promise, JsValue> {
        self.send(Route::to(TENANTS, &[], None))
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<Answer<\"RECONCILIATION\">>>")]
    /// A tenant's archive reconciliation: the diff per past day database (sys_admin).
    pub fn reconciliation(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Route::to(RECONCILIATION, &[&id_arg(&company_id, "companyId")?], None))
    }

    #[wasm_bindgen(js_name = cleanupCandidates, unchecked_return_type = "Promise<CallResult<Answer<\"CLEANUP_CANDIDATES\">>>")]
    /// A tenant's day databases with the three locks of the drop and their age (sys_admin).
    pub fn cleanup_candidates(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Route::to(CLEANUP_CANDIDATES, &[&id_arg(&company_id, "companyId")?], None))
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<Answer<\"TOPOLOGY\">>>")]
    /// Where a tenant's devices route (CORE or legacy), its day databases, manifest and last invalidation.
    pub fn topology(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Route::to(TOPOLOGY, &[&id_arg(&company_id, "companyId")?], None))
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<Answer<\"PREFLIGHT\">>>")]
    /// The prerequisites for switching each flag on, check by check.
    pub fn preflight(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Route::to(PREFLIGHT, &[&id_arg(&company_id, "companyId")?], None))
    }

    /// `setFlags("acme", { rollingDb: true }, { force: true })`.
    #[wasm_bindgen(js_name = setFlags, unchecked_return_type = "Promise<CallResult<Answer<\"FLAGS\">>>")]
    pub fn set_flags(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "RequestBody<\"FLAGS\">")] flags: JsValue,
        options: Option<SetFlagsOptionsArg>,
    ) -> Result<Promise, JsValue> {
        let options: JsValue = options.map_or(JsValue::UNDEFINED, JsValue::from);
        let force = if options.is_undefined() || options.is_null() {
            false
        } else {
            match object_arg(&options, "options")?.get("force") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(invalid("options.force must be a boolean")),
            }
        };
        let company_id = id_arg(&company_id, "companyId")?;
        let route = Route::to(FLAGS, &[&company_id], Some(Value::Object(object_arg(&flags, "flags")?)));
        self.send(route.query(&[("force", force.then_some("true"))]))
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<Answer<\"CRONS\">>>")]
    /// Every cron with its schedule (UTC), last result and next run.
    pub fn crons(&self) -> Result<Promise, JsValue> {
        self.send(Route::to(CRONS, &[], None))
    }

    #[wasm_bindgen(js_name = runRotate, unchecked_return_type = "Promise<CallResult<Answer<\"RUN_CRON\">>>")]
    /// Starts the rotate now (or joins the run in progress): warm CORE, prewarm day databases, cut over.
    pub fn run_rotate(&self) -> Result<Promise, JsValue> {
        self.send(Route::to(RUN_CRON, &[&cron(CRON_ROTATE)?], None))
    }

    #[wasm_bindgen(js_name = runDropEval, unchecked_return_type = "Promise<CallResult<Answer<\"RUN_CRON\">>>")]
    /// Starts the drop evaluation now (or joins the run in progress).
    pub fn run_drop_eval(&self) -> Result<Promise, JsValue> {
        self.send(Route::to(RUN_CRON, &[&cron(CRON_DROP_EVAL)?], None))
    }

    #[wasm_bindgen(js_name = runArchive, unchecked_return_type = "Promise<CallResult<Answer<\"RUN_CRON\">>>")]
    /// Starts the archive now (or joins the run in progress).
    pub fn run_archive(&self) -> Result<Promise, JsValue> {
        self.send(Route::to(RUN_CRON, &[&cron(CRON_ARCHIVE)?], None))
    }

    /// Starts any cron `crons()` lists, by name (the console runs them all this way).
    #[wasm_bindgen(js_name = runCron, unchecked_return_type = "Promise<CallResult<Answer<\"RUN_CRON\">>>")]
    pub fn run_cron(&self, #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue) -> Result<Promise, JsValue> {
        self.send(Route::to(RUN_CRON, &[&id_arg(&name, "name")?], None))
    }

    #[wasm_bindgen(js_name = cronRun, unchecked_return_type = "Promise<CallResult<Answer<\"CRON_RUN\">>>")]
    /// A run's status, progress and log, for `runId` from a run's start.
    pub fn cron_run(
        &self,
        #[wasm_bindgen(js_name = runId, unchecked_param_type = "string")] run_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Route::to(CRON_RUN, &[&id_arg(&run_id, "runId")?], None))
    }

    /// The audit log (sys_admin): newest first; `{companyId?, before?, limit?}` picks a tenant
    /// and a page (`before` is the previous page's `nextBefore`).
    #[wasm_bindgen(js_name = auditLog, unchecked_return_type = "Promise<CallResult<Answer<\"AUDIT\">>>")]
    pub fn audit_log(&self, query: Option<AuditQueryArg>) -> Result<Promise, JsValue> {
        let query: JsValue = query.map_or(JsValue::UNDEFINED, JsValue::from);
        let query =
            if query.is_undefined() || query.is_null() { serde_json::Map::new() } else { object_arg(&query, "query")? };
        let company_id = match query.get("companyId") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(segment("companyId", id).map_err(invalid)?),
            Some(_) => return Err(invalid("companyId must be a string")),
        };
        let whole = |name: &str| -> Result<Option<u64>, JsValue> {
            match query.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v.as_u64().map(Some).ok_or_else(|| invalid([name, " must be a whole number"].concat())),
            }
        };
        let before = whole("before")?.map(decimal);
        let limit = whole("limit")?.map(|l| decimal(l.min(500)));
        let route = Route::to(AUDIT, &[], None);
        let company_id = company_id.as_ref().map(Segment::as_str);
        self.send(route.query(&[("companyId", company_id), ("before", before.as_deref()), ("limit", limit.as_deref())]))
    }

    #[wasm_bindgen(js_name = invalidateClients, unchecked_return_type = "Promise<CallResult<Answer<\"INVALIDATE_CLIENTS\">>>")]
    /// Invalidates a tenant: every device destroys its local database and re-bootstraps at its next handshake.
    pub fn invalidate_clients(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Route::to(INVALIDATE_CLIENTS, &[&id_arg(&company_id, "companyId")?], None))
    }
}
