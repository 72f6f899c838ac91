//! What each session holds open: the `_changes` feeds through the proxy, at most a bound of them
//! (`DOCDB_FEEDS_PER_SESSION`), and (in a registry of their own) its realtime sockets. Each one's
//! place is given back when it is dropped (the device closed it, or the engine ended it), and
//! every one is cut when its session ends. A dropped feed drops the engine's response with it,
//! so the engine's feed closes too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::{Stream, StreamExt};
use tokio::sync::oneshot;

type Open = HashMap<String, Vec<(u64, oneshot::Sender<()>)>>;

#[derive(Default)]
pub struct Feeds {
    open: Mutex<Open>,
    next_id: AtomicU64,
}

/// A place among a session's open feeds, held by the feed's stream.
pub struct Held {
    place: Place,
    cut: oneshot::Receiver<()>,
}

struct Place {
    feeds: Arc<Feeds>,
    session: String,
    id: u64,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.feeds.lock();
        if let Some(held) = open.get_mut(&self.session) {
            held.retain(|(id, _)| *id != self.id);
            if held.is_empty() {
                open.remove(&self.session);
            }
        }
    }
}

impl Feeds {
    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for one more feed of `session`, or `None` when it already holds `limit`.
    pub fn hold(self: &Arc<Self>, session: &str, limit: usize) -> Option<Held> {
        let mut open = self.lock();
        let held = open.entry(session.to_owned()).or_default();
        if held.len() >= limit {
            if held.is_empty() {
                open.remove(session);
            }
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tell, cut) = oneshot::channel();
        held.push((id, tell));
        Some(Held { place: Place { feeds: self.clone(), session: session.to_owned(), id }, cut })
    }

    /// Ends every feed `session` holds (its streams stop at their next poll).
    pub fn cut(&self, session: &str) {
        // Dropping the senders resolves the receivers each stream is waiting on.
        drop(self.lock().remove(session));
    }

    /// How many are open, every session's.
    pub fn total(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    /// How many feeds `session` holds open.
    pub fn held(&self, session: &str) -> usize {
        self.lock().get(session).map_or(0, Vec::len)
    }
}

impl Held {
    /// Resolves when the session is cut.
    pub async fn cut(&mut self) {
        let _ = (&mut self.cut).await;
    }

    /// `stream`, ended when the session is cut; the place is given back when it is dropped.
    pub fn carry<S: Stream + Send + 'static>(self, stream: S) -> impl Stream<Item = S::Item> + Send + 'static {
        let Held { place, cut } = self;
        stream.take_until(cut).map(move |item| {
            let _held = &place;
            item
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bounded_given_back_and_cut() {
        let feeds = Arc::new(Feeds::default());
        let a = feeds.hold("s1", 2).unwrap();
        let b = feeds.hold("s1", 2).unwrap();
        assert!(feeds.hold("s1", 2).is_none(), "the third feed of one session");
        assert!(feeds.hold("s2", 2).is_some(), "another session's feeds are its own");
        drop(a);
        assert_eq!(feeds.held("s1"), 1);
        let stream = b.carry(futures_util::stream::pending::<u8>());
        feeds.cut("s1");
        assert_eq!(stream.collect::<Vec<_>>().await, Vec::<u8>::new(), "a cut feed ends");
        assert_eq!(feeds.held("s1"), 0);
    }
}
