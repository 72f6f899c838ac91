//! Time arithmetic that cannot overflow: every lifetime and instant the SDK computes comes from
//! a server answer, a stored value or an app's argument, any of which may be absurd
//! (`expiresIn` of 2^63−1, a stored `expiresAt` of −2^63). A panic would poison the wasm module.

/// Seconds (as a server sends them) in milliseconds, saturating.
pub fn seconds_to_ms(seconds: u64) -> i64 {
    i64::try_from(seconds).unwrap_or(i64::MAX).saturating_mul(1000)
}

/// `now + lifetime`, saturating at the ends of time.
pub fn expires_at(now_ms: i64, lifetime_ms: i64) -> i64 {
    now_ms.saturating_add(lifetime_ms)
}

/// `at − now`, clamped into `0..=max` (a timer delay).
pub fn delay_until(at_ms: i64, now_ms: i64, max_ms: u32) -> u32 {
    let delta = at_ms.saturating_sub(now_ms).clamp(0, i64::from(max_ms));
    u32::try_from(delta).unwrap_or(max_ms)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn extremes_saturate() {
        assert_eq!(seconds_to_ms(u64::MAX), i64::MAX);
        assert_eq!(seconds_to_ms((1 << 63) - 1), i64::MAX);
        assert_eq!(seconds_to_ms(900), 900_000);
        assert_eq!(expires_at(i64::MAX - 5, 1000), i64::MAX);
        assert_eq!(expires_at(0, i64::MIN), i64::MIN);
        assert_eq!(delay_until(i64::MIN, i64::MAX, 100), 0);
        assert_eq!(delay_until(i64::MAX, i64::MIN, 100), 100);
        assert_eq!(delay_until(1_050, 1_000, 100), 50);
    }
}
