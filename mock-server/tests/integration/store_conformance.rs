//! One suite for every adapter of the store port (`store::sql`), the way PouchDB tests its own
//! adapters: the embedded SQLite store and PostgreSQL (a cluster started per test, the database
//! made by `mock-server migrate`) must give the same answers to the same record modules.

use crate::common;

use common::pg::Cluster;
use mock_server::crons::{cluster_lock, runs};
use mock_server::docdb::{self, Cluster as Docs, DocDbError, Kind};
use mock_server::rolling::flags;
use mock_server::settings::Settings;
use mock_server::store::audit::{self, Actor};
use mock_server::store::sql::{params, Connection, Error, OptionalExtension};
use mock_server::store::{devices, refresh_tokens, users, Store};
use serde_json::json;

/// A time well past 2^31 milliseconds: a store keeping 32-bit integers fails it.
const NOW: i64 = 1_800_000_000_000;

/// Runs `case` on the embedded store, then on PostgreSQL; each store seeded as the server seeds it.
macro_rules! on_both_stores {
    ($sqlite:ident, $postgres:ident, $case:path) => {
        #[test]
        fn $sqlite() {
            let store = mock_server::state::open_store(&Settings::default(), None, NOW).unwrap();
            $case(&store);
        }

        #[test]
        fn $postgres() {
            let cluster = Cluster::start();
            let url = cluster.migrated("conformance");
            let settings = Settings { database_url: Some(url), ..Settings::default() };
            let store = mock_server::state::open_store(&settings, None, NOW).unwrap();
            $case(&store);
        }
    };
}

on_both_stores!(values_round_trip_on_sqlite, values_round_trip_on_postgres, values_round_trip);
on_both_stores!(flags_on_sqlite, flags_on_postgres, tenants_split_by_their_rolling_flag);
on_both_stores!(refresh_tokens_on_sqlite, refresh_tokens_on_postgres, refresh_token_lifecycle);
on_both_stores!(transactions_on_sqlite, transactions_on_postgres, transactions_land_whole_or_not_at_all);
on_both_stores!(cron_lease_on_sqlite, cron_lease_on_postgres, the_cron_lease_and_its_runs);
on_both_stores!(audit_on_sqlite, audit_on_postgres, the_audit_log_filters_and_pages);
on_both_stores!(handles_on_sqlite, handles_on_postgres, the_document_catalogue_counts_its_handles);
on_both_stores!(panic_on_sqlite, panic_on_postgres, a_panic_inside_a_transaction_leaves_the_store_usable);

fn values_round_trip(store: &Store) {
    store
        .transaction(|c: &Connection| {
            let alice = users::by_username(c, "alice")?.expect("seeded");
            assert_eq!((alice.company_id.as_str(), alice.roles.clone()), ("acme", vec!["cashier".to_owned()]));
            refresh_tokens::insert(c, "h-1", "fam-1", &alice.id, NOW + 1, NOW)?;
            let found = refresh_tokens::find(c, "h-1")?.expect("found");
            assert_eq!((found.expires_at, found.used_at, found.revoked_at), (NOW + 1, None, None));
            assert_eq!(found.holder.as_ref(), Some(&alice), "read with its holder, companies and all");
            assert!(found.session_keys.is_empty(), "a session on no device with a key");
            // Read in the same statement: two companies of the holder beside two device keys of
            // the session give four rows, each company and key taken once.
            c.execute("INSERT INTO user_companies (user_id, company_id) VALUES (?1, 'globex')", [&alice.id])?;
            for (device, key) in [("dev-2", "key-b"), ("dev-1", "key-a")] {
                devices::set_key(c, device, key)?;
                devices::link_session(c, device, "fam-1", NOW)?;
            }
            let found = refresh_tokens::find(c, "h-1")?.expect("found");
            assert_eq!(found.session_keys, ["key-a", "key-b"]);
            let mut companies = alice.companies.clone();
            companies.push("globex".to_owned());
            companies.sort();
            assert_eq!(found.holder.map(|h| h.record.companies), Some(companies));
            // Quotes and a placeholder-looking text inside a literal stay text.
            let text: String = c.query_row("SELECT 'it''s ?1' || ?1", ["!"], |r| r.get(0))?;
            assert_eq!(text, "it's ?1!");
            assert_eq!(
                c.query_row("SELECT name FROM companies WHERE id = ?1", ["nobody"], |r| r.get::<_, String>(0))
                    .optional()?,
                None
            );
            assert!(matches!(
                c.query_row("SELECT name FROM companies WHERE id = ?1", ["acme"], |r| r.get::<_, i64>(0)),
                Err(Error::Type { column: 0, .. })
            ));
            Ok::<_, Error>(())
        })
        .unwrap();
}

fn tenants_split_by_their_rolling_flag(store: &Store) {
    store
        .transaction(|c: &Connection| {
            flags::record(c, "globex", true, false, "test", NOW)?;
            flags::record(c, "initech", false, false, "test", NOW)?;
            // acme never flagged: legacy, as initech flagged off is.
            assert_eq!(flags::rolling_tenants(c)?, vec!["globex".to_owned()]);
            // The rotate's day invalidation: every tenant but those rolling at their turn.
            let turned = std::collections::BTreeSet::from(["globex".to_owned()]);
            let daily = mock_server::rolling::rotate::daily_tenants(c, &turned)?;
            assert_eq!(daily, vec!["acme".to_owned(), "initech".to_owned()]);
            // The metrics' canaries: rolling tenants with a CORE, in tenant order, up to a limit,
            // each with the diff its last archive run recorded.
            flags::record(c, "acme", true, false, "test", NOW)?;
            let docs = Docs::embedded(c);
            assert!(flags::rolling_cores(c, 10)?.is_empty(), "no CORE yet");
            for tenant in ["globex", "acme", "initech"] {
                docdb::create(&docs, &format!("t_{tenant}_core"), tenant, Kind::Core, NOW)?;
            }
            c.execute(
                "INSERT INTO guard_reconciliations (company_id, diff, checked_at) VALUES ('globex', 3, ?1)",
                [NOW],
            )?;
            let listed: Vec<_> = flags::rolling_cores(c, 10)?
                .into_iter()
                .map(|t| (t.company_id, t.core, t.reconciliation_diff))
                .collect();
            assert_eq!(
                listed,
                [
                    ("acme".to_owned(), "t_acme_core".to_owned(), None),
                    ("globex".to_owned(), "t_globex_core".to_owned(), Some(3))
                ]
            );
            assert_eq!(flags::rolling_cores(c, 1)?.len(), 1);
            Ok::<_, mock_server::rolling::RollingError>(())
        })
        .unwrap();
}

fn refresh_token_lifecycle(store: &Store) {
    store
        .transaction(|c: &Connection| {
            let bob = users::by_username(c, "bob")?.unwrap();
            refresh_tokens::insert(c, "t1", "fam", &bob.id, NOW + 60_000, NOW)?;
            refresh_tokens::insert(c, "t2", "fam", &bob.id, NOW + 60_000, NOW)?;
            assert_eq!(refresh_tokens::session_state(c, "fam", NOW)?, refresh_tokens::SessionState::Live);
            refresh_tokens::mark_used(c, "t1", NOW + 1)?;
            refresh_tokens::mark_used(c, "t1", NOW + 2)?;
            assert_eq!(refresh_tokens::find(c, "t1")?.unwrap().used_at, Some(NOW + 1), "spent once, at its first use");
            assert!(refresh_tokens::first_replay(c, "t1", NOW + 3, 10_000)?);
            assert!(!refresh_tokens::first_replay(c, "t1", NOW + 4, 10_000)?, "one grace successor");
            assert!(refresh_tokens::first_replay(c, "t1", NOW + 20_000, 10_000)?, "forgotten after the window");
            assert_eq!(refresh_tokens::revoke_family(c, "fam", NOW + 5)?, 2);
            assert_eq!(refresh_tokens::session_state(c, "fam", NOW + 5)?, refresh_tokens::SessionState::Ended);
            assert_eq!(refresh_tokens::prune(c, NOW + 60_000 + 86_400_000)?, 2);
            Ok::<_, Error>(())
        })
        .unwrap();
}

fn transactions_land_whole_or_not_at_all(store: &Store) {
    let failed: Result<(), Error> = store.transaction(|c: &Connection| {
        c.execute("UPDATE companies SET name = ?1 WHERE id = ?2", params!["Renamed", "acme"])?;
        Err(Error::NoRows)
    });
    assert!(failed.is_err());
    let name: String =
        store.lock().unwrap().query_row("SELECT name FROM companies WHERE id = 'acme'", [], |r| r.get(0)).unwrap();
    assert_eq!(name, "Acme Corp", "rolled back");
    // A savepoint rolls back one step of a transaction and keeps the rest (the crons' tenants).
    store
        .transaction(|c: &Connection| {
            c.execute_batch("SAVEPOINT step")?;
            c.execute("UPDATE companies SET name = 'Kept' WHERE id = 'globex'", [])?;
            c.execute_batch("RELEASE step")?;
            c.execute_batch("SAVEPOINT step")?;
            c.execute("UPDATE companies SET name = 'Undone' WHERE id = 'initech'", [])?;
            c.execute_batch("ROLLBACK TO step; RELEASE step")?;
            Ok::<_, Error>(())
        })
        .unwrap();
    let names: Vec<String> = store
        .lock()
        .unwrap()
        .query_map("SELECT name FROM companies WHERE id IN ('globex', 'initech') ORDER BY id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(names, ["Kept", "Initech"]);
}

fn the_cron_lease_and_its_runs(store: &Store) {
    store
        .transaction(|c: &Connection| {
            assert_eq!(runs::start_or_join(c, "rotate", "r1", "p1", NOW)?, ("r1".into(), false));
            assert_eq!(runs::start_or_join(c, "rotate", "r2", "p2", NOW + 1)?, ("r1".into(), true), "never doubled");
            assert_eq!(cluster_lock::holding(c, "rotate", NOW + 2)?, Some("r1".into()));
            runs::progress(c, "r1", 1, 2, Some("acme done"), NOW + 3)?;
            // The holder dies; after the lease the next trigger takes over.
            let (id, joined) = runs::start_or_join(c, "rotate", "r3", "p2", NOW + 3 + cluster_lock::LEASE_MS + 1)?;
            assert_eq!((id.as_str(), joined), ("r3", false));
            assert_eq!(runs::get(c, "r1")?.unwrap().status, runs::RunStatus::Failed);
            runs::finish(c, "r3", true, NOW + 40_000 + cluster_lock::LEASE_MS)?;
            // Two runs started in the same millisecond: the last written is the last finished.
            for id in ["s1", "s2"] {
                runs::start_or_join(c, "prune", id, "p1", NOW + 100_000)?;
                runs::finish(c, id, true, NOW + 100_000)?;
            }
            assert_eq!(runs::last_finished(c, "prune")?.unwrap().run_id, "s2");
            assert_eq!(runs::prune(c, 1)?, 2, "one kept per cron");
            Ok::<_, Error>(())
        })
        .unwrap();
}

fn the_audit_log_filters_and_pages(store: &Store) {
    store
        .transaction(|c: &Connection| {
            for (i, company) in ["acme", "globex", "acme"].iter().enumerate() {
                audit::record(
                    c,
                    &Actor::system("test"),
                    "flags.change",
                    json!({"companyId": company, "n": i}),
                    NOW + i as i64,
                )?;
            }
            let acme = audit::list(c, Some("acme"), None, 10)?;
            assert_eq!(
                acme.iter().map(|e| e.detail["n"].as_i64().unwrap()).collect::<Vec<_>>(),
                [2, 0],
                "newest first"
            );
            let first = acme[0].id;
            assert_eq!(audit::list(c, Some("acme"), Some(first), 10)?.len(), 1, "older than the first");
            assert_eq!(audit::list(c, None, None, 2)?.len(), 2);
            Ok::<_, Error>(())
        })
        .unwrap();
}

fn the_document_catalogue_counts_its_handles(store: &Store) {
    let conn = store.lock().unwrap();
    docdb::set_max_open(&conn, 10).unwrap();
    let before = docdb::open_count(&conn).unwrap();
    let c = Docs::embedded(&conn);
    for name in ["t_a", "t_b"] {
        docdb::create(&c, name, "acme", Kind::Day, NOW).unwrap();
    }
    assert_eq!(docdb::open_count(&conn).unwrap(), before + 2, "counted as they open");
    docdb::pin_only(&c, "acme", &["t_a", "t_b"]).unwrap();
    docdb::drop_database(&c, "t_b").unwrap();
    assert_eq!(docdb::open_count(&conn).unwrap(), before + 1, "and as they go");
    assert!(matches!(docdb::create(&c, "t_a", "acme", Kind::Day, NOW), Err(DocDbError::Exists(_))));
}

/// A cron's job runs under `catch_unwind`: a panic inside its transaction must roll it back and
/// leave the store (on PostgreSQL, the store-wide lock) to the next transaction.
fn a_panic_inside_a_transaction_leaves_the_store_usable(store: &Store) {
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _: Result<(), Error> = store.transaction(|c: &Connection| {
            c.execute("UPDATE companies SET name = 'Half done' WHERE id = 'acme'", [])?;
            panic!("a bug in a rule");
        });
    }));
    assert!(panicked.is_err());
    for _ in 0..2 {
        let name: String = store
            .transaction(|c: &Connection| c.query_row("SELECT name FROM companies WHERE id = 'acme'", [], |r| r.get(0)))
            .unwrap();
        assert_eq!(name, "Acme Corp", "rolled back, and the next transactions run");
    }
}
