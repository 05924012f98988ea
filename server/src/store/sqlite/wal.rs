//! Moves the WAL into the database file off the writer's path.
//!
//! By default SQLite checkpoints inside the commit that crosses 1,000 WAL pages: that commit copies
//! the pages and fsyncs the database file, and every run start queued behind it waits (under a
//! burst of new runs, that was the tail of the time to the first event). Here a connection of its
//! own runs `PRAGMA wal_checkpoint(PASSIVE)` every [`INTERVAL`]: a passive checkpoint takes no
//! lock the writer needs, so commits go on while it copies and syncs. It moves only data already
//! committed; it writes no rows, so the store still has one writer of data.
//!
//! The writer keeps an automatic checkpoint at [`WRITER_AUTOCHECKPOINT_PAGES`] as the bound if
//! this one falls behind, and `journal_size_limit` gives the WAL file back after it is reset.
//!
//! While writes never pause (a burst of new runs, thousands of streaming runs), a passive
//! checkpoint never finds the whole WAL copied when a write begins, so the WAL does not restart
//! from its beginning until it reaches that bound. Then the writer's own checkpoint copies what
//! the passive ones have not yet copied and syncs both files, while every queued run start
//! waits. Every [`INTERVAL`], that rest is small: with 500 ms it was a 45-50 ms stall of the
//! writer one second into a burst of 1,000 starts, the first event p99 of most bursts
//! (docs/benchmarks.md); with 100 ms the stall is 15-17 ms.

use std::time::Duration;

use sqlx::{sqlite::SqliteConnectOptions, ConnectOptions, Connection, SqliteConnection};
use tokio_util::sync::CancellationToken;

/// How often committed pages are moved from the WAL to the database file. With nothing new
/// to copy, a checkpoint costs about 0.2 ms and no sync.
pub const INTERVAL: Duration = Duration::from_millis(100);
/// The writer checkpoints by itself only if the WAL reaches this (about 64 MiB of 4 KiB pages).
pub const WRITER_AUTOCHECKPOINT_PAGES: u32 = 16_384;
/// A WAL file larger than this is truncated to it after a reset.
pub const JOURNAL_SIZE_LIMIT_BYTES: u64 = 64 * 1024 * 1024;

/// Starts the checkpoints on the current runtime (sqlx runs SQLite on a thread of its own, so no
/// async worker waits for the copy or the fsync). Ends when `stop` is cancelled.
pub async fn spawn(options: SqliteConnectOptions, stop: CancellationToken) -> sqlx::Result<()> {
    let mut connection = options.connect().await?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(INTERVAL) => {}
            }
            if let Err(error) = checkpoint(&mut connection).await {
                tracing::debug!(%error, "a WAL checkpoint failed; the next one retries");
            }
        }
        let _ = connection.close().await;
    });
    Ok(())
}

/// One passive checkpoint.
async fn checkpoint(connection: &mut SqliteConnection) -> sqlx::Result<()> {
    sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
        .execute(&mut *connection)
        .await
        .map(drop)
}
