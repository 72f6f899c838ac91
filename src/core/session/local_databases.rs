//! The device's local databases: tracked by name in storage, destroyed at a login, a company
//! change or an invalidation so one tenant's offline data never reaches another.

use crate::core::json;
use serde_json::Value;

use super::{InputError, Session};
use crate::core::keys;

/// What `destroyLocalDatabases` did, database by database.
#[derive(Debug, Clone, PartialEq)]
pub struct DestroyReport {
    /// Databases destroyed.
    pub destroyed: Vec<String>,
    /// Databases that could not be destroyed (kept in the tracked list for the next try).
    pub failed: Vec<String>,
}

impl DestroyReport {
    /// The JS shape `{destroyed, failed}`.
    pub fn to_value(&self) -> Value {
        json::object([("destroyed", self.destroyed.clone().into()), ("failed", self.failed.clone().into())])
    }
}

impl Session {
    /// The local databases this session created (the tenant's offline data).
    pub fn tracked_local_databases(&self) -> Vec<String> {
        keys::read_string_list(self.storage(), keys::LOCAL_DATABASES)
    }

    /// Records a local database so a sign-out or invalidation destroys it.
    pub fn track_local_database(&self, name: &str) -> Result<(), InputError> {
        if name.trim().is_empty() {
            return Err(InputError::EmptyName);
        }
        let mut names = self.tracked_local_databases();
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
            keys::write_string_list(self.storage(), keys::LOCAL_DATABASES, &names).map_err(InputError::Storage)?;
        }
        Ok(())
    }

    /// Destroys every tracked database; the ones that failed stay tracked for the next cleanup.
    pub async fn destroy_all_local_databases(&self) -> DestroyReport {
        let mut report = DestroyReport { destroyed: Vec::new(), failed: Vec::new() };
        for name in self.tracked_local_databases() {
            match self.0.ports.local_databases.destroy(&name).await {
                Ok(()) => report.destroyed.push(name),
                Err(e) => {
                    self.reporter().error(&["session-broker: could not destroy local database \"", &name, "\": ", &e].concat());
                    report.failed.push(name);
                }
            }
        }
        // Re-read: a database may have been tracked while the deletions ran.
        let remaining: Vec<String> = self.tracked_local_databases().into_iter().filter(|n| !report.destroyed.contains(n)).collect();
        if let Err(e) = keys::write_string_list(self.storage(), keys::LOCAL_DATABASES, &remaining) {
            self.reporter().error(&["session-broker: could not update the local database list: ", &e].concat());
        }
        report
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
