//! The query parameters the document proxy and the changes hub act on, accepted only in spellings
//! every engine reads one way. CouchDB takes a query value as its text; PouchDB Server (Express)
//! first runs the query through `qs` (a name given twice becomes a list, `name[...]` a nested
//! object) and then parses every value as JSON, keeping the text only when that fails. So
//! `feed=%22continuous%22` is a normal feed to a reader of the text and a continuous one to
//! PouchDB Server; `Feed=continuous` is nothing to either, but a reader that folds case would
//! take it. Rules only (no HTTP): `judge` answers why a query cannot be read one way.

use serde_json::Value;

/// Every parameter the proxy (`feed`) or the hub (all of them) reads.
pub const ACTED_ON: [&str; 9] =
    ["feed", "filter", "style", "since", "include_docs", "doc_ids", "limit", "heartbeat", "timeout"];

/// More pairs than `qs` reads by default (1,000) would let the engine see fewer than were judged;
/// no replication sends more than a dozen.
pub const MAX_PAIRS: usize = 100;

/// The largest number read as digits: JavaScript reads integers exactly up to 2^53.
const MAX_DIGITS: usize = 15;

fn digits(v: &str) -> bool {
    // A leading zero (`007`) is not JSON, so PouchDB Server would keep it as text.
    !v.is_empty() && v.len() <= MAX_DIGITS && v.bytes().all(|b| b.is_ascii_digit()) && (v == "0" || !v.starts_with('0'))
}

/// A word of `[A-Za-z0-9_-]`: never JSON, never escaped, the same text to every reader.
fn word(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `now`, a number, or CouchDB's opaque sequence (`12-g1AAAA…`, its tail base64url).
fn since(v: &str) -> bool {
    v == "now" || digits(v) || v.split_once('-').is_some_and(|(n, tail)| digits(n) && word(tail))
}

/// A built-in filter (`_doc_ids`, `_selector`, `_view`, `_design`) or `ddoc/name`.
fn filter(v: &str) -> bool {
    match v.split_once('/') {
        None => v.starts_with('_') && word(v),
        Some((ddoc, name)) => word(ddoc) && word(name),
    }
}

/// A JSON list of ids, read strictly (no key twice, no lone surrogate): JSON on both sides.
fn doc_ids(v: &str) -> bool {
    matches!(crate::docdb::strict_json::parse(v.as_bytes()), Ok(Value::Array(ids)) if ids.iter().all(Value::is_string))
}

/// Whether `value` of the acted-on parameter `name` has one meaning on every engine.
fn certain(name: &str, value: &str) -> bool {
    match name {
        "feed" => matches!(value, "normal" | "longpoll" | "continuous" | "eventsource"),
        "style" => matches!(value, "main_only" | "all_docs"),
        "include_docs" => matches!(value, "true" | "false"),
        "since" => since(value),
        "filter" => filter(value),
        "doc_ids" => doc_ids(value),
        "limit" | "timeout" => digits(value),
        "heartbeat" => value == "true" || digits(value),
        _ => true,
    }
}

/// `Ok` when every engine reads the decoded `pairs` as the proxy does; else why not.
pub fn judge(pairs: &[(String, String)]) -> Result<(), String> {
    if pairs.len() > MAX_PAIRS {
        return Err(format!("a query of more than {MAX_PAIRS} parameters"));
    }
    let mut seen: Vec<String> = Vec::with_capacity(pairs.len());
    for (name, value) in pairs {
        let folded = name.to_ascii_lowercase();
        // `qs` reads `feed[]=x` and `feed[a]=x` as `feed`: a list or an object, not the text.
        let base = folded.split('[').next().unwrap_or_default();
        if seen.contains(&folded) {
            return Err(format!("the query names {name:?} twice (in some spelling)"));
        }
        seen.push(folded.clone());
        if !ACTED_ON.contains(&base) {
            continue;
        }
        if name != base {
            return Err(format!("{name:?} is not {base:?}: the query's names are read as written"));
        }
        if !certain(name, value) {
            return Err(format!("{name}={value:?} is not a spelling every engine reads the same way"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::judge;

    fn q(pairs: &[(&str, &str)]) -> Result<(), String> {
        judge(&pairs.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect::<Vec<_>>())
    }

    #[test]
    fn what_replications_send_passes() {
        for pairs in [
            &[("feed", "longpoll"), ("style", "all_docs"), ("heartbeat", "10000"), ("since", "0"), ("limit", "100")][..],
            &[("feed", "continuous"), ("since", "now"), ("include_docs", "true"), ("timeout", "60000")],
            &[("filter", "_doc_ids"), ("doc_ids", r#"["a","b\"c"]"#), ("since", "12-g1AAAA_b-x")],
            &[("filter", "app/by_type"), ("conflicts", "true"), ("seq_interval", "100"), ("heartbeat", "true")],
            &[("keys", r#"["x"]"#), ("startkey", "\"a\"")],
        ] {
            assert_eq!(q(pairs), Ok(()), "{pairs:?}");
        }
    }

    #[test]
    fn spellings_engines_read_differently_are_refused() {
        for pairs in [
            &[("feed", "\"continuous\"")][..],
            &[("feed", "\"longpoll\"")],
            &[("feed", "contin\\u0075ous")],
            &[("feed", "Continuous")],
            &[("feed", "")],
            &[("Feed", "continuous")],
            &[("FEED", "normal")],
            &[("feed[]", "continuous")],
            &[("feed[a]", "continuous")],
            &[("feed", "normal"), ("feed", "continuous")],
            &[("feed", "normal"), ("Feed", "continuous")],
            &[("x", "1"), ("X", "2")],
            &[("since", "\"now\"")],
            &[("since", "007")],
            &[("since", "-1")],
            &[("since", "1e3")],
            &[("limit", "1.0")],
            &[("limit", "9999999999999999")],
            &[("include_docs", "1")],
            &[("style", "\"all_docs\"")],
            &[("heartbeat", "false")],
            &[("filter", "\"_doc_ids\"")],
            &[("filter", "true")],
            &[("doc_ids", "\"a\"")],
            &[("doc_ids", "[1]")],
            &[("doc_ids", r#"["\ud800"]"#)],
        ] {
            assert!(q(pairs).is_err(), "{pairs:?}");
        }
        let many: Vec<(String, String)> = (0..101).map(|i| (format!("p{i}"), String::new())).collect();
        assert!(judge(&many).is_err());
    }
}
