//! Named points where a rollout operation hands the store back: between a cron's transactions,
//! and between an operator request's transaction and what follows its commit (closing the
//! tenant's sockets, the answer). They are the only places another operation can run in the
//! middle of one: inside a transaction the store has one writer (SQLite's mutex, PostgreSQL's
//! advisory lock), so the rules need hold only at these points. Operators race here in
//! production (a flag switched while the rotate runs); `tests/rollout_races.rs` parks an
//! operation at a chosen point with a hook, runs others there, and holds the outcome to the
//! model. Without a hook (production) a point costs one atomic load and allocates nothing.

use std::sync::OnceLock;

use tokio::sync::oneshot;

/// An operator's request that passes two points: `Before` (checked, its time read) and
/// `Committed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// A flag change (`PATCH …/flags/:id`); turning `rollingDb` off is the rollback.
    Flags,
    /// An operator's invalidation (`POST /admin/invalidate-clients/:id`).
    Invalidate,
    /// A re-warm (`POST …/tenants/:id/rewarm`).
    Rewarm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkpoint<'a> {
    /// A cron run listed the tenants it works on (the rotate: those with `rollingDb` on), before
    /// any of them.
    Listed { cron: &'a str },
    /// Before the transaction of the batch that starts with `tenant`.
    BeforeTenant { cron: &'a str, tenant: &'a str },
    /// The batch that ends with `tenant` committed; its sockets are not closed yet, its log lines
    /// not written.
    AfterTenant { cron: &'a str, tenant: &'a str },
    /// The rotate's rolling tenants are done, the legacy tenants' daily invalidation not begun.
    BeforeDaily,
    /// A run's job is done, the run not yet recorded as finished.
    BeforeFinish { cron: &'a str },
    /// An operator's request about `tenant`, before its transaction.
    Before { request: Request, tenant: &'a str },
    /// That request's transaction committed; nothing after it done yet.
    Committed { request: Request, tenant: &'a str },
}

/// What a hook answers at a point: `Some(gate)` parks the operation until the gate's sender
/// sends or is dropped.
pub type Gate = oneshot::Receiver<()>;
pub type Hook = Box<dyn Fn(&Checkpoint<'_>) -> Option<Gate> + Send + Sync>;

/// The hook of one server, installed at most once (by a test, in process; no route reaches it).
#[derive(Default)]
pub struct Checkpoints(OnceLock<Hook>);

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Checkpoints").field(&self.0.get().is_some()).finish()
    }
}

impl Checkpoints {
    /// Installs `hook`; false when one is installed already.
    pub fn install(&self, hook: Hook) -> bool {
        self.0.set(hook).is_ok()
    }

    /// An async operation passes `at`: parked there while the hook says so.
    pub async fn pass(&self, at: Checkpoint<'_>) {
        if let Some(gate) = self.0.get().and_then(|hook| hook(&at)) {
            let _ = gate.await;
        }
    }

    /// [`Checkpoints::pass`] for a cron's thread, which runs outside the async runtime.
    pub fn pass_blocking(&self, at: Checkpoint<'_>) {
        if let Some(gate) = self.0.get().and_then(|hook| hook(&at)) {
            let _ = gate.blocking_recv();
        }
    }
}
