//! The session-broker mock server: the backend the SDK talks to, and the per-tenant rolling
//! database machine operators drive. `app(state)` is the whole HTTP surface.

pub mod app;
pub mod auth;
pub mod bridge;
pub mod causes;
pub mod clock;
pub mod crons;
pub mod docdb;
pub mod error;
pub mod extract;
pub mod metrics;
pub mod rate_limit;
pub mod recorded;
pub mod replicas;
pub mod rolling;
pub mod routes;
pub mod seed;
pub mod settings;
pub mod state;
pub mod store;
pub mod tenant_sockets;

pub use app::app;
