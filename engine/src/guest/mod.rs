//! The wasmtime side of Weir: compiling, validating and caching operator components
//! ([`GuestHost`], [`OperatorModule`]) and running them ([`OperatorInstance`]).

pub mod bindings;
mod encoded;
mod error;
mod host;
mod host_state;
mod imports;
mod instance;
mod keyed_state;
mod module;
mod side_output;
mod timers;
mod wasi;
mod world;

pub use error::{Call, GuestError, OperatorError};
pub use host::{
    CORE_INSTANCES_PER_INSTANCE, EPOCH_TICK, GuestHost, HostOptions, MEMORIES_PER_INSTANCE, PoolingOptions,
    TABLES_PER_INSTANCE,
};
pub use host_state::HostState;
pub use instance::{
    ENCODED_BATCHES, ENCODED_FALLBACK_BATCHES, ENCODED_FALLBACK_RESTORE_CHUNKS, ENCODED_RESTORE_CHUNKS,
    ENCODED_SNAPSHOTS, InstanceLimits, OperatorInstance,
};
pub use keyed_state::KeyedStates;
pub use module::{OPERATOR_EXPORT, OperatorModule};
pub use side_output::SideOutputs;
pub use timers::TimerService;
pub use world::precheck;
