//! The key order of the last top-level object that needed sorting, reused for the next
//! object with the same keys.

use super::Member;

/// The keys of a top-level object in written order, and the order that sorts them.
#[derive(Debug, Default)]
pub(super) struct Shape {
    /// The encoded keys (header and bytes), back to back.
    keys: Vec<u8>,
    /// Where each key ends in `keys`.
    ends: Vec<usize>,
    /// The members to write, by written index, in key order (a repeated key's earlier
    /// occurrences left out).
    pub(super) order: Vec<usize>,
}

impl Shape {
    /// True when `members` (in `out`) have exactly these keys in this order.
    pub(super) fn matches(&self, out: &[u8], members: &[Member]) -> bool {
        if members.len() != self.ends.len() {
            return false;
        }
        let mut from = 0;
        for (m, &end) in members.iter().zip(&self.ends) {
            if out[m.start..m.key_end] != self.keys[from..end] {
                return false;
            }
            from = end;
        }
        true
    }

    pub(super) fn remember(&mut self, out: &[u8], members: &[Member], order: impl Iterator<Item = usize>) {
        self.keys.clear();
        self.ends.clear();
        for m in members {
            self.keys.extend_from_slice(&out[m.start..m.key_end]);
            self.ends.push(self.keys.len());
        }
        self.order.clear();
        self.order.extend(order);
    }
}
