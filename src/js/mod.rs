//! The `#[wasm_bindgen]` facade: converts between JS and the core, decides nothing.

pub mod auth_manager;
pub mod convert;
pub mod errors;
pub mod hooks;
mod types;

pub use auth_manager::AuthManager;
