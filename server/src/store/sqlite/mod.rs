//! The SQLite backend: one file, WAL journal, foreign keys on. Reads go through a read-only pool
//! and never wait for writes (WAL); every write is a job of the one [`Writer`].
//!
//! By concern: a run's writes (`runs`), reads of conversations (`conversations`) and of traces
//! (`traces`), renaming, archiving and deleting conversations (`manage`), `accounts`, `shares`, and
//! moving the WAL into the file (`wal`).

mod accounts;
mod branches;
mod conversations;
mod feedback;
mod manage;
mod runs;
mod search;
mod shares;
mod traces;
pub mod wal;

use std::{str::FromStr, sync::Arc, time::Duration};

use rusqlite::Connection;
use sqlx::{
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
    SqlitePool,
};

use super::writer::{self, Writer};
use crate::error::Result;

#[derive(Clone, Debug)]
pub struct SqliteStore {
    /// Reads only: in WAL mode they never wait for the writer.
    pub(super) pool: SqlitePool,
    pub(super) writer: Writer<writer::Sqlite>,
    /// Stops the WAL checkpoints ([`wal`]).
    wal: tokio_util::sync::CancellationToken,
}

impl SqliteStore {
    /// Opens (creating when missing) the database and brings its schema up to date.
    pub async fn connect(url: &str) -> Result<Self, sqlx::Error> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        {
            let migrations = SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(options.clone())
                .await?;
            sqlx::migrate!("../migrations").run(&migrations).await?;
            migrations.close().await;
        }
        let path = options.get_filename().to_owned();
        let writer = Writer::start(Arc::new(move || {
            let opened =
                open_writer(&path).map_err(|error| sqlx::Error::Configuration(error.into()));
            Box::pin(std::future::ready(opened))
        }))
        .await?;
        // Opened read-only: no path but the writer can write.
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options.clone().read_only(true))
            .await?;
        let wal = tokio_util::sync::CancellationToken::new();
        wal::spawn(options, wal.clone()).await?;
        Ok(SqliteStore { pool, writer, wal })
    }

    /// Whether the database answers reads.
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.pool).await.is_ok()
    }

    /// Why writes are failing (a full disk, an I/O error), while they are.
    pub fn write_failure(&self) -> Option<String> {
        self.writer.failure()
    }

    /// Lets queued writes finish, then closes every connection.
    pub async fn close(&self) {
        self.wal.cancel();
        self.writer.close().await;
        self.pool.close().await;
    }

    /// The read-only pool, for tests and tools that read the database directly.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Caps the database's size in pages, as a full disk would: for tests of failing writes.
    pub async fn set_max_page_count(&self, pages: u64) -> Result<()> {
        self.execute_as_writer(format!("PRAGMA max_page_count = {pages}"))
            .await
            .map(drop)
    }

    /// Runs one SQL statement through the writer: for tests that change rows on purpose and
    /// for maintenance (`PRAGMA wal_checkpoint`).
    pub async fn execute_as_writer(&self, sql: String) -> Result<u64> {
        self.write(move |connection| {
            let mut statement = connection.prepare(&sql)?;
            let mut rows = statement.raw_query();
            while rows.next()?.is_some() {}
            Ok(connection.changes())
        })
        .await
    }

    /// Runs `work` on the writer's connection in its next transaction ([`Writer::write`]). On
    /// SQLite the work is synchronous: it runs on the writer's own thread, with no hop.
    pub(super) async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.writer
            .write(move |connection| Box::pin(std::future::ready(work(connection))))
            .await
    }

    /// The same as background work ([`Writer::write_background`]): on a thread of the lowest
    /// priority, in a transaction of background jobs only.
    pub(super) async fn write_background<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.writer
            .write_background(move |connection| Box::pin(std::future::ready(work(connection))))
            .await
    }
}

/// The writer's connection: the same file and settings as the read pool's (WAL, NORMAL sync,
/// foreign keys, a 10 s busy timeout), and the WAL limits of [`wal`]. `secure_delete` overwrites
/// whatever a delete frees with zeros (cells and whole freed pages): a deleted conversation's text
/// must leave the file, and much of it was in checkpoint chunks that a run's end had already
/// deleted, whose pages would otherwise keep it on the free list. The cost: a run's end writes
/// its freed chunk pages once more (as zeros). Its temporary files stay in
/// memory: each job's savepoint keeps a statement journal, which SQLite otherwise spills to a new
/// temporary file past 64 KiB, so a checkpoint of 1,000 runs created, wrote and deleted about nine
/// files, half the writer's `pwrite` calls (docs/benchmarks.md).
fn open_writer(path: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> {
    let connection = rusqlite::Connection::open(path)?;
    connection.busy_timeout(Duration::from_secs(10))?;
    connection.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;
         PRAGMA wal_autocheckpoint = {}; PRAGMA journal_size_limit = {};
         PRAGMA temp_store = MEMORY; PRAGMA secure_delete = ON;",
        wal::WRITER_AUTOCHECKPOINT_PAGES,
        wal::JOURNAL_SIZE_LIMIT_BYTES
    ))?;
    Ok(connection)
}
