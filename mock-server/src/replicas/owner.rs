//! Which replica owns a tenant's feeds: rendezvous (highest random weight) hashing of the
//! tenant over the replicas alive. Every replica computes it from the same list and agrees; when
//! a replica comes or goes, only the tenants it gains or held change owner.

use sha2::{Digest, Sha256};

/// A replica alive: its id (one a process) and where the others reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: String,
    pub url: String,
}

/// `id`'s weight for `key`: the first 8 bytes of SHA-256 over both (a stable hash: replicas
/// built apart, and a load balancer told the rule, compute the same).
pub fn weight(key: &str, id: &str) -> u64 {
    let digest = Sha256::new().chain_update(key.as_bytes()).chain_update([0]).chain_update(id.as_bytes()).finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The owner of `key`: the member of the highest weight (the greater id on a tie); `None` with
/// no member.
pub fn owner<'a>(key: &str, members: &'a [Member]) -> Option<&'a Member> {
    members.iter().max_by(|a, b| (weight(key, &a.id), &a.id).cmp(&(weight(key, &b.id), &b.id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn member(id: &str) -> Member {
        Member { id: id.to_owned(), url: format!("http://{id}") }
    }

    /// The model: every member ranked by its weight, highest first, the greater id first on a tie.
    fn ranked(key: &str, ids: &[String]) -> Vec<String> {
        let mut ranked: Vec<(u64, String)> = ids.iter().map(|id| (weight(key, id), id.clone())).collect();
        ranked.sort();
        ranked.reverse();
        ranked.into_iter().map(|(_, id)| id).collect()
    }

    fn ids() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::btree_set("[a-z]{1,3}", 1..8).prop_map(|s| s.into_iter().collect())
    }

    proptest! {
        #[test]
        fn the_owner_is_the_models_first(key in "[a-z_0-9]{0,12}", ids in ids()) {
            let members: Vec<Member> = ids.iter().map(|i| member(i)).collect();
            prop_assert_eq!(&owner(&key, &members).unwrap().id, &ranked(&key, &ids)[0]);
        }

        /// A replica that leaves moves only its own tenants, each to the model's next in rank.
        #[test]
        fn a_replica_leaving_moves_only_its_own(key in "[a-z_0-9]{0,12}", ids in ids(), gone in any::<prop::sample::Index>()) {
            let members: Vec<Member> = ids.iter().map(|i| member(i)).collect();
            let gone = gone.get(&ids).clone();
            let before = owner(&key, &members).unwrap().id.clone();
            let rest: Vec<Member> = members.iter().filter(|m| m.id != gone).cloned().collect();
            let after = owner(&key, &rest).map(|m| m.id.clone());
            if before == gone {
                prop_assert_eq!(after, ranked(&key, &ids).get(1).cloned());
            } else {
                prop_assert_eq!(after, Some(before));
            }
        }

        /// A replica that comes takes a tenant or leaves it where it was.
        #[test]
        fn a_replica_coming_takes_or_leaves(key in "[a-z_0-9]{0,12}", ids in ids(), new in "[A-Z]{1,3}") {
            let mut members: Vec<Member> = ids.iter().map(|i| member(i)).collect();
            let before = owner(&key, &members).unwrap().id.clone();
            members.push(member(&new));
            let after = owner(&key, &members).unwrap().id.clone();
            prop_assert!(after == before || after == new);
        }
    }

    #[test]
    fn nobody_owns_without_members_and_tenants_spread() {
        assert_eq!(owner("t", &[]), None);
        let members = [member("a"), member("b"), member("c")];
        let mut counts = std::collections::HashMap::new();
        for t in 0..3_000 {
            *counts.entry(owner(&format!("dev_co{t}_s1"), &members).unwrap().id.clone()).or_insert(0) += 1;
        }
        // About a third each (the hash is fixed, so this is a fact about it, not a chance).
        assert!(counts.values().all(|&n| (800..1200).contains(&n)), "{counts:?}");
    }
}
