//! `auth.fetch` and `isAuthenticated()` of the built package (tests/auth-fetch/) in Chromium.

use crate::browser::{repo_root, serve};
use crate::run_check_page;

/// The Bearer token to baseUrl's origin only, relative URLs, the local 401 without a session, a
/// refresh before an expired token's request, one refresh and one retry (its body replayed) on a
/// 401, a refresh that fails on the network, and a session ended from another session signing
/// this tab out.
#[tokio::test]
#[ignore = "needs the built pkg/ and Chromium: run `make test-package`"]
async fn auth_fetch_sends_the_token_to_the_backend_only() {
    let (base, _state) = serve(repo_root().join("tests/auth-fetch")).await;
    run_check_page(&base, "index.html", 19).await;
}
