//! The rollout's operations racing, against the real server: a generated starting state (tenants
//! with `rollingDb` and `rollingDbDrop`, CORE warmed or not, kept from before a rollback or not,
//! devices registered and cut over), then one long operation (the rotate, the drop evaluation, a
//! re-warm, a rollback) stopped at a generated checkpoint (`src/rolling/checkpoints.rs`, where the
//! server hands the store back), one or two other operations run there (a flag on or off, an
//! invalidation, a device's handshake, a second operator's same operation), then released.
//!
//! The outcome is held to `tests/model/races.rs`: the points the server passed, every answer, each
//! tenant's flags, CORE, day databases, routing and latest invalidation, what the run's log says
//! each tenant's turn decided, the audit (each operator's act once), and then every device's
//! handshake (its routing, never another tenant's database, no alarm for what operators asked).
//!
//! A failing case shrinks and prints itself (replayable with `replay`). `RACE_CASES` runs more
//! (`make soak`); `PROPTEST_RNG_SEED` replays a run.

mod common;
mod model;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::{histories, ws, Server};
use mock_server::rolling::checkpoints::{self as cp, Checkpoint};
use mock_server::settings::Settings;
use model::races::{
    not_serial, Answer, FlagsAnswer, Long, Outcome, Point, Race, Racer, Request, TenantState, Turn, DROP_EVAL, ROTATE,
    SERVER_TENANTS,
};
use model::{HandshakeAnswer, Invalidation, Model, Op, Reason, Routing, BROWSER_SDKS, TENANTS, USERS};
use proptest::prelude::*;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};

const START: &str = "2026-11-26T09:30:00Z";

// What the races reached, over a run: a generator that never stops an operation where the rules
// bite tests nothing, so the run fails unless each of these happened.
const REACHED_NAMES: [&str; 8] = [
    "operations stopped at their point",
    "rotate turns skipped (rollingDb off by then)",
    "cutovers by a stopped rotate",
    "day invalidations of a tenant turned on after the listing",
    "second triggers joining a stopped run",
    "rollbacks reporting what they leave in CORE",
    "handshakes while an operation was stopped",
    "drop evaluations of a tenant with rollingDbDrop on",
];

/// Which of `REACHED_NAMES` one race reached, from the model's account of it.
fn reached(case: &Case, before: &Race, want: &Outcome) -> [bool; 8] {
    let stopped = want.passed.contains(&case.park);
    let turns: &[(&str, Turn)] = match &want.long {
        Answer::Run(turns) => turns,
        _ => &[],
    };
    let listed = |t: usize| turns.iter().any(|(id, _)| *id == TENANTS[t]);
    let turned_on_late = case.long == Long::Rotate
        && case.park != Point::BeforeFinish(ROTATE)
        && case.racers.iter().any(|r| matches!(r, Racer::SetRolling { tenant, on: true } if !before.model.tenants[*tenant].rolling && !listed(*tenant)));
    let rollback_cost =
        |a: &Answer| matches!(a, Answer::Rollback(Ok((false, _, Some(_))), _) | Answer::Flags(Ok((false, _, Some(_)))));
    [
        stopped,
        stopped && turns.iter().any(|(_, t)| *t == Turn::Skipped) && case.long == Long::Rotate,
        stopped && turns.iter().any(|(_, t)| *t == Turn::Rotated { cutover: true }),
        stopped && turned_on_late,
        want.racers.contains(&Answer::Joined),
        std::iter::once(&want.long).chain(&want.racers).any(rollback_cost),
        stopped && case.racers.iter().any(|r| matches!(r, Racer::Handshake { .. })),
        turns.iter().any(|(_, t)| *t == Turn::NothingEligible),
    ]
}

/// The state a race starts from, reached one operation at a time.
#[derive(Debug, Clone)]
struct Start {
    /// Per browser: the user signed in there (registered, handshaken), if any.
    users: [Option<usize>; 3],
    rolling: [bool; 2],
    /// A rotate after the flags (CORE warmed, devices cut over at their next handshake).
    rotated: bool,
    /// `rollingDb` turned off and on again after that rotate: CORE kept from before, stale.
    reenabled: [bool; 2],
    drop: [bool; 2],
}

#[derive(Debug, Clone)]
struct Case {
    start: Start,
    long: Long,
    /// Where it stops: one of `long.points()`.
    park: Point,
    racers: Vec<Racer>,
}

fn start() -> impl Strategy<Value = Start> {
    let user = proptest::option::weighted(0.8, 0..USERS.len());
    (
        [user.clone(), user.clone(), user],
        any::<[bool; 2]>(),
        proptest::bool::weighted(0.7),
        proptest::array::uniform2(proptest::bool::weighted(0.2)),
        any::<[bool; 2]>(),
    )
        .prop_map(|(users, rolling, rotated, reenabled, drop)| Start { users, rolling, rotated, reenabled, drop })
}

fn long() -> impl Strategy<Value = Long> {
    let tenant = 0..TENANTS.len();
    prop_oneof![
        4 => Just(Long::Rotate),
        2 => Just(Long::DropEval),
        2 => (tenant.clone(), any::<bool>()).prop_map(|(tenant, invalidate)| Long::Rewarm { tenant, invalidate }),
        2 => tenant.prop_map(|tenant| Long::Rollback { tenant }),
    ]
}

fn racer() -> impl Strategy<Value = Racer> {
    let tenant = 0..TENANTS.len();
    prop_oneof![
        4 => (tenant.clone(), any::<bool>()).prop_map(|(tenant, on)| Racer::SetRolling { tenant, on }),
        2 => (tenant.clone(), any::<bool>()).prop_map(|(tenant, on)| Racer::SetDrop { tenant, on }),
        2 => tenant.clone().prop_map(|tenant| Racer::Invalidate { tenant }),
        1 => (tenant, any::<bool>()).prop_map(|(tenant, invalidate)| Racer::Rewarm { tenant, invalidate }),
        2 => (0..BROWSER_SDKS.len()).prop_map(|browser| Racer::Handshake { browser }),
        1 => Just(Racer::Again),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (start(), long(), proptest::collection::vec(racer(), 1..=2)).prop_flat_map(|(start, long, racers)| {
        proptest::sample::select(long.points()).prop_map(move |park| Case {
            start: start.clone(),
            long,
            park,
            racers: racers.clone(),
        })
    })
}

/// The model's name of a server's checkpoint (`None`: one no race stops at, another cron's).
fn point(at: &Checkpoint<'_>) -> Option<Point> {
    let tenant = |t: &str| SERVER_TENANTS.into_iter().find(|s| *s == t);
    let cron = |c: &str| [ROTATE, DROP_EVAL].into_iter().find(|s| *s == c);
    let request = |r: &cp::Request| match r {
        cp::Request::Flags => Request::Flags,
        cp::Request::Invalidate => Request::Invalidate,
        cp::Request::Rewarm => Request::Rewarm,
    };
    Some(match at {
        Checkpoint::Listed { cron: c } => Point::Listed(cron(c)?),
        Checkpoint::BeforeTenant { cron: c, tenant: t } => Point::BeforeTenant(cron(c)?, tenant(t)?),
        Checkpoint::AfterTenant { cron: c, tenant: t } => Point::AfterTenant(cron(c)?, tenant(t)?),
        Checkpoint::BeforeDaily => Point::BeforeDaily,
        Checkpoint::BeforeFinish { cron: c } => Point::BeforeFinish(cron(c)?),
        Checkpoint::Before { request: r, tenant: t } => Point::Before(request(r), tenant(t)?),
        Checkpoint::Committed { request: r, tenant: t } => Point::Committed(request(r), tenant(t)?),
    })
}

/// What the hook shares with the test: whether it records, where to stop, what it passed, and
/// the stopped operation's gate.
#[derive(Default)]
struct Parking {
    recording: bool,
    target: Option<Point>,
    passed: Vec<Point>,
    release: Option<oneshot::Sender<()>>,
}

/// A race's server, its admin and its browsers' sessions.
struct Fleet {
    server: Arc<Server>,
    admin: String,
    parking: Arc<Mutex<Parking>>,
    parked: Arc<Notify>,
    /// Per browser: its access token and its device's id.
    sessions: Vec<Option<(String, String)>>,
}

impl Fleet {
    async fn new(start_ms: i64) -> Fleet {
        let settings = Settings {
            test_controls: true,
            auth_rate_per_min: 1_000_000,
            auth_rate_burst: 1_000_000,
            // A transaction a tenant: a checkpoint before and after each.
            cron_batch_size: 1,
            ..Settings::default()
        };
        let server = Arc::new(common::spawn_with(settings).await);
        server.state.clock.freeze_at(start_ms);
        let (parking, parked) = (Arc::new(Mutex::new(Parking::default())), Arc::new(Notify::new()));
        let (p, n) = (parking.clone(), parked.clone());
        let installed = server.state.test.checkpoints.install(Box::new(move |at| {
            let at = point(at)?;
            let mut p = p.lock().unwrap();
            if !p.recording {
                return None;
            }
            p.passed.push(at);
            if p.target != Some(at) {
                return None;
            }
            p.target = None;
            let (release, gate) = oneshot::channel();
            p.release = Some(release);
            n.notify_one();
            Some(gate)
        }));
        assert!(installed, "a new server has no hook");
        let admin = server.token("admin").await;
        Fleet { server, admin, parking, parked, sessions: vec![None; BROWSER_SDKS.len()] }
    }

    async fn login(&mut self, m: &mut Model, browser: usize, user: usize) -> Result<(), String> {
        let token = str_of(&self.server.login(USERS[user].0).await, "token")?;
        let a = self.server.post("/auth/connect", Some(&token), json!({"sdkVersion": BROWSER_SDKS[browser]})).await;
        self.sessions[browser] = Some((token, str_of(&a.body, "deviceId")?));
        m.apply(Op::Login { browser, user });
        m.apply(Op::Register { browser });
        Ok(())
    }

    /// The browser's handshake, held to the model's (the model's answer is returned).
    async fn handshake(&self, m: &mut Model, browser: usize) -> Result<HandshakeAnswer, String> {
        let reported = m.browsers[browser].obeyed;
        let got = self.hello(m, browser, reported).await?;
        let want = m.handshake(browser, false);
        if got != want {
            return Err(format!("browser {browser}'s handshake: the server answered {got:?}, the model {want:?}"));
        }
        Ok(got)
    }

    /// The browser's handshake reporting the invalidation its local data `reported` (a browser
    /// nobody signed in on answers as refused); the ready never names another tenant's database.
    async fn hello(&self, m: &Model, browser: usize, reported: Option<i64>) -> Result<HandshakeAnswer, String> {
        let (Some((token, device)), Some(session)) = (&self.sessions[browser], m.browsers[browser].session) else {
            return Ok(HandshakeAnswer::Refused);
        };
        let got = hello(&self.server, token, device, BROWSER_SDKS[browser], reported).await?;
        let own = format!("_{}_", TENANTS[session.tenant]);
        if let HandshakeAnswer::Ready { static_db, dynamic_db, .. } = &got {
            if !static_db.contains(&own) || !dynamic_db.contains(&own) {
                return Err(format!("a device was routed to another tenant's database: {got:?}"));
            }
        }
        Ok(got)
    }

    async fn flags(&self, tenant: usize, body: Value) -> FlagsAnswer {
        let a = self
            .server
            .patch(&format!("/admin/rolling-db/flags/{}?force=true", TENANTS[tenant]), Some(&self.admin), body)
            .await;
        if a.status != StatusCode::OK {
            return Err(code_of(&a.body));
        }
        let b = &a.body;
        Ok((
            b["rollingDb"].as_bool().unwrap_or_default(),
            b["rollingDbDrop"].as_bool().unwrap_or_default(),
            b["coreWrittenSinceWarm"]["count"].as_u64(),
        ))
    }

    async fn invalidate(&self, tenant: usize) -> i64 {
        self.server.invalidate(&self.admin, TENANTS[tenant]).await
    }

    async fn rewarm(&self, tenant: usize, invalidate: bool) -> Answer {
        let path = format!("/admin/rolling-db/tenants/{}/rewarm", TENANTS[tenant]);
        let a = self.server.post(&path, Some(&self.admin), json!({"invalidate": invalidate})).await;
        Answer::Rewarm(match a.status {
            StatusCode::OK => Ok(a.body["invalidatedAt"].as_i64()),
            _ => Err(code_of(&a.body)),
        })
    }

    async fn rollback(&self, tenant: usize) -> Answer {
        let flags = self.flags(tenant, json!({"rollingDb": false})).await;
        Answer::Rollback(flags, self.invalidate(tenant).await)
    }

    /// Starts a cron run: its id, and whether it joined a running one.
    async fn trigger(&self, cron: &str) -> Result<(String, bool), String> {
        let a = self.server.post(&format!("/admin/crons/{cron}/run"), Some(&self.admin), json!({})).await;
        if a.status != StatusCode::ACCEPTED {
            return Err(format!("the {cron} trigger answered {} {}", a.status, a.body));
        }
        Ok((str_of(&a.body, "runId")?, a.body["alreadyRunning"].as_bool().unwrap_or_default()))
    }

    /// A finished run's turns, read from its log: per tenant, what its turn decided.
    async fn turns(&self, cron: &'static str, run_id: &str) -> Result<Answer, String> {
        let run = self.server.wait_run(&self.admin, run_id).await;
        if run["status"] != "succeeded" {
            return Err(format!("the {cron} run did not succeed: {run}"));
        }
        let mut turns = Vec::new();
        for line in run["log"].as_array().ok_or("a run without its log")?.iter().filter_map(Value::as_str) {
            let Some((tenant, said)) =
                SERVER_TENANTS.iter().find_map(|t| Some((*t, line.strip_prefix(&format!("{t}: "))?)))
            else {
                continue;
            };
            let turn = match cron {
                ROTATE if said.starts_with("skipped:") => Turn::Skipped,
                ROTATE => Turn::Rotated { cutover: said.contains("tenant invalidated") },
                _ if said.starts_with("skipped (rollingDbDrop is off)") => Turn::Skipped,
                _ if said == "nothing eligible" => Turn::NothingEligible,
                _ => return Err(format!("a drop evaluation's line the model does not know: {line}")),
            };
            turns.push((tenant, turn));
        }
        Ok(Answer::Run(turns))
    }

    /// The long operation, whole (it stops where the hook stops it).
    async fn long(self: Arc<Self>, long: Long) -> Result<Answer, String> {
        match long {
            Long::Rotate | Long::DropEval => {
                let cron = if long == Long::Rotate { ROTATE } else { DROP_EVAL };
                let (run, _) = self.trigger(cron).await?;
                self.turns(cron, &run).await
            }
            Long::Rewarm { tenant, invalidate } => Ok(self.rewarm(tenant, invalidate).await),
            Long::Rollback { tenant } => Ok(self.rollback(tenant).await),
        }
    }

    /// One of the others, while the long operation is `stopped` (or after it, when it never was);
    /// `devices` is what each device's local data obeyed, as it goes.
    async fn race(&self, devices: &mut Model, long: Long, stopped: bool, racer: Racer) -> Result<Answer, String> {
        Ok(match racer {
            Racer::SetRolling { tenant, on } => Answer::Flags(self.flags(tenant, json!({"rollingDb": on})).await),
            Racer::SetDrop { tenant, on } => Answer::Flags(self.flags(tenant, json!({"rollingDbDrop": on})).await),
            Racer::Invalidate { tenant } => Answer::Invalidated(self.invalidate(tenant).await),
            Racer::Rewarm { tenant, invalidate } => self.rewarm(tenant, invalidate).await,
            Racer::Handshake { browser } => {
                let got = self.hello(devices, browser, devices.browsers[browser].obeyed).await?;
                // The device obeys what it was sent, as the SDK does.
                if let HandshakeAnswer::Ready { invalidate: Some((at, _)), .. } = &got {
                    devices.browsers[browser].obeyed = Some(*at);
                }
                Answer::Handshake(got)
            }
            Racer::Again => match long {
                Long::Rotate | Long::DropEval => {
                    let cron = if long == Long::Rotate { ROTATE } else { DROP_EVAL };
                    let (run, joined) = self.trigger(cron).await?;
                    match (stopped, joined) {
                        (true, true) => Answer::Joined,
                        (false, false) => self.turns(cron, &run).await?,
                        _ => return Err(format!("a second trigger joined={joined} while the first stopped={stopped}")),
                    }
                }
                Long::Rewarm { tenant, invalidate } => self.rewarm(tenant, invalidate).await,
                Long::Rollback { tenant } => self.rollback(tenant).await,
            },
        })
    }

    /// A tenant as the server holds it, in the model's terms.
    fn tenant(&self, tenant: usize) -> Result<TenantState, String> {
        use mock_server::rolling::{days, enables, flags, invalidation};
        let conn = self.server.state.store.lock().map_err(|e| e.to_string())?;
        let id = TENANTS[tenant];
        let f = flags::get(&conn, id).map_err(|e| e.to_string())?;
        let names = mock_server::rolling::tenants::get(&conn, id)
            .map_err(|e| e.to_string())?
            .names(&self.server.state.settings.db_prefix);
        let days = days::day_databases(&conn, id)
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|d| d.status != days::DayStatus::Dropped)
            .map(|d| chrono::NaiveDate::parse_from_str(&d.date, "%Y%m%d").map_err(|e| format!("{}: {e}", d.date)))
            .collect::<Result<_, _>>()?;
        let invalidation = match invalidation::last(&conn, id).map_err(|e| e.to_string())? {
            None => None,
            Some(i) => Some(Invalidation {
                at: i.invalidated_at,
                reason: reason(&i.reason)?,
                routing: if i.routing.as_str() == "core" { Routing::Core } else { Routing::Legacy },
            }),
        };
        Ok(TenantState {
            rolling: f.rolling_db,
            drop: f.rolling_db_drop,
            core_exists: mock_server::docdb::exists(&conn, &names.core()).map_err(|e| e.to_string())?,
            rotated_since_enable: !enables::turn(&conn, id).map_err(|e| e.to_string())?.first_since_enable,
            days,
            invalidation,
        })
    }

    /// The audit entries after `after` of the tenant, by action.
    fn audited(&self, tenant: usize, after: i64) -> Result<BTreeMap<String, usize>, String> {
        let conn = self.server.state.store.lock().map_err(|e| e.to_string())?;
        let entries =
            mock_server::store::audit::list(&conn, Some(TENANTS[tenant]), None, 1_000).map_err(|e| e.to_string())?;
        let mut by = BTreeMap::new();
        for e in entries.into_iter().filter(|e| e.id > after) {
            *by.entry(e.action).or_default() += 1;
        }
        Ok(by)
    }

    fn last_audit_id(&self) -> Result<i64, String> {
        let conn = self.server.state.store.lock().map_err(|e| e.to_string())?;
        let entries = mock_server::store::audit::list(&conn, None, None, 1).map_err(|e| e.to_string())?;
        Ok(entries.first().map_or(0, |e| e.id))
    }

    /// The open alarms of the tenant: (destructive resets, missing days' databases).
    fn alarms(&self, tenant: usize) -> Result<(usize, Vec<String>), String> {
        let conn = self.server.state.store.lock().map_err(|e| e.to_string())?;
        let open = mock_server::rolling::alarms::open(&conn, TENANTS[tenant]).map_err(|e| e.to_string())?;
        let kind = |a: &mock_server::rolling::alarms::Alarm| serde_json::to_value(a.kind).unwrap_or_default();
        let resets = open.iter().filter(|a| kind(a) == "destructive-reset").count();
        let missing = open.iter().filter(|a| kind(a) == "day-database-missing").map(|a| a.subject.clone()).collect();
        Ok((resets, missing))
    }
}

/// A device's handshake, as the model's answer reads.
async fn hello(
    s: &Server,
    token: &str,
    device: &str,
    sdk: &str,
    reported: Option<i64>,
) -> Result<HandshakeAnswer, String> {
    let (_socket, frames) = ws::hello(s, token, Some(device), sdk, reported).await;
    let Some(ready) = frames.iter().find(|f| f["type"] == "ready") else { return Ok(HandshakeAnswer::Refused) };
    let invalidate = match frames.iter().find(|f| f["type"] == "invalidate-local") {
        Some(f) => Some((
            f["payload"]["invalidatedAt"].as_i64().ok_or("invalidate-local without invalidatedAt")?,
            reason(f["payload"]["reason"].as_str().unwrap_or_default())?,
        )),
        None => None,
    };
    let p = &ready["payload"];
    Ok(HandshakeAnswer::Ready {
        invalidate,
        company: str_of(p, "companyId")?,
        routing: if p["database"] == "core" { Routing::Core } else { Routing::Legacy },
        static_db: str_of(p, "staticDb")?,
        dynamic_db: str_of(p, "dynamicDb")?,
        invalidated_at: p["invalidatedAt"].as_i64(),
    })
}

fn reason(r: &str) -> Result<Reason, String> {
    match r {
        "invalidate_daily" => Ok(Reason::Daily),
        "rolling-db-cutover" => Ok(Reason::Cutover),
        "operator" => Ok(Reason::Operator),
        "rewarm" => Ok(Reason::Rewarm),
        other => Err(format!("an invalidation reason the model does not know: {other:?}")),
    }
}

fn str_of(v: &Value, key: &str) -> Result<String, String> {
    v[key].as_str().map(str::to_owned).ok_or_else(|| format!("{key} missing from {v}"))
}

/// An error body's code, as the model names refusals.
fn code_of(body: &Value) -> &'static str {
    match body["error"].as_str() {
        Some("drop_requires_rolling_db") => "drop_requires_rolling_db",
        Some("core_missing") => "core_missing",
        Some("rewarm_needs_invalidation") => "rewarm_needs_invalidation",
        _ => "unexpected",
    }
}

/// The starting state, on the server and in the model, one operation at a time.
async fn set_up(f: &mut Fleet, race: &mut Race, start: &Start) -> Result<(), String> {
    for (browser, user) in start.users.iter().enumerate() {
        if let Some(user) = user {
            f.login(&mut race.model, browser, *user).await?;
            f.handshake(&mut race.model, browser).await?;
        }
    }
    for (tenant, on) in start.rolling.iter().enumerate() {
        if *on {
            expect_flags(f, race, tenant, Some(true), None).await?;
        }
    }
    if start.rotated {
        let (run, _) = f.trigger(ROTATE).await?;
        let mut serial = race.clone();
        let want = serial.run(Long::Rotate, Point::End, &[]).long;
        let got = f.turns(ROTATE, &run).await?;
        if got != want {
            return Err(format!("the set-up's rotate: the server's turns {got:?}, the model's {want:?}"));
        }
        *race = serial;
        for (tenant, again) in start.reenabled.iter().enumerate() {
            if *again && start.rolling[tenant] {
                expect_flags(f, race, tenant, Some(false), None).await?;
                expect_flags(f, race, tenant, Some(true), None).await?;
            }
        }
    }
    for (tenant, on) in start.drop.iter().enumerate() {
        if *on && start.rolling[tenant] {
            expect_flags(f, race, tenant, None, Some(true)).await?;
        }
    }
    // Every device meets what the set-up did (the cutover, say) before the race.
    for browser in 0..BROWSER_SDKS.len() {
        f.handshake(&mut race.model, browser).await?;
    }
    Ok(())
}

async fn expect_flags(
    f: &Fleet,
    race: &mut Race,
    tenant: usize,
    rolling: Option<bool>,
    drop: Option<bool>,
) -> Result<(), String> {
    let mut body = json!({});
    if let Some(on) = rolling {
        body["rollingDb"] = json!(on);
    }
    if let Some(on) = drop {
        body["rollingDbDrop"] = json!(on);
    }
    let got = f.flags(tenant, body).await;
    let want = race.set_flags(tenant, rolling, drop);
    match got == want {
        true => Ok(()),
        false => Err(format!("the set-up's flag change: the server answered {got:?}, the model {want:?}")),
    }
}

/// Runs one race: the model's state at its end (the server's, every check passed), or the first
/// disagreement with the model, with the reason.
fn replay(case: &Case) -> Result<Race, String> {
    replay_with(case, &mut Race::new(Model::new("", 0))).map(|(end, _)| end)
}

/// [`replay`], also telling the state the race started from (into `start`) and the model's
/// account of it.
fn replay_with(case: &Case, start: &mut Race) -> Result<(Race, Outcome), String> {
    // A runtime of its own: dropping it stops the race's server.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let start_ms = chrono::DateTime::parse_from_rfc3339(START).unwrap().timestamp_millis();
        let mut fleet = Fleet::new(start_ms).await;
        let mut race = Race::new(Model::new(&fleet.server.state.settings.db_prefix, start_ms));
        set_up(&mut fleet, &mut race, &case.start).await.map_err(|e| format!("set-up: {e}"))?;
        let before = race.clone();
        *start = race.clone();
        let park = case.park;
        let want = race.run(case.long, park, &case.racers);

        let audit_from = fleet.last_audit_id()?;
        {
            let mut p = fleet.parking.lock().unwrap();
            *p = Parking { recording: true, target: Some(park), ..Parking::default() };
        }
        let fleet = Arc::new(fleet);
        let mut long = tokio::spawn(fleet.clone().long(case.long));
        // Stopped at its point, or finished without passing it (the others then run after it).
        let finished = tokio::select! {
            () = fleet.parked.notified() => None,
            done = &mut long => Some(done.map_err(|e| e.to_string())?),
        };
        // Finished without stopping: the others run after it, and stop nowhere themselves.
        fleet.parking.lock().unwrap().target = None;
        let mut devices = before.model.clone();
        let mut racers = Vec::new();
        let mut raced = Ok(());
        for racer in &case.racers {
            match fleet.race(&mut devices, case.long, finished.is_none(), *racer).await {
                Ok(answer) => racers.push(answer),
                Err(e) => {
                    raced = Err(e);
                    break;
                }
            }
        }
        // Released whatever the others came to: a stopped cron's thread must not wait forever.
        let release = fleet.parking.lock().unwrap().release.take();
        drop(release);
        raced?;
        let long = match finished {
            Some(done) => done?,
            None => tokio::time::timeout(std::time::Duration::from_secs(30), long)
                .await
                .map_err(|_| "the long operation never finished once released")?
                .map_err(|e| e.to_string())??,
        };
        let passed = std::mem::take(&mut fleet.parking.lock().unwrap().passed);
        fleet.parking.lock().unwrap().recording = false;

        if passed != want.passed {
            return Err(format!("the server passed {passed:?}, the model {:?}", want.passed));
        }
        if long != want.long {
            return Err(format!("the long operation answered {long:?}, the model {:?}", want.long));
        }
        if racers != want.racers {
            return Err(format!("the others answered {racers:?}, the model {:?}", want.racers));
        }
        for (t, id) in TENANTS.iter().enumerate() {
            let got = fleet.tenant(t)?;
            if got != race.tenant(t) {
                return Err(format!("{id} is {got:?}, the model says {:?}", race.tenant(t)));
            }
        }
        let late = not_serial(&before, case.long, &case.racers, &race);
        if !late.is_empty() {
            return Err(format!("the model itself: {late:?} end in no serial order's state"));
        }
        audited_once(&fleet, case, &want, audit_from)?;
        // Every device afterwards: its routing, its invalidation, never another tenant's database.
        for browser in 0..BROWSER_SDKS.len() {
            fleet.handshake(&mut race.model, browser).await?;
        }
        for (t, id) in TENANTS.iter().enumerate() {
            let (resets, missing) = fleet.alarms(t)?;
            let want: Vec<String> = race.model.alarms()[t].1.iter().cloned().collect();
            if resets != 0 || missing != want {
                return Err(format!(
                    "{id}'s alarms: {resets} destructive reset(s), missing days {missing:?}; the model: none, {want:?}"
                ));
            }
        }
        Ok((race, want))
    })
}

/// Each operator's act audited once: the flag changes, the invalidations (and the rotate's
/// cutovers), the re-warms.
fn audited_once(f: &Fleet, case: &Case, want: &model::races::Outcome, after: i64) -> Result<(), String> {
    let answers: Vec<&Answer> = std::iter::once(&want.long).chain(&want.racers).collect();
    for (t, id) in TENANTS.iter().enumerate() {
        let mut expected: BTreeMap<String, usize> = BTreeMap::new();
        let mut add = |action: &str| *expected.entry(action.to_owned()).or_default() += 1;
        for (i, a) in answers.iter().enumerate() {
            // Whose tenant an answer is about: the long operation's, or the racer's.
            let about = match i {
                0 => long_tenant(case.long),
                _ => match case.racers[i - 1] {
                    Racer::SetRolling { tenant, .. }
                    | Racer::SetDrop { tenant, .. }
                    | Racer::Invalidate { tenant }
                    | Racer::Rewarm { tenant, .. } => Some(tenant),
                    Racer::Again => long_tenant(case.long),
                    Racer::Handshake { .. } => None,
                },
            };
            match a {
                Answer::Run(turns) => {
                    for (tenant, turn) in turns {
                        if tenant == id && matches!(turn, Turn::Rotated { cutover: true }) {
                            add("clients.invalidate");
                        }
                    }
                }
                _ if about != Some(t) => {}
                Answer::Flags(Ok(_)) => add("flags.force"),
                Answer::Invalidated(_) => add("clients.invalidate"),
                Answer::Rewarm(Ok(_)) => add("core.rewarm"),
                Answer::Rollback(flags, _) => {
                    if flags.is_ok() {
                        add("flags.force");
                    }
                    add("clients.invalidate");
                }
                _ => {}
            }
        }
        let mut got = f.audited(t, after)?;
        got.remove("cron.run");
        if got != expected {
            return Err(format!("{id}'s audit after the set-up: {got:?}, the model's acts: {expected:?}"));
        }
    }
    Ok(())
}

fn long_tenant(long: Long) -> Option<usize> {
    match long {
        Long::Rewarm { tenant, .. } | Long::Rollback { tenant } => Some(tenant),
        Long::Rotate | Long::DropEval => None,
    }
}

#[test]
fn generated_races_end_as_the_model_says() {
    let cases = histories::env_number("RACE_CASES", 40);
    histories::run("races", 52, cases, case(), &REACHED_NAMES, true, |case| {
        let mut before = Race::new(Model::new("", 0));
        let end = replay_with(&case, &mut before).map_err(|e| format!("{e}\nthe race: {case:?}"))?;
        for (i, hit) in reached(&case, &before, &end.1).into_iter().enumerate() {
            if hit {
                histories::reached(i);
            }
        }
        Ok(())
    });
}

/// A tenant's turn decides its day's invalidation: one turned on after the rotate listed the
/// rolling tenants was legacy when listed and gets it (it was given neither its rotate nor the
/// invalidation); one rotated and then turned off had its rotate and does not (it was given both).
#[test]
fn the_rotates_day_invalidation_follows_each_tenants_turn() {
    let (acme, alice) = (0, 0);
    let start = |rolling: bool| Start {
        users: [Some(alice), None, None],
        rolling: [rolling, false],
        rotated: rolling,
        reenabled: [false; 2],
        drop: [false; 2],
    };
    let on_after_listing = Case {
        start: start(false),
        long: Long::Rotate,
        park: Point::Listed(ROTATE),
        racers: vec![Racer::SetRolling { tenant: acme, on: true }],
    };
    let off_after_its_turn = Case {
        start: start(true),
        long: Long::Rotate,
        park: Point::AfterTenant(ROTATE, "acme"),
        racers: vec![Racer::SetRolling { tenant: acme, on: false }],
    };
    for (case, reason) in [(on_after_listing, Reason::Daily), (off_after_its_turn, Reason::Cutover)] {
        let end = replay(&case).unwrap_or_else(|e| panic!("{e}\n{case:?}"));
        // What the server was held to, said plainly: acme's latest invalidation.
        let latest = end.model.tenants[acme].invalidation.map(|i| (i.reason, i.routing));
        assert_eq!(latest, Some((reason, if reason == Reason::Daily { Routing::Legacy } else { Routing::Core })));
    }
}
