//! Side outputs: records a guest emits on a named output (the `side-output` import) besides
//! the records its call returns. The host routes them to the edges that carry that output.

use super::bindings::Batch;

/// Longest side-output name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;
/// Most distinct side-output names one instance may use.
pub const MAX_NAMES: usize = 16;
/// Bytes one side-output record is counted for besides its key and value (its entry).
const ENTRY_BYTES: usize = 16;

/// The side-output records of the current call, by name, and the names edges consume.
#[derive(Debug, Default)]
pub struct SideOutputs {
    /// Names the job's edges carry; a record on another name is dropped and counted.
    consumed: Vec<String>,
    /// Every name emitted on so far (bounded by [`MAX_NAMES`]), with its pending records.
    pending: Vec<(String, Batch)>,
    /// Bytes emitted in the current call.
    bytes: usize,
    /// Most bytes one call may emit.
    max_bytes: usize,
    refusal: Option<String>,
}

impl SideOutputs {
    /// Side outputs routed to edges for `consumed`, at most `max_bytes` a call.
    pub fn new(consumed: Vec<String>, max_bytes: usize) -> Self {
        SideOutputs { consumed, max_bytes, ..SideOutputs::default() }
    }

    /// The names the job's edges carry (set before `open`).
    pub fn set_consumed(&mut self, consumed: Vec<String>) {
        self.consumed = consumed;
    }

    /// A new call begins: nothing pending from a failed call survives it.
    pub(crate) fn begin(&mut self) {
        self.bytes = 0;
        for (_, b) in &mut self.pending {
            if !b.is_empty() {
                *b = Batch::empty();
            }
        }
    }

    /// Emits a record on `name` (the guest's import); false when no edge carries `name` and
    /// the record was dropped. A refusal fails the call when it returns.
    pub(crate) fn emit(&mut self, name: &str, key: &[u8], value: &[u8], timestamp: i64) -> bool {
        if self.refusal.is_some() {
            return true;
        }
        if name.len() > MAX_NAME_BYTES {
            self.refusal =
                Some(format!("a side-output name is {} bytes; at most {MAX_NAME_BYTES}", name.len()));
            return true;
        }
        let index = match self.pending.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None if self.pending.len() >= MAX_NAMES => {
                self.refusal = Some(format!("an instance may emit on at most {MAX_NAMES} side outputs"));
                return true;
            }
            None => {
                self.pending.push((name.to_string(), Batch::empty()));
                self.pending.len() - 1
            }
        };
        self.bytes = self.bytes.saturating_add(key.len() + value.len() + ENTRY_BYTES);
        if self.bytes > self.max_bytes {
            self.refusal =
                Some(format!("the call emitted more than {} bytes on side outputs", self.max_bytes));
            return true;
        }
        if !self.consumed.iter().any(|c| c == name) {
            return false;
        }
        self.pending[index].1.push(key, value, timestamp);
        true
    }

    /// The first refusal since the last call, if any.
    pub(crate) fn take_refusal(&mut self) -> Option<String> {
        self.refusal.take()
    }

    /// Hands each non-empty pending batch to `route`, with its name.
    pub fn drain(&mut self, mut route: impl FnMut(&str, Batch)) {
        for (name, batch) in &mut self.pending {
            if !batch.is_empty() {
                route(name, std::mem::replace(batch, Batch::empty()));
            }
        }
    }

    /// True when a call left records to route.
    #[cfg(test)]
    fn has_pending(&self) -> bool {
        self.pending.iter().any(|(_, b)| !b.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_consumed_names_and_counts_the_rest() {
        let mut s = SideOutputs::new(vec!["late".into()], 1 << 20);
        s.begin();
        assert!(s.emit("late", b"k", b"v", 5));
        assert!(!s.emit("other", b"k", b"v", 6));
        let mut routed = Vec::new();
        s.drain(|n, b| routed.push((n.to_string(), b.len())));
        assert_eq!(routed, vec![("late".to_string(), 1)]);
        assert!(!s.has_pending());
        assert!(s.take_refusal().is_none());
    }

    #[test]
    fn refuses_long_names_too_many_names_and_too_many_bytes() {
        let mut s = SideOutputs::new(vec![], 1 << 20);
        s.emit(&"x".repeat(65), b"", b"", 0);
        assert!(s.take_refusal().unwrap().contains("64"));
        for i in 0..MAX_NAMES {
            s.emit(&format!("n{i}"), b"", b"", 0);
        }
        assert!(s.take_refusal().is_none());
        s.emit("one-more", b"", b"", 0);
        assert!(s.take_refusal().unwrap().contains("16"));
        let mut s = SideOutputs::new(vec!["n0".into()], 100);
        s.emit("n0", &[0; 50], b"", 0);
        assert!(s.take_refusal().is_none());
        s.emit("n0", &[0; 50], b"", 0);
        assert!(s.take_refusal().unwrap().contains("100 bytes"));
        // The limit is per call.
        s.begin();
        s.emit("n0", &[0; 50], b"", 0);
        assert!(s.take_refusal().is_none());
    }

    #[test]
    fn a_new_call_discards_what_a_failed_one_left() {
        let mut s = SideOutputs::new(vec!["late".into()], 1 << 20);
        s.emit("late", b"k", b"v", 5);
        s.begin();
        assert!(!s.has_pending());
    }
}
