//! The document cluster's names as the operators' views carry them: a database's kind and a day
//! database's status (`PREWARMED → ACTIVE → DRAINED → ARCHIVED → DROPPED`).

use serde::{Deserialize, Serialize};

/// What a database of the cluster holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum DatabaseKind {
    /// The tenant's STATIC catalogue, warmed once per cutover.
    Core,
    /// The tenant's database before its cutover, and a rollback's target.
    Legacy,
    /// One calendar day's DYNAMIC documents.
    Day,
    /// The archived copies of past day databases.
    Archive,
}

impl DatabaseKind {
    /// Every kind.
    pub const ALL: [DatabaseKind; 4] =
        [DatabaseKind::Core, DatabaseKind::Legacy, DatabaseKind::Day, DatabaseKind::Archive];

    /// The kind's name on the wire and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            DatabaseKind::Core => "core",
            DatabaseKind::Legacy => "legacy",
            DatabaseKind::Day => "day",
            DatabaseKind::Archive => "archive",
        }
    }

    /// The kind named `s`, if any.
    pub fn parse(s: &str) -> Option<DatabaseKind> {
        DatabaseKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A day database's place in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum DayStatus {
    /// Created ahead of its day by the rotate.
    Prewarmed,
    /// Its day: devices write it.
    Active,
    /// Past, with no open order left: nothing writes it any more.
    Drained,
    /// Copied into the archive and the relational store, and reconciled.
    Archived,
    /// Removed from the cluster (its documents stay in the archive).
    Dropped,
}

impl DayStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [DayStatus; 5] =
        [DayStatus::Prewarmed, DayStatus::Active, DayStatus::Drained, DayStatus::Archived, DayStatus::Dropped];

    /// The status's name on the wire and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            DayStatus::Prewarmed => "PREWARMED",
            DayStatus::Active => "ACTIVE",
            DayStatus::Drained => "DRAINED",
            DayStatus::Archived => "ARCHIVED",
            DayStatus::Dropped => "DROPPED",
        }
    }

    /// The status named `s`, if any.
    pub fn parse(s: &str) -> Option<DayStatus> {
        DayStatus::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_serialise_as_written() {
        for kind in DatabaseKind::ALL {
            assert_eq!(DatabaseKind::parse(kind.as_str()), Some(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        for status in DayStatus::ALL {
            assert_eq!(DayStatus::parse(status.as_str()), Some(status));
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        assert_eq!((DatabaseKind::parse("Core"), DayStatus::parse("active")), (None, None));
    }
}
