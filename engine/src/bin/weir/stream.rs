//! `weir stream`: create, list, push to and read streams on a server.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;

use crate::client::{Client, field, items, print_table, records_from_lines};

#[derive(Subcommand)]
pub enum StreamCommand {
    /// Creates a stream.
    Create {
        /// Its name.
        name: String,
        /// Partitions.
        #[arg(long, default_value_t = 1)]
        partitions: u32,
    },
    /// Lists the streams.
    List,
    /// Appends records: JSON lines from a file or stdin (`-`), each a record object with
    /// `value` (and optionally `key`, `timestamp`, `partition`) or a bare value.
    Push {
        /// The stream.
        name: String,
        /// The file (`-` for stdin).
        #[arg(default_value = "-")]
        file: PathBuf,
    },
    /// Reads records of a partition.
    Read {
        /// The stream.
        name: String,
        /// Partition.
        #[arg(long, default_value_t = 0)]
        partition: u32,
        /// First offset.
        #[arg(long, default_value_t = 0)]
        offset: u64,
        /// Most records.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
}

/// Runs a `weir stream` command.
pub async fn run(c: &Client, command: StreamCommand) -> anyhow::Result<()> {
    match command {
        StreamCommand::Create { name, partitions } => {
            let s = c
                .post("/api/v1/streams", Some(&serde_json::json!({ "name": name, "partitions": partitions })))
                .await?;
            println!("stream `{}` with {} partition(s)", field(&s, "name"), field(&s, "partitions"));
        }
        StreamCommand::List => {
            let list = c.get("/api/v1/streams").await?;
            let rows = items(&list)
                .iter()
                .map(|s| vec![field(s, "name"), field(s, "partitions"), field(s, "end_offsets")])
                .collect();
            print_table(&["name", "partitions", "end offsets"], rows);
        }
        StreamCommand::Push { name, file } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())?
            } else {
                std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?
            };
            let records = records_from_lines(&text)?;
            let n = records.len();
            let out = c
                .post(
                    &format!("/api/v1/streams/{name}/records"),
                    Some(&serde_json::json!({ "records": records })),
                )
                .await?;
            let last = items(&out).last().map(|a| {
                format!(" (last: partition {} offset {})", field(a, "partition"), field(a, "offset"))
            });
            println!("{n} record(s) appended to `{name}`{}", last.unwrap_or_default());
        }
        StreamCommand::Read { name, partition, offset, limit } => {
            let r = c
                .get(&format!(
                    "/api/v1/streams/{name}/records?partition={partition}&offset={offset}&limit={limit}"
                ))
                .await?;
            let rows = items(&r)
                .iter()
                .map(|x| vec![field(x, "offset"), field(x, "key"), field(x, "value"), field(x, "timestamp")])
                .collect();
            print_table(&["offset", "key", "value", "timestamp"], rows);
            println!("next offset: {}", field(&r, "next_offset"));
        }
    }
    Ok(())
}
