//! The data plane between workers (issue 22): remote channels over real TCP connections,
//! with credits. Order, backpressure (a sender without credits waits, and the receiving
//! queue stays within its capacity), an unaligned barrier overtaking what the receiving
//! end holds, departures of either end, fencing of channels nobody registered, a bad
//! token, and a connection that dies.

use std::task::Context;
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use weir::cluster::data::{ChannelKey, DataError, DataPlane};
use weir::record::Batch;
use weir::runtime::{Barrier, Message, Received, Receiver, Sender, Wanted};

const TOKEN: &str = "data-plane-test-token";
const WAIT: Duration = Duration::from_secs(60);

async fn worker(token: &str) -> (DataPlane, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let plane = DataPlane::new(token, &addr, 16 << 20, Default::default());
    tokio::spawn(plane.clone().serve(listener));
    (plane, addr)
}

fn key(channel: u32) -> ChannelKey {
    ChannelKey { job: "job".into(), attempt: 1, channel }
}

fn ends() -> ((String, u32), (String, u32)) {
    (("up".into(), 0), ("down".into(), 0))
}

fn batch(v: u8) -> Message {
    let mut b = Batch::empty();
    b.push(b"key", &[v; 100], i64::from(v));
    Message::Batch(b)
}

/// A remote channel of `capacity` from worker `a` to worker `b`.
async fn remote(
    a: &DataPlane,
    b: &DataPlane,
    b_addr: &str,
    channel: u32,
    capacity: usize,
) -> (Sender, Receiver) {
    let (from, to) = ends();
    let rx = b.input(key(channel), (capacity, usize::MAX), from.clone(), to.clone()).unwrap();
    let tx = a.output(b_addr, &key(channel), (capacity, usize::MAX), from, to).await.unwrap();
    (tx, rx)
}

async fn next(rx: &mut Receiver) -> Received {
    tokio::time::timeout(WAIT, std::future::poll_fn(|cx: &mut Context<'_>| rx.poll_recv(cx, Wanted::Any)))
        .await
        .expect("a message in time")
}

/// Waits until `cond` holds (panics after [`WAIT`]).
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_cross_in_order_and_the_channel_ends_with_its_sender() {
    let ((a, _), (b, b_addr)) = (worker(TOKEN).await, worker(TOKEN).await);
    let (tx, mut rx) = remote(&a, &b, &b_addr, 0, 4).await;
    let barrier = Barrier::new(7, Instant::now(), false, Some(Duration::from_secs(1)));
    let sent = vec![
        batch(1),
        Message::Watermark(5),
        Message::Barrier(barrier),
        batch(2),
        Message::Idle,
        Message::EndOfStream,
    ];
    for m in &sent {
        tx.push(m.clone()).unwrap();
    }
    drop(tx);
    for want in &sent {
        match (next(&mut rx).await, want) {
            (Received::Message(Message::Barrier(got), _), Message::Barrier(want)) => {
                assert_eq!(
                    (got.id, got.unaligned, got.unaligned_after),
                    (want.id, false, want.unaligned_after)
                );
            }
            (Received::Message(got, _), want) => assert_eq!(&got, want),
            (Received::Closed, _) => panic!("closed early"),
        }
    }
    assert!(matches!(next(&mut rx).await, Received::Closed), "the channel ends with its sender");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_without_credits_waits_and_the_receiving_queue_stays_bounded() {
    let ((a, _), (b, b_addr)) = (worker(TOKEN).await, worker(TOKEN).await);
    let (tx, mut rx) = remote(&a, &b, &b_addr, 0, 2).await;
    let mut sent = 0u8;
    // A producer that waits for room before each batch, as a task does.
    for _ in 0..2 {
        tx.ready().await;
        sent += 1;
        tx.push(batch(sent)).unwrap();
    }
    assert!(!tx.has_room(), "two batches of two credits are out");
    assert!(
        tokio::time::timeout(Duration::from_millis(200), tx.ready()).await.is_err(),
        "no credit came back"
    );
    // Each batch taken gives a credit back.
    for round in 0..20u8 {
        let Received::Message(Message::Batch(got), _) = next(&mut rx).await else { panic!("a batch") };
        assert_eq!(got.iter().next().unwrap().timestamp, i64::from(round + 1));
        tokio::time::timeout(WAIT, tx.ready()).await.expect("a credit comes back");
        sent += 1;
        tx.push(batch(sent)).unwrap();
    }
    assert!(
        rx.stats().max_depth.load(std::sync::atomic::Ordering::Relaxed) <= 2,
        "the receiving queue passed its capacity"
    );
    assert!(tx.stats().blocked_ns.load(std::sync::atomic::Ordering::Relaxed) > 0, "the sender never waited");
}

/// A batch of one record of `bytes` bytes.
fn sized(bytes: usize) -> Message {
    let mut b = Batch::empty();
    b.push(&[], &vec![7u8; bytes], 0);
    Message::Batch(b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_sender_holds_the_bytes_outstanding_to_its_capacity_in_bytes() {
    let ((a, _), (b, b_addr)) = (worker(TOKEN).await, worker(TOKEN).await);
    let (from, to) = ends();
    let mut rx = b.input(key(0), (64, 100_000), from.clone(), to.clone()).unwrap();
    // Credits for 64 batches, but 100 KB outstanding at most: batches of 40 KB.
    let tx = a.output(&b_addr, &key(0), (64, 100_000), from, to).await.unwrap();
    for _ in 0..3 {
        tx.ready().await;
        tx.push(sized(40_000)).unwrap();
    }
    assert!(!tx.has_room(), "120 KB are out, with 61 credits left");
    assert!(
        tokio::time::timeout(Duration::from_millis(200), tx.ready()).await.is_err(),
        "nothing was taken: no room"
    );
    // A consumer taking whatever arrives gives credits and bytes back (a credit frame at
    // the latest once half the capacity in bytes was taken): the sender goes on, 50
    // batches (2 MB) through a window of 100 KB.
    let consumer = tokio::spawn(async move {
        for _ in 0..53 {
            let Received::Message(Message::Batch(_), _) = next(&mut rx).await else { panic!("a batch") };
        }
        rx
    });
    for _ in 0..50 {
        tokio::time::timeout(WAIT, tx.ready()).await.expect("room once batches are taken");
        tx.push(sized(40_000)).unwrap();
    }
    let rx = consumer.await.unwrap();
    let queued = rx.stats().max_bytes.load(std::sync::atomic::Ordering::Relaxed);
    assert!(queued <= 140_000, "the receiving end held {queued} bytes (capacity 100 KB and a batch)");
    let out = tx.stats().max_bytes.load(std::sync::atomic::Ordering::Relaxed);
    assert!(out <= 140_000, "{out} bytes were outstanding");
    assert_eq!(tx.stats().capacity_bytes, 100_000);
    assert!(tx.stats().blocked_ns.load(std::sync::atomic::Ordering::Relaxed) > 0, "the sender never waited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unaligned_barrier_overtakes_what_the_receiving_end_holds() {
    let ((a, _), (b, b_addr)) = (worker(TOKEN).await, worker(TOKEN).await);
    let (tx, mut rx) = remote(&a, &b, &b_addr, 0, 8).await;
    for v in 1..=3 {
        tx.push(batch(v)).unwrap();
    }
    until("three batches queued at the receiving end", || {
        rx.stats().max_depth.load(std::sync::atomic::Ordering::Relaxed) == 3
    })
    .await;
    let barrier = Barrier::new(3, Instant::now(), false, Some(Duration::ZERO));
    assert_eq!(tx.push_overtaking(barrier).unwrap(), 0, "a remote sender cannot count what it overtakes");
    tx.push(batch(4)).unwrap();
    // A task that only takes barriers (it waits for room on its outputs) gets it at once:
    // it is at the head of the queue as soon as it arrives.
    let first = tokio::time::timeout(WAIT, std::future::poll_fn(|cx| rx.poll_recv(cx, Wanted::Barriers)))
        .await
        .expect("the barrier arrives");
    let Received::Message(Message::Barrier(got), overtaken) = first else {
        panic!("the barrier first: {first:?}")
    };
    assert!(got.unaligned && got.id == 3);
    assert_eq!(overtaken, vec![batch(1), batch(2), batch(3)], "the in-flight data is what it overtook");
    for v in 1..=4 {
        let Received::Message(m, _) = next(&mut rx).await else { panic!("closed") };
        assert_eq!(m, batch(v));
    }
}

/// Waits until a push on `tx` fails (its receiver or its connection is gone).
async fn until_closed(tx: &Sender) {
    let deadline = Instant::now() + WAIT;
    while tx.push(Message::Watermark(0)).is_ok() {
        assert!(Instant::now() < deadline, "pushes still succeed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(tx.has_room(), "a closed channel does not hold its sender back");
    assert!(tx.ready().now_or_never().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn either_end_going_away_is_seen_by_the_other() {
    let ((a, a_addr), (b, b_addr)) = (worker(TOKEN).await, worker(TOKEN).await);
    // The receiver goes: pushes fail.
    let (tx, rx) = remote(&a, &b, &b_addr, 0, 2).await;
    tx.push(batch(1)).unwrap();
    drop(rx);
    until_closed(&tx).await;
    // A channel nobody registered (an older attempt's): refused, pushes fail.
    let (from, to) = ends();
    let stale =
        a.output(&b_addr, &ChannelKey { attempt: 0, ..key(1) }, (2, usize::MAX), from, to).await.unwrap();
    until_closed(&stale).await;
    // The connection dies: the senders' pushes fail and the receivers' channels end.
    let (tx, mut rx) = remote(&a, &b, &b_addr, 2, 2).await;
    let (tx_back, mut rx_back) = remote(&b, &a, &a_addr, 3, 2).await;
    tx.push(batch(1)).unwrap();
    let Received::Message(m, _) = next(&mut rx).await else { panic!("closed") };
    assert_eq!(m, batch(1));
    b.shut_down();
    until_closed(&tx).await;
    until_closed(&tx_back).await;
    assert!(matches!(next(&mut rx).await, Received::Closed));
    assert!(matches!(next(&mut rx_back).await, Received::Closed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_without_the_cluster_token_is_refused() {
    let ((intruder, _), (b, b_addr)) = (worker("not-the-token").await, worker(TOKEN).await);
    let (from, to) = ends();
    let _rx = b.input(key(0), (2, usize::MAX), from.clone(), to.clone()).unwrap();
    match intruder.output(&b_addr, &key(0), (2, usize::MAX), from.clone(), to.clone()).await {
        Err(DataError::Refused { reason, .. }) => assert!(reason.contains("token"), "{reason}"),
        other => panic!("not refused: {other:?}"),
    }
    assert!(
        matches!(b.input(key(0), (2, usize::MAX), from, to), Err(DataError::Duplicate { .. })),
        "the input is still there"
    );
}
