//! One module per area of the API.

pub mod auth;
pub mod devices;
pub mod health;
pub mod mock;
