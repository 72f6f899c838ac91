//! One run: the world built from a seed, its steps applied one after another (each SDK step then
//! running on beside the later ones), the invariants checked after each, then the world left to
//! settle on a healed network and the end's invariants checked. Everything runs on one thread of
//! a tokio runtime whose clock is paused: time moves only when nothing is ready to run, so a run
//! is the same run each time its seed is given. A failing run is shrunk to the fewest of its
//! steps that still fail.

use std::collections::BTreeMap;

use serde_json::Value;
use session_broker::core::keys;

use super::check;
use super::env::{Config, Env, SimClock};
use super::ops::{generate, Step};
use super::world::World;

/// Where a run's clock starts: an ordinary morning, and before midnight at a month's, a year's and
/// a leap February's end.
const STARTS: [&str; 4] =
    ["2026-11-26T09:30:00Z", "2026-12-31T23:40:00Z", "2027-01-31T23:20:00Z", "2028-02-28T23:45:00Z"];

pub struct Outcome {
    pub violations: Vec<String>,
    pub trace: Vec<String>,
    pub reached: BTreeMap<&'static str, u32>,
    /// Every `METHOD /path` the server was sent.
    pub routes: std::collections::BTreeSet<String>,
}

impl Outcome {
    pub fn failed(&self) -> bool {
        !self.violations.is_empty()
    }
}

/// The steps of `seed`, all of them or those at `keep`.
pub fn steps_of(seed: u64, n: usize, keep: Option<&[usize]>) -> Vec<Step> {
    let all = generate(seed, n);
    match keep {
        Some(keep) => keep.iter().filter_map(|&i| all.get(i).copied()).collect(),
        None => all,
    }
}

/// Runs `steps` in the world of `seed`.
pub fn run(seed: u64, steps: &[Step]) -> Outcome {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("a runtime");
    let local = tokio::task::LocalSet::new();
    let start = chrono::DateTime::parse_from_rfc3339(STARTS[(seed % STARTS.len() as u64) as usize])
        .expect("a start")
        .timestamp_millis();
    local.block_on(&rt, async {
        let env = Env::new(seed, start, Config::default());
        let mut world = World::new(env.clone()).await;
        for (i, step) in steps.iter().enumerate() {
            SimClock::sleep(step.gap_ms).await;
            world.apply(step.op).await;
            // Whatever this instant set going runs before the check.
            SimClock::sleep(1).await;
            check::after_step(&mut world).await;
            if i % 8 == 7 {
                check::views(&mut world).await;
            }
            if env.hist.failed() {
                break;
            }
        }
        if !env.hist.failed() {
            settle(&mut world).await;
        }
        let outcome = Outcome {
            violations: env.hist.violations.borrow().clone(),
            trace: env.hist.trace.borrow().clone(),
            reached: env.hist.reached.borrow().clone(),
            routes: env.server.seen.borrow().clone(),
        };
        stop(&world);
        outcome
    })
}

/// The end: the faults healed, time enough for every timeout, retry and hook's bound, then what
/// must have happened by now.
async fn settle(w: &mut World) {
    let env = w.env.clone();
    for br in w.browsers.iter().flatten() {
        br.shared.net.heal();
        br.shared.refuse_writes.set(0);
        if br.shared.key.mode.get() == super::browser::KeyMode::Failing {
            br.shared.key.mode.set(super::browser::KeyMode::Ok);
        }
    }
    SimClock::sleep(120_000).await;
    check::after_step(w).await;
    for br in w.browsers.iter().flatten() {
        for tab in br.tabs.iter().filter(|t| t.busy()) {
            env.hist.violate(
                env.now(),
                check::SETTLES,
                format!(
                    "an operation in browser {} tab {} is still running two minutes after the last step",
                    br.shared.id, tab.slot
                ),
            );
        }
    }
    check::settled_handshakes(w);
    send_kept_reports(w).await;
    check::losses_never_overcounted(w, true).await;
    devices_listed_and_deletable(w).await;
    check::views(w).await;
}

/// Each user browser still keeping loss reports signs in to each of their tenants (the SDK
/// sends a tenant's reports with a session of it), so every report could be sent.
async fn send_kept_reports(w: &mut World) {
    for round in 0..3 {
        let mut any = false;
        for b in 0..2 {
            let Some(br) = w.browser(b) else { continue };
            let kept = br.shared.truth.borrow().get(keys::LOSSES).cloned();
            let tenants: Vec<String> = kept
                .and_then(|k| serde_json::from_str::<Vec<Value>>(&k).ok())
                .unwrap_or_default()
                .iter()
                .filter_map(|r| r["companyId"].as_str().map(str::to_owned))
                .collect();
            for tenant in tenants {
                any = true;
                let user = if tenant == "acme" { 0 } else { 2 };
                w.apply(super::ops::Op::Login { b, t: 0, user }).await;
                SimClock::sleep(60_000).await;
            }
        }
        if !any {
            break;
        }
        w.env.hist.note(w.env.now(), format!("reports kept after round {round}"));
    }
}

async fn devices_listed_and_deletable(w: &mut World) {
    let env = w.env.clone();
    for b in 0..2 {
        let Some(br) = w.browser(b) else { continue };
        // The app's token, refreshed when it has run out.
        let token = br.tabs[0].session.get_token().await;
        let device = br.shared.truth.borrow().get(keys::DEVICE_ID).cloned();
        let (Some(token), Some(device)) = (token, device) else { continue };
        let sid = super::history::History::sid_of_jwt(&token).unwrap_or_default();
        if env.server.session_state(&sid) != mock_server::store::refresh_tokens::SessionState::Live
            || !env.server.devices_of_session(&sid).contains(&device)
        {
            continue;
        }
        let list = env.server.handle("GET", "/devices", Some(&token), &[], None).await;
        let listed =
            list.json()["devices"].as_array().is_some_and(|d| d.iter().any(|x| x["deviceId"] == device.as_str()));
        if !listed {
            env.hist.violate(
                env.now(),
                check::DEVICES_LISTED,
                format!("device {device} of browser {b} not listed: {}", list.body),
            );
        }
        let deleted = env.server.handle("DELETE", &format!("/devices/{device}"), Some(&token), &[], None).await;
        if deleted.status != 200 {
            env.hist.violate(
                env.now(),
                check::DEVICES_LISTED,
                format!("device {device}: its user's deletion answered {}", deleted.status),
            );
        } else {
            env.hist.reach("devices listed and deleted by their user");
        }
    }
}

/// Ends every task of the world (a run leaves nothing behind).
fn stop(w: &World) {
    for br in w.browsers.iter().flatten() {
        for tab in &br.tabs {
            tab.stop(&br.shared);
        }
    }
}

/// The fewest of `steps` that still break a rule (the same rule, where the first failure names
/// one): halves, then quarters, … down to single steps, each dropped while the run still fails.
pub fn shrink(seed: u64, steps: &[Step], rule: &str) -> Vec<usize> {
    let mut keep: Vec<usize> = (0..steps.len()).collect();
    let fails = |keep: &[usize]| {
        let chosen: Vec<Step> = keep.iter().map(|&i| steps[i]).collect();
        let out = run(seed, &chosen);
        out.violations.iter().any(|v| v.contains(rule))
    };
    let mut chunk = keep.len() / 2;
    while chunk >= 1 {
        let mut at = 0;
        while at < keep.len() {
            let candidate: Vec<usize> =
                keep.iter().enumerate().filter(|(i, _)| *i < at || *i >= at + chunk).map(|(_, s)| *s).collect();
            if !candidate.is_empty() && fails(&candidate) {
                keep = candidate;
            } else {
                at += chunk;
            }
        }
        chunk /= 2;
    }
    keep
}

/// The rule a violation names (`[time] rule: detail`).
pub fn rule_of(violation: &str) -> &str {
    violation.split_once("] ").map_or(violation, |(_, r)| r).split(": ").next().unwrap_or(violation)
}
