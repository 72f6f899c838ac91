//! The document cluster's names as the operators' views carry them: a database's kind and a day
//! database's status (`PREWARMED → ACTIVE → DRAINED → ARCHIVED → DROPPED`).

named! {
    /// What a database of the cluster holds.
    pub enum DatabaseKind {
        /// The tenant's STATIC catalogue, warmed once per cutover.
        Core = "core",
        /// The tenant's database before its cutover, and a rollback's target.
        Legacy = "legacy",
        /// One calendar day's DYNAMIC documents.
        Day = "day",
        /// The archived copies of past day databases.
        Archive = "archive",
    }
}

named! {
    /// A day database's place in its lifecycle.
    pub enum DayStatus {
        /// Created ahead of its day by the rotate.
        Prewarmed = "PREWARMED",
        /// Its day: devices write it.
        Active = "ACTIVE",
        /// Past, with no open order left: nothing writes it any more.
        Drained = "DRAINED",
        /// Copied into the archive and the relational store, and reconciled.
        Archived = "ARCHIVED",
        /// Removed from the cluster (its documents stay in the archive).
        Dropped = "DROPPED",
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_serialise_as_written() {
        for &kind in DatabaseKind::ALL {
            assert_eq!(DatabaseKind::parse(kind.as_str()), Some(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        for &status in DayStatus::ALL {
            assert_eq!(DayStatus::parse(status.as_str()), Some(status));
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        assert_eq!((DatabaseKind::parse("Core"), DayStatus::parse("active")), (None, None));
    }
}
