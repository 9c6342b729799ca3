//! TLS on the cluster's connections — the control sessions and the data plane — as mutual
//! TLS under one cluster CA (`cluster.tls`): every process (the controller, each worker)
//! holds a certificate the CA signed, presents it whichever side of a connection it is on,
//! and accepts only peers that present one too. The cluster token is still checked inside.
//!
//! Addresses change as workers come and go, so a certificate is not checked against the
//! address dialled: every cluster certificate holds one DNS name, `server_name`
//! (`weir-cluster` by default), and every connection checks that name. A certificate for a
//! cluster is then a cluster membership, as Flink's internal SSL (one keystore for the
//! cluster) makes it.
//!
//! Without `cluster.tls` the connections are plain TCP: the cluster token, tenants' modules
//! and their data cross in clear. So plain TCP is allowed only while every cluster address
//! (listened on, advertised, dialled) is loopback, unless the process is told the network
//! is private (`cluster.insecure_plaintext`, `weir worker --insecure-plaintext`):
//! [`Transport::check_plaintext`], at start.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The files of a process's cluster TLS (`cluster.tls` in the config file, or
/// `WEIR_CLUSTER__TLS__CERT` and so on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// This process's certificate chain (PEM), signed by `ca`, naming `server_name`.
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// The cluster CA (PEM): a peer must present a certificate it signed.
    pub ca: PathBuf,
    /// The DNS name every cluster certificate holds and every connection checks.
    #[serde(default = "default_server_name")]
    pub server_name: String,
}

fn default_server_name() -> String {
    "weir-cluster".into()
}

/// How long a TLS handshake may take before the connection is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the TLS files could not be used.
#[derive(Debug, thiserror::Error)]
#[error("cluster TLS: {0}")]
pub struct TlsError(String);

/// Plain TCP off loopback, not waived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{setting} is {address}, off loopback, and without cluster.tls the cluster's traffic (its token, tenants' modules and data) would cross the network as plain TCP: set cluster.tls for mutual TLS (docs/cluster.md), keep every cluster address on loopback, or set {waiver} if the network is private (or a mesh adds mTLS)"
)]
pub struct PlaintextError {
    /// The setting whose address is off loopback.
    pub setting: String,
    /// Its address.
    pub address: String,
    /// The setting that waives the check.
    pub waiver: &'static str,
}

/// Whether `address` (`host:port`, or a host alone) stays on this machine: a loopback IP
/// (`127.0.0.0/8`, `::1`, IPv4-mapped ones too) or the name `localhost`. Any other name is
/// taken as off loopback (it is not resolved: what it resolves to may change).
pub fn is_loopback(address: &str) -> bool {
    if let Ok(socket) = address.parse::<SocketAddr>() {
        return socket.ip().to_canonical().is_loopback();
    }
    let host = match address.rsplit_once(':') {
        // `host:port` or `[v6]:port`; a bare IPv6 address has colons of its own.
        Some((host, _port)) if !host.contains(':') || host.ends_with(']') => host,
        _ => address,
    };
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    match host.parse::<IpAddr>() {
        Ok(ip) => ip.to_canonical().is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |e: &dyn std::fmt::Display| TlsError(format!("cannot read the {what} {}: {e}", path.display()));
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"it holds no certificate"));
    }
    Ok(certs)
}

/// How a process makes and takes cluster connections: plain TCP, or mutual TLS (cheap to
/// clone).
#[derive(Clone, Default)]
pub struct Transport(Option<Arc<Tls>>);

struct Tls {
    acceptor: tokio_rustls::TlsAcceptor,
    connector: tokio_rustls::TlsConnector,
    name: ServerName<'static>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Transport(tls)" } else { "Transport(plain)" })
    }
}

impl Transport {
    /// Plain TCP.
    pub fn plain() -> Self {
        Transport(None)
    }

    /// Mutual TLS with `files` (read now: a missing or bad file fails here, not at the first
    /// connection).
    pub fn tls(files: &TlsFiles) -> Result<Self, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for ca in read_certs(&files.ca, "cluster CA")? {
            roots.add(ca).map_err(|e| TlsError(format!("the cluster CA {}: {e}", files.ca.display())))?;
        }
        let roots = Arc::new(roots);
        let chain = read_certs(&files.cert, "certificate")?;
        let key = || {
            PrivateKeyDer::from_pem_file(&files.key)
                .map_err(|e| TlsError(format!("cannot read the key {}: {e}", files.key.display())))
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let fit = |e: rustls::Error| TlsError(format!("the certificate and key do not fit: {e}"));
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
                .build()
                .map_err(|e| TlsError(format!("the cluster CA: {e}")))?;
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(e.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key()?)
            .map_err(fit)?;
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(e.to_string()))?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key()?)
            .map_err(fit)?;
        let name = ServerName::try_from(files.server_name.clone())
            .map_err(|e| TlsError(format!("server_name `{}`: {e}", files.server_name)))?;
        Ok(Transport(Some(Arc::new(Tls {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server)),
            connector: tokio_rustls::TlsConnector::from(Arc::new(client)),
            name,
        }))))
    }

    /// Whether connections are encrypted.
    pub fn is_tls(&self) -> bool {
        self.0.is_some()
    }

    /// Refuses plain TCP when any of `addresses` (a setting's name, its `host:port`) is off
    /// loopback ([`is_loopback`]), unless `waived`; `waiver` names the setting that waives
    /// it. Mutual TLS passes.
    pub fn check_plaintext(
        &self,
        addresses: &[(&str, &str)],
        waiver: &'static str,
        waived: bool,
    ) -> Result<(), PlaintextError> {
        if self.is_tls() || waived {
            return Ok(());
        }
        match addresses.iter().find(|(_, address)| !is_loopback(address)) {
            Some((setting, address)) => {
                Err(PlaintextError { setting: setting.to_string(), address: address.to_string(), waiver })
            }
            None => Ok(()),
        }
    }

    /// The server side of a connection a peer opened.
    pub async fn accept(&self, tcp: TcpStream) -> io::Result<Stream> {
        let _ = tcp.set_nodelay(true);
        let Some(tls) = &self.0 else { return Ok(Stream::Plain(tcp)) };
        let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor.accept(tcp))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no TLS handshake in time"))??;
        Ok(Stream::Tls(Box::new(stream.into())))
    }

    /// Dials `address`.
    pub async fn connect(&self, address: &str) -> io::Result<Stream> {
        let tcp = TcpStream::connect(address).await?;
        let _ = tcp.set_nodelay(true);
        let Some(tls) = &self.0 else { return Ok(Stream::Plain(tcp)) };
        let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.connector.connect(tls.name.clone(), tcp))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no TLS handshake in time"))??;
        Ok(Stream::Tls(Box::new(stream.into())))
    }
}

/// A cluster connection: plain TCP or TLS over it.
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS (either side).
    Tls(Box<tokio_rustls::TlsStream<TcpStream>>),
}

impl Stream {
    /// Its read and write halves (plain TCP splits without a lock).
    pub fn split(self) -> (ReadHalf, WriteHalf) {
        match self {
            Stream::Plain(tcp) => {
                let (read, write) = tcp.into_split();
                (ReadHalf::Plain(read), WriteHalf::Plain(write))
            }
            Stream::Tls(tls) => {
                let (read, write) = tokio::io::split(*tls);
                (ReadHalf::Tls(read), WriteHalf::Tls(write))
            }
        }
    }
}

/// The read half of a [`Stream`].
pub enum ReadHalf {
    /// Plain TCP.
    Plain(tokio::net::tcp::OwnedReadHalf),
    /// TLS.
    Tls(tokio::io::ReadHalf<tokio_rustls::TlsStream<TcpStream>>),
}

/// The write half of a [`Stream`].
pub enum WriteHalf {
    /// Plain TCP.
    Plain(tokio::net::tcp::OwnedWriteHalf),
    /// TLS.
    Tls(tokio::io::WriteHalf<tokio_rustls::TlsStream<TcpStream>>),
}

macro_rules! delegate_read {
    ($ty:ty, $($variant:ident),+) => {
        impl AsyncRead for $ty {
            fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    $(Self::$variant(s) => Pin::new(s).poll_read(cx, buf),)+
                }
            }
        }
    };
}

macro_rules! delegate_write {
    ($ty:ty, $($variant:ident),+) => {
        impl AsyncWrite for $ty {
            fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                match self.get_mut() {
                    $(Self::$variant(s) => Pin::new(s).poll_write(cx, buf),)+
                }
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[io::IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                match self.get_mut() {
                    $(Self::$variant(s) => Pin::new(s).poll_write_vectored(cx, bufs),)+
                }
            }

            fn is_write_vectored(&self) -> bool {
                match self {
                    $(Self::$variant(s) => s.is_write_vectored(),)+
                }
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    $(Self::$variant(s) => Pin::new(s).poll_flush(cx),)+
                }
            }

            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    $(Self::$variant(s) => Pin::new(s).poll_shutdown(cx),)+
                }
            }
        }
    };
}

delegate_read!(Stream, Plain, Tls);
delegate_write!(Stream, Plain, Tls);
delegate_read!(ReadHalf, Plain, Tls);
delegate_write!(WriteHalf, Plain, Tls);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_a_loopback_ip_or_localhost_and_nothing_else() {
        for on in [
            "127.0.0.1:7070",
            "127.8.9.10:1",
            "[::1]:7070",
            "::1",
            "[::ffff:127.0.0.1]:1",
            "localhost:7070",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert!(is_loopback(on), "{on}");
        }
        for off in [
            "0.0.0.0:7070",
            "[::]:1",
            "10.0.0.1:7070",
            "controller.example:7070",
            "localhost.evil.example:1",
            "",
            "::",
        ] {
            assert!(!is_loopback(off), "{off}");
        }
    }

    #[test]
    fn plain_tcp_off_loopback_is_refused_unless_waived() {
        let plain = Transport::plain();
        let local = [("cluster.listen", "127.0.0.1:7070"), ("cluster.data_advertise", "localhost:7071")];
        plain.check_plaintext(&local, "cluster.insecure_plaintext = true", false).unwrap();
        let open = [("cluster.listen", "127.0.0.1:7070"), ("cluster.data_listen", "0.0.0.0:7071")];
        let e = plain.check_plaintext(&open, "cluster.insecure_plaintext = true", false).unwrap_err();
        let message = e.to_string();
        assert!(
            message.starts_with("cluster.data_listen is 0.0.0.0:7071, off loopback")
                && message.contains("set cluster.tls")
                && message.contains("cluster.insecure_plaintext = true"),
            "{message}"
        );
        plain.check_plaintext(&open, "cluster.insecure_plaintext = true", true).unwrap();
    }
}
