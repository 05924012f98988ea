//! Sign-in attempts, counted per name, per address, and per name from one address, with a delay
//! that grows with each failure instead of a hard lockout.
//!
//! - **Counted before verified.** [`Throttle::begin`] reserves the attempt on every key, under one
//!   lock, before the password is checked; a success refunds it. Sixty guesses sent at once on one
//!   name are all counted, so only the free ones are verified.
//! - **A small bound on verifications in flight.** An argon2id check takes 19 MiB and tens of
//!   milliseconds of CPU on the blocking pool: past [`Throttle::in_flight`] at once, an attempt is
//!   answered 429 `busy` at once, so a crowd of sign-ins cannot take the memory of the process.
//! - **Progressive delay.** Each key has a number of free failures; past them each further attempt
//!   must wait twice as long as the one before (15 s first), up to a cap ([`Policy`]). A name under
//!   attack from elsewhere waits at most a minute between attempts ([`NAME`]), and not at all from
//!   a place its owner has signed in from before (a known pair); the attacker's own address and
//!   pair of (name, address) wait up to fifteen minutes. A key that fails nothing for [`WINDOW`]
//!   forgets.
//! - **A bounded table.** At most [`MAX_KEYS`] keys, the least recently used evicted first (an
//!   attacker cycling names evicts only stale keys, never the one under attack); IPv6 addresses
//!   count by their /64, which one subscriber usually holds whole.
//!
//! Written here: tower's and governor's rate limiters count requests at a fixed rate, not failures
//! with a refund on success. The table is hashlink's `LruCache` (already in the tree through sqlx).

use std::{
    net::IpAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use hashlink::LruCache;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{Error, Result};

/// A key that fails nothing for this long starts again from zero.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// Keys kept at most; the least recently used go first.
pub const MAX_KEYS: usize = 100_000;

/// The first delay past a key's free failures; each further failure doubles it.
pub const FIRST_DELAY: Duration = Duration::from_secs(15);

/// How a kind of key is throttled: `free` failures, then a delay of 15 s, 30 s, 60 s, ... up to
/// `cap`.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub free: u32,
    pub cap: Duration,
}

/// One name from one address: the ordinary guesser.
pub const PAIR: Policy = Policy {
    free: 5,
    cap: WINDOW,
};
/// One address, any names (many names from one place).
pub const ADDRESS: Policy = Policy {
    free: 20,
    cap: WINDOW,
};
/// One name, any address: slows a distributed guesser without locking the owner out.
pub const NAME: Policy = Policy {
    free: 20,
    cap: Duration::from_secs(60),
};

impl Policy {
    fn delay(self, failures: u32) -> Duration {
        if failures < self.free {
            return Duration::ZERO;
        }
        let doublings = (failures - self.free).min(16);
        (FIRST_DELAY * (1u32 << doublings)).min(self.cap)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Name(String),
    Address(IpAddr),
    Pair(String, IpAddr),
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    failures: u32,
    last: Instant,
    /// A pair (name, address) that has signed in: it does not wait for the name's delay, so
    /// guessers elsewhere cannot keep the owner out of a place they signed in from before.
    known: bool,
}

pub struct Throttle {
    entries: Mutex<LruCache<Key, Entry>>,
    verifying: Arc<Semaphore>,
}

/// A counted attempt holding one verification slot; [`Attempt::succeeded`] refunds it.
pub struct Attempt<'a> {
    throttle: &'a Throttle,
    keys: Vec<Key>,
    _slot: OwnedSemaphorePermit,
}

impl Default for Throttle {
    fn default() -> Self {
        Self::new(Self::in_flight(), MAX_KEYS)
    }
}

impl Throttle {
    pub fn new(in_flight: usize, max_keys: usize) -> Self {
        Throttle {
            entries: Mutex::new(LruCache::new(max_keys.max(1))),
            verifying: Arc::new(Semaphore::new(in_flight.max(1))),
        }
    }

    /// Verifications at once: two per core, between 2 and 16 (at most 16 x 19 MiB).
    pub fn in_flight() -> usize {
        std::thread::available_parallelism()
            .map_or(2, |cores| cores.get() * 2)
            .clamp(2, 16)
    }

    /// Counts an attempt on every key before the password is checked, or says how long to wait.
    pub fn begin(&self, name: &str, address: Option<IpAddr>) -> Result<Attempt<'_>> {
        let slot = self
            .verifying
            .clone()
            .try_acquire_owned()
            .map_err(|_| Error::Throttled {
                code: "busy",
                message: "too many sign-ins at once; try again in a moment".into(),
                retry_after_secs: 1,
            })?;
        let keys = keys(name, address);
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let known = keys.iter().any(|(key, _)| {
            matches!(key, Key::Pair(..)) && entries.get(key).is_some_and(|e| e.known)
        });
        let mut wait = Duration::ZERO;
        for (key, policy) in &keys {
            if known && matches!(key, Key::Name(_)) {
                continue;
            }
            if let Some(entry) = entries.get(key).filter(|e| now - e.last < WINDOW) {
                let ready = entry.last + policy.delay(entry.failures);
                wait = wait.max(ready.saturating_duration_since(now));
            }
        }
        if !wait.is_zero() {
            return Err(Error::Throttled {
                code: "too_many_attempts",
                message: "too many failed sign-ins; try again later".into(),
                retry_after_secs: wait.as_secs_f64().ceil() as u64,
            });
        }
        for (key, _) in &keys {
            let previous = entries.get(key).copied();
            let known = previous.is_some_and(|e| e.known);
            let failures = previous
                .filter(|e| now - e.last < WINDOW)
                .map_or(0, |e| e.failures);
            entries.insert(
                key.clone(),
                Entry {
                    failures: failures.saturating_add(1),
                    last: now,
                    known,
                },
            );
        }
        Ok(Attempt {
            throttle: self,
            keys: keys.into_iter().map(|(key, _)| key).collect(),
            _slot: slot,
        })
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Attempt<'_> {
    /// The password was right: the name forgets its failures and the pair becomes known (see
    /// [`Entry::known`]); the address gets this attempt back (a guesser with an account of their
    /// own cannot clear their address's count).
    pub fn succeeded(self) {
        let mut entries = self
            .throttle
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for key in &self.keys {
            match key {
                Key::Address(_) => {
                    if let Some(entry) = entries.get_mut(key) {
                        entry.failures = entry.failures.saturating_sub(1);
                    }
                }
                Key::Name(_) => {
                    entries.remove(key);
                }
                Key::Pair(..) => {
                    entries.insert(
                        key.clone(),
                        Entry {
                            failures: 0,
                            last: Instant::now(),
                            known: true,
                        },
                    );
                }
            }
        }
    }
}

fn keys(name: &str, address: Option<IpAddr>) -> Vec<(Key, Policy)> {
    let name = name.trim().to_lowercase();
    let mut keys = vec![(Key::Name(name.clone()), NAME)];
    if let Some(address) = address.map(network) {
        keys.push((Key::Address(address), ADDRESS));
        keys.push((Key::Pair(name, address), PAIR));
    }
    keys
}

/// The address as counted: IPv4 (and IPv4 in IPv6) whole, IPv6 by its /64.
pub fn network(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> Option<IpAddr> {
        text.parse().ok()
    }

    #[test]
    fn the_delay_doubles_past_the_free_failures_up_to_its_cap() {
        assert_eq!(PAIR.delay(4), Duration::ZERO);
        assert_eq!(PAIR.delay(5), Duration::from_secs(15));
        assert_eq!(PAIR.delay(7), Duration::from_secs(60));
        assert_eq!(PAIR.delay(40), WINDOW);
        assert_eq!(NAME.delay(40), Duration::from_secs(60));
    }

    #[test]
    fn attempts_are_counted_before_they_end_and_a_success_refunds() {
        let throttle = Throttle::new(100, 1000);
        let held: Vec<_> = (0..5)
            .map(|_| throttle.begin("alice", ip("10.0.0.1")).expect("free"))
            .collect();
        assert!(
            throttle.begin("alice", ip("10.0.0.1")).is_err(),
            "five in flight already count"
        );
        assert!(
            throttle.begin("alice", ip("10.0.0.2")).is_ok(),
            "the owner from elsewhere is not locked out"
        );
        drop(held);
        throttle
            .begin("bob", ip("10.0.0.3"))
            .expect("free")
            .succeeded();
        assert!(throttle.begin("bob", ip("10.0.0.3")).is_ok());
    }

    #[test]
    fn guessers_elsewhere_do_not_keep_the_owner_out_of_a_place_they_signed_in_from() {
        let throttle = Throttle::new(100, 1000);
        throttle
            .begin("carol", ip("10.0.0.9"))
            .expect("free")
            .succeeded();
        for n in 0..40u32 {
            drop(throttle.begin("carol", ip(&format!("10.0.1.{n}"))));
        }
        assert!(
            throttle.begin("carol", ip("10.0.0.50")).is_err(),
            "a new place waits for the name's delay"
        );
        assert!(
            throttle.begin("carol", ip("10.0.0.9")).is_ok(),
            "the owner's known place does not"
        );
    }

    #[test]
    fn verifications_in_flight_are_bounded() {
        let throttle = Throttle::new(2, 1000);
        let _a = throttle.begin("a", None).expect("one");
        let _b = throttle.begin("b", None).expect("two");
        let Err(Error::Throttled { code, .. }) = throttle.begin("c", None) else {
            panic!("a third at once is refused");
        };
        assert_eq!(code, "busy");
    }

    #[test]
    fn ipv6_counts_by_its_64_and_the_table_evicts_the_least_recent() {
        assert_eq!(network("2001:db8:1:2:3:4:5:6".parse().expect("ip")), {
            "2001:db8:1:2::".parse::<IpAddr>().expect("ip")
        });
        let throttle = Throttle::new(100, 50);
        for n in 0..20u32 {
            let address = ip(&format!("2001:db8:1:2::{n:x}"));
            drop(throttle.begin(&format!("name{n}"), address));
        }
        let Err(Error::Throttled { code, .. }) = throttle.begin("x", ip("2001:db8:1:2::ffff"))
        else {
            panic!("twenty failures from one /64 slow the next");
        };
        assert_eq!(code, "too_many_attempts");
        for _ in 0..5 {
            drop(throttle.begin("victim", ip("10.1.1.1")).expect("free"));
        }
        for n in 0..200u32 {
            drop(throttle.begin(&format!("cycle{n}"), None));
            assert!(
                throttle.begin("victim", ip("10.1.1.1")).is_err(),
                "the key under attack is never evicted (round {n})"
            );
        }
        assert!(throttle.len() <= 50);
    }
}
