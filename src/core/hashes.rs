//! Membership in a fixed list of names by their hashes, for lists whose strings the module need
//! not carry: a name's 16-bit hash (FNV-1a, folded) is looked up in a table computed at compile
//! time. A name outside the list is taken for one in it only when their hashes collide, about
//! once in 65536 / (the list's length) tries; the tests of each table check that its own names
//! are told apart and that near misses (a letter off) are not taken.

/// FNV-1a, 32 bits, folded to 16.
pub const fn hash(text: &str) -> u16 {
    let (bytes, mut hash, mut i) = (text.as_bytes(), 0x811c_9dc5_u32, 0);
    while i < bytes.len() {
        hash = (hash ^ bytes[i] as u32).wrapping_mul(0x0100_0193);
        i += 1;
    }
    (hash ^ hash >> 16) as u16
}

/// The hashes of every name of `lists`, which hold `N` in all.
pub const fn table<const N: usize>(lists: &[&[&str]]) -> [u16; N] {
    let mut out = [0; N];
    let (mut list, mut k) = (0, 0);
    while list < lists.len() {
        let mut i = 0;
        while i < lists[list].len() {
            out[k] = hash(lists[list][i]);
            (i, k) = (i + 1, k + 1);
        }
        list += 1;
    }
    assert!(k == N, "N is not the lists' length");
    out
}

/// Whether `name`'s hash is in `table`.
// A plain loop: the slice's own `contains` is a search unrolled for speed, larger in the module.
#[allow(clippy::manual_contains)]
pub fn contains(table: &[u16], name: &str) -> bool {
    let name = hash(name);
    table.iter().any(|&h| h == name)
}

use super::codes;
use crate::protocol::{errors, permissions};

/// Every code the `ErrorCode` union holds, the SDK's and the server's: the server's strings would
/// add about 600 B (gzip) to the module.
static KNOWN_CODES: [u16; codes::ALL.len() + errors::ALL.len()] = table(&[codes::ALL, errors::ALL]);

/// Every action the SDK knows (the default map's and the sys_admin-only ones, whose names the
/// module need not carry).
static KNOWN_ACTIONS: [u16; permissions::ALL.len()] = table(&[permissions::ALL]);

/// Whether `code` is one of the SDK's codes or of the server's this SDK knows (`protocol::errors`).
pub fn is_known_code(code: &str) -> bool {
    contains(&KNOWN_CODES, code)
}

/// Whether `action` is one the SDK knows (`permissions::ALL`).
pub fn is_known_action(action: &str) -> bool {
    contains(&KNOWN_ACTIONS, action)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    /// `table` tells `names` apart, knows each, and takes none of the near misses of them (a
    /// letter more, the first letter less; unless the list holds that too) nor any of `others`.
    fn check(table: &[u16], names: &[&str], others: &[&str]) {
        let mut hashes = table.to_vec();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), names.len(), "two names share a hash");
        for name in names {
            assert!(super::contains(table, name), "{name}");
            let longer = ["x", "_", "2", "s", " "].map(|end| [name, end].concat());
            for miss in longer.iter().map(String::as_str).chain([&name[1..]]) {
                assert!(names.contains(&miss) || !super::contains(table, miss), "{miss:?}, off {name}");
            }
        }
        for other in others {
            assert!(!super::contains(table, other), "{other}");
        }
    }

    #[test]
    fn the_hash_is_fnv_1a() {
        // FNV-1a's published 32-bit values for "" and "a", folded.
        assert_eq!(super::hash(""), (0x811c_9dc5_u32 ^ 0x811c_9dc5_u32 >> 16) as u16);
        assert_eq!(super::hash("a"), (0xe40c_292c_u32 ^ 0xe40c_292c_u32 >> 16) as u16);
    }

    #[test]
    fn every_code_is_known_and_near_misses_are_not() {
        let all: Vec<&str> = super::codes::ALL.iter().chain(super::errors::ALL).copied().collect();
        let others = ["", "invalid_credentails", "Invalid_credentials", "quota_exceeded", "crons:run", "ok"];
        check(&super::KNOWN_CODES, &all, &others);
    }

    #[test]
    fn every_action_is_known_and_near_misses_are_not() {
        let others = ["", "crons:rnu", "crons:Run", "rollingdb:read", "orders:void", "invalid_argument", "*"];
        check(&super::KNOWN_ACTIONS, super::permissions::ALL, &others);
    }
}
