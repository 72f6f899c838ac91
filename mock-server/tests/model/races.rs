//! The rollout's operations when they race: one long operation (the rotate, the drop evaluation,
//! a re-warm, a rollback) stopped at one of the points where the server hands the store back
//! (`mock-server/src/rolling/checkpoints.rs`), other operations run there, then the rest of it.
//! Each transaction is atomic, so the outcome is the long operation's steps before the point,
//! the others, then its steps after; what each step decides, it decides from the state at its
//! own moment. The rules this states (docs/refinements.md, "Operations that race"):
//!
//! - **A tenant's turn.** A cron run decides each tenant at its turn, its own transaction: the
//!   rotate rotates a listed tenant only if `rollingDb` is on then (turned off before it: not
//!   warmed, not cut over, not invalidated), and the drop evaluation evaluates one only if
//!   `rollingDbDrop` is on then. The rotate's daily invalidation goes to every tenant it did not
//!   rotate at its turn: one turned on after the listing gets it (it was legacy when listed), one
//!   rotated and then turned off does not (it had its rotate).
//! - **One of the serial outcomes.** With one other operation, every tenant ends as it would had
//!   that operation run wholly before the long one or wholly after it ([`serial_outcomes`]).
//! - **Operators' requests** are each one transaction: two operators' flag changes, invalidations
//!   or re-warms end as one after the other, each audited once; a rollback (`rollingDb` off) says
//!   what it leaves in CORE, and its invalidation sends the devices back to legacy.
//! - **The run's record** names, for each tenant, what its turn decided, and the points a run
//!   passes are the ones listed here, in this order.

use std::collections::BTreeSet;

use chrono::NaiveDate;

use super::{HandshakeAnswer, Invalidation, Model, Op, Reason, Routing, TENANTS};

/// The demo seed's tenants as a cron run lists them: the model's, and one no race flags.
pub const SERVER_TENANTS: [&str; 3] = ["acme", "globex", "initech"];
pub const ROTATE: &str = "rolling-db-rotate";
pub const DROP_EVAL: &str = "rolling-db-drop-eval";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Flags,
    Invalidate,
    Rewarm,
}

/// A point an operation passes (the server's checkpoints, by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// Before the operation begins: the others run wholly before it.
    Start,
    Listed(&'static str),
    BeforeTenant(&'static str, &'static str),
    AfterTenant(&'static str, &'static str),
    BeforeDaily,
    BeforeFinish(&'static str),
    Before(Request, &'static str),
    Committed(Request, &'static str),
    /// Never passed: the others run wholly after it.
    End,
}

/// The long operation, stopped at a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Long {
    Rotate,
    DropEval,
    Rewarm {
        tenant: usize,
        invalidate: bool,
    },
    /// `rollingDb` off, then the operator's invalidation.
    Rollback {
        tenant: usize,
    },
}

impl Long {
    /// Every point it may pass, whatever the state (a tenant's points only when it is listed).
    pub fn points(self) -> Vec<Point> {
        let cron = |cron: &'static str, tenants: &[&'static str], daily: bool| {
            let mut p = vec![Point::Listed(cron)];
            for t in tenants {
                p.extend([Point::BeforeTenant(cron, t), Point::AfterTenant(cron, t)]);
            }
            if daily {
                p.push(Point::BeforeDaily);
            }
            p.push(Point::BeforeFinish(cron));
            p
        };
        match self {
            Long::Rotate => cron(ROTATE, &TENANTS, true),
            Long::DropEval => cron(DROP_EVAL, &SERVER_TENANTS, false),
            Long::Rewarm { tenant, .. } => request(Request::Rewarm, tenant).to_vec(),
            Long::Rollback { tenant } => {
                [request(Request::Flags, tenant), request(Request::Invalidate, tenant)].concat()
            }
        }
    }
}

fn request(r: Request, tenant: usize) -> [Point; 2] {
    [Point::Before(r, TENANTS[tenant]), Point::Committed(r, TENANTS[tenant])]
}

/// What runs while the long operation is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Racer {
    SetRolling {
        tenant: usize,
        on: bool,
    },
    SetDrop {
        tenant: usize,
        on: bool,
    },
    Invalidate {
        tenant: usize,
    },
    Rewarm {
        tenant: usize,
        invalidate: bool,
    },
    /// A registered device's handshake.
    Handshake {
        browser: usize,
    },
    /// A second operator's same operation: a cron trigger joins the running run (or, when the
    /// first never stopped, starts the next); a re-warm or a rollback runs whole.
    Again,
}

/// A flag change's answer: the flags after it and what a rollback leaves in CORE (`Some` exactly
/// when it turned `rollingDb` off; nothing is written in CORE in a race), or the refusal's code.
pub type FlagsAnswer = Result<(bool, bool, Option<u64>), &'static str>;

/// A re-warm's answer: when it invalidated, or the refusal's code.
pub type RewarmAnswer = Result<Option<i64>, &'static str>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Flags(FlagsAnswer),
    Invalidated(i64),
    Rewarm(RewarmAnswer),
    Handshake(HandshakeAnswer),
    Joined,
    Rollback(FlagsAnswer, i64),
    /// A cron run: per tenant, what its turn decided.
    Run(Vec<(&'static str, Turn)>),
}

/// What a cron's turn decided for a tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Rotated; whether it was cut over (invalidated to CORE).
    Rotated { cutover: bool },
    /// `rollingDb` (the rotate) or `rollingDbDrop` (the drop evaluation) was off at its turn.
    Skipped,
    /// Evaluated for the drop; nothing old enough to drop.
    NothingEligible,
}

/// The model and the flag it does not hold, `rollingDbDrop`.
#[derive(Debug, Clone)]
pub struct Race {
    pub model: Model,
    pub drop: Vec<bool>,
}

/// What one run came to: the points passed in order, the long operation's answer, the others'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub passed: Vec<Point>,
    pub long: Answer,
    pub racers: Vec<Answer>,
}

/// Where a run is, while it runs: the point to stop at and the others to run there.
struct Run<'a> {
    park: Point,
    racers: &'a [Racer],
    long: Long,
    out: Outcome,
    parked: bool,
}

/// A tenant as the rules judge an outcome: what the server must hold for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantState {
    pub rolling: bool,
    pub drop: bool,
    pub core_exists: bool,
    pub rotated_since_enable: bool,
    pub days: BTreeSet<NaiveDate>,
    pub invalidation: Option<Invalidation>,
}

impl Race {
    pub fn new(model: Model) -> Race {
        let drop = vec![false; model.tenants.len()];
        Race { model, drop }
    }

    pub fn tenant(&self, t: usize) -> TenantState {
        let m = &self.model.tenants[t];
        TenantState {
            rolling: m.rolling,
            drop: self.drop[t],
            core_exists: m.core_exists,
            rotated_since_enable: m.rotated_since_enable,
            // The day databases that exist (a dropped one is kept in the model for its snapshot).
            days: m.days.iter().filter(|(_, d)| d.status != super::DayStatus::Dropped).map(|(at, _)| *at).collect(),
            invalidation: m.invalidation,
        }
    }

    /// A flag change (forced: the preflight is not a race's subject).
    pub fn set_flags(&mut self, tenant: usize, rolling: Option<bool>, drop: Option<bool>) -> FlagsAnswer {
        let was = self.model.tenants[tenant].rolling;
        let rolling = rolling.unwrap_or(was);
        if drop == Some(true) && !rolling {
            return Err("drop_requires_rolling_db");
        }
        self.model.apply(Op::SetRolling { tenant, on: rolling });
        // Turning rollingDb off clears rollingDbDrop with it.
        self.drop[tenant] = rolling && drop.unwrap_or(self.drop[tenant]);
        Ok((rolling, self.drop[tenant], (was && !rolling).then_some(0)))
    }

    pub fn invalidate(&mut self, tenant: usize) -> i64 {
        self.model.apply(Op::Invalidate { tenant });
        self.model.tenants[tenant].invalidation.expect("just invalidated").at
    }

    /// Runs `long` stopped at `park` (its first passing), `racers` run there in order.
    pub fn run(&mut self, long: Long, park: Point, racers: &[Racer]) -> Outcome {
        let mut run = Run {
            park,
            racers,
            long,
            out: Outcome { passed: Vec::new(), long: Answer::Joined, racers: Vec::new() },
            parked: false,
        };
        self.pass(&mut run, Point::Start);
        run.out.long = match long {
            Long::Rotate => self.rotate(&mut run),
            Long::DropEval => self.drop_eval(&mut run),
            Long::Rewarm { tenant, invalidate } => Answer::Rewarm(self.rewarm(&mut run, tenant, invalidate)),
            Long::Rollback { tenant } => {
                let (flags, at) = self.rollback(&mut run, tenant);
                Answer::Rollback(flags, at)
            }
        };
        // Never stopped: the others run after it.
        if !run.parked {
            run.park = Point::End;
            self.pass(&mut run, Point::End);
        }
        run.out
    }

    fn pass(&mut self, run: &mut Run, at: Point) {
        if !matches!(at, Point::Start | Point::End) {
            run.out.passed.push(at);
        }
        if run.parked || at != run.park {
            return;
        }
        run.parked = true;
        for racer in run.racers {
            let answer = self.race(run, *racer);
            run.out.racers.push(answer);
        }
    }

    fn race(&mut self, run: &mut Run, racer: Racer) -> Answer {
        match racer {
            Racer::SetRolling { tenant, on } => Answer::Flags(self.flags_request(run, tenant, Some(on), None)),
            Racer::SetDrop { tenant, on } => Answer::Flags(self.flags_request(run, tenant, None, Some(on))),
            Racer::Invalidate { tenant } => Answer::Invalidated(self.invalidate_request(run, tenant)),
            Racer::Rewarm { tenant, invalidate } => Answer::Rewarm(self.rewarm(run, tenant, invalidate)),
            Racer::Handshake { browser } => Answer::Handshake(self.model.handshake(browser, false)),
            Racer::Again => match run.long {
                // A run stopped is joined; one that never stopped is over, so this is another.
                Long::Rotate | Long::DropEval if run.park != Point::End => Answer::Joined,
                Long::Rotate => self.rotate(run),
                Long::DropEval => self.drop_eval(run),
                Long::Rewarm { tenant, invalidate } => Answer::Rewarm(self.rewarm(run, tenant, invalidate)),
                Long::Rollback { tenant } => {
                    let (flags, at) = self.rollback(run, tenant);
                    Answer::Rollback(flags, at)
                }
            },
        }
    }

    fn flags_request(
        &mut self,
        run: &mut Run,
        tenant: usize,
        rolling: Option<bool>,
        drop: Option<bool>,
    ) -> FlagsAnswer {
        self.pass(run, Point::Before(Request::Flags, TENANTS[tenant]));
        let answer = self.set_flags(tenant, rolling, drop);
        if answer.is_ok() {
            self.pass(run, Point::Committed(Request::Flags, TENANTS[tenant]));
        }
        answer
    }

    fn invalidate_request(&mut self, run: &mut Run, tenant: usize) -> i64 {
        self.pass(run, Point::Before(Request::Invalidate, TENANTS[tenant]));
        let at = self.invalidate(tenant);
        self.pass(run, Point::Committed(Request::Invalidate, TENANTS[tenant]));
        at
    }

    fn rollback(&mut self, run: &mut Run, tenant: usize) -> (FlagsAnswer, i64) {
        let flags = self.flags_request(run, tenant, Some(false), None);
        (flags, self.invalidate_request(run, tenant))
    }

    /// CORE dropped for the next rotate to recreate; refused without CORE, and while devices are
    /// routed to CORE unless they are invalidated back to legacy with it.
    fn rewarm(&mut self, run: &mut Run, tenant: usize, invalidate: bool) -> RewarmAnswer {
        self.pass(run, Point::Before(Request::Rewarm, TENANTS[tenant]));
        if !self.model.tenants[tenant].core_exists {
            return Err("core_missing");
        }
        if self.model.routing(tenant) == Routing::Core && !invalidate {
            return Err("rewarm_needs_invalidation");
        }
        self.model.tenants[tenant].core_exists = false;
        let at = invalidate.then(|| {
            self.model.invalidate(tenant, Reason::Rewarm, Routing::Legacy);
            self.model.tenants[tenant].invalidation.expect("just invalidated").at
        });
        self.pass(run, Point::Committed(Request::Rewarm, TENANTS[tenant]));
        Ok(at)
    }

    fn rotate(&mut self, run: &mut Run) -> Answer {
        let listed: Vec<usize> = (0..TENANTS.len()).filter(|&t| self.model.tenants[t].rolling).collect();
        self.pass(run, Point::Listed(ROTATE));
        let mut turns = Vec::new();
        for t in listed {
            self.pass(run, Point::BeforeTenant(ROTATE, TENANTS[t]));
            // The flag read again at the tenant's turn.
            let turn = match self.model.tenants[t].rolling {
                true => Turn::Rotated { cutover: self.model.rotate_tenant(t) },
                false => Turn::Skipped,
            };
            turns.push((TENANTS[t], turn));
            self.pass(run, Point::AfterTenant(ROTATE, TENANTS[t]));
        }
        self.pass(run, Point::BeforeDaily);
        for (t, tenant) in TENANTS.iter().enumerate() {
            let rotated = turns.iter().any(|(id, turn)| id == tenant && matches!(turn, Turn::Rotated { .. }));
            if !rotated {
                self.model.invalidate_daily(t);
            }
        }
        self.pass(run, Point::BeforeFinish(ROTATE));
        Answer::Run(turns)
    }

    fn drop_eval(&mut self, run: &mut Run) -> Answer {
        self.pass(run, Point::Listed(DROP_EVAL));
        let mut turns = Vec::new();
        for id in SERVER_TENANTS {
            self.pass(run, Point::BeforeTenant(DROP_EVAL, id));
            let on = TENANTS.iter().position(|t| *t == id).is_some_and(|t| self.drop[t]);
            turns.push((id, if on { Turn::NothingEligible } else { Turn::Skipped }));
            self.pass(run, Point::AfterTenant(DROP_EVAL, id));
        }
        self.pass(run, Point::BeforeFinish(DROP_EVAL));
        Answer::Run(turns)
    }
}

/// The tenants' states had the others run wholly before the long operation, and wholly after it.
pub fn serial_outcomes(start: &Race, long: Long, racers: &[Racer]) -> [Vec<TenantState>; 2] {
    [Point::Start, Point::End].map(|park| {
        let mut race = start.clone();
        race.run(long, park, racers);
        (0..TENANTS.len()).map(|t| race.tenant(t)).collect()
    })
}

/// The serial rule: with one other operation, each tenant ends as in one of the serial orders.
/// Answers the tenants that end otherwise.
pub fn not_serial(start: &Race, long: Long, racers: &[Racer], end: &Race) -> Vec<&'static str> {
    if racers.len() != 1 {
        return Vec::new();
    }
    let [before, after] = serial_outcomes(start, long, racers);
    (0..TENANTS.len())
        .filter(|&t| {
            let got = end.tenant(t);
            got != before[t] && got != after[t]
        })
        .map(|t| TENANTS[t])
        .collect()
}
