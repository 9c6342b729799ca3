//! `/api/v1/modules`: upload (multipart, or the raw component), list, get, delete.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Path, Query, Request, State};
use axum::http::{StatusCode, header};

use super::Caller;
use super::model::{Data, ErrorBody, Module, UploadForm, UploadQuery};
use crate::server::registry::ModuleRegistry;
use crate::server::tenants::Tenant;
use crate::server::{Server, ServerError};

/// The name a module gets from an uploaded file name: its last path component without
/// `.wasm`.
fn name_from_file(file: &str) -> String {
    let last = file.rsplit(['/', '\\']).next().unwrap_or(file);
    last.strip_suffix(".wasm").unwrap_or(last).to_string()
}

async fn read_multipart(
    mut form: Multipart,
    tenant: &Tenant,
) -> Result<(Option<String>, Option<String>, Bytes), ServerError> {
    let bad = |e: axum::extract::multipart::MultipartError| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServerError::TooLarge(format!("the upload is too large: {}", e.body_text()))
        } else {
            ServerError::BadRequest(format!("invalid multipart body: {}", e.body_text()))
        }
    };
    let (mut name, mut file_name, mut bytes) = (None, None, None);
    while let Some(mut field) = form.next_field().await.map_err(bad)? {
        match field.name() {
            Some("file") => {
                file_name = field.file_name().map(str::to_string);
                let mut data = Vec::new();
                while let Some(chunk) = field.chunk().await.map_err(bad)? {
                    data.extend_from_slice(&chunk);
                    if let Err(e) = ModuleRegistry::check_size(&tenant.quotas, data.len() as u64) {
                        // Read (and drop) the rest of the body, up to the server's request
                        // limit, before answering: a client still sending would otherwise
                        // see a broken connection instead of this answer.
                        drop(data);
                        while let Ok(Some(_)) = field.chunk().await {}
                        while let Ok(Some(mut rest)) = form.next_field().await {
                            while let Ok(Some(_)) = rest.chunk().await {}
                        }
                        return Err(e);
                    }
                }
                bytes = Some(Bytes::from(data));
            }
            Some("name") => name = Some(field.text().await.map_err(bad)?),
            other => {
                return Err(ServerError::BadRequest(format!(
                    "unexpected form field `{}` (expected `file` and optionally `name`)",
                    other.unwrap_or("")
                )));
            }
        }
    }
    let bytes = bytes.ok_or_else(|| ServerError::BadRequest("the form has no `file` field".into()))?;
    Ok((name, file_name, bytes))
}

/// Uploads a module: a `multipart/form-data` body with a `file` field (and optionally
/// `name`), or the component itself as `application/wasm` with `?name=`. The component is
/// validated against the `weir:operator` world (on its import and export names before it is
/// compiled) and compiled once; uploading the same bytes again returns the existing module,
/// and bytes refused before are refused again without compiling.
#[utoipa::path(post, path = "/api/v1/modules", tag = "modules",
    params(UploadQuery),
    request_body(content(
        (UploadForm = "multipart/form-data"),
        (Vec<u8> = "application/wasm")
    )),
    responses(
        (status = 201, description = "Uploaded", body = Module),
        (status = 200, description = "The same bytes were uploaded before", body = Module),
        (status = 400, description = "Bad form or name", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 413, description = "Larger than the tenant's max_module_bytes or the server's limit", body = ErrorBody),
        (status = 422, description = "Not a component of the weir:operator world", body = ErrorBody),
        (status = 429, description = "Storage quota, or the tenant's or server's compilations at once (max_compiles_per_tenant, max_compiles)", body = ErrorBody),
        (status = 507, description = "The server's disk is nearly full", body = ErrorBody)))]
pub async fn upload_module(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Query(query): Query<UploadQuery>,
    request: Request,
) -> Result<(StatusCode, Json<Module>), ServerError> {
    let content_type =
        request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let (name, file_name, bytes) = if content_type.starts_with("multipart/form-data") {
        let form = Multipart::from_request(request, &server)
            .await
            .map_err(|e| ServerError::BadRequest(format!("invalid multipart body: {}", e.body_text())))?;
        read_multipart(form, &tenant).await?
    } else {
        let bytes = Bytes::from_request(request, &server).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ServerError::TooLarge(format!("the upload is too large: {}", e.body_text()))
            } else {
                ServerError::BadRequest(e.body_text())
            }
        })?;
        (None, None, bytes)
    };
    ModuleRegistry::check_size(&tenant.quotas, bytes.len() as u64)?;
    let name = name.or(query.name).or_else(|| file_name.as_deref().map(name_from_file)).ok_or_else(|| {
        ServerError::BadRequest("the module needs a name: a `name` field or `?name=`".into())
    })?;
    if bytes.is_empty() {
        return Err(ServerError::BadRequest("the upload is empty".into()));
    }
    server.check_storage(&tenant, bytes.len() as u64)?;
    server.check_disk(bytes.len() as u64)?;
    let (module, created) = server.modules.upload(&tenant.id, &name, bytes).await?;
    tracing::info!(tenant = %tenant.id, module = %module.id, name = %module.name, created, "module uploaded");
    Ok((if created { StatusCode::CREATED } else { StatusCode::OK }, Json(module.into())))
}

/// Lists the caller's modules.
#[utoipa::path(get, path = "/api/v1/modules", tag = "modules",
    responses(
        (status = 200, description = "The modules", body = Data<Module>),
        (status = 401, description = "No or bad token", body = ErrorBody)))]
pub async fn list_modules(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
) -> Result<Json<Data<Module>>, ServerError> {
    Ok(Json(Data::of(server.modules.list(&tenant.id)?)))
}

/// One module.
#[utoipa::path(get, path = "/api/v1/modules/{module_id}", tag = "modules",
    params(("module_id" = String, Path, description = "Module id (SHA-256, hex)")),
    responses(
        (status = 200, description = "The module", body = Module),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such module", body = ErrorBody)))]
pub async fn get_module(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(module_id): Path<String>,
) -> Result<Json<Module>, ServerError> {
    Ok(Json(server.modules.get(&tenant.id, &module_id)?.into()))
}

/// Deletes a module no job of the caller's uses (finished jobs do not count).
#[utoipa::path(delete, path = "/api/v1/modules/{module_id}", tag = "modules",
    params(("module_id" = String, Path, description = "Module id (SHA-256, hex)")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such module", body = ErrorBody),
        (status = 409, description = "A job uses it", body = ErrorBody)))]
pub async fn delete_module(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(module_id): Path<String>,
) -> Result<StatusCode, ServerError> {
    server.delete_module(&tenant.id, &module_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
