//! The control session between the controller and a worker: one TCP connection per
//! worker, length-prefixed frames (4-byte big-endian length, [`LengthDelimitedCodec`]),
//! each frame one MessagePack message ([`ToController`] or [`ToWorker`], `rmp-serde` with
//! field names, so a field can be added without breaking an older peer that ignores it).
//!
//! The session opens with the worker's [`Hello`] (protocol version, cluster token, name,
//! data address, slots) and the controller's [`ToWorker::Welcome`] or
//! [`ToWorker::Refused`]; then the worker sends a [`ToController::Heartbeat`] every
//! `heartbeat_interval_ms` and the controller answers each, so both sides notice a dead
//! peer within `heartbeat_timeout_ms`. Every frame is bounded (`max_frame_bytes`); a frame
//! past the bound, a message that does not decode, or a message out of turn closes the
//! session.

use futures::{SinkExt as _, StreamExt as _};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// The version of this protocol; a worker speaking another one is refused.
pub const PROTOCOL_VERSION: u32 = 1;

/// What a worker tells the controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToController {
    /// The first message of a session.
    Hello(Hello),
    /// The worker is alive (every `heartbeat_interval_ms`).
    Heartbeat {
        /// Counts up from 1 within a session; the controller echoes it.
        seq: u64,
    },
    /// The worker is leaving (it was asked to stop).
    Goodbye {
        /// Why, for the controller's log and the API.
        reason: String,
    },
}

/// A worker's registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// [`PROTOCOL_VERSION`] of the worker.
    pub protocol: u32,
    /// The cluster token (`cluster.token` of the controller): only holders run subtasks.
    pub token: String,
    /// The worker's name (a pod or host name): 1 to 64 bytes of `[A-Za-z0-9._-]`. A new
    /// session under a name that is registered replaces the old one.
    pub name: String,
    /// Where other workers reach its data plane (`host:port`).
    pub data_addr: String,
    /// Subtasks it runs at once.
    pub slots: u32,
    /// The worker's build (`weir` version), shown in the API.
    pub version: String,
}

/// What the controller tells a worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToWorker {
    /// The worker is registered.
    Welcome {
        /// Its id for this session (a new one for every session).
        worker: u64,
        /// How often to send a heartbeat.
        heartbeat_interval_ms: u64,
        /// After this long without a message the controller drops the session (and the
        /// worker should, without an answer).
        heartbeat_timeout_ms: u64,
    },
    /// The worker is not registered; the session ends.
    Refused {
        /// Why (the worker prints it).
        reason: String,
        /// Whether trying again later may succeed (the cluster is full), or not (a bad
        /// token, another protocol version, a bad name).
        retry: bool,
    },
    /// The answer to a heartbeat.
    HeartbeatAck {
        /// The heartbeat's `seq`.
        seq: u64,
    },
}

/// Why a session failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The connection failed, or a frame was past the size bound.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A frame did not hold a message of the protocol.
    #[error("a message that does not decode: {0}")]
    Decode(#[from] rmp_serde::decode::Error),
    /// A message could not be encoded.
    #[error("a message that does not encode: {0}")]
    Encode(#[from] rmp_serde::encode::Error),
}

/// One end of a session: typed messages over length-prefixed frames.
pub struct Session<S> {
    framed: Framed<S, LengthDelimitedCodec>,
}

impl<S> std::fmt::Debug for Session<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Session<S> {
    /// A session over `io` whose frames (both ways) are at most `max_frame_bytes`.
    pub fn new(io: S, max_frame_bytes: usize) -> Self {
        let codec = LengthDelimitedCodec::builder().max_frame_length(max_frame_bytes).new_codec();
        Session { framed: Framed::new(io, codec) }
    }

    /// Sends `message` (flushed).
    pub async fn send<T: Serialize>(&mut self, message: &T) -> Result<(), SessionError> {
        let bytes = rmp_serde::to_vec_named(message)?;
        self.framed.send(bytes::Bytes::from(bytes)).await?;
        Ok(())
    }

    /// The next message; `None` when the peer closed the connection. Cancel-safe (a frame
    /// read in part stays buffered), so it can race a timer in `select!`.
    pub async fn recv<T: DeserializeOwned>(&mut self) -> Result<Option<T>, SessionError> {
        match self.framed.next().await {
            Some(frame) => Ok(Some(rmp_serde::from_slice(&frame?)?)),
            None => Ok(None),
        }
    }
}

/// Whether `name` is a valid worker name: 1 to 64 bytes of `[A-Za-z0-9._-]`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_cross_a_session_and_oversized_frames_are_refused() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let (mut worker, mut controller) = (Session::new(a, 1024), Session::new(b, 1024));
        let hello = Hello {
            protocol: PROTOCOL_VERSION,
            token: "t".into(),
            name: "w-1".into(),
            data_addr: "127.0.0.1:1".into(),
            slots: 2,
            version: "0".into(),
        };
        worker.send(&ToController::Hello(hello.clone())).await.unwrap();
        assert_eq!(controller.recv::<ToController>().await.unwrap(), Some(ToController::Hello(hello)));
        // A frame past the bound fails the receiving end.
        let big = ToController::Goodbye { reason: "x".repeat(2000) };
        let mut unbounded =
            Session { framed: Framed::new(worker.framed.into_inner(), LengthDelimitedCodec::new()) };
        unbounded.send(&big).await.unwrap();
        let err = controller.recv::<ToController>().await.unwrap_err();
        assert!(err.to_string().contains("frame size too big"), "{err}");
    }

    #[test]
    fn names_are_checked() {
        assert!(valid_name("weir-worker-0.pod_1"));
        for bad in ["", "a b", "ü", &"x".repeat(65), "a/b"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}
