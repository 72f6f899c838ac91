//! The platform-free core: every decision of the session broker, written against the traits of
//! [`ports`] so it runs and is tested natively. No `web_sys`, no `wasm_bindgen` here.

pub mod calls;
pub mod cell;
pub mod codec;
pub mod codes;
pub mod hashes;
pub mod hooks;
pub mod json;
pub mod keys;
pub mod lease;
pub use crate::protocol::permissions;
pub mod ports;
pub mod results;
pub mod session;
pub mod sync_session;
pub mod time;
pub mod token;
pub mod url;

#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) mod fakes;

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
