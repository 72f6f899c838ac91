//! The SDK core's hot paths, natively: what every `getToken()`, permission check and page render
//! pays. Prints the median time per call over several rounds; asserts nothing (shared machines are
//! noisy: read the numbers, compare them between commits).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::rc::Rc;
use std::time::Instant;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use session_broker::core::permissions::PermissionMap;
use session_broker::core::ports::*;
use session_broker::core::session::{Ports, Session, SessionConfig};
use session_broker::core::token::Claims;

struct Store(RefCell<BTreeMap<String, String>>);
impl Storage for Store {
    fn get(&self, k: &str) -> Option<String> {
        self.0.borrow().get(k).cloned()
    }
    fn set(&self, k: &str, v: &str) -> Result<(), StorageError> {
        self.0.borrow_mut().insert(k.into(), v.into());
        Ok(())
    }
    fn remove(&self, k: &str) {
        self.0.borrow_mut().remove(k);
    }
}
struct Now;
impl Clock for Now {
    fn now_ms(&self) -> i64 {
        1_700_000_000_000
    }
    fn sleep(&self, _: u32) -> LocalBoxFuture<'static, ()> {
        Box::pin(async {})
    }
}
struct NoNet;
impl Transport for NoNet {
    fn send(&self, _: HttpRequest) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        Box::pin(async { Err(TransportError::Network("offline".into())) })
    }
}
struct NoDbs;
impl LocalDatabases for NoDbs {
    fn destroy(&self, _: &str, _: &str) -> LocalBoxFuture<'static, Result<(), DestroyError>> {
        Box::pin(async { Ok(()) })
    }
    fn push(&self, _: Vec<PushPlan>, _: u32) -> LocalBoxFuture<'static, PushReport> {
        Box::pin(async { PushReport::default() })
    }
}
struct Quiet;
impl Reporter for Quiet {
    fn error(&self, _: &str) {}
}
/// One tab: the lock is always free.
struct Free;
impl LockGuard for Free {}
impl RefreshLock for Free {
    fn acquire(&self, _: u32) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        Box::pin(async { Ok(Box::new(Free) as Box<dyn LockGuard>) })
    }
    fn steal(&self) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        self.acquire(0)
    }
}

fn measure(name: &str, iterations: u32, mut f: impl FnMut()) {
    let mut rounds: Vec<f64> = (0..7)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                f();
            }
            start.elapsed().as_nanos() as f64 / iterations as f64
        })
        .collect();
    rounds.sort_by(|a, b| a.total_cmp(b));
    println!("{name:<44} {:>10.0} ns/call", rounds[3]);
}

struct NoKey;
impl DeviceKey for NoKey {
    fn public_key(&self) -> LocalBoxFuture<'static, Option<String>> {
        Box::pin(std::future::ready(None))
    }
}

fn main() {
    let payload = URL_SAFE_NO_PAD.encode(r#"{"sub":"u","userId":"u","companyId":"acme","roles":["cashier","manager"],"iat":1700000000,"exp":1800000000}"#);
    let jwt = format!("eyJhbGciOiJIUzI1NiJ9.{payload}.c2ln");
    let storage = Rc::new(Store(RefCell::default()));
    let session = Session::new(
        SessionConfig::new("http://bench.invalid").unwrap(),
        Ports {
            storage: storage.clone(),
            transport: Rc::new(NoNet),
            clock: Rc::new(Now),
            local_databases: Rc::new(NoDbs),
            reporter: Rc::new(Quiet),
            lock: Rc::new(Free),
            device_key: Rc::new(NoKey),
        },
    );
    session.save_token("Auth", &jwt, 3600.0).unwrap();
    let map = PermissionMap::default();
    let roles = vec!["cashier".to_string(), "manager".to_string()];
    println!("session-broker core (native, release)");
    measure("Claims::decode (JWT payload)", 20_000, || {
        black_box(Claims::decode(black_box(&jwt)).unwrap());
    });
    measure("Session::is_token_expired", 20_000, || {
        black_box(session.is_token_expired());
    });
    measure("Session::get_token (valid, no refresh)", 20_000, || {
        black_box(futures::executor::block_on(session.get_token()));
    });
    measure("Session::current_roles", 20_000, || {
        black_box(session.current_roles());
    });
    measure("PermissionMap::allows", 200_000, || {
        black_box(map.allows(black_box("crons:run"), &roles));
    });
}
