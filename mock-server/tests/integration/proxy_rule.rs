//! The document proxy's rule (`docdb::access::decide`) held against a model written apart from
//! it, on generated requests: methods, path spellings (percent-encodings in either case, dot
//! segments, doubled and trailing slashes, `%2F` inside an id), query strings, bodies (design
//! documents anywhere a write can carry one, ids hidden behind `\u` escapes, keys given twice,
//! invalid UTF-8; the server's own `_local/day-manifest`, its id spelled or escaped), query parameters (names in another case, given twice, in `qs`'s brackets;
//! values JSON-quoted or escaped, as PouchDB Server reads every value as JSON) and callers. Nothing the model refuses is forwarded, and what is forwarded is
//! what the model read: the same database and segments, the same JSON.

use mock_server::docdb::access::{decide, Caller, Incoming, Refusal};
use mock_server::docdb::naming::TenantNames;
use proptest::prelude::*;
use serde_json::Value;

// ---- the model --------------------------------------------------------------------------------

/// Percent-decoding as a reader of URLs does it, byte by byte (`None`: not UTF-8 after).
fn model_decode(s: &str, plus_is_space: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// A generated request, with what its author knows of its body and query.
#[derive(Debug, Clone)]
struct Req {
    method: &'static str,
    path: String,
    query: Option<String>,
    body: Vec<u8>,
    /// The body's own `_id` names a design document (what `POST db`, `PUT db/id` write).
    design_at_top: bool,
    /// An `_id` in the body's `docs` names one (what `_bulk_docs` writes).
    design_in_docs: bool,
    /// The body's own `_id`, or one in its `docs`, names a document the server writes.
    owned_at_top: bool,
    owned_in_docs: bool,
    /// The body can be read two ways (a key given twice) or not at all as UTF-8.
    body_ambiguous: bool,
    query_ambiguous: bool,
    caller: Option<(&'static str, bool)>,
}

const READS_BY_POST: [&str; 4] = ["_revs_diff", "_bulk_get", "_all_docs", "_changes"];

/// The model's verdict: `true` when the request must not reach the engine.
fn model_refuses(r: &Req) -> bool {
    let Some((company, catalogue_writer)) = r.caller else { return true };
    let (db_raw, rest_raw) = match r.path.split_once('/') {
        Some((d, rest)) => (d, Some(rest)),
        None => (r.path.as_str(), None),
    };
    let Some(db) = model_decode(db_raw, false) else { return true };
    let names = TenantNames::new("dev", company, "main");
    let own: Vec<String> =
        vec![names.legacy(), names.core(), names.archive(), format!("daily_dev_{company}_main_20301231")];
    if !own.contains(&db) {
        return true;
    }
    let rest: Vec<String> = match rest_raw {
        None => Vec::new(),
        Some(raw) => match raw.split('/').map(|s| model_decode(s, false)).collect::<Option<Vec<_>>>() {
            Some(rest) => rest,
            None => return true,
        },
    };
    if rest.iter().any(|s| s == "." || s == "..") || (rest.len() > 1 && rest.iter().any(String::is_empty)) {
        return true;
    }
    if r.query_ambiguous {
        return true;
    }
    let on_database = rest.is_empty() || rest == [""];
    let reads = matches!(r.method, "GET" | "HEAD")
        || (r.method == "POST" && rest.len() == 1 && READS_BY_POST.contains(&rest[0].as_str()));
    if r.method == "POST" && r.body_ambiguous {
        return true;
    }
    if reads {
        return false;
    }
    if on_database && r.method != "POST" {
        return true;
    }
    if rest.first().is_some_and(|s| s.starts_with("_design")) {
        return true;
    }
    // The day manifest is the rotate's, whatever spells its id or whichever database it names.
    if rest.join("/") == "_local/day-manifest" {
        return true;
    }
    let attachment = r.method == "PUT" && rest.len() == 2 && rest[0] != "_local";
    let bulk = r.method == "POST" && rest == ["_bulk_docs"];
    let names_design = if bulk { r.design_in_docs } else { r.design_at_top };
    let names_owned = if bulk { r.owned_in_docs } else { r.owned_at_top };
    // GET, HEAD and DELETE carry no body in the protocol: only POST and PUT write one.
    let writes_body = matches!(r.method, "POST" | "PUT") && !attachment;
    if writes_body && (names_design || names_owned || r.body_ambiguous) {
        return true;
    }
    let local = rest.first().is_some_and(|s| s == "_local");
    if !local && db == names.archive() {
        return true;
    }
    !local && db == names.core() && !catalogue_writer
}

// ---- the generators ---------------------------------------------------------------------------

/// `s` with some characters percent-encoded, in upper or lower case hex.
fn spelled(s: &'static str) -> impl Strategy<Value = String> {
    proptest::collection::vec((any::<bool>(), any::<bool>()), s.len()).prop_map(move |choices| {
        s.chars()
            .zip(choices)
            .map(|(c, (encode, lower))| match (encode && c.is_ascii(), lower) {
                (true, false) => format!("%{:02X}", c as u32),
                (true, true) => format!("%{:02x}", c as u32),
                _ => c.to_string(),
            })
            .collect()
    })
}

fn database() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => spelled("dev_acme_main_catalog"),
        1 => spelled("dev_acme_main_core"),
        1 => spelled("dev_acme_main_archive"),
        2 => Just("daily_dev_acme_main_20301231".to_owned()),
        1 => spelled("dev_globex_main_catalog"),
        1 => Just("_all_dbs".to_owned()),
        1 => Just("_users".to_owned()),
    ]
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(".".to_owned()),
        Just("..".to_owned()),
        Just("%2e%2E".to_owned()),
        spelled("_bulk_docs"),
        spelled("_changes"),
        Just("_all_docs".to_owned()),
        Just("_revs_diff".to_owned()),
        Just("_bulk_get".to_owned()),
        spelled("_design"),
        Just("_DESIGN".to_owned()),
        spelled("_design/app"),
        Just("app".to_owned()),
        Just("_local".to_owned()),
        Just("ckpt".to_owned()),
        spelled("day-manifest"),
        spelled("_local/day-manifest"),
        spelled("order-1"),
        Just("order%2F1".to_owned()),
        Just("_security".to_owned()),
        Just("_compact".to_owned()),
        Just("%ff".to_owned()),
    ]
}

/// The part after the database: the protocol's own shapes most often, any mix of segments too.
fn rest() -> impl Strategy<Value = Option<Vec<String>>> {
    let endpoint = prop_oneof![
        spelled("_bulk_docs"),
        spelled("_changes"),
        Just("_all_docs".to_owned()),
        Just("_revs_diff".to_owned())
    ];
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(vec![String::new()])),
        4 => endpoint.prop_map(|e| Some(vec![e])),
        2 => prop_oneof![spelled("order-1"), spelled("_design/app"), Just("order%2F1".to_owned()), spelled("_local/day-manifest")].prop_map(|d| Some(vec![d])),
        2 => (prop_oneof![Just("_local".to_owned()), spelled("_local"), spelled("_design"), Just("order-1".to_owned())], segment()).prop_map(|(a, b)| Some(vec![a, b])),
        3 => proptest::collection::vec(segment(), 0..4).prop_map(Some),
    ]
}

fn path() -> impl Strategy<Value = String> {
    (database(), rest(), any::<bool>()).prop_map(|(db, rest, trailing)| match rest {
        None => db,
        Some(rest) => {
            let mut p = format!("{db}/{}", rest.join("/"));
            if trailing && !p.ends_with('/') {
                p.push('/');
            }
            p
        }
    })
}

/// What a generated query value is, as its author wrote it (the model's own names for spellings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `continuous`, `longpoll`, `eventsource`, as plain text.
    LiveFeed,
    NormalFeed,
    Number,
    Now,
    /// CouchDB's opaque sequence.
    Seq,
    True,
    False,
    Style,
    Filter,
    /// A JSON list of strings.
    Ids,
    /// Anything else: JSON-quoted, escaped, another case, a leading zero, empty…
    Doubtful,
}

const VALUES: [(&str, Kind); 28] = [
    ("continuous", Kind::LiveFeed),
    ("longpoll", Kind::LiveFeed),
    ("eventsource", Kind::LiveFeed),
    ("normal", Kind::NormalFeed),
    ("%22continuous%22", Kind::Doubtful),
    ("%22longpoll%22", Kind::Doubtful),
    ("\"eventsource\"", Kind::Doubtful),
    ("contin%5Cu0075ous", Kind::Doubtful),
    ("%22contin%5Cu0075ous%22", Kind::Doubtful),
    ("CONTINUOUS", Kind::Doubtful),
    ("continuous+", Kind::Doubtful),
    ("0", Kind::Number),
    ("250", Kind::Number),
    ("007", Kind::Doubtful),
    ("-1", Kind::Doubtful),
    ("now", Kind::Now),
    ("%22now%22", Kind::Doubtful),
    ("12-g1AAAA_x", Kind::Seq),
    ("true", Kind::True),
    ("false", Kind::False),
    ("%22true%22", Kind::Doubtful),
    ("all_docs", Kind::Style),
    ("main_only", Kind::Style),
    ("_doc_ids", Kind::Filter),
    ("app/by_type", Kind::Filter),
    ("%5B%22a%22%5D", Kind::Ids),
    ("%5B1%5D", Kind::Doubtful),
    ("", Kind::Doubtful),
];

/// Names as a device may spell them (percent-encoded, in another case, `qs`'s brackets).
const NAMES: [&str; 22] = [
    "feed",
    "feed",
    "Feed",
    "FEED",
    "fe%65d",
    "feed%5B%5D",
    "feed[a]",
    "since",
    "Since",
    "style",
    "include_docs",
    "INCLUDE_DOCS",
    "limit",
    "heartbeat",
    "timeout",
    "filter",
    "doc_ids",
    "Doc_Ids",
    "conflicts",
    "keys",
    "new_edits",
    "a+b",
];

/// The parameters the proxy and the hub read, and the kinds of value each reads one way only.
fn model_certain(name: &str, kind: Kind) -> Option<bool> {
    let kinds: &[Kind] = match name {
        "feed" => &[Kind::LiveFeed, Kind::NormalFeed],
        "since" => &[Kind::Number, Kind::Now, Kind::Seq],
        "limit" | "timeout" => &[Kind::Number],
        "heartbeat" => &[Kind::Number, Kind::True],
        "include_docs" => &[Kind::True, Kind::False],
        "style" => &[Kind::Style],
        "filter" => &[Kind::Filter],
        "doc_ids" => &[Kind::Ids],
        _ => return None,
    };
    Some(kinds.contains(&kind))
}

/// A generated query: its text and its pairs as written, with each value's kind.
#[derive(Debug, Clone)]
struct Query {
    text: String,
    pairs: Vec<(String, String, Kind)>,
}

impl Query {
    fn names(&self) -> Vec<String> {
        self.pairs.iter().map(|(n, _, _)| model_decode(n, true).unwrap_or_default()).collect()
    }

    /// Whether some engine may read it otherwise than another: a name twice in any case, a name
    /// the proxy reads spelled otherwise, a value of one it reads in a doubtful spelling.
    fn ambiguous(&self) -> bool {
        let names = self.names();
        let lower: Vec<String> = names.iter().map(|n| n.to_lowercase()).collect();
        let twice = (0..lower.len()).any(|i| lower[..i].contains(&lower[i]));
        let misspelled = names.iter().zip(&lower).any(|(n, l)| {
            let base = l.split('[').next().unwrap_or_default();
            model_certain(base, Kind::Number).is_some() && n != base
        });
        let doubtful = names.iter().zip(&self.pairs).any(|(n, (_, _, kind))| model_certain(n, *kind) == Some(false));
        twice || misspelled || doubtful
    }

    /// Whether the proxy turns it away for its filter: any but `_doc_ids`, which needs its ids
    /// (a failing filter stops PouchDB Server 4.2's process).
    fn filter_refused(&self) -> bool {
        let names = self.names();
        let value = |name: &str| {
            names.iter().position(|n| n == name).map(|i| model_decode(&self.pairs[i].1, true).unwrap_or_default())
        };
        match value("filter") {
            None => false,
            Some(filter) => filter != "_doc_ids" || value("doc_ids").is_none(),
        }
    }

    /// Whether PouchDB Server holds the feed open: `qs` (a name twice or with brackets is a
    /// list or an object), then `JSON.parse` of each value, the text kept when that fails.
    fn live_at_pouchdb(&self) -> bool {
        let names = self.names();
        let feeds: Vec<usize> = (0..names.len()).filter(|i| names[*i].split('[').next() == Some("feed")).collect();
        let [i] = feeds[..] else { return false };
        if names[i] != "feed" {
            return false;
        }
        let text = model_decode(&self.pairs[i].1, true).unwrap_or_default();
        let read = match serde_json::from_str::<Value>(&text) {
            Ok(Value::String(s)) => s,
            Ok(_) => return false,
            Err(_) => text,
        };
        ["continuous", "longpoll", "eventsource"].contains(&read.as_str())
    }

    /// Whether CouchDB holds it open: the value's text, any `feed` pair.
    fn live_at_couchdb(&self) -> bool {
        self.names().iter().zip(&self.pairs).any(|(n, (_, v, _))| {
            n == "feed"
                && ["continuous", "longpoll", "eventsource"]
                    .contains(&model_decode(v, true).unwrap_or_default().as_str())
        })
    }
}

fn generated_query() -> impl Strategy<Value = Query> {
    proptest::collection::vec((0..NAMES.len(), 0..VALUES.len(), 0..4usize), 0..5).prop_map(|picks| {
        let mut pairs = Vec::new();
        for (name, value, twice) in picks {
            pairs.push((NAMES[name].to_owned(), VALUES[value].0.to_owned(), VALUES[value].1));
            // Now and then the same name again, as written, with another value.
            if twice == 0 {
                let other = VALUES[(value + 1) % VALUES.len()];
                pairs.push((NAMES[name].to_owned(), other.0.to_owned(), other.1));
            }
        }
        let text = pairs.iter().map(|(n, v, _)| format!("{n}={v}")).collect::<Vec<_>>().join("&");
        Query { text, pairs }
    })
}

/// A query and whether it can be read two ways.
fn query() -> impl Strategy<Value = (Option<String>, bool)> {
    prop_oneof![
        1 => Just((None, false)),
        1 => Just((Some("new_edits=false".to_owned()), false)),
        1 => Just((Some("feed=continuous&since=now&heartbeat=1000".to_owned()), false)),
        1 => Just((Some("a+b=c%20d&keys=%5B%22x%22%5D".to_owned()), false)),
        3 => generated_query().prop_map(|q| {
            let ambiguous = q.ambiguous();
            (Some(q.text), ambiguous)
        }),
    ]
}

/// What a written id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names {
    Design,
    /// A document the server writes (the day manifest).
    Owned,
    Other,
}

/// An id as it is written in JSON text, and what it names.
fn id() -> impl Strategy<Value = (String, Names)> {
    prop_oneof![
        Just((r#""order-1""#.to_owned(), Names::Other)),
        Just((r#""_design/evil""#.to_owned(), Names::Design)),
        Just((r#""_design""#.to_owned(), Names::Design)),
        Just((r#""\u005fdesign/evil""#.to_owned(), Names::Design)),
        Just((r#""_\u0064esign/evil""#.to_owned(), Names::Design)),
        Just((r#""_DESIGN/x""#.to_owned(), Names::Other)),
        Just((r#""_local/x""#.to_owned(), Names::Other)),
        Just((r#""_local/day-manifest""#.to_owned(), Names::Owned)),
        Just((r#""_local\u002fday-manifest""#.to_owned(), Names::Owned)),
        Just((r#""\u005flocal/day-manifest""#.to_owned(), Names::Owned)),
        Just((r#""_local/Day-Manifest""#.to_owned(), Names::Other)),
        Just(("7".to_owned(), Names::Other)),
    ]
}

/// A generated document: its text, whether an id of it names a design document or a document
/// the server writes, whether it repeats a key.
#[derive(Debug, Clone)]
struct Doc {
    text: String,
    design: bool,
    owned: bool,
    dup: bool,
}

fn document() -> impl Strategy<Value = Doc> {
    (id(), proptest::option::of(id()), any::<bool>()).prop_map(|((first, names), second, escaped_key)| {
        let key = if escaped_key { r#""\u005fid""# } else { r#""_id""# };
        let (design, owned) = (names == Names::Design, names == Names::Owned);
        match second {
            None => Doc { text: format!("{{{key}: {first}, \"total\": 12.5}}"), design, owned, dup: false },
            // The same key twice: which one a reader keeps is the reader's choice.
            Some((other, other_names)) => Doc {
                text: format!("{{\"_id\": {first}, {key}: {other}}}"),
                design: design || other_names == Names::Design,
                owned: owned || other_names == Names::Owned,
                dup: true,
            },
        }
    })
}

/// A generated body: its bytes, what its top and its `docs` name, whether it is ambiguous.
#[derive(Debug, Clone, Default)]
struct Body {
    bytes: Vec<u8>,
    design_at_top: bool,
    design_in_docs: bool,
    owned_at_top: bool,
    owned_in_docs: bool,
    ambiguous: bool,
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        Just(Body::default()),
        document().prop_map(|d| Body {
            bytes: d.text.into_bytes(),
            design_at_top: d.design,
            owned_at_top: d.owned,
            ambiguous: d.dup,
            ..Body::default()
        }),
        (proptest::collection::vec(document(), 0..3), any::<bool>()).prop_map(|(docs, new_edits)| {
            let list: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
            let extra = if new_edits { r#""new_edits": false, "# } else { "" };
            Body {
                bytes: format!("{{{extra}\"docs\": [{}]}}", list.join(", ")).into_bytes(),
                design_in_docs: docs.iter().any(|d| d.design),
                owned_in_docs: docs.iter().any(|d| d.owned),
                ambiguous: docs.iter().any(|d| d.dup),
                ..Body::default()
            }
        }),
        document().prop_map(|d| Body {
            bytes: format!(r#"{{"docs": [], "docs": [{}]}}"#, d.text).into_bytes(),
            design_in_docs: d.design,
            owned_in_docs: d.owned,
            ambiguous: true,
            ..Body::default()
        }),
        Just(Body { bytes: b"{\"_id\": \"\xff\"}".to_vec(), ambiguous: true, ..Body::default() }),
        Just(Body {
            bytes: b"[{\"_id\": \"_design/x\"}]".to_vec(),
            design_at_top: true,
            design_in_docs: true,
            ..Body::default()
        }),
        Just(Body { bytes: b"not json".to_vec(), ..Body::default() }),
    ]
}

fn request() -> impl Strategy<Value = Req> {
    let method = prop_oneof![2 => Just("GET"), 1 => Just("HEAD"), 4 => Just("POST"), 3 => Just("PUT"), 1 => Just("DELETE"), 1 => Just("COPY"), 1 => Just("PATCH")];
    let caller = prop_oneof![1 => Just(None), 4 => Just(Some(("acme", false))), 2 => Just(Some(("acme", true))), 1 => Just(Some(("globex", false)))];
    (method, path(), query(), body(), caller).prop_map(|(method, path, (query, query_ambiguous), body, caller)| Req {
        method,
        path,
        query,
        body: body.bytes,
        design_at_top: body.design_at_top,
        design_in_docs: body.design_in_docs,
        owned_at_top: body.owned_at_top,
        owned_in_docs: body.owned_in_docs,
        body_ambiguous: body.ambiguous,
        query_ambiguous,
        caller,
    })
}

fn decided(r: &Req) -> Result<mock_server::docdb::access::Forward, Refusal> {
    let incoming = Incoming {
        method: r.method,
        path: &r.path,
        query: r.query.as_deref(),
        content_type: Some("application/json"),
        body: &r.body,
    };
    let caller = r.caller.map(|(company_id, may_write_catalogue)| Caller { company_id, may_write_catalogue });
    let names = TenantNames::new("dev", r.caller.map_or("acme", |c| c.0), "main");
    decide(&incoming, caller, |db| names.kind_of(db))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn nothing_the_model_refuses_is_forwarded(r in request()) {
        let decision = decided(&r);
        if model_refuses(&r) {
            prop_assert!(decision.is_err(), "forwarded what the model refuses: {r:?} -> {decision:?}");
        }
        if let Ok(forward) = decision {
            // The engine reads the database and segments the model read.
            let (path, _) = forward.path.split_once('?').unwrap_or((&forward.path, ""));
            let theirs: Vec<Option<String>> = path.split('/').map(|s| model_decode(s, false)).collect();
            let ours: Vec<Option<String>> = r.path.split('/').map(|s| model_decode(s, false)).collect();
            let flatten = |v: Vec<Option<String>>| v.into_iter().map(|s| s.unwrap_or_default()).collect::<Vec<_>>().join("/");
            prop_assert_eq!(flatten(theirs), flatten(ours));
            // And the JSON the model read (its body is unambiguous, or it was never sent); an
            // attachment's bytes go as they came.
            if forward.content_type.as_deref() == Some("application/json") && forward.body != r.body {
                let sent: Value = serde_json::from_slice(&forward.body).unwrap();
                let read: Value = serde_json::from_slice(&r.body).unwrap();
                prop_assert_eq!(sent, read);
            }
        }
    }

    /// A `_changes` query is forwarded exactly when every engine reads it one way (and it filters
    /// by ids, if at all), and then the proxy counts it as a live feed whenever an engine holds
    /// it open.
    #[test]
    fn a_changes_query_is_forwarded_when_it_reads_one_way_and_counted_as_the_engines_read_it(q in generated_query()) {
        let r = Req {
            method: "GET",
            path: "dev_acme_main_catalog/_changes".to_owned(),
            query: Some(q.text.clone()),
            body: Vec::new(),
            design_at_top: false,
            design_in_docs: false,
            owned_at_top: false,
            owned_in_docs: false,
            body_ambiguous: false,
            query_ambiguous: q.ambiguous(),
            caller: Some(("acme", false)),
        };
        let decision = decided(&r);
        prop_assert_eq!(decision.is_ok(), !q.ambiguous() && !q.filter_refused(), "{:?} -> {:?}", q, decision);
        if q.ambiguous() {
            prop_assert!(matches!(decision, Err(Refusal::Unreadable(_))), "{:?}", decision);
        }
        if let Ok(forward) = decision {
            prop_assert!(!(q.live_at_pouchdb() || q.live_at_couchdb()) || forward.live_feed, "{:?}", q);
            prop_assert_eq!(forward.live_feed, q.live_at_couchdb(), "{:?}", q);
        }
    }

    /// A device's checkpoint under its replication's id, on any database of its tenant, however
    /// the id is spelled: the devices' own to write, in the body too.
    #[test]
    fn a_device_s_checkpoint_stays_its_own_to_write(
        db in prop_oneof![spelled("dev_acme_main_catalog"), spelled("dev_acme_main_core"), spelled("dev_acme_main_archive"), Just("daily_dev_acme_main_20301231".to_owned())],
        id in "[A-Za-z0-9_.~-]{1,40}".prop_filter("the manifest", |id| id != "day-manifest" && id != "." && id != ".."),
        with_id in any::<bool>(),
        writer in any::<bool>(),
    ) {
        let body = if with_id { format!(r#"{{"_id":"_local/{id}","last_seq":"3-x"}}"#) } else { r#"{"last_seq":"3-x"}"#.to_owned() };
        let r = Req {
            method: "PUT",
            path: format!("{db}/_local/{id}"),
            query: None,
            body: body.into_bytes(),
            design_at_top: false,
            design_in_docs: false,
            owned_at_top: false,
            owned_in_docs: false,
            body_ambiguous: false,
            query_ambiguous: false,
            caller: Some(("acme", writer)),
        };
        prop_assert!(!model_refuses(&r));
        let decision = decided(&r);
        prop_assert!(decision.is_ok(), "{:?} -> {:?}", r, decision);
    }

    #[test]
    fn any_request_is_decided_without_a_panic(
        method in "[A-Za-z]{1,8}",
        path in "\\PC{0,60}",
        query in proptest::option::of("\\PC{0,40}"),
        body in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let incoming = Incoming { method: &method, path: &path, query: query.as_deref(), content_type: None, body: &body };
        let names = TenantNames::new("dev", "acme", "main");
        let _ = decide(&incoming, Some(Caller { company_id: "acme", may_write_catalogue: true }), |db| names.kind_of(db));
    }
}
