//! Checkpoint chunks in a real S3-protocol server (moto, issue 22): create-only puts (a
//! retry of the same bytes passes, other bytes under a written id are refused), reads,
//! listing by job, deletes, prefixes.

use bytes::Bytes;
use weir::cluster::objects::{ChunkObjects, ObjectError};

use crate::common::s3::S3Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_in_s3_are_written_once_listed_and_deleted() {
    let server = S3Server::start();
    server.create_bucket("weir").await;
    let objects = ChunkObjects::open(&server.config("weir"), "cluster-1").unwrap();
    let job = "0123456789abcdef";
    assert_eq!(objects.get(job, 7).await.unwrap(), None);
    let chunk = Bytes::from(vec![7u8; 300_000]);
    objects.put(job, 7, chunk.clone()).await.unwrap();
    objects.put(job, 7, chunk.clone()).await.expect("a retry of the same bytes");
    match objects.put(job, 7, Bytes::from_static(b"a zombie's other bytes")).await {
        Err(ObjectError::Conflict { id: 7, .. }) => {}
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(objects.get(job, 7).await.unwrap(), Some(chunk), "the first write stays");
    objects.put(job, 9, Bytes::from_static(b"nine")).await.unwrap();
    objects.put("other-job", 8, Bytes::from_static(b"eight")).await.unwrap();
    assert_eq!(objects.list(job).await.unwrap(), vec![(7, 300_000), (9, 4)]);
    objects.delete(job, 7).await.unwrap();
    objects.delete(job, 7).await.expect("deleting a deleted chunk");
    assert_eq!(objects.list(job).await.unwrap(), vec![(9, 4)]);
    assert_eq!(objects.list("other-job").await.unwrap(), vec![(8, 5)]);
    // Another prefix in the same bucket is another store.
    let other = ChunkObjects::open(&server.config("weir"), "cluster-2").unwrap();
    assert_eq!(other.list(job).await.unwrap(), vec![]);
}
