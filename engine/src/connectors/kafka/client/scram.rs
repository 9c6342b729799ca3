//! SASL/SCRAM-SHA-256 and -512 (RFC 5802, RFC 7677), as Kafka brokers speak it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use rand::RngCore;
use sha2::digest::{Digest, FixedOutputReset};
use sha2::{Sha256, Sha512};

use super::SaslMechanism;

/// Why a SCRAM exchange failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScramError {
    /// The server's message (`server-first` or `server-final`) is not UTF-8.
    #[error("the SCRAM {0} message is not UTF-8")]
    NotUtf8(&'static str),
    /// The server-first message lacks a field.
    #[error("the SCRAM server-first message has no `{0}`")]
    MissingField(&'static str),
    /// The server's nonce does not start with the client's.
    #[error("the SCRAM server nonce does not extend ours")]
    Nonce,
    /// The salt does not decode.
    #[error("the SCRAM salt is not base64")]
    Salt,
    /// The iteration count does not parse.
    #[error("the SCRAM iteration count is not a number")]
    IterationsNotANumber,
    /// The iteration count is outside 1 to 1000000.
    #[error("the SCRAM iteration count {0} is out of range")]
    Iterations(u32),
    /// The broker refused the credentials (its reason).
    #[error("the broker refused the SCRAM credentials: {0}")]
    Refused(String),
    /// The server-final message carries no signature.
    #[error("the SCRAM server-final message has no signature")]
    NoSignature,
    /// The server signature does not decode.
    #[error("the SCRAM server signature is not base64")]
    SignatureNotBase64,
    /// The server does not know the password.
    #[error("the broker's SCRAM signature does not match (not the broker the password belongs to)")]
    SignatureMismatch,
}

/// One SCRAM exchange.
pub(crate) struct Scram {
    sha512: bool,
    username: String,
    password: String,
    nonce: String,
    client_first_bare: String,
    server_signature: Option<Vec<u8>>,
}

impl Scram {
    pub fn new(mechanism: SaslMechanism, username: &str, password: &str) -> Self {
        let mut raw = [0u8; 24];
        rand::thread_rng().fill_bytes(&mut raw);
        Scram {
            sha512: mechanism == SaslMechanism::ScramSha512,
            username: username.replace('=', "=3D").replace(',', "=2C"),
            password: password.to_string(),
            nonce: B64.encode(raw),
            client_first_bare: String::new(),
            server_signature: None,
        }
    }

    /// The client-first message.
    pub fn client_first(&mut self) -> Vec<u8> {
        self.client_first_bare = format!("n={},r={}", self.username, self.nonce);
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// The client-final message answering `server_first`.
    pub fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, ScramError> {
        let server_first =
            std::str::from_utf8(server_first).map_err(|_| ScramError::NotUtf8("server-first"))?;
        let field = |name: &'static str| {
            server_first.split(',').find_map(|f| f.strip_prefix(name)).ok_or(ScramError::MissingField(name))
        };
        let nonce = field("r=")?;
        if !nonce.starts_with(&self.nonce) {
            return Err(ScramError::Nonce);
        }
        let salt = B64.decode(field("s=")?).map_err(|_| ScramError::Salt)?;
        let iterations: u32 = field("i=")?.parse().map_err(|_| ScramError::IterationsNotANumber)?;
        if !(1..=1_000_000).contains(&iterations) {
            return Err(ScramError::Iterations(iterations));
        }
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let (proof, server_signature) = if self.sha512 {
            proofs::<Sha512>(self.password.as_bytes(), &salt, iterations, auth_message.as_bytes())
        } else {
            proofs::<Sha256>(self.password.as_bytes(), &salt, iterations, auth_message.as_bytes())
        };
        self.server_signature = Some(server_signature);
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// Checks the server-final message (the server proves it knows the password too).
    pub fn verify_server(&self, server_final: &[u8]) -> Result<(), ScramError> {
        let text = std::str::from_utf8(server_final).map_err(|_| ScramError::NotUtf8("server-final"))?;
        if let Some(e) = text.strip_prefix("e=") {
            return Err(ScramError::Refused(e.to_string()));
        }
        let v = text.strip_prefix("v=").ok_or(ScramError::NoSignature)?;
        let v = B64
            .decode(
                v.trim_end_matches(|c: char| c == ',' || c.is_whitespace()).split(',').next().unwrap_or(""),
            )
            .map_err(|_| ScramError::SignatureNotBase64)?;
        if Some(&v) != self.server_signature.as_ref() {
            return Err(ScramError::SignatureMismatch);
        }
        Ok(())
    }
}

fn hmac<D: Digest + FixedOutputReset + sha2::digest::core_api::BlockSizeUser>(
    key: &[u8],
    message: &[u8],
) -> Vec<u8> {
    let block = <D as sha2::digest::core_api::BlockSizeUser>::block_size();
    let mut k = if key.len() > block { D::digest(key).to_vec() } else { key.to_vec() };
    k.resize(block, 0);
    let ipad: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
    let opad: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
    let mut inner = D::new();
    Digest::update(&mut inner, &ipad);
    Digest::update(&mut inner, message);
    let inner = inner.finalize();
    let mut outer = D::new();
    Digest::update(&mut outer, &opad);
    Digest::update(&mut outer, inner);
    outer.finalize().to_vec()
}

/// (client proof, expected server signature).
fn proofs<D: Digest + FixedOutputReset + sha2::digest::core_api::BlockSizeUser>(
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    auth_message: &[u8],
) -> (Vec<u8>, Vec<u8>) {
    // Hi(password, salt, i): PBKDF2 with one block.
    let mut first = salt.to_vec();
    first.extend_from_slice(&1u32.to_be_bytes());
    let mut u = hmac::<D>(password, &first);
    let mut salted = u.clone();
    for _ in 1..iterations {
        u = hmac::<D>(password, &u);
        salted.iter_mut().zip(&u).for_each(|(s, x)| *s ^= x);
    }
    let client_key = hmac::<D>(&salted, b"Client Key");
    let stored_key = D::digest(&client_key).to_vec();
    let client_signature = hmac::<D>(&stored_key, auth_message);
    let proof = client_key.iter().zip(&client_signature).map(|(a, b)| a ^ b).collect();
    let server_key = hmac::<D>(&salted, b"Server Key");
    (proof, hmac::<D>(&server_key, auth_message))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's test vector for SCRAM-SHA-256.
    #[test]
    fn rfc7677_vector() {
        let mut scram = Scram::new(SaslMechanism::ScramSha256, "user", "pencil");
        scram.nonce = "rOprNGfwEbeRWgbNEkqO".into();
        assert_eq!(scram.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first =
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let client_final = scram.client_final(server_first).unwrap();
        assert_eq!(
            std::str::from_utf8(&client_final).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        scram.verify_server(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").unwrap();
        assert!(scram.verify_server(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").is_err());
    }
}
