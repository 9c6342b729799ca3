//! Connections to the cluster listener before they prove the cluster token: a small budget
//! per peer address and one for everyone ([`Unauthenticated`]), so that sockets that never
//! say hello — anyone can open them, no token needed — cannot keep a worker out. A
//! connection holds a place ([`Place`]) from its accept until its hello proved the token
//! (or it ended, at the latest after `hello_timeout_ms`); one past either budget is closed
//! at once. Session permits (twice `max_workers`) are taken only after the token is proved.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, PoisonError};

/// The places of connections that have not proved the token (cheap to clone).
#[derive(Clone)]
pub(super) struct Unauthenticated {
    counts: Arc<Mutex<Counts>>,
    per_address: usize,
    total: usize,
}

#[derive(Default)]
struct Counts {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// Why a connection got no place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum NoPlace {
    /// Its address holds the most.
    #[error("{0} unauthenticated connections from this address (cluster.max_unauthenticated_per_address)")]
    Address(usize),
    /// Everyone together holds the most.
    #[error("{0} unauthenticated connections (cluster.max_unauthenticated)")]
    Total(usize),
}

/// A connection's place until it proves the token; given back on drop.
pub(super) struct Place {
    budget: Unauthenticated,
    address: IpAddr,
}

/// The address a budget is kept for: IPv4 as it is, IPv6 by its /64 (one host's usual
/// share), an IPv4-mapped IPv6 address as its IPv4 address.
fn budget_address(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

impl Unauthenticated {
    /// At most `per_address` places per address and `total` in all.
    pub(super) fn new(per_address: usize, total: usize) -> Self {
        Unauthenticated { counts: Arc::default(), per_address, total }
    }

    /// A place for a connection from `peer`, or why not.
    pub(super) fn take(&self, peer: IpAddr) -> Result<Place, NoPlace> {
        let address = budget_address(peer);
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if counts.total >= self.total {
            return Err(NoPlace::Total(self.total));
        }
        let held = counts.by_address.entry(address).or_default();
        if *held >= self.per_address {
            return Err(NoPlace::Address(self.per_address));
        }
        *held += 1;
        counts.total += 1;
        Ok(Place { budget: self.clone(), address })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut counts = self.budget.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.total -= 1;
        if let Some(held) = counts.by_address.get_mut(&self.address) {
            *held -= 1;
            if *held == 0 {
                counts.by_address.remove(&self.address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn each_address_has_its_budget_within_the_total_and_places_come_back() {
        let budget = Unauthenticated::new(2, 3);
        let a1 = budget.take(ip("10.0.0.1")).unwrap();
        let _a2 = budget.take(ip("10.0.0.1")).unwrap();
        assert_eq!(budget.take(ip("10.0.0.1")).err(), Some(NoPlace::Address(2)));
        // The same host as an IPv4-mapped IPv6 address shares the budget.
        assert_eq!(budget.take(ip("::ffff:10.0.0.1")).err(), Some(NoPlace::Address(2)));
        let _b1 = budget.take(ip("10.0.0.2")).unwrap();
        assert_eq!(budget.take(ip("10.0.0.3")).err(), Some(NoPlace::Total(3)));
        drop(a1);
        let _a3 = budget.take(ip("10.0.0.1")).unwrap();
        assert!(budget.counts.lock().unwrap().by_address.len() == 2);
    }

    #[test]
    fn an_ipv6_host_is_counted_by_its_64_prefix() {
        let budget = Unauthenticated::new(1, 10);
        let one = budget.take(ip("2001:db8:1:2::1")).unwrap();
        assert_eq!(budget.take(ip("2001:db8:1:2:ffff::9")).err(), Some(NoPlace::Address(1)));
        let other = budget.take(ip("2001:db8:1:3::1")).unwrap();
        drop((one, other));
        let counts = budget.counts.lock().unwrap();
        assert_eq!((counts.total, counts.by_address.len()), (0, 0));
    }
}
