//! The record bytes of a Kafka fetch response, as a `kafka` source decodes them
//! (`decode_records`: batch headers and record counts checked, each codec decompressed within
//! its bound, records decoded): whatever a tenant's producer wrote to a granted topic. A
//! decompression bomb must be refused, not inflated.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use weir::connectors::kafka::client::decode_records;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, records)) = data.split_first() else { return };
    if let Ok(records) = decode_records(Bytes::copy_from_slice(records), 0, mode & 1 == 1) {
        for r in records {
            assert!(r.offset >= 0, "offsets asked from 0 on");
        }
    }
});
