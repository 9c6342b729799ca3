//! The wasmtime engine shared by every job: configuration, the epoch ticker, the linker
//! with Weir's host imports, and the cache of compiled modules.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, OptLevel};

use super::bindings::OperatorWorld;
use super::error::GuestError;
use super::module::OperatorModule;
use super::state::HostState;

/// How often the epoch advances. A running guest yields to other tasks once per tick, and
/// CPU limits are counted in ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Owns the wasmtime [`Engine`] and compiles, validates and caches operator modules.
pub struct GuestHost {
    engine: Engine,
    linker: Linker<HostState>,
    cache_dir: Option<PathBuf>,
    modules: Mutex<HashMap<[u8; 32], Arc<OperatorModule>>>,
    stop_ticker: Arc<AtomicBool>,
}

impl std::fmt::Debug for GuestHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestHost").field("cache_dir", &self.cache_dir).finish_non_exhaustive()
    }
}

impl GuestHost {
    /// Creates the engine. Compiled modules are cached in `cache_dir` when given (keyed by
    /// the module's SHA-256 and the engine's compatibility hash), and always in memory.
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Arc<Self>, GuestError> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.cranelift_opt_level(OptLevel::Speed);
        let engine = Engine::new(&config).map_err(|e| GuestError::Load {
            module: "<engine>".into(),
            reason: format!("cannot create the wasmtime engine: {e:#}"),
        })?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
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
            modules: Mutex::new(HashMap::new()),
            stop_ticker,
        }))
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Compiles (or fetches from the cache) and validates a module.
    pub fn load(&self, name: &str, bytes: &[u8]) -> Result<Arc<OperatorModule>, GuestError> {
        let sha: [u8; 32] = Sha256::digest(bytes).into();
        if let Some(m) = self.modules.lock().expect("module cache lock").get(&sha) {
            return Ok(m.clone());
        }
        check_header(name, bytes)?;
        let component = self.compile_cached(name, &sha, bytes)?;
        let module = Arc::new(OperatorModule::new(name, sha, component, &self.engine, &self.linker)?);
        self.modules.lock().expect("module cache lock").insert(sha, module.clone());
        Ok(module)
    }

    fn compile_cached(&self, name: &str, sha: &[u8; 32], bytes: &[u8]) -> Result<Component, GuestError> {
        let not_component = |e: wasmtime::Error| GuestError::NotAComponent {
            module: name.to_string(),
            reason: format!("{e:#}"),
        };
        let Some(dir) = &self.cache_dir else {
            return Component::new(&self.engine, bytes).map_err(not_component);
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut h);
        let path = dir.join(format!("{}-{:016x}.cwasm", hex::encode(sha), h.finish()));
        if path.exists() {
            // SAFETY: the file was written by `Component::serialize` of an engine with the
            // same compatibility hash (part of its name), into Weir's own cache directory.
            #[allow(unsafe_code)]
            let cached = unsafe { Component::deserialize_file(&self.engine, &path) };
            match cached {
                Ok(c) => return Ok(c),
                Err(e) => tracing::warn!("ignoring unreadable cached module {}: {e:#}", path.display()),
            }
        }
        let component = Component::new(&self.engine, bytes).map_err(not_component)?;
        if let Ok(serialized) = component.serialize() {
            let tmp = path.with_extension("tmp");
            if let Err(e) = std::fs::write(&tmp, serialized).and_then(|()| std::fs::rename(&tmp, &path)) {
                tracing::warn!("cannot cache compiled module {}: {e}", path.display());
            }
        }
        Ok(component)
    }
}

impl Drop for GuestHost {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}

/// Tells a component apart from other bytes before handing them to the compiler, for a
/// clearer error.
fn check_header(name: &str, bytes: &[u8]) -> Result<(), GuestError> {
    let err = |reason: &str| GuestError::NotAComponent { module: name.to_string(), reason: reason.into() };
    if bytes.len() < 8 || &bytes[0..4] != b"\0asm" {
        return Err(err("the file does not start with the WebAssembly magic bytes `\\0asm`"));
    }
    match bytes[4..8] {
        [0x01, 0x00, 0x00, 0x00] => Err(err(
            "it is a core WebAssembly module, not a component; build it for the wasm32-wasip2 target \
             (or wrap it with `wasm-tools component new`)",
        )),
        [_, _, 0x01, 0x00] => Ok(()),
        _ => Err(err("unsupported WebAssembly binary version/layer")),
    }
}
