//! The replicas alive, as every replica of a store sees them: each writes its heartbeat into the
//! store (`mock_replicas`) every `HEARTBEAT` and reads back those heard within `GONE_AFTER`, the
//! store's own clock deciding (no two replicas' clocks are compared). A replica that dies, or
//! cannot reach the store, drops out of the others' lists within `GONE_AFTER` (and one that cannot
//! reach it takes itself for alone); one that stops gracefully leaves at once. Its tenants then
//! have another owner.
//!
//! A replica decides no owner before its list is settled: read back from the store one
//! `HEARTBEAT` after its own first heartbeat was written, so replicas started together have each
//! heard the others (or, the store silent for `GONE_AFTER`, alone). Until then every replica would
//! take itself for the only one, and the engine would hold a feed a replica for a database until
//! the lists agree.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::NoTls;

use super::owner::{owner, Member};

/// How often a replica says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// A replica not heard for this long is taken for gone (several heartbeats: one slowed by a busy
/// store does not move tenants back and forth); a replica that has not reached the store for this
/// long takes itself for alone and reads the engine's feeds itself.
pub const GONE_AFTER: Duration = Duration::from_secs(5);

/// A replica's row gone (it leaves).
const FORGET: &str = "DELETE FROM mock_replicas WHERE id = $1";

/// Why a heartbeat failed.
#[derive(Debug, thiserror::Error)]
enum BeatError {
    #[error("the store")]
    Store(#[from] tokio_postgres::Error),
    #[error("the store did not answer within {GONE_AFTER:?}")]
    Silent,
}

pub struct Members {
    me: Member,
    live: RwLock<Arc<Vec<Member>>>,
    /// Bumped whenever the list changes (a feed read from an owner asks then whether it still is).
    changed: watch::Sender<u64>,
    /// Set once the list is settled (see the module's note); never unset.
    settled: watch::Sender<bool>,
    /// Set when this replica leaves (a graceful stop): no more heartbeats, and the feeds it serves
    /// to the others end.
    leaving: watch::Sender<bool>,
}

impl Members {
    /// This replica alone (one server), its list settled.
    pub fn alone(me: Member) -> Arc<Members> {
        Members::unsettled(me, true)
    }

    fn unsettled(me: Member, settled: bool) -> Arc<Members> {
        Arc::new(Members {
            live: RwLock::new(Arc::new(vec![me.clone()])),
            me,
            changed: watch::channel(0).0,
            settled: watch::channel(settled).0,
            leaving: watch::channel(false).0,
        })
    }

    /// Joins the replicas of the store at `database_url`, until [`Members::leave`].
    pub fn join(database_url: String, me: Member) -> Arc<Members> {
        let members = Members::unsettled(me, false);
        let kept = members.clone();
        crate::bridge::spawn(async move {
            let mut heard = tokio::time::Instant::now();
            // Counted over every connection: one that fails after its first read every time
            // still settles the list at the second read.
            let mut reads = 0;
            while !*kept.leaving.borrow() {
                if let Err(e) = kept.beat_on(&database_url, &mut heard, &mut reads).await {
                    crate::recorded::connection_failed(crate::recorded::Upstream::Postgres);
                    crate::recorded::retried(crate::recorded::Upstream::Postgres);
                    tracing::warn!("the replicas' heartbeat: {}; again", crate::causes::chain(&e));
                }
                if heard.elapsed() > GONE_AFTER {
                    // The others no longer count this replica: it owns nothing of theirs either.
                    kept.set(Vec::new());
                    kept.settle();
                }
                tokio::time::sleep(HEARTBEAT).await;
            }
        });
        members
    }

    pub fn me(&self) -> &Member {
        &self.me
    }

    pub fn live(&self) -> Arc<Vec<Member>> {
        self.live.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The owner of `key` among the replicas alive (this one when it hears of none).
    pub fn owner(&self, key: &str) -> Member {
        owner(key, &self.live()).cloned().unwrap_or_else(|| self.me.clone())
    }

    /// Resolves once the list is settled: at most `GONE_AFTER` and a heartbeat after joining.
    pub async fn settled(&self) {
        let mut settled = self.settled.subscribe();
        let _ = settled.wait_for(|s| *s).await;
    }

    fn settle(&self) {
        self.settled.send_if_modified(|s| !std::mem::replace(s, true));
    }

    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Resolves once `key`'s owner is no longer `owner`: asked at once (a change made before the
    /// caller looked is not missed), then at each change of the list.
    pub async fn moved(&self, key: &str, owner: &str) {
        let mut changes = self.changes();
        while self.owner(key).id == owner {
            if changes.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Resolves once this replica is leaving.
    pub async fn left(&self) {
        let mut leaving = self.leaving.subscribe();
        let _ = leaving.wait_for(|l| *l).await;
    }

    fn set(&self, mut live: Vec<Member>) {
        // This replica is alive to itself, even before its own first heartbeat is read back.
        if !live.iter().any(|m| m.id == self.me.id) {
            live.push(self.me.clone());
        }
        live.sort_by(|a, b| a.id.cmp(&b.id));
        let mut held = self.live.write().unwrap_or_else(|p| p.into_inner());
        if **held != live {
            *held = Arc::new(live);
            drop(held);
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// Heartbeats on one connection until it fails, is silent for `GONE_AFTER`, or this replica
    /// leaves; `heard` is when the store last answered, `reads` how many times it was read.
    async fn beat_on(
        &self,
        database_url: &str,
        heard: &mut tokio::time::Instant,
        reads: &mut usize,
    ) -> Result<(), BeatError> {
        let silent = |_| BeatError::Silent;
        let (client, connection) =
            tokio::time::timeout(GONE_AFTER, tokio_postgres::connect(database_url, NoTls)).await.map_err(silent)??;
        let driver = tokio::spawn(connection);
        let result = async {
            let beat = client
                .prepare(
                    "INSERT INTO mock_replicas (id, url, seen_at) VALUES ($1, $2, now())
                     ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, seen_at = now()",
                )
                .await?;
            let alive = client
                .prepare("SELECT id, url FROM mock_replicas WHERE seen_at > now() - make_interval(secs => $1)")
                .await?;
            while !*self.leaving.borrow() {
                let rows = tokio::time::timeout(GONE_AFTER, async {
                    client.execute(&beat, &[&self.me.id, &self.me.url]).await?;
                    client.query(&alive, &[&GONE_AFTER.as_secs_f64()]).await
                })
                .await
                .map_err(silent)??;
                *heard = tokio::time::Instant::now();
                if *self.leaving.borrow() {
                    // `leave` came while this beat was on its way: its row goes again.
                    client.execute(FORGET, &[&self.me.id]).await?;
                    break;
                }
                self.set(rows.iter().map(|r| Member { id: r.get(0), url: r.get(1) }).collect());
                // The second read comes a heartbeat after this replica's first row: replicas
                // started with it have written theirs by then.
                *reads += 1;
                if *reads >= 2 {
                    self.settle();
                }
                // Rows of replicas long gone (each process has an id of its own).
                client.execute("DELETE FROM mock_replicas WHERE seen_at < now() - interval '1 hour'", &[]).await?;
                tokio::time::sleep(HEARTBEAT).await;
            }
            Ok(())
        }
        .await;
        driver.abort();
        result
    }

    /// This replica leaves (a graceful stop): its heartbeat stops, the feeds it serves the others
    /// end, and its row goes, so the others take its tenants at once rather than after
    /// `GONE_AFTER`.
    pub async fn leave(&self, database_url: &str) {
        self.leaving.send_replace(true);
        let gone = async {
            let (client, connection) = tokio_postgres::connect(database_url, NoTls).await?;
            let driver = tokio::spawn(connection);
            let deleted = client.execute(FORGET, &[&self.me.id]).await;
            driver.abort();
            deleted
        };
        match tokio::time::timeout(GONE_AFTER, gone).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!("leaving the replicas: {}", crate::causes::chain(&e)),
            Err(_) => tracing::warn!(
                "leaving the replicas: the store did not answer; the others drop this one after {GONE_AFTER:?}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str) -> Member {
        Member { id: id.to_owned(), url: format!("http://{id}") }
    }

    #[test]
    fn a_changed_list_is_told_once_and_holds_this_replica() {
        let members = Members::alone(member("b"));
        let mut changes = members.changes();
        members.set(vec![member("c"), member("a")]);
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        assert_eq!(members.live().iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        members.set(vec![member("a"), member("b"), member("c")]);
        assert!(!changes.has_changed().unwrap(), "the same list is no change");
        members.set(vec![]);
        assert_eq!(members.owner("any").id, "b");
    }

    #[tokio::test]
    async fn a_joining_replica_is_settled_only_when_told_and_a_lone_one_at_once() {
        let waited =
            |m: Arc<Members>| async move { tokio::time::timeout(Duration::from_millis(50), m.settled()).await.is_ok() };
        assert!(waited(Members::alone(member("a"))).await);
        let joining = Members::unsettled(member("a"), false);
        assert!(!waited(joining.clone()).await, "not settled before the store was heard");
        joining.settle();
        joining.settle();
        assert!(waited(joining).await);
    }
}
