//! The wasmtime side of Weir: compiling, validating and caching operator components
//! ([`GuestHost`], [`OperatorModule`]) and running them ([`OperatorInstance`]).

pub mod bindings;
mod encoded;
mod error;
mod host;
mod imports;
mod instance;
mod instance_data;
mod keyed_store;
pub mod logs;
mod module;
mod options;
mod side_output;
mod timers;
mod wasi;
mod world;

/// The output-document readers, public for the fuzz targets of `engine/fuzz`.
pub use encoded::{BatchFormat, DecodeError, decode_batch, decode_state};
pub use error::{Call, GuestError, OperatorError};
pub use host::{EPOCH_TICK, GuestHost};
pub use instance::{
    ENCODED_BATCHES, ENCODED_FALLBACK_BATCHES, ENCODED_FALLBACK_RESTORE_CHUNKS, ENCODED_RESTORE_CHUNKS,
    ENCODED_SNAPSHOTS, InstanceLimits, OperatorInstance,
};
pub use instance_data::HostState;
pub use keyed_store::KeyedStates;
pub use module::OperatorModule;
pub use options::{
    CORE_INSTANCES_PER_INSTANCE, HostOptions, MEMORIES_PER_INSTANCE, PoolingOptions, TABLES_PER_INSTANCE,
};
pub use side_output::SideOutputs;
pub use timers::TimerService;
pub use world::{OPERATOR_EXPORT, precheck};
