//! What a run observed, as the invariants read it: the requests the SDK sent and what reached the
//! server, the sessions it learnt of, the causes a session may end by, the events each tab was
//! told, and the rules found broken.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// A session (refresh family) the run saw begin.
#[derive(Debug, Clone)]
pub struct Family {
    pub user: String,
    /// The browser whose login began it.
    pub browser: usize,
    pub began_at: i64,
    /// Seen ended on the server (checked once).
    pub ended: bool,
}

/// Why a session may end on the server, as recorded when it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// A logout the server took (`status` 2xx), sent with a token of `sid` from `browser`.
    Logout { sid: String, user: String, scope: String, browser: usize },
    /// An operator or admin ended the user's sessions (a password reset, a role change).
    UserReset { user: String },
    /// The device was deleted, with the sessions it ran.
    DeviceDeleted { device: String, sessions: Vec<String> },
}

#[derive(Default)]
pub struct History {
    pub violations: RefCell<Vec<String>>,
    /// A line per event, for the failure's printout and the determinism check.
    pub trace: RefCell<Vec<String>>,
    pub families: RefCell<BTreeMap<String, Family>>,
    /// Refresh token → its session.
    pub refresh_of: RefCell<BTreeMap<String, String>>,
    pub causes: RefCell<Vec<Cause>>,
    /// Refresh tokens, per browser, whose refresh the SDK got an answer to (any status).
    pub refresh_answered: RefCell<BTreeSet<(usize, String)>>,
    /// Refresh tokens, per browser, with a request of the SDK's in flight now: the tabs sending.
    pub refresh_in_flight: RefCell<BTreeMap<(usize, String), Vec<usize>>>,
    /// Tabs closed (reloaded, frozen), by browser and slot: what they had in flight is no longer
    /// the browser's.
    pub closed: RefCell<BTreeSet<(usize, usize)>>,
    /// Refresh tokens the server received from an SDK send (not a network duplicate), with how
    /// many distinct sends presented each.
    pub refresh_presented: RefCell<BTreeMap<String, u32>>,
    /// Rules reached, by name, for the suite's "must reach" check.
    pub reached: RefCell<BTreeMap<&'static str, u32>>,
}

impl History {
    pub fn violate(&self, at: i64, rule: &str, detail: String) {
        let line = format!("[{at}] {rule}: {detail}");
        self.trace.borrow_mut().push(format!("VIOLATION {line}"));
        self.violations.borrow_mut().push(line);
    }

    pub fn note(&self, at: i64, line: String) {
        self.trace.borrow_mut().push(format!("[{at}] {line}"));
    }

    pub fn reach(&self, rule: &'static str) {
        *self.reached.borrow_mut().entry(rule).or_default() += 1;
    }

    pub fn failed(&self) -> bool {
        !self.violations.borrow().is_empty()
    }

    /// The session a token (access JWT) belongs to, read as the SDK reads it.
    pub fn sid_of_jwt(jwt: &str) -> Option<String> {
        session_broker::core::token::Claims::decode(jwt).ok().and_then(|c| c.sid())
    }
}
