//! One suite for every adapter of the document port (`docdb::documents::Documents`), the way
//! PouchDB tests its own adapters: the embedded model and a real CouchDB-protocol engine
//! (PouchDB Server, started per test) must give the same answers, from single documents up to a
//! whole rotate read back through the operators' views.

use crate::common;

use common::engine::Engine;
use common::{spawn_with, Server};
use mock_server::docdb::documents::Write;
use mock_server::docdb::{self, engine::EngineUrl, Cluster, DocDbError, Kind};
use mock_server::settings::Settings;
use serde_json::{json, Map, Value};

/// Runs `case` against the embedded model, then against a fresh engine.
macro_rules! on_both_adapters {
    ($embedded:ident, $engine:ident, $case:path) => {
        #[tokio::test]
        async fn $embedded() {
            $case(None).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $engine() {
            let engine = Engine::start().await;
            $case(Some(&engine)).await;
        }
    };
}

fn body(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// A catalogue (in memory) over the adapter, and the engine client when there is one.
fn catalogue() -> rusqlite::Connection {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    docdb::install(&conn, 10).unwrap();
    conn
}

fn engine_client(engine: Option<&Engine>) -> Option<docdb::engine::Engine> {
    engine.map(|e| docdb::engine::Engine::new(EngineUrl::parse(&e.url_with_credentials()).unwrap()).unwrap())
}

async fn documents_revisions_and_conflicts(engine: Option<&Engine>) {
    let (conn, client) = (catalogue(), engine_client(engine));
    let c = Cluster::new(&conn, client.as_ref());
    docdb::create(&c, "db", "acme", Kind::Legacy, 0).unwrap();
    let r1 = docdb::put(&c, "db", "p1", body(json!({"name": "tea"})), None).unwrap();
    assert!(r1.starts_with("1-") && r1.len() == 34, "{r1}");
    assert_eq!(docdb::put(&c, "db", "p1", body(json!({"name": "tea"})), None), Err(DocDbError::Conflict("p1".into())));
    assert_eq!(
        docdb::put(&c, "db", "p1", body(json!({"name": "x"})), Some("1-00000000000000000000000000000000")),
        Err(DocDbError::Conflict("p1".into()))
    );
    let r2 = docdb::put(&c, "db", "p1", body(json!({"name": "green tea", "_rev": "ignored"})), Some(&r1)).unwrap();
    assert!(r2.starts_with("2-"));
    let info = docdb::info(&c, "db").unwrap().unwrap();
    assert_eq!((info.doc_count, info.update_seq), (1, 2));
    docdb::put_local(&c, "db", "_local/manifest", &json!({"a": 1})).unwrap();
    docdb::put_local(&c, "db", "_local/manifest", &json!({"a": 2})).unwrap();
    assert_eq!(
        docdb::get_local(&c, "db", "_local/manifest").unwrap(),
        Some(json!({"a": 2})),
        "a local document is written whole, again and again"
    );
    assert_eq!(docdb::get_local(&c, "db", "_local/none").unwrap(), None);
    let info = docdb::info(&c, "db").unwrap().unwrap();
    assert_eq!((info.doc_count, info.update_seq), (1, 2), "_local documents count towards neither");
    let doc = docdb::get(&c, "db", "p1").unwrap().unwrap();
    assert_eq!((doc.rev.as_str(), doc.body["name"].as_str()), (r2.as_str(), Some("green tea")));
    assert_eq!(docdb::get(&c, "db", "none").unwrap(), None);
}

async fn bulk_writes_answer_each_document(engine: Option<&Engine>) {
    let (conn, client) = (catalogue(), engine_client(engine));
    let c = Cluster::new(&conn, client.as_ref());
    docdb::create(&c, "day", "acme", Kind::Day, 0).unwrap();
    let fresh = |id: &str| Write { id: id.into(), body: body(json!({"type": "order"})), rev: None };
    let revs: Vec<String> = docdb::bulk_put(&c, "day", (0..30).map(|i| fresh(&format!("o{i:02}"))).collect())
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(revs.iter().all(|r| r.starts_with("1-")));
    // Each answer is its own document's, whatever order the engine answers in.
    let edits: Vec<Write> = revs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, r)| Write { id: format!("o{i:02}"), body: body(json!({"n": i})), rev: Some(r.clone()) })
        .collect();
    let answers = docdb::bulk_put(&c, "day", edits).unwrap();
    assert!(answers.iter().all(|a| a.as_ref().is_ok_and(|r| r.starts_with("2-"))), "{answers:?}");
    let mixed = docdb::bulk_put(&c, "day", vec![fresh("o00"), fresh("new")]).unwrap();
    assert_eq!(mixed[0], Err(DocDbError::Conflict("o00".into())));
    assert!(mixed[1].as_ref().is_ok_and(|r| r.starts_with("1-")));
    let all = docdb::all_docs(&c, "day").unwrap();
    let ids: Vec<&str> = all.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids.len(), 31);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "by id");
    assert_eq!(all.iter().find(|d| d.id == "o05").unwrap().body["n"], 5);
    let info = docdb::info(&c, "day").unwrap().unwrap();
    assert_eq!((info.doc_count, info.update_seq), (31, 61));
}

async fn create_and_drop_are_resumable(engine: Option<&Engine>) {
    let (conn, client) = (catalogue(), engine_client(engine));
    let c = Cluster::new(&conn, client.as_ref());
    assert_eq!(docdb::create(&c, "Bad", "acme", Kind::Day, 0), Err(DocDbError::IllegalName("Bad".into())));
    // A step killed after the engine's database was made and before the catalogue's row landed:
    // the next run finds the database there and goes on.
    c.docs().create_db("a").unwrap();
    docdb::create(&c, "a", "acme", Kind::Day, 0).unwrap();
    assert_eq!(docdb::create(&c, "a", "acme", Kind::Day, 0), Err(DocDbError::Exists("a".into())));
    docdb::put(&c, "a", "x", body(json!({})), None).unwrap();
    // Killed after the engine deleted it and before the catalogue forgot it: deleted again.
    c.docs().delete_db("a").unwrap();
    docdb::drop_database(&c, "a").unwrap();
    assert!(!docdb::exists(&c, "a").unwrap());
    assert!(docdb::list(&c).unwrap().is_empty());
    assert_eq!(docdb::drop_database(&c, "a"), Err(DocDbError::Missing("a".into())));
    assert_eq!(docdb::get(&c, "a", "x"), Err(DocDbError::Missing("a".into())));
    assert_eq!(c.docs().counts("a").unwrap(), None);
}

on_both_adapters!(
    documents_revisions_and_conflicts_embedded,
    documents_revisions_and_conflicts_on_the_engine,
    documents_revisions_and_conflicts
);
on_both_adapters!(bulk_writes_embedded, bulk_writes_on_the_engine, bulk_writes_answer_each_document);
on_both_adapters!(create_and_drop_embedded, create_and_drop_on_the_engine, create_and_drop_are_resumable);

async fn server(engine: Option<&Engine>) -> Server {
    let docdb_url = engine.map(|e| EngineUrl::parse(&e.url_with_credentials()).unwrap());
    spawn_with(Settings { test_controls: true, docdb_url, ..Settings::default() }).await
}

fn database<'a>(cluster: &'a Value, name: &str) -> &'a Value {
    cluster["databases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {cluster}"))
}

/// The seeds, a canary rotate and a second one, read back through the operators' views: the
/// figures the runbook asks for come from whichever adapter holds the documents.
async fn a_rotate_reads_the_same_on_every_adapter(engine: Option<&Engine>) {
    let s = server(engine).await;
    let admin = s.token("admin").await;
    let legacy =
        database(&s.get("/admin/rolling-db/cluster", Some(&admin)).await.body, "dev_acme_main_catalog").clone();
    assert_eq!(
        (legacy["docCount"].as_u64(), legacy["updateSeq"].as_u64()),
        (Some(20), Some(44)),
        "the seeded legacy catalogue: {legacy}"
    );
    let on = s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": true})).await;
    assert_eq!(on.status, reqwest::StatusCode::OK, "{:?}", on.body);
    let run = s.run_cron(&admin, "rolling-db-rotate").await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    let core = database(&cluster, "dev_acme_main_core");
    assert_eq!(
        (core["docCount"].as_u64(), core["updateSeq"].as_u64()),
        (Some(17), Some(17)),
        "fresh revisions: {core}"
    );
    let today = mock_server::docdb::naming::day_of(s.now());
    assert_eq!(database(&cluster, &format!("daily_dev_acme_main_{today}"))["docCount"], 0);
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!(
        (topo["database"].as_str(), topo["manifest"]["today"].as_str()),
        (Some("core"), Some(format!("daily_dev_acme_main_{today}").as_str()))
    );
    let boot = s.get("/bootstrap?database=core", Some(&s.token("alice").await)).await.body;
    let docs = boot["docs"].as_array().unwrap();
    assert_eq!((docs.len(), boot["updateSeq"].as_u64()), (17, Some(17)));
    assert!(docs.iter().all(|d| d["_rev"].as_str().unwrap().starts_with("1-")), "fresh revisions");
    if let Some(e) = engine {
        let info = e.get("dev_acme_main_core").await;
        assert_eq!(
            (info["doc_count"].as_u64(), info["update_seq"].as_u64()),
            (Some(17), Some(17)),
            "the engine's own figures: {info}"
        );
        assert!(e.get("dev_acme_main_core/_local/day-manifest").await["days"].is_array(), "the manifest on the engine");
    }
    let again = s.run_cron(&admin, "rolling-db-rotate").await;
    assert_eq!(again["status"], "succeeded", "{again}");
    assert_eq!(
        s.get("/admin/rolling-db/cluster", Some(&admin)).await.body,
        cluster,
        "a second rotate the same day changes nothing"
    );

    // Back to the seed: the rotate's databases go, on the engine too, and the seed is as new.
    assert_eq!(s.post("/__mock/reset", None, json!({})).await.status, reqwest::StatusCode::OK);
    let admin = s.token("admin").await;
    let reset = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    let names: Vec<&str> = reset["databases"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["dev_acme_main_catalog", "dev_globex_main_catalog", "dev_initech_main_catalog"]);
    assert_eq!(database(&reset, "dev_acme_main_catalog")["updateSeq"], 44, "seeded afresh: {reset}");
    if let Some(e) = engine {
        assert_eq!(e.get("dev_acme_main_core").await["error"], "not_found", "CORE is gone from the engine");
    }
}

on_both_adapters!(a_rotate_embedded, a_rotate_on_the_engine, a_rotate_reads_the_same_on_every_adapter);

/// The runbook's check after a drop, "the replicator database is clean": the embedded model runs
/// no replications; on the engine, a replication document naming the database (as a URL, a bare
/// name or CouchDB's `{url}` object, as source or target) is found, and one naming another is not.
async fn the_replicator_is_read_for_a_dropped_database(engine: Option<&Engine>) {
    let (conn, client) = (catalogue(), engine_client(engine));
    let c = Cluster::new(&conn, client.as_ref());
    let db = "daily_dev_acme_main_20300101";
    assert_eq!(docdb::replications_naming(&c, db).unwrap(), Vec::<String>::new(), "no replication names it: clean");
    let Some(e) = engine else { return };
    // PouchDB Server has its `_replicator` database from the start, as CouchDB 3 does.
    // Documents of the replicator's shape; their endpoints are never reachable, which is all
    // this check needs (the engine may try them and record the failure on the document).
    let docs = json!([
        {"_id": "by-url", "source": format!("http://127.0.0.1:9/{db}"), "target": "elsewhere"},
        {"_id": "by-object", "source": "somewhere", "target": {"url": format!("http://127.0.0.1:9/{db}/")}},
        {"_id": "other", "source": "http://127.0.0.1:9/daily_dev_acme_main_20300102", "target": "x"}
    ]);
    e.bulk("_replicator", docs).await;
    let mut named = docdb::replications_naming(&c, db).unwrap();
    named.sort();
    assert_eq!(named, ["by-object", "by-url"]);
}

on_both_adapters!(replicator_embedded, replicator_on_the_engine, the_replicator_is_read_for_a_dropped_database);

/// A restore writes documents as they were, revisions included (CouchDB's `new_edits: false`),
/// and the database then answers them as any other.
async fn a_restore_keeps_the_revisions(engine: Option<&Engine>) {
    let (conn, client) = (catalogue(), engine_client(engine));
    let c = Cluster::new(&conn, client.as_ref());
    docdb::create(&c, "restored", "acme", Kind::Day, 0).unwrap();
    let docs = vec![
        json!({"_id": "order-1", "_rev": "3-0123456789abcdef0123456789abcdef", "type": "order", "totalCents": 500}),
        json!({"_id": "sale-1", "_rev": "1-fedcba9876543210fedcba9876543210", "type": "sale"}),
    ];
    docdb::restore_docs(&c, "restored", docs).unwrap();
    let all: Vec<(String, String)> =
        docdb::all_docs(&c, "restored").unwrap().into_iter().map(|d| (d.id, d.rev)).collect();
    assert_eq!(
        all,
        [
            ("order-1".into(), "3-0123456789abcdef0123456789abcdef".into()),
            ("sale-1".into(), "1-fedcba9876543210fedcba9876543210".into())
        ]
    );
    assert_eq!(docdb::get(&c, "restored", "order-1").unwrap().unwrap().body["totalCents"], 500);
    // It goes on from there: the next write replaces the restored revision.
    let next = docdb::put(
        &c,
        "restored",
        "order-1",
        body(json!({"type": "order"})),
        Some("3-0123456789abcdef0123456789abcdef"),
    )
    .unwrap();
    assert!(next.starts_with("4-"), "{next}");
}

on_both_adapters!(restore_embedded, restore_on_the_engine, a_restore_keeps_the_revisions);

/// A rollback, writes to the legacy catalogue, `rollingDb` on again: the first rotate since
/// catches the kept CORE up (a new document, an edited one), whichever adapter holds them.
async fn a_rotate_after_a_re_enable_catches_core_up(engine: Option<&Engine>) {
    let s = server(engine).await;
    let admin = s.token("admin").await;
    let flag = |on: bool| json!({"rollingDb": on});
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), flag(true)).await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), flag(false)).await;
    s.post("/admin/invalidate-clients/acme", Some(&admin), json!({})).await;
    let legacy = "/docdb/dev_acme_main_catalog";
    let all = s.get(&format!("{legacy}/_all_docs?include_docs=true"), Some(&admin)).await.body;
    let mut edited = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["doc"].clone())
        .find(|d| d["class"] == "STATIC")
        .expect("a STATIC document in the legacy catalogue");
    edited["name"] = json!("renamed during the rollback");
    let id = edited["_id"].as_str().unwrap().to_owned();
    let put = |path: String, body: Value| {
        let admin = admin.clone();
        let s = &s;
        async move { s.call(reqwest::Method::PUT, &path, Some(&admin), Some(body)).await.status }
    };
    assert!(put(format!("{legacy}/{id}"), edited).await.is_success());
    let added = json!({"class": "STATIC", "type": "item", "name": "added during the rollback"});
    assert!(put(format!("{legacy}/added-during-rollback"), added).await.is_success());

    s.patch("/admin/rolling-db/flags/acme", Some(&admin), flag(true)).await;
    let run = s.run_cron(&admin, "rolling-db-rotate").await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert!(run["log"].to_string().contains("caught up with 2 STATIC documents"), "{run}");
    let core = "/docdb/dev_acme_main_core";
    assert_eq!(s.get(&format!("{core}/{id}"), Some(&admin)).await.body["name"], "renamed during the rollback");
    assert_eq!(
        s.get(&format!("{core}/added-during-rollback"), Some(&admin)).await.body["name"],
        "added during the rollback"
    );
    let again = s.run_cron(&admin, "rolling-db-rotate").await;
    assert!(again["log"].to_string().contains("warm is a no-op"), "only the first rotate since: {again}");
}

on_both_adapters!(a_catch_up_embedded, a_catch_up_on_the_engine, a_rotate_after_a_re_enable_catches_core_up);
