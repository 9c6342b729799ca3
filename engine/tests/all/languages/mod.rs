//! Operators written in Python, JavaScript and C (built by `common::languages`): uploaded
//! through the API and run beside the Rust examples with the same output, exactly once across
//! kills, refused when built against another world; and the `encoded-batches` fast path of
//! the language SDKs' batch API.

mod encoded_batches;
mod operators;
