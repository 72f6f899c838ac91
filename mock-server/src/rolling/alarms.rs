//! The rollback alarms (docs/operations.md, guard rails): what calls for an immediate rollback ("a
//! destructive reset of a device database or loss of orders or payments observed"), seen by the
//! server and raised on the tenant until the rollback (`rollingDb` off) clears them.
//!
//! - A destructive reset: a registered device comes back, in the session it obeyed in, with less
//!   than it had obeyed (its `lastInvalidation` gone or older), so it re-bootstraps though no
//!   invalidation asked it to. A login in between explains it: a login's cleanup destroys the
//!   device's local data and forgets the invalidation it obeyed, as it must.
//! - A reconciliation regression: an archived day lost what its archive took (a document gone
//!   from the day, a row gone from the relational store). Writes the day received after its
//!   archive are no loss: the next archive run takes them.
//!
//! Once the tenant is rolled back, no alarm tells it to roll back again: a loss an archive run
//! still finds in an archived day is `archived-day-lost`, which asks for the day's restore from
//! its snapshot and clears when an archive run finds the day whole.
//!
//! Beside them, one alarm that asks for the rotate, not a rollback: a device routed to CORE found
//! no day database for today (no rotate since midnight). Its writes go to the tenant's latest day
//! database meanwhile (`days::routed_day`); the rotate that creates today's clears it.

use crate::store::sql::{params, Connection, OptionalExtension};

use super::RollingResult;

/// What an alarm tells the operator to do.
pub const INSTRUCTION: &str =
    "Roll back now (docs/operations.md, guard rails): set rollingDbDrop false, then rollingDb false, and invalidate the tenant's clients; the alarm clears when rollingDb is off";

/// What a device's loss tells the operator to do on a tenant the rollback does not apply to (not on
/// the rolling database, or rolled back already).
pub const LOSS_INSTRUCTION: &str =
    "Recover the lost orders (docs/operations.md, device losses): the tenant is not on the rolling database, so no rollback applies; each alarm names the device, what destroyed its data and the documents by local database: have the store re-enter them from its receipts, then acknowledge the reports you recovered (the console's Acknowledge on the tenant's row lists them; POST /admin/rolling-db/tenants/{id}/losses/acknowledge with their ids), which clears the alarm";

/// What the day-database alarm tells the operator to do.
pub const ROTATE_INSTRUCTION: &str =
    "Run the rotate now (rolling-db-rotate, POST /admin/crons/rolling-db-rotate/run): today's day database is missing, so devices write to the latest one until it exists; the alarm clears when the rotate creates it";

/// What the alarm of a day still lost after the rollback tells the operator to do.
pub const RESTORE_INSTRUCTION: &str =
    "Restore the day from its snapshot (docs/operations.md, guard rails): the tenant is rolled back already; run mock-server restore <day database> (its newest verified snapshot, or --snapshot ID) to put back what the day's archive took; the alarm clears when the next archive run finds the day whole";

/// Why a tenant needs attention.
pub use protocol::views::AlarmKind as Kind;
pub use protocol::views::{Attention, AttentionStep, OperatorStep as Step, RollbackAlarm as Alarm};

/// Each step's headline (the console's badge) and its whole text (the banner), which begins with
/// the headline: the one place the operators' words are written.
pub fn words(step: Step) -> (&'static str, &'static str) {
    match step {
        Step::RollBack => ("Roll back now", INSTRUCTION),
        Step::RestoreDay => ("Restore the day from its snapshot", RESTORE_INSTRUCTION),
        Step::RunRotate => ("Run the rotate now", ROTATE_INSTRUCTION),
        Step::RecoverOrders => ("Recover the lost orders", LOSS_INSTRUCTION),
    }
}

/// Raises an alarm unless the same one (kind and subject) is already raised. Answers whether it
/// is new.
pub fn raise(
    conn: &Connection,
    company_id: &str,
    kind: Kind,
    subject: &str,
    detail: &str,
    now_ms: i64,
) -> RollingResult<bool> {
    let open: i64 = conn.query_row(
        "SELECT COUNT(*) FROM guard_alarms WHERE company_id = ?1 AND kind = ?2 AND subject = ?3 AND cleared_at IS NULL",
        params![company_id, kind.as_str(), subject],
        |r| r.get(0),
    )?;
    if open > 0 {
        return Ok(false);
    }
    conn.execute(
        "INSERT INTO guard_alarms (company_id, kind, subject, detail, raised_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![company_id, kind.as_str(), subject, detail, now_ms],
    )?;
    tracing::warn!(tenant = company_id, kind = kind.as_str(), subject, "rollback alarm: {detail}");
    Ok(true)
}

/// The tenant of an open alarm of `kind` about `subject`, if one is raised.
pub fn open_about(conn: &Connection, kind: Kind, subject: &str) -> RollingResult<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT company_id FROM guard_alarms WHERE kind = ?1 AND subject = ?2 AND cleared_at IS NULL LIMIT 1",
            params![kind.as_str(), subject],
            |r| r.get(0),
        )
        .optional()?)
}

/// The tenant's raised alarms, oldest first.
pub fn open(conn: &Connection, company_id: &str) -> RollingResult<Vec<Alarm>> {
    let mut stmt = conn.prepare("SELECT kind, subject, detail, raised_at FROM guard_alarms WHERE company_id = ?1 AND cleared_at IS NULL ORDER BY id")?;
    let rows = stmt.query_map([company_id], |r| {
        Ok(Alarm {
            kind: r.get_named(0, "alarm kind", Kind::parse)?,
            subject: r.get(1)?,
            detail: r.get(2)?,
            raised_at: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<crate::store::sql::Result<_>>()?)
}

/// Alarms by kind: (kind, raised ever, raised and not cleared). Rows are kept when cleared, so
/// the first number only grows.
pub fn counts(conn: &Connection) -> RollingResult<Vec<(String, u64, u64)>> {
    let mut stmt = conn.prepare("SELECT kind, COUNT(*), SUM(CASE WHEN cleared_at IS NULL THEN 1 ELSE 0 END) FROM guard_alarms GROUP BY kind ORDER BY kind")?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64, r.get::<_, Option<i64>>(2)?.unwrap_or(0).max(0) as u64))
    })?;
    Ok(rows.collect::<crate::store::sql::Result<_>>()?)
}

/// Every tenant with a raised alarm.
pub fn tenants_needing_attention(conn: &Connection) -> RollingResult<Vec<String>> {
    let mut stmt =
        conn.prepare("SELECT DISTINCT company_id FROM guard_alarms WHERE cleared_at IS NULL ORDER BY company_id")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<crate::store::sql::Result<_>>()?)
}

/// The tenant's open alarms of `kind` are cleared (what they saw is over: the rotate created the
/// day), kept with the time. Sent with the transaction's next statement (a rotate's every tenant
/// runs it).
pub fn clear_kind(conn: &Connection, company_id: &str, kind: Kind, now_ms: i64) -> RollingResult<()> {
    conn.execute_later(
        "UPDATE guard_alarms SET cleared_at = ?3 WHERE company_id = ?1 AND kind = ?2 AND cleared_at IS NULL",
        params![company_id, kind.as_str(), now_ms],
    )?;
    Ok(())
}

/// The tenant's open alarms of `kind` are cleared now (an operator's acknowledgement); answers how
/// many.
pub fn clear_kind_now(conn: &Connection, company_id: &str, kind: Kind, now_ms: i64) -> RollingResult<usize> {
    Ok(conn.execute(
        "UPDATE guard_alarms SET cleared_at = ?3 WHERE company_id = ?1 AND kind = ?2 AND cleared_at IS NULL",
        params![company_id, kind.as_str(), now_ms],
    )?)
}

/// The alarm of `kind` about `subject` is cleared if open (what it saw is over).
pub fn clear_one(conn: &Connection, company_id: &str, kind: Kind, subject: &str, now_ms: i64) -> RollingResult<()> {
    conn.execute(
        "UPDATE guard_alarms SET cleared_at = ?4 WHERE company_id = ?1 AND kind = ?2 AND subject = ?3 AND cleared_at IS NULL",
        params![company_id, kind.as_str(), subject, now_ms],
    )?;
    Ok(())
}

/// The kind of alarm an archived day's loss raises: a rolling tenant rolls back; a tenant rolled
/// back already restores the day.
pub fn day_loss_kind(rolling_db: bool) -> Kind {
    if rolling_db {
        Kind::ReconciliationRegressed
    } else {
        Kind::ArchivedDayLost
    }
}

/// The rollback happened: the tenant's alarms are cleared (kept, with the time, for the record).
pub fn clear(conn: &Connection, company_id: &str, now_ms: i64) -> RollingResult<usize> {
    // The devices' losses are the rollback's to answer too.
    crate::store::device_losses::resolve(conn, company_id, now_ms)?;
    Ok(conn.execute(
        "UPDATE guard_alarms SET cleared_at = ?2 WHERE company_id = ?1 AND cleared_at IS NULL",
        params![company_id, now_ms],
    )?)
}

/// The `attention` of a tenant for the views: `null`, or its alarms with the instruction.
pub fn attention(conn: &Connection, company_id: &str) -> RollingResult<Option<Attention>> {
    let alarms = open(conn, company_id)?;
    if alarms.is_empty() {
        return Ok(None);
    }
    let rolling = super::flags::get(conn, company_id).map(|f| f.rolling_db).unwrap_or(false);
    Ok(with_instruction(alarms, rolling))
}

/// The steps the alarms ask for on a tenant with `rolling_db` as given, most urgent first: the
/// rollback when any calls for it (a device's loss on a rolling tenant too), the restore when a
/// day is still lost after it, the rotate when one asks for it, the recovery of a device's lost
/// orders when the tenant is not on the rolling database (no rollback applies there).
pub fn steps(kinds: &[Kind], rolling_db: bool) -> Vec<Step> {
    let asks = |kind: Kind| kinds.contains(&kind);
    let loss = asks(Kind::DeviceDataLost);
    let rollback = asks(Kind::DestructiveReset) || asks(Kind::ReconciliationRegressed) || (loss && rolling_db);
    [
        (rollback, Step::RollBack),
        (asks(Kind::ArchivedDayLost), Step::RestoreDay),
        (asks(Kind::DayDatabaseMissing), Step::RunRotate),
        (loss && !rolling_db, Step::RecoverOrders),
    ]
    .into_iter()
    .filter_map(|(applies, step)| applies.then_some(step))
    .collect()
}

/// Alarms with what to do about them, in words and by step.
fn with_instruction(alarms: Vec<Alarm>, rolling: bool) -> Option<Attention> {
    let kinds: Vec<Kind> = alarms.iter().map(|a| a.kind).collect();
    let steps: Vec<AttentionStep> = steps(&kinds, rolling)
        .into_iter()
        .map(|step| {
            let (headline, text) = words(step);
            AttentionStep { step, headline: headline.to_owned(), text: text.to_owned() }
        })
        .collect();
    if steps.is_empty() {
        return None;
    }
    let instruction = steps.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ");
    Some(Attention { alarms, instruction, steps })
}

/// A registered device's handshake in session `session_id`: compares what it says it obeyed with
/// what it obeyed before in the same session, and remembers what it will have obeyed after this
/// handshake (`will_obey`: the invalidation sent to it now, if any), and in which session.
/// Answers whether this was a destructive reset (alarm raised).
pub fn device_handshake(
    conn: &Connection,
    company_id: &str,
    device_id: &str,
    session_id: Option<&str>,
    reported: Option<i64>,
    will_obey: Option<i64>,
    now_ms: i64,
) -> RollingResult<bool> {
    let before: Option<i64> = conn
        .query_row(
            "SELECT obeyed FROM guard_device_marks WHERE device_id = ?1 AND company_id = ?2",
            params![device_id, company_id],
            |r| r.get(0),
        )
        .optional()?;
    let marked_in: Option<String> = conn
        .query_row("SELECT session_id FROM guard_device_mark_sessions WHERE device_id = ?1", params![device_id], |r| {
            r.get(0)
        })
        .optional()?;
    // A mark from another session: a login came in between, whose cleanup explains the loss.
    let same_session = match (marked_in.as_deref(), session_id) {
        (Some(marked), Some(now)) => marked == now,
        _ => true,
    };
    let reset = same_session && before.is_some_and(|obeyed| reported.is_none_or(|r| r < obeyed));
    if reset {
        let had = before.unwrap_or_default();
        let said = reported.map_or_else(|| "none".to_owned(), |r| r.to_string());
        let detail = format!(
            "device {device_id} had obeyed the invalidation of {had} and now reports {said}: its local database was reset though no invalidation asked for it (a destructive reset)"
        );
        raise(conn, company_id, Kind::DestructiveReset, device_id, &detail, now_ms)?;
    }
    if let Some(obeyed) = will_obey.or(reported) {
        conn.execute(
            "INSERT INTO guard_device_marks (device_id, company_id, obeyed, updated_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(device_id) DO UPDATE SET company_id = ?2, obeyed = ?3, updated_at = ?4",
            params![device_id, company_id, obeyed, now_ms],
        )?;
    }
    if let Some(session_id) = session_id {
        conn.execute(
            "INSERT INTO guard_device_mark_sessions (device_id, session_id) VALUES (?1, ?2)
             ON CONFLICT(device_id) DO UPDATE SET session_id = ?2",
            params![device_id, session_id],
        )?;
    }
    Ok(reset)
}

/// `user_id` made another company active: each of their devices drops its local data at its next
/// refresh (the SDK's company-change cleanup), as asked, so what they were seen obeying before no
/// longer tells a loss. Without this, a change to another company and back in one session read
/// as a destructive reset.
pub fn company_changed(conn: &Connection, user_id: &str) -> RollingResult<()> {
    conn.execute(
        "DELETE FROM guard_device_marks WHERE device_id IN (SELECT id FROM devices WHERE user_id = ?1)",
        params![user_id],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> rusqlite::Connection {
        crate::store::test_connection(crate::store::schema::GUARDS)
    }

    #[test]
    fn a_device_coming_back_with_less_than_it_obeyed_is_a_destructive_reset() {
        let c = conn();
        // First sight: nothing to compare with; it is sent the invalidation of 100.
        let s1 = Some("s1");
        assert!(!device_handshake(&c, "acme", "d1", s1, None, Some(100), 1).unwrap());
        // It obeyed: reports 100, nothing new sent.
        assert!(!device_handshake(&c, "acme", "d1", s1, Some(100), None, 2).unwrap());
        assert!(open(&c, "acme").unwrap().is_empty());
        // Its storage is wiped: it reports nothing.
        assert!(device_handshake(&c, "acme", "d1", s1, None, Some(100), 3).unwrap());
        // Again: the same alarm is not raised twice.
        assert!(device_handshake(&c, "acme", "d1", s1, Some(50), Some(100), 4).unwrap());
        let alarms = open(&c, "acme").unwrap();
        assert_eq!(alarms.len(), 1);
        assert_eq!((alarms[0].kind.as_str(), alarms[0].subject.as_str()), ("destructive-reset", "d1"));
        assert_eq!(tenants_needing_attention(&c).unwrap(), ["acme"]);
        assert!(attention(&c, "acme").unwrap().unwrap().instruction.starts_with("Roll back now"));
        // A new invalidation that it obeys is no reset.
        assert!(!device_handshake(&c, "acme", "d1", s1, Some(100), Some(200), 5).unwrap());
        assert!(!device_handshake(&c, "acme", "d1", s1, Some(200), None, 6).unwrap());
        assert_eq!(clear(&c, "acme", 7).unwrap(), 1);
        assert!(attention(&c, "acme").unwrap().is_none());
    }

    #[test]
    fn a_missing_day_asks_for_the_rotate_and_only_the_rotate_clears_it() {
        let c = conn();
        assert!(raise(&c, "acme", Kind::DayDatabaseMissing, "daily_x", "missing", 1).unwrap());
        assert!(!raise(&c, "acme", Kind::DayDatabaseMissing, "daily_x", "missing", 2).unwrap(), "raised once");
        assert!(attention(&c, "acme").unwrap().unwrap().instruction.starts_with("Run the rotate"));
        // With a rollback alarm beside it, the rollback comes first.
        raise(&c, "acme", Kind::DestructiveReset, "d1", "reset", 3).unwrap();
        let both = attention(&c, "acme").unwrap().unwrap().instruction;
        assert!(both.starts_with("Roll back now") && both.contains("Run the rotate"), "{both}");
        clear_kind(&c, "acme", Kind::DayDatabaseMissing, 4).unwrap();
        let left = open(&c, "acme").unwrap();
        assert_eq!(left.iter().map(|a| a.kind).collect::<Vec<_>>(), [Kind::DestructiveReset]);
        assert!(attention(&c, "acme").unwrap().unwrap().instruction.starts_with("Roll back now"));
    }

    #[test]
    fn a_day_lost_after_the_rollback_asks_for_its_restore_never_the_rollback() {
        let c = conn();
        assert_eq!(day_loss_kind(true), Kind::ReconciliationRegressed);
        assert_eq!(day_loss_kind(false), Kind::ArchivedDayLost);
        raise(&c, "acme", day_loss_kind(false), "daily_x", "lost", 1).unwrap();
        let told = attention(&c, "acme").unwrap().unwrap().instruction;
        assert!(told.starts_with("Restore the day") && !told.contains("Roll back"), "{told}");
        raise(&c, "acme", Kind::DayDatabaseMissing, "daily_y", "missing", 2).unwrap();
        let both = attention(&c, "acme").unwrap().unwrap().instruction;
        assert!(both.starts_with("Restore the day") && both.contains("Run the rotate"), "{both}");
        clear_one(&c, "acme", Kind::ArchivedDayLost, "daily_other", 3).unwrap();
        assert_eq!(open(&c, "acme").unwrap().len(), 2, "another day's clearing leaves it");
        clear_one(&c, "acme", Kind::ArchivedDayLost, "daily_x", 4).unwrap();
        assert_eq!(open(&c, "acme").unwrap().iter().map(|a| a.kind).collect::<Vec<_>>(), [Kind::DayDatabaseMissing]);
    }

    /// What the operators are told, for each flag and each set of alarms a tenant may carry at
    /// once: a device's loss asks for the rollback on a rolling tenant and for the recovery
    /// elsewhere, never both, beside whatever else is raised.
    #[test]
    fn one_instruction_for_every_flag_and_set_of_alarms() {
        use Kind::*;
        use Step::*;
        let table: &[(bool, &[Kind], &[Step])] = &[
            (false, &[], &[]),
            (true, &[], &[]),
            (false, &[DeviceDataLost], &[RecoverOrders]),
            (true, &[DeviceDataLost], &[RollBack]),
            (true, &[DeviceDataLost, DayDatabaseMissing], &[RollBack, RunRotate]),
            (true, &[DayDatabaseMissing], &[RunRotate]),
            (true, &[DestructiveReset, DeviceDataLost], &[RollBack]),
            (false, &[DestructiveReset, DeviceDataLost], &[RollBack, RecoverOrders]),
            (false, &[ArchivedDayLost, DeviceDataLost], &[RestoreDay, RecoverOrders]),
            (true, &[ReconciliationRegressed, DayDatabaseMissing, DeviceDataLost], &[RollBack, RunRotate]),
            (false, &[ArchivedDayLost], &[RestoreDay]),
        ];
        for (rolling, kinds, expected) in table {
            assert_eq!(steps(kinds, *rolling), *expected, "rollingDb {rolling}, {kinds:?}");
            let alarms = kinds
                .iter()
                .map(|&kind| Alarm { kind, subject: "s".into(), detail: "d".into(), raised_at: 1 })
                .collect();
            let Some(told) = with_instruction(alarms, *rolling) else {
                assert!(expected.is_empty(), "rollingDb {rolling}, {kinds:?}: nothing told");
                continue;
            };
            assert_eq!(told.steps.iter().map(|s| s.step).collect::<Vec<_>>(), *expected);
            let texts: Vec<&str> = told.steps.iter().map(|s| s.text.as_str()).collect();
            assert_eq!(told.instruction, texts.join(" "), "the banner is the steps, in order");
            assert_eq!(told.instruction.contains("Roll back"), expected.contains(&RollBack), "{}", told.instruction);
        }
        for &step in Step::ALL {
            let (headline, text) = words(step);
            assert!(text.starts_with(headline), "{step:?}: the text begins with the badge's words");
        }
    }

    #[test]
    fn a_login_between_two_handshakes_explains_the_loss() {
        let c = conn();
        assert!(!device_handshake(&c, "acme", "d1", Some("s1"), None, Some(100), 1).unwrap());
        assert!(!device_handshake(&c, "acme", "d1", Some("s1"), Some(100), None, 2).unwrap());
        // The same user (or another) logs in again: the cleanup forgot what it obeyed.
        assert!(!device_handshake(&c, "acme", "d1", Some("s2"), None, Some(100), 3).unwrap());
        assert!(!device_handshake(&c, "acme", "d1", Some("s2"), Some(100), None, 4).unwrap());
        assert!(open(&c, "acme").unwrap().is_empty());
        // Within one session, it still is a destructive reset.
        assert!(device_handshake(&c, "acme", "d1", Some("s2"), None, Some(100), 5).unwrap());
    }
}
