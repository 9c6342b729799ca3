//! The Weir guest SDK: write a stream operator in Rust and build it as a WebAssembly
//! component for the `weir:operator/operator-world` world (exactly: its extension
//! `chunked-operator-world`, whose `chunked-snapshot` export hands snapshots over in parts).
//!
//! A stateless operator is one function with an attribute:
//!
//! ```no_run
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Bid { auction: u64, price: u64 }
//!
//! #[weir_guest::map]
//! fn to_euros(bid: Bid) -> Bid {
//!     Bid { price: bid.price * 908 / 1000, ..bid }
//! }
//! ```
//!
//! The attributes are [`map`], [`filter`], [`filter_map`] and [`flat_map`]. A stateful
//! operator implements [`Operator`] and is exported with [`export_operator!`]; its state lives
//! in [`ValueState`] and [`KeyedState`] fields, registered by `#[derive(States)]`, which the
//! SDK checkpoints incrementally.
//!
//! Build with `cargo build --target wasm32-wasip2 --release` from a `cdylib` crate: the
//! output `.wasm` is the component to upload. `docs/guest-sdk.md` in the repository is the
//! guide.
//!
//! # Conventions
//! - Record values and keys are MessagePack; the SDK writes them with named fields
//!   (`rmp_serde::encode::write_named`), so a struct is a map, and reads maps and arrays.
//! - An empty key means the record has no key. Emit a key to have a downstream `hash` edge
//!   route records by it; [`KeyedState`] entries are stored under the same key encoding, so
//!   the host assigns them to the key group of their records.
//! - Timestamps are event time in milliseconds since the Unix epoch.
#![deny(missing_docs)]

// The derive macro names the crate `::weir_guest`, also in this crate's unit tests.
#[cfg(test)]
extern crate self as weir_guest;

mod batch;
mod codec;
mod context;
mod error;
mod host;
pub mod join;
mod operator;
mod operator_state;
mod runtime;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;
pub mod window;

/// Derives [`States`](trait@States): registers every [`KeyedState`] and [`ValueState`] field
/// under the field's name, in field order.
///
/// On a field, `#[state(name = "...")]` registers it under another name (a tuple struct's
/// state fields need one), and `#[state]` registers a field of another [`StateStore`] type.
/// A struct without state fields registers nothing. Two states of one name are refused at
/// compile time:
///
/// ```compile_fail
/// #[derive(Default, weir_guest::States)]
/// struct Twice {
///     counts: weir_guest::KeyedState<String, u64>,
///     #[state(name = "counts")]
///     totals: weir_guest::ValueState<u64>,
/// }
/// ```
pub use weir_guest_macro::States;
/// Marks `fn(&T) -> bool` as the operator of the crate: records whose value (decoded as `T`)
/// passes are forwarded unchanged, without re-encoding. Options as for [`map`].
pub use weir_guest_macro::filter;
/// Marks `fn(T) -> Option<U>` as the operator of the crate: emits `U` for each `Some`.
/// `#[filter_map(keyed)]` takes `fn(T) -> Option<(K, U)>`. Options as for [`map`].
pub use weir_guest_macro::filter_map;
/// Marks `fn(T) -> impl IntoIterator<Item = U>` as the operator of the crate: emits every
/// item with the record's key and timestamp. `#[flat_map(keyed)]` takes items `(K, U)` and
/// emits `K` as their key. Options as for [`map`].
pub use weir_guest_macro::flat_map;
/// Marks `fn(T) -> U` as the operator of the crate: each record's value is decoded as `T`
/// and `U` is emitted with the record's key and timestamp.
///
/// `#[map(keyed)]` takes `fn(T) -> (K, U)` and emits `K` as the new key. The function may
/// take a `&T` instead of `T`, and a second parameter `&Record<'_>` (key, timestamp). A
/// return type written `Result<_, E>` is fallible, with `weir_guest::Error: From<E>`;
/// `#[map(name = "...")]` sets the name the operator reports (default: the function's).
pub use weir_guest_macro::map;
pub use wit_bindgen;

pub use crate::batch::{Output, Record};
pub use crate::codec::{from_msgpack, to_msgpack, write_msgpack};
pub use crate::context::{Context, parse_config};
pub use crate::error::{Error, Result};
pub use crate::host::{dead_letter, event_time, logging, metrics, side_output, timers};
pub use crate::operator::Operator;
pub use crate::operator_state::{
    DeltaWriter, HostKeyedState, HostMapState, KeyedState, PART_BYTES, RawKey, StateRegistry, StateStore,
    States, ValueState,
};

/// Exports an [`Operator`] type as the component's operator (once per crate).
///
/// `export_operator!(WordCount)` reports the name `WordCount` to the host;
/// `export_operator!(WordCount, name = "word-count")` sets another. The type must implement
/// [`Default`].
// rustfmt mis-indents the `export!` call, whose arguments are not Rust syntax.
#[rustfmt::skip]
#[macro_export]
macro_rules! export_operator {
    ($operator:ty) => {
        $crate::export_operator!($operator, name = ::core::stringify!($operator));
    };
    ($operator:ty, name = $name:expr $(,)?) => {
        const _: () = {
            type __WeirInstance = $crate::__private::Instance<$operator>;

            struct __WeirExport;

            impl $crate::__private::Export for __WeirExport {
                type Operator = $operator;
                const NAME: &'static str = $name;

                fn with<R>(f: impl ::core::ops::FnOnce(&mut __WeirInstance) -> R) -> R {
                    ::std::thread_local! {
                        static INSTANCE: ::core::cell::RefCell<::core::option::Option<__WeirInstance>> =
                            const { ::core::cell::RefCell::new(::core::option::Option::None) };
                    }
                    INSTANCE.with_borrow_mut(|slot| f(slot.get_or_insert_with(::core::default::Default::default)))
                }
            }

            $crate::__bindings::__export_operator_world!(__WeirExport with_types_in $crate::__bindings);
        };
    };
}

/// Glue used by the macros; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::runtime::{Export, Instance, emit_pair, emit_value};
}

/// Bindings of the `weir:operator` world generated by wit-bindgen; not a public API.
#[doc(hidden)]
// SAFETY: wit-bindgen generates the canonical-ABI glue (raw pointers into linear memory,
// `extern "C"` imports and exports); its correctness is wit-bindgen's, checked against the
// WIT. No hand-written unsafe code exists in this crate.
#[allow(unsafe_code, missing_docs, unused_qualifications, clippy::all)]
pub mod __bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "chunked-operator-world",
        pub_export_macro: true,
        export_macro_name: "__export_operator_world",
        default_bindings_module: "::weir_guest::__bindings",
    });
}
