//! One module per area of the API.

pub mod admin;
pub mod auth;
pub mod bootstrap;
pub mod crons;
pub mod devices;
pub mod docdb;
pub mod health;
pub mod management;
pub mod mock;
pub mod sync_socket;
