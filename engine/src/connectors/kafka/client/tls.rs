//! TLS to brokers (rustls with ring): the CA from a PEM file or the system's roots, and an
//! optional client certificate (mutual TLS).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;

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

/// A plain or TLS stream to a broker.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    /// Wraps `tcp` in TLS for `host` (the handshake happens on first use).
    pub fn tls(tcp: TcpStream, host: &str, config: Arc<rustls::ClientConfig>) -> Result<Stream, KafkaError> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| bad(format!("`{host}` is not a TLS server name: {e}")))?;
        let conn =
            rustls::ClientConnection::new(config, name).map_err(|e| bad(format!("TLS setup failed: {e}")))?;
        Ok(Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))))
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
