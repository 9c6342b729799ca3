//! One connection to one broker: framing, correlation ids, version negotiation, SASL.
//!
//! Blocking: every call sends one request and reads its response before it returns, within the
//! connection's request timeout (socket read and write timeouts), so no call can hang.
//!
//! Errors name the broker as a tenant may see it ([`ClientConfig::name_of`]: "broker 2 of Kafka
//! connection `main`"); its address goes to the server's log where the failure happens.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslHandshakeRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

use super::scram::Scram;
use super::tls::{Stream, TimedTcp};
use super::{ClientConfig, KafkaError, Peer, SaslMechanism};

/// Largest response accepted (a fetch is bounded by its `max_bytes`; this guards the allocation).
const MAX_FRAME: usize = 256 << 20;

/// The highest version of each API this client speaks (later versions of some name topics by
/// id only).
pub(super) fn our_max(key: ApiKey) -> i16 {
    match key {
        ApiKey::Produce => 9,
        // 11: the last version without tagged fields (Tansu 0.6 sends v16 tags in v12 answers).
        ApiKey::Fetch => 11,
        ApiKey::ListOffsets => 7,
        ApiKey::Metadata => 12,
        ApiKey::OffsetCommit => 8,
        ApiKey::OffsetFetch => 7,
        ApiKey::FindCoordinator => 3,
        ApiKey::InitProducerId => 4,
        ApiKey::AddPartitionsToTxn => 3,
        ApiKey::EndTxn => 3,
        ApiKey::CreateTopics => 7,
        ApiKey::CreatePartitions => 3,
        ApiKey::DeleteTopics => 6,
        ApiKey::ApiVersions => 3,
        ApiKey::SaslHandshake => 1,
        ApiKey::SaslAuthenticate => 2,
        _ => 0,
    }
}

/// A connection to one broker.
pub(crate) struct Connection {
    /// The address (for the server's log only).
    addr: String,
    /// The broker as errors name it.
    who: String,
    stream: Stream,
    correlation: i32,
    client_id: StrBytes,
    /// API key → the broker's (min, max) version.
    pub(super) versions: BTreeMap<i16, (i16, i16)>,
    /// A call failed mid-way (timeout, I/O, a frame out of step): the stream may hold a late
    /// answer, so the connection is never used again.
    broken: bool,
    /// How long one call may take, all its reads and writes together (K6).
    request_timeout: Duration,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Connection {
    /// Connects to `peer` (its host:port), learns the broker's API versions and authenticates.
    pub fn open(peer: Peer<'_>, config: &ClientConfig) -> Result<Self, KafkaError> {
        let addr = match peer {
            Peer::Bootstrap(_, addr) | Peer::Node(_, addr) => addr,
            Peer::Cluster => unreachable!("a connection is to one broker"),
        };
        let who = config.name_of(peer);
        let unreachable = |reason: String| {
            tracing::warn!(broker = %who, addr, error = %reason, "cannot reach a Kafka broker");
            KafkaError::Unreachable { broker: who.clone(), reason }
        };
        let addrs: Vec<_> = addr
            .to_socket_addrs()
            .map_err(|e| unreachable(format!("cannot resolve the address: {e}")))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, config.connect_timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = stream.ok_or_else(|| {
            unreachable(last.map(|e| e.to_string()).unwrap_or_else(|| "the name has no address".into()))
        })?;
        let _ = stream.set_nodelay(true);
        // K6: no read or write on the socket waits past the request timeout.
        stream.set_read_timeout(Some(config.request_timeout)).map_err(|e| unreachable(e.to_string()))?;
        stream.set_write_timeout(Some(config.request_timeout)).map_err(|e| unreachable(e.to_string()))?;
        let stream = match &config.tls {
            Some(tls) => {
                let host = addr
                    .rsplit_once(':')
                    .map_or(addr, |(h, _)| h)
                    .trim_start_matches('[')
                    .trim_end_matches(']');
                Stream::tls(stream, host, tls.clone()).map_err(|e| {
                    tracing::warn!(broker = %who, addr, error = %e, "TLS setup for a Kafka broker failed");
                    match &config.connection {
                        Some(_) => KafkaError::Authentication(format!(
                            "TLS setup for {who} failed (the server's log has the details)"
                        )),
                        None => e,
                    }
                })?
            }
            None => Stream::Plain(TimedTcp::new(stream)),
        };
        let mut conn = Connection {
            addr: addr.to_string(),
            who,
            stream,
            correlation: 0,
            client_id: StrBytes::from_string(config.client_id.clone()),
            versions: BTreeMap::new(),
            broken: false,
            request_timeout: config.request_timeout,
        };
        conn.negotiate()?;
        if let Some(sasl) = &config.sasl {
            conn.authenticate(sasl)?;
        }
        Ok(conn)
    }

    fn negotiate(&mut self) -> Result<(), KafkaError> {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("weir"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        // v3 first; a broker that does not know it answers in v0 with UNSUPPORTED_VERSION.
        let response: ApiVersionsResponse = match self.call_version(&request, 3) {
            Ok(r) if r.error_code == 0 => r,
            // No answer (a timeout, a reset): that is the error, not the v0 retry's.
            Err(e) if self.broken => return Err(e),
            _ => self.call_version(&ApiVersionsRequest::default(), 0)?,
        };
        if response.error_code != 0 {
            return Err(KafkaError::from_code(response.error_code, "ApiVersions"));
        }
        self.versions =
            response.api_keys.iter().map(|k| (k.api_key, (k.min_version, k.max_version))).collect();
        Ok(())
    }

    /// The broker offers `key` (in some version this client speaks).
    pub fn supports(&self, key: ApiKey) -> bool {
        self.version_of(key).is_some()
    }

    fn version_of(&self, key: ApiKey) -> Option<i16> {
        let (lo, hi) = *self.versions.get(&(key as i16))?;
        let ours = key.valid_versions();
        let v = hi.min(our_max(key)).min(ours.max);
        (v >= lo.max(ours.min)).then_some(v)
    }

    /// Sends `request` in the highest version both sides speak.
    pub fn call<R: Request>(&mut self, request: &R) -> Result<R::Response, KafkaError> {
        let key = ApiKey::try_from(R::KEY)
            .map_err(|_| KafkaError::Protocol(format!("unknown api key {}", R::KEY)))?;
        let version = self.version_of(key).ok_or_else(|| KafkaError::Unsupported {
            broker: self.who.clone(),
            what: format!("{key:?} (API key {}) in a version this client speaks", R::KEY),
        })?;
        self.call_version(request, version)
    }

    /// Whether a call failed mid-way (the client then opens a new connection).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Sends `request` in `version`.
    pub fn call_version<R: Request>(&mut self, request: &R, version: i16) -> Result<R::Response, KafkaError> {
        if self.broken {
            return Err(KafkaError::Unreachable {
                broker: self.who.clone(),
                reason: "the connection failed earlier".into(),
            });
        }
        // Until the answer is read whole, a failure leaves the stream out of step.
        self.broken = true;
        self.exchange(request, version)
    }

    fn exchange<R: Request>(&mut self, request: &R, version: i16) -> Result<R::Response, KafkaError> {
        // K6: the whole exchange, not each read, ends within the request timeout.
        self.stream.set_deadline(Instant::now() + self.request_timeout);
        self.correlation = self.correlation.wrapping_add(1);
        let correlation = self.correlation;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation)
            .with_client_id(Some(self.client_id.clone()));
        let mut buf = BytesMut::with_capacity(64);
        buf.put_i32(0);
        header.encode(&mut buf, R::header_version(version)).map_err(protocol)?;
        request.encode(&mut buf, version).map_err(protocol)?;
        let len = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&len.to_be_bytes());
        self.stream.write_all(&buf).map_err(|e| self.io_error(e))?;
        self.stream.flush().map_err(|e| self.io_error(e))?;
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).map_err(|e| self.io_error(e))?;
        let len = i32::from_be_bytes(len);
        if len < 4 || len as usize > MAX_FRAME {
            tracing::warn!(broker = %self.who, addr = %self.addr, len, "a Kafka broker sent a frame out of bounds");
            return Err(KafkaError::Protocol(format!("{} sent a frame of {len} bytes", self.who)));
        }
        let mut body = vec![0u8; len as usize];
        self.stream.read_exact(&mut body).map_err(|e| self.io_error(e))?;
        // The frame is read whole: the stream is in step again (whatever the frame holds).
        self.broken = false;
        let mut body = Bytes::from(body);
        let header =
            ResponseHeader::decode(&mut body, R::Response::header_version(version)).map_err(protocol)?;
        if header.correlation_id != correlation {
            // Out of step (a broker that answered one request twice, or late): this connection
            // is done; the call may be tried again on a new one.
            self.broken = true;
            tracing::warn!(broker = %self.who, addr = %self.addr, "a Kafka broker answered out of step");
            return Err(KafkaError::Unreachable {
                broker: self.who.clone(),
                reason: format!(
                    "answered request {correlation} with correlation id {}",
                    header.correlation_id
                ),
            });
        }
        let response = R::Response::decode(&mut body, version).map_err(protocol)?;
        Ok(response)
    }

    fn io_error(&self, e: std::io::Error) -> KafkaError {
        tracing::warn!(broker = %self.who, addr = %self.addr, error = %e, "a call to a Kafka broker failed");
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                KafkaError::Timeout { broker: self.who.clone() }
            }
            _ => KafkaError::Unreachable { broker: self.who.clone(), reason: e.to_string() },
        }
    }

    fn authenticate(&mut self, sasl: &super::Sasl) -> Result<(), KafkaError> {
        let name = sasl.mechanism.name();
        let handshake =
            self.call(&SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(name)))?;
        if handshake.error_code != 0 {
            let offered: Vec<&str> = handshake.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(KafkaError::Authentication(format!(
                "{} does not offer SASL mechanism {name} (it offers: {})",
                self.who,
                offered.join(", ")
            )));
        }
        match sasl.mechanism {
            SaslMechanism::Plain => {
                let mut token = Vec::new();
                token.push(0);
                token.extend_from_slice(sasl.username.as_bytes());
                token.push(0);
                token.extend_from_slice(sasl.password.as_bytes());
                self.sasl_step(token)?;
            }
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
                let mut scram = Scram::new(sasl.mechanism, &sasl.username, &sasl.password);
                let server_first = self.sasl_step(scram.client_first())?;
                let client_final = scram.client_final(&server_first).map_err(KafkaError::Scram)?;
                let server_final = self.sasl_step(client_final)?;
                scram.verify_server(&server_final).map_err(KafkaError::Scram)?;
            }
        }
        Ok(())
    }

    fn sasl_step(&mut self, token: Vec<u8>) -> Result<Vec<u8>, KafkaError> {
        let response = self.call(&SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token)))?;
        if response.error_code != 0 {
            return Err(KafkaError::Authentication(format!(
                "{} refused the credentials: {}",
                self.who,
                response.error_message.as_ref().map(|m| m.as_str()).unwrap_or("no reason given")
            )));
        }
        Ok(response.auth_bytes.to_vec())
    }
}

fn protocol(e: anyhow::Error) -> KafkaError {
    KafkaError::Protocol(e.to_string())
}

/// Splits a fetch response's record bytes into whole batches (a broker may cut the last one
/// short at the size limit; that one is fetched again next time).
pub(crate) fn whole_batches(mut records: Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    while records.len() >= 12 {
        let len = (&records[8..12]).get_i32();
        if len < 0 {
            break;
        }
        let total = 12 + len as usize;
        if records.len() < total {
            break;
        }
        out.push(records.split_to(total));
    }
    out
}
