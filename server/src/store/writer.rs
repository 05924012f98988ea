//! The store's one writer. A dedicated thread owns the only write connection; every write (run
//! starts, checkpoints, finishes) is a job queued to it. It takes whatever is queued, runs it in
//! one `BEGIN IMMEDIATE` transaction (group commit), each job inside its own savepoint so one
//! job's error undoes only that job, commits, and only then answers each caller. Nothing else
//! writes, so no write ever waits on SQLite's lock, and no other work (async workers, the blocking
//! pool) can starve it.
//!
//! The same writer serves both stores ([`Dialect`]): SQLite (`BEGIN IMMEDIATE` on the file) and
//! PostgreSQL (`BEGIN` on one connection of the instance), where batching matters even more, as
//! every commit is a round trip. A connection that breaks (PostgreSQL restarted, the network
//! dropped) is opened again before the next transaction.
//!
//! On SQLite the writer's connection is rusqlite's, not sqlx's: sqlx runs each SQLite statement on
//! a worker thread of its own, so every statement of every job was a hop between threads, and
//! under a burst of new runs the hops were most of the writer's time (a start took 1-2 ms, most
//! of it waiting to be scheduled). rusqlite runs the statement on the thread that calls it, here
//! the writer's. Reads stay on sqlx's pool. PostgreSQL keeps sqlx: there each statement is a
//! round trip anyway.
//!
//! Written here rather than taken from a library: sqlx has no group-commit queue, and the shape
//! (jobs are closures over a connection, answered after the commit) is small.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use sqlx::{Connection, Executor, PgConnection};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};

/// At most this many jobs share one transaction, so one commit stays short.
const MAX_JOBS_PER_TRANSACTION: usize = 1_000;

/// What the writer needs of a database: its connection type, how a write transaction begins, and
/// how to run one statement.
pub trait Dialect: Send + Sync + 'static {
    type Connection: Send + 'static;
    /// Takes the write lock at once (SQLite) or just begins (PostgreSQL: rows lock as written).
    const BEGIN: &'static str;
    fn execute<'c>(
        connection: &'c mut Self::Connection,
        sql: &'static str,
    ) -> BoxFuture<'c, Result<()>>;
    fn close(connection: Self::Connection) -> BoxFuture<'static, ()>;
}

pub struct Sqlite;
pub struct Postgres;

impl Dialect for Sqlite {
    type Connection = rusqlite::Connection;
    const BEGIN: &'static str = "BEGIN IMMEDIATE";
    /// Runs at once, on the calling (writer's) thread: the future is ready when returned.
    fn execute<'c>(
        connection: &'c mut rusqlite::Connection,
        sql: &'static str,
    ) -> BoxFuture<'c, Result<()>> {
        let done = connection.execute_batch(sql).map_err(Error::from);
        Box::pin(std::future::ready(done))
    }
    fn close(connection: rusqlite::Connection) -> BoxFuture<'static, ()> {
        let _ = connection.close();
        Box::pin(std::future::ready(()))
    }
}

impl Dialect for Postgres {
    type Connection = PgConnection;
    const BEGIN: &'static str = "BEGIN";
    fn execute<'c>(
        connection: &'c mut PgConnection,
        sql: &'static str,
    ) -> BoxFuture<'c, Result<()>> {
        Box::pin(async move { connection.execute(sql).await.map(drop).map_err(Error::from) })
    }
    fn close(connection: PgConnection) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let _ = connection.close().await;
        })
    }
}

/// Opens the writer's connection; called again when it breaks.
pub type Connect<D> = Arc<
    dyn Fn() -> BoxFuture<'static, Result<<D as Dialect>::Connection, sqlx::Error>> + Send + Sync,
>;

/// What a job hands back after it ran: told whether the transaction committed, it answers its
/// caller.
type Answer = Box<dyn FnOnce(Option<&str>) + Send>;
/// A job's work on the connection, inside the writer's transaction: its answer, and its error
/// when the work failed.
type Job<C> = Box<dyn for<'c> FnOnce(&'c mut C) -> BoxFuture<'c, (Answer, Option<String>)> + Send>;

enum Message<C> {
    Job(Job<C>),
    Close(oneshot::Sender<()>),
}

/// A handle to the writer thread; cheap to clone.
pub struct Writer<D: Dialect> {
    queue: mpsc::UnboundedSender<Message<D::Connection>>,
    /// Why the last transaction failed, while writes fail; `None` once one commits again.
    failure: Arc<Mutex<Option<String>>>,
}

impl<D: Dialect> Clone for Writer<D> {
    fn clone(&self) -> Self {
        Writer {
            queue: self.queue.clone(),
            failure: self.failure.clone(),
        }
    }
}

impl<D: Dialect> std::fmt::Debug for Writer<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("failure", &self.failure())
            .finish()
    }
}

impl<D: Dialect> Writer<D> {
    /// Opens the write connection on its own thread.
    pub async fn start(connect: Connect<D>) -> Result<Writer<D>, sqlx::Error> {
        let (queue, jobs) = mpsc::unbounded_channel();
        let (ready_tx, ready) = oneshot::channel();
        let failure = Arc::new(Mutex::new(None));
        let thread_failure = failure.clone();
        std::thread::Builder::new()
            .name("glassbox-writer".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = ready_tx.send(Err(sqlx::Error::Io(error)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let connection = match connect().await {
                        Ok(connection) => connection,
                        Err(error) => {
                            let _ = ready_tx.send(Err(error));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    run::<D>(connection, connect, jobs, thread_failure).await;
                });
            })
            .map_err(sqlx::Error::Io)?;
        ready.await.map_err(|_| sqlx::Error::PoolClosed)??;
        Ok(Writer { queue, failure })
    }

    /// Runs `work` in the writer's next transaction and answers once that transaction has
    /// committed. An error from `work` rolls back only its own changes.
    pub async fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut D::Connection) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        let (answer_tx, answer) = oneshot::channel::<Result<T>>();
        let job: Job<D::Connection> = Box::new(move |connection| {
            Box::pin(async move {
                let result = in_savepoint::<D, T, F>(connection, work).await;
                let failed = result.as_ref().err().map(ToString::to_string);
                let answer: Answer = Box::new(move |commit_error| {
                    let result = match (result, commit_error) {
                        (Ok(_), Some(error)) => Err(Error::Unavailable(error.to_owned())),
                        (result, _) => result,
                    };
                    let _ = answer_tx.send(result);
                });
                (answer, failed)
            })
        });
        self.queue
            .send(Message::Job(job))
            .map_err(|_| Error::Unavailable("the database writer has stopped".into()))?;
        answer.await.map_err(|_| {
            Error::Unavailable(
                self.failure()
                    .unwrap_or_else(|| "the database writer has stopped".into()),
            )
        })?
    }

    /// Why writes are failing now, if they are.
    pub fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Lets queued jobs finish, then closes the connection.
    pub async fn close(&self) {
        let (done_tx, done) = oneshot::channel();
        if self.queue.send(Message::Close(done_tx)).is_ok() {
            let _ = done.await;
        }
    }
}

async fn in_savepoint<D: Dialect, T, F>(connection: &mut D::Connection, work: F) -> Result<T>
where
    F: for<'c> FnOnce(&'c mut D::Connection) -> BoxFuture<'c, Result<T>>,
{
    D::execute(connection, "SAVEPOINT job").await?;
    match work(&mut *connection).await {
        Ok(value) => {
            D::execute(connection, "RELEASE job").await?;
            Ok(value)
        }
        Err(error) => {
            // When SQLite has rolled the whole transaction back itself (a full disk, an I/O
            // error), these fail too, and so does the commit: every job of the batch hears it.
            let _ = D::execute(connection, "ROLLBACK TO job").await;
            let _ = D::execute(connection, "RELEASE job").await;
            Err(error)
        }
    }
}

async fn run<D: Dialect>(
    mut connection: D::Connection,
    connect: Connect<D>,
    mut queue: mpsc::UnboundedReceiver<Message<D::Connection>>,
    failure: Arc<Mutex<Option<String>>>,
) {
    let mut batch: VecDeque<Job<D::Connection>> = VecDeque::new();
    let mut closing = None;
    loop {
        if batch.is_empty() {
            if closing.is_some() {
                break;
            }
            match queue.recv().await {
                Some(Message::Job(job)) => batch.push_back(job),
                Some(Message::Close(done)) => closing = Some(done),
                None => break,
            }
        }
        // Group commit: everything that queued up while the last transaction ran goes in this one.
        while batch.len() < MAX_JOBS_PER_TRANSACTION {
            match queue.try_recv() {
                Ok(Message::Job(job)) => batch.push_back(job),
                Ok(Message::Close(done)) => closing = Some(done),
                Err(_) => break,
            }
        }
        if batch.is_empty() {
            continue;
        }
        let result = commit_batch::<D>(&mut connection, &mut batch).await;
        let began = result.as_ref().err().is_none_or(|failed| failed.began);
        let error = result.err().map(|failed| failed.error);
        if let Some(error) = &error {
            tracing::error!(%error, "a write transaction failed");
        }
        *failure
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = error;
        if !began {
            // Dropped jobs answer their callers with the failure just recorded.
            batch.clear();
            tokio::time::sleep(Duration::from_millis(50)).await;
            // The connection may be what failed (PostgreSQL restarted): open a new one.
            if let Ok(fresh) = connect().await {
                D::close(std::mem::replace(&mut connection, fresh)).await;
            }
        }
    }
    D::close(connection).await;
    if let Some(done) = closing {
        let _ = done.send(());
    }
}

/// Runs queued jobs in one transaction and answers each; the error, if the transaction failed.
/// A job that fails ends the transaction early (its savepoint is rolled back, the others commit):
/// after some errors SQLite has rolled the whole transaction back, and a job run after that would
/// commit on its own. The jobs not run yet stay queued for the next transaction.
async fn commit_batch<D: Dialect>(
    connection: &mut D::Connection,
    batch: &mut VecDeque<Job<D::Connection>>,
) -> std::result::Result<(), Failed> {
    if let Err(error) = D::execute(connection, D::BEGIN).await {
        return Err(Failed {
            error: error.to_string(),
            began: false,
        });
    }
    let mut answers = Vec::with_capacity(batch.len());
    let mut job_error = None;
    while let Some(job) = batch.pop_front() {
        let (answer, failed) = job(&mut *connection).await;
        answers.push(answer);
        if failed.is_some() {
            job_error = failed;
            break;
        }
    }
    let error = match D::execute(connection, "COMMIT").await {
        Ok(_) => None,
        Err(error) => {
            let _ = D::execute(connection, "ROLLBACK").await;
            // A commit that fails after a job failed fails for that job's reason (SQLite rolled
            // the transaction back when the disk filled up): say that, not "no transaction".
            Some(job_error.unwrap_or_else(|| error.to_string()))
        }
    };
    for answer in answers {
        answer(error.as_deref());
    }
    match error {
        None => Ok(()),
        Some(error) => Err(Failed { error, began: true }),
    }
}

struct Failed {
    error: String,
    /// Whether the transaction had begun (its jobs ran and were answered).
    began: bool,
}
