//! Tokens and credentials: JWT issue/verify, password hashes, refresh tokens, docdb headers.

pub mod device_keys;
pub mod jwt;
pub mod passwords;
pub mod secrets;
pub mod sessions;
pub mod throttle;
