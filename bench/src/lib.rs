//! Shared by the load generator and the micro-benchmarks: representative runs, and percentiles.

#![warn(clippy::too_many_lines)]

pub mod fixtures;

/// The value at quantile `q` (0.0 ..= 1.0) of `sorted`, nearest rank; 0 when empty.
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.saturating_sub(1).min(sorted.len() - 1)]
}

/// `p50 / p99 / max` of unsorted samples, sorted in place.
pub fn summary(samples: &mut [u64]) -> (u64, u64, u64) {
    samples.sort_unstable();
    (
        percentile(samples, 0.50),
        percentile(samples, 0.99),
        samples.last().copied().unwrap_or(0),
    )
}

/// Repeatable pseudo-random delays (a linear congruential generator): benchmarks vary the moment
/// they act at, the same way on every run.
pub struct Jitter(u32);

impl Jitter {
    pub fn new(seed: u32) -> Self {
        Jitter(seed)
    }

    /// A value in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        u64::from(self.0 >> 16) % bound.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(summary(&mut samples), (50, 99, 100));
        assert_eq!(percentile(&[], 0.5), 0);
        assert_eq!(percentile(&[7], 0.99), 7);
    }
}
