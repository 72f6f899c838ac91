//! The device's key in the session's requests: which of them carry a proof of it, and what a
//! browser holding a copy of another's storage does when the server refuses it for want of one.

use super::*;

const NONCE: &str = "http://server.test/auth/device-nonce";

/// alice signed in on a registered device (its id stored), the requests so far forgotten;
/// `logout_answer` is what the server says to every `POST /auth/logout`.
fn keyed(logout_answer: fn() -> Result<HttpResponse, TransportError>) -> H {
    let mut inner = server(Rc::new(RefCell::new("acme".into())));
    let h = harness(move |req| match req.url.as_str() {
        "http://server.test/auth/logout" => logout_answer(),
        _ => inner(req),
    });
    h.storage.set(keys::DEVICE_ID, "dev-1").unwrap();
    assert!(block_on(h.session.login("alice", "alice-pass")).is_success());
    h.log.borrow_mut().clear();
    h.transport.requests.borrow_mut().clear();
    h
}

fn logout_requests(h: &H) -> Vec<HttpRequest> {
    let url = "http://server.test/auth/logout";
    h.transport.requests.borrow().iter().filter(|r| r.url == url).cloned().collect()
}

/// Every logout call of a registered device, in each scope and the completion too, carries the
/// device's proof for the logout route and the session's token: without it the server refuses a
/// session bound to the key.
#[test]
fn a_registered_devices_logout_proves_the_device_in_every_scope() {
    for (scope, calls) in [(LogoutScope::Local, 2), (LogoutScope::Others, 1), (LogoutScope::Global, 2)] {
        let h = keyed(|| ok(json!({"ok": true}).to_string()));
        let token = h.session.stored_token().map(|(t, _)| t);
        assert!(block_on(h.session.logout(scope)).success);
        let sent = logout_requests(&h);
        assert_eq!(sent.len(), calls, "{scope:?}");
        for request in sent {
            assert_eq!(request.prove, Some((NONCE.to_owned(), "POST /auth/logout".to_owned())), "{scope:?}");
            assert_eq!(request.bearer, token, "{scope:?}");
        }
    }
}

/// A browser whose logout the server refuses for want of the device's proof holds a copy of a
/// session that is not its own: it clears its own copy (reason `device-unproven`, as a refused
/// refresh), in every scope, and sends nothing else: no completion, no final push.
#[test]
fn a_logout_refused_for_want_of_the_devices_proof_clears_this_copy_and_sends_nothing_more() {
    for scope in [LogoutScope::Local, LogoutScope::Others, LogoutScope::Global] {
        let h = keyed(|| status(401, "device_proof_required"));
        record_hooks(&h);
        h.session.track_local_database("orders", "idb", "dynamic").unwrap();
        h.dbs.pending.borrow_mut().insert("orders".into(), 2);
        let answer = block_on(h.session.logout(scope));
        assert_eq!((answer.success, answer.code.as_deref()), (false, Some("device_proof_required")), "{scope:?}");
        assert_eq!(h.transport.paths(), ["/auth/logout"], "{scope:?}: one refused call, nothing after it");
        assert!(h.storage.get(keys::AUTH).is_none() && h.storage.get(keys::REFRESH).is_none(), "{scope:?}");
        assert_eq!(h.storage.get(keys::DEVICE_ID).as_deref(), Some("dev-1"), "{scope:?}: the device stays");
        let seen = h.log.borrow().clone();
        assert!(seen.contains(&"onSignOut device-unproven".to_owned()), "{scope:?}: {seen:?}");
        assert!(!seen.iter().any(|e| e.starts_with("push ")), "{scope:?}: a final push from a copy: {seen:?}");
    }
}
