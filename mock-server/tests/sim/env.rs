//! What every part of a simulated run shares: the one clock, the seeded randomness, the server in
//! process, and the history the invariants are judged from.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use session_broker::core::ports::{Clock, LocalBoxFuture};

use super::history::History;
use super::server::SimServer;

/// The simulated time: the run's start plus what tokio's paused clock has advanced. Nothing reads
/// the host's time; a sleep of an hour costs nothing when nothing else is ready.
#[derive(Clone)]
pub struct SimClock {
    start_ms: i64,
    t0: tokio::time::Instant,
}

impl SimClock {
    pub fn new(start_ms: i64) -> SimClock {
        SimClock { start_ms, t0: tokio::time::Instant::now() }
    }

    pub fn now(&self) -> i64 {
        self.start_ms + self.t0.elapsed().as_millis() as i64
    }

    pub async fn sleep(ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> i64 {
        self.now()
    }
    fn sleep(&self, ms: u32) -> LocalBoxFuture<'static, ()> {
        Box::pin(SimClock::sleep(ms.into()))
    }
}

/// The knobs of a run (the same for every seed of a suite).
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The SDK's `timeoutMs`.
    pub timeout_ms: u32,
    /// A request's or an answer's usual delay is drawn up to this.
    pub max_latency_ms: u64,
    /// A `storage` event reaches another tab after up to this.
    pub max_storage_delay_ms: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config { timeout_ms: 8_000, max_latency_ms: 400, max_storage_delay_ms: 300 }
    }
}

/// The shared part of a run.
pub struct Env {
    pub clock: SimClock,
    pub server: SimServer,
    pub hist: History,
    pub config: Config,
    rng: RefCell<StdRng>,
    /// Device id → the browser that registered it.
    pub devices: RefCell<BTreeMap<String, usize>>,
}

impl Env {
    pub fn new(seed: u64, start_ms: i64, config: Config) -> Rc<Env> {
        let clock = SimClock::new(start_ms);
        let server = SimServer::new(clock.clone());
        Rc::new(Env {
            clock,
            server,
            hist: History::default(),
            config,
            rng: RefCell::new(StdRng::seed_from_u64(seed ^ 0x5eed_0f5e_5510)),
            devices: RefCell::default(),
        })
    }

    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// A number in `0..=max` from the run's stream.
    pub fn draw(&self, max: u64) -> u64 {
        self.rng.borrow_mut().random_range(0..=max)
    }

    pub fn chance(&self, p: f64) -> bool {
        self.rng.borrow_mut().random_bool(p)
    }

    pub fn bytes(&self) -> [u8; 32] {
        self.rng.borrow_mut().random()
    }
}
