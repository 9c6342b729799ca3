//! Operator modules.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::server;

/// An uploaded module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Module {
    /// The SHA-256 of its bytes (64 hex digits): its id.
    pub id: String,
    /// The name it was uploaded under; jobs may refer to it by this name (the latest upload
    /// of a name wins) or by id.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Upload time, unix ms.
    pub created_ms: u64,
    /// The component's exports.
    pub exports: Vec<String>,
}

impl From<server::registry::Module> for Module {
    fn from(m: server::registry::Module) -> Self {
        Module { id: m.id, name: m.name, size: m.size, created_ms: m.created_ms, exports: m.exports }
    }
}

// Documentation only: the handler reads the form field by field.
/// The multipart form of an upload.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The component (`.wasm`).
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
    /// Its name (default: the file name without `.wasm`).
    pub name: Option<String>,
}

/// Query of a raw upload.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
pub struct UploadQuery {
    /// The module's name (raw uploads; multipart uploads may give it as a field).
    pub name: Option<String>,
}
