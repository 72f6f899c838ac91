//! The `#[wasm_bindgen]` facade: converts between JS and the core, decides nothing. Every export
//! is documented: the doc comments become the JSDoc of the generated `.d.ts`.

pub mod admin;
pub mod auth_manager;
pub mod convert;
pub mod errors;
pub mod hooks;
mod management;
mod reads;
pub mod sync_session;
pub mod types;

pub use admin::RollingDbAdmin;
pub use auth_manager::AuthManager;
pub use sync_session::SyncSession;
