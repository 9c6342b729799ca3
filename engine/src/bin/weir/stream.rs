//! `weir stream`: create, list, push to and read streams on a server.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;

use crate::client::{Client, print_table, records_from_lines};

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
            let s = c.create_stream(&name, partitions).await?;
            println!("stream `{}` with {} partition(s)", s.name, s.partitions);
        }
        StreamCommand::List => {
            let rows = c
                .streams()
                .await?
                .into_iter()
                .map(|s| {
                    vec![s.name, s.partitions.to_string(), format!("{:?}", s.end_offsets).replace(' ', "")]
                })
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
            let appended = c.append(&name, records).await?;
            let last =
                appended.last().map(|a| format!(" (last: partition {} offset {})", a.partition, a.offset));
            println!("{n} record(s) appended to `{name}`{}", last.unwrap_or_default());
        }
        StreamCommand::Read { name, partition, offset, limit } => {
            let r = c.read(&name, partition, offset, limit).await?;
            let rows = r
                .data
                .iter()
                .map(|x| vec![x.offset.to_string(), text(&x.key), text(&x.value), x.timestamp.to_string()])
                .collect();
            print_table(&["offset", "key", "value", "timestamp"], rows);
            println!("next offset: {}", r.next_offset);
        }
    }
    Ok(())
}

/// A JSON value as display text: strings bare, null as nothing.
fn text(value: &serde_json::value::RawValue) -> String {
    match serde_json::from_str::<serde_json::Value>(value.get()) {
        Ok(serde_json::Value::Null) => String::new(),
        Ok(serde_json::Value::String(s)) => s,
        _ => value.get().to_string(),
    }
}
