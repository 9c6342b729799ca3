//! `weir tenant`: create and list tenants (admin token).

use clap::Subcommand;

use crate::client::{Client, print_table, time};

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
            let t = c.create_tenant(&name).await?;
            println!("tenant {} `{}`", t.tenant.id, t.tenant.name);
            println!("token: {}", t.token);
        }
        TenantCommand::List => {
            let rows = c
                .tenants()
                .await?
                .into_iter()
                .map(|t| vec![t.id, t.name, time(Some(t.created_ms))])
                .collect();
            print_table(&["id", "name", "created (UTC)"], rows);
        }
    }
    Ok(())
}
