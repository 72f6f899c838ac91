//! What the hub knows of a database's changes: the latest change of each document after a base
//! sequence, ordered by sequence. That is exactly what the engine answers to a normal `_changes`
//! since any point at or after the base (each document once, at its latest change), so the hub
//! answers those from here. Bounded in bytes (`Change::cost`): the hubs of a replica share one
//! budget, and a hub over it lets its own oldest changes go, the base moving up to them; a device
//! behind the base catches up from the engine.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::change::{Change, Seq};

#[derive(Debug)]
pub struct Index {
    by_seq: BTreeMap<u64, Arc<Change>>,
    by_id: HashMap<String, u64>,
    base: Seq,
    head: Seq,
    /// What the changes held cost (`Change::cost`).
    bytes: usize,
}

/// Which documents a device listens to (`filter=_doc_ids`); `None`: all.
pub type DocIds = Option<Arc<HashSet<String>>>;

pub fn wanted(doc_ids: &DocIds, change: &Change) -> bool {
    doc_ids.as_ref().is_none_or(|ids| ids.contains(&change.id))
}

impl Index {
    /// Everything after `base` is known (nothing yet).
    pub fn new(base: Seq) -> Index {
        Index { by_seq: BTreeMap::new(), by_id: HashMap::new(), head: base.clone(), base, bytes: 0 }
    }

    pub fn base(&self) -> &Seq {
        &self.base
    }

    /// The last sequence taken in.
    pub fn head(&self) -> &Seq {
        &self.head
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether every change after `since` is here.
    pub fn covers(&self, since: u64) -> bool {
        since >= self.base.n
    }

    /// Takes a change in; `false` (and nothing changes) when it is not after the head: a feed
    /// read again from an earlier point after a reconnect.
    pub fn take(&mut self, change: Arc<Change>) -> bool {
        if change.seq <= self.head {
            return false;
        }
        self.head = change.seq.clone();
        if let Some(old) = self.by_id.insert(change.id.clone(), change.seq.n) {
            if let Some(old) = self.by_seq.remove(&old) {
                self.bytes -= old.cost();
            }
        }
        self.bytes += change.cost();
        self.by_seq.insert(change.seq.n, change);
        true
    }

    /// Lets the oldest changes go until `at_least` bytes are freed or nothing is held (the base
    /// then is the head); answers the bytes freed.
    pub fn let_go(&mut self, at_least: usize) -> usize {
        let mut freed = 0;
        while freed < at_least {
            let Some((_, oldest)) = self.by_seq.pop_first() else {
                self.base = self.head.clone();
                break;
            };
            self.by_id.remove(&oldest.id);
            freed += oldest.cost();
            self.base = oldest.seq.clone();
        }
        self.bytes -= freed;
        freed
    }

    /// The changes after `since` the device wants, oldest first, at most `limit`.
    pub fn after(&self, since: u64, doc_ids: &DocIds, limit: usize) -> Vec<Arc<Change>> {
        let from = std::ops::Bound::Excluded(since);
        self.by_seq
            .range((from, std::ops::Bound::Unbounded))
            .map(|(_, c)| c)
            .filter(|c| wanted(doc_ids, c))
            .take(limit)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(id: &str, seq: u64) -> Arc<Change> {
        let row = json!({"id": id, "seq": seq, "changes": [{"rev": format!("{seq}-r")}], "doc": {"_id": id, "_rev": format!("{seq}-r")}});
        Arc::new(Change::read(row.to_string().as_bytes()).unwrap())
    }

    fn ids(changes: &[Arc<Change>]) -> Vec<(String, u64)> {
        changes.iter().map(|c| (c.id.clone(), c.seq.n)).collect()
    }

    #[test]
    fn each_document_once_at_its_latest_change() {
        let mut index = Index::new(Seq::zero());
        for (id, seq) in [("a", 1), ("b", 2), ("a", 3), ("c", 4)] {
            assert!(index.take(change(id, seq)));
        }
        assert!(!index.take(change("a", 3)), "a change read again after a reconnect");
        assert_eq!(ids(&index.after(0, &None, 10)), [("b".into(), 2), ("a".into(), 3), ("c".into(), 4)]);
        assert_eq!(ids(&index.after(2, &None, 1)), [("a".into(), 3)]);
        let only_c = Some(Arc::new(HashSet::from(["c".to_owned()])));
        assert_eq!(ids(&index.after(0, &only_c, 10)), [("c".into(), 4)]);
        let held: usize = index.after(0, &None, 10).iter().map(|c| c.cost()).sum();
        assert_eq!(index.bytes(), held, "a replaced change's bytes are let go with it");
    }

    #[test]
    fn letting_go_moves_the_base_up() {
        let mut index = Index::new(Seq::zero());
        for (id, seq) in [("a", 1), ("b", 2), ("c", 3)] {
            index.take(change(id, seq));
        }
        let one = change("a", 1).cost();
        assert_eq!(index.let_go(1), one, "the oldest change, whole");
        assert_eq!(index.base().n, 1);
        assert!(!index.covers(0) && index.covers(1));
        assert_eq!(ids(&index.after(1, &None, 10)), [("b".into(), 2), ("c".into(), 3)]);
        index.let_go(usize::MAX);
        assert_eq!((index.bytes(), index.base().n), (0, 3), "nothing held: what it covers starts at its head");
        assert!(index.after(0, &None, 10).is_empty() && index.covers(3) && !index.covers(2));
    }
}
