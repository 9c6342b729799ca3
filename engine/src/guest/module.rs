//! A compiled and validated operator module.

use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker};

use super::bindings::OperatorWorldPre;
use super::error::GuestError;
use super::host::PoolingOptions;
use super::host_state::HostState;

/// The export every operator must provide.
pub const OPERATOR_EXPORT: &str = "weir:operator/operator@0.2.0";

/// The operator export without its version: a component exporting it with another version
/// was built against another version of the contract.
const OPERATOR_EXPORT_PREFIX: &str = "weir:operator/operator@";

/// Host imports an operator may use besides WASI.
const HOST_IMPORTS: [&str; 4] = [
    "weir:operator/types@0.2.0",
    "weir:operator/timers@0.2.0",
    "weir:operator/logging@0.2.0",
    "weir:operator/metrics@0.2.0",
];

/// A component checked against the operator world and pre-linked: instantiating it again
/// costs tens of microseconds.
pub struct OperatorModule {
    name: String,
    sha256: [u8; 32],
    component: Component,
    pre: OperatorWorldPre<HostState>,
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
        component: Component,
        engine: &Engine,
        linker: &Linker<HostState>,
    ) -> Result<Self, GuestError> {
        let wrong = |reason: String| GuestError::WrongWorld { module: name.to_string(), reason };
        let ty = component.component_type();
        let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
        match ty.exports(engine).find(|(n, _)| *n == OPERATOR_EXPORT).map(|(_, e)| e.ty) {
            Some(ComponentItem::ComponentInstance(_)) => {}
            Some(_) => return Err(wrong(format!("its export `{OPERATOR_EXPORT}` is not an instance"))),
            None => {
                let list = if exports.is_empty() { "nothing".to_string() } else { exports.join(", ") };
                let mut reason = format!("it does not export `{OPERATOR_EXPORT}` (it exports {list})");
                if let Some(version) = exports.iter().find_map(|e| e.strip_prefix(OPERATOR_EXPORT_PREFIX)) {
                    reason.push_str(&format!(
                        "; it was built against version {version} of the contract: rebuild it with the \
                         current guest SDK (or WIT in `wit/`)"
                    ));
                }
                return Err(wrong(reason));
            }
        }
        let imports: Vec<String> = ty.imports(engine).map(|(import, _)| import.to_string()).collect();
        for import in &imports {
            if !HOST_IMPORTS.contains(&import.as_str()) && !import.starts_with("wasi:") {
                return Err(wrong(format!("it imports `{import}`, which Weir does not provide")));
            }
        }
        let stubbed =
            super::wasi::linker_for(engine, linker, &component).map_err(|e| wrong(format!("{e:#}")))?;
        let pre = stubbed
            .as_ref()
            .unwrap_or(linker)
            .instantiate_pre(&component)
            .map_err(|e| wrong(format!("{e:#}")))?;
        let pre = OperatorWorldPre::new(pre).map_err(|e| wrong(format!("{e:#}")))?;
        Ok(OperatorModule { name: name.to_string(), sha256, component, pre, pool: None })
    }

    /// The same module, instantiated from the engine's instance pool of this size.
    pub(crate) fn with_pool(self, pool: Option<PoolingOptions>) -> Self {
        OperatorModule { pool, ..self }
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

    /// The engine's instance pool, if instances come from one.
    pub(crate) fn pool(&self) -> Option<PoolingOptions> {
        self.pool
    }
}
