//! `weir module`: upload, list and delete operator modules on a server.

use std::path::PathBuf;

use clap::Subcommand;

use crate::client::{Client, field, items, ms_time, print_table};

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
            println!("module {} `{}` ({} bytes)", field(&m, "id"), field(&m, "name"), field(&m, "size"));
        }
        ModuleCommand::List => {
            let list = c.get("/api/v1/modules").await?;
            let rows = items(&list)
                .iter()
                .map(|m| vec![field(m, "id"), field(m, "name"), field(m, "size"), ms_time(m, "created_ms")])
                .collect();
            print_table(&["id", "name", "bytes", "uploaded (UTC)"], rows);
        }
        ModuleCommand::Delete { id } => {
            c.delete(&format!("/api/v1/modules/{id}")).await?;
            println!("module {id} deleted");
        }
    }
    Ok(())
}
