//! The WASI an operator gets: least capability.
//!
//! Linked: `wasi:io` (streams, poll, error), `wasi:clocks` (wall and monotonic: a guest may
//! read the time and sleep — sleeping counts against the job's `wall_limit_ms`),
//! `wasi:random` (seeds for hash maps; nothing secret is shared by it), `wasi:cli` (an
//! empty environment and arguments, stdin empty, stdout and stderr discarded) and
//! `wasi:filesystem` (no directory is preopened, so there is nothing to open).
//!
//! Not linked: `wasi:sockets` (and with it name lookup). A component that imports it (the
//! Python toolchain's do, whether or not the operator uses the network) gets those imports
//! as functions that trap: calling one fails the operator's own job with a clear trap, and
//! no socket is ever created on the server.

use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, HasData, Linker, ResourceTable, ResourceType};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::cli::{WasiCli, WasiCliView as _};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView as _};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView as _};
use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random};
use wasmtime_wasi::random::WasiRandom;

use super::instance_data::HostState;

/// The WASI package prefix whose interfaces are never linked.
pub(crate) const UNLINKED: &[&str] = &["wasi:sockets/"];

/// `wasi:io`'s host data: the instance's resource table.
struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// Links the WASI interfaces an operator may use (see the module docs).
pub(crate) fn add_to_linker(l: &mut Linker<HostState>) -> wasmtime::Result<()> {
    use wasmtime_wasi_io::bindings::wasi::io;
    io::error::add_to_linker::<HostState, HasIo>(l, |t| t.ctx().table)?;
    io::poll::add_to_linker::<HostState, HasIo>(l, |t| t.ctx().table)?;
    io::streams::add_to_linker::<HostState, HasIo>(l, |t| t.ctx().table)?;
    clocks::wall_clock::add_to_linker::<HostState, WasiClocks>(l, |t| t.clocks())?;
    clocks::monotonic_clock::add_to_linker::<HostState, WasiClocks>(l, |t| t.clocks())?;
    filesystem::types::add_to_linker::<HostState, WasiFilesystem>(l, |t| t.filesystem())?;
    filesystem::preopens::add_to_linker::<HostState, WasiFilesystem>(l, |t| t.filesystem())?;
    random::random::add_to_linker::<HostState, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    random::insecure::add_to_linker::<HostState, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    random::insecure_seed::add_to_linker::<HostState, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    cli::exit::add_to_linker::<HostState, WasiCli>(l, |t| t.cli())?;
    cli::environment::add_to_linker::<HostState, WasiCli>(l, |t| t.cli())?;
    cli::stdin::add_to_linker::<HostState, WasiCli>(l, |t| t.cli())?;
    cli::stdout::add_to_linker::<HostState, WasiCli>(l, |t| t.cli())?;
    cli::stderr::add_to_linker::<HostState, WasiCli>(l, |t| t.cli())?;
    cli::terminal_input::add_to_linker::<HostState, WasiCli>(l, |t| t.cli())?;
    cli::terminal_output::add_to_linker::<HostState, WasiCli>(l, |t| t.cli())?;
    cli::terminal_stdin::add_to_linker::<HostState, WasiCli>(l, |t| t.cli())?;
    cli::terminal_stdout::add_to_linker::<HostState, WasiCli>(l, |t| t.cli())?;
    cli::terminal_stderr::add_to_linker::<HostState, WasiCli>(l, |t| t.cli())?;
    Ok(())
}

/// The resources `wasi:sockets` defines (its other resource names alias `wasi:io`'s).
const SOCKET_RESOURCES: &[&str] = &[
    "network",
    "tcp-socket",
    "udp-socket",
    "incoming-datagram-stream",
    "outgoing-datagram-stream",
    "resolve-address-stream",
];

/// The host type of the stubbed socket resources (never created: every function traps).
struct Unlinked;

/// The linker for `component`: the shared one, or, when the component imports interfaces
/// that are never linked, a copy in which their functions trap when called.
pub(crate) fn linker_for(
    engine: &Engine,
    linker: &Linker<HostState>,
    component: &Component,
) -> wasmtime::Result<Option<Linker<HostState>>> {
    let mut stubbed: Option<Linker<HostState>> = None;
    for (name, import) in component.component_type().imports(engine) {
        if !UNLINKED.iter().any(|u| name.starts_with(u)) {
            continue;
        }
        let ComponentItem::ComponentInstance(instance) = import.ty else { continue };
        let l = stubbed.get_or_insert_with(|| linker.clone());
        let mut root = l.root();
        let mut stubs = root.instance(name)?;
        for (export, item) in instance.exports(engine) {
            match item.ty {
                ComponentItem::ComponentFunc(_) => {
                    let what = format!("{name}#{export}");
                    stubs.func_new(export, move |_, _, _, _| {
                        Err(wasmtime::format_err!(
                            "`{what}`: operators have no network (Weir does not link wasi:sockets)"
                        ))
                    })?;
                }
                ComponentItem::Resource(_) if SOCKET_RESOURCES.contains(&export) => {
                    stubs.resource(export, ResourceType::host::<Unlinked>(), |_, _| Ok(()))?;
                }
                _ => {}
            }
        }
    }
    Ok(stubbed)
}
