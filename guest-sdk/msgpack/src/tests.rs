//! The fast path must give rmp_serde's result, value or error, for every input and type.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;

use proptest::prelude::*;
use rmpv::Value;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use super::*;

/// Decodes `bytes` both ways and compares the outcomes (errors by message).
fn same<'a, T: Deserialize<'a> + Debug + PartialEq>(bytes: &'a [u8]) {
    let fast = from_slice::<T>(bytes).map_err(|e| e.to_string());
    let slow = rmp_serde::from_slice::<T>(bytes).map_err(|e| e.to_string());
    // Debug as well: NaN is not equal to itself.
    assert!(
        fast == slow || format!("{fast:?}") == format!("{slow:?}"),
        "{} from {bytes:02x?}: fast {fast:?}, rmp_serde {slow:?}",
        std::any::type_name::<T>()
    );
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Bid<'a> {
    auction: u64,
    bidder: u64,
    price: u64,
    channel: &'a str,
    url: &'a str,
    date_time: u64,
    extra: &'a str,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Projection {
    auction: u64,
    price: i64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Event {
    Unit,
    Newtype(u32),
    Tuple(i8, String),
    Struct { a: bool, b: Option<f64> },
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Unit;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Wrapper(Vec<u8>);

#[derive(Debug, PartialEq, Deserialize)]
#[serde(untagged)]
enum Untagged {
    Number(i64),
    Text(String),
    List(Vec<Untagged>),
}

#[derive(Debug, PartialEq, Deserialize)]
struct Defaults {
    #[serde(default)]
    a: Option<u16>,
    #[serde(default, with = "serde_bytes_like")]
    b: Vec<u8>,
}

/// Bytes as MessagePack binary (`deserialize_bytes`), the way `serde_bytes` reads them.
mod serde_bytes_like {
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct Bytes;
        impl<'de> serde::de::Visitor<'de> for Bytes {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_str<E>(self, v: &str) -> Result<Vec<u8>, E> {
                Ok(v.as_bytes().to_vec())
            }
        }
        d.deserialize_bytes(Bytes)
    }
}

/// Every target type of the comparison, decoded from `bytes`.
fn all_types(bytes: &[u8]) {
    same::<Value>(bytes);
    same::<serde_json::Value>(bytes);
    same::<IgnoredAny>(bytes);
    same::<Bid<'_>>(bytes);
    same::<Projection>(bytes);
    same::<Event>(bytes);
    same::<Vec<Event>>(bytes);
    same::<Unit>(bytes);
    same::<Wrapper>(bytes);
    same::<Untagged>(bytes);
    same::<Defaults>(bytes);
    same::<Option<Option<u8>>>(bytes);
    same::<(u8, i64, f32)>(bytes);
    same::<Vec<u8>>(bytes);
    same::<&[u8]>(bytes);
    same::<&str>(bytes);
    same::<String>(bytes);
    same::<char>(bytes);
    same::<bool>(bytes);
    same::<u64>(bytes);
    same::<i8>(bytes);
    same::<i128>(bytes);
    same::<u128>(bytes);
    same::<f64>(bytes);
    same::<()>(bytes);
    same::<HashMap<String, u64>>(bytes);
    same::<BTreeMap<u8, Vec<bool>>>(bytes);
}

fn named<T: Serialize>(value: &T) -> Vec<u8> {
    rmp_serde::to_vec_named(value).unwrap()
}

fn value_bytes(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, value).unwrap();
    out
}

#[test]
fn known_values_decode_as_rmp_serde_does() {
    let bid = Bid {
        auction: 1000,
        bidder: u64::MAX,
        price: 7,
        channel: "channel-1",
        url: "https://www.nexmark.com/cfp/item.htm?query=1&channel_id=123456789",
        date_time: 1_700_000_000_000,
        extra: "ÿ padding padding padding padding padding padding",
    };
    let cases = vec![
        named(&bid),
        rmp_serde::to_vec(&bid).unwrap(),
        named(&Event::Unit),
        named(&Event::Newtype(5)),
        named(&Event::Tuple(-3, "x".into())),
        named(&Event::Struct { a: true, b: None }),
        named(&Event::Struct { a: false, b: Some(1.5) }),
        named(&vec![Event::Unit, Event::Newtype(u32::MAX)]),
        named(&Unit),
        named(&Wrapper(vec![1, 2, 3])),
        named(&Some(Some(3u8))),
        named(&(200u8, i64::MIN, 0.25f32)),
        named(&u128::MAX),
        named(&i128::MIN),
        named(&"a string"),
        named(&'é'),
        named(&f64::NAN),
        vec![0xc4, 3, 1, 2, 3],                               // bin 8
        vec![0xa3, 0xff, 0xfe, 0x41],                         // a string that is not UTF-8
        vec![0xd4, 1, 7],                                     // fixext 1
        vec![0xc7, 2, 9, 1, 2],                               // ext 8
        vec![0xc1],                                           // reserved
        vec![0x81, 0xa4, b'U', b'n', b'i', b't', 0xc0],       // {"Unit": nil}
        vec![0x81, 0xa4, b'U', b'n', b'i', b't', 0x01],       // {"Unit": 1}
        vec![0x82, 0xa1, b'a', 0x01, 0xa1, b'b', 0x02],       // a map of two entries as an enum
        vec![0xa7, b'N', b'e', b'w', b't', b'y', b'p', b'e'], // a unit variant that is not one
        vec![0x90],                                           // []
        vec![0x93, 0x01],                                     // an array shorter than it says
        vec![0xdc, 0x00, 0x02, 0xc3, 0xc2],                   // array 16
        vec![0xde, 0x00, 0x01, 0xa1, b'a', 0x05],             // map 16
        vec![0xdf, 0xff, 0xff, 0xff, 0xff],                   // map 32 of 2^32-1 entries, truncated
        vec![0xdb, 0xff, 0xff, 0xff, 0xff, b'a'],             // str 32 past the end
        vec![0x05, 0xff],                                     // trailing bytes
        vec![],
    ];
    for bytes in &cases {
        all_types(bytes);
    }
}

#[test]
fn nesting_stops_at_rmp_serde_depth_limit() {
    // Nested past the limit, and just under it; 1024 levels of unoptimised frames need a
    // larger stack than a test thread's.
    let deep = std::thread::Builder::new().stack_size(512 << 20).spawn(|| {
        for depth in [1022, 1023, 1024, 1100] {
            let mut bytes = vec![0x91; depth];
            bytes.push(0x01);
            same::<Value>(&bytes);
            same::<IgnoredAny>(&bytes);
            same::<serde_json::Value>(&bytes);
            assert_eq!(from_slice::<IgnoredAny>(&bytes).is_ok(), depth < 1024, "depth {depth}");
        }
    });
    deep.unwrap().join().unwrap();
}

#[test]
fn the_bid_borrows_and_skipped_fields_are_not_read() {
    let mut bytes = named(&Bid {
        auction: 246,
        bidder: 2,
        price: 99,
        channel: "c",
        url: "u",
        date_time: 3,
        extra: "not utf-8 soon",
    });
    // Break the UTF-8 of `extra`: a type that reads it fails, one that skips it does not.
    let at = bytes.len() - 1;
    bytes[at] = 0xff;
    assert_eq!(from_slice::<Projection>(&bytes).unwrap(), Projection { auction: 246, price: 99 });
    // rmp_serde would give that result too: check that the fast path itself produced it.
    let mut fast = Fast { input: &bytes, pos: 0, depth: MAX_DEPTH, failed: false };
    assert!(Projection::deserialize(&mut fast).is_ok() && !fast.failed);
    let mut fast = Fast { input: &bytes, pos: 0, depth: MAX_DEPTH, failed: false };
    assert!(Bid::deserialize(&mut fast).is_err());
    assert!(from_slice::<Bid<'_>>(&bytes).is_err());
    all_types(&bytes);
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Boolean),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..300).prop_map(Value::from),
        (-40i64..0).prop_map(Value::from),
        any::<f32>().prop_map(Value::F32),
        any::<f64>().prop_map(Value::F64),
        "[a-z]{0,3}".prop_map(Value::from),
        prop_oneof![
            Just("auction"),
            Just("price"),
            Just("bidder"),
            Just("extra"),
            Just("Unit"),
            Just("Newtype"),
            Just("Tuple"),
            Just("Struct"),
            Just("a"),
            Just("b"),
        ]
        .prop_map(Value::from),
        ".{0,40}".prop_map(Value::from),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Binary),
        // Multi-byte characters, which the damaged cases cut and break.
        "[é€😀a]{0,40}".prop_map(Value::from),
        (any::<i8>(), proptest::collection::vec(any::<u8>(), 0..20)).prop_map(|(t, d)| Value::Ext(t, d)),
    ];
    leaf.prop_recursive(4, 48, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::vec((inner.clone(), inner), 0..8).prop_map(Value::Map),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_values_decode_as_rmp_serde_does(value in arb_value()) {
        all_types(&value_bytes(&value));
    }

    #[test]
    fn damaged_values_decode_as_rmp_serde_does(
        value in arb_value(),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let bytes = value_bytes(&value);
        all_types(&bytes[..cut.index(bytes.len() + 1)]);
        let mut flipped = bytes.clone();
        if !flipped.is_empty() {
            let at = flip.index(flipped.len());
            flipped[at] = byte;
        }
        all_types(&flipped);
    }
}
