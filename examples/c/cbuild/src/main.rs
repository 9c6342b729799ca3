//! `weir-cbuild`: the two steps of building a C operator into a Weir component that need the
//! component-model tooling, on the same crates the rest of the workspace locks (so CI builds no
//! separate `wit-bindgen` and `wasm-tools` CLIs):
//!
//! ```text
//! weir-cbuild bindings <wit-dir> <world> <out-dir>
//!     wit-bindgen's C bindings of <world>: <world>.c, <world>.h and
//!     <world>_component_type.o (the world's type, linked into the module)
//! weir-cbuild component <core.wasm> <out.wasm>
//!     wraps a core module (a wasm32-wasi reactor) into a component, adapting its WASI
//!     preview1 imports with wasmtime 48's reactor adapter, and validates the result
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
};
use wit_bindgen_core::{Files, wit_parser::Resolve};

const USAGE: &str = "usage: weir-cbuild bindings <wit-dir> <world> <out-dir>\n       weir-cbuild component <core.wasm> <out.wasm>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["bindings", wit, world, out] => bindings(Path::new(wit), world, Path::new(out)),
        ["component", core, out] => component(Path::new(core), Path::new(out)),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weir-cbuild: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Writes the C bindings of `world` (in the WIT package at `wit`) into `out`.
fn bindings(wit: &Path, world: &str, out: &Path) -> Result<()> {
    let mut resolve = Resolve::default();
    let (package, _) =
        resolve.push_path(wit).with_context(|| format!("reading the WIT in {}", wit.display()))?;
    let world = resolve.select_world(&[package], Some(world))?;
    let mut files = Files::default();
    wit_bindgen_c::Opts::default().build().generate(&mut resolve, world, &mut files)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    for (name, contents) in files.iter() {
        let path: PathBuf = out.join(name);
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Wraps the core module at `core` into a component at `out`.
fn component(core: &Path, out: &Path) -> Result<()> {
    let module = std::fs::read(core).with_context(|| format!("reading {}", core.display()))?;
    if !module.starts_with(b"\0asm") {
        bail!("{} is not a WebAssembly module", core.display());
    }
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .context("the module has no component type (link the bindings' _component_type.o)")?
        .adapter(WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER)?
        .validate(true)
        .encode()
        .with_context(|| format!("making a component of {}", core.display()))?;
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
        .validate_all(&component)
        .context("the component does not validate")?;
    std::fs::write(out, component).with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}
