//! The scaffold the generated histories share (rollout_histories.rs, sdk_histories.rs,
//! rollout_races.rs): the runner with its seed and case counts from the environment, the rules a
//! run must reach, and the spans of time a history advances by. A new operation is added to its
//! suite's alphabet; what runs it, counts it and replays a failure is written once, here.

use std::cell::RefCell;
use std::fmt::Debug;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// The text at `key` of a JSON answer, or what is missing.
pub fn str_of(v: &serde_json::Value, key: &str) -> Result<String, String> {
    v[key].as_str().map(str::to_owned).ok_or_else(|| format!("{key} missing from {v}"))
}

/// The integer at `key` of a JSON answer, or what is missing.
pub fn int_of(v: &serde_json::Value, key: &str) -> Result<i64, String> {
    v[key].as_i64().ok_or_else(|| format!("{key} missing from {v}"))
}

/// A tenant's open alarms as the operators' views tell them (`attention`: the cluster view's list):
/// the devices of destructive resets (`device` names them from the alarm's subject), the days found
/// missing, regressed and lost after a rollback, and how many devices' losses were raised. Any
/// other kind is an alarm no model knows.
pub struct Told<K> {
    pub resets: std::collections::BTreeSet<K>,
    pub missing: std::collections::BTreeSet<String>,
    pub regressed: std::collections::BTreeSet<String>,
    pub lost_days: std::collections::BTreeSet<String>,
    pub device_losses: usize,
}

pub fn alarms_told<K: Ord>(
    attention: &serde_json::Value,
    tenant: &str,
    device: impl Fn(&str) -> Option<K>,
) -> Result<Told<K>, String> {
    let mut told = Told {
        resets: Default::default(),
        missing: Default::default(),
        regressed: Default::default(),
        lost_days: Default::default(),
        device_losses: 0,
    };
    for t in attention.as_array().ok_or("cluster.attention is a list")?.iter().filter(|t| t["companyId"] == tenant) {
        for alarm in t["alarms"].as_array().ok_or("attention.alarms is a list")? {
            let subject = str_of(alarm, "subject")?;
            match alarm["kind"].as_str() {
                Some("destructive-reset") => {
                    told.resets.insert(device(&subject).ok_or(format!("an alarm about an unknown device {subject}"))?);
                }
                Some("day-database-missing") => {
                    told.missing.insert(subject);
                }
                Some("reconciliation-regressed") => {
                    told.regressed.insert(subject);
                }
                Some("archived-day-lost") => {
                    told.lost_days.insert(subject);
                }
                Some("device-data-lost") => told.device_losses += 1,
                other => return Err(format!("an alarm the model does not know: {other:?}")),
            }
        }
    }
    Ok(told)
}

/// A number from the environment (`make soak` runs more cases and steps), else `default`.
pub fn env_number(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

thread_local! {
    // Each test's histories run on its own thread (their steps in `block_on`, on that thread).
    static REACHED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The rule numbered `i` (its place in the suite's list of names) was reached.
pub fn reached(i: usize) {
    REACHED.with(|r| {
        let mut r = r.borrow_mut();
        if r.len() <= i {
            r.resize(i + 1, 0);
        }
        r[i] += 1;
    });
}

/// How often each rule was reached since the last take (a fixed history's own check).
pub fn take_reached() -> Vec<usize> {
    REACHED.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

/// Runs `cases` cases of `strategy` through `check`, from `PROPTEST_RNG_SEED` or `default_seed`
/// (`make test` is reproducible; `make soak` draws new ones); a failure names the seed, the shrunk
/// case and what `check` said. Then prints how often each rule of `reached_names` was reached
/// and, with `must_reach`, fails unless each was: a generator that never reaches a rule tests nothing.
pub fn run<T: Debug>(
    what: &str,
    default_seed: u64,
    cases: u32,
    strategy: impl Strategy<Value = T>,
    reached_names: &[&str],
    must_reach: bool,
    check: impl Fn(T) -> Result<(), String>,
) {
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let seed = std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(default_seed);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    REACHED.with(|r| r.borrow_mut().clear());
    if let Err(e) = runner.run(&strategy, |case| check(case).map_err(TestCaseError::fail)) {
        panic!("seed {seed}: {e}");
    }
    let counted = take_reached();
    let counts: Vec<(usize, &str)> =
        reached_names.iter().enumerate().map(|(i, name)| (counted.get(i).copied().unwrap_or(0), *name)).collect();
    eprintln!("the {what} reached: {counts:?}");
    let missed: Vec<&str> = counts.iter().filter(|(n, _)| *n == 0).map(|(_, name)| *name).collect();
    assert!(
        !must_reach || missed.is_empty(),
        "seed {seed}: the {what} never reached {missed:?}; generate more or other steps"
    );
}

/// A history: one of `starts` starting fleets, then 1 to `steps` operations of `op`.
pub fn history<O: Debug>(
    starts: usize,
    op: impl Strategy<Value = O>,
    steps: usize,
) -> impl Strategy<Value = (usize, Vec<O>)> {
    (0..starts, proptest::collection::vec(op, 1..=steps))
}

/// The spans a history's clock advances by (s): `short` the spans within a day the suite needs
/// (its access token's margin, say), then days either side of midnight, inside and past a
/// sign-out window, past the refresh token's lifetime.
pub fn advance(short: Vec<BoxedStrategy<i64>>) -> impl Strategy<Value = i64> {
    let mut spans = short;
    spans.extend([
        (1i64..4).prop_map(|d| d * 86_400 - 1).boxed(),
        (1i64..4).prop_map(|d| d * 86_400 + 7).boxed(),
        (1i64..240).boxed(),
        Just(31 * 86_400).boxed(),
    ]);
    proptest::strategy::Union::new(spans)
}
