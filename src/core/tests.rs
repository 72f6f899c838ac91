//! Property tests: no input from a server, from storage or from an app's arguments makes the
//! core panic (a panic poisons the wasm module). Fixed case counts keep `make test` steady.

use std::rc::Rc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use futures::executor::block_on;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::fakes::*;
use super::keys;
use super::ports::*;
use super::session::{Ports, Session, SessionConfig};
use super::token::Claims;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,16}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("token".to_string()),
                    Just("expiresIn".to_string()),
                    Just("refreshToken".to_string()),
                    Just("refreshExpiresIn".to_string()),
                    Just("docdbHeaders".to_string()),
                    Just("Remote".to_string()),
                    Just("exp".to_string()),
                    Just("roles".to_string()),
                    ".{0,6}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A JWT whose payload is `claims`, encoded.
fn jwt_of(claims: &Value) -> String {
    ["eyJhbGciOiJIUzI1NiJ9.", &URL_SAFE_NO_PAD.encode(claims.to_string()), ".c2ln"].concat()
}

fn session(storage: Rc<MemoryStorage>, answer: String) -> Session {
    let transport = FakeTransport::new(Rc::default(), move |_| {
        Ok(HttpResponse { status: 200, body: answer.clone(), retry_after: 0 })
    });
    let ports = Ports {
        storage,
        transport: Rc::new(transport),
        clock: Rc::new(FakeClock::at(1_700_000_000_000)),
        local_databases: Rc::new(FakeLocalDatabases::default()),
        reporter: Rc::new(RecordingReporter::default()),
        lock: Rc::new(FakeLock::default()),
        device_key: Rc::new(FakeDeviceKey::default()),
    };
    let mut config = SessionConfig::new("http://server.test").unwrap();
    config.auto_refresh = true;
    Session::new(config, ports)
}

/// Every read of the session, for values that must merely not panic.
fn read_everything(s: &Session) {
    let _ = (
        s.is_token_expired(),
        s.is_about_to_expire(),
        s.check_if_logged_in(),
        s.current_user(),
        s.current_roles(),
        s.current_company(),
    );
    let _ = (
        s.refresh_token(),
        s.docdb_headers(keys::HeaderKind::Remote),
        s.docdb_headers(keys::HeaderKind::Local),
        s.tracked_local_databases(),
    );
    let _ = (s.last_invalidation(), s.device_id(), s.auto_refresh_delay(), s.allows("crons:run"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn jwt_decoding_never_panics(text in ".{0,200}", claims in json_value()) {
        let _ = Claims::decode(&text);
        if let Ok(c) = Claims::decode(&jwt_of(&claims)) {
            let _ = (c.company_id(), c.user_id(), c.sid(), c.roles(), c.expires_at_ms(), c.to_value());
        }
    }

    #[test]
    fn stored_values_of_any_shape_are_read_or_dropped_never_a_panic(values in proptest::collection::vec(prop_oneof![".{0,40}", any::<i64>().prop_map(|n| n.to_string()), json_value().prop_map(|v| v.to_string()), json_value().prop_map(|v| jwt_of(&v))], 10)) {
        let storage = Rc::new(MemoryStorage::default());
        let names = [keys::AUTH, keys::REFRESH, keys::EXPIRES_AT_AUTH, keys::EXPIRES_AT_REFRESH, keys::HEADERS_REMOTE, keys::HEADERS_LOCAL, keys::DEVICE_ID, keys::LOCAL_DATABASES, keys::LAST_INVALIDATION, keys::REFRESH_LOCK];
        for (key, value) in names.iter().zip(values) {
            storage.set(key, &value).unwrap();
        }
        let s = session(storage, "{}".into());
        read_everything(&s);
        let _ = block_on(s.get_token());
        let _ = block_on(s.auto_refresh_step(true));
        read_everything(&s);
    }

    #[test]
    fn login_and_refresh_answers_of_any_shape_lose_nothing_and_never_panic(answer in prop_oneof![json_value().prop_map(|v| v.to_string()), ".{0,80}"], lifetime in any::<u64>(), exp in any::<i64>()) {
        // As sent (anything), and as a well-formed answer with absurd numbers.
        let shaped = json!({"token": jwt_of(&json!({"companyId": "acme", "exp": exp})), "expiresIn": lifetime, "refreshToken": "r", "refreshExpiresIn": lifetime}).to_string();
        for body in [answer, shaped] {
            let storage = Rc::new(MemoryStorage::default());
            let s = session(storage.clone(), body);
            let _ = block_on(s.login("u", "p"));
            read_everything(&s);
            // A refresh with a stored session: a bad answer keeps it.
            s.save_token("Auth", &jwt_of(&json!({"companyId": "acme"})), -1.0).unwrap();
            storage.set(keys::REFRESH, "r0").unwrap();
            let _ = block_on(s.get_token());
            prop_assert!(storage.get(keys::REFRESH).is_some(), "a refresh answer of any shape never loses the session");
            read_everything(&s);
        }
    }

    #[test]
    fn any_lifetime_argument_is_stored_or_refused_never_a_panic(seconds in any::<f64>()) {
        let s = session(Rc::default(), "{}".into());
        let _ = s.save_token("Auth", &jwt_of(&json!({"companyId": "acme"})), seconds);
        let _ = s.save_token("Refresh", "r", seconds);
        read_everything(&s);
    }
}
