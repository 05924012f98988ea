//! What bounds the runs a server holds: how many go at once (a semaphore in the engine), and how
//! many bytes of event logs all runs in memory hold together. Both are checked when a run starts
//! (429 beyond them); the memory budget is also charged per event, and a run that cannot get more
//! ends with `memory_exhausted`.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

/// The two limits, from the command line.
#[derive(Clone, Copy, Debug)]
pub struct RunLimits {
    /// Runs going at once; one more answers 429.
    pub max_running: usize,
    /// Bytes of event logs held by all runs in memory (going, or ended and still kept for late
    /// subscribers).
    pub memory_budget: usize,
}

/// Bytes charged by every run's log against one limit. Written by hand: an atomic counter with a
/// compare-and-swap is all it takes, and no crate offers a byte budget shared across owners.
#[derive(Debug)]
pub struct MemoryBudget {
    used: AtomicUsize,
    limit: usize,
}

impl MemoryBudget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(MemoryBudget {
            used: AtomicUsize::new(0),
            limit,
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

    /// Charges `bytes` even past the limit (a terminal event must always be logged).
    pub fn charge(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::AcqRel);
    }

    pub fn release(&self, bytes: usize) {
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
