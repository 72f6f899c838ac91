//! Sessions that have ended (logout, a password or role change, a deleted user, a reused refresh
//! token) while access tokens naming them may still be unexpired. An access token is checked
//! against this list in memory, so a live session's requests stay as fast as a JWT check; the
//! store stays the truth (a session is live while its refresh family holds an unrevoked,
//! unexpired token), and the list is filled from it at start and, across replicas, from the
//! store's notifications. An entry is kept until every access token of its session has expired.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::clock::Clock;
use crate::docdb::feeds::Feeds;
use crate::store::refresh_tokens::SessionState;

/// What a session holds on this process that its end must reach.
#[derive(Clone, Default)]
pub struct Sessions {
    /// Sessions ended while their access tokens may be unexpired.
    pub ended: Arc<EndedSessions>,
    /// The `_changes` feeds each session holds open through the proxy.
    pub feeds: Arc<Feeds>,
    /// The realtime sockets each session holds open.
    pub sockets: Arc<Feeds>,
    /// How long an access token lives (`ACCESS_TOKEN_TTL_SECS`).
    pub token_ttl_secs: u64,
}

impl Sessions {
    /// `session` ended at `ended_at_ms`: its access tokens are refused until the last of them has
    /// expired, its open feeds and sockets are cut.
    pub fn end(&self, clock: &Clock, session: &str, ended_at_ms: i64) {
        let until = ended_at_ms
            .div_euclid(1000)
            .saturating_add(i64::try_from(self.token_ttl_secs).unwrap_or(i64::MAX))
            .saturating_add(1);
        self.ended.end(session, until, clock.now_secs());
        self.feeds.cut(session);
        self.sockets.cut(session);
    }
}

/// What an unexpired access token of `session` may do. A session off the ended list is live
/// without a store read (the fast path); one on it may be inside its logout's sign-out window,
/// which only the store knows (a completion or a password change on any replica ends it), so only
/// then is the store read: the token works exactly as long as the session's document headers do.
pub fn access<E>(
    ended: &EndedSessions,
    session: &str,
    now_secs: i64,
    in_store: impl FnOnce() -> Result<SessionState, E>,
) -> Result<SessionState, E> {
    if !ended.contains(session, now_secs) {
        return Ok(SessionState::Live);
    }
    Ok(match in_store()? {
        SessionState::SigningOut => SessionState::SigningOut,
        // Ended, or live again by nothing: a session on the list never comes back.
        SessionState::Live | SessionState::Ended => SessionState::Ended,
    })
}

/// Entries past which the list drops those whose tokens have all expired.
const TIDY_AT: usize = 4096;

#[derive(Default)]
pub struct EndedSessions {
    until: Mutex<HashMap<String, i64>>,
    /// The list's size at which it is next tidied (doubles while every entry is still needed).
    tidy_at: Mutex<usize>,
}

impl EndedSessions {
    /// `session` ended; its access tokens expire by `until_secs` at the latest.
    pub fn end(&self, session: &str, until_secs: i64, now_secs: i64) {
        let mut until = self.until.lock().unwrap_or_else(|p| p.into_inner());
        let at = until.entry(session.to_owned()).or_insert(until_secs);
        *at = (*at).max(until_secs);
        let mut tidy_at = self.tidy_at.lock().unwrap_or_else(|p| p.into_inner());
        if until.len() >= (*tidy_at).max(TIDY_AT) {
            until.retain(|_, at| *at > now_secs);
            *tidy_at = (until.len() * 2).max(TIDY_AT);
        }
    }

    /// Whether `session` has ended (for a token that is still unexpired at `now_secs`).
    pub fn contains(&self, session: &str, now_secs: i64) -> bool {
        self.until.lock().unwrap_or_else(|p| p.into_inner()).get(session).is_some_and(|at| *at > now_secs)
    }

    pub fn len(&self) -> usize {
        self.until.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_until_the_tokens_expire_then_tidied() {
        let ended = EndedSessions::default();
        ended.end("s1", 1_900, 1_000);
        assert!(ended.contains("s1", 1_899));
        assert!(!ended.contains("s1", 1_900), "every token of s1 has expired by then");
        assert!(!ended.contains("s2", 1_000));
        for i in 0..TIDY_AT - 1 {
            ended.end(&format!("old-{i}"), 1_500, 1_600);
        }
        ended.end("s3", 3_000, 1_600);
        assert_eq!(ended.len(), 2, "the expired entries went when the list grew");
        assert!(ended.contains("s1", 1_600) && ended.contains("s3", 1_600));
    }

    #[test]
    fn an_ended_session_works_only_inside_its_window_and_a_live_one_reads_nothing() {
        let ended = EndedSessions::default();
        ended.end("s1", 1_900, 1_000);
        let unread = || -> Result<SessionState, ()> { panic!("a live session's token reads the store") };
        assert_eq!(access(&ended, "s2", 1_000, unread), Ok(SessionState::Live));
        let stored = |state| move || Ok::<_, ()>(state);
        assert_eq!(access(&ended, "s1", 1_000, stored(SessionState::SigningOut)), Ok(SessionState::SigningOut));
        assert_eq!(access(&ended, "s1", 1_000, stored(SessionState::Ended)), Ok(SessionState::Ended));
        assert_eq!(access(&ended, "s1", 1_000, stored(SessionState::Live)), Ok(SessionState::Ended));
    }
}
