//! The alphabet: everything a user (through the SDK), an operator and the world can do, and how a
//! run's steps are drawn from its seed.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::browser::KeyMode;
use super::net::{Fault, Sel};

/// The demo users a run signs in as: (name, their companies).
pub const USERS: [(&str, &[&str]); 4] =
    [("alice", &["acme"]), ("carol", &["acme", "globex"]), ("bob", &["globex"]), ("admin", &["acme"])];
pub const TENANTS: [&str; 2] = ["acme", "globex"];
/// Browsers 0 and 1 are the users'; browser 2 is a copy of one of them (started by `Copy`).
pub const BROWSERS: usize = 3;
pub const TABS: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Local,
    Others,
    Global,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Local => "local",
            Scope::Others => "others",
            Scope::Global => "global",
        }
    }
}

/// The management calls the app makes through the SDK (the package's `getCompanies`,
/// `getCompany`, `listUsers`, `getMyUser`, `addDevice`, `updateCompany`, `updatePaymentReference`,
/// `createUser`): method, path (`{company}`: the session's), body.
pub const MANAGE: [(&str, &str, Option<&str>); 8] = [
    ("GET", "/companies", None),
    ("GET", "/companies/{company}", None),
    ("GET", "/users", None),
    ("GET", "/users/me", None),
    ("POST", "/devices", Some(r#"{"platform":"web","name":"back-office"}"#)),
    ("PATCH", "/companies/{company}", Some(r#"{"name":"Renamed"}"#)),
    ("PATCH", "/companies/{company}/sales/{company}-sale-1/payment-reference", Some(r#"{"paymentReference":"pay-1"}"#)),
    ("POST", "/register-user", Some(r#"{"username":"newcomer","password":"newcomer-pass-1","companyId":"{company}"}"#)),
];

/// Who deletes a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// Its own user, through the SDK's session.
    Owner,
    /// `bob`, a manager.
    Manager,
    /// `admin`, sys_admin.
    Admin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    // ---- The SDK's public API, in browser `b`'s tab `t`.
    Login {
        b: usize,
        t: usize,
        user: usize,
    },
    LoginGoogle {
        b: usize,
        t: usize,
        user: usize,
    },
    /// `registerDevice()` (with the browser's key, where it keeps one).
    Register {
        b: usize,
        t: usize,
    },
    Refresh {
        b: usize,
        t: usize,
    },
    GetToken {
        b: usize,
        t: usize,
    },
    /// `getSession()`: the token or why there is none.
    GetSession {
        b: usize,
        t: usize,
    },
    /// `auth.fetch`: the app's own call with the token, replayed once after a 401 if the session
    /// was refreshed meanwhile.
    Fetch {
        b: usize,
        t: usize,
    },
    Logout {
        b: usize,
        t: usize,
        scope: Scope,
    },
    SwitchCompany {
        b: usize,
        t: usize,
        tenant: usize,
    },
    /// `SyncSession.connect()`: the handshake, `ready`, `invalidate-local`; the socket stays open.
    Connect {
        b: usize,
        t: usize,
    },
    Disconnect {
        b: usize,
        t: usize,
    },
    /// The till app writes an order (tracked with `pushTo: "dynamic"`).
    WriteOrder {
        b: usize,
        t: usize,
    },
    DestroyAll {
        b: usize,
        t: usize,
    },
    UpdateStatus {
        b: usize,
        t: usize,
    },
    /// `GET /devices` through the SDK's session.
    ListDevices {
        b: usize,
        t: usize,
    },
    /// One of the management calls (`MANAGE`) through the SDK's session.
    Manage {
        b: usize,
        t: usize,
        which: usize,
    },
    // ---- The platform.
    Reload {
        b: usize,
        t: usize,
    },
    /// The tab freezes mid-operation (its lock never released); a fresh tab takes its place.
    Freeze {
        b: usize,
        t: usize,
    },
    /// Browser 2 starts from a copy of browser `from`'s whole `localStorage` (no key, no data).
    Copy {
        from: usize,
    },
    KeyMode {
        b: usize,
        mode: KeyMode,
    },
    /// The key store is emptied (the browser no longer holds the device's key).
    KeyCleared {
        b: usize,
    },
    StorageRefuses {
        b: usize,
        writes: u32,
    },
    /// Everything the browser stored is gone (the user cleared site data); its tabs reload.
    WipeStorage {
        b: usize,
    },
    // ---- The network.
    Arm {
        b: usize,
        sel: Sel,
        fault: Fault,
    },
    Offline {
        b: usize,
        ms: u64,
    },
    DocsDown {
        b: usize,
        ms: u64,
    },
    // ---- Operators and admins, acting meanwhile.
    SetRolling {
        tenant: usize,
        on: bool,
    },
    Rotate,
    Invalidate {
        tenant: usize,
    },
    Archive,
    DropEval,
    Backup,
    Rewarm {
        tenant: usize,
    },
    DeleteDevice {
        b: usize,
        by: By,
    },
    PasswordReset {
        user: usize,
    },
    AcknowledgeLosses {
        tenant: usize,
    },
    /// The user logs out elsewhere (another device of theirs) with `scope`.
    LogoutElsewhere {
        user: usize,
        scope: Scope,
    },
    // ---- Time.
    Wait {
        ms: u64,
    },
}

/// A step: how long after the previous one, and what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub gap_ms: u64,
    pub op: Op,
}

fn pick<T: Copy>(rng: &mut StdRng, items: &[T]) -> T {
    items[rng.random_range(0..items.len())]
}

/// The steps of seed `seed`: `n` of them, weighted towards what users do most, the faults and
/// the operators' steps among them.
pub fn generate(seed: u64, n: usize) -> Vec<Step> {
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        // Each step drawn from (seed, its place) alone: a change to one kind of step leaves the
        // others of a seed as they were.
        let mut rng = StdRng::seed_from_u64(
            seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9),
        );
        let b = if rng.random_bool(0.15) { 2 } else { rng.random_range(0..2) };
        let t = rng.random_range(0..TABS);
        let user = rng.random_range(0..3);
        let tenant = rng.random_range(0..TENANTS.len());
        let w = rng.random_range(0..100);
        let op = match w {
            0..=7 => Op::Login { b, t, user },
            8..=9 => Op::LoginGoogle { b, t, user },
            10..=14 => Op::Register { b, t },
            15..=20 => Op::Refresh { b, t },
            21..=25 => Op::GetToken { b, t },
            26..=27 => Op::GetSession { b, t },
            28..=30 => Op::Fetch { b, t },
            31..=35 => {
                Op::Logout { b, t, scope: pick(&mut rng, &[Scope::Local, Scope::Local, Scope::Others, Scope::Global]) }
            }
            36..=37 => Op::SwitchCompany { b, t, tenant },
            38..=41 => Op::Connect { b, t },
            42 => Op::Disconnect { b, t },
            43..=47 => Op::WriteOrder { b, t },
            48 => Op::DestroyAll { b, t },
            49 => Op::UpdateStatus { b, t },
            50 => {
                if rng.random_bool(0.5) {
                    Op::ListDevices { b, t }
                } else {
                    Op::Manage { b, t, which: rng.random_range(0..MANAGE.len()) }
                }
            }
            51..=52 => Op::Reload { b, t },
            53 => Op::Freeze { b, t },
            54..=55 => Op::Copy { from: rng.random_range(0..2) },
            56 => Op::KeyMode { b, mode: pick(&mut rng, &[KeyMode::Failing, KeyMode::Ok, KeyMode::Ok]) },
            57 => Op::KeyCleared { b },
            58 => Op::StorageRefuses { b, writes: rng.random_range(1..4) },
            59 => Op::WipeStorage { b },
            60..=69 => Op::Arm {
                b,
                sel: pick(
                    &mut rng,
                    &[
                        Sel::Any,
                        Sel::Refresh,
                        Sel::Refresh,
                        Sel::Nonce,
                        Sel::Logout,
                        Sel::Login,
                        Sel::Losses,
                        Sel::Docs,
                    ],
                ),
                fault: pick(
                    &mut rng,
                    &[Fault::DropBefore, Fault::DropAfter, Fault::Duplicate, Fault::Slow, Fault::Timeout],
                ),
            },
            70..=71 => Op::Offline { b, ms: rng.random_range(1_000..60_000) },
            72 => Op::DocsDown { b, ms: rng.random_range(1_000..60_000) },
            73..=74 => Op::SetRolling { tenant, on: rng.random_bool(0.7) },
            75..=76 => Op::Rotate,
            77..=78 => Op::Invalidate { tenant },
            79 => Op::Archive,
            80 => Op::DropEval,
            81 => Op::Backup,
            82 => Op::Rewarm { tenant },
            83..=84 => {
                Op::DeleteDevice { b: rng.random_range(0..2), by: pick(&mut rng, &[By::Owner, By::Manager, By::Admin]) }
            }
            85 => Op::PasswordReset { user },
            86 => Op::AcknowledgeLosses { tenant },
            87 => Op::LogoutElsewhere { user, scope: pick(&mut rng, &[Scope::Others, Scope::Global]) },
            88..=90 => Op::Manage { b, t, which: rng.random_range(0..MANAGE.len()) },
            _ => {
                let spans = [100..2_000, 2_000..30_000, 30_000..900_000, 900_000..7_200_000];
                let span = spans[rng.random_range(0..spans.len())].clone();
                Op::Wait { ms: rng.random_range(span) }
            }
        };
        // Most steps follow closely (the tabs and the network race); some wait a while.
        let gap_ms = if rng.random_bool(0.8) { rng.random_range(0..1_500) } else { rng.random_range(1_500..20_000) };
        // Now and then two things at once: the other tab of the browser right behind (a race of
        // tabs), or a refresh's whole unit slowed to the edge of each timeout while another tab
        // wants a token.
        if rng.random_bool(0.06) && b < 2 {
            let other = 1 - t;
            let twin = match rng.random_range(0..4) {
                0 => Op::Refresh { b, t: other },
                1 => Op::Logout { b, t: other, scope: Scope::Local },
                2 => Op::GetToken { b, t: other },
                _ => Op::Login { b, t: other, user: rng.random_range(0..3) },
            };
            steps.push(Step { gap_ms, op });
            steps.push(Step { gap_ms: rng.random_range(0..120), op: twin });
            continue;
        }
        // A registration with the other tab refreshing right behind it.
        if rng.random_bool(0.02) && b < 2 {
            steps.push(Step { gap_ms, op: Op::Register { b, t } });
            steps.push(Step { gap_ms: rng.random_range(0..60), op: Op::Refresh { b, t: 1 - t } });
            continue;
        }
        if rng.random_bool(0.03) && b < 2 {
            steps.push(Step { gap_ms, op: Op::Arm { b, sel: Sel::Nonce, fault: Fault::Slow } });
            steps.push(Step { gap_ms: 0, op: Op::Arm { b, sel: Sel::Refresh, fault: Fault::Slow } });
            steps.push(Step { gap_ms: 0, op: Op::Refresh { b, t } });
            steps.push(Step { gap_ms: rng.random_range(0..3_000), op: Op::GetToken { b, t: 1 - t } });
            continue;
        }
        steps.push(Step { gap_ms, op });
    }
    steps
}
