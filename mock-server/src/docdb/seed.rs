//! The demo cluster: each company's legacy catalogue database, holding its STATIC catalogue with
//! an edit history (so its `update_seq` is well above its document count) and a few DYNAMIC
//! documents that belong to days, not to the catalogue.

use serde_json::{json, Map, Value};

use super::documents::Write;
use super::{bulk_put, create, Cluster, DocDbResult, Kind};
use crate::docdb::naming::TenantNames;

fn body(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Seeds `company`'s legacy catalogue unless the catalogue lists it, through `_bulk_docs`: the
/// whole catalogue, then two rounds of price edits, so the engine itself reports an `update_seq`
/// above the document count, as a long-lived legacy database has.
pub fn seed_legacy(c: &Cluster, names: &TenantNames, company: &str, now_ms: i64) -> DocDbResult<()> {
    let db = names.legacy();
    if super::exists(c, &db)? {
        return Ok(());
    }
    // A database the catalogue does not know is a leftover of an earlier run on the same engine:
    // a seed starts from nothing. (Asked first: PouchDB Server races a `DELETE` of a database it
    // never had with the `PUT` after it.)
    if c.docs().counts(&db)?.is_some() {
        c.docs().delete_db(&db)?;
    }
    create(c, &db, company, Kind::Legacy, now_ms)?;
    let categories = ["drinks", "bakery", "deli"];
    let products = [
        ("espresso", "drinks", 180),
        ("cappuccino", "drinks", 260),
        ("green-tea", "drinks", 220),
        ("orange-juice", "drinks", 300),
        ("croissant", "bakery", 190),
        ("baguette", "bakery", 240),
        ("muffin", "bakery", 210),
        ("bagel", "bakery", 200),
        ("ham-sandwich", "deli", 450),
        ("cheese-plate", "deli", 620),
        ("salad", "deli", 540),
        ("soup", "deli", 480),
    ];
    let fresh = |id: String, v: Value| Write { id, body: body(v), rev: None };
    let product = |name: &str, category: &str, price: i64| {
        body(json!({ "type": "product", "class": "STATIC", "name": name, "category": category, "priceCents": price }))
    };
    let mut first: Vec<Write> = categories
        .iter()
        .map(|c| fresh(format!("category:{c}"), json!({ "type": "category", "class": "STATIC", "name": c })))
        .collect();
    first.push(fresh(
        "tax:standard".into(),
        json!({ "type": "tax", "class": "STATIC", "name": "standard", "rate": 0.2 }),
    ));
    first.push(fresh(
        "tax:reduced".into(),
        json!({ "type": "tax", "class": "STATIC", "name": "reduced", "rate": 0.055 }),
    ));
    for n in 1..=3 {
        first.push(fresh(
            format!("order:legacy-{n}"),
            json!({ "type": "order", "class": "DYNAMIC", "status": "paid", "totalCents": 100 * n }),
        ));
    }
    written(bulk_put(c, &db, first)?)?;
    // Three generations of each product, as a long-lived catalogue has.
    let mut revs: Vec<Option<String>> = vec![None; products.len()];
    for discount in [20, 10, 0] {
        let writes = products
            .iter()
            .zip(&revs)
            .map(|((name, category, price), rev)| Write {
                id: format!("product:{name}"),
                body: product(name, category, price - discount),
                rev: rev.clone(),
            })
            .collect();
        revs = written(bulk_put(c, &db, writes)?)?.into_iter().map(Some).collect();
    }
    Ok(())
}

/// The revisions of a bulk write, or its first refusal.
fn written(answers: Vec<DocDbResult<String>>) -> DocDbResult<Vec<String>> {
    answers.into_iter().collect()
}
