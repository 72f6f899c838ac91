//! Failed sign-ins are slowed per account, whatever the address they come from: after
//! `free` failures in a row, each further failure locks the account for twice as long as the one
//! before (1 s, 2 s, 4 s, …), never longer than `max_secs`. While locked, a sign-in is answered
//! 429 without checking the password, so guessing costs the attacker time, not the server work.
//! The lock is bounded so that an attacker cannot keep the real user out for long, and a device
//! the user has signed in on before (its registered device id in the request) is never locked out.

/// How long the account is locked after its `failures`-th failure in a row (0: not locked).
pub fn lock_secs(failures: u32, free: u32, max_secs: u64) -> u64 {
    if failures < free.max(1) {
        return 0;
    }
    let doublings = failures - free.max(1);
    1u64.checked_shl(doublings).unwrap_or(u64::MAX).min(max_secs)
}

#[cfg(test)]
mod tests {
    use super::lock_secs;

    #[test]
    fn doubling_from_the_free_failures_then_bounded() {
        let locks: Vec<u64> = (0..=16).map(|n| lock_secs(n, 5, 300)).collect();
        assert_eq!(locks, [0, 0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(lock_secs(u32::MAX, 5, 300), 300, "no overflow");
        assert_eq!(lock_secs(1, 0, 300), 1, "0 free failures means every failure locks");
    }
}
