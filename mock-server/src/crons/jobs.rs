//! What each cron does, tenant by tenant: every tenant in its own transaction, so one tenant's
//! failure (say `all_dbs_active`) leaves nothing half-done and the others go on.

use protocol::ops::audit as actions;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::time::Duration;

use crate::causes::chain;
use crate::clock::DAY_MS;
use crate::rolling::checkpoints::Checkpoint;
use crate::rolling::rotate::TenantRotation;
use crate::rolling::warm::WarmOutcome;
use crate::rolling::{archive, backup, drop_eval, flags, invalidation, rotate, tenants, RollingError, RollingSettings};
use crate::state::AppState;
use crate::store::audit::{self, Actor};
use crate::store::{devices, refresh_tokens, StoreError};

use super::{runs, Job};

/// How long one batch of a cron may hold the store before it hands it to waiting requests.
const BATCH_HOLD: Duration = Duration::from_millis(25);

pub struct JobContext<'a> {
    pub state: &'a AppState,
    pub run_id: &'a str,
    /// The cron this run is of (it names the run's checkpoints).
    pub cron: &'static str,
}

impl JobContext<'_> {
    fn now(&self) -> i64 {
        self.state.clock.now_ms()
    }

    fn progress(&self, done: u64, total: u64, line: Option<&str>) {
        self.progress_lines(done, total, line.as_slice());
    }

    /// Records progress and log lines in one transaction (a batch's lines land together).
    fn progress_lines<S: AsRef<str>>(&self, done: u64, total: u64, lines: &[S]) {
        for line in lines {
            tracing::info!(run = self.run_id, "{}", line.as_ref());
        }
        let now = self.now();
        let recorded = self.state.store.transaction(|tx| {
            for line in lines {
                runs::append_log(tx, self.run_id, line.as_ref())?;
            }
            runs::progress(tx, self.run_id, done, total, None, now)
        });
        if let Err(e) = recorded {
            tracing::error!("recording progress of {}: {e}", self.run_id);
        }
    }

    /// Test control: a pause between tenants, so a test can stop the server mid-run.
    fn pause(&self) {
        let ms = self.state.test.step_delay_ms();
        if ms > 0 {
            std::thread::sleep(Duration::from_millis(ms));
        }
    }

    /// The tenants a run works on, or its failure logged (with the cause) when they cannot be read.
    fn listed(&self, cron: &str, listed: Result<Vec<String>, RollingError>) -> Option<Vec<String>> {
        match listed {
            Ok(ids) => {
                self.checkpoint(Checkpoint::Listed { cron: self.cron });
                Some(ids)
            }
            Err(e) => {
                let line = format!(
                    "{cron}: failed before any tenant, nothing changed: could not list the tenants: {}",
                    chain(&e)
                );
                tracing::error!(run = self.run_id, "{line}");
                self.progress(0, 0, Some(&line));
                None
            }
        }
    }

    /// The run passes a checkpoint (`rolling/checkpoints.rs`): a test may park it there.
    fn checkpoint(&self, at: Checkpoint<'_>) {
        self.state.test.checkpoints.pass_blocking(at);
    }

    fn settings(&self) -> RollingSettings {
        RollingSettings::from(&*self.state.settings)
    }

    /// Runs `step` for each tenant id, logging one line each and a summary line at the end (how
    /// many were done and how many failed). Tenants go in batches of `CRON_BATCH_SIZE`, one
    /// transaction a batch and a savepoint a tenant, so a failing tenant changes nothing of its
    /// own and the others land; between batches the store goes to waiting requests. A batch also
    /// ends once it has held the store for `BATCH_HOLD`: on the engine a tenant's step waits for
    /// HTTP round trips inside the transaction, and twenty of those would keep every request
    /// waiting for the better part of a second. `after` runs once a tenant's work is committed
    /// (closing its sockets, say), or with `None` once its step failed.
    fn per_tenant<T>(
        &self,
        ids: &[String],
        total: u64,
        step: impl Fn(&crate::docdb::Cluster, &tenants::Tenant, i64) -> Result<T, RollingError>,
        describe: impl Fn(&str, &T) -> String,
        after: impl Fn(&str, Option<&T>),
    ) -> bool {
        let (mut done, mut failed, mut position) = (0u64, 0u64, 0u64);
        let size = self.state.settings.cron_batch_size.max(1);
        let mut rest = ids;
        while !rest.is_empty() {
            self.pause();
            self.checkpoint(Checkpoint::BeforeTenant { cron: self.cron, tenant: &rest[0] });
            let now = self.now();
            let mut taken = 0;
            let outcomes = self.state.store.transaction(|tx| {
                let started = std::time::Instant::now();
                let mut outcomes = Vec::with_capacity(size.min(rest.len()));
                // The batch's tenants read together (a round trip each on PostgreSQL otherwise).
                let found = tenants::some(tx, &rest[..size.min(rest.len())])?;
                for id in rest.iter().take(size) {
                    // A cluster a tenant: what one knows of its handles goes with a rolled-back step.
                    let cluster = self.state.cluster(tx);
                    tx.batch_later("SAVEPOINT tenant")?;
                    let tenant =
                        found.iter().find(|t| t.id == *id).ok_or_else(|| RollingError::UnknownTenant(id.clone()));
                    let outcome = tenant.and_then(|tenant| step(&cluster, tenant, now));
                    tx.batch_later(if outcome.is_ok() {
                        "RELEASE tenant"
                    } else {
                        "ROLLBACK TO tenant; RELEASE tenant"
                    })?;
                    outcomes.push(outcome);
                    taken += 1;
                    if started.elapsed() >= BATCH_HOLD {
                        break;
                    }
                }
                Ok::<_, crate::store::sql::Error>(outcomes)
            });
            // A failed transaction landed nothing of the tenants it had taken (at least one).
            let batch = &rest[..taken.max(1)];
            rest = &rest[batch.len()..];
            if let Some(last) = batch.last() {
                self.checkpoint(Checkpoint::AfterTenant { cron: self.cron, tenant: last });
            }
            let outcomes: Vec<Result<T, String>> = match outcomes {
                Ok(outcomes) => outcomes.into_iter().map(|o| o.map_err(|e| chain(&e))).collect(),
                Err(e) => {
                    let told = chain(&StoreError(e));
                    batch.iter().map(|_| Err(told.clone())).collect()
                }
            };
            let mut lines = Vec::with_capacity(batch.len());
            for (id, outcome) in batch.iter().zip(outcomes) {
                lines.push(match outcome {
                    Ok(value) => {
                        done += 1;
                        after(id, Some(&value));
                        describe(id, &value)
                    }
                    Err(told) => {
                        failed += 1;
                        after(id, None);
                        format!("{id}: failed, nothing changed: {told}")
                    }
                });
            }
            position += batch.len() as u64;
            self.progress_lines(position, total, &lines);
        }
        self.progress(position, total, Some(&format!("summary: {done} tenant(s) done, {failed} failed")));
        failed == 0
    }
}

/// Every tenant id; a store failure is the run's failure, written to its log (never "0 tenants").
fn all_tenant_ids(ctx: &JobContext, cron: &str) -> Option<Vec<String>> {
    let listed = ctx
        .state
        .store
        .lock()
        .map_err(RollingError::from)
        .and_then(|conn| tenants::all(&conn))
        .map(|ts| ts.into_iter().map(|t| t.id).collect());
    ctx.listed(cron, listed)
}

fn describe_rotation(id: &str, r: &TenantRotation) -> String {
    if let Some(why) = &r.skipped {
        return format!("{id}: skipped: {why}");
    }
    let mut parts = Vec::new();
    match &r.warm {
        WarmOutcome::Created { docs } => {
            parts.push(format!("CORE warmed with {docs} STATIC documents (fresh revisions)"))
        }
        WarmOutcome::AlreadyExists => parts.push("CORE exists, warm is a no-op".to_owned()),
        WarmOutcome::CaughtUp { docs } => parts.push(format!(
            "CORE kept from before rollingDb was turned on again: caught up with {docs} STATIC documents of the legacy catalogue"
        )),
        WarmOutcome::NoLegacy => {}
    }
    if r.created_days.is_empty() {
        parts.push("day databases for today and tomorrow already exist".to_owned());
    } else {
        parts.push(format!("prewarmed {}", r.created_days.join(", ")));
    }
    if r.invalidated {
        parts.push("tenant invalidated: devices cut over to CORE at their next handshake".to_owned());
    }
    format!("{id}: {}", parts.join("; "))
}

/// The rotate cron: the rolling tenants' rotation, then the legacy tenants' daily invalidation.
fn rotate(ctx: &JobContext) -> bool {
    let Some((rotated, total, turned)) = rotate_rolling_tenants(ctx) else { return false };
    ctx.checkpoint(Checkpoint::BeforeDaily);
    let invalidated = invalidate_legacy_daily(ctx, total, &turned);
    rotated && invalidated
}

/// The `rotate-cycle`: each rolling-enabled tenant rotated in its own transaction.
/// Answers whether every tenant succeeded, the step count the daily invalidation ends, and the
/// tenants that were rolling at their turn (all listed, but those skipped).
fn rotate_rolling_tenants(ctx: &JobContext) -> Option<(bool, u64, BTreeSet<String>)> {
    let settings = ctx.settings();
    let listed = ctx.state.store.lock().map_err(RollingError::from).and_then(|conn| flags::rolling_tenants(&conn));
    let rolling = ctx.listed(super::ROTATE, listed)?;
    let total = rolling.len() as u64 + 1;
    let turned = RefCell::new(rolling.iter().cloned().collect::<BTreeSet<String>>());
    ctx.progress(0, total, Some(&format!("rotate-cycle {} tenant(s) rolling-enabled", rolling.len())));
    let room = ctx
        .state
        .store
        .lock()
        .map_err(crate::docdb::DocDbError::from)
        .and_then(|conn| crate::docdb::headroom::headroom(&conn, &rolling));
    match room {
        Ok(room) if !room.enough() => {
            let line = format!(
                "refused before any tenant, nothing changed: no headroom: the rotate keeps {} database(s) open and in use (CORE, today, tomorrow for each of {} tenant(s)), {} more are in use by other tenants, ROLLING_DB_MAX_OPEN={}; raise it first (a hard prerequisite of the rotate)",
                room.needed, rolling.len(), room.in_use_elsewhere, room.max
            );
            tracing::error!(run = ctx.run_id, "{line}");
            ctx.progress(0, total, Some(&line));
            return Some((false, total, turned.into_inner()));
        }
        Ok(_) => {}
        Err(e) => {
            ctx.progress(
                0,
                total,
                Some(&format!(
                    "refused before any tenant, nothing changed: the headroom could not be read: {}",
                    chain(&e)
                )),
            );
            return Some((false, total, turned.into_inner()));
        }
    }
    let rotate_one = |tx: &crate::docdb::Cluster, t: &tenants::Tenant, now: i64| {
        let r = rotate::rotate_tenant(tx, &settings, t, now)?;
        if r.invalidated {
            audit::record(
                tx,
                &Actor::system(super::ROTATE),
                actions::CLIENTS_INVALIDATE,
                serde_json::json!({"companyId": t.id, "reason": invalidation::REASON_CUTOVER}),
                now,
            )?;
        }
        Ok(r)
    };
    let after = |id: &str, r: Option<&TenantRotation>| {
        if r.is_some_and(|r| r.invalidated) {
            ctx.state.tenant_invalidated(id);
        }
        if r.is_some_and(|r| r.skipped.is_some()) {
            turned.borrow_mut().remove(id);
        }
    };
    let ok = ctx.per_tenant(&rolling, total, rotate_one, describe_rotation, after);
    Some((ok, total, turned.into_inner()))
}

/// Tenants without `rollingDb` keep the legacy behaviour: one invalidation a day
/// (`invalidate_daily`), the last step of the rotate cron; which tenants, `rotate::daily_tenants`
/// says from those rolling at their turn (`turned`).
fn invalidate_legacy_daily(ctx: &JobContext, total: u64, turned: &BTreeSet<String>) -> bool {
    let now = ctx.now();
    let daily = ctx.state.store.transaction(|tx| {
        let mut invalidated = Vec::new();
        // Read at once: a flag read a tenant held the store ~1 s at 10,000 tenants on PostgreSQL.
        for id in rotate::daily_tenants(tx, turned)? {
            if invalidation::invalidate_daily_if_due(tx, &id, now)? {
                invalidated.push(id);
            }
        }
        Ok::<_, RollingError>(invalidated)
    });
    for id in daily.iter().flatten() {
        ctx.state.tenant_invalidated(id);
    }
    let line = match &daily {
        Ok(ids) => format!("invalidate_daily: {} legacy tenant(s) invalidated", ids.len()),
        Err(e) => format!("invalidate_daily failed: {}", chain(e)),
    };
    ctx.progress(total, total, Some(&line));
    daily.is_ok()
}

fn archive(ctx: &JobContext) -> bool {
    let settings = ctx.settings();
    let Some(ids) = all_tenant_ids(ctx, super::ARCHIVE) else { return false };
    let total = ids.len() as u64;
    ctx.progress(0, total, Some(&format!("archive: {total} tenant(s)")));
    ctx.per_tenant(
        &ids,
        total,
        |tx, t, now| archive::archive_tenant(tx, &settings, t, now),
        |id, r| {
            format!(
                "{id}: drained [{}], archived [{}], still open [{}]{}{}{}{}{}",
                r.drained.join(", "),
                r.archived.join(", "),
                r.still_open.join(", "),
                match &r.still_routed {
                    Some(day) => format!(", still routed {day} (today's day database is missing: run the rotate)"),
                    None => String::new(),
                },
                if r.unreconciled.is_empty() {
                    String::new()
                } else {
                    format!(", NOT reconciled [{}]", r.unreconciled.join(", "))
                },
                if r.late.is_empty() {
                    String::new()
                } else {
                    format!(", late writes archived [{}]", r.late.join(", "))
                },
                if r.regressed.is_empty() {
                    String::new()
                } else {
                    format!(", REGRESSED since reconciled [{}]: roll back", r.regressed.join(", "))
                },
                match &r.legacy {
                    Some(l) if l.diff == 0 =>
                        format!("; legacy {}: {} closed order(s) and sale(s) archived, reconciled", l.db, l.documents),
                    Some(l) => format!(
                        "; legacy {}: {} closed order(s) and sale(s), NOT reconciled (diff {})",
                        l.db, l.documents, l.diff
                    ),
                    None => String::new(),
                }
            )
        },
        |_, _| {},
    )
}

fn backup(ctx: &JobContext) -> bool {
    let settings = ctx.settings();
    if !settings.backup_enabled {
        ctx.progress(0, 0, Some("backup: BACKUP_ENABLED is false, no snapshots taken"));
        return true;
    }
    if !backups_seen(ctx, "backup: no snapshot taken") {
        return false;
    }
    let Some(ids) = all_tenant_ids(ctx, super::BACKUP) else { return false };
    let total = ids.len() as u64;
    ctx.progress(
        0,
        total,
        Some(&format!(
            "backup: {total} tenant(s) into {}, the newest {} per database kept",
            settings.backup_dir.display(),
            backup::KEEP
        )),
    );
    let dir = settings.backup_dir.clone();
    ctx.per_tenant(
        &ids,
        total,
        |tx, t, now| backup::backup_tenant(tx, &dir, t, now),
        |id, r| {
            format!(
                "{id}: snapshots [{}], unchanged [{}], pruned [{}]",
                r.taken.join(", "),
                r.unchanged.join(", "),
                r.pruned.join(", ")
            )
        },
        |_, r| match r {
            Some(r) => crate::recorded::snapshots_taken(r.taken.len(), ctx.now()),
            None => crate::recorded::snapshot_failed(),
        },
    )
}

/// Whether this server sees its store's snapshots (`backup::unshared`); if not, the run's log and
/// the server's log say why, after `what`.
fn backups_seen(ctx: &JobContext, what: &str) -> bool {
    let dir = ctx.settings().backup_dir;
    match ctx.state.store.transaction(|tx| backup::unshared(tx, &dir)) {
        Ok(None) => true,
        Ok(Some(why)) => {
            tracing::warn!("{what}: {why}");
            ctx.progress(0, 0, Some(&format!("{what}: {why}")));
            false
        }
        Err(e) => {
            ctx.progress(0, 0, Some(&format!("{what}: the backup directory could not be checked: {}", chain(&e))));
            false
        }
    }
}

fn drop_eval(ctx: &JobContext) -> bool {
    let settings = ctx.settings();
    // Dropping needs the snapshots every server sees (the fourth lock, the restore).
    if settings.backup_enabled && !backups_seen(ctx, "drop-eval: nothing dropped") {
        return false;
    }
    let Some(ids) = all_tenant_ids(ctx, super::DROP_EVAL) else { return false };
    let total = ids.len() as u64;
    ctx.progress(0, total, Some(&format!("drop-eval: {total} tenant(s), TTL {} days", drop_eval::TTL_DAYS)));
    ctx.per_tenant(
        &ids,
        total,
        |tx, t, now| drop_eval::evaluate_tenant(tx, &settings, t, now),
        |id, r| match &r.skipped {
            Some(why) => format!("{id}: skipped ({why})"),
            None if r.dropped.is_empty() => format!("{id}: nothing eligible"),
            None => {
                let checks: Vec<String> = r
                    .after
                    .iter()
                    .map(|a| {
                        let gone = if a.gone_from_engine { "gone from the engine" } else { "STILL ON THE ENGINE" };
                        let replicator = if a.replicator_clean {
                            "replicator clean".to_owned()
                        } else {
                            format!("REPLICATIONS NAME IT [{}]", a.replications_naming_it.join(", "))
                        };
                        format!(
                            "{}: {gone}, {replicator}, relational store: {} order(s), {} sale(s)",
                            a.name, a.relational_orders, a.relational_sales
                        )
                    })
                    .collect();
                format!(
                    "{id}: dropped [{}] (their documents stay in the archive); after the drop: {}",
                    r.dropped.join(", "),
                    checks.join("; ")
                )
            }
        },
        |_, _| {},
    )
}

/// What the store would otherwise keep forever: spent and revoked refresh tokens, the history of
/// finished cron runs beyond the last few, devices unseen for months.
fn prune(ctx: &JobContext) -> bool {
    let now = ctx.now();
    ctx.progress(0, 3, Some("session-prune: expired sessions, old cron runs, long-unseen devices"));
    let result = ctx.state.store.transaction(|tx| {
        // Old failed sign-ins go with the sessions: both are the sign-in's bookkeeping.
        let tokens = refresh_tokens::prune(tx, now)?;
        crate::store::login_failures::prune(tx, now)?;
        let runs = runs::prune(tx, RUN_HISTORY)?;
        let devices = devices::prune_unseen(tx, now.saturating_sub(DEVICE_UNSEEN_DAYS * DAY_MS))?;
        Ok::<_, StoreError>((tokens, runs, devices))
    });
    let line = match &result {
        Ok((tokens, runs, devices)) => format!(
            "removed {tokens} expired or revoked refresh token(s), {runs} finished run(s) beyond the last {RUN_HISTORY} of each cron, {devices} device(s) unseen for {DEVICE_UNSEEN_DAYS} days"
        ),
        Err(e) => format!("session-prune failed, nothing removed: {}", chain(e)),
    };
    ctx.progress(3, 3, Some(&line));
    result.is_ok()
}

/// Finished runs kept per cron.
pub const RUN_HISTORY: u32 = 50;
/// A device not seen for this long is forgotten (it registers again when it comes back).
pub const DEVICE_UNSEEN_DAYS: i64 = 180;

pub fn run(job: Job, ctx: &JobContext) -> bool {
    match job {
        Job::Rotate => rotate(ctx),
        Job::DropEval => drop_eval(ctx),
        Job::Archive => archive(ctx),
        Job::Backup => backup(ctx),
        Job::Prune => prune(ctx),
    }
}
