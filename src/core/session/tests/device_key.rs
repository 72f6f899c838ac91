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

/// The proofs each request asks for, as (route, required).
fn proofs(h: &H) -> Vec<(String, bool)> {
    let requests = h.transport.requests.borrow();
    requests.iter().filter_map(|r| r.prove.as_ref().map(|(_, route)| (route.clone(), r.keyed))).collect()
}

/// Whether a proof is required follows what the SDK stores: a device registered with this
/// browser's key is known to be keyed (a proof that cannot be made fails the request); one
/// registered where the browser kept no key (IndexedDB never opened: the server holds no key for
/// it) is asked for a proof only of a key the browser may hold, so without one it signs in,
/// refreshes and logs out unproven. Another device id stored since is not the keyed one.
#[test]
fn a_proof_is_required_only_of_a_device_registered_with_this_browsers_key() {
    let (h, _) = logged_in();
    let walk = |h: &H| {
        h.transport.requests.borrow_mut().clear();
        assert!(block_on(h.session.login("alice", "alice-pass")).is_success());
        assert!(block_on(h.session.refresh_authentication()));
        assert!(block_on(h.session.logout(LogoutScope::Local)).success);
        let routes = ["POST /auth", "POST /auth/refresh", "POST /auth/logout", "POST /auth/logout"];
        let required: Vec<bool> = proofs(h).iter().map(|(_, keyed)| *keyed).collect();
        assert_eq!(proofs(h).iter().map(|(r, _)| r.as_str()).collect::<Vec<_>>(), routes);
        required
    };
    assert!(matches!(block_on(h.session.register_device()), DeviceResult::Success { .. }));
    assert_eq!(h.storage.get(keys::DEVICE_KEYED), None, "registered without a key");
    assert_eq!(walk(&h), [false; 4], "a device the server holds no key for");

    *h.key.public.borrow_mut() = Some("04ab".into());
    assert!(block_on(h.session.login("alice", "alice-pass")).is_success());
    block_on(h.session.register_device());
    assert_eq!(h.storage.get(keys::DEVICE_KEYED).as_deref(), Some("dev-1"));
    assert_eq!(walk(&h), [true; 4], "registered with this browser's key");

    // A device id stored since (registered again elsewhere, not with this key) is not the keyed one.
    h.storage.set(keys::DEVICE_ID, "dev-2").unwrap();
    assert_eq!(walk(&h), [false; 4], "another device, registered without this key");
}

/// alice signed in on registered device `dev-1` with one loss report kept for `acme`; the loss
/// route answers with `answers`, in turn (the last one for the rest).
fn with_a_loss_report(answers: Vec<Result<HttpResponse, TransportError>>) -> H {
    let mut inner = server(Rc::new(RefCell::new("acme".into())));
    let answers = RefCell::new(answers);
    let h = harness(move |req| match req.url.as_str() {
        "http://server.test/devices/losses" => {
            let mut answers = answers.borrow_mut();
            if answers.len() > 1 {
                answers.remove(0)
            } else {
                answers[0].clone()
            }
        }
        _ => inner(req),
    });
    h.storage.set(keys::DEVICE_ID, "dev-1").unwrap();
    assert!(block_on(h.session.login("alice", "alice-pass")).is_success());
    let lost = vec![("acme".to_owned(), "orders".to_owned(), json!(3))];
    h.session.keep_loss_reports(crate::protocol::losses::LossReason::Invalidation, lost);
    h.transport.requests.borrow_mut().clear();
    h
}

fn kept_reports(h: &H) -> Vec<Value> {
    h.storage.get(keys::LOSSES).map(|s| serde_json::from_str(&s).unwrap()).unwrap_or_default()
}

/// A loss report carries the device's proof, as a refresh does. The server's 429 keeps it, with
/// the earliest time its `Retry-After` names: tried again only once the clock has reached it.
#[test]
fn a_loss_report_is_proven_and_after_a_429_waits_for_its_retry_after() {
    let too_many = Ok(HttpResponse { status: 429, body: "{}".into(), retry_after: 30 });
    let h = with_a_loss_report(vec![too_many, ok(json!({"ok": true}).to_string())]);
    block_on(h.session.send_losses());
    let sent = sent_to(&h, "/devices/losses");
    assert_eq!(sent.len(), 1);
    let request = h.transport.requests.borrow().last().cloned().unwrap();
    assert_eq!(request.prove.map(|(_, route)| route).as_deref(), Some("POST /devices/losses"));
    assert_eq!(request.bearer, h.session.stored_token().map(|(t, _)| t));
    assert_eq!(kept_reports(&h).len(), 1, "kept");
    let retry_at = h.storage.get(keys::LOSSES_RETRY_AT);
    assert_eq!(retry_at, Some((NOW + 30_000).to_string()), "with when it may go again");

    for at in [NOW + 10_000, NOW + 29_999] {
        h.clock.0.set(at);
        block_on(h.session.send_losses());
        assert_eq!(sent_to(&h, "/devices/losses").len(), 1, "sent again {} ms after a Retry-After of 30 s", at - NOW);
    }
    h.clock.0.set(NOW + 30_000);
    block_on(h.session.send_losses());
    let sent = sent_to(&h, "/devices/losses");
    assert_eq!(sent.len(), 2, "tried again once the time has passed");
    assert_eq!(sent[1], sent[0], "the same report");
    assert_eq!(kept_reports(&h), Vec::<Value>::new(), "taken: forgotten");
}

/// Refused for want of the device's proof, the report came from a browser holding a copy of
/// another's session, which must not report for the device: it is dropped, not sent again.
#[test]
fn a_loss_report_refused_for_want_of_the_devices_proof_is_dropped() {
    let h = with_a_loss_report(vec![status(401, "device_proof_required")]);
    block_on(h.session.send_losses());
    assert_eq!(sent_to(&h, "/devices/losses").len(), 1);
    assert_eq!(kept_reports(&h), Vec::<Value>::new());
    // Any other refusal or failure keeps it for the next try.
    let h = with_a_loss_report(vec![status(401, "session_ended")]);
    block_on(h.session.send_losses());
    assert_eq!(kept_reports(&h).len(), 1);
}
