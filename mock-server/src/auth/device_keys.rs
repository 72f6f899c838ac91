//! A device's proof that it holds its key. Registration gives the device an ECDSA P-256 key pair
//! whose private half the browser keeps non-extractable (WebCrypto, in IndexedDB); the public half
//! is kept beside the device. A sign-in or refresh that claims the device signs a nonce of this
//! server (with the route it is sent to): the nonce is the server's own (an HMAC over the time it
//! was issued, so issuing one stores nothing), fresh for `DEVICE_NONCE_TTL_SECS`, and spent by
//! the first proof that uses it (the store keeps it until it expires), so a proof cannot be
//! replayed. A device id alone, which listings show, proves nothing.

use hmac::{Hmac, Mac};
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use protocol::{device_proof_message, DeviceProof, DEVICE_NONCE_TTL_SECS};
use rand::RngCore;
use sha2::Sha256;

/// How long a nonce may be presented.
pub const NONCE_TTL_MS: i64 = DEVICE_NONCE_TTL_SECS as i64 * 1000;

fn mac(key: &[u8], issued: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    // Its own domain: nothing else this key signs reads as a nonce.
    mac.update(b"session-broker device-nonce v1:");
    mac.update(issued.as_bytes());
    mac
}

/// A new nonce: `<issued ms>.<random>.<mac>`.
pub fn nonce(key: &[u8], now_ms: i64) -> String {
    let mut random = [0u8; 12];
    rand::rng().fill_bytes(&mut random);
    let issued = format!("{now_ms}.{}", hex::encode(random));
    let tag = hex::encode(mac(key, &issued).finalize().into_bytes());
    format!("{issued}.{tag}")
}

/// Whether `nonce` is one this server issued less than `NONCE_TTL_MS` ago (not whether it was
/// spent: the store says that).
pub fn nonce_fresh(key: &[u8], nonce: &str, now_ms: i64) -> bool {
    let Some((issued, tag)) = nonce.rsplit_once('.') else { return false };
    let Ok(tag) = hex::decode(tag) else { return false };
    // In constant time: a guessed tag learns nothing from the answer's timing.
    if mac(key, issued).verify_slice(&tag).is_err() {
        return false;
    }
    let at = issued.split_once('.').and_then(|(ms, _)| ms.parse::<i64>().ok());
    at.is_some_and(|at| (0..=NONCE_TTL_MS).contains(&now_ms.saturating_sub(at)))
}

/// A public key as a device registers it: the uncompressed SEC1 point, hex (WebCrypto's `raw`
/// export). `None` when it is not a point of P-256.
pub fn parse_public_key(hex_key: &str) -> Option<VerifyingKey> {
    VerifyingKey::from_sec1_bytes(&hex::decode(hex_key).ok()?).ok()
}

/// Whether `proof` is `public_key`'s signature over `method path` and its nonce.
pub fn signed_by(public_key: &str, method: &str, path: &str, proof: &DeviceProof) -> bool {
    let (Some(key), Ok(signature)) = (parse_public_key(public_key), hex::decode(&proof.signature)) else {
        return false;
    };
    let Ok(signature) = Signature::from_slice(&signature) else { return false };
    key.verify(device_proof_message(method, path, &proof.nonce).as_bytes(), &signature).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Signer;
    use p256::ecdsa::SigningKey;

    fn key_pair() -> (SigningKey, String) {
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        let signing = SigningKey::from_slice(&secret).unwrap();
        let public = hex::encode(signing.verifying_key().to_encoded_point(false).as_bytes());
        (signing, public)
    }

    fn prove(signing: &SigningKey, method: &str, path: &str, nonce: &str) -> DeviceProof {
        let signature: Signature = signing.sign(device_proof_message(method, path, nonce).as_bytes());
        DeviceProof { nonce: nonce.into(), signature: hex::encode(signature.to_bytes()) }
    }

    #[test]
    fn a_nonce_is_fresh_for_its_lifetime_and_only_with_this_servers_key() {
        let n = nonce(b"k1", 1_000);
        assert!(nonce_fresh(b"k1", &n, 1_000) && nonce_fresh(b"k1", &n, 1_000 + NONCE_TTL_MS));
        assert!(!nonce_fresh(b"k1", &n, 1_001 + NONCE_TTL_MS), "expired");
        assert!(!nonce_fresh(b"k1", &n, 999), "issued in the future");
        assert!(!nonce_fresh(b"k2", &n, 1_000), "another server's");
        let forged = n.replacen("1000.", "5000.", 1);
        assert!(!nonce_fresh(b"k1", &forged, 5_000), "its time changed");
        for junk in ["", "1000", "1000.ab", "x.y.z", "1000.ab.zz"] {
            assert!(!nonce_fresh(b"k1", junk, 1_000), "{junk:?}");
        }
    }

    #[test]
    fn only_the_keys_signature_over_that_route_proves() {
        let (signing, public) = key_pair();
        let (other, other_public) = key_pair();
        let proof = prove(&signing, "POST", "/auth", "n1");
        assert!(signed_by(&public, "POST", "/auth", &proof));
        assert!(!signed_by(&other_public, "POST", "/auth", &proof), "another key");
        assert!(!signed_by(&public, "POST", "/auth/refresh", &proof), "another route");
        assert!(!signed_by(&public, "POST", "/auth", &DeviceProof { nonce: "n2".into(), ..proof.clone() }));
        assert!(!signed_by(&public, "POST", "/auth", &prove(&other, "POST", "/auth", "n1")));
        assert!(!signed_by("04zz", "POST", "/auth", &proof), "not a key");
        assert!(!signed_by(&public, "POST", "/auth", &DeviceProof { signature: "00".into(), ..proof }));
        assert!(parse_public_key(&public).is_some() && parse_public_key("04").is_none());
    }
}
