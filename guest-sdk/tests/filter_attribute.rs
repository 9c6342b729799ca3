//! The `#[filter]` attribute end to end, natively: one exported operator per test binary.

use weir_guest::Error;
use weir_guest::testing::{Harness, TestRecord};

/// Keeps even numbers; fails on 13 (a fallible filter).
#[weir_guest::filter(name = "even")]
fn even(n: &u64, record: &weir_guest::Record<'_>) -> Result<bool, Error> {
    if *n == 13 {
        return Err(Error::other(format!("unlucky record {}", record.index())));
    }
    Ok(n.is_multiple_of(2))
}

#[test]
fn forwards_passing_records_unchanged() {
    let mut harness = Harness::<even>::new();
    harness.open("{}").unwrap();
    let input = [
        TestRecord::keyed("a", &2u64, 1),
        TestRecord::unkeyed(&3u64, 2),
        TestRecord::keyed(&[1, 2], &4u64, 3),
    ];
    assert_eq!(harness.process(&input).unwrap(), [input[0].clone(), input[2].clone()]);
}

#[test]
fn errors_and_undecodable_values_fail_the_batch() {
    let mut harness = Harness::<even>::new();
    let err = harness.process(&[TestRecord::unkeyed(&2u64, 0), TestRecord::unkeyed(&13u64, 0)]).unwrap_err();
    assert_eq!(err, Error::other("unlucky record 1"));
    let err = harness.process(&[TestRecord::unkeyed(&-1i64, 0)]).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(m) if m.starts_with("input 0, record 0: ")));
}
