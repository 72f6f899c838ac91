//! The schedule: every second, each cron whose time has come on the server clock is triggered
//! (once, however far a test moves the clock), then set to its next occurrence.

use std::time::Duration;

use super::{runner, CRONS};
use crate::state::AppState;
use crate::store::audit::Actor;

pub fn start(state: AppState) -> tokio::task::JoinHandle<()> {
    let now = state.clock.now_ms();
    for cron in &CRONS {
        state.schedule.set(cron.name, cron.next_after(now));
    }
    let plan: Vec<String> = CRONS.iter().map(|c| format!("{} {}", c.name, c.schedule())).collect();
    tracing::info!("day-db-cron scheduled: {} (UTC, server clock)", plan.join(", "));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            let now = state.clock.now_ms();
            for cron in &CRONS {
                if state.schedule.get(cron.name).is_some_and(|due| now >= due) {
                    state.schedule.set(cron.name, cron.next_after(now));
                    if !super::is_scheduled(cron, &state.settings) {
                        tracing::info!("{}: skipped, switched off by its setting", cron.name);
                        continue;
                    }
                    match runner::trigger(&state, cron, &Actor::system("scheduler")) {
                        Ok((run, _)) => tracing::info!("{} started on schedule as {run}", cron.name),
                        Err(e) => tracing::error!("{} could not start: {e:?}", cron.name),
                    }
                }
            }
        }
    })
}
