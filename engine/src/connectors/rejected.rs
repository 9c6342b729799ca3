//! Records a source could not read, taken out of the stream instead of failing the task
//! (`on_error: drop | dead_letter`): their raw bytes, where they came from and why.

/// Where a rejected record came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A Kafka record.
    Kafka {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The record's offset.
        offset: i64,
    },
    /// A line of a file.
    File {
        /// The file.
        path: String,
        /// The 1-based line number.
        line: u64,
    },
    /// A record an operator could not process (found by replaying from a checkpoint).
    Operator {
        /// The operator's input port.
        input: u32,
        /// The checkpoint the operator's state was restored from (0: none).
        checkpoint: u64,
        /// Which record of that content on that input since the checkpoint (1: the first).
        occurrence: u32,
    },
    /// A record the operator's guest sent to the dead letters itself.
    Guest,
}

/// A record taken out of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// Why, as a short tag (`bad_json`, `bad_msgpack`, `bad_event_time`, `bad_utf8`,
    /// `guest_error`, `guest_trap`, `guest_limit`, or the guest's own).
    pub reason: String,
    /// The error message.
    pub error: String,
    /// Where it came from.
    pub origin: Origin,
    /// Its key as received (empty: none).
    pub key: Vec<u8>,
    /// Its value as received.
    pub value: Vec<u8>,
    /// Its event time, where known.
    pub timestamp: Option<i64>,
}

impl Rejected {
    /// A dead letter's value: a MessagePack map of the job, node, subtask, reason, error,
    /// time, origin, and the record's key, value and event time.
    pub fn encode(&self, job: &str, node: &str, subtask: u32, time_ms: u64) -> Vec<u8> {
        use rmp::encode as e;
        let mut out = Vec::with_capacity(160 + self.key.len() + self.value.len() + self.error.len());
        let w = &mut out;
        // Writes to a Vec cannot fail.
        let str = |w: &mut Vec<u8>, s: &str| e::write_str(w, s).expect("vec");
        e::write_map_len(w, 10).expect("vec");
        str(w, "job");
        str(w, job);
        str(w, "node");
        str(w, node);
        str(w, "subtask");
        e::write_uint(w, u64::from(subtask)).expect("vec");
        str(w, "reason");
        str(w, &self.reason);
        str(w, "error");
        str(w, &self.error);
        str(w, "time_ms");
        e::write_uint(w, time_ms).expect("vec");
        str(w, "origin");
        match &self.origin {
            Origin::Kafka { topic, partition, offset } => {
                e::write_map_len(w, 4).expect("vec");
                str(w, "kind");
                str(w, "kafka");
                str(w, "topic");
                str(w, topic);
                str(w, "partition");
                e::write_sint(w, i64::from(*partition)).expect("vec");
                str(w, "offset");
                e::write_sint(w, *offset).expect("vec");
            }
            Origin::File { path, line } => {
                e::write_map_len(w, 3).expect("vec");
                str(w, "kind");
                str(w, "file");
                str(w, "path");
                str(w, path);
                str(w, "line");
                e::write_uint(w, *line).expect("vec");
            }
            Origin::Operator { input, checkpoint, occurrence } => {
                e::write_map_len(w, 4).expect("vec");
                str(w, "kind");
                str(w, "operator");
                str(w, "input");
                e::write_uint(w, u64::from(*input)).expect("vec");
                str(w, "checkpoint");
                e::write_uint(w, *checkpoint).expect("vec");
                str(w, "occurrence");
                e::write_uint(w, u64::from(*occurrence)).expect("vec");
            }
            Origin::Guest => {
                e::write_map_len(w, 1).expect("vec");
                str(w, "kind");
                str(w, "guest");
            }
        }
        str(w, "key");
        e::write_bin(w, &self.key).expect("vec");
        str(w, "value");
        e::write_bin(w, &self.value).expect("vec");
        str(w, "timestamp");
        match self.timestamp {
            Some(t) => e::write_sint(w, t).map(|_| ()).expect("vec"),
            None => e::write_nil(w).expect("vec"),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_letter_carries_the_raw_record_and_where_it_came_from() {
        let r = Rejected {
            reason: "bad_json".into(),
            error: "is not JSON".into(),
            origin: Origin::Kafka { topic: "bids".into(), partition: 2, offset: 41 },
            key: b"k".to_vec(),
            value: b"{nope".to_vec(),
            timestamp: None,
        };
        let v = rmpv::decode::read_value(&mut &r.encode("j", "src", 1, 7)[..]).unwrap();
        let get =
            |k: &str| v.as_map().unwrap().iter().find(|(n, _)| n.as_str() == Some(k)).unwrap().1.clone();
        assert_eq!(get("reason").as_str(), Some("bad_json"));
        assert_eq!(get("value").as_slice(), Some(&b"{nope"[..]));
        assert_eq!(get("subtask").as_u64(), Some(1));
        let origin = get("origin");
        let o =
            |k: &str| origin.as_map().unwrap().iter().find(|(n, _)| n.as_str() == Some(k)).unwrap().1.clone();
        assert_eq!(o("topic").as_str(), Some("bids"));
        assert_eq!(o("offset").as_i64(), Some(41));
        assert!(get("timestamp").is_nil());
    }
}
