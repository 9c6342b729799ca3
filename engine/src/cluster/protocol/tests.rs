//! The session protocol: messages across a session, oversized frames, long messages in parts.

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
    // A long message crosses in parts once the receiver accepts long messages.
    controller.set_max_message(1 << 20);
    let long = ToController::Goodbye { reason: "x".repeat(5000) };
    worker.send(&long).await.unwrap();
    assert_eq!(controller.recv::<ToController>().await.unwrap(), Some(long));
    // Parts past the message bound fail the receiving end.
    controller.set_max_message(4096);
    worker.send(&ToController::Goodbye { reason: "y".repeat(5000) }).await.unwrap();
    let err = controller.recv::<ToController>().await.unwrap_err();
    assert!(err.to_string().contains("longer than 4096"), "{err}");
}

#[tokio::test]
async fn a_frame_past_the_bound_fails_the_receiving_end() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (mut worker, mut controller) = (Session::new(a, 1 << 20), Session::new(b, 1024));
    worker.send(&ToController::Goodbye { reason: "x".repeat(2000) }).await.unwrap();
    let err = controller.recv::<ToController>().await.unwrap_err();
    assert!(err.to_string().contains("frame size too big"), "{err}");
}

#[tokio::test]
async fn a_raised_frame_bound_takes_long_frames_and_keeps_what_was_buffered() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (mut worker, mut controller) = (Session::new(a, 1 << 20), Session::new(b, 1024));
    // The long frame arrives with the short one: it is read under the raised bound.
    worker.send(&ToController::Heartbeat { seq: 1 }).await.unwrap();
    let long = ToController::Goodbye { reason: "x".repeat(2000) };
    worker.send(&long).await.unwrap();
    assert_eq!(controller.recv::<ToController>().await.unwrap(), Some(ToController::Heartbeat { seq: 1 }));
    let mut controller = controller.with_max_frame(1 << 20);
    assert_eq!(controller.recv::<ToController>().await.unwrap(), Some(long));
    let back = ToController::Goodbye { reason: "y".repeat(3000) };
    controller.send(&back).await.unwrap();
    assert_eq!(worker.recv::<ToController>().await.unwrap(), Some(back));
}

#[test]
fn a_refused_deploy_crosses_the_wire_as_its_text() {
    // Older peers send and read `Result<(), String>`.
    let typed: Result<(), DeployRefusal> = Err(DeployRefusal("a bad spec".into()));
    let plain: Result<(), String> = Err("a bad spec".into());
    assert_eq!(rmp_serde::to_vec_named(&typed).unwrap(), rmp_serde::to_vec_named(&plain).unwrap());
}

#[test]
fn names_are_checked() {
    assert!(valid_name("weir-worker-0.pod_1"));
    for bad in ["", "a b", "ü", &"x".repeat(65), "a/b"] {
        assert!(!valid_name(bad), "{bad:?}");
    }
}
