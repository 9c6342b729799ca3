//! The cluster (issue 22): `weir serve` as the controller and `weir worker` processes over
//! real sockets. Workers registering, lost and refused; the data plane between workers;
//! checkpoint chunks in an S3-protocol server; jobs on workers exactly once across killed
//! workers; Kafka on workers; mutual TLS on every connection; operators' logs and watermarks
//! from workers; upgrading a job on workers.

mod data;
mod jobs;
mod kafka;
mod objects;
mod observing;
mod tls;
mod upgrade;
mod worker_kills;
mod workers;
