//! The data plane: channels between subtasks on different workers, over one TCP connection
//! per pair of workers, with credit-based flow control.
//!
//! The receiving worker registers each remote input channel under its [`ChannelKey`] (job,
//! attempt, channel) before the attempt starts ([`DataPlane::input`]: a local queue whose
//! receiver hands credits back). The sending worker opens it on its connection to the
//! receiving worker ([`DataPlane::output`]): a [`Sender`] with `capacity` credits that sends
//! each message as it is pushed, in order, and needs a credit per batch, and the bytes of
//! the batches not yet taken below its capacity in bytes, for `has_room` / `ready`, exactly
//! as a local channel needs room (docs/design.md §1, §13). An open for a key
//! that is not registered (an older attempt: a fenced worker) is answered `GONE`, so the
//! sender's pushes fail.
//!
//! Frames (length-prefixed like the control session, at most `max_frame_bytes`): a tag, a
//! stream id (`u32`, chosen by the side that opened the stream), and:
//! `OPEN` the channel key (MessagePack) · `MSG` a message (`in_flight::encode_wire`) ·
//! `CREDIT` batches taken (`u32`) · `CLOSE` every sender is gone · `GONE` the receiver is
//! gone. A connection opens with the dialer's hello (the cluster token, its data address);
//! a connection that ends closes every stream on it: the senders' pushes fail and the
//! receivers see their channel end without an end of stream — the attempt fails.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt as _};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc};
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use super::tls::{ReadHalf as OwnedReadHalf, Stream, Transport, WriteHalf as OwnedWriteHalf};
use crate::runtime::in_flight::{decode_wire, encode_wire};
use crate::runtime::{
    Closed, CreditSink, Credits, Message, Outbound, Receiver, Sender, credited_channel, remote_sender,
};

const OPEN: u8 = 0;
const MSG: u8 = 1;
const CREDIT: u8 = 2;
const CLOSE: u8 = 3;
const GONE: u8 = 4;

/// The data plane's protocol version (in its hello).
const DATA_PROTOCOL: u32 = 1;
/// Time a new connection has to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// The frame bound every data plane of a cluster uses (a batch of records per frame).
pub const DATA_FRAME_BYTES: usize = 64 << 20;
/// Most connections a worker accepts at once (a cluster of this many workers).
pub const MAX_CONNECTIONS: usize = 1024;
/// The read buffer and the write-flush boundary of a connection.
const IO_BUFFER_BYTES: usize = 256 << 10;

/// Which channel of which attempt of which job.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChannelKey {
    /// The job.
    pub job: String,
    /// Its attempt (a restart is a new attempt: channels of older ones are refused).
    pub attempt: u64,
    /// The channel's index in the attempt's wiring.
    pub channel: u32,
}

#[derive(Debug, Serialize, Deserialize)]
struct DataHello {
    protocol: u32,
    token: String,
    /// The dialer's data address (the acceptor reuses the connection for its own streams
    /// to that worker).
    from: String,
}

#[derive(Debug, Serialize, Deserialize)]
enum DataAnswer {
    Welcome,
    Refused(String),
}

pub use crate::runtime::DataError;

/// Why a connection with a peer ended, or was refused at its hello.
#[derive(Debug, thiserror::Error)]
enum LinkError {
    /// The connection failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The hello did not decode.
    #[error("a hello that does not decode: {0}")]
    BadHello(#[source] rmp_serde::decode::Error),
    /// The answer to the hello did not encode.
    #[error("an answer that does not encode: {0}")]
    Encode(#[from] rmp_serde::encode::Error),
    /// The peer closed the connection before its hello.
    #[error("closed before its hello")]
    ClosedBeforeHello,
    /// The peer did not say hello within [`HELLO_TIMEOUT`].
    #[error("no hello in time")]
    NoHello,
    /// The hello was refused.
    #[error("{0}")]
    Refused(#[from] Refusal),
    /// A frame too short for its header.
    #[error("a frame shorter than its header")]
    ShortFrame,
    /// An `OPEN` whose channel key did not decode.
    #[error("a bad open: {0}")]
    BadOpen(#[source] rmp_serde::decode::Error),
    /// A `MSG` whose message did not decode.
    #[error("a message that does not decode")]
    BadMessage,
    /// A `CREDIT` whose count is not 4 bytes.
    #[error("a bad credit")]
    BadCredit,
    /// A frame with an unknown tag.
    #[error("an unknown frame tag {0}")]
    UnknownTag(u8),
}

/// Why a hello is refused (the reason travels in [`DataAnswer::Refused`]).
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("data protocol {0} is not {DATA_PROTOCOL}")]
    Protocol(u32),
    #[error("the cluster token is not valid")]
    Token,
    #[error("a bad data address")]
    Address,
}

/// A worker's data plane (cheap to clone).
#[derive(Clone)]
pub struct DataPlane {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for DataPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataPlane").field("address", &self.inner.address).finish_non_exhaustive()
    }
}

struct Inner {
    token_hash: [u8; 32],
    token: String,
    /// This worker's advertised data address.
    address: String,
    max_frame_bytes: usize,
    /// Connections by the peer's data address.
    connections: Mutex<HashMap<String, Arc<Connection>>>,
    /// Registered input channels not opened yet.
    inputs: Mutex<HashMap<ChannelKey, (Sender, Arc<StreamCredit>)>>,
    /// Plain TCP or mutual TLS.
    transport: Transport,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl DataPlane {
    /// The data plane of the worker reachable at `address`, holding the cluster `token`,
    /// connecting over `transport`.
    pub fn new(token: &str, address: &str, max_frame_bytes: usize, transport: Transport) -> Self {
        DataPlane {
            inner: Arc::new(Inner {
                token_hash: Sha256::digest(token.as_bytes()).into(),
                token: token.to_string(),
                address: address.to_string(),
                max_frame_bytes,
                connections: Mutex::new(HashMap::new()),
                inputs: Mutex::new(HashMap::new()),
                transport,
            }),
        }
    }

    /// Accepts connections of other workers on `listener` for as long as the task runs; at
    /// most [`MAX_CONNECTIONS`] at once (one more is closed at once).
    pub async fn serve(self, listener: TcpListener) {
        let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        loop {
            let Ok((stream, peer)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let Ok(permit) = open.clone().try_acquire_owned() else {
                tracing::warn!(%peer, "too many data connections: closed");
                continue;
            };
            let this = self.clone();
            tokio::spawn(async move {
                let stream = match this.inner.transport.accept(stream).await {
                    Ok(stream) => stream,
                    Err(e) => {
                        tracing::warn!(%peer, reason = %e, "data connection refused");
                        return;
                    }
                };
                match this.accept(stream).await {
                    // The permit goes with the connection.
                    Ok(conn) => conn.permit.set(permit).unwrap_or(()),
                    Err(reason) => tracing::warn!(%peer, %reason, "data connection refused"),
                }
            });
        }
    }

    async fn accept(&self, stream: Stream) -> Result<Arc<Connection>, LinkError> {
        let (mut reader, mut writer) = self.framed(stream);
        let hello = match tokio::time::timeout(HELLO_TIMEOUT, reader.next()).await {
            Ok(Some(Ok(frame))) => rmp_serde::from_slice::<DataHello>(&frame).map_err(LinkError::BadHello)?,
            Ok(Some(Err(e))) => return Err(e.into()),
            Ok(None) => return Err(LinkError::ClosedBeforeHello),
            Err(_) => return Err(LinkError::NoHello),
        };
        let presented: [u8; 32] = Sha256::digest(hello.token.as_bytes()).into();
        let refusal = if hello.protocol != DATA_PROTOCOL {
            Some(Refusal::Protocol(hello.protocol))
        } else if presented != self.inner.token_hash {
            // W2: a data connection without the cluster token is refused.
            Some(Refusal::Token)
        } else if hello.from.is_empty() || hello.from.len() > 256 {
            Some(Refusal::Address)
        } else {
            None
        };
        let answer = match &refusal {
            Some(reason) => DataAnswer::Refused(reason.to_string()),
            None => DataAnswer::Welcome,
        };
        let bytes = rmp_serde::to_vec(&answer)?;
        writer.send(Bytes::from(bytes)).await?;
        if let Some(reason) = refusal {
            return Err(reason.into());
        }
        Ok(self.start(hello.from, reader, writer))
    }

    /// The two halves of a connection, framed as the data plane frames.
    fn framed(
        &self,
        stream: Stream,
    ) -> (FramedRead<OwnedReadHalf, LengthDelimitedCodec>, FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>)
    {
        let (read, write) = stream.split();
        let codec =
            || LengthDelimitedCodec::builder().max_frame_length(self.inner.max_frame_bytes).new_codec();
        // Buffers sized for batches (tens to hundreds of KiB each), so that a frame is read
        // and written in few system calls.
        let mut writer = FramedWrite::new(write, codec());
        writer.set_backpressure_boundary(IO_BUFFER_BYTES);
        (FramedRead::with_capacity(read, codec(), IO_BUFFER_BYTES), writer)
    }

    /// The connection to `peer`, dialled if there is none.
    async fn connection(&self, peer: &str) -> Result<Arc<Connection>, DataError> {
        if let Some(c) = lock(&self.inner.connections).get(peer).filter(|c| !c.closed.load(Ordering::Acquire))
        {
            return Ok(c.clone());
        }
        let failed = |reason: String| DataError::Connection { peer: peer.to_string(), reason };
        let stream = self.inner.transport.connect(peer).await.map_err(|e| failed(e.to_string()))?;
        let (mut reader, mut writer) = self.framed(stream);
        let hello = DataHello {
            protocol: DATA_PROTOCOL,
            token: self.inner.token.clone(),
            from: self.inner.address.clone(),
        };
        let bytes = rmp_serde::to_vec(&hello).map_err(|e| failed(e.to_string()))?;
        writer.send(Bytes::from(bytes)).await.map_err(|e| failed(e.to_string()))?;
        let answer = match tokio::time::timeout(HELLO_TIMEOUT, reader.next()).await {
            Ok(Some(Ok(frame))) => {
                rmp_serde::from_slice::<DataAnswer>(&frame).map_err(|e| failed(e.to_string()))?
            }
            Ok(Some(Err(e))) => return Err(failed(e.to_string())),
            Ok(None) => return Err(failed("closed during the hello".into())),
            Err(_) => return Err(failed("no answer to the hello in time".into())),
        };
        if let DataAnswer::Refused(reason) = answer {
            return Err(DataError::Refused { peer: peer.to_string(), reason });
        }
        Ok(self.start(peer.to_string(), reader, writer))
    }

    /// Starts the tasks of a connection with `peer` and registers it.
    fn start(
        &self,
        peer: String,
        reader: FramedRead<OwnedReadHalf, LengthDelimitedCodec>,
        writer: FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>,
    ) -> Arc<Connection> {
        let (frames, mut outbox) = mpsc::unbounded_channel::<Bytes>();
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let connection = Arc::new(Connection {
            frames,
            stop,
            next_stream: AtomicU32::new(0),
            outgoing: Mutex::new(HashMap::new()),
            incoming: Mutex::new(HashMap::new()),
            credit_wake: Arc::new(Notify::new()),
            closed: AtomicBool::new(false),
            permit: OnceLock::new(),
            max_frame: self.inner.max_frame_bytes,
        });
        lock(&self.inner.connections).insert(peer.clone(), connection.clone());
        // Writer: frames in order, each already carrying its length (the codec's framing,
        // so the reader's codec reads them), handed to the kernel with `writev` as they are —
        // no copy into a write buffer. Before writing it yields once, so that subtasks ready
        // to run add their frames to the same system call (docs/benchmarks.md, *Beyond one
        // machine*). No timer: an idle connection writes at once.
        let conn = connection.clone();
        let mut socket = writer.into_inner();
        let write = tokio::spawn(async move {
            let mut queue = std::collections::VecDeque::new();
            while let Some(frame) = outbox.recv().await {
                queue.push_back(frame);
                take_ready(&mut outbox, &mut queue);
                tokio::task::yield_now().await;
                take_ready(&mut outbox, &mut queue);
                if write_frames(&mut socket, &mut queue).await.is_err() {
                    break;
                }
            }
            conn.shut();
        });
        // Credits back to the peer as receivers take batches.
        let conn = connection.clone();
        let credits = tokio::spawn(async move {
            loop {
                conn.credit_wake.notified().await;
                if conn.closed.load(Ordering::Acquire) {
                    return;
                }
                conn.send_credits();
            }
        });
        // Reader: dispatches every frame; the end of the connection ends everything.
        let (conn, this) = (connection.clone(), self.clone());
        tokio::spawn(async move {
            let mut reader = reader;
            let reason = loop {
                let next = tokio::select! {
                    next = reader.next() => next,
                    _ = stopped.wait_for(|s| *s) => break "shut down".to_string(),
                };
                match next {
                    Some(Ok(frame)) => {
                        if let Err(reason) = this.dispatch(&conn, frame.freeze()) {
                            break reason.to_string();
                        }
                    }
                    Some(Err(e)) => break e.to_string(),
                    None => break "closed by the peer".to_string(),
                }
            };
            tracing::debug!(%peer, %reason, "data connection ended");
            conn.shut();
            write.abort();
            credits.abort();
            let mut connections = lock(&this.inner.connections);
            if connections.get(&peer).is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                connections.remove(&peer);
            }
        });
        connection
    }

    /// Handles one frame from the peer; an error ends the connection.
    fn dispatch(&self, conn: &Arc<Connection>, frame: Bytes) -> Result<(), LinkError> {
        if frame.len() < 5 {
            return Err(LinkError::ShortFrame);
        }
        let (tag, stream) = (frame[0], u32::from_le_bytes(frame[1..5].try_into().expect("4 bytes")));
        let body = frame.slice(5..);
        match tag {
            OPEN => {
                let key: ChannelKey = rmp_serde::from_slice(&body).map_err(LinkError::BadOpen)?;
                match lock(&self.inner.inputs).remove(&key) {
                    Some((sender, credit)) => {
                        let _ = credit.bound.set((Arc::downgrade(conn), stream));
                        lock(&conn.incoming).insert(stream, (sender, credit));
                    }
                    None => {
                        tracing::warn!(
                            ?key,
                            "a data stream for a channel that is not registered (an older attempt?)"
                        );
                        // W4: a key nobody registered is fenced.
                        conn.frame(GONE, stream, &[]);
                    }
                }
            }
            MSG => {
                let message = decode_wire(&body).ok_or(LinkError::BadMessage)?;
                let mut incoming = lock(&conn.incoming);
                let Some((sender, _)) = incoming.get(&stream) else { return Ok(()) };
                let pushed = match message {
                    Message::Barrier(b) if b.unaligned => sender.push_overtaking(b).map(|_| ()),
                    other => sender.push(other),
                };
                if pushed.is_err() {
                    incoming.remove(&stream);
                    drop(incoming);
                    conn.frame(GONE, stream, &[]);
                }
            }
            CREDIT => {
                let n = u32::from_le_bytes(body.as_ref().try_into().map_err(|_| LinkError::BadCredit)?);
                if let Some(credits) = lock(&conn.outgoing).get(&stream) {
                    credits.grant(n);
                }
            }
            CLOSE => {
                lock(&conn.incoming).remove(&stream);
            }
            GONE => {
                if let Some(credits) = lock(&conn.outgoing).remove(&stream) {
                    credits.close();
                }
            }
            other => return Err(LinkError::UnknownTag(other)),
        }
        Ok(())
    }

    /// Registers the receiving end of channel `key` (from upstream subtask `from` to
    /// downstream subtask `to`, `capacity` batches and bytes, as the sender's): the
    /// downstream subtask reads the returned receiver once the upstream worker opens the
    /// channel.
    pub fn input(
        &self,
        key: ChannelKey,
        capacity: (usize, usize),
        from: (String, u32),
        to: (String, u32),
    ) -> Result<Receiver, DataError> {
        let credit = Arc::new(StreamCredit::new(capacity));
        let (sender, receiver) = credited_channel(capacity.0, from, to, credit.clone());
        let mut inputs = lock(&self.inner.inputs);
        if inputs.contains_key(&key) {
            let ChannelKey { job, attempt, channel } = key;
            return Err(DataError::Duplicate { job, attempt, channel });
        }
        inputs.insert(key, (sender, credit));
        Ok(receiver)
    }

    /// Forgets every registered input of `job` not opened yet (its attempt ended).
    pub fn forget(&self, job: &str) {
        lock(&self.inner.inputs).retain(|k, _| k.job != job);
    }

    /// Opens channel `key` to the worker at `peer` (its data address): the sending end, with
    /// `capacity` (batches: its credits, and bytes outstanding).
    pub async fn output(
        &self,
        peer: &str,
        key: &ChannelKey,
        capacity: (usize, usize),
        from: (String, u32),
        to: (String, u32),
    ) -> Result<Sender, DataError> {
        let conn = self.connection(peer).await?;
        let stream = conn.next_stream.fetch_add(1, Ordering::Relaxed);
        let out = StreamOut { conn: conn.clone(), stream };
        let (sender, credits) = remote_sender(capacity, from, to, Box::new(out));
        lock(&conn.outgoing).insert(stream, credits.clone());
        let open = rmp_serde::to_vec(key)
            .map_err(|e| DataError::Connection { peer: peer.to_string(), reason: e.to_string() })?;
        if !conn.frame(OPEN, stream, &open) {
            credits.close();
        }
        Ok(sender)
    }

    /// Closes every connection (tests: a worker that dies).
    pub fn shut_down(&self) {
        for (_, c) in lock(&self.inner.connections).drain() {
            c.shut();
        }
    }
}

impl crate::runtime::attempt::RemoteChannels for DataPlane {
    fn input(
        &self,
        (job, attempt, channel): (String, u64, u32),
        capacity: (usize, usize),
        from: (String, u32),
        to: (String, u32),
    ) -> Result<Receiver, DataError> {
        DataPlane::input(self, ChannelKey { job, attempt, channel }, capacity, from, to)
    }

    fn output<'a>(
        &'a self,
        peer: &'a str,
        (job, attempt, channel): (String, u64, u32),
        capacity: (usize, usize),
        from: (String, u32),
        to: (String, u32),
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Sender, DataError>> + Send + 'a>> {
        Box::pin(async move {
            let key = ChannelKey { job, attempt, channel };
            DataPlane::output(self, peer, &key, capacity, from, to).await
        })
    }
}

/// Moves every frame already queued to `queue`.
fn take_ready(outbox: &mut mpsc::UnboundedReceiver<Bytes>, queue: &mut std::collections::VecDeque<Bytes>) {
    while let Ok(frame) = outbox.try_recv() {
        queue.push_back(frame);
    }
}

/// Writes every frame of `queue` (up to 64 per system call).
async fn write_frames(
    socket: &mut OwnedWriteHalf,
    queue: &mut std::collections::VecDeque<Bytes>,
) -> std::io::Result<()> {
    use bytes::Buf as _;
    use tokio::io::AsyncWriteExt as _;
    while !queue.is_empty() {
        let mut written = {
            let slices: Vec<std::io::IoSlice<'_>> =
                queue.iter().take(64).map(|f| std::io::IoSlice::new(f)).collect();
            socket.write_vectored(&slices).await?
        };
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while written > 0 {
            let front = queue.front_mut().expect("written bytes came from the queue");
            if written >= front.len() {
                written -= front.len();
                queue.pop_front();
            } else {
                front.advance(written);
                written = 0;
            }
        }
    }
    Ok(())
}

/// A frame as the codec frames it: its length (4 bytes, big-endian), the tag, the stream,
/// and then what `body` appends. `None` past `max` bytes.
fn encode_frame(tag: u8, stream: u32, max: usize, body: impl FnOnce(&mut Vec<u8>)) -> Option<Bytes> {
    let mut b = Vec::with_capacity(64);
    b.extend_from_slice(&[0; 4]);
    b.push(tag);
    b.extend_from_slice(&stream.to_le_bytes());
    body(&mut b);
    let len = b.len() - 4;
    if len > max {
        return None;
    }
    b[..4].copy_from_slice(&u32::try_from(len).ok()?.to_be_bytes());
    Some(Bytes::from(b))
}

/// One connection with another worker.
struct Connection {
    /// Frames to the writer, in order.
    frames: mpsc::UnboundedSender<Bytes>,
    next_stream: AtomicU32,
    /// Streams this side opened: their credits.
    outgoing: Mutex<HashMap<u32, Arc<Credits>>>,
    /// Streams the peer opened: the local queue each feeds, and its credits.
    incoming: Mutex<HashMap<u32, (Sender, Arc<StreamCredit>)>>,
    credit_wake: Arc<Notify>,
    closed: AtomicBool,
    /// Set when the connection is shut: its reader ends, and with it the socket.
    stop: tokio::sync::watch::Sender<bool>,
    /// An accepted connection's place among [`MAX_CONNECTIONS`], freed when it is dropped.
    permit: OnceLock<tokio::sync::OwnedSemaphorePermit>,
    /// The largest frame either side accepts.
    max_frame: usize,
}

impl Connection {
    /// Queues a frame; false once the connection is closed.
    fn frame(&self, tag: u8, stream: u32, body: &[u8]) -> bool {
        let Some(frame) = encode_frame(tag, stream, self.max_frame, |b| b.extend_from_slice(body)) else {
            return false;
        };
        !self.closed.load(Ordering::Acquire) && self.frames.send(frame).is_ok()
    }

    /// Sends the credits (and the departures) of every incoming stream.
    fn send_credits(&self) {
        let mut incoming = lock(&self.incoming);
        let mut gone = Vec::new();
        for (&stream, (_, credit)) in incoming.iter() {
            // Bytes first: a batch taken in between is then credited now and its bytes
            // counted again towards the next frame (early, never late).
            credit.taken_bytes.swap(0, Ordering::AcqRel);
            let taken = credit.taken.swap(0, Ordering::AcqRel);
            if taken > 0 {
                self.frame(CREDIT, stream, &taken.to_le_bytes());
            }
            if credit.gone.load(Ordering::Acquire) {
                gone.push(stream);
            }
        }
        for stream in gone {
            incoming.remove(&stream);
            self.frame(GONE, stream, &[]);
        }
    }

    /// Ends the connection: every sender's pushes fail, every receiver's channel ends.
    fn shut(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        for (_, credits) in lock(&self.outgoing).drain() {
            credits.close();
        }
        lock(&self.incoming).clear();
        self.credit_wake.notify_one();
        let _ = self.stop.send(true);
    }
}

/// The credits a remote input's receiver hands back, bound to its connection and stream
/// when the sender opens it.
///
/// Credits go back once half the window (at least one batch) has been taken, as TCP's window
/// updates do, not one frame per batch: the sender then still holds at least half its
/// window whenever the receiving queue is empty, and the return path carries a fraction of
/// the frames (profiled in docs/benchmarks.md, *Beyond one machine*).
#[derive(Debug)]
pub(crate) struct StreamCredit {
    taken: AtomicU32,
    /// Bytes of the batches taken since the last credit frame.
    taken_bytes: AtomicUsize,
    /// Taken batches that make a credit frame worth sending: ≥ 1 and ≤ the capacity, so
    /// the sender can never wait on credits the receiver holds back.
    threshold: u32,
    /// The same in bytes: half the sender's capacity in bytes (which holds the bytes
    /// outstanding, credits withheld included), so it never waits on those either.
    threshold_bytes: usize,
    gone: AtomicBool,
    bound: OnceLock<(Weak<Connection>, u32)>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

impl StreamCredit {
    fn new(capacity: (usize, usize)) -> Self {
        let threshold = u32::try_from(capacity.0 / 2).unwrap_or(u32::MAX).max(1);
        StreamCredit {
            taken: AtomicU32::new(0),
            taken_bytes: AtomicUsize::new(0),
            threshold,
            threshold_bytes: (capacity.1 / 2).max(1),
            gone: AtomicBool::new(false),
            bound: OnceLock::new(),
        }
    }

    fn wake(&self) {
        if let Some(conn) = self.bound.get().and_then(|(c, _)| c.upgrade()) {
            conn.credit_wake.notify_one();
        }
    }
}

impl CreditSink for StreamCredit {
    fn taken(&self, batches: u32, bytes: usize) {
        let before = self.taken.fetch_add(batches, Ordering::AcqRel);
        let before_bytes = self.taken_bytes.fetch_add(bytes, Ordering::AcqRel);
        // Wake once per crossing: the credit task takes the whole count when it runs.
        let crossed = |before: usize, added: usize, threshold: usize| {
            before < threshold && before.saturating_add(added) >= threshold
        };
        if crossed(before as usize, batches as usize, self.threshold as usize)
            || crossed(before_bytes, bytes, self.threshold_bytes)
        {
            self.wake();
        }
    }

    fn gone(&self) {
        self.gone.store(true, Ordering::Release);
        self.wake();
    }
}

/// A stream's sending side: its messages as `MSG` frames.
#[derive(Debug)]
struct StreamOut {
    conn: Arc<Connection>,
    stream: u32,
}

impl Outbound for StreamOut {
    fn send(&self, message: &Message) -> Result<(), Closed> {
        // A message past the frame bound fails its sender (the peer would refuse the frame).
        let Some(frame) = encode_frame(MSG, self.stream, self.conn.max_frame, |b| encode_wire(message, b))
        else {
            tracing::warn!(
                max = self.conn.max_frame,
                "a message over the data plane's frame bound fails its channel"
            );
            return Err(Closed);
        };
        if self.conn.closed.load(Ordering::Acquire) || self.conn.frames.send(frame).is_err() {
            return Err(Closed);
        }
        Ok(())
    }

    fn close(&self) {
        lock(&self.conn.outgoing).remove(&self.stream);
        self.conn.frame(CLOSE, self.stream, &[]);
    }
}
