//! session-broker: a browser session SDK compiled to WebAssembly.
//!
//! `core` decides (platform-free, tested natively); `web` adapts the browser; `js` is the
//! `#[wasm_bindgen]` facade that only converts. `protocol` holds the wire types the mock server
//! shares.

pub mod core;
pub mod protocol;

#[cfg(target_arch = "wasm32")]
mod web;

#[cfg(target_arch = "wasm32")]
pub mod js;
