//! The demo cluster: each company's legacy catalogue database, holding its STATIC catalogue with
//! an edit history (so its `update_seq` is well above its document count) and a few DYNAMIC
//! documents that belong to days, not to the catalogue.

use rusqlite::Connection;
use serde_json::{json, Map, Value};

use super::{create, put, DocDbResult, Kind};
use crate::rolling::naming::TenantNames;

fn body(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Seeds `company`'s legacy catalogue unless it exists.
pub fn seed_legacy(conn: &Connection, names: &TenantNames, company: &str, now_ms: i64) -> DocDbResult<()> {
    let db = names.legacy();
    if super::exists(conn, &db)? {
        return Ok(());
    }
    create(conn, &db, company, Kind::Legacy, now_ms)?;
    let categories = ["drinks", "bakery", "deli"];
    let products = [
        ("espresso", "drinks", 180), ("cappuccino", "drinks", 260), ("green-tea", "drinks", 220), ("orange-juice", "drinks", 300),
        ("croissant", "bakery", 190), ("baguette", "bakery", 240), ("muffin", "bakery", 210), ("bagel", "bakery", 200),
        ("ham-sandwich", "deli", 450), ("cheese-plate", "deli", 620), ("salad", "deli", 540), ("soup", "deli", 480),
    ];
    for c in categories {
        put(conn, &db, &format!("category:{c}"), body(json!({ "type": "category", "class": "STATIC", "name": c })), None)?;
    }
    put(conn, &db, "tax:standard", body(json!({ "type": "tax", "class": "STATIC", "name": "standard", "rate": 0.2 })), None)?;
    put(conn, &db, "tax:reduced", body(json!({ "type": "tax", "class": "STATIC", "name": "reduced", "rate": 0.055 })), None)?;
    for (name, category, price) in products {
        let id = format!("product:{name}");
        // Three generations of edits, as a long-lived catalogue has.
        let mut rev = put(conn, &db, &id, body(json!({ "type": "product", "class": "STATIC", "name": name, "category": category, "priceCents": price - 20 })), None)?;
        rev = put(conn, &db, &id, body(json!({ "type": "product", "class": "STATIC", "name": name, "category": category, "priceCents": price - 10 })), Some(&rev))?;
        put(conn, &db, &id, body(json!({ "type": "product", "class": "STATIC", "name": name, "category": category, "priceCents": price })), Some(&rev))?;
    }
    for n in 1..=3 {
        put(conn, &db, &format!("order:legacy-{n}"), body(json!({ "type": "order", "class": "DYNAMIC", "status": "paid", "totalCents": 100 * n })), None)?;
    }
    Ok(())
}
