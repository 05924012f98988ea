//! Glassbox beside a reference server (`--reference`, e.g. the plain Node.js SSE server of
//! `bench/reference/node-sse.mjs`): each measurement runs against Glassbox and then against the
//! reference, with the same generator, and the rows end with the ratios issue 37's targets are
//! stated in (Glassbox's figure over the reference's).

use crate::{burst, client::StreamFormat, streams, Env};

/// `streams` at each count, Glassbox then the reference, then one table of both.
pub async fn streams(
    ours: &Env,
    reference: &Env,
    counts: &[usize],
    (rate, seconds): (u32, u64),
) -> Result<(), String> {
    let mut rows = Vec::new();
    for &count in counts {
        let glassbox = streams::run(
            ours,
            count,
            (rate, seconds),
            (false, None),
            StreamFormat::Glassbox,
        )
        .await?;
        let other = streams::run(
            reference,
            count,
            (rate, seconds),
            (false, None),
            StreamFormat::Glassbox,
        )
        .await?;
        rows.push((count, glassbox, other));
    }
    println!("| streams x events/s | Glassbox p99 / events/s / CPU per event | reference p99 / events/s / CPU per event | p99 ratio | events/s ratio | CPU per event ratio |");
    println!("|---|---|---|---|---|---|");
    let side = |row: &streams::Row| {
        format!(
            "{:.2} ms / {:.0} / {:.1} µs",
            row.p99_ms, row.events_per_second, row.cpu_us_per_event
        )
    };
    for (count, glassbox, other) in rows {
        println!(
            "| {count} x {rate} | {} | {} | {:.2} | {:.2} | {:.2} |",
            side(&glassbox),
            side(&other),
            glassbox.p99_ms / other.p99_ms,
            glassbox.events_per_second / other.events_per_second,
            glassbox.cpu_us_per_event / other.cpu_us_per_event
        );
    }
    Ok(())
}

/// One burst against Glassbox, then the same against the reference, then both as a table.
pub async fn burst(
    ours: &Env,
    reference: &Env,
    (runs, over): (usize, f64),
    (deltas, rate): (u32, u32),
) -> Result<(), String> {
    let glassbox = burst::run(ours, runs, over, deltas, rate).await?;
    let other = burst::run(reference, runs, over, deltas, rate).await?;
    println!("| runs over s | Glassbox first event p50 / p99, per-event p99 | reference first event p50 / p99, per-event p99 | first event p99 ratio | per-event p99 ratio |");
    println!("|---|---|---|---|---|");
    let side = |row: &burst::Row| {
        format!(
            "{:.1} / {:.1} ms, {:.2} ms",
            row.first_p50_ms, row.first_p99_ms, row.p99_ms
        )
    };
    println!(
        "| {runs} over {over} | {} | {} | {:.2} | {:.2} |",
        side(&glassbox),
        side(&other),
        glassbox.first_p99_ms / other.first_p99_ms,
        glassbox.p99_ms / other.p99_ms
    );
    Ok(())
}
