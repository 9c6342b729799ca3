//! Serving the API: bind the configured address, accept connections and serve
//! [`super::router`] on each until Ctrl-C or SIGTERM, then let the connections finish their
//! requests and stop the jobs' runs (their statuses stay, so they resume at the next start).
//!
//! Slow clients cannot hold the server: a request's head must arrive within
//! `request_header_timeout_ms` (also the idle time of a keep-alive connection), its body within
//! `request_body_timeout_ms` of the head, a response that makes no progress for
//! `response_write_timeout_ms` (a client that does not read) closes the connection, and at
//! most `max_connections` connections are open, `max_connections_per_address` from one
//! address (one more is closed at once).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use axum::body::Body;
use axum::http::Request;
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt as _;

use crate::server::Server;

/// Runs `server` over HTTP until Ctrl-C or SIGTERM. `ready` gets the bound address (port 0
/// picks one).
pub async fn serve(server: Arc<Server>, ready: impl FnOnce(SocketAddr)) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(&server.config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", server.config.listen))?;
    let address = listener.local_addr()?;
    ready(address);
    let config = &server.config;
    let header_timeout = Duration::from_millis(config.request_header_timeout_ms.max(1));
    let body_timeout = Duration::from_millis(config.request_body_timeout_ms.max(1));
    let app = super::router(server.clone()).map_request(move |request: Request<Incoming>| {
        request.map(|b| Body::new(Deadline::new(b, body_timeout)))
    });
    let write_timeout = Duration::from_millis(config.response_write_timeout_ms.max(1));
    let max_connections = config.max_connections.clamp(1, 1 << 20);
    let connections = Arc::new(Semaphore::new(max_connections));
    let per_address = PerAddress::new(config.max_connections_per_address.max(1));
    let (stop, stopping) = watch::channel(false);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    let mut last_warning = None;
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, or a connection reset before it was accepted: wait
                // a little instead of spinning.
                tracing::warn!("cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            // Logged at most once a second: a flood of connections must not flood the log.
            if last_warning.is_none_or(|at: Instant| at.elapsed() >= Duration::from_secs(1)) {
                tracing::warn!(max_connections, "too many open connections: closing new ones");
                last_warning = Some(Instant::now());
            }
            drop(stream);
            continue;
        };
        let Some(from_address) = per_address.take(peer.ip()) else {
            if last_warning.is_none_or(|at: Instant| at.elapsed() >= Duration::from_secs(1)) {
                tracing::warn!(
                    address = %peer.ip(),
                    max_connections_per_address = per_address.max,
                    "too many open connections from one address: closing new ones"
                );
                last_warning = Some(Instant::now());
            }
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            let _permits = (permit, from_address);
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
            let stream = WriteDeadline::new(stream, write_timeout);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                () = async { let _ = stopping.wait_for(|stop| *stop).await; } => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = result {
                tracing::debug!("connection closed: {e}");
            }
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a permit until it is closed.
    let _ = connections.acquire_many(max_connections as u32).await;
    server.jobs.abort_all();
    Ok(())
}

/// The open connections of each client address, held to a cap.
#[derive(Clone)]
struct PerAddress {
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
    max: usize,
}

/// One connection counted against its address until dropped.
struct AddressPermit {
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
    address: IpAddr,
}

impl PerAddress {
    fn new(max: usize) -> Self {
        PerAddress { open: Arc::default(), max }
    }

    /// Counts one more connection from `address`, unless it has `max` open.
    fn take(&self, address: IpAddr) -> Option<AddressPermit> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(address).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(AddressPermit { open: self.open.clone(), address })
    }
}

impl Drop for AddressPermit {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.address) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.address);
            }
        }
    }
}

/// A connection whose writes fail (and close it) once one has made no progress for
/// `timeout`: a client that does not read its responses cannot hold a connection, and the
/// task and buffers behind it, for ever.
struct WriteDeadline<S> {
    inner: S,
    timeout: Duration,
    /// Set while a write is pending: when it fires, the write fails.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteDeadline<S> {
    fn new(inner: S, timeout: Duration) -> Self {
        WriteDeadline { inner, timeout, stalled: None }
    }

    /// After a pending write: fails once the stall has lasted `timeout`.
    fn check<T>(&mut self, cx: &mut Context<'_>, poll: Poll<std::io::Result<T>>) -> Poll<std::io::Result<T>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let timeout = self.timeout;
        let sleep = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client read nothing for {} ms (response_write_timeout_ms)", timeout.as_millis()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.check(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.check(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.check(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.check(cx, poll)
    }
}

/// A request body that must arrive in full before its deadline; after it, the next read fails
/// (the handler answers 400 naming `request_body_timeout_ms`, and the connection is closed
/// since its body was not read to the end).
struct Deadline {
    inner: Incoming,
    sleep: Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
}

impl Deadline {
    fn new(inner: Incoming, timeout: Duration) -> Self {
        Deadline { inner, sleep: Box::pin(tokio::time::sleep(timeout)), timeout }
    }
}

/// The error of a body that did not arrive in time.
#[derive(Debug, thiserror::Error)]
#[error(
    "the request body did not arrive within {} ms (the server's request_body_timeout_ms); send it faster or in smaller requests",
    .0.as_millis()
)]
struct BodyTimeout(Duration);

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match this.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(BodyTimeout(this.timeout).into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}
