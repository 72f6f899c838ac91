//! The deterministic simulator: browsers, tabs, a faulty network, device keys, operators and one
//! clock around the real server, every run replayable from its seed (docs/testing.md).

pub mod browser;
pub mod cases;
pub mod check;
pub mod dbs;
pub mod env;
pub mod history;
pub mod net;
pub mod ops;
pub mod run;
pub mod server;
pub mod tab;
pub mod world;
