//! Key groups: the unit in which keyed state is divided and moved when a job rescales.
//!
//! A key belongs to key group `hash(key) % max_parallelism`; subtask `i` of `p` owns a
//! contiguous range of key groups (the same arithmetic as Flink's `KeyGroupRangeAssignment`).

use std::ops::Range;

/// The stable 64-bit hash of a record key used for partitioning and key groups
/// (XXH3-64, seed 0: fixed by its specification, so persisted assignments stay valid).
pub fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// The key group of `key`.
pub fn key_group(key: &[u8], max_parallelism: u32) -> u32 {
    (key_hash(key) % u64::from(max_parallelism)) as u32
}

/// The subtask (of `parallelism`) that owns key group `group`.
pub fn subtask_for_key_group(group: u32, parallelism: u32, max_parallelism: u32) -> u32 {
    (u64::from(group) * u64::from(parallelism) / u64::from(max_parallelism)) as u32
}

/// The key groups owned by subtask `index` of `parallelism`, as a half-open range.
pub fn key_group_range(index: u32, parallelism: u32, max_parallelism: u32) -> Range<u32> {
    let (i, p, m) = (u64::from(index), u64::from(parallelism), u64::from(max_parallelism));
    let start = (i * m).div_ceil(p);
    let end = ((i + 1) * m - 1) / p + 1;
    start as u32..end as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every key group is owned by exactly one subtask, and the owner computed from the
        /// group agrees with the ranges.
        #[test]
        fn ranges_partition_key_groups(max in 1u32..300, p_seed in 1u32..300) {
            let p = 1 + (p_seed - 1) % max;
            let mut next = 0;
            for i in 0..p {
                let r = key_group_range(i, p, max);
                prop_assert_eq!(r.start, next);
                prop_assert!(r.end > r.start);
                for g in r.clone() {
                    prop_assert_eq!(subtask_for_key_group(g, p, max), i);
                }
                next = r.end;
            }
            prop_assert_eq!(next, max);
        }
    }

    #[test]
    fn hash_is_stable() {
        // Persisted state depends on this value never changing.
        assert_eq!(key_hash(b"weir"), xxhash_rust::xxh3::xxh3_64(b"weir"));
        assert_eq!(key_group(b"", 128), (xxhash_rust::xxh3::xxh3_64(b"") % 128) as u32);
    }
}
