//! The wasmtime side of Weir: compiling, validating and caching operator components
//! ([`GuestHost`], [`OperatorModule`]) and running them ([`OperatorInstance`]).

pub mod bindings;
mod error;
mod host;
mod instance;
mod module;
mod state;
mod timers;

pub use error::{Call, GuestError, OperatorError};
pub use host::{EPOCH_TICK, GuestHost};
pub use instance::{InstanceLimits, OperatorInstance};
pub use module::{OPERATOR_EXPORT, OperatorModule};
pub use state::HostState;
pub use timers::TimerService;
