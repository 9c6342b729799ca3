//! Ids, tokens and names: fresh random ids and tokens, the checks that ids and names from
//! requests pass before they are used, and user input made printable for messages.

use rand::RngCore as _;
use sha2::{Digest, Sha256};

use super::error::{ServerError, ServerResult};

/// A fresh random token: `weir_` and 64 hex digits.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("weir_{}", hex::encode(bytes))
}

/// A fresh random id of `bytes` bytes, in hex.
pub fn new_id(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// The stored form of a token: its SHA-256, in hex (a fast hash is enough for 32 random
/// bytes). Invariant T2: only this is stored, and it is looked up on every request.
pub(crate) fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Checks an id of `len` lowercase hex digits (ids from URLs are checked before use).
pub fn check_hex_id(what: &str, id: &str, len: usize) -> ServerResult<()> {
    if id.len() == len && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(())
    } else {
        Err(ServerError::NotFound(format!(
            "no {what} `{}` (a {what} id is {len} lowercase hex digits)",
            printable(id)
        )))
    }
}

/// Checks a name (tenant, module): 1 to 128 characters of `A-Z a-z 0-9 . _ -`, not
/// starting with `.`.
pub fn check_name(what: &str, name: &str) -> ServerResult<()> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ServerError::BadRequest(format!(
            "invalid {what} name `{}` (allowed: 1 to 128 characters of A-Z a-z 0-9 . _ -, not starting with '.')",
            printable(name)
        )))
    }
}

/// A user-supplied string, shortened and with control characters escaped, for messages.
pub fn printable(s: &str) -> String {
    let short: String = s.chars().take(80).collect();
    let mut out = short.escape_debug().to_string();
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}
