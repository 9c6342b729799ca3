//! Whether a component's imports and exports fit the operator world. The check runs twice:
//! on the names read from the binary ([`precheck`], a linear scan without validation, before
//! Cranelift compiles anything) and on the compiled component's types
//! ([`super::OperatorModule`]); both give the same [`GuestError::WrongWorld`]. The world's
//! names (exports and host imports) are defined here.

use wasmparser::{Chunk, ComponentExternalKind, Parser, Payload};

use super::error::GuestError;

/// The export every operator must provide.
pub const OPERATOR_EXPORT: &str = "weir:operator/operator@0.2.0";

/// The operator export without its version: a component exporting it with another version
/// was built against another version of the contract.
pub(crate) const OPERATOR_EXPORT_PREFIX: &str = "weir:operator/operator@";

/// The optional fast-path export of interpreted guests (`wit/encoded.wit`).
pub const ENCODED_EXPORT: &str = "weir:operator/encoded-batches@0.2.0";

/// The optional export that hands snapshots over in parts (`chunked-snapshot` in
/// `wit/operator.wit`; every guest of the Rust SDK has it).
pub const CHUNKED_EXPORT: &str = "weir:operator/chunked-snapshot@0.2.0";

/// Host imports an operator may use besides WASI.
pub(crate) const HOST_IMPORTS: [&str; 7] = [
    "weir:operator/types@0.2.0",
    "weir:operator/timers@0.2.0",
    "weir:operator/event-time@0.2.0",
    "weir:operator/side-output@0.2.0",
    "weir:operator/keyed-state@0.2.0",
    "weir:operator/logging@0.2.0",
    "weir:operator/metrics@0.2.0",
];

/// Refuses a component whose top-level exports or imports do not fit the operator world:
/// `exports` are (name, is an instance), `imports` names.
pub(crate) fn check_names(
    name: &str,
    exports: &[(String, bool)],
    imports: &[String],
) -> Result<(), GuestError> {
    let wrong = |reason: String| GuestError::WrongWorld { module: name.to_string(), reason };
    match exports.iter().find(|(n, _)| n == OPERATOR_EXPORT) {
        Some((_, true)) => {}
        Some((_, false)) => return Err(wrong(format!("its export `{OPERATOR_EXPORT}` is not an instance"))),
        None => {
            let names: Vec<&str> = exports.iter().map(|(n, _)| n.as_str()).collect();
            let list = if names.is_empty() { "nothing".to_string() } else { names.join(", ") };
            let mut reason = format!("it does not export `{OPERATOR_EXPORT}` (it exports {list})");
            if let Some(version) = names.iter().find_map(|e| e.strip_prefix(OPERATOR_EXPORT_PREFIX)) {
                reason.push_str(&format!(
                    "; it was built against version {version} of the contract: rebuild it with the \
                     current guest SDK (or WIT in `wit/`)"
                ));
            }
            return Err(wrong(reason));
        }
    }
    for import in imports {
        if !HOST_IMPORTS.contains(&import.as_str()) && !import.starts_with("wasi:") {
            return Err(wrong(format!("it imports `{import}`, which Weir does not provide")));
        }
    }
    Ok(())
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

/// Reads the top-level import and export names of the component `bytes` (nested modules
/// and components are skipped unread) and checks them with `check_names`. Bytes that are
/// not a component, or do not parse, are [`GuestError::NotAComponent`].
pub fn precheck(name: &str, bytes: &[u8]) -> Result<(), GuestError> {
    check_header(name, bytes)?;
    let broken = |reason: String| GuestError::NotAComponent { module: name.to_string(), reason };
    let (mut exports, mut imports) = (Vec::new(), Vec::new());
    let mut parser = Parser::new(0);
    let mut data = bytes;
    loop {
        let (payload, consumed) = match parser.parse(data, true).map_err(|e| broken(e.to_string()))? {
            Chunk::Parsed { payload, consumed } => (payload, consumed),
            Chunk::NeedMoreData(_) => return Err(broken("the component is truncated".into())),
        };
        data = &data[consumed..];
        match payload {
            Payload::ModuleSection { unchecked_range, .. }
            | Payload::ComponentSection { unchecked_range, .. } => {
                data = data
                    .get(unchecked_range.len()..)
                    .ok_or_else(|| broken("a nested module runs past the end of the component".into()))?;
            }
            Payload::ComponentImportSection(section) => {
                for import in section {
                    imports.push(import.map_err(|e| broken(e.to_string()))?.name.name.to_string());
                }
            }
            Payload::ComponentExportSection(section) => {
                for export in section {
                    let export = export.map_err(|e| broken(e.to_string()))?;
                    exports
                        .push((export.name.name.to_string(), export.kind == ComponentExternalKind::Instance));
                }
            }
            Payload::End(_) => break,
            _ => {}
        }
    }
    check_names(name, &exports, &imports)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(wat: &str) -> Vec<u8> {
        wat::parse_str(wat).expect("valid WAT")
    }

    #[test]
    fn names_are_read_without_compiling() {
        let empty = component("(component)");
        let e = precheck("empty", &empty).unwrap_err().to_string();
        assert!(e.contains("it exports nothing"), "{e}");
        let other = component(
            r#"(component (import "acme:db/query" (func)) (instance $i) (export "weir:operator/operator@0.1.0" (instance $i)))"#,
        );
        let e = precheck("old", &other).unwrap_err().to_string();
        assert!(e.contains("version 0.1.0 of the contract"), "{e}");
        let nested = component(&format!(
            r#"(component (import "acme:db/query" (func)) (core module (func (export "f"))) (instance $i) (export "{OPERATOR_EXPORT}" (instance $i)))"#
        ));
        let e = precheck("nested", &nested).unwrap_err().to_string();
        assert!(e.contains("imports `acme:db/query`, which Weir does not provide"), "{e}");
        let fits = component(&format!(
            r#"(component (import "wasi:io/poll@0.2.6" (instance)) (core module) (instance $i) (export "{OPERATOR_EXPORT}" (instance $i)))"#
        ));
        precheck("fits", &fits).expect("names fit the world");
        let mut cut = fits.clone();
        cut.truncate(fits.len() - 3);
        assert!(matches!(precheck("cut", &cut), Err(GuestError::NotAComponent { .. })));
    }
}
