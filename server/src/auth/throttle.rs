//! Failed sign-ins, counted per name and per address over a window: past the limit, further
//! attempts are refused (429 with `Retry-After`) until the oldest failure leaves the window.
//! Written here: a map of recent instants is all it takes, and tower's rate limiters count
//! requests, not failures.

use std::{
    collections::{HashMap, VecDeque},
    net::IpAddr,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::error::{Error, Result};

pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// Failures allowed per name in the window.
pub const PER_NAME: usize = 5;
/// Failures allowed per address in the window (many names from one place).
pub const PER_ADDRESS: usize = 20;

#[derive(Default)]
pub struct Throttle {
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl Throttle {
    fn keys(name: &str, peer: Option<IpAddr>) -> [(String, usize); 2] {
        [
            (format!("name:{}", name.trim().to_lowercase()), PER_NAME),
            (
                format!("addr:{}", peer.map(|p| p.to_string()).unwrap_or_default()),
                PER_ADDRESS,
            ),
        ]
    }

    pub fn check(&self, name: &str, peer: Option<IpAddr>) -> Result<()> {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        for (key, limit) in Self::keys(name, peer) {
            let Some(times) = failures.get_mut(&key) else {
                continue;
            };
            while times
                .front()
                .is_some_and(|t| now.duration_since(*t) >= WINDOW)
            {
                times.pop_front();
            }
            if times.len() >= limit {
                let wait = times.front().map_or(WINDOW, |oldest| {
                    WINDOW.saturating_sub(now.duration_since(*oldest))
                });
                return Err(Error::Throttled {
                    code: "too_many_attempts",
                    message: "too many failed sign-ins; try again later".into(),
                    retry_after_secs: wait.as_secs().max(1),
                });
            }
        }
        Ok(())
    }

    pub fn failed(&self, name: &str, peer: Option<IpAddr>) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        // Bounded: an attacker cycling names would otherwise grow the map forever.
        if failures.len() > 100_000 {
            failures.clear();
        }
        for (key, _) in Self::keys(name, peer) {
            failures.entry(key).or_default().push_back(Instant::now());
        }
    }

    pub fn succeeded(&self, name: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        failures.remove(&format!("name:{}", name.trim().to_lowercase()));
    }
}
