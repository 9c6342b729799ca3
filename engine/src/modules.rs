//! Resolving the `module` references of a job spec on the local machine.

use std::path::PathBuf;
use std::sync::Arc;

use crate::guest::{GuestHost, OperatorModule};
use crate::plan::ModuleLoader;

/// Largest module file accepted.
pub const MAX_MODULE_BYTES: u64 = 64 << 20;

/// Loads `builtin:<name>` from the binary and anything else as a file path relative to
/// `base_dir` (the job file's directory).
#[derive(Debug, Clone)]
pub struct LocalModules {
    host: Arc<GuestHost>,
    base_dir: PathBuf,
}

impl LocalModules {
    /// A loader compiling with `host`, resolving relative paths against `base_dir`.
    pub fn new(host: Arc<GuestHost>, base_dir: impl Into<PathBuf>) -> Self {
        LocalModules { host, base_dir: base_dir.into() }
    }
}

impl ModuleLoader for LocalModules {
    fn load(&self, reference: &str) -> Result<Arc<OperatorModule>, String> {
        if let Some(name) = reference.strip_prefix("builtin:") {
            let bytes = crate::builtin::get(name).ok_or_else(|| {
                let known: Vec<_> = crate::builtin::names().collect();
                format!("unknown module `{reference}` (builtin modules: {})", known.join(", "))
            })?;
            return self.host.load(reference, bytes).map_err(|e| e.to_string());
        }
        let path = self.base_dir.join(reference);
        let meta = std::fs::metadata(&path)
            .map_err(|e| format!("unknown module `{reference}`: cannot read {}: {e}", path.display()))?;
        if meta.len() > MAX_MODULE_BYTES {
            return Err(format!(
                "module `{reference}` is {} bytes, more than the limit of {MAX_MODULE_BYTES}",
                meta.len()
            ));
        }
        let bytes = std::fs::read(&path)
            .map_err(|e| format!("unknown module `{reference}`: cannot read {}: {e}", path.display()))?;
        self.host.load(reference, &bytes).map_err(|e| e.to_string())
    }
}
