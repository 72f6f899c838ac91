//! The server's integration suites in one test binary: each module was a binary of its own, and
//! each linked the whole server (forty links, and `common` compiled thirty times). The suites the
//! mutants are judged by (the histories, the simulator), the races, the end-to-end suite and the
//! layer and type checks keep binaries of their own: a mutant rebuilds only its judge.

#[path = "../common/mod.rs"]
mod common;

mod auth;
mod backups;
mod changes_hub;
mod cli;
mod crash;
mod device_keys;
mod device_losses;
mod docdb_conformance;
mod docdb_proxy;
mod ended_sessions;
mod engine_faults;
mod fleet_faults;
mod guard_rails;
mod loss_acknowledgement;
mod loss_reports;
mod loss_sums;
mod management;
mod metrics;
mod migrations;
mod one_instruction;
mod postgres;
mod proxy_differential;
mod proxy_rule;
mod replica_feeds;
mod rollout;
mod routes_agree;
mod security;
mod sign_out_window;
mod store_conformance;
mod store_postgres;
mod sync_handshake;
