//! The mock server's main operations through HTTP on loopback, sequential, in-process: login,
//! refresh, a full rotate of the seeded tenants, a CORE bootstrap; then what the ended-session
//! check costs an access token (in-process, beside the bootstrap it guards). Prints the median of
//! several rounds; asserts nothing (shared machines are noisy).

use std::time::{Duration, Instant};

use mock_server::settings::Settings;
use mock_server::state::{AppState, StaticDirs};
use serde_json::{json, Value};

async fn post(client: &reqwest::Client, url: String, token: Option<&str>, body: Value) -> Value {
    let mut req = client.post(url).json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap().json().await.unwrap()
}

/// The median of 100 `GET /bootstrap?database=core` with `token`.
async fn bootstrap_median(client: &reqwest::Client, base: &str, token: &str) -> Duration {
    let mut samples = Vec::new();
    for _ in 0..100 {
        let t = Instant::now();
        client
            .get(format!("{base}/bootstrap?database=core"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        samples.push(t.elapsed());
    }
    median(samples)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() {
    // The bench measures throughput from one address: no sign-in rate limit.
    let state = AppState::new(
        Settings { test_controls: true, auth_rate_per_min: 0, ..Settings::default() },
        StaticDirs::default(),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = mock_server::app(state.clone());
    tokio::spawn(async move { axum::serve(mock_server::app::listener(listener), app).await.unwrap() });
    let client = reqwest::Client::new();
    let login = |user: &'static str| {
        let (client, base) = (client.clone(), base.clone());
        async move {
            post(
                &client,
                format!("{base}/auth"),
                None,
                json!({"username": user, "password": format!("{user}-pass"), "deviceInfo": {}}),
            )
            .await
        }
    };
    println!("mock-server (in-process, loopback, sequential)");

    let mut samples = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        login("alice").await;
        samples.push(t.elapsed());
    }
    println!("{:<44} {:>10.2?}", "POST /auth", median(samples));

    let mut refresh = login("alice").await["refreshToken"].as_str().unwrap().to_owned();
    let mut samples = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let next = post(&client, format!("{base}/auth/refresh"), None, json!({"refreshToken": refresh})).await;
        samples.push(t.elapsed());
        refresh = next["refreshToken"].as_str().unwrap().to_owned();
    }
    println!("{:<44} {:>10.2?}", "POST /auth/refresh (rotating)", median(samples));

    let mut samples = Vec::new();
    for _ in 0..7 {
        post(&client, format!("{base}/__mock/reset"), None, json!({})).await;
        let admin = login("admin").await["token"].as_str().unwrap().to_owned();
        for id in ["acme", "globex", "initech"] {
            client
                .patch(format!("{base}/admin/rolling-db/flags/{id}"))
                .bearer_auth(&admin)
                .json(&json!({"rollingDb": true}))
                .send()
                .await
                .unwrap();
        }
        let t = Instant::now();
        let run = post(&client, format!("{base}/admin/crons/rolling-db-rotate/run"), Some(&admin), json!({})).await;
        let id = run["runId"].as_str().unwrap().to_owned();
        loop {
            let r: Value = client
                .get(format!("{base}/admin/crons/runs/{id}"))
                .bearer_auth(&admin)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if r["status"] != "running" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        samples.push(t.elapsed());
    }
    println!("{:<44} {:>10.2?}", "rotate, 3 tenants (warm CORE + 2 days each)", median(samples));

    let alice = login("alice").await["token"].as_str().unwrap().to_owned();
    let bootstrap = bootstrap_median(&client, &base, &alice).await;

    // Static files one after another on one keep-alive connection (as a page loads its glue,
    // module and styles): without TCP_NODELAY each after the first stalls about 40 ms on Nagle's
    // algorithm meeting the client's delayed ACK.
    let www = std::env::temp_dir().join(mock_server::auth::secrets::random_id("bench-www"));
    std::fs::create_dir_all(&www).unwrap();
    let files = ["app.js", "module.wasm", "style.css", "page.html"];
    for (i, f) in files.iter().enumerate() {
        std::fs::write(www.join(f), vec![b'a' + i as u8; 24 * 1024]).unwrap();
    }
    let statics =
        AppState::new(Settings::default(), StaticDirs { www: Some(www.clone()), ..StaticDirs::default() }).unwrap();
    let static_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let static_base = format!("http://{}", static_listener.local_addr().unwrap());
    let static_app = mock_server::app(statics);
    tokio::spawn(async move { axum::serve(mock_server::app::listener(static_listener), static_app).await.unwrap() });
    let one_connection = reqwest::Client::builder().pool_max_idle_per_host(1).build().unwrap();
    let mut samples = Vec::new();
    for _ in 0..50 {
        for f in files {
            let t = Instant::now();
            one_connection.get(format!("{static_base}/{f}")).send().await.unwrap().bytes().await.unwrap();
            samples.push(t.elapsed());
        }
    }
    samples.sort();
    let p99 = samples[samples.len() * 99 / 100];
    println!(
        "{:<44} {:>10.2?}  (p99 {p99:.2?}; a stall would be ~40 ms)",
        "static file, 24 KB, 4 in a row, one connection",
        median(samples)
    );
    let _ = std::fs::remove_dir_all(&www);
    println!("{:<44} {:>10.2?}", "GET /bootstrap?database=core (17 docs)", bootstrap);

    // The ended-session check on an access token: the signature check alone, then the whole
    // check (`verify_access`), with no ended session and with 100,000 of them remembered. A
    // refresh presents no access token: its path has no such check.
    let per_call = |f: &dyn Fn()| {
        let rounds: Vec<Duration> = (0..7)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..20_000 {
                    f();
                }
                t.elapsed() / 20_000
            })
            .collect();
        median(rounds)
    };
    let now = state.clock.now_secs();
    let signature = per_call(&|| {
        state.tokens.verify(&alice, now, true).unwrap();
    });
    let check = || {
        mock_server::extract::verify_access(&state, &alice).unwrap();
    };
    let empty = per_call(&check);
    for i in 0..100_000 {
        state.sessions.ended.end(&format!("sess-bench-{i}"), now + 900, now);
    }
    let full = per_call(&check);
    let bootstrap_full = bootstrap_median(&client, &base, &alice).await;
    println!("{:<44} {:>10.2?}", "access token: signature and expiry only", signature);
    println!("{:<44} {:>10.2?}", "access token: whole check, 0 ended sessions", empty);
    println!("{:<44} {:>10.2?}", "access token: whole check, 100,000 ended", full);
    println!("{:<44} {:>10.2?}", "GET /bootstrap, 100,000 ended sessions", bootstrap_full);
    let share = full.saturating_sub(signature).as_secs_f64() / bootstrap.as_secs_f64() * 100.0;
    println!("{:<44} {:>9.2}%  (goal: under 5%)", "ended-session check / bootstrap request", share);
}
