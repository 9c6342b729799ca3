//! A compiled and validated operator module.

use std::sync::Arc;

use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker};

use super::bindings::chunked::ChunkedSnapshotIndices;
use super::bindings::encoded::EncodedBatchesIndices;
use super::bindings::{OperatorWorldIndices, OperatorWorldPre};
use super::error::GuestError;
use super::instance_data::HostState;
use super::options::PoolingOptions;
use super::world::{CHUNKED_EXPORT, ENCODED_EXPORT};

/// A component checked against the operator world and pre-linked: instantiating it again
/// costs tens of microseconds.
pub struct OperatorModule {
    name: String,
    sha256: [u8; 32],
    /// The component's bytes (a cluster ships them to the workers that run the module).
    bytes: Arc<[u8]>,
    component: Component,
    pre: OperatorWorldPre<HostState>,
    indices: OperatorWorldIndices,
    /// Where the optional `encoded-batches` export is, when the component has it.
    encoded: Option<EncodedBatchesIndices>,
    /// Where the optional `chunked-snapshot` export is, when the component has it.
    chunked: Option<ChunkedSnapshotIndices>,
    pool: Option<PoolingOptions>,
}

impl std::fmt::Debug for OperatorModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorModule")
            .field("name", &self.name)
            .field("sha256", &self.sha256_hex())
            .finish()
    }
}

impl OperatorModule {
    pub(crate) fn new(
        name: &str,
        sha256: [u8; 32],
        bytes: Arc<[u8]>,
        component: Component,
        engine: &Engine,
        linker: &Linker<HostState>,
    ) -> Result<Self, GuestError> {
        let wrong = |reason: String| GuestError::WrongWorld { module: name.to_string(), reason };
        let ty = component.component_type();
        let exports: Vec<(String, bool)> = ty
            .exports(engine)
            .map(|(n, e)| (n.to_string(), matches!(e.ty, ComponentItem::ComponentInstance(_))))
            .collect();
        let imports: Vec<String> = ty.imports(engine).map(|(import, _)| import.to_string()).collect();
        super::world::check_names(name, &exports, &imports)?;
        let stubbed =
            super::wasi::linker_for(engine, linker, &component).map_err(|e| wrong(format!("{e:#}")))?;
        let pre = stubbed
            .as_ref()
            .unwrap_or(linker)
            .instantiate_pre(&component)
            .map_err(|e| wrong(format!("{e:#}")))?;
        let indices = OperatorWorldIndices::new(&pre).map_err(|e| wrong(format!("{e:#}")))?;
        let encoded =
            exports.iter().any(|(n, _)| n == ENCODED_EXPORT).then(|| EncodedBatchesIndices::new(&pre));
        let encoded = encoded.transpose().map_err(|e| wrong(format!("{e:#}")))?;
        let chunked =
            exports.iter().any(|(n, _)| n == CHUNKED_EXPORT).then(|| ChunkedSnapshotIndices::new(&pre));
        let chunked = chunked.transpose().map_err(|e| wrong(format!("{e:#}")))?;
        let pre = OperatorWorldPre::new(pre).map_err(|e| wrong(format!("{e:#}")))?;
        Ok(OperatorModule {
            name: name.to_string(),
            sha256,
            bytes,
            component,
            pre,
            indices,
            encoded,
            chunked,
            pool: None,
        })
    }

    /// The same module, instantiated from the engine's instance pool of this size.
    pub(crate) fn with_pool(self, pool: Option<PoolingOptions>) -> Self {
        OperatorModule { pool, ..self }
    }

    /// The component's bytes.
    pub fn bytes(&self) -> &Arc<[u8]> {
        &self.bytes
    }

    /// The module's name (a path or `builtin:` name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The SHA-256 of the module's bytes, in hex: its content address.
    pub fn sha256_hex(&self) -> String {
        hex::encode(self.sha256)
    }

    /// The compiled component.
    pub fn component(&self) -> &Component {
        &self.component
    }

    pub(crate) fn pre(&self) -> &OperatorWorldPre<HostState> {
        &self.pre
    }

    pub(crate) fn indices(&self) -> &OperatorWorldIndices {
        &self.indices
    }

    /// The `encoded-batches` export, when the component has it.
    pub(crate) fn encoded(&self) -> Option<&EncodedBatchesIndices> {
        self.encoded.as_ref()
    }

    /// Whether the component exports the `encoded-batches` fast path.
    pub fn has_encoded_batches(&self) -> bool {
        self.encoded.is_some()
    }

    /// The `chunked-snapshot` export, when the component has it.
    pub(crate) fn chunked(&self) -> Option<&ChunkedSnapshotIndices> {
        self.chunked.as_ref()
    }

    /// Whether the component exports `chunked-snapshot` (hands snapshots over in parts).
    pub fn has_chunked_snapshot(&self) -> bool {
        self.chunked.is_some()
    }

    /// The engine's instance pool, if instances come from one.
    pub(crate) fn pool(&self) -> Option<PoolingOptions> {
        self.pool
    }
}
