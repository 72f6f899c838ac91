//! Runs kept as regression cases: the world's seed and the shortest list of steps the simulator
//! shrank a failure to, written out (so they stay the same runs whatever the generator becomes).
//! `MENDED`: holes found and mended, each must hold every rule. `OPEN`: holes found and not mended
//! yet, each must still break its rule (a mended one moves to `MENDED`).

use super::net::{Fault, Sel};
use super::ops::Op::*;
use super::ops::{By, Scope, Step};

const fn s(gap_ms: u64, op: super::ops::Op) -> Step {
    Step { gap_ms, op }
}

/// (what it was, the world's seed, the steps).
pub type Case = (&'static str, u64, &'static [Step]);

pub const MENDED: &[Case] = &[
    (
        "a refresh sent before the browser's key existed, racing the registration that bound its \
         session to the key, signed the key's own browser out",
        27,
        &[
            s(0, Arm { b: 0, sel: Sel::Refresh, fault: Fault::Slow }),
            s(1107, Login { b: 0, t: 1, user: 1 }),
            s(963, DeleteDevice { b: 1, by: By::Owner }),
            s(22, Refresh { b: 0, t: 1 }),
            s(501, Connect { b: 0, t: 0 }),
        ],
    ),
    (
        "a copy of the whole storage logged out and ended the real (keyed) session",
        70,
        &[
            s(1405, LoginGoogle { b: 0, t: 0, user: 1 }),
            s(16835, Connect { b: 0, t: 0 }),
            s(61, Copy { from: 0 }),
            s(587, Logout { b: 2, t: 1, scope: Scope::Local }),
        ],
    ),
    (
        "a refresh racing the registration that bound its session to the key went unproven and \
         signed the key's own browser out",
        15,
        &[
            s(105, LoginGoogle { b: 1, t: 1, user: 0 }),
            s(1445, Fetch { b: 1, t: 0 }),
            s(1428, Register { b: 1, t: 1 }),
            s(1045, Login { b: 0, t: 0, user: 1 }),
            s(753, Register { b: 0, t: 0 }),
            s(83, Refresh { b: 0, t: 0 }),
        ],
    ),
    (
        "a loss found at another cashier's login on a shared till was refused for good",
        2,
        &[
            s(964, Login { b: 1, t: 1, user: 1 }),
            s(1061, Disconnect { b: 2, t: 1 }),
            s(85, WriteOrder { b: 1, t: 1 }),
            s(17390, Fetch { b: 0, t: 1 }),
            s(11096, Arm { b: 0, sel: Sel::Any, fault: Fault::DropBefore }),
            s(1302, Arm { b: 1, sel: Sel::Refresh, fault: Fault::Timeout }),
            s(227, Register { b: 1, t: 1 }),
            s(14639, Refresh { b: 0, t: 1 }),
            s(11097, Refresh { b: 1, t: 1 }),
            s(306, Wait { ms: 846881 }),
            s(1112, Login { b: 1, t: 0, user: 0 }),
        ],
    ),
    (
        "a loss of one tenant's orders on a device registered for another was refused for good",
        4,
        &[
            s(392, Login { b: 1, t: 1, user: 2 }),
            s(12829, Invalidate { tenant: 0 }),
            s(604, Register { b: 1, t: 0 }),
            s(161, Login { b: 1, t: 1, user: 0 }),
            s(1108, WriteOrder { b: 1, t: 1 }),
            s(732, Connect { b: 1, t: 1 }),
        ],
    ),
    (
        "a deleted device's loss, found at the next login on it, was refused for good",
        3,
        &[
            s(795, Login { b: 0, t: 0, user: 2 }),
            s(11685, Connect { b: 0, t: 0 }),
            s(782, Copy { from: 0 }),
            s(157, DeleteDevice { b: 0, by: By::Admin }),
            s(314, WriteOrder { b: 0, t: 0 }),
            s(126, Login { b: 0, t: 0, user: 0 }),
        ],
    ),
    (
        "a user could not delete their own device after a company change, though GET /devices listed it",
        51,
        &[
            s(505, Login { b: 0, t: 1, user: 1 }),
            s(13146, AcknowledgeLosses { tenant: 1 }),
            s(470, Register { b: 0, t: 0 }),
            s(1016, SwitchCompany { b: 0, t: 0, tenant: 1 }),
        ],
    ),
    (
        "a refresh whose answer storage refused left nothing stored and the realtime session ready",
        96,
        &[
            s(263, Login { b: 1, t: 0, user: 1 }),
            s(1011, Connect { b: 1, t: 1 }),
            s(10792, StorageRefuses { b: 1, writes: 3 }),
            s(5194, Wait { ms: 4355447 }),
            s(1470, Fetch { b: 1, t: 1 }),
            s(504, Wait { ms: 1113 }),
        ],
    ),
];

/// (what it is, the rule it breaks, the world's seed, the steps).
pub const OPEN: &[(&str, &str, u64, &[Step])] = &[
    (
        "a tab whose own login a logout abandoned is never told SIGNED_OUT of the other tab's session",
        super::check::LOGOUT_EVERYWHERE,
        49,
        &[
            s(13026, Logout { b: 0, t: 0, scope: Scope::Local }),
            s(243, LoginGoogle { b: 1, t: 0, user: 0 }),
            s(618, Logout { b: 1, t: 0, scope: Scope::Global }),
            s(278, Login { b: 1, t: 1, user: 2 }),
            s(1392, Logout { b: 1, t: 1, scope: Scope::Global }),
        ],
    ),
    (
        "a copy registering its own key binds a session that was not bound, and the real browser is \
         signed out for want of a proof",
        super::check::KEY_KEPT,
        48,
        &[
            s(509, Login { b: 0, t: 0, user: 0 }),
            s(5075, GetToken { b: 1, t: 1 }),
            s(167, Register { b: 0, t: 0 }),
            s(676, LoginGoogle { b: 0, t: 0, user: 2 }),
            s(1112, Copy { from: 0 }),
            s(88, Register { b: 2, t: 1 }),
            s(12142, Refresh { b: 0, t: 0 }),
        ],
    ),
    (
        "a logout sent before the browser's key existed, racing the registration that binds its \
         session, is refused for want of a proof, and the key's own browser signs out as a copy \
         would (the session living on)",
        super::check::KEY_KEPT,
        93,
        &[
            s(248, Arm { b: 0, sel: Sel::Login, fault: Fault::DropBefore }),
            s(16250, DestroyAll { b: 0, t: 0 }),
            s(525, Login { b: 0, t: 0, user: 2 }),
            s(362, Login { b: 0, t: 1, user: 1 }),
            s(780, Logout { b: 0, t: 1, scope: Scope::Global }),
            s(145, Register { b: 0, t: 0 }),
        ],
    ),
];
