//! The device's ledger in real browsers: tests/ledger/ drives tabs of one till app (iframes of
//! one origin) through reloads, logins in other tabs, writing handlers, a re-track during a
//! cleanup, a failing engine and a full localStorage; then every order is looked for in the
//! engine's own databases, read directly (not through the proxy).

use std::collections::BTreeMap;

use super::browser::{repo_root, Browser, Engine};
use super::{engine, serve_on_engine};

/// Every database of the engine → the ids of its documents.
async fn engine_contents(docs: &engine::Engine) -> BTreeMap<String, Vec<String>> {
    let names: Vec<String> = docs.admin(reqwest::Method::GET, "_all_dbs").send().await.unwrap().json().await.unwrap();
    let mut contents = BTreeMap::new();
    for db in names {
        let all: serde_json::Value =
            docs.admin(reqwest::Method::GET, &format!("{db}/_all_docs")).send().await.unwrap().json().await.unwrap();
        let ids = all["rows"].as_array().into_iter().flatten().filter_map(|r| r["id"].as_str().map(str::to_owned));
        contents.insert(db, ids.collect());
    }
    contents
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the built pkg/, the browsers and PouchDB Server: run `make test-package`"]
async fn every_order_ends_on_its_tenants_server_or_in_a_report_across_tabs_and_reloads() {
    for browser in [Engine::Chromium, Engine::Firefox, Engine::WebKit] {
        let (base, _state, docs) = serve_on_engine(repo_root().join("tests/ledger")).await;
        let b = Browser::start_engine(browser).await;
        // WebKit's ephemeral WebDriver session refuses Blobs in IndexedDB, where PouchDB's idb
        // adapter hangs: there the tabs use the indexeddb adapter.
        let query = if browser == Engine::WebKit { "?adapter=indexeddb" } else { "" };
        b.client.goto(&format!("{base}/index.html{query}")).await.unwrap();
        // Up to five minutes: eleven stories, each with its own tabs.
        b.wait_text_for("#phase", "the stories to finish", 300, |t| t == "done").await;
        let out = b.text("#out").await;
        b.stop().await;
        println!("{browser:?}:\n{out}");
        let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
        assert!(failed.is_empty(), "{browser:?}: {failed:#?}");
        assert!(out.lines().any(|l| l == "done"), "{browser:?}: {out}");
        let contents = engine_contents(&docs).await;
        let orders: Vec<Vec<&str>> =
            out.lines().filter_map(|l| l.strip_prefix("order ")).map(|l| l.split(' ').collect()).collect();
        assert!(orders.len() >= 17, "{browser:?}: every story's orders listed: {orders:?}");
        for order in orders {
            let [id, tenant, expect] = order[..] else { panic!("{browser:?}: {order:?}") };
            let holding: Vec<&String> =
                contents.iter().filter(|(_, ids)| ids.iter().any(|i| i == id)).map(|(db, _)| db).collect();
            let own = format!("_{tenant}_");
            assert!(
                holding.iter().all(|db| db.contains(&own)),
                "{browser:?}: order {id} of {tenant} is in another tenant's database: {holding:?}"
            );
            if expect == "server" {
                assert!(!holding.is_empty(), "{browser:?}: order {id} of {tenant} is on no server database");
            }
        }
    }
}
