//! Resolving the `module` references of a job spec on the local machine.

use std::path::PathBuf;
use std::sync::Arc;

use crate::guest::{GuestError, GuestHost, OperatorModule};
use crate::plan::{LoadError, ModuleLoader};

/// Largest module file accepted.
pub const MAX_MODULE_BYTES: u64 = 64 << 20;

/// Why a module reference of a job file cannot be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModuleError {
    /// No builtin module of that name.
    #[error("unknown module `{reference}` (builtin modules: {known})")]
    UnknownBuiltin {
        /// The reference.
        reference: String,
        /// The builtin names.
        known: String,
    },
    /// The file cannot be read.
    #[error("unknown module `{reference}`: cannot read {path}: {source}")]
    Unreadable {
        /// The reference.
        reference: String,
        /// The path it resolved to.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_MODULE_BYTES`].
    #[error("module `{reference}` is {size} bytes, more than the limit of {MAX_MODULE_BYTES}")]
    TooLarge {
        /// The reference.
        reference: String,
        /// Its size.
        size: u64,
    },
    /// The bytes are not a valid operator component.
    #[error(transparent)]
    Invalid(#[from] GuestError),
}

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
    fn load(&self, reference: &str) -> Result<Arc<OperatorModule>, LoadError> {
        Ok(self.load_module(reference)?)
    }
}

impl LocalModules {
    /// Loads the module named by `reference`.
    pub fn load_module(&self, reference: &str) -> Result<Arc<OperatorModule>, ModuleError> {
        if let Some(name) = reference.strip_prefix("builtin:") {
            let bytes = crate::builtin::get(name).ok_or_else(|| ModuleError::UnknownBuiltin {
                reference: reference.to_string(),
                known: crate::builtin::names().collect::<Vec<_>>().join(", "),
            })?;
            return Ok(self.host.load(reference, bytes)?);
        }
        let path = self.base_dir.join(reference);
        let unreadable = |source| ModuleError::Unreadable {
            reference: reference.to_string(),
            path: path.display().to_string(),
            source,
        };
        let meta = std::fs::metadata(&path).map_err(unreadable)?;
        if meta.len() > MAX_MODULE_BYTES {
            return Err(ModuleError::TooLarge { reference: reference.to_string(), size: meta.len() });
        }
        let bytes = std::fs::read(&path).map_err(unreadable)?;
        Ok(self.host.load(reference, &bytes)?)
    }
}
