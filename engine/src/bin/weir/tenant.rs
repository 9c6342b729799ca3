//! `weir tenant`: create and list tenants (admin token).

use clap::Subcommand;

use crate::client::{Client, field, items, ms_time, print_table};

#[derive(Subcommand)]
pub enum TenantCommand {
    /// Creates a tenant and prints its token.
    Create {
        /// Its name.
        name: String,
    },
    /// Lists the tenants.
    List,
}

/// Runs a `weir tenant` command.
pub async fn run(c: &Client, command: TenantCommand) -> anyhow::Result<()> {
    match command {
        TenantCommand::Create { name } => {
            let t = c.post("/api/v1/tenants", Some(&serde_json::json!({ "name": name }))).await?;
            println!("tenant {} `{}`", field(&t["tenant"], "id"), field(&t["tenant"], "name"));
            println!("token: {}", field(&t, "token"));
        }
        TenantCommand::List => {
            let list = c.get("/api/v1/tenants").await?;
            let rows = items(&list)
                .iter()
                .map(|t| vec![field(t, "id"), field(t, "name"), ms_time(t, "created_ms")])
                .collect();
            print_table(&["id", "name", "created (UTC)"], rows);
        }
    }
    Ok(())
}
