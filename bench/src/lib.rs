//! Shared by the load generator and the micro-benchmarks: representative runs, and percentiles.

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
