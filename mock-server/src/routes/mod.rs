//! One module per area of the API; `table` registers and authorises them by their rows.

pub mod admin;
pub mod auth;
pub mod bootstrap;
pub mod crons;
pub mod devices;
pub mod docdb;
pub mod health;
pub mod management;
pub mod mock;
pub mod replica_feeds;
pub mod sync_socket;
pub mod table;
