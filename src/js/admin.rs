//! `RollingDbAdmin`: the operations routes (docs/server.md, operations) with the session's token. Each resolves
//! to `{success, data?, error?, status?}`; the server decides who may do what.

use js_sys::Promise;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{object_arg, promise, string_arg};
use super::errors::invalid;
use super::types::{AuditQueryArg, SetFlagsOptionsArg};
use super::AuthManager;
use crate::core::calls::{Admin, CRON_ARCHIVE, CRON_DROP_EVAL, CRON_ROTATE};
use crate::core::session::Session;

/// The operator's console API: fleet, cluster, flags, crons, invalidation.
#[wasm_bindgen]
pub struct RollingDbAdmin {
    session: Session,
}

impl RollingDbAdmin {
    fn send(&self, call: Admin) -> Result<Promise, JsValue> {
        let route = call.route().map_err(invalid)?;
        let session = self.session.clone();
        Ok(promise(async move { session.send_route(route).await.to_value() }))
    }
}

fn id(value: &JsValue, what: &str) -> Result<String, JsValue> {
    string_arg(value, what)
}

#[wasm_bindgen]
impl RollingDbAdmin {
    #[wasm_bindgen(constructor)]
    /// An operator's console API on the session of `auth` (its token authorises each call).
    pub fn new(auth: &AuthManager) -> RollingDbAdmin {
        RollingDbAdmin { session: auth.session().clone() }
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<HealthStatus>>")]
    /// `GET /health`: `{status, db}`; `db` is true on the two-flag schema.
    pub fn health(&self) -> Result<Promise, JsValue> {
        self.send(Admin::Health)
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<ClusterView>>")]
    /// The document cluster: open databases against `maxDbsOpen`, each with its kind and status (sys_admin).
    pub fn cluster(&self) -> Result<Promise, JsValue> {
        self.send(Admin::Cluster)
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<TenantsView>>")]
    /// The fleet: every tenant's flags, CORE, day databases and device SDK versions (sys_admin).
    pub fn tenants(&self) -> Result<Promise, JsValue> {
        self.send(Admin::Tenants)
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<Reconciliation>>")]
    /// A tenant's archive reconciliation: the diff per past day database (sys_admin).
    pub fn reconciliation(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Admin::Reconciliation(id(&company_id, "companyId")?))
    }

    #[wasm_bindgen(js_name = cleanupCandidates, unchecked_return_type = "Promise<CallResult<CleanupCandidates>>")]
    /// A tenant's day databases with the three locks of the drop and their age (sys_admin).
    pub fn cleanup_candidates(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Admin::CleanupCandidates(id(&company_id, "companyId")?))
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<Topology>>")]
    /// Where a tenant's devices route (CORE or legacy), its day databases, manifest and last invalidation.
    pub fn topology(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Admin::Topology(id(&company_id, "companyId")?))
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<Preflight>>")]
    /// The prerequisites for switching each flag on, check by check.
    pub fn preflight(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Admin::Preflight(id(&company_id, "companyId")?))
    }

    /// `setFlags("acme", { rollingDb: true }, { force: true })`.
    #[wasm_bindgen(js_name = setFlags, unchecked_return_type = "Promise<CallResult<FlagsChanged>>")]
    pub fn set_flags(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "FlagChanges")] flags: JsValue,
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
        self.send(Admin::SetFlags {
            company_id: id(&company_id, "companyId")?,
            flags: Value::Object(object_arg(&flags, "flags")?),
            force,
        })
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<CronsView>>")]
    /// Every cron with its schedule (UTC), last result and next run.
    pub fn crons(&self) -> Result<Promise, JsValue> {
        self.send(Admin::Crons)
    }

    #[wasm_bindgen(js_name = runRotate, unchecked_return_type = "Promise<CallResult<CronRunStarted>>")]
    /// Starts the rotate now (or joins the run in progress): warm CORE, prewarm day databases, cut over.
    pub fn run_rotate(&self) -> Result<Promise, JsValue> {
        self.send(Admin::RunCron(CRON_ROTATE.into()))
    }

    #[wasm_bindgen(js_name = runDropEval, unchecked_return_type = "Promise<CallResult<CronRunStarted>>")]
    /// Starts the drop evaluation now (or joins the run in progress).
    pub fn run_drop_eval(&self) -> Result<Promise, JsValue> {
        self.send(Admin::RunCron(CRON_DROP_EVAL.into()))
    }

    #[wasm_bindgen(js_name = runArchive, unchecked_return_type = "Promise<CallResult<CronRunStarted>>")]
    /// Starts the archive now (or joins the run in progress).
    pub fn run_archive(&self) -> Result<Promise, JsValue> {
        self.send(Admin::RunCron(CRON_ARCHIVE.into()))
    }

    /// Starts any cron `crons()` lists, by name (the console runs them all this way).
    #[wasm_bindgen(js_name = runCron, unchecked_return_type = "Promise<CallResult<CronRunStarted>>")]
    pub fn run_cron(&self, #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue) -> Result<Promise, JsValue> {
        self.send(Admin::RunCron(id(&name, "name")?))
    }

    #[wasm_bindgen(js_name = cronRun, unchecked_return_type = "Promise<CallResult<CronRun>>")]
    /// A run's status, progress and log, for `runId` from a run's start.
    pub fn cron_run(
        &self,
        #[wasm_bindgen(js_name = runId, unchecked_param_type = "string")] run_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Admin::CronRun(id(&run_id, "runId")?))
    }

    /// The audit log (sys_admin): newest first; `{companyId?, before?, limit?}` picks a tenant
    /// and a page (`before` is the previous page's `nextBefore`).
    #[wasm_bindgen(js_name = auditLog, unchecked_return_type = "Promise<CallResult<AuditPage>>")]
    pub fn audit_log(&self, query: Option<AuditQueryArg>) -> Result<Promise, JsValue> {
        let query: JsValue = query.map_or(JsValue::UNDEFINED, JsValue::from);
        let query =
            if query.is_undefined() || query.is_null() { serde_json::Map::new() } else { object_arg(&query, "query")? };
        let company_id = match query.get("companyId") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id.clone()),
            Some(_) => return Err(invalid("companyId must be a string")),
        };
        let whole = |name: &str| -> Result<Option<u64>, JsValue> {
            match query.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v.as_u64().map(Some).ok_or_else(|| invalid([name, " must be a whole number"].concat())),
            }
        };
        let limit = whole("limit")?.map(|l| l.min(500) as u32);
        self.send(Admin::Audit { company_id, before: whole("before")?, limit })
    }

    #[wasm_bindgen(js_name = invalidateClients, unchecked_return_type = "Promise<CallResult<InvalidationResult>>")]
    /// Invalidates a tenant: every device destroys its local database and re-bootstraps at its next handshake.
    pub fn invalidate_clients(
        &self,
        #[wasm_bindgen(js_name = companyId, unchecked_param_type = "string")] company_id: JsValue,
    ) -> Result<Promise, JsValue> {
        self.send(Admin::InvalidateClients(id(&company_id, "companyId")?))
    }
}
