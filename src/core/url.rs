//! Validation of the `baseUrl` option and joining of paths onto it.

/// Checks `raw` is an absolute http(s) URL with a host; returns it without trailing slashes.
pub fn normalize_base_url(raw: &str) -> Result<String, String> {
    let trimmed = raw.trim();
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"))
        .ok_or_else(|| ["baseUrl must be an absolute http(s) URL, got \"", raw, "\""].concat())?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(["baseUrl has no host: \"", raw, "\""].concat());
    }
    if rest.contains(['?', '#']) {
        return Err(["baseUrl must not carry a query or fragment: \"", raw, "\""].concat());
    }
    Ok(trimmed.trim_end_matches('/').to_owned())
}

/// `base` + `path`, with exactly one slash between them.
pub fn join(base: &str, path: &str) -> String {
    [base.trim_end_matches('/'), "/", path.trim_start_matches('/')].concat()
}

/// The realtime URL: `baseUrl` with `ws(s)://` and `/realtime`.
pub fn realtime_url(base: &str) -> String {
    let ws = if let Some(rest) = base.strip_prefix("https://") {
        ["wss://", rest].concat()
    } else if let Some(rest) = base.strip_prefix("http://") {
        ["ws://", rest].concat()
    } else {
        base.to_owned()
    };
    join(&ws, crate::protocol::routes::REALTIME.path)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn accepts_http_urls_and_trims_slash() {
        assert_eq!(normalize_base_url("http://127.0.0.1:8080/").unwrap(), "http://127.0.0.1:8080");
        assert_eq!(normalize_base_url("https://api.example.com/v1").unwrap(), "https://api.example.com/v1");
    }

    #[test]
    fn rejects_bad_urls() {
        for bad in ["", "example.com", "ftp://x", "http://", "http:///x", "http://a?b=1"] {
            assert!(normalize_base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn joins_and_builds_ws_url() {
        assert_eq!(join("http://a/", "/auth"), "http://a/auth");
        assert_eq!(realtime_url("https://a/api"), "wss://a/api/realtime");
        assert_eq!(realtime_url("http://127.0.0.1:1"), "ws://127.0.0.1:1/realtime");
    }
}
