//! A broker that serves one partition of one topic whose log is a single record batch given
//! as bytes, sent as they are: what a Kafka broker does with a producer's compressed batch
//! (it keeps and serves it compressed). Tansu 0.6 decompresses a batch on produce and then
//! serves none of a 64 MiB record, so a decompression bomb cannot reach a consumer through it.
//! Serves ApiVersions, Metadata, ListOffsets and Fetch, which a Kafka source without a group
//! uses; anything else closes the connection.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};

use bytes::{BufMut as _, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes, decode_request_header_from_buffer};

const SERVED: [ApiKey; 4] = [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::ListOffsets, ApiKey::Fetch];

/// The broker (its threads end with the test process).
pub struct BombBroker {
    addr: String,
}

impl BombBroker {
    /// Serves `batch` (one record batch, base offset 0, `records` records) as partition 0 of
    /// `topic`.
    pub fn start(topic: &str, batch: Bytes, records: i64) -> BombBroker {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let topic = topic.to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (topic, batch) = (topic.clone(), batch.clone());
                std::thread::spawn(move || serve(stream, port, &topic, &batch, records));
            }
        });
        BombBroker { addr: format!("127.0.0.1:{port}") }
    }

    pub fn bootstrap(&self) -> String {
        self.addr.clone()
    }
}

fn serve(mut stream: TcpStream, port: u16, topic: &str, batch: &Bytes, records: i64) {
    loop {
        let mut len = [0u8; 4];
        if stream.read_exact(&mut len).is_err() {
            return;
        }
        let len = i32::from_be_bytes(len);
        if !(0..=(16 << 20)).contains(&len) {
            return;
        }
        let mut body = vec![0u8; len as usize];
        if stream.read_exact(&mut body).is_err() {
            return;
        }
        let mut body = Bytes::from(body);
        let Ok(header) = decode_request_header_from_buffer(&mut body) else { return };
        let Ok(key) = ApiKey::try_from(header.request_api_key) else { return };
        let version = header.request_api_version;
        let Some(answer) = answer(key, version, &mut body, port, topic, batch, records) else { return };
        let mut out = BytesMut::new();
        out.put_i32(0);
        let response_header = ResponseHeader::default().with_correlation_id(header.correlation_id);
        if response_header.encode(&mut out, key.response_header_version(version)).is_err() {
            return;
        }
        out.extend_from_slice(&answer);
        let n = (out.len() - 4) as i32;
        out[..4].copy_from_slice(&n.to_be_bytes());
        if stream.write_all(&out).is_err() {
            return;
        }
    }
}

fn encoded<T: Encodable>(response: T, version: i16) -> Option<Bytes> {
    let mut buf = BytesMut::new();
    response.encode(&mut buf, version).ok()?;
    Some(buf.freeze())
}

/// The answer to one request (`None`: close the connection).
fn answer(
    key: ApiKey,
    version: i16,
    body: &mut Bytes,
    port: u16,
    topic: &str,
    batch: &Bytes,
    records: i64,
) -> Option<Bytes> {
    const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    match key {
        ApiKey::ApiVersions => {
            let api_keys = SERVED
                .iter()
                .map(|k| {
                    let v = k.valid_versions();
                    ApiVersion::default()
                        .with_api_key(*k as i16)
                        .with_min_version(v.min)
                        .with_max_version(v.max)
                })
                .collect();
            encoded(ApiVersionsResponse::default().with_api_keys(api_keys), version)
        }
        ApiKey::Metadata => {
            let request = MetadataRequest::decode(body, version).ok()?;
            let names: Vec<String> = match request.topics {
                None => vec![topic.to_string()],
                Some(ts) => ts.iter().filter_map(|t| t.name.as_ref().map(|n| n.0.to_string())).collect(),
            };
            let topics = names
                .into_iter()
                .map(|n| {
                    let t = MetadataResponseTopic::default()
                        .with_name(Some(TopicName(StrBytes::from_string(n.clone()))));
                    if n != topic {
                        return t.with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                    }
                    t.with_partitions(vec![
                        MetadataResponsePartition::default()
                            .with_partition_index(0)
                            .with_leader_id(BrokerId(0))
                            .with_replica_nodes(vec![BrokerId(0)])
                            .with_isr_nodes(vec![BrokerId(0)]),
                    ])
                })
                .collect();
            let broker = MetadataResponseBroker::default()
                .with_node_id(BrokerId(0))
                .with_host(StrBytes::from_static_str("127.0.0.1"))
                .with_port(i32::from(port));
            let response = MetadataResponse::default()
                .with_brokers(vec![broker])
                .with_controller_id(BrokerId(0))
                .with_topics(topics);
            encoded(response, version)
        }
        ApiKey::ListOffsets => {
            let request = ListOffsetsRequest::decode(body, version).ok()?;
            let topics = request
                .topics
                .iter()
                .map(|t| {
                    let partitions = t
                        .partitions
                        .iter()
                        .map(|p| {
                            let r = ListOffsetsPartitionResponse::default()
                                .with_partition_index(p.partition_index);
                            if t.name.0.as_str() != topic || p.partition_index != 0 {
                                return r.with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                            }
                            r.with_offset(if p.timestamp == -1 { records } else { 0 }).with_timestamp(-1)
                        })
                        .collect();
                    ListOffsetsTopicResponse::default().with_name(t.name.clone()).with_partitions(partitions)
                })
                .collect();
            encoded(ListOffsetsResponse::default().with_topics(topics), version)
        }
        ApiKey::Fetch => {
            let request = FetchRequest::decode(body, version).ok()?;
            let responses = request
                .topics
                .iter()
                .map(|t| {
                    let partitions = t
                        .partitions
                        .iter()
                        .map(|p| {
                            let data = PartitionData::default().with_partition_index(p.partition);
                            if t.topic.0.as_str() != topic || p.partition != 0 {
                                return data.with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                            }
                            let served = if p.fetch_offset < records { batch.clone() } else { Bytes::new() };
                            data.with_high_watermark(records)
                                .with_last_stable_offset(records)
                                .with_log_start_offset(0)
                                .with_records(Some(served))
                        })
                        .collect();
                    FetchableTopicResponse::default().with_topic(t.topic.clone()).with_partitions(partitions)
                })
                .collect();
            encoded(FetchResponse::default().with_responses(responses), version)
        }
        _ => None,
    }
}
