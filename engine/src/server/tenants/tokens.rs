//! A tenant's tokens. Each has an id (16 hex digits), an optional label and a creation time;
//! the server keeps only its SHA-256. Two tables change together in one transaction:
//! `weir.tokens` (hash → tenant id) answers authentication, `weir.token_info`
//! ((tenant id, token id) → hash, label, created) lists and revokes. A revoke or rotation
//! removes the hash before it answers, so the next request with that token is a 401.
//!
//! Rotation issues a new token and revokes the old one(s) in the same transaction; for a
//! rotation without a gap, create a second token, move the clients, then revoke the first.

use redb::{ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};
use serde::{Deserialize, Serialize};

use super::{TENANTS, TOKENS, Tenant, Tenants};
use crate::clock::unix_ms;
use crate::server::codec::{decode_record, encode_record};
use crate::server::error::{ServerError, ServerResult};
use crate::server::ids::{check_hex_id, new_id, new_token, printable, token_hash};

/// (tenant id, token id) → [`Stored`] (JSON).
const TOKEN_INFO: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("weir.token_info");

/// Tokens one tenant may hold at once.
pub const MAX_TOKENS: usize = 64;

/// Longest label, in bytes.
const MAX_LABEL: usize = 128;

/// A token as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenInfo {
    /// Its id (16 hex digits).
    pub id: String,
    /// What it is for (`ci`, `grafana`, ...).
    pub label: Option<String>,
    /// When it was issued, unix ms (for a token from before token ids: its tenant's
    /// creation time).
    pub created_ms: u64,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    /// SHA-256 of the token, hex.
    hash: String,
    label: Option<String>,
    created_ms: u64,
}

fn err(e: impl std::fmt::Display) -> ServerError {
    ServerError::internal(e)
}

fn check_label(label: Option<&str>) -> ServerResult<()> {
    match label {
        Some(l) if l.is_empty() || l.len() > MAX_LABEL || l.chars().any(char::is_control) => {
            Err(ServerError::BadRequest(format!(
                "invalid token label `{}` (1 to {MAX_LABEL} bytes of text without control characters)",
                printable(l)
            )))
        }
        _ => Ok(()),
    }
}

/// Issues a token for `tenant` in `txn`; returns it (the secret shown once) and its info.
pub(super) fn insert(
    txn: &WriteTransaction,
    tenant: &str,
    label: Option<String>,
) -> ServerResult<(TokenInfo, String)> {
    check_label(label.as_deref())?;
    let token = new_token();
    let hash = token_hash(&token);
    let info = TokenInfo { id: new_id(8), label, created_ms: unix_ms() };
    let stored = Stored { hash: hash.clone(), label: info.label.clone(), created_ms: info.created_ms };
    txn.open_table(TOKENS).map_err(err)?.insert(hash.as_str(), tenant).map_err(err)?;
    let mut infos = txn.open_table(TOKEN_INFO).map_err(err)?;
    infos.insert((tenant, info.id.as_str()), encode_record(&stored)?.as_slice()).map_err(err)?;
    Ok((info, token))
}

/// Gives every token stored before token ids (a hash in `weir.tokens` only) an id, so it
/// can be listed and revoked; it keeps working. Runs when the store opens.
pub(super) fn migrate(txn: &WriteTransaction) -> ServerResult<()> {
    let mut known = std::collections::HashSet::new();
    let mut infos = txn.open_table(TOKEN_INFO).map_err(err)?;
    for row in infos.iter().map_err(err)? {
        let (_, v) = row.map_err(err)?;
        known.insert(decode_record::<Stored>(v.value())?.hash);
    }
    let tokens = txn.open_table(TOKENS).map_err(err)?;
    let tenants = txn.open_table(TENANTS).map_err(err)?;
    for row in tokens.iter().map_err(err)? {
        let (hash, tenant) = row.map_err(err)?;
        if known.contains(hash.value()) {
            continue;
        }
        let created_ms = match tenants.get(tenant.value()).map_err(err)? {
            Some(t) => decode_record::<Tenant>(t.value())?.created_ms,
            None => 0,
        };
        let stored = Stored { hash: hash.value().to_string(), label: None, created_ms };
        infos
            .insert((tenant.value(), new_id(8).as_str()), encode_record(&stored)?.as_slice())
            .map_err(err)?;
    }
    Ok(())
}

/// The ids of `tenant`'s tokens with their stored rows, oldest first.
fn rows(
    infos: &impl ReadableTable<(&'static str, &'static str), &'static [u8]>,
    tenant: &str,
) -> ServerResult<Vec<(String, Stored)>> {
    let mut out = Vec::new();
    for row in infos.range((tenant, "")..).map_err(err)? {
        let (k, v) = row.map_err(err)?;
        if k.value().0 != tenant {
            break;
        }
        out.push((k.value().1.to_string(), decode_record::<Stored>(v.value())?));
    }
    out.sort_by_key(|(_, s)| s.created_ms);
    Ok(out)
}

/// Revokes token `id` of `tenant` in `txn`: its hash goes, so it authenticates no more.
fn remove(txn: &WriteTransaction, tenant: &str, id: &str, stored: &Stored) -> ServerResult<()> {
    txn.open_table(TOKENS).map_err(err)?.remove(stored.hash.as_str()).map_err(err)?;
    txn.open_table(TOKEN_INFO).map_err(err)?.remove((tenant, id)).map_err(err)?;
    Ok(())
}

fn info(id: String, s: Stored) -> TokenInfo {
    TokenInfo { id, label: s.label, created_ms: s.created_ms }
}

impl Tenants {
    /// Runs `f` in one write transaction for existing tenant `id`, on the blocking pool.
    async fn with_txn<T: Send + 'static>(
        &self,
        id: &str,
        f: impl FnOnce(&WriteTransaction, &str) -> ServerResult<T> + Send + 'static,
    ) -> ServerResult<T> {
        let (this, id) = (self.clone(), id.to_string());
        tokio::task::spawn_blocking(move || {
            this.get(&id)?;
            let txn = this.store.database()?.begin_write().map_err(err)?;
            let out = f(&txn, &id)?;
            txn.commit().map_err(err)?;
            Ok(out)
        })
        .await?
    }

    /// Issues another token for tenant `id` (at most `MAX_TOKENS` at once).
    pub async fn issue_token(&self, id: &str, label: Option<String>) -> ServerResult<(TokenInfo, String)> {
        self.with_txn(id, move |txn, id| {
            if rows(&txn.open_table(TOKEN_INFO).map_err(err)?, id)?.len() >= MAX_TOKENS {
                return Err(ServerError::Conflict(format!(
                    "the tenant has {MAX_TOKENS} tokens, the most it may hold; revoke one first"
                )));
            }
            insert(txn, id, label)
        })
        .await
    }

    /// Tenant `id`'s tokens (never their secrets), oldest first.
    pub fn tokens(&self, id: &str) -> ServerResult<Vec<TokenInfo>> {
        self.get(id)?;
        let txn = self.store.database()?.begin_read().map_err(err)?;
        let rows = rows(&txn.open_table(TOKEN_INFO).map_err(err)?, id)?;
        Ok(rows.into_iter().map(|(i, s)| info(i, s)).collect())
    }

    /// Revokes token `token` of tenant `id`; the next request with it answers 401.
    pub async fn revoke_token(&self, id: &str, token: &str) -> ServerResult<TokenInfo> {
        check_hex_id("token", token, 16)?;
        let token = token.to_string();
        self.with_txn(id, move |txn, id| {
            let (tid, stored) = rows(&txn.open_table(TOKEN_INFO).map_err(err)?, id)?
                .into_iter()
                .find(|(i, _)| *i == token)
                .ok_or_else(|| ServerError::NotFound(format!("no token `{token}` of this tenant")))?;
            remove(txn, id, &tid, &stored)?;
            Ok(info(tid, stored))
        })
        .await
    }

    /// Rotates tenant `id`'s tokens in one transaction: issues a new one and revokes token
    /// `only` (which lends the new one its label unless `label` is given), or every other
    /// token. Returns the new token and the revoked ones.
    pub async fn rotate_tokens(
        &self,
        id: &str,
        only: Option<String>,
        label: Option<String>,
    ) -> ServerResult<(TokenInfo, String, Vec<TokenInfo>)> {
        if let Some(t) = &only {
            check_hex_id("token", t, 16)?;
        }
        self.with_txn(id, move |txn, id| {
            let mut old = rows(&txn.open_table(TOKEN_INFO).map_err(err)?, id)?;
            if let Some(t) = &only {
                old.retain(|(i, _)| i == t);
                if old.is_empty() {
                    return Err(ServerError::NotFound(format!("no token `{t}` of this tenant")));
                }
            }
            let label = label.or_else(|| only.as_ref().and_then(|_| old[0].1.label.clone()));
            let mut revoked = Vec::new();
            for (tid, stored) in old {
                remove(txn, id, &tid, &stored)?;
                revoked.push(info(tid, stored));
            }
            let (new, token) = insert(txn, id, label)?;
            Ok((new, token, revoked))
        })
        .await
    }
}
