//! A device's key as the tests hold it: an ECDSA P-256 pair, its public half as the SDK registers
//! it, and its proofs for a route, made as the browser's transport makes them.

use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use protocol::routes::{self, Call};
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::Server;

pub struct Key(SigningKey);

impl Key {
    pub fn new() -> Key {
        let mut secret = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut secret);
        Key(SigningKey::from_slice(&secret).unwrap())
    }

    /// The hex of the uncompressed point, as `publicKey` carries it.
    pub fn public(&self) -> String {
        hex::encode(self.0.verifying_key().to_encoded_point(false).as_bytes())
    }

    /// `deviceProof` for `route` over `nonce`.
    pub fn sign(&self, route: Call, nonce: &str) -> Value {
        let message = protocol::device_proof_message(route.method.as_str(), route.path, nonce);
        let signature: Signature = self.0.sign(message.as_bytes());
        json!({"nonce": nonce, "signature": hex::encode(signature.to_bytes())})
    }

    /// A proof for `route` over a fresh nonce of `s`.
    pub async fn prove(&self, s: &Server, route: Call) -> Value {
        self.sign(route, &nonce(s).await)
    }
}

/// A fresh nonce of `s`.
pub async fn nonce(s: &Server) -> String {
    let a = s.post(routes::DEVICE_NONCE.path, None, json!({})).await;
    assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
    a.body["nonce"].as_str().unwrap().to_owned()
}
