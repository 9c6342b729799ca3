//! What a tenant cannot do to the server (the threat model, docs/design.md §11, issue 15):
//! bad input below and over the API gets a precise error and writes nothing, hostile guests
//! fail their own jobs only, requests cannot hold the server, plan limits and the storage
//! quota refuse before anything is written, a full disk is an error rather than a wedge, and
//! the hostile-tenant suite runs every attack beside another tenant's job.

mod bad_input;
mod bad_requests;
mod disk_full;
mod exports;
mod fat_batches;
mod guests;
mod plan_limits;
mod requests;
mod storage_quota;
mod tenants;
mod timer_storm;
