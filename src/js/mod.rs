//! The `#[wasm_bindgen]` facade: converts between JS and the core, decides nothing.

pub mod auth_manager;
pub mod convert;
pub mod errors;
pub mod hooks;
pub mod sync_session;
mod types;

pub use auth_manager::AuthManager;
pub use sync_session::SyncSession;
