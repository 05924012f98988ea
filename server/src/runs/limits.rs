//! What bounds the runs a server holds: how many go at once (a semaphore in the engine), and how
//! many bytes of event logs (and the messages they build) all runs in memory hold together. Both
//! are checked when a run starts (429 beyond them); the memory budget is also charged per event,
//! and a run that cannot get more ends with `memory_exhausted`; its terminal event is cut to what
//! is left (see `terminal`).

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use crate::error::Error;

/// The two limits, from the command line.
#[derive(Clone, Copy, Debug)]
pub struct RunLimits {
    /// Runs going at once; one more answers 429.
    pub max_running: usize,
    /// Bytes of event logs, and of the messages they build, held by all runs in memory (going, or
    /// ended and still kept for late subscribers).
    pub memory_budget: usize,
    /// What one signed-in user may run.
    pub per_user: UserLimits,
}

/// One signed-in user's share (0: no limit). The single user of `--auth none` has none.
#[derive(Clone, Copy, Debug, Default)]
pub struct UserLimits {
    /// Runs going at once.
    pub max_running: usize,
    /// Runs started in any minute.
    pub per_minute: usize,
}

/// Each user's runs going and recent starts. Written by hand: a counter and a queue of instants
/// per user; the rate-limit crates count requests per key, not runs that end later.
#[derive(Debug, Default)]
pub struct UserRuns {
    limits: UserLimits,
    users: Mutex<HashMap<String, UserState>>,
}

#[derive(Debug, Default)]
struct UserState {
    running: usize,
    starts: VecDeque<Instant>,
}

/// A user's hold on one of their runs; given back when dropped (the run is stored).
#[derive(Debug)]
pub struct UserSlot {
    runs: Arc<UserRuns>,
    owner: String,
}

impl Drop for UserSlot {
    fn drop(&mut self) {
        let mut users = self.runs.users.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(state) = users.get_mut(&self.owner) {
            state.running = state.running.saturating_sub(1);
            if state.running == 0 && state.starts.is_empty() {
                users.remove(&self.owner);
            }
        }
    }
}

impl UserRuns {
    pub fn new(limits: UserLimits) -> Arc<Self> {
        Arc::new(UserRuns {
            limits,
            users: Mutex::default(),
        })
    }

    /// A slot for one more run of `owner`, or 429 `user_limit` with how long to wait.
    pub fn take(self: &Arc<Self>, owner: &str) -> Result<UserSlot, Error> {
        const MINUTE: Duration = Duration::from_secs(60);
        let mut users = self.users.lock().unwrap_or_else(|p| p.into_inner());
        let state = users.entry(owner.to_owned()).or_default();
        let now = Instant::now();
        while state
            .starts
            .front()
            .is_some_and(|t| now.duration_since(*t) >= MINUTE)
        {
            state.starts.pop_front();
        }
        let limited = |what: String, retry_after_secs: u64| Error::Throttled {
            code: "user_limit",
            message: what,
            retry_after_secs,
        };
        if self.limits.max_running > 0 && state.running >= self.limits.max_running {
            return Err(limited(
                format!(
                    "you have {} runs going, as many as one person may; stop one or wait",
                    state.running
                ),
                crate::error::RETRY_AFTER_SECS,
            ));
        }
        if self.limits.per_minute > 0 && state.starts.len() >= self.limits.per_minute {
            let wait = state.starts.front().map_or(MINUTE, |oldest| {
                MINUTE.saturating_sub(now.duration_since(*oldest))
            });
            return Err(limited(
                format!(
                    "you started {} runs in the last minute, as many as one person may",
                    state.starts.len()
                ),
                wait.as_secs().max(1),
            ));
        }
        state.running += 1;
        state.starts.push_back(now);
        Ok(UserSlot {
            runs: self.clone(),
            owner: owner.to_owned(),
        })
    }
}

/// Bytes charged by every run's log and message against one limit. Written by hand: an atomic counter with a
/// compare-and-swap is all it takes, and no crate offers a byte budget shared across owners.
#[derive(Debug)]
pub struct MemoryBudget {
    used: AtomicUsize,
    limit: usize,
    /// Bytes released since the allocator was last asked to give memory back (see [`trimmer`]).
    released: AtomicUsize,
}

/// After this many bytes of run logs are freed, the allocator is asked to return free memory to
/// the system.
pub const TRIM_AFTER_BYTES: usize = 64 * 1024 * 1024;
const TRIM_CHECK: Duration = Duration::from_secs(2);

/// Gives freed run logs back to the system. glibc's allocator keeps freed memory in its arenas:
/// after 41 runs with 29 MB logs ended, RSS stayed at 4.4 GB (issue 12). Every few seconds, once
/// enough has been released (or freeing has paused), `malloc_trim(0)` runs on a blocking thread.
/// Ends with the budget.
pub fn trimmer(budget: &Arc<MemoryBudget>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let budget = Arc::downgrade(budget);
    runtime.spawn(async move {
        let mut seen = 0;
        loop {
            tokio::time::sleep(TRIM_CHECK).await;
            let Some(budget) = budget.upgrade() else {
                return;
            };
            // Enough freed, or whatever was freed once freeing has paused for a check.
            let released = budget.released.load(Ordering::Acquire);
            let settled = released > 0 && released == seen;
            seen = released;
            if released < TRIM_AFTER_BYTES && !settled {
                continue;
            }
            seen = 0;
            budget.released.store(0, Ordering::Release);
            drop(budget);
            let _ = tokio::task::spawn_blocking(trim_allocator).await;
        }
    });
}

/// Returns the allocator's free memory to the system (glibc; elsewhere nothing).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn trim_allocator() {
    // SAFETY: malloc_trim only returns free pages of the allocator's own heaps to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim_allocator() {}

impl MemoryBudget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(MemoryBudget {
            used: AtomicUsize::new(0),
            limit,
            released: AtomicUsize::new(0),
        })
    }

    /// Charges `bytes` unless that would pass the limit.
    pub fn try_charge(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.limit)
            })
            .is_ok()
    }

    /// Charges `bytes` even past the limit: a terminal event must always be logged. It is cut to
    /// what is left first, so one run passes the limit by at most `MIN_TERMINAL_BYTES` (4 KiB).
    /// The room is read, then charged: runs that end at the same moment may each take the room
    /// left, so the shared budget can be passed by that room once per run ending at once.
    pub fn charge(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::AcqRel);
    }

    pub fn release(&self, bytes: usize) {
        self.released.fetch_add(bytes, Ordering::AcqRel);
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                Some(used.saturating_sub(bytes))
            });
    }

    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refuses_past_its_limit_and_gives_back_what_is_released() {
        let budget = MemoryBudget::new(100);
        assert!(budget.try_charge(60));
        assert!(!budget.try_charge(41));
        budget.charge(50);
        assert_eq!(budget.used(), 110);
        budget.release(110);
        assert_eq!(budget.used(), 0);
    }
}
