//! The MessagePack body of `POST /api/v1/streams/{name}/records`
//! (`Content-Type: application/msgpack`): decoded as the route does
//! (`AppendBody::encoded`: each key and value encoded for the store as it is read, which
//! must be what its JSON encodes to) and read back as JSON as a stream read does (`msgpack_to_json`),
//! which also runs on the raw input (a job's sink may store any bytes), and as a page of
//! stream records writes it (`write_msgpack_as_json`: the same JSON, streamed, within a cap
//! taken from the input's length).

#![no_main]

use libfuzzer_sys::fuzz_target;
use weir::api::model::AppendBody;
use weir::server::msgpack::{json_to_msgpack, msgpack_to_json, write_msgpack_as_json};

fuzz_target!(|data: &[u8]| {
    let _ = msgpack_to_json(data);
    let cap = data.len() * 3;
    let mut page = b"[".to_vec();
    match write_msgpack_as_json(data, &mut page, cap) {
        Ok(()) => {
            assert!(page.len() <= cap + 1, "the text passed its cap");
            // serde_json's own reader stops at 128 levels; the text may nest a little deeper
            // (128 levels of MessagePack, and an ext's `[type, [bytes]]`).
            if let Err(e) = serde_json::from_slice::<serde_json::Value>(&page[1..]) {
                assert!(e.to_string().contains("recursion limit"), "the text is not JSON: {e}");
            }
        }
        Err(_) => assert_eq!(page, b"[", "a refused write leaves the page as it was"),
    }
    let Ok(records) = AppendBody::encoded(data, true) else { return };
    for record in records {
        for bytes in [&record.key, &record.value] {
            let json = msgpack_to_json(bytes);
            // What was encoded as it was read is what its JSON encodes to.
            if !bytes.is_empty() {
                assert_eq!(&json_to_msgpack(&json).expect("a decoded value encodes"), bytes);
            }
        }
    }
});
