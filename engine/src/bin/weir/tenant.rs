//! `weir tenant`: create, list, disable and enable tenants, and manage their tokens (admin
//! token). A tenant is named by its id or its name.

use clap::Subcommand;
use weir::api::model::{RotateTokens, Tenant, TokenBody};

use crate::client::{Client, opt, print_table, time};

#[derive(Subcommand)]
pub enum TenantCommand {
    /// Creates a tenant and prints its token.
    Create {
        /// Its name.
        name: String,
    },
    /// Lists the tenants.
    List,
    /// Disables a tenant: its requests are refused (403), its running jobs stop (their
    /// state stays), its data stays. `enable` undoes it.
    Disable {
        /// The tenant's id or name.
        tenant: String,
    },
    /// Enables a disabled tenant: its tokens work again and the jobs that `disable`
    /// stopped resume from their latest checkpoints.
    Enable {
        /// The tenant's id or name.
        tenant: String,
    },
    /// A tenant's tokens: create, list, revoke, rotate.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Issues another token for a tenant and prints it (shown only now).
    Create {
        /// The tenant's id or name.
        tenant: String,
        /// What the token is for (`ci`, `grafana`, ...).
        #[arg(long)]
        label: Option<String>,
    },
    /// Lists a tenant's tokens: ids, labels, creation times (never the tokens).
    List {
        /// The tenant's id or name.
        tenant: String,
    },
    /// Revokes a token: from the next request on it is refused (401).
    Revoke {
        /// The tenant's id or name.
        tenant: String,
        /// The token's id (see `weir tenant token list`).
        token_id: String,
    },
    /// Issues a new token and revokes the old ones in one step (with `--token-id`, only
    /// that one). For a rotation without a gap: `token create`, move the clients, then
    /// `token revoke`.
    Rotate {
        /// The tenant's id or name.
        tenant: String,
        /// Replace only this token (its label passes to the new one).
        #[arg(long)]
        token_id: Option<String>,
        /// The new token's label.
        #[arg(long)]
        label: Option<String>,
    },
}

/// The id of the tenant named `tenant` (by id or by name).
async fn tenant_id(c: &Client, tenant: &str) -> anyhow::Result<String> {
    let all = c.tenants().await?;
    all.iter()
        .find(|t| t.id == tenant)
        .or_else(|| all.iter().find(|t| t.name == tenant))
        .map(|t| t.id.clone())
        .ok_or_else(|| anyhow::anyhow!("no tenant with id or name `{tenant}` (see `weir tenant list`)"))
}

fn print_token(t: &TokenBody) {
    println!("token {} ({})", t.id, t.label.as_deref().unwrap_or("no label"));
    println!("token: {}", t.token);
}

fn state(t: &Tenant) -> String {
    match t.disabled_ms {
        Some(ms) => format!("disabled since {}", time(Some(ms))),
        None => "enabled".into(),
    }
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
                .map(|t| vec![t.id.clone(), t.name.clone(), time(Some(t.created_ms)), state(&t)])
                .collect();
            print_table(&["id", "name", "created (UTC)", "state"], rows);
        }
        TenantCommand::Disable { tenant } => {
            let t = c.set_tenant_enabled(&tenant_id(c, &tenant).await?, false).await?;
            println!("tenant {} `{}` {}; {} job(s) stopped", t.id, t.name, state(&t), t.suspended_jobs.len());
        }
        TenantCommand::Enable { tenant } => {
            let t = c.set_tenant_enabled(&tenant_id(c, &tenant).await?, true).await?;
            println!("tenant {} `{}` enabled", t.id, t.name);
        }
        TenantCommand::Token { command } => token(c, command).await?,
    }
    Ok(())
}

async fn token(c: &Client, command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create { tenant, label } => {
            print_token(&c.issue_token(&tenant_id(c, &tenant).await?, label).await?);
        }
        TokenCommand::List { tenant } => {
            let rows = c
                .tokens(&tenant_id(c, &tenant).await?)
                .await?
                .into_iter()
                .map(|t| vec![t.id, opt(&t.label), time(Some(t.created_ms))])
                .collect();
            print_table(&["id", "label", "created (UTC)"], rows);
        }
        TokenCommand::Revoke { tenant, token_id } => {
            let t = c.revoke_token(&tenant_id(c, &tenant).await?, &token_id).await?;
            println!("token {} revoked", t.id);
        }
        TokenCommand::Rotate { tenant, token_id, label } => {
            let r = c.rotate_tokens(&tenant_id(c, &tenant).await?, &RotateTokens { token_id, label }).await?;
            for old in &r.revoked {
                println!("token {} revoked", old.id);
            }
            print_token(&r.token);
        }
    }
    Ok(())
}
