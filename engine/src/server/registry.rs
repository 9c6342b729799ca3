//! Uploaded operator modules, per tenant. A module is content-addressed: its id is the
//! SHA-256 of its bytes, which are stored once (`<data-dir>/modules/<id>.wasm`) however many
//! tenants upload them. It is validated and compiled at upload, so a job never waits for a
//! compiler and never starts with a module that does not fit the `weir:operator` world.
//!
//! With a chunk store configured, a module's bytes also go to object storage
//! (`<prefix>/modules/<id>.wasm`) before its record commits, and the local file is a cache:
//! a module whose file is missing (a controller on a new volume, a deleted cache) is fetched
//! from there and checked against its id. At start, objects no record names are deleted and
//! recorded modules with only a local file (uploaded before the store was set) are put.
//!
//! Compiling is the expensive part of an upload, so it is bounded: the world is checked on
//! the component's names before Cranelift runs (in [`GuestHost::load`]), at most
//! `max_compiles_per_tenant` compilations of a tenant and `max_compiles` of the server run at
//! once (one more is refused with 429 at once), and a refused module is remembered by its
//! SHA-256 ([`MAX_REMEMBERED_REFUSALS`] of them, oldest forgotten first), so the same bad bytes
//! are refused again without being parsed or compiled.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use weir_store::Store;

use super::codec::{decode_record, encode_record};
use super::error::{ServerError, ServerResult};
use super::ids::{check_hex_id, check_name, printable};
use super::tenants::Quotas;
use crate::clock::unix_ms;
use crate::cluster::objects::BlockingChunks;
use crate::guest::{GuestError, GuestHost, OperatorModule};

/// Refused modules remembered by SHA-256.
pub const MAX_REMEMBERED_REFUSALS: usize = 1024;

/// (tenant, module id) → module record (JSON).
pub(crate) const MODULES: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("weir.modules");

/// An uploaded module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    /// The SHA-256 of its bytes (64 hex digits): its id.
    pub id: String,
    /// The name it was uploaded under; jobs may refer to it by this name (the latest upload
    /// of a name wins) or by id.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Upload time, unix ms.
    pub created_ms: u64,
    /// The component's exports.
    pub exports: Vec<String>,
}

/// The module registry.
#[derive(Debug, Clone)]
pub struct ModuleRegistry {
    store: Store,
    host: Arc<GuestHost>,
    dir: PathBuf,
    /// Held while a module's bytes are stored with its record, and while a deletion removes
    /// the last record and then the bytes: an upload of the same bytes by another tenant
    /// never ends with a record whose bytes were just removed.
    files: Arc<Mutex<()>>,
    compiles: Arc<CompileLimits>,
    /// Where module bytes live beside the local files (with a chunk store).
    objects: Option<Arc<BlockingChunks>>,
}

/// Why a module was refused, without its name (a later upload may name it otherwise).
#[derive(Debug, Clone)]
enum Refusal {
    NotAComponent(String),
    WrongWorld(String),
}

impl Refusal {
    /// The refusals worth remembering: those that depend on the bytes alone.
    fn of(error: &GuestError) -> Option<Refusal> {
        match error {
            GuestError::NotAComponent { reason, .. } => Some(Refusal::NotAComponent(reason.clone())),
            GuestError::WrongWorld { reason, .. } => Some(Refusal::WrongWorld(reason.clone())),
            _ => None,
        }
    }

    fn error(&self, module: &str) -> GuestError {
        let module = module.to_string();
        match self {
            Refusal::NotAComponent(reason) => GuestError::NotAComponent { module, reason: reason.clone() },
            Refusal::WrongWorld(reason) => GuestError::WrongWorld { module, reason: reason.clone() },
        }
    }
}

/// Refusals by SHA-256, and their hashes oldest first.
type Refused = (HashMap<[u8; 32], Refusal>, VecDeque<[u8; 32]>);

/// The compilations running (per tenant and in all), the refusals remembered, and counters
/// of both.
#[derive(Debug)]
struct CompileLimits {
    per_tenant: u32,
    total: Arc<tokio::sync::Semaphore>,
    tenants: Mutex<HashMap<String, Arc<tokio::sync::Semaphore>>>,
    refused: Mutex<Refused>,
    compiled: AtomicU64,
    refusals_remembered: AtomicU64,
}

impl CompileLimits {
    fn new(per_tenant: u32, total: u32) -> Self {
        CompileLimits {
            per_tenant: per_tenant.max(1),
            total: Arc::new(tokio::sync::Semaphore::new(total.max(1) as usize)),
            tenants: Mutex::default(),
            refused: Mutex::default(),
            compiled: AtomicU64::new(0),
            refusals_remembered: AtomicU64::new(0),
        }
    }

    /// Permits to compile for `tenant` (dropped when the compilation ends), or the quota error
    /// naming the limit that is reached.
    fn acquire(&self, tenant: &str) -> ServerResult<[tokio::sync::OwnedSemaphorePermit; 2]> {
        let semaphore = {
            let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
            let per_tenant = self.per_tenant as usize;
            tenants
                .entry(tenant.to_string())
                .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(per_tenant)))
                .clone()
        };
        let mine = semaphore.try_acquire_owned().map_err(|_| ServerError::Quota {
            limit: "max_compiles_per_tenant",
            message: format!(
                "the tenant has {} module uploads compiling, the server's limit; retry when one has finished",
                self.per_tenant
            ),
        })?;
        let all = self.total.clone().try_acquire_owned().map_err(|_| ServerError::Quota {
            limit: "max_compiles",
            message: "the server is compiling as many modules as it can at once; retry in a moment".into(),
        })?;
        Ok([mine, all])
    }

    fn refusal(&self, sha: &[u8; 32]) -> Option<Refusal> {
        self.refused.lock().unwrap_or_else(PoisonError::into_inner).0.get(sha).cloned()
    }

    /// Remembers `refusal` of `sha`, forgetting the oldest beyond [`MAX_REMEMBERED_REFUSALS`].
    fn remember(&self, sha: [u8; 32], refusal: Refusal) {
        let mut guard = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        let (map, order) = &mut *guard;
        if map.insert(sha, refusal).is_none() {
            order.push_back(sha);
        }
        while order.len() > MAX_REMEMBERED_REFUSALS {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }
}

/// Counters of the registry's compilations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileStats {
    /// Uploads handed to the compiler (the world check on names passed).
    pub compiled: u64,
    /// Uploads refused from the remembered refusals, without parsing or compiling.
    pub refusals_remembered: u64,
}

fn db_err(e: impl std::fmt::Display) -> ServerError {
    ServerError::internal(e)
}

impl ModuleRegistry {
    /// The registry keeping module bytes in `dir`.
    pub fn open(store: &Store, host: Arc<GuestHost>, dir: PathBuf) -> ServerResult<Self> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| ServerError::Internal(format!("cannot create {}: {e}", dir.display())))?;
        let txn = store.database()?.begin_write().map_err(db_err)?;
        txn.open_table(MODULES).map_err(db_err)?;
        txn.commit().map_err(db_err)?;
        let compiles = Arc::new(CompileLimits::new(2, 2));
        Ok(ModuleRegistry { store: store.clone(), host, dir, files: Arc::default(), compiles, objects: None })
    }

    /// The same registry keeping module bytes in `objects` too.
    pub fn with_objects(self, objects: Arc<BlockingChunks>) -> Self {
        ModuleRegistry { objects: Some(objects), ..self }
    }

    /// Makes the module objects match the records: deletes those no tenant's record names
    /// (an upload that failed after its put, a deletion whose object delete failed) and puts
    /// the local files of recorded modules that have no object (uploaded before the chunk
    /// store was set). Returns (deleted, put). Blocking; at start.
    pub fn sync_objects(&self) -> ServerResult<(usize, usize)> {
        let Some(objects) = &self.objects else {
            return Ok((0, 0));
        };
        let _files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        let mut known = std::collections::BTreeSet::new();
        let txn = self.store.database()?.begin_read().map_err(db_err)?;
        for row in txn.open_table(MODULES).map_err(db_err)?.iter().map_err(db_err)? {
            known.insert(row.map_err(db_err)?.0.value().1.to_string());
        }
        let stored: std::collections::BTreeSet<String> =
            objects.block_on(|o| async move { o.list_modules().await })?.into_iter().collect();
        // Past the grace period only: a restored older weir.redb does not name newer uploads.
        let recorded = known.clone();
        let deleted = objects.block_on(|o| async move { o.sweep_modules(&recorded).await })?;
        let mut put = 0;
        for id in known.difference(&stored) {
            // A module whose file is gone too cannot be helped here: resolving it says so.
            let Ok(bytes) = std::fs::read(self.path(id)) else { continue };
            let id = id.clone();
            let bytes = bytes::Bytes::from(bytes);
            objects.block_on(|o| async move { o.put_module(&id, bytes).await })?;
            put += 1;
        }
        Ok((deleted, put))
    }

    /// The bytes of module `id`: the local file, or (when it is missing) the object, which is
    /// checked against the id and kept as the local file. Blocking.
    fn bytes(&self, id: &str) -> ServerResult<Vec<u8>> {
        let path = self.path(id);
        let error =
            |e: &dyn std::fmt::Display| ServerError::Internal(format!("module `{id}` cannot be read: {e}"));
        match (std::fs::read(&path), &self.objects) {
            (Ok(bytes), _) => Ok(bytes),
            (Err(e), Some(objects)) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = id.to_string();
                let fetched = objects.block_on(|o| async move { o.get_module(&key).await })?;
                let bytes = fetched.ok_or_else(|| error(&"neither its file nor its object exists"))?;
                if hex::encode(Sha256::digest(&bytes)) != id {
                    return Err(error(&"its object does not match its SHA-256"));
                }
                let _files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
                let tmp = self.dir.join(format!("{id}.tmp"));
                std::fs::write(&tmp, &bytes)
                    .and_then(|()| std::fs::rename(&tmp, &path))
                    .map_err(|e| error(&e))?;
                Ok(bytes.to_vec())
            }
            (Err(e), _) => Err(error(&e)),
        }
    }

    /// The same registry compiling at most `per_tenant` uploads of one tenant and `total` in
    /// all at once (both at least 1; [`ModuleRegistry::open`] allows 2 and 2).
    pub fn with_compile_limits(self, per_tenant: u32, total: u32) -> Self {
        ModuleRegistry { compiles: Arc::new(CompileLimits::new(per_tenant, total)), ..self }
    }

    /// How many uploads were compiled, and how many refused from memory.
    pub fn compile_stats(&self) -> CompileStats {
        CompileStats {
            compiled: self.compiles.compiled.load(Ordering::Relaxed),
            refusals_remembered: self.compiles.refusals_remembered.load(Ordering::Relaxed),
        }
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.wasm"))
    }

    /// Fails with the `max_module_bytes` quota error when a module of `size` bytes is larger
    /// than `quotas` allow (checked while an upload arrives, too).
    pub fn check_size(quotas: &Quotas, size: u64) -> ServerResult<()> {
        let max = quotas.max_module_bytes;
        if size > max {
            return Err(ServerError::Quota {
                limit: "max_module_bytes",
                message: format!("the module is larger than the tenant's limit of {max} bytes"),
            });
        }
        Ok(())
    }

    /// Validates, compiles and stores `bytes` as module `name` of `tenant` (on the blocking
    /// pool: it compiles). Returns the module and whether it is new for the tenant (an
    /// identical upload returns the existing one).
    pub async fn upload(
        &self,
        tenant: &str,
        name: &str,
        bytes: impl AsRef<[u8]> + Send + 'static,
    ) -> ServerResult<(Module, bool)> {
        let (registry, tenant, name) = (self.clone(), tenant.to_string(), name.to_string());
        tokio::task::spawn_blocking(move || registry.upload_blocking(&tenant, &name, bytes.as_ref())).await?
    }

    fn upload_blocking(&self, tenant: &str, name: &str, bytes: &[u8]) -> ServerResult<(Module, bool)> {
        check_name("module", name)?;
        let sha: [u8; 32] = Sha256::digest(bytes).into();
        let id = hex::encode(sha);
        if let Ok(mut existing) = self.get(tenant, &id) {
            if existing.name != name {
                existing.name = name.to_string();
                self.put(tenant, &existing)?;
            }
            return Ok((existing, false));
        }
        if let Some(refusal) = self.compiles.refusal(&sha) {
            self.compiles.refusals_remembered.fetch_add(1, Ordering::Relaxed);
            return Err(ServerError::Unprocessable(refusal.error(name).to_string()));
        }
        let refused = |e: GuestError| {
            if let Some(refusal) = Refusal::of(&e) {
                self.compiles.remember(sha, refusal);
            }
            ServerError::Unprocessable(e.to_string())
        };
        // Cheap checks first: a wrong world never holds a compile permit.
        crate::guest::precheck(name, bytes).map_err(refused)?;
        let _permits = self.compiles.acquire(tenant)?;
        self.compiles.compiled.fetch_add(1, Ordering::Relaxed);
        // The host caches a compiled form only once the module fits the world: a refused
        // upload leaves nothing on disk.
        let compiled = self.host.load(name, bytes).map_err(refused)?;
        let exports = compiled
            .component()
            .component_type()
            .exports(self.host.engine())
            .map(|(n, _)| n.to_string())
            .collect();
        let _files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        let path = self.path(&id);
        if !path.exists() {
            let tmp = self.dir.join(format!("{id}.tmp"));
            std::fs::write(&tmp, bytes)
                .and_then(|()| std::fs::rename(&tmp, &path))
                .map_err(|e| ServerError::Internal(format!("cannot store module: {e}")))?;
        }
        // In object storage before the record commits: a record never names a module that is
        // not there (what a failed upload leaves, `sweep_objects` deletes).
        if let Some(objects) = &self.objects {
            let (key, bytes) = (id.clone(), bytes::Bytes::copy_from_slice(bytes));
            objects.block_on(|o| async move { o.put_module(&key, bytes).await })?;
        }
        let module =
            Module { id, name: name.to_string(), size: bytes.len() as u64, created_ms: unix_ms(), exports };
        self.put(tenant, &module)?;
        Ok((module, true))
    }

    fn put(&self, tenant: &str, module: &Module) -> ServerResult<()> {
        let txn = self.store.database()?.begin_write().map_err(db_err)?;
        {
            let mut t = txn.open_table(MODULES).map_err(db_err)?;
            let value = encode_record(module)?;
            let old = t.insert((tenant, module.id.as_str()), value.as_slice()).map_err(db_err)?;
            let old = old.map(|v| v.value().len());
            // A new module also brings its file's bytes (counted for every tenant that has it).
            let file = if old.is_none() { module.size as i64 } else { 0 };
            let key_len = tenant.len() + module.id.len();
            super::ledger::charge_row(&txn, tenant, key_len, (old, Some(value.len())), file, true)?;
        }
        txn.commit().map_err(db_err)
    }

    /// Module `id` of `tenant`.
    pub fn get(&self, tenant: &str, id: &str) -> ServerResult<Module> {
        check_hex_id("module", id, 64)?;
        let txn = self.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(MODULES).map_err(db_err)?;
        match t.get((tenant, id)).map_err(db_err)? {
            Some(v) => decode_record(v.value()),
            None => Err(ServerError::NotFound(format!("no module `{id}`"))),
        }
    }

    /// The modules of `tenant`, oldest first.
    pub fn list(&self, tenant: &str) -> ServerResult<Vec<Module>> {
        let txn = self.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(MODULES).map_err(db_err)?;
        let mut out: Vec<Module> = Vec::new();
        for row in t.range((tenant, "")..).map_err(db_err)? {
            let (k, v) = row.map_err(db_err)?;
            if k.value().0 != tenant {
                break;
            }
            out.push(decode_record(v.value())?);
        }
        out.sort_by_key(|m| m.created_ms);
        Ok(out)
    }

    /// Bytes stored for `tenant`'s modules.
    pub fn usage(&self, tenant: &str) -> ServerResult<u64> {
        Ok(self.list(tenant)?.iter().map(|m| m.size).sum())
    }

    /// Removes module `id` of `tenant` (the caller checked that no job uses it); its bytes go
    /// when no tenant has it any more.
    pub(crate) fn delete(&self, tenant: &str, id: &str) -> ServerResult<()> {
        self.get(tenant, id)?;
        let _files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        let txn = self.store.database()?.begin_write().map_err(db_err)?;
        let still_used;
        {
            let mut t = txn.open_table(MODULES).map_err(db_err)?;
            if let Some(old) = t.remove((tenant, id)).map_err(db_err)? {
                let file = decode_record::<Module>(old.value()).map_or(0, |m| m.size as i64);
                let row = (Some(old.value().len()), None);
                super::ledger::charge_row(&txn, tenant, tenant.len() + id.len(), row, -file, false)?;
            }
            let mut used = false;
            for row in t.iter().map_err(db_err)? {
                let (k, _) = row.map_err(db_err)?;
                if k.value().1 == id {
                    used = true;
                    break;
                }
            }
            still_used = used;
        }
        txn.commit().map_err(db_err)?;
        if !still_used {
            let _ = std::fs::remove_file(self.path(id));
            if let Some(objects) = &self.objects {
                let key = id.to_string();
                if let Err(e) = objects.block_on(|o| async move { o.delete_module(&key).await }) {
                    tracing::warn!(module = id, "the module's object stays until the next start: {e}");
                }
            }
            self.host.forget(id);
        }
        Ok(())
    }

    /// Resolves a job's module reference for `tenant`: a module id, the name of an uploaded
    /// module (the latest upload), or `builtin:<name>`. Returns the compiled module and the
    /// id it resolved to. Blocking (may compile after a restart).
    pub fn resolve(&self, tenant: &str, reference: &str) -> ServerResult<(Arc<OperatorModule>, String)> {
        let refused = |e: GuestError| ServerError::BadRequest(e.to_string());
        if let Some(name) = reference.strip_prefix("builtin:") {
            let bytes = crate::builtin::get(name).ok_or_else(|| {
                let known: Vec<_> = crate::builtin::names().collect();
                ServerError::BadRequest(format!(
                    "unknown module `{}` (builtin modules: {})",
                    printable(reference),
                    known.join(", ")
                ))
            })?;
            let module = self.host.load(reference, bytes).map_err(refused)?;
            return Ok((module, reference.to_string()));
        }
        let modules = self.list(tenant)?;
        let found = modules
            .iter()
            .find(|m| m.id == reference)
            .or_else(|| modules.iter().rev().find(|m| m.name == reference))
            .ok_or_else(|| {
                ServerError::BadRequest(format!(
                    "unknown module `{}`: upload it first (POST /api/v1/modules), or use a module id or builtin:<name>",
                    printable(reference)
                ))
            })?;
        let bytes = self.bytes(&found.id)?;
        let module = self.host.load(&found.name, &bytes).map_err(refused)?;
        Ok((module, found.id.clone()))
    }
}
