//! The device's local databases: one ledger in storage, shared by every tab and surviving a
//! reload, that says for each tracked database how to open it, where its writes go and whose
//! they are. Databases are destroyed at a login, a company change or an invalidation so one
//! tenant's offline data never reaches another; the ones that hold the device's writes are
//! pushed first (by whichever tab destroys), and what could not be pushed is counted and reported.

use crate::core::json;
use serde_json::{Map, Value};

use super::{InputError, Session};
use crate::core::keys::{self, HeaderKind};
use crate::core::ports::{PushPlan, PushReport};

/// One database's line of the ledger (`serviceProxyToken-localDatabase:<name>`, a JSON object):
/// `owner` (the tenant whose data it holds; absent: unknown, nothing is ever lent to it),
/// `dynamicDb` (that tenant's routed day database), `adapter` (PouchDB's, to open it again in
/// any tab), `pushTo` (`"dynamic"` or `{database}`: it holds the device's writes) and `gen` (how
/// many times it was tracked: a track during its destruction keeps it).
pub type Entry = Map<String, Value>;

/// What `destroyAllLocalDatabases` did, database by database.
#[derive(Debug, Clone, PartialEq)]
pub struct DestroyReport {
    /// Databases destroyed.
    pub destroyed: Vec<String>,
    /// Databases that could not be destroyed (kept in the tracked list for the next try).
    pub failed: Vec<String>,
    /// The final push before it, taken after the handlers, right before the deletions.
    pub push: PushReport,
}

impl DestroyReport {
    /// The JS shape `{destroyed, failed, pushed, unpushed}`.
    pub fn to_value(&self) -> Value {
        let mut value =
            json::object([("destroyed", self.destroyed.clone().into()), ("failed", self.failed.clone().into())]);
        self.push.annotate(&mut value);
        value
    }
}

/// The headers a database's final push may use: the incoming session's (`new`, a login's) for
/// data of its own tenant; the stored session's for data of the stored session's tenant; none
/// otherwise (data of an ended session of another tenant, or of nobody known): then it is only
/// counted. A session of one tenant never lends its headers to another tenant's data.
pub fn push_headers<'a>(
    owner: Option<&str>,
    new: Option<(&str, &'a Map<String, Value>)>,
    stored: Option<(&str, &'a Map<String, Value>)>,
) -> Option<&'a Map<String, Value>> {
    let owner = owner?;
    [new, stored].into_iter().flatten().find(|(tenant, _)| *tenant == owner).map(|(_, headers)| headers)
}

/// The database a marked database's writes go to: its named one, or its owner's routed day
/// database (none known yet: nothing is sent, the work is counted).
pub fn push_target(entry: &Entry) -> Option<String> {
    match entry.get("pushTo")? {
        Value::String(s) if s == "dynamic" => {
            json::str_field(&Value::Object(entry.clone()), "dynamicDb").filter(|db| !db.is_empty()).map(str::to_owned)
        }
        to => json::str_field(to, "database").map(str::to_owned),
    }
}

fn field<'a>(entry: &'a Entry, name: &str) -> Option<&'a str> {
    entry.get(name).and_then(Value::as_str).filter(|s| !s.is_empty())
}

impl Session {
    /// The local databases tracked on this device (the tenant's offline data).
    pub fn tracked_local_databases(&self) -> Vec<String> {
        let mut names = keys::read_string_list(self.storage(), keys::LOCAL_DATABASES);
        // The ledger's lines are the truth: two tabs that tracked at the same instant may each
        // have written the list without the other's name, never without their own line.
        for key in self.storage().keys() {
            if let Some(name) = key.strip_prefix(keys::LOCAL_DATABASE_PREFIX) {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_owned());
                }
            }
        }
        names
    }

    /// A database's line of the ledger (empty when it has none).
    pub fn ledger_entry(&self, name: &str) -> Entry {
        keys::read_valid(self.storage(), &[keys::LOCAL_DATABASE_PREFIX, name].concat(), |text| {
            json::parse(text)?.as_object().cloned()
        })
        .unwrap_or_default()
    }

    fn write_entry(&self, name: &str, entry: &Entry) -> Result<(), String> {
        self.storage()
            .set(&[keys::LOCAL_DATABASE_PREFIX, name].concat(), &json::stringify(&Value::Object(entry.clone())))
    }

    /// The tenant whose session stands in storage now.
    fn stored_company(&self) -> Option<String> {
        self.stored_token().and_then(|(_, c)| c.company_id())
    }

    /// Whose fresh data is: during a login's or company change's cleanup, the incoming tenant's
    /// (what is written once the old data is destroyed is the new session's), else the stored
    /// session's.
    fn fresh_owner(&self) -> Option<String> {
        self.0.memory.borrow().incoming.clone().or_else(|| self.stored_company())
    }

    /// Records a local database in the ledger so a sign-out or invalidation pushes and destroys
    /// it. `opened`: how the adapter opens it again (`{adapter, pushTo}` from a PouchDB instance).
    /// The owner is the data's: a database already in the ledger keeps its owner (tracked while
    /// signed out too); tracked under a session of another tenant, the owner becomes unknown, so
    /// nothing is ever lent to data of two tenants.
    pub fn track_local_database(&self, name: &str, opened: Entry) -> Result<(), InputError> {
        if name.trim().is_empty() {
            return Err(InputError::EmptyName);
        }
        let mut entry = self.ledger_entry(name);
        let known = !entry.is_empty();
        let company = if known { self.stored_company() } else { self.fresh_owner() };
        match (field(&entry, "owner").map(str::to_owned), company) {
            (None, Some(company)) if !known => {
                let routed = self.0.memory.borrow().routed.clone().filter(|(c, _)| *c == company);
                entry.insert("dynamicDb".into(), routed.map(|(_, db)| db).unwrap_or_default().into());
                entry.insert("owner".into(), company.into());
            }
            (Some(owner), Some(company)) if owner != company => {
                entry.remove("owner");
            }
            _ => {}
        }
        for (k, v) in opened {
            entry.insert(k, v);
        }
        let gen = entry.get("gen").and_then(Value::as_u64).unwrap_or(0) + 1;
        entry.insert("gen".into(), gen.into());
        self.write_entry(name, &entry).map_err(InputError::Storage)?;
        let mut names = keys::read_string_list(self.storage(), keys::LOCAL_DATABASES);
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
            keys::write_string_list(self.storage(), keys::LOCAL_DATABASES, &names).map_err(InputError::Storage)?;
        }
        Ok(())
    }

    /// The SDK's final push of the tracked databases marked `pushTo`, each with the headers
    /// [`push_headers`] allows (`new`: a login's incoming tenant and its headers), bounded by
    /// `hookTimeoutMs` each. What is not pushed is counted from the database itself.
    pub async fn push_tracked(&self, new: Option<(&str, &Map<String, Value>)>) -> PushReport {
        let stored_headers = self.docdb_headers(HeaderKind::Remote);
        let stored_company = self.stored_company();
        let stored = stored_company.as_deref().zip(stored_headers.as_ref());
        let docdb = crate::core::url::join(self.base_url(), "docdb/");
        let plans: Vec<PushPlan> = self
            .tracked_local_databases()
            .into_iter()
            .filter_map(|name| {
                let entry = self.ledger_entry(&name);
                entry.get("pushTo")?;
                let headers = push_headers(field(&entry, "owner"), new, stored);
                let to = push_target(&entry).zip(headers).map(|(db, h)| ([docdb.as_str(), &db].concat(), h.clone()));
                Some(PushPlan { adapter: field(&entry, "adapter").map(str::to_owned), name, to })
            })
            .collect();
        if plans.is_empty() {
            return PushReport::default();
        }
        self.0.ports.local_databases.push(plans, self.0.config.hook_timeout_ms).await
    }

    /// Pushes (or counts), then destroys every tracked database (see [`Session::destroy_tracked`]).
    pub async fn destroy_all_local_databases(&self) -> DestroyReport {
        self.destroy_tracked(None).await
    }

    /// Destroys every tracked database, after a last push taken now (after any handlers): what a
    /// handler wrote is pushed or counted, never destroyed unseen. The ones that failed stay
    /// tracked for the next cleanup; one tracked again while it was destroyed stays tracked (its
    /// data is fresh, the incoming or stored session's). Documents destroyed unpushed are logged.
    pub async fn destroy_tracked(&self, new: Option<(&str, &Map<String, Value>)>) -> DestroyReport {
        let push = self.push_tracked(new).await;
        let mut report = DestroyReport { destroyed: Vec::new(), failed: Vec::new(), push };
        for name in self.tracked_local_databases() {
            let before = self.ledger_entry(&name);
            let adapter = field(&before, "adapter").map(str::to_owned);
            match self.0.ports.local_databases.destroy(&name, adapter.as_deref()).await {
                Ok(()) => {
                    if let Some(n) = report.push.unpushed.get(&name) {
                        self.reporter().error(
                            &[
                                "session-broker: ",
                                &json::stringify(n),
                                " document(s) of \"",
                                &name,
                                "\" could not be pushed and were destroyed",
                            ]
                            .concat(),
                        );
                    }
                    let mut after = self.ledger_entry(&name);
                    if after.get("gen") == before.get("gen") {
                        self.storage().remove(&[keys::LOCAL_DATABASE_PREFIX, &name].concat());
                    } else {
                        after.remove("owner");
                        if let Some(owner) = self.fresh_owner() {
                            after.insert("owner".into(), owner.into());
                        }
                        let _ = self.write_entry(&name, &after);
                    }
                    report.destroyed.push(name)
                }
                Err(e) => {
                    self.reporter()
                        .error(&["session-broker: could not destroy local database \"", &name, "\": ", &e].concat());
                    report.failed.push(name);
                }
            }
        }
        // Re-read: a database may have been tracked while the deletions ran.
        let remaining: Vec<String> = self
            .tracked_local_databases()
            .into_iter()
            .filter(|n| !report.destroyed.contains(n) || !self.ledger_entry(n).is_empty())
            .collect();
        if let Err(e) = keys::write_string_list(self.storage(), keys::LOCAL_DATABASES, &remaining) {
            self.reporter().error(&["session-broker: could not update the local database list: ", &e].concat());
        }
        report
    }

    /// The tenant a tracked database's data belongs to, when known.
    pub fn local_data_owner(&self, name: &str) -> Option<String> {
        field(&self.ledger_entry(name), "owner").map(str::to_owned)
    }

    /// The tenant of the data on the device: the first tracked database's with a known owner.
    pub fn any_local_data_owner(&self) -> Option<String> {
        self.tracked_local_databases().iter().find_map(|n| self.local_data_owner(n))
    }

    /// A realtime `ready`'s routing: remembered for the data tracked from now on, and recorded
    /// with the tracked data of the same tenant (its writes go to the day database routed last).
    pub fn note_routing(&self, company: &str, dynamic_db: &str) {
        self.0.memory.borrow_mut().routed = Some((company.to_owned(), dynamic_db.to_owned()));
        for name in self.tracked_local_databases() {
            let mut entry = self.ledger_entry(&name);
            if field(&entry, "owner") == Some(company) && field(&entry, "dynamicDb") != Some(dynamic_db) {
                entry.insert("dynamicDb".into(), dynamic_db.into());
                // A refused write leaves the previous routing: the push still goes to that tenant.
                let _ = self.write_entry(&name, &entry);
            }
        }
    }

    /// The last `invalidatedAt` (ms) this device obeyed.
    pub fn last_invalidation(&self) -> Option<i64> {
        keys::read_ms(self.storage(), keys::LAST_INVALIDATION)
    }

    /// Remembers an invalidation as obeyed.
    pub fn set_last_invalidation(&self, invalidated_at: i64) -> Result<(), String> {
        self.storage().set(keys::LAST_INVALIDATION, &invalidated_at.to_string())
    }
}
