//! Starting a run: join the live one or take the lock and run the job on a thread of its own
//! (or, for the simulator, on the caller's).

use protocol::ops::audit as actions;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::auth::secrets::random_id;
use crate::rolling::checkpoints::Checkpoint;
use crate::state::AppState;
use crate::store::audit::{self, Actor};
use crate::store::StoreError;

use super::jobs::{self, JobContext};
use super::{runs, CronDef};

/// Returns the run id and whether that run was already going. A new run is audited with who
/// started it (a user, or the scheduler), and runs on a thread of its own.
pub fn trigger(state: &AppState, cron: &'static CronDef, actor: &Actor) -> Result<(String, bool), StoreError> {
    let (run_id, already) = start(state, cron, actor)?;
    if !already {
        let (state, id) = (state.clone(), run_id.clone());
        std::thread::spawn(move || execute(&state, cron, &id));
    }
    Ok((run_id, already))
}

/// As `trigger`, but a new run runs on the caller's thread and has finished when this returns:
/// the simulator's operator, whose steps must not depend on how the host schedules threads.
pub fn run_here(state: &AppState, cron: &'static CronDef, actor: &Actor) -> Result<(String, bool), StoreError> {
    let (run_id, already) = start(state, cron, actor)?;
    if !already {
        execute(state, cron, &run_id);
    }
    Ok((run_id, already))
}

/// Joins the live run of `cron`, or takes its lock for a new one (audited).
fn start(state: &AppState, cron: &'static CronDef, actor: &Actor) -> Result<(String, bool), StoreError> {
    let now = state.clock.now_ms();
    let new_id = random_id("run");
    state.store.transaction(|tx| {
        let (run_id, already) = runs::start_or_join(tx, cron.name, &new_id, &state.instance_id, now)?;
        if !already {
            audit::record(tx, actor, actions::CRON_RUN, serde_json::json!({"cron": cron.name, "runId": run_id}), now)?;
        }
        Ok::<_, StoreError>((run_id, already))
    })
}

/// Runs the job of run `id` and ends the run.
fn execute(state: &AppState, cron: &'static CronDef, id: &str) {
    let ctx = JobContext { state, run_id: id, cron: cron.name };
    let started = std::time::Instant::now();
    // A panicking job still ends its run (as failed) and releases the lock.
    let ok = catch_unwind(AssertUnwindSafe(|| jobs::run(cron.job, &ctx))).unwrap_or(false);
    state.test.checkpoints.pass_blocking(Checkpoint::BeforeFinish { cron: cron.name });
    crate::recorded::cron_run(cron.name, ok, started.elapsed().as_secs_f64());
    let now = state.clock.now_ms();
    if let Err(e) = state.store.transaction(|tx| runs::finish(tx, id, ok, now)) {
        tracing::error!("finishing run {id}: {}", crate::causes::chain(&StoreError(e)));
    }
}
