//! One instruction everywhere (docs/operations.md, device losses): for each `rollingDb` flag, each
//! state of a device's losses (none, open, acknowledged) and each other alarm a tenant may carry at
//! once, the tenants view and the cluster view tell the same steps, and the alert rules, fed the
//! server's `/metrics` scrape of that state by `promtool test rules`, fire for exactly those steps.
//! The console's badge and banner render the view's steps (mock-server/tests/e2e/demo.rs reads them
//! in a browser).

use crate::common;

use common::alerts::{expect_after_scrape, STEPS_FIRING};
use common::prom::metrics_listener;
use common::{spawn, Server};
use mock_server::rolling::alarms::{self, Kind};
use serde_json::json;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Losses {
    None,
    Open,
    Acknowledged,
}

/// A device of acme reports 3 orders lost at an invalidation; `acknowledged`: the operator then
/// acknowledges that report (acme is off the rolling database then).
async fn lose_orders(s: &Server, acknowledged: bool) {
    let alice = s.token("alice").await;
    let device = s.register_device(&alice).await;
    let report = json!({"id": "r-one-instruction", "deviceId": device, "companyId": "acme",
        "reason": "invalidation", "lost": {"till": 3}});
    let sent = s.post("/devices/losses", Some(&alice), report).await;
    assert_eq!(sent.body, json!({"recorded": true}));
    if acknowledged {
        let admin = s.token("admin").await;
        let path = "/admin/rolling-db/tenants/acme/losses/acknowledge";
        let ack = s.post(path, Some(&admin), json!({"reportIds": ["r-one-instruction"]})).await;
        assert_eq!(ack.status.as_u16(), 200, "{:?}", ack.body);
    }
}

/// What acme's operators are told, by step, in the tenants view; the cluster view says the same.
async fn steps_told(s: &Server) -> Vec<String> {
    let admin = s.token("admin").await;
    let tenants = s.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    let acme = tenants["tenants"].as_array().unwrap().iter().find(|t| t["companyId"] == "acme").unwrap().clone();
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    let in_cluster = cluster["attention"].as_array().unwrap().iter().find(|a| a["companyId"] == "acme").cloned();
    let attention = &acme["attention"];
    if attention.is_null() {
        assert_eq!(in_cluster, None, "{cluster}");
        return Vec::new();
    }
    let in_cluster = in_cluster.expect("the cluster view lists acme's attention");
    assert_eq!(in_cluster["steps"], attention["steps"], "the two views tell one thing");
    let steps = attention["steps"].as_array().unwrap();
    let texts: Vec<&str> = steps.iter().map(|s| s["text"].as_str().unwrap()).collect();
    assert_eq!(attention["instruction"], texts.join(" "), "the banner's words are the steps'");
    for step in steps {
        assert!(step["text"].as_str().unwrap().starts_with(step["headline"].as_str().unwrap()), "{step}");
    }
    steps.iter().map(|s| s["step"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn the_views_and_the_alert_rules_tell_one_instruction_for_every_combination() {
    use Losses::*;
    let reset = Some(Kind::DestructiveReset);
    let missing = Some(Kind::DayDatabaseMissing);
    let day_lost = Some(Kind::ArchivedDayLost);
    // (rollingDb, the losses, another alarm raised beside them, the steps told)
    let table: &[(bool, Losses, Option<Kind>, &[&str])] = &[
        (false, None, Option::None, &[]),
        (false, Open, Option::None, &["recover-orders"]),
        (false, Acknowledged, Option::None, &[]),
        (true, None, Option::None, &[]),
        (true, Open, Option::None, &["roll-back"]),
        (true, Acknowledged, Option::None, &[]),
        (true, None, missing, &["run-rotate"]),
        (true, Open, missing, &["roll-back", "run-rotate"]),
        (true, Acknowledged, missing, &["run-rotate"]),
        (true, None, reset, &["roll-back"]),
        (true, Open, reset, &["roll-back"]),
        (true, Acknowledged, reset, &["roll-back"]),
        (false, None, reset, &["roll-back"]),
        (false, Open, reset, &["roll-back", "recover-orders"]),
        (false, None, day_lost, &["restore-day"]),
        (false, Open, day_lost, &["restore-day", "recover-orders"]),
        (false, Acknowledged, day_lost, &["restore-day"]),
    ];
    let mut wrong = Vec::new();
    for &(rolling, losses, other, expected) in table {
        let case = format!("rollingDb {rolling}, losses {losses:?}, {other:?}");
        let s = spawn().await;
        if losses != None {
            lose_orders(&s, losses == Acknowledged).await;
        }
        if let Some(kind) = other {
            let conn = s.state.store.lock().unwrap();
            alarms::raise(&conn, "acme", kind, "subject-1", "raised by the test", s.now()).unwrap();
        }
        if rolling {
            let admin = s.token("admin").await;
            let on = s.patch("/admin/rolling-db/flags/acme?force=true", Some(&admin), json!({"rollingDb": true})).await;
            assert_eq!(on.status.as_u16(), 200, "{case}: {:?}", on.body);
        }
        let told = steps_told(&s).await;
        if told != expected {
            wrong.push(format!("{case}: the views tell {told:?}, the table {expected:?}"));
            continue;
        }
        let target = metrics_listener(&s).await;
        let scrape = reqwest::get(format!("http://{target}/metrics")).await.unwrap().text().await.unwrap();
        let firing: Vec<(String, f64)> = expected.iter().map(|step| (format!("{{step=\"{step}\"}}"), 1.0)).collect();
        if let Err(promtool) = expect_after_scrape(&scrape, STEPS_FIRING, &firing) {
            wrong.push(format!("{case}: the alerts fired for other steps than {expected:?}:\n{promtool}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A loss on acme pages for the step acme is told, naming the tenant, the reason and the count.
#[tokio::test]
async fn a_loss_pages_once_naming_what_was_lost() {
    let s = spawn().await;
    lose_orders(&s, false).await;
    let target = metrics_listener(&s).await;
    let scrape = reqwest::get(format!("http://{target}/metrics")).await.unwrap().text().await.unwrap();
    let expr = r#"ALERTS{alertstate="firing", alertname=~"DeviceOrdersLost.*"}"#;
    let labels = r#"{__name__="ALERTS", alertname="DeviceOrdersLost", alertstate="firing", reason="invalidation", severity="page", step="recover-orders", tenant="acme"}"#;
    let expected = [(labels.to_owned(), 1.0)];
    expect_after_scrape(&scrape, expr, &expected).unwrap_or_else(|e| panic!("{e}"));
}
