//! The device's local databases: one ledger in storage, shared by every tab and surviving a
//! reload, that says for each tracked database how to open it, where its writes go and whose
//! they are. Databases are destroyed at a login, a company change or an invalidation so one
//! tenant's offline data never reaches another; the ones that hold the device's writes are
//! pushed first (by whichever tab destroys), and what could not be pushed is counted and reported.

use crate::core::json;
use serde_json::{Map, Value};

use super::{InputError, Session};
use crate::core::keys::{self, HeaderKind};
use crate::core::ports::{PushPlan, PushReport, StorageError};

/// One database's line of the ledger (`serviceProxyToken-localDatabase:<name>`, its fields one a
/// line, empty for unknown; none of them holds a line break): how many times it was tracked (a track during its destruction
/// keeps it), its owner (the tenant whose data it holds; unknown: nothing is ever lent to it),
/// that tenant's routed day database, PouchDB's adapter (to open it again in any tab) and where
/// its writes go (`pushTo`: `"dynamic"`, `"=<database>"`, or none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Entry {
    /// How many times it was tracked.
    pub gen: i64,
    /// The tenant whose data it holds (`""`: unknown).
    pub owner: String,
    /// That tenant's routed day database (`""`: none known yet).
    pub dynamic_db: String,
    /// PouchDB's adapter (`""`: tracked by name).
    pub adapter: String,
    /// `"dynamic"`, `"=<database>"`, or `""`: not pushed.
    pub push_to: String,
}

impl Entry {
    fn read(text: &str) -> Option<Entry> {
        let fields: Vec<&str> = text.split('\n').collect();
        let [gen, owner, dynamic_db, adapter, push_to] = fields[..] else { return None };
        // A target it cannot read sends nothing (`push_target`): the documents are counted.
        let gen = gen.parse().ok().filter(|g| *g > 0)?;
        let own = str::to_owned;
        Some(Entry {
            gen,
            owner: own(owner),
            dynamic_db: own(dynamic_db),
            adapter: own(adapter),
            push_to: own(push_to),
        })
    }

    fn text(&self) -> String {
        [&self.gen.to_string(), "\n", &self.owner, "\n", &self.dynamic_db, "\n", &self.adapter, "\n", &self.push_to]
            .concat()
    }

    fn owner(&self) -> Option<&str> {
        Some(self.owner.as_str()).filter(|o| !o.is_empty())
    }
}

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
pub fn push_target(entry: &Entry) -> Option<&str> {
    match entry.push_to.as_str() {
        "dynamic" => Some(entry.dynamic_db.as_str()),
        to => to.strip_prefix('='),
    }
    .filter(|db| !db.is_empty())
}

/// The push target of a line that does not read: none, so its documents are only counted.
const UNREADABLE: &str = "?";

fn key(name: &str) -> String {
    [keys::LOCAL_DATABASE_PREFIX, name].concat()
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

    /// A database's line of the ledger (the default, `gen` 0, when it has none). A line that
    /// does not read is kept, as data of nobody known to be counted: never lent, never lost.
    pub fn ledger_entry(&self, name: &str) -> Entry {
        self.storage().get(&key(name)).map_or_else(Entry::default, |text| {
            Entry::read(&text).unwrap_or(Entry { gen: 1, push_to: UNREADABLE.into(), ..Entry::default() })
        })
    }

    fn write_entry(&self, name: &str, entry: &Entry) -> Result<(), StorageError> {
        self.storage().set(&key(name), &entry.text())
    }

    /// The tenant whose session stands in storage now.
    fn stored_company(&self) -> Option<String> {
        self.stored_token().and_then(|(_, c)| c.company_id())
    }

    /// The tenant of this tab's own session: the stored one, unless another tab changed it and
    /// this one has not followed yet (then unknown: its app may still write the previous
    /// tenant's data).
    fn own_company(&self) -> Option<String> {
        // The token this tab stands on is the stored one (any change elsewhere is followed soon).
        (self.storage().get(keys::AUTH) == self.adopted()).then(|| self.stored_company()).flatten()
    }

    /// Whose data tracked now is: once this tab's cleanup destroys (after the last push), the
    /// incoming tenant's (what is written then is the new session's); else this tab's session's.
    fn fresh_owner(&self) -> String {
        let memory = self.0.memory.borrow();
        let incoming = memory.incoming.clone().filter(|_| memory.destroying);
        drop(memory);
        incoming.or_else(|| self.own_company()).unwrap_or_default()
    }

    /// Records a local database in the ledger so a sign-out or invalidation pushes and destroys
    /// it; `adapter` and `push_to` (see [`Entry`]) say how to open and push it in any tab (`""`:
    /// as recorded before). The owner is the data's: a database already in the ledger keeps its
    /// owner (tracked while signed out too); tracked under a session of another tenant, the owner
    /// becomes unknown, so nothing is ever lent to data of two tenants. A new database, or one
    /// tracked again while this tab destroys it, holds fresh data (`fresh_owner`).
    pub fn track_local_database(&self, name: &str, adapter: &str, push_to: &str) -> Result<(), InputError> {
        if name.trim().is_empty() {
            return Err(InputError::EmptyName);
        }
        let mut entry = self.ledger_entry(name);
        if entry.gen == 0 || self.0.memory.borrow().destroying {
            // New, or tracked again while this tab destroys it: fresh data.
            entry.owner = self.fresh_owner();
            let routed = self.0.memory.borrow().routed.clone();
            entry.dynamic_db = routed.filter(|(c, _)| *c == entry.owner).map(|(_, db)| db).unwrap_or_default();
        } else if self.own_company().is_some_and(|c| Some(c.as_str()) != entry.owner()) {
            entry.owner.clear();
        }
        for (field, value) in [(&mut entry.adapter, adapter), (&mut entry.push_to, push_to)] {
            if !value.is_empty() {
                *field = value.to_owned();
            }
        }
        entry.gen = entry.gen.saturating_add(1);
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
        let plans = self.push_plans(new);
        if plans.is_empty() {
            return PushReport::default();
        }
        self.0.ports.local_databases.push(plans, self.0.config.hook_timeout_ms).await
    }

    fn push_plans(&self, new: Option<(&str, &Map<String, Value>)>) -> Vec<PushPlan> {
        let stored_headers = self.docdb_headers(HeaderKind::Remote);
        let stored_company = self.stored_company();
        let stored = stored_company.as_deref().zip(stored_headers.as_ref());
        let docdb = crate::core::url::join(self.base_url(), "docdb/");
        let mut plans = Vec::new();
        for name in self.tracked_local_databases() {
            let entry = self.ledger_entry(&name);
            if entry.push_to.is_empty() {
                continue;
            }
            let headers = push_headers(entry.owner(), new, stored);
            let to = push_target(&entry).zip(headers).map(|(db, h)| ([docdb.as_str(), db].concat(), h.clone()));
            plans.push(PushPlan { name, adapter: entry.adapter, to });
        }
        plans
    }

    /// Pushes (or counts), then destroys every tracked database (see [`Session::destroy_tracked`]).
    pub async fn destroy_all_local_databases(&self) -> DestroyReport {
        self.destroy_tracked(None, None).await
    }

    /// Destroys every tracked database, after a last push taken now (after any handlers): what a
    /// handler wrote is pushed or counted, never destroyed unseen. The ones that failed stay
    /// tracked for the next cleanup; one tracked again while it was destroyed stays tracked, as
    /// that track recorded it. Documents destroyed unpushed are logged and, with `why` (the SDK's
    /// own destruction, not the app's call), reported to the server (`losses`).
    pub async fn destroy_tracked(
        &self,
        new: Option<(&str, &Map<String, Value>)>,
        why: Option<crate::protocol::losses::LossReason>,
    ) -> DestroyReport {
        let push = self.push_tracked(new).await;
        let mut report = DestroyReport { destroyed: Vec::new(), failed: Vec::new(), push };
        let mut lost = Vec::new();
        self.0.memory.borrow_mut().destroying = true;
        for name in self.tracked_local_databases() {
            let before = self.ledger_entry(&name);
            match self.0.ports.local_databases.destroy(&name, &before.adapter).await {
                Ok(()) => {
                    self.destroyed(&name, &before, report.push.unpushed.get(&name), &mut lost);
                    report.destroyed.push(name);
                }
                Err(e) => {
                    self.reporter()
                        .error(&["session-broker: could not destroy local database \"", &name, "\": ", &e.0].concat());
                    report.failed.push(name);
                }
            }
        }
        self.0.memory.borrow_mut().destroying = false;
        // Re-read: a database may have been tracked while the deletions ran.
        let remaining: Vec<String> = self
            .tracked_local_databases()
            .into_iter()
            .filter(|n| !report.destroyed.contains(n) || self.ledger_entry(n).gen > 0)
            .collect();
        if let Err(e) = keys::write_string_list(self.storage(), keys::LOCAL_DATABASES, &remaining) {
            self.reporter().error(&["session-broker: could not update the local database list: ", &e.0].concat());
        }
        if let Some(why) = why {
            self.keep_loss_reports(why, lost);
            self.send_losses().await;
        }
        report
    }

    /// After `name` was destroyed: logs what was destroyed unpushed; forgets its line, unless it
    /// was tracked again meanwhile (its generation moved: that track recorded whose the fresh
    /// data is; absent, another tab's cleanup removed it).
    /// What was lost (more than none unpushed) joins `lost`: its tenant, the database, the count.
    fn destroyed(&self, name: &str, before: &Entry, unpushed: Option<&Value>, lost: &mut Vec<(String, String, Value)>) {
        let gen = before.gen;
        if let Some(owner) = unpushed
            .filter(|n| n.as_u64().is_some_and(|n| n > 0))
            .and(before.owner().map(str::to_owned).or_else(|| self.stored_company()))
        {
            lost.push((owner, name.to_owned(), unpushed.cloned().unwrap_or_default()));
        }
        if let Some(n) = unpushed {
            self.reporter().error(
                &[
                    "session-broker: ",
                    &json::stringify(n),
                    " document(s) of \"",
                    name,
                    "\" could not be pushed and were destroyed",
                ]
                .concat(),
            );
        }
        if self.ledger_entry(name).gen == gen {
            self.storage().remove(&key(name));
        }
    }

    /// The tenant a tracked database's data belongs to, when known.
    pub fn local_data_owner(&self, name: &str) -> Option<String> {
        self.ledger_entry(name).owner().map(str::to_owned)
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
            if entry.owner == company && entry.dynamic_db != dynamic_db {
                entry.dynamic_db = dynamic_db.to_owned();
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
    pub fn set_last_invalidation(&self, invalidated_at: i64) -> Result<(), StorageError> {
        self.storage().set(keys::LAST_INVALIDATION, &invalidated_at.to_string())
    }
}
