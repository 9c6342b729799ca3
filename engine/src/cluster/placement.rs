//! Placement: which worker runs each subtask of a job's attempt.
//!
//! As Flink's default slot sharing: a job needs as many slots as its largest parallelism,
//! and slot `i` holds subtask `i` of every node that has one — so a forward edge (subtask
//! `i` to subtask `i`) never leaves its worker, and a pipeline's stages share a slot's
//! core. Slots are handed out one at a time, each to the worker with room that holds the
//! fewest of this job's slots so far (ties: the most room left, then the lowest id), so a
//! job's subtasks are spread evenly over the workers that can take them (Flink's
//! `cluster.evenly-spread-out-slots`), and a job that needs more slots than are free is
//! refused with the numbers rather than queued.

use std::collections::BTreeMap;

pub use crate::runtime::PlacementError;

/// Where each subtask runs: per node (in plan order), per subtask, a worker id.
pub type Assignment = Vec<Vec<u64>>;

/// Places the subtasks of nodes of the given parallelisms on workers with the given free
/// slots (worker id → free slots). Deterministic: the same input gives the same placement.
pub fn place(parallelisms: &[u32], free: &BTreeMap<u64, u32>) -> Result<Assignment, PlacementError> {
    let needed = parallelisms.iter().copied().max().unwrap_or(0);
    let total: u32 = free.values().fold(0u32, |a, &b| a.saturating_add(b));
    if needed > total {
        return Err(PlacementError::NotEnoughSlots { needed, free: total });
    }
    // (slots of this job, room left) per worker.
    let mut load: BTreeMap<u64, (u32, u32)> = free.iter().map(|(&w, &room)| (w, (0, room))).collect();
    let mut slots = Vec::with_capacity(needed as usize);
    for _ in 0..needed {
        let (&worker, _) = load
            .iter()
            .filter(|(_, (_, room))| *room > 0)
            .min_by(|(a_id, (a_used, a_room)), (b_id, (b_used, b_room))| {
                a_used.cmp(b_used).then(b_room.cmp(a_room)).then(a_id.cmp(b_id))
            })
            .expect("a worker with a free slot: the total was checked");
        let (used, room) = load.get_mut(&worker).expect("listed");
        *used += 1;
        *room -= 1;
        slots.push(worker);
    }
    Ok(parallelisms.iter().map(|&p| slots[..p as usize].to_vec()).collect())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_pipeline_shares_slots_spread_over_the_workers() {
        let free = BTreeMap::from([(1, 4), (2, 4), (3, 2)]);
        let placed = place(&[3, 6, 3], &free).unwrap();
        assert_eq!(placed[0], [1, 2, 3], "slot i goes to the worker with the fewest of the job's slots");
        assert_eq!(placed[1], [1, 2, 3, 1, 2, 3]);
        assert_eq!(placed[2], placed[0], "subtask i of every node shares slot i");
        // Room runs out on worker 3: the rest go to 1 and 2.
        assert_eq!(place(&[8], &free).unwrap()[0], [1, 2, 3, 1, 2, 3, 1, 2]);
        let refused = place(&[11], &free).unwrap_err();
        assert_eq!(refused, PlacementError::NotEnoughSlots { needed: 11, free: 10 });
        assert_eq!(place(&[], &BTreeMap::new()).unwrap(), Assignment::new());
    }

    proptest! {
        #[test]
        fn placements_fit_share_and_spread(
            parallelisms in prop::collection::vec(1u32..12, 1..5),
            free in prop::collection::btree_map(1u64..20, 0u32..6, 0..6),
        ) {
            let needed = *parallelisms.iter().max().unwrap();
            let total: u32 = free.values().sum();
            let placed = match place(&parallelisms, &free) {
                Ok(placed) => placed,
                Err(PlacementError::NotEnoughSlots { needed: n, free: f }) => {
                    prop_assert_eq!((n, f), (needed, total));
                    prop_assert!(needed > total);
                    return Ok(());
                }
            };
            prop_assert!(needed <= total);
            // Every subtask placed; subtask i of every node with the same worker.
            let widest = placed.iter().max_by_key(|p| p.len()).unwrap();
            for (node, p) in parallelisms.iter().zip(&placed) {
                prop_assert_eq!(p.len(), *node as usize);
                prop_assert_eq!(&p[..], &widest[..p.len()]);
            }
            // No worker past its free slots, and used counts as even as the room allows: a
            // worker with room left never has two fewer than another.
            let mut used: BTreeMap<u64, u32> = BTreeMap::new();
            for &w in widest {
                *used.entry(w).or_default() += 1;
            }
            for (w, &n) in &used {
                prop_assert!(n <= free[w]);
            }
            for (w, &room) in &free {
                let mine = used.get(w).copied().unwrap_or(0);
                if mine < room {
                    prop_assert!(used.values().all(|&other| other <= mine + 1), "{:?} {:?}", used, free);
                }
            }
        }
    }
}
