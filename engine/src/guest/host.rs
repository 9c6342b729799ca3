//! The wasmtime engine shared by every job: configuration (with the pooling allocator when
//! asked), the epoch ticker, the linker with Weir's host imports, and the cache of compiled
//! modules.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, OptLevel};

use super::bindings::OperatorWorld;
use super::error::GuestError;
use super::instance_data::HostState;
use super::module::OperatorModule;
use super::options::{HostOptions, PoolingOptions};

/// How often the epoch advances. A running guest yields to other tasks once per tick, and
/// CPU limits are counted in ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Owns the wasmtime [`Engine`] and compiles, validates and caches operator modules.
pub struct GuestHost {
    engine: Engine,
    linker: Linker<HostState>,
    cache_dir: Option<PathBuf>,
    pooling: Option<PoolingOptions>,
    modules: Mutex<HashMap<[u8; 32], Arc<OperatorModule>>>,
    stop_ticker: Arc<AtomicBool>,
}

impl std::fmt::Debug for GuestHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestHost")
            .field("cache_dir", &self.cache_dir)
            .field("pooling", &self.pooling)
            .finish_non_exhaustive()
    }
}

impl GuestHost {
    /// Creates the engine, allocating instances on demand. Compiled modules are cached in
    /// `cache_dir` when given (keyed by the module's SHA-256 and the engine's compatibility
    /// hash), and always in memory.
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Arc<Self>, GuestError> {
        Self::with_options(HostOptions { cache_dir, pooling: None })
    }

    /// Creates the engine as `options` say.
    pub fn with_options(options: HostOptions) -> Result<Arc<Self>, GuestError> {
        let HostOptions { cache_dir, pooling } = options;
        let engine_err = |reason: String| GuestError::Load { module: "<engine>".into(), reason };
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.cranelift_opt_level(OptLevel::Speed);
        if let Some(p) = &pooling {
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(
                p.allocation_config().map_err(|e| engine_err(e.to_string()))?,
            ));
        }
        let engine = Engine::new(&config).map_err(|e| match &pooling {
            Some(p) => engine_err(format!(
                "cannot create the wasmtime engine with an instance pool of {} instances of up to {} MiB \
                 (max_instances, max_instance_memory_mb; the pool reserves virtual memory up front): {e:#}",
                p.max_instances,
                p.max_memory_bytes >> 20
            )),
            None => engine_err(format!("cannot create the wasmtime engine: {e:#}")),
        })?;
        let mut linker = Linker::new(&engine);
        super::wasi::add_to_linker(&mut linker)
            .and_then(|()| OperatorWorld::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s))
            .map_err(|e| GuestError::Load {
                module: "<engine>".into(),
                reason: format!("cannot set up host imports: {e:#}"),
            })?;
        if let Some(dir) = &cache_dir {
            std::fs::create_dir_all(dir).map_err(|e| GuestError::Load {
                module: "<cache>".into(),
                reason: format!("cannot create cache directory {}: {e}", dir.display()),
            })?;
        }

        // Epochs are ticked from an OS thread: a tokio task would stall with the runtime.
        let stop_ticker = Arc::new(AtomicBool::new(false));
        let (stop, ticker_engine) = (stop_ticker.clone(), engine.clone());
        std::thread::Builder::new()
            .name("weir-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    ticker_engine.increment_epoch();
                }
            })
            .map_err(|e| GuestError::Load {
                module: "<engine>".into(),
                reason: format!("cannot start the epoch thread: {e}"),
            })?;

        Ok(Arc::new(GuestHost {
            engine,
            linker,
            cache_dir,
            pooling,
            modules: Mutex::new(HashMap::new()),
            stop_ticker,
        }))
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The instance pool's size, when instances come from a pool.
    pub fn pooling(&self) -> Option<PoolingOptions> {
        self.pooling
    }

    /// Operator instances alive now, when instances come from a pool.
    pub fn live_instances(&self) -> Option<u64> {
        self.engine.pooling_allocator_metrics().map(|m| m.component_instances())
    }

    /// Compiles (or fetches from the cache) and validates a module.
    pub fn load(&self, name: &str, bytes: &[u8]) -> Result<Arc<OperatorModule>, GuestError> {
        let sha: [u8; 32] = Sha256::digest(bytes).into();
        if let Some(m) = self.modules.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&sha) {
            return Ok(m.clone());
        }
        // Other bytes, or a component of another world, are refused before Cranelift spends
        // time on them.
        super::world::precheck(name, bytes)?;
        let (component, uncached) = self.compile_cached(name, &sha, bytes)?;
        let compiled_here = uncached.is_some() || self.cache_dir.is_none();
        let bytes: Arc<[u8]> = Arc::from(bytes);
        let mut module = Arc::new(
            OperatorModule::new(name, sha, bytes.clone(), component, &self.engine, &self.linker)?
                .with_pool(self.pooling),
        );
        // Only a module that fits the world is cached on disk: a refused one leaves nothing.
        if let Some(path) = uncached
            && let Ok(serialized) = module.component().serialize()
        {
            let tmp = path.with_extension("tmp");
            match std::fs::write(&tmp, serialized).and_then(|()| std::fs::rename(&tmp, &path)) {
                Err(e) => tracing::warn!("cannot cache compiled module {}: {e}", path.display()),
                // The code kept from now on is the cached file's, mapped: pages the kernel
                // can drop and read again, not the compile's anonymous memory (a 20 MB Python
                // component compiles to ~100 MB of code, which would stay resident for as
                // long as the module is known).
                Ok(()) => {
                    // SAFETY: as in `compile_cached`: just written by `Component::serialize`
                    // of this engine, into Weir's own cache directory.
                    #[allow(unsafe_code)]
                    let mapped = unsafe { Component::deserialize_file(&self.engine, &path) };
                    if let Ok(mapped) = mapped {
                        module = Arc::new(
                            OperatorModule::new(name, sha, bytes, mapped, &self.engine, &self.linker)?
                                .with_pool(self.pooling),
                        );
                    }
                }
            }
        }
        self.modules.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(sha, module.clone());
        if compiled_here {
            give_back_compile_memory();
        }
        Ok(module)
    }

    /// Forgets module `sha256` (hex): drops it from the in-memory cache and deletes its
    /// compiled forms from the disk cache (a deleted module).
    pub fn forget(&self, sha256: &str) {
        if let Ok(sha) = <[u8; 32]>::try_from(hex::decode(sha256).unwrap_or_default().as_slice()) {
            self.modules.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&sha);
        }
        let Some(dir) = &self.cache_dir else { return };
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let prefix = format!("{sha256}-");
        for entry in entries.flatten() {
            if entry.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn cache_path(&self, sha: &[u8; 32]) -> Option<PathBuf> {
        let dir = self.cache_dir.as_ref()?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut h);
        Some(dir.join(format!("{}-{:016x}.cwasm", hex::encode(sha), h.finish())))
    }

    /// Compiles `bytes`, or loads their compiled form from the disk cache. Returns the
    /// component and, when it was compiled here, the cache path to write once it is validated.
    fn compile_cached(
        &self,
        name: &str,
        sha: &[u8; 32],
        bytes: &[u8],
    ) -> Result<(Component, Option<PathBuf>), GuestError> {
        let not_component = |e: wasmtime::Error| GuestError::NotAComponent {
            module: name.to_string(),
            reason: format!("{e:#}"),
        };
        let Some(path) = self.cache_path(sha) else {
            return Ok((Component::new(&self.engine, bytes).map_err(not_component)?, None));
        };
        if path.exists() {
            // SAFETY: the file was written by `Component::serialize` of an engine with the
            // same compatibility hash (part of its name), into Weir's own cache directory.
            #[allow(unsafe_code)]
            let cached = unsafe { Component::deserialize_file(&self.engine, &path) };
            match cached {
                Ok(c) => return Ok((c, None)),
                Err(e) => tracing::warn!("ignoring unreadable cached module {}: {e:#}", path.display()),
            }
        }
        Ok((Component::new(&self.engine, bytes).map_err(not_component)?, Some(path)))
    }
}

/// Returns the heap a compile freed to the system. Cranelift's allocations are freed when a
/// compile ends, but glibc's malloc keeps the pages: after a 20 MB Python component compiled
/// the server held ~380 MB resident, ~140 MB once trimmed (issue 40's suite).
fn give_back_compile_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` has no preconditions; it only returns free heap pages.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Drop for GuestHost {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}
