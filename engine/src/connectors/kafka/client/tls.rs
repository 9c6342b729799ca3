//! TLS to brokers (rustls with ring): the CA from a PEM file or the system's roots, and an
//! optional client certificate (mutual TLS).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use super::KafkaError;

/// TLS settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// CA certificates (PEM) that sign the brokers' certificates; the system's when `None`.
    pub ca: Option<PathBuf>,
    /// Client certificate chain (PEM), for mutual TLS.
    pub certificate: Option<PathBuf>,
    /// Client private key (PEM).
    pub key: Option<PathBuf>,
}

fn bad(what: String) -> KafkaError {
    KafkaError::Authentication(what)
}

fn read_certs(path: &PathBuf, what: &str) -> Result<Vec<CertificateDer<'static>>, KafkaError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(format!("cannot read the {what} {}: {e}", path.display())))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("cannot read the {what} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(bad(format!("the {what} {} holds no certificate", path.display())));
    }
    Ok(certs)
}

impl Tls {
    /// A rustls client config for these settings.
    pub fn config(&self) -> Result<Arc<rustls::ClientConfig>, KafkaError> {
        let mut roots = rustls::RootCertStore::empty();
        match &self.ca {
            Some(path) => {
                for c in read_certs(path, "CA file")? {
                    roots.add(c).map_err(|e| {
                        bad(format!("a certificate in {} is not usable: {e}", path.display()))
                    })?;
                }
            }
            None => {
                for c in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(c);
                }
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(format!("TLS setup failed: {e}")))?
            .with_root_certificates(roots);
        let config = match (&self.certificate, &self.key) {
            (Some(cert), Some(key)) => {
                let chain = read_certs(cert, "client certificate")?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| bad(format!("cannot read the client key {}: {e}", key.display())))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| bad(format!("the client certificate and key do not fit: {e}")))?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => return Err(bad("mutual TLS needs both a client certificate and its key".into())),
        };
        Ok(Arc::new(config))
    }
}

/// A socket to a broker whose every read and write waits at most until the deadline of the
/// call under way. The socket's own timeout restarts at every read, so a broker that
/// trickles its answer (a byte every few seconds) once stretched one call without end.
pub(crate) struct TimedTcp {
    tcp: TcpStream,
    deadline: Option<Instant>,
}

impl TimedTcp {
    pub fn new(tcp: TcpStream) -> Self {
        TimedTcp { tcp, deadline: None }
    }

    /// Sets the socket's timeout (with `set`) to what is left until the deadline.
    fn wait(&self, set: fn(&TcpStream, Option<Duration>) -> std::io::Result<()>) -> std::io::Result<()> {
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the request timeout passed"));
            }
            set(&self.tcp, Some(left))?;
        }
        Ok(())
    }
}

impl Read for TimedTcp {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.wait(TcpStream::set_read_timeout)?;
        self.tcp.read(buf)
    }
}

impl Write for TimedTcp {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.wait(TcpStream::set_write_timeout)?;
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.tcp.flush()
    }
}

/// A plain or TLS stream to a broker.
pub(crate) enum Stream {
    Plain(TimedTcp),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TimedTcp>>),
}

impl Stream {
    /// Wraps `tcp` in TLS for `host` (the handshake happens on first use).
    pub fn tls(tcp: TcpStream, host: &str, config: Arc<rustls::ClientConfig>) -> Result<Stream, KafkaError> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| bad(format!("`{host}` is not a TLS server name: {e}")))?;
        let conn =
            rustls::ClientConnection::new(config, name).map_err(|e| bad(format!("TLS setup failed: {e}")))?;
        Ok(Stream::Tls(Box::new(rustls::StreamOwned::new(conn, TimedTcp::new(tcp)))))
    }

    /// Every read and write from now on ends by `deadline` (a call's, the TLS handshake
    /// included).
    pub fn set_deadline(&mut self, deadline: Instant) {
        match self {
            Stream::Plain(s) => s.deadline = Some(deadline),
            Stream::Tls(s) => s.sock.deadline = Some(deadline),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}
