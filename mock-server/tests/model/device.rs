//! The device's side of the rollout's model, for histories where the SDK's own core is the device
//! (`tests/sdk_histories.rs`): every session the server issued and how it ended, what the
//! browser's storage holds (whose device id, which tab memory), and its till, the local database
//! of its orders, with what the SDK's final push must do to it. The rollout's rules (routing,
//! invalidations, alarms) stay in [`Model`], which this drives as the SDK does: a refresh one
//! minute before the access token expires, a handshake that registers the device first, a
//! company change's cleanup at the refresh that brings it.

use std::collections::BTreeMap;

use super::{HandshakeAnswer, LogoutKind, Model, Op};

const ACCESS_TTL_MS: i64 = 900 * 1000;
/// The SDK refreshes this long before the access token expires.
const SDK_MARGIN_MS: i64 = 60 * 1000;
const SIGN_OUT_WINDOW_MS: i64 = 120 * 1000;
const REFRESH_TTL_MS: i64 = 30 * 24 * 3600 * 1000;

/// Where the server has a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Not signed out (it still ends by itself when its refresh token expires).
    Live,
    /// Signing out: its credentials work until then.
    Window(i64),
    /// Over: nothing of it works again.
    Ended,
}

/// A session the server issued, by the model's number.
#[derive(Debug, Clone)]
pub struct ServerSession {
    pub user: usize,
    pub browser: usize,
    pub access_issued_ms: i64,
    pub refresh_until_ms: i64,
    pub end: End,
}

/// The device's till: a local database of orders, tracked with `pushTo: "dynamic"`.
#[derive(Debug, Clone)]
pub struct Till {
    /// The tenant whose orders it holds (its ledger line's owner).
    pub owner: usize,
    /// The owner's routed day database the SDK pushes to (`None`: no `ready` named one yet).
    pub target: Option<String>,
    /// Orders on the device, not known to be on the server.
    pub pending: Vec<u64>,
}

/// What the SDK's storage and its tab's memory hold beyond the session.
#[derive(Debug, Clone, Default)]
pub struct Device {
    /// Whose device the stored device id is on the server (`None`: no id stored).
    pub id_owner: Option<usize>,
    pub till: Option<Till>,
    /// Each tab's memory of its last `ready`: tenant and routed day database (gone at a reload).
    pub routed: [Option<(usize, String)>; 2],
    /// The tab the app acts in (the other follows it through storage).
    pub tab: usize,
}

/// How a sign-out reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignOut {
    /// Both calls (the window opens, then closes once the handlers ran).
    Online,
    /// The network drops after the first call: the window stays open until it runs out.
    Unfinished,
    /// No call reaches the server.
    Offline,
    /// `scope: "global"`: the user's other sessions end at once too.
    Global,
}

/// A refresh the SDK made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refreshed {
    Accepted {
        company_changed: bool,
    },
    /// Refused: the session was ended by someone else (`true`) or its refresh token expired.
    Rejected {
        ended_elsewhere: bool,
    },
}

/// What a final push did to the till: orders taken by the server, orders left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pushed {
    pub taken: usize,
    pub left: usize,
}

/// What the SDK's handshake comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdkHandshake {
    /// No session (or it ended at the refresh the handshake made first).
    NotSignedIn,
    /// The server refused the session's token.
    Refused,
    Ready(HandshakeAnswer),
}

#[derive(Debug, Clone)]
pub struct SdkModel {
    pub m: Model,
    pub devices: Vec<Device>,
    pub sessions: BTreeMap<u64, ServerSession>,
    /// Orders the server took: (order, tenant, database).
    pub on_server: Vec<(u64, usize, String)>,
    /// Orders destroyed on the device without reaching the server (each reported by the SDK).
    pub destroyed_unpushed: Vec<u64>,
    /// How many of those were each tenant's (what its devices may report lost, at most).
    pub lost_of: BTreeMap<usize, u64>,
    /// Orders lost with a wiped device (nothing could report them).
    pub wiped: Vec<u64>,
    /// Every refresh the SDK made, in order.
    pub refreshes: Vec<Refreshed>,
    next_order: u64,
}

impl SdkModel {
    pub fn new(prefix: &str, now_ms: i64) -> Self {
        let m = Model::new(prefix, now_ms);
        let devices = vec![Device::default(); m.browsers.len()];
        SdkModel {
            m,
            devices,
            sessions: BTreeMap::new(),
            on_server: Vec::new(),
            destroyed_unpushed: Vec::new(),
            lost_of: BTreeMap::new(),
            wiped: Vec::new(),
            refreshes: Vec::new(),
            next_order: 0,
        }
    }

    fn now(&self) -> i64 {
        self.m.now_ms
    }

    /// The session the browser's storage holds, by the model's number.
    pub fn current(&self, browser: usize) -> Option<u64> {
        self.m.browsers[browser].session.map(|s| s.number)
    }

    /// The user and tenant of the browser's stored session.
    pub fn signed_in(&self, browser: usize) -> Option<(usize, usize)> {
        self.m.browsers[browser].session.map(|s| (s.user, s.tenant))
    }

    /// The server would refresh it, or take a logout for it: not ended, refresh token alive.
    pub fn live(&self, number: u64) -> bool {
        self.sessions.get(&number).is_some_and(|s| s.end == End::Live && s.refresh_until_ms > self.now())
    }

    /// Its document headers work: until its sign-out completes or its window runs out, and while
    /// it lives (headers have no lifetime of their own).
    pub fn headers_work(&self, number: u64) -> bool {
        self.sessions.get(&number).is_some_and(|s| match s.end {
            End::Live => s.refresh_until_ms > self.now(),
            End::Window(until) => self.now() < until,
            End::Ended => false,
        })
    }

    /// Its latest access token works: as its headers, within the token's own lifetime.
    pub fn bearer_works(&self, number: u64) -> bool {
        self.headers_work(number)
            && self.sessions.get(&number).is_some_and(|s| self.now() < s.access_issued_ms + ACCESS_TTL_MS)
    }

    /// Whether the SDK refreshes before handing the token out (one minute before it expires).
    fn sdk_expired(&self, browser: usize) -> bool {
        let Some(n) = self.current(browser) else { return false };
        self.now() >= self.sessions[&n].access_issued_ms + ACCESS_TTL_MS - SDK_MARGIN_MS
    }

    /// `getToken()`: the stored session's number, refreshed first inside the margin (`None`:
    /// signed out, before or by that refresh), and the refresh if one was made.
    pub fn get_token(&mut self, browser: usize) -> (Option<u64>, Option<Refreshed>) {
        if self.current(browser).is_none() {
            return (None, None);
        }
        if !self.sdk_expired(browser) {
            return (self.current(browser), None);
        }
        let r = self.refresh(browser);
        (self.current(browser), Some(r))
    }

    /// A refresh of the browser's stored session (it has one). A company change's cleanup pushes
    /// the till with the session's own headers, then destroys it; a rejection signs the browser
    /// out locally, the till kept.
    pub fn refresh(&mut self, browser: usize) -> Refreshed {
        let r = self.refresh_once(browser);
        self.refreshes.push(r);
        r
    }

    fn refresh_once(&mut self, browser: usize) -> Refreshed {
        let n = self.current(browser).expect("a refresh of a stored session");
        if !self.live(n) {
            let ended_elsewhere = self.sessions[&n].end == End::Ended;
            self.sessions.get_mut(&n).expect("issued").end = End::Ended;
            self.m.refreshed(browser, false);
            return Refreshed::Rejected { ended_elsewhere };
        }
        let now = self.now();
        let s = self.sessions.get_mut(&n).expect("issued");
        s.access_issued_ms = now;
        s.refresh_until_ms = now + REFRESH_TTL_MS;
        let before = self.signed_in(browser).map(|(_, t)| t);
        self.m.refreshed(browser, true);
        let company_changed = self.signed_in(browser).map(|(_, t)| t) != before;
        if company_changed {
            let owner_headers = before.filter(|_| self.headers_work(n));
            self.push_till(browser, owner_headers);
            self.destroy_till(browser);
        }
        Refreshed::Accepted { company_changed }
    }

    /// The SDK's final push of the till, with headers of `headers_of` (a tenant whose live
    /// session's headers the SDK may use for the till's owner; `None`: none may be used, or the
    /// network is down): everything pending goes to the till's target, or nothing does.
    fn push_till(&mut self, browser: usize, headers_of: Option<usize>) -> Pushed {
        let Some(till) = self.devices[browser].till.as_mut() else { return Pushed::default() };
        match (&till.target, headers_of) {
            (Some(db), Some(tenant)) if tenant == till.owner => {
                let taken = till.pending.len();
                for order in till.pending.drain(..) {
                    self.on_server.push((order, till.owner, db.clone()));
                }
                Pushed { taken, left: 0 }
            }
            _ => Pushed { taken: 0, left: till.pending.len() },
        }
    }

    /// The till destroyed (after its last push): what is left is lost, and reported.
    fn destroy_till(&mut self, browser: usize) -> usize {
        let (owner, left) = self.devices[browser].till.take().map(|t| (t.owner, t.pending)).unwrap_or_default();
        let n = left.len();
        *self.lost_of.entry(owner).or_default() += n as u64;
        self.destroyed_unpushed.extend(left);
        n
    }

    /// A login of `user`: the cleanup pushes the till with the new session's headers when it
    /// holds the incoming tenant's orders, with the stored session's when they are its tenant's
    /// (and it still works), then destroys it; the new session is stored.
    pub fn login(&mut self, browser: usize, user: usize) -> (Pushed, usize) {
        let incoming = self.m.active[user];
        let stored = self.m.browsers[browser].session.filter(|s| self.headers_work(s.number)).map(|s| s.tenant);
        let owner = self.devices[browser].till.as_ref().map(|t| t.owner);
        let headers_of = owner.filter(|o| *o == incoming || Some(*o) == stored);
        let pushed = self.push_till(browser, headers_of);
        let destroyed = self.destroy_till(browser);
        self.m.apply(Op::Login { browser, user });
        let n = self.current(browser).expect("just logged in");
        let now = self.now();
        self.sessions.insert(
            n,
            ServerSession {
                user,
                browser,
                access_issued_ms: now,
                refresh_until_ms: now + REFRESH_TTL_MS,
                end: End::Live,
            },
        );
        (pushed, destroyed)
    }

    /// `logout()`: the first call (without a refresh: an expired token ends a session too), the
    /// SDK's push through the sign-out window, the completion call; what the push left.
    pub fn logout(&mut self, browser: usize, how: SignOut) -> Pushed {
        let Some(s) = self.m.browsers[browser].session else {
            // No session: nothing sent, the till only counted.
            return self.push_till(browser, None);
        };
        let n = s.number;
        let now = self.now();
        let reached = how != SignOut::Offline && self.live(n);
        if reached {
            if how == SignOut::Global {
                for (other, t) in self.sessions.iter_mut() {
                    if t.user == s.user && *other != n && t.end == End::Live && t.refresh_until_ms > now {
                        t.end = End::Ended;
                    }
                }
            }
            self.sessions.get_mut(&n).expect("issued").end = End::Window(now + SIGN_OUT_WINDOW_MS);
        }
        let online = matches!(how, SignOut::Online | SignOut::Global);
        let headers_of = (online && self.headers_work(n)).then_some(s.tenant);
        let pushed = self.push_till(browser, headers_of);
        if reached && online {
            self.sessions.get_mut(&n).expect("issued").end = End::Ended;
        }
        let kind = match how {
            SignOut::Online | SignOut::Global => LogoutKind::Online,
            SignOut::Unfinished => LogoutKind::Unfinished,
            SignOut::Offline => LogoutKind::Offline,
        };
        self.m.apply(Op::Logout { browser, how: kind });
        pushed
    }

    /// `logout({scope: "others"})`: a call with the session (a fresh token first); the user's
    /// other sessions end at once. Whether the server took it.
    pub fn logout_others(&mut self, browser: usize) -> bool {
        let (Some(n), _) = self.get_token(browser) else { return false };
        if !self.bearer_works(n) || !self.live(n) {
            return false;
        }
        let (user, now) = (self.sessions[&n].user, self.now());
        for (other, t) in self.sessions.iter_mut() {
            if t.user == user && *other != n && t.end == End::Live && t.refresh_until_ms > now {
                t.end = End::Ended;
            }
        }
        true
    }

    /// An operator resets the user's password (to the same one): every live session of theirs ends.
    pub fn operator_reset(&mut self, user: usize) {
        let now = self.now();
        for t in self.sessions.values_mut() {
            if t.user == user && t.end == End::Live && t.refresh_until_ms > now {
                t.end = End::Ended;
            }
        }
    }

    /// `registerDevice()` with a token already fresh: the stored id is kept when it is the user's
    /// device, else the server makes a new device (which it has never seen obey anything).
    fn register_with(&mut self, browser: usize, n: u64) -> bool {
        if !self.bearer_works(n) {
            return false;
        }
        let user = self.sessions[&n].user;
        if self.devices[browser].id_owner != Some(user) {
            self.devices[browser].id_owner = Some(user);
            self.m.browsers[browser].witnessed.remove(&user);
        }
        // Only the owner of the id the browser presents is a registered device to the server.
        self.m.browsers[browser].registered = [user].into_iter().collect();
        true
    }

    /// `registerDevice()`; whether it succeeded.
    pub fn register(&mut self, browser: usize) -> bool {
        match self.get_token(browser).0 {
            Some(n) => self.register_with(browser, n),
            None => false,
        }
    }

    /// The realtime handshake through `connect()`: a fresh token, the device registered when it
    /// has no id, `sdk:init`; an `invalidate-local` pushes the till with the session's headers
    /// and destroys it; `ready` records the routing with the tab and the till of its tenant.
    pub fn handshake(&mut self, browser: usize) -> (SdkHandshake, Pushed, usize) {
        let none = (Pushed::default(), 0);
        let Some(n) = self.get_token(browser).0 else { return (SdkHandshake::NotSignedIn, none.0, none.1) };
        if self.devices[browser].id_owner.is_none() {
            self.register_with(browser, n);
        }
        if !self.bearer_works(n) {
            return (SdkHandshake::Refused, none.0, none.1);
        }
        let answer = self.m.handshake(browser, false);
        let HandshakeAnswer::Ready { invalidate, dynamic_db, .. } = &answer else {
            return (SdkHandshake::Ready(answer), none.0, none.1);
        };
        let tenant = self.signed_in(browser).expect("a session").1;
        let (mut pushed, mut destroyed) = none;
        if invalidate.is_some() {
            pushed = self.push_till(browser, Some(tenant));
            destroyed = self.destroy_till(browser);
        }
        let d = &mut self.devices[browser];
        d.routed[d.tab] = Some((tenant, dynamic_db.clone()));
        if let Some(till) = d.till.as_mut().filter(|t| t.owner == tenant) {
            till.target = Some(dynamic_db.clone());
        }
        (SdkHandshake::Ready(answer), pushed, destroyed)
    }

    /// The app writes an order into the till (tracking it): the order's number, `None` when
    /// nobody is signed in.
    pub fn write_order(&mut self, browser: usize) -> Option<u64> {
        let (_, tenant) = self.signed_in(browser)?;
        let d = &mut self.devices[browser];
        let routed = d.routed[d.tab].clone();
        let till = d.till.get_or_insert_with(|| Till {
            owner: tenant,
            target: routed.filter(|(t, _)| *t == tenant).map(|(_, db)| db),
            pending: Vec::new(),
        });
        let order = self.next_order;
        self.next_order += 1;
        till.pending.push(order);
        Some(order)
    }

    /// A company change: the call (a fresh token first), and when the server allowed it, a
    /// refresh at once. `None`: the call was not made or not taken.
    pub fn switch_company(&mut self, browser: usize, tenant: usize) -> Option<(bool, Option<Refreshed>)> {
        let n = self.get_token(browser).0?;
        if !self.bearer_works(n) {
            return None;
        }
        let allowed = self.m.may_switch(browser, tenant)?;
        if !allowed {
            return Some((false, None));
        }
        self.m.apply(Op::SwitchCompany { browser, tenant });
        Some((true, Some(self.refresh(browser))))
    }

    /// `destroyAllLocalDatabases()`: the push with the stored session's headers, then the
    /// deletions (`lastInvalidation` stays: the device dropped its data itself).
    pub fn destroy_all(&mut self, browser: usize) -> (Pushed, usize) {
        let stored = self.m.browsers[browser].session.filter(|s| self.headers_work(s.number)).map(|s| s.tenant);
        let pushed = self.push_till(browser, stored);
        (pushed, self.destroy_till(browser))
    }

    /// The browser's local data and `lastInvalidation` vanish (not the till's ledger).
    pub fn lose_local_data(&mut self, browser: usize) {
        self.m.apply(Op::LoseLocalData { browser });
    }

    /// The browser's storage and local databases are wiped and its tabs reload: the session is
    /// forgotten (the server still holds it), so is the device id; the till's orders are gone.
    pub fn wipe_storage(&mut self, browser: usize) {
        if let Some(till) = self.devices[browser].till.take() {
            self.wiped.extend(till.pending);
        }
        self.devices[browser] = Device::default();
        self.m.apply(Op::Logout { browser, how: LogoutKind::Offline });
        self.m.browsers[browser].registered.clear();
    }

    /// A reload of the tab the app acts in: its memory goes, storage stays.
    pub fn reload(&mut self, browser: usize) {
        let d = &mut self.devices[browser];
        d.routed[d.tab] = None;
    }

    /// The app goes on in the browser's other tab.
    pub fn switch_tab(&mut self, browser: usize) {
        let d = &mut self.devices[browser];
        d.tab = 1 - d.tab;
    }

    /// The orders on the device's till.
    pub fn pending(&self, browser: usize) -> Vec<u64> {
        self.devices[browser].till.as_ref().map(|t| t.pending.clone()).unwrap_or_default()
    }
}
