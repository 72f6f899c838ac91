//! Which other origins' pages may replicate through the document proxy (`DOCDB_CORS_ORIGINS`).
//! PouchDB's HTTP adapter always sends `credentials: 'include'`, and browsers refuse a
//! credentialed answer with a wildcard origin: the proxy names the caller's origin, when it is
//! on this list. An entry `scheme://host:*` stands for every port of that host (test pages).

/// Whether `entry` is an origin, or an origin whose port is `*`.
pub fn is_origin_pattern(entry: &str) -> bool {
    let Some((scheme, rest)) = entry.split_once("://") else { return false };
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    matches!(scheme, "http" | "https")
        && !host.is_empty()
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '[' | ']' | ':'))
        && port.is_none_or(|p| p == "*" || (!p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())))
}

/// Whether a request's `Origin` is on the list.
pub fn allows(list: &[String], origin: &str) -> bool {
    list.iter().any(|entry| match entry.strip_suffix(":*") {
        Some(host) => origin
            .strip_prefix(host)
            .and_then(|p| p.strip_prefix(':'))
            .is_some_and(|port| !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())),
        None => entry == origin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_port_wildcards() {
        let list = vec!["http://127.0.0.1:*".to_owned(), "https://app.example.com".to_owned()];
        assert!(allows(&list, "http://127.0.0.1:40123"));
        assert!(allows(&list, "https://app.example.com"));
        for refused in [
            "http://127.0.0.1",
            "http://127.0.0.1:",
            "http://127.0.0.10:80",
            "http://127.0.0.1:80.evil.test",
            "https://app.example.com.evil.test",
            "null",
            "*",
        ] {
            assert!(!allows(&list, refused), "{refused}");
        }
        assert!(!allows(&[], "http://127.0.0.1:8080"), "the default: no other origin");
        for ok in ["http://127.0.0.1:*", "https://a.example.com", "http://localhost:8080"] {
            assert!(is_origin_pattern(ok), "{ok}");
        }
        for bad in ["*", "127.0.0.1:8080", "ftp://a", "http://", "http://a/path", "http://a:x"] {
            assert!(!is_origin_pattern(bad), "{bad}");
        }
    }
}
