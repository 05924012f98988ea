//! What bounds the runs a server holds: how many go at once, and how many bytes of event logs all
//! runs in memory hold together. Both are checked when a run starts (429 beyond them); the memory
//! budget is also charged per event, and a run that cannot get more ends with `memory_exhausted`.

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

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            max_running: 4_000,
            memory_budget: 1024 * 1024 * 1024,
        }
    }
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

/// Counts the runs going; a [`RunSlot`] is one of them until it is dropped.
#[derive(Debug, Default)]
pub struct RunSlots {
    running: Arc<AtomicUsize>,
}

pub struct RunSlot {
    running: Arc<AtomicUsize>,
}

impl RunSlots {
    /// A slot, or `None` when `max` runs are going.
    pub fn try_take(&self, max: usize) -> Option<RunSlot> {
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
                (running < max).then_some(running + 1)
            })
            .ok()
            .map(|_| RunSlot {
                running: self.running.clone(),
            })
    }

    pub fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refuses_past_its_limit_and_slots_come_back_when_dropped() {
        let budget = MemoryBudget::new(100);
        assert!(budget.try_charge(60));
        assert!(!budget.try_charge(41));
        budget.charge(50);
        assert_eq!(budget.used(), 110);
        budget.release(110);
        assert_eq!(budget.used(), 0);

        let slots = RunSlots::default();
        let first = slots.try_take(2).expect("one");
        let _second = slots.try_take(2).expect("two");
        assert!(slots.try_take(2).is_none());
        drop(first);
        assert!(slots.try_take(2).is_some());
    }
}
