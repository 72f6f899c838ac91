//! Tokens, credentials and the session rules, knowing no HTTP: sign-in (`sign_in`, the account's
//! lock in `throttle`), the credentials a session is given (`issue`), rotation and reuse
//! (`refresh`), logout and its window (`sign_out`), the ended sessions (`sessions`), JWTs,
//! password hashes, the devices' keys and their proofs.

pub mod device_keys;
pub mod errors;
pub mod issue;
pub mod jwt;
pub mod passwords;
pub mod proofs;
pub mod refresh;
pub mod secrets;
pub mod sessions;
pub mod sign_in;
pub mod sign_out;
pub mod throttle;
