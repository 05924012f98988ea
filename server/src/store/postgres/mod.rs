//! The PostgreSQL backend (`--database-url postgres://…`): the store and, for several instances,
//! the bus. Reads go through a pool whose transactions are read-only; every write is a job of the
//! instance's one [`Writer`], which commits what is queued in one transaction, as with SQLite.
//! Events, message bodies and model turns are JSONB; times are TIMESTAMPTZ, read back as the
//! API's RFC 3339 text by the schema's `rfc3339_millis()`.
//!
//! By concern: a run's writes (`runs`), reads of conversations (`conversations`) and of traces
//! (`traces`), renaming, archiving and deleting conversations (`manage`), what readers on other instances and the bus read or send (`bus`), instances'
//! leases (`lease`), `accounts`, `shares`, `search`, and text PostgreSQL accepts (`text`).

mod accounts;
mod branches;
mod bus;
mod conversations;
mod feedback;
mod lease;
mod manage;
mod runs;
mod search;
mod shares;
mod text;
mod traces;

use std::{str::FromStr, sync::Arc};

use sqlx::{
    postgres::{PgConnectOptions, PgPoolOptions},
    ConnectOptions, PgPool,
};

pub use bus::TraceEvents;
pub use lease::HEARTBEAT_INTERVAL;
use text::{jsonb_text, pg_text};

use super::writer::{self, Writer};
use crate::error::{Error, Result};

#[derive(Clone, Debug)]
pub struct PgStore {
    /// Reads only: its sessions default to read-only transactions.
    pub(super) pool: PgPool,
    pub(super) writer: Writer<writer::Postgres>,
    /// How the bus's listener connects (not read-only).
    options: Arc<PgConnectOptions>,
    /// This instance's name (`instances`, `agent_traces.instance_id`).
    instance_id: Arc<str>,
}

impl PgStore {
    /// Connects as `instance_id`, brings the schema up to date (`migrations/postgres/`) and, for an
    /// instance that runs runs (`lease`), takes its lease. Tools and tests take none, so they leave
    /// no row in `instances`.
    pub async fn connect(url: &str, instance_id: &str, lease: bool) -> Result<Self, sqlx::Error> {
        let options = PgConnectOptions::from_str(url)?;
        {
            let mut migrations = options.connect().await?;
            sqlx::migrate!("../migrations/postgres")
                .run(&mut migrations)
                .await?;
        }
        let write_options = options.clone();
        let writer = Writer::start(Arc::new(move || {
            let options = write_options.clone();
            Box::pin(async move { options.connect().await })
        }))
        .await?;
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .connect_with(
                options
                    .clone()
                    .options([("default_transaction_read_only", "on")]),
            )
            .await?;
        let store = PgStore {
            pool,
            writer,
            options: Arc::new(options),
            instance_id: Arc::from(instance_id),
        };
        if !lease {
            return Ok(store);
        }
        store.heartbeat().await.map_err(|error| match error {
            Error::Database(error) => error,
            other => sqlx::Error::Protocol(other.to_string()),
        })?;
        Ok(store)
    }

    pub fn listener_options(&self) -> &PgConnectOptions {
        &self.options
    }

    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.pool).await.is_ok()
    }

    pub fn write_failure(&self) -> Option<String> {
        self.writer.failure()
    }

    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close().await;
    }

    /// The read pool (read-only transactions), for tests that read the database directly.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub async fn execute_as_writer(&self, sql: String) -> Result<u64> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    let done = sqlx::query(&sql).execute(&mut *connection).await?;
                    Ok(done.rows_affected())
                })
            })
            .await
    }
}
