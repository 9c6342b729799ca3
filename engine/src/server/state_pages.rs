//! Pages of an operator's state, from a savepoint or a retained checkpoint: entries in scope
//! order (key groups, then operator state by subtask), then state name and key, with keys
//! and values decoded from MessagePack to JSON. A page ends with the cursor of the next,
//! `<scope>.<index>`. A page holds at most `limit` entries and `max_bytes` of them as JSON,
//! and at least one entry.

use serde::{Deserialize, Serialize};
use weir_store::{OPERATOR_SCOPE_BASE, StateEntry, StoreError};

use super::error::{ServerError, ServerResult};
use super::ids::printable;
use super::msgpack::msgpack_to_json;
use super::streams::json_size;

/// Entries per page when the query does not say.
const DEFAULT_LIMIT: usize = 100;
/// Most entries per page.
const MAX_LIMIT: usize = 1000;
/// Most bytes of entries (as JSON) per page when the query does not say.
pub const DEFAULT_PAGE_BYTES: usize = 4 << 20;

/// Which page of state to read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateQuery {
    /// Only entries of this named state.
    pub state: Option<String>,
    /// Where to continue: the `next` of the previous page.
    pub cursor: Option<String>,
    /// Entries per page (default 100, at most 1000).
    pub limit: Option<usize>,
    /// Bytes of entries as JSON per page (default [`DEFAULT_PAGE_BYTES`]); a page holds at
    /// least one entry, however large. Set by the server, not by the client.
    #[serde(skip)]
    pub max_bytes: Option<usize>,
}

/// One state entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateItem {
    /// Keyed state: its key group.
    pub key_group: Option<u32>,
    /// Operator (non-keyed) state: the subtask it belongs to.
    pub subtask: Option<u32>,
    /// The state's name.
    pub state: String,
    /// The key, decoded from MessagePack (`{"hex": ...}` when it is not MessagePack). For
    /// host keyed state (`@host/<name>`), the record key.
    pub key: serde_json::Value,
    /// Host keyed state: the entry's field within its record key, decoded likewise (absent
    /// for the empty field and for guest state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<serde_json::Value>,
    /// The value, decoded likewise.
    pub value: serde_json::Value,
}

/// A page of an operator's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatePage {
    /// The operator.
    pub operator: String,
    /// The entries.
    pub data: Vec<StateItem>,
    /// The cursor of the next page; none on the last.
    pub next: Option<String>,
}

/// One page over `scopes` (ascending), reading a scope's sorted entries with `read`.
/// Blocking: `read` reads the store.
pub(crate) fn page(
    operator: String,
    scopes: &[u32],
    query: &StateQuery,
    mut read: impl FnMut(u32) -> Result<Vec<StateEntry>, StoreError>,
) -> ServerResult<StatePage> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let (from_scope, mut skip) = match &query.cursor {
        None => (0, 0),
        Some(c) => parse_cursor(c)?,
    };
    let max_bytes = query.max_bytes.unwrap_or(DEFAULT_PAGE_BYTES);
    let (mut data, mut bytes) = (Vec::new(), 0usize);
    let mut next = None;
    for &scope in scopes.iter().filter(|s| **s >= from_scope) {
        let entries: Vec<StateEntry> = read(scope)?
            .into_iter()
            .filter(|e| e.value.is_some() && query.state.as_ref().is_none_or(|s| *s == e.state))
            .collect();
        let start = if scope == from_scope { skip } else { 0 };
        skip = 0;
        for (i, e) in entries.iter().enumerate().skip(start) {
            if data.len() == limit {
                next = Some(format!("{scope}.{i}"));
                break;
            }
            let (key_group, subtask) = if scope >= OPERATOR_SCOPE_BASE {
                (None, Some(scope - OPERATOR_SCOPE_BASE))
            } else {
                (Some(scope), None)
            };
            let (key, field) = match crate::local_state::is_host_state(&e.state)
                .then(|| crate::local_state::split_chain_key(&e.key))
                .flatten()
            {
                Some((key, field)) => (key, (!field.is_empty()).then(|| msgpack_to_json(field))),
                None => (e.key.as_slice(), None),
            };
            let item = StateItem {
                key_group,
                subtask,
                state: e.state.clone(),
                key: msgpack_to_json(key),
                field,
                value: msgpack_to_json(e.value.as_deref().unwrap_or_default()),
            };
            let size = json_size(&item) + 1;
            if !data.is_empty() && bytes + size > max_bytes {
                next = Some(format!("{scope}.{i}"));
                break;
            }
            bytes += size;
            data.push(item);
        }
        if next.is_some() {
            break;
        }
    }
    Ok(StatePage { operator, data, next })
}

fn parse_cursor(cursor: &str) -> ServerResult<(u32, usize)> {
    let bad = || {
        ServerError::BadRequest(format!("invalid cursor `{}`: pass the `next` of a page", printable(cursor)))
    };
    let (scope, index) = cursor.split_once('.').ok_or_else(bad)?;
    Ok((scope.parse().map_err(|_| bad())?, index.parse().map_err(|_| bad())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_stays_under_its_byte_cap_and_holds_at_least_one_entry() {
        let value = |n: usize| rmp_serde::to_vec(&"v".repeat(n)).unwrap();
        let entries = |scope: u32| -> Vec<StateEntry> {
            let size = if scope == 1 { 5000 } else { 300 };
            (0..10u8)
                .map(|k| StateEntry { state: "s".into(), key: vec![k], value: Some(value(size)) })
                .collect()
        };
        let query = |cursor: Option<String>| StateQuery {
            cursor,
            limit: Some(1000),
            max_bytes: Some(1000),
            ..StateQuery::default()
        };
        let (mut cursor, mut seen, mut pages) = (None, 0, 0);
        loop {
            let page = page("op".into(), &[0, 1, 2], &query(cursor), |s| Ok(entries(s))).unwrap();
            let size: usize = page.data.iter().map(|i| json_size(i) + 1).sum();
            assert!(size <= 1000 || page.data.len() == 1, "{size} bytes in {} entries", page.data.len());
            assert!(!page.data.is_empty());
            seen += page.data.len();
            pages += 1;
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, 30, "every entry once");
        assert!(pages >= 10 + 2, "{pages} pages");
    }

    #[test]
    fn host_state_shows_its_record_key_and_field() {
        let mp = |v: &serde_json::Value| rmp_serde::to_vec(v).unwrap();
        let key = mp(&serde_json::json!("user-7"));
        let entries = vec![
            StateEntry {
                state: "@host/profiles".into(),
                key: crate::local_state::chain_key(&key, b""),
                value: Some(mp(&serde_json::json!(1))),
            },
            StateEntry {
                state: "@host/events".into(),
                key: crate::local_state::chain_key(&key, &mp(&serde_json::json!(42))),
                value: Some(mp(&serde_json::json!("e"))),
            },
            StateEntry { state: "counts".into(), key: key.clone(), value: Some(mp(&serde_json::json!(3))) },
        ];
        let page = page("op".into(), &[5], &StateQuery::default(), |_| Ok(entries.clone())).unwrap();
        let shown: Vec<(String, serde_json::Value, Option<serde_json::Value>)> =
            page.data.into_iter().map(|i| (i.state, i.key, i.field)).collect();
        assert_eq!(
            shown,
            vec![
                ("@host/profiles".into(), serde_json::json!("user-7"), None),
                ("@host/events".into(), serde_json::json!("user-7"), Some(serde_json::json!(42))),
                ("counts".into(), serde_json::json!("user-7"), None),
            ]
        );
    }
}
