//! Database names (the rollout's `{env}_{co}_{rest}`) and the calendar days they are keyed by (UTC, `yyyymmdd`).

use chrono::{DateTime, Days, NaiveDate};

use crate::docdb::Kind;

/// The day databases a tenant's devices see, kept in its CORE by the rotate.
pub const MANIFEST_ID: &str = "_local/day-manifest";

/// The documents the server writes into a tenant's databases under ids of its own: devices read
/// them through the proxy, never write them (design documents, the indexes, are refused apart).
pub const SERVER_OWNED: [&str; 1] = [MANIFEST_ID];

/// `{env}_{co}_{rest}`: the prefix every database of a tenant shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantNames {
    base: String,
}

impl TenantNames {
    pub fn new(env: &str, company_id: &str, store_code: &str) -> Self {
        TenantNames { base: format!("{env}_{company_id}_{store_code}") }
    }

    pub fn core(&self) -> String {
        format!("{}_core", self.base)
    }

    pub fn legacy(&self) -> String {
        format!("{}_catalog", self.base)
    }

    pub fn archive(&self) -> String {
        format!("{}_archive", self.base)
    }

    pub fn day(&self, day: &str) -> String {
        format!("daily_{}_{day}", self.base)
    }

    /// Which of this tenant's databases `db` is, if it is one.
    pub fn kind_of(&self, db: &str) -> Option<Kind> {
        split(db).filter(|(base, _)| *base == self.base).map(|(_, kind)| kind)
    }
}

/// A tenant's database name read back (the names `TenantNames` writes): its tenant prefix
/// (`{env}_{co}_{rest}`) and its kind; `None` for a name no tenant's database has.
pub fn split(db: &str) -> Option<(&str, Kind)> {
    if let Some((base, day)) = db.strip_prefix("daily_").and_then(|d| d.rsplit_once('_')) {
        if day.len() == 8 && parse(day).is_some() {
            return Some((base, Kind::Day));
        }
    }
    [("_core", Kind::Core), ("_catalog", Kind::Legacy), ("_archive", Kind::Archive)]
        .into_iter()
        .find_map(|(suffix, kind)| Some((db.strip_suffix(suffix)?, kind)))
}

/// The tenant prefix of a tenant's database name, or the name itself when it is none of a
/// tenant's kinds: what a tenant's databases are owned by among replicas.
pub fn tenant_of(db: &str) -> &str {
    split(db).map_or(db, |(base, _)| base)
}

const FORMAT: &str = "%Y%m%d";

/// The UTC day of `ms` since the epoch.
pub fn day_of(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms).unwrap_or_default().date_naive().format(FORMAT).to_string()
}

fn parse(day: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(day, FORMAT).ok()
}

pub fn next_day(day: &str) -> String {
    parse(day)
        .and_then(|d| d.checked_add_days(Days::new(1)))
        .map(|d| d.format(FORMAT).to_string())
        .unwrap_or_else(|| day.to_owned())
}

/// Whole days from `day` to the day of `now_ms` (0 for today).
pub fn age_days(day: &str, now_ms: i64) -> i64 {
    match (parse(day), parse(&day_of(now_ms))) {
        (Some(d), Some(today)) => (today - d).num_days(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docdb::is_legal_name;

    #[test]
    fn names_follow_the_naming_rule_and_are_couchdb_legal() {
        let n = TenantNames::new("staging", "acme", "main");
        assert_eq!(n.core(), "staging_acme_main_core");
        assert_eq!(n.legacy(), "staging_acme_main_catalog");
        assert_eq!(n.archive(), "staging_acme_main_archive");
        assert_eq!(n.day("20261121"), "daily_staging_acme_main_20261121");
        for name in [n.core(), n.legacy(), n.archive(), n.day("20261121")] {
            assert!(is_legal_name(&name), "{name}");
        }
    }

    #[test]
    fn a_name_tells_its_kind_only_for_its_own_tenant() {
        let n = TenantNames::new("dev", "acme", "main");
        assert_eq!(n.kind_of("dev_acme_main_core"), Some(Kind::Core));
        assert_eq!(n.kind_of("dev_acme_main_catalog"), Some(Kind::Legacy));
        assert_eq!(n.kind_of("dev_acme_main_archive"), Some(Kind::Archive));
        assert_eq!(n.kind_of("daily_dev_acme_main_20261121"), Some(Kind::Day));
        for other in [
            "dev_globex_main_core",
            "daily_dev_acme_main_2026112",
            "daily_dev_acme_main_20261399",
            "daily_dev_acme_mainx_20261121",
            "_users",
            "dev_acme_main_core2",
        ] {
            assert_eq!(n.kind_of(other), None, "{other}");
        }
    }

    #[test]
    fn a_tenants_databases_share_its_prefix() {
        let names = TenantNames::new("dev", "acme", "s1");
        for db in [names.core(), names.legacy(), names.archive(), names.day("20260101")] {
            assert_eq!(tenant_of(&db), "dev_acme_s1", "{db}");
        }
        assert_eq!(tenant_of("daily_dev_acme_s1_2026"), "daily_dev_acme_s1_2026");
        assert_eq!(tenant_of("other"), "other");
    }

    #[test]
    fn days() {
        let ms = 1_795_262_400_000; // 2026-11-21T12:00:00Z
        assert_eq!(day_of(ms), "20261121");
        assert_eq!(next_day("20261130"), "20261201");
        assert_eq!(next_day("20261231"), "20270101");
        assert_eq!(age_days("20261021", ms), 31);
        assert_eq!(age_days("20261121", ms), 0);
    }
}
