//! The operations crons: `rolling-db-rotate` (05:00), `rolling-db-drop-eval` (04:00),
//! `rolling-db-archive` (03:00, before the drop evaluation reads its result) and the mock
//! server's own housekeeping, `session-prune` (02:00), run on schedule
//! against the server clock or on demand. A run holds its cron's lock in the store, so two
//! server processes on one data file never run it twice.

pub mod cluster_lock;
pub mod jobs;
pub mod runner;
pub mod runs;
pub mod scheduler;

use chrono::{DateTime, Days, NaiveTime};
use protocol::ops::{self, CronSpec};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    Rotate,
    DropEval,
    Archive,
    Backup,
    Prune,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CronDef {
    /// Name and schedule, as the protocol defines them.
    pub spec: CronSpec,
    pub job: Job,
}

impl std::ops::Deref for CronDef {
    type Target = CronSpec;

    fn deref(&self) -> &CronSpec {
        &self.spec
    }
}

impl CronDef {
    /// `HH:MM` (UTC).
    pub fn schedule(&self) -> String {
        format!("{:02}:{:02}", self.hour, self.minute)
    }

    /// The first time after `after_ms` this cron is due.
    pub fn next_after(&self, after_ms: i64) -> i64 {
        let now = DateTime::from_timestamp_millis(after_ms).unwrap_or_default();
        let at = NaiveTime::from_hms_opt(self.hour, self.minute, 0).unwrap_or_default();
        let today = now.date_naive().and_time(at).and_utc();
        let next = if today.timestamp_millis() > after_ms {
            today
        } else {
            today.checked_add_days(Days::new(1)).unwrap_or(today)
        };
        next.timestamp_millis()
    }
}

pub use protocol::ops::{
    CRON_ARCHIVE as ARCHIVE, CRON_BACKUP as BACKUP, CRON_DROP_EVAL as DROP_EVAL, CRON_PRUNE as PRUNE,
    CRON_ROTATE as ROTATE,
};

/// Whether the scheduler runs this cron (a run on demand is always possible): the archive only
/// with `AUTO_ARCHIVE_ENABLED`, the backup only with `BACKUP_ENABLED`.
pub fn is_scheduled(cron: &CronDef, settings: &crate::settings::Settings) -> bool {
    match cron.job {
        Job::Archive => settings.auto_archive_enabled,
        Job::Backup => settings.backup_enabled,
        _ => true,
    }
}

const fn def(spec: CronSpec, job: Job) -> CronDef {
    CronDef { spec, job }
}

/// The protocol's crons (names and schedules live there) with the job each runs.
pub const CRONS: [CronDef; 5] = [
    def(ops::CRONS[0], Job::Rotate),
    def(ops::CRONS[1], Job::DropEval),
    def(ops::CRONS[2], Job::Archive),
    def(ops::CRONS[3], Job::Backup),
    def(ops::CRONS[4], Job::Prune),
];

pub fn find(name: &str) -> Option<&'static CronDef> {
    CRONS.iter().find(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_run_is_the_next_occurrence() {
        let rotate = find(ROTATE).unwrap();
        let four_am = 1_795_233_600_000; // 2026-11-21T04:00:00Z
        assert_eq!(rotate.next_after(four_am), four_am + 3_600_000);
        assert_eq!(
            rotate.next_after(four_am + 3_600_000),
            four_am + 3_600_000 + 86_400_000,
            "exactly at 05:00: the next day"
        );
        assert_eq!(rotate.schedule(), "05:00");
        assert!(find("nope").is_none());
        let jobs: Vec<(&str, Job)> = CRONS.iter().map(|c| (c.name, c.job)).collect();
        assert_eq!(
            jobs,
            [
                (ROTATE, Job::Rotate),
                (DROP_EVAL, Job::DropEval),
                (ARCHIVE, Job::Archive),
                (BACKUP, Job::Backup),
                (PRUNE, Job::Prune)
            ],
            "each name runs its job"
        );
    }
}
