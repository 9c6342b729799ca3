//! A guest's output document on the `encoded-batches` fast path (wit/encoded.wit), as the
//! host reads it after `process-encoded` or `snapshot-encoded`: a Python guest's pickle or
//! a JavaScript guest's JSON, whatever a tenant's code returns. `decode_batch` and
//! `decode_state` must stay within the output limit given (data bytes + 16 per entry),
//! refuse what is not a plain document, never panic, and never take more host memory
//! than twice the limit (at least 16 MiB; libFuzzer's RSS limit catches a breach).
//!
//! The first byte chooses: bit 0 the format (pickle, JSON), bit 1 a batch or a state
//! document, bits 2–4 the output limit (1 KiB << n).

#![no_main]

use libfuzzer_sys::fuzz_target;
use weir::guest::{BatchFormat, decode_batch, decode_state};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, doc)) = data.split_first() else { return };
    let format = if mode & 1 == 0 { BatchFormat::Pickle } else { BatchFormat::Json };
    let limit = 1024usize << ((mode >> 2) & 7);
    let cost = |data: usize, entries: usize| data + 16 * entries;
    if mode & 2 == 0 {
        if let Ok(batch) = decode_batch(format, doc, limit) {
            assert!(cost(batch.data.len(), batch.entries.len()) <= limit, "a batch over its limit");
            let sum: usize = batch.entries.iter().map(|e| e.key_len as usize + e.value_len as usize).sum();
            assert_eq!(sum, batch.data.len(), "the entries add up to the data");
        }
    } else if let Ok(delta) = decode_state(format, Vec::new(), doc, limit) {
        assert!(cost(delta.data.len(), delta.entries.len()) <= limit, "a state delta over its limit");
        let sum: usize = delta.entries.iter().map(|e| e.key_len as usize + e.value_len as usize).sum();
        assert_eq!(sum, delta.data.len(), "the entries add up to the data");
    }
});
