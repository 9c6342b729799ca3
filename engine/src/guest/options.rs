//! How the wasmtime engine is set up ([`HostOptions`]): the compiled-module cache and the
//! size of the instance pool ([`PoolingOptions`]), with the pool's per-instance limits.

use std::path::PathBuf;

use wasmtime::PoolingAllocationConfig;

/// How the engine is set up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostOptions {
    /// Where compiled modules are cached on disk (always in memory too).
    pub cache_dir: Option<PathBuf>,
    /// Instantiate from a pool reserved up front instead of allocating on demand.
    pub pooling: Option<PoolingOptions>,
}

/// The size of the instance pool.
///
/// Every operator instance takes one slot, whatever its module; a slot holds what one
/// component needs: up to [`CORE_INSTANCES_PER_INSTANCE`] core instances,
/// [`MEMORIES_PER_INSTANCE`] linear memories and [`TABLES_PER_INSTANCE`] tables (a Rust
/// `wasm32-wasip2` component uses 3 core instances, 1 memory and 2 tables; one built with the
/// WASI preview 1 adapter has a second memory; componentize-py links libc, libpython, its
/// runtime and the adapter as 14 core instances). Past
/// `max_instances` live instances, instantiation fails with
/// [`GuestError::PoolExhausted`](super::error::GuestError::PoolExhausted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolingOptions {
    /// Most operator instances alive at once.
    pub max_instances: u32,
    /// Largest linear memory of one instance, in bytes (at most 4 GiB). A job's
    /// `memory_limit_mb` above it is lowered to it: the instance runs with this limit, and
    /// the memory-limit error names both.
    pub max_memory_bytes: usize,
}

/// Core instances one pool slot allows (the pool holds this many per `max_instances`). A core
/// instance slot is address space and metadata, not resident memory, so this is generous
/// enough for components linked from many modules (Python's have 14).
pub const CORE_INSTANCES_PER_INSTANCE: u32 = 32;
/// Linear memories one pool slot allows.
pub const MEMORIES_PER_INSTANCE: u32 = 2;
/// Tables one pool slot allows.
pub const TABLES_PER_INSTANCE: u32 = 4;

/// Largest linear memory a 32-bit WebAssembly memory can have.
const MAX_WASM32_MEMORY: usize = 4 << 30;

/// Why [`PoolingOptions`] cannot size a pool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum PoolingOptionsError {
    /// `max_instances` is 0.
    #[error("the instance pool needs room for at least one instance (max_instances)")]
    NoInstances,
    /// `max_memory_bytes` is outside 1 MiB..=4 GiB.
    #[error(
        "an instance's memory in the pool must be between 1 MiB and 4096 MiB (max_instance_memory_mb), got {0} bytes"
    )]
    MemoryOutOfRange(usize),
}

impl PoolingOptions {
    /// The pooling allocator's configuration: totals are per operator instance (one
    /// component) times `max_instances`, and one component may not take more than its share.
    pub(super) fn allocation_config(&self) -> Result<PoolingAllocationConfig, PoolingOptionsError> {
        if self.max_instances == 0 {
            return Err(PoolingOptionsError::NoInstances);
        }
        if self.max_memory_bytes < (1 << 20) || self.max_memory_bytes > MAX_WASM32_MEMORY {
            return Err(PoolingOptionsError::MemoryOutOfRange(self.max_memory_bytes));
        }
        let n = self.max_instances;
        let total = |per: u32| n.saturating_mul(per);
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(n)
            .total_core_instances(total(CORE_INSTANCES_PER_INSTANCE))
            .total_memories(total(MEMORIES_PER_INSTANCE))
            .total_tables(total(TABLES_PER_INSTANCE))
            // Each store keeps the fiber stack of its last async call.
            .total_stacks(n)
            .max_core_instances_per_component(CORE_INSTANCES_PER_INSTANCE)
            .max_memories_per_component(MEMORIES_PER_INSTANCE)
            .max_tables_per_component(TABLES_PER_INSTANCE)
            .max_memory_size(self.max_memory_bytes);
        Ok(pool)
    }
}
