//! `weir module`: upload, list and delete operator modules on a server.

use std::path::PathBuf;

use clap::Subcommand;

use crate::client::{Client, print_table, time};

#[derive(Subcommand)]
pub enum ModuleCommand {
    /// Uploads a component.
    Upload {
        /// The `.wasm` file.
        file: PathBuf,
        /// Its name (default: the file name without `.wasm`).
        #[arg(long)]
        name: Option<String>,
    },
    /// Lists the modules.
    List,
    /// Deletes a module no job uses.
    Delete {
        /// Module id.
        id: String,
    },
}

/// Runs a `weir module` command.
pub async fn run(c: &Client, command: ModuleCommand) -> anyhow::Result<()> {
    use std::io::IsTerminal as _;
    match command {
        ModuleCommand::Upload { file, name } => {
            let m = c.upload(&file, name.as_deref(), std::io::stderr().is_terminal()).await?;
            println!("module {} `{}` ({} bytes)", m.id, m.name, m.size);
        }
        ModuleCommand::List => {
            let rows = c
                .modules()
                .await?
                .into_iter()
                .map(|m| vec![m.id, m.name, m.size.to_string(), time(Some(m.created_ms))])
                .collect();
            print_table(&["id", "name", "bytes", "uploaded (UTC)"], rows);
        }
        ModuleCommand::Delete { id } => {
            c.delete_module(&id).await?;
            println!("module {id} deleted");
        }
    }
    Ok(())
}
