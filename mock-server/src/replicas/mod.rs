//! Replicas of one store sharing the engine's feeds. On PostgreSQL every replica says it is alive
//! in the store (`members`); each tenant has one owner among those alive (`owner`, rendezvous
//! hashing), and only the owner holds the engine's feed of the tenant's databases: another
//! replica's hub reads the owner's hub instead (`feeds`). A load balancer that sends a tenant's
//! devices to its owner saves that hop; one that spreads them anyhow still costs the engine one
//! feed a database.

pub mod feeds;
pub mod members;
pub mod owner;

use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What a replica of a shared store keeps to share feeds.
pub struct Replicas {
    pub members: Arc<members::Members>,
    /// `feed_key`.
    pub key: Vec<u8>,
    pub counts: Arc<feeds::FeedCounts>,
}

/// The key replicas show each other on `feeds::FEED_PATH`: an HMAC of the signing secret they
/// share, so a device (which never has the secret) cannot open another tenant's whole feed.
pub fn feed_key(signing_secret: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(signing_secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(b"replica feeds");
    mac.finalize().into_bytes().to_vec()
}
