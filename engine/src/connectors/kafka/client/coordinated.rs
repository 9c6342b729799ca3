//! Groups, transactions and topics: the coordinator-based and admin calls of [`Client`].

use std::collections::BTreeMap;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::{Client, KafkaError, ProducerIdentity, name};

impl Client {
    fn coordinator(&mut self, key_type: i8, key: &str) -> Result<i32, KafkaError> {
        if let Some(id) = self.coordinators.get(&(key_type, key.to_string())) {
            return Ok(*id);
        }
        let request = FindCoordinatorRequest::default()
            .with_key(StrBytes::from_string(key.to_string()))
            .with_key_type(key_type);
        let response = self.bootstrap()?.call(&request)?;
        let what = if key_type == 0 { "group" } else { "transaction" };
        if response.error_code != 0 {
            return Err(KafkaError::from_code(
                response.error_code,
                format!("find the coordinator of {what} `{key}`"),
            ));
        }
        let id = response.node_id.0;
        self.brokers.entry(id).or_insert_with(|| format!("{}:{}", response.host.as_str(), response.port));
        self.coordinators.insert((key_type, key.to_string()), id);
        Ok(id)
    }

    /// A producer id (and epoch): idempotent when `transactional_id` is `None`; otherwise the
    /// transactional id's, which fences (aborts) whatever an earlier holder of the id left open.
    pub fn init_producer_id(
        &mut self,
        transactional_id: Option<&str>,
        transaction_timeout_ms: i32,
    ) -> Result<ProducerIdentity, KafkaError> {
        self.retrying(|c| {
            let request = InitProducerIdRequest::default()
                .with_transactional_id(
                    transactional_id.map(|t| TransactionalId(StrBytes::from_string(t.to_string()))),
                )
                .with_transaction_timeout_ms(transaction_timeout_ms)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            let conn = match transactional_id {
                Some(t) => {
                    let id = c.coordinator(1, t)?;
                    c.broker(id)?
                }
                None => c.bootstrap()?,
            };
            let response = conn.call(&request)?;
            if response.error_code != 0 {
                return Err(KafkaError::from_code(response.error_code, "InitProducerId"));
            }
            Ok(ProducerIdentity { id: response.producer_id.0, epoch: response.producer_epoch })
        })
    }

    /// Adds `partitions` of `topic` to the open transaction of `transactional_id`.
    pub fn add_partitions_to_txn(
        &mut self,
        transactional_id: &str,
        producer: ProducerIdentity,
        topic: &str,
        partitions: &[i32],
    ) -> Result<(), KafkaError> {
        self.retrying(|c| {
            let request = AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(TransactionalId(StrBytes::from_string(
                    transactional_id.to_string(),
                )))
                .with_v3_and_below_producer_id(ProducerId(producer.id))
                .with_v3_and_below_producer_epoch(producer.epoch)
                .with_v3_and_below_topics(vec![
                    AddPartitionsToTxnTopic::default()
                        .with_name(name(topic))
                        .with_partitions(partitions.to_vec()),
                ]);
            let id = c.coordinator(1, transactional_id)?;
            let response = c.broker(id)?.call(&request)?;
            for t in &response.results_by_topic_v3_and_below {
                for p in &t.results_by_partition {
                    if p.partition_error_code != 0 {
                        return Err(KafkaError::from_code(
                            p.partition_error_code,
                            format!("AddPartitionsToTxn {topic}/{}", p.partition_index),
                        ));
                    }
                }
            }
            Ok(())
        })
    }

    /// Commits (or aborts) the transaction of `transactional_id` held by `producer`: may be
    /// called by another process than the one that produced (resuming the transaction with
    /// the stored producer id and epoch). Committing an already committed transaction again
    /// is answered with an error the caller may treat as done (see [`KafkaError::code`]).
    pub fn end_txn(
        &mut self,
        transactional_id: &str,
        producer: ProducerIdentity,
        commit: bool,
    ) -> Result<(), KafkaError> {
        if !self.supports(ApiKey::EndTxn)? {
            return Err(KafkaError::Unsupported {
                broker: self.config.name_of(super::Peer::Cluster),
                what: "transactions (it does not offer EndTxn, so no transaction can be committed)".into(),
            });
        }
        self.retrying(|c| {
            let request = EndTxnRequest::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(transactional_id.to_string())))
                .with_producer_id(ProducerId(producer.id))
                .with_producer_epoch(producer.epoch)
                .with_committed(commit);
            let id = c.coordinator(1, transactional_id)?;
            let response = c.broker(id)?.call(&request)?;
            if response.error_code != 0 {
                return Err(KafkaError::from_code(
                    response.error_code,
                    format!("EndTxn of `{transactional_id}`"),
                ));
            }
            Ok(())
        })
    }

    /// The offsets group `group` committed for `partitions` of `topic` (`None`: none).
    pub fn committed_offsets(
        &mut self,
        group: &str,
        topic: &str,
        partitions: &[i32],
    ) -> Result<BTreeMap<i32, Option<i64>>, KafkaError> {
        self.retrying(|c| {
            let request = OffsetFetchRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
                .with_topics(Some(vec![
                    OffsetFetchRequestTopic::default()
                        .with_name(name(topic))
                        .with_partition_indexes(partitions.to_vec()),
                ]));
            let id = c.coordinator(0, group)?;
            let response = c.broker(id)?.call(&request)?;
            if response.error_code != 0 {
                return Err(KafkaError::from_code(
                    response.error_code,
                    format!("the committed offsets of group `{group}`"),
                ));
            }
            let mut out: BTreeMap<i32, Option<i64>> = partitions.iter().map(|p| (*p, None)).collect();
            for t in response.topics {
                for p in t.partitions {
                    if p.error_code != 0 {
                        return Err(KafkaError::from_code(
                            p.error_code,
                            format!(
                                "the committed offset of group `{group}` on {topic}/{}",
                                p.partition_index
                            ),
                        ));
                    }
                    out.insert(p.partition_index, (p.committed_offset >= 0).then_some(p.committed_offset));
                }
            }
            Ok(out)
        })
    }

    /// Commits `offsets` (partition → next offset to read) of `topic` for group `group`, as a
    /// standalone commit (no group membership: for lag monitoring, not for assignment).
    pub fn commit_offsets(
        &mut self,
        group: &str,
        topic: &str,
        offsets: &BTreeMap<i32, i64>,
    ) -> Result<(), KafkaError> {
        self.retrying(|c| {
            let request = OffsetCommitRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
                .with_generation_id_or_member_epoch(-1)
                .with_member_id(StrBytes::default())
                .with_retention_time_ms(-1)
                .with_topics(vec![
                    OffsetCommitRequestTopic::default().with_name(name(topic)).with_partitions(
                        offsets
                            .iter()
                            .map(|(p, o)| {
                                OffsetCommitRequestPartition::default()
                                    .with_partition_index(*p)
                                    .with_committed_offset(*o)
                                    .with_committed_leader_epoch(-1)
                            })
                            .collect(),
                    ),
                ]);
            let id = c.coordinator(0, group)?;
            let response = c.broker(id)?.call(&request)?;
            for t in response.topics {
                for p in t.partitions {
                    if p.error_code != 0 {
                        return Err(KafkaError::from_code(
                            p.error_code,
                            format!("commit offsets of group `{group}` on {topic}/{}", p.partition_index),
                        ));
                    }
                }
            }
            Ok(())
        })
    }

    /// Creates `topic` with `partitions` partitions (replication factor 1). An existing topic
    /// is an error.
    pub fn create_topic(&mut self, topic: &str, partitions: i32) -> Result<(), KafkaError> {
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(self.config.request_timeout.as_millis() as i32)
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(name(topic))
                    .with_num_partitions(partitions)
                    .with_replication_factor(1),
            ]);
        let response = self.bootstrap()?.call(&request)?;
        for t in response.topics {
            if t.error_code != 0 {
                return Err(KafkaError::from_code(t.error_code, format!("create topic `{topic}`")));
            }
        }
        self.leaders.clear();
        Ok(())
    }

    /// Raises `topic`'s partition count to `total`.
    pub fn create_partitions(&mut self, topic: &str, total: i32) -> Result<(), KafkaError> {
        let request = CreatePartitionsRequest::default()
            .with_timeout_ms(self.config.request_timeout.as_millis() as i32)
            .with_topics(vec![CreatePartitionsTopic::default().with_name(name(topic)).with_count(total)]);
        let response = self.bootstrap()?.call(&request)?;
        for r in response.results {
            if r.error_code != 0 {
                return Err(KafkaError::from_code(r.error_code, format!("add partitions to `{topic}`")));
            }
        }
        self.leaders.clear();
        Ok(())
    }
}
