//! The device's local databases: tracked by name in storage, destroyed at a login, a company
//! change or an invalidation so one tenant's offline data never reaches another; the ones that
//! hold the device's writes are pushed first, and what could not be pushed is reported.

use crate::core::json;
use serde_json::Value;

use super::{InputError, Session};
use crate::core::keys::{self, HeaderKind};
use crate::core::ports::{PushReport, PushTo};

/// A field of the local data's owner record (`[companyId, dynamicDb]` in storage): the tenant
/// whose session tracked the first of the tracked databases, and its routed day database. It
/// lives as long as something is tracked, outliving the session like the list, so that the next
/// login can still push that data when it is of the same tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The tenant.
    Company,
    /// Its routed day database (empty: not known yet).
    DynamicDb,
}

/// What `destroyAllLocalDatabases` did, database by database.
#[derive(Debug, Clone, PartialEq)]
pub struct DestroyReport {
    /// Databases destroyed.
    pub destroyed: Vec<String>,
    /// Databases that could not be destroyed (kept in the tracked list for the next try).
    pub failed: Vec<String>,
    /// The final push before it.
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

impl Session {
    /// The local databases this session created (the tenant's offline data).
    pub fn tracked_local_databases(&self) -> Vec<String> {
        keys::read_string_list(self.storage(), keys::LOCAL_DATABASES)
    }

    /// Records a local database so a sign-out or invalidation destroys it. The first one also
    /// records whose the data is (see [`Owner`]); one tracked under another tenant's session (or
    /// none) beside data of a recorded tenant makes the owner unknown, so nothing is ever lent.
    pub fn track_local_database(&self, name: &str) -> Result<(), InputError> {
        if name.trim().is_empty() {
            return Err(InputError::EmptyName);
        }
        let mut names = self.tracked_local_databases();
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
            keys::write_string_list(self.storage(), keys::LOCAL_DATABASES, &names).map_err(InputError::Storage)?;
        }
        let company = self.stored_token().and_then(|(_, c)| c.company_id());
        match (self.local_data_owner(Owner::Company), company) {
            (None, Some(company)) if names.len() == 1 => {
                let routed = self.0.memory.borrow().routed.clone().filter(|(c, _)| *c == company);
                self.write_owner(&company, routed.map(|(_, db)| db).unwrap_or_default());
            }
            (Some(owner), company) if Some(&owner) != company.as_ref() => self.storage().remove(keys::LOCAL_DATA_OWNER),
            _ => {}
        }
        Ok(())
    }

    /// The SDK's final push of the tracked databases marked `pushTo`, with the Remote headers
    /// stored now (the cleanups store the ones their case allows first), each bounded by
    /// `hookTimeoutMs`. Without headers nothing is sent, and what is not pushed is counted.
    pub async fn push_tracked(&self) -> PushReport {
        let to = self.docdb_headers(HeaderKind::Remote).map(|headers| PushTo {
            docdb: crate::core::url::join(self.base_url(), "docdb/"),
            dynamic_db: self.local_data_owner(Owner::DynamicDb),
            headers,
        });
        self.0.ports.local_databases.push(&self.tracked_local_databases(), to, self.0.config.hook_timeout_ms).await
    }

    /// Pushes, then destroys every tracked database (see [`Session::destroy_tracked`]).
    pub async fn destroy_all_local_databases(&self) -> DestroyReport {
        let push = self.push_tracked().await;
        self.destroy_tracked(push).await
    }

    /// Destroys every tracked database after the push `push`; the ones that failed stay tracked
    /// for the next cleanup. Documents destroyed unpushed are logged, never silent.
    pub async fn destroy_tracked(&self, push: PushReport) -> DestroyReport {
        let mut report = DestroyReport { destroyed: Vec::new(), failed: Vec::new(), push };
        for name in self.tracked_local_databases() {
            match self.0.ports.local_databases.destroy(&name).await {
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
        let remaining: Vec<String> =
            self.tracked_local_databases().into_iter().filter(|n| !report.destroyed.contains(n)).collect();
        if let Err(e) = keys::write_string_list(self.storage(), keys::LOCAL_DATABASES, &remaining) {
            self.reporter().error(&["session-broker: could not update the local database list: ", &e].concat());
        }
        if remaining.is_empty() {
            self.storage().remove(keys::LOCAL_DATA_OWNER);
        }
        report
    }

    /// The tenant the tracked data belongs to (`Owner::Company`) or its routed day database.
    pub fn local_data_owner(&self, field: Owner) -> Option<String> {
        keys::read_string_list(self.storage(), keys::LOCAL_DATA_OWNER)
            .into_iter()
            .nth(field as usize)
            .filter(|s| !s.is_empty())
    }

    /// A realtime `ready`'s routing: remembered for the data tracked from now on, and recorded
    /// with the tracked data when it is the same tenant's.
    pub fn note_routing(&self, company: &str, dynamic_db: &str) {
        self.0.memory.borrow_mut().routed = Some((company.to_owned(), dynamic_db.to_owned()));
        if self.local_data_owner(Owner::Company).as_deref() == Some(company) {
            self.write_owner(company, dynamic_db.to_owned());
        }
    }

    fn write_owner(&self, company: &str, dynamic_db: String) {
        // A refused write leaves the owner unknown (or as it was): nothing more is ever lent.
        let _ = keys::write_string_list(self.storage(), keys::LOCAL_DATA_OWNER, &[company.to_owned(), dynamic_db]);
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
